"""verdict workload, ground truth: op_compute_bound.

Each step runs a small dense model in `forward`: two large float32
matrix multiplications (512x1024 @ 1024x1024) with torch.matmul. The
Python around them is a handful of calls per step, nothing blocks, and
torch runs on one intra-op thread (torch.set_num_threads(1): the op
time is on the traced thread and no pool of threads competes for the
two cores; OpenBLAS is limited to one thread too), so time inside torch ops dominates the step (measured: about
99 % of scoped time). Top contributor: the op torch.matmul, called from
forward.

Usage: op_compute_bound.py [STEPS]  (default 30 steps)
"""

import os
import sys

# One BLAS thread: Debian's torch calls OpenBLAS, whose own thread pool
# ignores torch.set_num_threads; a second thread would make the traced
# thread wait for it (voluntary switches, off-CPU time) when the machine
# is loaded.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import torch  # noqa: E402

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def forward(x, w1, w2):
    """The model: two large matmuls, the op time of the step."""
    h = torch.matmul(x, w1)
    h = torch.relu(h)
    return torch.matmul(h, w2)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w1 = torch.randn(1024, 1024)
    w2 = torch.randn(1024, 1024)
    x = torch.randn(512, 1024)
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                y = forward(x, w1, w2)
                result += float(y[0, 0])
    print("op_compute_bound.py: %d steps, result %.3f" % (steps, result))


if __name__ == "__main__":
    main()
