#!/usr/bin/env bats
# Recorded jobs (issue 27 items 1-4 and 9): torch.distributed gloo jobs run
# on this machine (localhost, a few seconds each) under iscope-record, whose
# Python agent marks each process's rank and wraps its collectives
# (inferscope/_dist.py).  tests/dist/gloo_job.py is the job: a launcher
# whose children are the ranks, or one rank per recorder (-o trace.%r.isc);
# per step an MLP forward, all_reduce, all_gather, and a planted straggler:
# slow_preprocess, 20 ms of Python work by the wall clock, on one rank (the
# balanced twin: on every rank).  Expected values come from the ranks' own
# logs (the CLOCK_MONOTONIC time each rank called each collective, written
# by gloo_job.py) through tests/dist/gloo_expect.py, and from the planted
# 20 ms; never from what InferScope wrote.

bats_require_minimum_version 1.5.0

setup_file() {
	ISC_BUILD=${ISC_BUILD:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}
	ISC_SRC=${ISC_SRC:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
	export REC=$ISC_BUILD/tools/iscope-record/iscope-record
	export MERGE=$ISC_BUILD/tools/iscope-merge/iscope-merge
	export ANALYZE=$ISC_BUILD/tools/iscope-analyze/iscope-analyze
	export PY=/usr/bin/python3
	export JOB=$ISC_SRC/tests/dist/gloo_job.py
	export EXPECT=$ISC_SRC/tests/dist/gloo_expect.py
	export VALIDATE=$ISC_SRC/tests/lib/validate_findings.py
	export D=$BATS_FILE_TMPDIR
}

# job NAME MODE RANKS SLOW_MS WHO [LAUNCH]: records a launcher of RANKS ranks
# (gloo_job.py LAUNCH: launch, or spawn) once per file run
# (--python=MODE), analyses it into $D/NAME/f.json and the logs'
# expectations into $D/NAME/expect; sets W to $D/NAME.
job() {
	W=$D/$1
	[[ -s $W/f.json ]] && return 0
	mkdir -p "$W"
	"$REC" --quiet --python="$2" -o "$W/job.isc" -- "$PY" "$JOB" "${6:-launch}" "$3" 30 "$4" "$5" "$W" \
		>"$W/out" 2>"$W/err" || { cat "$W/err"; return 1; }
	"$ANALYZE" "$W/job.isc" >"$W/f.tmp"
	"$VALIDATE" "$W/f.tmp"
	"$PY" "$EXPECT" "$W" >"$W/expect"
	mv "$W/f.tmp" "$W/f.json"
}

# per_rank NAME MODE RANKS SLOW_MS WHO: one recorder per rank, started as
# torchrun starts the ranks (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
# MASTER_PORT), each writing -o trace.%r.isc; merged and analysed once.
per_rank() {
	W=$D/$1
	[[ -s $W/f.json ]] && return 0
	mkdir -p "$W"
	local port r pids=() st=0
	port=$("$PY" "$JOB" port)
	for ((r = 0; r < $3; r++)); do
		RANK=$r LOCAL_RANK=$r WORLD_SIZE=$3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			"$REC" --quiet --python="$2" -o "$W/trace.%r.isc" -- "$PY" "$JOB" env 30 "$4" "$5" "$W" \
			>"$W/out.$r" 2>"$W/err.$r" &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || st=1
	done
	[ "$st" -eq 0 ] || { cat "$W"/err.*; return 1; }
	"$MERGE" -o "$W/job.istl" "$W"/trace.*.isc
	"$ANALYZE" "$W/job.istl" >"$W/f.tmp"
	"$VALIDATE" "$W/f.tmp"
	"$PY" "$EXPECT" "$W" >"$W/expect"
	mv "$W/f.tmp" "$W/f.json"
}

# fact NAME: a value gloo_expect.py computed from the ranks' logs.
fact() {
	awk -v k="$1" '$1 == k { print $2 }' "$W/expect"
}

# near FOUND EXPECTED: |FOUND - EXPECTED| <= 2 ms + 1 % of EXPECTED (the
# recorder's scope begins a few microseconds after the log's timestamp;
# a preemption between the two on a busy machine can add a little more).
near() {
	awk -v f="$1" -v e="$2" 'BEGIN { d = f - e; if (d < 0) d = -d; exit !(d <= 2e6 + 0.01 * (e < 0 ? -e : e)) }'
}

# planted_premise: every rank's own work per step (an MLP forward: 0.2 ms
# on an idle core, measured alone) took at most 2 ms in the median: then
# the straggler's median lateness in all_reduce, which is the other rank's
# median wait there, is the planted work's median duration (20 ms by the
# wall clock, more when the machine preempts rank 1 inside it: 23 ms was
# measured once under load) within 3 ms (its own work and the other's at
# most 2 ms each, in opposite directions, and 1 ms for the rest).  A busy
# machine that delays a rank's own work moves the wait by as much (7-12 ms
# of rank 0's own work, and 12 ms waits, were measured here beside other
# builds, load 6 on 2 cores): skipped, with the figure.
planted_premise() {
	local own
	own=$(fact own_work)
	if ((own > 2000000)); then
		skip "MACHINE ASSUMPTION NOT MET: a rank's own work per step took $((own / 1000)) us in the median (at most 2000)"
	fi
}

@test "-o: %h and %r expand to the host name and the rank in the environment, %% to a percent sign" {
	cd "$BATS_TEST_TMPDIR"
	RANK=3 "$REC" --quiet -o "t.%h.%r.%%.isc" -- true
	[ -s "t.$(uname -n).3.%.isc" ]
	env -u RANK SLURM_PROCID=7 "$REC" --quiet -o "s.%r.isc" -- true
	[ -s s.7.isc ]
}

@test "-o: %r without a rank in the environment, an unknown % and a lone % are refused, exit 2, nothing run" {
	cd "$BATS_TEST_TMPDIR"
	run env -u RANK -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK "$REC" --quiet -o "t.%r.isc" -- touch ran1
	[ "$status" -eq 2 ]
	[[ $output == *"%r: no rank in the environment"* ]]
	[ ! -e ran1 ]
	run "$REC" --quiet -o "t.%x.isc" -- touch ran2
	[ "$status" -eq 2 ]
	[[ $output == *"unknown %x"* ]]
	[ ! -e ran2 ]
	run "$REC" --quiet -o "t.%" -- touch ran3
	[ "$status" -eq 2 ]
	[ ! -e ran3 ]
}

@test "a launcher's recording (2 gloo ranks, its children): each rank process is a rank of the job, the launcher none" {
	job straggler sample 2 20 1
	jq -e '.distributed.world_size == 2' "$W/f.json"
	jq -e '.distributed.backend == "gloo"' "$W/f.json"
	jq -e '.distributed.ranks_present == 2' "$W/f.json"
	jq -e '.distributed.ranks_missing == 0' "$W/f.json"
	[ "$(fact ranks)" -eq 2 ]
	jq -e ".distributed.ranks[0].pids == [$(fact pid.0)]" "$W/f.json"
	jq -e ".distributed.ranks[1].pids == [$(fact pid.1)]" "$W/f.json"
	jq -e ".distributed.hosts == [{\"host\": \"$(uname -n)\", \"ranks\": [0, 1]}]" "$W/f.json"
	# ranks on one host share its clock: nothing to align
	jq -e '.distributed.clock.uncertainty_ns == 0' "$W/f.json"
}

@test "the job's collectives are its torch.distributed calls: counts, bytes and type per operation as the ranks made them" {
	job straggler sample 2 20 1
	jq -e ".distributed.collectives.matched == $(($(fact count.barrier) + $(fact count.all_reduce) + $(fact count.all_gather)))" "$W/f.json"
	jq -e '.distributed.collectives.mismatched == 0' "$W/f.json"
	jq -e '.distributed.match_by == "sequence"' "$W/f.json"
	jq -e ".distributed.collectives.by_op[] | select(.op == \"all_reduce\") | .count == $(fact count.all_reduce)" "$W/f.json"
	jq -e ".distributed.collectives.by_op[] | select(.op == \"all_gather\") | .count == $(fact count.all_gather)" "$W/f.json"
	jq -e ".distributed.collectives.by_op[] | select(.op == \"barrier\") | .count == $(fact count.barrier)" "$W/f.json"
	# each rank's input: 128 float32 (the MLP's output summed over the batch)
	jq -e '.distributed.collectives.by_op[] | select(.op == "all_reduce") | .bytes == 512' "$W/f.json"
	jq -e '.distributed.collectives.by_op[] | select(.op == "all_reduce") | .dtype == "float32"' "$W/f.json"
	jq -e '.distributed.collectives.by_op[] | select(.op == "all_gather") | .bytes == 512' "$W/f.json"
}

@test "each rank's wait in collectives, and the all_reduce skew, are the ranks' own logs' (within 2 ms + 1 %)" {
	job straggler sample 2 20 1
	near "$(jq '.distributed.ranks[0].wait_ns' "$W/f.json")" "$(fact wait.0)"
	near "$(jq '.distributed.ranks[1].wait_ns' "$W/f.json")" "$(fact wait.1)"
	near "$(jq '.distributed.collectives.by_op[] | select(.op == "all_reduce") | .start_skew_ns_mean' "$W/f.json")" \
		"$(fact skew_mean.all_reduce)"
}

@test "the planted straggler is named: rank 1, late in all_reduce, slow_preprocess its cause; rank 0 waits for it" {
	job straggler sample 2 20 1
	jq -e '.distributed.stragglers | length == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].rank == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].late_in == "all_reduce"' "$W/f.json"
	jq -e '.distributed.stragglers[0].waited_in == "all_reduce"' "$W/f.json"
	jq -e '.distributed.stragglers[0].waiting_ranks == [0]' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "slow_preprocess"' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].file | endswith("tests/dist/gloo_job.py")' "$W/f.json"
	jq -e '.distributed.ranks[0].straggler == false' "$W/f.json"
}

@test "rank 0 waits the planted 20 ms per step in all_reduce, within 3 ms (the median over the steps)" {
	job straggler sample 2 20 1
	planted_premise
	local slow
	slow=$(fact slow)
	# by construction: slow_preprocess runs until 20 ms have passed
	((slow >= 20000000))
	# with two ranks the straggler's lateness in all_reduce is rank 0's wait there
	jq -e ".distributed.stragglers[0].late_in_ns >= $slow - 3000000" "$W/f.json"
	jq -e ".distributed.stragglers[0].late_in_ns <= $slow + 3000000" "$W/f.json"
	near "$(jq '.distributed.stragglers[0].late_in_ns' "$W/f.json")" "$(fact step_wait0)"
}

@test "the balanced twin (every rank runs slow_preprocess) has no straggler" {
	job balanced sample 2 20 all
	# the premise: the job was balanced in fact, by the ranks' own logs (a
	# rank late in an operation's median by 5 % of a step would be a
	# straggler the machine made)
	local late step
	late=$(fact late_max)
	step=$(fact step)
	if ((late * 20 >= step)); then
		skip "MACHINE ASSUMPTION NOT MET: rank $(fact late_rank) of the balanced job arrived $((late / 1000)) us late in the median of an operation (5 % of its $((step / 1000)) us step or more)"
	fi
	jq -e '.distributed.ranks_present == 2' "$W/f.json"
	jq -e '.distributed.collectives.matched == 61' "$W/f.json"
	jq -e '.distributed.stragglers == []' "$W/f.json"
	jq -e '[.distributed.ranks[] | select(.straggler)] == []' "$W/f.json"
}

@test "one recording per rank (-o trace.%r.isc, exact mode, ranks from RANK and env://) merged together is the job" {
	per_rank perrank exact 2 20 1
	[ -s "$W/trace.0.isc" ]
	[ -s "$W/trace.1.isc" ]
	jq -e '.distributed.ranks_present == 2' "$W/f.json"
	jq -e '.distributed.world_size == 2' "$W/f.json"
	jq -e ".distributed.ranks[0].pids == [$(fact pid.0)]" "$W/f.json"
	jq -e ".distributed.ranks[1].pids == [$(fact pid.1)]" "$W/f.json"
	jq -e '[.distributed.ranks[].local_rank] == [0, 1]' "$W/f.json"
	# both dist.env.* (the environment) and dist.* (init_process_group) were written
	"$MERGE" --dump "$W/job.istl" >"$W/dump"
	grep -c ' M dist.env.rank ' "$W/dump" >"$W/n_env"
	[ "$(cat "$W/n_env")" -eq 2 ]
	grep -c ' M dist.rank ' "$W/dump" >"$W/n_init"
	[ "$(cat "$W/n_init")" -eq 2 ]
	jq -e '.distributed.stragglers | length == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].rank == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "slow_preprocess"' "$W/f.json"
	near "$(jq '.distributed.ranks[0].wait_ns' "$W/f.json")" "$(fact wait.0)"
}

@test "4 gloo ranks with rank 2 the straggler: the others wait for it, slow_preprocess its cause" {
	job four sample 4 20 2
	jq -e '.distributed.ranks_present == 4' "$W/f.json"
	jq -e '[.distributed.ranks[].rank] == [0, 1, 2, 3]' "$W/f.json"
	jq -e ".distributed.ranks[3].pids == [$(fact pid.3)]" "$W/f.json"
	jq -e '.distributed.stragglers | length == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].rank == 2' "$W/f.json"
	jq -e '.distributed.stragglers[0].waiting_ranks == [0, 1, 3]' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "slow_preprocess"' "$W/f.json"
	near "$(jq '.distributed.ranks[0].wait_ns' "$W/f.json")" "$(fact wait.0)"
	near "$(jq '.distributed.ranks[3].wait_ns' "$W/f.json")" "$(fact wait.3)"
}

# env_launcher FILE PORT0 PORT1: a launcher (no torch) whose two children get
# RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT as torchrun sets
# them and call no torch.distributed; it prints their pids.
env_launcher() {
	cat >"$1" <<PY
import os, subprocess, sys
ps = [subprocess.Popen([sys.executable, "-c", "pass"],
                       env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                                MASTER_ADDR="127.0.0.1", MASTER_PORT=str((${2}, ${3})[r])))
      for r in range(2)]
print(" ".join(str(p.pid) for p in ps))
sys.exit(max(p.wait() for p in ps))
PY
}

