"""A torch workload whose time is known to be GEMM: work() calls
torch.matmul on 384x384 matrices in a loop for the given seconds of the
thread's CPU time (so a busy machine stretches the run, not the number
of samples), into a
preallocated output (no allocation, no page faults of a new tensor), one
thread (the tests set OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to 1), so
the GEMM kernel runs under the line marked GEMM.

    matmul.py SECONDS [exp]

With "exp", each turn of the loop also computes torch.exp of 2^20 floats
into a preallocated output on the line marked EXP: a run whose time is
GEMM and exp, to compare with one that is GEMM alone (the differential
flame graph)."""
import sys
import time

import torch

torch.set_num_threads(1)
a = torch.randn(384, 384)
b = torch.randn(384, 384)
c = torch.empty(384, 384)
e = torch.randn(1 << 20)
f = torch.empty(1 << 20)


def work(seconds, with_exp):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        torch.matmul(a, b, out=c)  # GEMM
        if with_exp:
            torch.exp(e, out=f)  # EXP
        n += 1
    return n


work(float(sys.argv[1]), len(sys.argv) > 2 and sys.argv[2] == "exp")
