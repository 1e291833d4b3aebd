"""verdict workload, ground truth: io_wait.

Each step asks a slow server for its input, then does a little compute:
`read_request` writes a request line to a shell process (not Python, so
not traced) that answers in 8 chunks of 2 KiB, 5 ms apart, and reads
the answer from the pipe: the main thread blocks in os.read 8 times a
step, about 45 ms in all (the server answers only when asked, so a slow
reader never finds data waiting). `preprocess` then runs about 1 ms of
torch ops. The step is over 90 % off-CPU, blocked (voluntary context
switches, thread state S) inside os.read called from read_request, and
no other thread of the process runs. A loaded machine stretches the
compute part and preempts it (involuntary switches), and preempts the
import of torch before the steps: the many short blocking reads keep
the voluntary switches ahead of that.
Top contributor: os.read (posix.read), called from read_request.

Usage: io_wait.py [STEPS]  (default 100 steps, about 50 ms each)
"""

import os
import subprocess
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402

try:
    from inferscope import scope
except ImportError:
    import contextlib

    def scope(name):
        return contextlib.nullcontext()

CHUNKS = 8
CHUNK = 2048


# The slow server: for each request line, CHUNKS chunks of CHUNK bytes, 5 ms apart.
SERVER = """
while read -r req; do
    for c in 1 2 3 4 5 6 7 8; do sleep 0.005; printf '%%%ds' x; done
done
""" % CHUNK


def read_request(server):
    """Asks the server for a request; blocks until all of it has arrived."""
    os.write(server.stdin.fileno(), b"next\n")
    rfd = server.stdout.fileno()
    buf = b""
    while len(buf) < CHUNKS * CHUNK:
        chunk = os.read(rfd, CHUNKS * CHUNK - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def preprocess(buf, w):
    x = torch.frombuffer(bytearray(buf), dtype=torch.uint8).float().view(-1, 256)[:64]
    for _ in range(4):
        x = torch.tanh(x @ w)
    return x


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(256, 256) / 16
    server = subprocess.Popen(["sh", "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                buf = read_request(server)
                result += float(preprocess(buf, w).sum())
    server.stdin.close()
    server.wait()
    server.stdout.close()
    print("io_wait.py: %d steps, result %.3f" % (steps, result))


if __name__ == "__main__":
    main()
