#!/bin/bash
# The regression gate's false-alarm rate and power on a real torch
# workload: RUNS identical recordings of tests/regression/workload.py
# (default 23) and PLANTED runs (default 20) with a change of +PCT %
# (default 30) planted by construction: a time.sleep of PCT % of the
# first three identical runs' median step less its waits for a CPU in
# every step (REG_SLEEP_MS).  After those three, identical and planted
# runs are recorded alternately, so that the machine's load drifts over
# both alike (recorded in two blocks, a change of load between the
# blocks read as part of the planted change: +44 % measured for a +30 %
# plant while the load rose).
#
# Two ways to count, every comparison on both latency bases
# (iscope-analyze --latency-basis=auto, the default, and wall):
#  - sliding windows: each identical run against the one before it (RUNS-1
#    comparisons, one baseline) and the three before it (RUNS-3); each
#    planted run against three consecutive identical runs;
#  - TRIPLES draws (default 300, AA_TRIPLES): a run and three baselines
#    drawn at random (seeded: AA_SEED, default 1) from all the identical
#    runs, and a planted run against three drawn identical runs.  Twenty
#    windows count a rate of 5 % as 0, 1 or 2 by chance; the draws use
#    every run as the current one against every kind of baseline triple.
#    AA_K="3 5 8": the draws with each of these numbers of baselines
#    (default 3), to see how many a goal needs on this machine.
# Not pass/fail: the goal (issue 24) is at most 1 false "regressed" in 20
# and at least 19 planted changes called "regressed" in 20, whatever the
# baselines' speed states.
#
#   tests/bench/aa_rate.sh [RUNS [PLANTED [PCT]]]   (build in ./build; ~10 s a run)
#   AA_KEEP=1      keep the findings (the directory is printed)
#   AA_DIR=DIR     compare the findings kept in DIR (r*.json, p*.json) again,
#                  recording nothing: another analyzer on the same runs
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${ISC_BUILD:-$here/build}
runs=${1:-23}
planted=${2:-20}
pct=${3:-30}
triples=${AA_TRIPLES:-300}
seed=${AA_SEED:-1}
ks=${AA_K:-3}
py=$("$here/scripts/find-python.sh")
A=$build/tools/iscope-analyze/iscope-analyze
if [[ -n ${AA_DIR:-} ]]; then
	dir=$AA_DIR
	runs=$(find "$dir" -maxdepth 1 -name 'r*.json' | wc -l)
	planted=$(find "$dir" -maxdepth 1 -name 'p*.json' | wc -l)
	echo "comparing the $runs identical and $planted planted runs kept in $dir" >&2
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/aa_rate.XXXXXX")
	if [[ ${AA_KEEP:-} == 1 ]]; then echo "findings in $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
fi
if ((runs < 4 || planted < 1)); then
	echo "aa_rate.sh: need at least 4 identical runs and 1 planted run (have $runs and $planted)" >&2
	exit 2
