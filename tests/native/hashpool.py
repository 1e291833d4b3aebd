"""A tokenizer-like thread pool: two worker threads of a
concurrent.futures.ThreadPoolExecutor do native work with the GIL
released (hashlib.sha256 of 1 MiB: OpenSSL's SHA256_Update in
libcrypto; zlib.compress of 128 KiB: zlib's deflate functions,
deflateInit2_ to deflateEnd, in libz), as a tokenizer's threads do,
while the main thread waits for them.  Worker 0
hashes 1 MiB six times for each 128 KiB it compresses (about 70 % of its
time in SHA256_Update here), worker 1 hashes once for three compressions
(about 90 % in deflate), so each thread has its own split.  Each worker measures its own
CPU time (time.thread_time) around every call and at its task's end (its
whole CPU time: the thread then waits for work, off CPU, until the pool
shuts down) and the test compares the native samples of each thread with
those figures (tests/native/thread_shares.py).

    hashpool.py SECONDS TRUTH.json"""
import hashlib
import json
import os
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

SHA_BUF = os.urandom(1 << 20)
# compressible but not trivially: zlib's deflate does real matching
Z_BUF = bytes(range(256)) * 256 + os.urandom(1 << 16)


def task(seconds, sha_per_z):
    t_sha = t_z = 0.0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for _ in range(sha_per_z[0]):
            t0 = time.thread_time()
            hashlib.sha256(SHA_BUF).digest()
            t_sha += time.thread_time() - t0
        for _ in range(sha_per_z[1]):
            t0 = time.thread_time()
            zlib.compress(Z_BUF, 6)
            t_z += time.thread_time() - t0
    return {
        "pid": os.getpid(),
        "tid": threading.get_native_id(),
        "cpu_ns": int(time.thread_time() * 1e9),
        "whole": True,
        "parts": [
            {"name": "SHA256_Update", "lib": "libcrypto", "py": "task", "ns": int(t_sha * 1e9)},
            {"name_re": "^deflate", "lib": "libz", "py": "task", "ns": int(t_z * 1e9)},
        ],
    }


def main():
    seconds = float(sys.argv[1])
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(task, seconds, (6, 1)), pool.submit(task, seconds, (1, 3))]
        threads = [f.result() for f in futures]
    with open(sys.argv[2], "w") as f:
        json.dump({"threads": threads}, f, indent=1)


main()
