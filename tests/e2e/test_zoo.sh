#!/usr/bin/env bash
# torchvision models as torch exports them (random weights, eval mode, batch 1) compile for
# inference on one mk2 IPU with its default tile memory and predict torch's logits within 1e-4 of
# the largest (scripts/zoo.py, which runs the whole zoo outside CI). The subset here is the one
# whose failure would show a planning regression cheaply: SqueezeNet's fire modules concatenate
# two branches on the channel axis, whose single row at batch 1 once landed whole on one tile
# (1.56 MB). Needs Debian's python3-torch and python3-torchvision; skipped without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

test_squeezenet_fits_one_ipu_and_matches_torch() {
  /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || skip "no python3-torch and python3-torchvision"
  expect_exit 0 /usr/bin/python3 "$SRC/scripts/zoo.py" squeezenet1_1 --work zoo --json rows.json
  cat "$STDOUT"
  expect_json rows.json 'd[0]["ok"] and d[0]["peak_tile_bytes"] <= 638976 and d[0]["error"] <= 1e-4' \
    "squeezenet1_1 fits and matches torch"
}

run_tests "$@"