fi
# record NAME [ENV...]: one recording of the workload, analyzed into DIR/NAME.json
record() {
	local name=$1
	shift
	env "$@" "$build/tools/iscope-record/iscope-record" -q -o "$dir/$name.isc" -- "$py" "$here/tests/regression/workload.py" 2>/dev/null
	"$A" -q -o "$dir/$name.json" "$dir/$name.isc"
	rm -f "$dir/$name.isc"
}
if [[ -z ${AA_DIR:-} ]]; then
	for i in 0 1 2; do
		record "r$i"
	done
	# the planted change: PCT % of the first identical runs' median step on a CPU or blocked (each steady
	# iteration less its wait for a CPU, iterations.cpu_wait_ns; the wall time where a run lacks them),
	# slept in every step: what the step would take on an idle machine, so +PCT % on either basis's idle
	med_ms=$("$py" -c 'import json,sys,statistics as st
def med(d):
    it = d["iterations"]; k = it["warmup_spans"]; w = it.get("cpu_wait_ns")
    return st.median((b - a) - (w[i] if w else 0) for i, (a, b) in enumerate(it["spans"]) if i >= k)
print("%.3f" % (st.median(med(json.load(open(f))) for f in sys.argv[1:]) / 1e6))' "$dir"/r[012].json)
	sleep_ms=$("$py" -c "print('%.3f' % ($med_ms * $pct / 100))")
	echo "first identical runs' median step less its waits for a CPU $med_ms ms: planting a sleep of $sleep_ms ms (+$pct %) in every step" >&2
	for ((i = 3, j = 0; i < runs || j < planted; i++, j++)); do
		((i < runs)) && record "r$i"
		((j < planted)) && record "p$j" REG_SLEEP_MS="$sleep_ms"
		printf '\rrecorded %d/%d identical, %d/%d planted' $((i < runs ? i + 1 : runs)) "$runs" $((j < planted ? j + 1 : planted)) "$planted" >&2
	done
	echo >&2
fi
# verdict BASIS ARGS...: the comparison's verdict on --latency-basis=BASIS (auto or wall)
verdict() {
	local basis=$1
	shift
	"$A" -q --latency-basis="$basis" "$@" | "$py" -c 'import json,sys; c=json.load(sys.stdin)["comparison"]; s=c["scopes"][0]; k=c.get("conditions") or {}; print(c["verdict"], s["change_pct"], s["p_value"], c.get("latency_basis"), k.get("cpu_pressure_pct"), "/".join(str(x) for x in k.get("base_cpu_pressure_pct", [])))'
}
declare -A one three power one_w three_w power_w
# tally KIND LABEL ARGS...: both bases' verdicts of one comparison into KIND and KIND_w
tally() {
	local kind=$1 label=$2 v chg p basis pc pb
	shift 2
	for b in auto wall; do
		read -r v chg p basis pc pb < <(verdict "$b" "$@")
		if [[ $b == auto ]]; then
			declare -n t=$kind
		else
			declare -n t=${kind}_w
		fi
		t[$v]=$((${t[$v]:-0} + 1))
		echo "$label [$b]: $v (median $chg %, p $p, basis $basis; CPU pressure $pc % against $pb %)"
	done
}
for ((i = 1; i < runs; i++)); do
	tally one "1 baseline  r$((i - 1)) -> r$i" --baseline "$dir/r$((i - 1)).json" "$dir/r$i.json"
done
for ((i = 3; i < runs; i++)); do
	tally three "3 baselines r$((i - 3))..r$((i - 1)) -> r$i" --baseline "$dir/r$((i - 3)).json" \
		--baseline "$dir/r$((i - 2)).json" --baseline "$dir/r$((i - 1)).json" "$dir/r$i.json"
done
for ((i = 0; i < planted; i++)); do
	j=$((i % (runs - 2)))
	tally power "planted +$pct % against r$j..r$((j + 2)) -> p$i" --baseline "$dir/r$j.json" --baseline "$dir/r$((j + 1)).json" \
		--baseline "$dir/r$((j + 2)).json" "$dir/p$i.json"
done
for k in one three power one_w three_w power_w; do
	declare -n t=$k
	basis=auto
	[[ $k == *_w ]] && basis=wall
	total=0
	for v in regressed improved unchanged inconclusive; do total=$((total + ${t[$v]:-0})); done
	if [[ $k == power* ]]; then
		printf '[%s] windows, planted +%s %% against three baselines: %d comparisons: regressed %d (the power), improved %d, unchanged %d, inconclusive %d\n' \
			"$basis" "$pct" "$total" "${t[regressed]:-0}" "${t[improved]:-0}" "${t[unchanged]:-0}" "${t[inconclusive]:-0}"
	else
		printf '[%s] windows, %-6s baseline(s): %d comparisons: regressed %d, improved %d, unchanged %d, inconclusive %d (false regressed %d of %d)\n' \
			"$basis" "${k%_w}" "$total" "${t[regressed]:-0}" "${t[improved]:-0}" "${t[unchanged]:-0}" "${t[inconclusive]:-0}" \
			"${t[regressed]:-0}" "$total"
	fi
done
# the draws: every comparison by the analyzer itself, both bases, in one Python process
"$py" - "$A" "$dir" "$runs" "$planted" "$triples" "$seed" "$pct" "$ks" <<'PY'
import json, math, random, subprocess, sys
A, d, runs, planted, n, seed, pct = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7]
ks = [int(k) for k in sys.argv[8].split()]
def verdict(basis, cur, base):
    args = [A, "-q", "--latency-basis=" + basis]
    for b in base:
        args += ["--baseline", "%s/r%d.json" % (d, b)]
    out = subprocess.run(args + [cur], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["comparison"]["verdict"]
def wilson(k, m):
    z = 1.959964; p = k / m; c = (p + z * z / (2 * m)) / (1 + z * z / m)
    h = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return 100 * max(0, c - h), 100 * min(1, c + h)
for nb in ks:
    if nb >= runs:
        print("no draws of %d baselines: %d identical runs" % (nb, runs))
        continue
    rng = random.Random(seed)
    draws = []
    for _ in range(n):
        c = rng.randrange(runs)
        draws.append(("%s/r%d.json" % (d, c), rng.sample([i for i in range(runs) if i != c], nb), False))
        draws.append(("%s/p%d.json" % (d, rng.randrange(planted)), rng.sample(range(runs), nb), True))
    for basis in ("auto", "wall"):
        t = {False: {}, True: {}}
        for cur, base, plant in draws:
            v = verdict(basis, cur, base)
            t[plant][v] = t[plant].get(v, 0) + 1
        for plant, what in ((False, "identical run"), (True, "planted +%s %%" % pct)):
            k = t[plant].get("regressed", 0); lo, hi = wilson(k, n)
            print("[%s] %d draws, %s against %d drawn baselines: regressed %d (%.1f %%, 95 %% interval %.1f-%.1f %%), "
                  "improved %d, unchanged %d, inconclusive %d" % (basis, n, what, nb, k, 100 * k / n, lo, hi,
                  t[plant].get("improved", 0), t[plant].get("unchanged", 0), t[plant].get("inconclusive", 0)))
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
