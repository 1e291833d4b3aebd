#!/usr/bin/env bats
# The recorder treats the shared memory of traced processes as untrusted.
# A hostile "agent" (hostile_agent.c) shares the session with a
# well-behaved Python process and writes garbage records, lying sizes,
# a head far ahead of its tail, impossible headers, a corrupt string area,
# random slot contents, truncates its file under the recorder's mapping
# (SIGBUS), rewrites its file at random while it is drained, or plants a
# symbolic link, a FIFO or a file other users could read under its name.
# Every time: the recorder does not crash, hang or overflow (run this
# suite in build-asan too), warns once about the hostile file, exits with
# the workload's status, and the well-behaved process's trace is complete.

load ../cli/helpers
# exact Python mode: these tests check the agent's rings, which only exact mode fills with calls
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	export HOSTILE_TMP=$T/h
}

teardown() {
	rm -rf "$T"
}

# attack MODE: records legit.py and hostile_agent MODE side by side.
attack() {
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- sh -c \
		'"$1" "$2" & "$3" "$4"; st=$?; wait $!; exit $st' _ "$PY" "$ISC_SRC/tests/security/legit.py" "$ISC_HOSTILE" "$1"
	{ echo "$1: recorder status $status; stderr:"; head -c 600 <<< "$stderr"; echo; } | sed 's/^/# /' >&3
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"hostile: $1 done"* ]]
	err=$stderr
	# the well-behaved process lost nothing
	run --separate-stderr "$MERGE" --dump "$T/t.isc"
	if [ "$status" -ne 0 ]; then
		{ echo "merge --dump status $status; stderr:"; head -c 600 <<< "$stderr"; echo; } | sed 's/^/# /' >&3
	fi
	[ "$status" -eq 0 ]
	[ "$(grep -c ' B python leaf ' <<< "$output")" -eq 500 ]
	[ "$(grep -c ' E python leaf ' <<< "$output")" -eq 500 ]
	run "$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[ "$status" -eq 0 ]
}

@test "garbage records in a ring: that ring is discarded with a warning" {
	attack garbage
	[[ "$err" == *"corrupt record in shared memory; rest of its ring discarded"* ]]
}

@test "a record whose size runs past what was committed" {
	attack lying-size
	[[ "$err" == *"corrupt record in shared memory"* ]]
}

@test "a well-framed record of a kind agents never write is not copied into the trace" {
	attack foreign
	[[ "$err" == *"corrupt record in shared memory"* ]]
	# the 10 valid records before it are kept
	run -0 "$MERGE" --dump "$T/t.isc"
	[ "$(grep -c '^P[0-9]* T[0-9]* B python' <<< "$output")" -ge 510 ]
}

@test "an agent's SMAPS record naming another process is not copied into the trace" {
	attack smaps-pid
	[[ "$err" == *"corrupt record in shared memory"* ]]
	# the 10 valid records before it are kept; no smaps record of pid 1
	run -0 "$MERGE" --dump-times "$T/t.isc"
	[ "$(grep -c '^[0-9]* P[0-9]* T[0-9]* B python' <<< "$output")" -ge 510 ]
	[ "$(grep -c ' smaps 1 ' <<< "$output")" -eq 0 ]
}

@test "head far ahead of tail: the ring is discarded, nothing is copied" {
	attack head-ahead
	[[ "$err" == *"bytes past its tail"*"ring discarded"* ]]
}

@test "a header claiming rings and strings larger than the file (and than we allow)" {
	attack huge
	[[ "$err" == *".shm: inconsistent shared-memory header"* ]]
}

@test "a string area with garbage and a committed size past its end" {
	attack strings
	[[ "$err" == *"corrupt string table in shared memory"* ]]
}

@test "a well-framed string definition that does not parse is not copied into the trace" {
	attack strdef
	[[ "$err" == *"corrupt string table in shared memory"* ]]
	# the definition before it is kept: the hostile ring's calls are named by it
	run -0 "$MERGE" --dump "$T/t.isc"
	[ "$(grep -c ' B python hostile_ok ' <<< "$output")" -eq 10 ]
}

