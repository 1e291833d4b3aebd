#!/usr/bin/env bats
# The CUDA agent (libiscope-cuda.so) under iscope-record, against test
# doubles: libcuda.so.1 (fake_cuda.c: cuInit loads CUDA_INJECTION64_PATH
# and calls InitializeInjection, as the driver does), libcupti.so.13
# (fake_cupti.c: real CUPTI structs, delivered through the agent's buffer
# callbacks, stamped by its timestamp callback) and libnvidia-ml.so.1
# (fake_nvml.c).  Each test puts the doubles it wants on LD_LIBRARY_PATH.
# The workloads: gpu_workload (C) and stack.py (Python, through ctypes).
# tlcheck prints the GPU records of a timeline and checks its links on its
# own (see tlcheck.c).

load ../cli/helpers
bats_require_minimum_version 1.5.0

GPU=${ISC_GPU:-$ISC_BUILD/tests/gpu}
AGENT=${ISC_CUDA_AGENT:-$ISC_BUILD/tools/iscope-record/cuda/libiscope-cuda.so}
W=$GPU/gpu_workload
TL=$GPU/tlcheck
STUB=${ISC_CUDA_STUB:-/usr/local/cuda/lib64/stubs/libcuda.so}

setup() {
	T=$(mktemp -d)
	# hermetic: meson puts the doubles' directory on LD_LIBRARY_PATH
	unset LD_LIBRARY_PATH CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH INFERSCOPE_CUDA_DRIVER INFERSCOPE_FORCE_CUDA \
		INFERSCOPE_NO_CUDA INFERSCOPE_QUIET FAKE_CUDA_MODE FAKE_CUPTI_FAIL FAKE_CUPTI_VERSION \
		FAKE_CUPTI_DROPPED FAKE_CUPTI_SKEW_NS INFERSCOPE_CUDA_LAG_MS INFERSCOPE_CUDA_FLUSH_MS \
		INFERSCOPE_CUDA_SLOTS INFERSCOPE_PYTHON_MODE INFERSCOPE_CUDA_DRIVER_API FAKE_CUPTI_STATS \
		FAKE_CUPTI_SYNC_NS FAKE_CUPTI_LAUNCH_NS FAKE_CUPTI_WAKE_LATE_NS FAKE_CUPTI_HOST_OWN_NS \
		INFERSCOPE_CUDA_CALLBACKS FAKE_CUPTI_CB_UNLOCKED
}

teardown() {
	rm -rf "$T"
}

# doubles LIB...: LD_LIBRARY_PATH holds exactly these test doubles.
doubles() {
	mkdir -p "$T/lib"
	for l in "$@"; do
		ln -sf "$GPU/$l" "$T/lib/$l"
	done
	export LD_LIBRARY_PATH=$T/lib
}

# trace ARGS...: iscope-record -o $T/t.isc ARGS; stdout in $T/out, stderr
# in $T/err; then the timeline and tlcheck's lines in $T/check.
trace() {
	local st=0
	"$RECORD" -o "$T/t.isc" "$@" > "$T/out" 2> "$T/err" || st=$?
	echo "$st" > "$T/status"
	"$MERGE" -o "$T/t.istl" "$T/t.isc" 2> "$T/merge.err"
	"$TL" "$T/t.istl" > "$T/check"
}

# lines_sites: lines.py's launches in $T/check, each call's Python line
# against its kernel (by correlation id: fI's kernel lasts 1000+I ns, its
# call is at gen_lines.py line 2I+2); prints "ok=N bad=M" and bad ones.
lines_sites() {
	awk '/^op kernel /{for(i=1;i<=NF;i++){if($i~/^corr=/)c=substr($i,6); if($i~/^dur=/)d=substr($i,5)} dur[c]=d}
	/^api cudaLaunchKernel /{s="-"; for(i=1;i<=NF;i++){if($i~/^corr=/)c=substr($i,6); if($i~/^site=/)s=substr($i,6)} site[c]=s}
	END{ok=0; bad=0; for(c in site){n=dur[c]-1000; if(site[c]=="f" n "@gen_lines.py:" (2*n+2)) ok++; else {bad++; if(bad<5) print "bad corr=" c " dur=" dur[c] " site=" site[c]}}
	print "ok=" ok " bad=" bad}' "$T/check"
}

