#!/usr/bin/env bats
# How the run ended, first (issue 18, deliverable 2): the agent records the
# unhandled exception (EXCEPTION, formats/trace.md §6.1) and the findings'
# `run` section and the report's first line say what the run was before
# any bottleneck.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	PYT=$(torch_python)
}

teardown() {
	rm -rf "$T"
}

@test "an unhandled exception in the main thread is recorded, and Python still prints it" {
	printf 'import os\ndef load():\n    import nosuchmodule_xyz\nload()\n' > "$T/fail.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/fail.py"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"ModuleNotFoundError: No module named 'nosuchmodule_xyz'"* ]]
	run "$MERGE" --dump "$T/t.isc"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' X ' <<< "$output")" -eq 1 ]
	[[ "$output" == *"P1 T1 X ModuleNotFoundError $T/fail.py:3 load: No module named 'nosuchmodule_xyz'"* ]]
}

@test "an unhandled exception in a thread is recorded on that thread; SystemExit is not an exception" {
	printf 'import sys, threading\ndef work():\n    raise ValueError("bad\\nvalue")\nt = threading.Thread(target=work)\nt.start(); t.join()\nsys.exit(3)\n' > "$T/thr.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/thr.py"
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"ValueError: bad"* ]]
	run "$MERGE" --dump "$T/t.isc"
	[ "$(grep -c ' X ' <<< "$output")" -eq 1 ]
	[[ "$output" == *"P1 T2 X ValueError $T/thr.py:3 work: bad value"* ]]
}

@test "a user's own sys.excepthook still runs after ours" {
	printf 'import sys\nsys.excepthook = lambda t, v, tb: print("mine:", t.__name__)\nraise KeyError("k")\n' > "$T/hook.py"
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/hook.py"
	[ "$status" -eq 1 ]
	[[ "$output" == *"mine: KeyError"* ]]
}
