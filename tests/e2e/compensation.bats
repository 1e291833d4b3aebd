#!/usr/bin/env bats
# Overhead compensation of the exact Python mode, and drops per thread.
#
# The agent measures what recording one event costs (CALIBRATION record);
# iscope-analyze removes that cost from self times, totals and iteration
# latencies.  The workload (workloads/known_calls.py) makes a known number
# of calls per iteration and times its iterations itself, so the latency
# of an unrecorded run is known.
#
# Tolerance, stated from measurements on this 2-core shared machine
# before the test was written (2026-11-25, load average 11-13): the
# fastest iteration is compared (medians moved by 4x between runs under
# that load; minima by 3 %).  The calibrated cost was 11 % below the cost
# seen in the workload's own thread CPU time (57 vs 64 ns per event on
# 3.11), and three runs of 40 iterations of 20000 calls removed 89 %, 94 %
# and 100 % of what recording added to the fastest iteration.  So: at
# least 75 % and at most 110 % of the added latency must be removed.
# Iterations of 20000 calls (3.3 ms recorded) were then preempted too
# often under that load for their minimum to mean anything (one 3.12 run:
# the fastest of 40 took 7.6 ms); with 200 iterations of 5000 calls
# (0.8 ms) six runs on 3.11 and 3.12 removed 96-101 %, and the band stays.
# The machine assumption (probe, below) was added on 2026-11-26.

setup_file() {
	# exact Python mode: these tests check the exact mode's calibration and drops
	export INFERSCOPE_PYTHON_MODE=exact
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	ISC_PY=$("$ROOT/scripts/find-python.sh" 2>/dev/null) || ISC_PY=/usr/bin/python3
	export ROOT ISC_BUILD ISC_PY
	export WL=$ROOT/tests/e2e/workloads
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	export REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
	export MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	export AGENT=$ISC_BUILD/tools/iscope-record/python
}

# Machine assumption: the machine runs Python at one speed, so that the
# calibration (a few ms at start-up), the plain run and the recorded run
# are comparable.  On this VM it does not always: the same empty-call loop
# runs at about 28 ns a call for tens of ms to seconds, then at 50 ns
# (pinned to one CPU or not; the cause is outside the VM; 2026-11-26), and a
# calibration taken in the slow state removed 154-165 % of what recording
# added on 3.11 (2 of 5 runs; 93-96 % in the others).  probe PY: the
# fastest round of the calibration's own loop (5000 calls of an empty
# function, known_calls.py --probe) over 0.4 s, in ns a call.
probe() {
	PYTHONPATH=$AGENT "$1" "$WL/known_calls.py" --probe 0.4
}

# check3 PY: check PY up to three times while the machine assumption does
# not hold (a speed state lasts up to seconds here); a failed check is
# never retried.  Prints what the last check printed.
check3() {
	local k out st
	for k in 1 2 3; do
		st=0
		out=$(check "$1") || st=$?
		[[ $st -eq 0 && $out == "MACHINE ASSUMPTION NOT MET"* ]] || break
	done
	echo "$out"
	return "$st"
}

