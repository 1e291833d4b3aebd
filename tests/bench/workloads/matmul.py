"""Compute-bound: large matmuls, few calls."""
import sys

import torch

torch.manual_seed(0)
a = torch.randn(768, 768)
b = torch.randn(768, 768)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 25
for _ in range(n):
    c = a @ b
print(float(c[0, 0]))
