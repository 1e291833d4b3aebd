#!/usr/bin/env bats
# iscope-analyze and iscope-report from the command line: options, exit
# status, messages, file vs pipe, damaged input, schema, escaping.
#
# Inputs are synthetic timelines written by the unit test binary
# (test_analyze --write basic|hostile|truncated FILE).  Paths come from the
# environment (meson sets ISC_BUILD), defaulting to ./build; each can be
# overridden:
#   ISCOPE_ANALYZE, ISCOPE_REPORT, ISCOPE_MERGE, ISCOPE_ANALYZE_FIXTURE

bats_require_minimum_version 1.5.0

setup_file() {
	local root="$BATS_TEST_DIRNAME/../.."
	local build="${ISC_BUILD:-$root/build}"
	export ANALYZE="${ISCOPE_ANALYZE:-$build/tools/iscope-analyze/iscope-analyze}"
	export REPORT="${ISCOPE_REPORT:-$build/tools/iscope-report/iscope-report}"
	export MERGE="${ISCOPE_MERGE:-$build/tools/iscope-merge/iscope-merge}"
	export FIXTURE="${ISCOPE_ANALYZE_FIXTURE:-$build/tests/test_analyze}"
	export SCHEMA="$root/formats/findings.schema.json"
	export D="$BATS_FILE_TMPDIR"
	for kind in basic hostile truncated; do
		"$FIXTURE" --write "$kind" "$D/$kind.istl"
	done
	export VALIDATE="$root/tests/lib/validate_findings.py"
}

# Runs python3 on a findings file: prints the value at a dotted path.
jget() {
	python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

@test "iscope-analyze --help prints the option table to stdout" {
	run --separate-stderr "$ANALYZE" --help
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "$output" == *"Usage: iscope-analyze"* ]]
	for opt in --output --pretty --quiet --log-level --top --help --version; do
		[[ "$output" == *"$opt"* ]]
	done
}

@test "iscope-analyze --version" {
	run --separate-stderr "$ANALYZE" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^iscope-analyze\ [0-9]+\.[0-9]+ ]]
}

@test "iscope-analyze: unknown option is a usage error (exit 2)" {
	run --separate-stderr "$ANALYZE" --bogus "$D/basic.istl"
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == "iscope-analyze: "*"--bogus"* ]]
	[[ "${stderr_lines[1]}" == "Try 'iscope-analyze --help'"* ]]
}

@test "iscope-analyze: two inputs and a bad --top are usage errors" {
	run --separate-stderr "$ANALYZE" "$D/basic.istl" "$D/basic.istl"
	[ "$status" -eq 2 ]
	run --separate-stderr "$ANALYZE" --top=0 "$D/basic.istl"
	[ "$status" -eq 2 ]
}

@test "iscope-analyze: file, stdin pipe, '-' and -o give the same JSON" {
	"$ANALYZE" "$D/basic.istl" >"$D/a.json"
	cat "$D/basic.istl" | "$ANALYZE" >"$D/b.json"
	"$ANALYZE" - <"$D/basic.istl" >"$D/c.json"
	"$ANALYZE" -o "$D/d.json" "$D/basic.istl"
	cmp "$D/a.json" "$D/b.json"
	cmp "$D/a.json" "$D/c.json"
	cmp "$D/a.json" "$D/d.json"
	[ "$(jget "$D/a.json" iterations.count)" = 20 ]
	[ "$(jget "$D/a.json" cpu.top_functions.0.name)" = crunch ]
}

@test "iscope-analyze --pretty is the same document" {
	"$ANALYZE" --pretty "$D/basic.istl" >"$D/p.json"
	"$ANALYZE" "$D/basic.istl" >"$D/u.json"
	[ "$(wc -l <"$D/p.json")" -gt 50 ]
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))' "$D/p.json" "$D/u.json"
}

