/*
 * findings.c - verdict and findings from the measured sections of a
 * findings document.  Rules read only the document (isc_json_*), so the
 * rule engine of a later issue can replace this table without touching the
 * analysis pass.
 *
 * First-cut verdict (CPU only; GPU classes come with the CUDA agent):
 *   the largest of cpu.split.{python,ops,off_cpu}_pct decides
 *     python_pct  -> python_bound      ops_pct -> op_compute_bound
 *     off_cpu_pct -> thread_contention when the traced threads were switched
 *                    out involuntarily (preempted) more often than they
 *                    blocked, else io_wait
 *     no traced time -> unknown
 *   confidence = largest share / 100, x 0.8 when off-CPU time could not be
 *   measured (no CPU samples), x (1 - dropped events / events), rounded to
 *   0.01.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "isc_analyze.h"

static double num(const cJSON *root, const char *path, double def)
{
	double v;
	return isc_json_num(root, path, &v) ? v : def;
}

static const char *str(const cJSON *o, const char *path, const char *def)
{
	const char *s = isc_json_str(o, path);
	return s ? s : def;
}

/* "name (file:line)", "name (file)" or "name" into buf. */
static void where(char *buf, size_t cap, const cJSON *fn)
{
	const char *name = str(fn, "name", "?"), *file = str(fn, "file", "");
	double line = num(fn, "line", 0);
	if (*file && line > 0)
		snprintf(buf, cap, "%s (%s:%.0f)", name, file, line);
	else if (*file)
		snprintf(buf, cap, "%s (%s)", name, file);
	else
		snprintf(buf, cap, "%s", name);
}

static const cJSON *first_item(const cJSON *root, const char *path)
{
	const cJSON *arr = isc_json_get(root, path);
	return cJSON_IsArray(arr) ? cJSON_GetArrayItem(arr, 0) : NULL;
}

/* The top function of kind ("python", "op") or of any kind when kind is NULL. */
static const cJSON *top_fn(const cJSON *root, const char *kind)
{
	const cJSON *arr = isc_json_get(root, "cpu.top_functions"), *fn;
	if (!cJSON_IsArray(arr))
		return NULL;
	cJSON_ArrayForEach(fn, arr)
		if (!kind || !strcmp(str(fn, "kind", ""), kind))
			return fn;
	return NULL;
}