# check PY: records known_calls.py with PY and compares with a plain run.
# Prints one line per failed check; nothing when all hold; exactly one
# line, starting "MACHINE ASSUMPTION NOT MET", when every check that does
# not depend on the machine's speed held but the calibration or the plain
# run ran more than 15 % slower than the machine's fastest speed (probe,
# before and after): then the three checks of the band are not judged.
# A step that fails prints FAIL and returns 1 (bats' run turns errexit off).
check() {
	local py=$1 t=$BATS_TEST_TMPDIR p1 p2
	rm -f "$t/plain.json" "$t/rec.json" "$t/k.isc" "$t/c.json" "$t/r.json"
	p1=$(probe "$py") || { echo "FAIL: probe"; return 1; }
	PYTHONPATH=$AGENT "$py" "$WL/known_calls.py" 200 5000 "$t/plain.json" probe || { echo "FAIL: plain run"; return 1; }
	"$REC" -q -o "$t/k.isc" -- "$py" "$WL/known_calls.py" 200 5000 "$t/rec.json" || { echo "FAIL: recording"; return 1; }
	p2=$(probe "$py") || { echo "FAIL: probe"; return 1; }
	"$ANALYZE" -q -o "$t/c.json" "$t/k.isc" || { echo "FAIL: analyze"; return 1; }
	"$ANALYZE" -q --no-compensation -o "$t/r.json" "$t/k.isc" || { echo "FAIL: analyze --no-compensation"; return 1; }
	/usr/bin/python3 - "$t" "$py" "$p1" "$p2" <<'PY'
import json, subprocess, sys
t, py = sys.argv[1], sys.argv[2]
fastest = min(float(sys.argv[3]), float(sys.argv[4]))
load = lambda n: json.load(open("%s/%s" % (t, n)))
plain, rec, c, r = load("plain.json"), load("rec.json"), load("c.json"), load("r.json")
ver = tuple(int(x) for x in subprocess.check_output([py, "-c", "import sys; print(*sys.version_info[:2])"]).split())
mech = "sys.monitoring" if ver >= (3, 12) else "setprofile"
rc = c["recording"]
# the agent calibrates at start and again at exit; the analyzer uses the
# lower cost (iscope-analyze(1)), marked "used"
cals = rc["calibrations"]
used = [x for x in cals if x["used"]]
cal = used[0] if used else cals[0]
L0 = plain["min_ns"]
spans = [e - b for b, e in r["iterations"]["spans"]]  # recorded times, in order
Lr = r["iterations"]["latency_ns"]["min"]
est, le = c["iterations"]["latency_ns_estimated"], c["iterations"]["latency_estimate"]
# the removal, computed here from the calibration's timings (formats/trace.md
# 6.1): per-event cost in ps, times 2 x (calls + 1) events, rounded to ns
ps = (cal["hooked_ns"] - cal["plain_ns"]) * 1000 // cal["events"]
want = (ps * 2 * (5000 + 1) + 500) // 1000
# the estimate is withheld when it would remove more than max_removed_pct
# (50) of the steady iterations (issue 29): 5000 empty calls under a hook
# can come near that on a loaded machine.  Then the band judges the
# calibrated removal (the checks below still hold the document's own
# iteration_overhead_removed_ns to it)
withheld = est is None
Lc = Lr - want if withheld else est["min"]
speeds = {"the calibration": cal["plain_ns"] / cal["calls"], "the plain run": plain["probe_ns_per_call"]}
slow = ["%s at %.1f ns a call" % (k, v) for k, v in speeds.items() if v > 1.15 * fastest]
removed = round(100 * (Lr - Lc) / (Lr - L0)) if Lr > L0 else 0
# the band: what compares the recorded run with the plain one (speed-dependent)
band = [
    (abs(Lc - L0) < abs(Lr - L0), "corrected %d not closer to plain %d than raw %d" % (Lc, L0, Lr)),
    (Lc - L0 <= 0.25 * (Lr - L0), "corrected %d: less than 75 %% of the added %d removed (plain %d)" % (Lc, Lr - L0, L0)),
    (L0 - Lc <= 0.10 * (Lr - L0), "corrected %d: over-corrected: removed %d %% of the added %d (plain %d)" % (Lc, removed, Lr - L0, L0)),
]
checks = [
    (len(cals) == 2 and len({x["pid"] for x in cals}) == 1 and len(used) == 1 and
     cal["per_event_ns"] == min([x["per_event_ns"] for x in cals if x["per_event_ns"] > 0] or [0]),
     "calibrations %r: want the start and the exit one, the lower nonzero used" % cals),
    (rc["python_mode"] == "exact", "python_mode %r" % rc["python_mode"]),
    (rc["mechanism"] == mech and cal["mechanism"] == mech, "mechanism %r, want %r" % (rc["mechanism"], mech)),
    (rc["compensated"] is True, "compensated %r" % rc["compensated"]),
    (r["recording"]["compensated"] is False, "--no-compensation: compensated %r" % r["recording"]["compensated"]),
    (cal["per_event_ns"] > 0, "per_event_ns %r" % cal["per_event_ns"]),
    # the analyzer's iterations are the workload's: each recorded scope lies
    # inside the workload's own perf_counter bracket of the same iteration
    (len(spans) == 200 and all(sp <= wl for sp, wl in zip(spans, rec["latencies_ns"])),
     "%d spans (%d events dropped), want 200, each inside the workload's own: %r, %r" % (
         len(spans), r["summary"]["dropped_events"], spans[:5], rec["latencies_ns"][:5])),
    (Lr == min(spans[1:]), "raw min %d, shortest steady span %d" % (Lr, min(spans[1:]))),
    # the measured latency stays the headline, compensated or not (issue 29)
    (c["iterations"]["latency_ns"] == r["iterations"]["latency_ns"], "compensated headline %r, raw %r" % (
        c["iterations"]["latency_ns"], r["iterations"]["latency_ns"])),
    # the removal is the calibrated cost of the iteration's events (ps rounding: 1 ns)
    (Lr - Lc == want, "removed %d ns, calibration says %d" % (Lr - Lc, want)),
    (le is not None and le["withheld"] == withheld and
     (not withheld or (le["reason"] and (le["removed_pct"] > le["max_removed_pct"] or min(spans[1:]) <= want))),
     "latency_estimate %r with the estimate %r" % (le, est)),
    (rc["overhead_ns"] > 0 and 0 < rc["overhead_pct"] < 100, "overhead %r" % rc),
    # every steady iteration lost the same calibrated amount, but never more
    # than its own span (a latency is never below 0: iscope-analyze(1)); a
    # calibration in a slow spell can cost more than a fast iteration took
    # (CI, 2026-11-28: one span of 1113389 ns against 1281776 calibrated)
    (c["iterations"]["samples"] == len(spans) - 1 and
     rc["iteration_overhead_removed_ns"] == sum(min(sp, want) for sp in spans[1:]),
     "iteration_overhead_removed_ns %d, want the sum over %d steady spans of min(span, %d) = %d" % (
         rc["iteration_overhead_removed_ns"], c["iterations"]["samples"], want, sum(min(sp, want) for sp in spans[1:]))),
    (r["recording"]["iteration_overhead_removed_ns"] == 0, "raw: %r" % r["recording"]["iteration_overhead_removed_ns"]),
]
failed = [why for ok, why in checks if not ok]
if not failed and slow:
    print("MACHINE ASSUMPTION NOT MET: %s, the machine's fastest %.1f (probe): a speed change, not the recording" % (
        ", ".join(slow), fastest))
    sys.exit(0)
for why in failed + ([] if slow else [why for ok, why in band if not ok]):
    print("%s: %s" % (py, why))
PY
}

