"""torch tensors of 10 MiB (float32) created, added and dropped, argv[1] of
them (default 150): every one goes through posix_memalign (torch's CPU
allocator) and is sampled."""
import sys

import torch

torch.set_num_threads(1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 150
acc = torch.zeros(10 << 18)
for i in range(n):
    t = torch.full((10 << 18,), float(i))
    acc += t
print(float(acc[0]))
