"""e2e workload with no imports: `mid` is called exactly 100 times and
`leaf` exactly 10000 times (100 per `mid`). Runs on CPython 3.9-3.13;
recording it under each must give the same call counts."""


def leaf(i):
    return i * i % 7


def mid():
    total = 0
    for i in range(100):
        total += leaf(i)
    return total


def main():
    total = 0
    for _ in range(100):
        total += mid()
    print("pure_python.py: total", total)


if __name__ == "__main__":
    main()
