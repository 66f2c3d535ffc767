# lib.sh: a tiny ccache/LLVM-style framework for the end-to-end suites (tests/e2e/test_*.sh).
#
# A suite is a bash file that sources this one, defines functions named test_*, and ends with
#     run_tests "$@"
# CMake turns every tests/e2e/test_*.sh into the ctest e2e_<name> (tests/e2e/CMakeLists.txt).
# Run one by hand with `IPUCC=build/cli/ipucc IPURUN=build/cli/ipurun bash tests/e2e/test_run.sh`
# (those paths are also the defaults); arguments are regexes selecting test functions.
#
# Environment: IPUCC, IPURUN (the binaries), IPUCC_SOURCE_DIR (the repository; default: two levels
# above this file), E2E_KEEP=1 (keep each test's directory and print its path), PYTHON (default
# /usr/bin/python3, else python3; standard library only, no numpy).
#
# Each test function runs in its own subshell, with set -u, in a fresh `mktemp -d` directory that is
# also its working directory ($E2E_TMP), with IPUCC_CACHE_DIR=$E2E_TMP/cache and HOME and
# XDG_CACHE_HOME inside it too, so nothing leaks into the real cache. The first failed expectation
# ends the test, and so does any other failing command (set -e; use `|| true` where a failure is
# fine, and don't hide a helper's status with `local x=$(...)`). Tests run in definition order.
#
# Variables:  $IPUCC $IPURUN  $SRC (repository)  $MODELS (models/)  $E2E_TMP  $E2E_DATA (e2e_data.py)
#             $PYTHON
#             $STDOUT $STDERR  files holding the output of the last expect_exit
# Helpers:
#   expect_exit CODE CMD...          run CMD; its stdout/stderr go to $STDOUT/$STDERR; fail unless it
#                                    exits with CODE (the failure shows both streams)
#   expect_stdout_contains TEXT      fixed-string checks on the last expect_exit's output
#   expect_stderr_contains TEXT
#   expect_stderr_not_contains TEXT
#   expect_stderr_starts_with TEXT   the first line of stderr begins with TEXT
#   expect_error CODE TEXT... -- CMD...
#                                    CMD exits with CODE, stderr starts with "<tool>: error:",
#                                    and contains every TEXT
#   expect_file PATH / expect_no_file PATH
#   expect_eq A B [WHAT] / expect_ne A B [WHAT]
#   expect_same_checkpoints A B WHAT the checkpoint directories A and B hold the same files, bit for bit
#   expect_json FILE PYEXPR [WHAT]   PYEXPR (Python, the document is `d`) must be true, e.g.
#                                    expect_json "$STDOUT" 'd["schema_version"] == 1'
#   json_get FILE PYEXPR             print PYEXPR of the document (strings bare, the rest as JSON)
#   fail MESSAGE                     fail the current test now
#   known_bug TEXT                   mark the current test as exposing a known tool bug: it still
#                                    fails (and ctest stays red) until the bug is fixed; the
#                                    summary lists it as KNOWN BUG. If it passes, it says so.
#                                    E2E_ALLOW_KNOWN_BUGS=1 counts such failures as expected
#                                    (XFAIL), not failed.
#   skip TEXT                        end the current test as skipped
#   e2e_data ARGS...                 python3 $E2E_DATA ARGS (npy/IDX writers, byte flips: see it)
# The summary ends with one line "N passed, N failed"; the suite exits 1 when N failed > 0.

set -u

