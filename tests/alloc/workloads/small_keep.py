# Ground truth (issue 25, the fast wrappers of CPython's object domain):
# 16-byte object()s, one PyObject_Malloc(16) each.  keep() keeps 2 million
# of them to the end, in a list made beforehand (32000000 bytes live at the
# line marked KEEP); churn() makes and drops 8 million (128000000 bytes
# allocated at CHURN, none live at the end: every sampled one released).
# Prints "kept: 2000000", then ends by os._exit, before the interpreter's
# finalization would release what keep() kept.
import os
import sys

kept = [None] * 2_000_000


def keep():
    for i in range(len(kept)):
        kept[i] = object()  # KEEP


def churn(n):
    for _ in range(n):
        object()  # CHURN


keep()
churn(8_000_000)
print("kept: %d" % len(kept))
sys.stdout.flush()
os._exit(0)
