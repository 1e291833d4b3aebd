#!/usr/bin/env bats
# One job, many ranks (issue 27): iscope-merge of every rank's Kineto trace
# and iscope-analyze's job view, on the real 8-rank DLRM job and the 2 of
# 128 sampled ranks of tests/data/real/kineto-ranks.  Expected values come
# from the JSON alone: job_expect.py (offsets, uncertainties, waits, last
# arrivals, lateness, by the rules of formats/timeline.md §11.3) and
# hta_overlap.py (HTA's overlap); job_variants.py makes the altered copies
# (a clock 5 s off, a planted straggler, a wrong world size, a truncated
# file) in a temporary directory.

bats_require_minimum_version 1.5.0

setup() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	PY=/usr/bin/python3
	EXPECT="$PY $ISC_SRC/tests/dist/job_expect.py"
	HTA="$PY $ISC_SRC/tests/dist/hta_overlap.py"
	VARY="$PY $ISC_SRC/tests/dist/job_variants.py"
	DLRM=$ISC_SRC/tests/data/real/kineto-ranks/dlrm_v100_8rank
	SAMPLED=$ISC_SRC/tests/data/real/kineto-ranks/sampled_2of128
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/dist.XXXXXX")
	set -o pipefail
}

teardown() {
	rm -rf "$T"
}

dlrm() {
	for r in 0 1 2 3 4 5 6 7; do echo "$DLRM/rank$r.json.gz"; done
}

# The SOURCE lines the merge must write for rank files given in rank order (source k = rank k).
expected_sources() {
	$EXPECT "$@" | awk '{ printf "%sSOURCE %d kineto offset=%s uncertainty=%s method=%s collectives=%s host=\n",
		($2 ? "S" $2 " " : ""), $2, $6, $8, ($2 ? "collectives" : "reference"), $10 }'
}

# Per rank, from job_expect.py and from a findings document: rank, world, offset, uncertainty, wait, last, lateness.
expected_ranks() {
	$EXPECT "$@" | awk '{ print $2, $4, $6, $8, $12, $14, $16 }'
}
found_ranks() {
	jq -r '.distributed.ranks[] | "\(.rank) \(.world_size) \(.clock_offset_ns) \(.clock_uncertainty_ns) \(.wait_ns) \(.last_arrivals) \(.lateness_ns)"' "$1"
}

@test "the 8 DLRM ranks merge into one timeline: one source per rank, clock offsets and uncertainties as computed from the JSON" {
	run --separate-stderr "$MERGE" -o "$T/job.istl" $(dlrm)
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	"$MERGE" --dump "$T/job.istl" | grep ' SOURCE \|^SOURCE ' > "$T/sources.txt"
	expected_sources $(dlrm) > "$T/expected.txt"
	[ "$(wc -l < "$T/expected.txt")" -eq 8 ]
	diff "$T/expected.txt" "$T/sources.txt"
}

@test "the reference clock is the lowest rank's, whatever the order of the inputs" {
	"$MERGE" -o "$T/job.istl" $(dlrm | sort -r)
	"$MERGE" --dump "$T/job.istl" | grep -c 'SOURCE' > "$T/n"
	[ "$(cat "$T/n")" -eq 8 ]
	"$MERGE" --dump "$T/job.istl" | grep -F 'SOURCE 7 kineto offset=0 uncertainty=0 method=reference'
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	found_ranks "$T/f.json" > "$T/found.txt"
	expected_ranks $(dlrm) > "$T/expected.txt"
	diff "$T/expected.txt" "$T/found.txt"
}

@test "the job view of the DLRM job: every rank's offset, wait in collectives, last arrivals and lateness as computed from the JSON" {
	"$MERGE" -o "$T/job.istl" $(dlrm)
	run --separate-stderr "$ANALYZE" "$T/job.istl"
	[ "$status" -eq 0 ]
	echo "$output" > "$T/f.json"
	jq -e '.distributed.world_size == 8' "$T/f.json"
	jq -e '.distributed.ranks_present == 8' "$T/f.json"
	jq -e '.distributed.ranks_missing == 0' "$T/f.json"
	jq -e '.distributed.backend == "nccl"' "$T/f.json"
	jq -e '.distributed.match_by == "order"' "$T/f.json"
	jq -e '.distributed.collectives.matched == 8' "$T/f.json"
	found_ranks "$T/f.json" > "$T/found.txt"
	expected_ranks $(dlrm) > "$T/expected.txt"
	[ "$(wc -l < "$T/expected.txt")" -eq 8 ]
	diff "$T/expected.txt" "$T/found.txt"
	$PY "$ISC_SRC/tests/lib/validate_findings.py" "$T/f.json"
}

