#!/usr/bin/env bash
# ipurun train / evaluate / predict: training converges, outputs and files have the documented
# form, runs are deterministic, and every data source (synthetic, npy, mnist IDX) works.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TUTORIAL=$MODELS/mlp_functional.json
SEQ=$MODELS/mlp_sequential.json
SMALL=(--tiles-per-ipu 64)
QUIET=(--progress none)

# compile_to OUT [flags...]: the tutorial MLP, small target, into OUT.
compile_to() {
  local out=$1
  shift
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" "$@" -o "$out"
}

test_loss_falls_epoch_over_epoch() {
  compile_to mlp.ipuexe --batch-size 32 --steps-per-execution 8
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:8192 --epochs 3 --history history.json "${QUIET[@]}"
  expect_file history.json
  expect_json history.json 'd["schema_version"] == 1 and d["tool"] == "ipurun" and d["command"] == "history"'
  expect_json history.json 'len(d["loss"]) == 3 and len(d["accuracy"]) == 3 and len(d["epochs"]) == 3'
  expect_json history.json 'd["loss"][0] > d["loss"][1] > d["loss"][2]' "loss strictly decreasing"
  expect_json history.json 'd["accuracy"][2] > d["accuracy"][0]' "accuracy rising"
  expect_json history.json 'd["loss"][0] < 2.5 and all(0 <= a <= 1 for a in d["accuracy"])' "plausible values"
  expect_json history.json '[e["epoch"] for e in d["epochs"]] == [1, 2, 3] and all(e["steps"] == 256 and e["samples"] == 8192 for e in d["epochs"])'
  expect_json history.json '[e["loss"] for e in d["epochs"]] == d["loss"] and [e["accuracy"] for e in d["epochs"]] == d["accuracy"]'
}

test_train_json_summary() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:2048 --epochs 2 --steps-per-epoch 16 --json --progress plain
  local out=$STDOUT
  expect_json "$out" 'd["schema_version"] == 1 and d["tool"] == "ipurun" and d["command"] == "train"' "stdout is one JSON object even with progress"
  expect_json "$out" 'd["executable"] == "mlp.ipuexe" and d["data"] == "synthetic:2048"'
  expect_json "$out" 'd["batch_size"] == 16 and d["steps_per_execution"] == 4'
  expect_json "$out" 'len(d["epochs"]) == 2 and [e["epoch"] for e in d["epochs"]] == [1, 2]'
  expect_json "$out" 'all(set(e) == {"epoch", "loss", "learning_rate", "accuracy", "steps", "samples", "seconds", "samples_per_second"} for e in d["epochs"])'
  expect_json "$out" 'all(e["steps"] == 16 and e["samples"] == 256 and e["seconds"] > 0 and e["samples_per_second"] > 0 for e in d["epochs"])'
  expect_json "$out" 'd["final"] == {"loss": d["epochs"][-1]["loss"], "accuracy": d["epochs"][-1]["accuracy"]}'
  expect_json "$out" 'd["samples_per_second"] > 0'
  # Progress goes to stderr.
  expect_stderr_contains "Epoch 1/2"
  expect_stderr_contains "16/16 steps"
  expect_stderr_contains "loss: "
}

test_step_log_file() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:2048 --epochs 2 --steps-per-epoch 8 --step-log steps.json --json "${QUIET[@]}"
  cp "$STDOUT" summary.json
  expect_json steps.json 'd["schema_version"] == 1 and d["tool"] == "ipurun" and d["command"] == "step_log" and len(d["losses"]) == 16'
  # Each epoch's loss is the mean of its steps (float32 steps, summed in double).
  "$PYTHON" - steps.json summary.json <<'EOF' || fail "epoch losses are not the means of the step losses"
import json, sys
steps = json.load(open(sys.argv[1]))["losses"]
epochs = json.load(open(sys.argv[2]))["epochs"]
for i, e in enumerate(epochs):
    mean = sum(steps[8 * i: 8 * i + 8]) / 8
    assert abs(mean - e["loss"]) < 1e-9, (mean, e["loss"])
