#!/usr/bin/env bash
# Data that a model reads at run time outside what an op accepts (a Gather index, a loss target, a
# token id in a training set) stops ipurun with exit code 3, one error line naming the model, the
# node and the value, the same for any --threads, and no output file (docs/exit_codes.md).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_onnx() { "$PYTHON" -c 'import onnx' 2>/dev/null || skip "no onnx Python package"; }

# gather.onnx: y [3, 4] = Gather(table [5, 4] = 0..19, indices INT64 [3], axis 0), node 'embed'.
make_gather_model() {
  "$PYTHON" - <<'PYEOF' || fail "cannot write gather.onnx"
import onnx
from onnx import helper, TensorProto
table = helper.make_tensor("table", TensorProto.FLOAT, [5, 4], [float(i) for i in range(20)])
graph = helper.make_graph([helper.make_node("Gather", ["table", "indices"], ["y"], name="embed", axis=0)], "g",
                          [helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [table])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "gather.onnx")
PYEOF
}

test_a_gather_index_out_of_range_stops_predict() {
  need_onnx
  make_gather_model
  expect_exit 0 "$IPUCC" compile gather.onnx --mode infer -o gather.ipuexe
  # Negative indices in [-5, 0) count from the end.
  e2e_data npy ok.npy --dtype i8 --shape 3 --fill const:0 --set 0=4 --set 1=-5 --set 2=-1
  expect_exit 0 "$IPURUN" predict gather.ipuexe --input indices=ok.npy --output y.npy
  e2e_data npy-json y.npy > y.json
  expect_json y.json 'd["values"] == [16, 17, 18, 19, 0, 1, 2, 3, 16, 17, 18, 19]'

  e2e_data npy bad.npy --dtype i8 --shape 3 --fill const:0 --set 1=7 --set 2=-6
  local threads
  for threads in 1 2 0; do
    expect_error 3 "ipurun: error: gather.ipuexe: node 'embed' (Gather in compute set 'forward/0/0'): index 7 at indices[1] is outside [-5, 5)" -- \
      "$IPURUN" predict gather.ipuexe --input indices=bad.npy --output y_bad.npy --threads "$threads"
    expect_eq "$(wc -l < "$STDERR")" 1 "lines of stderr"
    expect_no_file y_bad.npy
  done
  # -6 is one below the range; --output-dir and --json write nothing either.
  e2e_data npy low.npy --dtype i8 --shape 3 --fill const:0 --set 2=-6
  expect_error 3 "node 'embed'" "index -6 at indices[2] is outside [-5, 5)" -- \
    "$IPURUN" predict gather.ipuexe --input indices=low.npy --output-dir out --json
  expect_eq "$(cat "$STDOUT")" "" "stdout"
  expect_no_file out/y.npy
  # Run as a model (compiled through the cache, which says so first), the error names the model.
  expect_exit 3 "$IPURUN" predict gather.onnx --input bad.npy
  expect_stderr_contains "ipurun: error: gather.onnx: node 'embed' (Gather in compute set 'forward/0/0'): index 7 at indices[1]"
}

test_a_loss_target_out_of_range_stops_predict() {
  need_onnx
  "$PYTHON" - <<'PYEOF' || fail "cannot write xent.onnx"
import onnx
from onnx import helper, TensorProto
node = helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"], name="xent", ignore_index=-1)
graph = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [4, 3]),
                           helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "xent.onnx")
PYEOF
  e2e_data npy scores.npy --dtype f4 --shape 4,3 --fill iota
  # The ignore index is valid anywhere; 3 is not a class of 3.
  e2e_data npy ok.npy --dtype i8 --shape 4 --fill mod:3 --set 3=-1
  expect_exit 0 "$IPURUN" predict xent.onnx --input scores=scores.npy --input labels=ok.npy --output loss.npy
  e2e_data npy bad.npy --dtype i8 --shape 4 --fill mod:3 --set 2=3
  expect_exit 3 "$IPURUN" predict xent.onnx --input scores=scores.npy --input labels=bad.npy --output loss_bad.npy
  expect_stderr_contains "ipurun: error: xent.onnx: node 'xent' (NllLoss in compute set 'forward/0/2'): target 3 at targets[2] is outside [0, 3) and is not the ignore_index -1"
  expect_no_file loss_bad.npy
}

# embed.onnx: token ids [N, 4] (floats, as a data set's features are) → Cast → Gather of a [10, 3]
# embedding table → Flatten → Gemm to 5 classes: an embedding that trains.
test_a_token_id_out_of_range_in_training_data_stops_train() {
  need_onnx
  "$PYTHON" - <<'PYEOF' || fail "cannot write embed.onnx"
import onnx
from onnx import helper, TensorProto
table = helper.make_tensor("table", TensorProto.FLOAT, [10, 3], [0.01 * i for i in range(30)])
w = helper.make_tensor("w", TensorProto.FLOAT, [12, 5], [0.02 * ((i * 7) % 11 - 5) for i in range(60)])
b = helper.make_tensor("b", TensorProto.FLOAT, [5], [0.0] * 5)
nodes = [helper.make_node("Cast", ["ids"], ["ids64"], name="cast", to=TensorProto.INT64),
         helper.make_node("Gather", ["table", "ids64"], ["e"], name="embed", axis=0),
         helper.make_node("Flatten", ["e"], ["f"], name="flatten", axis=1),
         helper.make_node("Gemm", ["f", "w", "b"], ["logits"], name="dense")]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])], [table, w, b])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "embed.onnx")
PYEOF
  e2e_data npy labels.npy --dtype i8 --shape 32 --fill mod:5
  e2e_data npy ids.npy --dtype f4 --shape 32,4 --fill mod:10
  local -a train=(train embed.onnx --loss sparse_categorical_crossentropy --batch-size 8 --progress none)
  expect_exit 0 "$IPURUN" "${train[@]}" --data npy:ids.npy,labels.npy
  # Token 12 in sample 21 (step 3, row 5 of its micro-batch of 8): the 22nd id of that step.
  e2e_data npy bad_ids.npy --dtype f4 --shape 32,4 --fill mod:10 --set 85=12
  expect_exit 3 "$IPURUN" "${train[@]}" --data npy:bad_ids.npy,labels.npy --save-weights w --history h.json
  expect_stderr_contains "ipurun: error: embed.onnx: epoch 1: node 'embed' (Gather in compute set 'forward/0/1'): index 12 at indices[21] is outside [-10, 10)"
  expect_no_file w
  expect_no_file h.json
}

run_tests "$@"
