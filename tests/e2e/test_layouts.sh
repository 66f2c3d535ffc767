#!/usr/bin/env bash
# Layout equivalences (fp32, max relative error <= 1e-6 on every weight after 8 updates):
#   every schedule x 2 and 4 stages              == the unpipelined model with the same K
#   gradient accumulation K micro-batches of B  == one batch of K·B
#   R replicas at micro-batch B                  == one replica at R·B (mean loss)
#   any steps_per_execution                      == any other (bitwise)
# plus the validation errors of the layout options. The tutorial MLP (softmax output, SGD with
# momentum 0.9) trains from identical initial weights on synthetic data in order; the other
# optimizers are checked for replicas 4 × accumulation 1 == replicas 1 × accumulation 4.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODEL=$MODELS/mlp_sequential.json
COMPARE=$SRC/scripts/reference/compare_to_reference.py
SMALL=(--tiles-per-ipu 64)
DATA=synthetic:1024
UPDATES=8

# train NAME STEPS_PER_EPOCH COMPILE_FLAGS...: compiles NAME.ipuexe and trains one epoch of
# STEPS_PER_EPOCH micro-batch steps into NAME/ (weights) and NAME.steps.json (step losses).
train() {
  local name=$1 steps=$2
  shift 2
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o "$name.ipuexe" "$@"
  expect_exit 0 "$IPURUN" train "$name.ipuexe" --data "$DATA" --steps-per-epoch "$steps" --progress none \
    --save-weights "$name" --step-log "$name.steps.json"
}

# same_weights A B TOL: every weight and momentum tensor of B within TOL of A's.
same_weights() {
  expect_exit 0 "$PYTHON" "$COMPARE" --reference "$1" --checkpoint "$2" --weight-tol "$3"
}

test_gradient_accumulation_equals_the_large_batch() {
  train big $UPDATES --batch-size 32 --steps-per-execution 4
  train accumulated $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 16
  same_weights big accumulated 1e-6
  # Four micro-batch losses per update; their mean is the large batch's loss.
  expect_json accumulated.steps.json "len(d['losses']) == $((UPDATES * 4))"
  expect_exit 0 "$PYTHON" -c "
import json
big = json.load(open('big.steps.json'))['losses']
acc = json.load(open('accumulated.steps.json'))['losses']
for u in range(len(big)):
    mean = sum(acc[4 * u:4 * u + 4]) / 4
    assert abs(mean - big[u]) <= 1e-6 * abs(big[u]), (u, mean, big[u])"
}

test_replicas_equal_the_large_batch() {
  train big $UPDATES --batch-size 32 --steps-per-execution 4
  train replicated $UPDATES --batch-size 16 --replicas 2 --steps-per-execution 4
  same_weights big replicated 1e-6
  expect_exit 0 "$PYTHON" "$COMPARE" --reference big --checkpoint replicated --step-log replicated.steps.json \
    --reference-step-log big.steps.json --weight-tol 1e-6 --loss-tol 1e-6
}

test_replicas_with_accumulation_equal_the_large_batch() {
  train big $UPDATES --batch-size 32 --steps-per-execution 4
  train both $((UPDATES * 2)) --batch-size 8 --replicas 2 --gradient-accumulation 2 --steps-per-execution 4
  same_weights big both 1e-6
}

# Adam (and AdamW's decoupled decay) sees the same averaged gradient whichever way the samples of
# an update are split: 4 replicas of one micro-batch == one replica accumulating 4 (bitwise when
# written; 1e-6 so that another all-reduce order is no failure). (Not compared
# with one batch of 32: its float32 gradient sums in another order, and Adam turns the rounding of
# a near-zero gradient into a step of up to ±lr, 5e-5 of the largest weight here; docs/training.md.)
test_adam_replicas_equal_accumulation() {
  local optimizer
  for optimizer in adam adamw; do
    train "$optimizer-replicas" $UPDATES --batch-size 8 --replicas 4 --num-ipus 4 --steps-per-execution 4 \
      --optimizer $optimizer
    train "$optimizer-accumulated" $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 \
      --steps-per-execution 16 --optimizer $optimizer
    same_weights "$optimizer-accumulated" "$optimizer-replicas" 1e-6
  done
}