summary() { # summary FIELD: a number of tlcheck's summary line
	grep '^summary ' "$T/check" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

@test "iscope-record sets the injection variables; the driver double loads the agent" {
	[ -f "$AGENT" ]
	doubles libcuda.so.1 libcupti.so.13
	run -0 "$RECORD" -q -o "$T/env.isc" -- env
	[[ "$output" == *"CUDA_INJECTION64_PATH=$AGENT"* ]]
	[[ "$output" == *"NVTX_INJECTION64_PATH=$AGENT"* ]]
	# GPU activity traced: --python=auto samples Python all the same (the CUDA agent reads each call's
	# Python line), and says why
	[[ "$output" == *"INFERSCOPE_PYTHON_MODE=sample"* ]]
	[[ "$output" == *"INFERSCOPE_CUDA_DRIVER_API=0"* ]]
	run -0 "$MERGE" --dump "$T/env.isc"
	[[ "$output" == *"META record.python_mode=sample (--python=auto: GPU activity traced, the CUDA agent reads the Python line of each CUDA call)"* ]]
	trace -q -- "$W" all
	[ "$(cat "$T/status")" -eq 0 ]
	grep -qx 'done all injected=1' "$T/out"
	grep -q '^agent cupti=130001 built=130001 lag_ms=1000 flush_ms=100 version=[0-9]' "$T/check"
	# the double complains about misuse (timestamp callback late, KERNEL kind)
	run ! grep -q 'fake-cupti:' "$T/err"
	# the agent's file goes into GPU_EVENTS chunks and merges without damage
	[ ! -s "$T/merge.err" ]
	[ "$(summary kernels)" -eq 5 ]
}

@test "every CUPTI record kind converts with all its fields" {
	doubles libcuda.so.1 libcupti.so.13
	# --cuda-driver-api: every driver call too (by default the driver's launch calls alone)
	trace -q --cuda-driver-api -- "$W" all
	c=$T/check
	# Kernel10: demangled name, device, stream, grid, block, registers, shared memory, context, correlation
	grep -q '^op kernel gemm_kernel(float const\*, float const\*, float\*, int) dev=0 stream=1 dur=200000 corr=[0-9]* bytes=0 copy=0 src=0 dst=0 flags=0 grid=8,4,2 block=256,2,1 regs=32 shmem=4096 ctx=1 launch=main' "$c"
	grep -q '^op kernel relu_kernel dev=0 stream=2 dur=5000 .* grid=4,2,1 block=128,1,1 regs=32 shmem=4096 ctx=1 launch=main' "$c"
	# a CUDA graph: three kernels, one launch, one correlation id
	[ "$(grep -c '^op kernel graph_node_kernel .* flags=1 grid=2,1,1 block=64,1,1 .*launch=main' "$c")" -eq 3 ]
	[ "$(grep '^op kernel graph_node_kernel' "$c" | grep -o 'corr=[0-9]*' | sort -u | wc -l)" -eq 1 ]
	# Memcpy6: direction, memory kinds, bytes, synchronous or not
	grep -q '^op memcpy Memcpy HtoD (Pageable -> Device) dev=0 stream=7 dur=105857 corr=[0-9]* bytes=1048576 copy=1 src=1 dst=3 flags=0 ctx=1 launch=main' "$c"
	grep -q '^op memcpy Memcpy DtoH (Device -> Pinned) dev=0 stream=1 dur=7553 corr=[0-9]* bytes=65536 copy=2 src=3 dst=2 flags=32 ctx=1 launch=main' "$c"
	# Memset4
	grep -q '^op memset Memset (Device) dev=0 stream=1 dur=704 corr=[0-9]* bytes=4096 copy=0 src=0 dst=3 flags=32 ctx=1 launch=main' "$c"
	# Synchronization2: stream synchronizations, device from the context record
	[ "$(grep -c '^op sync Stream Sync dev=0 stream=[12] .* bytes=0 copy=3 .*ctx=1 launch=main' "$c")" -eq 2 ]
	# API: runtime and driver calls with their callback ids, one correlation id a pair
	grep -q '^api cudaLaunchKernel kind=1 cbid=211 corr=[0-9]* tid=main flags=0' "$c"
	grep -q '^api cuLaunchKernel kind=2 cbid=307 corr=[0-9]* tid=main flags=0' "$c"
	grep -q '^api cudaMemcpy kind=1 cbid=31 ' "$c"
	grep -q '^api cuMemAlloc kind=2 cbid=243 ' "$c"
	grep -q '^api cudaStreamSynchronize kind=1 cbid=131 ' "$c"
	# the noisy calls are switched off (the double makes a cudaGetDevice per launch)
	run ! grep -q '^api cudaGetDevice' "$c"
	# Overhead3 on a thread: a call of kind 3
	grep -q '^api overhead: CUPTI buffer flush kind=3 cbid=65536 ' "$c"
	# Marker2 + MarkerData2: an NVTX range with its domain, color and category
	grep -qx 'nvtx step dur_pos=1 domain=fake.domain color=0xff76b900 category=3 flags=0 tid=main' "$c"
	# Memory4: allocation and release
	grep -qx 'mem dev=0 stream=7 op=1 kind=3 bytes=1048576 addr=0x7f0000000000 corr_pos=1 flags=0' "$c"
	grep -qx 'mem dev=0 stream=7 op=2 kind=3 bytes=1048576 addr=0x7f0000000000 corr_pos=1 flags=0' "$c"
	# Device5, Context3, Name
	grep -qx 'device id=0 sms=108 memory=42949672960 cc=8.0 link_bw=0 name=Fake GPU 0' "$c"
	grep -qx 'meta cuda.device.0.uuid=GPU-10111213-1415-1617-1819-1a1b1c1d1e1f' "$c"
	grep -qx 'meta cuda.device.0.memory_bandwidth_bytes_per_s=1555000000000' "$c"
	grep -qx 'meta cuda.context.1=device=0 null_stream=7' "$c"
	grep -q '^meta name.thread.[0-9]*=main-loop$' "$c"
	grep -qx 'meta cuda.driver_version=13000' "$c"
	# every operation in the process's context (pid, no thread), each linked
	grep -q '^op ' "$c"
	run awk '/^op / && !/pid_ctx=ok/' "$c"
	[ -z "$output" ]
	[ "$(summary ops)" -eq 10 ]
	[ "$(summary linked)" -eq 10 ]
	[ "$(summary bad_links)" -eq 0 ]
	[ "$(summary unordered)" -eq 0 ]
}

@test "names are cached, never wrong: a kernel name CUPTI gives at an earlier one's address with other text is the new name; copies of one direction keep their memory kinds, calls their domain" {
	doubles libcuda.so.1 libcupti.so.13
	# three kernels whose names come at one address, their records converted one by one:
	# first(), second(int), first() (the agent caches a kernel's name by CUPTI's pointer)
	# (--cuda-driver-api: the driver call below is recorded)
	trace -q --cuda-driver-api -- "$W" renamed
	grep -qx 'done renamed injected=1' "$T/out"
	c=$T/check
	[ "$(grep -c '^op kernel ' "$c")" -eq 3 ]
	[ "$(grep -c '^op kernel first() dev=0 stream=1 dur=1000 ' "$c")" -eq 2 ]
	[ "$(grep -c '^op kernel second(int) dev=0 stream=1 dur=1000 ' "$c")" -eq 1 ]
	# three host-to-device copies, three memory-kind pairs (names cached by direction and kinds)
	[ "$(grep -c '^op memcpy Memcpy HtoD (Pageable -> Device) .* copy=1 src=1 dst=3 ' "$c")" -eq 1 ]
	[ "$(grep -c '^op memcpy Memcpy HtoD (Pinned -> Device) .* copy=1 src=2 dst=3 ' "$c")" -eq 1 ]
	[ "$(grep -c '^op memcpy Memcpy HtoD (Pageable -> Pinned) .* copy=1 src=1 dst=2 ' "$c")" -eq 1 ]
	# and four stream syncs: every operation linked to its call
	[ "$(summary ops)" -eq 10 ]
	[ "$(summary linked)" -eq 10 ]
	# call names cached by domain and callback id: the driver's 211 after the runtime's 211
	[ "$(grep -c '^api cudaLaunchKernel kind=1 cbid=211 ' "$c")" -eq 3 ]
	[ "$(grep -c '^api cuD3D10GetDevices kind=2 cbid=211 ' "$c")" -eq 1 ]
}

@test "every kernel has its launching call and its Python stack, on every thread" {
	doubles libcuda.so.1 libcupti.so.13
	# exact mode: the Python stack of a call is the call spans open on its thread.
	# The spans are on the host's clock, as real CUPTI's stamps are; the
	# double's clock keeps a late wake-up's lag for a call made soon after
	# it (FAKE_CUPTI_HOST_OWN_NS), which put a launch before the forward
	# span its thread had opened since (3 in 40 runs beside other jobs): the
	# lag is never kept here (0), and every blocking call wakes 3 ms late
	# (the load, made certain: with the lag kept, linear lost its span)
	FAKE_CUPTI_WAKE_LATE_NS=3000000 FAKE_CUPTI_HOST_OWN_NS=0 trace -q --python=exact -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3 threads
	grep -qx 'stack.py done, injected=1' "$T/out"
	c=$T/check
	# 2 threads x 3 steps x (1 copy + 2 kernels + 3 graph kernels + 1 sync)
	[ "$(summary ops)" -eq 42 ]
	[ "$(summary kernels)" -eq 30 ]
	[ "$(summary linked)" -eq 42 ]
	[ "$(summary stack)" -eq 42 ]
	[ "$(summary bad_links)" -eq 0 ]
	# the Python function that made each call
	[ "$(grep -c '^op kernel linear(float const\*, float\*) .* span=forward ' "$c")" -eq 6 ]
	[ "$(grep -c '^op kernel gelu(float\*) .* span=forward ' "$c")" -eq 6 ]
	[ "$(grep -c '^op kernel graph_node_kernel .* span=graph ' "$c")" -eq 18 ]
	[ "$(grep -c '^op memcpy .* span=copy_in ' "$c")" -eq 6 ]
	[ "$(grep -c '^op sync .* span=step ' "$c")" -eq 6 ]
	# on both threads: the calls were made by the main thread and the worker
	[ "$(grep -c '^op .* launch=main ' "$c")" -eq 21 ]
	[ "$(grep -c '^op .* launch=other ' "$c")" -eq 21 ]
	# the calls themselves know their span too (checked against the spans by tlcheck)
	[ "$(grep -c '^api cudaLaunchKernel .* span=forward$' "$c")" -eq 12 ]
	# and the pipeline goes on to the analysis
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
}

@test "by default the driver's launch calls alone: a kernel launched through the driver (cuBLAS, Triton) has its call, other driver calls are not recorded" {
	doubles libcuda.so.1 libcupti.so.13
	# 4 kernels through the driver API alone (3 cuLaunchKernel as Triton, 1 cuLaunchKernelEx as
	# cuBLAS with CUDA 13), 2 through the runtime, a sync
	trace -q -- "$W" driver
	grep -qx 'done driver injected=1' "$T/out"
	c=$T/check
	grep -qx 'meta cuda.agent.driver_api=launches' "$c"
	[ "$(summary kernels)" -eq 6 ]
	# every kernel linked to its launching call, the driver's ones too
	[ "$(grep -c '^op kernel triton_kernel .*launch=main' "$c")" -eq 3 ]
	[ "$(grep -c '^op kernel cublas_gemm_kernel .*launch=main' "$c")" -eq 1 ]
	[ "$(summary linked)" -eq 7 ]
	[ "$(summary bad_links)" -eq 0 ]
	# driver records: the 4 launches alone, and the cuLaunchKernel the double makes inside each
	# runtime cudaLaunchKernel (2)
	[ "$(grep -c '^api cuLaunchKernel kind=2 cbid=307 ' "$c")" -eq 5 ]
	[ "$(grep -c '^api cuLaunchKernelEx kind=2 cbid=652 ' "$c")" -eq 1 ]
	[ "$(grep -c '^api .* kind=2 ' "$c")" -eq 6 ]
	# not the other driver calls: the double's cuStreamSynchronize inside cudaStreamSynchronize
	grep -q '^api cudaStreamSynchronize kind=1 ' "$c"
	run ! grep -q '^api cuStreamSynchronize' "$c"
	# the analysis: no op without its launch call; 6 launches, the driver call inside a runtime
	# launch not counted again
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	jq -c '.gpu.launch | del(.call_sites)' "$T/f.json"
	jq -e '.gpu.launch.ops_without_launch_call == 0' "$T/f.json"
	jq -e '.gpu.agent.launches == 6 and .gpu.agent.driver_api == false' "$T/f.json"
}

@test "--cuda-driver-api: every driver call, as before" {
	doubles libcuda.so.1 libcupti.so.13
	trace -q --cuda-driver-api -- "$W" driver
	c=$T/check
	grep -qx 'meta cuda.agent.driver_api=on' "$c"
	[ "$(grep -c '^api cuLaunchKernel kind=2 ' "$c")" -eq 5 ]
	[ "$(grep -c '^api cuLaunchKernelEx kind=2 ' "$c")" -eq 1 ]
	# the driver call the double makes inside cudaStreamSynchronize too
	[ "$(grep -c '^api cuStreamSynchronize kind=2 ' "$c")" -eq 1 ]
	[ "$(grep -c '^api .* kind=2 ' "$c")" -eq 7 ]
	[ "$(grep -c '^op kernel triton_kernel .*launch=main' "$c")" -eq 3 ]
	[ "$(summary linked)" -eq 7 ]
	# counted once: the sync and the launches
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	jq -e '.gpu.agent.launches == 6 and .gpu.agent.driver_api == true' "$T/f.json"
	jq -e '[.gpu.sync.call_sites[] | .count] == [1] and .gpu.sync.call_sites[0].api == "cudaStreamSynchronize"' "$T/f.json"
	# the environment variable does the same
	INFERSCOPE_CUDA_DRIVER_API=1 trace -q -- "$W" driver
	[ "$(grep -c '^api cuStreamSynchronize kind=2 ' "$T/check")" -eq 1 ]
}

@test "CUPTI refuses the per-call switch of driver calls: no DRIVER records at all, said once" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_FAIL=driverapi trace -q -- "$W" driver
	grep -qx 'done driver injected=1' "$T/out"
	c=$T/check
	grep -qx 'meta cuda.agent.driver_api=off' "$c"
	run ! grep -q '^api .* kind=2 ' "$c"
	[ "$(grep -c '^warning pid=workload ' "$c")" -eq 1 ]
	grep -q '^warning pid=workload code=10 CUPTI activity kinds unavailable: DRIVER (launch calls); the rest is recorded$' "$c"
	[ "$(grep -c '^inferscope-cuda: ' "$T/err")" -eq 1 ]
	# the rest recorded: the runtime's kernels with their calls, the driver's without
	[ "$(summary kernels)" -eq 6 ]
	[ "$(summary linked)" -eq 3 ]
	run ! grep -q '^op kernel triton_kernel .*launch=main' "$c"
}