@test "each rank's communication/computation overlap equals HTA's, computed from the JSON, within 0.01 pp" {
	"$MERGE" -o "$T/job.istl" $(dlrm)
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	jq -r '.distributed.ranks[] | "\(.rank) \(.overlap_pct)"' "$T/f.json" > "$T/found.txt"
	$HTA $(dlrm) > "$T/hta.txt"
	[ "$(wc -l < "$T/hta.txt")" -eq 8 ]
	run $PY -c 'import sys
a = dict(l.split() for l in open(sys.argv[1]))
b = dict(l.split() for l in open(sys.argv[2]))
bad = [r for r in a if abs(float(a[r]) - float(b[r])) > 0.01]
print(bad)
sys.exit(1 if bad or set(a) != set(b) else 0)' "$T/hta.txt" "$T/found.txt"
	[ "$status" -eq 0 ]
}

@test "the DLRM job is balanced: no straggler" {
	"$MERGE" -o "$T/job.istl" $(dlrm)
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	jq -e '.distributed.stragglers == []' "$T/f.json"
	jq -e '[.distributed.ranks[] | select(.straggler)] == []' "$T/f.json"
}

@test "a planted straggler: every other rank arrives 2 ms earlier in each collective; rank 6 is named, with its lateness" {
	mkdir "$T/s"
	$VARY straggler 6 2 "$T/s" $(dlrm)
	"$MERGE" -o "$T/job.istl" "$T"/s/rank*.json.gz
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	$EXPECT "$T"/s/rank*.json.gz | awk '$2 == 6 { print $16 }' > "$T/late"
	[ "$(cat "$T/late")" -gt 1900000 ]
	jq -e '.distributed.stragglers | length == 1' "$T/f.json"
	jq -e '.distributed.stragglers[0].rank == 6' "$T/f.json"
	jq -e ".distributed.stragglers[0].lateness_ns == $(cat "$T/late")" "$T/f.json"
	jq -e '.distributed.stragglers[0].last_pct == 100' "$T/f.json"
	jq -e '.distributed.stragglers[0].waiting_ranks == [0, 1, 2, 3, 4, 5, 7]' "$T/f.json"
	jq -e '.distributed.detail_rank == 6' "$T/f.json"
	found_ranks "$T/f.json" > "$T/found.txt"
	expected_ranks "$T"/s/rank*.json.gz > "$T/expected.txt"
	diff "$T/expected.txt" "$T/found.txt"
	# late, but for no work of its own: no cause (noise below 5 % of its lateness is not one)
	jq -e '.distributed.stragglers[0].cause == []' "$T/f.json"
	jq -e ".distributed.stragglers[0].cause_min_ns_per_iter == ($(cat "$T/late") * 0.05 | round)" "$T/f.json"
}

@test "a planted straggler with extra work: one of its kernels 2 ms longer is named as the cause" {
	mkdir "$T/s"
	$VARY straggler 6 2 "$T/s" $(dlrm)
	$VARY slowkernel "$T/s/rank6.json.gz" volta_sgemm_128x32_nt 2 "$T/s/rank6.json.gz"
	"$MERGE" -o "$T/job.istl" "$T"/s/rank*.json.gz
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	jq -e '.distributed.stragglers[0].rank == 6' "$T/f.json"
	jq -e '.distributed.stragglers[0].cause | length == 1' "$T/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "volta_sgemm_128x32_nt"' "$T/f.json"
	jq -e '.distributed.stragglers[0].cause[0].view == "gpu"' "$T/f.json"
}

