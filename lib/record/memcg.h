/*
 * memcg.h - a memory-limited cgroup for the workload (memcg.c):
 * iscope-record --memory-limit, and the OOM-kill counters the recorder
 * reads when a process dies of SIGKILL.  Private to lib/record.
 */
#ifndef ISC_MEMCG_H
#define ISC_MEMCG_H

#include <stdbool.h>
#include <stdint.h>

struct isc_memcg {
	int version;        /* 1 or 2; 0: no cgroup made */
	char dir[4096];     /* the cgroup made for the workload */
	int procs_fd;       /* its cgroup.procs, open for writing; -1 when none */
	uint64_t limit;
	uint64_t cg_kills;  /* its oom_kill count when last read */
	uint64_t vm_kills;  /* /proc/vmstat oom_kill when last read */
	bool have_vm;
	/* v2: what create changed in the recorder's own cgroup, undone by destroy */
	char own[2200];     /* the recorder's own cgroup directory */
	char leaf[4200];    /* the leaf the recorder moved itself into; "" when it did not */
	bool enabled;       /* create wrote +memory to own's cgroup.subtree_control */
};

/*
 * Makes a child of the recorder's own memory cgroup (v2 when the unified
 * hierarchy has the memory controller, else v1's memory hierarchy) limited
 * to limit bytes, swap included where the kernel offers it.  v2 hands the
 * memory controller down only from a cgroup without processes of its own
 * (the root excepted): when the recorder's cgroup holds the recorder alone,
 * the recorder first moves itself into a leaf child of it (memcg.c).  0,
 * or a negative errno with the reason pushed (isc_err_push): what to do
 * about it.  m is zeroed first; isc_memcg_destroy undoes what was done.
 */
int isc_memcg_create(struct isc_memcg *m, uint64_t limit);
/* Reads the OOM-kill counters as the baseline (no cgroup needed: /proc/vmstat). */
void isc_memcg_baseline(struct isc_memcg *m);
/*
 * Whether the kernel's OOM killer counted a kill since the last call: the
 * cgroup's oom_kill (v1 memory.oom_control, v2 memory.events) when there
 * is one, else /proc/vmstat oom_kill (the whole machine).  why receives
 * which counter moved, and by how much.
 */
bool isc_memcg_oom_killed(struct isc_memcg *m, char *why, size_t len);
/*
 * Removes the cgroup (its processes are gone), closes procs_fd and, on v2,
 * gives the recorder's cgroup back as it was (the controller handed down
 * by create taken back, the recorder moved back from its leaf); best
 * effort: a process left in the cgroup keeps it.
 */
void isc_memcg_destroy(struct isc_memcg *m);

#endif
