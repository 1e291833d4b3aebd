/*
 * rules.c - the rule engine: runs every rule module (rule_*.c) over the
 * measured sections of a findings document, then sets root.verdict and
 * root.findings[] (isc_findings_evaluate, isc_analyze.h).
 *
 * Verdict.  Each rule that stands for a verdict class nominates its finding
 * with explained_pct, the share of the run its cause explains (CPU classes:
 * of the traced thread time; GPU classes: of the GPU span).  The candidate
 * with the largest share wins; ties go to the earlier rule in the table.
 * A run with GPU operations gets a GPU class (gpu_compute_bound,
 * launch_bound, cpu_bound, transfer_bound, sync_bound, thermal_throttled):
 * host-side causes are then cpu_bound, whose evidence names the host code;
 * CPU-class findings are still listed.  A run without GPU operations gets a
 * CPU class (python_bound, op_compute_bound, thread_contention,
 * host_memory_bound, io_wait, lock_wait, gil_contention).  Without
 * candidates the class is "unknown".
 * A run that died of out-of-memory (rule_oom.c) gets "oom", before any
 * other class and without a runner-up.
 * A distributed job (a document with a distributed section: one rank's
 * analysis with the job's view) gets a job class when one is nominated,
 * before the rank's own classes and without a runner-up among them:
 * straggler (rule_straggler.c: a rank the others wait for) or
 * communication_bound (rule_communication_bound.c: exposed communication
 * dominates and no rank is late; the two exclude each other).  The rank's
 * own findings are still listed.
 *
 * The iterations, not the start-up (issues 18 and 29).  A run with
 * cpu.in_iterations (at least 2 steady-state iterations, holding at least
 * half of the traced time from the first iteration on) is judged through
 * iteration_view(): every rule reads the time inside iterations in place
 * of the whole run's CPU members, so importing torch weighs nothing.  A
 * run with GPU operations and gpu.in_iterations (at least 2 steady-state
 * iterations, holding at least half of the GPU work launched from the
 * first one on) has its gpu members replaced the same way: the GPU
 * classes judge the device inside the steady iterations (their windows'
 * breakdown, the ops launched there), not start-up gaps or the warm-up;
 * the whole-run figures stay in the document.  The CPU and GPU class
 * findings judged so say it in judged_on, and their titles begin
 * "Inside the iterations:".
 *
 *   confidence = S x Q x (1 - S2 / (2 S))        rounded to 0.01
 *
 *   S   the winner's explained_pct / 100, clamped to [0, 1]
 *   S2  the runner-up's share (0 without one): two causes explaining
 *       similar shares halve the confidence at worst
 *   Q   evidence quality of the winner: the data-quality factor (below)
 *       times what the rule knows about its own evidence (e.g. 0.8 when
 *       off-CPU time could not be measured because there were no samples)
 *
 *   data quality = (1 - dropped_events / (events + dropped_events)),
 *                        the share of the recorded events that was kept
 *                  x 0.9 when frames were lost or the input was damaged
 *                  x 0.9 when the recording ended abruptly
 *                  x 0.5 when a CUDA driver was found but GPU tracing
 *                        failed and no GPU operation was recorded (a
 *                        host-side verdict may be missing the GPU half)
 *
 * verdict.evidence_quality reports Q x (1 - S2 / (2 S)).
 *
 * No verdict without its evidence (issue 18).  A candidate is not chosen
 * when what decides its class was not measured; verdict.missing[] names
 * each such class, what was missing and how to get it:
 *   - any class: 20 % or more of the events were dropped;
 *   - the CPU classes that rest on thread states (op_compute_bound,
 *     thread_contention, host_memory_bound, io_wait, lock_wait,
 *     gil_contention, and
 *     python_bound when less than half of the traced time is the
 *     interpreter's own): no thread sample fell inside a traced span
 *     (cpu.split.off_cpu_measured false), so on-CPU and off-CPU time
 *     cannot be told apart.
 * Frames a flight recorder evicted (run.window) are not damage.  The run's
 * outcome bounds the verdict (verdict.limits[], each a reason and the
 * factor applied to the confidence): a failed or killed workload x 0.5
 * (the verdict covers what ran before it ended), a CPU-class verdict on a
 * run too short for its statistics (run.too_short) x 0.5, a CPU-class
 * verdict judged on the whole run (not on iterations) of a run with
 * iterations whose start-up (run.startup_ns) is more than half of the wall
 * time x 0.5, a window x its share of the run (run.window_ns /
 * summary.wall_ns, at least 0.5: it covers the last window_ns only, and
 * says so; no class is excluded for it).
 *
 * The oom class (rule_oom.c: the workload died of out-of-memory) is
 * chosen before any other, without a runner-up and without the
 * outcome's limits: the death is what it describes.
 *
 * Ranking.  oom first; then findings[] is sorted by suggestion.estimated_saving_ns,
 * largest first; findings without an estimate follow, by severity
 * (critical, warning, info); the rule order breaks the remaining ties.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

static const struct rule *const rules[] = {
	&isc_rule_oom, &isc_rule_data_loss, &isc_rule_abrupt_end, &isc_rule_gpu_not_traced,
	/* job classes (a distributed job's section) */
	&isc_rule_straggler, &isc_rule_communication_bound,
	/* GPU classes */
	&isc_rule_gpu_compute_bound, &isc_rule_launch_bound, &isc_rule_cpu_bound, &isc_rule_transfer_bound, &isc_rule_sync_bound,
	&isc_rule_thermal_throttled, &isc_rule_gpu_gaps, &isc_rule_gpu_low_util, &isc_rule_gpu_memory_high,
	/* CPU classes */
	&isc_rule_python_bound, &isc_rule_op_compute_bound, &isc_rule_thread_contention, &isc_rule_host_memory_bound, &isc_rule_io_wait,
	&isc_rule_lock_wait, &isc_rule_gil_contention,
	/* findings without a class of their own */
	&isc_rule_rss_growth, &isc_rule_memory_leak, &isc_rule_memory_churn, &isc_rule_numa_remote, &isc_rule_dataloader, &isc_rule_tail_latency,
	&isc_rule_gpu_memory_peak_site, &isc_rule_gpu_memory_leak, &isc_rule_gpu_memory_headroom,
	&isc_rule_gpu_memory_fragmentation,
};

