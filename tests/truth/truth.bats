#!/usr/bin/env bats
# Planted truths (README.md): each workload's docstring states its answer;
# each test records it in $ISC_PYTHON_MODE (exact or sample), analyzes it
# and checks the claim the report makes against that answer.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export MODE=${ISC_PYTHON_MODE:-exact}
	export W=$ISC_SRC/tests/truth
}

# record NAME [OPTION...]: tests/truth/NAME.py recorded (with the recorder's
# OPTIONs) and analyzed into $BATS_TEST_TMPDIR/NAME.json
record() {
	local name=$1
	shift
	run --separate-stderr "$RECORD" -q --python="$MODE" "$@" -o "$BATS_TEST_TMPDIR/$name.isc" -- "$PY" "$W/$name.py"
	[ "$status" -eq 0 ]
	set -- "$name"
	run --separate-stderr "$ANALYZE" -q -o "$BATS_TEST_TMPDIR/$1.json" "$BATS_TEST_TMPDIR/$1.isc"
	[ "$status" -eq 0 ]
	valid_findings "$BATS_TEST_TMPDIR/$1.json"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)): \(.verdict.sentence)"' "$BATS_TEST_TMPDIR/$1.json"
}

@test "lock_wait.py: a step waiting for another thread's lock is lock_wait, where it waited named" {
	record lock_wait
	F=$BATS_TEST_TMPDIR/lock_wait.json
	run jq -r .verdict.class "$F"
	[ "$output" = lock_wait ]
	run jq -r '.verdict.finding' "$F"
	[ "$output" = lock_wait ]
	# where it waited: the step loop, in the module of this file (the first row, or its Python caller)
	run jq -r '.findings[] | select(.id == "lock_wait") | .evidence.top[0] | if .kind == "python" then "\(.name) \(.file)" else .detail end' "$F"
	[[ "$output" == *"<module>"*"tests/truth/lock_wait.py"* ]]
}

@test "native_memset.py: the C library's memset holds the CPU time, named first and in the headline" {
	"$RECORD" -q --native=on --no-cuda -o "$BATS_TEST_TMPDIR/probe.isc" -- /bin/true 2>/dev/null ||
		skip "MACHINE ASSUMPTION NOT MET: perf_event_open refused here"
	record native_memset --native=on
	F=$BATS_TEST_TMPDIR/native_memset.json
	run jq -r '.native.functions[0] | "\(.name) \(.library)"' "$F"
	[[ "$output" =~ ^__memset[a-z0-9_]*\ .*/libc\.so\.6$ ]]
	# most of the samples: the rest is start-up, the buffer's first touch and the loop's own code
	run jq '.native.functions[0].self_pct >= 70' "$F"
	[ "$output" = true ]
	# under fill (the line MEMSET when the Python sampler saw it; exact mode knows the function only)
	line=$(grep -n '# MEMSET' "$W/native_memset.py" | cut -d: -f1)
	def=$(grep -n '^def fill' "$W/native_memset.py" | cut -d: -f1)
	run jq -r '.native.functions[0].above[0].python | "\(.name) \(.line)"' "$F"
	[[ "$output" == "fill $line" || ( $MODE == exact && "$output" == "fill $def" ) ]]
	# the headline names it, in the rules' words
	name=$(jq -r '.native.functions[0].name' "$F")
	run jq -r --arg n "$name" '[.verdict.headline[] | .code // empty] | index($n) != null' "$F"
	[ "$output" = true ]
	run jq -r '.verdict.sentence' "$F"
	[[ "$output" == *"of the sampled CPU time is in $name (libc.so.6)"* ]]
}
