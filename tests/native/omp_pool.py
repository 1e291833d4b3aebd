"""A thread Python never sees, doing native work: torch's intra-op pool
(OpenMP, libgomp; two threads: torch.set_num_threads(2)) runs
torch.exp over 4M floats (Sleef's vectorised exp in libtorch_cpu) in a
loop on the main thread, for SECONDS of the main thread's CPU time.  The
pool's worker thread runs no Python and, by construction, nothing but
its half of each exp (the tests set OMP_WAIT_POLICY=PASSIVE so that it
sleeps between products instead of spinning in libgomp).  Its CPU time
is read from /proc/self/task/TID/stat at the end (the threads that are
not the main thread and whose CPU time is over 0.2 s), and its truth is
that all of it is in libtorch: the part's time is its whole CPU time.

    omp_pool.py SECONDS TRUTH.json"""
import json
import os
import sys
import threading
import time

import torch

torch.set_num_threads(2)
x = torch.randn(1 << 22)
y = torch.empty(1 << 22)


def thread_cpu_ns(tid):
    with open("/proc/self/task/%d/stat" % tid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        torch.exp(x, out=y)  # EXP


work(float(sys.argv[1]))
me = threading.get_native_id()
workers = []
for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
    ns = thread_cpu_ns(tid)
    if tid != me and ns > 200_000_000:
        workers.append({"pid": os.getpid(), "tid": tid, "cpu_ns": ns, "whole": True,
                        "parts": [{"name_re": ".", "lib": "libtorch", "ns": ns}]})
with open(sys.argv[2], "w") as f:
    json.dump({"threads": workers}, f, indent=1)
