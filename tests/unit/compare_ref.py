#!/usr/bin/env python3
"""Independent reference values for tests/unit/test_compare.c, written
before lib/analyze/stats.c and computed differently: the exact null
distribution of Mann-Whitney U by enumerating every split of the pooled
ranks (itertools.combinations), the Hodges-Lehmann shift and its interval
from the sorted list of all pairwise differences, the normal approximation
from the textbook formula with tie correction.  Standard library only.

    python3 tests/unit/compare_ref.py     # prints the values the C test holds
"""
import itertools
import math
import statistics


def u_stat(x, y):
    """U of y over x: pairs with y > x, ties counted one half."""
    return sum(1.0 if b > a else 0.5 if b == a else 0.0 for a in x for b in y)


def exact_null(nx, ny):
    """Counts of U (y over x) over all C(n, ny) assignments of ranks 1..n."""
    n = nx + ny
    counts = {}
    for ys in itertools.combinations(range(1, n + 1), ny):
        u = sum(ys) - ny * (ny + 1) // 2
        counts[u] = counts.get(u, 0) + 1
    return counts, math.comb(n, ny)


def exact_p(x, y):
    counts, total = exact_null(len(x), len(y))
    u = u_stat(x, y)
    lo = sum(c for k, c in counts.items() if k <= u) / total
    hi = sum(c for k, c in counts.items() if k >= u) / total
    return min(1.0, 2 * min(lo, hi))


def normal_p(x, y):
    nx, ny = len(x), len(y)
    n = nx + ny
    pooled = sorted(x + y)
    ties = sum(t ** 3 - t for t in (pooled.count(v) for v in set(pooled)))
    var = nx * ny / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    u = u_stat(x, y)
    z = max(0.0, abs(u - nx * ny / 2.0) - 0.5) / math.sqrt(var)
    return math.erfc(z / math.sqrt(2)), z


def hl(x, y, alpha=0.05, exact=True):
    d = sorted(b - a for a in x for b in y)
    N = len(d)
    est = d[N // 2] if N % 2 else (d[N // 2 - 1] + d[N // 2]) / 2
    if exact:
        counts, total = exact_null(len(x), len(y))
        cdf, ca = 0.0, 0
        for k in range(0, N + 1):
            cdf += counts.get(k, 0) / total
            if cdf <= alpha / 2:
                ca = k + 1
            else:
                break
    else:
        z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
        ca = math.floor(N / 2 - z * math.sqrt(len(x) * len(y) * (len(x) + len(y) + 1) / 12.0))
    if ca < 1:
        return est, None, None
    return est, d[ca - 1], d[N - ca]


def show(name, x, y, exact=True):
    print(name, "U=%.1f" % u_stat(x, y), end=" ")
    if exact:
        print("p_exact=%.6f" % exact_p(x, y), end=" ")
    p, z = normal_p(x, y)
    print("p_normal=%.6f z=%.6f" % (p, z), end=" ")
    print("HL=%s CI=%s..%s" % hl(x, y, exact=exact))


# R's ?wilcox.test two-sample example (x100): W = 35 for x over y,
# one-sided p = 0.2544, so two-sided 0.5087.
RX = [80, 83, 189, 104, 145, 138, 191, 164, 73, 146]
RY = [115, 88, 90, 74, 121]
show("r_example(y over x)", RX, RY)
# A clear shift, no ties, small: exact.
A = [101, 99, 104, 98, 100, 103, 97, 102]
B = [110, 108, 112, 107, 111, 109, 113, 106]
show("shift", A, B)
# Ties between the groups: normal approximation with tie correction.
T1 = [5, 5, 6, 7, 7, 7, 8, 9, 9, 10, 11, 12]
T2 = [7, 8, 8, 9, 9, 10, 10, 11, 12, 12, 13, 14]
show("ties", T1, T2, exact=False)
# More than 50 a side: the normal approximation (and the normal interval).
L1 = [(i * 7919) % 1000 for i in range(60)]
L2 = [(i * 104729) % 1000 + 30 for i in range(55)]
show("large", L1, L2, exact=False)
