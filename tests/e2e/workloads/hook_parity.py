"""Known calls of every kind the agent's hooks map, for the test that
sys.monitoring (3.12+) and the profile hook record the same thing.

Per run of work(): leaf 1500 (1000 direct, 500 from the generator), gen
501 starts and resumes, boom 100 (each raising), list.append 1000 (a method
descriptor call on 3.12+), builtins.sum 1, str.join 1, builtins.len 1.
work() runs in the main thread and in 2 threads started by threading.
"""
import threading


def leaf(x):
    return x + 1


def gen(n):
    for i in range(n):
        yield leaf(i)


def boom():
    raise ValueError("expected")


def work():
    lst = []
    for i in range(1000):
        lst.append(leaf(i))
    s = sum(gen(500))
    for _ in range(100):
        try:
            boom()
        except ValueError:
            pass
    ",".join([str(i) for i in range(50)])
    return len(lst), s


ts = [threading.Thread(target=work, name="parity-%d" % i) for i in range(2)]
for t in ts:
    t.start()
for t in ts:
    t.join()
work()