@test "the agent's own cost is reported: CUPTI's overhead records, its conversion time, per launch; never 'no extra code' while it ran" {
	doubles libcuda.so.1 libcupti.so.13
	# sample mode: the report's recording line is the sampler's
	trace -q --python=sample -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	# the double writes one OVERHEAD record (a 1500 ns buffer flush); 3 steps of 2 kernel
	# launches, a cudaMemcpyAsync and a graph launch: 12 launches
	jq -c '.gpu.agent' "$T/f.json"
	jq -e '.gpu.agent.agents == 1 and .gpu.agent.cupti_overhead_ns == 1500 and .gpu.agent.cupti_overhead_records == 1' "$T/f.json"
	jq -e '.gpu.agent.overhead_kinds == [{"name": "overhead: CUPTI buffer flush", "count": 1, "total_ns": 1500}]' "$T/f.json"
	jq -e '.gpu.agent.launches == 12 and .gpu.agent.agent_cpu_ns > 0 and .gpu.agent.driver_api == false' "$T/f.json"
	jq -e '.gpu.agent | .per_launch_ns == ((.cupti_overhead_ns + .agent_cpu_ns + .callback_ns) / .launches | round)' "$T/f.json"
	run -0 "$REPORT" "$T/f.json"
	[[ "$output" == *"Recording (sampled Python mode"* ]]
	[[ "$output" != *"no extra code"* ]]
	[[ "$output" == *"The CUDA agent ran in the workload: CUPTI reported 1.5 µs of its own overhead (1 record)"* ]]
}

