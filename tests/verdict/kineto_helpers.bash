# Shared by verdict_kineto.bats and verdict_kineto_known.bats: the trace
# directory, the analysis of one trace and what the tests read from it.

setup() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	DATA=${ISC_KINETO_DATA:-$ISC_SRC/tests/data/real/kineto}
	F=$BATS_TEST_TMPDIR/findings.json
}
# trace NAME: analyze $DATA/NAME.json.gz into $F and print the numbers the
# reasoning uses.
trace() {
	"$ANALYZE" -q -o "$F" "$DATA/$1.json.gz"
	"$ISC_SRC/tests/lib/validate_findings.py" "$F"
	jq -r '.gpu.devices[0] as $d | "GPU span \($d.temporal_breakdown.span_ns / 1e6) ms: idle \($d.temporal_breakdown.idle_pct) %, compute \($d.temporal_breakdown.compute_pct) %, non-compute \($d.temporal_breakdown.non_compute_pct) %; \([$d.streams[] | "s\(.id): host_wait \(.idle_breakdown.host_wait_ns / 1e6) other \(.idle_breakdown.other_ns / 1e6) ms, queue \(.queue_length.mean)"] | join("; "))"' "$F"
	jq -r '.gpu.launch as $l | "launches \($l.launches), shorter than their call \($l.gpu_op_shorter_than_launch), kernels under 10 us \($l.short_kernels_under_10us) of \($l.kernels), delay p50 \($l.delay_ns.p50) ns; sync calls \(.gpu.sync.api_total_ns / 1e6) ms; host during idle: \([.gpu.devices[0].host_during_idle.ops[:3][] | "\(.name) \(.idle_ns / 1e6) ms"] | join(", "))"' "$F"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)) finding \(.verdict.finding // "none"): \(.verdict.sentence)"' "$F"
}

class() {
	jq -r .verdict.class "$F"
}

# top_name: name of the top contributor of the finding behind the verdict.
top_name() {
	jq -r '.verdict.finding as $id | [.findings[]? | select(.id == $id)][0].evidence.top[0].name // empty' "$F"
}

# launch_share NAME: the share (%, integer) of the GPU's idle time during
# which a launch call ran, computed from the JSON by kineto_idle.py (not by
# iscope-analyze): the premise that separates launch_bound from cpu_bound.
launch_share() {
	local out
	out=$("$BATS_TEST_DIRNAME/kineto_idle.py" "$DATA/$1.json.gz")
	echo "independent: $out" >&2
	out=${out##*launch_share_pct=}
	echo "${out%.*}"
}