@test "iscope-analyze: output validates against formats/findings.schema.json" {
	"$ANALYZE" "$D/basic.istl" >"$D/s1.json"
	"$ANALYZE" "$D/hostile.istl" >"$D/s2.json"
	run "$ANALYZE" -o "$D/s3.json" "$D/truncated.istl"
	[ "$status" -eq 1 ]
	run "$VALIDATE" "$D/s1.json" "$D/s2.json" "$D/s3.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the schema validator catches a broken document: types, required, bounds, unknown fields" {
	echo '{"schema_version": 1, "summary": {"wall_ns": -1}}' >"$D/bad.json"
	run "$VALIDATE" "$D/bad.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'tool' is a required property"* ]]
	[[ "$output" == *".summary.wall_ns: -1 is less than the minimum of 0"* ]]
	[[ "$output" == *".schema_version: 2 was expected"* ]]
	# a valid document plus one field the schema does not know; a warnings list too long
	python3 - "$D/s1.json" "$D/extra.json" "$D/long.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["summary"]["surprise"] = 1
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
w = {"pid": 0, "code": 1, "kind": "other", "message": "m", "count": 1}
d["summary"]["warnings"] = [w] * 17
json.dump(d, open(sys.argv[3], "w"))
PY
	run "$VALIDATE" "$D/extra.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *".summary: Additional properties are not allowed ('surprise' was unexpected)"* ]]
	run "$VALIDATE" "$D/long.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *".summary.warnings: "*"is too long"* ]]
}

@test "the schema validator refuses a schema whose objects take any field" {
	python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
del s["properties"]["tool"]["additionalProperties"]
json.dump(s, open(sys.argv[2], "w"))' "$SCHEMA" "$D/loose.schema.json"
	run "$VALIDATE" --schema "$D/loose.schema.json" "$D/s1.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"#/properties/tool lists properties but not additionalProperties"* ]]
}

@test "iscope-analyze: not a timeline -> one line, exit 1, no JSON" {
	run --separate-stderr bash -c "echo 'hello world' | '$ANALYZE'"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-analyze: stdin: "* ]]
}

@test "iscope-analyze: missing file -> exit 1 with the file name" {
	run --separate-stderr "$ANALYZE" "$D/nope.istl"
	[ "$status" -eq 1 ]
	[ "$stderr" = "iscope-analyze: $D/nope.istl: No such file or directory" ]
}

@test "iscope-analyze: truncated timeline -> JSON of the prefix, damaged=true, exit 1" {
	run --separate-stderr "$ANALYZE" "$D/truncated.istl"
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-analyze: $D/truncated.istl: "*"(analyzed "*" events)" ]]
	echo "$output" >"$D/t.json"
	[ "$(jget "$D/t.json" summary.damaged)" = true ]
	[ "$(jget "$D/t.json" iterations.count)" = 20 ]
	# the same through a pipe
	run --separate-stderr bash -c "cat '$D/truncated.istl' | '$ANALYZE' | cmp - '$D/t.json'"
	[ "$status" -eq 0 ]
}

@test "iscope-analyze: a truncated trace is damaged=true, read directly or merged first" {
	bad=$BATS_TEST_DIRNAME/../data/bad/truncated.isc
	run --separate-stderr "$ANALYZE" "$bad"
	[ "$status" -eq 1 ]
	echo "$output" >"$D/tt.json"
	[ "$(jget "$D/tt.json" summary.damaged)" = true ]
	[ "$(jget "$D/tt.json" summary.lost_frames)" = 1 ]
	# merge keeps the prefix in a complete timeline; the damage travels as lost_frames
	run --separate-stderr bash -c "'$MERGE' '$bad' | '$ANALYZE'"
	echo "$output" >"$D/tm.json"
	[ "$(jget "$D/tm.json" summary.damaged)" = true ]
	[ "$(jget "$D/tm.json" summary.complete)" = true ]
}

@test "iscope-analyze: a write error is reported (exit 1)" {
	[ -w /dev/full ] || skip "no /dev/full"
	run --separate-stderr "$ANALYZE" -o /dev/full "$D/basic.istl"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "iscope-analyze: /dev/full: "* ]]
}

@test "iscope-report --help, --version, bad option, bad format" {
	run --separate-stderr "$REPORT" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: iscope-report"* ]]
	[[ "$output" == *"--format"* ]]
	run --separate-stderr "$REPORT" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^iscope-report\ [0-9]+\.[0-9]+ ]]
	run --separate-stderr "$REPORT" --bogus
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[1]}" == "Try 'iscope-report --help'"* ]]
	run --separate-stderr "$REPORT" -f pdf /dev/null
	[ "$status" -eq 2 ]
}

