"""A torch DataLoader whose items cost known native work, and a main
thread that multiplies matrices with each batch.  Each item
(Dataset.__getitem__) compresses 128 KiB 12 times with zlib (zlib's
deflate functions, in libz) and hashes 1 MiB 16 times with hashlib.sha256 (OpenSSL's SHA256_Update, in
libcrypto) and returns, with its data, the process and thread it ran in
and the CPU time (time.thread_time) each call took there.  The main
thread runs torch.matmul on 256x256 matrices for a set CPU time per
batch (OpenBLAS's GEMM kernel; the tests set OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS to 1) and times it the same way.

    dataloader.py SECONDS NUM_WORKERS [ITEM_MS GEMM_MS] TRUTH.json

ITEM_MS (default 32) sets an item's work: 12 compressions and 16 hashes
(about 32 ms here) scaled by ITEM_MS / 32; GEMM_MS (default 40) the
main thread's GEMM time per batch, SECONDS / GEMM_MS batches in all.

With NUM_WORKERS 0 the items are made in the main thread: its three
parts (GEMM, deflate, SHA256_Update) are compared with each other (the
interpreter's start and end are in its samples, not in its measured
time).  With workers (processes forked by the DataLoader), each
worker's main thread is compared whole: its CPU time is read from
/proc/PID/task/PID/stat by the main process after the last batch, while
the workers wait for work (off CPU) and before they are shut down."""
import hashlib
import json
import os
import sys
import threading
import time
import zlib

import torch
import torch.utils.data

SHA_BUF = os.urandom(1 << 20)
Z_BUF = bytes(range(256)) * 256 + os.urandom(1 << 16)
BATCH = 1


class Items(torch.utils.data.Dataset):
    def __init__(self, n, nz, ns):
        self.n = n
        self.nz, self.ns = nz, ns

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t0 = time.thread_time()
        for _ in range(self.nz):
            z = zlib.compress(Z_BUF, 6)
        t1 = time.thread_time()
        for _ in range(self.ns):
            h = hashlib.sha256(SHA_BUF).digest()
        t2 = time.thread_time()
        x = torch.tensor([len(z), h[0]], dtype=torch.float32)
        return x, os.getpid(), threading.get_native_id(), t1 - t0, t2 - t1


def thread_cpu_ns(pid, tid):
    """utime + stime of one thread, from /proc (clock ticks)."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def main():
    seconds, workers = float(sys.argv[1]), int(sys.argv[2])
    item_ms, gemm_ms = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) == 6 else (32.0, 40.0)
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    b = torch.randn(256, 256)
    c = torch.empty(256, 256)
    # GEMM_MS of GEMM a batch, SECONDS of GEMM in all; a batch's item costs
    # about ITEM_MS here (12 x 1.7 + 16 x 0.7 ms at 32)
    nbatches = round(seconds / (gemm_ms / 1000))
    items = Items(nbatches * BATCH, max(1, round(12 * item_ms / 32)), max(1, round(16 * item_ms / 32)))
    loader = torch.utils.data.DataLoader(items, batch_size=BATCH, num_workers=workers)
    by_thread = {}
    t_gemm = 0.0
    it = iter(loader)
    for _ in range(nbatches):
        x, pids, tids, tz, ts = next(it)
        for pid, tid, z, s in zip(pids.tolist(), tids.tolist(), tz.tolist(), ts.tolist()):
            acc = by_thread.setdefault((pid, tid), [0.0, 0.0])
            acc[0] += z
            acc[1] += s
        t0 = time.thread_time()
        end = t0 + gemm_ms / 1000
        while time.thread_time() < end:
            torch.matmul(a, b, out=c)  # GEMM
        t_gemm += time.thread_time() - t0
    me = (os.getpid(), threading.get_native_id())
    threads = []

    def parts(gemm, tz, ts):
        # every thread names all three: a function it never ran is 0 ns
        return [{"name_re": "gemm", "lib": "libopenblas", "py": "main", "ns": int(gemm * 1e9)},
                # deflate opens each item: a worker's samples there, right
                # after its wait for the item, are all under __getitem__
                # (the pairing prefers the on-CPU Python sample to the
                # wait's, lib/native/unwind.h); SHA256_Update ends it, next
                # to the worker's own code after __getitem__, on CPU too
                {"name_re": "^deflate", "lib": "libz", "py": "Items.__getitem__", "ns": int(tz * 1e9),
                 "only_under_py": True},
                {"name": "SHA256_Update", "lib": "libcrypto", "py": "Items.__getitem__", "ns": int(ts * 1e9)}]

    for (pid, tid), (tz, ts) in sorted(by_thread.items()):
        if (pid, tid) != me:
            threads.append({"pid": pid, "tid": tid, "cpu_ns": thread_cpu_ns(pid, tid), "whole": True,
                            "parts": parts(0, tz, ts)})
    tz, ts = by_thread.get(me, (0, 0))
    threads.append({"pid": me[0], "tid": me[1], "cpu_ns": int(time.thread_time() * 1e9), "whole": False,
                    "parts": parts(t_gemm, tz, ts)})
    with open(sys.argv[-1], "w") as f:
        json.dump({"threads": threads}, f, indent=1)
    # the end of the iteration shuts the workers down
    for _ in it:
        raise AssertionError("more batches than counted")


main()