# The same for every other optimizer and the state each keeps (momentum, dampening's step count,
# RMSProp's three averages, Adagrad's sum, AdaMax's and LAMB's moments and step): each update sees the mean
# gradient of the same 32 samples, so the weights and state agree (bitwise when written).
test_other_optimizers_replicas_equal_accumulation() {
  local variant name
  for variant in "sgd --nesterov --weight-decay 0.001" "sgd --dampening 0.5 --weight-decay 0.001" \
    "rmsprop --centered --momentum 0.5" "adagrad" "adamax" "lamb --weight-decay 0.01"; do
    name=${variant%% *}-$(printf '%s' "$variant" | cksum | cut -d' ' -f1)
    # shellcheck disable=SC2086 # the optimizer and its flags, one word each
    train "$name-replicas" $UPDATES --batch-size 8 --replicas 4 --num-ipus 4 --steps-per-execution 4 \
      --optimizer $variant
    # shellcheck disable=SC2086
    train "$name-accumulated" $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 \
      --steps-per-execution 16 --optimizer $variant
    same_weights "$name-accumulated" "$name-replicas" 1e-6
  done
}

# Clipping by global norm (--global-clipnorm) sees the gradients after the mean over micro-batches
# and replicas: replicas 4 × accumulation 1 take bitwise the same steps as replicas 1 ×
# accumulation 4, with SGD, Adam and LAMB; a 4-stage pipeline (each stage's squared norm copied to
# the others) equals the unpipelined model to 1e-6 with SGD and with LAMB (its stages' shares are
# added in another order); and the clip is active (the weights differ from an unclipped run's).
test_global_norm_clipping_across_layouts() {
  local optimizer
  for optimizer in sgd adam lamb; do
    train "clip-$optimizer-replicas" $UPDATES --batch-size 8 --replicas 4 --num-ipus 4 --steps-per-execution 4 \
      --optimizer $optimizer --global-clipnorm 0.05
    train "clip-$optimizer-accumulated" $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 \
      --steps-per-execution 16 --optimizer $optimizer --global-clipnorm 0.05
    same_weights "clip-$optimizer-accumulated" "clip-$optimizer-replicas" 0
  done
  train clip-piped $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 16 \
    --optimizer sgd --global-clipnorm 0.05 --stage-assignment 0,0,1,2,3,3
  same_weights clip-sgd-accumulated clip-piped 1e-6
  train clip-lamb-piped $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 16 \
    --optimizer lamb --global-clipnorm 0.05 --stage-assignment 0,0,1,2,3,3
  same_weights clip-lamb-accumulated clip-lamb-piped 1e-6
  train unclipped $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 16 \
    --optimizer sgd
  expect_exit 1 "$PYTHON" "$COMPARE" --reference unclipped --checkpoint clip-sgd-accumulated --weight-tol 1e-3
}

test_steps_per_execution_changes_nothing() {
  train one $UPDATES --batch-size 32 --steps-per-execution 1
  train eight $UPDATES --batch-size 32 --steps-per-execution 8
  same_weights one eight 0
  expect_eq "$(json_get one.steps.json 'd["losses"]')" "$(json_get eight.steps.json 'd["losses"]')" "step losses"
}

test_every_schedule_and_stage_count_equals_the_unpipelined_model() {
  train flat $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8
  local schedule assignment
  for schedule in grouped interleaved sequential; do
    for assignment in 0,0,1,1,1,1 0,0,1,2,3,3; do
      train "$schedule-${assignment//,/}" $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 \
        --steps-per-execution 8 --stage-assignment "$assignment" --schedule "$schedule"
      same_weights flat "$schedule-${assignment//,/}" 1e-6
      expect_exit 0 "$PYTHON" "$COMPARE" --reference flat --checkpoint "$schedule-${assignment//,/}" \
        --step-log "$schedule-${assignment//,/}.steps.json" --reference-step-log flat.steps.json --loss-tol 1e-6
    done
  done
}

# A value read several stages after the one computing it (the residual MLP's dense1, read on stages
# 2 and 3) waits in as many receive buffers as its messages are in flight (and its gradient on the
# way back): every schedule still takes bitwise the steps of the unpipelined model.
test_values_skipping_stages_keep_every_schedule_bitwise() {
  local MODEL=$MODELS/mlp_residual.json
  train flat $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8
  local schedule
  for schedule in grouped interleaved sequential; do
    train "skip-$schedule" $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8 \
      --stage-assignment 0,0,1,2,2,3,3 --schedule "$schedule"
    same_weights flat "skip-$schedule" 0
  done
}