EOF
}

test_train_says_once_which_samples_an_epoch_leaves_out() {
  compile_to mlp.ipuexe --batch-size 8 --steps-per-execution 4
  # 1,003 samples: 125 whole batches, 124 of them in whole executions of 4 steps: 992 samples.
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:1003 --epochs 2 --history h.json "${QUIET[@]}"
  expect_stderr_contains "ipurun: note: synthetic:1003: each epoch trains on 992 of its 1003 samples (124 steps"
  expect_eq "$(grep -c 'note:' "$STDERR")" 1 "one note for two epochs"
  expect_json h.json 'all(e["samples"] == 992 for e in d["epochs"])'
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:1024 "${QUIET[@]}"
  expect_stderr_not_contains "note:"
}

test_save_weights_then_evaluate() {
  compile_to mlp.ipuexe --batch-size 32 --steps-per-execution 8
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:4096 --epochs 2 --save-weights ckpt "${QUIET[@]}"
  expect_file ckpt/index.json
  expect_json ckpt/index.json 'd["dense1/kernel"] == "dense1.kernel.npy" and "dense5/bias" in d and "dense1/kernel/momentum" in d'
  e2e_data npy-json ckpt/dense1.kernel.npy > kernel.json
  expect_json kernel.json 'd["descr"] == "<f4" and d["shape"] == [784, 256] and d["header_len"] % 64 == 0'
  # Evaluate with the checkpoint: deterministic, and better than the initial weights.
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:2048 --weights ckpt "${QUIET[@]}"
  cp "$STDOUT" eval1.txt
  expect_stdout_contains "(2048 samples)"
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:2048 --weights ckpt "${QUIET[@]}"
  cmp -s eval1.txt "$STDOUT" || fail "two evaluations differ: $(cat eval1.txt) vs $(cat "$STDOUT")"
  # Its progress is Keras's evaluate line: steps and loss, no epoch, no val_ prefix.
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:2048 --weights ckpt --progress plain
  expect_stderr_starts_with "64/64 steps - "
  expect_stderr_contains " - loss: "
  expect_stderr_not_contains "Epoch"
  expect_stderr_not_contains "val_"
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:2048 --weights ckpt --json "${QUIET[@]}"
  cp "$STDOUT" trained.json
  expect_json trained.json 'd["schema_version"] == 1 and d["command"] == "evaluate" and d["samples"] == 2048 and d["executable"] == "mlp.ipuexe"'
  expect_json trained.json 'set(d) >= {"loss", "accuracy", "seconds", "samples_per_second", "data"}'
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data synthetic:2048 --json "${QUIET[@]}"
  cp "$STDOUT" fresh.json
  "$PYTHON" -c '
import json, sys
t, f = json.load(open("trained.json")), json.load(open("fresh.json"))
sys.exit(0 if t["loss"] < f["loss"] and t["accuracy"] > f["accuracy"] else 1)' || fail "trained weights do not beat the initial ones"
  # The same weights in an executable with another steps_per_execution give the same loss.
  compile_to spe4.ipuexe --batch-size 32 --steps-per-execution 4
  expect_exit 0 "$IPURUN" evaluate spe4.ipuexe --data synthetic:2048 --weights ckpt --json "${QUIET[@]}"
  expect_json "$STDOUT" 'abs(d["loss"] - json.load(open("trained.json"))["loss"]) < 1e-9 and d["accuracy"] == json.load(open("trained.json"))["accuracy"]' "same weights, other steps_per_execution"
}

