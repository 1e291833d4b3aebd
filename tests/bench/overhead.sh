#!/usr/bin/env bash
# Recording overhead benchmark: a matrix of workload kinds x recording
# modes (prints ratios; not a pass/fail test).
#
#   tests/bench/overhead.sh     env: ROUNDS (default 5, at least 5),
#                                    ISC_BUILD (default build),
#                                    WORKLOADS (default: all, space separated)
#
# Workloads (tests/bench/workloads/, each a whole process, torch from
# scripts/find-python.sh):
#   dispatch      batch-1 serving loop over 8 small blocks (dispatch-bound)
#   tokenizer     pure-Python tokenizer feeding a small model
#   matmul        large matmuls (compute-bound)
#   import_torch  `import torch` alone
#   threads       4 threads of Python loops around small torch ops
#   hot_calls     a tight loop of tiny calls: ~10 M events/s recorded
# Modes: plain; default (iscope-record with no option: --python=auto,
# which samples unless GPU activity is traced; the mode it chose is
# printed in the header, from the trace's META record.python_mode); exact
# (--python=exact, every call: sys.monitoring on 3.12+, the profile hook
# before); sample (--python=sample); cprofile (python -m cProfile).  An
# iscope-record without --python=auto has no default column, and exact is
# its default.
#
# Every round runs every mode once, in an order that rotates from round to
# round, after one unmeasured warm-up run of the workload.  Printed per
# workload: the median wall time of the plain runs, and per mode the
# median of the per-round ratios mode/plain with their min-max spread (a
# wide spread means a noisy machine: rerun with more ROUNDS); for exact,
# the events recorded per second (median; over the whole run, or the
# workload's own loop rate when it prints loop_events_per_s: hot_calls) and
# the events dropped (sum over the rounds, from iscope-record's summary).
# Goal (issue 13): <= 1.05 at default settings, 0 drops.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

ROUNDS=${ROUNDS:-5}
((ROUNDS >= 5)) || ROUNDS=5
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
[[ -x $REC ]] || { echo "overhead.sh: $REC not built (scripts/build.sh)" >&2; exit 1; }
PY=$(./scripts/find-python.sh)
WL=tests/bench/workloads
WORKLOADS=${WORKLOADS:-dispatch tokenizer matmul import_torch threads hot_calls}

modes=(plain)
if "$REC" --help 2>/dev/null | grep -q -- 'or auto'; then
	modes+=(default exact sample)
elif "$REC" --help 2>/dev/null | grep -q -- '--python=MODE'; then
	modes+=(exact sample)
else
	modes+=(exact)
fi
modes+=(cprofile)
nm=${#modes[@]}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# elapsed_ns CMD...: runs CMD (stdout discarded, stderr kept in
# $tmp/stderr); prints its wall time in ns.
elapsed_ns() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "overhead.sh: failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

# median / spread: of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() {
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}

# run_mode MODE SCRIPT: one run; prints its wall time (ns).  For the
# recorded modes, appends "events dropped wall_ns" from iscope-record's
# summary line to $tmp/MODE.counts.
run_mode() {
	local ns
	case $1 in
	plain) elapsed_ns "$PY" "$2" ;;
	default | exact | sample)
		local opt=()
		[[ $1 != default ]] && [[ ${modes[*]} == *sample* ]] && opt=(--python="$1")
		ns=$(elapsed_ns "$REC" "${opt[@]}" -o "$tmp/trace.isc" -- "$PY" "$2")
		if [[ $1 == default && ! -s $tmp/default.mode ]]; then
			"$BUILD/tools/iscope-merge/iscope-merge" --dump "$tmp/trace.isc" |
				sed -n 's/^META record.python_mode=//p' >"$tmp/default.mode" || true
		fi
		rm -f "$tmp/trace.isc"
		# "iscope-record: 16833335 events (3167383 dropped) and 0 stack samples from 1 processes, ..."
		loop=$(sed -n 's/^loop_events_per_s \([0-9]*\)$/\1/p' "$tmp/stderr")
		sed -n 's/.*iscope-record: \([0-9]*\) events (\([0-9]*\) dropped).*/\1 \2/p' "$tmp/stderr" |
			awk -v ns="$ns" -v loop="${loop:-0}" '{ print $1, $2, ns, loop }' >>"$tmp/$1.counts"
		echo "$ns"
		;;
	cprofile) elapsed_ns "$PY" -m cProfile -o /dev/null "$2" ;;
	esac
}

printf '# %s, %s, %d rounds, %s\n' "$(date -u +%Y-%m-%d)" "$("$PY" -c 'import sys; print("CPython %d.%d" % sys.version_info[:2])')" \
	"$ROUNDS" "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-13s %7s' workload plain_s
for m in "${modes[@]:1}"; do printf ' %16s' "$m/plain"; done
printf ' %14s %10s\n' 'exact_events/s' exact_drops
for w in $WORKLOADS; do
	script=$WL/$w.py
	run_mode plain "$script" >/dev/null # warm-up: page cache, bytecode
	for m in "${modes[@]}"; do : >"$tmp/$m"; : >"$tmp/$m.ratio"; : >"$tmp/$m.counts"; done
	for ((r = 0; r < ROUNDS; r++)); do
		declare -A t=()
		for ((k = 0; k < nm; k++)); do
			m=${modes[(r + k) % nm]}
			t[$m]=$(run_mode "$m" "$script")
			echo "${t[$m]}" >>"$tmp/$m"
		done
		for m in "${modes[@]:1}"; do
			awk -v a="${t[$m]}" -v b="${t[plain]}" 'BEGIN { print a / b }' >>"$tmp/$m.ratio"
		done
		unset t
	done
	printf '%-13s %7.2f' "$w" "$(median <"$tmp/plain" | awk '{ print $1 / 1e9 }')"
	for m in "${modes[@]:1}"; do
		printf ' %5.3f (%s)' "$(median <"$tmp/$m.ratio")" "$(spread <"$tmp/$m.ratio")"
	done
	# the workload's own event rate when it reports one (hot_calls), else
	# the events over the whole run's wall time
	rate=$(awk '$4 > 0 { print $4; next } $3 > 0 { print $1 / ($3 / 1e9) }' "$tmp/exact.counts" | median)
	drops=$(awk '{ s += $2 } END { print s + 0 }' "$tmp/exact.counts")
	printf ' %14.0f %10s\n' "${rate:-0}" "$drops"
done
if [[ -s $tmp/default.mode ]]; then
	echo "# default: $(head -1 "$tmp/default.mode")"
fi
