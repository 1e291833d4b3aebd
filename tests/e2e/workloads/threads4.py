"""e2e workload: four threading.Thread workers named worker-0..worker-3,
each doing Python work and small torch ops at the same time."""

import threading

import torch

ROUNDS = 1200


def python_work(seed):
    acc = seed
    for i in range(2000):
        acc = (acc * 1103515245 + 12345 + i) & 0x7FFFFFFF
    return acc


def worker(index, start, results):
    start.wait()
    w = torch.randn(32, 32, generator=torch.Generator().manual_seed(index))
    x = torch.ones(32)
    acc = 0
    for r in range(ROUNDS):
        acc ^= python_work(index * ROUNDS + r)
        x = torch.tanh(w @ x)
    results[index] = (acc, round(float(x.sum()), 4))


def main():
    start = threading.Barrier(4)
    results = [None] * 4
    threads = [
        threading.Thread(target=worker, name=f"worker-{i}", args=(i, start, results))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("threads4.py:", results)


if __name__ == "__main__":
    main()