@test "a rank whose clock is 5 s off is aligned, its offset reported, and no rank's metric changes" {
	mkdir "$T/c"
	for r in 0 1 2 4 5 6 7; do cp "$DLRM/rank$r.json.gz" "$T/c/"; done
	$VARY shift "$DLRM/rank3.json.gz" 5 "$T/c/rank3.json.gz"
	"$MERGE" -o "$T/shifted.istl" "$T"/c/rank*.json.gz
	"$MERGE" --dump "$T/shifted.istl" | grep -F 'S3 SOURCE 3 kineto offset=-4999998500 uncertainty=3500 method=collectives collectives=8'
	"$MERGE" -o "$T/job.istl" $(dlrm)
	"$ANALYZE" "$T/shifted.istl" > "$T/shifted.json"
	"$ANALYZE" "$T/job.istl" > "$T/job.json"
	jq -e '.distributed.ranks[3].clock_offset_ns == -4999998500' "$T/shifted.json"
	found_ranks "$T/shifted.json" > "$T/found.txt"
	expected_ranks "$T"/c/rank*.json.gz > "$T/expected.txt"
	diff "$T/expected.txt" "$T/found.txt"
	metrics='[.distributed.ranks[] | del(.clock_offset_ns, .merge_clock, .epoch_s, .epoch_ns, .origin_ns, .input, .profile.environment, .profile.generated_at, .profile.input)]'
	jq -S "$metrics" "$T/shifted.json" > "$T/a.json"
	jq -S "$metrics" "$T/job.json" > "$T/b.json"
	diff "$T/b.json" "$T/a.json"
	jq -S '.distributed | del(.ranks, .clock)' "$T/shifted.json" > "$T/a.json"
	jq -S '.distributed | del(.ranks, .clock)' "$T/job.json" > "$T/b.json"
	diff "$T/b.json" "$T/a.json"
}

@test "2 of 128 ranks: the missing ranks are stated, and what is there is analysed as computed from the JSON" {
	run --separate-stderr "$MERGE" -o "$T/job.istl" "$SAMPLED/rank0.json.gz" "$SAMPLED/rank1.json.gz"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"2 of 128 ranks present; missing ranks 2-127"* ]]
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	jq -e '.distributed.world_size == 128' "$T/f.json"
	jq -e '.distributed.ranks_missing == 126' "$T/f.json"
	jq -e '.distributed.missing == "2-127"' "$T/f.json"
	found_ranks "$T/f.json" > "$T/found.txt"
	expected_ranks "$SAMPLED/rank0.json.gz" "$SAMPLED/rank1.json.gz" > "$T/expected.txt"
	diff "$T/expected.txt" "$T/found.txt"
	jq -r '.distributed.ranks[] | "\(.rank) \(.overlap_pct)"' "$T/f.json" > "$T/found.txt"
	$HTA "$SAMPLED/rank0.json.gz" "$SAMPLED/rank1.json.gz" | awk '{ printf "%s %.2f\n", $1, $2 }' > "$T/hta.txt"
	diff "$T/hta.txt" "$T/found.txt"
}

@test "bad: the same rank twice is refused, exit 2, nothing written" {
	run --separate-stderr "$MERGE" -o "$T/job.istl" "$DLRM/rank0.json.gz" "$DLRM/rank1.json.gz" "$DLRM/rank0.json.gz"
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-merge: not one job: rank 0 is in two inputs (1 and 3)" ]
	[ ! -e "$T/job.istl" ]
}

@test "bad: ranks of different world sizes (mixed jobs) are refused, exit 2, nothing written" {
	$VARY world "$DLRM/rank1.json.gz" 16 "$T/rank1.json.gz"
	run --separate-stderr "$MERGE" -o "$T/job.istl" "$DLRM/rank0.json.gz" "$T/rank1.json.gz"
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-merge: not one job: mixed jobs: world size 8 (rank 0) and 16 (rank 1)" ]
	[ ! -e "$T/job.istl" ]
}

