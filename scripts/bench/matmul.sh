#!/usr/bin/env bash
# The 2048³ fp32 MatMul through `ipurun predict` against numpy's (OpenBLAS) in the same run: the
# issue's bar is ipurun at 0.9× numpy or better. The model is one ONNX MatMul of a [batch, 2048]
# input by a [2048, 2048] weight, compiled for inference at batch 2048 (one mk2 IPU: the product
# splits over K, docs/cycle_model.md); the input holds EXECUTIONS such products (default 8, 128 MB
# of float32). Each trial times one `ipurun predict` (its own samples/s, loading excluded) and
# then numpy multiplying the same chunks into one array of every product (predict keeps every
# output too), so both sides of the ratio see the same load and the same work. Prints
# GFLOP/s of each, median of TRIALS (default 3), and the ratio.
#   scripts/bench/matmul.sh            (numpy and onnx from Debian: /usr/bin/python3)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
trials=${TRIALS:-3}
executions=${EXECUTIONS:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/build.sh" >/dev/null
source "$root/scripts/bench/blas_kernels.sh"
source "$root/scripts/bench/warm_memory.sh"
export IPUCC_CACHE_DIR=$work/cache

/usr/bin/python3 - "$work" "$executions" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

work, executions, n = sys.argv[1], int(sys.argv[2]), 2048
rng = np.random.default_rng(0)
weight = (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32)
graph = helper.make_graph([helper.make_node("MatMul", ["A", "W"], ["C"], name="product")], "matmul2048",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["batch", n])],
                          [helper.make_tensor_value_info("C", TensorProto.FLOAT, ["batch", n])],
                          [numpy_helper.from_array(weight, "W")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), work + "/matmul.onnx")
np.save(work + "/weight.npy", weight)
inputs = np.lib.format.open_memmap(work + "/input.npy", mode="w+", dtype=np.float32, shape=(executions * n, n))
for e in range(executions):
    inputs[e * n:(e + 1) * n] = rng.standard_normal((n, n), dtype=np.float32)
inputs.flush()
PYEOF
"$root/build/cli/ipucc" compile "$work/matmul.onnx" --mode infer --batch-size 2048 -o "$work/matmul.ipuexe" >/dev/null

warm_memory
flops_per_sample=$((2 * 2048 * 2048))
: >"$work/ours" && : >"$work/theirs"
for ((t = 0; t < trials; t++)); do
  "$root/build/cli/ipurun" predict "$work/matmul.ipuexe" --input "$work/input.npy" --json 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['samples_per_second'] * $flops_per_sample / 1e9)" >>"$work/ours"
  /usr/bin/python3 - "$work" >>"$work/theirs" <<'PYEOF'
import sys, time
import numpy as np
work = sys.argv[1]
weight = np.load(work + "/weight.npy")
inputs = np.load(work + "/input.npy")
n = weight.shape[0]
_ = inputs[:n] @ weight  # warm-up: OpenBLAS's threads and buffers
# Every product kept in memory first written here, as predict keeps every output: a loop that
# dropped each product would write the next into the same warm pages.
products = np.empty_like(inputs)
start = time.perf_counter()
for e in range(inputs.shape[0] // n):
    np.matmul(inputs[e * n:(e + 1) * n], weight, out=products[e * n:(e + 1) * n])
print(inputs.shape[0] * 2 * n * n / (time.perf_counter() - start) / 1e9)
PYEOF
done
median() { sort -g | sed -n "$(((trials + 1) / 2))p"; }
ours=$(median <"$work/ours")
theirs=$(median <"$work/theirs")
python3 -c "print('2048^3 fp32 MatMul: ipurun %.1f GFLOP/s, numpy/OpenBLAS %.1f GFLOP/s, ratio %.2fx (bar: >= 0.9x)' % ($ours, $theirs, $ours / $theirs))"
echo "(median of $trials trials; ipurun predict's samples/s over $executions products; load: $(cut -d' ' -f1-3 /proc/loadavg))"
