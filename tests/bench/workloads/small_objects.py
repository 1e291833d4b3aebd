"""A Python loop creating small objects (tuples, dicts, lists, strings of
a few dozen bytes): about 10 million allocations through CPython's object
allocator, nearly all freed at once."""
total = 0
for i in range(1_500_000):
    d = {"i": i, "sq": (i, i * i)}
    s = str(i) + "x"
    lst = [i, s, d]
    total += len(lst) + len(s)
print(total)