@test "bad: a truncated rank file keeps what precedes the damage, exit 1, the file named; the other ranks are whole" {
	$VARY truncate "$DLRM/rank5.json.gz" 0.5 "$T/rank5.json.gz"
	run --separate-stderr "$MERGE" -o "$T/job.istl" "$DLRM"/rank[0-4].json.gz "$T/rank5.json.gz" "$DLRM"/rank[67].json.gz
	[ "$status" -eq 1 ]
	[[ "$stderr" == "iscope-merge: $T/rank5.json.gz: truncated gzip data after byte "* ]]
	"$MERGE" --dump "$T/job.istl" | grep -c 'SOURCE' > "$T/n"
	[ "$(cat "$T/n")" -eq 8 ]
	"$MERGE" --dump "$T/job.istl" | grep -F 'S7 SOURCE 7 kineto offset=1000 uncertainty=2000 method=collectives collectives=8'
	run "$ANALYZE" "$T/job.istl"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.distributed.ranks_present == 8'
}

@test "a rank file without distributedInfo is merged on its own clock, with a warning" {
	$PY -c 'import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
del d["distributedInfo"]
json.dump(d, gzip.open(sys.argv[2], "wt"))' "$DLRM/rank1.json.gz" "$T/norank.json.gz"
	run --separate-stderr "$MERGE" -o "$T/job.istl" "$DLRM/rank0.json.gz" "$T/norank.json.gz"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"$T/norank.json.gz: no rank (no distributedInfo): merged on its own clock, as it is"* ]]
	"$MERGE" --dump "$T/job.istl" | grep -F 'S1 SOURCE 1 kineto offset=0 uncertainty=0 method=wall-clock collectives=0'
}

# ---- verdicts of a job (straggler, communication_bound) on synthetic rank sets
# whose answer is known by construction: job_synth.py writes expected.json
# from the construction alone, before any analysis.

synth() { # KIND WORLD STEPS [STRAGGLER [EXTRA_US]] -> $T/KIND/, analysed into $T/KIND.json
	$PY "$ISC_SRC/tests/dist/job_synth.py" "$1" "$2" "$3" "$T/$1" "${@:4}"
	"$MERGE" -o "$T/$1.istl" "$T/$1"/rank*.json.gz
	"$ANALYZE" "$T/$1.istl" > "$T/$1.json"
}

@test "synthetic straggler: rank 2 runs 3 ms more per step; verdict straggler, its lateness, loss, cause and the waiting ranks as constructed" {
	synth straggler 4 10 2 3000
	E=$T/straggler/expected.json
	jq -e '.distributed.stragglers | length == 1' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].rank == $e[0].straggler' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].lateness_ns == $e[0].ranks[2].lateness_ns' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].loss_per_iteration_ns == $e[0].ranks[2].loss_per_iteration_ns' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].waiting_ranks == $e[0].waiting_ranks' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].cause[0].name == $e[0].cause' "$T/straggler.json"
	jq -e --slurpfile e "$E" '.distributed.stragglers[0].cause[0].delta_ns_per_iter == $e[0].cause_delta_ns_per_iter' "$T/straggler.json"
	jq -e '.verdict.class == "straggler"' "$T/straggler.json"
	jq -e '.verdict.finding == "straggler"' "$T/straggler.json"
	jq -e '[.findings[] | select(.id == "straggler")] | length == 1' "$T/straggler.json"
	jq -e --slurpfile e "$E" '[.findings[] | select(.id == "straggler")][0].evidence.metrics.lateness_ns == $e[0].ranks[2].lateness_ns' "$T/straggler.json"
	jq -e '[.findings[] | select(.id == "communication_bound")] == []' "$T/straggler.json"
	# the share it explains: the job's loss per iteration of the median iteration (10 steps of 100+8000+3000+500+100 us)
	jq -e '.verdict.explained_pct == (3000 / 11700 * 1000 | round / 10)' "$T/straggler.json"
	jq -e '.verdict.sentence == "Rank 2 is 3.0 ms late to its collectives, slower in slow_preprocess_kernel (+3.0 ms per iteration); ranks 0-1, 3 wait for it in all_reduce: the job loses 3.0 ms per iteration (25.6 % of an iteration) to it."' "$T/straggler.json"
	jq -e '.verdict.headline[1].code == "slow_preprocess_kernel"' "$T/straggler.json"
	$PY "$ISC_SRC/tests/lib/validate_findings.py" "$T/straggler.json"
}

