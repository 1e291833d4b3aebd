/*
 * report_term.c - the short summary iscope-report prints on a terminal:
 *
 *   InferScope: launch_bound (confidence 0.82, explains 73 % of the GPU span)
 *     <verdict sentence>
 *     Wall 12.00 s · 40 iterations of step: p50 251.0 ms, p99 412.0 ms
 *     CPU: Python 43 %, torch ops 31 %, off-CPU 26 % · GPU 0 idle 40.0 % · RSS peak 1.2 GiB
 *   ("CPU in iterations:" and cpu.in_iterations' split when the verdict was judged on them)
 *
 *   Top findings (3 of 5):
 *     1. critical  <title>  saves ~12.3 ms (4.5 %)
 *
 *   Full report: iscope-report -o report.md FILE  (or -o report.html)
 *
 * Strings from the document are stripped of control characters (C0, DEL
 * and C1), so a hostile name cannot send escape sequences to the terminal.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "report.h"

#define TITLE_MAX 110

struct term {
	struct isc_rep r;
	bool color;
};

/* SGR sequence when colouring, else nothing: "1" bold, "31" red, "0" reset... */
static void sgr(struct term *t, const char *code)
{
	if (t->color)
		isc_rep_putf(&t->r, "\033[%sm", code);
}

/* s[0, n) without control characters, cut after about max bytes at a UTF-8 boundary (0: no limit). */
static void text_n(struct term *t, const char *s, size_t n, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n; i++) {
		if (max && i >= max && (p[i] & 0xc0) != 0x80) {
			isc_rep_put(&t->r, "…");
			return;
		}
		if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
			i++; /* U+0080..U+009F: C1 controls, CSI among them */
			continue;
		}
		if (p[i] >= 0x20 && p[i] != 0x7f)
			isc_rep_putn(&t->r, (const char *)p + i, 1);
		else if (p[i] == '\t' || p[i] == '\n')
			isc_rep_put(&t->r, " ");
	}
}

static void text(struct term *t, const char *s, size_t max)
{
	text_n(t, s ? s : "", s ? strlen(s) : 0, max);
}

static double num(const cJSON *o, const char *path)
{
	double v;
	return isc_doc_have(o, path, &v) && isfinite(v) && fabs(v) < ISC_REP_FIXED_MAX ? v : NAN;
}

/* The input name as a shell word: as it is when plain, else in single quotes. */
static void shell_word(struct term *t, const char *s)
{
	if (s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-,:@=%")] == '\0' && *s) {
		text(t, s, 0);
		return;
	}
	isc_rep_put(&t->r, "'");
	for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
		text_n(t, s, (size_t)(q - s), 0);
		isc_rep_put(&t->r, "'\\''");
	}
	text(t, s, 0);
	isc_rep_put(&t->r, "'");
}

static void verdict(struct term *t, const cJSON *root)
{
	double c = num(root, "verdict.confidence"), e = num(root, "verdict.explained_pct");
	const char *sentence = isc_doc_str(root, "verdict.sentence", NULL);
	const char *outcome = isc_doc_str(root, "run.outcome", NULL);
	const cJSON *x = isc_doc_get(root, "run.exception");
	if (outcome && strcmp(outcome, "completed")) { /* what the run was, before why it was slow */
		isc_rep_put(&t->r, "InferScope: the run ");
		sgr(t, "1;31");
		text(t, !strcmp(outcome, "window") ? "is a flight-recorder window" : !strcmp(outcome, "killed") ? "was killed"
			: !strcmp(outcome, "truncated") ? "was cut short" : "FAILED", 60);
		sgr(t, "0");
		if (cJSON_IsObject(x) && !strcmp(outcome, "failed")) {
			isc_rep_put(&t->r, ": ");
			text(t, isc_doc_str(x, "type", NULL) ? isc_doc_str(x, "type", NULL) : "?", 60);
			isc_rep_put(&t->r, ": ");
			text(t, isc_doc_str(x, "message", NULL) ? isc_doc_str(x, "message", NULL) : "", 200);
		}
		isc_rep_put(&t->r, "\n");
	}
	isc_rep_put(&t->r, "InferScope: ");
	sgr(t, "1;36");
	text(t, isc_doc_str(root, "verdict.class", NULL) ? isc_doc_str(root, "verdict.class", NULL) : "no verdict", 60);
	sgr(t, "0");
	if (!isnan(c))
		isc_rep_putf(&t->r, " (confidence %.2f%s", c, isnan(e) ? ")" : ", ");
	else if (!isnan(e))
		isc_rep_put(&t->r, " (");
	if (!isnan(e)) {
		const char *cls = isc_doc_str(root, "verdict.class", NULL);
		isc_rep_putf(&t->r, "explains %.0f %% of %s)", e,
			     isc_verdict_class_is_gpu(cls) ? "the GPU span"
			     : isc_verdict_class_is_job(cls) ? "the job's time" : "traced time");
	}
	isc_rep_put(&t->r, "\n");
	if (sentence) {
		isc_rep_put(&t->r, "  ");
		text(t, sentence, 400);
		isc_rep_put(&t->r, "\n");
	}
}

