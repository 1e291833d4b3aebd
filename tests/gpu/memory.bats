#!/usr/bin/env bats
# Device memory by site on the CUDA test doubles (issue 16): the CUPTI
# double delivers CUpti_ActivityMemory4 records (kind MEMORY2) for
# cudaMalloc/cudaFree and failing API records for a cudaMalloc out of
# memory; tests/verdict/gpu_scenario.py plants a leak, a peak site and an
# OOM, each with its ground truth stated there (sizes are exact: the
# double reports what it was given).

load ../cli/helpers
bats_require_minimum_version 1.5.0

GPU=${ISC_GPU:-$ISC_BUILD/tests/gpu}
SCEN=$ISC_SRC/tests/verdict/gpu_scenario.py
MIB=1048576

setup() {
	[ -f "$GPU/libcupti.so.13" ] || skip "no CUPTI test double (built only with CUPTI)"
	unset LD_LIBRARY_PATH CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH INFERSCOPE_CUDA_DRIVER INFERSCOPE_FORCE_CUDA \
		INFERSCOPE_NO_CUDA INFERSCOPE_QUIET FAKE_CUDA_MODE FAKE_CUPTI_FAIL FAKE_CUPTI_VERSION \
		FAKE_CUPTI_DROPPED FAKE_CUPTI_SKEW_NS FAKE_CUPTI_LAUNCH_NS FAKE_CUPTI_SYNC_NS FAKE_NVML FAKE_NVML_LATER \
		INFERSCOPE_CUDA_DRIVER_API
	mkdir -p "$BATS_FILE_TMPDIR/lib"
	for l in libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1; do
		ln -sf "$GPU/$l" "$BATS_FILE_TMPDIR/lib/$l"
	done
}

# scenario NAME STATUS: record gpu_scenario.py NAME (exit status STATUS
# expected) once per file run; sets F (findings) and M (device 0's memory).
scenario() {
	local d=$BATS_FILE_TMPDIR/$1
	F=$d/findings.json
	if [[ ! -s $F ]]; then
		mkdir -p "$d"
		run env LD_LIBRARY_PATH="$BATS_FILE_TMPDIR/lib" "$RECORD" -q -o "$d/t.isc" -- "$PY" "$SCEN" "$1"
		echo "$output"
		[ "$status" -eq "$2" ]
		[[ $output == *"injected=1"* ]]
		"$ANALYZE" -o "$F.tmp" "$d/t.isc"
		valid_findings "$F.tmp"
		mv "$F.tmp" "$F"
	fi
	M=$(jq -c '.gpu.devices[0].memory' "$F")
}

m() {
	jq -r "$1" <<<"$M"
}

@test "planted leak: keep_outputs grows by 8 MiB a step, flagged with its bytes per iteration" {
	scenario memory_leak 0
	[ "$(m .source)" = driver ]
	[ "$(m .pairing)" = address ]
	[ "$(m '.leak_candidates[0].name')" = keep_outputs ]
	[ "$(m '.leak_candidates[0].kind')" = python ]
	[ "$(m '.leak_candidates[0].bytes_per_iteration')" -eq $((8 * MIB)) ]
	[ "$(m '.leak_candidates[0].growth_bytes')" -eq $((88 * MIB)) ]
	[ "$(m '.leak_candidates | length')" -eq 1 ]
	[ "$(jq -r '[.findings[] | select(.id == "gpu_memory_leak")][0].evidence.top[0].name' "$F")" = keep_outputs ]
}

@test "planted leak: peak 408 MiB, live there by site, churn 2 allocations a step, half short-lived" {
	scenario memory_leak 0
	[ "$(m .peak_bytes)" -eq $((408 * MIB)) ]
	[ "$(m '[.peak_sites[] | "\(.name)=\(.bytes / 1048576)"] | join(" ")')" = "load_weights=256 keep_outputs=88 forward_tmp=64" ]
	[ "$(m .end_bytes)" -eq $((352 * MIB)) ]
	[ "$(m .churn.allocations_per_iteration)" -eq 2 ]
	[ "$(m .churn.short_lived_pct)" -eq 50 ]
	# end of step 2 (the least after the first): 256 + 2 x 8 MiB
	[ "$(m .baseline_bytes)" -eq $((272 * MIB)) ]
}

