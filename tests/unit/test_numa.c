/*
 * test_numa.c - analyze_numa.c: pages by node, remote share against the
 * nodes a process's threads ran on, the latest numa_maps winning (TAP).
 */
#include <string.h>

#include "analyze_numa.h"
#include "isc_format.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"
#include "tap.h"

static void maps(struct isc_numa *n, uint32_t pid, uint64_t n0, uint64_t n1)
{
	struct isc_tl_event ev = { .type = ISC_REC_NUMA_MAPS, .nf = 4, .f = { pid, 2, n0, n1 } };
	isc_numa_event(n, &ev);
}

static void ran(struct isc_numa *n, uint32_t pid, uint64_t node)
{
	struct isc_tl_event ev = { .type = ISC_REC_THREAD_SAMPLE, .nf = 9, .f = { pid, pid, 0, 0, 'R', 0, 0, 0, node + 1 } };
	isc_numa_event(n, &ev);
}

int main(void)
{
	struct isc_numa *n;
	double v;
	cJSON *root = cJSON_CreateObject(), *mem = cJSON_AddObjectToObject(root, "memory");
	if (!ok(isc_numa_new(&n) == 0, "new"))
		return tap_done();
	isc_numa_emit(n, mem);
	ok(cJSON_IsNull(isc_doc_get(root, "memory.numa")), "no numa_maps: memory.numa is null");
	maps(n, 10, 500, 500); /* superseded below */
	maps(n, 10, 100, 300);
	ran(n, 10, 0);
	maps(n, 20, 50, 50); /* never sampled: nothing counts as remote */
	isc_numa_emit(n, mem);
	ok(isc_doc_have(root, "memory.numa.nodes", &v) && v == 2, "2 nodes");
	ok(isc_doc_have(root, "memory.numa.remote_pct", &v) && v == 60,
	   "300 of 500 pages on a node pid 10 never ran on: 60 %%");
	const cJSON *by = isc_doc_get(root, "memory.numa.pages_by_node");
	ok(cJSON_GetArraySize(by) == 2 && cJSON_GetArrayItem(by, 1)->valuedouble == 350, "pages by node: 150, 350");
	ran(n, 10, 1);
	isc_numa_emit(n, mem);
	ok(isc_doc_have(root, "memory.numa.remote_pct", &v) && v == 0, "threads on both nodes: nothing remote");
	cJSON_Delete(root);
	isc_numa_free(n);
	return tap_done();
}
