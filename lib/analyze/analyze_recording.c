/*
 * analyze_recording.c - findings.recording: how the Python side was
 * recorded and what recording cost.
 *
 *   mode, mechanism        exact (every call), through PyEval_SetProfile or
 *                          sys.monitoring, from the CALIBRATION records
 *   per_event_ns           the agent's measured cost of one recorded event
 *                          (formats/trace.md §6.1), per process
 *   overhead_*             the recording cost analyze.c's span_pop found in
 *                          self times and took out (unless --no-compensation),
 *                          and what it took out of iteration latencies
 *   threads_with_drops     DROPPED counts per thread, largest first
 *
 * Written only when a process was calibrated or a thread lost events, so
 * documents of Kineto traces and of older recordings do not change.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_pass.h"
#include "isc_util.h"
#include "isc_jbuild.h"

#define DROP_ROWS 16

static const char *mech_name(uint64_t m)
{
	return m == 2 ? "sys.monitoring" : m == 1 ? "setprofile" : "other";
}

static int by_dropped(const void *x, const void *y)
{
	const struct ana_thread *a = *(struct ana_thread *const *)x, *b = *(struct ana_thread *const *)y;
	if (a->dropped != b->dropped)
		return a->dropped > b->dropped ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static double pct2(double part, double whole)
{
	return whole > 0 ? round(10000.0 * part / whole) / 100 : 0;
}

void isc_ana_emit_recording(struct ana *a, cJSON *root, uint64_t traced_ns)
{
	size_t ncal = 0, ndrop = 0;
	uint64_t mech = 0, events = 0, dropped = 0, removed = 0;
	bool mixed = false;
	double cost_sum = 0; /* per-event cost weighted by the events it applies to */
	for (size_t i = 0; i < a->nprs; i++) {
		if (!a->prs[i]->have_calib)
			continue;
		if (ncal++ && a->prs[i]->calib[0] != mech)
			mixed = true;
		mech = a->prs[i]->calib[0];
	}
	for (size_t i = 0; i < a->nths; i++) {
		const struct ana_thread *th = a->ths[i];
		ndrop += th->dropped > 0;
		dropped += th->dropped;
		removed += th->overhead_ns;
		if (th->cost_ps) {
			events += 2 * th->spans_begun;
			cost_sum += (double)th->cost_ps * 2.0 * (double)th->spans_begun;
		}
	}
	bool sampled = isc_pysamp_have(a->pys);
	if (!ncal && !ndrop && !sampled)
		return;
	cJSON *r = isc_jb_obj(&a->jb, root, "recording");
	isc_jb_str(&a->jb, r, "python_mode", ncal ? "exact" : sampled ? "sample" : NULL);
	if (sampled)
		isc_pysamp_emit_sampler(a->pys, &a->jb, r, a->have_ts ? a->last_ts - a->first_ts : 0);
	isc_jb_str(&a->jb, r, "mechanism", !ncal ? NULL : mixed ? "mixed" : mech_name(mech));
	isc_jb_bool(&a->jb, r, "compensated", ncal && !a->raw_times);
	/* the mean over the events it was applied to; else the first process's */
	double per_event = events ? cost_sum / (double)events / 1000 : 0;
	for (size_t i = 0; !events && i < a->nprs; i++)
		if (a->prs[i]->have_calib) {
			per_event = (double)a->prs[i]->calib[1] / 1000;
			break;
		}
	isc_jb_num_or_null(&a->jb, r, "per_event_ns", ncal, round(per_event * 10) / 10);
	isc_jb_num(&a->jb, r, "events_compensated", a->raw_times ? 0 : (double)events);
	/* traced_ns is corrected unless raw: the share is of the time before correction */
	uint64_t before = a->raw_times ? traced_ns : traced_ns + removed;
	isc_jb_num(&a->jb, r, "overhead_ns", (double)removed);
	isc_jb_num(&a->jb, r, "overhead_pct", pct2((double)removed, (double)before));
	/* how much longer the traced code ran recorded than it would have run without (an estimate) */
	isc_jb_num_or_null(&a->jb, r, "traced_slowdown", removed > 0 && before > removed,
			   removed > 0 && before > removed ? round(100.0 * (double)before / (double)(before - removed)) / 100 : 0);
	isc_jb_num(&a->jb, r, "iteration_overhead_removed_ns", (double)a->removed_iter_ns);
	cJSON *ps = isc_jb_arr(&a->jb, r, "calibrations");
	for (size_t i = 0; i < a->ncals; i++) {
		const struct isc_analyze_calib *c = &a->cals[i];
		uint32_t k = isc_umap_get(&a->pr_map, c->pid);
		const struct ana_proc *p = k != ISC_UMAP_NONE ? a->prs[k] : NULL;
		cJSON *o = isc_jb_push_obj(&a->jb, ps);
		if (!o)
			break;
		isc_jb_num(&a->jb, o, "pid", c->pid);
		isc_jb_str(&a->jb, o, "mechanism", mech_name(c->f[0]));
		isc_jb_num(&a->jb, o, "per_event_ns", round((double)c->f[1] / 100) / 10);
		isc_jb_num(&a->jb, o, "calls", (double)c->f[2]);
		isc_jb_num(&a->jb, o, "plain_ns", (double)c->f[3]);
		isc_jb_num(&a->jb, o, "hooked_ns", (double)c->f[4]);
		isc_jb_num(&a->jb, o, "events", (double)c->f[5]);
		isc_jb_bool(&a->jb, o, "used", p && p->have_calib && !memcmp(p->calib, c->f, sizeof(c->f)));
	}
	isc_jb_num(&a->jb, r, "dropped_events", (double)dropped);
	cJSON *ds = isc_jb_arr(&a->jb, r, "threads_with_drops");
	if (!ndrop)
		return;
	struct ana_thread **v = malloc(a->nths * sizeof(*v));
	if (!v) {
		a->jb.oom = true;
		return;
	}
	memcpy(v, a->ths, a->nths * sizeof(*v));
	qsort(v, a->nths, sizeof(*v), by_dropped);
	for (size_t i = 0; i < a->nths && i < DROP_ROWS && v[i]->dropped; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, ds);
		if (!o)
			break;
		isc_jb_num(&a->jb, o, "pid", v[i]->pid);
		isc_jb_num(&a->jb, o, "tid", v[i]->tid);
		isc_jb_str(&a->jb, o, "name", v[i]->name ? v[i]->name : v[i]->comm);
		isc_jb_num(&a->jb, o, "events", (double)v[i]->events);
		isc_jb_num(&a->jb, o, "dropped_events", (double)v[i]->dropped);
		isc_jb_num(&a->jb, o, "dropped_pct", pct2((double)v[i]->dropped, (double)(v[i]->events + v[i]->dropped)));
	}
	free(v);
}