@test "planted leak in the one site model: memory.sites has keep_outputs' cudaMalloc line as a device site, 8 MiB a step, exact" {
	scenario memory_leak 0
	line=$(grep -n 'cuda.fake_malloc(8 << 20' "$SCEN" | cut -d: -f1)
	k='.memory.sites[] | select(.memory == "device" and .name == "keep_outputs")'
	[ "$(jq -r "$k | \"\(.line) \(.device) \(.kind)\"" "$F")" = "$line 0 python" ]
	[ "$(jq -r "$k | .file" "$F")" = "$SCEN" ]
	[ "$(jq "$k | .leak" "$F")" = true ]
	[ "$(jq "$k | .leak_per_iteration_bytes" "$F")" -eq $((8 * MIB)) ]
	# 11 steady steps (the first step is the warm-up), nothing estimated
	[ "$(jq "$k | .retained_bytes" "$F")" -eq $((88 * MIB)) ]
	[ "$(jq "$k | .retained_err_bytes" "$F")" -eq 0 ]
	[ "$(jq "$k | .allocated_bytes" "$F")" -eq $((96 * MIB)) ]
	[ "$(jq "$k | .live_peak_bytes" "$F")" -eq $((88 * MIB)) ]
	t='.memory.sites[] | select(.memory == "device" and .name == "forward_tmp")'
	[ "$(jq "$t | .allocated_bytes" "$F")" -eq $((12 * 64 * MIB)) ]
	[ "$(jq "$t | .freed_bytes" "$F")" -eq $((12 * 64 * MIB)) ]
	[ "$(jq "$t | .retained_bytes" "$F")" -eq 0 ]
	[ "$(jq '.memory.sites[] | select(.memory == "device" and .name == "load_weights") | .live_end_bytes' "$F")" -eq $((256 * MIB)) ]
	# the same numbers as gpu_memory_leak's; host memory's rules and growth sites see no device site
	[ "$(m '.leak_candidates[0].bytes_per_iteration')" -eq "$(jq "$k | .leak_per_iteration_bytes" "$F")" ]
	[ "$(jq '[.findings[] | select(.id == "memory_leak")] | length' "$F")" -eq 0 ]
	[ "$(jq '[.memory.growth_sites[] | select(.name == "keep_outputs")] | length' "$F")" -eq 0 ]
	[ "$(jq '[.memory.sites[] | select(.memory == "host" and .device != null)] | length' "$F")" -eq 0 ]
}

@test "planted peak site: attention_scores holds 2 GiB of the 2624 MiB peak; the rule says what would shrink it" {
	scenario memory_peak 0
	[ "$(m .peak_bytes)" -eq $((2624 * MIB)) ]
	[ "$(m '.peak_sites[0].name')" = attention_scores ]
	[ "$(m '.peak_sites[0].bytes')" -eq $((2048 * MIB)) ]
	[ "$(m '.peak_sites[0].pct_of_peak')" = 78.04 ]
	[[ $(m '.peak_sites[0].file') == */gpu_scenario.py ]]
	[ "$(m '.leak_candidates | length')" -eq 0 ]
	f='[.findings[] | select(.id == "gpu_memory_peak_site")][0]'
	[ "$(jq -r "$f.evidence.top[0].name" "$F")" = attention_scores ]
	[ "$(jq -r "$f.suggestion.estimated_saving_bytes" "$F")" -eq $((1024 * MIB)) ]
	[[ $(jq -r "$f.suggestion.action" "$F") == *inference_mode* ]]
	# 512 MiB stay between steps: (0.9 x 40 GiB - 512 MiB) / 2112 MiB = 17.2x the batch
	[ "$(jq -r '[.findings[] | select(.id == "gpu_memory_headroom")][0].evidence.metrics.batch_factor' "$F")" = 17.2 ]
}

@test "planted OOM: a cudaMalloc out of memory, then exit 1: oom cuda_oom at alloc_kv_cache" {
	scenario memory_oom 1
	[ "$(m .failures.count)" -eq 1 ]
	[ "$(jq -r '.oom.kind' "$F")" = cuda_oom ]
	[ "$(jq -r '.oom.site.name' "$F")" = alloc_kv_cache ]
	[ "$(jq -r '.oom.site_source' "$F")" = allocation ]
	[ "$(jq -r '.oom.memory_at_end.gpu_live_bytes' "$F")" -eq $((30 * 1024 * MIB)) ]
	# what device 0 held when the cudaMalloc failed: load_weights' 30 GiB, by site
	[ "$(jq -r '.oom.device_at_failure.live_bytes' "$F")" -eq $((30 * 1024 * MIB)) ]
	[ "$(jq -r '.oom.device_at_failure.sites | map("\(.name)=\(.live_bytes / 1048576)") | join(" ")' "$F")" = load_weights=30720 ]
	# the oom finding: its site, then what held the device when it ran out (load_weights' 30 GiB, all of it)
	o='[.findings[] | select(.id == "oom")][0].evidence.top'
	[ "$(jq -r "$o | map(.name) | join(\" \")" "$F")" = "alloc_kv_cache load_weights" ]
	[ "$(jq -r "$o[1].value_bytes" "$F")" -eq $((30 * 1024 * MIB)) ]
	[ "$(jq -r "$o[1].pct" "$F")" -eq 100 ]
	[ "$(jq -r '.verdict.class' "$F")" = oom ]
}

@test "planted OOM: the report's Out of memory section shows what device 0 held when the allocation failed" {
	scenario memory_oom 1
	run "$REPORT" "$F"
	[ "$status" -eq 0 ]
	# load_weights' 30 GiB, as the planted scenario allocated it (30720 MiB)
	[[ "$output" == *"device 0 held 30.0 GiB live:"* ]]
	[[ "$output" == *"| 30.0 GiB | \`load_weights\`"* ]]
}

@test "a failed cudaMalloc the program survives is counted, but is no OOM" {
	scenario memory_peak 0
	[ "$(m .failures.count)" -eq 1 ]
	[ "$(jq -r '.oom' "$F")" = null ]
}