test_resume_from_checkpoint_continues_training() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  local run=("$IPURUN" train mlp.ipuexe --data synthetic:2048 --steps-per-epoch 16 "${QUIET[@]}")
  expect_exit 0 "${run[@]}" --epochs 2 --step-log straight.json
  expect_exit 0 "${run[@]}" --epochs 1 --step-log first.json --save-weights half
  expect_exit 0 "${run[@]}" --epochs 1 --step-log second.json --weights half
  # Weights and momentum come back exactly, so 1 + 1 epochs equal 2.
  "$PYTHON" -c '
import json, sys
s, a, b = (json.load(open(f))["losses"] for f in ("straight.json", "first.json", "second.json"))
sys.exit(0 if s == a + b else 1)' || fail "resumed training differs from uninterrupted training"
}

# Adam's moments and step count are checkpoint state: 1 + 1 epochs through --save-weights and
# --weights end bit for bit where 2 epochs straight do (the step count says 32, so the bias
# correction of the resumed half is that of updates 17 to 32, not 1 to 16).
test_adam_resumes_bitwise_from_a_checkpoint() {
  compile_to adam.ipuexe --batch-size 16 --steps-per-execution 4 --optimizer adam
  local run=("$IPURUN" train adam.ipuexe --data synthetic:2048 --steps-per-epoch 16 "${QUIET[@]}")
  expect_exit 0 "${run[@]}" --epochs 2 --step-log straight.json --save-weights straight
  expect_exit 0 "${run[@]}" --epochs 1 --step-log first.json --save-weights half
  expect_exit 0 "${run[@]}" --epochs 1 --step-log second.json --weights half --save-weights resumed
  "$PYTHON" - <<'EOF2' || fail "resumed Adam training differs from uninterrupted training"
import json, os
s, a, b = (json.load(open(f))["losses"] for f in ("straight.json", "first.json", "second.json"))
assert s == a + b, "step losses differ"
def files(ckpt):
    index = json.load(open(os.path.join(ckpt, "index.json")))
    return {n: open(os.path.join(ckpt, f), "rb").read() for n, f in index.items()}
straight, resumed = files("straight"), files("resumed")
assert sorted(straight) == sorted(resumed)
assert {"dense1/kernel/adam_m", "dense1/kernel/adam_v", "dense1/kernel/adam_step"} <= set(straight), sorted(straight)
for n in straight:
    assert straight[n] == resumed[n], "%r differs after the round trip" % n
EOF2
  # A one-element little-endian float32 .npy: the value is its last 4 bytes.
  expect_exit 0 "$PYTHON" -c 'import json, os, struct, sys
index = json.load(open("straight/index.json"))
data = open(os.path.join("straight", index["dense1/kernel/adam_step"]), "rb").read()
sys.exit(0 if struct.unpack("<f", data[-4:])[0] == 32.0 else 1)'
}