@test "sample mode, the default with a GPU: every CUDA call has its Python line, read in the process at the call" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_STATS=1 trace -q -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3 threads
	grep -qx 'stack.py done, injected=1' "$T/out"
	c=$T/check
	grep -qx 'meta cuda.agent.python_lines=on' "$c"
	# the lines of the calls in stack.py, found here in its source
	s=$ISC_SRC/tests/gpu/stack.py
	l_copy=$(grep -n 'cuda.fake_memcpy(1 << 16' "$s" | cut -d: -f1)
	l_lin=$(grep -n 'fake_launch(b"_Z6linearPKfPf"' "$s" | cut -d: -f1)
	l_gelu=$(grep -n 'fake_launch(b"_Z4geluPf"' "$s" | cut -d: -f1)
	l_graph=$(grep -n 'cuda.fake_graph_launch(3' "$s" | cut -d: -f1)
	l_sync=$(grep -n 'cuda.fake_sync(stream)' "$s" | cut -d: -f1)
	# 2 threads x 3 steps: each call with its function and line, no call spans
	[ "$(grep -c "^api cudaMemcpyAsync .* span=- site=copy_in@stack.py:$l_copy$" "$c")" -eq 6 ]
	[ "$(grep -c "^api cudaLaunchKernel .* span=- site=forward@stack.py:$l_lin$" "$c")" -eq 6 ]
	[ "$(grep -c "^api cudaLaunchKernel .* span=- site=forward@stack.py:$l_gelu$" "$c")" -eq 6 ]
	[ "$(grep -c "^api cudaGraphLaunch .* span=- site=graph@stack.py:$l_graph$" "$c")" -eq 6 ]
	[ "$(grep -c "^api cudaStreamSynchronize .* span=- site=step@stack.py:$l_sync$" "$c")" -eq 6 ]
	run ! grep -q '^api cuda.* span=-$' "$c"
	# the callback enabled on 22 runtime calls and the driver's 12 launch calls, no whole domain;
	# run on those 30 calls and on the driver's cuLaunchKernel and cuGraphLaunch the double makes
	# inside the 18 runtime launches, which return at once, uncounted (the agent's 30 below)
	grep -q '^fake-cupti-stats: callbacks enabled=34 domains=0 fired=48$' "$T/err"
	# the analysis ties kernels, copies and syncs to those lines
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	jq -e --argjson l "$l_lin" '.gpu.launch.call_sites[0] | .python.name == "forward" and .python.line == $l and .launches == 6 and .kernel_ns == 120000' "$T/f.json"
	jq -e --argjson l "$l_copy" '.gpu.memcpy[0].top_call_site.python | .name == "copy_in" and .line == $l' "$T/f.json"
	jq -e --argjson l "$l_sync" '.gpu.sync.call_sites[0] | .api == "cudaStreamSynchronize" and .python.name == "step" and .python.line == $l and .count == 6' "$T/f.json"
	jq -e '.gpu.agent.callbacks == 30' "$T/f.json"
}

@test "sample mode: a kernel launched through the driver alone (cuBLAS, Triton) has the Python line that launched it" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_STATS=1 trace -q -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3 driver
	grep -qx 'stack.py done, injected=1' "$T/out"
	c=$T/check
	grep -qx 'meta cuda.agent.python_lines=on' "$c"
	s=$ISC_SRC/tests/gpu/stack.py
	l_mm=$(grep -n 'fake_launch_driver_ex(b"cublas_gemm_kernel"' "$s" | cut -d: -f1)
	l_fused=$(grep -n 'fake_launch_driver(b"triton_fused_kernel"' "$s" | cut -d: -f1)
	# 3 steps: each driver launch with its function and line
	[ "$(grep -c "^api cuLaunchKernelEx kind=2 .* span=- site=matmul@stack.py:$l_mm$" "$c")" -eq 3 ]
	[ "$(grep -c "^api cuLaunchKernel kind=2 .* span=- site=fused@stack.py:$l_fused$" "$c")" -eq 3 ]
	[ "$(grep -c '^op kernel cublas_gemm_kernel .*launch=main' "$c")" -eq 3 ]
	[ "$(grep -c '^op kernel triton_fused_kernel .*launch=main' "$c")" -eq 3 ]
	# the callback ran on 5 runtime calls a step, the 2 driver launches and the 3 driver calls
	# the double makes inside the runtime launches (at once, uncounted)
	grep -q '^fake-cupti-stats: callbacks enabled=34 domains=0 fired=30$' "$T/err"
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	jq -e '.gpu.launch.ops_without_launch_call == 0' "$T/f.json"
	jq -e '.gpu.agent.callbacks == 21 and .gpu.agent.launches == 18' "$T/f.json"
	# the analysis ties the driver's kernels to those lines: 3 launches each, 8 and 3 us a kernel
	jq -c '.gpu.launch.call_sites' "$T/f.json"
	jq -e --argjson l "$l_mm" '[.gpu.launch.call_sites[] | select(.python.name == "matmul")] | length == 1 and .[0].python.line == $l and .[0].launches == 3 and .[0].kernel_ns == 24000' "$T/f.json"
	jq -e --argjson l "$l_fused" '[.gpu.launch.call_sites[] | select(.python.name == "fused")] | length == 1 and .[0].python.line == $l and .[0].launches == 3 and .[0].kernel_ns == 9000' "$T/f.json"
}

