#!/usr/bin/env bats
# Real torch workloads (tests/regression/workload.py) with a planted change
# each, recorded once in setup_file and compared against six baseline
# runs: each change is called regressed (its removal improved) with the planted
# cause ranked first among the contributors; an A/A run is not regressed.
# Ground truth is the environment variable set, stated in workload.py.
#
# The planted changes are large (+250 % and more of a step) on purpose:
# on the shared 2-core test machine the medians of identical runs differ by
# up to 60-95 % under load (tests/bench/aa_rate.sh, README), and the
# comparison widens its interval by that spread (Student's t: with six
# baselines, about 4.4 times its SD).  When the baselines themselves
# differ by more than 100 % the verdict checks are skipped, saying so
# (noisy_machine); the contributor rankings are checked in any case.
#
# More threads than CPUs: 16 intra-op threads where each step makes 200
# small parallel regions (Tensor.relu_ in place over 40960 elements, just
# above torch's grain): every region wakes and joins 16 threads on 2 cores,
# 0.4 ms a step with 1 thread, 23-27 ms with 16 on an idle machine (50-85
# ms with both cores busy, measured with torch.relu).  (A matmul loop, tried first, was as often faster with
# 16 threads as slower under load: a bigger share of a busy machine.)  The
# MLP's linear layers are parallel regions too, so a step runs them only 7
# times: at 25 (the body four times a step) their slowdown beside one CPU
# hog outweighed relu_'s in 3 of 4 suite runs (a likely cause of the CI
# failure of afcd99b, whose log did not say which check failed); with 7,
# in 0 of 3 suite runs beside the hog and 0 of 2 quiet ones (2026-11-26).
#
# Six baselines, interleaved, the last recorded after every run compared
# with them: on this VM whole runs settle in speed states (measured with
# the body four times a step; quiet machine,
# CPU pressure 2-4 %: step medians of identical runs at 7.3-8.5 ms in some,
# 9.5-10.6 ms in others), and three or four baselines that happened to
# share a state let an A/A run in the other be called regressed (once in
# about eight suite runs with four); six rarely all share one, and their
# spread is what widens the interval.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	# exact Python mode: these tests check torch ops by name and their calls per step (sample mode counts no calls)
	export INFERSCOPE_PYTHON_MODE=exact
	export D="$BATS_FILE_TMPDIR"
	export TPY="$(torch_python)"
	local w="$BATS_TEST_DIRNAME/workload.py"
	rec() {
		local name=$1
		shift
		local st=0
		env "$@" "$RECORD" -q -o "$D/$name.isc" -- "$TPY" "$w" 2>"$D/$name.err" || st=$?
		if [ "$st" -ne 0 ]; then
			{ echo "recording $name: status $st; stderr:"; tail -c 1500 "$D/$name.err"; } | sed 's/^/# /' >&3
			return 1
		fi
		"$ANALYZE" -q -o "$D/$name.json" "$D/$name.isc"
	}
	# interleaved, so that a change of machine load falls on every kind
	rec base1
	rec extra_op REG_EXTRA_OP=1
	rec base2
	rec slow_py REG_SLOW_PY=1
	rec base3
	rec sleep REG_SLEEP_MS=150
	rec base4
	rec threads REG_THREADS=16
	rec base5
	rec same
	rec base6
}

