#!/usr/bin/env bash
# Recording overhead benchmark (prints ratios; not a pass/fail test).
#
#   tests/bench/overhead.sh        env: PAIRS (default 5, at least 5),
#                                       ISC_BUILD (default build)
#
# For examples/infer.py and examples/infer_small.py, runs the workload
# plain, under `iscope-record -o TRACE --`, and under
# `python -m cProfile -o /dev/null`, interleaved round by round (the order
# rotates each round), after one unmeasured warm-up run. Prints the median
# wall time of each, the median of the per-round ratios recorded/plain and
# cprofile/plain, and their min-max spread (a wide spread means a noisy
# machine: rerun with more PAIRS).
# Goal: recorded/plain <= 1.05, and below cprofile/plain.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PAIRS=${PAIRS:-5}
((PAIRS >= 5)) || PAIRS=5
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
[[ -x $REC ]] || { echo "overhead.sh: $REC not built (scripts/build.sh)" >&2; exit 1; }
PY=$(./scripts/find-python.sh)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# elapsed_ns CMD...: run CMD with output discarded; print its wall time.
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

# median: of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

run_mode() {
	case $1 in
	plain) elapsed_ns "$PY" "$2" ;;
	recorded)
		elapsed_ns "$REC" --quiet -o "$tmp/trace.isc" -- "$PY" "$2"
		rm -f "$tmp/trace.isc"
		;;
	cprofile) elapsed_ns "$PY" -m cProfile -o /dev/null "$2" ;;
	esac
}

# spread: "min-max" of the numbers on stdin.
spread() {
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'
}

modes=(plain recorded cprofile)
printf '%-24s %5s %8s %10s %10s %14s %14s  %s\n' workload pairs plain_s recorded_s cprofile_s recorded/plain cprofile/plain 'ratio ranges (recorded; cprofile)'
for script in examples/infer.py examples/infer_small.py; do
	run_mode plain "$script" >/dev/null # warm-up: page cache, bytecode
	: >"$tmp/rec_ratio"
	: >"$tmp/cp_ratio"
	for m in "${modes[@]}"; do : >"$tmp/$m"; done
	for ((r = 0; r < PAIRS; r++)); do
		declare -A t=()
		for ((k = 0; k < 3; k++)); do
			m=${modes[(r + k) % 3]}
			t[$m]=$(run_mode "$m" "$script")
			echo "${t[$m]}" >>"$tmp/$m"
		done
		awk -v a="${t[recorded]}" -v b="${t[plain]}" 'BEGIN { print a / b }' >>"$tmp/rec_ratio"
		awk -v a="${t[cprofile]}" -v b="${t[plain]}" 'BEGIN { print a / b }' >>"$tmp/cp_ratio"
		unset t
	done
	printf '%-24s %5d %8.2f %10.2f %10.2f %14.3f %14.3f  %s; %s\n' "$script" "$PAIRS" \
		"$(median <"$tmp/plain" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/recorded" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/cprofile" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/rec_ratio")" "$(median <"$tmp/cp_ratio")" \
		"$(spread <"$tmp/rec_ratio")" "$(spread <"$tmp/cp_ratio")"
done
