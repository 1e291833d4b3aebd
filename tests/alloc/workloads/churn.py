# Ground truth (issue 25, item 2: churn gets its own finding when it costs
# time): 60 iterations of scope("step"); in each, scratch allocates,
# touches and frees a 20 MiB bytearray (20971521 bytes: the buffer and its
# NUL, the line marked CHURN) and keep retains a 1 MiB one (1048577 bytes,
# the line marked KEEP).  Run under MALLOC_MMAP_THRESHOLD_=131072 (the
# test sets it): glibc then maps every block above 128 KiB afresh and
# unmaps it at free, so each 20 MiB buffer is faulted in and zeroed by the
# kernel again (5120 pages): the churn costs kernel time.  Iteration 1 is
# warm-up: 59 steady-state iterations, 59 x 20971521 bytes allocated at
# CHURN and freed within the iteration, all of the churn; 59 x 1048577
# bytes kept at KEEP, retained, none of it churn.
from inferscope import scope

kept = []


def scratch():
    buf = bytearray(20 << 20)  # CHURN
    buf[-1] = 1
    del buf


def keep():
    kept.append(bytearray(1 << 20))  # KEEP


for i in range(60):
    with scope("step"):
        scratch()
        keep()
