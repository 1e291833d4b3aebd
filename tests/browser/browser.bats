#!/usr/bin/env bats
# The HTML report in a real browser: headless Chromium opens it from disk
# (file://), takes a screenshot, and webdriver_check.py asserts no console
# error, no network request but the document, no dialog, every chart <svg>
# present with a rendered size and its data drawn, and the hostile names
# (tests/data/report/full.json) shown literally as text; the flame graphs of
# native stacks (tests/data/report/native.json, and a torch run recorded here
# with --native=on); then the reports of a torch run recorded here and of a
# real V100 Kineto trace.  A negative control
# page shows that each of those checks can fail.

load ../cli/helpers
bats_require_minimum_version 1.5.0

setup_file() {
	export CHECK="$BATS_TEST_DIRNAME/webdriver_check.py"
	export FIXTURES="$ISC_SRC/tests/data/report"
}

setup() {
	CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
	[ -n "$CHROMIUM" ] || skip "chromium is not installed (apt-get install chromium chromium-driver; scripts/install-deps.sh does)"
	CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver || echo /usr/bin/chromedriver)}
	if [ ! -x "$CHROMEDRIVER" ]; then
		echo "chromium is installed but chromedriver is not: apt-get install chromium-driver" >&2
		return 1
	fi
	export CHROMIUM CHROMEDRIVER
	T=$(mktemp -d)
}

teardown() {
	[ -z "${T:-}" ] || rm -rf "$T"
}

@test "the HTML report in headless Chromium: charts rendered, no error, no request, no dialog" {
	"$REPORT" -o "$T/report.html" "$FIXTURES/full.json"
	run "$PY" "$CHECK" "$T/report.html" "$T/shot.png" --charts 7 \
		--text '<script>alert(1)</script>' --text '<img src=x onerror=alert(1)>' \
		--text '<script>alert(1)</script> holds the interpreter 31 % of the step' \
		--text 'CPU use over time' --text 'Estimated saving by finding'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: 7 charts rendered, 1 request (the document)"* ]]
	[ "$(head -c 8 "$T/shot.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ]
	[ "$(stat -c %s "$T/shot.png")" -gt 20000 ]
}