@test "without torch.distributed, the ranks come from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR:PORT)" {
	cd "$BATS_TEST_TMPDIR"
	env_launcher l.py 29500 29500
	env -u RANK -u WORLD_SIZE -u LOCAL_RANK "$REC" --quiet -o e.isc -- "$PY" l.py >pids
	read -r p0 p1 <pids
	"$ANALYZE" e.isc >f.json
	jq -e '.distributed.world_size == 2' f.json
	jq -e '.distributed.ranks_present == 2' f.json
	jq -e ".distributed.ranks[0].pids == [$p0]" f.json
	jq -e ".distributed.ranks[1].pids == [$p1]" f.json
	jq -e '[.distributed.ranks[].local_rank] == [0, 1]' f.json
	jq -e '.distributed.ranks[0].job == .distributed.ranks[1].job' f.json
}

@test "two ranks whose environments name different rendezvous (MASTER_PORT) are refused as not one job" {
	cd "$BATS_TEST_TMPDIR"
	env_launcher l.py 29500 29501
	env -u RANK -u WORLD_SIZE -u LOCAL_RANK "$REC" --quiet -o e.isc -- "$PY" l.py >pids
	run --separate-stderr "$ANALYZE" e.isc
	[ "$status" -ne 0 ]
	[[ $stderr == *"mixed jobs: ranks "[01]" and "[01]" joined different rendezvous"* ]]
}

