#!/usr/bin/env bash
# Recording overhead of the two Python modes (prints ratios; not a
# pass/fail test).
#
#   tests/bench/python_modes.sh    env: PAIRS (default 5, at least 5),
#                                       ISC_BUILD (default build),
#                                       SCRIPTS (default the two examples)
#
# Runs each workload plain, under `iscope-record --python=exact` and under
# `iscope-record --python=sample`, interleaved round by round (the order
# rotates each round) after one unmeasured warm-up run, and prints the
# median wall time of each, the medians of the per-round ratios to plain
# and their min-max spread.  The sampler's own CPU time is in the findings
# (recording.sampler); this measures what the workload feels.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PAIRS=${PAIRS:-5}
((PAIRS >= 5)) || PAIRS=5
BUILD=${ISC_BUILD:-build}
REC=$BUILD/tools/iscope-record/iscope-record
[[ -x $REC ]] || { echo "python_modes.sh: $REC not built (scripts/build.sh)" >&2; exit 1; }
PY=$(./scripts/find-python.sh)
read -r -a scripts <<<"${SCRIPTS:-examples/infer.py examples/infer_small.py}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iscope-modes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

elapsed_ns() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		echo "python_modes.sh: failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

spread() {
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'
}

run_mode() {
	case $1 in
	plain) elapsed_ns "$PY" "$2" ;;
	exact | sample)
		elapsed_ns "$REC" --quiet --python="$1" -o "$tmp/trace.isc" -- "$PY" "$2"
		rm -f "$tmp/trace.isc"
		;;
	esac
}

modes=(plain exact sample)
printf '%-24s %5s %8s %8s %8s %11s %12s  %s\n' workload pairs plain_s exact_s sample_s exact/plain sample/plain 'ranges (exact; sample)'
for script in "${scripts[@]}"; do
	run_mode plain "$script" >/dev/null
	for m in "${modes[@]}" ex_ratio sa_ratio; do : >"$tmp/$m"; done
	for ((r = 0; r < PAIRS; r++)); do
		declare -A t=()
		for ((k = 0; k < 3; k++)); do
			m=${modes[(r + k) % 3]}
			t[$m]=$(run_mode "$m" "$script")
			echo "${t[$m]}" >>"$tmp/$m"
		done
		awk -v a="${t[exact]}" -v b="${t[plain]}" 'BEGIN { print a / b }' >>"$tmp/ex_ratio"
		awk -v a="${t[sample]}" -v b="${t[plain]}" 'BEGIN { print a / b }' >>"$tmp/sa_ratio"
		unset t
	done
	printf '%-24s %5d %8.2f %8.2f %8.2f %11.3f %12.3f  %s; %s\n' "$script" "$PAIRS" \
		"$(median <"$tmp/plain" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/exact" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/sample" | awk '{ print $1 / 1e9 }')" \
		"$(median <"$tmp/ex_ratio")" "$(median <"$tmp/sa_ratio")" \
		"$(spread <"$tmp/ex_ratio")" "$(spread <"$tmp/sa_ratio")"
done