/* ---- GPU findings already made ------------------------------------------ */
const char *isc_rgpu_idle_covered(const struct rule_out *o)
{
	static const char *const causes[] = { "cpu_bound", "sync_bound", "launch_bound" };
	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (isc_fnd_find(o, causes[i]))
			return causes[i];
	return NULL;
}

/* ---- building ------------------------------------------------------------ */
static cJSON *chk(struct rule_out *o, cJSON *x)
{
	if (!x)
		o->oom = true;
	return x;
}

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

cJSON *isc_fnd_new(struct rule_out *o, const char *id, const char *severity, double confidence, const char *fmt, ...)
{
	char title[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(title, sizeof(title), fmt, ap);
	va_end(ap);
	if (!(confidence >= 0))
		confidence = 0;
	cJSON *f = chk(o, cJSON_CreateObject());
	if (!f)
		return NULL;
	cJSON *ev = cJSON_AddObjectToObject(f, "evidence");
	if (!cJSON_AddStringToObject(f, "id", id) || !cJSON_AddStringToObject(f, "title", title) ||
	    !cJSON_AddStringToObject(f, "severity", severity) ||
	    !cJSON_AddNumberToObject(f, "confidence", round_to(confidence > 1 ? 1 : confidence, 0.01)) || !ev ||
	    !cJSON_AddObjectToObject(ev, "metrics") || !cJSON_AddArrayToObject(ev, "time_ranges") ||
	    !cJSON_AddArrayToObject(ev, "top")) {
		cJSON_Delete(f);
		o->oom = true;
		return NULL;
	}
	cJSON_AddItemToArray(o->arr, f);
	return f;
}

static cJSON *ev_part(cJSON *f, const char *k)
{
	return f ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "evidence"), k) : NULL;
}

void isc_fnd_metric(struct rule_out *o, cJSON *f, const char *key, double v)
{
	cJSON *m = ev_part(f, "metrics");
	if (m && isfinite(v))
		chk(o, cJSON_AddNumberToObject(m, key, round_to(v, fabs(v) >= 100 ? 1 : 0.01)));
}

void isc_fnd_range(struct rule_out *o, cJSON *f, double start_ns, double end_ns, const char *label)
{
	cJSON *a = ev_part(f, "time_ranges"), *r;
	if (!a || !isfinite(start_ns) || !isfinite(end_ns) || !(r = chk(o, cJSON_CreateObject())))
		return;
	cJSON_AddItemToArray(a, r);
	chk(o, cJSON_AddNumberToObject(r, "start_ns", start_ns));
	chk(o, cJSON_AddNumberToObject(r, "end_ns", end_ns));
	chk(o, cJSON_AddStringToObject(r, "label", label));
}

cJSON *isc_fnd_top(struct rule_out *o, cJSON *f, const cJSON *src, const char *name, const char *kind,
	       double value_ns, double pct)
{
	cJSON *a = ev_part(f, "top"), *t;
	if (!a || !(t = chk(o, cJSON_CreateObject())))
		return NULL;
	cJSON_AddItemToArray(a, t);
	chk(o, cJSON_AddStringToObject(t, "name", isc_doc_str(src, "name", name ? name : "?")));
	const char *file = isc_doc_str(src, "file", "");
	if (*file) {
		chk(o, cJSON_AddStringToObject(t, "file", file));
		if (isc_doc_num(src, "line", 0) > 0)
			chk(o, cJSON_AddNumberToObject(t, "line", isc_doc_num(src, "line", 0)));
	}
	chk(o, cJSON_AddStringToObject(t, "kind", kind));
	if (value_ns >= 0 && isfinite(value_ns))
		chk(o, cJSON_AddNumberToObject(t, "value_ns", round(value_ns)));
	if (pct >= 0 && isfinite(pct))
		chk(o, cJSON_AddNumberToObject(t, "pct", round_to(pct, 0.1)));
	return t;
}

void isc_fnd_bytes(struct rule_out *o, cJSON *top, double bytes)
{
	if (top && bytes >= 0 && isfinite(bytes))
		chk(o, cJSON_AddNumberToObject(top, "value_bytes", round(bytes)));
}