jq1() {
	"$PY" -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

# noisy_machine RUN: skips the verdict check (after the contributor checks
# ran) when the six baselines' medians differ by more than 100 % of the
# smallest, or when RUN's CPU pressure (PSI some, as recorded) was more
# than 20 points above every baseline's while its own runnable threads
# stayed within the CPUs, both computed here from the findings.  The
# planted changes are +250 % and more; with six baselines the comparison's
# margin is about 4.4 between-run SDs (Student's t with 5 degrees of
# freedom), about 1.8 times the range of six (range = 2.5 SD), so a range
# above 100 % can honestly hide them (ranges of 52-71 % seen here), and a run on a
# busier machine is not comparable (iscope-analyze(1), Machine
# conditions).
noisy_machine() {
	run "$PY" -c 'import json,statistics,sys
m, p = [], []
for f in sys.argv[1:]:
    d = json.load(open(f))
    it = d["iterations"]
    m.append(statistics.median([b - a for a, b in it["spans"][int(it.get("warmup_spans") or 0):]]))
    # pressure the run made itself (more runnable threads than CPUs) is not noise
    own = (d["cpu"]["runnable_threads_mean"] or 0) > d["environment"]["ncpu"]
    p.append(None if own else d["memory"]["pressure"]["cpu"]["some_stall_pct"])
spread = round(100 * (max(m[:6]) - min(m[:6])) / min(m[:6]))
if spread > 100:
    print("the baselines medians differ by %d %% (> 100 %%)" % spread)
elif None not in p and p[6] > max(p[:6]) + 20:
    print("CPU pressure %.0f %% during the run against at most %.0f %% in the baselines" % (p[6], max(p[:6])))' \
		"$D"/base[1-6].json "$D/$1.json"
	[ "$status" -eq 0 ]
	if [ -n "$output" ]; then
		skip "machine noise: $output"
	fi
}

compare() {
	"$ANALYZE" -q --baseline "$D/base1.json" --baseline "$D/base2.json" --baseline "$D/base3.json" \
		--baseline "$D/base4.json" --baseline "$D/base5.json" --baseline "$D/base6.json" \
		-o "$D/$1.cmp.json" "$D/$1.json"
}

@test "an extra op per step: regressed, torch.cumsum first (appeared)" {
	compare extra_op
	[ "$(jq1 "$D/extra_op.cmp.json" comparison.contributors.0.name)" = torch.cumsum ]
	[ "$(jq1 "$D/extra_op.cmp.json" comparison.contributors.0.change)" = appeared ]
	noisy_machine extra_op
	[ "$(jq1 "$D/extra_op.cmp.json" comparison.verdict)" = regressed ]
}

@test "a slower Python function: regressed, the tokenizer's list comprehension first, more time per call" {
	compare slow_py
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.contributors.0.name)" = "tokenize.<locals>.<listcomp>" ]
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.contributors.0.kind)" = python ]
	noisy_machine slow_py
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.verdict)" = regressed ]
}

@test "an added sleep: regressed, time.sleep first; off-CPU sleep leads the breakdown rows" {
	compare sleep
	[ "$(jq1 "$D/sleep.cmp.json" comparison.contributors.0.name)" = time.sleep ]
	run "$PY" -c 'import json,sys
c = json.load(open(sys.argv[1]))["comparison"]["contributors"]
print([x["name"] for x in c if x["view"] == "breakdown"][0])' "$D/sleep.cmp.json"
	[ "$output" = "off-CPU: sleep" ]
	noisy_machine sleep
	[ "$(jq1 "$D/sleep.cmp.json" comparison.verdict)" = regressed ]
}

@test "more threads than CPUs: regressed, torch threads 1 -> 16 the first environment difference, Tensor.relu_ first and slower per call" {
	compare threads
	[ "$(jq1 "$D/threads.cmp.json" comparison.environment.0.key)" = "torch threads" ]
	[ "$(jq1 "$D/threads.cmp.json" comparison.environment.0.base)" = 1 ]
	[ "$(jq1 "$D/threads.cmp.json" comparison.environment.0.current)" = 16 ]
	[ "$(jq1 "$D/threads.cmp.json" comparison.contributors.0.name)" = Tensor.relu_ ]
	# the same 200 calls a step, each slower: the change is slower calls
	run "$PY" -c 'import json,sys
c = json.load(open(sys.argv[1]))["comparison"]["contributors"][0]
print(c["slower_calls_ns_per_iter"] > 0.9 * c["delta_ns_per_iter"])' "$D/threads.cmp.json"
	[ "$output" = True ]
	noisy_machine threads
	[ "$(jq1 "$D/threads.cmp.json" comparison.verdict)" = regressed ]
}

@test "an improvement: the run without the planted sleep against the run with it is improved" {
	# a 150 ms sleep per step is wall time no machine load takes away, so
	# dropping it is an improvement even against a single baseline
	"$ANALYZE" -q --baseline "$D/sleep.json" -o "$D/unsleep.cmp.json" "$D/same.json"
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.contributors.0.name)" = time.sleep ]
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.contributors.0.change)" = disappeared ]
	# a baseline on a machine more than 20 points of CPU pressure busier is
	# not comparable (iscope-analyze(1), Machine conditions)
	run "$PY" -c 'import json,sys
p = [json.load(open(f))["memory"]["pressure"]["cpu"]["some_stall_pct"] for f in sys.argv[1:]]
if None not in p and p[0] > p[1] + 20:
    print("CPU pressure %.0f %% in the baseline against %.0f %% in the run" % (p[0], p[1]))' "$D/sleep.json" "$D/same.json"
	[ "$status" -eq 0 ]
	if [ -n "$output" ]; then
		skip "machine noise: $output"
	fi
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.verdict)" = improved ]
}

@test "A/A: the same workload again is not regressed (nor improved)" {
	compare same
	run jq1 "$D/same.cmp.json" comparison.verdict
	[[ "$output" == unchanged || "$output" == inconclusive ]]
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/same.cmp.json"
	[ "$status" -eq 0 ]
}
