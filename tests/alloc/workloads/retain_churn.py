# Ground truth (issue 25, item 8): 12 iterations of scope("step"); in each,
# cache_results keeps a 4 MiB bytearray for good (4194305 bytes: the
# buffer and its NUL, the line marked RETAIN) and scratch allocates and
# frees a 20 MiB one (20971521 bytes, the line marked CHURN), five times
# the retained size.  Iteration 1 is warm-up: 11 steady-state iterations,
# each retaining exactly 4194305 bytes at RETAIN and none at CHURN.
from inferscope import scope

cache = []


def cache_results(i):
    cache.append(bytearray(4 << 20))  # RETAIN


def scratch():
    buf = bytearray(20 << 20)  # CHURN
    buf[-1] = 1
    del buf


for i in range(12):
    with scope("step"):
        cache_results(i)
        scratch()
