# Ground truth (issue 25, item 8): a real torch CPU workload that keeps a
# 10 MiB tensor (float32, touched by torch.ones) every iteration in hoard
# (the line marked HOARD) until the kernel's OOM killer kills it inside
# iscope-record --memory-limit.  It also churns: step allocates and drops a
# 10 MiB tensor (line CHURN) each iteration.  At the death the site holding
# the most live bytes and growing is HOARD.
import torch

from inferscope import scope


def hoard(keep):
    keep.append(torch.ones(10 << 18))  # HOARD


def step(keep):
    t = torch.ones(10 << 18)  # CHURN
    hoard(keep)
    return float(t[0])


keep = []
with torch.inference_mode():
    for i in range(100000):
        with scope("step"):
            step(keep)