@test "iscope-report: not JSON -> 'not findings JSON', exit 1" {
	printf 'not json {' >"$D/x.txt"
	run --separate-stderr "$REPORT" "$D/x.txt"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ "$stderr" == "iscope-report: $D/x.txt: not findings JSON: "* ]]
	run --separate-stderr bash -c "echo '[1, 2]' | '$REPORT'"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "iscope-report: stdin: not findings JSON: "* ]]
	run --separate-stderr "$REPORT" "$D/basic.istl"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"not findings JSON"* ]]
}

@test "iscope-report: JSON that is not findings is refused, no report written" {
	run --separate-stderr bash -c "echo '{\"a\": 1}' | '$REPORT' -o '$D/na.md'"
	[ "$status" -eq 1 ]
	[ "$stderr" = 'iscope-report: stdin: not a findings document (no schema_version and tool.name "iscope-analyze")' ]
	[ ! -e "$D/na.md" ]
}

@test "iscope-report: missing fields are tolerated" {
	run --separate-stderr bash -c "echo '{\"schema_version\": 2, \"tool\": {\"name\": \"iscope-analyze\"}}' | '$REPORT'"
	[ "$status" -eq 0 ]
	for s in "End-to-end latency" CPU GPU Memory Findings Suggestions Environment; do
		[[ "$output" == *"## $s"* ]]
	done
}

@test "pipe analyze | report: headline names the share and the hot function with file:line" {
	set -o pipefail
	"$ANALYZE" "$D/basic.istl" | "$REPORT" >"$D/r.md"
	[ "$(sed -n 1p "$D/r.md")" = "# InferScope report" ]
	line3="$(sed -n 3p "$D/r.md")"
	# the fixture's 20 steps of crunch (19 steady) hold all the work after the first: judged on them
	[[ "$line3" =~ ^\*\*Inside\ the\ iterations:\ [0-9]+\ %\ of\ traced\ CPU\ time ]]
	[[ "$line3" == *'`crunch` (hot_function.py:12)'* ]]
	# sections in order
	got="$(grep '^## ' "$D/r.md" | tr '\n' '/')"
	[ "$got" = "## End-to-end latency/## CPU/## GPU/## Memory/## Findings/## Suggestions/## Environment/" ]
	# file and pipe forms agree
	"$ANALYZE" -o "$D/f.json" "$D/basic.istl"
	"$REPORT" -o "$D/r2.md" "$D/f.json"
	cmp "$D/r.md" "$D/r2.md"
}

@test "iscope-report: hostile workload names are escaped (Markdown and HTML)" {
	"$ANALYZE" "$D/hostile.istl" >"$D/h.json"
	[ "$(jget "$D/h.json" cpu.top_functions.1.name)" = '<script>alert(1)</script>|*x*' ]
	"$REPORT" "$D/h.json" >"$D/h.md"
	run ! grep -q '<script>' "$D/h.md"
	grep -qF '\<script\>alert(1)\</script\>\|\*x\*' "$D/h.md"
	run ! grep -qF '[link](' "$D/h.md"
	run ! grep -q $'\x01' "$D/h.md"
	# every row of the functions table has the header's column count
	python3 - "$D/h.md" <<'EOF'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
start = lines.index("| # | Function | Kind | Location | Calls | Self | Total | Self % |")
cols = lambda l: len(re.findall(r"(?<!\\)\|", l))
for l in lines[start:]:
    if not l.startswith("|"): break
    assert cols(l) == 9, l
EOF
	"$REPORT" -o "$D/h.html" "$D/h.json"
	head -c 15 "$D/h.html" | grep -q '<!DOCTYPE html>'
	run ! grep -q '<script' "$D/h.html"
	grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$D/h.html"
	run ! grep -qE '(src|href)=' "$D/h.html"
}

