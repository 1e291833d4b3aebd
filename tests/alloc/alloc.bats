#!/usr/bin/env bats
# Allocation sampling end to end (issue 25): planted truths recorded for
# real (each workload of tests/alloc/workloads states its truth at the
# top; lines come from the markers in the workload file), checked at the
# trace and timeline level (iscope-merge --dump-times), through the site
# model (alloc_sites_dump, which runs lib/analyze/alloc_sites.c over the
# recording) and through the whole pipe (iscope-analyze's memory.sites,
# growth_sites, peak_composition and oom; the memory_leak, memory_churn
# and oom findings; iscope-report's rows).  Bytes are checked within the
# sampling error the model states: four standard errors (an estimate off
# by more has a probability of about 6e-5, so the checks do not flake;
# that two errors cover 95 % of samplings is the unit test's business,
# test_alloc_sites.c), plus half a byte a sample for the weights'
# rounding.  Allocations much larger than the interval have an error near
# 0: their checks are exact to the byte.

load ../cli/helpers
bats_require_minimum_version 1.5.0

setup() {
	T=$(mktemp -d)
	WL=$ISC_SRC/tests/alloc/workloads
	DUMP=$ISC_ALLOC_DUMP
}

teardown() {
	rm -rf "$T"
}

# The line of FILE holding MARK.
line_of() {
	grep -n "$2" "$1" | head -1 | cut -d: -f1
}

# site FUNCTION LINE: the JSON line of that site (function, innermost line).
site() {
	jq -c "select(.function == \"$1\" and .line == $2)" "$T/sites"
}

# within GOT WANT ERR SAMPLES: |GOT - WANT| <= 4 ERR + SAMPLES / 2 (python, floats).
within() {
	python3 -c 'import sys; g, w, e, n = map(float, sys.argv[1:]); sys.exit(0 if abs(g - w) <= 4 * e + n / 2 else 1)' "$@"
}

@test "retained 4 MiB a step outranks churn of 20 MiB a step: site, line and bytes within the stated error" {
	local retain churn
	retain=$(line_of "$WL/retain_churn.py" "# RETAIN$")
	churn=$(line_of "$WL/retain_churn.py" "# CHURN$")
	# 256K: a 4 MiB allocation is missed with probability e^-16
	run --separate-stderr "$RECORD" -q --memory-sampling=256K -o "$T/t.isc" -- "$PY" "$WL/retain_churn.py"
	[ "$status" -eq 0 ]
	"$DUMP" "$T/t.isc" > "$T/sites"
	site cache_results "$retain" > "$T/r"
	site scratch "$churn" > "$T/c"
	[ "$(wc -l < "$T/r")" -eq 1 ]
	[ "$(wc -l < "$T/c")" -eq 1 ]
	# ranked first: the leak, however large the churn
	[ "$(head -1 "$T/sites" | jq -r .function)" = cache_results ]
	[ "$(jq .site "$T/r")" -lt "$(jq .site "$T/c")" ]
	[[ $(jq -r .file "$T/r") == */retain_churn.py ]]
	[ "$(jq .intervals "$T/r")" -eq 11 ]
	[ "$(jq .leak "$T/r")" = true ]
	[ "$(jq .leak_window "$T/r")" -eq 2 ]
	# 4194305 bytes an iteration (the workload's header), within its error
	within "$(jq .leak_per_iter "$T/r")" 4194305 "$(jq '.retained_err / 11' "$T/r")" 1
	within "$(jq .slope "$T/r")" 4194305 "$(jq .slope_err "$T/r")" 1
	# at the process's peak (during the last scratch) it held all 12, the
	# churn its one 20 MiB buffer; at the end (the interpreter's teardown
	# freed everything) nothing
	within "$(jq .live_peak "$T/r")" $((12 * 4194305)) "$(jq .live_peak_err "$T/r")" 12
	within "$(jq .live_peak "$T/c")" 20971521 "$(jq .live_peak_err "$T/c")" 1
	# the churn: 12 x 20971521 bytes allocated and freed, nothing retained, no leak
	within "$(jq .alloc "$T/c")" $((12 * 20971521)) "$(jq .alloc_err "$T/c")" 12
	within "$(jq .freed "$T/c")" $((12 * 20971521)) "$(jq .freed_err "$T/c")" 12
	[ "$(jq .retained "$T/c")" -eq 0 ]
	[ "$(jq .leak "$T/c")" = false ]
	[ "$(jq .live_end "$T/c")" -eq 0 ]
	# five times the retained bytes allocated
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 4.9 * float(sys.argv[2]) else 1)' \
		"$(jq .alloc "$T/c")" "$(jq .alloc "$T/r")"
}