# Graphcore's grouped schedule keeps only the micro-batches in flight: 2 (stages - s) - 1 on stage
# s, whatever K, so its stash at K = 64 is no larger than at K = 8 (and still above interleaved's,
# which keeps stages - s), while its cycles per step fall with K.
test_grouped_stash_is_bounded_by_the_pipeline_depth() {
  local schedule k
  for schedule in grouped interleaved; do
    for k in 8 64; do
      expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --batch-size 8 --stage-assignment 0,0,1,2,3,3 \
        --gradient-accumulation $k --steps-per-execution $k --schedule $schedule --no-cache --json
      cp "$STDOUT" "$schedule-$k.json"
    done
  done
  expect_exit 0 "$PYTHON" -c "
import json
p = {(s, k): json.load(open(f'{s}-{k}.json'))['pipeline'] for s in ('grouped', 'interleaved') for k in (8, 64)}
stash = {key: [i['stash_bytes'] for i in v['ipus']] for key, v in p.items()}
assert all(a <= b for a, b in zip(stash['grouped', 64], stash['grouped', 8])), stash
assert all(a <= b for a, b in zip(stash['interleaved', 8], stash['grouped', 8])), stash
assert sum(stash['interleaved', 8]) < sum(stash['grouped', 8]), stash
assert p['grouped', 64]['cycles_per_step'] < p['grouped', 8]['cycles_per_step']"
}

# Pipelined inference: every stage works on its own micro-batch, slot after slot, so the residual
# MLP's predictions and evaluate losses on four stages (values skipping stages included) are
# bitwise those of one stage, with one step per execution or many, and at 64 steps per execution
# the four stages predict more samples per cycle than one.
test_pipelined_inference_overlaps_micro_batches_with_the_same_numbers() {
  local residual=$MODELS/mlp_residual.json stages=(--stage-assignment 0,0,1,2,2,3,3) spe layout
  for spe in 1 16; do
    for layout in one four; do
      local flags=()
      [ $layout = four ] && flags=("${stages[@]}" --schedule sequential)
      expect_exit 0 "$IPUCC" compile "$residual" "${SMALL[@]}" --batch-size 8 --steps-per-execution $spe \
        "${flags[@]}" --no-cache -o "$layout-$spe.ipuexe"
      expect_exit 0 "$IPURUN" predict "$layout-$spe.ipuexe" --data synthetic:300 --output "$layout-$spe.npy"
      expect_exit 0 "$IPURUN" evaluate "$layout-$spe.ipuexe" --data synthetic:296 --json
      json_get "$STDOUT" '[d["loss"], d["accuracy"]]' > "$layout-$spe.eval"
    done
    expect_exit 0 cmp "one-$spe.npy" "four-$spe.npy"
    expect_eq "$(cat "one-$spe.eval")" "$(cat "four-$spe.eval")" "evaluate at $spe steps per execution"
  done
  for layout in one four; do
    local flags=()
    [ $layout = four ] && flags=("${stages[@]}")
    expect_exit 0 "$IPUCC" compile "$residual" "${SMALL[@]}" --mode infer --batch-size 8 --steps-per-execution 64 \
      "${flags[@]}" --no-cache --json
    cp "$STDOUT" "infer-$layout.json"
  done
  expect_exit 0 "$PYTHON" -c "
import json
one, four = (json.load(open(f'infer-{n}.json')) for n in ('one', 'four'))
c1, c4 = (d['estimates']['cycles_per_step']['predict'] for d in (one, four))
assert c4 < c1, (c4, c1)"
}

test_recompute_gives_the_same_weights_with_less_stash() {
  train flat $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8
  train recomputed $((UPDATES * 4)) --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8 \
    --stage-assignment 0,0,1,2,3,3 --recompute
  same_weights flat recomputed 1e-6
  local variant
  for variant in stash recompute; do
    expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --batch-size 8 --gradient-accumulation 4 --steps-per-execution 8 \
      --stage-assignment 0,0,1,2,3,3 --no-cache --json $([ $variant = recompute ] && echo --recompute)
    cp "$STDOUT" "$variant.json"
  done
  expect_exit 0 "$PYTHON" -c "
import json
s, r = (json.load(open(f'{v}.json'))['pipeline'] for v in ('stash', 'recompute'))
assert sum(i['stash_bytes'] for i in r['ipus']) < sum(i['stash_bytes'] for i in s['ipus'])
assert r['cycles_per_step'] > s['cycles_per_step']"
}