@test "synthetic balanced twin: every rank within 40 us of the others; no straggler finding, no job verdict" {
	synth balanced 4 10
	jq -e '.straggler == null and .communication_bound == false' "$T/balanced/expected.json"
	jq -e '.distributed.stragglers == []' "$T/balanced.json"
	jq -e '[.findings[] | select(.id == "straggler" or .id == "communication_bound")] == []' "$T/balanced.json"
	jq -e '.verdict.class != "straggler" and .verdict.class != "communication_bound"' "$T/balanced.json"
}

@test "synthetic communication-bound job: exposed communication as constructed, verdict communication_bound" {
	synth comm 4 10
	E=$T/comm/expected.json
	jq -e '.communication_bound' "$E"
	jq -r '.ranks[] | "\(.rank) \(.exposed_comm_pct)"' "$E" > "$T/expected.txt"
	jq -r '.distributed.ranks[] | "\(.rank) \(.exposed_comm_pct)"' "$T/comm.json" > "$T/found.txt"
	diff "$T/expected.txt" "$T/found.txt"
	jq -e '.verdict.class == "communication_bound"' "$T/comm.json"
	jq -e --slurpfile e "$E" '.verdict.explained_pct == ($e[0].exposed_pct_median * 10 | round / 10)' "$T/comm.json"
	jq -e '[.findings[] | select(.id == "straggler")] == []' "$T/comm.json"
	jq -e '.verdict.sentence == "Exposed communication is 65 % of the median rank'"'"'s GPU time (at most 65 % on one rank) and no rank is late: the job is communication bound; most of it is in all_reduce (10 calls, 6.0 ms each at the fastest rank)."' "$T/comm.json"
	$PY "$ISC_SRC/tests/lib/validate_findings.py" "$T/comm.json"
}

@test "verdicts on the real DLRM job: balanced and not communication bound, so the rank's own class; its planted straggler gets the straggler verdict" {
	"$MERGE" -o "$T/job.istl" $(dlrm)
	"$ANALYZE" "$T/job.istl" > "$T/f.json"
	jq -e '[.findings[] | select(.id == "straggler" or .id == "communication_bound")] == []' "$T/f.json"
	jq -e '.verdict.class == "cpu_bound"' "$T/f.json"
	mkdir "$T/s"
	$VARY straggler 6 2 "$T/s" $(dlrm)
	"$MERGE" -o "$T/s.istl" "$T"/s/rank*.json.gz
	"$ANALYZE" "$T/s.istl" > "$T/s.json"
	jq -e '.verdict.class == "straggler"' "$T/s.json"
	jq -e '.verdict.sentence | startswith("Rank 6 is 2.0 ms late to its collectives for no extra work its profile shows (compared with 7 ranks); ranks 0-5, 7 wait for it in send_recv")' "$T/s.json"
}

# ---- the reduce from findings alone (iscope-analyze --job): each rank
# analysed on its own (the map step, where its trace is), then the job view
# from the small documents; it must equal the view from the merged traces.

# What a job view says, the same from traces and from findings: the job's
# section without the ranks' entries, and per rank what the reduce and the
# time split give (not the times on each rank's own origin, which a merged
# timeline and a lone file count from different epochs).
job_view() {
	jq -S '{verdict: .verdict.class, sentence: .verdict.sentence, job: (.distributed | del(.ranks)),
		ranks: [.distributed.ranks[] | {rank, world_size, clock_offset_ns, clock_uncertainty_ns, clock_method, matched,
			wait_ns, wait_per_iteration_ns, last_arrivals, last_pct, lateness_ns, iteration_p50_ns, straggler,
			window_ns, compute_ns, comm_ns, exposed_comm_ns, exposed_comm_pct, idle_ns, overlap_pct}]}' "$1"
}

