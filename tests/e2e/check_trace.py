"""Checks a Chrome trace-event file written by `ipucc compile --trace` or `ipurun --trace`
(cli/trace_events.h).

Usage: check_trace.py TRACE.json [COMPILE.json]

Every event well formed (complete slices and the metadata naming their tracks), slices on each
track nested (one inside another or after it, as Perfetto draws them). A compile's trace: ending
at the estimated cycles of the run, each IPU's compute-set slices summing to what otherData says, and,
given the `ipucc compile --json` output, the run equal to cycles_per_step x steps and each IPU's
compute sets its stage's passes (busy cycles) plus at most the weight update. A run's trace:
every step inside a run of a program, and as many runs of each as otherData counts.
Prints one line per IPU; exits 1 naming the first fault.
"""
import json
import math
import sys
from collections import defaultdict

METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
EPSILON_US = 1e-6


def fail(message):
    print(f"check_trace: {message}", file=sys.stderr)
    sys.exit(1)


def number(event, key):
    value = event.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        fail(f"event {event} has no finite non-negative {key!r}")
    return value


def check(trace, compile_out):
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    names = {}
    slices = defaultdict(list)
    for e in events:
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            fail(f"not a complete or metadata event: {e}")
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"event without integer pid and tid: {e}")
        if not isinstance(e.get("args"), dict):
            fail(f"event without args: {e}")
        if e["ph"] == "M":
            if e.get("name") not in METADATA:
                fail(f"unknown metadata event: {e}")
            if e["name"].endswith("_name"):
                names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else 0)] = e["args"]["name"]
            continue
        if not isinstance(e.get("name"), str) or not e["name"] or not isinstance(e.get("cat"), str):
            fail(f"slice without a name or category: {e}")
        slices[(e["pid"], e["tid"])].append((number(e, "ts"), number(e, "dur"), e))
    for pid, tid in slices:
        if ("process_name", pid, 0) not in names or ("thread_name", pid, tid) not in names:
            fail(f"track {pid}/{tid} has slices but no process or thread name")
    for track, items in slices.items():
        items.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for ts, dur, e in items:
            while open_ends and ts >= open_ends[-1] - EPSILON_US:
                open_ends.pop()
            if open_ends and ts + dur > open_ends[-1] + EPSILON_US:
                fail(f"slice {e['name']!r} at {ts} us overlaps the end of its enclosing slice on track {track}")
            open_ends.append(ts + dur)

    other = trace.get("otherData", {})
    if other.get("tool") == "ipurun --trace":
        check_measured(slices, other)
    elif other.get("tool") == "ipucc compile --trace":
        check_estimated(slices, names, other, compile_out)
    else:
        fail(f"otherData names no tool this checks: {other.get('tool')!r}")


def check_measured(slices, other):
    """Each step inside a run of a program, and the programs' runs as otherData counts them."""
    runs = sorted((ts, ts + dur, e["name"]) for items in slices.values() for ts, dur, e in items
                  if e["cat"] == "program")
    counted = defaultdict(int)
    for _, _, name in runs:
        counted[name] += 1
    for name, summary in other["programs"].items():
        if counted[name] != summary["runs"]:
            fail(f"program {name}: {counted[name]} slices, otherData counts {summary['runs']} runs")
    steps = 0
    for items in slices.values():
        for ts, dur, e in items:
            if e["cat"] == "program":
                continue
            steps += 1
            if not any(start - EPSILON_US <= ts and ts + dur <= end + EPSILON_US for start, end, _ in runs):
                fail(f"step {e['name']!r} at {ts} us is outside every program's run")
    if steps == 0:
        fail("no step was traced")
    print(f"check_trace: {steps} steps in {len(runs)} program runs")


def check_estimated(slices, names, other, compile_out):
    clock = other["clock_hz"]
    end_cycles = max(ts + dur for items in slices.values() for ts, dur, _ in items) * clock / 1e6
    if not math.isclose(end_cycles, other["estimated_cycles"], rel_tol=1e-6):
        fail(f"the trace ends at {end_cycles} cycles, the estimate is {other['estimated_cycles']}")
    ipus = {}
    for (kind, pid, _), name in names.items():
        if kind == "process_name" and name.startswith("IPU "):
            ipus[int(name.split()[1])] = pid
    drawn = defaultdict(float)
    for (pid, _), items in slices.items():
        for _, dur, e in items:
            if e["cat"] == "compute set":
                drawn[pid] += dur * clock / 1e6
    for ipu, expected in enumerate(other["compute_set_cycles_per_ipu"]):
        if not math.isclose(drawn[ipus[ipu]], expected, rel_tol=0.01):
            fail(f"IPU {ipu}: compute sets drawn for {drawn[ipus[ipu]]} cycles, otherData says {expected}")
    if compile_out is None:
        return
    program = other["program"]
    per_step = compile_out["estimates"]["cycles_per_step"][program]
    if not math.isclose(other["estimated_cycles"], per_step * other["steps"], rel_tol=0.01):
        fail(f"the run is {other['estimated_cycles']} cycles, {per_step} per step x {other['steps']} steps differs")
    pipeline = compile_out.get("pipeline", {})
    steps = other["steps"]
    for stage in pipeline.get("ipus", []):
        # Per step in the JSON: the stage's passes (busy), the slots' rest (idle), and beyond the
        # slots the weight update, whose compute sets may run on any IPU.
        ipu = stage["ipu"]
        busy = stage["busy_cycles"] * steps
        update = (pipeline["compute_cycles_per_step"] - stage["busy_cycles"] - stage["idle_cycles"]) * steps
        cycles = drawn[ipus[ipu]]
        print(f"IPU {ipu}: compute sets {cycles:,.0f} cycles; the stage's passes {busy:,.0f}, the update {update:,.0f}")
        if not busy * 0.99 <= cycles <= (busy + update) * 1.01:
            fail(f"IPU {ipu}: compute sets drawn for {cycles} cycles, not the passes' {busy} plus at most the update's {update}")


def main():
    if len(sys.argv) not in (2, 3):
        fail(__doc__)
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    compile_out = None
    if len(sys.argv) == 3:
        with open(sys.argv[2]) as f:
            compile_out = json.load(f)
    check(trace, compile_out)
    print(f"check_trace: {sys.argv[1]}: {len(trace['traceEvents'])} events well formed")


if __name__ == "__main__":
    main()
