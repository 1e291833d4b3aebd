#!/usr/bin/env bats
# iscope-record and iscope-merge from the command line: options, exit
# status, files and pipes, damaged input.

load helpers
# exact Python mode: these tests check call spans and their counts
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	cat > "$T/calls.py" <<'PY'
def leaf(i):
    return i + 1

def mid():
    return sum(leaf(i) for i in range(10))

for _ in range(50):
    mid()
print("workload stdout")
PY
}

teardown() {
	rm -rf "$T"
}

@test "record --help goes to stdout and exits 0" {
	run --separate-stderr "$RECORD" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: iscope-record"* ]]
	[[ "$output" == *"--ring"* ]]
	[[ "$output" == *"INFERSCOPE_SAMPLE_HZ"* ]]
	[ -z "$stderr" ]
}

@test "merge --help and both --version" {
	run "$MERGE" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: iscope-merge"* ]]
	[[ "$output" == *"--dump"* ]]
	run "$RECORD" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^iscope-record\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
	run "$MERGE" --version
	[[ "$output" =~ ^iscope-merge\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "a bad flag is a usage error (exit 2) with one message line" {
	run --separate-stderr "$RECORD" --no-such-flag -- true
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == "iscope-record: unrecognized option '--no-such-flag'" ]]
	run --separate-stderr "$MERGE" --bogus
	[ "$status" -eq 2 ]
	[[ "${stderr_lines[0]}" == *"unrecognized option '--bogus'"* ]]
}

@test "record without a command is a usage error" {
	run "$RECORD" -o "$T/x.isc"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no command"* ]]
}

@test "record refuses to write a trace to a terminal" {
	run on_tty "$RECORD" -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"refusing to write a binary trace to a terminal"* ]]
	run on_tty "$MERGE" /dev/null
	[ "$status" -eq 2 ]
}

@test "record's exit status is the workload's" {
	run "$RECORD" -q -o "$T/a.isc" -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	run "$RECORD" -q -o "$T/b.isc" -- sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
	run --separate-stderr "$RECORD" -q -o "$T/c.isc" -- /no/such/program
	[ "$status" -eq 127 ]
	[[ "$stderr" == *"Cannot run '/no/such/program'"* ]]
}

@test "trace to stdout: the workload's stdout goes to stderr, the trace merges" {
	run --separate-stderr bash -c "'$RECORD' -q -- '$PY' '$T/calls.py' > '$T/p.isc'"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"workload stdout"* ]]
	run "$MERGE" --dump "$T/p.isc"
	[ "$status" -eq 0 ]
	[[ "$output" != *"workload stdout"* ]]
}

@test "trace into a pipe: the recorder widens it to pipe-max-size, so a slow reader does not stall the drain" {
	max=$(cat /proc/sys/fs/pipe-max-size)
	(( max > 16777216 )) && max=16777216
	set -o pipefail
	"$RECORD" -q -- /bin/true | "$PY" -c 'import fcntl, sys; sys.stdin.buffer.read(); print(fcntl.fcntl(0, 1032))' > "$T/size"
	echo "pipe size $(cat "$T/size"), pipe-max-size $max"
	[ "$(cat "$T/size")" -eq "$max" ]
}

@test "file and pipe give the same timeline dump" {
	"$RECORD" -q -o "$T/f.isc" -- "$PY" "$T/calls.py" >/dev/null
	"$MERGE" --dump "$T/f.isc" > "$T/file.txt"
	"$MERGE" --dump < "$T/f.isc" > "$T/stdin.txt"
	cat "$T/f.isc" | "$MERGE" --dump - > "$T/pipe.txt"
	"$MERGE" -o "$T/f.istl" "$T/f.isc"
	cmp "$T/file.txt" "$T/stdin.txt"
	cmp "$T/file.txt" "$T/pipe.txt"
	[ -s "$T/f.istl" ]
}

