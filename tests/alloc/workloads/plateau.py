# Ground truth (issue 25, item 8): a leak in plateaus.  13 iterations of
# scope("step"); iterations 1, 3, 5, ... 13 (i even) keep an 8 MiB
# bytearray (8388609 bytes, the line marked KEEP), the others keep
# nothing.  With iteration 1 as warm-up, the 12 steady-state iterations
# keep 6 x 8388609 bytes: 4194304.5 bytes an iteration, growing every
# other iteration.
from inferscope import scope

kept = []


def maybe_keep(i):
    if i % 2 == 0:
        kept.append(bytearray(8 << 20))  # KEEP


for i in range(13):
    with scope("step"):
        maybe_keep(i)
