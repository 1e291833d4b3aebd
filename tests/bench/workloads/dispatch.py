"""Dispatch-bound serving loop: batch 1, a model of 8 small blocks, so the
CPU side is the Python and dispatcher work around tiny ops (what the CPU
side of GPU inference looks like).  ~0.6 M calls/s under the profile hook."""
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x + torch.relu(self.norm(self.lin(x)))


model = nn.Sequential(*[Block(64) for _ in range(8)]).eval()
requests = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
with torch.no_grad():
    x = torch.randn(1, 64)
    for _ in range(requests):
        y = model(x)
print(float(y.sum()))