@test "iscope-report -f html writes the same page as -o *.html" {
	"$ANALYZE" "$D/basic.istl" >"$D/b.json"
	"$REPORT" -f html "$D/b.json" >"$D/1.html"
	"$REPORT" -o "$D/2.html" "$D/b.json"
	cmp "$D/1.html" "$D/2.html"
	grep -q '<h2>End-to-end latency</h2>' "$D/1.html"
}

# ---- charts, findings of schema 2, terminal summary (tests/data/report) ----
REPORT_DATA="$BATS_TEST_DIRNAME/../data/report"

@test "iscope-report -f html: seven well-formed SVG charts from the fixture" {
	"$REPORT" -f html "$REPORT_DATA/full.json" >"$D/full.html"
	run python3 "$BATS_TEST_DIRNAME/svg_check.py" "$D/full.html" 7
	echo "$output"
	[ "$status" -eq 0 ]
	for t in "Iteration latency distribution (steady state)" "Where the traced CPU time goes" \
		"CPU use over time" "GPU use over time" "GPU time breakdown" "Memory over time" \
		"Estimated saving by finding"; do
		grep -qF "\">$t</title>" "$D/full.html"
	done
	# hostile names stay text: no tag, no handler, in the charts or anywhere
	# else (the escaped names, checked below, contain "onerror=" as text)
	run ! grep -qiE '<(script|img)' "$D/full.html"
	run ! grep -qiE '<[^>]*[[:space:]]on[a-z]+=' "$D/full.html"
	run ! grep -qiE 'https?:' "$D/full.html"
	grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;' "$D/full.html"
	grep -qF '&lt;img src=x onerror=alert(1)&gt;' "$D/full.html"
}

@test "iscope-report: Markdown has the charts' content as tables" {
	"$REPORT" "$REPORT_DATA/full.json" >"$D/full.md"
	run ! grep -q '<svg' "$D/full.md"
	for h in "Latency distribution" "CPU use over time" "GPU use over time" "Memory over time"; do
		grep -qx "### $h" "$D/full.md"
	done
	# ten rows by tenth of the run, iterations counted
	[ "$(grep -c '^| [0-9]*–[0-9]* % | ' "$D/full.md")" -eq 30 ]
	grep -qF '| 0–10 % | 0.00 – 1.15 s | 1.05 | 1.47 | 2 (2 warm-up) |' "$D/full.md"
	# the histogram: 20 bins, p50 and p99 marked
	[ "$(grep -cE '^\| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ \| ' "$D/full.md")" -eq 20 ]
	grep -qE '^\| .* \| p50 \|$' "$D/full.md"
	grep -qE '^\| .* \| p99 \|$' "$D/full.md"
	# sections in the same order as before
	got="$(grep '^## ' "$D/full.md" | tr '\n' '/')"
	[ "$got" = "## End-to-end latency/## CPU/## GPU/## Memory/## Findings/## Suggestions/## Environment/" ]
}

@test "iscope-report: a timeseries that is missing, null or mistyped leaves the chart out" {
	python3 - "$REPORT_DATA/full.json" "$D" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for name, ts in [("none", None), ("str", "x"), ("nulls", dict(d["timeseries"], cpu_cores=[None] * 188,
                 runnable_threads=None, rss_bytes="x", gpu_busy_pct=[-1] * 188, gpu_util_pct={},
                 gpu_mem_used_bytes=[1e300] * 188))]:
    e = dict(d, timeseries=ts)
    json.dump(e, open("%s/ts-%s.json" % (sys.argv[2], name), "w"))
PY
	for n in none str nulls; do
		"$REPORT" -f html "$D/ts-$n.json" >"$D/ts-$n.html"
		"$REPORT" "$D/ts-$n.json" >"$D/ts-$n.md"
		run ! grep -q "over time" "$D/ts-$n.md"
		run python3 "$BATS_TEST_DIRNAME/svg_check.py" "$D/ts-$n.html" 4
		echo "$n: $output"
		[ "$status" -eq 0 ]
	done
}

