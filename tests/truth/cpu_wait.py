"""Iterations that wait for a CPU, and how long each waited, known in-process.

Ground truth: each of STEPS steps (one scope("step")) runs the same pure
Python loop; the test runs CPU hogs beside it (one per CPU), so the step's
thread spends part of each step runnable but not running.  The step
itself reads its thread's run-queue wait (the second number of
/proc/thread-self/schedstat, the kernel's own account) at its start and
its end and writes "wall_ns wait_ns" per step to $CPU_WAIT_OUT: the exact
waits iterations.cpu_wait_ns estimates from the samples around each end.
After the last step the script goes on computing for 0.3 s (30 sampling
periods at 100 Hz): the estimate needs a sample of the thread after each
span's end, and a script that exits at the last step's end has none
(cpu_wait_ns is then null: seen in CI, sample mode).
"""
import os
import time

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

STEPS = 30


def wait_ns():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


with open(os.environ["CPU_WAIT_OUT"], "w") as out:
    for _ in range(STEPS):
        with scope("step"):
            w0, t0 = wait_ns(), time.monotonic_ns()
            s = 0
            for k in range(150000):
                s += k * k % 13
            w1, t1 = wait_ns(), time.monotonic_ns()
        out.write("%d %d\n" % (t1 - t0, w1 - w0))
# a tail of work outside the steps, so that samples follow the last one
end = time.monotonic_ns() + 300_000_000
while time.monotonic_ns() < end:
    pass
