#!/usr/bin/env bash
# Allocation sampling cost (issue 25): whole-process wall time of
# iscope-record with the allocation shim (--memory-sampling, default
# 512K) over iscope-record without it (--memory-sampling=off), on the
# allocation-heavy workloads; prints ratios, not a pass/fail test.
#
#   tests/bench/alloc.sh     env: ROUNDS (default 7, at least 5),
#                                 ISC_BUILD (default build),
#                                 INTERVAL (default: the recorder's, 512K),
#                                 WORKLOADS (default: all, space separated),
#                                 SHORT=1 (the sizes before 2026-11-28),
#                                 COUNT=instructions (callgrind, below)
#
# Workloads (tests/bench/workloads/, torch from scripts/find-python.sh),
# sized so that a run takes 2 to 4 s of CPU time, the start-up (import
# torch alone is about 1 s) a small part of it: a 3 % effect is then not
# hidden in the start-up's own spread (SHORT=1: the sub-second to 2 s runs
# of the first measurements):
#   small_objects  a Python loop creating small objects: 6 M iterations,
#                  ~40 M allocations (SHORT: 1.5 M, ~10 M)
#   tensors10m     400 torch tensors of 10 MiB created and dropped (SHORT: 150)
#   tokenizer      the pure-Python tokenizer feeding a small model: 6000
#                  requests (SHORT: 150)
# Each round runs both modes once, in an order that alternates from round
# to round, after one unmeasured warm-up run.  Printed per workload: the
# median wall time without the shim, the median of the per-round wall
# time ratios on/off with their min-max spread, the same for CPU time
# (user + system of the recorder and the workload: on a loaded machine
# less noisy than wall time, but it also counts the recorder draining the
# samples), and the allocations sampled in the last run (from the trace).
# Goal: <= 1.03 at the default interval.  The machine is shared: quote
# medians, and rerun with more ROUNDS when the spread is wide.
#
# COUNT=instructions: instead of timing, one run per mode of each
# workload's Python process under valgrind's callgrind (the recorder
# itself outside it), PYTHONHASHSEED=0 (string hashing otherwise moves
# the counts by about 1 % from run to run), at the smaller sizes below;
# prints the instructions executed off and on and their ratio.  These do
# not depend on the machine's load, which the timings above do (their
# per-round spread on the shared 2-core machine is +-10 %, wider than the
# effect measured); they are not time either (an indirect call or a cache
# miss costs more than an addition).  Needs valgrind.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

ROUNDS=${ROUNDS:-7}
((ROUNDS >= 5)) || ROUNDS=5
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
MERGE=$BUILD/tools/iscope-merge/iscope-merge
[[ -x $REC ]] || { echo "alloc.sh: $REC not built (scripts/build.sh)" >&2; exit 1; }
PY=$(./scripts/find-python.sh)
WL=tests/bench/workloads
WORKLOADS=${WORKLOADS:-small_objects tensors10m tokenizer}
declare -A SIZE=([small_objects]=6000000 [tensors10m]=400 [tokenizer]=6000)
[[ ${SHORT:-0} == 1 ]] && SIZE=([small_objects]=1500000 [tensors10m]=150 [tokenizer]=150)
ON=(--memory-sampling="${INTERVAL:-512K}")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# timed CMD...: runs CMD (output discarded); prints its wall time in ns
# and its CPU time (user + system, with the children it reaped) in s.
timed() {
	local t0 t1
	t0=$(date +%s%N)
	if ! /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "alloc.sh: failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo "$((t1 - t0)) $(awk '{ print $1 + $2 }' "$tmp/time")"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() {
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'
}

# run MODE SCRIPT SIZE: one recorded run (MODE on or off); prints "wall_ns cpu_s".
run() {
	local opt=(--memory-sampling=off)
	[[ $1 == on ]] && opt=("${ON[@]}")
	timed "$REC" -q "${opt[@]}" -o "$tmp/$1.isc" -- "$PY" "$2" ${3:+"$3"}
}

