/*
 * rule_memory_churn.c - memory_churn: memory allocated and freed over and
 * over at one line, when that costs time (from the allocation samples:
 * memory.sites[]).
 *
 * Cost: fresh memory is paid for in page faults (glibc hands allocations
 * of 128 KiB to 32 MiB and more to mmap and gives them back at free, so
 * each one is faulted in, zeroed, again): the fault time is the traced
 * threads' kernel time while page faults run at >= 1000/s
 * (isc_rfault_pct, as host_memory_bound counts it).
 * Churn of a site: with steady-state iterations, the bytes it allocated
 * over them less what it retained (allocated_per_iteration_bytes x
 * iterations - retained_bytes: a leak's bytes freed only at the exit are
 * not churn); without, its freed bytes when it freed at least half of
 * what it allocated.
 * Trigger: fault time >= MIN_FAULT_PCT of traced time, and the largest
 * churn >= MIN_CHURN and >= MIN_SHARE of all the sites' churn.  Severity
 * warning.
 * Evidence: the churning sites with their allocation rate, bytes per
 * iteration and share.
 * What-if: the site's share of the fault time, its share of the churned
 * bytes (an assumption: the faults spread over the churned bytes in
 * proportion; an upper bound when part of the kernel time is not faults).
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define MIN_FAULT_PCT 5
#define MIN_CHURN (64.0 * 1048576)
#define MIN_SHARE 0.2
#define SHOWN 5

/* A site's churn: bytes it allocated in the steady state and did not keep; without iterations, the bytes it
 * freed (0 unless it freed at least half of what it allocated). */
static double churn(const cJSON *x)
{
	double per, its = isc_doc_num(x, "iterations", 0);
	if (its > 0 && isc_doc_have(x, "allocated_per_iteration_bytes", &per)) {
		double c = per * its - isc_doc_num(x, "retained_bytes", 0);
		return c > 0 ? c : 0;
	}
	double al = isc_doc_num(x, "allocated_bytes", 0), fr = isc_doc_num(x, "freed_bytes", 0);
	return al > 0 && fr >= al / 2 ? fr : 0;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *x, *top = NULL;
	double total = 0, rate;
	double fault_pct = isc_rfault_pct(c, &rate), traced = isc_doc_num(c->doc, "cpu.split.traced_ns", 0);
	if (fault_pct < MIN_FAULT_PCT)
		return;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.sites")) {
		if (!isc_rhost_site(x))
			continue; /* device memory: no page faults of the host's */
		total += churn(x);
		if (!top || churn(x) > churn(top))
			top = x;
	}
	double mine = top ? churn(top) : 0, share = total > 0 ? mine / total : 0;
	if (mine < MIN_CHURN || share < MIN_SHARE)
		return;
	char w[600], per_it[64] = "";
	double per, arate = isc_doc_num(top, "allocation_rate_bytes_per_s", 0);
	isc_doc_where(w, sizeof(w), top);
	if (isc_doc_have(top, "allocated_per_iteration_bytes", &per))
		snprintf(per_it, sizeof(per_it), ", %.1f MiB per iteration", per / 1048576);
	double cost = fault_pct / 100 * traced;
	cJSON *f = isc_fnd_new(o, "memory_churn", "warning", c->quality,
			       "Allocation churn: %s allocates and frees %.0f MiB/s%s while page faults take %.0f %% of "
			       "traced time",
			       w, arate / 1048576, per_it, fault_pct);
	isc_fnd_metric(o, f, "churn_bytes", mine);
	isc_fnd_metric(o, f, "churn_share_pct", 100 * share);
	isc_fnd_metric(o, f, "allocation_rate_bytes_per_s", arate);
	isc_fnd_metric(o, f, "fault_time_pct", fault_pct);
	isc_fnd_metric(o, f, "page_faults_per_s", rate);
	int k = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.sites")) {
		if (k >= SHOWN || !isc_rhost_site(x) || churn(x) < MIN_CHURN / 4 || churn(x) * 20 < total)
			continue;
		k++;
		cJSON *t = isc_fnd_top(o, f, x, NULL, !strcmp(isc_doc_str(x, "kind", ""), "python") ? "python" : "unknown", -1,
				       100 * churn(x) / total);
		isc_fnd_bytes(o, t, churn(x));
		isc_fnd_detail(o, t, "%.0f MiB/s allocated, %.0f MiB allocated and freed", isc_doc_num(x, "allocation_rate_bytes_per_s", 0) / 1048576,
			       churn(x) / 1048576);
	}
	isc_fnd_suggest(c, o, f, cost * share,
			"Reuse the memory allocated at this line across iterations instead of allocating it anew: "
			"preallocate once and fill in place (out= arguments, in-place ops, a buffer pool); glibc gives "
			"large blocks back to the kernel at each free, so each new one is faulted in again: raise "
			"MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_, or preload jemalloc or tcmalloc.",
			"the page-fault time in proportion to this site's share of the bytes allocated and freed",
			"The traced threads spent %.0f %% of traced time in the kernel at %.0f page faults/s; this line "
			"allocated and freed %.0f MiB, %.0f %% of what the sampled sites churned.",
			fault_pct, rate, mine / 1048576, 100 * share);
}

const struct rule isc_rule_memory_churn = { "memory_churn", eval };
