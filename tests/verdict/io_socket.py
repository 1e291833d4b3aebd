"""verdict workload, ground truth: io_wait (blocked on a socket).

Each step asks a slow server on the loopback interface for its input,
then does a little compute: `fetch_request` sends a request line over a
TCP connection to 127.0.0.1 and receives the answer, which the server
(a separate Python started with -S, so not traced) sends in 8 chunks of
2 KiB, 5 ms apart: the main thread blocks in socket.recv 8 times a step,
about 45 ms in all. `preprocess` then runs about 1 ms of torch ops. The
step is over 90 % off-CPU, blocked in recvfrom on a socket, called from
fetch_request. Nothing leaves the machine (loopback only). A loaded
machine stretches the compute part; the blocking stays, and 250 steps (about 11 s of
waiting) keep the `import torch` before them, which a machine loaded by
others stretches to seconds of preemption, the smaller share.
Top contributor: socket.recv (method recv of socket), called from
fetch_request; off-CPU reason io_network.

Usage: io_socket.py [STEPS]  (default 250 steps, about 50 ms each)
"""

import os
import socket
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
import socket, sys, time
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
f = conn.makefile("rb")
for line in f:
    for _ in range(%d):
        time.sleep(0.005)
        conn.sendall(b"x" * %d)
""" % (CHUNKS, CHUNK)


def fetch_request(sock):
    """Asks the server for a request; blocks until all of it has arrived."""
    sock.sendall(b"next\n")
    buf = b""
    while len(buf) < CHUNKS * CHUNK:
        chunk = sock.recv(CHUNKS * CHUNK - len(buf))
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
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 250
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(256, 256) / 16
    server = subprocess.Popen([sys.executable, "-S", "-c", SERVER], stdout=subprocess.PIPE)
    port = int(server.stdout.readline())
    sock = socket.create_connection(("127.0.0.1", port))
    result = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            with scope("step"):
                buf = fetch_request(sock)
                result += float(preprocess(buf, w).sum())
    sock.close()
    server.wait()
    print("io_socket.py: %d steps, result %.3f" % (steps, result))


if __name__ == "__main__":
    main()