/*
 * One line when the findings carry a comparison or a history:
 *   Compared with 3 baselines: REGRESSED, step median +10.2 % (95 % interval +6.1 … +14.0 %, p = 3e-16); first: time.sleep +10.0 ms/iter
 */
static void comparison(struct term *t, const cJSON *root)
{
	const cJSON *cmp = isc_doc_get(root, "comparison"), *h = isc_doc_get(root, "history");
	if (cJSON_IsObject(cmp)) {
		const cJSON *sc = cJSON_GetArrayItem(isc_doc_get(cmp, "scopes"), 0);
		const cJSON *c0 = cJSON_GetArrayItem(isc_doc_get(cmp, "contributors"), 0);
		const char *v = isc_doc_str(cmp, "verdict", NULL);
		double k = num(cmp, "baselines"), chg = num(sc, "change_pct"), lo = num(sc, "ci_low_pct"),
		       hi = num(sc, "ci_high_pct"), p = num(sc, "p_value"), d = num(c0, "delta_ns_per_iter");
		char buf[64];
		isc_rep_putf(&t->r, "Compared with %.0f baseline%s: ", isnan(k) ? 0 : k, k == 1 ? "" : "s");
		sgr(t, v && !strcmp(v, "regressed") ? "1;31" : v && !strcmp(v, "improved") ? "1;32" : "1");
		const char *vv = v ? v : "no verdict";
		for (size_t i = 0; vv[i] && i < 20; i++)
			isc_rep_putf(&t->r, "%c", vv[i] >= 'a' && vv[i] <= 'z' ? vv[i] - 32 : vv[i]);
		sgr(t, "0");
		if (isc_doc_str(cmp, "conditions.reason", NULL)) {
			isc_rep_put(&t->r, " (not comparable: ");
			text(t, isc_doc_str(cmp, "conditions.reason", NULL), 160);
			isc_rep_put(&t->r, ")");
		}
		if (!isnan(chg)) {
			isc_rep_put(&t->r, ", ");
			text(t, isc_doc_str(sc, "name", NULL), 40);
			isc_rep_putf(&t->r, " median %+.1f %%", chg);
		}
		if (!isnan(lo) && !isnan(hi))
			isc_rep_putf(&t->r, " (interval %+.1f … %+.1f %%", lo, hi);
		if (!isnan(p))
			isc_rep_putf(&t->r, "%sp = %.2g)", !isnan(lo) && !isnan(hi) ? ", " : " (", p);
		else if (!isnan(lo) && !isnan(hi))
			isc_rep_put(&t->r, ")");
		if (c0 && !isnan(d)) {
			isc_rep_put(&t->r, "; first: ");
			text(t, isc_doc_str(c0, "name", NULL), 60);
			isc_rep_putf(&t->r, " %s%s/iter", d < 0 ? "-" : "+", isc_rep_fmt_ns(buf, sizeof(buf), fabs(d)));
		}
		isc_rep_put(&t->r, "\n");
	}
	if (cJSON_IsObject(h)) {
		const cJSON *mt, *cp, *last = NULL, *lastm = NULL;
		cJSON_ArrayForEach(mt, isc_doc_get(h, "metrics"))
			cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(mt, "change_points"))
				if (!last || num(cp, "run") > num(last, "run")) {
					last = cp;
					lastm = mt;
				}
		isc_rep_putf(&t->r, "History of %.0f runs: ", num(h, "runs"));
		if (cJSON_IsFalse(isc_doc_get(h, "tested"))) {
			isc_rep_putf(&t->r, "not tested (a change point needs %.0f runs)\n", num(h, "min_runs"));
		} else if (!last) {
			isc_rep_put(&t->r, "no change point\n");
		} else {
			text(t, isc_doc_str(lastm, "metric", NULL), 40);
			bool pts = !isnan(num(last, "change_points"));
			isc_rep_putf(&t->r, " %s by %+.1f %s from run %.0f", isc_doc_str(last, "direction", NULL) ?
				     isc_doc_str(last, "direction", NULL) : "changed",
				     pts ? num(last, "change_points") : num(last, "change_pct"), pts ? "points" : "%",
				     num(last, "run"));
			if (isc_doc_str(last, "file", NULL)) {
				isc_rep_put(&t->r, " (");
				text(t, isc_doc_str(last, "file", NULL), 80);
				isc_rep_put(&t->r, ")");
			}
			isc_rep_put(&t->r, "\n");
		}
	}
}