@test "compensation: the corrected fastest iteration is the unrecorded one (setprofile, $ISC_PY)" {
	run check3 "$ISC_PY"
	echo "$output"
	[ "$status" -eq 0 ]
	if [[ $output == "MACHINE ASSUMPTION NOT MET"* ]]; then
		skip "$output"
	fi
	[ "$output" = "" ]
}

# monitoring VERSION: the check under sys.monitoring on CPython VERSION.
# 3.12 removed 92-100 % in 5 runs (2026-11-26), 96-101 % in 3 (2026-11-27).
# On 3.13 the correction removed 104-114 % in 5 runs on 2026-11-26 (the
# calibration loop's events costing 4-7 % more than the workload's), and
# the 3.13 test skipped that as a KNOWN FAILURE up to 120 %; on 2026-11-27
# it removed 94, 99 and 103 % (and passed 7 runs of the test), so the
# over-correction is no known failure to expect: the band holds for 3.13
# as for 3.12, and a miss fails (issue 28: known failures are expected
# failures, never skips; this one no longer fails).  (Before the agent
# calibrated at exit too, a start-up calibration in the VM's slow spell
# removed 122 % on 3.12 in CI.)
monitoring() {
	local py
	py=$(ls -d /root/.pyenv/versions/$1.*/bin/python3 2>/dev/null | head -n 1)
	[[ -x $py ]] || skip "no CPython $1 under /root/.pyenv"
	run check3 "$py"
	echo "$output"
	[ "$status" -eq 0 ]
	if [[ $output == "MACHINE ASSUMPTION NOT MET"* ]]; then
		skip "$output"
	fi
	[ "$output" = "" ]
}

