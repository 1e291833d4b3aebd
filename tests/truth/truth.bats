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

# record NAME: tests/truth/NAME.py recorded and analyzed into $BATS_TEST_TMPDIR/NAME.json
record() {
	run --separate-stderr "$RECORD" -q --python="$MODE" -o "$BATS_TEST_TMPDIR/$1.isc" -- "$PY" "$W/$1.py"
	[ "$status" -eq 0 ]
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
