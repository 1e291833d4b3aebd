#!/usr/bin/env bats
# Verdict tests on our own recordings from a real GPU (tests/data/h200:
# iscope-record and torch.profiler on tests/device/workloads.py, an NVIDIA
# H200, 2026-11-28; that folder's README).  The truth of each is its
# construction (workloads.py's docstring), fixed before the code:
#   gemm      four bf16 8192^3 matmuls a step, the GPU ~100 % busy in the
#             steps -> gpu_compute_bound (its clocks at the power cap,
#             1500 of 1980 MHz in some samples: throttling costs at most
#             24 % of that time, not the verdict)
#   tiny      3000 adds of 16 floats a step, each kernel ~1 us, shorter
#             than its launch call -> launch_bound
#   pageable  a 512 MiB copy from pageable memory a step -> transfer_bound
#   python    60 ms of Python then one small kernel a step -> cpu_bound
# and the counts: 30 steps of 3000 launches and torch.zeros' fill = 90001
# launches (tiny); 512 MiB a copy (pageable); the GPU ops a steady step
# equal to torch.profiler's trace of the same script (its 25 active steps,
# counted from its own events here, not from our findings).  The launch
# lines: the lines workloads.py marks `# launch site: NAME`.

bats_require_minimum_version 1.5.0

setup() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	DATA=$ISC_SRC/tests/data/h200
	F=$BATS_TEST_TMPDIR/findings.json
}

# ours NAME / theirs NAME: analyze our recording / torch.profiler's trace into $F
ours() {
	"$ANALYZE" -q -o "$F" "$DATA/$1.isc"
	"$ISC_SRC/tests/lib/validate_findings.py" "$F"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)): \(.verdict.sentence)"' "$F"
}
theirs() {
	"$ANALYZE" -q -o "$F" "$DATA/$1.kineto.json.gz"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)): \(.verdict.sentence)"' "$F"
}

# marked NAME: the line marked as NAME's launch site in workloads.py as recorded (a copy in $DATA)
marked() {
	grep -n "# launch site: $1\$" "$DATA/workloads.py" | cut -d: -f1
}

# per_step_tp NAME: GPU ops (kernels, copies, memsets) per active step of torch.profiler's trace
per_step_tp() {
	gzip -dc "$DATA/$1.kineto.json.gz" | jq '[.traceEvents[] | select(.ph == "X")] as $e |
		([$e[] | select(.cat == "kernel" or .cat == "gpu_memcpy" or .cat == "gpu_memset")] | length) /
		([$e[] | select(.cat == "user_annotation" and (.name | startswith("ProfilerStep#")))] | length)'
}

@test "h200 gemm: gpu_compute_bound (a GEMM at the power cap is not thermal_throttled)" {
	ours gemm
	run jq -r .verdict.class "$F"
	[ "$output" = gpu_compute_bound ]
}

@test "h200 gemm: throttling's what-if is the clock it lost: compute x throttled share x (1 - 1500/1980)" {
	ours gemm
	# the lowest throttled and highest busy SM clock inside the steps, from the findings' NVML figures
	run jq -r '.gpu.in_iterations.nvml[0] | "\(.sm_mhz_min_throttled) \(.sm_mhz_max_busy)"' "$F"
	[ "$output" = "1500 1980" ]
	# the same figures, computed here: within 1 ns of rounding
	run jq -r '.gpu.in_iterations as $i | ($i.devices[0].temporal_breakdown.compute_ns * $i.nvml[0].throttled_busy_ns / $i.nvml[0].busy_ns * (1 - 1500 / 1980)) as $want |
		[.findings[] | select(.id == "thermal_throttled")][0].suggestion.estimated_saving_ns - $want | fabs < 1' "$F"
	[ "$output" = true ]
}

@test "h200 gemm: no gpu_low_util: inside the steps the GPU was busy 98.8 % of the time (start-up is not utilization)" {
	ours gemm
	run jq -r '.gpu.in_iterations.devices[0].temporal_breakdown.idle_pct < 2' "$F"
	[ "$output" = true ]
	run jq -r '[.findings[] | select(.id == "gpu_low_util")] | length' "$F"
	[ "$output" = 0 ]
}

@test "h200 gemm: GPU ops per steady step equal torch.profiler's (8: 4 GEMM kernels, 4 memsets)" {
	ours gemm
	run jq -r '.gpu.in_iterations.devices[0].ops / .gpu.in_iterations.iterations' "$F"
	[ "$output" = "$(per_step_tp gemm)" ]
}

@test "h200 gemm: torch.profiler's trace of the same script, imported: gpu_compute_bound" {
	theirs gemm
	run jq -r .verdict.class "$F"
	[ "$output" = gpu_compute_bound ]
}

@test "h200 tiny: launch_bound, suggesting CUDA graphs" {
	ours tiny
	run jq -r .verdict.class "$F"
	[ "$output" = launch_bound ]
	run jq -r '[.findings[] | select(.id == "launch_bound")][0].suggestion.action' "$F"
	[[ "$output" == *"CUDA graph"* ]]
}

@test "h200 tiny: 90001 launches (30 steps x 3000 adds + torch.zeros), each with its launch call" {
	ours tiny
	run jq -r .gpu.agent.launches "$F"
	[ "$output" = 90001 ]
	run jq -r .gpu.launch.ops_without_launch_call "$F"
	[ "$output" = 0 ]
}

@test "h200 tiny: sample mode's launch site is the marked line, with 90000 launches" {
	ours tiny
	run jq -r '.gpu.launch.call_sites[0] | "\(.python.file | split("/") | last):\(.python.line) \(.launches)"' "$F"
	[ "$output" = "workloads.py:$(marked tiny) 90000" ]
}

@test "h200 pageable: transfer_bound, 512 MiB a pageable HtoD copy, launched from the marked line" {
	ours pageable
	run jq -r .verdict.class "$F"
	[ "$output" = transfer_bound ]
	run jq -r '.gpu.memcpy[0] | "\(.direction) \(.src_memory) \(.bytes / .count)"' "$F"
	[ "$output" = "HtoD pageable 536870912" ]
	run jq -r '.gpu.memcpy[0].top_call_site.python | "\(.file | split("/") | last):\(.line)"' "$F"
	[ "$output" = "workloads.py:$(marked pageable)" ]
}

@test "h200 pageable: GPU ops per steady step equal torch.profiler's (1 copy)" {
	ours pageable
	run jq -r '.gpu.in_iterations.devices[0].ops / .gpu.in_iterations.iterations' "$F"
	[ "$output" = "$(per_step_tp pageable)" ]
}

@test "h200 python: cpu_bound, the kernel's launch line the marked one" {
	ours python
	run jq -r .verdict.class "$F"
	[ "$output" = cpu_bound ]
	run jq -r '.gpu.launch.call_sites[0].python | "\(.file | split("/") | last):\(.line)"' "$F"
	[ "$output" = "workloads.py:$(marked python)" ]
}

@test "h200 python: torch.profiler's trace, imported: cpu_bound" {
	theirs python
	run jq -r .verdict.class "$F"
	[ "$output" = cpu_bound ]
}
