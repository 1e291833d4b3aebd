/*
 * analyze_native.h - native stacks in the analysis pass (analyze_native.c):
 * the NATIVE_* records of iscope-record --native unwound and named
 * (lib/native), mixed with the Python frames of the same thread, worker
 * threads' stacks put under the Python line and op that dispatched their
 * work, aggregated into a stack tree (lib/stacks) and tables, and written
 * as the findings' native section.  Private to lib/analyze.
 *
 * The pass calls isc_nat_event on every event after analyze.c has taken
 * it (so a thread's span stack and scopes are those at the event's time),
 * isc_nat_finish at the end; the sections then ask it for the CPU split
 * (cpu.split with native frames), the thread pools' attribution and the
 * native section.  Without NATIVE_SAMPLER records everything here is a
 * no-op and the document has no native section.
 */
#ifndef ISC_ANALYZE_NATIVE_H
#define ISC_ANALYZE_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "isc.h"
#include "isc_jbuild.h"

struct ana;
struct ana_thread;
struct ana_cpu_split;
struct isc_nat;

/* max_nodes: native.tree's bound (at least 16).  0 or -ENOMEM. */
int isc_nat_new(struct isc_nat **out, unsigned max_nodes);
void isc_nat_free(struct isc_nat *n);
/* One event of the pass, after analyze.c took it.  0, -ENOMEM. */
int isc_nat_event(struct isc_nat *n, struct ana *a, const struct isc_tl_event *ev);
/* The end of the pass: the stacks still waiting for a Python sample are counted. */
void isc_nat_finish(struct isc_nat *n, struct ana *a);
/* Whether the run was recorded with native stacks (a NATIVE_SAMPLER record). */
bool isc_nat_have(const struct isc_nat *n);

/*
 * The CPU split with native frames (iscope-analyze(1), NATIVE STACKS):
 * the on-CPU time of a split is divided between the interpreter, torch
 * ops and other C code in the proportions of the Python threads' native
 * stacks (isc_native_class), when there are at least ISC_NAT_SPLIT_MIN of
 * them; the off-CPU parts stay.  _thread: one thread's own times (its
 * python_ns, ops_ns, torch_ns), and the change added to w when w is not
 * NULL.  _split: a whole split, of the stacks taken inside scopes when
 * in_scope.
 */
#define ISC_NAT_SPLIT_MIN 10
void isc_nat_resplit_thread(const struct isc_nat *n, struct ana_thread *th, struct ana_cpu_split *w);
void isc_nat_resplit_split(const struct isc_nat *n, struct ana_cpu_split *c, bool in_scope);

/* A thread's native samples and how many of them were put under a dispatcher (0, 0 without). */
void isc_nat_thread_counts(const struct isc_nat *n, uint32_t pid, uint32_t tid, uint64_t *samples,
			   uint64_t *dispatched);
/*
 * cpu.thread_pools[].native of one pool row: its samples (summed over its
 * threads), the share of the pool's CPU time they cover, the share put
 * under a dispatcher, and the top function and dispatcher of its busiest
 * thread (pid, tid).  Nothing without native stacks.
 */
void isc_nat_emit_pool(const struct isc_nat *n, struct isc_jb *jb, cJSON *row, uint32_t pid, uint32_t tid,
		       uint64_t samples, uint64_t dispatched, uint64_t cpu_ns);
/* root.native (formats/findings.schema.json); nothing without native stacks.  0 or -ENOMEM. */
int isc_nat_emit(struct isc_nat *n, struct ana *a, cJSON *root);

#endif
