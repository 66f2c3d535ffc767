#!/usr/bin/env bash
# ipurun failures: bad executables, cache keys, data, checkpoints and output paths. Each checks the
# exit code (cli/exit_codes.h, docs/exit_codes.md), the "ipurun: error:" prefix, and that the
# message names the file, key or data set at fault.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)
QUIET=(--progress none)

compile_to() {
  local out=$1
  shift
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" "$@" -o "$out"
}

test_missing_executable() {
  expect_error 6 "nope.ipuexe" "No such file" -- "$IPURUN" train nope.ipuexe --data synthetic:8 "${QUIET[@]}"
  expect_error 6 "sub/nope.ipuexe" -- "$IPURUN" predict sub/nope.ipuexe --data synthetic:8
}

# EXECUTABLE is a file when something is at that path, or when it looks like one ('/' or '.');
# else a cache key. What is there must be an executable: a directory or a device is refused as
# any other non-executable is (7). A bare word that is neither a file nor a key is a usage error.
test_executable_is_a_file_or_a_key() {
  mkdir models.ipuexe
  expect_error 7 "models.ipuexe: is a directory, not an ipucc executable" -- \
    "$IPURUN" predict models.ipuexe --data synthetic:8 "${QUIET[@]}"
  expect_error 7 "/etc: is a directory, not an ipucc executable" -- "$IPURUN" predict /etc --data synthetic:8 "${QUIET[@]}"
  expect_error 7 "/dev/zero: is not a regular file" -- "$IPURUN" train /dev/zero --data synthetic:8 "${QUIET[@]}"
  expect_error 6 "mlp: cannot open" -- "$IPURUN" predict ./mlp --data synthetic:8 "${QUIET[@]}"
  expect_error 2 "mlp: no file of that name, and not a cache key or key prefix" -- \
    "$IPURUN" predict mlp --data synthetic:8 "${QUIET[@]}"
  expect_error 2 "DEADBEEF: no file of that name" -- "$IPURUN" evaluate DEADBEEF --data synthetic:8 "${QUIET[@]}"
}

test_flipped_summary_or_payload_byte_fails_its_checksum() {
  compile_to good.ipuexe --batch-size 8
  local offset
  for offset in 128 500 -1; do
    cp good.ipuexe bad.ipuexe
    e2e_data flip bad.ipuexe "$offset"
    expect_error 7 "bad.ipuexe" "checksum mismatch" -- "$IPURUN" predict bad.ipuexe --data synthetic:8 "${QUIET[@]}"
  done
  # A flipped checksum byte in the header is caught too.
  cp good.ipuexe bad.ipuexe
  e2e_data flip bad.ipuexe 40
  expect_error 7 "bad.ipuexe" "checksum mismatch" -- "$IPURUN" evaluate bad.ipuexe --data synthetic:64 "${QUIET[@]}"
}

test_truncated_executable() {
  compile_to good.ipuexe --batch-size 8
  head -c 5000 good.ipuexe > cut.ipuexe
  expect_error 7 "cut.ipuexe" "truncated" -- "$IPURUN" train cut.ipuexe --data synthetic:8 "${QUIET[@]}"
  head -c 30 good.ipuexe > stub.ipuexe
  expect_error 7 "stub.ipuexe" "shorter than the 128-byte header" -- "$IPURUN" train stub.ipuexe --data synthetic:8 "${QUIET[@]}"
  : > empty.ipuexe
  expect_error 7 "empty.ipuexe" "not an ipucc executable" -- "$IPURUN" train empty.ipuexe --data synthetic:8 "${QUIET[@]}"
  { cat good.ipuexe; printf 'extra'; } > padded.ipuexe
  expect_error 7 "padded.ipuexe" "truncated or padded" -- "$IPURUN" train padded.ipuexe --data synthetic:8 "${QUIET[@]}"
}

test_wrong_magic_and_foreign_files() {
  compile_to good.ipuexe --batch-size 8
  cp good.ipuexe magic.ipuexe
  e2e_data poke magic.ipuexe 0 58585858
  expect_error 7 "magic.ipuexe" "bad magic" -- "$IPURUN" predict magic.ipuexe --data synthetic:8 "${QUIET[@]}"
  # Only .onnx and .json name models (compiled through the cache, test_run_model.sh).
  cp "$TUTORIAL" spec.txt
  expect_error 7 "spec.txt: not an ipucc executable" -- "$IPURUN" predict spec.txt --data synthetic:8 "${QUIET[@]}"
  head -c 4096 /dev/urandom > random.bin
  expect_error 7 "random.bin: not an ipucc executable" -- "$IPURUN" predict random.bin --data synthetic:8 "${QUIET[@]}"
}