@test "sample mode, launch callbacks on 4 threads at once (as CUPTI runs them) over 1500 lines that share site-cache entries: every launch has its own line, every callback is counted" {
	doubles libcuda.so.1 libcupti.so.13
	# FAKE_CUPTI_CB_UNLOCKED: the double runs the callbacks outside its lock; 1500 lines in 4096
	# entries share some, so entries are rewritten while other threads read them
	FAKE_CUPTI_CB_UNLOCKED=1 trace -q -- "$PY" "$ISC_SRC/tests/gpu/lines.py" 1500 4 2
	grep -qx 'lines.py done, injected=1' "$T/out"
	grep -qx 'meta cuda.agent.python_lines=on' "$T/check"
	run -0 lines_sites
	[ "$output" = "ok=12000 bad=0" ]
	grep -qx 'meta cuda.agent.callbacks=12000' "$T/check"
}

@test "the same under ThreadSanitizer: no data race in the agent's lock-free launch path (site cache, per-thread counters)" {
	[ -n "${ISC_CUDA_AGENT_TSAN:-}" ] || skip "no ThreadSanitizer build of the agent (the compiler lacks -fsanitize=thread)"
	doubles libcuda.so.1 libcupti.so.13
	# the interpreter itself, not a wrapper script (a shell under libtsan may not start)
	py=$("$PY" -c 'import sys; print(sys.executable)')
	INFERSCOPE_CUDA_AGENT=$ISC_CUDA_AGENT_TSAN FAKE_CUPTI_CB_UNLOCKED=1 TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0" \
		trace -q -- env LD_PRELOAD="$ISC_LIBTSAN" "$py" "$ISC_SRC/tests/gpu/lines.py" 1500 4 2
	if grep -q 'FATAL: ThreadSanitizer' "$T/err"; then
		skip "ThreadSanitizer cannot run Python here: $(grep -m1 'FATAL: ThreadSanitizer' "$T/err")"
	fi
	grep -qx 'lines.py done, injected=1' "$T/out"
	run ! grep -A20 'WARNING: ThreadSanitizer' "$T/err"
	run -0 lines_sites
	[ "$output" = "ok=12000 bad=0" ]
	grep -qx 'meta cuda.agent.callbacks=12000' "$T/check"
}

@test "sample mode, 300 threads one after another (more than the agent's 255 threads with counters of their own): every launch has its line, every callback is counted" {
	doubles libcuda.so.1 libcupti.so.13
	trace -q -- "$PY" "$ISC_SRC/tests/gpu/lines.py" 2 300 1 sequential
	grep -qx 'lines.py done, injected=1' "$T/out"
	run -0 lines_sites
	[ "$output" = "ok=600 bad=0" ]
	grep -qx 'meta cuda.agent.callbacks=600' "$T/check"
}

@test "INFERSCOPE_CUDA_CALLBACKS (measuring CUPTI's dispatch on a GPU): empty, the same callbacks run and return at once, counted, no Python lines; off, none" {
	doubles libcuda.so.1 libcupti.so.13
	INFERSCOPE_CUDA_CALLBACKS=empty FAKE_CUPTI_STATS=1 trace -q -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3
	grep -qx 'stack.py done, injected=1' "$T/out"
	grep -qx 'meta cuda.agent.python_lines=off: callbacks without their body (INFERSCOPE_CUDA_CALLBACKS=empty)' "$T/check"
	run ! grep -q ' site=' "$T/check"
	# 3 steps of 5 runtime calls (a copy, 2 launches, a graph launch, a sync) and the 3 driver
	# launches the double makes inside them: 24 fired on the 34 calls enabled, as with the body,
	# and every one counted (no line is kept, so no nested call returns before it is counted)
	grep -q '^fake-cupti-stats: callbacks enabled=34 domains=0 fired=24$' "$T/err"
	grep -qx 'meta cuda.agent.callbacks=24' "$T/check"
	grep -qx 'meta cuda.agent.callback_ns=0' "$T/check"
	INFERSCOPE_CUDA_CALLBACKS=off FAKE_CUPTI_STATS=1 trace -q -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3
	grep -qx 'meta cuda.agent.python_lines=off: no callbacks (INFERSCOPE_CUDA_CALLBACKS=off)' "$T/check"
	grep -q '^fake-cupti-stats: callbacks enabled=0 domains=0 fired=0$' "$T/err"
	run ! grep -q ' site=' "$T/check"
}

@test "exact mode: no CUPTI callback at all (the activity records suffice); a C program in sample mode: no Python lines" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_STATS=1 trace -q --python=exact -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 2
	grep -q '^fake-cupti-stats: callbacks enabled=0 domains=0 fired=0$' "$T/err"
	run ! grep -q ' site=' "$T/check"
	run ! grep -q '^meta cuda.agent.python_lines' "$T/check"
	FAKE_CUPTI_STATS=1 trace -q -- "$W" kernels 5
	grep -qx 'meta cuda.agent.python_lines=no CPython in the process' "$T/check"
	grep -q '^fake-cupti-stats: callbacks enabled=0 domains=0 fired=0$' "$T/err"
}

@test "GPU times are on the trace's clock: the smallest launch gap is the double's 3 us" {
	doubles libcuda.so.1 libcupti.so.13
	trace -q -- "$W" all
	grep -qx 'meta gpu.min_launch_gap_ns=3000' "$T/check"
	run ! grep -q 'clock_skew' "$T/check"
	[ ! -s "$T/merge.err" ]
}

# returns: per blocking call of `gpu_workload syncs`, in order, "CALL the
# call's end minus the end of the work it waits for" (tlcheck -t's times).
returns() {
	"$TL" -t "$T/t.istl" > "$T/times"
	awk '
		function end_of(line) { sub(/.* end=/, "", line); return line + 0 }
		/^op kernel sync_kernel /      { k1[n1++] = end_of($0) }
		/^op kernel event_kernel /     { k2[n2++] = end_of($0) }
		/^op memcpy /                  { m[nm++] = end_of($0) }
		/^api cudaDeviceSynchronize /  { s1[c1++] = end_of($0) }
		/^api cudaEventSynchronize /   { s2[c2++] = end_of($0) }
		/^api cudaMemcpy /             { s3[c3++] = end_of($0) }
		END {
			for (i = 0; i < c1; i++) print "cudaDeviceSynchronize", s1[i] - k1[i]
			for (i = 0; i < c2; i++) print "cudaEventSynchronize", s2[i] - k2[i]
			for (i = 0; i < c3; i++) print "cudaMemcpy", s3[i] - m[i]
		}' "$T/times"
}

