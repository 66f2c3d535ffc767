#!/usr/bin/env bash
# ipurun as several instances over Open MPI (docs/distributed.md): an executable of R = 4 replicas
# trained by I = 1, 2 and 4 instances gives final weights and per-step losses with the SHA-256 of
# one process's run, for SGD, Adam, 2 pipeline stages and gradient accumulation; a killed or a
# stopped instance ends the job promptly, naming it, with exit code 9 and no checkpoint; SIGTERM to
# ipurun ends every process of the job and writes nothing.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODEL=$MODELS/mlp_sequential.json
SMALL=(--tiles-per-ipu 64)
# Shuffled, and 500 samples do not fill the last step of 32: every instance must still agree.
TRAIN=(--data synthetic:500 --epochs 2 --shuffle --seed 7 --progress none --threads 1)
MPIRUN=(mpirun --oversubscribe --bind-to none -np)
[[ $(id -u) == 0 ]] && MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np)
# Under the sanitizer build (scripts/test.sh), Open MPI's own allocations are not ipurun's leaks.
# They are made in its plugins, which have no frame pointers: only the slow unwinder reaches the
# libmpi frames the suppressions name (with the fast one each stack ends in "<unknown module>").
export LSAN_OPTIONS="suppressions=$SRC/tests/e2e/lsan_openmpi.supp:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# digest DIR STEPS_JSON: one SHA-256 over every checkpoint file and the step losses.
digest() {
  { (cd "$1" && sha256sum -- *); json_get "$2" 'd["losses"]' | sha256sum; } | sha256sum | cut -d' ' -f1
}

# same_for_every_instance_count NAME COMPILE_FLAGS...: one process, then mpirun with 1, 2 and 4
# instances, and `ipurun --instances 2`: all five digests equal.
same_for_every_instance_count() {
  local name=$1
  shift
  command -v mpirun > /dev/null || fail "mpirun is missing (openmpi-bin, scripts/setup.sh)"
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o "$name.ipuexe" --batch-size 8 --replicas 4 "$@"
  expect_exit 0 "$IPURUN" train "$name.ipuexe" "${TRAIN[@]}" --save-weights one --step-log one.json
  local want instances
  want=$(digest one one.json)
  for instances in 1 2 4; do
    expect_exit 0 "${MPIRUN[@]}" "$instances" "$IPURUN" train "$name.ipuexe" "${TRAIN[@]}" \
      --save-weights "i$instances" --step-log "i$instances.json" --json
    expect_eq "$(digest "i$instances" "i$instances.json")" "$want" "$instances instances' digest"
    expect_json "$STDOUT" "d['instances'] == $instances and d['replicas_per_instance'] == $((4 / instances))"
    # The executable's all-reduce estimate: 4 replicas of one M2000 reduce over IPU-Links only.
    expect_json "$STDOUT" "d['all_reduce']['replicas'] == 4 and d['all_reduce']['pods'] == 1 and \
      d['all_reduce']['ipu_link_cycles'] > 0 and d['all_reduce']['gw_link_cycles'] == 0"
  done
  expect_exit 0 "$IPURUN" train "$name.ipuexe" --instances 2 "${TRAIN[@]}" --save-weights launched \
    --step-log launched.json
  expect_eq "$(digest launched launched.json)" "$want" "ipurun --instances 2 digest"
}

# Validation after each epoch runs on every instance's replicas too: 300 samples leave the last
# step of 32 partly padded, on some instances wholly.
test_validation_is_the_one_process_validation() {
  command -v mpirun > /dev/null || fail "mpirun is missing (openmpi-bin, scripts/setup.sh)"
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o val.ipuexe --batch-size 8 --replicas 4
  expect_exit 0 "$IPURUN" train val.ipuexe "${TRAIN[@]}" --validation-data synthetic:300 --history one.json
  expect_exit 0 "${MPIRUN[@]}" 2 "$IPURUN" train val.ipuexe "${TRAIN[@]}" --validation-data synthetic:300 \
    --history two.json --csv-logger filename=log.csv --early-stopping patience=5
  # Callbacks decide alike on every instance; the CSV log has the two epochs.
  expect_eq "$(wc -l < log.csv)" 3 "CSV log lines"
  expect_eq "$(json_get two.json '[d["val_loss"], d["val_accuracy"], d["loss"]]')" \
    "$(json_get one.json '[d["val_loss"], d["val_accuracy"], d["loss"]]')" "two instances' validation"
  expect_json two.json 'all(e["val_samples"] == 300 for e in d["epochs"])'
}