test_other_format_version() {
  compile_to good.ipuexe --batch-size 8
  cp good.ipuexe v99.ipuexe
  e2e_data poke v99.ipuexe 8 63000000
  expect_error 7 "v99.ipuexe" "format version 99" "recompile" -- "$IPURUN" predict v99.ipuexe --data synthetic:8 "${QUIET[@]}"
}

# A key or prefix that names no entry is missing (6), like a missing file; one that is too short
# or matches several entries is a usage error (2), as for `ipucc cache show`.
test_unknown_and_bad_cache_keys() {
  expect_error 6 "deadbeef0123" "no cache entry" -- "$IPURUN" predict deadbeef0123 --data synthetic:8 "${QUIET[@]}"
  expect_error 6 "$(printf 'ab%.0s' {1..32})" "no cache entry" -- "$IPURUN" predict "$(printf 'ab%.0s' {1..32})" --data synthetic:8 "${QUIET[@]}"
  expect_error 2 "dead: not a cache key or key prefix" "8 to 64" -- "$IPURUN" predict dead --data synthetic:8 "${QUIET[@]}"
  expect_error 2 "1234567: not a cache key" -- "$IPURUN" predict 1234567 --data synthetic:8 "${QUIET[@]}"
  # Ambiguous: two entries share the prefix (the second is fabricated).
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8 --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  touch "$IPUCC_CACHE_DIR/entries/${key:0:2}/${key:0:8}$(printf 'f%.0s' {1..56}).manifest"
  expect_error 2 "${key:0:8}: ambiguous key prefix" "$key" -- "$IPURUN" predict "${key:0:8}" --data synthetic:8 "${QUIET[@]}"
  expect_error 2 "${key:0:8}: ambiguous key prefix" -- "$IPUCC" cache show "${key:0:8}"
  expect_exit 0 "$IPURUN" predict "$key" --data synthetic:4 "${QUIET[@]}"
}

test_corrupt_cache_entry() {
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8 --json
  local key entry
  key=$(json_get "$STDOUT" 'd["key"]')
  entry=$(json_get "$STDOUT" 'd["entry"]')
  e2e_data flip "$entry" 300
  expect_error 7 "cache entry $key" "checksum mismatch" -- "$IPURUN" predict "${key:0:8}" --data synthetic:8 "${QUIET[@]}"
  rm "$entry"
  expect_error 7 "$key" "executable missing" -- "$IPURUN" predict "$key" --data synthetic:8 "${QUIET[@]}"
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8
  echo "extra=1" >> "$IPUCC_CACHE_DIR/entries/${key:0:2}/$key.manifest"
  expect_error 7 "$key.manifest: manifest does not hash to its key" -- "$IPURUN" predict "$key" --data synthetic:8 "${QUIET[@]}"
}

test_infer_executable_cannot_train_or_evaluate() {
  compile_to infer.ipuexe --batch-size 8 --mode infer
  expect_error 7 "no 'evaluate' program" "--mode infer" -- "$IPURUN" evaluate infer.ipuexe --data synthetic:64 "${QUIET[@]}"
  expect_error 7 "no 'train' program" "--mode infer" -- "$IPURUN" train infer.ipuexe --data synthetic:64 "${QUIET[@]}"
}

test_missing_program_error_names_the_executable() {
  compile_to infer.ipuexe --batch-size 8 --mode infer
  expect_error 7 "infer.ipuexe" -- "$IPURUN" evaluate infer.ipuexe --data synthetic:64 "${QUIET[@]}"
}

