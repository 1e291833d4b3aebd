#!/usr/bin/env bats
# Every bad-input fixture of tests/data/bad (see its README) through every
# reading tool: no crash (exit 0 or 1, never a signal), at most one line on
# stderr naming the tool and the file, and for each fixture the outcome its
# README states.  The fuzz replay tests run the same files through the
# library readers under the sanitizers.

load helpers
bats_require_minimum_version 1.5.0

BAD=$ISC_SRC/tests/data/bad

# tool_on TOOL FILE: runs TOOL on FILE (output discarded); sets status and stderr.
tool_on() {
	case $1 in
	merge) run --separate-stderr "$MERGE" --dump "$2" ;;
	analyze) run --separate-stderr "$ANALYZE" "$2" ;;
	report) run --separate-stderr "$REPORT" "$2" ;;
	esac
}

@test "every tool on every bad fixture: exit 0 or 1, at most one message line" {
	n=0
	for f in "$BAD"/*; do
		case ${f##*/} in README.md | make-fixtures.py) continue ;; esac
		for tool in merge analyze report; do
			tool_on "$tool" "$f"
			if ((status != 0 && status != 1)) || ((${#stderr_lines[@]} > 1)); then
				echo "# $tool ${f##*/}: status $status, stderr: $stderr" >&3
				return 1
			fi
			if ((status == 1)); then
				[[ "${stderr_lines[0]}" == "iscope-$tool: $f: "* ]]
			fi
			n=$((n + 1))
		done
	done
	[ "$n" -ge 60 ]
}

# expect TOOL FILE STATUS TEXT: TOOL on FILE exits STATUS, its stderr holds TEXT.
expect() {
	tool_on "$1" "$BAD/$2"
	if [[ $status -ne $3 || $stderr != *"$4"* ]]; then
		echo "# $1 $2: status $status (want $3), stderr: $stderr (want: $4)" >&3
		return 1
	fi
}

@test "traces: each fixture's stated outcome (merge and analyze)" {
	for tool in merge analyze; do
		expect $tool text.isc 1 "corrupt frame at byte 0"
		expect $tool empty.isc 1 "empty input"
		expect $tool truncated.isc 1 "truncated frame at byte"
		expect $tool flipped-byte.isc 1 "bad checksum"
		expect $tool bad-chunk-magic.isc 1 "bad chunk header"
		expect $tool reserved-flags.isc 1 "bad chunk header"
		expect $tool wrong-payload-len.isc 1 "bad chunk header"
		expect $tool version-9.isc 1 "unsupported format version 9.0"
		expect $tool record-past-chunk.isc 1 "corrupt record in chunk 2 (kept 2 events"
		expect $tool clock-overflow.isc 1 "corrupt record"
		expect $tool overlong-varint.isc 1 "corrupt record"
		expect $tool string-len-lies.isc 1 "corrupt record"
		expect $tool deep-unmatched.isc 0 ""
		expect $tool frame-too-large.isc 1 "bad chunk header"
	done
	expect merge truncated.istl 1 "truncated frame"
	expect merge time-beyond-limit.isc 0 "dropped 2 events more than 2^62 ns after the session epoch"
	expect analyze truncated.istl 1 "truncated frame"
	expect analyze timeline-events-corrupt.istl 1 "corrupt record"
	expect analyze timeline-time-huge.istl 1 "corrupt record (type 0x42) in events chunk 2 (analyzed 1 events)"
	expect analyze timeline-empty-events.istl 0 ""
	expect analyze timeline-string-id-huge.istl 1 "corrupt string table chunk 2"
	expect analyze timeline-source-huge.istl 1 "corrupt record (type 0x40) in events chunk 2 (analyzed 0 events)"
	expect analyze timeline-source-info-huge.istl 1 "corrupt record (type 0xa3) in events chunk 2 (analyzed 0 events)"
	# ... in bounded memory (the table it once allocated was 2 GiB)
	if [[ -x /usr/bin/time ]]; then
		st=0
		/usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss" "$ANALYZE" "$BAD/timeline-string-id-huge.istl" >/dev/null 2>&1 || st=$?
		[ "$st" -eq 1 ] # the same refusal as above, under time(1)
		[ "$(tail -n 1 "$BATS_TEST_TMPDIR/rss")" -lt $((256 * 1024)) ]
	fi
	# the prefix of a truncated trace is kept and analyzed
	run "$ANALYZE" "$BAD/truncated.isc"
	[[ "$output" == *'"end_reason":"cut"'* ]]
	run "$MERGE" --dump "$BAD/deep-unmatched.isc"
	[[ "$output" == *"<unknown #77>"* ]]
}

@test "findings documents: each fixture's stated outcome (report)" {
	expect report findings-deep.json 1 "not findings JSON: parse error at byte 1000"
	expect report findings-not-object.json 1 "the top level is not an object"
	expect report findings-truncated.json 1 "not findings JSON: parse error at byte 37"
	expect report findings-not-ours.json 1 "not a findings document (no schema_version and tool.name \"iscope-analyze\")"
	expect report findings-huge-numbers.json 0 ""
	expect report findings-nul-bytes.json 0 ""
	# absurd magnitudes in exponent form, never a cut (wrong) number
	run "$REPORT" "$BAD/findings-huge-numbers.json"
	[[ "$output" == *"Wall time 1.000e+299 s"* ]]
	[[ "$output" == *"| s | 1.000e+300 |"* ]]
	run "$REPORT" -f html "$BAD/findings-huge-numbers.json"
	[ "$status" -eq 0 ]
}
