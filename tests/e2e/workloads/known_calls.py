"""Known calls per iteration, for the overhead compensation test.

    known_calls.py ITERS CALLS OUT.json [probe]
    known_calls.py --probe SECONDS

Each iteration, inside `with scope("step")`, calls step() once, which calls
leaf() CALLS times: 2 x (CALLS + 1) recorded events per iteration (the
scope's own methods are not recorded; range() is a type, not a recorded C
call).  The workload times every iteration itself with perf_counter_ns
around the scope and writes the minimum and the median, over the
iterations after the first, to OUT.json.  Run plain (no recorder) it gives
the unrecorded latency the analyzer's corrected latency is compared with.

With "probe" (plain runs only: the probe's calls would be recorded), each
iteration is followed, outside the timed bracket, by one round of the
recording agent's calibration loop (5000 calls of an empty function), and
OUT.json gets "probe_ns_per_call", the fastest round: the speed the
machine ran this process at, comparable with the calibration's plain
rounds (compensation.bats checks that the two ran at one speed).  With
--probe it only runs such rounds for SECONDS and prints the fastest, in ns
a call: the machine's own speed, without the workload.
"""
import json
import sys
import time

from inferscope import scope


def leaf(x):
    return x + 1


def step(n):
    s = 0
    for _ in range(n):
        s = leaf(s)
    return s


def f():
    pass


def loop(n, f=f):  # the agent's calibration loop (agent_hook_setup.c agent_calibrate())
    for _ in range(n):
        f()


def probe_round():
    """One round of the calibration loop: ns a call."""
    p0 = time.perf_counter_ns()
    loop(5000)
    return (time.perf_counter_ns() - p0) / 5000


def main():
    if sys.argv[1] == "--probe":
        t0, best = time.perf_counter(), probe_round()
        while time.perf_counter() - t0 < float(sys.argv[2]):
            best = min(best, probe_round())
        print(best)
        return
    iters, calls, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    probe = len(sys.argv) > 4 and sys.argv[4] == "probe"
    lat, best = [], None
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        with scope("step"):
            step(calls)
        lat.append(time.perf_counter_ns() - t0)
        if probe:
            p = probe_round()
            best = p if best is None or p < best else best
    steady = sorted(lat[1:])
    with open(out, "w") as fh:
        json.dump({"min_ns": steady[0], "median_ns": steady[len(steady) // 2], "iterations": iters,
                   "calls": calls, "latencies_ns": lat, "probe_ns_per_call": best}, fh)


main()
