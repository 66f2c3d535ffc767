#!/usr/bin/env bash
# Runs ONNX's backend node tests (../shared/conformance/onnx-node-tests, or $IPUCC_CONFORMANCE_DIR)
# through `ipucc compile --mode infer` and `ipurun predict --input ... --output-dir`, and compares
# every output with ONNX's default tolerances (rtol 1e-3, atol 1e-7) using compare_tensors.
# Prints one line per test (pass / fail with the max error / unsupported with the reason) and a
# summary `N passed, N failed, N unsupported`. Exit 1 if any test fails, crashes or times out.
# Shape parameters that a node test feeds as graph inputs (Reshape's shape, ReduceSum's axes, ...)
# must be constant for ipucc: when compile names a "graph input 'X' must be a compile-time
# constant", compile runs again with `--constant-input X=input_K.pb` (K: the file holding X), and
# ipurun gets only the other inputs.
#
#   bash scripts/conformance.sh [NAME_REGEX]        # after scripts/build.sh
# Environment: IPUCC, IPURUN, COMPARE_TENSORS (default build/...), CONFORMANCE_JOBS (default nproc),
# CONFORMANCE_TIMEOUT seconds per command (default 60), CONFORMANCE_EVERY=N to run only every N-th
# test in name order (the first, the N+1-th, ...): a sample spread over every op, for builds too
# slow for all of them (the sanitizers').
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${IPUCC_BUILD_DIR:-$root/build}
export IPUCC=${IPUCC:-$build/cli/ipucc}
export IPURUN=${IPURUN:-$build/cli/ipurun}
export COMPARE_TENSORS=${COMPARE_TENSORS:-$build/tests/tools/compare_tensors}
export CONFORMANCE_TIMEOUT=${CONFORMANCE_TIMEOUT:-60}
every=${CONFORMANCE_EVERY:-1}
[[ $every =~ ^[1-9][0-9]*$ ]] || { echo "conformance: CONFORMANCE_EVERY=$every is not a positive integer" >&2; exit 2; }
tests_dir=${IPUCC_CONFORMANCE_DIR:-$root/../shared/conformance/onnx-node-tests}
filter=${1:-.}
for tool in "$IPUCC" "$IPURUN" "$COMPARE_TENSORS"; do
  [[ -x $tool ]] || { echo "conformance: $tool is not built (run scripts/build.sh)" >&2; exit 2; }
done
[[ -d $tests_dir ]] || { echo "conformance: no tests at $tests_dir (set IPUCC_CONFORMANCE_DIR)" >&2; exit 2; }

# Debian's python3 when there is one: a version manager's shim first on PATH can take a second to
# start, and every test starts Python a few times (most of the suite's time, through such a shim).
if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
export PYTHON

