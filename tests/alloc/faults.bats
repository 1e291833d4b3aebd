#!/usr/bin/env bats
# Allocation sampling under faults (issue 25, item 7): a workload that
# defines malloc itself, a static binary, a fork without exec, threads
# allocating at once, an allocation storm, and rings too small for it.  Each either works or
# degrades to a gap the trace states (a WARNING, a DROPPED count, the site
# table's counts), never a crash or a hang: the workload's status and
# output are its own, and the trace merges.  (A hostile or corrupt site
# table: tests/security/hostile.bats.)

load ../cli/helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	WL=$ISC_SRC/tests/alloc/workloads
}

teardown() {
	rm -rf "$T"
}

line_of() {
	grep -n "$2" "$1" | head -1 | cut -d: -f1
}

@test "a program that defines malloc itself: it runs as without us, and the trace says its malloc is not seen" {
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$ISC_MALLOC_OVERRIDE"
	[ "$status" -eq 0 ]
	[ "$output" = "override: done" ]
	run -0 "$MERGE" --dump-times "$T/t.isc"
	[[ $output == *"WARNING 16 malloc is defined by $ISC_MALLOC_OVERRIDE, which comes before the allocation shim"* ]]
	# no sample of its own malloc; its 32 MiB mmap (libc's) is sampled
	[ "$(grep -c ' alloc malloc ' <<< "$output")" -eq 0 ]
	[ "$(grep -c ' alloc mmap size=33554432 ' <<< "$output")" -eq 1 ]
	[ "$(grep -c ' alloc_info phase=0 interval=524288 flags=2 ' <<< "$output")" -eq 1 ]
}

@test "a static binary: it runs, and a note and a WARNING say its allocations were not sampled" {
	[[ -n ${ISC_STATIC_ALLOC:-} ]] || skip "MACHINE ASSUMPTION NOT MET: no static C library (libc6-dev's libc.a) to build tests/alloc/static_alloc.c"
	run --separate-stderr "$RECORD" -o "$T/t.isc" -- "$ISC_STATIC_ALLOC"
	[ "$status" -eq 0 ]
	[ "$output" = "static: done" ]
	[[ $stderr == *"note: $ISC_STATIC_ALLOC is a static executable, which LD_PRELOAD cannot enter: its allocations were not sampled"* ]]
	run -0 "$MERGE" --dump "$T/t.isc"
	[[ $output == *"WARNING 16 $ISC_STATIC_ALLOC is a static executable"* ]]
	run -0 "$MERGE" --dump-times "$T/t.isc"
	[ "$(grep -c ' alloc ' <<< "$output")" -eq 0 ]
}

@test "fork without exec: each process samples its own allocations, in its own file and table" {
	local parent child
	parent=$(line_of "$WL/fork_noexec.py" "# PARENT$")
	child=$(line_of "$WL/fork_noexec.py" "# CHILD$")
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/fork_noexec.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times -o "$T/dump" "$T/t.isc"
	# 8 MiB bytearrays are sampled with probability 1 - e^-16: all of them,
	# the parent's 4 under its process, the child's 4 under its own
	p1=$(grep -E " P1 T[0-9]+ alloc malloc size=8388609 .* parent_keep [^ ]*fork_noexec.py:[0-9]+:$parent " "$T/dump" | wc -l)
	p2=$(grep -E " P2 T[0-9]+ alloc malloc size=8388609 .* child_keep [^ ]*fork_noexec.py:[0-9]+:$child " "$T/dump" | wc -l)
	[ "$p1" -eq 4 ]
	[ "$p2" -eq 4 ]
	[ "$(grep -cE " P2 T[0-9]+ alloc .* parent_keep " "$T/dump")" -eq 0 ]
	# the child's stacks name their callers (names the parent defined are
	# not the child's: it defines them again in its own file)
	[ "$(grep -cE " P2 T[0-9]+ alloc .* child_keep [^ ]*fork_noexec.py:[0-9]+:$child <module> [^ ]*fork_noexec.py:1:" "$T/dump")" -eq 4 ]
	[ "$(grep -E ' (alloc|free|alloc_site) ' "$T/dump" | grep -c '<unknown #')" -eq 0 ]
	[ "$(grep -cE " P1 T[0-9]+ alloc .* child_keep " "$T/dump")" -eq 0 ]
	# a site table for each, read when it ended
	[ "$(grep -cE ' P[12] alloc_info phase=2 ' "$T/dump")" -eq 2 ]
	"$ISC_ALLOC_DUMP" --warmup 0 "$T/t.isc" > "$T/sites"
	run jq -c "select(.function == \"child_keep\" and .line == $child) | [.pid, .alloc_count]" "$T/sites"
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} =~ ^\[([0-9]+),4\]$ ]]
	cpid=${BASH_REMATCH[1]}
	run jq -c "select(.function == \"parent_keep\" and .line == $parent) | [.pid, .alloc_count]" "$T/sites"
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} =~ ^\[([0-9]+),4\]$ ]]
	[ "${BASH_REMATCH[1]}" -ne "$cpid" ]
}

