#!/usr/bin/env bash
# The GPU verdict scenarios under CPU load, against the CUDA test doubles:
# do the verdicts and their GPU numbers follow the host's load?  (issue 28
# item 5: the CUPTI double's clock, tests/gpu/fake_cupti.c.)
#
#   tests/bench/gpu_clock_load.sh [-r RUNS] [-d DOUBLES_DIR] [BUILD_DIR]
#
# Each run records tests/verdict/gpu_scenario.py's sync_bound,
# transfer_bound and gpu_compute_bound (the doubles' settings of
# verdict_gpu.bats) twice: quiet, then with a CPU hog of our own on every
# core (a shell busy loop per CPU at this script's priority, as
# tests/load.sh makes); prints one line per recording: the verdict and
# the numbers the classes rest on:
#   sync_bound       how the 2000 device syncs returned: 30 us after their
#                    kernel (the double's wake-up), in 1 us (called after
#                    that), other (the largest return after the kernel);
#                    the syncs' share of the GPU span, GPU idle %
#   transfer_bound   the 120 cudaMemcpy calls' total (ns: the copies'
#                    time, 120 x 3359443 = 403133160), non-compute %
#   gpu_compute_bound  compute ns (25 x 8 x 5 ms), idle %
# and the main thread's share off CPU (the sampler's off_cpu_ns) and the
# other runnable threads during it (tests/lib/runqueue.py).
# DOUBLES_DIR (default BUILD_DIR/tests/gpu) holds libcuda.so.1,
# libcupti.so.13, libnvidia-ml.so.1 and tlcheck: another libcupti.so.13
# there compares another double (e.g. main's).  Not a test: it prints.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

runs=3 dir=
while getopts r:d: o; do
	case $o in
	r) runs=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) echo "usage: tests/bench/gpu_clock_load.sh [-r RUNS] [-d DOUBLES_DIR] [BUILD_DIR]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=$(realpath "${1:-build}")
dir=$(realpath "${dir:-$build/tests/gpu}")
py=/usr/bin/python3
tmp=$(mktemp -d)
pids=()
stop_hogs() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
trap 'stop_hogs; rm -rf "$tmp"' EXIT
mkdir "$tmp/lib"
for l in libcuda.so.1 libcupti.so.13 libnvidia-ml.so.1; do
	ln -s "$dir/$l" "$tmp/lib/$l"
done

# one NAME VAR=VALUE...: records scenario NAME, prints its line
one() {
	local name=$1 d=$tmp/$1 pid
	shift
	rm -rf "$d"
	mkdir -p "$d"
	env LD_LIBRARY_PATH="$tmp/lib" "$@" "$build/tools/iscope-record/iscope-record" -q -o "$d/t.isc" -- \
		"$py" tests/verdict/gpu_scenario.py "$name" >"$d/out" 2>&1 &
	pid=$!
	tests/lib/runqueue.py "$pid" "$d/machine.json"
	wait "$pid"
	"$build/tools/iscope-merge/iscope-merge" -o "$d/t.istl" "$d/t.isc"
	"$build/tools/iscope-analyze/iscope-analyze" -o "$d/f.json" "$d/t.istl"
	local F=$d/f.json ext extra off
	ext=$(jq -r '.external_runnable_mean' "$d/machine.json")
	case $name in
	sync_bound)
		extra=$("$dir/tlcheck" -t "$d/t.istl" | awk '
			function end_of(l) { sub(/.* end=/, "", l); return l + 0 }
			function start_of(l) { sub(/.* t=/, "", l); sub(/ .*/, "", l); return l + 0 }
			BEGIN { nk = 0; nc = 0 }
			/^op kernel reduce_kernel / { k[nk++] = end_of($0) }
			/^api cudaDeviceSynchronize / { s[nc] = start_of($0); c[nc++] = end_of($0) }
			END {
				for (i = 0; i < nc; i++)
					if (s[i] + 1000 >= k[i] + 30000) { late++; other += c[i] - s[i] != 1000 }
					else { d = c[i] - k[i]; n30 += d == 30000; other += d != 30000; if (d > max) max = d }
				printf "syncs: %d return 30 us after their kernel, %d called later (1 us), %d other (max %d ns)",
					n30, late, other, max
			}')
		extra+=$(jq -r '.gpu.devices[0].temporal_breakdown as $t | (.gpu.sync.api_calls[] | select(.name == "cudaDeviceSynchronize") | .total_ns) as $s
			| ", syncs \($s / $t.span_ns * 1000 | round / 10) % of span, idle \($t.idle_pct) %"' "$F") ;;
	transfer_bound)
		extra=$(jq -r '.gpu.devices[0].temporal_breakdown as $t | (.gpu.sync.api_calls[] | select(.name == "cudaMemcpy") | .total_ns) as $c
			| "cudaMemcpy total \($c) ns, non-compute \($t.non_compute_pct) %, idle \($t.idle_pct) %"' "$F") ;;
	*)
		extra=$(jq -r '.gpu.devices[0].temporal_breakdown | "compute \(.compute_ns) ns, idle \(.idle_pct) %"' "$F") ;;
	esac
	off=$(jq -r '[.processes[].threads[] | select(.name == "MainThread") | .off_cpu_ns / (.off_cpu_ns + .cpu_ns) * 100 | floor][0] // "?"' "$F")
	printf '%-18s %-6s class %-18s %s; main thread off CPU %s %%, others runnable %s\n' "$name" "$load" \
		"$(jq -r .verdict.class "$F")" "$extra" "$off" "$ext"
}

scenarios() {
	one sync_bound FAKE_CUPTI_SYNC_NS=30000 FAKE_NVML=util=45,reasons=0
	one transfer_bound FAKE_NVML=util=5,reasons=0
	one gpu_compute_bound FAKE_NVML=util=99,reasons=0
}

echo "doubles: $dir (libcupti.so.13 $(sha1sum "$dir/libcupti.so.13" | cut -c1-12)), $runs runs, $(nproc) CPUs"
for r in $(seq "$runs"); do
	echo "run $r"
	load=quiet
	scenarios
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		pids+=($!)
	done
	load=loaded
	scenarios
	stop_hogs
done
