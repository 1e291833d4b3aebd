# Ground truth (issue 25, item 7): a process that forks without exec.  The
# parent keeps four 8 MiB bytearrays at the line marked PARENT, the child
# (forked after the parent's first one) keeps four at the line marked CHILD
# and exits with os._exit(0); the parent waits for it.  Each process's
# samples are its own: the child's file has no PARENT allocation of its
# own making, and the parent's none at CHILD.
import os

held = []


def parent_keep():
    held.append(bytearray(8 << 20))  # PARENT


def child_keep():
    held.append(bytearray(8 << 20))  # CHILD


parent_keep()
pid = os.fork()
if pid == 0:
    for _ in range(4):
        child_keep()
    os._exit(0)
for _ in range(3):
    parent_keep()
os.waitpid(pid, 0)
