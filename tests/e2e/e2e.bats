#!/usr/bin/env bats
# End-to-end tests: real PyTorch workloads (tests/e2e/workloads/) recorded
# with iscope-record, merged, analyzed and reported.
#
# Tools come from $ISC_BUILD/tools/iscope-X/iscope-X; ISC_BUILD defaults to
# "build" and a relative path is taken from the repository root. The Python
# interpreter is the one scripts/find-python.sh picks (INFERSCOPE_PYTHON
# overrides it).

setup_file() {
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	ISC_PY=$("$ROOT/scripts/find-python.sh" 2>"$BATS_FILE_TMPDIR/find-python.err") || ISC_PY=
	export ROOT ISC_BUILD ISC_PY
	export WL=$ROOT/tests/e2e/workloads
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	export ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	export REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
}

setup() {
	local t
	for t in "$REC" "$MERGE" "$ANALYZE" "$REPORT"; do
		if [[ ! -x $t ]]; then
			echo "missing tool: $t (build first, or set ISC_BUILD)" >&2
			return 1
		fi
	done
	if [[ -z $ISC_PY ]]; then
		cat "$BATS_FILE_TMPDIR/find-python.err" >&2
		return 1
	fi
}

teardown() {
	# Processes a failed test may have left running (pids it wrote down).
	local f
	for f in "$BATS_TEST_TMPDIR"/*.bgpid; do
		if [[ -f $f ]]; then
			kill -KILL "$(<"$f")" 2>/dev/null || true
		fi
	done
}

# ---- helpers: the places to adjust when a format detail changes ----------

# record TRACE CMD...: record CMD into TRACE; fails when the recorder does.
record() {
	local trace=$1
	shift
	"$REC" --quiet -o "$trace" -- "$@"
}

# analyze TRACE FINDINGS: iscope-merge | iscope-analyze, both must exit 0.
analyze() {
	set -o pipefail
	"$MERGE" "$1" | "$ANALYZE" >"$2"
	"$ROOT/tests/lib/validate_findings.py" "$2"
}

# jqr FINDINGS FILTER: raw jq output.
jqr() {
	jq -r "$2" "$1"
}

# count_calls FUNC DUMP: calls of FUNC in an `iscope-merge --dump` text.
# The dump format is not fixed yet: a begin line is taken to look like
# "B <fields> FUNC <more fields>".
count_calls() {
	# grep -c prints 0 and exits 1 when nothing matches; 2 (no file) fails
	grep -c -E "B .* $1 " "$2" || [ $? -eq 1 ]
}

# report_lead REPORT: the opening sentence, i.e. the first non-empty line
# that is not a heading.
report_lead() {
	awk 'NF && !/^#/ { print; exit }' "$1"
}

# report_section REPORT TITLE: the lines of the section headed TITLE, its
# subsections included (up to the next heading of the same or a higher level).
report_section() {
	awk -v title="$2" '
		/^#+[[:space:]]/ {
			level = match($0, /[^#]/) - 1
			t = $0; sub(/^#+[[:space:]]+/, "", t); sub(/[[:space:]]+$/, "", t)
			if (inside && level <= inside) inside = 0
			if (!inside && t == title) { inside = level; next }
		}
		inside' "$1"
}

# first_named TEXT_FILE NAME...: the first of NAMEs to occur in the file.
first_named() {
	local file=$1 re
	shift
	re=$(IFS='|'; echo "$*")
	grep -o -w -E "$re" "$file" | head -n 1
}

# wait_for_file FILE PID TRIES: poll (20 ms steps) until FILE is non-empty;
# fail early when PID exits first.
wait_for_file() {
	local i
	for ((i = 0; i < $3; i++)); do
		[[ -s $1 ]] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

file_size() {
	stat -c %s "$1" 2>/dev/null || echo 0
}

# hot_function: record tests/e2e/workloads/hot_function.py (25 steps) once
# per file run; leaves trace.isc, findings.json and report.md in $HOT.
HOT=
hot_function() {
	HOT=$BATS_FILE_TMPDIR/hot
	[[ -s $HOT/report.md ]] && return 0
	mkdir -p "$HOT"
	record "$HOT/trace.isc" "$ISC_PY" "$WL/hot_function.py" 25
	analyze "$HOT/trace.isc" "$HOT/findings.json"
	"$REPORT" -o "$HOT/report.md" "$HOT/findings.json"
}

# ---- tests -----------------------------------------------------------------

@test "hot function: findings rank crunch first by self time, with file:line" {
	hot_function
	local line
	line=$(grep -n '^def crunch' "$WL/hot_function.py" | cut -d: -f1)
	run jqr "$HOT/findings.json" '.cpu.top_functions[0] | "\(.name)\t\(.kind)\t\(.file)\t\(.line)"'
	echo "top function: $output"
	[ "$status" -eq 0 ]
	IFS=$'\t' read -r name kind file fline <<<"$output"
	[[ $name == *crunch ]]
	[ "$kind" = python ]
	[[ $file == *hot_function.py ]]
	[ "$fline" -eq "$line" ]
}

@test "hot function: the report names crunch first" {
	hot_function
	local line lead cpu
	line=$(grep -n '^def crunch' "$WL/hot_function.py" | cut -d: -f1)
	lead=$(report_lead "$HOT/report.md")
	echo "opening sentence: $lead"
	[[ $lead == *crunch* ]]
	[[ $lead == *hot_function.py:$line* ]]
	report_section "$HOT/report.md" CPU >"$BATS_TEST_TMPDIR/cpu.md"
	[ -s "$BATS_TEST_TMPDIR/cpu.md" ]
	cpu=$(first_named "$BATS_TEST_TMPDIR/cpu.md" crunch tokenize checksum)
	echo "first function in the CPU section: $cpu"
	[ "$cpu" = crunch ]
}

@test "hot function: iterations.count equals the 25 scopes executed" {
	hot_function
	run jqr "$HOT/findings.json" '.iterations.count'
	echo "iterations.count: $output"
	[ "$output" = 25 ]
	run jqr "$HOT/findings.json" '.iterations.latency_ns | .p50 > 0 and .p50 <= .p90 and .p90 <= .p99'
	echo "latency_ns ordered: $output"
	[ "$output" = true ]
}

@test "4-thread workload: every worker thread is listed by name" {
	local d=$BATS_TEST_TMPDIR names i
	record "$d/t.isc" "$ISC_PY" "$WL/threads4.py"
	analyze "$d/t.isc" "$d/f.json"
	names=$(jqr "$d/f.json" '.processes[0].threads[].name')
	echo "threads: $names"
	for i in 0 1 2 3; do
		grep -qx "worker-$i" <<<"$names"
	done
}

@test "DataLoader with 2 workers: 3 processes" {
	local d=$BATS_TEST_TMPDIR
	record "$d/dl.isc" "$ISC_PY" "$WL/dataloader2.py"
	analyze "$d/dl.isc" "$d/f.json"
	run jqr "$d/f.json" '.processes | length'
	echo "processes: $output"
	[ "$output" = 3 ]
}

@test "workload killed with SIGKILL: the trace still merges and analyzes" {
	local d=$BATS_TEST_TMPDIR rec pid size0 i rc=0
	# 3>&-: bats waits for fd 3 to close; the recorder must not hold it.
	"$REC" --quiet -o "$d/kill.isc" -- "$ISC_PY" "$WL/killme.py" "$d/pid" 3>&- &
	rec=$!
	echo "$rec" >"$d/rec.bgpid"
	wait_for_file "$d/pid" "$rec" 1500
	pid=$(<"$d/pid")
	echo "$pid" >"$d/py.bgpid"
	# Give the drain thread a chance to stream a chunk past what exists
	# now; bounded (at most ~10 s), not required.
	size0=$(file_size "$d/kill.isc")
	for ((i = 0; i < 500; i++)); do
		(($(file_size "$d/kill.isc") > size0)) && break
		sleep 0.02
	done
	kill -KILL "$pid"
	wait "$rec" || rc=$?
	rm -f "$d"/*.bgpid
	echo "iscope-record exit status: $rc; trace $(file_size "$d/kill.isc") bytes"
	[ "$rc" -eq 137 ]
	analyze "$d/kill.isc" "$d/f.json"
	run jqr "$d/f.json" '.summary.events'
	echo "summary.events: $output"
	[ "$output" -gt 0 ]
}

@test "pure Python: the same call counts under every CPython 3.9-3.13" {
	local d=$BATS_TEST_TMPDIR py v n leaf mid bad=0
	n=0
	for py in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3 /usr/bin/python3.[0-9]* /usr/bin/python3; do
		[[ -x $py ]] || continue
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
		case $v in 3.9 | 3.1[0-3]) ;; *) continue ;; esac
		n=$((n + 1))
		# call counts: exact mode (sampling counts no calls)
		"$REC" --quiet --python=exact -o "$d/p$n.isc" -- "$py" "$WL/pure_python.py"
		"$MERGE" --dump "$d/p$n.isc" >"$d/p$n.dump"
		leaf=$(count_calls leaf "$d/p$n.dump")
		mid=$(count_calls mid "$d/p$n.dump")
		echo "$py (CPython $v): leaf $leaf, mid $mid"
		if [[ $leaf != 10000 || $mid != 100 ]]; then
			bad=$((bad + 1))
		fi
	done
	echo "interpreters: $n, wrong counts: $bad"
	[ "$n" -ge 1 ]
	[ "$bad" -eq 0 ]
}

@test "DataLoader workers (not the recorder's children) end when they exit, not at the end of the run" {
	local d=$BATS_TEST_TMPDIR
	record "$d/dl.isc" "$ISC_PY" "$WL/dataloader2.py"
	"$MERGE" --dump-times "$d/dl.isc" > "$d/dump.txt"
	# two workers reported gone, the workload's own exit seen
	[ "$(grep -c ' EXIT 0 (gone, status not seen)$' "$d/dump.txt")" -eq 2 ]
	local main_exit worker_exit
	main_exit=$(awk '/ P1 EXIT /{print $1}' "$d/dump.txt")
	worker_exit=$(awk '/ EXIT 0 \(gone/{print $1}' "$d/dump.txt" | sort -n | tail -1)
	echo "main exit $main_exit, last worker gone $worker_exit"
	[ "$worker_exit" -lt "$main_exit" ]
}
