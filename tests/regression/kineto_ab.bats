#!/usr/bin/env bats
# Two torch.profiler (Kineto) traces compare like two recordings: the
# pairs HTA tests its TraceDiff on (tests/data/real/kineto-ab, README there
# has HTA's expected results).
#
# HTA compares iteration 1010 of rank 1 by name: added AddmmBackward0,
# All2All_Pooled_Req, CatBackward0; deleted nccl:all_reduce; the other
# names unchanged; GPU: one kernel removed.  We compare the whole run
# (iterations 1009 and 1010, every thread), so the same edit shows as the
# same three added names, nccl:all_reduce going from 2 to 1 (iteration
# 1009 keeps its own) and the kernels from 6 to 5.  What HTA cannot say:
# whether the change is larger than run-to-run noise (one steady iteration
# a side is below our minimum of 5: inconclusive), and that the large pair
# differs in GPU model, rank and world size before any op is blamed.

bats_require_minimum_version 1.5.0
load ../cli/helpers

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	export K="$ISC_SRC/tests/data/real/kineto-ab"
	"$ANALYZE" -q -o "$D/base.json" "$K/hta_compare_base.json.gz"
	"$ANALYZE" -q -o "$D/control.json" "$K/hta_diff_control.json.gz"
	"$ANALYZE" -q --baseline "$D/base.json" -o "$D/tiny.json" "$K/hta_compare_test.json.gz"
	"$ANALYZE" -q --baseline "$D/control.json" -o "$D/large.json" "$K/hta_diff_test.json.gz"
}

names() { # names of comparison.ops_diff.LIST, sorted, comma-separated
	"$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))["comparison"]["ops_diff"][sys.argv[2]]
print(",".join(sorted("%s:%g>%g" % (x["name"], x["base_calls"], x["calls"]) for x in d)))' "$1" "$2"
}

@test "tiny pair: the three names HTA calls added are added, and only they" {
	run names "$D/tiny.json" added
	[ "$output" = "AddmmBackward0:0>1,All2All_Pooled_Req:0>1,CatBackward0:0>1" ]
}

@test "tiny pair: HTA's deleted nccl:all_reduce is one call fewer, the kernels one fewer; nothing removed" {
	run names "$D/tiny.json" count_changed
	[ "$output" = "(all kernels):6>5,nccl:all_reduce:2>1" ]
	run names "$D/tiny.json" removed
	[ "$output" = "" ]
}

@test "tiny pair: HTA's unchanged names are in no list of the diff" {
	for n in aten::as_strided aten::empty 'ProfilerStep#*'; do
		run grep -c "\"name\":\"$n\",\"kind\":\"[a-z]*\",\"base_calls\"" "$D/tiny.json"
		[ "$output" = 0 ]
	done
}

@test "tiny pair: one steady iteration a side cannot be significant: inconclusive" {
	run "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["comparison"]; print(c["verdict"], c["scopes"][0]["samples"], c["scopes"][0]["base_samples"])' "$D/tiny.json"
	[ "$output" = "inconclusive 1 1" ]
}

@test "large pair: GPU model, rank and world size differ, listed first" {
	run "$PY" -c 'import json,sys
e = json.load(open(sys.argv[1]))["comparison"]["environment"]
print("; ".join("%s %s>%s" % (x["key"], x["base"], x["current"]) for x in e[:3]))' "$D/large.json"
	[ "$output" = "GPU model NVIDIA A100-PG509-200>Tesla V100-SXM2-16GB; rank 3>1; world size 8>2" ]
}

@test "both comparisons validate against the schema" {
	run "$ISC_SRC/tests/lib/validate_findings.py" "$D/tiny.json" "$D/large.json"
	[ "$status" -eq 0 ]
}
