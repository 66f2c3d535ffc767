#!/usr/bin/env bash
# How `ipucc compile`'s wall time and peak resident memory grow with the model (the bar: BERT-base,
# fp16 LAMB, micro-batch 8, automatic split into 4 stages, compiled or refused within 120 s and
# 4 GB). BERT encoders of 3, 6 and 12 layers (base) and BERT-large (24 layers, hidden 1024), each
# trained in 4 automatic stages at micro-batch 8 and 2, and ResNet-50 trained on one IPU at batch 4
# with recomputation. Prints each compile's seconds, peak RSS and outcome (fits, or why not), and
# per encoder layer, so the growth shows. There is no peer: the figures are the compiler's own.
#   scripts/bench/compile_scale.sh [MODEL_DIR]   (the models are made there once: about 2.5 GB;
#                                                  default build/bench-models)
#   COMPILES=bert_base/8,resnet50/4 scripts/bench/compile_scale.sh    only these model/batch runs
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${1:-$root/build/bench-models}
mkdir -p "$models"
"$root/scripts/build.sh" >/dev/null

make_bert() { # NAME ARGS...: an encoder with BERT's classification head, made once
  local name=$1
  shift
  [[ -f $models/$name.onnx ]] || /usr/bin/python3 "$root/scripts/make_bert_encoder.py" "$models/$name.onnx" \
    --classes 2 "$@" >/dev/null
}
make_bert bert_l3 --layers 3
make_bert bert_l6 --layers 6
make_bert bert_base --layers 12
make_bert bert_large --layers 24 --hidden 1024 --heads 16
[[ -f $models/resnet50.onnx ]] || /usr/bin/python3 "$root/scripts/make_resnet50.py" "$models" >/dev/null

/usr/bin/python3 - "$root/build/cli/ipucc" "$models" <<'PYEOF'
import json, os, resource, subprocess, sys, tempfile, time
ipucc, models = sys.argv[1], sys.argv[2]
bert = ["--precision", "fp16", "--optimizer", "lamb", "--loss", "sparse_categorical_crossentropy",
        "--pipeline-stages", "4", "--num-ipus", "4"]
runs = [(name, layers, batch, bert + ["--batch-size", str(batch)])
        for name, layers in (("bert_l3", 3), ("bert_l6", 6), ("bert_base", 12), ("bert_large", 24))
        for batch in (8, 2)]
runs.append(("resnet50", 0, 4, ["--loss", "sparse_categorical_crossentropy", "--optimizer", "sgd",
                                 "--momentum", "0.9", "--batch-size", "4", "--recompute"]))
only = [c for c in os.environ.get("COMPILES", "").split(",") if c]
runs = [r for r in runs if not only or "%s/%d" % (r[0], r[2]) in only]

def compile_once(model, args):
    """Wall seconds, peak RSS in GB and the --json outcome of one compile, in a child of its own."""
    with tempfile.TemporaryFile() as out:
        code = ("import resource, subprocess, sys\n"
                "subprocess.run(sys.argv[1:], stdout=sys.stdout, stderr=subprocess.DEVNULL)\n"
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, ipucc, "compile", model, "--no-cache", "--json"] + args,
                              stdout=out, stderr=subprocess.PIPE, text=False)
        seconds = time.perf_counter() - start
        out.seek(0)
        result = json.loads(out.read() or b"{}")
    rss_gb = int(done.stderr.decode().split()[-1]) * 1024 / 1e9
    if result.get("fits"):
        outcome = "fits: %d stages" % result["pipeline"]["stages"]
    else:
        outcome = "refused: " + result.get("error", {}).get("message", "?").split(": ", 1)[-1][:60]
    return seconds, rss_gb, outcome

print("%-11s %5s %6s %9s %8s %10s %10s  %s" % ("model", "batch", "layers", "seconds", "RSS GB",
                                               "s/layer", "GB/layer", "outcome"))
for name, layers, batch, args in runs:
    seconds, rss, outcome = compile_once(os.path.join(models, name + ".onnx"), args)
    per_layer = ("%10.1f %10.2f" % (seconds / layers, rss / layers)) if layers else "%10s %10s" % ("-", "-")
    print("%-11s %5d %6s %9.1f %8.2f %s  %s" % (name, batch, layers or "-", seconds, rss, per_layer, outcome),
          flush=True)
PYEOF
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
