#!/usr/bin/env bats
# The inferscope front-end: run, analyze, config show, usage errors.

load helpers
bats_require_minimum_version 1.5.0

FE=$ISC_BUILD/tools/inferscope/inferscope

setup() {
	T=$(mktemp -d)
	cat > "$T/work.py" <<'PY'
import sys
def busy(n):
    return sum(i * i for i in range(n))
busy(3000000)  # about 0.3 s: sampled about 30 times at the default 100 Hz
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
PY
}

teardown() {
	rm -rf "$T"
}

@test "run SCRIPT.py writes the report and keeps the workload's status" {
	cd "$T"
	INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" run --report r.md --trace t.isc work.py 5
	[ "$status" -eq 5 ]
	[[ "$stderr" == *"report written to r.md"* ]]
	grep -q '^## CPU' r.md
	grep -q 'busy' r.md
	# the default Python mode here (no GPU) and why, in the report
	grep -q '^Python recording mode: sample (--python=auto: GPU activity not traced)\.' r.md
	[ -s t.isc ]
}

@test "analyze TRACE writes a report; html by extension" {
	cd "$T"
	"$RECORD" -q -o t.isc -- "$PY" work.py
	run "$FE" analyze --report r.html t.isc
	[ "$status" -eq 0 ]
	grep -q '<html' r.html
}

@test "config show lists every tool's settings with sources" {
	run "$FE" config show
	[ "$status" -eq 0 ]
	[[ "$output" == *"[iscope-record]"*"[iscope-merge]"*"[iscope-analyze]"*"[iscope-report]"* ]]
	[[ "$output" == *"sample-hz = 20  (default)"* ]]
}

@test "usage errors exit 2, --help 0" {
	run "$FE" bogus
	[ "$status" -eq 2 ]
	run "$FE" run
	[ "$status" -eq 2 ]
	run "$FE" analyze a b
	[ "$status" -eq 2 ]
	run "$FE" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: inferscope run"* ]]
}

@test "analyze takes its options before or after the input (as inferscope(1) shows)" {
	cd "$T"
	"$RECORD" -q -o t.isc -- "$PY" work.py
	run --separate-stderr "$FE" analyze t.isc --report again.md
	[ "$status" -eq 0 ]
	grep -q '^## CPU' again.md
	run --separate-stderr "$FE" analyze --report=b.md -- t.isc
	[ "$status" -eq 0 ]
	[ -s b.md ]
	run "$FE" analyze t.isc --bogus
	[ "$status" -eq 2 ]
}

@test "--quiet: nothing but the report, before or after the command" {
	cd "$T"
	INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" --quiet run --report r.md work.py
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ -s r.md ]
	INFERSCOPE_PYTHON=$PY run --separate-stderr "$FE" run -q --report r2.md work.py
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ -s r2.md ]
	run --separate-stderr "$FE" analyze --report r3.md -q "$T/r.md.none"
	[ "$status" -eq 1 ]
	[ -n "$stderr" ]
}

@test "every tool takes --quiet and -q" {
	"$RECORD" -q -o "$T/t.isc" -- "$PY" "$T/work.py"
	run "$MERGE" --quiet -o "$T/t.istl" "$T/t.isc"
	[ "$status" -eq 0 ]
	run "$ANALYZE" -q -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	[ "$status" -eq 0 ]
	run --separate-stderr "$REPORT" --quiet -o "$T/r.md" "$T/f.json"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	run --separate-stderr "$REPORT" -q -o "$T/r.md" "$T/f.json"
	[ "$status" -eq 0 ]
	run "$FE" --quiet --help
	[ "$status" -eq 0 ]
}

@test "from the source tree and any directory: finds the tools of build/, --version names the version" {
	[ "$ISC_BUILD" = "$ISC_SRC/build" ] || skip "the build directory is $ISC_BUILD, not the checkout's build/"
	cd "$T"
	PATH=/usr/bin:/bin run --separate-stderr "$ISC_SRC/tools/inferscope/inferscope" --version
	[ "$status" -eq 0 ]
	[ "$output" = "inferscope $(meson introspect "$ISC_SRC/build" --projectinfo | jq -r .version)" ]
}

@test "without the tools anywhere: one line saying which, exit 1, nothing run" {
	cp "$FE" "$T/inferscope"
	cd "$T"
	PATH=/usr/bin:/bin run --separate-stderr "$T/inferscope" analyze nothing.isc
	[ "$status" -eq 1 ]
	[ "$stderr" = "inferscope: iscope-analyze not found beside $T/inferscope or on PATH (build it: scripts/build.sh)" ]
	PATH=/usr/bin:/bin run --separate-stderr "$T/inferscope" --version
	[ "$status" -eq 1 ]
	[[ "$stderr" != *"Permission denied"* ]]
}
