#!/usr/bin/env bats
# iscope-analyze --baseline / --history / --fail-on-regression from the
# command line, on synthetic findings made from a real one (synth.py:
# iterations with seeded noise, a planted op, torch threads).  The
# expectations follow from what was planted: +10 % with an added op of
# 10 ms is regressed with that op first; the same distribution is not.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	export SYNTH="$BATS_TEST_DIRNAME/synth.py"
	"$ISC_BUILD/tests/test_analyze" --write basic "$D/basic.istl"
	"$ANALYZE" "$D/basic.istl" >"$D/basic.json"
	for i in 1 2 3; do
		"$PY" "$SYNTH" "$D/basic.json" "$D/b$i.json" --seed "$i" --op aten::mm:60
	done
	"$PY" "$SYNTH" "$D/basic.json" "$D/same.json" --seed 9 --op aten::mm:60
	"$PY" "$SYNTH" "$D/basic.json" "$D/slow.json" --seed 10 --ms 110 --op aten::mm:60 --op time.sleep:10
	"$PY" "$SYNTH" "$D/basic.json" "$D/fast.json" --seed 11 --ms 85 --op aten::mm:45
	"$PY" "$SYNTH" "$D/basic.json" "$D/threads.json" --seed 12 --op aten::mm:60 --threads 4
	"$PY" "$SYNTH" "$D/basic.json" --series "$D/flat" --runs 40 --seed 5 --outlier-at 20 --outlier-pct 40
	"$PY" "$SYNTH" "$D/basic.json" --series "$D/step" --runs 40 --seed 6 --step-at 25 --step-pct 15 \
		--outlier-at 10 --outlier-pct 40
	"$PY" "$SYNTH" "$D/basic.json" --series "$D/recover" --runs 50 --seed 7 --step-at 20 --step-pct 15 --recover-at 35
}

jq1() {
	"$PY" -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

B3=(--baseline "$BATS_FILE_TMPDIR/b1.json" --baseline "$BATS_FILE_TMPDIR/b2.json" --baseline "$BATS_FILE_TMPDIR/b3.json")

@test "--help lists --baseline, --history, --threshold, --fail-on-regression" {
	run --separate-stderr "$ANALYZE" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--baseline=FILE"* ]]
	[[ "$output" == *"--history"* ]]
	[[ "$output" == *"--threshold=PCT"* ]]
	[[ "$output" == *"--fail-on-regression"* ]]
}

@test "same distribution against 3 baselines: unchanged, exit 0 even with --fail-on-regression, schema-valid" {
	run --separate-stderr "$ANALYZE" "${B3[@]}" --fail-on-regression -o "$D/out.json" "$D/same.json"
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/out.json" comparison.verdict)" = unchanged ]
	[ "$(jq1 "$D/out.json" comparison.baselines)" = 3 ]
	[ "$(jq1 "$D/out.json" comparison.scopes.0.base_samples)" = 90 ]
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/out.json"
	[ "$status" -eq 0 ]
}

@test "10 % slower with an added op: regressed, exit 3, the op ranked first as appeared" {
	run --separate-stderr "$ANALYZE" "${B3[@]}" --fail-on-regression -o "$D/slow_out.json" "$D/slow.json"
	[ "$status" -eq 3 ]
	[ "$(jq1 "$D/slow_out.json" comparison.verdict)" = regressed ]
	[ "$(jq1 "$D/slow_out.json" comparison.contributors.0.name)" = time.sleep ]
	[ "$(jq1 "$D/slow_out.json" comparison.contributors.0.change)" = appeared ]
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/slow_out.json"
	[ "$status" -eq 0 ]
}

@test "regressed without --fail-on-regression exits 0; a 20 % threshold makes it unchanged" {
	run --separate-stderr "$ANALYZE" "${B3[@]}" -o "$D/o1.json" "$D/slow.json"
	[ "$status" -eq 0 ]
	run --separate-stderr "$ANALYZE" "${B3[@]}" --threshold=20 --fail-on-regression -o "$D/o2.json" "$D/slow.json"
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/o2.json" comparison.verdict)" = unchanged ]
	[ "$(jq1 "$D/o2.json" comparison.threshold_pct)" = 20 ]
}

@test "15 % faster: improved" {
	run --separate-stderr "$ANALYZE" "${B3[@]}" -o "$D/o3.json" "$D/fast.json"
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/o3.json" comparison.verdict)" = improved ]
}

@test "torch threads 1 -> 4 is listed as an environment difference" {
	run --separate-stderr "$ANALYZE" --baseline "$D/b1.json" -o "$D/o4.json" "$D/threads.json"
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/o4.json" comparison.environment.0.key)" = "torch threads" ]
	[ "$(jq1 "$D/o4.json" comparison.environment.0.base)" = 1 ]
	[ "$(jq1 "$D/o4.json" comparison.environment.0.current)" = 4 ]
}

