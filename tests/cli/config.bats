#!/usr/bin/env bats
# ./.inferscope.yaml across the four tools (issue 18, deliverable 8): an
# unknown key at any level is warned about once with the file, the line
# and a did-you-mean; a key another tool reads is no error for this one;
# sizes take units and a bare number is MiB wherever it is given.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
}

teardown() {
	rm -rf "$T"
}

# file_keys TOOL: the file keys TOOL's --help lists (fails when --help
# fails or lists none)
file_keys() {
	set -o pipefail
	"$ISC_BUILD/tools/iscope-$1/iscope-$1" --help | grep -o 'file key [a-z_0-9]*' | sed 's/file key //' | sort -u
}

@test "every tool's file keys are known to the others (lib/common/config.c known_keys)" {
	# a top-level key of tool U, given to tool T that does not have it, is silent
	for t in record merge analyze report; do
		file_keys "$t" > "$T/own"
		: > "$T/.inferscope.yaml"
		for u in record merge analyze report; do
			[ "$u" = "$t" ] && continue
			file_keys "$u" > "$T/keys"
			# the keys of U that T does not have (none is fine: awk, not grep -v)
			awk 'NR == FNR { own[$0] = 1; next } !($0 in own) { print $0 ": 1" }' "$T/own" "$T/keys" >> "$T/.inferscope.yaml"
		done
		sort -u -o "$T/.inferscope.yaml" "$T/.inferscope.yaml"
		[ -s "$T/.inferscope.yaml" ]
		cd "$T"
		run --separate-stderr "$ISC_BUILD/tools/iscope-$t/iscope-$t" --show-config
		cd - > /dev/null
		[ "$status" -eq 0 ]
		echo "iscope-$t: $stderr"
		[ -z "$stderr" ]
	done
}

@test "unknown top-level keys: each tool warns once, with file, line and a suggestion" {
	printf 'sample-hz: 10\nsmaple_hz: 5\nsmaple_hz: 6\n' > "$T/.inferscope.yaml"
	cd "$T"
	for t in record merge analyze report; do
		run --separate-stderr "$ISC_BUILD/tools/iscope-$t/iscope-$t" --show-config
		[ "$status" -eq 0 ]
		[ "${#stderr_lines[@]}" -eq 2 ]
		[ "${stderr_lines[0]}" = "iscope-$t: ./.inferscope.yaml:1: unknown key 'sample-hz' (ignored; did you mean 'sample_hz'?)" ]
		[ "${stderr_lines[1]}" = "iscope-$t: ./.inferscope.yaml:2: unknown key 'smaple_hz' (ignored; did you mean 'sample_hz'?)" ]
	done
}

@test "a typo in a tool's section is warned by that tool only" {
	printf 'analyze:\n  prety: true\n' > "$T/.inferscope.yaml"
	cd "$T"
	run --separate-stderr "$ANALYZE" --show-config
	[ "$stderr" = "iscope-analyze: ./.inferscope.yaml:2: unknown key 'prety' in section 'analyze' (ignored; did you mean 'pretty'?)" ]
	run --separate-stderr "$MERGE" --show-config
	[ -z "$stderr" ]
}

@test "a bad value in the file is refused with its file and line, exit 2, by the tool that reads it" {
	cd "$BATS_TEST_TMPDIR"
	printf 'quiet: true\npython: exakt\n' >.inferscope.yaml
	run --separate-stderr "$RECORD" -o x.isc -- true
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-record: invalid value 'exakt' for --python (from ./.inferscope.yaml:2): expected auto, exact or sample" ]
	printf 'sample_hz: banana\n' >.inferscope.yaml
	run --separate-stderr "$RECORD" -o x.isc -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"invalid value 'banana' for --sample-hz (from ./.inferscope.yaml:1): expected a whole number"* ]]
	printf 'threshold: -5\n' >.inferscope.yaml
	run --separate-stderr "$ANALYZE" --baseline x.json y.json
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"invalid value '-5' for --threshold (from ./.inferscope.yaml:1): expected a number above 0 and below 1000"* ]]
	printf 'format: htm\n' >.inferscope.yaml
	run --separate-stderr "$REPORT" -o r.out
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"invalid value 'htm' for --format (from ./.inferscope.yaml:1): expected md, markdown, html, folded or speedscope"* ]]
	[ ! -e r.out ]
}

@test "top-level format: html does not break the README pipe; the report is HTML" {
	printf 'format: html\n' > "$T/.inferscope.yaml"
	cd "$T"
	run --separate-stderr bash -c '"$1" -q -- "$2" -c "sum(range(1000))" | "$3" | "$4" | "$5" -o report.md' \
		_ "$RECORD" "$PY" "$MERGE" "$ANALYZE" "$REPORT"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	grep -q '<html' report.md
	run "$MERGE" --show-config
	[[ "$output" == *"format = timeline  (default)"* ]]
	# merge's own format under merge:
	printf 'format: html\nmerge:\n  format: chrome\n' > "$T/.inferscope.yaml"
	run "$MERGE" --show-config
	[[ "$output" == *"format = chrome  (./.inferscope.yaml:3)"* ]]
}

@test "--trace-size=400 and INFERSCOPE_TRACE_SIZE_MB=400 mean the same (MiB); units anywhere" {
	# the ring of each thread is the budget / 64 rounded down to a power of two,
	# given to the agent in KiB: 400 MiB / 64 = 6.25 MiB -> 4096 KiB (400 bytes
	# would give the 64 KiB minimum)
	ring_kb() {
		"$@" -q -o "$T/t.isc" -- "$PY" -c 'import os; print(os.environ["INFERSCOPE_RING_KB"])'
	}
	[ "$(ring_kb "$RECORD" --trace-size=400)" = 4096 ]
	[ "$(INFERSCOPE_TRACE_SIZE_MB=400 ring_kb "$RECORD")" = 4096 ]
	[ "$(ring_kb "$RECORD" --trace-size=400M)" = 4096 ]
	[ "$(INFERSCOPE_TRACE_SIZE_MB=400M ring_kb "$RECORD")" = 4096 ]
	printf 'record:\n  trace_size_mb: 400\n' > "$T/.inferscope.yaml"
	cd "$T"
	[ "$(ring_kb "$RECORD")" = 4096 ]
}
