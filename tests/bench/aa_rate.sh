#!/bin/bash
# A/A false-alarm rate of iscope-analyze --baseline on a real torch
# workload: RUNS identical recordings of tests/regression/workload.py
# (default 23), then every run compared with the one before it (RUNS-1
# pairs, one baseline) and with the three before it (RUNS-3 comparisons,
# three baselines), at the default threshold.  Prints how many of each were
# called regressed / improved / unchanged / inconclusive.  Not pass/fail:
# the goal (issue 15) is no false "regressed" in at least 19 of 20.
#
#   tests/bench/aa_rate.sh [RUNS]        (build in ./build; ~8 s a run)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ISC_BUILD:-$here/build}
runs=${1:-23}
py=$("$here/scripts/find-python.sh")
dir=$(mktemp -d "${TMPDIR:-/tmp}/aa_rate.XXXXXX")
trap 'rm -rf "$dir"' EXIT
A=$build/tools/iscope-analyze/iscope-analyze
for ((i = 0; i < runs; i++)); do
	"$build/tools/iscope-record/iscope-record" -q -o "$dir/r$i.isc" -- "$py" "$here/tests/regression/workload.py" 2>/dev/null
	"$A" -q -o "$dir/r$i.json" "$dir/r$i.isc"
	rm -f "$dir/r$i.isc"
	printf '\rrecorded %d/%d' $((i + 1)) "$runs" >&2
done
echo >&2
verdict() { "$A" -q "$@" | "$py" -c 'import json,sys; c=json.load(sys.stdin)["comparison"]; s=c["scopes"][0]; k=c.get("conditions") or {}; print(c["verdict"], s["change_pct"], s["p_value"], k.get("cpu_pressure_pct"), "/".join(str(x) for x in k.get("base_cpu_pressure_pct", [])))'; }
declare -A one three
for ((i = 1; i < runs; i++)); do
	read -r v chg p pc pb < <(verdict --baseline "$dir/r$((i - 1)).json" "$dir/r$i.json")
	one[$v]=$((${one[$v]:-0} + 1))
	echo "1 baseline  r$((i - 1)) -> r$i: $v (median $chg %, p $p; CPU pressure $pc % against $pb %)"
done
for ((i = 3; i < runs; i++)); do
	read -r v chg p pc pb < <(verdict --baseline "$dir/r$((i - 3)).json" --baseline "$dir/r$((i - 2)).json" \
		--baseline "$dir/r$((i - 1)).json" "$dir/r$i.json")
	three[$v]=$((${three[$v]:-0} + 1))
	echo "3 baselines r$((i - 3))..r$((i - 1)) -> r$i: $v (median $chg %, p $p; CPU pressure $pc % against $pb %)"
done
for k in one three; do
	declare -n t=$k
	total=0
	for v in regressed improved unchanged inconclusive; do total=$((total + ${t[$v]:-0})); done
	printf '%-6s baseline(s): %d comparisons: regressed %d, improved %d, unchanged %d, inconclusive %d (false regressed %d of %d)\n' \
		"$k" "$total" "${t[regressed]:-0}" "${t[improved]:-0}" "${t[unchanged]:-0}" "${t[inconclusive]:-0}" \
		"${t[regressed]:-0}" "$total"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
