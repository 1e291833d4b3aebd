#!/usr/bin/env bats
# Verdict tests, GPU classes, on the CUDA test doubles of tests/gpu
# (libcuda.so.1, libcupti.so.13, libnvidia-ml.so.1): gpu_scenario.py runs
# one scenario whose ground truth is arithmetic (stated at the top of
# gpu_scenario.py), with the doubles' environment set here (FAKE_CUPTI_*,
# FAKE_NVML*).  Each scenario is recorded, merged and analyzed once; the
# class tests assert verdict.class and the top contributor of the finding
# behind the verdict (issue 5 contract), the signal tests the measured
# numbers each class rests on (they hold today, whatever the rules).
# Recorded with iscope-record's default (--python=auto: sample mode, the
# CUDA agent reading each CUDA call's Python line), and once more with
# ISC_PYTHON_MODE=exact (--python=exact: call spans) by meson.

load ../cli/helpers
bats_require_minimum_version 1.5.0

GPU=${ISC_GPU:-$ISC_BUILD/tests/gpu}
TL=$GPU/tlcheck
SCEN=$ISC_SRC/tests/verdict/gpu_scenario.py

setup() {
	[ -f "$GPU/libcupti.so.13" ] || skip "no CUPTI test double (built only with CUPTI)"
	# hermetic: only what a scenario sets
	unset LD_LIBRARY_PATH CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH INFERSCOPE_CUDA_DRIVER INFERSCOPE_FORCE_CUDA \
		INFERSCOPE_NO_CUDA INFERSCOPE_QUIET FAKE_CUDA_MODE FAKE_CUPTI_FAIL FAKE_CUPTI_VERSION \
		FAKE_CUPTI_DROPPED FAKE_CUPTI_SKEW_NS FAKE_CUPTI_LAUNCH_NS FAKE_CUPTI_SYNC_NS FAKE_NVML FAKE_NVML_LATER FAKE_NVML_LATER_FILE \
		INFERSCOPE_CUDA_LAG_MS INFERSCOPE_CUDA_FLUSH_MS INFERSCOPE_CUDA_SLOTS INFERSCOPE_CUDA_DRIVER_API \
		INFERSCOPE_PYTHON_MODE
	mkdir -p "$BATS_FILE_TMPDIR/lib"
	for l in libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1; do
		ln -sf "$GPU/$l" "$BATS_FILE_TMPDIR/lib/$l"
	done
}

# scenario NAME [VAR=VALUE...]: record gpu_scenario.py NAME with the
# doubles and the given environment, once per file run; sets F (findings)
# and C (tlcheck's listing of the timeline).
scenario() {
	local name=$1 d=$BATS_FILE_TMPDIR/$1
	shift
	F=$d/findings.json
	C=$d/check
	[[ -s $F ]] && return 0
	mkdir -p "$d"
	local st=0 pid
	env LD_LIBRARY_PATH="$BATS_FILE_TMPDIR/lib" "$@" \
		"$RECORD" -q ${ISC_PYTHON_MODE:+--python=$ISC_PYTHON_MODE} -o "$d/t.isc" -- "$PY" "$SCEN" "$name" >"$d/out" 2>"$d/err" &
	pid=$!
	# the machine around the recording (tests/lib/runqueue.py)
	"$ISC_SRC/tests/lib/runqueue.py" "$pid" "$d/machine.json"
	wait "$pid" || st=$?
	if [ "$st" -ne 0 ]; then
		echo "iscope-record: status $st"
		cat "$d/out" "$d/err"
		return 1
	fi
	grep -q "done, injected=1" "$d/out"
	"$MERGE" -o "$d/t.istl" "$d/t.isc"
	"$TL" "$d/t.istl" >"$C"
	"$ANALYZE" -o "$F.tmp" "$d/t.istl"
	valid_findings "$F.tmp"
	mv "$F.tmp" "$F"
}