# two_hosts: rank 1 recorded as if on another host (its own UTS and mount
# namespaces: host name fakehost1 and another boot id), rank 0 on this one,
# each writing -o trace.%h.isc; merged and analysed once into $D/hosts.
# Skips when namespaces cannot be made here (not root, no unshare).
two_hosts() {
	W=$D/hosts
	[[ -s $W/f.json ]] && return 0
	unshare -mu true 2>/dev/null || skip "no mount and UTS namespaces here (unshare -mu): cannot make a second host"
	mkdir -p "$W"
	echo "fake-boot-id-of-fakehost1" >"$W/boot1"
	local port st=0 p0
	port=$("$PY" "$JOB" port)
	RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		"$REC" --quiet -o "$W/trace.%h.isc" -- "$PY" "$JOB" env 30 20 1 "$W" >"$W/out.0" 2>"$W/err.0" &
	p0=$!
	RANK=1 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		unshare -mu sh -c 'hostname fakehost1 && mount --bind "$1" /proc/sys/kernel/random/boot_id && shift && exec "$@"' \
		sh "$W/boot1" "$REC" --quiet -o "$W/trace.%h.isc" -- "$PY" "$JOB" env 30 20 1 "$W" >"$W/out.1" 2>"$W/err.1" || st=1
	wait "$p0" || st=1
	[ "$st" -eq 0 ] || { cat "$W"/err.*; return 1; }
	"$MERGE" --log-level=info -o "$W/job.istl" "$W/trace.$(uname -n).isc" "$W/trace.fakehost1.isc" 2>"$W/merge.err"
	"$ANALYZE" "$W/job.istl" >"$W/f.tmp"
	"$VALIDATE" "$W/f.tmp"
	"$PY" "$EXPECT" "$W" >"$W/expect"
	mv "$W/f.tmp" "$W/f.json"
}

