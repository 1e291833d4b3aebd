"""A Python loop creating small objects (tuples, dicts, lists, strings of
a few dozen bytes): about 7 allocations an iteration through CPython's
object allocator, nearly all freed at once; argv[1] iterations (default
1.5 M: about 10 million allocations)."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_500_000
total = 0
for i in range(n):
    d = {"i": i, "sq": (i, i * i)}
    s = str(i) + "x"
    lst = [i, s, d]
    total += len(lst) + len(s)
print(total)
