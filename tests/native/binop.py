"""A torch workload whose CPU time is a torch op the Python agent cannot
see as a call: c = a @ b is the bytecode BINARY_OP, not a call, so exact
mode's spans count its time as the interpreter's (since issue 24 exact
mode moves it to the op from its Python stack samples; native frames say
the same).  By construction nearly
all of it is torch's matmul and OpenBLAS's GEMM (384x384, one thread: the
tests set OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to 1); the loop's own
Python is a clock read and a comparison a turn.  Each of the steps is a
scope, so the split inside iterations is judged too.

    binop.py SECONDS [numpy]

With "numpy", a and b are numpy arrays in this process that runs torch:
the operator is numpy's matmul (OpenBLAS under numpy's own extension), not
a torch op (the Python sampler, which saw only "an operator in a process
that runs torch", counted it as one before issue 24 named the callee by
its type)."""
import sys
import time

import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

torch.set_num_threads(1)
a = torch.randn(384, 384)
b = torch.randn(384, 384)
if len(sys.argv) > 2 and sys.argv[2] == "numpy":
    a, b = a.numpy(), b.numpy()


def step(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        c = a @ b  # BINARY_OP
    return c


for _ in range(10):
    with scope("step"):
        step(float(sys.argv[1]) / 10)