/* The headline numbers: wall time, iterations, the CPU split, GPU idle share, RSS peak. */
static void numbers(struct term *t, const cJSON *root)
{
	char a[64], b[64];
	const cJSON *dev;
	double v;
	isc_rep_putf(&t->r, "  Wall %s", isc_rep_fmt_ns(a, sizeof(a), num(root, "summary.wall_ns")));
	if ((v = num(root, "iterations.count")) > 0) {
		isc_rep_putf(&t->r, " · %.0f iterations", v);
		if (isc_doc_str(root, "iterations.name", NULL)) {
			isc_rep_put(&t->r, " of ");
			text(t, isc_doc_str(root, "iterations.name", NULL), 60);
		}
		isc_rep_putf(&t->r, ": p50 %s, p99 %s", isc_rep_fmt_ns(a, sizeof(a), num(root, "iterations.latency_ns.p50")),
			     isc_rep_fmt_ns(b, sizeof(b), num(root, "iterations.latency_ns.p99")));
	}
	isc_rep_put(&t->r, "\n  ");
	size_t mark = t->r.b.len;
	const char *sep = "";
	static const struct {
		const char *path, *name;
	} split[] = {
		{ "cpu.split.python_pct", "Python" },
		{ "cpu.split.torch_ops_pct", "torch ops" },
		{ "cpu.split.ops_pct", "torch ops" }, /* a document from before the split in three */
		{ "cpu.split.other_c_pct", "other C" },
		{ "cpu.split.off_cpu_pct", "off-CPU" },
	};
	/* the split the verdict judged: the iterations' when its finding was judged on them */
	const char *base = "cpu.split.", *label = "CPU: ";
	const cJSON *f;
	const char *vf = isc_doc_str(root, "verdict.finding", NULL);
	cJSON_ArrayForEach(f, isc_doc_get(root, "findings")) {
		const char *id = isc_doc_str(f, "id", NULL), *on = isc_doc_str(f, "judged_on", NULL);
		if (vf && id && on && !strcmp(id, vf) && !strcmp(on, "iterations") &&
		    cJSON_IsObject(isc_doc_get(root, "cpu.in_iterations.split"))) {
			base = "cpu.in_iterations.split.";
			label = "CPU in iterations: ";
		}
	}
	char path[64];
	snprintf(path, sizeof(path), "%storch_ops_pct", base);
	bool three = !isnan(num(root, path));
	for (size_t i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s%s", base, split[i].path + strlen("cpu.split."));
		if ((i != 2 || !three) && !isnan(v = num(root, path))) {
			isc_rep_putf(&t->r, "%s%s %.0f %%", *sep ? ", " : label, split[i].name, v);
			sep = " · ";
		}
	}
	int d = 0;
	cJSON_ArrayForEach(dev, isc_doc_get(root, "gpu.devices")) {
		double id = num(dev, "id");
		if (num(dev, "ops") == 0)
			continue; /* device memory records only: no idle time to speak of */
		if (d++ == 4 || isnan(v = num(dev, "temporal_breakdown.idle_pct")))
			break;
		isc_rep_putf(&t->r, "%sGPU %.0f idle %.1f %%", sep, isnan(id) ? d - 1 : id, v);
		sep = " · ";
	}
	if (!isnan(v = num(root, "memory.rss_peak_bytes")))
		isc_rep_putf(&t->r, "%sRSS peak %s", sep, isc_rep_fmt_bytes(a, sizeof(a), v));
	if (t->r.b.len == mark && !t->r.err)
		t->r.b.len -= 2; /* nothing on this line */
	else
		isc_rep_put(&t->r, "\n");
}

