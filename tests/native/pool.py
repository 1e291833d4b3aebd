"""A torch workload whose worker threads only ever run its GEMM: the main
thread calls torch.matmul on 768x768 matrices in a loop, for the given
seconds of its CPU time, with two BLAS threads (the tests set
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS to 2), so OpenBLAS hands half of
each product to its worker thread, a thread that runs no Python.  By
construction the worker's work is dispatched by the line marked GEMM
(and the op torch.matmul runs there); between products it spins and
yields, waiting for the next one.

    pool.py SECONDS"""
import sys
import time

import torch

torch.set_num_threads(2)
a = torch.randn(768, 768)
b = torch.randn(768, 768)
c = torch.empty(768, 768)


def work(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        torch.matmul(a, b, out=c)  # GEMM
        n += 1
    return n


work(float(sys.argv[1]))
