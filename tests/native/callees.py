"""One Python function, step, that calls three C functions whose CPU
times it measures itself (time.thread_time around each call):

    zlib.compress(128 KiB)        zlib's deflate, in libz        other C code
    hashlib.sha256(1 MiB) x 4     OpenSSL's SHA256_Update        other C code
    list(map(torch.exp, xs))      torch's exp, in libtorch       a torch op

The Python sampler names each callee (issue 24: zlib.compress,
_hashlib.openssl_sha256, and builtins.list for the third: the C
function that step called is list, which calls torch.exp for each
tensor from C, where no Python frame and no callee of torch's is seen);
the native stacks name what ran inside (deflate, SHA256_Update, torch's
exp kernel).  So the two views agree on the first two and differ on the
third: by its callee the third is other C code, by its native frames a
torch op, and by construction it is torch's exp.  Each step is a scope
(the CPU split inside iterations); one thread, one BLAS/OpenMP thread
(the tests set OMP_NUM_THREADS and torch.set_num_threads(1)).

    callees.py SECONDS TRUTH.json"""
import hashlib
import json
import os
import sys
import threading
import time
import zlib

import torch

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

torch.set_num_threads(1)
SHA_BUF = os.urandom(1 << 20)
Z_BUF = bytes(range(256)) * 256 + os.urandom(1 << 16)
XS = [torch.randn(64 * 1024) for _ in range(64)]
t = {"compress": 0.0, "sha256": 0.0, "exp": 0.0, "step": 0.0}


def step():
    t0 = time.thread_time()
    zlib.compress(Z_BUF, 6)
    t1 = time.thread_time()
    for _ in range(4):
        hashlib.sha256(SHA_BUF).digest()
    t2 = time.thread_time()
    list(map(torch.exp, XS))
    t3 = time.thread_time()
    t["compress"] += t1 - t0
    t["sha256"] += t2 - t1
    t["exp"] += t3 - t2


def main():
    end = time.thread_time() + float(sys.argv[1])
    while time.thread_time() < end:
        with scope("step"):
            t0 = time.thread_time()
            step()
            t["step"] += time.thread_time() - t0
    ns = {k: int(v * 1e9) for k, v in t.items()}
    # "times" for tests/native/callee_views.py, "threads" for
    # tests/native/thread_shares.py (the three under step, compared with
    # each other: the step's own Python is not in them)
    parts = [{"name_re": "^deflate", "lib": "libz", "py": "step", "ns": ns["compress"]},
             {"name": "SHA256_Update", "lib": "libcrypto", "py": "step", "ns": ns["sha256"]},
             {"name_re": ".", "lib": "libtorch", "py": "step", "ns": ns["exp"]}]
    with open(sys.argv[2], "w") as f:
        json.dump({"times": ns, "threads": [{"pid": os.getpid(), "tid": threading.get_native_id(),
                                             "cpu_ns": ns["step"], "whole": False, "parts": parts}]}, f, indent=1)


main()