test_sample_shape_mismatch() {
  compile_to mlp.ipuexe --batch-size 8
  e2e_data npy cifar.npy --shape 16,32,32,3 --fill const:0.5
  e2e_data npy labels.npy --dtype i8 --shape 16 --fill mod:10
  expect_error 3 "npy:cifar.npy,labels.npy" "[32,32,3]" "[28,28,1]" -- \
    "$IPURUN" train mlp.ipuexe --data npy:cifar.npy,labels.npy "${QUIET[@]}"
  expect_error 3 "cifar.npy" "[32,32,3]" "[28,28,1]" -- "$IPURUN" predict mlp.ipuexe --data npy:cifar.npy "${QUIET[@]}"
  e2e_data idx small --count 16
  # 20x20 images: rewrite the header's rows/cols and cut the data to match.
  "$PYTHON" - <<'EOF' || fail "cannot write 20x20 IDX images"
import struct
open("small/train-images-idx3-ubyte", "wb").write(struct.pack(">IIII", 0x803, 16, 20, 20) + bytes(16 * 400))
EOF
  expect_error 3 "mnist:small" "[20,20,1]" "[28,28,1]" -- "$IPURUN" evaluate mlp.ipuexe --data mnist:small "${QUIET[@]}"
}

test_labels_out_of_range() {
  compile_to mlp.ipuexe --batch-size 8
  e2e_data npy x.npy --shape 64,28,28,1 --fill const:0.5
  e2e_data npy y12.npy --dtype i8 --shape 64 --fill mod:10 --set 37=12
  expect_error 3 "y12.npy" "label 12 of sample 37" "[0, 10)" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,y12.npy "${QUIET[@]}"
  expect_error 3 "y12.npy" "sample 37" -- "$IPURUN" evaluate mlp.ipuexe --data npy:x.npy,y12.npy "${QUIET[@]}"
  e2e_data npy yneg.npy --dtype i4 --shape 64 --fill mod:10 --set 5=-1
  expect_error 3 "yneg.npy" "label -1 at index 5" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,yneg.npy "${QUIET[@]}"
  e2e_data npy yfloat.npy --dtype f4 --shape 64 --fill mod:10
  expect_error 3 "yfloat.npy" "has float labels" "takes integer class indices" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,yfloat.npy "${QUIET[@]}"
  e2e_data npy ybool.npy --dtype b1 --shape 64 --fill mod:2
  expect_error 3 "ybool.npy" "labels must be integers (class indices) or floats" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,ybool.npy "${QUIET[@]}"
  e2e_data npy y63.npy --dtype i8 --shape 63 --fill mod:10
  expect_error 3 "y63.npy: has 63 labels but x.npy has 64 samples" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,y63.npy "${QUIET[@]}"
  e2e_data idx mn --count 64 --set-label 3=12
  expect_error 3 "train-labels-idx1-ubyte" "label 12 at index 3" -- "$IPURUN" train mlp.ipuexe --data mnist:mn "${QUIET[@]}"
  # Labels are not needed to predict.
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data npy:x.npy "${QUIET[@]}"
  expect_error 3 "npy:x.npy: has no labels" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy "${QUIET[@]}"
}

# Training never goes on from a NaN or an infinity (Keras' TerminateOnNaN): it stops with exit 8,
# naming the epoch, the step and the first tensor that went non-finite; the last checkpoint and
# every other output stay as they were.
test_non_finite_training_stops_at_its_first_tensor() {
  make_checkpoint
  cp -r ckpt ckpt.before
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8 --steps-per-execution 4 --learning-rate 1e30 -o diverges.ipuexe
  # Step 1's update makes weights near 1e30; step 2's second Dense overflows to infinity.
  expect_error 8 "diverges.ipuexe: epoch 1, step 2: training stopped at a NaN or an infinity" \
    "tensor 'dense2/relu' went non-finite in compute set 'forward/0/2' (node 'dense2/matmul', MatMul): inf at element" \
    "nothing was written to ckpt" -- \
    "$IPURUN" train diverges.ipuexe --data synthetic:64 --weights ckpt --save-weights ckpt --history history.json "${QUIET[@]}"
  expect_eq "$(cat ckpt/*.npy | cksum)" "$(cat ckpt.before/*.npy | cksum)" "the last checkpoint kept"
  expect_no_file history.json
  # Replicas and accumulation: the first update comes after step 2 (K=2), so step 3 overflows.
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8 --steps-per-execution 4 --gradient-accumulation 2 \
    --replicas 2 --learning-rate 1e30 -o diverges-x2.ipuexe
  expect_error 8 "epoch 1, step 3: training stopped" "tensor 'dense2/relu' went non-finite" "replica 0" -- \
    "$IPURUN" train diverges-x2.ipuexe --data synthetic:128 "${QUIET[@]}"
  # A NaN in the data is the data's fault, found before training (invalid input).
  e2e_data npy x.npy --shape 64,28,28,1 --fill const:0.5 --set 100=nan
  e2e_data npy y.npy --dtype i8 --shape 64 --fill mod:10
  expect_error 3 "x.npy: element 100 is not finite" -- "$IPURUN" train mlp.ipuexe --data npy:x.npy,y.npy "${QUIET[@]}"
}

