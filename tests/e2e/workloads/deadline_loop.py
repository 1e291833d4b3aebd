"""A loop bounded by time, for the compensation test (issue 29, item 3).

    deadline_loop.py ITERS MS OUT.json

Each iteration, inside `with scope("step")`, calls poll() until MS
milliseconds have passed (a loop that polls, or does Python work until a
deadline): its length is the deadline, whatever each call costs.  Recorded
in exact mode, every call is an event, so subtracting the calibrated cost
of the events recorded would remove most of the iteration, although
recording did not make it one nanosecond longer.  The workload times its
iterations with perf_counter_ns around the scope and writes them to
OUT.json ("latencies_ns"), and how many times each iteration polled
("polls": the work done varies with the machine's speed, the time does
not).
"""
import json
import sys
import time

from inferscope import scope


def leaf(x):
    return x + 1


def poll(x):
    """Four calls: eight recorded events for a few ns of work."""
    return leaf(leaf(leaf(x)))


def step(deadline_ns):
    """Polls until the deadline; returns how many times."""
    n = 0
    while time.perf_counter_ns() < deadline_ns:
        n = poll(n)
    return n // 3


def main():
    iters, ms, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    lat, polls = [], []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        with scope("step"):
            polls.append(step(t0 + int(ms * 1e6)))
        lat.append(time.perf_counter_ns() - t0)
    json.dump({"latencies_ns": lat, "polls": polls}, open(out, "w"))


main()
