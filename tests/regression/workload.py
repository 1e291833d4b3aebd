"""One small CPU inference workload with changes planted by environment
variables, for the regression suite (tests/regression/workloads.bats) and
the A/A benchmark (tests/bench/aa_rate.sh).  Each step is one
scope("step"): tokenize in Python, an MLP forward under inference_mode.

  REG_STEPS=N        steps (default 25)
  REG_EXTRA_OP=1     an extra op per step: torch.cumsum over the batch x 8192
                     activations, 48 times (planted cause: torch.cumsum)
  REG_SLOW_PY=1      the Python tokenizer does 80x the work (planted cause:
                     its list comprehension, tokenize.<locals>.<listcomp>)
  REG_SLEEP_MS=N     time.sleep(N ms) in every step (planted: time.sleep)
  REG_THREADS=N      torch.set_num_threads(N), default 1 (planted: more
                     threads than CPUs; its cause: the 200 small ops of each
                     step, Tensor.relu_ in place over 40960 elements, just
                     above torch's grain of 32768, so each is a parallel
                     region of N threads: measured 0.4 ms a step with 1
                     thread, 23-27 ms with 16 on 2 idle cores).  The MLP's
                     7 linear layers (a step runs the body once) are
                     parallel regions of the BLAS too: when they ran 25
                     times a step (the body four times), beside one CPU
                     hog their slowdown (56 ms a step) outweighed
                     relu_'s (34 ms) in 3 of 4 suite runs; now 8 ms
                     against 39-45 ms

One intra-op thread by default: on a shared 2-core machine a pool of 2
spins at its barriers whenever another process holds a core, which makes
runs differ by more than any planted change.

Ground truth is the variable set; nothing else differs between runs.
"""
import os
import time

import torch
from torch import nn

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()


STEPS = int(os.environ.get("REG_STEPS", "25"))
EXTRA_OP = os.environ.get("REG_EXTRA_OP") == "1"
SLOW_PY = os.environ.get("REG_SLOW_PY") == "1"
SLEEP_S = float(os.environ.get("REG_SLEEP_MS", "0")) / 1000.0
THREADS = int(os.environ.get("REG_THREADS", "1"))

torch.set_num_threads(THREADS)
torch.manual_seed(0)

WORDS = ("the a service product order delivery support team price quality battery "
         "screen camera sound package refund store staff was is arrived broke works "
         "fast slow late early great terrible fine poor good bad").split()
VOCAB = {w: i + 1 for i, w in enumerate(WORDS)}


def tokenize(texts, rounds):
    """Word ids of each text, padded to 64: plain Python work per step."""
    out = []
    for _ in range(rounds):
        out = []
        for t in texts:
            ids = [VOCAB.get(w, 0) for w in t.lower().split()][:64]
            out.append(ids + [0] * (64 - len(ids)))
    return out


layers = []
for _ in range(6):
    layers += [nn.Linear(512, 512), nn.ReLU()]
model = nn.Sequential(nn.EmbeddingBag(len(VOCAB) + 1, 512), *layers, nn.Linear(512, 2)).eval()
head = model[0]
body = nn.Sequential(*list(model)[1:13])
out_layer = model[13]
texts = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(40)) for i in range(64)]
small = torch.randn(64, 640)  # 40960 elements: every elementwise op on it is a parallel region

with torch.inference_mode():
    for step in range(STEPS):
        with scope("step"):
            ids = torch.tensor(tokenize(texts, 80 if SLOW_PY else 1))
            x = head(ids)
            x = body(x)
            y = out_layer(x)
            for _ in range(200):
                small.relu_()  # in place: no allocation (a new 160 KB tensor each time went through mmap)
            if EXTRA_OP:
                z = x.repeat(1, 16)
                for _ in range(48):
                    z = torch.cumsum(z, dim=1)
            if SLEEP_S:
                time.sleep(SLEEP_S)
            y.argmax(dim=1).tolist()
