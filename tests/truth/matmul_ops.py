"""Planted truth: six `x @ w` per step; torch's matrix product does the work.

Each of 25 steps (scope "step") computes `x @ w` six times, x a 256 x 512
and w a 512 x 512 float32 matrix (67 million multiply-adds each, on one
thread: torch.set_num_threads(1)), through the operator syntax only: the
line calls no function, the interpreter's BINARY_OP runs the type slot of
a torch.Tensor, which is torch's C++ matmul.  The Python around it (six
BINARY_OPs, a loop, a scope) costs microseconds against milliseconds of
products.

Expected, by construction: the time in iterations is torch ops (verdict
op_compute_bound, or a torch-op share of at least 80 % of the time in
iterations), python_bound does not fire, and the heaviest op is the matrix
product of a torch.Tensor (a name with "matmul", a torch op).
"""
import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(256, 512)
w = torch.randn(512, 512) / 512


def step():
    a = x @ w
    b = x @ w
    c = x @ w
    d = x @ w
    e = x @ w
    f = x @ w
    return a, b, c, d, e, f


step()  # warm-up outside the steps
for i in range(25):
    with scope("step"):
        step()
