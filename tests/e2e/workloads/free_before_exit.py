# Ground truth: holds 512 MiB of anonymous memory (a bytearray, written)
# for 1 s, frees it, and exits 0.3 s later.  What it held at its end, by
# iscope-analyze's rule (the highest RSS of the last 2 s before its last
# reading), is at least 512 MiB anonymous; its last readings are ~10 MiB.
import time

buf = bytearray(512 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
time.sleep(1.0)
del buf
time.sleep(0.3)
