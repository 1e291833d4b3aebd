/*
 * report_findings.c - the report's "## Findings" section (each finding:
 * severity, confidence, rule, estimated saving, evidence, time ranges, top
 * contributors, suggestion), in either schema's shape
 * (isc_rep_finding_get), and "## Suggestions", the findings' suggestions
 * alone with their savings.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* A named number of a finding's evidence, formatted by its key's unit suffix. */
static void metric(struct isc_rep *m, const cJSON *e)
{
	char b[64];
	size_t n = strlen(e->string);
	double v = e->valuedouble;
#define SUFFIX(s) (n >= sizeof(s) - 1 && !strcmp(e->string + n - (sizeof(s) - 1), s))
	isc_rep_md(m, e->string);
	isc_rep_put(m, " = ");
	if (cJSON_IsString(e))
		isc_rep_md(m, e->valuestring);
	else if (!isfinite(v) || fabs(v) >= ISC_REP_FIXED_MAX)
		isc_rep_putf(m, "%.3e", v);
	else if (SUFFIX("_ns"))
		isc_rep_put(m, isc_rep_fmt_ns(b, sizeof(b), v));
	else if (SUFFIX("_bytes_per_s"))
		isc_rep_putf(m, "%s/s", isc_rep_fmt_bytes(b, sizeof(b), v));
	else if (SUFFIX("_bytes"))
		isc_rep_put(m, isc_rep_fmt_bytes(b, sizeof(b), v));
	else if (SUFFIX("_pct"))
		isc_rep_putf(m, "%.1f %%", v);
	else if (v == floor(v))
		isc_rep_putf(m, "%.0f", v);
	else
		isc_rep_putf(m, "%.4g", v);
#undef SUFFIX
}

/* "12.3 ms (4.5 % of the analyzed span)", either part alone, or "not estimated". */
static void saving(struct isc_rep *m, const struct isc_rep_finding *f)
{
	char b[64];
	bool ns = isfinite(f->saving_ns) && f->saving_ns >= 0, pct = isfinite(f->saving_pct) && f->saving_pct >= 0;
	if (ns)
		isc_rep_put(m, isc_rep_fmt_ns(b, sizeof(b), f->saving_ns));
	if (pct)
		isc_rep_putf(m, ns ? " (%.1f %% of the analyzed span)" : "%.1f %% of the analyzed span",
			     fmin(f->saving_pct, 1e6));
	if (isfinite(f->saving_bytes) && f->saving_bytes >= 0)
		isc_rep_putf(m, "%s%s of memory at the peak", ns || pct ? ", " : "",
			     isc_rep_fmt_bytes(b, sizeof(b), f->saving_bytes));
	else if (!ns && !pct)
		isc_rep_put(m, "not estimated");
}

#define FINDING_TOP_MAX 10
#define FINDING_RANGES_MAX 10

/* evidence.top: the contributors with file:line or kernel name. */
static void contributors(struct isc_rep *m, const cJSON *top)
{
	char b[3][64];
	const cJSON *x;
	int i = 0, n = cJSON_GetArraySize(top);
	bool ns = false, bytes = false; /* which columns the rows fill: a memory finding ranks by bytes */
	if (!n)
		return;
	cJSON_ArrayForEach(x, top) {
		ns = ns || cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "value_ns"));
		bytes = bytes || cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "value_bytes"));
	}
	isc_rep_putf(m, "| # | Top contributor | Kind | Location | %s%s | Share | Detail |\n"
		       "|---:|---|---|---|%s---:|---:|---|\n", bytes ? "Memory" : "Time", bytes && ns ? " | Time" : "",
		     bytes && ns ? "---:|" : "");
	cJSON_ArrayForEach(x, top) {
		if (i == FINDING_TOP_MAX)
			break;
		isc_rep_putf(m, "| %d | ", ++i);
		isc_rep_md_cut(m, isc_doc_str(x, "name", "?"), 120);
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(x, "kind", ""));
		isc_rep_put(m, " | ");
		isc_rep_location(m, x, false);
		if (bytes)
			isc_rep_putf(m, " | %s", isc_rep_field(b[2], 64, x, "value_bytes", 'b'));
		if (ns || !bytes)
			isc_rep_putf(m, " | %s", isc_rep_field(b[0], 64, x, "value_ns", 'n'));
		isc_rep_putf(m, " | %s | ", isc_rep_field(b[1], 64, x, "pct", 'p'));
		isc_rep_md_cut(m, isc_doc_str(x, "detail", ""), 200);
		isc_rep_put(m, " |\n");
	}
	if (n > i)
		isc_rep_putf(m, "\nAnd %d more.\n", n - i);
	isc_rep_put(m, "\n");
}

