#!/usr/bin/env bats
# The trace output fails: the disk is full (ENOSPC: /dev/full, and a real
# 64 KiB tmpfs when this runs as root and may mount), or the reader of
# stdout goes away (EPIPE: `iscope-record -- ... | head -c 10`).  In every
# case the workload is not stopped and not killed (no SIGPIPE: its stdout
# is not the trace pipe, and it gets its own SIGPIPE disposition back), it
# runs to completion, the recorder prints one error line naming the output,
# the error and the workload's exit status, and exits with that status
# (1 when the workload succeeded: the trace is lost, a script must know).

load helpers
# exact Python mode: these tests check a stream of call records larger than the disk
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
}

teardown() {
	if mountpoint -q "$T/mnt" 2>/dev/null; then
		umount "$T/mnt"
	fi
	rm -rf "$T"
}

@test "/dev/full: one clear error, the workload runs to completion with its own status" {
	run --separate-stderr "$RECORD" -q -o /dev/full -- "$PY" "$WL/announce.py" --exit 5 20000 "$T/sync" exit
	[ "$status" -eq 5 ]
	[ -s "$T/sync" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-record: /dev/full: Failed to write: No space left on device (the workload was not stopped: it exited with status 5)" ]]
	# a workload that succeeded: exit 1, the trace is lost
	rm -f "$T/sync"
	run --separate-stderr "$RECORD" -q -o /dev/full -- "$PY" "$WL/announce.py" 20000 "$T/sync" exit
	[ "$status" -eq 1 ]
	[ -s "$T/sync" ]
	[[ "$stderr" == *"No space left on device"*"exited with status 0)" ]]
}

@test "a full 64 KiB tmpfs: the error, the workload's status, and a readable prefix" {
	mkdir "$T/mnt"
	if ! mount -t tmpfs -o size=64k,mode=0700 tmpfs "$T/mnt" 2>"$T/mount.err"; then
		skip "cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): $(head -n 1 "$T/mount.err")"
	fi
	# 300000 calls: far more than 64 KiB of compressed trace
	run --separate-stderr "$RECORD" -q --flush-ms 0 -o "$T/mnt/t.isc" -- \
		"$PY" "$WL/announce.py" --exit 6 300000 "$T/sync" exit
	[ "$status" -eq 6 ]
	[ -s "$T/sync" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-record: $T/mnt/t.isc: Failed to write: No space left on device (the workload was not stopped: it exited with status 6)" ]]
	# what fit is a readable prefix: whole frames, the last one maybe cut
	run --separate-stderr "$MERGE" --dump "$T/mnt/t.isc"
	[[ "$status" -eq 0 || ( "$status" -eq 1 && "$stderr" == *"truncated frame"* ) ]]
	[[ "$output" == *" B python f "* ]]
	[[ "$output" == *"END "*"abrupt=1"* ]]
	run "$ANALYZE" -o "$T/f.json" "$T/mnt/t.isc"
	[ "$(jget "$T/f.json" summary.end_reason)" = cut ]
}

@test "stdout reader goes away (| head -c 10): no SIGPIPE, the workload's status, one message" {
	# the workload finishes only after the reader is gone (the subshell
	# closes its own copy of the pipe before it says so)
	run --separate-stderr bash -c '
		"$1" -q -- "$2" "$3" --stop "$4/gone" --exit 3 1000 "$4/sync" spin |
			{ head -c 10 >/dev/null; exec 0<&-; touch "$4/gone"; }
		echo "${PIPESTATUS[0]}" > "$4/status"' _ "$RECORD" "$PY" "$WL/announce.py" "$T"
	[ "$(cat "$T/status")" -eq 3 ]
	[ -s "$T/sync.done" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-record: stdout: Failed to write: Broken pipe (the workload was not stopped: it exited with status 3)" ]]
}

@test "stdout reader goes away, workload exits 0: the recorder exits 1" {
	run --separate-stderr bash -c '
		"$1" -q -- "$2" "$3" --stop "$4/gone" 1000 "$4/sync" spin |
			{ head -c 10 >/dev/null; exec 0<&-; touch "$4/gone"; }
		echo "${PIPESTATUS[0]}" > "$4/status"' _ "$RECORD" "$PY" "$WL/announce.py" "$T"
	[ "$(cat "$T/status")" -eq 1 ]
	[ -s "$T/sync.done" ]
	[[ "$stderr" == *"Broken pipe"*"exited with status 0)" ]]
}

@test "the workload keeps its own SIGPIPE disposition" {
	# the recorder ignores SIGPIPE for itself only: a workload started with
	# the default still dies of it, one started with it ignored does not
	run env --default-signal=PIPE "$RECORD" -q -o "$T/t.isc" -- sh -c 'kill -PIPE $$; exit 0'
	[ "$status" -eq 141 ]
	run env --ignore-signal=PIPE "$RECORD" -q -o "$T/t.isc" -- sh -c 'kill -PIPE $$; exit 0'
	[ "$status" -eq 0 ]
}