test_steps_per_epoch_checks() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 8
  expect_error 3 "--steps-per-epoch 12 is not a multiple of steps_per_execution 8" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:2048 --steps-per-epoch 12 "${QUIET[@]}"
  expect_error 3 "--steps-per-epoch 1000 is outside [1, 128]" "synthetic:2048" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:2048 --steps-per-epoch 1000 "${QUIET[@]}"
  expect_error 3 "synthetic:100: 100 samples are fewer than one execution (8 steps of batch 16)" -- \
    "$IPURUN" train mlp.ipuexe --data synthetic:100 "${QUIET[@]}"
  # evaluate pads its one partial execution instead (test_run.sh: test_evaluate_agrees_with_predict).
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:100 "${QUIET[@]}"
  expect_stdout_contains "(100 samples)"
}

test_bad_data_specs() {
  compile_to mlp.ipuexe --batch-size 8
  expect_error 3 "data set 'bogus'" "expected synthetic" -- "$IPURUN" train mlp.ipuexe --data bogus "${QUIET[@]}"
  expect_error 3 "data set 'synthetic:0'" -- "$IPURUN" train mlp.ipuexe --data synthetic:0 "${QUIET[@]}"
  expect_error 3 "data set 'synthetic:-5'" -- "$IPURUN" train mlp.ipuexe --data synthetic:-5 "${QUIET[@]}"
  expect_error 6 "nodir/train-images-idx3-ubyte" -- "$IPURUN" train mlp.ipuexe --data mnist:nodir "${QUIET[@]}"
  expect_error 6 "missing.npy" -- "$IPURUN" predict mlp.ipuexe --data npy:missing.npy "${QUIET[@]}"
  echo 'not npy' > text.npy
  expect_error 3 "text.npy: not an npy file" -- "$IPURUN" predict mlp.ipuexe --data npy:text.npy "${QUIET[@]}"
  # Valid npy files that ipurun does not implement: exit 4 (unsupported).
  e2e_data npy f.npy --shape 8,28,28,1 --fill const:0.5
  "$PYTHON" -c '
raw = open("f.npy", "rb").read()
open("fortran.npy", "wb").write(raw.replace(b"False", b"True ", 1))
open("big.npy", "wb").write(raw.replace(b"<f4", b">f4", 1))'
  expect_error 4 "fortran.npy" "fortran_order" -- "$IPURUN" predict mlp.ipuexe --data npy:fortran.npy "${QUIET[@]}"
  expect_error 4 "big.npy" "big-endian" -- "$IPURUN" predict mlp.ipuexe --data npy:big.npy "${QUIET[@]}"
}

test_truncated_data_is_invalid_input() {
  compile_to mlp.ipuexe --batch-size 8
  e2e_data npy short.npy --shape 64,28,28,1 --fill const:0.5 --trailing -100
  expect_error 3 "short.npy" "truncated" -- "$IPURUN" predict mlp.ipuexe --data npy:short.npy "${QUIET[@]}"
}

test_truncated_mnist_is_invalid_input() {
  compile_to mlp.ipuexe --batch-size 8
  e2e_data idx mn --count 64 --gzip
  head -c 200 mn/train-images-idx3-ubyte.gz > cut.gz && mv cut.gz mn/train-images-idx3-ubyte.gz
  expect_error 3 "train-images-idx3-ubyte.gz" -- "$IPURUN" evaluate mlp.ipuexe --data mnist:mn "${QUIET[@]}"
}

test_weights_dir_missing() {
  compile_to mlp.ipuexe --batch-size 8
  expect_error 6 "nockpt" -- "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights nockpt "${QUIET[@]}"
  expect_error 6 "nockpt" -- "$IPURUN" train mlp.ipuexe --data synthetic:64 --weights nockpt "${QUIET[@]}"
}

# A trained checkpoint of the tutorial MLP in ./ckpt.
make_checkpoint() {
  compile_to mlp.ipuexe --batch-size 8
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:64 --save-weights ckpt "${QUIET[@]}"
}

