#!/usr/bin/env bats
# Kineto import (iscope-merge, iscope-analyze) and Chrome export
# (iscope-merge --format=chrome) on the real traces of tests/data/real/kineto,
# checked against Python's json module (kineto_ref.py), plus the bad
# fixtures of tests/data/bad-kineto (see its README).

bats_require_minimum_version 1.5.0

setup() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
	PY=/usr/bin/python3
	REF="$PY $ISC_SRC/tests/kineto/kineto_ref.py"
	DATA=$ISC_SRC/tests/data/real/kineto
	BAD=$ISC_SRC/tests/data/bad-kineto
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/kineto.XXXXXX")
}

teardown() {
	rm -rf "$T"
}

traces() {
	ls "$DATA"/*.json.gz
}

@test "every real trace imports with exit 0, to a timeline, in a file and in a pipe" {
	n=0
	for f in $(traces); do
		run --separate-stderr "$MERGE" -o "$T/a.istl" "$f"
		[ "$status" -eq 0 ] || { echo "$f: $status $stderr"; false; }
		[ -s "$T/a.istl" ]
		"$MERGE" < "$f" > "$T/b.istl" || { echo "$f: pipe"; false; }
		"$MERGE" --dump-times "$T/a.istl" > "$T/a.txt"
		"$MERGE" --dump-times "$T/b.istl" > "$T/b.txt"
		cmp "$T/a.txt" "$T/b.txt" || { echo "$f: pipe and file differ"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
}

@test "plain JSON and gzip give the same timeline" {
	f=$DATA/a100_nccl_2rank_rank0.json.gz
	"$MERGE" --dump-times "$f" > "$T/gz.txt"
	gzip -dc "$f" > "$T/plain.json"
	"$MERGE" --dump-times "$T/plain.json" > "$T/plain.txt"
	gzip -dc "$f" | "$MERGE" --dump-times > "$T/pipe.txt"
	cmp "$T/gz.txt" "$T/plain.txt"
	cmp "$T/gz.txt" "$T/pipe.txt"
}

@test "GPU ops, kernels, memcpys, memsets, syncs, API calls, CPU ops and marks match Python's json" {
	for f in $(traces); do
		want=$($REF counts "$f")
		"$MERGE" --dump "$f" > "$T/d.txt"
		got=$($REF dump-counts "$T/d.txt")
		[ "$want" = "$got" ] || { echo "$f"; echo "json:   $want"; echo "import: $got"; false; }
	done
	# the numbers are not all zero
	[[ $($REF counts "$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz") == *"kernels=8772"*"marks=12838"* ]]
	[[ $($REF counts "$DATA/a100_triton_example.json.gz") == *"driver=1"* ]]
}

@test "CUDA [memory] events: the device memory peak matches Python's json" {
	f=$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz
	want=$($REF gpu-mem-peak "$f")
	[ "$want" = "0 2791636480" ]
	"$ANALYZE" -o "$T/f.json" "$f"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	got=$(jq -r '.gpu.devices[] | select(.memory_peak_source == "allocations") | "\(.id) \(.memory_peak_bytes)"' "$T/f.json")
	[ "$want" = "$got" ]
	# CPU [memory] events (Device Type 0) stay marks only; a trace without any has no peak
	"$ANALYZE" -o "$T/g.json" "$DATA/a100_alexnet.json.gz"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/g.json"
	[ "$(jq -r '.gpu.devices[0].memory_peak_bytes' "$T/g.json")" = null ]
}

@test "CUDA [memory] events: the peak and what was live at it by site match Python's json" {
	f=$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz
	$REF gpu-mem-sites "$f" > "$T/want.txt"
	[ "$(head -1 "$T/want.txt")" = "0 2791636480" ]
	[ "$(wc -l < "$T/want.txt")" -eq 6 ]
	"$ANALYZE" -o "$T/f.json" "$f"
	jq -r '.gpu.devices[] | select(.memory != null) | "\(.id) \(.memory.peak_bytes)", (.memory.peak_sites[:5][] | "\(.bytes) \(.name)")' "$T/f.json" > "$T/got.txt"
	diff "$T/want.txt" "$T/got.txt"
	# every release found its allocation; the sites at the peak add up to it
	[ "$(jq '.gpu.devices[0].memory.releases_unmatched' "$T/f.json")" -eq 0 ]
	[ "$(jq '.gpu.devices[0].memory | ([.peak_sites[].bytes] | add) + .peak_sites_other_bytes' "$T/f.json")" -eq 2791636480 ]
}

@test "CUDA [memory] events with Addr: a release pairs with its allocation by address" {
	"$ANALYZE" -o "$T/f.json" "$ISC_SRC/tests/data/kineto/memory_addr.json"
	[ "$(jq -r '.gpu.devices[0].memory.pairing' "$T/f.json")" = address ]
	[ "$(jq -r '.gpu.devices[0].memory.peak_bytes' "$T/f.json")" -eq 250 ]
	[ "$(jq -r '[.gpu.devices[0].memory.peak_sites[] | "\(.name)=\(.bytes)"] | join(" ")' "$T/f.json")" = "op_c=150 op_b=100" ]
	[ "$(jq -r '.gpu.devices[0].memory.releases_unmatched' "$T/f.json")" -eq 0 ]
}

@test "CUDA [memory] events with Addr feed memory.sites: one device site per op, exact bytes, no host sampling" {
	"$ANALYZE" -o "$T/f.json" "$ISC_SRC/tests/data/kineto/memory_addr.json"
	# the fixture: op_a 100 bytes freed by address, op_b 100 and op_c 150 live to the end (the peak, 250)
	s='.memory.sites[] | "\(.name) \(.kind) \(.memory) \(.device) \(.pid) \(.allocated_bytes) \(.freed_bytes) \(.live_peak_bytes) \(.live_end_bytes) \(.allocated_err_bytes)"'
	[ "$(jq -r "$s" "$T/f.json" | sort | tr '\n' ';')" = "op_a op device 0 7 100 100 0 0 0;op_b op device 0 7 100 0 100 100 0;op_c op device 0 7 150 0 150 150 0;" ]
	[ "$(jq -r '.memory.sampling' "$T/f.json")" = null ]
	[ "$(jq -r '.memory.growth_sites_source' "$T/f.json")" = null ]
}

@test "Kineto device leak in ProfilerSteps: memory.sites names keep_outputs (leak.py:14), 2 MiB a step, exact; scratch churns 16 MiB a step" {
	f=$ISC_SRC/tests/data/kineto/memory_leak_steps.json
	"$ANALYZE" -o "$T/f.json" "$f"
	# from the fixture itself: keep_outputs' Bytes in all, and in the steps after the first (the warm-up)
	kept=$(jq '[.traceEvents | to_entries[] | select(.value.name == "[memory]" and .value.args.Bytes > 0 and .value.args.Bytes < 16777216) | .value.args.Bytes] | add' "$f")
	steps=$(jq '[.traceEvents[] | select(.name | startswith("ProfilerStep#"))] | length' "$f")
	per=$((kept / steps))
	k='.memory.sites[] | select(.name == "keep_outputs")'
	[ "$(jq -r "$k | \"\(.file):\(.line) \(.memory) \(.device) \(.kind)\"" "$T/f.json")" = "leak.py:14 device 0 python" ]
	[ "$(jq "$k | .leak" "$T/f.json")" = true ]
	[ "$(jq "$k | .leak_per_iteration_bytes" "$T/f.json")" -eq "$per" ]
	[ "$(jq "$k | .retained_bytes" "$T/f.json")" -eq $((per * (steps - 1))) ]
	[ "$(jq "$k | .retained_err_bytes" "$T/f.json")" -eq 0 ]
	[ "$(jq "$k | .live_end_bytes" "$T/f.json")" -eq "$kept" ]
	[ "$(jq -r '.memory.sites[0].name' "$T/f.json")" = keep_outputs ]
	c='.memory.sites[] | select(.name == "scratch")'
	[ "$(jq "$c | .allocated_bytes" "$T/f.json")" -eq $((steps * 16777216)) ]
	[ "$(jq "$c | .retained_bytes" "$T/f.json")" -eq 0 ]
	[ "$(jq "$c | .leak" "$T/f.json")" = false ]
	# the device rule names the same site and bytes; the host leak rule reads host sites only
	[ "$(jq -r '.gpu.devices[0].memory.leak_candidates[0] | "\(.name) \(.bytes_per_iteration)"' "$T/f.json")" = "keep_outputs $per" ]
	[ "$(jq '[.findings[] | select(.id == "memory_leak")] | length' "$T/f.json")" -eq 0 ]
	[ "$(jq '[.findings[] | select(.id == "gpu_memory_leak")] | length' "$T/f.json")" -eq 1 ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -F '| 1 | `keep_outputs` (leak.py:14), device 0 memory | 12.0 MiB | 0 B |' "$T/r.md"
	grep -F 'From the device memory records: every allocation, exact.' "$T/r.md"
}

@test "CUDA [memory] Total Allocated / Total Reserved: peaks and ends per device match Python's json" {
	f=$ISC_SRC/tests/data/kineto/memory_reserved.json
	want=$($REF gpu-mem-totals "$f")
	echo "$want"
	# by hand from the fixture (README): 768 MiB / 1.5 GiB at most, 256 / 512 MiB at the end; device 1: 96 MiB
	[ "$want" = "$(printf '0 805306368 1610612736 268435456 536870912\n1 100663296 100663296 100663296 100663296')" ]
	"$ANALYZE" -o "$T/f.json" "$f"
	"$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
	got=$(jq -r '.gpu.devices[] | select(.memory.allocator != null) | .id as $i | .memory.allocator | "\($i) \(.allocated_peak_bytes) \(.reserved_peak_bytes) \(.allocated_end_bytes) \(.reserved_end_bytes)"' "$T/f.json")
	[ "$want" = "$got" ]
	# over time: reserved at the last bucket's end is the end value, its highest bucket the peak
	[ "$(jq '.gpu.devices[0].memory.over_time.reserved_bytes[-1]' "$T/f.json")" -eq 536870912 ]
	[ "$(jq '.gpu.devices[0].memory.over_time.reserved_max_bytes | max' "$T/f.json")" -eq 1610612736 ]
	[ "$(jq '.gpu.devices[0].memory.over_time.total_allocated_bytes[-1]' "$T/f.json")" -eq 268435456 ]
	# reserved is at least allocated at every bucket end
	[ "$(jq '.gpu.devices[0].memory.over_time | [.reserved_bytes, .total_allocated_bytes] | transpose | map(select(.[0] < .[1])) | length' "$T/f.json")" -eq 0 ]
}

@test "CUDA [memory] totals: gpu_memory_fragmentation from reserved vs allocated of the device that has the gap" {
	f=$ISC_SRC/tests/data/kineto/memory_reserved.json
	read -r _ alloc res _ _ < <($REF gpu-mem-totals "$f" | head -1)
	"$ANALYZE" -o "$T/f.json" "$f"
	[ "$(jq '[.findings[] | select(.id == "gpu_memory_fragmentation")] | length' "$T/f.json")" -eq 1 ]
	[ "$(jq '.findings[] | select(.id == "gpu_memory_fragmentation") | .evidence.metrics.device' "$T/f.json")" -eq 0 ]
	[ "$(jq '.findings[] | select(.id == "gpu_memory_fragmentation") | .evidence.metrics.max_memory_reserved_bytes' "$T/f.json")" -eq "$res" ]
	[ "$(jq '.findings[] | select(.id == "gpu_memory_fragmentation") | .evidence.metrics.max_memory_allocated_bytes' "$T/f.json")" -eq "$alloc" ]
	[ "$(jq '.findings[] | select(.id == "gpu_memory_fragmentation") | .suggestion.estimated_saving_bytes' "$T/f.json")" -eq $((res - alloc)) ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q "^PyTorch's caching allocator (its own totals, memory allocated before the trace included): reserved peak 1.5 GiB at" "$T/r.md"
	"$REPORT" -f html -o "$T/r.html" "$T/f.json"
	grep -q '<title id="isc-c[0-9]*-t">Device memory reserved and allocated by PyTorch&#39;s caching allocator</title>' "$T/r.html"
}

@test "the V100 trace's [memory] events carry no allocator totals: allocator and reserved over time are null" {
	f=$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz
	[ "$($REF gpu-mem-totals "$f")" = none ]
	"$ANALYZE" -o "$T/f.json" "$f"
	[ "$(jq -r '.gpu.devices[0].memory.allocator' "$T/f.json")" = null ]
	[ "$(jq -r '.gpu.devices[0].memory.over_time.reserved_bytes' "$T/f.json")" = null ]
	[ "$(jq '[.findings[] | select(.id == "gpu_memory_fragmentation")] | length' "$T/f.json")" -eq 0 ]
}

@test "a device with [memory] events and no GPU op has its gpu.devices entry with memory" {
	f=$ISC_SRC/tests/data/kineto/memory_reserved.json
	# device 1 has two allocations (64 + 32 MiB) and no kernel, copy or memset
	[ "$($REF gpu-mem-peak "$f" | grep '^1 ')" = "1 100663296" ]
	"$ANALYZE" -o "$T/f.json" "$f"
	[ "$(jq -r '[.gpu.devices[].id] | join(",")' "$T/f.json")" = "0,1" ]
	[ "$(jq '.gpu.devices[1].ops' "$T/f.json")" -eq 0 ]
	[ "$(jq '.gpu.devices[1].memory.peak_bytes' "$T/f.json")" -eq 100663296 ]
	[ "$(jq -r '[.gpu.devices[1].memory.peak_sites[] | "\(.name)=\(.bytes)"] | join(" ")' "$T/f.json")" = "aten::to_d1=67108864 aten::to_d1b=33554432" ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q '^### Device 1 memory by allocation site$' "$T/r.md"
	grep -q '^No GPU ops: device memory records only' "$T/r.md"
}

@test "report: device memory by site, a table in Markdown and a stacked chart in HTML" {
	f=$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz
	"$ANALYZE" -o "$T/f.json" "$f"
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q '^### Device 0 memory by allocation site$' "$T/r.md"
	grep -q '^| 1.3 GiB | 51.0 % | `aten::conv2d` | op |$' "$T/r.md"
	"$REPORT" -f html -o "$T/r.html" "$T/f.json"
	grep -q '<title id="isc-c[0-9]*-t">Live device memory by allocation site</title>' "$T/r.html"
	run $PY "$ISC_SRC/tests/cli/svg_check.py" "$T/r.html"
	[ "$status" -eq 0 ]
	# six bands: five sites and the rest
	[ "$($PY -c 'import re,sys; s=open(sys.argv[1]).read(); c=[x for x in re.findall(r"<svg.*?</svg>", s, re.S) if "by allocation site</title>" in x][0]; print(c.count("data-series"))' "$T/r.html")" -eq 6 ]
}

@test "every GPU op keeps its exact ns start, duration, correlation, device and stream" {
	for f in $(traces); do
		$REF gpu-ops "$f" > "$T/want.txt"
		"$MERGE" --dump-times "$f" > "$T/d.txt"
		$REF dump-gpu "$T/d.txt" > "$T/got.txt"
		[ -s "$T/want.txt" ]
		diff "$T/want.txt" "$T/got.txt" > "$T/diff.txt" || { echo "$f"; head "$T/diff.txt"; false; }
	done
}

@test "ns precision: sub-µs parts of memsets and memcpys survive, durations stay positive" {
	"$MERGE" --dump-times "$DATA/a100_nccl_2rank_rank0.json.gz" > "$T/d.txt"
	# e.g. "Memset (Device)" of 4.96 µs: 4960 ns, not 4000 or 5000
	run awk '$2 == "GPU" && ($5 == "memset" || $5 == "memcpy") {
		n++; d = substr($0, index($0, "dur=") + 4) + 0
		if (d <= 0) bad++; if (d % 1000) frac++ }
		END { print n, bad + 0, frac + 0 }' "$T/d.txt"
	read -r n bad frac <<<"$output"
	[ "$n" -eq 1074 ]
	[ "$bad" -eq 0 ]
	[ "$frac" -gt 1000 ]
}

@test "correlations: every GPU op whose API call is in the file is joined to it" {
	for f in $(traces); do
		"$MERGE" --dump "$f" > "$T/d.txt"
		run $REF joined "$f" "$T/d.txt"
		[[ "$output" =~ source:\ ([0-9]+)\ of\ ([0-9]+).*dump:\ ([0-9]+)\ of\ ([0-9]+) ]]
		r=("${BASH_REMATCH[@]}")
		echo "$f: $output"
		[ "${r[1]}" = "${r[3]}" ]
		[ "${r[2]}" = "${r[4]}" ]
		[ "${r[1]}" -gt 0 ]
	done
}

@test "order: times never go back; spans nest, depths are right, every span ends" {
	for f in $(traces) "$ISC_SRC/tests/data/kineto/nesting.json"; do
		"$MERGE" --dump-times "$f" > "$T/d.txt"
		run $REF check-order "$T/d.txt"
		[[ "$output" == *" errors=0" ]] || { echo "$f: $output"; false; }
	done
}

# regen INPUT GOLDEN (ISC_REGEN=1): rewrite GOLDEN from the dump of INPUT
# and print the difference for review (bats shows it with --show-output-of-passing-tests,
# and on fd 3 always).
regen() {
	"$MERGE" --dump-times "$1" > "$T/regen.dump"
	# diff: 1 is "they differ" (printed for review), 2 is trouble
	diff -u "$2" "$T/regen.dump" >&3 || [ $? -eq 1 ]
	mv "$T/regen.dump" "$2"
}

@test "nesting rules, rounding, names and metadata: golden dump" {
	f=$ISC_SRC/tests/data/kineto/nesting.json
	if [ -n "${ISC_REGEN:-}" ]; then
		regen "$f" "$ISC_SRC/tests/data/kineto/nesting.dump"
	fi
	run --separate-stderr "$MERGE" --log-level=info --dump-times "$f"
	[ "$status" -eq 0 ]
	diff <(echo "$output") "$ISC_SRC/tests/data/kineto/nesting.dump"
	[[ "$stderr" == *"1 flow events ignored, 1 events of unknown categories skipped, 1 spans cut to their parent"* ]]
	# apart from the golden: counted from the JSON in Python, one span per
	# CPU-side X event, one GPU record per kernel/memcpy, one API record per
	# runtime call; w.py's main ends 1.2345 µs after the first event (10 µs):
	# 1234.5 ns, rounded half up to 1235
	echo "$output" > "$T/d.txt"
	python3 - "$f" "$T/d.txt" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
cats = lambda *c: sum(1 for e in ev if e["cat"].lower() in c)
rows = [l.split() for l in open(sys.argv[2]) if not l.startswith("#")]
got = (sum(1 for r in rows if r[3:4] == ["B"]), sum(1 for r in rows if r[1:2] == ["GPU"]),
       sum(1 for r in rows if r[3:4] == ["API"]))
want = (cats("cpu_op", "user_annotation", "python_function"), cats("kernel", "memcpy"), cats("cuda_runtime", "runtime"))
print("spans, GPU records, API records: dump %s, JSON %s" % (got, want))
assert got == want
assert ["1235", "P1", "T2", "E", "python", "main", "w.py:12"] in rows
PY
}

@test "decimal µs text to ns: exponents, rounding once, negative times: golden dump" {
	f=$ISC_SRC/tests/data/kineto/numbers.json
	if [ -n "${ISC_REGEN:-}" ]; then
		regen "$f" "$ISC_SRC/tests/data/kineto/numbers.dump"
	fi
	run "$MERGE" --dump-times "$f"
	[ "$status" -eq 0 ]
	diff <(echo "$output") "$ISC_SRC/tests/data/kineto/numbers.dump"
	# 1500.0005 µs from -0.25 µs: 1500250.5 ns, rounded half up once
	[[ "$output" == *"1500251 P1 T4 B op half_up"* ]]
}

@test "events larger than the in-place window are copied; over 16 MiB they are bad" {
	$PY - "$T/big.json" <<-'PYEOF'
		import json, sys
		ev = [{"ph": "X", "cat": "cpu_op", "name": "n%d" % i, "pid": 1, "tid": 1, "ts": i * 10, "dur": 5}
		      for i in range(20000)]
		ev[5000]["name"] = "big\u00e9" + "x" * 100000   # 100 kB with an escape: beyond the 64 KiB window
		ev[7000]["args"] = {"blob": "y" * (17 << 20)}     # over 16 MiB
		json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
	PYEOF
	run --separate-stderr "$MERGE" --dump "$T/big.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"event #7001: larger than 16 MiB; 1 bad event skipped"* ]]
	[ "$(grep -c '^P1 T1 B op' <<<"$output")" -eq 19999 ]
	grep -q '^P1 T1 B op bigéxxxx' <<<"$output"
	# the same from a gzip stream on stdin: the same events, the same status
	want=$output
	run --separate-stderr bash -c 'gzip -1 -c "$1" | "$2" --dump' _ "$T/big.json" "$MERGE"
	[ "$status" -eq 1 ]
	[ "$output" = "$want" ]
}

@test "external sort: a 1 MiB sort buffer spills runs and gives the same timeline" {
	f=$DATA/v100_resnet50_num_workers_0.pt.trace.json.gz
	"$MERGE" --dump-times "$f" > "$T/mem.txt"
	run --separate-stderr "$MERGE" --log-level=info --sort-memory=1 --dump-times "$f"
	[ "$status" -eq 0 ]
	[[ "$stderr" =~ ([0-9]+)\ sorted\ runs\ spilled ]]
	[ "${BASH_REMATCH[1]}" -ge 4 ]
	diff <(echo "$output") "$T/mem.txt" > /dev/null
	[[ $("$MERGE" --log-level=info --dump "$f" 2>&1 >/dev/null) == *" 0 sorted runs spilled"* ]]
}

@test "a timeline converts back: Kineto -> timeline -> dump equals Kineto -> dump" {
	for f in $(traces); do
		"$MERGE" -o "$T/t.istl" "$f"
		"$MERGE" --dump-times "$T/t.istl" > "$T/a.txt"
		"$MERGE" --dump-times "$f" > "$T/b.txt"
		cmp "$T/a.txt" "$T/b.txt" || { echo "$f"; false; }
	done
	# but a timeline is never merged again into a timeline
	run --separate-stderr "$MERGE" -o "$T/again.istl" "$T/t.istl"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"already a timeline"* ]]
}

@test "chrome round trip: Kineto -> timeline -> chrome keeps every GPU op and its correlation" {
	for f in $(traces); do
		"$MERGE" -o "$T/t.istl" "$f"
		"$MERGE" --format=chrome -o "$T/c.json" "$T/t.istl"
		run $REF chrome "$T/c.json"
		[ "$status" -eq 0 ] || { echo "$f: not valid JSON: $output"; false; }
		head=${lines[0]}
		got_corr=${lines[1]}
		want=$($REF stream-ops "$f")
		want_corr=$($REF stream-correlations "$f")
		[[ "$head" == "gpu_ops_with_stream=$want streams_named=1 "* ]] || { echo "$f: $head, want $want"; false; }
		[ "$got_corr" = "$want_corr" ] || { echo "$f: correlations differ"; false; }
		[[ "$head" =~ flow_ends=([0-9]+) ]]
		[ "${BASH_REMATCH[1]}" -eq "$want" ]
	done
}

@test "chrome: processes, threads and devices named, times in µs with ns, metadata kept" {
	"$MERGE" --format=chrome "$ISC_SRC/tests/data/kineto/nesting.json" > "$T/c.json"
	run $PY - "$T/c.json" <<-'PYEOF'
		import json, sys
		d = json.load(open(sys.argv[1]))
		ev = d["traceEvents"]
		names = {(e["name"], e["args"]["name"]) for e in ev if e["ph"] == "M" and "name" in e["args"]}
		assert ("process_name", "python3") in names, names
		assert ("thread_name", "main") in names, names
		assert ("process_name", "GPU 0 (Test GPU)") in names, names
		assert ("thread_name", "stream 3") in names, names
		k = [e for e in ev if e["ph"] == "X" and e["cat"] == "kernel"][0]
		assert k["ts"] == 1.001 and k["dur"] == 0 and k["args"]["correlation"] == 5, k
		assert k["args"]["grid"] == [2, 1, 1], k
		py = [e for e in ev if e["ph"] == "X" and e["cat"] == "python"][0]
		assert py["dur"] == 1.235 and py["args"]["file"] == "w.py" and py["args"]["line"] == 12, py
		assert [e["ph"] for e in ev if e.get("cat") == "ac2g"] == ["s", "f", "s", "f"]
		assert d["displayTimeUnit"] == "ns"
		assert d["otherData"]["epoch_realtime_ns"] == "1700000000000010000", d["otherData"]
		assert d["otherData"]["rank"] == "3" and d["otherData"]["source"] == "kineto"
		assert [e for e in ev if e["ph"] == "i"][0]["args"]["value"] == -4096
		print("ok")
	PYEOF
	[ "$output" = "ok" ]
}

@test "iscope-analyze reads Kineto directly, the same as through a timeline" {
	f=$DATA/a100_simple_add.json.gz
	run --separate-stderr "$ANALYZE" "$f"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.gpu.devices[0].name == "NVIDIA A100-PG509-200"' > /dev/null
	echo "$output" | jq -S 'del(.input, .tool, .generated_at)' > "$T/direct.json"
	"$MERGE" -o "$T/t.istl" "$f"
	set -o pipefail
	"$ANALYZE" "$T/t.istl" | jq -S 'del(.input, .tool, .generated_at)' > "$T/via.json"
	diff "$T/direct.json" "$T/via.json"
	gzip -dc "$f" | "$ANALYZE" > /dev/null
}

@test "two Kineto traces are one job's ranks: two traces of rank 0 are refused" {
	run --separate-stderr "$MERGE" --dump "$DATA/a100_simple_add.json.gz" "$DATA/a100_alexnet.json.gz"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"not one job: rank 0 is in two inputs (1 and 2)"* ]]
	[ -z "$output" ]
}

# Bad inputs: exit 1, one line on stderr, what was read before the damage kept.
bad() { # FILE EXPECTED-MESSAGE-PART KEPT-LINES-MIN
	run --separate-stderr "$MERGE" --dump "$BAD/$1"
	[ "$status" -eq 1 ] || { echo "$1: status $status"; false; }
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "$1: ${stderr_lines[*]}"; false; }
	[[ "$stderr" == "iscope-merge: $BAD/$1: "*"$2"* ]] || { echo "$1: $stderr"; false; }
	[ "${#lines[@]}" -ge "$3" ] || { echo "$1: ${#lines[@]} lines"; false; }
}

@test "bad: truncated JSON keeps the events before the cut" {
	bad truncated.json "truncated JSON at byte 468 in traceEvents (kept 8 events)" 9
	[[ "$output" == *"E op aten::op2"* ]]
	[[ "$output" != *"aten::op3"* ]]
	[[ "${lines[-1]}" == *"abrupt=1"* ]]
}

@test "bad: truncated and corrupt gzip" {
	bad truncated.json.gz "truncated gzip data after byte" 1000
	bad corrupt.json.gz "bad event" 1000
}

@test "bad: wrong types skip their events, the good ones stay" {
	bad wrong-types.json 'event #2: "ts" is a string, not a number; 4 bad events skipped' 5
	[[ "$output" == *"B op aten::op0"* ]]
	[[ "$output" == *"B op aten::op5"* ]]
	[[ "$output" != *"aten::op1"* ]]
	[[ "${lines[-1]}" == *"lost_frames=4"* ]]
}

@test "bad: huge numbers, deep nesting, stray bytes" {
	bad huge-number.json 'event #2: "ts" out of range; 2 bad events skipped' 3
	bad deep-nesting.json "event #2: nested deeper than 64 levels; 1 bad event skipped" 5
	bad syntax-error.json "invalid JSON at byte" 3
}

@test "bad: not a trace, an empty array, not JSON: an error and no output" {
	bad not-a-trace.json "not a Kineto trace: no traceEvents array" 0
	[ -z "$output" ]
	bad empty-array.json "no events: traceEvents is empty" 0
	[ -z "$output" ]
	bad not-json.json "not an InferScope trace" 0
	run --separate-stderr "$ANALYZE" "$BAD/empty-array.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"no events: traceEvents is empty"* ]]
	run --separate-stderr "$ANALYZE" "$BAD/truncated.json"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"truncated JSON at byte 468"* ]]
}

@test "the iterations of a trace with 2 or more ProfilerStep#N are those steps, counted here from the JSON" {
	# expected: the trace's events named ProfilerStep#<digits>, counted by
	# Python's json module; the DDP trace's nccl:all_reduce repeats more often
	f=$DATA/a100_nccl_2rank_rank0.json.gz
	run "$PY" -c 'import gzip,json,re,sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
print(sum(1 for e in ev if re.fullmatch(r"ProfilerStep#\d+", str(e.get("name"))) and e.get("ph") == "X"))' "$f"
	[ "$status" -eq 0 ]
	want=$output
	[ "$want" -ge 2 ]
	"$ANALYZE" -q -o "$T/f.json" "$f"
	run "$PY" -c 'import json,sys; it = json.load(open(sys.argv[1]))["iterations"]; print(it["name"], it["count"])' "$T/f.json"
	[ "$output" = "ProfilerStep#* $want" ]
}

@test "device memory that grows in plateaus (every other step) is still a leak; churn of 4x its size is not" {
	# 12 ProfilerStep#N of 1 ms; in each, op "tmp" allocates 64 MiB and frees it; on even steps op "keep"
	# allocates 16 MiB it never frees: live bytes at the steps' ends 16, 16, 32, 32, ... MiB (no step lower)
	"$PY" - "$T/plateau.json" <<'PY'
import json, sys
MIB = 1 << 20
ev, addr, tot = [], 0x7f0000000000, 0
def mem(ts, a, b):
    global tot
    tot += b
    ev.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 8, "ts": ts,
               "args": {"Device Type": 1, "Device Id": 0, "Addr": a, "Bytes": b, "Total Allocated": tot,
                        "Total Reserved": 4096 * MIB}})
for s in range(12):
    t0 = 1000 + s * 1000
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "pid": 7, "tid": 8, "ts": t0, "dur": 900})
    ev.append({"ph": "X", "cat": "cpu_op", "name": "tmp", "pid": 7, "tid": 8, "ts": t0 + 10, "dur": 100})
    a = addr; addr += 64 * MIB
    mem(t0 + 20, a, 64 * MIB)
    mem(t0 + 90, a, -64 * MIB)
    if s % 2 == 0:
        ev.append({"ph": "X", "cat": "cpu_op", "name": "keep", "pid": 7, "tid": 8, "ts": t0 + 200, "dur": 100})
        mem(t0 + 250, addr, 16 * MIB); addr += 16 * MIB
    ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + 400, "dur": 50,
               "args": {"device": 0, "stream": 7, "correlation": s + 1}})
json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 8192 * MIB,
           "computeMajor": 9, "computeMinor": 0, "numSms": 4}], "traceEvents": ev}, open(sys.argv[1], "w"))
PY
	run --separate-stderr "$ANALYZE" -o "$T/plateau.f.json" "$T/plateau.json"
	[ "$status" -eq 0 ]
	run jq -r '.gpu.devices[0].memory.leak_candidates[0].name' "$T/plateau.f.json"
	[ "$output" = keep ]
	run jq -r '[.gpu.devices[0].memory.leak_candidates[] | select(.name == "tmp")] | length' "$T/plateau.f.json"
	[ "$output" = 0 ]
	run jq -r '[.findings[] | select(.id == "gpu_memory_leak")] | length' "$T/plateau.f.json"
	[ "$output" = 1 ]
}

@test "memsets keep their memory kind: every 'Memset (Device)' of the NCCL trace is a memset into device memory (mem=0>3)" {
	# counted in the JSON here; ISC_MEM_DEVICE is 3 in formats/trace.md's memory kinds
	want=$("$PY" -c 'import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
print(sum(1 for e in d["traceEvents"] if e.get("cat") == "gpu_memset" and e.get("name") == "Memset (Device)"))' "$DATA/a100_nccl_2rank_rank0.json.gz")
	[ "$want" -eq 114 ]
	"$MERGE" --dump -o "$T/nccl.dump" "$DATA/a100_nccl_2rank_rank0.json.gz"
	run grep -c " memset Memset (Device) .* mem=0>3$" "$T/nccl.dump"
	[ "$output" = "$want" ]
}
