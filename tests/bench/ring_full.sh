#!/usr/bin/env bash
# Cost of a traced call while the rings are full (prints ratios; not a
# pass/fail test).
#
#   tests/bench/ring_full.sh      env: ISC_BUILD (default build), CALLS
#                                      (default 2000000), BATCH (10000)
#
# A full ring never blocks: the agent drops the event and counts it.  This
# measures what that costs the workload.  The agent is loaded by hand (the
# session directory made here, no recorder), so nothing drains the rings
# and no recorder competes for the CPU:
#   untraced  no session: the agent does not attach
#   room      a 1 GiB ring per thread: CALLS calls never fill it
#   full      a 4 KiB ring: full after ~500 events, every later event dropped
# Each mode times CALLS calls to an empty function in batches of BATCH
# (perf_counter, wall time) and prints ns per call: the median batch, the
# 99th percentile and the worst batch, then the ratios full/room and
# full/untraced of each.  The worst batch is the worst case a workload sees
# (it includes whatever the machine did meanwhile: run it on a quiet one).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=${ISC_BUILD:-build}
AGENT=$BUILD/tools/iscope-record/python
[[ -d $AGENT ]] || { echo "ring_full.sh: $AGENT not built (scripts/build.sh)" >&2; exit 1; }
PY=${ISC_PYTHON:-$(command -v python3)}
CALLS=${CALLS:-2000000}
BATCH=${BATCH:-10000}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

LOOP='
import os, sys, time
calls, batch = int(sys.argv[1]), int(sys.argv[2])
def f():
    pass
def loop(n):
    for _ in range(n):
        f()
loop(batch)  # warm-up (and, in "full", fills the ring)
out = []
for _ in range(calls // batch):
    t = time.perf_counter_ns()
    loop(batch)
    out.append((time.perf_counter_ns() - t) / batch)
out.sort()
try:
    import _agent
    s = _agent.stats()
    dropped = s["dropped"]
except Exception:
    dropped = -1
print(out[len(out) // 2], out[min(len(out) - 1, len(out) * 99 // 100)], out[-1], dropped)
'

# measure MODE: "median p99 max dropped" for one run of the loop.
measure() {
	local env=(env -u INFERSCOPE_SESSION -u INFERSCOPE_ENABLE PYTHONPATH="$AGENT")
	rm -rf "$tmp/session"
	mkdir -m 0700 "$tmp/session"
	case $1 in
	room) env+=(INFERSCOPE_SESSION="$tmp/session" INFERSCOPE_SLOTS=2 INFERSCOPE_RING_KB=1048576) ;;
	full) env+=(INFERSCOPE_SESSION="$tmp/session" INFERSCOPE_SLOTS=2 INFERSCOPE_RING_KB=4) ;;
	esac
	"${env[@]}" "$PY" -c "$LOOP" "$CALLS" "$BATCH"
}

printf '%-9s %10s %10s %10s %12s\n' mode median p99 worst dropped
declare -A med p99 worst
for mode in untraced room full; do
	read -r med[$mode] p99[$mode] worst[$mode] dropped < <(measure "$mode")
	printf '%-9s %10.1f %10.1f %10.1f %12s\n' "$mode" "${med[$mode]}" "${p99[$mode]}" "${worst[$mode]}" "$dropped"
done
echo "(ns per call, batches of $BATCH calls; a call is 2 events)"
awk -v fm="${med[full]}" -v rm="${med[room]}" -v um="${med[untraced]}" \
	-v fp="${p99[full]}" -v rp="${p99[room]}" -v up="${p99[untraced]}" \
	-v fw="${worst[full]}" -v rw="${worst[room]}" -v uw="${worst[untraced]}" 'BEGIN {
	printf "full/room:     median %.2f  p99 %.2f  worst %.2f\n", fm / rm, fp / rp, fw / rw
	printf "full/untraced: median %.2f  p99 %.2f  worst %.2f\n", fm / um, fp / up, fw / uw
}'
