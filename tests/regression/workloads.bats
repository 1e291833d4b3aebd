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
# comparison widens its interval by that spread (a prediction interval
# for a new run, Student's t with 5 df: with six baselines, 2.57 x 1.08 =
# 2.8 times its SD).  When the machine was not quiet
# while they were recorded the verdict checks are skipped, saying so
# (quiet_machine, below); the contributor rankings are checked in any case.
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
#
# The machine premise (issue 28): the verdicts are asserted when the
# machine was quiet while all seven runs compared were recorded, measured
# from outside the recordings (tests/lib/runqueue.py: other runnable
# threads at most half the CPUs on average), not from what iscope-analyze
# wrote; otherwise the verdict checks skip with the figures (the
# contributor rankings are checked in any case). The documented
# Machine-conditions rule (a run more than 20 points of CPU pressure
# busier than every baseline: regressed becomes inconclusive) is an
# expectation, computed here, not a skip.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	# exact Python mode: these tests check torch ops by name and their calls per step (sample mode counts no calls)
	export INFERSCOPE_PYTHON_MODE=exact
	export D="$BATS_FILE_TMPDIR"
	TPY=$(torch_python)
	export TPY
	local w="$BATS_TEST_DIRNAME/workload.py"
	rec() {
		local name=$1
		shift
		local st=0 pid
		env "$@" "$RECORD" -q -o "$D/$name.isc" -- "$TPY" "$w" 2>"$D/$name.err" &
		pid=$!
		"$ISC_SRC/tests/lib/runqueue.py" "$pid" "$D/$name.machine.json"
		wait "$pid" || st=$?
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

# quiet_machine RUN: skips the verdict check (after the contributor checks
# ran) when, while the six baselines or RUN were recorded, other threads
# than the recording's own were runnable on more than half the CPUs on
# average (tests/lib/runqueue.py, measured from outside). The planted
# changes are +250 % and more; with six baselines the comparison's margin
# is about 4.4 between-run SDs (Student's t with 5 degrees of freedom),
# about 1.8 times the range of six (range = 2.5 SD): ranges of 52-71 % on
# a quiet machine leave the changes clear, and a machine shared with
# other CPU-bound jobs made the baselines' medians differ by 464 %
# (2026-11-27, 4-6 other runnable threads on 2 CPUs), which can honestly
# hide them.
quiet_machine() {
	run "$PY" -c 'import json,sys
busy = []
for f in sys.argv[1:]:
    m = json.load(open(f))
    if (m["external_runnable_mean"] or 0) > m["ncpu"] / 2:
        busy.append("%s %.2f" % (f.rsplit("/", 1)[1].split(".")[0], m["external_runnable_mean"]))
if busy:
    print("other runnable threads while recorded (mean, on %d CPUs; at most %g to compare): %s" % (m["ncpu"], m["ncpu"] / 2, ", ".join(busy)))' \
		"$D"/base[1-6].machine.json "$D/$1.machine.json"
	[ "$status" -eq 0 ]
	if [ -n "$output" ]; then
		skip "MACHINE ASSUMPTION NOT MET: $output"
	fi
}

# expected RUN [BASELINE...] VERDICT: the verdict the documented
# Machine-conditions rule (iscope-analyze(1)) gives RUN against the
# baselines (default: the six) when the change alone says VERDICT:
# "inconclusive" when RUN's CPU pressure (PSI some, as recorded) exceeds
# every baseline's by more than 20 points (VERDICT regressed) or falls
# below every baseline's by more than 20 (VERDICT improved), while every
# run's own mean runnable threads stayed within its CPUs; else VERDICT.
# The rule holds on the wall basis only: when every run has a CPU wait
# for each iteration (iterations.cpu_wait_ns) and its own threads stayed
# within its CPUs, the waits are taken out instead (Latency less the
# waits for a CPU) and VERDICT stands.
expected() {
	local want=${*: -1} run=$1
	local bases=("${@:2:$#-2}")
	[ "${#bases[@]}" -gt 0 ] || bases=("$D"/base[1-6].json)
	"$PY" -c 'import json,sys
want, cur, bases = sys.argv[1], json.load(open(sys.argv[2])), [json.load(open(f)) for f in sys.argv[3:]]
p = lambda d: d["memory"]["pressure"]["cpu"]["some_stall_pct"]
own = lambda d: (d["cpu"]["runnable_threads_mean"] or 0) <= d["environment"]["ncpu"]
ok = all(p(d) is not None and own(d) for d in [cur] + bases)
waits = lambda d: isinstance(d["iterations"].get("cpu_wait_ns"), list) and len(d["iterations"]["cpu_wait_ns"]) == len(d["iterations"]["spans"]) > 0
ok = ok and not all(waits(d) for d in [cur] + bases)
if ok and want == "regressed" and all(p(cur) > p(b) + 20 for b in bases):
    want = "inconclusive"
if ok and want == "improved" and all(p(cur) < p(b) - 20 for b in bases):
    want = "inconclusive"
print(want)' "$want" "$D/$run.json" "${bases[@]}"
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
	quiet_machine extra_op
	[ "$(jq1 "$D/extra_op.cmp.json" comparison.verdict)" = "$(expected extra_op regressed)" ]
}

@test "a slower Python function: regressed, the tokenizer's list comprehension first, more time per call" {
	compare slow_py
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.contributors.0.name)" = "tokenize.<locals>.<listcomp>" ]
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.contributors.0.kind)" = python ]
	quiet_machine slow_py
	[ "$(jq1 "$D/slow_py.cmp.json" comparison.verdict)" = "$(expected slow_py regressed)" ]
}

