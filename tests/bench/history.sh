#!/bin/bash
# iscope-analyze --history over N findings files (default 1000; goal: under
# a second), beside two floors measured in the same run on the same files:
# `cat` (reading them) and `jq -c .` (parsing them as JSON).  Medians of 5
# interleaved rounds, wall time and CPU time (user + system: what the
# work costs when other processes share the cores).  The files are synthetic findings made from the
# analysis of the cli suite's fixture timeline (tests/regression/synth.py),
# a step change planted at run N/2.
#
#   tests/bench/history.sh [N]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ISC_BUILD:-$here/build}
n=${1:-1000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/history_bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
A=$build/tools/iscope-analyze/iscope-analyze
"$build/tests/test_analyze" --write basic "$dir/basic.istl"
"$A" -q -o "$dir/basic.json" "$dir/basic.istl"
python3 "$here/tests/regression/synth.py" "$dir/basic.json" --series "$dir/s" --runs "$n" --step-at $((n / 2)) --step-pct 10
bytes=$(cat "$dir"/s/*.json | wc -c)
# timed CMD...: "wall cpu" seconds of one run of CMD (GNU time when present)
timed() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %U %S' -o "$dir/t" "$@" >/dev/null
		awk '{printf "%s %.3f\n", $1, $2 + $3}' "$dir/t"
	else
		local t0 t1
		t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
		echo "$(echo "$t1 - $t0" | bc) nan"
	fi
}
declare -a th tc tj hc cc jc
for round in 1 2 3 4 5; do
	read -r w u < <(timed "$A" -q --history -o "$dir/h.json" "$dir"/s/run-*.json); th+=("$w"); hc+=("$u")
	read -r w u < <(timed cat "$dir"/s/run-*.json); tc+=("$w"); cc+=("$u")
	if command -v jq >/dev/null; then read -r w u < <(timed jq -c . "$dir"/s/run-*.json); tj+=("$w"); jc+=("$u"); fi
done
med() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
h=$(med "${th[@]}"); c=$(med "${tc[@]}"); j=$(med "${tj[@]:-0}")
hu=$(med "${hc[@]}"); cu=$(med "${cc[@]}"); ju=$(med "${jc[@]:-0}")
cp=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["history"]["metrics"][0]; print(m["metric"], [c["run"] for c in m["change_points"]])' "$dir/h.json")
printf '%d findings files, %.1f MB\n' "$n" "$(echo "$bytes / 1000000" | bc -l)"
printf '%-26s %8s %8s\n' "" "wall s" "CPU s"
printf '%-26s %8.3f %8.3f   (change points: %s; planted at run %d)\n' "iscope-analyze --history" "$h" "$hu" "$cp" $((n / 2))
printf '%-26s %8.3f %8.3f   ours / this: wall %.1fx, CPU %.1fx\n' "cat" "$c" "$cu" "$(echo "$h / $c" | bc -l)" "$(echo "$hu / ($cu + 0.0005)" | bc -l)"
if command -v jq >/dev/null; then
	printf '%-26s %8.3f %8.3f   ours / this: wall %.2fx, CPU %.2fx\n' "jq -c ." "$j" "$ju" "$(echo "$h / $j" | bc -l)" "$(echo "$hu / $ju" | bc -l)"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
