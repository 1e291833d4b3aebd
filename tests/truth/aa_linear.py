"""Planted truth for A/A: the same run twice gives the same rows.

A model whose forward calls torch.nn.functional.linear from two lines of
equal cost (two 256 x 512 by 512 x 512 products), then relu: 600 steps
(scope "step"), one thread.  The two linear lines cost the same, so which
line gets more samples is chance; the callee and the calling function do
not change between two identical runs.  600 steps of about 6 ms: 3.6 s,
some 360 stack samples at 100 Hz, so that the cheap ops (the add and the
relu, about 2 % each) cannot reach 5 % by chance (18 samples where 7 are
expected; with the 25 steps of an earlier version one sample was 6 %).

Expected, by construction: in sample mode the C-call rows are named by
their callee (torch._C._nn.linear, as exact mode names it), and two
recordings of this script have the same op rows above 5 % of the time in
iterations, key for key, so that a comparison of the two shows no op row
appearing or disappearing.
"""
import torch
import torch.nn.functional as F

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(256, 512)
w1 = torch.randn(512, 512) / 512
w2 = torch.randn(512, 512) / 512


def forward(v):
    a = F.linear(v, w1)
    b = F.linear(v, w2)
    return torch.relu(a + b)


forward(x)
for i in range(600):
    with scope("step"):
        forward(x)