E2E_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${IPUCC_SOURCE_DIR:-$(cd "$E2E_LIB_DIR/../.." && pwd)}
MODELS=$SRC/models
IPUCC=${IPUCC:-$SRC/build/cli/ipucc}
IPURUN=${IPURUN:-$SRC/build/cli/ipurun}
# Tests run in their own directories: make relative binary paths absolute.
[[ $IPUCC == */* && $IPUCC != /* ]] && IPUCC=$PWD/$IPUCC
[[ $IPURUN == */* && $IPURUN != /* ]] && IPURUN=$PWD/$IPURUN
E2E_DATA=$E2E_LIB_DIR/e2e_data.py
# The system python3 (Debian's in CI) starts fastest; version-manager shims can take 10x longer.
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
export SRC MODELS IPUCC IPURUN E2E_DATA PYTHON

e2e_data() { "$PYTHON" "$E2E_DATA" "$@" || fail "e2e_data.py $* failed"; }

fail() {
  echo "FAILED: $*" >&2
  if [[ -n ${E2E_CMD:-} ]]; then
    echo "  last command: $E2E_CMD (exit $E2E_RC)" >&2
    echo "  --- stdout (first 40 lines) ---" >&2
    head -n 40 "$STDOUT" >&2 2>/dev/null
    echo "  --- stderr (first 40 lines) ---" >&2
    head -n 40 "$STDERR" >&2 2>/dev/null
  fi
  exit 1
}

skip() {
  echo "$*" > "$E2E_TMP/.skip"
  exit 0
}

known_bug() { echo "$*" > "$E2E_TMP/.known_bug"; }

expect_exit() {
  local want=$1
  shift
  E2E_CMD=$(printf '%q ' "$@")
  E2E_RC=0
  "$@" > "$STDOUT" 2> "$STDERR" < /dev/null || E2E_RC=$?
  [[ $E2E_RC == "$want" ]] || fail "expected exit $want, got $E2E_RC"
}

expect_stdout_contains() { grep -qF -- "$1" "$STDOUT" || fail "stdout does not contain: $1"; }
expect_stderr_contains() { grep -qF -- "$1" "$STDERR" || fail "stderr does not contain: $1"; }
expect_stderr_not_contains() { ! grep -qF -- "$1" "$STDERR" || fail "stderr contains: $1"; }
expect_stderr_starts_with() {
  local first
  first=$(head -n 1 "$STDERR")
  [[ $first == "$1"* ]] || fail "stderr does not start with '$1'"
}

# expect_error CODE TEXT... -- CMD...: CMD exits with CODE, stderr starts with "<tool>: error:"
# (the tool is CMD's basename), and every TEXT is in stderr.
expect_error() {
  local code=$1
  shift
  local -a texts=()
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  expect_exit "$code" "$@"
  expect_stderr_starts_with "$(basename "$1"): error:"
  local t
  for t in "${texts[@]}"; do expect_stderr_contains "$t"; done
}
expect_file() { [[ -f $1 ]] || fail "no file $1"; }
expect_no_file() { [[ ! -e $1 ]] || fail "$1 exists"; }
expect_eq() { [[ $1 == "$2" ]] || fail "${3:-values} differ: '$1' != '$2'"; }
expect_ne() { [[ $1 != "$2" ]] || fail "${3:-values} are equal: '$1'"; }
expect_same_checkpoints() { diff -r "$1" "$2" > /dev/null || fail "$3: the checkpoints differ"; }

# expect_keras_schedule LOG INITIAL GROWTH [CHECKPOINT]: the step log's loss_scales are Keras's
# schedule replayed from INITIAL over its skipped flags, skips and growth both happened, and the
# checkpoint's optimizer/loss_scale holds the state after the last update.
expect_keras_schedule() {
  "$PYTHON" - "$@" <<'PY' || fail "the loss scales of $1 do not follow Keras's schedule"
import json, os, struct, sys
log = json.load(open(sys.argv[1]))
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
scale, growth, counter = f32(float(sys.argv[2])), int(sys.argv[3]), 0
want = []
for skipped in log["skipped"]:
    want.append(scale)
    if skipped:  # tf.keras LossScaleOptimizer: update_if_not_finite_grads
        scale, counter = max(f32(scale / 2), 1.0), 0
    elif counter + 1 >= growth:  # incr_loss_scale, _assign_if_finite
        doubled = scale * 2
        scale, counter = (f32(doubled) if doubled <= 3.4028234663852886e38 else scale), 0
    else:
        counter += 1
assert log["loss_scales"] == want, (log["loss_scales"], want)
assert any(log["skipped"]) and not all(log["skipped"]), log["skipped"]
assert len(set(want)) > 1, "the scale never changed"
if len(sys.argv) > 4:
    import numpy
    state = numpy.load(os.path.join(sys.argv[4], json.load(open(os.path.join(sys.argv[4], "index.json")))["optimizer/loss_scale"]))
    assert list(state) == [scale, counter], (list(state), scale, counter)
PY
}

json_get() {
  "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2" || fail "json_get $2 on $1"
}

expect_json() {
  "$PYTHON" -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("not JSON: %s" % e); sys.exit(1)
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" > "$E2E_TMP/.json_check" 2>&1 ||
    fail "${3:-JSON check} failed: $2 on $1: $(cat "$E2E_TMP/.json_check")"
}

# Runs the suite's test_* functions (those matching any argument regex, or all).
run_tests() {
  local suite=${0##*/} script=$0 passed=0 failed=0 skipped=0 bugs=0 fixed=0 start=$SECONDS
  local -a names failures=()
  [[ -x $IPUCC ]] || { echo "$suite: IPUCC=$IPUCC is not executable"; echo "0 passed, 1 failed"; exit 1; }
  [[ -x $IPURUN ]] || { echo "$suite: IPURUN=$IPURUN is not executable"; echo "0 passed, 1 failed"; exit 1; }
  mapfile -t names < <(grep -oE '^test_[A-Za-z0-9_]+[[:space:]]*\(\)' "$script" | sed -E 's/[[:space:]]*\(\)$//')
  for name in "${names[@]}"; do
    if (($# > 0)); then
      local selected=0 pattern
      for pattern in "$@"; do [[ $name =~ $pattern ]] && selected=1; done
      ((selected)) || continue
    fi
    local dir log rc t0=$SECONDS
    dir=$(mktemp -d "${TMPDIR:-/tmp}/ipucc-e2e.XXXXXX")
    log=$dir/.log
    (
      cd "$dir" || exit 1
      export E2E_TMP=$dir STDOUT=$dir/.stdout STDERR=$dir/.stderr E2E_CMD= E2E_RC=
      export IPUCC_CACHE_DIR=$dir/cache HOME=$dir/home XDG_CACHE_HOME=$dir/xdg
      : > "$STDOUT"; : > "$STDERR"
      # Like a RUN line, any other failing command fails the test, and says which.
      set -eE
      trap 'echo "FAILED: exit $? from: $BASH_COMMAND" >&2' ERR
      "$name"
    ) > "$log" 2>&1
    rc=$?
    local took=$((SECONDS - t0)) bug=""
    [[ -f $dir/.known_bug ]] && bug=$(cat "$dir/.known_bug")
    if [[ -f $dir/.skip ]]; then
      skipped=$((skipped + 1))
      printf 'SKIP  %s (%s)\n' "$name" "$(cat "$dir/.skip")"
    elif ((rc == 0)); then
      passed=$((passed + 1))
      printf 'PASS  %s (%ds)\n' "$name" "$took"
      if [[ -n $bug ]]; then
        fixed=$((fixed + 1))
        printf '      note: marked known_bug but passed; the bug looks fixed, drop the marker: %s\n' "$bug"
      fi
    else
      if [[ -n $bug && ${E2E_ALLOW_KNOWN_BUGS:-0} == 1 ]]; then
        bugs=$((bugs + 1))
        printf 'XFAIL %s (%ds) KNOWN BUG: %s\n' "$name" "$took" "$bug"
      elif [[ -n $bug ]]; then
        failed=$((failed + 1))
        bugs=$((bugs + 1))
        printf 'FAIL  %s (%ds) KNOWN BUG: %s\n' "$name" "$took" "$bug"
        failures+=("$name (known bug)")
      else
        failed=$((failed + 1))
        printf 'FAIL  %s (%ds)\n' "$name" "$took"
        failures+=("$name")
      fi
      sed 's/^/      | /' "$log"
    fi
    if [[ ${E2E_KEEP:-0} == 1 ]]; then
      echo "      kept $dir"
    else
      rm -rf "$dir"
    fi
  done
  echo "--- $suite: $((SECONDS - start))s, $skipped skipped, $bugs on known bugs"
  local f
  for f in "${failures[@]}"; do echo "    failed: $f"; done
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit $?
}
