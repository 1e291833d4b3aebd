# An allocation storm (issue 25, item 7): N small objects (default 10
# million) created and dropped as fast as CPython goes, about 10 million a
# second on an idle core; argv[1] sets N.  Prints "storm: N" at the end.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
for _ in range(n):
    object()
print("storm: %d" % n)
