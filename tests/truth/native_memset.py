"""Planted truth: one native function, the C library's memset, holds the
CPU time.

The main thread fills a 64 MiB buffer with ctypes.memset, again and again,
for 1.5 s of its CPU time (a busy machine stretches the run, not the
samples).  One call is some milliseconds of memset (64 MiB at a few GB/s)
against a microsecond of ctypes' call machinery; the buffer is written once
before the loop, so no page fault happens inside it; the loop's own Python
(a clock read, a comparison) is a few microseconds a turn.  So nearly all
of the sampled CPU time is in glibc's memset (its name is the CPU's
variant: __memset_avx2_unaligned_erms, __memset_evex_unaligned_erms, ...)
under the line marked MEMSET.

Expected, by construction: native.functions[0] is a __memset function of
libc.so.6 with most of the samples, under the line MEMSET of fill() (in
exact mode, the span stack names fill, not the line); the verdict's
headline names it.
"""
import ctypes
import time

SIZE = 64 << 20
buf = ctypes.create_string_buffer(SIZE)
ctypes.memset(buf, 1, SIZE)  # every page touched before the loop


def fill(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        ctypes.memset(buf, n & 0xFF, SIZE)  # MEMSET
        n += 1
    return n


fill(1.5)