@test "compensation: the same under sys.monitoring (CPython 3.12)" {
	monitoring 3.12
}

@test "compensation: the same under sys.monitoring (CPython 3.13)" {
	monitoring 3.13
}

@test "compensation: the report says what recording cost and that figures are corrected" {
	t=$BATS_TEST_TMPDIR
	"$REC" -q -o "$t/k.isc" -- "$ISC_PY" "$WL/known_calls.py" 5 2000 "$t/rec.json"
	"$ANALYZE" -q -o "$t/c.json" "$t/k.isc"
	run "$REPORT" "$t/c.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Recording (exact Python mode, setprofile) added about "*" per call ("*" % of traced time"*"); figures corrected ("*" taken out of self times; "*" would come out of the iteration latencies, shown as an estimate beside the measured ones)."* ]]
	# how much longer the traced code ran, from the figures of the findings: before / (before - removed)
	slow=$(jq -r .recording.traced_slowdown "$t/c.json")
	if [ "$(jq -r '.recording.traced_slowdown >= 1.05' "$t/c.json")" = true ]; then
		# rounded as the report's C does, in double (bash's printf rounds a long double: 1.45 gives 1.5, C 1.4)
		slow1=$(awk -v s="$slow" 'BEGIN { printf "%.1f", s }')
		[[ "$output" == *"the traced code ran about ${slow1}x as long as it would without recording, estimated"* ]]
	fi
	"$ANALYZE" -q --no-compensation -o "$t/r.json" "$t/k.isc"
	run "$REPORT" "$t/r.json"
	[[ "$output" == *" per call ("*" % of traced time"*"); figures not corrected (--no-compensation)."* ]]
}

@test "drops per thread: the thread whose ring overflowed, with its count, and a lower evidence quality" {
	t=$BATS_TEST_TMPDIR
	# 64 KiB rings (--trace-size 1M) and 400000 events in one burst
	"$REC" -q --trace-size 1M -o "$t/d.isc" -- "$ISC_PY" "$WL/known_calls.py" 2 200000 "$t/rec.json"
	"$ANALYZE" -q -o "$t/d.json" "$t/d.isc"
	run /usr/bin/python3 - "$t/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
dropped = d["summary"]["dropped_events"]
rows = d["recording"]["threads_with_drops"]
assert dropped > 100000, dropped
assert d["recording"]["dropped_events"] == dropped, (d["recording"]["dropped_events"], dropped)
assert len(rows) == 1, rows
assert rows[0]["dropped_events"] == dropped and rows[0]["name"] == "MainThread", rows
assert rows[0]["dropped_pct"] == round(100 * dropped / (dropped + rows[0]["events"]), 2), rows
# evidence quality goes down with the share of events lost (lib/rules/rules.c)
kept = 1 - dropped / (dropped + d["summary"]["events"])
assert d["verdict"]["evidence_quality"] <= round(kept, 2) + 0.005, (d["verdict"], kept)
print("ok")
PY
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	run "$REPORT" "$t/d.json"
	[[ "$output" == *"Events dropped per thread: MainThread (process "*", thread "*"): "*" of "*" ("*" %)"* ]]
}

