"""One process of tests/bench/cuda_agent_cost.sh: the CUDA agent's cost per
launch and per record, on the CUPTI double, with the agent given as argv[2]
and the harness (libcuda_cost.so) as argv[1].

The environment (LD_LIBRARY_PATH to the doubles, INFERSCOPE_SESSION, the
mode) is the caller's.  REPS times, alternating the order: N launches with
the subscriber's callback paused (the exact mode's path on the workload's
thread: what the double and CUPTI's buffers cost), N with it firing (the
sample mode's path: the callback that reads the Python line), then a flush
on this thread (the conversion of every record those 2N launches made);
then the callback alone, N times with and without it: from one Python line
(a loop of launches: the line the thread's last call had), and from two
lines in turn (the line changes at every call: the shared cache).  All CPU
time of this thread.  Prints one line of medians:

    off_ns=<per launch, no callback> on_ns=<per launch, callback>
    ratio=<on/off> conv_ns=<conversion per record> records_per_launch=<r>
    cb_same_ns=<callback, one line> cb_alt_ns=<callback, two lines in turn>
    busy_cb_ns=<on - off per launch, a converter thread running>
    busy_cb_wall_ns=<the same in wall time>
    busy_dropped=<records the rings dropped then: the converter fell behind>
"""
import ctypes
import statistics
import sys
import time

N = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
REPS = int(sys.argv[4]) if len(sys.argv) > 4 else 7

lib = ctypes.CDLL(sys.argv[1])
lib.cc_launches.restype = ctypes.c_longlong
lib.cc_fire.restype = ctypes.c_longlong
lib.cc_now.restype = ctypes.c_longlong
lib.cc_flush.restype = ctypes.c_longlong
lib.cc_dropped.restype = ctypes.c_ulonglong
if lib.cc_init(sys.argv[2].encode()) != 0:
    sys.exit("cuda_agent_cost.py: the harness did not start")


def counts():
    r, f = ctypes.c_uint64(), ctypes.c_uint64()
    lib.cc_counts(ctypes.byref(r), ctypes.byref(f))
    return r.value, f.value


# warm-up: the agent's buffers, caches and strings, as after a first step
lib.cc_launches(N, 1)
lib.cc_launches(N, 0)
lib.cc_flush()
fire = lib.cc_fire


def alternate(n, on):
    """n callbacks, from two Python lines in turn: this thread's CPU ns."""
    lib.cc_callbacks(on)
    f1 = lib.cc_fire1
    t0 = time.thread_time_ns()
    for i in range(n // 2):
        f1()
        f1()
    return time.thread_time_ns() - t0


alternate(1000, 1)
off, on, ratio, conv, rpl, same, alt = [], [], [], [], [], [], []
for rep in range(REPS):
    r0, f0 = counts()
    t = {}
    for mode in ((0, 1) if rep % 2 == 0 else (1, 0)):
        t[mode] = lib.cc_launches(N, mode)
    r1, f1 = counts()
    c = lib.cc_flush()
    if f1 - f0 < N:
        sys.exit(f"cuda_agent_cost.py: {f1 - f0} callbacks fired for {N} launches: "
                 "no sample mode (INFERSCOPE_PYTHON_MODE=sample, a CPython the agent knows)")
    off.append(t[0] / N)
    on.append(t[1] / N)
    ratio.append(t[1] / t[0])
    for mode in ((0, 1) if rep % 2 == 0 else (1, 0)):
        t[mode] = fire(N, mode), alternate(N, mode)
    same.append((t[1][0] - t[0][0]) / N)
    alt.append((t[1][1] - t[0][1]) / (N // 2 * 2))
    conv.append(c / (r1 - r0))
    rpl.append((r1 - r0) / (2 * N))
if lib.cc_dropped():
    sys.exit(f"cuda_agent_cost.py: {lib.cc_dropped()} records dropped by the agent's rings")
# with the conversion running meanwhile on a second thread (the agent's
# flusher, every 200 us here): what the callback's locks cost then
lib.cc_flush()
busy, busy_wall = [], []
lib.cc_converter(200)
for rep in range(REPS):
    t, w = {}, {}
    for mode in ((0, 1) if rep % 2 == 0 else (1, 0)):
        w0 = lib.cc_now()
        t[mode] = lib.cc_launches(N, mode)
        w[mode] = lib.cc_now() - w0
    busy.append((t[1] - t[0]) / N)
    busy_wall.append((w[1] - w[0]) / N)
lib.cc_converter(0)
lib.cc_flush()
m = statistics.median
print(f"off_ns={m(off):.1f} on_ns={m(on):.1f} ratio={m(ratio):.3f} "
      f"conv_ns={m(conv):.1f} records_per_launch={m(rpl):.2f} cb_same_ns={m(same):.1f} cb_alt_ns={m(alt):.1f} "
      f"busy_cb_ns={m(busy):.1f} busy_cb_wall_ns={m(busy_wall):.1f} "
      f"busy_dropped={lib.cc_dropped()}")