void isc_fnd_detail(struct rule_out *o, cJSON *top, const char *fmt, ...)
{
	char s[1024];
	va_list ap;
	if (!top)
		return;
	va_start(ap, fmt);
	vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	chk(o, cJSON_AddStringToObject(top, "detail", s));
}

void isc_fnd_suggest(const struct rule_ctx *c, struct rule_out *o, cJSON *f, double saving_ns, const char *action,
		 const char *estimate, const char *fmt, ...)
{
	char why[1024];
	va_list ap;
	cJSON *s;
	if (!f || !(s = chk(o, cJSON_AddObjectToObject(f, "suggestion"))))
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	chk(o, cJSON_AddStringToObject(s, "action", action));
	chk(o, cJSON_AddStringToObject(s, "rationale", why));
	chk(o, cJSON_AddStringToObject(s, "estimate", estimate ? estimate : "no what-if can be computed from this run"));
	if (saving_ns >= 0 && isfinite(saving_ns)) {
		if (c->wall_ns > 0 && saving_ns > c->wall_ns)
			saving_ns = c->wall_ns;
		chk(o, cJSON_AddNumberToObject(s, "estimated_saving_ns", round(saving_ns)));
		if (c->wall_ns > 0)
			chk(o, cJSON_AddNumberToObject(s, "estimated_saving_pct", round_to(isc_rpct(saving_ns, c->wall_ns), 0.1)));
		else
			chk(o, cJSON_AddNullToObject(s, "estimated_saving_pct"));
	} else {
		chk(o, cJSON_AddNullToObject(s, "estimated_saving_ns"));
		chk(o, cJSON_AddNullToObject(s, "estimated_saving_pct"));
	}
}

void isc_fnd_saving_bytes(struct rule_out *o, cJSON *f, double bytes)
{
	cJSON *s = f ? cJSON_GetObjectItemCaseSensitive(f, "suggestion") : NULL;
	if (s && bytes >= 0 && isfinite(bytes))
		chk(o, cJSON_AddNumberToObject(s, "estimated_saving_bytes", round(bytes)));
}

const cJSON *isc_fnd_find(const struct rule_out *o, const char *id)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, o->arr)
		if (!strcmp(isc_doc_str(f, "id", ""), id))
			return f;
	return NULL;
}

void isc_fnd_candidate(struct rule_out *o, cJSON *f, const char *cls, double explained_pct, double quality)
{
	if (!f || o->ncand >= RULE_MAX_CANDIDATES || !isfinite(explained_pct))
		return;
	o->cand[o->ncand++] = (struct rule_cand){ cls, explained_pct, quality, f };
}

bool isc_ruser_code(const cJSON *fn)
{
	const char *file = isc_doc_str(fn, "file", "");
	const char *lib = strstr(file, "/lib/python");
	if (!*file || *file == '<' || strstr(file, "site-packages/") || strstr(file, "dist-packages/") ||
	    strstr(file, "/iscope-record/python/") || strstr(file, "/inferscope/"))
		return false;
	return !lib; /* the standard library lives in .../lib/pythonX.Y/ */
}

/* ---- the engine ---------------------------------------------------------- */
static double quality(const cJSON *doc)
{
	double events = isc_doc_num(doc, "summary.events", 0), dropped = isc_doc_num(doc, "summary.dropped_events", 0);
	double q = 1;
	if (dropped > 0)
		q *= 1 - dropped / (events + dropped);
	bool window = cJSON_IsTrue(isc_doc_get(doc, "run.window"));
	if ((!window && isc_doc_num(doc, "summary.lost_frames", 0) > 0) || cJSON_IsTrue(isc_doc_get(doc, "summary.damaged")))
		q *= 0.9;
	if (cJSON_IsTrue(isc_doc_get(doc, "summary.abrupt")))
		q *= 0.9;
	if (isc_rgpu_trace_failed(doc, NULL))
		q *= 0.5;
	return q;
}

static void gpu_facts(struct rule_ctx *c)
{
	const cJSON *st;
	double kw = 0, other = 0, most = -1;
	if (!c->dev)
		return;
	c->g.span = c->gpu_span_ns;
	c->g.idle = isc_doc_num(c->dev, "temporal_breakdown.idle_ns", 0);
	c->g.busy = c->g.span > c->g.idle ? c->g.span - c->g.idle : 0;
	/* steady-state iterations longer than the GPU span: the GPU had nothing
	 * to do before its first op or after its last, waiting for the host */
	double steps = isc_doc_num(c->doc, "iterations.samples", 0) * isc_doc_num(c->doc, "iterations.latency_ns.mean", 0);
	double outside = steps > c->g.span ? steps - c->g.span : 0;
	c->g.span += outside;
	c->g.idle += outside;
	c->g.compute = isc_doc_num(c->dev, "temporal_breakdown.compute_ns", 0);
	cJSON_ArrayForEach(st, isc_doc_arr(c->dev, "streams")) {
		c->g.launch_gaps += isc_doc_num(st, "idle_breakdown.host_wait_launch_ns", 0);
		kw += isc_doc_num(st, "idle_breakdown.kernel_wait_ns", 0);
		other += isc_doc_num(st, "idle_breakdown.other_ns", 0);
		if (isc_doc_num(st, "ops", 0) > most) {
			most = isc_doc_num(st, "ops", 0);
			c->g.queue_mean = isc_doc_num(st, "queue_length.mean", 0);
		}
	}
	/* stream gaps overlap each other and miss idle time between streams'
	 * activity; device idle that no stream had work queued for is the host's */
	c->g.other_wait = other < c->g.idle ? other : c->g.idle;
	kw = kw < c->g.idle - c->g.other_wait ? kw : c->g.idle - c->g.other_wait;
	c->g.host_wait = c->g.idle - c->g.other_wait - kw; /* outside included */
	c->g.launch_api = isc_doc_num(c->doc, "gpu.launch.api_total_ns", -1);
	/* synchronising calls and blocking copies, each call once */
	if (!isc_doc_have(c->doc, "gpu.sync.call_sites_total_ns", &c->g.sync_api))
		c->g.sync_api = isc_doc_num(c->doc, "gpu.sync.api_total_ns", 0);
}