# Every other optimizer's state is checkpoint state too: 1 + 1 epochs equal 2, bit for bit, with
# the state tensors each optimizer keeps (and a step count of 32 where it keeps one); LAMB with
# clipping by global norm, which keeps no state of its own.
test_other_optimizers_resume_bitwise_from_a_checkpoint() {
  local variant state
  for variant in "sgd --dampening 0.5 --weight-decay 0.001:momentum,momentum_step" \
    "sgd --nesterov:momentum" "rmsprop --centered --momentum 0.5:rmsprop_v,rmsprop_momentum,rmsprop_mean_grad" \
    "adagrad:adagrad_sum" "adamax:adamax_m,adamax_u,adamax_step" \
    "lamb --weight-decay 0.01 --global-clipnorm 0.5:lamb_m,lamb_v,lamb_step"; do
    state=${variant#*:}
    rm -rf straight half resumed
    # shellcheck disable=SC2086 # the optimizer and its flags, one word each
    compile_to other.ipuexe --batch-size 16 --steps-per-execution 4 --optimizer ${variant%%:*}
    local run=("$IPURUN" train other.ipuexe --data synthetic:2048 --steps-per-epoch 16 "${QUIET[@]}")
    expect_exit 0 "${run[@]}" --epochs 2 --step-log straight.json --save-weights straight
    expect_exit 0 "${run[@]}" --epochs 1 --step-log first.json --save-weights half
    expect_exit 0 "${run[@]}" --epochs 1 --step-log second.json --weights half --save-weights resumed
    "$PYTHON" - "$state" <<'EOF2' || fail "resumed training with --optimizer ${variant%%:*} differs from uninterrupted training"
import json, os, struct, sys
s, a, b = (json.load(open(f))["losses"] for f in ("straight.json", "first.json", "second.json"))
assert s == a + b, "step losses differ"
def files(ckpt):
    index = json.load(open(os.path.join(ckpt, "index.json")))
    return {n: open(os.path.join(ckpt, f), "rb").read() for n, f in index.items()}
straight, resumed = files("straight"), files("resumed")
assert sorted(straight) == sorted(resumed)
state = {"dense1/kernel/" + n for n in sys.argv[1].split(",")}
assert state <= set(straight), (state, sorted(straight))
for n in straight:
    assert straight[n] == resumed[n], "%r differs after the round trip" % n
for n in state:
    if n.endswith("_step"):
        assert struct.unpack("<f", straight[n][-4:])[0] == 32.0, n
EOF2
  done
}

# named_layers_spec OUT [UNITS]: a sequential MLP whose hidden Dense layers (tanh, so none dies;
# UNITS wide, default 8) are named as a model may name them: 'a/b' and 'a.b' (one file under the
# old '/' -> '.' rule), 'Case' and 'case' (one file on a case-insensitive file system), '..', '/',
# '' (tensors '/kernel'), 300 bytes (past the 255-byte file name limit) and 'x<NUL>y'.
named_layers_spec() {
  "$PYTHON" - "$1" "${2:-8}" <<'EOF2'
import json, sys
names = ["a/b", "a.b", "Case", "case", "..", "/", "L" * 300, "", "x\0y"]
layers = [{"name": "flatten", "type": "Flatten"}]
layers += [{"name": n, "type": "Dense", "units": int(sys.argv[2]), "activation": "tanh"} for n in names]
layers.append({"name": "out", "type": "Dense", "units": 10, "activation": "softmax"})
json.dump({"name": "named_layers", "type": "sequential",
           "input": {"name": "image", "shape": [28, 28, 1], "dtype": "float32"}, "layers": layers,
           "loss": {"type": "sparse_categorical_crossentropy", "from_logits": False},
           "optimizer": {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9}}, open(sys.argv[1], "w"))
EOF2
}

# Whatever the layers are named, every weight and momentum tensor gets a checkpoint file of its own
# (distinct ignoring case, a plain file name of at most 255 bytes) and comes back bit for bit:
# 1 + 1 epochs through --save-weights and --weights end with the checkpoint of 2 epochs straight.
test_checkpoint_of_any_layer_names_round_trips() {
  named_layers_spec named.json
  expect_exit 0 "$IPUCC" compile named.json "${SMALL[@]}" --batch-size 8 --steps-per-execution 2 -o named.ipuexe
  local run=("$IPURUN" train named.ipuexe --data synthetic:256 --steps-per-epoch 4 "${QUIET[@]}")
  expect_exit 0 "${run[@]}" --epochs 2 --save-weights straight
  expect_exit 0 "${run[@]}" --epochs 1 --save-weights half
  expect_exit 0 "${run[@]}" --epochs 1 --weights half --save-weights resumed
  "$PYTHON" - <<'EOF2' || fail "checkpoint files are shared, unsafe or not bitwise equal"
import json, os, sys
layers = ["a/b", "a.b", "Case", "case", "..", "/", "L" * 300, "", "x\0y", "out"]
want = {l + "/" + t + m for l in layers for t in ("kernel", "bias") for m in ("", "/momentum")}
def files(ckpt):
    index = json.load(open(os.path.join(ckpt, "index.json")))
    assert set(index) == want, (ckpt, sorted(set(index) ^ want))
    names = list(index.values())
    assert len({f.lower() for f in names}) == len(names), (ckpt, "files shared")
    assert all("/" not in f and f not in (".", "..") and len(f.encode()) <= 255 for f in names), ckpt
    assert sorted(os.listdir(ckpt)) == sorted(names + ["index.json"]), (ckpt, "other files")
    return {n: open(os.path.join(ckpt, f), "rb").read() for n, f in index.items()}
straight, half, resumed = files("straight"), files("half"), files("resumed")
for n in sorted(want):
    assert straight[n] == resumed[n], "%r differs after the round trip" % n
# Every tensor trained (none is equal by standing still), and a/b and a.b kept their own.
assert all(half[n] != straight[n] for n in want), [n for n in sorted(want) if half[n] == straight[n]]
assert straight["a/b/bias"] != straight["a.b/bias"]
EOF2
}

# evaluate uses every sample: 250 is not a whole number of executions (64 samples) nor of
# batches (32), and the padded rows of the last execution count in neither loss nor accuracy.
test_evaluate_agrees_with_predict() {
  compile_to mlp.ipuexe --batch-size 32 --steps-per-execution 2
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:2048 --save-weights ckpt "${QUIET[@]}"
  e2e_data npy x.npy --shape 250,28,28,1 --fill random --seed 7
  e2e_data npy y.npy --dtype i4 --shape 250 --fill mod:10
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data npy:x.npy --weights ckpt --output p.npy "${QUIET[@]}"
  e2e_data xent p.npy y.npy > xent.json
  # Replicas pad their share of the last step too; an execution of 500 steps holds all 250 in its first 8.
  compile_to mlp-r2.ipuexe --batch-size 16 --replicas 2 --steps-per-execution 3
  compile_to mlp-s500.ipuexe --batch-size 32 --steps-per-execution 500
  local exe
  for exe in mlp.ipuexe mlp-r2.ipuexe mlp-s500.ipuexe; do
    expect_exit 0 "$IPURUN" evaluate "$exe" --data npy:x.npy,y.npy --weights ckpt --json "${QUIET[@]}"
    cp "$STDOUT" eval.json
    expect_json eval.json 'd["samples"] == 250' "$exe: every sample evaluated"
    # evaluate's loss is the mean cross-entropy of predict's probabilities, its accuracy their argmax.
    expect_json xent.json 'abs(d["loss"] - json.load(open("eval.json"))["loss"]) < 1e-4' "$exe: loss from predictions"
    expect_json xent.json 'abs(d["accuracy"] - json.load(open("eval.json"))["accuracy"]) < 1e-12' "$exe: accuracy from predictions"
  done
}

test_predict_writes_npy_for_partial_batches() {
  compile_to mlp.ipuexe --batch-size 32 --steps-per-execution 8
  # 1000 is not a multiple of the batch (32) nor of an execution (256 samples).
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:1000 --output p.npy --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["schema_version"] == 1 and d["command"] == "predict" and d["samples"] == 1000 and d["shape"] == [1000, 10] and d["output"] == "p.npy"'
  expect_file p.npy
  # Read the header by hand: magic, version 1.0, little-endian uint16 length, dict, 64-byte alignment.
  "$PYTHON" - p.npy <<'EOF' || fail "p.npy is not the expected (1000, 10) float32 npy"
import ast, struct, sys
raw = open(sys.argv[1], "rb").read()
assert raw[:6] == b"\x93NUMPY" and raw[6:8] == b"\x01\x00", raw[:8]
n = struct.unpack("<H", raw[8:10])[0]
text = raw[10:10 + n].decode("latin1")
assert text.endswith("\n") and (10 + n) % 64 == 0, (n, text)
h = ast.literal_eval(text)
assert h == {"descr": "<f4", "fortran_order": False, "shape": (1000, 10)}, h
body = raw[10 + n:]
assert len(body) == 1000 * 10 * 4, len(body)
values = struct.unpack("<10000f", body)
for i in range(1000):
    row = values[10 * i: 10 * i + 10]
    assert all(0 <= v <= 1 for v in row) and abs(sum(row) - 1) < 1e-4, (i, row)
EOF
  # Without --output: a summary line, no file, and a note that nothing was kept.
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data synthetic:5 "${QUIET[@]}"
  expect_stdout_contains "predicted 5 samples"
  expect_stderr_contains "ipurun: note: the predictions were not written: give --output FILE or --output-dir DIR"
}

test_predict_padding_does_not_change_rows() {
  compile_to mlp.ipuexe --batch-size 32 --steps-per-execution 4
  e2e_data npy all.npy --shape 300,28,28,1 --fill random --seed 3
  # The same seed gives the same first 37 samples.
  e2e_data npy first37.npy --shape 37,28,28,1 --fill random --seed 3
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data npy:all.npy --output all_p.npy "${QUIET[@]}"
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data npy:first37.npy --output first_p.npy "${QUIET[@]}"
  "$PYTHON" - "$E2E_DATA" <<'EOF' || fail "a sample's prediction depends on the other samples in its execution"
import json, subprocess, sys
load = lambda p: json.loads(subprocess.check_output([sys.executable, sys.argv[1], "npy-json", p]))
a, b = load("all_p.npy"), load("first_p.npy")
assert a["shape"] == [300, 10] and b["shape"] == [37, 10]
assert a["values"][:370] == b["values"], "rows differ"
EOF
}

test_infer_executable_predicts_like_train_executable() {
  compile_to train.ipuexe --batch-size 32 --steps-per-execution 2
  compile_to infer.ipuexe --batch-size 32 --steps-per-execution 2 --mode infer
  expect_exit 0 "$IPURUN" train train.ipuexe --data synthetic:2048 --save-weights ckpt "${QUIET[@]}"
  expect_exit 0 "$IPURUN" predict train.ipuexe --data synthetic:100 --weights ckpt --output a.npy "${QUIET[@]}"
  expect_exit 0 "$IPURUN" predict infer.ipuexe --data synthetic:100 --weights ckpt --output b.npy "${QUIET[@]}"
  cmp -s a.npy b.npy || fail "infer and train executables predict differently with the same weights"
}

test_sequential_and_functional_specs_agree() {
  expect_exit 0 "$IPUCC" compile "$SEQ" "${SMALL[@]}" --batch-size 32 --steps-per-execution 2 -o seq.ipuexe
  compile_to func.ipuexe --batch-size 32 --steps-per-execution 2
  expect_exit 0 "$IPURUN" train seq.ipuexe --data synthetic:2048 --steps-per-epoch 16 --step-log seq.json "${QUIET[@]}"
  expect_exit 0 "$IPURUN" train func.ipuexe --data synthetic:2048 --steps-per-epoch 16 --step-log func.json "${QUIET[@]}"
  cmp -s seq.json func.json || fail "the same MLP as sequential and functional spec trains differently"
}

test_run_by_cache_key_and_prefix() {
  expect_exit 0 "$IPUCC" compile "$TUTORIAL" "${SMALL[@]}" --batch-size 8 --json
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPURUN" predict "$key" --data synthetic:10 --json "${QUIET[@]}"
  expect_eq "$(json_get "$STDOUT" 'd["executable"]')" "cache entry $key" "executable of a key"
  expect_exit 0 "$IPURUN" predict "${key:0:8}" --data synthetic:10 --json "${QUIET[@]}"
  expect_eq "$(json_get "$STDOUT" 'd["executable"]')" "cache entry $key" "executable of an 8-digit prefix"
  expect_exit 0 "$IPURUN" train "${key:0:12}" --data synthetic:2048 --steps-per-epoch 4 "${QUIET[@]}"
  expect_exit 0 "$IPURUN" evaluate "${key:0:8}" --data synthetic:2048 "${QUIET[@]}"
  # --cache-dir instead of the environment.
  mv "$IPUCC_CACHE_DIR" moved
  expect_exit 0 "$IPURUN" predict "${key:0:8}" --cache-dir moved --data synthetic:10 "${QUIET[@]}"
  expect_exit 0 env -u IPUCC_CACHE_DIR "$IPURUN" predict "$key" --cache-dir moved --data synthetic:10 "${QUIET[@]}"
}

test_threads_do_not_change_results() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  local t
  for t in 1 2 0; do
    expect_exit 0 "$IPURUN" train mlp.ipuexe --data synthetic:2048 --epochs 2 --steps-per-epoch 16 --threads "$t" --step-log "t$t.json" "${QUIET[@]}"
  done
  expect_json t1.json 'len(d["losses"]) == 32'
  cmp -s t1.json t2.json || fail "--threads 1 and --threads 2 give different step losses"
  cmp -s t1.json t0.json || fail "--threads 1 and --threads 0 give different step losses"
}