@test "compensation: a timeline read from a pipe is corrected as the trace is (the lower calibration, from a first pass)" {
	t=$BATS_TEST_TMPDIR
	"$REC" -q -o "$t/k.isc" -- "$ISC_PY" "$WL/known_calls.py" 20 2000 "$t/rec.json"
	"$ANALYZE" -q -o "$t/a.json" "$t/k.isc"
	set -o pipefail
	"$MERGE" -q "$t/k.isc" | "$ANALYZE" -q -o "$t/b.json"
	# the lower nonzero per-event cost of the records listed
	run jq -r '[.recording.calibrations[].per_event_ns | select(. > 0)] | min' "$t/a.json"
	low=$output
	run jq -r '[.recording.calibrations[] | select(.used) | .per_event_ns] | join(",")' "$t/b.json"
	[ "$output" = "$low" ]
	run jq -r '.recording.calibrations | length' "$t/b.json"
	[ "$output" = 2 ]
	run jq -c '[.recording, .iterations.latency_ns, .cpu.top_functions]' "$t/a.json"
	want=$output
	run jq -c '[.recording, .iterations.latency_ns, .cpu.top_functions]' "$t/b.json"
	[ "$output" = "$want" ]
}

@test "compensation never replaces a measured latency: a loop bounded by 60 ms keeps its 60 ms, the estimate withheld" {
	t=$BATS_TEST_TMPDIR
	# 6 iterations that each poll until 60 ms have passed (the first is the warm-up)
	"$REC" -q -o "$t/d.isc" -- "$ISC_PY" "$WL/deadline_loop.py" 6 60 "$t/rec.json"
	"$ANALYZE" -q -o "$t/d.json" "$t/d.isc"
	run /usr/bin/python3 - "$t/d.json" "$t/rec.json" <<'PY'
import json, statistics, sys
d, rec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
it = d["iterations"]
lat, est = it["latency_ns"], it["latency_estimate"]
print("latency_ns", lat, "estimate", est, "estimated", it["latency_ns_estimated"])
bad = []
# the headline is what was measured: each steady scope lasts until its 60 ms deadline, less the
# microseconds between the workload's clock reading and the scope's begin (0.5 ms allowed)
if it["samples"] != 5:
    bad.append("samples %r, want 5" % it["samples"])
if not 59.5e6 <= lat["min"] <= max(rec["latencies_ns"][1:]):
    bad.append("min %r: not the measured 60 ms (the workload timed %r)" % (lat["min"], rec["latencies_ns"]))
if not lat["p50"] >= 59.5e6:
    bad.append("p50 %r under the 60 ms deadline" % lat["p50"])
# the share removed, from the document's own numbers: what the events cost of the steady iterations' time
share = round(10000 * d["recording"]["iteration_overhead_removed_ns"] / (it["samples"] * lat["mean"])) / 100
if abs(est["removed_pct"] - share) > 0.02 or est["max_removed_pct"] != 50:
    bad.append("removed_pct %r, computed %r, max %r" % (est["removed_pct"], share, est["max_removed_pct"]))
if share > 50 and not est["withheld"]:
    bad.append("%.1f %% removed and not withheld" % share)
if (it["latency_ns_estimated"] is None) != est["withheld"]:
    bad.append("withheld %r, estimated %r" % (est["withheld"], it["latency_ns_estimated"]))
# the planted truth: each steady iteration lasted its 60 ms while the work done in it, the polls the
# workload counted, varied with the machine's speed: the time is not made of the events, whatever
# share of it they would remove (43 % on one CI machine, 67-100 % on the test VM).  The analyzer's rule
# (iscope-analyze(1)): the median absolute deviation of the time removed from each iteration, which is
# proportional to its polls, at least 0.02 % of the median iteration and over 4 times that of the
# measured times.  Premises, from the workload's own numbers: the deadline held (the latencies' median
# deviation at most 0.01 % of their median: a thread that gets the CPU back late after its deadline
# overshoots it, 0.9 ms in one CI run) and the work varied (the polls' relative median deviation times
# the share removed at least 0.1 %: 0.2-1.3 % seen).
def rmad(x):
    m = statistics.median(x)
    return statistics.median(abs(v - m) for v in x) / m
polls, lats = rec["polls"][1:], rec["latencies_ns"][1:]
vary = rmad(polls) * share / 100
print("polls %r: %.3f %% (x %.1f %% removed: %.3f %%), latencies %.4f %%" % (polls, 100 * rmad(polls), share, 100 * vary, 100 * rmad(lats)))
if rmad(lats) > 0.0001 or vary < 0.001:
    print("\n".join(bad) or "MACHINE ASSUMPTION NOT MET: latencies' median deviation %.4f %% (at most 0.01), polls' %.3f %% x %.1f %% removed = %.3f %% (at least 0.1)" % (
        100 * rmad(lats), 100 * rmad(polls), share, 100 * vary))
    sys.exit(0)
if not (est["withheld"] is True and "deadline" in (est["reason"] or "") and "varied" in (est["reason"] or "")):
    bad.append("%.1f %% removed: want withheld with a reason naming the deadline and the work that varied, got %r %r" % (share, est["withheld"], est["reason"]))
print("\n".join(bad) or "ok")
PY
	echo "$output"
	[ "$status" -eq 0 ]
	if [[ ${lines[-1]} == "MACHINE ASSUMPTION NOT MET"* ]]; then
		skip "${lines[-1]}"
	fi
	[ "${lines[-1]}" = ok ]
	run "$REPORT" "$t/d.json"
	[[ "$output" == *"estimate without the recording cost withheld"* ]]
}