@test "findings: memory.sites and growth_sites rank cache_results first, a memory_leak of 4 MiB an iteration, scratch churns; the report's rows" {
	local retain churn
	retain=$(line_of "$WL/retain_churn.py" "# RETAIN$")
	churn=$(line_of "$WL/retain_churn.py" "# CHURN$")
	run --separate-stderr "$RECORD" -q --memory-sampling=256K -o "$T/t.isc" -- "$PY" "$WL/retain_churn.py"
	[ "$status" -eq 0 ]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[ "$(jq .memory.sampling.interval_bytes "$T/f.json")" -eq 262144 ]
	# memory.sites: the leak first, however large the churn
	jq -c '.memory.sites[0]' "$T/f.json" > "$T/r"
	[ "$(jq -r .name "$T/r")" = cache_results ]
	[ "$(jq .line "$T/r")" -eq "$retain" ]
	[ "$(jq .iterations "$T/r")" -eq 11 ]
	[ "$(jq .leak "$T/r")" = true ]
	within "$(jq .leak_per_iteration_bytes "$T/r")" 4194305 "$(jq '.retained_err_bytes / 11' "$T/r")" 1
	within "$(jq .retained_bytes "$T/r")" $((11 * 4194305)) "$(jq .retained_err_bytes "$T/r")" 11
	jq -c --argjson l "$churn" '[.memory.sites[] | select(.name == "scratch" and .line == $l)]' "$T/f.json" > "$T/c"
	[ "$(jq length "$T/c")" -eq 1 ]
	[ "$(jq '.[0].retained_bytes' "$T/c")" -eq 0 ]
	[ "$(jq '.[0].leak' "$T/c")" = false ]
	within "$(jq '.[0].allocated_bytes' "$T/c")" $((12 * 20971521)) "$(jq '.[0].allocated_err_bytes' "$T/c")" 12
	within "$(jq '.[0].freed_bytes' "$T/c")" $((12 * 20971521)) "$(jq '.[0].freed_err_bytes' "$T/c")" 12
	# the steady state's 11 iterations allocated 20971521 bytes each
	within "$(jq '.[0].allocated_per_iteration_bytes' "$T/c")" 20971521 "$(jq '.[0].allocated_err_bytes / 11' "$T/c")" 1
	# growth_sites from the samples: what was retained, so cache_results and never scratch
	[ "$(jq -r .memory.growth_sites_source "$T/f.json")" = allocation_samples ]
	[ "$(jq -r '.memory.growth_sites[0].name' "$T/f.json")" = cache_results ]
	[ "$(jq '.memory.growth_sites[0].line' "$T/f.json")" -eq "$retain" ]
	[ "$(jq '[.memory.growth_sites[] | select(.name == "scratch")] | length' "$T/f.json")" -eq 0 ]
	# the finding: a leak at that line, 4 MiB an iteration
	jq -c '.findings[] | select(.id == "memory_leak")' "$T/f.json" > "$T/l"
	[ "$(wc -l < "$T/l")" -eq 1 ]
	[ "$(jq -r '.evidence.top[0].name' "$T/l")" = cache_results ]
	[ "$(jq '.evidence.top[0].line' "$T/l")" -eq "$retain" ]
	[[ $(jq -r .title "$T/l") == "Memory leak: cache_results ("*"retain_churn.py:$retain) keeps 4.0 MiB per iteration (11 iterations, growing in each)" ]]
	# peak composition: its numbers add up; cache_results held a whole number of its 4194305-byte buffers
	[ "$(jq '.memory.peak_composition | (.sampled_live_bytes + .unattributed_bytes - .rss_bytes) as $d | $d <= 1 and $d >= -1' "$T/f.json")" = true ]
	jq -c '.memory.peak_composition.sites[] | select(.name == "cache_results")' "$T/f.json" > "$T/p"
	[ "$(wc -l < "$T/p")" -eq 1 ]
	python3 -c 'import sys; k = float(sys.argv[1]) / 4194305; sys.exit(0 if 1 <= round(k) <= 12 and abs(k - round(k)) < 0.01 else 1)' \
		"$(jq .live_bytes "$T/p")"
	# the report: the site table's row and the leak
	"$REPORT" -o "$T/r.md" "$T/f.json"
	grep -q '^### Memory by allocation site$' "$T/r.md"
	run grep -E "^\| 1 \| \`cache_results\` \(.*retain_churn.py:$retain\) \|.*\| yes, 4.0 MiB per iteration \|$" "$T/r.md"
	[ "$status" -eq 0 ]
	run grep -E "^\| [0-9]+ \| \`scratch\` \(.*retain_churn.py:$churn\) \| 240.0 MiB \| 240.0 MiB \| 20.0 MiB \| 0 B \| 0 B \|" "$T/r.md"
	[ "$status" -eq 0 ]
}

