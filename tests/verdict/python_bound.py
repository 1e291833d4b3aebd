"""verdict workload, ground truth: python_bound.

Each step post-processes a model's output element by element in Python:
`score_tokens` walks the logits as a Python list with a per-element
loop (arithmetic and comparisons in the interpreter, no calls inside).
The torch part of the step (a 64x256 @ 256x256 matmul, well under 1 ms)
is negligible next to it, and nothing in the step blocks or sleeps, so
interpreter self time in `score_tokens` is by far the largest share of
the step (measured: about 95 % of scoped time, 80 % of the whole run
including `import torch`). Top contributor: score_tokens.

Usage: python_bound.py [STEPS]  (default 30 steps, about 0.1 s each)
"""

import os
import sys

# One BLAS thread: OpenBLAS's pool ignores torch.set_num_threads, and its
# idle workers spin after each matmul, a second runnable thread that is
# no part of this workload's cause.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def score_tokens(values, rounds):
    """Per-element Python loop over a list of floats: the hot spot."""
    best = 0.0
    total = 0.0
    for _ in range(rounds):
        for v in values:
            s = v * 0.5 + 1.0
            if s > best:
                best = s
            total += s * s
    return best, total


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(256, 256)
    x = torch.randn(64, 256)
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                logits = torch.relu(x @ w)
                values = logits[0].tolist()
                best, total = score_tokens(values, 4000)
                result += best + total * 1e-9
    print("python_bound.py: %d steps, result %.3f" % (steps, result))


if __name__ == "__main__":
    main()