@test "a string area published at once past the recorder's 4 MiB read window: no record is called corrupt" {
	attack strwindow
	[[ "$err" != *"corrupt string table"* ]]
	# the calls name the last definition, which lies past the first window
	run -0 "$MERGE" --dump "$T/t.isc"
	[ "$(grep -c ' B python w05370x' <<< "$output")" -eq 10 ]
}

@test "random slot contents and an impossible slot count" {
	attack slots
}

@test "the file truncated under the recorder's mapping (SIGBUS is caught)" {
	attack truncate
	[[ "$err" == *"hostile: truncated "* ]]
	[[ "$err" == *"its shared-memory file was truncated under us (SIGBUS); its later events are lost"* ]]
}

@test "the whole file rewritten at random while it is drained" {
	attack scribble
}

@test "a symbolic link planted as <pid>.shm is not followed" {
	attack symlink
	[[ "$err" == *".shm: a symbolic link"* ]]
	# the target, a well-formed file, was not read: no events of that pid
	run "$MERGE" --dump "$T/t.isc"
	[[ "$output" != *"hostile_agent"* ]]
}

@test "a FIFO planted as <pid>.shm does not block the recorder" {
	attack fifo
	[[ "$err" == *".shm: not a regular file"* ]]
}

@test "a file others could read is refused" {
	attack mode
	[[ "$err" == *".shm: not owned by us with mode 0600"* ]]
}

# The allocation shim's file (<pid>.alloc.shm): its site table is read
# once the process has died; what does not check out is a stated gap
# (WARNING 15), the ring records before any damage are kept.

@test "allocation site table: a header claiming 2^20 entries past its file is refused, a stated gap" {
	attack alloc-header
	[[ "$err" == *"the allocation site table of pid "*" is corrupt (it lies outside its file): not written, its allocation sites are unknown"* ]]
	run -0 "$MERGE" --dump-times "$T/t.isc"
	# the ten valid ALLOC records (tid 7, 100 bytes) are kept; the hostile
	# process has no ALLOC_SITE and no last ALLOC_INFO, the legit one has
	[ "$(grep -c ' T[0-9]* alloc malloc size=100 weight=524338 ' <<< "$output")" -eq 10 ]
	[ "$(grep -c ' WARNING 15 the allocation site table of pid ' <<< "$output")" -eq 1 ]
	[ "$(grep -c ' alloc_info phase=2 ' <<< "$output")" -eq 1 ]
}

@test "allocation site table: corrupt entries are left out and counted, the valid ones written" {
	attack alloc-entries
	[[ "$err" == *"the allocation site table of pid "*" had 5 corrupt entries: those sites are not written"* ]]
	run -0 "$MERGE" --dump-times "$T/t.isc"
	# entries 1 to 3: live 1000, 2000, 3000 (alloc live + 500, 500 freed)
	[ "$(grep -cE ' alloc_site [123] live=(1000|2000|3000) err=0 n=1 alloc=[0-9]+/2 free=500/1 ' <<< "$output")" -eq 3 ]
	[ "$(grep -cE ' alloc_site [4-8] ' <<< "$output")" -eq 0 ]
	[ "$(grep -c ' alloc_info phase=2 interval=524288 flags=0 samples=0 frees=0 sites=3 lost_sites=0 lost_ptrs=0 bad=5' <<< "$output")" -eq 1 ]
}

@test "allocation site table: random bytes in it and in its header" {
	attack alloc-random
}

@test "allocation records: an ALLOC with 100 frames breaks its ring, the records before it are kept" {
	attack alloc-record
	[[ "$err" == *"corrupt record in shared memory; rest of its ring discarded"* ]]
	run -0 "$MERGE" --dump-times "$T/t.isc"
	[ "$(grep -c ' T[0-9]* alloc malloc size=100 weight=524338 ' <<< "$output")" -eq 10 ]
}
