#!/usr/bin/env bash
# The CUDA agent's own cost per launch and per record (issue 29, item 4),
# on the CPU with the CUPTI double: this build's agent against a baseline
# build's (before and after a change), in the same run (prints numbers and
# ratios; not a pass/fail test).  No GPU: what CUPTI itself costs around
# the callback and per record is not here (tests/device/session.sh).
#
#   tests/bench/cuda_agent_cost.sh BASE_BUILD
#        env: ISC_BUILD (default build: the harness, the doubles and the new
#             agent), ROUNDS (default 5), N (launches a measurement, default
#             20000), REPS (measurements a process, default 7), ISC_PYTHON
#             (default /usr/bin/python3; the agent must know its layout)
#
# Round by round, the order alternating, one Python process per agent
# (tests/bench/cuda_agent_cost.py, the harness tests/bench/cuda_cost.c)
# measures in sample mode, medians of REPS, this thread's CPU time:
#   off_ns     a launch on the double, the callback paused (exact mode's
#              path on the workload's thread; the double's own work is most
#              of it: the baseline of the same process)
#   on_ns      the same launch with the sample mode's callback (Python line)
#   ratio      on_ns / off_ns
#   cb_same_ns the callback alone (less the double's dispatch), a loop on one line
#   cb_alt_ns  the same, the Python line changing at every call
#   conv_ns    converting one CUPTI record into the trace (buf_done: what the
#              agent's flusher thread spends; 3 records a launch here:
#              runtime call, nested driver call, kernel)
#   busy_cb_ns on - off with a converter thread running meanwhile
#              (busy_cb_wall_ns: wall time; both noisy beside other jobs)
# and then, per figure, the medians over rounds of both agents and of the
# per-round ratio this/base (differences in ns for the callback figures,
# which can be near 0).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BASE=${1:?usage: cuda_agent_cost.sh BASE_BUILD}
NEW=${ISC_BUILD:-build}
ROUNDS=${ROUNDS:-5}
N=${N:-20000}
REPS=${REPS:-7}
PY=${ISC_PYTHON:-/usr/bin/python3}
agent=tools/iscope-record/cuda/libiscope-cuda.so
for f in "$BASE/$agent" "$NEW/$agent" "$NEW/tests/gpu/libcuda_cost.so" "$NEW/tests/gpu/libcupti.so.13"; do
	[[ -f $f ]] || { echo "cuda_agent_cost.sh: $f not built (CUPTI headers needed: -Dcupti)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-cudacost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

one() { # one process: which (base|new), its build
	local s
	s=$(mktemp -d "$tmp/session.XXXXXX")
	chmod 700 "$s"
	LD_LIBRARY_PATH=$NEW/tests/gpu INFERSCOPE_SESSION=$s INFERSCOPE_PYTHON_MODE=sample \
		INFERSCOPE_CUDA_FLUSH_MS=600000 "$PY" tests/bench/cuda_agent_cost.py \
		"$NEW/tests/gpu/libcuda_cost.so" "$2/$agent" "$N" "$REPS" | sed "s/^/$1 /" >>"$tmp/lines"
	rm -rf "$s"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); cpu pressure: $(head -1 /proc/pressure/cpu 2>/dev/null || echo n/a)"
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then
		one base "$BASE"; one new "$NEW"
	else
		one new "$NEW"; one base "$BASE"
	fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

val() { # which key -> values, one per round
	awk -v w="$1" -v k="$2" '$1 == w { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$tmp/lines"
}
printf '%-16s %12s %12s %14s %s\n' figure base new "new/base" "(new: min..max)"
for k in off_ns on_ns ratio conv_ns cb_same_ns cb_alt_ns busy_cb_ns busy_cb_wall_ns busy_dropped; do
	b=$(val base $k | median)
	n=$(val new $k | median)
	rng=$(val new $k | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo ".." hi }')
	case $k in
	off_ns | on_ns | conv_ns | ratio)
		rat=$(paste <(val new $k) <(val base $k) | awk '$2 > 0 { print $1 / $2 }' | median)
		printf '%-16s %12s %12s %14.3f %s\n' "$k" "$b" "$n" "$rat" "$rng" ;;
	*)
		printf '%-16s %12s %12s %14s %s\n' "$k" "$b" "$n" "-" "$rng" ;;
	esac
done