@test "rank files given to iscope-analyze: the findings of iscope-merge then iscope-analyze, byte for byte (DLRM, a planted straggler)" {
	"$MERGE" -q -o "$T/job.istl" $(dlrm)
	"$ANALYZE" -q -o "$T/piped.json" "$T/job.istl"
	run --separate-stderr "$ANALYZE" -q -o "$T/direct.json" $(dlrm)
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	cmp "$T/piped.json" "$T/direct.json"
	jq -e '.distributed.ranks_present == 8' "$T/direct.json"
	mkdir "$T/s"
	$VARY straggler 6 2 "$T/s" $(dlrm)
	"$MERGE" -q -o "$T/s.istl" "$T"/s/rank*.json.gz
	"$ANALYZE" -q -o "$T/s-piped.json" "$T/s.istl"
	"$ANALYZE" -q -o "$T/s-direct.json" "$T"/s/rank*.json.gz
	cmp "$T/s-piped.json" "$T/s-direct.json"
	jq -e '.verdict.class == "straggler"' "$T/s-direct.json"
}

@test "rank files given to iscope-analyze, bad: a rank twice exits 2 with one line and writes nothing; a truncated rank exits 1, named, its prefix analysed as iscope-merge keeps it" {
	run --separate-stderr "$ANALYZE" -o "$T/out.json" "$DLRM/rank0.json.gz" "$DLRM/rank1.json.gz" "$DLRM/rank0.json.gz"
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-analyze: not one job: rank 0 is in two inputs (1 and 3)" ]
	[ ! -e "$T/out.json" ]
	$VARY truncate "$DLRM/rank5.json.gz" 0.5 "$T/rank5.json.gz"
	run "$MERGE" -q -o "$T/job.istl" "$DLRM"/rank[0-4].json.gz "$T/rank5.json.gz" "$DLRM"/rank[67].json.gz
	[ "$status" -eq 1 ]
	"$ANALYZE" -q -o "$T/piped.json" "$T/job.istl"
	run --separate-stderr "$ANALYZE" -q -o "$T/direct.json" "$DLRM"/rank[0-4].json.gz "$T/rank5.json.gz" "$DLRM"/rank[67].json.gz
	[ "$status" -eq 1 ]
	[[ "$stderr" == "iscope-analyze: $T/rank5.json.gz: truncated gzip data after byte "* ]]
	cmp "$T/piped.json" "$T/direct.json"
}

@test "--job: the DLRM job view from the 8 ranks' own findings equals the view from the merged traces" {
	"$MERGE" -o "$T/job.istl" $(dlrm)
	"$ANALYZE" "$T/job.istl" > "$T/traces.json"
	mkdir "$T/f"
	for r in 0 1 2 3 4 5 6 7; do "$ANALYZE" -q -o "$T/f/findings-$r.json" "$DLRM/rank$r.json.gz"; done
	jq -e '.distributed.ranks | length == 1' "$T/f/findings-3.json"
	jq -e '.distributed.ranks[0].rank == 3' "$T/f/findings-3.json"
	run --separate-stderr "$ANALYZE" --job "$T"/f/findings-*.json
	[ "$status" -eq 0 ]
	echo "$output" > "$T/findings.json"
	jq -e '.distributed.ranks_present == 8' "$T/findings.json"
	job_view "$T/traces.json" > "$T/a.json"
	job_view "$T/findings.json" > "$T/b.json"
	diff "$T/a.json" "$T/b.json"
	found_ranks "$T/findings.json" > "$T/found.txt"
	expected_ranks $(dlrm) > "$T/expected.txt"
	diff "$T/expected.txt" "$T/found.txt"
	$PY "$ISC_SRC/tests/lib/validate_findings.py" "$T/findings.json"
}

@test "--job: a synthetic straggler's verdict, cause and loss from the ranks' findings equal those from the traces" {
	synth straggler 4 10 2 3000
	mkdir "$T/f"
	for r in 0 1 2 3; do "$ANALYZE" -q -o "$T/f/findings-$r.json" "$T/straggler/rank$r.json.gz"; done
	"$ANALYZE" --job "$T"/f/findings-*.json > "$T/findings.json"
	jq -e '.verdict.class == "straggler"' "$T/findings.json"
	jq -e '.distributed.detail_rank == 2' "$T/findings.json"
	job_view "$T/straggler.json" > "$T/a.json"
	job_view "$T/findings.json" > "$T/b.json"
	diff "$T/a.json" "$T/b.json"
}

