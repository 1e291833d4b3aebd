"""Multi-threaded: 4 threads, each a Python loop around small torch ops."""
import sys
import threading

import torch

torch.set_num_threads(1)


def work(n):
    x = torch.ones(16)
    s = 0.0
    for i in range(n):
        s += float((x * i).sum())
    return s


n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
ts = [threading.Thread(target=work, args=(n,)) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