/* evidence.time_ranges: "1.2 ms – 5.4 ms (label)", relative to the start of the run. */
static void time_ranges(struct isc_rep *m, const cJSON *tr)
{
	char b[2][64];
	const cJSON *x;
	int i = 0, n = cJSON_GetArraySize(tr);
	if (!n)
		return;
	isc_rep_put(m, "Time ranges (since the start of the run): ");
	cJSON_ArrayForEach(x, tr) {
		if (i == FINDING_RANGES_MAX)
			break;
		isc_rep_putf(m, "%s%s – %s", i++ ? "; " : "", isc_rep_field(b[0], 64, x, "start_ns", 'n'),
			     isc_rep_field(b[1], 64, x, "end_ns", 'n'));
		const char *label = isc_doc_str(x, "label", NULL);
		if (label) {
			isc_rep_put(m, " (");
			isc_rep_md(m, label);
			isc_rep_put(m, ")");
		}
	}
	if (n > i)
		isc_rep_putf(m, "; and %d more", n - i);
	isc_rep_put(m, ".\n\n");
}

/* The findings' estimated savings as bars (HTML only: the text says the same). */
static void savings_chart(struct isc_rep *m, const cJSON *arr)
{
	enum { MAXB = 12 };
	struct isc_rep_bar bar[MAXB];
	char note[MAXB][96];
	size_t n = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, arr) {
		struct isc_rep_finding x;
		char b[64];
		isc_rep_finding_get(f, &x);
		if (n == MAXB || !(x.saving_pct >= 0))
			continue;
		if (x.saving_ns >= 0)
			snprintf(note[n], sizeof(note[n]), "%.1f %% (%s)", fmin(x.saving_pct, 1e6),
				 isc_rep_fmt_ns(b, sizeof(b), x.saving_ns));
		else
			snprintf(note[n], sizeof(note[n]), "%.1f %%", fmin(x.saving_pct, 1e6));
		bar[n] = (struct isc_rep_bar){ x.title ? x.title : "?", { { NULL, fmin(x.saving_pct, 100), "#2e8b57" } },
					       1, note[n] };
		n++;
	}
	if (n)
		isc_rep_chart_bars(m, "Estimated saving by finding", "Estimated saving (% of the analyzed span)", 0, bar, n);
}

void isc_rep_sec_findings(struct isc_rep *m, const cJSON *root)
{
	const cJSON *f, *e, *arr = isc_doc_arr(root, "findings");
	isc_rep_put(m, "\n## Findings\n\n");
	if (!cJSON_GetArraySize(arr))
		isc_rep_put(m, "No findings.\n");
	else
		isc_rep_put(m, "Ranked by estimated saving. Savings are estimates: each says what it assumes.\n");
	if (m->html)
		savings_chart(m, arr);
	int i = 0;
	cJSON_ArrayForEach(f, arr) {
		struct isc_rep_finding x;
		isc_rep_finding_get(f, &x);
		isc_rep_putf(m, "\n### %d. ", ++i);
		isc_rep_md(m, x.title ? x.title : "?");
		isc_rep_put(m, "\n\nSeverity **");
		isc_rep_md(m, x.severity ? x.severity : "info");
		isc_rep_put(m, "**");
		if (isfinite(x.confidence) && fabs(x.confidence) < ISC_REP_FIXED_MAX)
			isc_rep_putf(m, ", confidence %.2f", x.confidence);
		if (x.id) {
			isc_rep_put(m, ", rule ");
			isc_rep_code(m, x.id);
		}
		isc_rep_put(m, ". Estimated saving: ");
		saving(m, &x);
		isc_rep_put(m, ".\n\n");
		bool first = true;
		cJSON_ArrayForEach(e, x.metrics) {
			if (!cJSON_IsNumber(e) && !cJSON_IsString(e))
				continue;
			isc_rep_put(m, first ? "Evidence: " : ", ");
			first = false;
			metric(m, e);
		}
		isc_rep_put(m, first ? "" : ".\n\n");
		time_ranges(m, x.time_ranges);
		contributors(m, x.top);
		if (x.action) {
			isc_rep_put(m, "Suggestion: **");
			isc_rep_md(m, x.action);
			isc_rep_put(m, "**");
			if (x.rationale) {
				isc_rep_put(m, " ");
				isc_rep_md(m, x.rationale);
			}
			isc_rep_put(m, "\n\n");
		}
		if (x.estimate) {
			isc_rep_put(m, "Estimate: ");
			isc_rep_md(m, x.estimate);
			isc_rep_put(m, "\n");
		}
	}
}

/* The suggestions alone, in the findings' order, with their savings. */
void isc_rep_sec_suggestions(struct isc_rep *m, const cJSON *root)
{
	const cJSON *f;
	int i = 0;
	isc_rep_put(m, "\n## Suggestions\n\n");
	cJSON_ArrayForEach(f, isc_doc_arr(root, "findings")) {
		struct isc_rep_finding x;
		isc_rep_finding_get(f, &x);
		if (!x.action)
			continue;
		isc_rep_putf(m, "%d. ", ++i);
		isc_rep_md(m, x.action);
		if (x.saving_ns >= 0 || x.saving_pct >= 0 || x.saving_bytes >= 0) {
			isc_rep_put(m, " (estimated saving: ");
			saving(m, &x);
			isc_rep_put(m, ")");
		}
		isc_rep_put(m, "\n");
	}
	if (!i)
		isc_rep_put(m, "None.\n");
}