@test "--job bad inputs: a rank twice, mixed world sizes, a document of no rank: exit 2, one line, nothing written" {
	mkdir "$T/f"
	"$ANALYZE" -q -o "$T/f/r0.json" "$DLRM/rank0.json.gz"
	"$ANALYZE" -q -o "$T/f/r1.json" "$DLRM/rank1.json.gz"
	run --separate-stderr "$ANALYZE" --job -o "$T/out.json" "$T/f/r0.json" "$T/f/r1.json" "$T/f/r0.json"
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-analyze: not one job: rank 0 is given twice (inputs 1 and 3)" ]
	[ ! -e "$T/out.json" ]
	$VARY world "$DLRM/rank1.json.gz" 16 "$T/w16.json.gz"
	"$ANALYZE" -q -o "$T/f/w16.json" "$T/w16.json.gz"
	run --separate-stderr "$ANALYZE" --job "$T/f/r0.json" "$T/f/w16.json"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "iscope-analyze: not one job: mixed jobs: rank 0 (world size 8"* ]]
	"$ANALYZE" -q -o "$T/f/single.json" "$ISC_SRC/tests/data/real/kineto/a100_simple_add.json.gz"
	run --separate-stderr "$ANALYZE" --job "$T/f/r0.json" "$T/f/single.json"
	[ "$status" -eq 2 ]
	[ "$stderr" = "iscope-analyze: not one job: input 2 is not the analysis of a rank of a distributed job (no distributed.ranks)" ]
}

# ---- the report of a job (iscope-report): the job first, a table of the
# ranks and one of the collectives; in HTML, swimlanes and a heatmap.

@test "report of a synthetic straggler job: the job first, the straggler, one row per rank, the collectives" {
	synth straggler 4 10 2 3000
	REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
	"$REPORT" -o "$T/r.md" "$T/straggler.json"
	# the job is the first section, before the verdict's headline
	grep -m1 -n '^## ' "$T/r.md" > "$T/first"
	[ "$(cat "$T/first")" = "3:## Job" ]
	[ "$(grep -n '^\*\*Rank 2 is 3.0 ms late' "$T/r.md" | cut -d: -f1)" -gt 3 ]
	grep -F 'A job of **4 ranks**, backend nccl, 1 host' "$T/r.md"
	grep -F "**Straggler: rank 2**, 3.0 ms late to its collectives (median), last in 100 % of them; ranks 0-1, 3 wait for it in all_reduce: the job loses 3.0 ms per iteration (25.6 % of an iteration)." "$T/r.md"
	grep -F -- '- `slow_preprocess_kernel` (gpu): 3.0 ms per iteration against 0 ns, +3.0 ms' "$T/r.md"
	sed -n '/^### Ranks/,/^$/p;/^### Ranks/,/^### Collectives/p' "$T/r.md" | grep -c '^| [0-9]' > "$T/rows"
	[ "$(cat "$T/rows")" -eq 4 ]
	grep -c '(straggler) |' "$T/r.md" > "$T/n"
	[ "$(cat "$T/n")" -eq 1 ]
	grep -F '| 2 (straggler) | n/a | 11.7 ms |' "$T/r.md"
	# all_reduce (float32 by its kernel's name): 10 calls, 4 ranks, 500 us transfer, rank 2 3 ms after the others (the skew), 3 ranks x 3 ms x 10 waited
	grep -F '| all_reduce | n/a | float32 | 10 | 4.00 | 500.0 µs | 3.0 ms | 3.0 ms | 0 ns | 90.0 ms | n/a |' "$T/r.md"
}

@test "report of the balanced twin says so; a rank's own findings get no job section" {
	synth balanced 4 10
	REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
	"$REPORT" -o "$T/r.md" "$T/balanced.json"
	grep -F '**Balanced**: no rank is late to the collectives by 5 % of an iteration or more.' "$T/r.md"
	run ! grep -F 'Straggler' "$T/r.md"
	"$ANALYZE" -q "$T/balanced/rank0.json.gz" | "$REPORT" -o "$T/one.md"
	run ! grep -F '## Job' "$T/one.md"
}

