/*
 * rule_numa_remote.c - numa_remote: memory on another NUMA node than the
 * threads using it.  Only on machines with more than one node.
 *
 * Trigger: memory.numa.nodes > 1 and memory.numa.remote_pct >= 20 (share of
 * the traced processes' resident pages on nodes where none of their
 * threads ran, from /proc/PID/numa_maps and each thread's last CPU).
 * Severity warning.  Threshold: remote DRAM costs ~1.5-2x local latency,
 * so a fifth of the pages remote is where it starts to show.
 * What-if: none computed (needs the access rate, not only the placement).
 */
#include "rules.h"

#define TRIGGER_PCT 20

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double nodes = isc_doc_num(c->doc, "memory.numa.nodes", 0), remote;
	if (nodes < 2 || !isc_doc_have(c->doc, "memory.numa.remote_pct", &remote) || remote < TRIGGER_PCT)
		return;
	cJSON *f = isc_fnd_new(o, "numa_remote", "warning", c->quality,
			   "%.0f %% of resident memory sits on a NUMA node none of its threads ran on", remote);
	isc_fnd_metric(o, f, "numa_nodes", nodes);
	isc_fnd_metric(o, f, "remote_pct", remote);
	isc_fnd_suggest(c, o, f, -1,
		    "Bind the process to one node: numactl --cpunodebind=N --membind=N, or one process per node.", NULL,
		    "Remote memory accesses cross the interconnect; %.0f %% of pages are remote across %.0f nodes.", remote,
		    nodes);
}

const struct rule isc_rule_numa_remote = { "numa_remote", eval };
