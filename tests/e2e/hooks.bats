#!/usr/bin/env bats
# The exact mode's two hooks: sys.monitoring (CPython 3.12+) and the
# profile function (3.9-3.11, or INFERSCOPE_PY_HOOK=setprofile) record the
# same calls.  workloads/hook_parity.py makes known calls of every kind the
# hooks map (Python calls, generator starts and resumes, calls that raise,
# builtins, method descriptors), in the main thread and two threads.
#
# Known difference, not compared: sys.monitoring sees a thread from the
# moment threading registers it, the profile hook from its run(), so the
# monitoring trace has one more RLock.__exit__ per thread (the `with
# _active_limbo_lock:` around the registration).

setup_file() {
	# exact Python mode: these tests check the exact mode's two hooks
	export INFERSCOPE_PYTHON_MODE=exact
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	export ROOT ISC_BUILD
	export WL=$ROOT/tests/e2e/workloads
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
}

# counts PY HOOK OUT: records hook_parity.py with PY and INFERSCOPE_PY_HOOK=HOOK,
# writes "count kind name" of the workload's functions and of the C
# functions work() calls, one per line, to OUT; first line the hook the
# trace's CALIBRATION names.
counts() {
	local t=$BATS_TEST_TMPDIR
	INFERSCOPE_PY_HOOK=$2 "$REC" -q -o "$t/h.isc" -- "$1" "$WL/hook_parity.py"
	"$MERGE" --dump "$t/h.isc" > "$t/h.dump"
	{
		grep -m 1 -o 'CALIBRATION .*' "$t/h.dump"
		grep -o ' B [a-z]* [^ ]*' "$t/h.dump" |
			grep -E ' (leaf|gen|boom|work|list\.append|builtins\.sum|str\.join)$' | sort | uniq -c
	} > "$3"
}

# expected: 3 runs of work() (hook_parity.py's docstring)
check_expected() {
	grep -q -x ' *4500  B python leaf' "$1" || echo "leaf"
	grep -q -x ' *1503  B python gen' "$1" || echo "gen"
	grep -q -x ' *300  B python boom' "$1" || echo "boom"
	grep -q -x ' *3  B python work' "$1" || echo "work"
	grep -q -x ' *3  B op builtins\.sum' "$1" || echo "builtins.sum"
	local n
	n=$(awk '$4 == "list.append" { print $1 }' "$1")
	[[ ${n:-0} -ge 3000 ]] || echo "list.append $n"
	n=$(awk '$4 == "str.join" { print $1 }' "$1")
	[[ ${n:-0} -ge 3 ]] || echo "str.join $n"
}

@test "sys.monitoring and the profile hook record the same calls (CPython 3.12, 3.13)" {
	local t=$BATS_TEST_TMPDIR py v n=0
	for v in 3.12 3.13; do
		py=$(ls -d /root/.pyenv/versions/$v.*/bin/python3 2>/dev/null | head -n 1)
		[[ -x $py ]] || continue
		n=$((n + 1))
		counts "$py" "" "$t/mon.$v"
		counts "$py" setprofile "$t/prof.$v"
		cat "$t/mon.$v"
		run head -n 1 "$t/mon.$v"
		[ "$output" = "CALIBRATION sys.monitoring" ]
		run head -n 1 "$t/prof.$v"
		[ "$output" = "CALIBRATION setprofile" ]
		run diff <(tail -n +2 "$t/mon.$v") <(tail -n +2 "$t/prof.$v")
		[ "$status" -eq 0 ]
		run check_expected "$t/mon.$v"
		[ "$output" = "" ]
	done
	[ "$n" -ge 1 ] || skip "no CPython 3.12 or 3.13 under /root/.pyenv"
}

@test "the profile hook on CPython 3.11 records the same known calls" {
	local t=$BATS_TEST_TMPDIR
	py=$("$ROOT/scripts/find-python.sh" 2>/dev/null) || py=/usr/bin/python3
	counts "$py" "" "$t/c"
	run head -n 1 "$t/c"
	[ "$output" = "CALIBRATION setprofile" ]
	run check_expected "$t/c"
	[ "$output" = "" ]
}
