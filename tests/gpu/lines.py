"""A Python workload for tests/gpu: many Python lines launching kernels
from many threads, for the CUDA agent's launch-site cache (sample mode).

    python3 lines.py FUNCS THREADS PASSES [sequential]

FUNCS functions f0..f<FUNCS-1> are compiled from one generated source
(file gen_lines.py): fI launches a kernel of 1000+I ns at line 2*I+2,
so a call's Python line is known from its kernel's duration.  THREADS threads each call every
function PASSES times, each from another starting point, at the same
time (ctypes releases the GIL around the call, so the agent's callbacks
run on several threads at once when the CUPTI double lets them:
FAKE_CUPTI_CB_UNLOCKED=1); with "sequential", one thread after another
(each a new thread: more threads than the agent has counters for).
With more functions than the agent's site cache has entries, lines
share entries, so entries are rewritten while other threads read them.
"""
import ctypes
import sys
import threading

cuda = ctypes.CDLL("libcuda.so.1")
cuda.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]


def make(n):
    src = "".join('def f%d():\n    cuda.fake_launch(b"k", 1, %d)\n' % (i, 1000 + i) for i in range(n))
    env = {"cuda": cuda}
    exec(compile(src, "gen_lines.py", "exec"), env)
    return [env["f%d" % i] for i in range(n)]


def run(funcs, passes, first):
    n = len(funcs)
    for _ in range(passes):
        for i in range(n):
            funcs[(first + i) % n]()


def main():
    nfuncs, nthreads, passes = (int(a) for a in sys.argv[1:4])
    if cuda.cuInit(0) != 0:
        print("cuInit failed")
        return
    funcs = make(nfuncs)
    threads = [threading.Thread(target=run, args=(funcs, passes, t * 97)) for t in range(nthreads)]
    if "sequential" in sys.argv[4:]:
        for t in threads:
            t.start()
            t.join()
    else:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print("lines.py done, injected=%d" % cuda.fake_injected())


main()
