"""verdict workload, ground truth: io_wait (page-in of a memory-mapped file).

A model whose weights are memory-mapped from disk, as torch.load(mmap=True)
or safetensors do, and evicted between requests: each step maps a 32 MiB
file (written once at the start, in a temporary directory under /var/tmp,
then dropped from the page cache with
posix_fadvise(DONTNEED)), tells the kernel not to read ahead
(MADV_RANDOM), and `load_weights` touches one byte of every page in a
shuffled order, so every touch is a major fault that waits for one 4 KiB
read from the disk: the thread sleeps in state D outside any system call
(page_in). The file is then unmapped and dropped from the cache again.
The pages come from a real disk read each time, so the step is mostly
blocked in the kernel, however loaded the CPUs are. Needs a disk-backed
directory (not tmpfs, which would have nothing to read): /var/tmp, else
the default temporary directory.
Top contributor: load_weights (indexing an mmap is no C call: the Python
function itself is blocked); off-CPU reason page_in.

It prints how long load_weights was off CPU (wall minus thread CPU time),
the premise verdict.bats checks before asking for page_in waits.

Usage: page_in.py [STEPS]  (default 6 steps of 8192 page reads)
"""

import mmap
import os
import random
import sys
import tempfile
import time

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

SIZE = 32 << 20
PAGE = mmap.PAGESIZE


def load_weights(mm, order):
    """Touches one byte of every page, in a shuffled order."""
    total = 0
    for page in order:
        total += mm[page * PAGE]
    return total


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rnd = random.Random(0)
    order = list(range(SIZE // PAGE))
    rnd.shuffle(order)
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=base) as d:
        path = os.path.join(d, "weights.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(SIZE))
            f.flush()
            os.fsync(f.fileno())
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        total = 0
        wall = cpu = 0.0
        for _ in range(steps):
            with scope("step"):
                mm = mmap.mmap(fd, SIZE, prot=mmap.PROT_READ)
                mm.madvise(mmap.MADV_RANDOM)
                w0, c0 = time.perf_counter(), time.thread_time()
                total += load_weights(mm, order)
                wall += time.perf_counter() - w0
                cpu += time.thread_time() - c0
                mm.close()
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    # the premise, measured here: how long the faults kept the thread off CPU
    print("page_in.py: %d steps, checksum %d, load_weights blocked %.3f s of %.3f s"
          % (steps, total, wall - cpu, wall))


if __name__ == "__main__":
    main()