test_save_weights_replaces_only_a_checkpoint_ipurun_wrote() {
  make_checkpoint
  # Its own checkpoint is replaced by the next run's.
  cp ckpt/dense1.kernel.npy before.npy
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:64 --epochs 2 --save-weights ckpt "${QUIET[@]}"
  expect_ne "$(cksum < ckpt/dense1.kernel.npy)" "$(cksum < before.npy)" "the checkpoint was rewritten"
  # A user's data directory, a user's .npy file, and a checkpoint holding a file of the user's are
  # refused before training starts and left exactly as they were.
  mkdir -p data && echo "my labels" > data/labels.txt
  e2e_data npy mine.npy --shape 4 --fill const:1
  cp before.npy mine-copy.npy
  echo "notes" > ckpt/notes.txt
  local target
  for target in data mine.npy ckpt; do
    find "$target" -type f -exec cksum {} + | sort > "$target.sums"
    expect_error 6 "$target: exists and is not a checkpoint ipurun wrote" "refusing to replace it" -- \
      "$IPURUN" train mlp.ipuexe --data synthetic:64 --save-weights "$target" --step-log steps.json "${QUIET[@]}"
    expect_eq "$(find "$target" -type f -exec cksum {} + | sort)" "$(cat "$target.sums")" "$target left intact"
    expect_no_file steps.json  # refused before any work
  done
  expect_stderr_contains "it holds 'notes.txt', which its index does not name"
}

test_weights_with_wrong_shape() {
  make_checkpoint
  e2e_data npy ckpt/dense2.bias.npy --shape 64 --fill const:0
  expect_error 3 "ckpt" "weight 'dense2/bias' has shape [64], the executable expects [128]" -- \
    "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
  # A checkpoint of a different model.
  "$PYTHON" -c '
import json
m = json.load(open("'"$TUTORIAL"'"))
m["nodes"][1]["units"] = 100
json.dump(m, open("narrow.json", "w"))'
  expect_exit 0 "$IPUCC" compile narrow.json "${SMALL[@]}" --batch-size 8 -o narrow.ipuexe
  expect_error 3 "ckpt" "weight 'dense1/kernel' has shape [784,256], the executable expects [784,100]" -- \
    "$IPURUN" evaluate narrow.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
}

test_weights_missing_entries() {
  make_checkpoint
  "$PYTHON" -c '
import json
i = json.load(open("ckpt/index.json"))
del i["dense3/kernel"]
json.dump(i, open("ckpt/index.json", "w"))'
  expect_error 3 "ckpt: checkpoint has no weight 'dense3/kernel'" -- \
    "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
  rm -r ckpt  # hand-edited above: no longer a checkpoint ipurun would replace
  make_checkpoint
  rm ckpt/dense4.kernel.npy
  expect_error 6 "ckpt/dense4.kernel.npy" -- "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
  # Without optimizer state a checkpoint still loads (a fresh optimizer).
  rm -r ckpt
  make_checkpoint
  "$PYTHON" -c '
import json
i = json.load(open("ckpt/index.json"))
json.dump({k: v for k, v in i.items() if not k.endswith("/momentum")}, open("ckpt/index.json", "w"))'
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
}

test_truncated_checkpoint_is_invalid_input() {
  make_checkpoint
  truncate -s 1000 ckpt/dense3.kernel.npy
  expect_error 3 "ckpt/dense3.kernel.npy" -- "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
}

test_garbage_checkpoint_index_is_invalid_input() {
  make_checkpoint
  echo garbage > ckpt/index.json
  expect_error 3 "ckpt/index.json" -- "$IPURUN" evaluate mlp.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
}

# names_spec OUT UNITS: Dense layers named 'x<NUL>y', 'a/b' and 'a.b' (UNITS wide), then the output.
names_spec() {
  "$PYTHON" - "$1" "$2" <<'EOF2'
import json, sys
layers = [{"name": "flatten", "type": "Flatten"}]
layers += [{"name": n, "type": "Dense", "units": int(sys.argv[2]), "activation": "tanh"} for n in ("x\0y", "a/b", "a.b")]
layers.append({"name": "out", "type": "Dense", "units": 10, "activation": "softmax"})
json.dump({"name": "names", "type": "sequential", "input": {"name": "image", "shape": [28, 28, 1]}, "layers": layers,
           "loss": {"type": "sparse_categorical_crossentropy"}, "optimizer": {"type": "sgd", "learning_rate": 0.01}},
          open(sys.argv[1], "w"))
EOF2
}