@test "findings from a pipe compare like a file" {
	"$ANALYZE" "${B3[@]}" "$D/slow.json" >"$D/file.json"
	"$ANALYZE" "${B3[@]}" <"$D/slow.json" >"$D/pipe.json"
	cmp "$D/file.json" "$D/pipe.json"
}

@test "bad baselines and bad options: exit 1 or 2 with one clear line" {
	run --separate-stderr "$ANALYZE" --baseline "$D/nope.json" "$D/same.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "iscope-analyze: $D/nope.json: No such file or directory" ]]
	run --separate-stderr "$ANALYZE" --baseline "$D/basic.istl" "$D/same.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"basic.istl: not valid JSON (findings expected)" ]]
	echo '{"a": 1}' >"$D/notfindings.json"
	run --separate-stderr "$ANALYZE" --baseline "$D/notfindings.json" "$D/same.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"not a findings document"* ]]
	run --separate-stderr "$ANALYZE" --baseline "$D/b1.json" --threshold=abc "$D/same.json"
	[ "$status" -eq 2 ]
	run --separate-stderr "$ANALYZE" --history --baseline "$D/b1.json" "$D/same.json"
	[ "$status" -eq 2 ]
	run --separate-stderr "$ANALYZE" --history
	[ "$status" -eq 2 ]
}

@test "history: a +15 % step at run 25 is found there; the 40 % outlier at run 10 is not a change point" {
	run --separate-stderr "$ANALYZE" --history --fail-on-regression -o "$D/h.json" "$D"/step/run-*.json
	[ "$status" -eq 3 ]
	[ "$(jq1 "$D/h.json" history.metrics.0.metric)" = "iteration p50" ]
	[ "$(jq1 "$D/h.json" history.metrics.0.change_points.0.run)" = 25 ]
	[ "$(jq1 "$D/h.json" history.metrics.0.change_points.0.direction)" = regressed ]
	[ "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["history"]["metrics"][0]["change_points"]))' "$D/h.json")" = 1 ]
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/h.json"
	[ "$status" -eq 0 ]
}

@test "history: +15 % at run 20, back at run 35: two change points, the newest an improvement, so no failure" {
	run --separate-stderr "$ANALYZE" --history --fail-on-regression -o "$D/rc.json" "$D"/recover/run-*.json
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/rc.json" history.metrics.0.metric)" = "iteration p50" ]
	[ "$(jq1 "$D/rc.json" history.metrics.0.change_points.0.run)" = 20 ]
	[ "$(jq1 "$D/rc.json" history.metrics.0.change_points.0.direction)" = regressed ]
	[ "$(jq1 "$D/rc.json" history.metrics.0.change_points.1.run)" = 35 ]
	[ "$(jq1 "$D/rc.json" history.metrics.0.change_points.1.direction)" = improved ]
	[ "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["history"]["metrics"][0]["change_points"]))' "$D/rc.json")" = 2 ]
}

@test "history: a flat noisy series with one outlier has no change point" {
	run --separate-stderr "$ANALYZE" --history --fail-on-regression -o "$D/f.json" "$D"/flat/run-*.json
	[ "$status" -eq 0 ]
	run "$PY" -c 'import json,sys; print(sum(len(m["change_points"]) for m in json.load(open(sys.argv[1]))["history"]["metrics"]))' "$D/f.json"
	[ "$output" = 0 ]
}

@test "iscope-report: the comparison comes first (Markdown), with the contributors table" {
	"$ANALYZE" "${B3[@]}" -o "$D/r.json" "$D/slow.json"
	run --separate-stderr "$REPORT" "$D/r.json"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "## Comparison with 3 baseline runs" ]
	[[ "${lines[2]}" == "**Regressed**: step median "* ]]
	[[ "$output" == *"### What changed, per iteration"* ]]
	[[ "$output" == *"| time.sleep (torch) — appeared | op (cpu) | +10.0 ms |"* ]]
	# the comparison precedes the run's own verdict
	before=${output%%Verdict:*}
	[[ "$before" == *"## Comparison"* ]]
}

@test "iscope-report: the interval is called 95 % whatever alpha; one baseline states the spread it assumed" {
	# the run-level interval is 95 % (iscope-analyze(1), COMPARISON); alpha (0.01) is the U test's
	"$ANALYZE" "${B3[@]}" -o "$D/r95.json" "$D/slow.json"
	lo=$(printf '%+.1f' "$(jq1 "$D/r95.json" comparison.scopes.0.ci_low_pct)")
	hi=$(printf '%+.1f' "$(jq1 "$D/r95.json" comparison.scopes.0.ci_high_pct)")
	run --separate-stderr "$REPORT" "$D/r95.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *", 95 % interval $lo … $hi %"* ]]
	# one baseline: 25 % assumed between identical runs (comparison.assumed_runs_spread_pct), not "only the iterations"
	"$ANALYZE" --baseline "$D/b1.json" -o "$D/r1.json" "$D/slow.json"
	[ "$(jq1 "$D/r1.json" comparison.assumed_runs_spread_pct)" = 25 ]
	run --separate-stderr "$REPORT" "$D/r1.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"One baseline run: run-to-run variation is not known, so a spread of 25 % between identical runs was assumed"* ]]
}