@test "findings: churn that costs page faults is a memory_churn finding at its line, a retained line is not churn" {
	local churn keep
	churn=$(line_of "$WL/churn.py" "# CHURN$")
	keep=$(line_of "$WL/churn.py" "# KEEP$")
	run --separate-stderr env MALLOC_MMAP_THRESHOLD_=131072 "$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/churn.py"
	[ "$status" -eq 0 ]
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	jq -c '.findings[] | select(.id == "memory_churn")' "$T/f.json" > "$T/c"
	[ "$(wc -l < "$T/c")" -eq 1 ]
	[[ $(jq -r .title "$T/c") == "Allocation churn: scratch ("*"churn.py:$churn) allocates and frees "*" MiB/s, 20.0 MiB per iteration while page faults take "* ]]
	# 59 steady-state iterations of 20971521 bytes (sampled with certainty at
	# the default 512 KiB: weight = size), none retained
	[ "$(jq .evidence.metrics.churn_bytes "$T/c")" -eq $((59 * 20971521)) ]
	[ "$(jq '.evidence.top | length' "$T/c")" -eq 1 ]
	[ "$(jq -r '.evidence.top[0].name' "$T/c")" = scratch ]
	[ "$(jq '.evidence.top[0].line' "$T/c")" -eq "$churn" ]
	# keep retained its 1 MiB an iteration: a leak, not churn
	jq -c --argjson l "$keep" '.memory.sites[] | select(.name == "keep" and .line == $l)' "$T/f.json" > "$T/k"
	[ "$(wc -l < "$T/k")" -eq 1 ]
	within "$(jq .retained_bytes "$T/k")" $((59 * 1048577)) "$(jq .retained_err_bytes "$T/k")" 59
	[ "$(jq -r '.findings[] | select(.id == "memory_leak") | .evidence.top[0].name' "$T/f.json")" = keep ]
}

@test "trace level: every 4 MiB and 20 MiB allocation sampled at its line, the site table equals the records" {
	local retain churn
	retain=$(line_of "$WL/retain_churn.py" "# RETAIN$")
	churn=$(line_of "$WL/retain_churn.py" "# CHURN$")
	run --separate-stderr "$RECORD" -q --memory-sampling=256K -o "$T/t.isc" -- "$PY" "$WL/retain_churn.py"
	[ "$status" -eq 0 ]
	"$MERGE" --dump-times -o "$T/dump" "$T/t.isc"
	# the innermost frame NAME FILE:FIRSTLINE:LINE, then its caller
	[ "$(grep -cE " alloc malloc size=4194305 .* cache_results [^ ]*retain_churn.py:[0-9]+:$retain <module> " "$T/dump")" -eq 12 ]
	[ "$(grep -cE " alloc malloc size=20971521 .* scratch [^ ]*retain_churn.py:[0-9]+:$churn <module> " "$T/dump")" -eq 12 ]
	[ "$(grep -cE " free malloc size=20971521 " "$T/dump")" -eq 12 ]
	# the recorder wrote the shim's table at the end: the retained site's
	# entry has the weights its ALLOC and FREE records sum to (the same
	# numbers twice: the records and the table are kept apart)
	idx=$(grep -E " alloc malloc size=4194305 .* cache_results " "$T/dump" | head -1 | sed 's/.* site=\([0-9]*\) .*/\1/')
	sum() {
		grep -E " $1 [a-z]+ size=[0-9]+ weight=[0-9]+ site=$idx " "$T/dump" | sed 's/.* weight=\([0-9]*\) .*/\1/' |
			awk '{ s += $1 } END { print s + 0 }'
	}
	run grep -E " alloc_site $idx live=" "$T/dump"
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} =~ \ alloc=([0-9]+)/([0-9]+)\ free=([0-9]+)/([0-9]+)\  ]]
	[ "${BASH_REMATCH[1]}" -eq "$(sum alloc)" ]
	[ "${BASH_REMATCH[3]}" -eq "$(sum free)" ]
	[ "${BASH_REMATCH[2]}" -ge 12 ]
	[ "$(grep -c ' alloc_info phase=2 ' "$T/dump")" -eq 1 ]
	[ "$(grep -c ' alloc_info phase=1 interval=262144 flags=13 ' "$T/dump")" -eq 1 ]
}