@test "recorded calls are paired: leaf is called exactly 500 times" {
	"$RECORD" -q -o "$T/f.isc" -- "$PY" "$T/calls.py" >/dev/null
	run "$MERGE" --dump "$T/f.isc"
	[ "$status" -eq 0 ]
	begins=$(grep -c ' B python leaf ' <<< "$output")
	ends=$(grep -c ' E python leaf ' <<< "$output")
	[ "$begins" -eq 500 ]
	[ "$ends" -eq 500 ]
	[ "$(grep -c ' B python mid ' <<< "$output")" -eq 50 ]
}

@test "a name longer than 1024 bytes is cut at a character boundary: f and 511 of its 600 two-byte characters" {
	# f then 600 x U+00E9 (2 bytes each): 1201 bytes; the agent keeps at most
	# 1024 bytes of whole characters: f and 511 of them, 1023 bytes.  The
	# function loops, so that it is the run's top Python function.
	"$PY" -c 'e = "\u00e9" * 600
print("def f%s():\n    x = 0\n    for i in range(300000):\n        x += i\n    return x\nfor _ in range(3):\n    f%s()" % (e, e))' > "$T/long.py"
	"$RECORD" -q -o "$T/l.isc" -- "$PY" "$T/long.py"
	"$ANALYZE" -o "$T/l.json" "$T/l.isc"
	run jq -r '.cpu.top_functions[] | select(.name | startswith("f")) | .name' "$T/l.json"
	[ "$status" -eq 0 ]
	[ "$output" = "f$(printf '\xc3\xa9%.0s' $(seq 1 511))" ]
}

@test "recording the same program twice gives the same dump" {
	"$RECORD" -q -o "$T/1.isc" -- "$PY" "$T/calls.py" >/dev/null
	"$RECORD" -q -o "$T/2.isc" -- "$PY" "$T/calls.py" >/dev/null
	# pipefail: a failed merge and an empty dump must not compare equal
	set -o pipefail
	"$MERGE" --dump "$T/1.isc" | grep -v '^PROC\|^P[0-9]* PROC' > "$T/1.txt"
	"$MERGE" --dump "$T/2.isc" | grep -v '^PROC\|^P[0-9]* PROC' > "$T/2.txt"
	# what calls.py makes (the test above): 500 calls of leaf, in each dump
	[ "$(grep -c ' B python leaf ' "$T/1.txt")" -eq 500 ]
	diff "$T/1.txt" "$T/2.txt"
}

@test "a truncated trace: prefix kept, exit 1, one-line message" {
	"$RECORD" -q --flush-ms 0 -o "$T/f.isc" -- "$PY" "$T/calls.py" >/dev/null
	size=$(stat -c %s "$T/f.isc")
	head -c $((size * 2 / 3)) "$T/f.isc" > "$T/cut.isc"
	run --separate-stderr "$MERGE" --dump "$T/cut.isc"
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^iscope-merge:\ .*cut.isc:\ truncated\ frame\ at\ byte\ [0-9]+\ \(kept\ [0-9]+\ events ]]
	[[ "$output" == *"END "* ]]
}

@test "a file that is not a trace is refused (exit 1)" {
	echo "hello, I am text" > "$T/text.isc"
	run --separate-stderr "$MERGE" "$T/text.isc" -o "$T/out.istl"
	[ "$status" -eq 1 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "iscope-merge: "*"text.isc"* ]]
	: > "$T/empty.isc"
	run --separate-stderr "$MERGE" "$T/empty.isc" -o "$T/out.istl"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"empty input"* ]]
	run --separate-stderr "$MERGE" /no/such/file.isc
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"No such file"* ]]
}

@test "a timeline given to merge is refused with a hint" {
	"$RECORD" -q -o "$T/f.isc" -- true
	"$MERGE" -o "$T/f.istl" "$T/f.isc"
	run --separate-stderr "$MERGE" "$T/f.istl" -o "$T/again.istl"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"already a timeline"* ]]
}

