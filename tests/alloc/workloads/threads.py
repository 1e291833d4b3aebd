# Ground truth (issue 25, item 1: "works with threads"): four threads,
# each keeping eight 8 MiB bytearrays (8388609 bytes) at the line marked
# KEEP, all at once (they start together on a barrier).  32 allocations at
# KEEP, 8 from each of 4 threads other than the main one.
import threading

barrier = threading.Barrier(4)
kept = []
lock = threading.Lock()


def work():
    barrier.wait()
    mine = []
    for _ in range(8):
        mine.append(bytearray(8 << 20))  # KEEP
    with lock:
        kept.extend(mine)


threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
