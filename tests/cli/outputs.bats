#!/usr/bin/env bats
# Every tool against every kind of bad output path (issue 18, deliverable 1):
# a directory that cannot be written (EACCES), a directory that does not
# exist (ENOENT) and a full device (/dev/full, ENOSPC).  No tool crashes
# (exit 139 was fclose(NULL)); each exits 1 with one line naming the path;
# a path that cannot be opened is found before the long work (the workload
# is not started, the input is not read); the front end never deletes the
# trace when the report fails, and says where it kept it.

load helpers
bats_require_minimum_version 1.5.0

FE=$ISC_BUILD/tools/inferscope/inferscope

setup() {
	T=$(mktemp -d)
	printf 'import sys\nopen(sys.argv[1], "w").write("ran")\n' > "$T/mark.py"
	"$RECORD" -q -o "$T/t.isc" -- "$PY" -c 'sum(i for i in range(1000))'
	"$MERGE" -o "$T/t.istl" "$T/t.isc"
	"$ANALYZE" -o "$T/f.json" "$T/t.istl"
	# root creates files anywhere except in sysfs (EACCES there for everyone)
	if [ "$(id -u)" -eq 0 ]; then
		RO=/sys
	else
		mkdir "$T/ro"
		chmod 0500 "$T/ro"
		RO=$T/ro
	fi
	# paths: unwritable, missing directory, full device
	BAD_EACCES=$RO/out.x
	BAD_ENOENT=$T/missing/dir/out.x
}

teardown() {
	chmod -R u+w "$T" 2>/dev/null || true
	rm -rf "$T"
}

# check_fail PATH: status 1, no crash, one error line naming PATH and the cause
check_fail() {
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"$1"* ]]
	[[ "$stderr" == *"Permission denied"* || "$stderr" == *"No such file or directory"* || "$stderr" == *"No space left on device"* ]]
	[[ "$stderr" != *"Segmentation"* ]]
}

@test "iscope-record: unwritable and missing-directory outputs fail before the workload starts" {
	for p in "$BAD_EACCES" "$BAD_ENOENT"; do
		run --separate-stderr "$RECORD" -q -o "$p" -- "$PY" "$T/mark.py" "$T/ran"
		check_fail "$p"
		[ ! -e "$T/ran" ]
	done
}

@test "iscope-record: /dev/full fails with the workload's status, not a crash" {
	run --separate-stderr "$RECORD" -q -o /dev/full -- "$PY" "$T/mark.py" "$T/ran"
	check_fail /dev/full
	[ -e "$T/ran" ]
}

@test "iscope-merge: every bad output exits 1 naming the path" {
	for p in "$BAD_EACCES" "$BAD_ENOENT" /dev/full; do
		run --separate-stderr "$MERGE" -o "$p" "$T/t.isc"
		check_fail "$p"
	done
}

@test "iscope-analyze: every bad output exits 1 naming the path" {
	for p in "$BAD_EACCES" "$BAD_ENOENT" /dev/full; do
		run --separate-stderr "$ANALYZE" -o "$p" "$T/t.istl"
		check_fail "$p"
	done
}

@test "iscope-analyze: a bad output path is found before the input is read" {
	# stdin is a pipe nobody writes to or closes: reading it would hang
	mkfifo "$T/fifo"
	sleep 60 > "$T/fifo" &
	holder=$!
	run --separate-stderr timeout 20 "$ANALYZE" -o "$BAD_ENOENT" "$T/fifo"
	kill "$holder"
	check_fail "$BAD_ENOENT"
}

@test "iscope-report: every bad output exits 1 naming the path (was a segfault)" {
	for p in "$BAD_EACCES" "$BAD_ENOENT" /dev/full; do
		run --separate-stderr "$REPORT" -o "$p" "$T/f.json"
		check_fail "$p"
	done
	# HTML too
	run --separate-stderr "$REPORT" -o "$BAD_ENOENT.html" "$T/f.json"
	check_fail "$BAD_ENOENT.html"
}

@test "iscope-report: a bad output path is found before the input is read" {
	mkfifo "$T/fifo"
	sleep 60 > "$T/fifo" &
	holder=$!
	run --separate-stderr timeout 20 "$REPORT" -o "$BAD_EACCES" "$T/fifo"
	kill "$holder"
	check_fail "$BAD_EACCES"
}

@test "a failed output leaves no empty file behind" {
	run --separate-stderr "$REPORT" -o "$T/r.md" "$T/missing.json"
	[ "$status" -eq 1 ]
	[ ! -e "$T/r.md" ]
	run --separate-stderr "$ANALYZE" -o "$T/f2.json" "$T/missing.istl"
	[ "$status" -eq 1 ]
	[ ! -e "$T/f2.json" ]
}

@test "inferscope run: an unwritable or missing report directory is refused before the workload runs" {
	for p in "$BAD_EACCES" "$BAD_ENOENT"; do
		INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" run --report "$p" "$T/mark.py" "$T/ran"
		check_fail "$p"
		[ ! -e "$T/ran" ]
	done
	INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" run --trace "$BAD_ENOENT" "$T/mark.py" "$T/ran"
	check_fail "$BAD_ENOENT"
	[ ! -e "$T/ran" ]
}

@test "inferscope run: a report that fails to write keeps the trace and says where" {
	cd "$T"
	before=$(ls "${TMPDIR:-/tmp}" | grep -c '^inferscope-trace' || true)
	INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" run --report /dev/full "$T/mark.py" "$T/ran"
	[ "$status" -eq 1 ]
	[ -e "$T/ran" ]
	[[ "$stderr" != *"Segmentation"* ]]
	[[ "$stderr" == *"/dev/full"*"No space left on device"* ]]
	# "inferscope: the trace is kept in PATH"
	kept=$(printf '%s\n' "$stderr" | sed -n 's/^inferscope: the trace is kept in \(.*\)$/\1/p')
	[ -n "$kept" ]
	[ -s "$kept" ]
	run "$MERGE" --dump "$kept"
	[ "$status" -eq 0 ]
	rm -f "$kept"
	after=$(ls "${TMPDIR:-/tmp}" | grep -c '^inferscope-trace' || true)
	[ "$after" -eq "$before" ]
}

@test "inferscope analyze: every bad report path exits 1 naming it, the input untouched" {
	for p in "$BAD_EACCES" "$BAD_ENOENT" /dev/full; do
		run --separate-stderr "$FE" analyze --report "$p" "$T/t.isc"
		check_fail "$p"
		[ -s "$T/t.isc" ]
	done
}