test_shuffle_is_seeded() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  local run=("$IPURUN" train mlp.ipuexe --data synthetic:2048 --epochs 2 --steps-per-epoch 16 "${QUIET[@]}")
  expect_exit 0 "${run[@]}" --shuffle --seed 1 --step-log s1.json
  expect_exit 0 "${run[@]}" --shuffle --seed 1 --step-log s1_again.json
  expect_exit 0 "${run[@]}" --shuffle --seed 2 --step-log s2.json
  expect_exit 0 "${run[@]}" --step-log plain.json
  expect_exit 0 "${run[@]}" --step-log plain_again.json
  cmp -s s1.json s1_again.json || fail "--shuffle --seed 1 twice gives different step logs"
  cmp -s plain.json plain_again.json || fail "unshuffled training twice gives different step logs"
  ! cmp -s s1.json plain.json || fail "--shuffle gives the same step log as no shuffle"
  ! cmp -s s1.json s2.json || fail "--seed 1 and --seed 2 give the same step log"
}

# A checkpoint of another optimizer loads its weights and says what it left out.
test_checkpoint_of_another_optimizer_warns() {
  compile_to adam.ipuexe --batch-size 16 --optimizer adam
  compile_to sgd.ipuexe --batch-size 16 --optimizer sgd --momentum 0.9
  expect_exit 0 "$IPURUN" train adam.ipuexe --data synthetic:64 --save-weights adam_ckpt "${QUIET[@]}"
  expect_exit 0 "$IPURUN" train sgd.ipuexe --data synthetic:64 --weights adam_ckpt "${QUIET[@]}"
  expect_stderr_contains "ipurun: warning: adam_ckpt:"
  expect_stderr_contains "of the checkpoint are not in the executable and were not loaded (dense1/bias/adam_m"
  # Its own optimizer's checkpoint loads without a word.
  expect_exit 0 "$IPURUN" train adam.ipuexe --data synthetic:64 --weights adam_ckpt "${QUIET[@]}"
  expect_stderr_not_contains "warning"
}