@test "one recording per host (-o trace.%h.isc, two boots): merged as a job, the second host aligned on the collectives" {
	two_hosts
	[ -s "$W/trace.fakehost1.isc" ]
	jq -e ".distributed.hosts == [{\"host\": \"$(uname -n)\", \"ranks\": [0]}, {\"host\": \"fakehost1\", \"ranks\": [1]}]" "$W/f.json"
	jq -e '.distributed.clock.domains == 2' "$W/f.json"
	jq -e '.distributed.ranks[1].merge_clock.method == "collectives"' "$W/f.json"
	jq -e ".distributed.ranks[1].pids == [$(fact pid.1)]" "$W/f.json"
	grep -F 'trace.fakehost1.isc: rank 1, clock offset' "$W/merge.err"
	jq -e '.distributed.stragglers[0].rank == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "slow_preprocess"' "$W/f.json"
}

@test "the two hosts share one clock in truth (one machine): the offset found is 0 within the uncertainty it reports, and the waits within what that allows" {
	two_hosts
	local off unc n
	off=$(jq '.distributed.ranks[1].clock_offset_ns' "$W/f.json")
	unc=$(jq '.distributed.ranks[1].clock_uncertainty_ns' "$W/f.json")
	echo "offset $off ns, uncertainty $unc ns"
	# the premise (dist_align.c): ranks leave a collective together; beside other jobs one rank may
	# wake later from each, which the logs show on the clock both share (seen once at load 7-9)
	local skew
	skew=$(fact exit_skew_01)
	if ((skew > unc || -skew > unc)); then
		skip "MACHINE ASSUMPTION NOT MET: the ranks left their all_gathers ${skew#-} ns apart (median, from their logs), more than the uncertainty $unc ns"
	fi
	((off <= unc))
	((-off <= unc))
	# each collective's wait moves by at most the offset's error
	n=$(($(fact count.barrier) + $(fact count.all_reduce) + $(fact count.all_gather)))
	awk -v f="$(jq '.distributed.ranks[0].wait_ns' "$W/f.json")" -v e="$(fact wait.0)" -v b="$((n * ${off#-} + 2000000))" \
		'BEGIN { d = f - e; if (d < 0) d = -d; exit !(d <= b) }'
}

@test "torch.multiprocessing.spawn as the launcher (the issue's job: 4 processes, with Python's resource tracker): 2 ranks, rank 1 the straggler" {
	job spawn sample 2 20 1 spawn
	jq -e '.distributed.ranks_present == 2' "$W/f.json"
	jq -e ".distributed.ranks[0].pids == [$(fact pid.0)]" "$W/f.json"
	jq -e ".distributed.ranks[1].pids == [$(fact pid.1)]" "$W/f.json"
	jq -e '.distributed.stragglers | length == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].rank == 1' "$W/f.json"
	jq -e '.distributed.stragglers[0].cause[0].name == "slow_preprocess"' "$W/f.json"
	near "$(jq '.distributed.ranks[0].wait_ns' "$W/f.json")" "$(fact wait.0)"
}
