"""Many threads: 16 Python threads, each a loop of small matmuls (torch's
own intra-op pool left at its default), so the native sampler follows 16
threads plus torch's pool."""
import sys
import threading

import torch


def work(n):
    a = torch.randn(64, 64)
    s = 0.0
    for _ in range(n):
        s += float((a @ a).sum())
    return s


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
ts = [threading.Thread(target=work, args=(n,)) for _ in range(16)]
for t in ts:
    t.start()
for t in ts:
    t.join()
