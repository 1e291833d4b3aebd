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
not), with the machine around the loop as the kernel
measured it, not the recorder under test: how long the thread waited for
a CPU ("waited_ns", /proc/thread-self/schedstat's run-queue wait; without
it, wall less thread CPU time) of the loop's "wall_ns", and the source
("waited").
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


def runqueue_wait_ns():
    """This thread's time waiting for a CPU so far, or None without schedstat."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def main():
    iters, ms, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    lat, polls = [], []
    w0, c0, q0 = time.perf_counter_ns(), time.thread_time_ns(), runqueue_wait_ns()
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        with scope("step"):
            polls.append(step(t0 + int(ms * 1e6)))
        lat.append(time.perf_counter_ns() - t0)
    w1, c1, q1 = time.perf_counter_ns(), time.thread_time_ns(), runqueue_wait_ns()
    if q0 is not None and q1 is not None:
        waited, how = q1 - q0, "runqueue"
    else:
        waited, how = max(0, (w1 - w0) - (c1 - c0)), "off CPU"
    json.dump({"latencies_ns": lat, "polls": polls, "waited_ns": waited, "wall_ns": w1 - w0, "waited": how}, open(out, "w"))


main()
