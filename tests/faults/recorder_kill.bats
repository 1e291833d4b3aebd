#!/usr/bin/env bats
# The recorder killed with SIGKILL while the workload runs.  What it wrote
# is readable up to the last complete frame (merge: exit 0 when the file
# ends at a frame boundary, else exit 1 "truncated frame"; either way the
# prefix merges and analyzes, marked "cut").  The workload is neither
# killed nor blocked: it runs on, its rings fill and drop events (a full
# ring never blocks), it exits with its own status, and its agent removes
# the session directory the recorder can no longer remove.

load helpers
# exact Python mode: these tests check calls in the prefix, drops
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
}

# larger_than FILE BYTES: FILE is now larger than BYTES.
larger_than() {
	[ "$(stat -c %s "$1")" -gt "$2" ]
}

teardown() {
	for f in "$T/sync" "$T/sync.done"; do
		[[ -s $f ]] && kill -9 "$(field "$f" pid)" 2>/dev/null
	done
	rm -rf "$T"
}

@test "recorder SIGKILLed: the trace prefix merges and analyzes, the workload finishes" {
	# --trace-size 16M: the main thread's ring is 1 MiB (1/16), which the
	# spin below fills once nobody drains it
	"$RECORD" -q --trace-size 16M --flush-ms 0 -o "$T/t.isc" -- \
		"$PY" "$WL/announce.py" --work 20 --stop "$T/stop" --exit 4 20000 "$T/sync" spin &
	rec=$!
	wait_for 60 test -s "$T/sync"
	session=$(field "$T/sync" session)
	pid=$(field "$T/sync" pid)
	[ -d "$session" ]
	# the recorder writes at least one frame of events after the announce
	# (--flush-ms 0: every drain cycle): wait for the file to grow
	size0=$(stat -c %s "$T/t.isc")
	wait_for 30 larger_than "$T/t.isc" "$size0"
	kill -9 "$rec"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 137 ]

	# the workload is alive, not blocked: it reaches its end when told to
	kill -0 "$pid"
	touch "$T/stop"
	wait_for 120 test -s "$T/sync.done"
	# its rings filled with nobody draining them: events were dropped, counted
	[ "$(field "$T/sync.done" dropped)" -gt 0 ]
	wait_for 30 gone "$pid"
	# the agent saw the recorder gone and removed the session directory
	wait_for 10 test ! -e "$session"

	# the trace: readable up to the last complete frame, marked cut short
	st=0
	"$MERGE" --dump "$T/t.isc" > "$T/dump" 2> "$T/err" || st=$?
	[[ "$st" -eq 0 || ( "$st" -eq 1 && "$(cat "$T/err")" == *"truncated frame"* ) ]]
	[[ "$(tail -n 1 "$T/dump")" == "END "*"abrupt=1"* ]]
	[ "$(grep -c ' B python f ' "$T/dump")" -gt 0 ]
	run --separate-stderr "$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[[ "$status" -eq 0 || "$status" -eq 1 ]]
	[ "$(jget "$T/f.json" summary.end_reason)" = cut ]
	[ "$(jget "$T/f.json" summary.abrupt)" = true ]
	[ "$(jget "$T/f.json" summary.exit_status)" = null ]
	run "$REPORT" "$T/f.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"The recording was cut short"* ]]
}

@test "recorder SIGKILLed mid-frame: merge keeps every whole frame, exit 1 'truncated'" {
	"$RECORD" -q --flush-ms 0 -o "$T/t.isc" -- "$PY" "$WL/announce.py" 2000 "$T/sync" exit
	size=$(stat -c %s "$T/t.isc")
	# what a kill in the middle of a write leaves: a file cut inside a frame
	for cut in $((size / 3)) $((size / 2)) $((size - 7)); do
		head -c "$cut" "$T/t.isc" > "$T/cut.isc"
		run --separate-stderr "$MERGE" --dump "$T/cut.isc"
		[ "$status" -eq 1 ]
		[[ "$stderr" == *"truncated frame at byte"*"(kept "* ]]
		[[ "$output" == *"END "*"abrupt=1"* ]]
		run --separate-stderr "$ANALYZE" -o "$T/f.json" "$T/cut.isc"
		valid_findings "$T/f.json"
		[ "$status" -eq 1 ]
		[ "$(jget "$T/f.json" summary.end_reason)" = cut ]
		[ "$(jget "$T/f.json" summary.lost_frames)" -ge 1 ]
	done
}