# The double's clock (fake_cupti.c's top): a host-side wait is data.  The
# host thread is made to wake 20 ms late from each of the 15 blocking calls
# (FAKE_CUPTI_WAKE_LATE_NS, what a loaded machine does by some us to ms);
# each call still returns, in its records, exactly when the work it waits
# for is done: + FAKE_CUPTI_SYNC_NS for a synchronization, + 0 for a
# synchronous copy.  (A double whose calls return on the host's waking,
# as it did, gives 20030000 and more here.)  The workload is one thread
# with no host events of its own between its calls, so the rule that gives
# the lag back to the host after 50 us of the thread's own time
# (FAKE_CUPTI_HOST_OWN_NS, for scopes made in between) has nothing to keep
# in order here: it is set to 10 s, or a preemption of the thread between
# a launch and its sync (a loaded machine: 4 of 6 runs) would put the sync
# on the host's clock and the kernel on the double's.
@test "the double's clock: a blocking call returns when its work is done, however late the host thread wakes" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_STATS=1 FAKE_CUPTI_SYNC_NS=30000 FAKE_CUPTI_WAKE_LATE_NS=20000000 FAKE_CUPTI_HOST_OWN_NS=10000000000 \
		trace -q -- "$W" syncs 5
	[ "$(cat "$T/status")" -eq 0 ]
	# the premise: the host really came back at least 20 ms late from each call
	late=$(sed -n 's/^fake-cupti-clock: woke_late_ns=\([0-9]*\) .*/\1/p' "$T/err")
	echo "host later than the model: $late ns in all"
	[ "$late" -ge $((15 * 20000000)) ]
	returns > "$T/returns"
	cat "$T/returns"
	[ "$(grep -cx 'cudaDeviceSynchronize 30000' "$T/returns")" -eq 5 ]
	[ "$(grep -cx 'cudaEventSynchronize 30000' "$T/returns")" -eq 5 ]
	[ "$(grep -cx 'cudaMemcpy 0' "$T/returns")" -eq 5 ]
	[ "$(wc -l < "$T/returns")" -eq 15 ]
	# the synchronization records end with their calls
	[ "$(grep -c '^op sync Context Sync ' "$T/check")" -eq 5 ]
	[ "$(grep -c '^op sync Event Sync ' "$T/check")" -eq 5 ]
}

@test "clock skew: a negative launch gap is reported with its size" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_SKEW_NS=-50000 trace -q -- "$W" all
	grep -qx 'iscope-merge: clock skew: a GPU operation starts 47000 ns before the call that launched it; GPU times are off by at least that much' "$T/merge.err"
	grep -qx 'meta gpu.min_launch_gap_ns=-47000' "$T/check"
	grep -qx 'meta gpu.clock_skew_ns=47000' "$T/check"
	# operations written before their calls are still linked to them
	[ "$(summary linked)" -eq 10 ]
	[ "$(summary bad_links)" -eq 0 ]
}

@test "records still in CUPTI's buffers at exit are flushed" {
	doubles libcuda.so.1 libcupti.so.13
	# no periodic flush: everything comes from the forced flush at exit
	INFERSCOPE_CUDA_FLUSH_MS=60000 trace -q -- "$W" pending 50
	[ "$(summary kernels)" -eq 50 ]
	[ "$(grep -c '^op sync ' "$T/check")" -eq 1 ]
	[ "$(summary linked)" -eq 51 ]
}

@test "records CUPTI dropped are counted in the timeline" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUPTI_DROPPED=7 trace -q -- "$W" kernels 20
	grep -qx 'gpu_dropped 7' "$T/check"
	run -0 "$MERGE" --log-level=info -o /dev/null "$T/t.isc"
	# 20 kernels and a sync; a runtime call each, the driver's cuLaunchKernel the double makes inside
	# each runtime launch (the driver's launch calls are recorded by default), an overhead call
	[[ "$output" == *"GPU: 21 operations, 21 of them linked to their launching call; 42 calls; 7 records lost by CUPTI"* ]]
}

@test "records the agent's rings cannot hold are dropped and counted, one for one" {
	doubles libcuda.so.1 libcupti.so.13
	# one ring of 64 KiB; the double hands over 1 MiB CUPTI buffers at once
	INFERSCOPE_CUDA_SLOTS=1 trace -q --trace-size=4M -- "$W" kernels 20000
	dropped=$(summary dropped)
	[ "$dropped" -gt 0 ]
	# written: GPU_AGENT, 3 a launch (a runtime call, the driver call the
	# double makes inside it, a kernel), sync (a call, an op), an overhead
	# call, a DEVICE, 4 META (driver version, uuid, bandwidth, context), 6
	# META of the agent's own (DRIVER launches, no Python lines in a C
	# program, 4 of its cost at exit)
	[ $(( $(summary gpu_records) + dropped )) -eq $(( 3 * 20000 + 15 )) ]
	"$MERGE" --dump "$T/t.isc" > "$T/dump"
	grep -q "^END events=0 dropped=$dropped " "$T/dump"
}

@test "the reorder window follows the delay the agent announces" {
	doubles libcuda.so.1 libcupti.so.13
	# CUPTI buffers handed over only at exit, 2 s into the run: the records
	# are up to 2 s late, inside a 10 s window
	INFERSCOPE_CUDA_FLUSH_MS=60000 INFERSCOPE_CUDA_LAG_MS=10000 \
		trace -q --flush-ms=200 --python=exact -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 10 sleep
	run -0 "$MERGE" --log-level=info -o /dev/null "$T/t.isc"
	[[ "$output" != *"after their reorder window"* ]]
	[ "$(summary ops)" -eq 70 ]
	[ "$(summary stack)" -eq 70 ]
	[ "$(summary bad_links)" -eq 0 ]
}

# failure TEST_ENV CODE MESSAGE: the workload runs to its end, unchanged;
# one line on stderr from the agent; one WARNING in the trace; no GPU data.
failure() {
	env "$1" "$RECORD" -q -o "$T/t.isc" -- "$W" all > "$T/out" 2> "$T/err"
	grep -qx 'done all injected=1' "$T/out"
	[ "$(grep -c '^inferscope-cuda: ' "$T/err")" -eq 1 ]
	grep -q "^inferscope-cuda: .*$3" "$T/err"
	"$MERGE" -o "$T/t.istl" "$T/t.isc"
	"$TL" "$T/t.istl" > "$T/check"
	[ "$(grep -c '^warning pid=workload ' "$T/check")" -eq 1 ]
	grep -q "^warning pid=workload code=$2 .*$3" "$T/check"
}