test_npy_data() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 2
  e2e_data npy features.npy --shape 320,28,28,1 --fill random --seed 5
  e2e_data npy labels.npy --dtype i8 --shape 320 --fill mod:10
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data npy:features.npy,labels.npy --epochs 2 --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["data"] == "npy:features.npy,labels.npy" and all(e["steps"] == 20 and e["samples"] == 320 for e in d["epochs"])'
  # Other label layouts and feature dtypes numpy writes give the same data.
  e2e_data npy labels_col.npy --dtype i4 --shape 320,1 --fill mod:10
  e2e_data npy labels_u1.npy --dtype u1 --shape 320 --fill mod:10
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data npy:features.npy,labels.npy "${QUIET[@]}"
  cp "$STDOUT" base.txt
  local l
  for l in labels_col.npy labels_u1.npy; do
    expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data "npy:features.npy,$l" "${QUIET[@]}"
    cmp -s base.txt "$STDOUT" || fail "labels in $l evaluate differently"
  done
  # uint8 pixels are used as they are, with a note that the mnist: loader scales its own.
  e2e_data npy pixels.npy --dtype u1 --shape 320,28,28,1 --fill mod:256
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data npy:pixels.npy,labels.npy "${QUIET[@]}"
  expect_stderr_contains "ipurun: note: pixels.npy: uint8 features are used as they are, 0 to 255"
  e2e_data npy features64.npy --dtype f8 --shape 320,28,28,1 --fill random --seed 5
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data npy:features64.npy,labels.npy "${QUIET[@]}"
  cmp -s base.txt "$STDOUT" || fail "float64 features evaluate differently from the same float32 ones"
  # Features alone are enough to predict.
  expect_exit 0 "$IPURUN" predict mlp.ipuexe --data npy:features.npy --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["samples"] == 320 and d["data"] == "npy:features.npy"'
}