if [[ ${COUNT:-time} == instructions ]]; then
	command -v valgrind >/dev/null || { echo "alloc.sh: COUNT=instructions needs valgrind" >&2; exit 1; }
	declare -A ISIZE=([small_objects]=300000 [tensors10m]=40 [tokenizer]=1500)
	# instr MODE SCRIPT SIZE: the instructions of one recorded run's Python process
	instr() {
		local opt=(--memory-sampling=off)
		[[ $1 == on ]] && opt=("${ON[@]}")
		rm -f "$tmp"/cg.*
		if ! PYTHONHASHSEED=0 "$REC" -q "${opt[@]}" -o "$tmp/$1.isc" -- valgrind -q --tool=callgrind \
			--callgrind-out-file="$tmp/cg.%p" "$PY" "$2" ${3:+"$3"} >/dev/null 2>"$tmp/stderr"; then
			cat "$tmp/stderr" >&2
			echo "alloc.sh: failed: $2 ($1)" >&2
			exit 1
		fi
		awk '$1 == "totals:" || $1 == "summary:" { n = $2 } END { if (n == "") exit 1; print n }' "$tmp"/cg.*
	}
	printf '# %s, %s, callgrind instructions of the workload process, PYTHONHASHSEED=0, interval %s, sizes %s\n' \
		"$(date -u +%Y-%m-%d)" "$("$PY" -c 'import sys; print("CPython %d.%d" % sys.version_info[:2])')" \
		"${INTERVAL:-512K}" "$(for w in $WORKLOADS; do printf '%s=%s ' "$w" "${ISIZE[$w]:-default}"; done)"
	printf '%-14s %16s %16s %8s\n' workload off on on/off
	for w in $WORKLOADS; do
		b=$(instr off "$WL/$w.py" "${ISIZE[$w]:-}")
		a=$(instr on "$WL/$w.py" "${ISIZE[$w]:-}")
		printf '%-14s %16s %16s %8.4f\n' "$w" "$b" "$a" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
	done
	exit 0
fi

printf '# %s, %s, %d rounds, %s, interval %s, sizes %s\n' "$(date -u +%Y-%m-%d)" \
	"$("$PY" -c 'import sys; print("CPython %d.%d" % sys.version_info[:2])')" "$ROUNDS" \
	"$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" "${INTERVAL:-512K}" \
	"$(for w in $WORKLOADS; do printf '%s=%s ' "$w" "${SIZE[$w]:-default}"; done)"
printf '%-14s %8s %24s %24s %8s\n' workload off_s 'wall on/off (spread)' 'cpu on/off (spread)' samples
for w in $WORKLOADS; do
	script=$WL/$w.py
	size=${SIZE[$w]:-}
	run off "$script" "$size" >/dev/null # warm-up: page cache, bytecode
	: >"$tmp/off"
	: >"$tmp/ratio"
	: >"$tmp/cpu"
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then
			a=$(run on "$script" "$size")
			b=$(run off "$script" "$size")
		else
			b=$(run off "$script" "$size")
			a=$(run on "$script" "$size")
		fi
		echo "${b% *}" >>"$tmp/off"
		awk -v a="${a% *}" -v b="${b% *}" 'BEGIN { print a / b }' >>"$tmp/ratio"
		awk -v a="${a#* }" -v b="${b#* }" 'BEGIN { print a / b }' >>"$tmp/cpu"
	done
	samples=$("$MERGE" --dump-times "$tmp/on.isc" | grep -c ' alloc ' || true)
	printf '%-14s %8.2f %7.3f (%s) %7.3f (%s) %8s\n' "$w" "$(median <"$tmp/off" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/ratio")" "$(spread <"$tmp/ratio")" "$(median <"$tmp/cpu")" "$(spread <"$tmp/cpu")" \
		"$samples"
done