test_sgd_is_bitwise_the_one_process_run() {
  same_for_every_instance_count sgd --steps-per-execution 2
}

test_adam_is_bitwise_the_one_process_run() {
  same_for_every_instance_count adam --steps-per-execution 2 --optimizer adam
}

test_two_pipeline_stages_are_bitwise_the_one_process_run() {
  same_for_every_instance_count staged --num-ipus 8 --stage-assignment 0,0,1,1,1,1 --schedule grouped \
    --gradient-accumulation 2 --steps-per-execution 2
}

test_gradient_accumulation_is_bitwise_the_one_process_run() {
  same_for_every_instance_count accumulated --gradient-accumulation 2 --steps-per-execution 4
}

test_one_instance_compiles_a_model_for_all() {
  expect_exit 0 "$IPURUN" train "$MODEL" "${SMALL[@]}" --batch-size 8 --replicas 4 --instances 2 "${TRAIN[@]}"
  expect_eq "$(grep -c "compiled in" "$STDERR")" 1 "compiles"
  expect_stderr_contains "ipurun: instance 1: cache hit"
}

# 64 replicas of 2 stages fill two IPU-POD64s: the all-reduce adds a GW-Link ring across them
# (docs/cycle_model.md), and cycles_per_step carries both terms spread over the 2 micro-batches.
test_the_all_reduce_crosses_gw_links_beyond_a_pod64() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache --batch-size 8 --stage-assignment 0,0,1,1,1,1 \
    --replicas 32 --num-ipus 64 --json
  expect_json "$STDOUT" "(a := d['estimates']['all_reduce'])['pods'] == 1 and a['gw_link_cycles'] == 0 and \
    a['replicas_per_pod'] == 32 and a['cycles'] == a['ipu_link_cycles'] > 0"
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache --batch-size 8 --stage-assignment 0,0,1,1,1,1 \
    --replicas 64 --num-ipus 128 --json
  expect_json "$STDOUT" "(a := d['estimates']['all_reduce'])['pods'] == 2 and a['replicas_per_pod'] == 32 and \
    a['gw_link_cycles'] > 0 and abs(a['cycles'] - a['ipu_link_cycles'] - a['gw_link_cycles']) < 1e-6"
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache --batch-size 8 --json
  expect_json "$STDOUT" "d['estimates']['all_reduce'] is None" "one replica reduces nothing"
}

test_instances_must_divide_the_replicas() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  expect_exit 2 "$IPURUN" train r4.ipuexe --instances 3 "${TRAIN[@]}"
  expect_stderr_contains "replica(s) do not divide over 3 instances"
}

test_evaluate_runs_as_one_instance() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  expect_exit 4 "${MPIRUN[@]}" 2 "$IPURUN" evaluate r4.ipuexe --data synthetic:64
  expect_stderr_contains "evaluate runs as one instance"
}

test_other_instances_log_to_the_log_dir() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  expect_exit 0 "$IPURUN" train r4.ipuexe --instances 2 "${TRAIN[@]}" --log-dir logs --history history.json
  expect_file logs/instance-1.log
  expect_no_file logs/instance-0.log
  grep -q "^Epoch 2/2: " logs/instance-1.log || fail "instance 1 logged no epochs"
  expect_json history.json "len(d['loss']) == 2"
}

# instance_1_pid: the pid of the ipurun of r4.ipuexe whose environment names it rank 1, once it
# has started (10 s at most); fails without printing when it never does.
instance_1_pid() {
  local candidate
  for _ in $(seq 100); do
    for candidate in $(pgrep -f "$IPURUN train r4.ipuexe --data" || true); do
      if tr '\0' '\n' < "/proc/$candidate/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then
        echo "$candidate"
        return 0
      fi
    done
    sleep 0.1
  done
  return 1
}

