"""A Python workload for tests/gpu: code objects freed and made again at
the same address, each launching from another Python line.

    python3 reuse.py N

N times: a function fI is compiled from generated source (file
gen_reuse.py) whose launch is on line I+2 (blank lines before it), its
kernel lasting 1000+I ns; it is called once, then freed with everything
it holds.  CPython's allocator gives the next code object (the same
bytecode, the same size) the address of the last one, so an agent that
knows a Python line by its code object's address and instruction offset
alone gives every call after the first the first one's line.  Prints how
many distinct code object addresses there were.
"""
import ctypes
import gc
import sys

cuda = ctypes.CDLL("libcuda.so.1")
cuda.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulonglong]


def main():
    n = int(sys.argv[1])
    if cuda.cuInit(0) != 0:
        print("cuInit failed")
        return
    seen = set()
    for i in range(n):
        src = "def f%d():\n" % i + "\n" * i + "    cuda.fake_launch(b'k', 1, %d)\n" % (1000 + i)
        env = {"cuda": cuda}
        exec(compile(src, "gen_reuse.py", "exec"), env)
        f = env["f%d" % i]
        seen.add(id(f.__code__))
        f()
        del f, env
        gc.collect()
    print("code object addresses: %d of %d" % (len(seen), n))
    print("reuse.py done, injected=%d" % cuda.fake_injected())


main()
