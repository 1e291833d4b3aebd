#!/usr/bin/env python3
"""Rough per-call overhead of the Python agent (a measurement, not a test).

usage: overhead.py PYDIR [PYTHON...]
For each interpreter: a loop of 1M calls to an empty function, the best of
5 runs (each the median of 7 loops, in thread CPU time so that a busy machine
preempting us does not count), without the agent, with it (session on
/dev/shm, rings large enough not to drop) and under cProfile.
"""
import os
import shutil
import subprocess
import sys
import tempfile

LOOP = r'''
import os, statistics, sys, time
def f():
    pass
def loop(n):
    for _ in range(n):
        f()
if os.environ.get("MODE") == "cprofile":
    import cProfile
    cProfile.Profile().enable()
N = 1000000
runs = []
for _ in range(7):
    t = time.thread_time_ns()
    loop(N)
    runs.append(time.thread_time_ns() - t)
print(statistics.median(runs) / N)
'''


def measure(py, pydir, mode):
    best = None
    for _ in range(5):
        session = tempfile.mkdtemp(prefix="isc-overhead-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        env = dict(os.environ, PYTHONPATH=pydir, MODE=mode)
        env.pop("INFERSCOPE_SESSION", None)
        if mode == "agent":
            env.update(INFERSCOPE_SESSION=session, INFERSCOPE_SLOTS="2", INFERSCOPE_RING_KB="65536")
        try:
            out = subprocess.run([py, "-c", LOOP], env=env, stdout=subprocess.PIPE, check=True).stdout
        finally:
            shutil.rmtree(session, ignore_errors=True)
        v = float(out)
        best = v if best is None else min(best, v)
    return best


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: overhead.py PYDIR [PYTHON...]\n")
        return 2
    pydir = os.path.abspath(sys.argv[1])
    pys = sys.argv[2:] or [p for p in
                           ["/root/.pyenv/versions/%s/bin/python3" % v
                            for v in ("3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0")] +
                           ["/usr/bin/python3"] if os.access(p, os.X_OK)]
    print("%-44s %8s %8s %8s %10s %10s" % ("python", "off", "agent", "cProfile", "agent+", "cProfile+"))
    for py in pys:
        off, agent, cprof = (measure(py, pydir, m) for m in ("off", "agent", "cprofile"))
        print("%-44s %8.1f %8.1f %8.1f %10.1f %10.1f" % (py, off, agent, cprof, agent - off, cprof - off))
    print("(ns per call; a call is 2 events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
