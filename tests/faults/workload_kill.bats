#!/usr/bin/env bats
# The workload killed with SIGKILL at several points: during start-up, in
# the middle of a run, right after a burst.  The trace must merge, hold
# every event the workload wrote before a point it announced, and say that
# it ended abruptly (PROC_EXIT and END with signal 9; summary.end_reason
# "signaled", exit_signal 9; the abrupt_end finding; a line in the report).

load helpers
# exact Python mode: these tests check every call made before the kill
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
}

teardown() {
	# the workload of a failed test may still run: it is ours, by pid
	if [[ -s $T/sync ]]; then
		kill -9 "$(field "$T/sync" pid)" 2>/dev/null || true
	fi
	rm -rf "$T"
}

# says_killed TRACE: merge, analyze and report all say "killed by signal 9".
says_killed() {
	"$MERGE" --dump "$1" > "$T/dump"
	grep -q ' EXIT 137 (signal)$' "$T/dump"
	[[ "$(tail -n 1 "$T/dump")" == "END "*"status=137 (signal)" ]]
	run "$ANALYZE" -o "$T/f.json" "$1"
	valid_findings "$T/f.json"
	[ "$status" -eq 0 ]
	[ "$(jget "$T/f.json" summary.abrupt)" = true ]
	[ "$(jget "$T/f.json" summary.end_reason)" = signaled ]
	[ "$(jget "$T/f.json" summary.exit_signal)" = 9 ]
	[ "$(jget "$T/f.json" summary.exit_status)" = 137 ]
	run jget "$T/f.json" findings
	[[ "$output" == *'"abrupt_end"'*"killed by signal 9 (SIGKILL)"* ]]
	run "$REPORT" "$T/f.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"The workload was killed by signal 9 (exit status 137)"* ]]
}

@test "killed before any Python code ran (a shell kills itself): the trace says so" {
	run --separate-stderr "$RECORD" -o "$T/t.isc" -- sh -c 'kill -9 $$'
	[ "$status" -eq 137 ]
	[[ "$stderr" == *"exit status 137 (killed by signal 9)"* ]]
	says_killed "$T/t.isc"
}

@test "killed at the first statement, right after the agent attached" {
	run "$RECORD" -q -o "$T/t.isc" -- "$PY" -c 'import os; os.kill(os.getpid(), 9)'
	[ "$status" -eq 137 ]
	says_killed "$T/t.isc"
	# the agent had attached: its process info is in the trace
	run "$MERGE" --dump "$T/t.isc"
	[[ "$output" == *"PROC "*"-c import os"* ]]
}

@test "killed mid-run: every call made before the announced point is in the trace" {
	# --work slows calls so that the rings never fill: nothing is dropped
	"$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/announce.py" --work 20 20000 "$T/sync" spin &
	rec=$!
	wait_for 60 test -s "$T/sync"
	kill -9 "$(field "$T/sync" pid)"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 137 ]
	says_killed "$T/t.isc"
	# (large dumps go to files: bash pattern matching on megabytes is slow)
	"$MERGE" --dump "$T/t.isc" > "$T/dump"
	grep -q '^END .* dropped=0 ' "$T/dump"
	# at least the 20000 announced calls (more were made before the kill)
	[ "$(grep -c ' B python f ' "$T/dump")" -ge 20000 ]
}

@test "killed right after a burst: exactly the burst's calls, none lost" {
	# 100000 calls into a 16 MiB ring (--trace-size 1G): nothing is dropped
	# even if the recorder did not drain during the burst
	"$RECORD" -q --trace-size 1G -o "$T/t.isc" -- "$PY" "$WL/announce.py" 100000 "$T/sync" block &
	rec=$!
	wait_for 60 test -s "$T/sync"
	# inside the blocking call (state S) before the kill, so it is open
	wait_for 30 sleeping "$(field "$T/sync" pid)"
	kill -9 "$(field "$T/sync" pid)"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 137 ]
	says_killed "$T/t.isc"
	"$MERGE" --dump "$T/t.isc" > "$T/dump"
	grep -q '^END .* dropped=0 ' "$T/dump"
	[ "$(grep -c ' B python f ' "$T/dump")" -eq 100000 ]
	[ "$(grep -c ' E python f ' "$T/dump")" -eq 100000 ]
	# the blocking call the kill interrupted was closed by the merge
	grep -q ' E op select.select .*(closed by merge)' "$T/dump"
}

@test "a child of the workload killed (reaped by the workload): the run itself ended normally" {
	run "$RECORD" -q -o "$T/t.isc" -- "$PY" -c '
import os, signal, subprocess, sys
p = subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
p.wait()
sys.exit(0 if p.returncode == -signal.SIGKILL else 1)'
	[ "$status" -eq 0 ]
	run "$MERGE" --dump "$T/t.isc"
	[ "$status" -eq 0 ]
	[[ "$output" == *"P2 PROC "*"os.kill(os.getpid(), 9)"* ]]
	[[ "$output" == *"END "*"abrupt=0 status=0" ]]
	run "$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[ "$(jget "$T/f.json" summary.end_reason)" = exited ]
	[ "$(jget "$T/f.json" summary.abrupt)" = false ]
}
