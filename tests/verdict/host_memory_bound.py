"""verdict workload, ground truth: host_memory_bound.

A "feature cache" that is never trimmed: every step, `cache_activations`
materializes a fresh 48 MiB activation tensor (torch.ones: every page is
new and faulted in, so the step's time is page faults and first writes to
memory, not arithmetic), keeps a 2 MiB copy of part of it in a list that
lives for the whole run (the leak), and drops the rest. Resident memory
grows by 2 MiB a step, steadily, from the first step to the last, and the
step's time is dominated by getting fresh memory from the kernel (minor
faults, system time); nothing blocks and no other thread runs. Growth is
attributed to cache_activations, the only Python function open while it
allocates.

Long enough for the steady-state rules: about 6 s of steps after the
warm-up step, at 20 samples a second (the growth rule wants >= 5 s and
>= 20 samples, >= 1 MiB/s and >= 10 % of the peak: measured about
50 MiB/s, growing to about 2x the start-up RSS).
Top contributor: cache_activations.

Usage: host_memory_bound.py [STEPS]  (default 220 steps, about 28 ms each)
"""

import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

SCRATCH_FLOATS = 12 << 20   # 48 MiB, faulted in and freed every step
KEEP_FLOATS = 1 << 19       # 2 MiB of it kept every step

cache = []


def cache_activations(step):
    """Materializes the step's activations and keeps a slice: the leak."""
    act = torch.ones(SCRATCH_FLOATS)
    act[:KEEP_FLOATS] *= step
    cache.append(act[:KEEP_FLOATS].clone())
    return float(act[0])


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 220
    torch.set_num_threads(1)
    result = 0.0
    with torch.inference_mode():
        for step in range(steps):
            with scope("step"):
                result += cache_activations(step)
    print("host_memory_bound.py: %d steps, %d MiB kept, result %.1f"
          % (steps, len(cache) * KEEP_FLOATS * 4 >> 20, result))


if __name__ == "__main__":
    main()