test_pipelined_replicas_equal_the_large_batch() {
  train big $UPDATES --batch-size 32 --steps-per-execution 4
  train piped $((UPDATES * 2)) --batch-size 8 --replicas 2 --gradient-accumulation 2 --steps-per-execution 4 \
    --stage-assignment 0,0,0,1,1,1
  same_weights big piped 1e-6
}

# A layout flag the model cannot take is a usage error (2); bad stage numbering is the model's (3).
test_pipeline_layout_errors() {
  expect_exit 2 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --stage-assignment 0,0,1,2,3,3 --gradient-accumulation 2 \
    --steps-per-execution 2
  expect_stderr_contains "the grouped schedule needs --gradient-accumulation >= 4 (the number of stages)"
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --stage-assignment 0,0,1,2,3,3 --schedule sequential
  expect_exit 2 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --stage-assignment 0,0,1,1,1,1 --gradient-accumulation 2 \
    --steps-per-execution 2 --replicas 4 --num-ipus 4
  expect_stderr_contains "2 stage(s) x 4 replica(s) need 8 IPUs, the target has 4 (--num-ipus)"
  expect_exit 3 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --stage-assignment 0,0,2,2,2,2
  expect_stderr_contains "stages must be numbered 0..1 without gaps"
  expect_exit 2 "$IPUCC" compile "$MODEL" --schedule fastest
}

# What the seeds say, in the compiler's estimates: grouped is faster than interleaved,
# interleaved stashes less than grouped, sequential is slowest, and a larger K shrinks the bubble.
test_cycle_model_orders_the_schedules() {
  local schedule k
  for schedule in grouped interleaved sequential; do
    for k in 4 16; do
      expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" --gradient-accumulation $k \
        --steps-per-execution $k --schedule $schedule --no-cache --json
      cp "$STDOUT" "$schedule-$k.json"
    done
  done
  expect_exit 0 "$PYTHON" -c "
import json
p = {(s, k): json.load(open(f'{s}-{k}.json'))['pipeline'] for s in ('grouped', 'interleaved', 'sequential') for k in (4, 16)}
for k in (4, 16):
    g, i, q = p['grouped', k], p['interleaved', k], p['sequential', k]
    assert g['cycles_per_step'] <= i['cycles_per_step'] < q['cycles_per_step'], (k, g['cycles_per_step'], i['cycles_per_step'], q['cycles_per_step'])
    assert sum(x['stash_bytes'] for x in i['ipus']) < sum(x['stash_bytes'] for x in g['ipus'])
    assert len(g['ipus']) == 2 and all(x['busy_cycles'] > 0 and x['idle_cycles'] >= 0 for x in g['ipus'])
for s in ('grouped', 'interleaved'):
    assert p[s, 16]['bubble_fraction'] < p[s, 4]['bubble_fraction'], s"
}