@test "threads: four threads allocating at once, each sample under its own thread" {
	local keep
	keep=$(line_of "$WL/threads.py" "# KEEP$")
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/threads.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times -o "$T/dump" "$T/t.isc"
	# 8 MiB allocations are sampled with probability 1 - e^-16: all 32, 8 a thread
	grep -E " P1 T[0-9]+ alloc malloc size=8388609 .* work [^ ]*threads.py:[0-9]+:$keep " "$T/dump" |
		awk '{ print $3 }' | sort | uniq -c | awk '{ print $1 }' > "$T/per_thread"
	[ "$(wc -l < "$T/per_thread")" -eq 4 ]
	[ "$(grep -c '^8$' "$T/per_thread")" -eq 4 ]
	[ "$(grep -E ' (alloc|free|alloc_site) ' "$T/dump" | grep -c '<unknown #')" -eq 0 ]
}

@test "an allocation storm (10 million objects) at the default interval: the workload finishes, nothing is lost" {
	run --separate-stderr timeout 120 "$RECORD" -o "$T/t.isc" -- "$PY" "$WL/storm.py" 10000000
	[ "$status" -eq 0 ]
	[ "$output" = "storm: 10000000" ]
	[[ $stderr == *"(0 dropped)"* ]]
	run -0 "$MERGE" --dump "$T/t.isc"
	[[ ${lines[-1]} == "END events=0 dropped=0 "* ]]
}

@test "a storm that overflows the shim's rings: drops are counted, the site table still has every sample" {
	# a sample every 64 bytes on average: about one object in five, far
	# more records than one ring of 64 KiB (--trace-size=1M) holds between drains
	run --separate-stderr timeout 120 env INFERSCOPE_ALLOC_RINGS=1 "$RECORD" --memory-sampling=64 --trace-size=1M \
		-o "$T/t.isc" -- "$PY" "$WL/storm.py" 2000000
	[ "$status" -eq 0 ]
	[ "$output" = "storm: 2000000" ]
	[[ $stderr =~ \(([0-9]+)\ dropped\) ]]
	dropped=${BASH_REMATCH[1]}
	[ "$dropped" -gt 0 ]
	"$MERGE" --dump-times -o "$T/dump" "$T/t.isc"
	[[ $(tail -1 "$T/dump") == "END "*" dropped=$dropped "* ]]
	# the table counted every sample, the records are fewer
	[[ $(grep ' alloc_info phase=2 ' "$T/dump") =~ \ samples=([0-9]+)\  ]]
	samples=${BASH_REMATCH[1]}
	records=$(grep -c ' alloc ' "$T/dump")
	[ "$records" -lt "$samples" ]
	# the model takes the object() line's counts from the table
	"$ISC_ALLOC_DUMP" --warmup 0 "$T/t.isc" > "$T/sites"
	[ "$(jq -c "select(.line == $(line_of "$WL/storm.py" "^    object()$")) | .from_table" "$T/sites")" = true ]
}
