"""A well-behaved traced process sharing the session with a hostile one:
leaf() is called exactly 500 times; the trace must hold all of them."""


def leaf(i):
    return i + 1


for i in range(500):
    leaf(i)
