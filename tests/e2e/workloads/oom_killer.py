# Ground truth: a real torch CPU workload that keeps every step's output
# (a leak: 16 MiB of float32 a step, touched by torch.ones) until the
# kernel's OOM killer kills it inside iscope-record --memory-limit; the
# memory grows in step().
import torch

from inferscope import scope


def step(keep):
    keep.append(torch.ones(4 << 20))


keep = []
with torch.inference_mode():
    for i in range(100000):
        with scope("step"):
            step(keep)