@test "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: one warning, a CPU-only trace" {
	doubles libcuda.so.1 libcupti.so.13
	failure FAKE_CUPTI_FAIL=privileges 7 'CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: GPU profiling is restricted to administrators (NVreg_RestrictProfilingToAdminUsers=1)'
	[ "$(summary ops)" -eq 0 ]
	# the analysis says the GPU half is missing, and the report shows why
	"$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	[ "$(jq -r '.summary.warnings[] | select(.kind == "cupti_privileges") | .count' "$T/f.json")" = 1 ]
	[ "$(jq -r '.findings[] | select(.id == "gpu_not_traced") | .severity' "$T/f.json")" = critical ]
	jq -r '.findings[] | select(.id == "gpu_not_traced") | .suggestion.action' "$T/f.json" | grep -q 'NVreg_RestrictProfilingToAdminUsers=0'
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q '^- .*CUPTI_ERROR_INSUFFICIENT_PRIVILEGES' "$T/r.md"
}

@test "another CUPTI subscriber: one warning, a CPU-only trace" {
	doubles libcuda.so.1 libcupti.so.13
	failure FAKE_CUPTI_FAIL=subscribe 8 'CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED'
	[ "$(summary ops)" -eq 0 ]
}

@test "a CUPTI of another version: one warning, a CPU-only trace" {
	doubles libcuda.so.1 libcupti.so.13
	failure FAKE_CUPTI_VERSION=120000 6 'CUPTI version mismatch: the loaded libcupti is 120000, this agent was built for 130001'
	[ "$(summary ops)" -eq 0 ]
}

@test "an activity kind CUPTI cannot give: one warning, the rest recorded" {
	doubles libcuda.so.1 libcupti.so.13
	failure FAKE_CUPTI_FAIL=memory2 10 'CUPTI activity kinds unavailable: MEMORY2; the rest is recorded'
	[ "$(summary kernels)" -eq 5 ]
	run ! grep -q '^mem ' "$T/check"
}

@test "no CUDA driver: one note, one warning record, no injection" {
	# no doubles; the probe is pointed at a driver that is not there (this
	# machine may or may not have one)
	INFERSCOPE_CUDA_DRIVER=/nonexistent/libcuda.so.1 trace -- "$W" noinit
	[ "$(cat "$T/status")" -eq 0 ]
	[ "$(grep -c '^iscope-record: note:' "$T/err")" -eq 1 ]
	grep -q '^iscope-record: note: no CUDA driver (/nonexistent/libcuda.so.1: .*): GPU activity and GPU samples not recorded$' "$T/err"
	grep -q '^warning pid=session code=1 no CUDA driver' "$T/check"
	run -0 env INFERSCOPE_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$RECORD" -q -o "$T/env.isc" -- env
	[[ "$output" != *"INJECTION64_PATH"* ]]
	# no GPU tracing: --python=auto samples, and says why
	[[ "$output" == *"INFERSCOPE_PYTHON_MODE=sample"* ]]
	run -0 "$MERGE" --dump "$T/env.isc"
	[[ "$output" == *"META record.python_mode=sample (--python=auto: GPU activity not traced)"* ]]
}

@test "the CUDA toolkit's stub driver: one note, one warning record, no injection" {
	[ -f "$STUB" ] || skip "no stub driver at $STUB"
	doubles libcuda.so.1 libcupti.so.13
	INFERSCOPE_CUDA_DRIVER=$STUB FAKE_CUDA_MODE=stub trace -- "$W" all
	grep -qx 'cuInit: 34' "$T/out"
	[ "$(grep -c '^iscope-record: note:' "$T/err")" -eq 1 ]
	grep -q "^iscope-record: note: $STUB is the CUDA toolkit's stub driver (CUDA_ERROR_STUB_LIBRARY)" "$T/err"
	grep -q '^warning pid=session code=2 ' "$T/check"
	[ "$(summary ops)" -eq 0 ]
}

@test "the stub driver double: the same" {
	doubles libcuda.so.1 libcupti.so.13
	FAKE_CUDA_MODE=stub trace -- "$W" all
	grep -qx 'cuInit: 34' "$T/out"
	grep -q "^iscope-record: note: libcuda.so.1 is the CUDA toolkit's stub driver" "$T/err"
	grep -q '^warning pid=session code=2 ' "$T/check"
}

@test "another tool's CUDA_INJECTION64_PATH is left alone, unless --force" {
	doubles libcuda.so.1 libcupti.so.13
	CUDA_INJECTION64_PATH=/opt/other/libinject.so trace -- "$W" all
	grep -q '^iscope-record: note: CUDA_INJECTION64_PATH is already set (/opt/other/libinject.so), by another tool; left alone, GPU activity not recorded (--force replaces it)$' "$T/err"
	grep -q '^warning pid=session code=3 ' "$T/check"
	[ "$(summary ops)" -eq 0 ]
	run -0 env CUDA_INJECTION64_PATH=/opt/other/libinject.so "$RECORD" -q -o "$T/env.isc" -- env
	[[ "$output" == *"CUDA_INJECTION64_PATH=/opt/other/libinject.so"* ]]
	CUDA_INJECTION64_PATH=/opt/other/libinject.so trace --force -- "$W" all
	run ! grep -q 'already set' "$T/err"
	[ "$(summary kernels)" -eq 5 ]
}

@test "another tool's NVTX_INJECTION64_PATH is left alone: no NVTX ranges, the rest recorded" {
	doubles libcuda.so.1 libcupti.so.13
	NVTX_INJECTION64_PATH=/opt/other/libnvtx.so trace -- "$W" all
	grep -q '^iscope-record: note: NVTX_INJECTION64_PATH is already set (/opt/other/libnvtx.so)' "$T/err"
	run ! grep -q '^nvtx ' "$T/check"
	[ "$(summary kernels)" -eq 5 ]
}

@test "--no-cuda: no agent, no notes, no GPU records" {
	doubles libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1
	trace --no-cuda -- "$W" all
	grep -qx 'done all injected=0' "$T/out"
	run ! grep -q 'note:' "$T/err"
	[ "$(summary gpu_records)" -eq 0 ]
	run ! grep -q '^warning\|^gpu_sample' "$T/check"
	run -0 "$RECORD" -q --no-cuda -o "$T/env.isc" -- env
	[[ "$output" != *"INJECTION64_PATH"* ]]
}

@test "--quiet: no notes on stderr; the warning records stay" {
	INFERSCOPE_CUDA_DRIVER=/nonexistent/libcuda.so.1 trace -q -- "$W" noinit
	[ ! -s "$T/err" ]
	grep -q '^warning pid=session code=1 ' "$T/check"
}