# The scenarios and their doubles' settings (see gpu_scenario.py).
launch_bound() { scenario launch_bound FAKE_CUPTI_LAUNCH_NS=15000 FAKE_NVML=util=10,reasons=0; }
launch_dispatch() { scenario launch_dispatch FAKE_CUPTI_LAUNCH_NS=3000 FAKE_NVML=util=10,reasons=0; }
cpu_bound() { scenario cpu_bound FAKE_NVML=util=5,reasons=0; }
gpu_compute_bound() { scenario gpu_compute_bound FAKE_NVML=util=99,reasons=0; }
transfer_bound() { scenario transfer_bound FAKE_NVML=util=5,reasons=0; }
sync_bound() { scenario sync_bound FAKE_CUPTI_SYNC_NS=30000 FAKE_NVML=util=45,reasons=0; }
memory_high() { scenario memory_high FAKE_NVML=util=99,reasons=0,mem_used_mib=39000; }
thermal_throttled() {
	scenario thermal_throttled FAKE_NVML=util=99,reasons=0,temp_c=70 \
		FAKE_NVML_LATER=after_ms=300,sm_mhz=1005,temp_c=92,power_mw=300000,reasons=0x60
}

startup_gemm() { scenario startup_gemm FAKE_NVML=util=99,reasons=0; }
idle_clocks() { scenario idle_clocks FAKE_NVML=util=5,reasons=0x5,sm_mhz=345; }
throttle_idle() {
	scenario throttle_idle FAKE_NVML=util=99,reasons=0,temp_c=70 \
		FAKE_NVML_LATER=util=0,sm_mhz=1005,temp_c=92,reasons=0x20 \
		FAKE_NVML_LATER_FILE="$BATS_FILE_TMPDIR/throttle_idle/throttle_now"
}

# signals: the GPU numbers the classes rest on.
signals() {
	jq -r '.gpu.devices[0] as $d | "signals: GPU span \($d.temporal_breakdown.span_ns / 1e6 | .*10|round/10) ms, idle \($d.temporal_breakdown.idle_pct) % compute \($d.temporal_breakdown.compute_pct) % non-compute \($d.temporal_breakdown.non_compute_pct) %; idle by cause \([$d.streams[] | "s\(.id) host_wait \(.idle_breakdown.host_wait_ns / 1e6 | .*10|round/10) kernel_wait \(.idle_breakdown.kernel_wait_ns / 1e6 | .*10|round/10) other \(.idle_breakdown.other_ns / 1e6 | .*10|round/10) ms, queue mean \(.queue_length.mean) max \(.queue_length.max)"] | join("; "))"' "$F"
	jq -r '.gpu.launch as $l | "launches \($l.launches), op shorter than its launch call \($l.gpu_op_shorter_than_launch), kernels under 10 us \($l.short_kernels_under_10us) of \($l.kernels), delay p50 \($l.delay_ns.p50) ns"' "$F"
	jq -r '"kernels: \([.gpu.kernels.top[:2][] | "\(.name) x\(.count) \(.pct) %"] | join(", ")); copies: \([.gpu.memcpy[] | "\(.direction // .kind) \(.src_memory // "") \(.count)x \(.bytes / 1048576 | round) MiB \(.bandwidth_gb_per_s) GB/s"] | join(", ")); sync calls: \([.gpu.sync.api_calls[] | "\(.name) x\(.count) \(.total_ns / 1e6 | .*10|round/10) ms"] | join(", "))"' "$F"
	jq -r '"CPU: \([.cpu.top_functions[:3][] | "\(.name) \(.self_pct) %"] | join(", ")); NVML: \(.gpu.nvml // "n/a" | tostring)"' "$F"
	jq -r '"verdict: \(.verdict.class) (\(.verdict.confidence)) finding \(.verdict.finding // "none"): \(.verdict.sentence)"' "$F"
	jq -r '"findings: \([.findings[]?.id] | join(" "))"' "$F"
}

