#!/usr/bin/env bash
# Cost of THREAD_WAIT (what a blocked thread waits in) in the recorder's
# sampler tick (prints numbers and a ratio; not a pass/fail test).
#
#   tests/bench/sampler_cost.sh     env: ISC_BUILD (default build), TICKS (400),
#                                        THREADS (blocked threads of each kind, 4)
#
# Starts a Python process whose threads are parked: THREADS in a pipe read,
# THREADS on a lock (futex), THREADS in time.sleep, plus one running a busy
# loop, and times sampler ticks of it with THREAD_WAIT on and off
# (tests/bench/sampler_cost.c: alternating pairs, medians).  Each blocked
# thread costs a pread of its task/TID/syscall, and a read or write one a
# readlink + stat of its descriptor once a second (cached in between).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${ISC_BUILD:-build}
BIN=$BUILD/tests/sampler_cost
[[ -x $BIN ]] || { echo "sampler_cost.sh: $BIN not built (scripts/build.sh)" >&2; exit 1; }
PY=${ISC_PYTHON:-$(command -v python3)}
THREADS=${THREADS:-4}

"$PY" - "$THREADS" <<'PYEOF' &
import os, sys, threading, time
n = int(sys.argv[1])
r, w = os.pipe()
lock = threading.Lock()
lock.acquire()
for _ in range(n):
    threading.Thread(target=os.read, args=(r, 1), daemon=True).start()
    threading.Thread(target=lock.acquire, daemon=True).start()
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
time.sleep(3600)
PYEOF
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
want=$((3 * THREADS + 2))
for _ in $(seq 300); do # until every thread exists (up to 30 s on a loaded machine)
	[[ $(ls "/proc/$pid/task" 2>/dev/null | wc -l) -ge $want ]] && break
	sleep 0.1
done
sleep 0.5 # and has parked
echo "process $pid: $((3 * THREADS + 2)) threads, $((3 * THREADS + 1)) blocked"
"$BIN" "$pid" "${TICKS:-400}"