@test "the agent outside iscope-record says so once and does nothing" {
	doubles libcuda.so.1 libcupti.so.13
	run -0 --separate-stderr env CUDA_INJECTION64_PATH="$AGENT" "$W" all
	[ "$output" = "done all injected=1" ]
	[ "$stderr" = "inferscope-cuda: INFERSCOPE_SESSION is not set (not started by iscope-record); GPU activity not recorded" ]
}

@test "a forking workload: the parent and an exec'd child record, a fork child stays out" {
	doubles libcuda.so.1 libcupti.so.13
	trace -q -- "$W" fork
	[ "$(cat "$T/status")" -eq 0 ]
	[ ! -s "$T/err" ]
	c=$T/check
	# parent: 2 + 2 kernels and 2 syncs; the exec'd child (its own agent): 4 and 1
	[ "$(grep -c '^op kernel .* p=1 ' "$c")" -eq 4 ]
	[ "$(grep -c '^op kernel .* p=2 ' "$c")" -eq 4 ]
	[ "$(grep -c '^op sync .* p=1 ' "$c")" -eq 2 ]
	[ "$(grep -c '^op sync .* p=2 ' "$c")" -eq 1 ]
	# the fork child's launches on stream 3 went nowhere
	run ! grep -q '^op .* stream=3 ' "$c"
	[ "$(summary bad_links)" -eq 0 ]
	# one PROC_INFO per process, whichever of its files came first
	"$MERGE" --dump "$T/t.isc" > "$T/dump"
	[ "$(grep -c '^P1 PROC ' "$T/dump")" -eq 1 ]
	[ "$(grep -c '^P2 PROC ' "$T/dump")" -eq 1 ]
}

@test "NVML: GPU samples with the double, one note without it" {
	doubles libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1
	trace -- sh -c "sleep 0.4; exec '$W' all"
	run ! grep -q 'note:' "$T/err"
	grep -qx 'gpu_info index=0 gen=4 width=16 link_bw=31507692304 total=42949672960 uuid=GPU-10111213-1415-1617-1819-1a1b1c1d1e1f name=Fake GPU 0' "$T/check"
	grep -qx 'gpu_sample index=0 util=42 mem_util=17 used=12884901888 total=42949672960 sm=1410 memclk=1215 power=250000 temp=65 reasons=0x4 tx=1000 rx=2000' "$T/check"
	# about 10 a second
	n=$(grep -c '^gpu_sample ' "$T/check")
	[ "$n" -ge 3 ]
	[ "$n" -le 30 ]
	doubles libcuda.so.1 libcupti.so.13
	rm "$T/lib/libnvidia-ml.so.1"
	trace -- "$W" all
	[ "$(grep -c '^iscope-record: note:' "$T/err")" -eq 1 ]
	grep -q '^iscope-record: note: no NVML (libnvidia-ml.so.1: .*): GPU utilization, clocks and power not sampled$' "$T/err"
	grep -q '^warning pid=session code=5 ' "$T/check"
	run ! grep -q '^gpu_sample' "$T/check"
}

@test "the analysis: NVML samples, device memory, sync call sites and blocking copies" {
	doubles libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1
	trace -q -- "$PY" "$ISC_SRC/tests/gpu/stack.py" 3 threads sleep
	run -0 "$ANALYZE" -o "$T/f.json" "$T/t.istl"
	valid_findings "$T/f.json"
	# the NVML double's values (fake_nvml.c): 42 %, 12 of 40 GiB, 1410 MHz,
	# 65 C, 250 W, clock-event reasons 0x4 = sw_power_cap, a throttle reason
	python3 - "$T/f.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gpu"]
nv = g["nvml"]
assert len(nv) == 1 and nv[0]["device"] == 0 and nv[0]["samples"] >= 3, nv
n = nv[0]
assert (n["util_gpu_pct_mean"], n["mem_used_max_bytes"], n["mem_total_bytes"]) == (42, 12 << 30, 40 << 30), n
assert (n["sm_mhz_min"], n["sm_mhz_max"], n["temp_c_max"], n["power_w_max"]) == (1410, 1410, 65, 250), n
assert n["throttled_samples"] == n["samples"] and n["throttle_reasons"] == {"sw_power_cap": n["samples"]}, n
dev = g["devices"][0]
assert dev["link_bw_bytes_per_s"] == 31507692304 and dev["memory_total_bytes"] == 40 << 30, dev
assert dev["memory_peak_bytes"] == 12 << 30 and dev["memory_peak_source"] == "nvml", dev
# 2 threads x 3 steps: one cudaStreamSynchronize each in step(), the
# driver's cuStreamSynchronize inside it not counted again
cs = g["sync"]["call_sites"]
assert len(cs) == 1 and cs[0]["api"] == "cudaStreamSynchronize" and cs[0]["count"] == 6, cs
assert cs[0]["python"]["name"] == "step" and cs[0]["python"]["file"].endswith("stack.py"), cs
assert g["sync"]["blocking_copies"] == {"count": 0, "total_ns": 0}, g["sync"]
m = g["memcpy"][0]
assert m["src_memory"] == "pinned" and m["top_call_site"]["python"]["name"] == "copy_in" and m["launch_api_ns"] > 0, m
# each step sleeps 0.2 s on each thread: the gaps between steps
assert g["gaps"]["count"] >= 2 and g["gaps"]["top"][0]["dur_ns"] >= 100000000, g["gaps"]
ts = d["timeseries"]
assert any(x for x in ts["gpu_busy_pct"]) and 42 in ts["gpu_util_pct"] and (12 << 30) in ts["gpu_mem_used_bytes"], ts
PYEOF
	# the C workload: a synchronous pageable cudaMemcpy, 1 MiB allocated and freed
	trace -q -- "$W" all
	run -0 "$ANALYZE" -o "$T/w.json" "$T/t.istl"
	valid_findings "$T/w.json"
	python3 - "$T/w.json" <<'PYEOF'
import json, sys
g = json.load(open(sys.argv[1]))["gpu"]
assert g["sync"]["blocking_copies"]["count"] == 1, g["sync"]
# ranked by their time, which is the double's real time: the order varies with load
cs = {c["api"]: c["count"] for c in g["sync"]["call_sites"]}
assert cs == {"cudaStreamSynchronize": 2, "cudaMemcpy": 1}, g["sync"]
totals = [c["total_ns"] for c in g["sync"]["call_sites"]]
assert totals == sorted(totals, reverse=True), g["sync"]
dev = g["devices"][0]
# GPU_MEMORY allocations win over NVML's used memory (the whole device's)
assert dev["memory_peak_bytes"] == 1 << 20 and dev["memory_peak_source"] == "allocations", dev
PYEOF
}