@test "HTML report of a job: per-rank swimlanes (iterations, collectives, the last arrivals) and a rank x iteration heatmap, self-contained" {
	synth straggler 4 10 2 3000
	REPORT=$ISC_BUILD/tools/iscope-report/iscope-report
	"$REPORT" -f html -o "$T/r.html" "$T/straggler.json"
	# by construction: 4 ranks x 10 iterations, 10 all_reduce each, rank 2 the last to arrive at all 10
	$PY - "$T/r.html" <<'PYEOF'
import re, sys
h = open(sys.argv[1]).read()
svgs = re.findall(r"<svg.*?</svg>", h, re.S)
lanes = [s for s in svgs if "<title id=" in s and ">Ranks over time<" in s]
heat = [s for s in svgs if ">Iteration time by rank<" in s]
assert len(lanes) == 1 and len(heat) == 1, (len(lanes), len(heat))
s = lanes[0]
assert s.count('fill="#c9c9c9" stroke') == 40, s.count('fill="#c9c9c9" stroke')
s = re.sub(r'<rect [^>]*width="12" height="10"[^>]*/>', '', s)  # the legend's swatches
blue = len(re.findall(r'<rect [^>]*fill="#3b6fb6"/>', s))
red = re.findall(r'<rect x="[^"]*" y="([^"]*)" [^>]*fill="#d0453c"/>', s)
assert blue == 30 and len(red) == 10, (blue, len(red))
assert len(set(red)) == 1, set(red)  # all on one lane
lane_y = sorted({float(y) for y in re.findall(r'<rect x="[^"]*" y="([^"]*)" [^>]*fill="#3b6fb6"/>', s)})
# lanes in rank order, evenly spaced: the red ones are on the third, rank 2's (the blue ones on lanes 0, 1 and 3)
assert float(red[0]) - lane_y[0] == 2 * (lane_y[1] - lane_y[0]) and len(lane_y) == 3, (red[0], lane_y)
cells = re.findall(r"<rect [^>]*fill=\"rgb\([^)]*\)\"><title>([0-9.]+) ms</title>", heat[0])
assert len(cells) == 40 and set(cells) == {"11.700"}, (len(cells), set(cells))
assert "<script" not in h and not re.search(r'(src|href)="(https?:)?//', h)
PYEOF
}

@test "Chrome export of a job: each rank its own processes (two ranks' pid 4242 and GPU 0 apart), arrows only within a rank" {
	mkdir "$T/s"
	JOB_SYNTH_SAME_IDS=1 $PY "$ISC_SRC/tests/dist/job_synth.py" straggler 4 3 "$T/s" 2 3000
	"$MERGE" --format=chrome -o "$T/job.json" "$T"/s/rank*.json.gz
	$PY - "$T/job.json" "$T"/s/rank*.json.gz <<'PYEOF'
import collections, gzip, json, re, sys
out = json.load(open(sys.argv[1]))["traceEvents"]
# expected from the rank files alone: per rank, its kernels and the kernels a cuda_runtime call launched
want_k, want_flows = {}, 0
for path in sys.argv[2:]:
    d = json.load(gzip.open(path))
    r = d["distributedInfo"]["rank"]
    ev = d["traceEvents"]
    assert {e["pid"] for e in ev if e.get("cat") == "cpu_op"} == {4242}
    launch = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"}
    kern = [e for e in ev if e.get("cat") == "kernel"]
    want_k[r] = len(kern)
    want_flows += sum(e["args"]["correlation"] in launch for e in kern)
names = {e["pid"]: e["args"]["name"] for e in out if e["ph"] == "M" and e["name"] == "process_name"}
rank = {}
for pid, n in names.items():
    m = re.match(r"rank (\d+): (process 4242|GPU 0 \(Synthetic GPU\))$", n)
    assert m, n
    rank[pid] = int(m.group(1))
assert len(names) == 8 and collections.Counter(rank.values()) == {0: 2, 1: 2, 2: 2, 3: 2}, names
got_k = collections.Counter(rank[e["pid"]] for e in out if e["ph"] == "X" and e.get("cat") == "kernel")
assert got_k == want_k, (got_k, want_k)
starts = {e["id"]: e["pid"] for e in out if e["ph"] == "s"}
ends = [e for e in out if e["ph"] == "f"]
assert len(starts) == want_flows == len(ends), (len(starts), want_flows, len(ends))
assert all(rank[starts[e["id"]]] == rank[e["pid"]] for e in ends)
PYEOF
}