@test "compensation: a loop of fixed work keeps the measured latency as the headline and shows the estimate beside it" {
	t=$BATS_TEST_TMPDIR
	"$REC" -q -o "$t/k.isc" -- "$ISC_PY" "$WL/known_calls.py" 20 2000 "$t/rec.json"
	"$ANALYZE" -q -o "$t/c.json" "$t/k.isc"
	"$ANALYZE" -q --no-compensation -o "$t/r.json" "$t/k.isc"
	# the headline is the raw one; the estimate is below it, by the events' calibrated cost
	run jq -c '.iterations.latency_ns' "$t/r.json"
	raw=$output
	run jq -c '.iterations.latency_ns' "$t/c.json"
	[ "$output" = "$raw" ]
	jq -e '.iterations.latency_estimate == null and .iterations.latency_ns_estimated == null' "$t/r.json"
	# This loop is all calls: recording about doubles it (2 events of ~76 ns
	# per call of ~60 ns), so the estimate may be withheld (over 50 %
	# removed); identical runs gave 28-62 % removed on 2026-11-28, which
	# issue 29 item 3 has to explain.  Either way the measured latency is
	# the headline (above), and the estimate is the one the rule says.
	run jq -r '.iterations.latency_estimate | if .withheld then "withheld \(.removed_pct)" else "kept \(.removed_pct)" end' "$t/c.json"
	echo "estimate: $output"
	if [[ $output == withheld* ]]; then
		jq -e '.iterations.latency_estimate.removed_pct > 50 and .iterations.latency_ns_estimated == null' "$t/c.json"
	else
		jq -e '.iterations.latency_estimate.removed_pct <= 50' "$t/c.json"
		jq -e '.iterations.latency_ns_estimated.min < .iterations.latency_ns.min' "$t/c.json"
		jq -e '.iterations.latency_ns_estimated.min == .iterations.latency_ns.min - .recording.iteration_overhead_removed_ns / .iterations.samples' "$t/c.json"
	fi
}
