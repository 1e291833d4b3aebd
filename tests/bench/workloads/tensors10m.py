"""150 torch tensors of 10 MiB (float32) created, added and dropped: every one
goes through posix_memalign (torch's CPU allocator) and is sampled."""
import torch

torch.set_num_threads(1)
acc = torch.zeros(10 << 18)
for i in range(150):
    t = torch.full((10 << 18,), float(i))
    acc += t
print(float(acc[0]))
