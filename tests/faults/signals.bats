#!/usr/bin/env bats
# SIGINT, SIGTERM and SIGHUP sent to the recorder (kill(2), as a service
# manager or a script would) reach the workload; the recorder waits for
# it, finalizes the trace (END chunk, exit status) and exits with the
# workload's status, which its summary line reports.
#
# Background jobs of a non-interactive shell start with SIGINT ignored, and
# an ignored signal stays ignored across exec: `env --default-signal`
# gives the recorder (and so the workload) default dispositions first.

load helpers
# exact Python mode: these tests check exactly 100 calls of f
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
}

teardown() {
	[[ -s $T/sync ]] && kill -9 "$(field "$T/sync" pid)" 2>/dev/null
	rm -rf "$T"
}

# send SIGNAL HANDLE: records announce.py (--handle HANDLE), sends SIGNAL to
# the recorder once the workload is ready; sets st (recorder status) and
# leaves the trace in $T/t.isc, the recorder's stderr in $T/err.
send() {
	env --default-signal=INT,TERM,HUP "$RECORD" -o "$T/t.isc" -- \
		"$PY" "$WL/announce.py" --handle "$2" 100 "$T/sync" block 2> "$T/err" &
	rec=$!
	wait_for 60 test -s "$T/sync"
	kill -"$1" "$rec"
	# bounded: a lost signal fails the test by name instead of hanging it
	if ! wait_for 60 gone "$rec"; then
		echo "# SIG$1 sent to the recorder: not gone 60 s later; killing the workload" >&3
		kill -9 "$(field "$T/sync" pid)"
	fi
	st=0
	wait "$rec" || st=$?
}

# finalized STATUS [signal]: the trace has its END with STATUS and merges cleanly.
finalized() {
	run --separate-stderr "$MERGE" --dump "$T/t.isc"
	[ "$status" -eq 0 ]
	[[ "$output" == *"EXIT $1"* ]]
	if [[ ${2-} == signal ]]; then
		[[ "$output" == *"END "*"abrupt=0 status=$1 (signal)"* ]]
	else
		[[ "$output" == *"END "*"abrupt=0 status=$1"$'\n'* || "$output" == *"END "*"abrupt=0 status=$1" ]]
	fi
	[ "$(grep -c ' B python f ' <<< "$output")" -eq 100 ]
	grep -q "iscope-record: .* exit status $1" "$T/err"
}

@test "SIGTERM to the recorder: forwarded, handled by the workload (exit 25)" {
	send TERM 1
	[ "$st" -eq 25 ]
	finalized 25
}

@test "SIGINT to the recorder: forwarded, handled by the workload (exit 12)" {
	send INT 1
	[ "$st" -eq 12 ]
	finalized 12
}

@test "SIGHUP to the recorder: forwarded, handled by the workload (exit 11)" {
	send HUP 1
	[ "$st" -eq 11 ]
	finalized 11
}

@test "SIGTERM, not handled: the workload dies of it, status 143 reported" {
	send TERM 0
	[ "$st" -eq 143 ]
	finalized 143 signal
	grep -q "exit status 143 (killed by signal 15)" "$T/err"
	run "$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[ "$(jget "$T/f.json" summary.end_reason)" = signaled ]
	[ "$(jget "$T/f.json" summary.exit_signal)" = 15 ]
}

@test "SIGHUP, not handled: status 129" {
	send HUP 0
	[ "$st" -eq 129 ]
	finalized 129 signal
}

@test "SIGINT, not handled: Python's KeyboardInterrupt ends the workload, status 130" {
	send INT 0
	[ "$st" -eq 130 ]
	finalized 130 signal
}

@test "a second signal after the workload exited goes to what is left of the session" {
	# the workload exits at once, leaving a grandchild the recorder waits for
	env --default-signal=TERM "$RECORD" -q -o "$T/t.isc" -- "$PY" -c '
import os, subprocess, sys
open(sys.argv[1], "w").write("%d" % os.getpid())
subprocess.Popen([sys.executable, sys.argv[2], "10", sys.argv[3], "block"])' \
		"$T/parent" "$WL/announce.py" "$T/sync" &
	rec=$!
	wait_for 60 test -s "$T/sync"
	wait_for 60 test -s "$T/parent"
	wait_for 60 gone "$(cat "$T/parent")"
	# the recorder still runs: it waits for the orphan (it is a subreaper)
	kill -0 "$rec"
	kill -TERM "$rec"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 0 ]
	run "$MERGE" --dump "$T/t.isc"
	[ "$status" -eq 0 ]
	[[ "$output" == *"EXIT 143 (signal)"* ]]
}

@test "started in the background of a script (SIGINT ignored): the workload gets INT, QUIT, TERM back" {
	# no env --default-signal: this background job inherits SIGINT ignored,
	# as a recorder started with & from a non-interactive script does
	"$RECORD" -q -o "$T/t.isc" -- "$PY" -c '
import signal, sys
names = {signal.SIG_DFL: "default", signal.SIG_IGN: "ignored"}
print(" ".join(names.get(signal.getsignal(s), "handled") for s in (signal.SIGQUIT, signal.SIGTERM)))
# Python installs its own SIGINT handler only when SIGINT was not ignored
print("int-handled" if signal.getsignal(signal.SIGINT) is signal.default_int_handler else "int-ignored")
' > "$T/out" 2> "$T/err" &
	wait "$!"
	[ "$(sed -n 1p "$T/out")" = "default default" ]
	[ "$(sed -n 2p "$T/out")" = "int-handled" ]
}

@test "SIGINT to a recorder started in the background of a script stops the workload (status 130)" {
	"$RECORD" -o "$T/t.isc" -- "$PY" "$WL/announce.py" 100 "$T/sync" block 2> "$T/err" &
	rec=$!
	wait_for 60 test -s "$T/sync"
	kill -INT "$rec"
	# bounded: an ignored SIGINT would leave the workload blocked for ever
	wait_for 30 gone "$rec" || kill -9 "$(field "$T/sync" pid)"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 130 ]
	finalized 130 signal
}

@test "a forwarded signal the workload ignores: the recorder says so" {
	env --default-signal=INT,TERM,HUP "$RECORD" -q -o "$T/t.isc" -- \
		"$PY" "$WL/announce.py" --handle ignore 100 "$T/sync" block 2> "$T/err" &
	rec=$!
	wait_for 60 test -s "$T/sync"
	pid=$(field "$T/sync" pid)
	kill -TERM "$rec"
	# the workload is killed whether the message came or not (no stray
	# process); whether it came is checked after
	said=0
	wait_for 30 grep -q "ignores it" "$T/err" || said=$?
	kill -9 "$pid"
	st=0
	wait "$rec" || st=$?
	[ "$said" -eq 0 ]
	[ "$st" -eq 137 ]
	[ "$(grep -c . "$T/err")" -eq 1 ]
	grep -qx "iscope-record: forwarded SIGTERM to the workload (pid $pid), which ignores it; it goes on running (SIGKILL stops it)" "$T/err"
}
