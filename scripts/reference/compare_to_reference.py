#!/usr/bin/env python3
"""Compares an ipurun checkpoint and step log with a reference. Python standard library only.

    compare_to_reference.py --reference tests/data/torch_reference/mlp_functional_b16 \
        --checkpoint out --step-log steps.json [--weight-tol 1e-5] [--loss-tol 1e-5]

REFERENCE is a checkpoint directory (index.json + float32 .npy files, the layout of
`ipurun train --save-weights`); its losses come from REFERENCE/reference.json (written by
torch_reference.py) or, with --reference-step-log, from another ipurun --step-log file, so two
ipurun runs can be compared too.

Every tensor of the reference must be in the checkpoint with the same shape. Its error is
max_i |a_i - b_i| / max_i |b_i| (b = reference; the denominator is the tensor's largest magnitude,
so entries near zero are not blown up); every step's loss error is |a - b| / |b|. Tensors only in
the checkpoint (e.g. the 'NAME/momentum' optimizer state, left out of small fixtures) are listed
and not compared. Prints the errors; exits 1 when one exceeds its tolerance (NaN always does),
2 on unreadable input.
"""
import argparse
import ast
import json
import math
import os
import struct
import sys
from array import array


class Bad(Exception):
    pass


def read_npy_f32(path):
    """(shape, array('f')) of a little-endian float32, C-order .npy file (versions 1-3)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY" or len(raw) < 10:
        raise Bad(path + ": not an .npy file")
    major = raw[6]
    if major == 1:
        (header_len,), start = struct.unpack("<H", raw[8:10]), 10
    elif major in (2, 3):
        (header_len,), start = struct.unpack("<I", raw[8:12]), 12
    else:
        raise Bad(path + ": unsupported .npy version %d" % major)
    try:
        header = ast.literal_eval(raw[start:start + header_len].decode("latin1"))
    except (ValueError, SyntaxError) as e:
        raise Bad(path + ": bad .npy header: %s" % e)
    if header.get("descr") != "<f4":
        raise Bad(path + ": expected dtype '<f4', got %r" % header.get("descr"))
    if header.get("fortran_order"):
        raise Bad(path + ": Fortran-order arrays are not supported")
    shape = tuple(header["shape"])
    count = 1
    for d in shape:
        count *= d
    body = raw[start + header_len:]
    if len(body) != 4 * count:
        raise Bad(path + ": %d data bytes for shape %s (expected %d)" % (len(body), shape, 4 * count))
    values = array("f")
    values.frombytes(body)
    if sys.byteorder == "big":
        values.byteswap()
    return shape, values


def read_checkpoint(directory):
    try:
        with open(os.path.join(directory, "index.json")) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        raise Bad("%s: no readable index.json: %s" % (directory, e))
    return {name: os.path.join(directory, fname) for name, fname in index.items()}


def tensor_error(a, b):
    """(max |a-b| / max|b|, max |a-b|, index of the max, max |b|); NaN-aware."""
    worst, at, scale = 0.0, 0, 0.0
    for i in range(len(b)):
        d = abs(a[i] - b[i])
        if not d <= worst:  # also catches NaN
            worst, at = d, i
            if math.isnan(d):
                break
        m = abs(b[i])
        if m > scale:
            scale = m
    rel = worst / scale if scale > 0 else worst
    return rel, worst, at, scale


def load_losses(path, key="losses"):
    try:
        with open(path) as f:
            d = json.load(f)
        return [float(x) for x in d[key]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Bad("%s: no loss list: %s" % (path, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="reference checkpoint directory (fixture)")
    ap.add_argument("--checkpoint", required=True, help="checkpoint directory to check")
    ap.add_argument("--step-log", help="ipurun --step-log file of the run to check")
    ap.add_argument("--reference-step-log", help="losses from this ipurun step log instead of reference.json")
    ap.add_argument("--weight-tol", type=float, default=1e-5)
    ap.add_argument("--loss-tol", type=float, default=1e-5)
    ap.add_argument("--json", help="also write the errors to this JSON file")
    a = ap.parse_args()

    failures, report = [], {"tensors": {}, "losses": []}
    try:
        ref = read_checkpoint(a.reference)
        got = read_checkpoint(a.checkpoint)
        print("weights: max |a-b| / max|b| per tensor (tolerance %.1e)" % a.weight_tol)
        worst_w = (0.0, "-")
        for name in sorted(ref):
            if name not in got:
                failures.append("tensor %s missing from %s" % (name, a.checkpoint))
                print("  %-26s MISSING from the checkpoint" % name)
                continue
            rshape, rv = read_npy_f32(ref[name])
            gshape, gv = read_npy_f32(got[name])
            if rshape != gshape:
                failures.append("tensor %s has shape %s, reference %s" % (name, gshape, rshape))
                print("  %-26s shape %s, reference %s" % (name, gshape, rshape))
                continue
            rel, absolute, at, scale = tensor_error(gv, rv)
            ok = rel <= a.weight_tol
            report["tensors"][name] = {"rel": rel, "abs": absolute, "index": at, "scale": scale}
            print("  %-26s %-12s rel %.3e  abs %.3e at [%d] (%.9g vs %.9g)  max|ref| %.4g  %s"
                  % (name, "x".join(map(str, rshape)), rel, absolute, at, gv[at], rv[at], scale,
                     "ok" if ok else "MISMATCH"))
            if not ok:
                failures.append("tensor %s: relative error %.3e > %.1e" % (name, rel, a.weight_tol))
            if not rel <= worst_w[0] or worst_w[1] == "-":
                worst_w = (rel, name)
        extra = sorted(set(got) - set(ref))
        if extra:
            print("  not in the reference (not compared): %s" % ", ".join(extra))
        print("max weight error: %.3e (%s)" % worst_w)
        report["max_weight_error"] = worst_w[0]

        if a.step_log:
            got_l = load_losses(a.step_log)
            ref_l = (load_losses(a.reference_step_log) if a.reference_step_log
                     else load_losses(os.path.join(a.reference, "reference.json")))
            if len(got_l) != len(ref_l):
                failures.append("%d losses, the reference has %d" % (len(got_l), len(ref_l)))
            print("losses: |a-b| / |b| per step (tolerance %.1e)" % a.loss_tol)
            worst_l, first_bad = (0.0, 1), None
            for k, (g, r) in enumerate(zip(got_l, ref_l)):
                rel = abs(g - r) / abs(r) if r != 0 else abs(g - r)
                report["losses"].append({"step": k + 1, "loss": g, "reference": r, "rel": rel})
                ok = rel <= a.loss_tol
                if not ok and first_bad is None:
                    first_bad = k + 1
                if not rel <= worst_l[0]:
                    worst_l = (rel, k + 1)
                print("  step %3d  %.9f  ref %.12f  rel %.3e%s" % (k + 1, g, r, rel, "" if ok else "  MISMATCH"))
            print("max loss error: %.3e (step %d)" % worst_l)
            report["max_loss_error"] = worst_l[0]
            if first_bad is not None:
                failures.append("loss of step %d (first of the mismatching steps) differs by more than %.1e"
                                % (first_bad, a.loss_tol))
    except Bad as e:
        print("compare_to_reference: %s" % e, file=sys.stderr)
        return 2
    report["failures"] = failures
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    if failures:
        print("MISMATCH: " + "; ".join(failures))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
