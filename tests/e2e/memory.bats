#!/usr/bin/env bats
# Out-of-memory deaths recorded end to end (issue 16): a real Python
# workload raising MemoryError, and a real torch CPU workload killed by the
# kernel's OOM killer inside iscope-record --memory-limit (skipped, with
# the reason, where no memory cgroup can be made). Each workload states
# its ground truth at the top; expected lines come from the workload file.

bats_require_minimum_version 1.5.0

setup_file() {
	# exact Python mode: these tests check growth sites named by the call open at each sample
	export INFERSCOPE_PYTHON_MODE=exact
	ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	ISC_BUILD=${ISC_BUILD:-build}
	[[ $ISC_BUILD == /* ]] || ISC_BUILD=$ROOT/$ISC_BUILD
	ISC_PY=$("$ROOT/scripts/find-python.sh" 2>"$BATS_FILE_TMPDIR/find-python.err") || ISC_PY=
	export ROOT ISC_BUILD ISC_PY
	export WL=$ROOT/tests/e2e/workloads
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	export REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
}

setup() {
	if [[ -z $ISC_PY ]]; then
		cat "$BATS_FILE_TMPDIR/find-python.err" >&2
		return 1
	fi
}

# The line of FILE holding MARK.
line_of() {
	grep -n "$2" "$1" | head -1 | cut -d: -f1
}

# Skips the test unless iscope-record can make a memory cgroup here.
need_memcg() {
	run --separate-stderr "$REC" --quiet --memory-limit=64M -o /dev/null -- true
	if [ "$status" -ne 0 ]; then
		skip "no writable memory cgroup: $stderr"
	fi
}

@test "MemoryError: oom kind host_alloc_failed at the raising line, verdict oom first" {
	local d=$BATS_TEST_TMPDIR
	run "$REC" --quiet -o "$d/t.isc" -- "$ISC_PY" "$WL/memory_error.py"
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	[ "$(jq -r '.oom.kind' "$d/f.json")" = host_alloc_failed ]
	[ "$(jq -r '.oom.site.name' "$d/f.json")" = grow ]
	# the agent's EXCEPTION record keeps the last 32 bytes of the path
	[[ $(jq -r '.oom.site.file' "$d/f.json") == *workloads/memory_error.py ]]
	[ "$(jq -r '.oom.site.line' "$d/f.json")" -eq "$(line_of "$WL/memory_error.py" "# RAISES$")" ]
	[ "$(jq -r '.oom.site_source' "$d/f.json")" = exception ]
	[ "$(jq -r '.oom.evidence' "$d/f.json")" = "MemoryError in grow" ]
	[ "$(jq -r '.verdict.class' "$d/f.json")" = oom ]
	[ "$(jq -r '.findings[0].id' "$d/f.json")" = oom ]
	# the composition at the end is that of the last RSS sample: smaps_rollup
	# is re-read when the RSS moved 16 MiB, so anonymous + file-backed is
	# within 16 MiB of that RSS (plus 4 MiB for shared memory and rounding)
	local rss anon file
	rss=$(jq -r '.oom.memory_at_end.rss_bytes' "$d/f.json")
	anon=$(jq -r '.oom.memory_at_end.anon_bytes' "$d/f.json")
	file=$(jq -r '.oom.memory_at_end.file_bytes' "$d/f.json")
	[ $((anon + file)) -le $((rss + 20971520)) ]
	[ $((anon + file)) -ge $((rss - 20971520)) ]
	# host memory by site, from the allocation samples: grow() kept 16 MiB a
	# step at the raising line, at least 256 MiB before the limit hit
	[ "$(jq -r '.memory.growth_sites_source' "$d/f.json")" = allocation_samples ]
	[ "$(jq -r '.memory.growth_sites[0].name' "$d/f.json")" = grow ]
	[ "$(jq -r '.memory.growth_sites[0].line' "$d/f.json")" -eq "$(line_of "$WL/memory_error.py" "# RAISES$")" ]
	[ "$(jq -r '.memory.growth_sites[0].bytes' "$d/f.json")" -gt 268435456 ]
	"$REPORT" -o "$d/r.md" "$d/f.json"
	grep -q '^\*\*The workload died of out-of-memory: a host allocation failed (MemoryError), at grow' "$d/r.md"
}

@test "--memory-sampling=off: growth sites from RSS samples, the function and the scope open" {
	local d=$BATS_TEST_TMPDIR
	run "$REC" --quiet --memory-sampling=off -o "$d/t.isc" -- "$ISC_PY" "$WL/memory_error.py"
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	"$ROOT/tests/lib/validate_findings.py" "$d/f.json"
	# no allocation records: the old attribution, and the document's old shape
	[ "$(jq -r '.memory | has("sampling")' "$d/f.json")" = false ]
	[ "$(jq -r '.memory | has("growth_sites_source")' "$d/f.json")" = false ]
	[ "$(jq -r '.memory.growth_sites[0].name' "$d/f.json")" = grow ]
	[ "$(jq -r '.memory.growth_sites[0].scope' "$d/f.json")" = step ]
	[ "$(jq -r '.memory.growth_sites[0].bytes' "$d/f.json")" -gt 268435456 ]
}

@test "the memory held when MemoryError was raised (>= 256 MiB anonymous)" {
	# The workload held 768 MiB when grow() raised (its RLIMIT_AS); the
	# sampler's last reading often comes after the interpreter freed it on
	# its way out.  memory_at_end and memory.composition are taken at the
	# highest RSS reading of the last 2 s (iscope-analyze(1)).
	local d=$BATS_TEST_TMPDIR
	run "$REC" --quiet -o "$d/t.isc" -- "$ISC_PY" "$WL/memory_error.py"
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	"$ROOT/tests/lib/validate_findings.py" "$d/f.json"
	[ "$(jq -r '.oom.memory_at_end.anon_bytes' "$d/f.json")" -ge 268435456 ]
	[ "$(jq -r '.oom.memory_at_end.rss_bytes' "$d/f.json")" -ge 268435456 ]
	[ "$(jq -r '.memory.composition.anon_bytes' "$d/f.json")" -ge 268435456 ]
	# the agent's own reading, right before its EXCEPTION record: a
	# thread's smaps record (pid rss pss swap anon) with that memory
	"$ISC_BUILD/tools/iscope-merge/iscope-merge" --dump-times -o "$d/dump" "$d/t.isc"
	run grep -B1 ' X MemoryError' "$d/dump"
	echo "$output"
	[[ ${lines[0]} =~ \ P1\ T1\ smaps\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ ([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 268435456 ]
}

@test "the agent's SMAPS record before a MemoryError: Rss and Anonymous as smaps_rollup states them, in bytes" {
	# the workload holds 300 MiB it wrote, copies smaps_rollup as it reads it,
	# then raises MemoryError itself: the agent reads the same file a moment
	# later, so its record is the workload's copy (kB x 1024) within 2 MiB
	local d=$BATS_TEST_TMPDIR
	run "$REC" --quiet -o "$d/t.isc" -- "$ISC_PY" -c '
import sys
keep = b"\x01" * (300 << 20)
with open("/proc/self/smaps_rollup") as f:
    text = f.read()
with open(sys.argv[1], "w") as f:
    f.write(text)
raise MemoryError("planted")' "$d/smaps"
	[ "$status" -eq 1 ]
	local rss_kb anon_kb
	rss_kb=$(awk '$1 == "Rss:" { print $2 }' "$d/smaps")
	anon_kb=$(awk '$1 == "Anonymous:" { print $2 }' "$d/smaps")
	[ "$anon_kb" -ge 307200 ]
	"$ISC_BUILD/tools/iscope-merge/iscope-merge" --dump-times -o "$d/dump" "$d/t.isc"
	run grep -B1 ' X MemoryError' "$d/dump"
	echo "$output"
	# pid rss pss swap anon
	[[ ${lines[0]} =~ \ P1\ T1\ smaps\ [0-9]+\ ([0-9]+)\ [0-9]+\ [0-9]+\ ([0-9]+)$ ]]
	local rss=${BASH_REMATCH[1]} anon=${BASH_REMATCH[2]}
	echo "agent: rss $rss anon $anon; workload: rss $((rss_kb * 1024)) anon $((anon_kb * 1024))"
	[ "$rss" -ge $((rss_kb * 1024 - 2097152)) ]
	[ "$rss" -le $((rss_kb * 1024 + 2097152)) ]
	[ "$anon" -ge $((anon_kb * 1024 - 2097152)) ]
	[ "$anon" -le $((anon_kb * 1024 + 2097152)) ]
}

@test "memory.composition: a workload that frees 512 MiB 0.3 s before it exits held it at its end" {
	local d=$BATS_TEST_TMPDIR
	"$REC" --quiet -o "$d/t.isc" -- "$ISC_PY" "$WL/free_before_exit.py"
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	[ "$(jq -r '.oom' "$d/f.json")" = null ]
	[ "$(jq -r '.memory.composition.anon_bytes' "$d/f.json")" -ge 536870912 ]
	[ "$(jq -r '.memory.composition.rss_bytes' "$d/f.json")" -ge 536870912 ]
}

@test "a workload that exits 1 without MemoryError has no oom" {
	local d=$BATS_TEST_TMPDIR
	run "$REC" --quiet -o "$d/t.isc" -- "$ISC_PY" -c 'raise ValueError("not memory")'
	[ "$status" -eq 1 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	[ "$(jq -r '.oom' "$d/f.json")" = null ]
	[ "$(jq -r '.verdict.class' "$d/f.json")" != oom ]
}

@test "--memory-limit: torch killed by the OOM killer; oom host_oom_killer, growing in step" {
	need_memcg
	local d=$BATS_TEST_TMPDIR
	run --separate-stderr "$REC" --memory-limit=400M -o "$d/t.isc" -- "$ISC_PY" "$WL/oom_killer.py"
	echo "$stderr"
	[ "$status" -eq 137 ]
	[[ $stderr == *"was killed by the kernel's OOM killer"* ]]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	"$ROOT/tests/lib/validate_findings.py" "$d/f.json"
	[ "$(jq -r '.oom.kind' "$d/f.json")" = host_oom_killer ]
	# from the allocation samples: the line in step() that keeps 16 MiB a step
	[ "$(jq -r '.oom.site.name' "$d/f.json")" = step ]
	[ "$(jq -r '.oom.site.file' "$d/f.json")" = "$WL/oom_killer.py" ]
	[ "$(jq -r '.oom.site.line' "$d/f.json")" -eq "$(line_of "$WL/oom_killer.py" "keep.append")" ]
	[ "$(jq -r '.oom.site_source' "$d/f.json")" = live_bytes ]
	[ "$(jq -r '.oom.site.growing' "$d/f.json")" = true ]
	[ "$(jq -r '.memory.limit_bytes' "$d/f.json")" -eq 419430400 ]
	[[ $(jq -r '.oom.evidence' "$d/f.json") == *"memory cgroup (v"*"limit 419430400 bytes"* ]]
	[ "$(jq -r '.verdict.class' "$d/f.json")" = oom ]
	[ "$(jq -r '.summary.warnings[] | select(.kind == "oom_kill") | .pid' "$d/f.json")" = "$(jq -r '.oom.pid' "$d/f.json")" ]
}

@test "--memory-limit --memory-sampling=off: the OOM killer's site from RSS growth (no allocation samples)" {
	need_memcg
	local d=$BATS_TEST_TMPDIR
	run --separate-stderr "$REC" --memory-sampling=off --memory-limit=400M -o "$d/t.isc" -- "$ISC_PY" "$WL/oom_killer.py"
	[ "$status" -eq 137 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	[ "$(jq -r '.oom.kind' "$d/f.json")" = host_oom_killer ]
	[ "$(jq -r '.oom.site.name' "$d/f.json")" = step ]
	[ "$(jq -r '.oom.site_source' "$d/f.json")" = rss_growth ]
	[ "$(jq -r '.oom.growth_before.source' "$d/f.json")" = rss_samples ]
}

@test "--memory-limit: a workload killed by SIGKILL with memory to spare is killed, not an OOM kill" {
	need_memcg
	local d=$BATS_TEST_TMPDIR
	run --separate-stderr "$REC" --memory-limit=400M -o "$d/k.isc" -- "$ISC_PY" -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'
	[ "$status" -eq 137 ]
	[[ $stderr != *"OOM killer"* ]]
	"$ANALYZE" -o "$d/k.json" "$d/k.isc"
	[ "$(jq -r '.oom' "$d/k.json")" = null ]
	[ "$(jq -r '.run.outcome' "$d/k.json")" = killed ]
	[ "$(jq -r '.run.signal' "$d/k.json")" = 9 ]
	[ "$(jq -r '[.summary.warnings[] | select(.kind == "oom_kill")] | length' "$d/k.json")" = 0 ]
}

@test "--memory-limit with --ring: the flight recording of the last MiB still names the OOM kill" {
	need_memcg
	local d=$BATS_TEST_TMPDIR
	run --separate-stderr "$REC" --quiet --ring=1M --memory-limit=300M -o "$d/t.isc" -- "$ISC_PY" "$WL/oom_killer.py"
	[ "$status" -eq 137 ]
	"$ANALYZE" -o "$d/f.json" "$d/t.isc"
	[ "$(jq -r '.oom.kind' "$d/f.json")" = host_oom_killer ]
	# the older frames were dropped on purpose (lost_frames), the end was written
	[ "$(jq -r '.summary.complete' "$d/f.json")" = true ]
	[ "$(jq -r '.summary.lost_frames' "$d/f.json")" -gt 0 ]
	[ "$(jq -r '.verdict.class' "$d/f.json")" = oom ]
}

@test "--memory-limit: a bad size is a usage error, the workload does not run" {
	run --separate-stderr "$REC" --memory-limit=lots -o /dev/null -- touch "$BATS_TEST_TMPDIR/ran"
	[ "$status" -eq 2 ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}