test_a_killed_instance_ends_the_job() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  local start=$SECONDS rc=0 pid victim
  "$IPURUN" train r4.ipuexe --instances 2 --data synthetic:60000 --epochs 100 --progress none \
    --save-weights trained > "$STDOUT" 2> "$STDERR" < /dev/null &
  pid=$!
  victim=$(instance_1_pid) || fail "instance 1 never started"
  sleep 2
  kill -KILL "$victim"
  wait "$pid" || rc=$?
  ((SECONDS - start < 30)) || fail "the job took $((SECONDS - start)) s to end"
  expect_eq "$rc" 9 "exit code"
  expect_stderr_contains "rank 1"
  expect_stderr_contains "an instance of the job ended abnormally"
  expect_no_file trained
}

# A stopped instance neither dies nor answers: every other one gives up on it after
# --collective-timeout, names it, and ends the job with exit 9 before anything is written.
test_a_stopped_instance_ends_the_job() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  local start rc=0 pid victim cpu_ticks=0
  "$IPURUN" train r4.ipuexe --instances 2 --data synthetic:60000 --epochs 100 --progress none \
    --collective-timeout 3 --csv-logger filename=epochs.csv --save-weights trained \
    > "$STDOUT" 2> "$STDERR" < /dev/null &
  pid=$!
  victim=$(instance_1_pid) || fail "instance 1 never started"
  # Mid-epoch, however slow loading is (the sanitizers make it seconds of CPU): once instance 0
  # has logged the first epoch, and instance 1 has used another second of CPU in the next (an
  # epoch of 1,875 steps takes several).
  for _ in $(seq 3000); do
    [[ -s epochs.csv ]] && break
    kill -0 "$pid" 2> /dev/null || fail "the job ended before its first epoch did"
    sleep 0.1
  done
  [[ -s epochs.csv ]] || fail "the first epoch did not end within 300 s"
  local first_epoch_ticks
  first_epoch_ticks=$(awk '{print $14 + $15}' "/proc/$victim/stat")
  for _ in $(seq 600); do
    cpu_ticks=$(awk '{print $14 + $15}' "/proc/$victim/stat" 2> /dev/null || echo 0)
    ((cpu_ticks - first_epoch_ticks >= $(getconf CLK_TCK))) && break
    sleep 0.1
  done
  kill -STOP "$victim"
  start=$SECONDS
  while kill -0 "$pid" 2> /dev/null && ((SECONDS - start < 30)); do
    sleep 0.2
  done
  if kill -0 "$pid" 2> /dev/null; then
    kill -CONT "$victim" 2> /dev/null || true
    kill -KILL "$pid" "$victim" 2> /dev/null || true
    fail "the job still ran $((SECONDS - start)) s after instance 1 was stopped"
  fi
  wait "$pid" || rc=$?
  expect_eq "$rc" 9 "exit code"
  expect_stderr_contains "ipurun: instance 0: error: epoch "
  expect_stderr_contains "instance 1 did not answer within 3 s (--collective-timeout) in the all-gather"
  expect_no_file trained
}

# SIGTERM to ipurun alone (kill, a CI cancel, timeout; not the terminal's Ctrl-C, which signals
# the whole process group) ends the whole job: ipurun hands it to mpirun, which ends the
# instances; within 10 s no process of the job is left, ipurun ends as SIGTERM does (143), and no
# checkpoint is written.
test_sigterm_to_ipurun_ends_the_job() {
  expect_exit 0 "$IPUCC" compile "$MODEL" "${SMALL[@]}" --no-cache -o r4.ipuexe --batch-size 8 --replicas 4
  local rc=0 pid waited=0
  "$IPURUN" train r4.ipuexe --instances 2 --data synthetic:60000 --epochs 100 --progress none \
    --save-weights trained > "$STDOUT" 2> "$STDERR" < /dev/null &
  pid=$!
  instance_1_pid > /dev/null || fail "instance 1 never started"
  sleep 1
  kill -TERM "$pid"
  while pgrep -f "$IPURUN train r4.ipuexe" > /dev/null && ((waited < 100)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if pgrep -f "$IPURUN train r4.ipuexe" > /dev/null; then
    pkill -KILL -f "$IPURUN train r4.ipuexe" || true
    fail "processes of the job were still running 10 s after SIGTERM"
  fi
  wait "$pid" || rc=$?
  expect_eq "$rc" 143 "exit status (128 + SIGTERM)"
  expect_no_file trained
}

run_tests "$@"
