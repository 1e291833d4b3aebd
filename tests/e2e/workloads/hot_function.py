"""e2e workload: one obviously hottest pure-Python function.

`crunch` (a tight arithmetic loop with no calls inside) takes most of the
run's self time; `tokenize`, `checksum` and a few small torch ops take
much less. Runs N iterations (argv[1], default 25), each one
`with scope("step")`.
"""

import sys

import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def crunch(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i * i) % 1000003
    return acc


def tokenize(text):
    return [len(w) for w in text.split()]


def checksum(values):
    total = 0
    for v in values:
        total += v
    return total


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    torch.manual_seed(0)
    w = torch.randn(64, 64)
    text = "the quick brown fox jumps over the lazy dog " * 40
    result = 0
    with torch.inference_mode():
        for step in range(steps):
            with scope("step"):
                result ^= crunch(700_000 + step)
                lengths = tokenize(text)
                result ^= checksum(lengths)
                x = torch.tensor(lengths[:64], dtype=torch.float32)
                result ^= int(torch.relu(w @ x).sum())
    print(f"hot_function.py: {steps} steps, result {result}")


if __name__ == "__main__":
    main()