# On the tutorial MLP the last stage's forward pass (with the loss) outweighs its backward, so
# grouped and interleaved tie. Where every stage's backward pass costs more than its forward (a
# wide MLP: each backward pass runs two products to the forward's one), the slots show the seeds'
# claims strictly: grouped runs forwards together and backwards together, while interleaved pairs
# one stage's backward with another's forward and waits for the backward in each slot.
test_grouped_beats_interleaved_where_backward_passes_cost_more() {
  "$PYTHON" - <<'PYEOF'
import json
layers = [{"name": "flatten", "type": "Flatten"}]
layers += [{"name": f"d{i}", "type": "Dense", "units": 1024, "activation": "relu"} for i in range(8)]
layers += [{"name": "out", "type": "Dense", "units": 10}]
json.dump({"type": "sequential", "input": {"shape": [28, 28, 1]}, "layers": layers,
           "stage_assignment": [0, 0, 0, 1, 1, 2, 2, 3, 3, 3],
           "loss": {"type": "sparse_categorical_crossentropy", "from_logits": True},
           "optimizer": {"type": "sgd", "learning_rate": 0.01, "momentum": 0.9}}, open("wide.json", "w"))
PYEOF
  local schedule k
  for schedule in grouped interleaved sequential; do
    for k in 4 64; do
      expect_exit 0 "$IPUCC" compile wide.json --batch-size 64 --num-ipus 4 --gradient-accumulation $k \
        --schedule $schedule --no-cache --json
      cp "$STDOUT" "$schedule-$k.json"
    done
  done
  expect_exit 0 "$PYTHON" -c "
import json
p = {(s, k): json.load(open(f'{s}-{k}.json'))['pipeline'] for s in ('grouped', 'interleaved', 'sequential') for k in (4, 64)}
for k in (4, 64):
    g, i, q = (p[s, k]['cycles_per_step'] for s in ('grouped', 'interleaved', 'sequential'))
    assert g < i < q, (k, g, i, q)
    stash = {s: [x['stash_bytes'] for x in p[s, k]['ipus']] for s in ('grouped', 'interleaved')}
    assert all(a <= b for a, b in zip(stash['interleaved'], stash['grouped'])), stash
    assert sum(stash['interleaved']) < sum(stash['grouped']), stash
for s in ('grouped', 'interleaved'):
    assert p[s, 64]['cycles_per_step'] < p[s, 4]['cycles_per_step'], s"
}

test_schedule_report_draws_every_pass() {
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" --gradient-accumulation 4 --steps-per-execution 4 \
    --no-cache --report schedule.svg
  expect_exit 0 "$PYTHON" -c "
import xml.etree.ElementTree as ET
root = ET.parse('schedule.svg').getroot()
titles = [t.text for t in root.iter('{http://www.w3.org/2000/svg}title')]
for stage_pass in ('F', 'B'):
    for m in range(4):
        assert sum(t.startswith(f'{stage_pass}{m}:') for t in titles) == 2, (stage_pass, m)   # one per IPU
assert any(t.startswith('update') for t in titles)"
  expect_exit 0 "$IPUCC" compile "$MODELS/mlp_sequential_staged.json" --gradient-accumulation 4 --steps-per-execution 4 \
    --no-cache --report schedule.html
  expect_exit 0 grep -q "<svg" schedule.html
}

test_layout_flags_are_recorded() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --batch-size 8 --replicas 2 --gradient-accumulation 4 \
    --steps-per-execution 8 --json
  expect_json "$STDOUT" 'd["pipeline"]["stages"] == 1 and d["pipeline"]["gradient_accumulation"] == 4 and d["pipeline"]["replicas"] == 2'
  expect_json "$STDOUT" 'd["target"]["num_ipus"] == 2'
}

# Flags that do not go together are usage errors (exit 2), as a bad flag value is.
test_layout_errors() {
  expect_exit 2 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --gradient-accumulation 4 --steps-per-execution 6
  expect_stderr_contains "--steps-per-execution 6 is not a multiple of --gradient-accumulation 4"
  expect_exit 2 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --replicas 8 --num-ipus 4
  expect_stderr_contains "8 replica(s) need 8 IPUs, the target has 4 (--num-ipus)"
  expect_exit 2 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --mode infer --gradient-accumulation 2 --steps-per-execution 2
  expect_stderr_contains "--gradient-accumulation applies to training only"
  expect_exit 2 "$IPUCC" compile "$MODEL" --replicas 0
  expect_stderr_starts_with "ipucc: error:"
}

test_replicated_predict_keeps_sample_order() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --batch-size 8 --mode infer --no-cache -o one.ipuexe
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --batch-size 4 --replicas 2 --mode infer --no-cache -o two.ipuexe
  expect_exit 0 "$IPURUN" predict one.ipuexe --data synthetic:37 --output one.npy
  expect_exit 0 "$IPURUN" predict two.ipuexe --data synthetic:37 --output two.npy
  # Same shape, same rows in the same order (different blockings round differently).
  expect_exit 0 "$PYTHON" -c "
import struct, sys
from array import array
def load(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<H', raw[8:10])[0]
    values = array('f'); values.frombytes(raw[10 + n:])
    return raw[10:10 + n], values
(h1, a), (h2, b) = load('one.npy'), load('two.npy')
assert h1 == h2, (h1, h2)
assert len(a) == 37 * 10
assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-6, 'predictions differ'"
}

run_tests "$@"