test_flat_npy_features_are_accepted() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 2
  e2e_data npy flat.npy --shape 64,784 --fill random
  e2e_data npy labels.npy --dtype i8 --shape 64 --fill mod:10
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data npy:flat.npy,labels.npy "${QUIET[@]}"
}

test_mnist_idx_data() {
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 2
  e2e_data idx plain --count 256
  e2e_data idx plain --count 96 --prefix t10k
  e2e_data idx gz --count 256 --gzip
  e2e_data idx gz --count 96 --prefix t10k --gzip
  expect_exit 0 "$IPURUN" train mlp.ipuexe --data mnist:plain --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["data"] == "mnist:plain" and d["epochs"][0]["samples"] == 256'
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data mnist:plain --json "${QUIET[@]}"
  cp "$STDOUT" plain.json
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data mnist:gz --json "${QUIET[@]}"
  "$PYTHON" -c '
import json, sys
a, b = json.load(open("plain.json")), json.load(open(sys.argv[1]))
sys.exit(0 if (a["loss"], a["accuracy"], a["samples"]) == (b["loss"], b["accuracy"], b["samples"]) else 1)' "$STDOUT" ||
    fail "gzipped IDX files evaluate differently from the plain ones"
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data mnist:plain:test --json "${QUIET[@]}"
  expect_json "$STDOUT" 'd["samples"] == 96 and d["data"] == "mnist:plain:test"' "the :test split reads t10k files"
  expect_exit 0 "$IPURUN" evaluate mlp.ipuexe --data mnist:gz/:test "${QUIET[@]}"
  expect_stdout_contains "(96 samples)"
}

test_hyperparameter_overrides_take_effect() {
  local run=("$IPURUN" train mlp.ipuexe --data synthetic:2048 --steps-per-epoch 16 "${QUIET[@]}")
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4
  expect_exit 0 "${run[@]}" --step-log default.json
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4 --learning-rate 0.01 --momentum 0.9
  expect_exit 0 "${run[@]}" --step-log same.json
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4 --learning-rate 0.05
  expect_exit 0 "${run[@]}" --step-log lr.json
  compile_to mlp.ipuexe --batch-size 16 --steps-per-execution 4 --momentum 0
  expect_exit 0 "${run[@]}" --step-log momentum.json
  cmp -s default.json same.json || fail "overriding with the spec's own learning rate and momentum changed training"
  ! cmp -s default.json lr.json || fail "--learning-rate 0.05 did not change training"
  ! cmp -s default.json momentum.json || fail "--momentum 0 did not change training"
  # The first step runs before any update, so its loss is the same in all three.
  "$PYTHON" -c '
import json, sys
firsts = {json.load(open(f))["losses"][0] for f in ("default.json", "lr.json", "momentum.json")}
sys.exit(0 if len(firsts) == 1 else 1)' || fail "first-step losses differ"
}

run_tests "$@"