/* Whether section k's in_iterations (cpu, gpu) is there and holds the work: the rules judge it. */
static bool judge_iterations(const cJSON *doc, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, k), "in_iterations");
	return cJSON_IsObject(it) && isc_doc_num(it, "share_pct", 0) >= ISC_ITER_SHARE_MIN_PCT;
}

/*
 * cpu as the CPU rules see it when the run has iterations: cpu's members
 * replaced by those of cpu.in_iterations (split, blocked_ns,
 * state_samples, runnable threads, top_op_callers, off_cpu_top,
 * off_cpu_reasons, system_ns) and cpu.top_functions by
 * cpu.top_functions_in_scopes, into vc; false out of memory.
 */
static bool cpu_view(const cJSON *cpu, cJSON *vc)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(cpu, "in_iterations"), *ch;
	bool ok = true;
	for (ch = cpu->child; ok && ch; ch = ch->next) {
		if (!strcmp(ch->string, "in_iterations") || cJSON_GetObjectItemCaseSensitive(it, ch->string))
			continue;
		const cJSON *src = ch;
		if (!strcmp(ch->string, "top_functions"))
			src = cJSON_GetObjectItemCaseSensitive(cpu, "top_functions_in_scopes");
		if (src)
			ok = cJSON_AddItemReferenceToObject(vc, ch->string, (cJSON *)src);
	}
	for (ch = it->child; ok && ch; ch = ch->next)
		if (strcmp(ch->string, "scope") && strcmp(ch->string, "rule") && strcmp(ch->string, "share_pct"))
			ok = cJSON_AddItemReferenceToObject(vc, ch->string, (cJSON *)ch);
	return ok;
}

/* References to src's members that dst has not, into dst; false out of memory. */
static bool add_missing(cJSON *dst, const cJSON *src)
{
	const cJSON *ch;
	for (ch = src ? src->child : NULL; ch; ch = ch->next)
		if (!cJSON_GetObjectItemCaseSensitive(dst, ch->string) &&
		    !cJSON_AddItemReferenceToObject(dst, ch->string, (cJSON *)ch))
			return false;
	return true;
}

/*
 * gpu as the GPU rules see it inside the steady iterations: the members
 * gpu.in_iterations has (devices, kernels, launch, memcpy, sync, gaps,
 * nvml) in place of the whole run's, each device merged with the whole
 * run's entry of the same id for what the iterations do not measure (its
 * memory); the rest (ops, mode, rank...) the run's.  Into vg; false out of
 * memory.
 */
static bool gpu_view(const cJSON *gpu, cJSON *vg)
{
	static const char *const own[] = { "scope", "rule", "iterations", "window_ns", "share_pct", "ops" };
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(gpu, "in_iterations"), *ch, *d;
	bool ok = true;
	for (ch = it->child; ok && ch; ch = ch->next) {
		bool skip = false;
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			skip |= !strcmp(ch->string, own[i]);
		if (skip)
			continue;
		if (strcmp(ch->string, "devices")) {
			ok = cJSON_AddItemReferenceToObject(vg, ch->string, (cJSON *)ch);
			continue;
		}
		cJSON *ds = cJSON_CreateArray();
		ok = ds && cJSON_AddItemToObject(vg, "devices", ds);
		if (!ok)
			cJSON_Delete(ds);
		cJSON_ArrayForEach(d, ch) {
			const cJSON *whole = NULL, *w;
			cJSON *x = cJSON_CreateObject();
			if (!ok || !x || !cJSON_AddItemToArray(ds, x)) {
				cJSON_Delete(x);
				ok = false;
				break;
			}
			cJSON_ArrayForEach(w, isc_doc_arr(gpu, "devices"))
				if (isc_doc_num(w, "id", -1) == isc_doc_num(d, "id", -2))
					whole = w;
			ok = add_missing(x, d) && add_missing(x, whole);
		}
	}
	for (ch = gpu->child; ok && ch; ch = ch->next)
		if (strcmp(ch->string, "in_iterations") && !cJSON_GetObjectItemCaseSensitive(vg, ch->string))
			ok = cJSON_AddItemReferenceToObject(vg, ch->string, (cJSON *)ch);
	return ok;
}

