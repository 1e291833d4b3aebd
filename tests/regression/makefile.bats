#!/usr/bin/env bats
# examples/Makefile: make baseline / bench / check / report.  The recording
# targets run a short real workload (mechanics: files made, findings
# valid); the gate itself is checked on synthetic findings with a planted
# +10 % (synth.py), since on a shared machine real runs differ by more
# than a test could plant in seconds.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	export MK="$ISC_SRC/examples/Makefile"
	export SYNTH="$BATS_TEST_DIRNAME/synth.py"
	"$ISC_BUILD/tests/test_analyze" --write basic "$D/basic.istl"
	"$ANALYZE" -q -o "$D/basic.json" "$D/basic.istl"
	mkdir -p "$D/gate"
	for i in 1 2 3; do
		"$PY" "$SYNTH" "$D/basic.json" "$D/gate/baseline-$i.json" --seed "$i" --op aten::mm:60
	done
	"$PY" "$SYNTH" "$D/basic.json" "$D/same.json" --seed 9 --op aten::mm:60
	"$PY" "$SYNTH" "$D/basic.json" "$D/slow.json" --seed 10 --ms 110 --op aten::mm:60 --op time.sleep:10
}

mk() {
	make --no-print-directory -f "$MK" INFERSCOPE_BIN="$ISC_BUILD/tools" "$@"
}

@test "make baseline and make bench record the workload into findings" {
	cd "$D"
	export REG_STEPS=6
	run mk baseline bench RUNS=2 OUT=rec WORKLOAD="$ISC_SRC/tests/regression/workload.py" ARGS= PYTHON="$(torch_python)"
	[ "$status" -eq 0 ]
	[ -s rec/baseline-1.json ]
	[ -s rec/baseline-2.json ]
	[ -s rec/current.json ]
	run "$ISC_SRC/tests/lib/validate_findings.py" rec/baseline-1.json rec/baseline-2.json rec/current.json
	[ "$status" -eq 0 ]
}

@test "make check passes on the same distribution and fails (Error 3) on a regression" {
	cd "$D"
	cp same.json gate/current.json
	run --separate-stderr mk check OUT=gate
	[ "$status" -eq 0 ]
	[[ "$output" == *"**Unchanged**"* ]]
	cp slow.json gate/current.json
	run --separate-stderr mk check OUT=gate
	[ "$status" -ne 0 ]
	[[ "$output" == *"**Regressed**"* ]]
	[[ "$stderr" == *"Error 3"* ]]
}

@test "make report writes the HTML with the comparison first; make check without a baseline says so" {
	cd "$D"
	cp slow.json gate/current.json
	run --separate-stderr mk report OUT=gate
	[ "$status" -eq 0 ]
	grep -q "Comparison with 3 baseline runs" gate/report.html
	mkdir -p empty
	cp same.json empty/current.json
	run --separate-stderr mk check OUT=empty
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"no baseline in empty: run make baseline first"* ]]
}