# A tensor name holding a NUL prints it as \x00, and the message goes on past it; an index whose
# names share a file (as ipurun's checkpoints of 'a/b' and 'a.b' once did, losing one of them) is
# refused, not loaded into both.
test_checkpoint_errors_name_any_tensor_whole() {
  names_spec four.json 4
  names_spec five.json 5
  expect_exit 0 "$IPUCC" compile four.json "${SMALL[@]}" --batch-size 8 -o four.ipuexe
  expect_exit 0 "$IPUCC" compile five.json "${SMALL[@]}" --batch-size 8 -o five.ipuexe
  expect_exit 0 "$IPURUN" train four.ipuexe --data synthetic:64 --save-weights ckpt "${QUIET[@]}"
  expect_error 3 "ckpt: weight 'x\\x00y/kernel' has shape [784,4], the executable expects [784,5]" -- \
    "$IPURUN" evaluate five.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
  cp -r ckpt shared
  "$PYTHON" -c '
import json
i = json.load(open("ckpt/index.json"))
del i["x\0y/kernel"]
json.dump(i, open("ckpt/index.json", "w"))'
  expect_error 3 "ckpt: checkpoint has no weight 'x\\x00y/kernel'" -- \
    "$IPURUN" evaluate four.ipuexe --data synthetic:64 --weights ckpt "${QUIET[@]}"
  "$PYTHON" -c '
import json
i = json.load(open("shared/index.json"))
i["a.b/bias"] = i["a/b/bias"]
json.dump(i, open("shared/index.json", "w"))'
  expect_error 3 "shared/index.json: 'a.b/bias' and 'a/b/bias' share the file" "one of the two tensors was lost" -- \
    "$IPURUN" evaluate four.ipuexe --data synthetic:64 --weights shared "${QUIET[@]}"
}

test_unwritable_outputs() {
  compile_to mlp.ipuexe --batch-size 8
  expect_error 6 "nodir/history.json" -- "$IPURUN" train mlp.ipuexe --data synthetic:64 --history nodir/history.json "${QUIET[@]}"
  expect_no_file nodir
  expect_error 6 "nodir/steps.json" -- "$IPURUN" train mlp.ipuexe --data synthetic:64 --step-log nodir/steps.json "${QUIET[@]}"
  expect_error 6 "nodir/p.npy" -- "$IPURUN" predict mlp.ipuexe --data synthetic:8 --output nodir/p.npy "${QUIET[@]}"
  touch blocker
  expect_error 6 "blocker/ckpt" -- "$IPURUN" train mlp.ipuexe --data synthetic:64 --save-weights blocker/ckpt "${QUIET[@]}"
}

test_bad_flags_are_usage_errors() {
  compile_to mlp.ipuexe --batch-size 8
  local -a cases=(
    "--epochs:train mlp.ipuexe --epochs 0"
    "--threads:train mlp.ipuexe --threads -1"
    "--progress:evaluate mlp.ipuexe --progress fancy"
    "--steps-per-epoch:train mlp.ipuexe --steps-per-epoch 0"
    "--frobnicate:predict mlp.ipuexe --frobnicate"
    "--output:evaluate mlp.ipuexe --output x.npy"
    "--history:predict mlp.ipuexe --history h.json"
    "--seed requires --shuffle:train mlp.ipuexe --data synthetic:64 --seed 3"
    "train needs --data:train mlp.ipuexe"
    "evaluate needs --data:evaluate mlp.ipuexe"
    "predict needs --data or --input:predict mlp.ipuexe"
    "executable:train"
  )
  local c text args
  for c in "${cases[@]}"; do
    text=${c%%:*}
    read -ra args <<< "${c#*:}"
    expect_exit 2 "$IPURUN" "${args[@]}"
    expect_stderr_contains "$text"
  done
  expect_exit 2 "$IPURUN"
  expect_exit 2 "$IPURUN" fit mlp.ipuexe
}

test_usage_errors_use_the_error_prefix() {
  expect_exit 2 "$IPURUN" train x.ipuexe --epochs 0
  expect_stderr_starts_with "ipurun: error:"
}

run_tests "$@"