@test "the independent decoder (tests/decoder/isctrace.py) reads the allocation records of a trace and its timeline" {
	/usr/bin/python3 -c 'import zstandard' 2>/dev/null || skip "no python3-zstandard for the decoder"
	run --separate-stderr "$RECORD" -q --memory-sampling=256K -o "$T/t.isc" -- "$PY" "$WL/retain_churn.py"
	[ "$status" -eq 0 ]
	run /usr/bin/python3 "$ISC_SRC/tests/decoder/isctrace.py" "$T/t.isc"
	[ "$status" -eq 0 ]
	[ "$(jq '.errors | length' <<< "$output")" -eq 0 ]
	[ "$(jq '.records.ALLOC' <<< "$output")" -ge 24 ]
	[ "$(jq '.records.ALLOC_SITE' <<< "$output")" -ge 2 ]
	"$MERGE" -o "$T/t.istl" "$T/t.isc"
	run /usr/bin/python3 "$ISC_SRC/tests/decoder/isctrace.py" "$T/t.istl"
	[ "$status" -eq 0 ]
	[ "$(jq '.errors | length' <<< "$output")" -eq 0 ]
	[ "$(jq '.records.TL_ALLOC' <<< "$output")" -ge 24 ]
}

@test "a leak in plateaus (every other iteration) is a leak, with its bytes per iteration" {
	local keep
	keep=$(line_of "$WL/plateau.py" "# KEEP$")
	run --separate-stderr "$RECORD" -q --memory-sampling=256K -o "$T/t.isc" -- "$PY" "$WL/plateau.py"
	[ "$status" -eq 0 ]
	"$DUMP" "$T/t.isc" > "$T/sites"
	site maybe_keep "$keep" > "$T/k"
	[ "$(wc -l < "$T/k")" -eq 1 ]
	[ "$(jq .intervals "$T/k")" -eq 12 ]
	[ "$(jq .leak "$T/k")" = true ]
	[ "$(jq .leak_window "$T/k")" -eq 2 ]
	# 6 x 8388609 / 12 bytes an iteration (the workload's header)
	within "$(jq .leak_per_iter "$T/k")" 4194304.5 "$(jq '.retained_err / 12' "$T/k")" 1
	[ "$(head -1 "$T/sites" | jq -r .function)" = maybe_keep ]
}

@test "the default interval: 10 million 16-byte objects estimated within the stated error" {
	# object() is one PyObject_Malloc(16) each: 160000000 bytes at the line;
	# at 512 KiB about 305 samples, a relative error of about 6 %
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/storm.py" 10000000
	[ "$status" -eq 0 ]
	[ "$output" = "storm: 10000000" ]
	"$DUMP" --warmup 0 "$T/t.isc" > "$T/sites"
	site "<module>" "$(line_of "$WL/storm.py" "^    object()$")" > "$T/s"
	[ "$(wc -l < "$T/s")" -eq 1 ]
	within "$(jq .alloc "$T/s")" 160000000 "$(jq .alloc_err "$T/s")" "$(jq .alloc_count "$T/s")"
	# the stated error is the one Poisson sampling implies: 1 / sqrt(samples) of the estimate
	python3 -c 'import sys, math; a, e, n = map(float, sys.argv[1:]); sys.exit(0 if abs(e / a - 1 / math.sqrt(n)) < 0.01 else 1)' \
		"$(jq .alloc "$T/s")" "$(jq .alloc_err "$T/s")" "$(jq .alloc_count "$T/s")"
}

@test "small objects at the default interval: a kept line live within the error, every sampled churned object released" {
	# CPython's object domain: kept 2 M x 16 bytes live at the end; churned
	# 8 M x 16 bytes, each released at once (a sampled one is malloc's, its
	# release seen through pymalloc's free, not a wrapper of ours)
	local keep churn
	keep=$(line_of "$WL/small_keep.py" "# KEEP$")
	churn=$(line_of "$WL/small_keep.py" "# CHURN$")
	run --separate-stderr "$RECORD" -q -o "$T/t.isc" -- "$PY" "$WL/small_keep.py"
	[ "$status" -eq 0 ]
	[ "$output" = "kept: 2000000" ]
	"$DUMP" --warmup 0 "$T/t.isc" > "$T/sites"
	site keep "$keep" > "$T/k"
	site churn "$churn" > "$T/c"
	[ "$(wc -l < "$T/k")" -eq 1 ]
	[ "$(wc -l < "$T/c")" -eq 1 ]
	within "$(jq .live_end "$T/k")" 32000000 "$(jq .live_end_err "$T/k")" "$(jq .alloc_count "$T/k")"
	[ "$(jq .free_count "$T/k")" -eq 0 ]
	within "$(jq .alloc "$T/c")" 128000000 "$(jq .alloc_err "$T/c")" "$(jq .alloc_count "$T/c")"
	[ "$(jq .alloc_count "$T/c")" -gt 100 ]
	[ "$(jq .free_count "$T/c")" -eq "$(jq .alloc_count "$T/c")" ]
	[ "$(jq .live_end "$T/c")" -eq 0 ]
}