/*
 * The document as the rules see it when the run has iterations: every
 * section a reference to doc's, but cpu's (cpu_it) and gpu's (gpu_it)
 * members replaced by those of their in_iterations (cpu_view, gpu_view).
 * NULL when neither applies (fewer than 2 steady-state iterations, or the
 * iterations hold less than ISC_ITER_SHARE_MIN_PCT % of the work from the
 * first iteration on: in_iterations.share_pct, the work is mostly
 * elsewhere, threads or code outside any scope, and the iterations do not
 * stand for it), or out of memory.  Freed with cJSON_Delete (references
 * only: doc is left alone).
 */
static cJSON *iteration_view(const cJSON *doc, bool cpu_it, bool gpu_it)
{
	const cJSON *ch;
	if (!cpu_it && !gpu_it)
		return NULL;
	cJSON *v = cJSON_CreateObject();
	bool ok = v != NULL;
	for (ch = v ? doc->child : NULL; ok && ch; ch = ch->next) {
		bool c = cpu_it && !strcmp(ch->string, "cpu"), g = gpu_it && !strcmp(ch->string, "gpu");
		if (!c && !g) {
			ok = cJSON_AddItemReferenceToObject(v, ch->string, (cJSON *)ch);
			continue;
		}
		cJSON *x = cJSON_CreateObject();
		ok = x && cJSON_AddItemToObject(v, ch->string, x);
		if (!ok)
			cJSON_Delete(x);
		else
			ok = c ? cpu_view(ch, x) : gpu_view(ch, x);
	}
	if (!ok) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* The findings of the CPU verdict classes, which read the CPU sections. */
static bool cpu_class_finding(const char *id)
{
	static const char *const ids[] = { "python_bound", "op_compute_bound", "thread_contention", "io_wait",
					   "lock_wait", "host_memory_bound", "gil_contention" };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (!strcmp(id, ids[i]))
			return true;
	return false;
}

/* The findings of the GPU verdict classes, gpu_gaps and gpu_low_util, which read gpu's time breakdown (or window). */
static bool gpu_class_finding(const char *id)
{
	return isc_verdict_class_is_gpu(id) || !strcmp(id, "gpu_gaps") || !strcmp(id, "gpu_low_util");
}

/*
 * finding.judged_on of the CPU class findings (iterations: on cpu's view)
 * and, in a run with GPU operations, of the GPU class findings (gpu_it: on
 * gpu's view): "iterations" (and the title begins "Inside the
 * iterations:") or "run".
 */
static void mark_judged(struct rule_out *o, bool iterations, bool gpu, bool gpu_it)
{
	cJSON *f;
	cJSON_ArrayForEach(f, o->arr) {
		const char *id = isc_doc_str(f, "id", "");
		bool it;
		if (cpu_class_finding(id))
			it = iterations;
		else if (gpu && gpu_class_finding(id))
			it = gpu_it;
		else
			continue;
		chk(o, cJSON_AddStringToObject(f, "judged_on", it ? "iterations" : "run"));
		cJSON *t = cJSON_GetObjectItemCaseSensitive(f, "title");
		if (!it || !cJSON_IsString(t))
			continue;
		char buf[1200];
		snprintf(buf, sizeof(buf), "Inside the iterations: %s", t->valuestring);
		if (!cJSON_SetValuestring(t, buf)) {
			o->oom = true;
			return;
		}
	}
}

static void context(const cJSON *doc, struct rule_ctx *c)
{
	const cJSON *d;
	*c = (struct rule_ctx){ .doc = doc };
	c->wall_ns = isc_doc_num(doc, "summary.wall_ns", 0);
	c->ncpu = isc_doc_num(doc, "environment.ncpu", 0);
	c->gpu = isc_doc_num(doc, "gpu.ops", 0) > 0;
	c->quality = quality(doc);
	double busy = -1;
	cJSON_ArrayForEach(d, isc_doc_arr(doc, "gpu.devices")) {
		/* inside the iterations every device's span is the windows': then the busiest */
		double span = isc_doc_num(d, "temporal_breakdown.span_ns", 0), b = isc_doc_num(d, "busy_ns", 0);
		if (span > c->gpu_span_ns || (span == c->gpu_span_ns && span > 0 && b > busy)) {
			c->gpu_span_ns = span;
			c->dev = d;
			busy = b;
		}
	}
	gpu_facts(c);
	isc_gpu_split(c, &c->split);
}

static int sev_rank(const cJSON *f)
{
	const char *s = isc_doc_str(f, "severity", "");
	return !strcmp(s, "critical") ? 0 : !strcmp(s, "warning") ? 1 : 2;
}

struct ranked {
	cJSON *f;
	size_t idx;
};

static int by_saving(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;
	double sa, sb;
	bool ha = isc_doc_have(a->f, "suggestion.estimated_saving_ns", &sa);
	bool hb = isc_doc_have(b->f, "suggestion.estimated_saving_ns", &sb);
	bool oa = !strcmp(isc_doc_str(a->f, "id", ""), "oom"), ob = !strcmp(isc_doc_str(b->f, "id", ""), "oom");
	if (oa != ob) /* the death comes first */
		return oa ? -1 : 1;
	if (ha != hb)
		return ha ? -1 : 1;
	if (ha && sa != sb)
		return sa > sb ? -1 : 1;
	if (sev_rank(a->f) != sev_rank(b->f))
		return sev_rank(a->f) - sev_rank(b->f);
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int rank(cJSON *arr)
{
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	if (n < 2)
		return 0;
	struct ranked *r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	while (arr->child) {
		r[i].idx = i;
		r[i++].f = cJSON_DetachItemViaPointer(arr, arr->child);
	}
	qsort(r, n, sizeof(*r), by_saving);
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, r[i].f);
	free(r);
	return 0;
}


/*
 * Is the measurement that decides cls missing?  Then *what and *how say
 * what and how to get it (what may be built in buf).
 */
static bool evidence_missing(const cJSON *doc, const char *cls, char *buf, size_t cap, const char **what,
			     const char **how)
{
	static const char *const need_states[] = { "op_compute_bound", "thread_contention", "host_memory_bound",
						   "io_wait", "lock_wait", "gil_contention" };
	double ev = isc_doc_num(doc, "summary.events", 0), dr = isc_doc_num(doc, "summary.dropped_events", 0);
	if (dr > 0 && dr >= 0.2 * (ev + dr)) {
		snprintf(buf, cap, "most of the events: %.0f %% were dropped (full buffers)", 100 * dr / (ev + dr));
		*what = buf;
		*how = "give the recorder more buffer (--trace-size=1G) or record a shorter run";
		return true;
	}
	bool unmeasured = cJSON_IsFalse(isc_doc_get(doc, "cpu.split.off_cpu_measured"));
	/* python_bound: the interpreter's own time is on-CPU by construction (it runs
	 * bytecode), its C builtins' time is not known to be without samples */
	if (unmeasured && !strcmp(cls, "python_bound") && isc_doc_num(doc, "cpu.split.python_pct", 100) < 50) {
		*what = "thread samples inside traced calls: most of the Python-side time is in C calls, on-CPU or "
			"waiting, which only samples tell apart";
		*how = "record with the sampler on (--sample-hz=20, the default) and long enough for samples (50 ms)";
		return true;
	}
	for (size_t i = 0; i < sizeof(need_states) / sizeof(need_states[0]); i++) {
		if (strcmp(cls, need_states[i]) || !unmeasured)
			continue;
		*what = "thread samples inside traced calls: on-CPU and off-CPU time could not be told apart";
		*how = "record with the sampler on (--sample-hz=20, the default) and long enough for samples (50 ms)";
		return true;
	}
	return false;
}

static void add_limit(cJSON *limits, const char *reason, double factor)
{
	cJSON *l = cJSON_CreateObject();
	if (l) {
		cJSON_AddStringToObject(l, "reason", reason);
		cJSON_AddNumberToObject(l, "factor", factor);
		cJSON_AddItemToArray(limits, l);
	}
}

/* The least factor a flight recording's window puts on the confidence (outcome_limits). */
#define WINDOW_FACTOR_MIN 0.5

/* verdict.limits[]: what bounds the verdict given the run's outcome and length; returns the factor. */
#define SAMPLES_FOR_FULL_CONFIDENCE 100.0 /* +-10 points on a share */

static double outcome_limits(const cJSON *doc, cJSON *limits, bool gpu, bool iterations)
{
	const char *outcome = isc_doc_str(doc, "run.outcome", "completed");
	char reason[512];
	double factor = 1;
	if (!strcmp(outcome, "failed")) {
		const cJSON *x = isc_doc_get(doc, "run.exception");
		if (cJSON_IsObject(x))
			snprintf(reason, sizeof(reason), "the run failed (%s: %s): the verdict covers only what ran before it",
				 isc_doc_str(x, "type", "?"), isc_doc_str(x, "message", ""));
		else
			snprintf(reason, sizeof(reason), "the run failed (exit status %.0f): the verdict covers only what ran",
				 isc_doc_num(doc, "run.exit_status", 1));
		factor = 0.5;
	} else if (!strcmp(outcome, "killed")) {
		snprintf(reason, sizeof(reason), "the workload was killed by signal %.0f: the verdict covers only what ran",
			 isc_doc_num(doc, "run.signal", 0));
		factor = 0.5;
	} else if (!strcmp(outcome, "truncated")) {
		snprintf(reason, sizeof(reason), "the recording was cut short: the verdict covers what was written");
	} else if (cJSON_IsTrue(isc_doc_get(doc, "run.window"))) {
		/* the window's share of the run (from its first record kept: the process records are never evicted) */
		double win = isc_doc_num(doc, "run.window_ns", 0), run = isc_doc_num(doc, "summary.wall_ns", 0);
		double share = run > 0 && win < run ? win / run : 1;
		snprintf(reason, sizeof(reason), "a flight recording: the verdict covers the last %.1f s of the run's "
			 "%.1f s (%.0f %%)", win / 1e9, (run > win ? run : win) / 1e9, 100 * share);
		factor = round_to(share < WINDOW_FACTOR_MIN ? WINDOW_FACTOR_MIN : share, 0.01);
	} else {
		*reason = '\0';
	}
	if (*reason)
		add_limit(limits, reason, factor);
	/* a CPU class judged on all traced time (iterations too few to judge them alone): when start-up
	 * outweighs the iterations, it is mostly about start-up */
	double startup = isc_doc_num(doc, "run.startup_ns", 0), wall = isc_doc_num(doc, "summary.wall_ns", 0);
	if (!gpu && !iterations && isc_doc_num(doc, "iterations.count", 0) > 0 && wall > 0 && startup > wall / 2) {
		snprintf(reason, sizeof(reason), "start-up before the first iteration is %.0f %% of the wall time: this "
			 "verdict is about the whole run, mostly start-up, not about the iterations", 100 * startup / wall);
		add_limit(limits, reason, 0.5);
		factor *= 0.5;
	}
	/*
	 * Stack samples (--python=sample) behind a CPU verdict: with n of them a
	 * share is known to about +-98/sqrt(n) points (95 %, at p = 1/2); fewer
	 * than SAMPLES_FOR_FULL_CONFIDENCE lower the confidence by n / that.
	 */
	double nsamp;
	if (!gpu && isc_doc_have(doc, "python.samples.samples", &nsamp) && nsamp < SAMPLES_FOR_FULL_CONFIDENCE) {
		double f = nsamp > 0 ? nsamp / SAMPLES_FOR_FULL_CONFIDENCE : 0;
		f = round_to(f < 0.1 ? 0.1 : f, 0.01);
		snprintf(reason, sizeof(reason), "only %.0f stack samples: each share is known to about +-%.0f points",
			 nsamp, nsamp > 0 ? 98 / sqrt(nsamp) : 100);
		add_limit(limits, reason, f);
		factor *= f;
	}
	/* the CPU classes rest on traced time and thread samples; the GPU classes on the GPU span */
	if (!gpu && cJSON_IsTrue(isc_doc_get(doc, "run.too_short"))) {
		snprintf(reason, sizeof(reason), "too short for the statistics used: %s",
			 isc_doc_str(doc, "run.too_short_reason", "?"));
		add_limit(limits, reason, 0.5);
		factor *= 0.5;
	}
	return factor;
}

static int set_verdict(cJSON *root, const struct rule_ctx *c, const struct rule_out *o)
{
	const struct rule_cand *w = NULL, *second = NULL;
	cJSON *missing = cJSON_CreateArray(), *limits = cJSON_CreateArray();
	char buf[256];
	if (!missing || !limits) {
		cJSON_Delete(missing);
		cJSON_Delete(limits);
		return -ENOMEM;
	}
	double factor = outcome_limits(c->doc, limits, c->gpu, c->iterations);
	bool job = false; /* a job class chosen: the rank's own classes are not its rivals */
	for (unsigned i = 0; i < o->ncand && !(w && !strcmp(w->cls, "oom")); i++) {
		const struct rule_cand *k = &o->cand[i];
		const char *what, *how;
		if (!strcmp(k->cls, "oom")) { /* the run ended there: first, alone */
			w = k;
			second = NULL;
			continue;
		}
		if (isc_verdict_class_is_job(k->cls)) { /* the job's, before the rank's */
			if (!job || k->explained_pct > w->explained_pct)
				w = k;
			job = true;
			second = NULL;
			continue;
		}
		if (job || isc_verdict_class_is_gpu(k->cls) != c->gpu)
			continue;
		if (evidence_missing(c->doc, k->cls, buf, sizeof(buf), &what, &how)) {
			cJSON *m = cJSON_CreateObject();
			if (m) {
				cJSON_AddStringToObject(m, "class", k->cls);
				cJSON_AddStringToObject(m, "what", what);
				cJSON_AddStringToObject(m, "how", how);
				cJSON_AddItemToArray(missing, m);
			}
			continue;
		}
		if (!w || k->explained_pct > w->explained_pct) {
			second = w;
			w = k;
		} else if (!second || k->explained_pct > second->explained_pct) {
			second = k;
		}
	}
	if (w && !strcmp(w->cls, "oom")) { /* the death is what the verdict describes: no limit */
		factor = 1;
		cJSON_Delete(limits);
		if (!(limits = cJSON_CreateArray())) {
			cJSON_Delete(missing);
			return -ENOMEM;
		}
	}
	cJSON *v = cJSON_CreateObject();
	if (!v)
		return -ENOMEM;
	if (w) {
		double s = w->explained_pct / 100, s2 = second ? second->explained_pct / 100 : 0;
		s = s < 0 ? 0 : s > 1 ? 1 : s;
		s2 = s2 < 0 ? 0 : s2 > s ? s : s2;
		double sep = s > 0 ? 1 - s2 / (2 * s) : 0.5, q = w->quality * sep;
		cJSON_AddStringToObject(v, "class", w->cls);
		cJSON_AddNumberToObject(v, "confidence", round_to(s * q * factor, 0.01));
		/* one confidence per finding everywhere: the backing finding says the verdict's */
		cJSON_ReplaceItemInObjectCaseSensitive(w->finding, "confidence",
						       cJSON_CreateNumber(round_to(s * q * factor, 0.01)));
		cJSON_AddStringToObject(v, "sentence", isc_doc_str(w->finding, "title", ""));
		cJSON_AddNumberToObject(v, "explained_pct", round_to(w->explained_pct > 100 ? 100 : w->explained_pct, 0.1));
		cJSON_AddNumberToObject(v, "evidence_quality", round_to(q, 0.01));
		cJSON_AddStringToObject(v, "finding", isc_doc_str(w->finding, "id", ""));
	} else if (cJSON_GetArraySize(missing)) {
		const cJSON *m0 = cJSON_GetArrayItem(missing, 0);
		char sentence[600];
		snprintf(sentence, sizeof(sentence), "No verdict: it needs %s. To get it, %s.", isc_doc_str(m0, "what", "?"),
			 isc_doc_str(m0, "how", "?"));
		cJSON_AddStringToObject(v, "class", "unknown");
		cJSON_AddNumberToObject(v, "confidence", 0);
		cJSON_AddStringToObject(v, "sentence", sentence);
		cJSON_AddNullToObject(v, "explained_pct");
		cJSON_AddNumberToObject(v, "evidence_quality", 0);
		cJSON_AddNullToObject(v, "finding");
	} else {
		/* say what was recorded: a run with traced time and no cause above the triggers is not an empty one */
		char sentence[600];
		double traced = isc_doc_num(c->doc, "cpu.split.traced_ns", 0);
		if (traced > 0)
			snprintf(sentence, sizeof(sentence),
				 "No cause explains 10 %% or more of the run: of %.1f ms traced, %.0f %% Python, %.0f %% "
				 "ops, %.0f %% off-CPU, none of it in one place a rule recognizes%s.",
				 traced / 1e6, isc_doc_num(c->doc, "cpu.split.python_pct", 0),
				 isc_doc_num(c->doc, "cpu.split.ops_pct", 0), isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0),
				 c->gpu ? "" : "; no GPU operations were recorded");
		else
			snprintf(sentence, sizeof(sentence), "No cause explains a measurable share of the run: no traced "
				 "function time%s were recorded.", c->gpu ? "" : " and no GPU operations");
		cJSON_AddStringToObject(v, "class", "unknown");
		cJSON_AddNumberToObject(v, "confidence", 0);
		cJSON_AddStringToObject(v, "sentence", sentence);
		cJSON_AddNullToObject(v, "explained_pct");
		cJSON_AddNumberToObject(v, "evidence_quality", 0);
		cJSON_AddNullToObject(v, "finding");
	}
	if (cJSON_GetArraySize(v) != 6) {
		cJSON_Delete(v);
		cJSON_Delete(missing);
		cJSON_Delete(limits);
		return -ENOMEM;
	}
	cJSON_AddItemToObject(v, "missing", missing);
	cJSON_AddItemToObject(v, "limits", limits);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "verdict");
	cJSON_AddItemToObject(root, "verdict", v);
	return 0;
}