# top0: the top contributor of the finding behind the verdict into name,
# kind, file, line, detail; fails, saying why, when there is none.
top0() {
	local row
	row=$(jq -r '.verdict.finding as $id | [.findings[]? | select(.id == $id)][0].evidence.top[0]? // empty
		| [.name, .kind, (.file // ""), (.line // 0 | tostring), (.detail // "")] | join("\u001f")' "$F")
	if [[ -z $row ]]; then
		echo "no top contributor: verdict.finding $(jq -c '.verdict.finding' "$F"), findings $(jq -c '[.findings[]?.id]' "$F")"
		return 1
	fi
	IFS=$'\x1f' read -r name kind file line detail <<<"$row"
	echo "top[0]: $name ($kind) $file:$line${detail:+ [$detail]}"
}

# mentions WORD: WORD occurs in the verdict sentence or the evidence (top[]
# names, details, files; metric names) of the finding behind the verdict.
mentions() {
	jq -e --arg w "$1" '.verdict.finding as $id
		| ([.verdict.sentence] + [.findings[]? | select(.id == $id) | (.evidence.top[]? | .name, .detail, .file), (.evidence.metrics // {} | keys[])])
		| map(select(type == "string")) | any(contains($w))' "$F" >/dev/null
}

tb() { # tb FIELD: a number of device 0's temporal breakdown
	jq -r ".gpu.devices[0].temporal_breakdown.$1" "$F"
}

# ---- launch_bound ------------------------------------------------------------

# host_cpus NAME (after the scenario ran): the premise of launch_bound:
# the host thread runs, so that its time goes to the launch calls' 15 us
# of CPU each. Beside other jobs (7-12 other runnable threads on 2 CPUs,
# 2026-11-27) it was preempted 95 % of the time, the launch calls ran
# during 12 % of the GPU's idle time, and the class was cpu_bound (so it
# was with the double's launch cost spent in thread CPU time instead of
# the clock: tried, no better). Measured by tests/lib/runqueue.py around
# the recording: more other runnable threads than half the CPUs on
# average, and the class test skips, saying so.
host_cpus() {
	local ext ncpu
	ext=$(jq -r '.external_runnable_mean // 0' "$BATS_FILE_TMPDIR/$1/machine.json")
	ncpu=$(jq -r '.ncpu' "$BATS_FILE_TMPDIR/$1/machine.json")
	echo "machine: $(cat "$BATS_FILE_TMPDIR/$1/machine.json")"
	if awk -v e="$ext" -v n="$ncpu" 'BEGIN { exit !(e > n / 2) }'; then
		skip "MACHINE ASSUMPTION NOT MET: $1 needs the host's CPU between its CUDA calls; $ext other runnable threads on average on $ncpu CPUs while it was recorded (> $ncpu / 2)"
	fi
}

@test "launch_bound: 10000 kernels of 1 us, 15 us launch calls; verdict launch_bound, top the short kernel or its launcher" {
	launch_bound
	signals
	host_cpus launch_bound
	[ "$(jq -r .verdict.class "$F")" = launch_bound ]
	top0
	[[ $name == vectorized_elementwise_kernel || $name == *decode_step || $name == cudaLaunchKernel* ]]
	# where the launches come from: decode_step (its call spans, or in sample mode its line)
	mentions decode_step
}

@test "launch_bound: the signal: every kernel shorter than its launch call, queue at most 2, GPU mostly idle" {
	launch_bound
	signals
	jq -e '.gpu.kernels.count == 10000 and .gpu.launch.short_kernels_under_10us == 10000' "$F"
	jq -e '.gpu.launch.launches == 10000 and .gpu.launch.gpu_op_shorter_than_launch >= 9900' "$F"
	jq -e '.gpu.devices[0].streams[0].queue_length.max <= 2' "$F"
	jq -e '.gpu.devices[0].temporal_breakdown.idle_pct > 50' "$F"
}

# on_cpu_or_skip NAME: the scenario's premise is a host that runs its loop:
# on a loaded machine the launching thread waits for a CPU for milliseconds
# and the gaps are that, not its per-op cost. Measured by the kernel, not by
# the recorder under test: the scenario's thread's run-queue wait over its
# run (gpu_scenario.py's "waited_ns" line, /proc/thread-self/schedstat;
# without it, its off-CPU time by its own clocks); more than a quarter of
# its wall time, and the test skips, saying so. (Quiet, the thread is on
# CPU nearly all of the time: the launch calls spin; beside a hog per core
# it waited 46-66 % of the time as the sampler saw it, 2026-11-28.)
# MAX (default 25) is the most per cent of its wall time it may wait.
on_cpu_or_skip() {
	local line waited wall pct max=${2:-25}
	line=$(grep -E "^gpu_scenario.py $1 waited_ns=[0-9]+ wall_ns=[0-9]+ " "$BATS_FILE_TMPDIR/$1/out")
	echo "$line"
	waited=${line#* waited_ns=}
	waited=${waited%% *}
	wall=${line#* wall_ns=}
	wall=${wall%% *}
	((wall > 0))
	pct=$((100 * waited / wall))
	if ((pct > max)); then
		skip "MACHINE ASSUMPTION NOT MET: the launching thread waited for a CPU $pct % of its $((wall / 1000000)) ms ${line##* }, a loaded machine: the gaps are preemption"
	fi
}

@test "launch_dispatch: 10000 kernels of 1 us, 3 us launch calls after 10 us of Python dispatch; launch_bound, CUDA graphs suggested" {
	launch_dispatch
	signals
	on_cpu_or_skip launch_dispatch
	jq -c '.findings[] | select(.id == "launch_bound" or .id == "cpu_bound") | {id, m: .evidence.metrics, s: .suggestion.estimated_saving_ns}' "$F"
	[ "$(jq -r .verdict.class "$F")" = launch_bound ]
	top0
	[ "$name" = vectorized_elementwise_kernel ]
	jq -e '.findings[] | select(.id == "launch_bound") | .suggestion.action | contains("CUDA graph") and contains("torch.compile")' "$F"
	# the saving is the idle the short gaps explain, never more than the launch part's share of the span
	# (launch_idle_pct is rounded to 2 decimals: half a unit of its last place more)
	jq -e '.findings[] | select(.id == "launch_bound") | .suggestion.estimated_saving_ns <= (.evidence.metrics.launch_idle_pct + 0.005) / 100 * .evidence.metrics.gpu_span_ns + 1' "$F"
}

@test "launch_dispatch: the signal: launch calls a fifth of the host wait, the short gaps most of it" {
	launch_dispatch
	# the short gaps' part of the host wait over 80 %: the GPU idles about
	# 93 % of the wall time (a 1 us kernel an op of about 14 us), and a
	# preemption of the launching thread turns a 13 us gap into one over
	# 50 us, out of that part; a thread that waited for a CPU 19 % of its
	# wall time can move a fifth of the host wait out (a clean-clone run
	# on our shared machine beside three CPU hogs, 2026-11-28: 21 %
	# waited, the check failed in both modes):
	# this check needs the thread to have waited at most 15 %
	on_cpu_or_skip launch_dispatch 15
	jq -e '.gpu.launch.launches == 10000 and .gpu.launch.gpu_op_shorter_than_launch >= 9900' "$F"
	jq -e '.gpu.devices[0].streams[0] | .idle_breakdown.host_wait_launch_ns > 0.8 * .idle_breakdown.host_wait_ns' "$F"
	jq -e '.gpu.launch.api_total_ns < 0.5 * .gpu.devices[0].streams[0].idle_breakdown.host_wait_ns' "$F"
}

# ---- cpu_bound ---------------------------------------------------------------

@test "cpu_bound: 15 ms of Python tokenize a step, 1 ms of kernels; verdict cpu_bound, top contributor tokenize" {
	cpu_bound
	signals
	[ "$(jq -r .verdict.class "$F")" = cpu_bound ]
	top0
	[[ $name == *tokenize ]]
	[ "$kind" = python ]
	[[ $file == *gpu_scenario.py ]]
}

@test "cpu_bound: the signal: GPU idle over 85 %, the gaps waiting on the host, the host in tokenize" {
	cpu_bound
	signals
	jq -e '.gpu.devices[0].temporal_breakdown.idle_pct > 85' "$F"
	jq -e '.gpu.devices[0] | .streams[0].idle_breakdown.host_wait_ns > 0.9 * .temporal_breakdown.idle_ns' "$F"
	# sample mode (the default with a GPU) names the C calls tokenize makes "C call in tokenize"
	[[ "$(jq -r '.cpu.top_functions[0].name' "$F")" == *tokenize ]]
}

# ---- gpu_compute_bound -------------------------------------------------------

@test "gpu_compute_bound: 5 ms kernels back to back; verdict gpu_compute_bound, top contributor the kernel" {
	gpu_compute_bound
	signals
	[ "$(jq -r .verdict.class "$F")" = gpu_compute_bound ]
	top0
	[ "$name" = ampere_sgemm_128x64_tn ]
}

# The GPU's side is data (25 steps of 8 kernels of 5 ms, queued back to
# back: 1 s of compute, nothing else); the gaps are between steps, where
# the host returns from the sync and launches the next: all host_wait,
# and their share of the span follows the host's scheduling (the check
# this replaces, compute > 98 % of the span, failed beside other jobs'
# load for thermal_throttled, the same scenario: issue 28).
@test "gpu_compute_bound: the signal: 1 s of compute, the kernels' own, the GPU idle only between steps, for the host" {
	gpu_compute_bound
	signals
	jq -e '.gpu.devices[0].temporal_breakdown | .compute_ns == 25 * 8 * 5000000 and .non_compute_ns == 0' "$F"
	# (a launch delayed just as the queue ran dry can make a gap of < 3 us kernel_wait)
	jq -e '.gpu.devices[0] | .temporal_breakdown.idle_ns - .streams[0].idle_breakdown.host_wait_ns < 100000' "$F"
	[ "$(jq -r '.gpu.kernels.top[0].name' "$F")" = ampere_sgemm_128x64_tn ]
}

# ---- transfer_bound ----------------------------------------------------------

@test "transfer_bound: 128 MiB of pageable HtoD copies a step; verdict transfer_bound, top contributor the pageable HtoD copies" {
	transfer_bound
	signals
	[ "$(jq -r .verdict.class "$F")" = transfer_bound ]
	top0
	[[ $name == *HtoD* || $detail == *HtoD* ]]
	[[ $name == *ageable* || $detail == *ageable* ]]
}

@test "transfer_bound: the finding names the call site of the copies, load_batch" {
	transfer_bound
	top0
	mentions load_batch
}

# The GPU's side is data: 120 copies of 32 MiB at the double's 10 GB/s
# (bytes / 10 + 1 us: 3356443 ns each) and 30 kernels of 0.5 ms, one
# stream, no overlap: copies 402773160 of 417773160 ns busy, 96.4 %. The
# time between them is the host's (a synchronous copy returns, Python
# calls the next): it is idle waiting for the host, and its share of the
# span follows how the host was scheduled (9.9 % of it beside other
# sessions' load, 2026-11-27, where `non_compute_pct > 90`, the check this
# replaces, read 79-89 %: issue 28), so it is not asserted.
@test "transfer_bound: the signal: copies 96 % of the GPU's busy time, pageable, the GPU idle only for the host, host blocked in cudaMemcpy" {
	transfer_bound
	signals
	jq -e '.gpu.memcpy[] | select(.direction == "HtoD" and .src_memory == "pageable") | .count == 120 and .bytes == 120 * 33554432' "$F"
	jq -e '.gpu.devices[0].temporal_breakdown.non_compute_ns == 120 * 3356443' "$F"
	jq -e '.gpu.devices[0].temporal_breakdown.compute_ns == 30 * 500000' "$F"
	jq -e '.gpu.devices[0] | .streams[0].idle_breakdown.host_wait_ns == .temporal_breakdown.idle_ns' "$F"
	# synchronous: the host is in cudaMemcpy for each copy's whole duration
	jq -e '(.gpu.sync.api_calls[] | select(.name == "cudaMemcpy") | .total_ns) >= 120 * 3356443' "$F"
}

# The host-side wait is the double's data (its clock, tests/gpu/fake_cupti.c):
# each cudaMemcpy starts its copy 3 us after the call (the stream is free:
# the step before ended with a sync) and returns when the copy ends, so the
# calls last 120 x (3000 + 3356443) ns in all, exactly, however late the
# host thread woke from them (a double that returned on the host's waking
# read 56 us a call more at the median beside other jobs: issue 28).
@test "transfer_bound: the host blocked in cudaMemcpy exactly the copies' time, 120 x 3.36 ms, whatever the host's load" {
	transfer_bound
	jq -e '.gpu.sync.blocking_copies.count == 120' "$F"
	jq -r '.gpu.sync.api_calls[] | select(.name == "cudaMemcpy") | "cudaMemcpy: \(.count) calls, \(.total_ns) ns"' "$F"
	jq -e '.gpu.sync.api_calls[] | select(.name == "cudaMemcpy") | .count == 120 and .total_ns == 120 * (3000 + 3356443)' "$F"
}

# ---- sync_bound --------------------------------------------------------------

# The premise of sync_bound's class and share: the host thread runs its
# loop between the syncs.  The double's clock makes the syncs and the GPU's
# work data (the test below); the host's own time between a sync's return
# and the next launch (about 20 us of Python) stays the host's, and beside
# other CPU-bound jobs it is preemption: with a hog on each core and 5-10
# other runnable threads (2026-11-28, tests/bench/gpu_clock_load.sh) the
# syncs were 44-82 % of the span and the class cpu_bound once in 11 runs.
# (The double that returned on the host's waking counted the late wake-ups
# in the syncs, which kept them above 84 %.)  Measured as launch_bound's.
@test "sync_bound: cudaDeviceSynchronize after every 40 us kernel; verdict sync_bound, top contributor the sync in score" {
	sync_bound
	signals
	host_cpus sync_bound
	[ "$(jq -r .verdict.class "$F")" = sync_bound ]
	top0
	if [[ $name == cudaDeviceSynchronize* ]]; then
		mentions score
	else
		[[ $name == *score ]]
	fi
}

@test "sync_bound: the signal: the host blocked in 2000 device syncs most of the time, the GPU idle a third or more" {
	sync_bound
	signals
	jq -e '.gpu.sync.api_calls[] | select(.name == "cudaDeviceSynchronize") | .count == 2000' "$F"
	jq -e '.gpu.devices[0].temporal_breakdown.idle_pct > 30' "$F"
	host_cpus sync_bound
	jq -e '(.gpu.sync.api_calls[] | select(.name == "cudaDeviceSynchronize") | .total_ns) > 0.7 * .gpu.devices[0].temporal_breakdown.span_ns' "$F"
}

# sync_returns: per cudaDeviceSynchronize of sync_bound (in order), how it
# returned on the double's clock (tlcheck -t's times): "after_kernel N"
# (its end N ns after its kernel's), or "at_once N" when it was called
# after the kernel's end + 30 us less 1 us (the host came late, the work
# was done: a 1 us call), with N its end minus its start.
sync_returns() {
	"$TL" -t "$BATS_FILE_TMPDIR/sync_bound/t.istl" > "$BATS_FILE_TMPDIR/sync_times"
	awk '
		function end_of(l) { sub(/.* end=/, "", l); return l + 0 }
		function start_of(l) { sub(/.* t=/, "", l); sub(/ .*/, "", l); return l + 0 }
		BEGIN { nk = 0; nc = 0 }
		/^op kernel reduce_kernel / { ke[nk++] = end_of($0) }
		/^api cudaDeviceSynchronize / { cs[nc] = start_of($0); ce[nc++] = end_of($0) }
		END {
			for (i = 0; i < nc; i++)
				if (cs[i] + 1000 >= ke[i] + 30000)
					print "at_once", ce[i] - cs[i]
				else
					print "after_kernel", ce[i] - ke[i]
		}' "$BATS_FILE_TMPDIR/sync_times"
}

# The wake-up is the double's data: a cudaDeviceSynchronize returns 30 us
# after its kernel ends (FAKE_CUPTI_SYNC_NS), on the double's clock, or
# after 1 us when the host called it once that had passed, whatever the
# host's load (the host's own time between calls stays its own); a double
# that returned on the host's waking read 30 us plus the host's delay
# (issue 28: sync_bound's idle followed the host's speed).
@test "sync_bound: every device sync returns exactly 30 us after its kernel ends, whatever the host's load" {
	sync_bound
	# each distinct return and how many: "COUNT HOW NS"
	sync_returns > "$BATS_FILE_TMPDIR/sync_each"
	awk '{ n[$0]++ } END { for (k in n) print n[k], k }' "$BATS_FILE_TMPDIR/sync_each" > "$BATS_FILE_TMPDIR/sync_returns"
	cat "$BATS_FILE_TMPDIR/sync_returns"
	[ "$(awk '{ n += $1 } END { print n }' "$BATS_FILE_TMPDIR/sync_returns")" -eq 2000 ]
	run -0 awk '$2 == "after_kernel" && $3 != 30000 || $2 == "at_once" && $3 != 1000' "$BATS_FILE_TMPDIR/sync_returns"
	[ -z "$output" ]
	# the host called most of them while the kernel ran
	[ "$(awk '$2 == "after_kernel" { print $1 }' "$BATS_FILE_TMPDIR/sync_returns")" -ge 1000 ]
}

# ---- device memory above 90 % ------------------------------------------------

@test "memory_high: 39000 of 40960 MiB used; verdict gpu_compute_bound and a device-memory finding" {
	memory_high
	signals
	[ "$(jq -r .verdict.class "$F")" = gpu_compute_bound ]
	run jq -r '[.findings[] | select(.id | test("mem")) | select(.id != "rss_growth" and .id != "host_memory_bound") | .id] | first // empty' "$F"
	echo "device memory finding: $output"
	[ -n "$output" ]
	jq -e --arg id "$output" '.findings[] | select(.id == $id) | .evidence.metrics | to_entries | any(.key | test("pct")) ' "$F"
}

@test "memory_high: the signal: NVML reports 39000 MiB used of 40 GiB, 37 GiB allocated by the workload" {
	memory_high
	grep -q '^gpu_sample index=0 .* used=40894464000 total=42949672960 ' "$C"
	grep -q '^mem dev=0 .* op=1 kind=3 bytes=39728447488 ' "$C"
}

# ---- thermal_throttled -------------------------------------------------------

@test "thermal_throttled: thermal clock-event reasons, SM clock 1410 -> 1005 MHz while busy; verdict thermal_throttled" {
	thermal_throttled
	signals
	[ "$(jq -r .verdict.class "$F")" = thermal_throttled ]
	top0
	mentions thermal
}

@test "thermal_throttled: the signal: samples before 300 ms unthrottled, after it sw+hw thermal at 1005 MHz, 92 C" {
	thermal_throttled
	n_hot=$(grep -c '^gpu_sample index=0 .* sm=1005 .* temp=92 reasons=0x60 ' "$C")
	n_cool=$(grep -c '^gpu_sample index=0 .* sm=1410 .* temp=70 reasons=0 ' "$C")
	echo "NVML samples: $n_cool at 1410 MHz, $n_hot throttled at 1005 MHz"
	[ "$n_hot" -ge 5 ]
	[ "$n_cool" -ge 1 ]
	# busy: gpu_compute_bound's kernels, the idle time the host's (above)
	jq -e '.gpu.devices[0].temporal_breakdown | .compute_ns == 25 * 8 * 5000000 and .non_compute_ns == 0' "$F"
	# (a launch delayed just as the queue ran dry can make a gap of < 3 us kernel_wait)
	jq -e '.gpu.devices[0] | .temporal_breakdown.idle_ns - .streams[0].idle_breakdown.host_wait_ns < 100000' "$F"
}

@test "idle_clocks: NVML reports 345 MHz with gpu_idle | sw_power_cap all along; no thermal_throttled, verdict cpu_bound" {
	idle_clocks
	signals
	n=$(grep -c '^gpu_sample index=0 .* sm=345 .* reasons=0x5 ' "$C")
	n_all=$(grep -c '^gpu_sample index=0 ' "$C")
	echo "NVML samples at idle clocks: $n of $n_all"
	# all along: every sample (how many depends on how long the host took)
	[ "$n" -ge 1 ]
	[ "$n" -eq "$n_all" ]
	jq -e '.gpu.nvml[0].busy_samples == 0 and .gpu.nvml[0].throttled_busy_samples == 0' "$F"
	run -0 jq -r '[.findings[].id] | index("thermal_throttled")' "$F"
	[ "$output" = null ]
	[ "$(jq -r .verdict.class "$F")" = cpu_bound ]
}

@test "throttle_idle: sw_thermal reported only after the last kernel; no sample is throttled work, no thermal_throttled" {
	throttle_idle
	signals
	n=$(grep -c '^gpu_sample index=0 .* sm=1005 .* reasons=0x20 ' "$C")
	echo "NVML samples throttled while the GPU is idle: $n"
	[ "$n" -ge 5 ]
	jq -e '.gpu.nvml[0].throttled_samples >= 5' "$F"
	jq -e '.gpu.nvml[0].throttled_busy_samples == 0 and .gpu.nvml[0].throttled_busy_ns == 0' "$F"
	run -0 jq -r '[.findings[].id] | index("thermal_throttled")' "$F"
	[ "$output" = null ]
	[ "$(jq -r .verdict.class "$F")" != thermal_throttled ]
}

@test "thermal_throttled: the samples taken while kernels ran are busy, those after 300 ms throttled work at 1005 MHz" {
	thermal_throttled
	# the kernels run back to back for 1 s: every sample interval after the
	# first kernel holds work; how many fall before 300 ms depends on how
	# fast Python starts, so only the throttled part is counted
	jq -e '.gpu.nvml[0].busy_samples >= 10' "$F"
	jq -e '.gpu.nvml[0] | .throttled_busy_samples >= 5 and .throttled_busy_ns > 0.4 * .busy_ns' "$F"
	jq -e '.gpu.nvml[0] | .sm_mhz_min_throttled == 1005' "$F"
}

# ---- the steady iterations (issue 29) ----------------------------------------

@test "startup_gemm: 1.5 s idle start-up, then 10 ms kernels back to back in scope(\"step\"); gpu_compute_bound judged on the iterations" {
	startup_gemm
	signals
	jq -c '.gpu.in_iterations | {iterations, window_ns, share_pct, ops, tb: .devices[0].temporal_breakdown}' "$F"
	[ "$(jq -r .verdict.class "$F")" = gpu_compute_bound ]
	[ "$(jq -r '.findings[] | select(.id == "gpu_compute_bound") | .judged_on' "$F")" = iterations ]
	top0
	[ "$name" = ampere_sgemm_128x64_tn ]
}

@test "startup_gemm: the signal: 6 steady steps of 8 kernels, compute over 90 % inside them; the whole run's figures kept, mostly idle" {
	startup_gemm
	jq -e '.gpu.in_iterations.iterations == 6 and .gpu.in_iterations.kernels.count == 48' "$F"
	# the GPU's side is the double's data: 48 kernels of 10 ms inside the steps
	jq -e '.gpu.in_iterations.devices[0].temporal_breakdown.compute_ns == 48 * 10000000' "$F"
	jq -e '.gpu.in_iterations.share_pct > 95' "$F"
	# the steps' total time is the window: 6 x 80 ms and the syncs' return
	jq -e '.gpu.in_iterations.window_ns >= 480000000 and .gpu.in_iterations.window_ns < 700000000' "$F"
	# whole run: 57 kernels (the start-up one and the warm-up step's 8 too), the start-up gap
	jq -e '.gpu.kernels.count == 57 and .gpu.devices[0].temporal_breakdown.idle_pct > 60' "$F"
	[ "$(jq -r '.iterations.name' "$F")" = step ]
	# compute over 90 % of the steps: the host's return from each sync and
	# its next launch under 9 ms a step, its own time (beside a hog per core,
	# 2026-11-28, once 90 % or less: preemption): measured, as launch_bound's
	host_cpus startup_gemm
	jq -e '.gpu.in_iterations.devices[0].temporal_breakdown.compute_pct > 90' "$F"
}