static int set_verdict(cJSON *root)
{
	double py = num(root, "cpu.split.python_pct", 0), ops = num(root, "cpu.split.ops_pct", 0);
	double off = num(root, "cpu.split.off_cpu_pct", 0), traced = num(root, "cpu.split.traced_ns", 0);
	double events = num(root, "summary.events", 0), dropped = num(root, "summary.dropped_events", 0);
	const cJSON *measured = isc_json_get(root, "cpu.split.off_cpu_measured");
	const char *cls = "unknown";
	double share = 0;
	char sentence[2048], fnw[600] = "";
	const cJSON *fn = top_fn(root, py >= ops && py >= off ? "python" : NULL);
	if (fn)
		where(fnw, sizeof(fnw), fn);
	if (traced <= 0 || !fn) {
		snprintf(sentence, sizeof(sentence), "No traced function time was recorded, so there is no CPU verdict.");
	} else if (py >= ops && py >= off) {
		cls = "python_bound";
		share = py;
		snprintf(sentence, sizeof(sentence),
			 "%.0f %% of traced CPU time is Python interpreter time; the hottest function is %s, %.0f %% self time.",
			 py, fnw, num(fn, "self_pct", 0));
	} else if (ops >= off) {
		const cJSON *op = top_fn(root, "op"), *caller = first_item(root, "cpu.top_op_callers");
		char opw[600] = "", cw[600] = "";
		cls = "op_compute_bound";
		share = ops;
		if (op)
			where(opw, sizeof(opw), op);
		if (caller)
			where(cw, sizeof(cw), caller);
		snprintf(sentence, sizeof(sentence), "%.0f %% of traced CPU time is in torch ops%s%s%s%s.", ops,
			 op ? "; the heaviest is " : "", opw, caller ? ", called mostly from " : "", cw);
	} else if (num(root, "cpu.split.involuntary_switches", 0) > num(root, "cpu.split.voluntary_switches", 0)) {
		double psi;
		char extra[64] = "";
		cls = "thread_contention";
		share = off;
		if (isc_json_num(root, "memory.pressure.cpu.some_avg10_max", &psi))
			snprintf(extra, sizeof(extra), ", CPU pressure up to %.0f %%", psi);
		snprintf(sentence, sizeof(sentence),
			 "%.0f %% of traced time the threads were runnable but not running (%.0f involuntary vs %.0f "
			 "voluntary context switches%s): the CPUs are oversubscribed; the hottest function is %s.",
			 off, num(root, "cpu.split.involuntary_switches", 0), num(root, "cpu.split.voluntary_switches", 0),
			 extra, fnw);
	} else {
		cls = "io_wait";
		share = off;
		snprintf(sentence, sizeof(sentence),
			 "%.0f %% of traced time the threads were off-CPU, blocked inside calls; the hottest function is %s.",
			 off, fnw);
	}
	double conf = share / 100;
	if (!cJSON_IsTrue(measured))
		conf *= 0.8;
	if (events > 0 && dropped > 0)
		conf *= 1 - (dropped > events ? 1 : dropped / events);
	cJSON *v = cJSON_CreateObject();
	if (!v || !cJSON_AddStringToObject(v, "class", cls) ||
	    !cJSON_AddNumberToObject(v, "confidence", round(conf * 100) / 100) ||
	    !cJSON_AddStringToObject(v, "sentence", sentence)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(root, "verdict");
	cJSON_AddItemToObject(root, "verdict", v);
	return 0;
}

/* Appends one finding; evidence is taken over (may be NULL). */
static int add_finding(cJSON *arr, const char *id, const char *severity, const char *title,
		       cJSON *evidence, const char *suggestion, double saving_pct)
{
	cJSON *f = cJSON_CreateObject();
	if (!f || !cJSON_AddStringToObject(f, "id", id) || !cJSON_AddStringToObject(f, "severity", severity) ||
	    !cJSON_AddStringToObject(f, "title", title) || !cJSON_AddStringToObject(f, "suggestion", suggestion) ||
	    !(saving_pct >= 0 ? cJSON_AddNumberToObject(f, "estimated_saving_pct", round(saving_pct * 10) / 10)
			      : cJSON_AddNullToObject(f, "estimated_saving_pct"))) {
		cJSON_Delete(evidence);
		cJSON_Delete(f);
		return -ENOMEM;
	}
	cJSON_AddItemToObject(f, "evidence", evidence ? evidence : cJSON_CreateObject());
	cJSON_AddItemToArray(arr, f);
	return 0;
}

static cJSON *evidence2(const char *k1, double v1, const char *k2, double v2)
{
	cJSON *e = cJSON_CreateObject();
	if (e) {
		cJSON_AddNumberToObject(e, k1, v1);
		if (k2)
			cJSON_AddNumberToObject(e, k2, v2);
	}
	return e;
}

/* Events lost by the recorder or the merge, or damaged input. */
static int rule_data_loss(const cJSON *root, cJSON *out)
{
	double dr = num(root, "summary.dropped_events", 0);
	double lf = num(root, "summary.lost_frames", 0);
	bool damaged = cJSON_IsTrue(isc_json_get(root, "summary.damaged"));
	char title[256];
	if (dr <= 0 && lf <= 0 && !damaged)
		return 0;
	snprintf(title, sizeof(title), "%.0f events dropped, %.0f frames lost%s: the numbers below undercount them",
		 dr, lf, damaged ? ", input damaged" : "");
	return add_finding(out, "data_loss", "warning", title, evidence2("dropped_events", dr, "lost_frames", lf),
			   "Give the recorder more buffer (INFERSCOPE_TRACE_SIZE_MB) or record a shorter run.", -1);
}

/*
 * The recording did not end cleanly: the workload was killed by a signal
 * (summary.end_reason "signaled"), or the trace was cut short ("cut": the
 * recorder was killed, its output lost, or the file was truncated).
 */
static int rule_abrupt(const cJSON *root, cJSON *out)
{
	char title[256];
	double sig = 0;
	if (!cJSON_IsTrue(isc_json_get(root, "summary.abrupt")))
		return 0;
	const char *why = isc_json_str(root, "summary.end_reason");
	if (why && !strcmp(why, "signaled") && isc_json_num(root, "summary.exit_signal", &sig))
		snprintf(title, sizeof(title),
			 "The workload was killed by signal %.0f%s; spans still open were closed at its exit", sig,
			 sig == 9 ? " (SIGKILL)" : sig == 15 ? " (SIGTERM)" : sig == 2 ? " (SIGINT)" : "");
	else
		snprintf(title, sizeof(title), "The recording was cut short (no end record); spans still open were "
					       "closed at the last event");
	return add_finding(out, "abrupt_end", "warning", title,
			   evidence2("unclosed_spans", num(root, "summary.unclosed_spans", 0), "merge_closed_spans",
				     num(root, "summary.merge_closed_spans", 0)),
			   "Let the workload exit normally to get complete spans; events of the last moments "
			   "before the end may be missing.", -1);
}

/* One Python function holds a large share of traced time in the interpreter. */
static int rule_hot_python(const cJSON *root, cJSON *out)
{
	const cJSON *fn = top_fn(root, "python");
	double p = num(fn, "self_pct", 0);
	char title[800], w[600];
	if (!fn || p < 20)
		return 0;
	where(w, sizeof(w), fn);
	snprintf(title, sizeof(title), "%s spends %.0f %% of traced time in the Python interpreter", w, p);
	cJSON *e = evidence2("self_ns", num(fn, "self_ns", 0), "calls", num(fn, "calls", 0));
	if (e)
		cJSON_AddStringToObject(e, "function", str(fn, "name", "?"));
	return add_finding(out, "hot_python_function", "warning", title, e,
			   "Replace the per-element Python work in this function with batched torch "
			   "operations, or move it out of the per-request path.",
			   p);
}

/*
 * RSS keeps growing in the steady state: measured after the warm-up
 * iterations when there are iterations (imports and model loading grow RSS
 * legitimately), else after the first 10 % of the run, and then only when
 * that leaves at least MIN_STEADY_NS and MIN_STEADY_SAMPLES (a short run is
 * all start-up: torch's import alone adds hundreds of MiB in a second).
 * At least 1 MiB/s, and the growth over that span at least 10 % of the peak.
 */
#define MIN_STEADY_NS 5e9
#define MIN_STEADY_SAMPLES 20
static int rule_rss_growth(const cJSON *root, cJSON *out)
{
	double slope, span, peak = num(root, "memory.rss_peak_bytes", 0);
	char title[256];
	if (isc_json_num(root, "memory.rss_growth_after_warmup_bytes_per_s", &slope) &&
	    isc_json_num(root, "memory.after_warmup_span_ns", &span)) {
		/* steady state measured */
	} else if (num(root, "iterations.count", 0) < 2) {
		slope = num(root, "memory.rss_growth_bytes_per_s", 0);
		span = 0.9 * num(root, "summary.wall_ns", 0);
		if (span < MIN_STEADY_NS || num(root, "memory.rss_growth_samples", 0) < MIN_STEADY_SAMPLES)
			return 0;
	} else {
		return 0; /* iterations but no samples after warm-up: no basis */
	}
	if (slope < 1048576 || peak <= 0 || slope * span / 1e9 < 0.1 * peak)
		return 0;
	snprintf(title, sizeof(title), "Resident memory grows by %.1f MiB/s after warm-up", slope / 1048576);
	return add_finding(out, "rss_growth", "warning", title,
			   evidence2("rss_growth_bytes_per_s", slope, "rss_peak_bytes", peak),
			   "Look for tensors kept across iterations (lists of outputs, caches) and run "
			   "inference under torch.inference_mode().",
			   -1);
}

/* Heavy tail: p99 well above p50. */
static int rule_tail_latency(const cJSON *root, cJSON *out)
{
	double p50, p99;
	char title[256];
	if (!isc_json_num(root, "iterations.latency_ns.p50", &p50) ||
	    !isc_json_num(root, "iterations.latency_ns.p99", &p99) || p50 <= 0 || p99 < 2 * p50 ||
	    num(root, "iterations.samples", 0) < 20)
		return 0;
	snprintf(title, sizeof(title), "Iteration p99 latency is %.1fx the median", p99 / p50);
	return add_finding(out, "tail_latency", "info", title, evidence2("p50_ns", p50, "p99_ns", p99),
			   "Check for garbage-collection pauses, input-size outliers and thread "
			   "oversubscription (torch.set_num_threads).",
			   -1);
}

static int (*const rules[])(const cJSON *, cJSON *) = {
	rule_data_loss, rule_abrupt, rule_hot_python, rule_rss_growth, rule_tail_latency,
};

int isc_findings_evaluate(cJSON *root)
{
	int rc;
	if ((rc = set_verdict(root)))
		return rc;
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if ((rc = rules[i](root, arr))) {
			cJSON_Delete(arr);
			return rc;
		}
	cJSON_DeleteItemFromObjectCaseSensitive(root, "findings");
	cJSON_AddItemToObject(root, "findings", arr);
	return 0;
}