@test "--memory-limit: torch killed by the OOM killer; the death is charged to the hoarding line" {
	local py hoard churn
	py=$(torch_python) || skip "no Python with torch: $py"
	run --separate-stderr "$RECORD" --quiet --memory-limit=64M -o /dev/null -- true
	if [ "$status" -ne 0 ]; then
		skip "no writable memory cgroup: $stderr"
	fi
	hoard=$(line_of "$WL/hoard_oom.py" "# HOARD$")
	churn=$(line_of "$WL/hoard_oom.py" "# CHURN$")
	run --separate-stderr "$RECORD" --memory-limit=400M -o "$T/t.isc" -- "$py" "$WL/hoard_oom.py"
	[ "$status" -eq 137 ]
	[[ $stderr == *"was killed by the kernel's OOM killer"* ]]
	"$MERGE" --dump-times -o "$T/dump" "$T/t.isc"
	# every 10 MiB tensor kept at HOARD was sampled (probability 1 - e^-20)
	n=$(grep -cE " alloc malloc size=10485760 .* hoard [^ ]*hoard_oom.py:[0-9]+:$hoard " "$T/dump")
	[ "$n" -ge 5 ]
	# the shim's table, read after the SIGKILL
	[ "$(grep -c ' alloc_info phase=2 ' "$T/dump")" -eq 1 ]
	"$DUMP" "$T/t.isc" > "$T/sites"
	run jq -c 'select(.death) | .top[0]' "$T/sites"
	echo "$output"
	[ "$(jq -r .function <<< "$output")" = hoard ]
	[ "$(jq .line <<< "$output")" -eq "$hoard" ]
	[ "$(jq .growing <<< "$output")" = true ]
	# it holds the n tensors it kept, none freed
	within "$(jq .live <<< "$output")" $((n * 10485760)) "$(jq .live_err <<< "$output")" "$n"
	# the churning line holds at most the one tensor of the step that died
	site step "$churn" > "$T/c"
	[ "$(wc -l < "$T/c")" -eq 1 ]
	[ "$(jq .live_end "$T/c")" -le 10485761 ]
	# the findings: oom.site is that line, from live bytes, growing; the
	# sites at the death start with it; the finding and the report say so
	"$ANALYZE" -o "$T/f.json" "$T/t.isc"
	valid_findings "$T/f.json"
	[ "$(jq -r .oom.kind "$T/f.json")" = host_oom_killer ]
	[ "$(jq -r .oom.site.name "$T/f.json")" = hoard ]
	[ "$(jq .oom.site.line "$T/f.json")" -eq "$hoard" ]
	[ "$(jq -r .oom.site_source "$T/f.json")" = live_bytes ]
	[ "$(jq .oom.site.growing "$T/f.json")" = true ]
	within "$(jq .oom.site.live_bytes "$T/f.json")" $((n * 10485760)) "$(jq .oom.site.live_err_bytes "$T/f.json")" "$n"
	[ "$(jq -r .oom.growth_before.source "$T/f.json")" = allocation_samples ]
	[ "$(jq -r '.oom.growth_before.top[0].name' "$T/f.json")" = hoard ]
	[ "$(jq '.oom.growth_before.top[0].line' "$T/f.json")" -eq "$hoard" ]
	[ "$(jq -r '.findings[0].id' "$T/f.json")" = oom ]
	[[ $(jq -r '.findings[0].title' "$T/f.json") == "The workload died of out-of-memory: the kernel's OOM killer killed it; hoard ("*"hoard_oom.py:$hoard) held "*" MiB and was growing" ]]
	[ "$(jq -r '.findings[0].evidence.top[0].name' "$T/f.json")" = hoard ]
	"$REPORT" -o "$T/r.md" "$T/f.json"
	run grep -E "Site: \`hoard\` \(.*hoard_oom.py:$hoard\), the site holding the most live bytes among those growing before the death" "$T/r.md"
	[ "$status" -eq 0 ]
}