work=$(mktemp -d "${TMPDIR:-/tmp}/ipucc-conformance.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The name field (8) of a serialized TensorProto, or "" (protobuf wire format; no onnx module).
tensor_proto_name() {
  "$PYTHON" - "$1" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def varint(i):
    v = shift = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << shift; shift += 7
        if c < 0x80: return v, i
i = 0
while i < len(b):
    key, i = varint(i)
    field, wire = key >> 3, key & 7
    if wire == 0: _, i = varint(i)
    elif wire == 1: i += 8
    elif wire == 5: i += 4
    elif wire == 2:
        n, i = varint(i)
        if field == 8:
            print(b[i:i + n].decode()); break
        i += n
    else: break
PY
}
export -f tensor_proto_name

# Whether $1 is among the names after it (an unnamed tensor, "", never is).
is_among() {
  local name=$1 other
  shift
  [[ -n $name ]] || return 1
  for other in "$@"; do [[ $other == "$name" ]] && return 0; done
  return 1
}
export -f is_among

# Compiles $dir/model.onnx into $w/exe, binding as --constant-input the inputs of data set $1 that
# compile names as "must be a compile-time constant". Sets rc (ipucc's exit code), bound (the names
# bound) and, once compile has asked for one, pb_names (the names of the set's input tensors, "" for
# an unnamed one: read only then, since reading them starts Python for each). Test tensors without a
# name cannot be bound (the model's input is not known).
compile_for_set() {
  local data=$1 i bind_flags=() wanted n new
  pb_names=()
  bound=()
  while true; do
    rc=0
    timeout "$CONFORMANCE_TIMEOUT" "$IPUCC" compile "$dir/model.onnx" --mode infer --no-cache -o "$w/exe" \
      "${bind_flags[@]}" > "$w/compile.out" 2> "$w/compile.err" || rc=$?
    ((rc == 4)) || break
    new=0
    mapfile -t wanted < <(sed -nE "s/.*graph input '([^']+)' must be a compile-time constant.*/\1/p" "$w/compile.err")
    if ((${#wanted[@]} > 0 && ${#pb_names[@]} == 0)); then
      i=0
      while [[ -f $data/input_$i.pb ]]; do pb_names+=("$(tensor_proto_name "$data/input_$i.pb")"); i=$((i + 1)); done
    fi
    for n in "${wanted[@]}"; do
      is_among "$n" "${bound[@]}" && continue
      for ((i = 0; i < ${#pb_names[@]}; i++)); do
        if [[ ${pb_names[$i]} == "$n" ]]; then
          bound+=("$n")
          bind_flags+=(--constant-input "$n=$data/input_$i.pb")
          new=1
        fi
      done
    done
    ((new)) || break
  done
}
export -f compile_for_set

# One test: prints "pass NAME", "fail NAME: why" or "unsupported NAME: why". Every
# test_data_set_N runs and must match; input_K.pb feeds the model's K-th graph input (by position:
# a test tensor need not have a name), output_K.pb is compared with its K-th output.
run_one() {
  local dir=$1 name
  name=$(basename "$dir")
  local w=$WORK/$name rc=0 bound=() pb_names=() sets
  mkdir -p "$w"
  mapfile -t sets < <(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'test_data_set_*' | sort -V)
  if ((${#sets[@]} == 0)); then
    echo "fail $name: no test_data_set_N directory"
    return
  fi
  local data k
  for ((k = 0; k < ${#sets[@]}; k++)); do
    data=${sets[$k]}
    # Values bound at compile time come from the data set: compile again for each set that has any.
    if ((k == 0 || ${#bound[@]} > 0)); then
      compile_for_set "$data"
      if ((rc == 4)); then
        echo "unsupported $name: $(sed -n '1s/^ipucc: error: //p' "$w/compile.err" | sed "s|$dir/||g")"
        return
      elif ((rc != 0)); then
        echo "fail $name: ipucc exit $rc: $(head -c 300 "$w/compile.err" | tr '\n' ' ' | sed "s|$dir/||g")"
        return
      fi
    fi
    # pb_names are this set's: a set with bound inputs was compiled for above.
    local inputs=() i=0
    while [[ -f $data/input_$i.pb ]]; do
      is_among "${pb_names[$i]:-}" "${bound[@]}" || inputs+=(--input "$data/input_$i.pb")
      i=$((i + 1))
    done
    rm -rf "$w/out"
    rc=0
    timeout "$CONFORMANCE_TIMEOUT" "$IPURUN" predict "$w/exe" "${inputs[@]}" --output-dir "$w/out" --json \
      > "$w/run.json" 2> "$w/run.err" || rc=$?
    if ((rc != 0)); then
      echo "fail $name: $(basename "$data"): ipurun exit $rc: $(head -c 300 "$w/run.err" | tr '\n' ' ')"
      return
    fi
    # Outputs in model order are output_0.pb, output_1.pb, ...; ipurun names its files after them.
    local result
    if ! result=$("$COMPARE_TENSORS" --run "$w/run.json" "$data"); then
      echo "fail $name: $(basename "$data"): ${result##*$'\n'}"
      return
    fi
  done
  echo "pass $name"
}
export -f run_one
export WORK=$work

find "$tests_dir" -mindepth 1 -maxdepth 1 -type d | sort | grep -E "/[^/]*($filter)[^/]*$" > "$work/selected"
if ((every > 1)); then
  echo "a sample: 1 in $every of the $(wc -l < "$work/selected") tests"
  awk -v every="$every" '(NR - 1) % every == 0' "$work/selected" > "$work/sample"
  mv "$work/sample" "$work/selected"
fi
xargs -P "${CONFORMANCE_JOBS:-$(nproc)}" -I{} bash -c 'run_one "$1"' _ {} < "$work/selected" | sort -k2 > "$work/results"
cat "$work/results"
passed=$(grep -c '^pass ' "$work/results" || true)
failed=$(grep -c '^fail ' "$work/results" || true)
unsupported=$(grep -c '^unsupported ' "$work/results" || true)
echo "$passed passed, $failed failed, $unsupported unsupported"
((failed == 0))