@test "a report of schema 1 (no timeseries): the charts it has render too" {
	"$REPORT" -o "$T/old.html" "$FIXTURES/old-shape.json"
	run "$PY" "$CHECK" "$T/old.html" "$T/old.png" --charts 2 --text 'crunch'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a real run: the report of a torch workload recorded here" {
	py=$(torch_python) || skip "no Python with torch (scripts/find-python.sh)"
	"$RECORD" --quiet -o "$T/run.isc" -- "$py" "$ISC_SRC/tests/e2e/workloads/hot_function.py" >/dev/null
	"$ANALYZE" -o "$T/run.json" "$T/run.isc"
	valid_findings "$T/run.json"
	"$REPORT" -o "$T/run.html" "$T/run.json"
	run "$PY" "$CHECK" "$T/run.html" "$T/run.png" --chart 'CPU use over time' --chart 'Memory over time' \
		--chart 'Iteration latency distribution (steady state)' --chart 'Where the traced CPU time goes' \
		--text 'crunch'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "native stacks: the flame graph and its differential, hostile names shown as text" {
	"$REPORT" -o "$T/native.html" "$FIXTURES/native.json"
	run "$PY" "$CHECK" "$T/native.html" "$T/native.png" --charts 9 \
		--chart 'Flame graph: native and Python stacks, all threads' \
		--chart 'Differential flame graph: this run against the baselines' \
		--text '<script>alert(1)</script>' --text '<img src=x onerror=alert(1)>_sgemm'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a real run's flame graph: a torch GEMM recorded with native stacks" {
	py=$(torch_python) || skip "no Python with torch (scripts/find-python.sh)"
	"$RECORD" -q --native=on --no-cuda -o "$T/probe.isc" -- /bin/true 2>/dev/null ||
		skip "MACHINE ASSUMPTION NOT MET: perf_event_open refused here"
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$RECORD" -q --native=on --no-cuda -o "$T/mm.isc" -- \
		"$py" "$ISC_SRC/tests/native/matmul.py" 1
	"$ANALYZE" -o "$T/mm.json" "$T/mm.isc"
	valid_findings "$T/mm.json"
	"$REPORT" -o "$T/mm.html" "$T/mm.json"
	run "$PY" "$CHECK" "$T/mm.html" "$T/mm.png" --chart 'Flame graph: native and Python stacks, all threads' \
		--chart 'CPU use over time' --text 'Native stacks'
	echo "$output"
	[ "$status" -eq 0 ]
}

# speedscope_or_skip: $APP, the speedscope app's dist/release (scripts/fetch-speedscope.sh)
speedscope_or_skip() {
	APP=${ISC_SPEEDSCOPE_APP:-$("$ISC_SRC/scripts/fetch-speedscope.sh" --no-fetch)}
	[ -n "$APP" ] || skip "the speedscope app is not fetched (scripts/fetch-speedscope.sh needs npm and its registry)"
}

@test "speedscope: -f speedscope output opens in the speedscope app itself, every thread a profile, hostile names imported" {
	speedscope_or_skip
	"$REPORT" -f speedscope -o "$T/native.speedscope.json" "$FIXTURES/native.json"
	run "$PY" "$BATS_TEST_DIRNAME/speedscope_app.py" "$APP" "$T/native.speedscope.json" "$T/ss.png" \
		"$(jq '.native.tree.threads | length' "$FIXTURES/native.json")"
	echo "$output"
	[ "$output" = ok ]
}

@test "speedscope negative control: a frame index out of range and a wrong profile count fail in the app" {
	speedscope_or_skip
	"$REPORT" -f speedscope -o "$T/n.json" "$FIXTURES/native.json"
	jq '.profiles[0].samples[0] = [0, 99999]' "$T/n.json" >"$T/bad.json"
	run ! "$PY" "$BATS_TEST_DIRNAME/speedscope_app.py" "$APP" "$T/bad.json" "$T/bad.png" 2
	echo "$output"
	[ "${lines[0]}" = "title 'speedscope', expected 'InferScope: python3 infer.py - speedscope' (the import did not finish)" ]
	run ! "$PY" "$BATS_TEST_DIRNAME/speedscope_app.py" "$APP" "$T/n.json" "$T/n.png" 3
	[[ ${lines[0]} == "the toolbar does not show 'MainThread 100/100' (1/3): "* ]]
}

@test "a real GPU trace: the report of a Kineto trace recorded on a V100" {
	trace=${ISC_KINETO_DATA:-$ISC_SRC/tests/data/real/kineto}/v100_resnet50_num_workers_0.pt.trace.json.gz
	"$ANALYZE" -o "$T/v100.json" "$trace"
	valid_findings "$T/v100.json"
	"$REPORT" -o "$T/v100.html" "$T/v100.json"
	run "$PY" "$CHECK" "$T/v100.html" "$T/v100.png" --chart 'GPU use over time' --chart 'GPU time breakdown' \
		--chart 'Estimated saving by finding' --text 'cudnn_convolution'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "negative control: the checks catch a dialog, requests, console errors and a broken chart" {
	run "$PY" "$CHECK" "$BATS_TEST_DIRNAME/hostile-page.html" "$T/control.png" --charts 7 --chart 'No such chart' \
		--text absent
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"JavaScript dialog"* ]]
	[[ "$output" == *"network request: http://127.0.0.1:9/x.png"* ]]
	[[ "$output" == *"console error: "*"attribute d: Expected number"* ]]
	[[ "$output" == *'console error: '*'"boom"'* ]]
	[[ "$output" == *"1 charts, expected 7"* ]]
	[[ "$output" == *"no chart titled 'No such chart'"* ]]
	[[ "$output" == *"elements drawn from data, 1 of them empty"* ]]
	[[ "$output" == *"script/img/iframe/object/embed/link elements"* ]]
	[[ "$output" == *"not in the page's text: 'absent'"* ]]
}
