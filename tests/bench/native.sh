#!/usr/bin/env bash
# Native stack sampling cost (issue 26): whole-process wall time of a
# recording with --native=on against the same recording without it, per
# workload kind (prints ratios; not a pass/fail test), the trace growth
# it adds per minute, and the offline unwinding speed.
#
#   tests/bench/native.sh      env: ROUNDS (default 5, at least 3),
#                                   ISC_BUILD (default build),
#                                   WORKLOADS (default: dispatch tokenizer matmul many_threads),
#                                   NATIVE_ARGS (default: none: 100 Hz, 32 KiB stacks)
#
# Workloads (tests/bench/workloads/, torch from scripts/find-python.sh):
#   dispatch      batch-1 serving loop over 8 small blocks (dispatch-bound)
#   tokenizer     pure-Python tokenizer feeding a small model
#   matmul        large matmuls (compute-bound)
#   many_threads  16 Python threads of small matmuls, plus torch's pool
# Modes: off (iscope-record with its defaults: --python=auto samples
# Python stacks, no native stacks) and native (the same with --native=on
# NATIVE_ARGS).  Every round runs both, in alternating order, after one
# unmeasured warm-up.  Printed per workload: the median wall time of off,
# the median of the per-round ratios native/off with their min-max spread,
# the same for the CPU time (user + system, /usr/bin/time) of the whole
# recording, recorder and workload together (less sensitive than wall
# time to other processes on a shared machine), the median CPU time the
# recorder's drain thread spent on the perf rings (NATIVE_STATS cpu_ns,
# its share of the extra CPU), the native samples per second, and the trace bytes native adds per
# minute of the workload (median over rounds: (size_native - size_off) /
# wall time of native x 60).  Then, on the last native trace of each
# workload: iscope-merge's time, the unwinding speed of
# tests/native/nstacks (stacks per second, wall time; files opened and
# parsed on first use included: the speed of a cold analysis), and
# iscope-analyze's time on that timeline (unwinding, mixing, dispatch and
# the native section included) beside its time on the last trace without
# native stacks.
# Goal: native/off <= 1.05 at the default rate.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

ROUNDS=${ROUNDS:-5}
((ROUNDS >= 3)) || ROUNDS=3
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
MERGE=$BUILD/tools/iscope-merge/iscope-merge
ANALYZE=$BUILD/tools/iscope-analyze/iscope-analyze
NSTACKS=$BUILD/tests/nstacks
for b in "$REC" "$MERGE" "$ANALYZE" "$NSTACKS"; do
	[[ -x $b ]] || { echo "native.sh: $b not built (meson compile -C $BUILD)" >&2; exit 1; }
done
PY=$(./scripts/find-python.sh)
WL=tests/bench/workloads
WORKLOADS=${WORKLOADS:-dispatch tokenizer matmul many_threads}
read -r -a NARGS <<<"${NATIVE_ARGS:-}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-native-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$REC" -q --no-cuda --native=on -o "$tmp/probe.isc" -- true 2>"$tmp/probe.err" ||
	{ echo "native.sh: native sampling is not permitted here: $(cat "$tmp/probe.err")" >&2; exit 1; }

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() {
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'
}

# run MODE SCRIPT OUT: records SCRIPT into OUT; prints the wall time in
# ns; the CPU time (user + system, s) in $tmp/cpu.MODE.
run() {
	local t0 t1 extra=()
	[[ $1 == native ]] && extra=(--native=on "${NARGS[@]}")
	t0=$(date +%s%N)
	if ! /usr/bin/time -f '%U %S' -o "$tmp/time" "$REC" -q --no-cuda "${extra[@]}" -o "$3" -- "$PY" "$2" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "native.sh: failed: $1 $2" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	awk '{ print $1 + $2 }' "$tmp/time" >"$tmp/cpu.$1"
	echo $((t1 - t0))
}

printf '# native.sh: %d rounds, %s, %s\n' "$ROUNDS" "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" \
	"native args: ${NATIVE_ARGS:-(defaults)}"
printf '%-13s %7s %21s %21s %9s %10s %12s %9s %12s %10s %14s\n' workload off_s native/off cpu_native/off drain_ms \
	samples/s MB/min merge_s unwind/s analyze_s analyze_off_s
for w in $WORKLOADS; do
	script=$WL/$w.py
	run off "$script" "$tmp/warm.isc" >/dev/null
	: >"$tmp/ratio"
	: >"$tmp/off"
	: >"$tmp/growth"
	: >"$tmp/rate"
	: >"$tmp/cpuratio"
	: >"$tmp/drain"
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then
			tn=$(run native "$script" "$tmp/n.isc")
			to=$(run off "$script" "$tmp/o.isc")
		else
			to=$(run off "$script" "$tmp/o.isc")
			tn=$(run native "$script" "$tmp/n.isc")
		fi
		echo "$to" >>"$tmp/off"
		awk -v a="$tn" -v b="$to" 'BEGIN { print a / b }' >>"$tmp/ratio"
		awk -v a="$(<"$tmp/cpu.native")" -v b="$(<"$tmp/cpu.off")" 'BEGIN { print a / b }' >>"$tmp/cpuratio"
		sn=$(stat -c %s "$tmp/n.isc")
		so=$(stat -c %s "$tmp/o.isc")
		awk -v a="$sn" -v b="$so" -v t="$tn" 'BEGIN { print (a - b) / (t / 1e9) * 60 / 1e6 }' >>"$tmp/growth"
		read -r samples drain < <("$MERGE" --dump --dump-times "$tmp/n.isc" | awk '$2 == "native_stats" { print $5, $10 / 1e6 }')
		echo "${drain:-0}" >>"$tmp/drain"
		awk -v s="${samples:-0}" -v t="$tn" 'BEGIN { print s / (t / 1e9) }' >>"$tmp/rate"
	done
	t0=$(date +%s%N)
	"$MERGE" "$tmp/n.isc" -o "$tmp/n.istl"
	t1=$(date +%s%N)
	"$NSTACKS" --mix --folded "$tmp/n.istl" >/dev/null 2>"$tmp/nst.err"
	t2=$(date +%s%N)
	stacks=$(sed -n 's/^samples \([0-9]*\) .*/\1/p' "$tmp/nst.err")
	"$MERGE" "$tmp/o.isc" -o "$tmp/o.istl"
	t3=$(date +%s%N)
	"$ANALYZE" -q -o "$tmp/n.json" "$tmp/n.istl"
	t4=$(date +%s%N)
	"$ANALYZE" -q -o "$tmp/o.json" "$tmp/o.istl"
	t5=$(date +%s%N)
	printf '%-13s %7.2f %7.3f (%s) %7.3f (%s) %9.1f %10.0f %12.1f %9.2f %12.0f %10.2f %14.2f\n' "$w" \
		"$(median <"$tmp/off" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/ratio")" "$(spread <"$tmp/ratio")" \
		"$(median <"$tmp/cpuratio")" "$(spread <"$tmp/cpuratio")" "$(median <"$tmp/drain")" \
		"$(median <"$tmp/rate")" "$(median <"$tmp/growth")" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" \
		"$(awk -v s="${stacks:-0}" -v a="$t1" -v b="$t2" 'BEGIN { print s / ((b - a) / 1e9) }')" \
		"$(awk -v a="$t3" -v b="$t4" 'BEGIN { print (b - a) / 1e9 }')" \
		"$(awk -v a="$t4" -v b="$t5" 'BEGIN { print (b - a) / 1e9 }')"
done