@test "an added sleep: regressed, time.sleep first; off-CPU sleep leads the breakdown rows" {
	compare sleep
	[ "$(jq1 "$D/sleep.cmp.json" comparison.contributors.0.name)" = time.sleep ]
	run "$PY" -c 'import json,sys
c = json.load(open(sys.argv[1]))["comparison"]["contributors"]
print([x["name"] for x in c if x["view"] == "breakdown"][0])' "$D/sleep.cmp.json"
	[ "$output" = "off-CPU: sleep" ]
	quiet_machine sleep
	[ "$(jq1 "$D/sleep.cmp.json" comparison.verdict)" = "$(expected sleep regressed)" ]
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
	quiet_machine threads
	[ "$(jq1 "$D/threads.cmp.json" comparison.verdict)" = "$(expected threads regressed)" ]
}

@test "an improvement: the run without the planted sleep against the run with it is improved" {
	# a 150 ms sleep per step is wall time no machine load takes away, so
	# dropping it is an improvement even against a single baseline
	"$ANALYZE" -q --baseline "$D/sleep.json" -o "$D/unsleep.cmp.json" "$D/same.json"
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.contributors.0.name)" = time.sleep ]
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.contributors.0.change)" = disappeared ]
	# against a baseline recorded more than 20 points of CPU pressure busier,
	# the rule makes it inconclusive (iscope-analyze(1), Machine conditions)
	want=$(expected same "$D/sleep.json" improved)
	echo "expected: $want"
	[ "$(jq1 "$D/unsleep.cmp.json" comparison.verdict)" = "$want" ]
	if [ "$want" = inconclusive ]; then
		[ "$(jq1 "$D/unsleep.cmp.json" comparison.conditions.comparable)" = false ]
	fi
}

# The A/A run against the six baselines, on a quiet machine: unchanged,
# with --threshold 200 (a change that matters here: the planted ones are
# +250 % and more), since the interval, widened by the quiet machine's
# between-run spread (ranges of 52-71 % of six runs: SDs of 21-28 %; a
# margin of 2.57 SDs, t with 5 df, times 1.08 for the new run's own: up
# to +79 to +118 %), lies
# within +-200 %. "inconclusive" is no pass: a comparison that
# always says so would pass an A/A that accepted it (issue 28). On a busy
# machine the A/A run can really be slower: with 7-13 other runnable
# threads on 2 CPUs its median was 109 ms against 17-56 ms (2026-11-27),
# and iscope-analyze rightly said regressed (every run's CPU pressure was
# 98-100 %, so the Machine-conditions rule could not tell the runs apart):
# the machine premise comes before any check of the verdict.
@test "A/A: the same workload again is unchanged on a quiet machine" {
	"$ANALYZE" -q --threshold 200 --baseline "$D/base1.json" --baseline "$D/base2.json" --baseline "$D/base3.json" \
		--baseline "$D/base4.json" --baseline "$D/base5.json" --baseline "$D/base6.json" \
		-o "$D/same.cmp.json" "$D/same.json"
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/same.cmp.json"
	[ "$status" -eq 0 ]
	run jq1 "$D/same.cmp.json" comparison.verdict
	verdict=$output
	echo "A/A: $verdict; interval $(jq -c '.comparison.scopes[0] | [.ci_low_pct, .ci_high_pct]' "$D/same.cmp.json") %, runs spread $(jq1 "$D/same.cmp.json" comparison.runs_spread_pct) %"
	quiet_machine same
	[ "$verdict" = unchanged ]
}
