# Ground truth: dies of an unhandled MemoryError raised in grow() at the
# line marked RAISES, after its RSS grew by about 16 MiB a step.  The
# address-space limit (RLIMIT_AS, 768 MiB above what the interpreter maps
# at start) makes the allocation fail deterministically, without cgroups.
import resource

from inferscope import scope


def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def grow(keep):
    keep.append(b"\x01" * (16 << 20))  # RAISES


resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (768 << 20), resource.RLIM_INFINITY))
keep = []
for i in range(10000):
    with scope("step"):
        grow(keep)
