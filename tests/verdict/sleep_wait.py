"""verdict workload, ground truth: io_wait (blocked in sleep).

A rate-limited server loop: each step runs about 1 ms of torch ops in
`preprocess`, then `throttle` sleeps 40 ms (time.sleep) to keep to its
request budget, as a poll loop or a retry back-off would. The step is
over 90 % off-CPU, blocked in clock_nanosleep inside time.sleep called
from throttle; nothing else runs. A loaded machine stretches the
compute part; the sleeping stays, and 250 steps (about 11 s of
waiting) keep the `import torch` before them, which a machine loaded by
others stretches to seconds of preemption, the smaller share.
Top contributor: time.sleep, called from throttle; off-CPU reason sleep.

Usage: sleep_wait.py [STEPS]  (default 250 steps, about 41 ms each)
"""

import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


def preprocess(x, w):
    for _ in range(4):
        x = torch.tanh(x @ w)
    return x


def throttle():
    """Waits out the rest of the request budget."""
    time.sleep(0.04)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 250
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(256, 256) / 16
    x = torch.randn(64, 256)
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                result += float(preprocess(x, w).sum())
                throttle()
    print("sleep_wait.py: %d steps, result %.3f" % (steps, result))


if __name__ == "__main__":
    main()
