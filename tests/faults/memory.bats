#!/usr/bin/env bats
# A long run at an accelerated event rate (a tight loop of trivial calls,
# millions of events a second, beside a thread that records a call every
# 0.3 s: the worst case for the merge's reorder window, see busy_slow.py):
# the memory of every tool stays bounded.
# The same workload runs 1.5M and 6M calls (4x longer); the peak RSS of
# record, merge, analyze and report of the long run must stay under 1.5x
# that of the short run (2.5x for the merge, whose look-ahead is a time
# window, and 320 MiB).  The bounds themselves are stated in
# docs/RELIABILITY.md; the figures measured are printed as TAP comments.
#
# record's own peak comes from its --log-level=debug line (getrusage of
# the recorder alone: /usr/bin/time would fold in the workload, its child);
# the others' from /usr/bin/time -f %M.

load helpers
# exact Python mode: these tests check millions of call records
export INFERSCOPE_PYTHON_MODE=exact
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	[[ -x /usr/bin/time ]] || skip "/usr/bin/time is missing (Debian package 'time', see scripts/install-deps.sh)"
	if ldd "$RECORD" | grep -q 'libasan\|libtsan'; then
		skip "a sanitizer build: its quarantine and shadow memory, not ours, decide the peak RSS"
	fi
}

teardown() {
	rm -rf "$T"
}

# run_all NAME CALLS: records, merges, analyzes and reports; leaves the peak
# RSS of each tool in KiB in $T/NAME.{record,merge,analyze,report}.
run_all() {
	"$RECORD" --log-level=debug -o "$T/$1.isc" -- "$PY" "$WL/busy_slow.py" "$2" "$T/$1.sync" 2> "$T/$1.err"
	grep -o 'peak RSS [0-9]* KiB' "$T/$1.err" | grep -o '[0-9]*' > "$T/$1.record"
	/usr/bin/time -f %M -o "$T/$1.merge" "$MERGE" -o "$T/$1.istl" "$T/$1.isc"
	/usr/bin/time -f %M -o "$T/$1.analyze" "$ANALYZE" -o "$T/$1.json" "$T/$1.istl"
	valid_findings "$T/$1.json"
	/usr/bin/time -f %M -o "$T/$1.report" "$REPORT" -o "$T/$1.md" "$T/$1.json"
}

# least NAME TOOL: the smaller peak of the two runs of NAME.
least() {
	sort -n "$T/$1.1.$2" "$T/$1.2.$2" | head -n 1
}

@test "peak RSS of record, merge, analyze and report does not grow with the run length" {
	# each length twice, the smaller peak kept: how far the merge must look
	# ahead depends on how late the recorder's drain thread ran (a busy
	# machine), and its buffers grow by doubling, so one run can show a
	# window twice as large without the run length mattering
	for i in 1 2; do
		run_all short.$i 1500000
		run_all long.$i 6000000
	done
	# the long run really had about 4x the events
	se=$(field "$T/short.1.sync" events)
	le=$(field "$T/long.1.sync" events)
	[ "$le" -gt $((se * 3)) ]
	for tool in record merge analyze report; do
		s=$(least short "$tool")
		l=$(least long "$tool")
		echo "# $tool: peak RSS $s KiB (1.5M calls), $l KiB (6M calls)" >&3
		[ "$s" -gt 0 ]
		if [[ $tool == merge ]]; then
			# its window is a time window (see docs/RELIABILITY.md): one
			# doubling on a busy machine is allowed, 4x growth is not;
			# and the stated bound for one busy thread, 320 MiB
			[ "$((l * 2))" -lt "$((s * 5))" ]
			[ "$l" -lt $((320 * 1024)) ]
		else
			[ "$((l * 2))" -lt "$((s * 3))" ]
		fi
	done
	echo "# trace sizes: $(stat -c %s "$T/short.1.isc") and $(stat -c %s "$T/long.1.isc") bytes" >&3
}