@test "iscope-report: findings of schema 2 and of schema 1" {
	"$REPORT" "$REPORT_DATA/full.json" >"$D/f2.md"
	grep -qF 'Verdict: **launch_bound** (confidence 0.82, explains 73 % of the GPU span' "$D/f2.md"
	grep -qF '### 1. 71 % of the kernels run under 10 µs: the GPU waits for launches' "$D/f2.md"
	grep -qF 'Estimated saving: 1.90 s (18.7 % of the analyzed span).' "$D/f2.md"
	grep -qF 'Suggestion: **Capture the step in a CUDA graph' "$D/f2.md"
	grep -qF 'Estimate: The host-wait idle time inside the iterations removed.' "$D/f2.md"
	grep -qF '| 2 | \<script\>alert(1)\</script\> | python | model.py:42 | 900.0 ms | 18.0 % |' "$D/f2.md"
	"$REPORT" "$REPORT_DATA/old-shape.json" >"$D/f1.md"
	grep -qF 'Suggestion: **Replace the per-element Python work' "$D/f1.md"
	grep -qF 'Estimated saving: 61.0 % of the analyzed span.' "$D/f1.md"
	grep -qF '1. Replace the per-element Python work in this function with batched torch operations. (estimated saving: 61.0 % of the analyzed span)' "$D/f1.md"
}

@test "iscope-report on a terminal: coloured summary; NO_COLOR, TERM=dumb, -o, -f and pipes" {
	command -v script >/dev/null || skip "no script(1) (util-linux)"
	# script -e: the status of the command on the terminal (pipefail keeps it)
	tty() {
		set -o pipefail
		script -qec "$1" /dev/null | tr -d '\r'
	}
	out="$(tty "env -u NO_COLOR TERM=xterm '$REPORT' '$REPORT_DATA/full.json'")"
	echo "$out"
	[[ "$out" == "InferScope: "$'\e[1;36m'"launch_bound"$'\e[0m'" (confidence 0.82, explains 73 % of the GPU span)"* ]]
	[[ "$out" == *$'\e[1;31m'critical$'\e[0m'* ]]
	[[ "$out" == *$'\e[32m'"saves ~1.90 s (18.7 %)"* ]]
	[[ "$out" == *"Top findings (3 of 4):"* ]]
	[[ "$out" != *"  4. "* ]]
	[[ "$out" == *"Full report: iscope-report -o report.md $REPORT_DATA/full.json  (or -o report.html)"* ]]
	[[ "$out" != *"# InferScope report"* ]]
	[ "$(wc -l <<<"$out")" -lt 15 ]
	# NO_COLOR (any non-empty value) and TERM=dumb: the same text, no escape
	out="$(tty "NO_COLOR=1 TERM=xterm '$REPORT' '$REPORT_DATA/full.json'")"
	[[ "$out" == "InferScope: launch_bound (confidence"* ]]
	[[ "$out" != *$'\e'* ]]
	out="$(tty "env -u NO_COLOR TERM=dumb '$REPORT' '$REPORT_DATA/full.json'")"
	[[ "$out" == "InferScope: launch_bound"* ]]
	[[ "$out" != *$'\e'* ]]
	out="$(tty "NO_COLOR= TERM=xterm '$REPORT' '$REPORT_DATA/full.json'")"
	[[ "$out" == *$'\e[1;36m'* ]]
	# from a pipe: the hint shows the pipe
	out="$(tty "cat '$REPORT_DATA/full.json' | TERM=xterm '$REPORT'")"
	[[ "$out" == *"| iscope-report -o report.md"* ]]
	# -f, -o, the format from the environment, or stdout not a terminal: the full report
	out="$(tty "TERM=xterm '$REPORT' -f md '$REPORT_DATA/full.json'")"
	[[ "$out" == "# InferScope report"* ]]
	[[ "$out" != *$'\e'* ]]
	out="$(tty "TERM=xterm INFERSCOPE_REPORT_FORMAT=md '$REPORT' '$REPORT_DATA/full.json'")"
	[[ "$out" == "# InferScope report"* ]]
	tty "TERM=xterm '$REPORT' -o '$D/tty.md' '$REPORT_DATA/full.json'"
	head -1 "$D/tty.md" | grep -qx '# InferScope report'
	tty "TERM=xterm '$REPORT' '$REPORT_DATA/full.json' > '$D/tty2.md'"
	cmp "$D/tty.md" "$D/tty2.md"
}