@test "iscope-report: HTML has the before/after and contributors charts; terminal says it in one line" {
	"$ANALYZE" "${B3[@]}" -o "$D/r.json" "$D/slow.json"
	run --separate-stderr "$REPORT" -o "$D/r.html" "$D/r.json"
	[ "$status" -eq 0 ]
	grep -q "Iteration latency quantiles: baseline (grey) and this run (blue)" "$D/r.html"
	grep -q "Contributors to the change (red: slower, green: faster)" "$D/r.html"
	run on_tty "$REPORT" "$D/r.json"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Compared with 3 baselines: "*"REGRESSED"*", step median +"*"first: time.sleep +10.0 ms/iter"* ]]
}

@test "iscope-report: a history shows its change points" {
	"$ANALYZE" --history -o "$D/h2.json" "$D"/step/run-*.json
	run --separate-stderr "$REPORT" "$D/h2.json"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "## History over 40 runs" ]
	[[ "$output" == *"| iteration p50 | 25 | "*"run-0025.json | "*"(regressed) |"* ]]
}

@test "history of 6 runs: not tested, and the report and the terminal say so instead of 'no change point'" {
	run --separate-stderr "$ANALYZE" --history -o "$D/h6.json" "$D"/step/run-000[0-5].json
	[ "$status" -eq 0 ]
	[ "$(jq1 "$D/h6.json" history.tested)" = false ]
	run --separate-stderr "$REPORT" "$D/h6.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Not tested: a change point needs at least 8 runs of a metric"* ]]
	[[ "$output" != *"No change point"* ]]
	run script -qec "$REPORT $D/h6.json" /dev/null
	[[ "$output" == *"History of 6 runs: not tested (a change point needs 8 runs)"* ]]
}

@test "inferscope compare BASE NEW: report written, exit 3 on a regression, 0 otherwise" {
	cd "$D"
	# three baselines: two differing by their sampling alone leave one degree
	# of freedom for how much runs differ, too little to call +10 % at alpha 0.01
	run --separate-stderr "$ISC_BUILD/tools/inferscope/inferscope" compare --report c.md b1.json b2.json b3.json slow.json
	[ "$status" -eq 3 ]
	grep -q "^\*\*Regressed\*\*" c.md
	run --separate-stderr "$ISC_BUILD/tools/inferscope/inferscope" compare --report c2.md b1.json same.json
	[ "$status" -eq 0 ]
	run --separate-stderr "$ISC_BUILD/tools/inferscope/inferscope" compare b1.json
	[ "$status" -eq 2 ]
}

@test "recorded settings: OMP_NUM_THREADS 4 against unset is listed as env.OMP_NUM_THREADS" {
	OMP_NUM_THREADS=4 "$RECORD" -q -o "$D/e1.isc" -- "$PY" -c pass
	env -u OMP_NUM_THREADS "$RECORD" -q -o "$D/e2.isc" -- "$PY" -c pass
	"$ANALYZE" -q -o "$D/e1.json" "$D/e1.isc"
	run "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"]["meta"]["env.OMP_NUM_THREADS"])' "$D/e1.json"
	[ "$output" = 4 ]
	"$ANALYZE" -q --baseline "$D/e1.json" -o "$D/e2.json" "$D/e2.isc"
	run "$PY" -c 'import json,sys
e = [x for x in json.load(open(sys.argv[1]))["comparison"]["environment"] if x["key"] == "env.OMP_NUM_THREADS"]
print("%s>%s" % (e[0]["base"], e[0]["current"]))' "$D/e2.json"
	[ "$output" = "4>(unset)" ]
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/e1.json" "$D/e2.json"
	[ "$status" -eq 0 ]
}

@test "Python and torch versions from the agent's marks are listed when they differ" {
	"$PY" - "$D/b1.json" "$D/v_old.json" 11301 51053296 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["marks"] += [{"name": "torch.version", "count": 1, "sum": int(sys.argv[3])},
               {"name": "python.hexversion", "count": 1, "sum": int(sys.argv[4])}]
json.dump(d, open(sys.argv[2], "w"))
PY
	"$PY" - "$D/same.json" "$D/v_new.json" 20100 51118576 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["marks"] += [{"name": "torch.version", "count": 1, "sum": int(sys.argv[3])},
               {"name": "python.hexversion", "count": 1, "sum": int(sys.argv[4])}]
json.dump(d, open(sys.argv[2], "w"))
PY
	"$ANALYZE" -q --baseline "$D/v_old.json" -o "$D/v.json" "$D/v_new.json"
	run "$PY" -c 'import json,sys
e = json.load(open(sys.argv[1]))["comparison"]["environment"]
print("; ".join("%s %s>%s" % (x["key"], x["base"], x["current"]) for x in e))' "$D/v.json"
	[ "$output" = "Python version 3.11.2>3.12.1; torch version 1.13.1>2.1.0" ]
}