@test "--show-config names the source of each value" {
	cd "$T"
	printf 'record:\n  sample_hz: 7\n' > .inferscope.yaml
	run "$RECORD" --show-config
	[[ "$output" == *"sample-hz = 7"*".inferscope.yaml:2"* ]]
	INFERSCOPE_SAMPLE_HZ=9 run "$RECORD" --show-config
	[[ "$output" == *"sample-hz = 9"*"environment INFERSCOPE_SAMPLE_HZ"* ]]
	INFERSCOPE_SAMPLE_HZ=9 run "$RECORD" --sample-hz=11 --show-config
	[[ "$output" == *"sample-hz = 11"*"command line"* ]]
}

@test "INFERSCOPE_ENABLE=0: the workload runs untraced" {
	INFERSCOPE_ENABLE=0 "$RECORD" -q -o "$T/off.isc" -- "$PY" "$T/calls.py" >/dev/null
	run "$MERGE" --dump "$T/off.isc"
	[ "$status" -eq 0 ]
	[[ "$output" != *" B python "* ]]
}

@test "flight-recorder mode keeps the newest events within the size" {
	run "$RECORD" -q --ring 64k -o "$T/r.isc" -- "$PY" -c 'def f(i): return i
for i in range(200000): f(i)'
	[ "$status" -eq 0 ]
	size=$(stat -c %s "$T/r.isc")
	[ "$size" -lt $((64 * 1024 + 32 * 1024)) ]
	run "$MERGE" --dump "$T/r.isc"
	[ "$status" -eq 0 ]
	[[ "$output" == *" B python f "* ]]
	[[ "$output" == *"lost_frames="* ]]
	[[ "$output" != *"lost_frames=0 "* ]]
}

@test "a command that is not executable exits 126" {
	printf 'echo hi\n' > "$T/noexec.sh"
	chmod 644 "$T/noexec.sh"
	run --separate-stderr "$RECORD" -q -o "$T/x.isc" -- "$T/noexec.sh"
	[ "$status" -eq 126 ]
	[[ "$stderr" == *"Permission denied"* ]]
}

@test "SIGTERM sent to the recorder reaches the workload; the trace is finalized" {
	cat > "$T/term.py" <<'PY'
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))
open(sys.argv[1] + ".tmp", "w").close()
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(0.01)
PY
	"$RECORD" -q -o "$T/term.isc" -- "$PY" "$T/term.py" "$T/ready" &
	rec=$!
	for _ in $(seq 500); do [ -e "$T/ready" ] && break; sleep 0.02; done
	[ -e "$T/ready" ]
	kill -TERM "$rec"
	st=0
	wait "$rec" || st=$?
	[ "$st" -eq 7 ]
	run "$MERGE" --dump "$T/term.isc"
	[ "$status" -eq 0 ]
	[[ "$output" == *"EXIT 7"* ]]
	[[ "$output" == *"abrupt=0 status=7"* ]]
}

@test "analyze reads a trace directly, the same as merge | analyze" {
	"$RECORD" -q -o "$T/f.isc" -- "$PY" "$T/calls.py" >/dev/null
	set -o pipefail
	"$MERGE" "$T/f.isc" | "$ANALYZE" > "$T/piped.json"
	"$ANALYZE" "$T/f.isc" > "$T/direct.json"
	"$ANALYZE" < "$T/f.isc" > "$T/stdin.json"
	valid_findings "$T/piped.json" "$T/direct.json" "$T/stdin.json"
	cmp "$T/piped.json" "$T/direct.json"
	cmp "$T/piped.json" "$T/stdin.json"
	size=$(stat -c %s "$T/f.isc")
	head -c $((size / 2)) "$T/f.isc" > "$T/cut.isc"
	run --separate-stderr "$ANALYZE" "$T/cut.isc"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"truncated frame"*"kept"* ]]
	[[ "$output" == *'"abrupt":true'* ]]
}