static void top_findings(struct term *t, const cJSON *root)
{
	const cJSON *arr = isc_doc_get(root, "findings"), *f;
	int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0, i = 0;
	char b[64];
	if (!n) {
		isc_rep_put(&t->r, "\nNo findings.\n");
		return;
	}
	isc_rep_putf(&t->r, "\nTop findings (%d of %d):\n", n < 3 ? n : 3, n);
	cJSON_ArrayForEach(f, arr) {
		struct isc_rep_finding x;
		if (i == 3)
			break;
		isc_rep_finding_get(f, &x);
		const char *sev = x.severity ? x.severity : "info";
		isc_rep_putf(&t->r, "  %d. ", ++i);
		sgr(t, !strcmp(sev, "critical") ? "1;31" : !strcmp(sev, "warning") ? "33" : "34");
		text(t, sev, 10);
		sgr(t, "0");
		isc_rep_putf(&t->r, "%*s  ", strlen(sev) < 8 ? (int)(8 - strlen(sev)) : 0, "");
		text(t, x.title ? x.title : "?", TITLE_MAX);
		if (x.saving_ns >= 0 || x.saving_pct >= 0) {
			isc_rep_put(&t->r, "  ");
			sgr(t, "32");
			isc_rep_put(&t->r, "saves ~");
			if (x.saving_ns >= 0)
				isc_rep_put(&t->r, isc_rep_fmt_ns(b, sizeof(b), x.saving_ns));
			if (x.saving_pct >= 0)
				isc_rep_putf(&t->r, x.saving_ns >= 0 ? " (%.1f %%)" : "%.1f %%", fmin(x.saving_pct, 1e6));
			sgr(t, "0");
		}
		isc_rep_put(&t->r, "\n");
	}
}

int isc_report_summary(const cJSON *root, const struct isc_summary_opts *o, char **out)
{
	struct term t = { .color = o && o->color };
	*out = NULL;
	if (!cJSON_IsObject(root)) {
		isc_err_push("not a findings document (not a JSON object)");
		return -EINVAL;
	}
	comparison(&t, root);
	verdict(&t, root);
	numbers(&t, root);
	top_findings(&t, root);
	isc_rep_put(&t.r, "\n");
	sgr(&t, "2");
	isc_rep_put(&t.r, o && o->input ? "Full report: iscope-report -o report.md " : "Full report: … | iscope-report -o report.md");
	if (o && o->input)
		shell_word(&t, o->input);
	isc_rep_put(&t.r, "  (or -o report.html)");
	sgr(&t, "0");
	isc_rep_put(&t.r, "\n");
	if (!t.r.err)
		t.r.err = isc_buf_put_u8(&t.r.b, '\0');
	if (t.r.err) {
		isc_buf_free(&t.r.b);
		isc_err_push("out of memory");
		return -ENOMEM;
	}
	*out = (char *)t.r.b.data;
	return 0;
}