/*
 * A saving is bounded by the share it acts on: a verdict candidate's
 * suggestion cannot save more than the time its class was measured to take
 * (explained_pct of the traced time for a CPU class, of the GPU span for a
 * GPU class).  A larger estimate is cut to it and its estimate says so.
 */
static void bound_savings(const struct rule_ctx *c, struct rule_out *o)
{
	for (unsigned i = 0; i < o->ncand; i++) {
		const struct rule_cand *k = &o->cand[i];
		cJSON *s = cJSON_GetObjectItemCaseSensitive(k->finding, "suggestion");
		double saving, base = isc_verdict_class_is_gpu(k->cls) ? c->g.span : isc_doc_num(c->doc, "cpu.split.traced_ns", 0);
		if (!s || isc_verdict_class_is_job(k->cls) || !isc_doc_have(s, "estimated_saving_ns", &saving) || base <= 0 ||
		    k->explained_pct < 0)
			continue;
		double cap = round(k->explained_pct / 100 * base);
		if (saving <= cap)
			continue;
		char est[1024];
		snprintf(est, sizeof(est), "%s; at most the %.0f %% it acts on, as measured", isc_doc_str(s, "estimate", ""),
			 k->explained_pct);
		cJSON_ReplaceItemInObjectCaseSensitive(s, "estimated_saving_ns", cJSON_CreateNumber(cap));
		if (c->wall_ns > 0)
			cJSON_ReplaceItemInObjectCaseSensitive(s, "estimated_saving_pct",
							       cJSON_CreateNumber(round_to(isc_rpct(cap, c->wall_ns), 0.1)));
		cJSON_ReplaceItemInObjectCaseSensitive(s, "estimate", cJSON_CreateString(est));
	}
}

int isc_findings_evaluate(cJSON *root)
{
	struct rule_ctx c;
	struct rule_out o = { .arr = cJSON_CreateArray() };
	int rc;
	if (!o.arr)
		return -ENOMEM;
	/* the CPU classes judge the iterations when there are some, and the GPU classes the GPU inside them */
	bool gpu = isc_doc_num(root, "gpu.ops", 0) > 0;
	bool cpu_it = judge_iterations(root, "cpu"), gpu_it = gpu && judge_iterations(root, "gpu");
	cJSON *view = iteration_view(root, cpu_it, gpu_it);
	context(view ? view : root, &c);
	c.iterations = view && cpu_it;
	c.gpu_iterations = view && gpu_it;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		rules[i]->eval(&c, &o);
	bound_savings(&c, &o);
	mark_judged(&o, c.iterations, c.gpu, c.gpu_iterations);
	if (o.oom || (rc = set_verdict(root, &c, &o)) || (rc = rank(o.arr))) {
		cJSON_Delete(o.arr);
		cJSON_Delete(view);
		return -ENOMEM;
	}
	cJSON_Delete(view);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "findings");
	cJSON_AddItemToObject(root, "findings", o.arr);
	return isc_rules_headline(root);
}
