/*
 * rule_host_memory_bound.c - host_memory_bound: the step waits on memory.
 *
 * Verdict share, the largest of:
 *   memory.pressure.memory.some_stall_pct  (PSI: share of the run some task
 *                                           stalled on memory)
 *   fault time: the kernel-mode CPU time of the traced threads
 *               (isc_rsystem_ns(): processes[].threads[].system_ns, or
 *               processes[].system_ns without thread samples) as a share
 *               of traced time, counted only while page faults run at
 *               >= 1000 per second — first touches of fresh memory and
 *               reclaim are kernel time.  Untraced threads are left out:
 *               an OpenBLAS pool waiting in sched_yield spends seconds in
 *               the kernel that no traced thread waited for
 * plus, when the trace says why threads blocked, the page_in reason's
 * blocked time (cpu.off_cpu_reasons: a thread asleep in a page fault,
 * outside any system call, waiting for the disk: a memory-mapped model
 * paged in, swap-in) as a share of traced time, times the blocked share
 * of off-CPU time (isc_roff_cpu_blocked()) over the sampled blocked time.
 * Trigger: share >= 10 %, or swap in use by a traced process, or major
 * faults >= 100 per second.  Severity critical from 30 %.
 * Evidence: the share, fault rates, swap, pressure, the Python functions
 * that waited for pages from the disk (the page_in reason's top[]), and
 * where RSS grows (memory.growth_top, functions with file:line; judged on
 * the iterations, the first GROWTH_TOP memory.growth_sites inside a scope, or
 * all of them when they come from allocation samples, retained over the
 * steady iterations).
 * What-if: the fault and stall time gone, as when buffers are reused
 * instead of freshly allocated (an upper bound).
 * Thresholds: 1000 faults/s is ~4 MiB/s of first-touched 4 KiB pages, the
 * floor below which fault time is lost in noise; 100 major faults/s at
 * ~0.1-10 ms each is seconds of disk wait per second.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define MAJOR_RATE 100
#define GROWTH_TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *p, *x;
	double minflt = 0, majflt = 0, swap = 0;
	bool of_threads;
	double sys = isc_rsystem_ns(c, &of_threads);
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "processes")) {
		minflt += isc_doc_num(p, "minor_faults", 0);
		majflt += isc_doc_num(p, "major_faults", 0);
	}
	double wall_s = c->wall_ns / 1e9, traced = isc_doc_num(c->doc, "cpu.split.traced_ns", 0), rate;
	double maj_rate = wall_s > 0 ? majflt / wall_s : 0;
	double stall = isc_doc_num(c->doc, "memory.pressure.memory.some_stall_pct", 0);
	double fault_pct = isc_rfault_pct(c, &rate);
	isc_doc_have(c->doc, "memory.process_swap_bytes_max", &swap);
	double share = stall > fault_pct ? stall : fault_pct;
	double blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0), page_in = isc_rreason_ns(c->doc, "page_in", false);
	double page_in_pct = blocked > 0 ? isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0) * isc_roff_cpu_blocked(c) *
						   (page_in < blocked ? page_in / blocked : 1)
					 : 0;
	share += page_in_pct;
	if (share < TRIGGER_PCT && swap <= 0 && maj_rate < MAJOR_RATE)
		return;
	/* the fault time is the threads' kernel time, taken as fault handling: an assumption until kernel
	 * stacks measure it (every syscall, futex and scheduling cost is kernel time too); said so */
	bool assumed = fault_pct > 0 && fault_pct >= stall;
	cJSON *f = isc_fnd_new(o, "host_memory_bound", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "%.0f %% of traced time went to memory%s: %.0f page faults/s%s%s%s", share,
			   assumed ? " (kernel time taken as fault handling)" : "", rate,
			   maj_rate >= MAJOR_RATE ? " (many major: pages read from the disk)" : "",
			   swap > 0 ? ", swap in use" : "", stall >= TRIGGER_PCT ? ", memory pressure stalls" : "");
	isc_fnd_metric(o, f, "fault_time_assumed", assumed);
	isc_fnd_metric(o, f, "memory_share_pct", share);
	isc_fnd_metric(o, f, "fault_time_pct", fault_pct);
	if (page_in_pct > 0)
		isc_fnd_metric(o, f, "page_in_wait_pct", page_in_pct);
	isc_fnd_metric(o, f, "page_faults_per_s", rate);
	isc_fnd_metric(o, f, "major_faults_per_s", maj_rate);
	isc_fnd_metric(o, f, "system_ns", sys);
	isc_fnd_metric(o, f, "memory_some_stall_pct", stall);
	isc_fnd_metric(o, f, "process_swap_bytes_max", swap);
	if (page_in_pct > 0)
		cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "cpu.off_cpu_reasons"))
			if (!strcmp(isc_doc_str(p, "reason", ""), "page_in"))
				cJSON_ArrayForEach(x, isc_doc_arr(p, "top"))
					isc_fnd_detail(o, isc_fnd_top(o, f, x, NULL, "python", isc_doc_num(x, "ns", 0), -1),
						   "waited for pages from the disk (page faults outside any system call)");
	if (c->iterations) { /* where RSS grew while a scope was open, not start-up's imports */
		int n = 0;
		/* RSS growth charged inside a scope; or allocation sites, whose
		 * retained bytes are measured over the steady iterations */
		bool alloc = !strcmp(isc_doc_str(c->doc, "memory.growth_sites_source", ""), "allocation_samples");
		cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.growth_sites"))
			if ((alloc || cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "scope"))) && n++ < GROWTH_TOP)
				isc_fnd_bytes(o, isc_fnd_top(o, f, x, NULL, "python", -1, -1), isc_doc_num(x, "bytes", -1));
	} else {
		cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.growth_top"))
			isc_fnd_bytes(o, isc_fnd_top(o, f, x, NULL, "python", -1, -1), isc_doc_num(x, "growth_bytes", -1));
	}
	isc_fnd_suggest(c, o, f, share / 100 * traced,
		    "Allocate less per step: reuse preallocated buffers (out= arguments, in-place ops), drop references "
		    "to old tensors, run under torch.inference_mode(), keep the working set in RAM (no swap); glibc returns "
		    "large blocks to the kernel after each free, so each step faults them in again: raise "
		    "MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ or preload jemalloc or tcmalloc.",
		    "page-fault and memory-stall time gone (upper bound)",
		    "The %s spent %.0f ms in the kernel while the traced processes took %.0f page faults, %.0f of "
		    "them major.", of_threads ? "traced threads" : "traced processes", sys / 1e6, minflt + majflt, majflt);
	isc_fnd_candidate(o, f, "host_memory_bound", share, c->quality);
}

const struct rule isc_rule_host_memory_bound = { "host_memory_bound", eval };
