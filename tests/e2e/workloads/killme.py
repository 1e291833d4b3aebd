"""e2e workload: write this process's pid to the file named by argv[1]
(atomically), then make Python calls until killed (the test sends
SIGKILL)."""

import os
import sys


def step(i):
    return (i * 2654435761) & 0xFFFFFFFF


def spin():
    acc = 0
    for i in range(1000):
        acc ^= step(i)
    return acc


def main():
    path = sys.argv[1]
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, path)
    while True:
        spin()


if __name__ == "__main__":
    main()
