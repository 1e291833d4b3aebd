/*
 * test_report.c - the report's charts, findings (both shapes) and terminal
 * summary on the hand-made documents of tests/data/report, and on those
 * documents damaged field by field: every chart field missing, null, of the
 * wrong type, negative, huge or infinite (cJSON reads 1e999 as inf) must
 * render, with no NaN or infinity printed into an SVG.
 *
 *   test_report DIR   (DIR = tests/data/report)
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"
#include "tap.h"

static const char *dir;

static cJSON *load(const char *name)
{
	char path[4096], *buf = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	cJSON *d = NULL;
	long n;
	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)n)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n)
		d = cJSON_ParseWithLength(buf, (size_t)n);
	free(buf);
	if (f)
		fclose(f);
	if (!d)
		printf("# cannot load %s\n", path);
	return d;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * Every <svg> is closed, has its size, viewBox, role, title and desc, and
 * holds no "nan" or "inf" standing alone (a number printf made of NaN or
 * infinity).  Returns the number of charts, or -1 with the reason printed.
 */
static int check_svgs(const char *html)
{
	int n = 0;
	for (const char *p = html; (p = strstr(p, "<svg ")); n++) {
		const char *end = strstr(p, "</svg>");
		if (!end) {
			printf("# chart %d not closed\n", n);
			return -1;
		}
		char *svg = strndup(p, (size_t)(end - p));
		const char *need[] = { " width=\"", " height=\"", " viewBox=\"0 0 ", " role=\"img\"", "<title id=",
				       "<desc id=" };
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (!strstr(svg, need[i])) {
				printf("# chart %d lacks %s\n", n, need[i]);
				free(svg);
				return -1;
			}
		for (char *q = svg; *q; q++) {
			if (strncasecmp(q, "nan", 3) && strncasecmp(q, "inf", 3))
				continue;
			if ((q == svg || !isalpha((unsigned char)q[-1])) && !isalpha((unsigned char)q[3])) {
				printf("# chart %d prints a non-number: ...%.40s\n", n, q > svg + 40 ? q - 40 : svg);
				free(svg);
				return -1;
			}
		}
		free(svg);
		p = end;
	}
	return n;
}

static char *render(const cJSON *d, enum isc_report_format f)
{
	char *out = NULL;
	int rc = isc_report_render(d, f, &out);
	if (rc) {
		printf("# render: %d %s\n", rc, isc_err_msg());
		isc_err_clear();
	}
	return out;
}

static void test_full(void)
{
	cJSON *d = load("full.json");
	char *html = render(d, ISC_REPORT_HTML), *md = render(d, ISC_REPORT_MD);
	ok(html && check_svgs(html) == 7, "HTML: 7 charts (histogram, CPU split, CPU, GPU, GPU breakdown, memory, "
					  "savings), each well-formed");
	static const char *const titles[] = { ">Iteration latency distribution (steady state)</title>",
					      ">Where the traced CPU time goes</title>", ">CPU use over time</title>",
					      ">GPU use over time</title>", ">GPU time breakdown</title>",
					      ">Memory over time</title>", ">Estimated saving by finding</title>" };
	bool all = html != NULL;
	for (size_t i = 0; i < 7 && all; i++)
		all = ok(strstr(html, titles[i]) != NULL, "chart %s", titles[i]);
	ok(html && !strstr(html, "<script") && !strstr(html, "<img") && !strstr(html, "http:") &&
	   !strstr(html, "https:") && !strstr(html, "href="),
	   "HTML: no script, no image, no link, no external reference");
	ok(html && strstr(html, "text-anchor=\"end\">&lt;script&gt;alert(1)&lt;/script&gt; holds the interpre…</text>"),
	   "hostile finding title: escaped and cut in the savings chart");
	ok(html && count(html, "fill=\"#a0a0a0\"/>") == 3 * (2 + 1) && strstr(html, "warm-up iterations</text>"),
	   "warm-up iterations (2) and their legend in orange on the three charts over time (%zu)",
	   html ? count(html, "fill=\"#a0a0a0\"/>") : 0);
	ok(html && strstr(html, "fill=\"#c33\">p50 253.0 ms</text>") && strstr(html, ">p99 428.0 ms</text>"),
	   "histogram marks p50 and p99");
	ok(html && strstr(html, "stroke-dasharray=\"4 3\"/><text") && strstr(html, ">4 CPUs</text>"),
	   "CPU chart: the line of the 4 CPUs");
	ok(html && !strstr(html, "\x01") && !strstr(html, "\x02"), "chart markers do not leak into the page");

	ok(md && !strstr(md, "<svg"), "Markdown: no SVG");
	/* full.json's iterations.latency_ns: p50 253, p90 273, p99 428, mean 257.4, min 231, max 428 ms */
	ok(md && strstr(md, "| step | 40 | 2 | 253.0 ms | 273.0 ms | 428.0 ms | 257.4 ms | 231.0 ms | 428.0 ms |"),
	   "Markdown: the latency table's columns p50, p90, p99, mean, min, max each its own value");
	const char *cpu = md ? strstr(md, "### CPU use over time\n\n| Part of run | Time | CPU cores used (mean) | "
					  "runnable threads (mean) | Iterations started |")
			     : NULL;
	ok(cpu && strstr(cpu, "| 0–10 % | 0.00 – 1.15 s | 1.05 | 1.47 | 2 (2 warm-up) |") &&
	   strstr(cpu, "| 90–100 % | 10.82 – 12.03 s |"),
	   "Markdown: CPU use by tenth of the run, iterations and warm-up counted");
	ok(md && strstr(md, "| GPU busy (ops running) (mean) | GPU utilization (NVML) (mean) |") &&
	   strstr(md, "| RSS (max) | GPU memory used (max) |"),
	   "Markdown: GPU and memory over time");
	ok(md && strstr(md, "| 250.7 ms | 260.6 ms | 9 | ████████████████████ | p50 |") &&
	   strstr(md, "| 418.1 ms | 428.0 ms | 1 | ██ | p99 |"),
	   "Markdown: histogram as a table with text bars, p50 and p99 in their bins");
	ok(md && strstr(md, "Verdict: **launch_bound** (confidence 0.82, explains 73 % of the GPU span, "
			    "evidence quality 0.90, finding `launch_bound`)"),
	   "verdict: class, confidence, explained share, evidence quality, finding");
	ok(md && strstr(md, "\n**71 % of the kernels run for less than 10 µs"), "headline: the verdict sentence");
	ok(md && strstr(md, "### 1. 71 % of the kernels run under 10 µs: the GPU waits for launches\n\nSeverity "
			    "**critical**, confidence 0.82, rule `launch_bound`. Estimated saving: 1.90 s (18.7 % of "
			    "the analyzed span)."),
	   "finding: title, severity, confidence, rule, saving in s and %%");
	ok(md && strstr(md, "Evidence: kernels_under_10us_pct = 71.2 %, launches = 15200, "
			    "launch_delay_p50_ns = 12.0 µs."),
	   "finding: metrics formatted by their unit suffix");
	ok(md && strstr(md, "Time ranges (since the start of the run): 1.40 s – 1.65 s (iteration 3, GPU idle 98 ms)."),
	   "finding: time ranges");
	ok(md && strstr(md, "| 2 | \\<script\\>alert(1)\\</script\\> | python | model.py:42 | 900.0 ms | 18.0 % | "
			    "launches 40 % of the kernels |"),
	   "finding: top contributors with file:line, escaped");
	ok(md && strstr(md, "Suggestion: **Capture the step in a CUDA graph") &&
	   strstr(md, "Estimate: The host-wait idle time inside the iterations removed."),
	   "finding: action, rationale, estimate");
	ok(md && strstr(md, "Estimated saving: not estimated.") &&
	   strstr(md, "3. Look for tensors kept across iterations.\n"),
	   "a finding without a saving says so");
	const char *f1 = md ? strstr(md, "### 1.") : NULL, *f2 = md ? strstr(md, "### 2.") : NULL,
		   *f4 = md ? strstr(md, "### 4.") : NULL;
	ok(f1 && f2 && f4 && f1 < f2 && f2 < f4 && strstr(f4, "DataLoader"), "findings in the order given");
	free(html);
	free(md);
	cJSON_Delete(d);
}

static void test_old_shape(void)
{
	cJSON *d = load("old-shape.json");
	char *md = render(d, ISC_REPORT_MD), *html = render(d, ISC_REPORT_HTML);
	ok(md && strstr(md, "Suggestion: **Replace the per-element Python work in this function with batched torch "
			    "operations.**"),
	   "schema 1: the suggestion string is the action");
	ok(md && strstr(md, "Estimated saving: 61.0 % of the analyzed span."), "schema 1: estimated_saving_pct");
	ok(md && strstr(md, "Evidence: self_ns = 1.20 s, calls = 10, function = crunch."),
	   "schema 1: the flat evidence object as metrics");
	ok(md && strstr(md, "\n**80 % of traced CPU time is Python interpreter time.**\n\nVerdict: **python_bound** "
			    "(confidence 0.80)\n"),
	   "no verdict.headline (schema 1): the headline is verdict.sentence, not reworded by the report");
	ok(html && check_svgs(html) == 2, "schema 1: the CPU split and savings charts, nothing else");
	free(md);
	free(html);
	cJSON_Delete(d);
}

/* Replaces the item at a dotted path (numbers index arrays); false when the parent is missing. */
static bool set_path(cJSON *root, const char *path, cJSON *v)
{
	char buf[256], *last;
	snprintf(buf, sizeof(buf), "%s", path);
	cJSON *parent = root;
	last = strrchr(buf, '.');
	if (last) {
		*last++ = '\0';
		for (char *save, *k = strtok_r(buf, ".", &save); k && parent; k = strtok_r(NULL, ".", &save))
			parent = cJSON_IsArray(parent) ? cJSON_GetArrayItem(parent, atoi(k))
						       : cJSON_GetObjectItemCaseSensitive(parent, k);
	} else {
		last = buf;
	}
	if (cJSON_IsArray(parent) && atoi(last) < cJSON_GetArraySize(parent))
		return cJSON_ReplaceItemInArray(parent, atoi(last), v);
	if (cJSON_IsObject(parent)) {
		cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
		return cJSON_AddItemToObject(parent, last, v);
	}
	cJSON_Delete(v);
	return false;
}

static void test_damaged_fields(void)
{
	static const char *const paths[] = {
		"timeseries", "timeseries.t0_ns", "timeseries.bucket_ns", "timeseries.buckets", "timeseries.ncpu",
		"timeseries.cpu_cores", "timeseries.cpu_cores.3", "timeseries.runnable_threads", "timeseries.rss_bytes",
		"timeseries.rss_bytes.0", "timeseries.gpu_busy_pct", "timeseries.gpu_busy_pct.40",
		"timeseries.gpu_util_pct", "timeseries.gpu_mem_used_bytes", "environment.ncpu", "iterations",
		"iterations.spans", "iterations.spans.0", "iterations.spans.5.1", "iterations.warmup_spans",
		"iterations.histogram", "iterations.histogram.edges_ns", "iterations.histogram.edges_ns.4",
		"iterations.histogram.edges_ns.20", "iterations.histogram.counts", "iterations.histogram.counts.2",
		"iterations.latency_ns.p50", "iterations.latency_ns.p99", "cpu.split", "cpu.split.python_pct",
		"cpu.split.ops_pct", "gpu.devices", "gpu.devices.0.temporal_breakdown",
		"gpu.devices.0.temporal_breakdown.idle_pct", "gpu.devices.0.name", "gpu.devices.0.id", "verdict",
		"verdict.confidence", "verdict.explained_pct", "verdict.sentence", "verdict.class", "verdict.finding",
		"findings", "findings.0", "findings.0.title", "findings.0.severity", "findings.0.confidence",
		"findings.0.evidence", "findings.0.evidence.metrics", "findings.0.evidence.metrics.launches",
		"findings.0.evidence.time_ranges", "findings.0.evidence.time_ranges.0",
		"findings.0.evidence.time_ranges.0.start_ns", "findings.0.evidence.top", "findings.0.evidence.top.0",
		"findings.0.evidence.top.1.line", "findings.0.suggestion", "findings.0.suggestion.action",
		"findings.0.suggestion.estimated_saving_ns", "findings.0.suggestion.estimated_saving_pct",
		"findings.1.suggestion.estimated_saving_pct",
	};
	static const char *const bad[] = {
		"null", "\"x\"", "-1", "0", "1e308", "-1e308", "1e999", "-1e999", "0.5", "[]", "{}", "[null]",
		"[1e999, -5, \"a\", [], 1e308]", "[[1, 2], [3, 1e999], [5], [9, 2]]", "true",
	};
	cJSON *full = load("full.json");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && full; i++) {
		int fails = 0;
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			cJSON *d = cJSON_Duplicate(full, true);
			if (!set_path(d, paths[i], cJSON_Parse(bad[k]))) {
				printf("# %s: no such path\n", paths[i]);
				fails++;
			}
			char *md = render(d, ISC_REPORT_MD), *html = render(d, ISC_REPORT_HTML), *sum = NULL;
			int rc = isc_report_summary(d, &(struct isc_summary_opts){ true, "x.json" }, &sum);
			if (!md || !html || rc || check_svgs(html) < 0) {
				printf("# %s = %s\n", paths[i], bad[k]);
				fails++;
			}
			free(md);
			free(html);
			free(sum);
			cJSON_Delete(d);
		}
		ok(!fails, "%s damaged %zu ways: renders, charts well-formed", paths[i], sizeof(bad) / sizeof(bad[0]));
	}
	cJSON_Delete(full);
}

/*
 * Native stacks (native.json: tests/data/report/README.md): the section,
 * the flame graphs, the folded stacks known by construction, and the
 * native fields damaged as above.
 */
static void test_native(void)
{
	cJSON *d = load("native.json");
	char *html = render(d, ISC_REPORT_HTML), *md = render(d, ISC_REPORT_MD), *fo = render(d, ISC_REPORT_FOLDED);
	ok(md && strstr(md, "### Native stacks") && strstr(md, "| 1 | \\<img src=x onerror=alert(1)\\>\\_sgemm | libopenblas.so.0 | 860.0 ms (86.0 %) |"),
	   "the section and its first function row");
	/* the list cells (tests/data/report/native.json): contexts joined by "; ", the share in
	 * parentheses under a function, bare under an op or a thread */
	ok(md && strstr(md, "| 1 | \\<img src=x onerror=alert(1)\\>\\_sgemm | libopenblas.so.0 | 860.0 ms (86.0 %) | 880.0 ms (88.0 %) | \\<script\\>alert(1)\\</script\\> (a\"b'c\\<d\\>\\&e.py:12) (56.8 %); aten::addmm in \\<script\\>alert(1)\\</script\\> (a\"b'c\\<d\\>\\&e.py:12) (95.0 %) |\n"),
	   "the first function's cell of what it is under: Python line alone, then op in line");
	ok(md && strstr(md, "| aten::addmm | 380.0 ms | 38.0 % | \\<script\\>alert(1)\\</script\\> (a\"b'c\\<d\\>\\&e.py:12) | \\<img src=x onerror=alert(1)\\>\\_sgemm 100.0 % |\n"),
	   "the op row: its Python line and its kernels with their shares");
	ok(md && strstr(md, "| \\<img src=x onerror=alert(1)\\> 100/101 | no | 400.0 ms | 38 | \\<img src=x onerror=alert(1)\\>\\_sgemm 95.0 % | aten::addmm in \\<script\\>alert(1)\\</script\\> (a\"b'c\\<d\\>\\&e.py:12) 95.0 % |\n"),
	   "the worker thread's row: its top function and the op that dispatched it");
	ok(html && check_svgs(html) == 9, "9 charts, the two flame graphs among them, well-formed");
	/* merged over the two threads: all, <module>, the function, its kernel, clear_page, [other],
	 * aten::addmm, the kernel under it, start_thread: 9 frames a graph */
	ok(html && count(html, "data-series=\"frame\"") == 18, "9 frames in each flame graph (%zu in all)",
	   html ? count(html, "data-series=\"frame\"") : 0);
	ok(html && strstr(html, "12.50 percentage points)</text>"), "the differential's largest change in its legend");
	const char *want =
		"MainThread 100/100;<module> (run.py:3);<script>alert(1)</script> (a\"b'c<d>&e.py:12) 5\n"
		"MainThread 100/100;<module> (run.py:3);<script>alert(1)</script> (a\"b'c<d>&e.py:12);<img src=x onerror=alert(1)>_sgemm 48\n"
		"MainThread 100/100;<module> (run.py:3);<script>alert(1)</script> (a\"b'c<d>&e.py:12);<img src=x onerror=alert(1)>_sgemm;clear_page_erms_[k] 2\n"
		"MainThread 100/100;<module> (run.py:3);<script>alert(1)</script> (a\"b'c<d>&e.py:12);[other] 5\n"
		"<img src=x onerror=alert(1)> 100/101;<module> (run.py:3);<script>alert(1)</script> (a\"b'c<d>&e.py:12);aten::addmm;<img src=x onerror=alert(1)>_sgemm 38\n"
		"<img src=x onerror=alert(1)> 100/101;start_thread 2\n";
	ok(fo && !strcmp(fo, want), "folded stacks of the tree, as built by hand");
	free(html);
	free(md);
	free(fo);
	static const char *const paths[] = {
		"native", "native.tree", "native.tree.parent", "native.tree.parent.3", "native.tree.frame",
		"native.tree.frame.3", "native.tree.self", "native.tree.self.3", "native.tree.total", "native.tree.total.0",
		"native.tree.frames", "native.tree.frames.1", "native.tree.frames.1.name", "native.tree.frames.1.kind",
		"native.tree.frames.1.line", "native.tree.threads", "native.tree.threads.0.root", "native.tree.threads.0.pid",
		"native.functions", "native.functions.0.above", "native.functions.0.above.0.python", "native.ops.0.kernels",
		"native.threads.0", "native.threads.1.dispatched_by", "native.unwind", "native.sampler.period_ns",
		"comparison.native.node_delta_pct", "comparison.native.node_delta_pct.2", "comparison.native.functions.0",
	};
	static const char *const bad[] = { "null", "\"x\"", "-1", "0", "1e308", "1e999", "-1e999", "0.5", "[]", "{}",
					   "[null]", "[1e999, -5, \"a\", [], 1e308]", "true", "7" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && d; i++) {
		int fails = 0;
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			cJSON *x = cJSON_Duplicate(d, true);
			if (!set_path(x, paths[i], cJSON_Parse(bad[k]))) {
				printf("# %s: no such path\n", paths[i]);
				fails++;
			}
			char *m = render(x, ISC_REPORT_MD), *h = render(x, ISC_REPORT_HTML), *f = NULL, *sp = NULL;
			/* the flame-graph formats: written, or refused with a message; never a crash */
			int rf = isc_report_render(x, ISC_REPORT_FOLDED, &f), rs = isc_report_render(x, ISC_REPORT_SPEEDSCOPE, &sp);
			isc_err_clear();
			if (!m || !h || check_svgs(h) < 0 || (rf && rf != -EINVAL) || (rs && rs != -EINVAL)) {
				printf("# %s = %s\n", paths[i], bad[k]);
				fails++;
			}
			free(m);
			free(h);
			free(f);
			free(sp);
			cJSON_Delete(x);
		}
		ok(!fails, "%s damaged %zu ways: renders, charts well-formed", paths[i], sizeof(bad) / sizeof(bad[0]));
	}
	/* a child before its parent is refused: no flame graph, the formats say so */
	cJSON *x = cJSON_Duplicate(d, true);
	set_path(x, "native.tree.parent.3", cJSON_CreateNumber(5));
	char *f = NULL;
	ok(isc_report_render(x, ISC_REPORT_FOLDED, &f) == -EINVAL && !strcmp(isc_err_msg(), "native.tree is malformed"),
	   "a parent after its child: native.tree is malformed");
	isc_err_clear();
	html = render(x, ISC_REPORT_HTML);
	ok(html && check_svgs(html) == 7 && strstr(html, "Native stacks"), "the page without its flame graphs");
	free(html);
	cJSON_Delete(x);
	cJSON_Delete(d);
}

/* Sizes at and past the limits: many buckets, many spans, one-value histogram. */
static void test_limits(void)
{
	cJSON *d = load("full.json");
	cJSON *ts = cJSON_CreateObject(), *cores = cJSON_CreateArray(), *spans = cJSON_CreateArray();
	cJSON_AddNumberToObject(ts, "t0_ns", 0);
	cJSON_AddNumberToObject(ts, "bucket_ns", 1e6);
	cJSON_AddNumberToObject(ts, "buckets", 4096);
	for (int i = 0; i < 4096; i++)
		cJSON_AddItemToArray(cores, cJSON_CreateNumber(i % 7 ? 1.5 : 1e17));
	cJSON_AddItemToObject(ts, "cpu_cores", cores);
	for (int i = 0; i < 5000; i++) {
		cJSON *s = cJSON_CreateArray();
		cJSON_AddItemToArray(s, cJSON_CreateNumber(i * 800000.0));
		cJSON_AddItemToArray(s, cJSON_CreateNumber(i * 800000.0 + 1000));
		cJSON_AddItemToArray(spans, s);
	}
	set_path(d, "timeseries", ts);
	set_path(d, "iterations.spans", spans);
	set_path(d, "iterations.histogram", cJSON_Parse("{\"edges_ns\": [5000000, 5000000], \"counts\": [38]}"));
	set_path(d, "iterations.latency_ns.p50", cJSON_CreateNumber(5e6));
	char *html = render(d, ISC_REPORT_HTML), *md = render(d, ISC_REPORT_MD);
	ok(html && check_svgs(html) >= 3, "4096 buckets, 5000 spans, a one-value histogram: charts well-formed");
	ok(html && count(html, "height=\"8\" fill=") == 1000, "iteration strip: the first 1000 spans (%zu)",
	   html ? count(html, "height=\"8\" fill=") : 0);
	ok(html && strlen(html) < 4u << 20, "page stays small (%zu bytes)", html ? strlen(html) : 0);
	ok(md && strstr(md, "| 5.0 ms | 5.0 ms | 38 | ████████████████████ | p50 |"), "one-bin histogram table");
	ok(md && strstr(md, "### CPU use over time") && !strstr(md, "### GPU use over time"),
	   "a series without data is left out");
	free(html);
	free(md);
	cJSON_Delete(d);

	d = cJSON_Parse("{\"timeseries\": {\"bucket_ns\": 1000000, \"buckets\": 4097, \"cpu_cores\": [1]}}");
	md = render(d, ISC_REPORT_MD);
	ok(md && !strstr(md, "over time"), "more than 4096 buckets: no chart");
	free(md);
	cJSON_Delete(d);
}

static void test_summary(void)
{
	cJSON *d = load("full.json");
	char *c = NULL, *p = NULL;
	ok(d && !isc_report_summary(d, &(struct isc_summary_opts){ true, "run 1.json" }, &c) &&
	   !isc_report_summary(d, &(struct isc_summary_opts){ false, NULL }, &p),
	   "summary rendered");
	ok(c && strstr(c, "\033[1;36mlaunch_bound\033[0m (confidence 0.82, explains 73 % of the GPU span)") &&
	   strstr(c, "\033[1;31mcritical\033[0m"),
	   "colours: the verdict and the severities");
	ok(p && !strchr(p, '\033'), "no colour: no escape at all");
	ok(p && strstr(p, "Top findings (3 of 4):") && strstr(p, "  1. critical  71 % of the kernels") &&
	   strstr(p, "saves ~1.90 s (18.7 %)") && strstr(p, "  3. warning   Resident memory") && !strstr(p, "  4."),
	   "the top 3 findings with their savings");
	ok(p && strstr(p, "Wall 12.00 s · 40 iterations of step: p50 253.0 ms, p99 428.0 ms") &&
	   strstr(p, "CPU: Python 43 %, torch ops 32 %, off-CPU 25 % · GPU 0 idle 40.1 % · RSS peak 1.1 GiB"),
	   "the headline numbers");
	ok(c && strstr(c, "Full report: iscope-report -o report.md 'run 1.json'  (or -o report.html)") && p &&
	   strstr(p, "| iscope-report -o report.md  (or -o report.html)"),
	   "hint line, with the input quoted for the shell");
	free(c);
	free(p);
	cJSON_Delete(d);

	d = cJSON_Parse("{\"verdict\": {\"class\": \"a\\u001b[2Jb\", \"sentence\": \"c\\u009b31md\"},"
			"\"findings\": [{\"title\": \"\\u001b]0;x\\u0007t\"}]}");
	ok(!isc_report_summary(d, &(struct isc_summary_opts){ false, NULL }, &p) && !strchr(p, '\033') &&
	   !strchr(p, '\a') && !strstr(p, "\xc2\x9b") && strstr(p, "a[2Jb") && strstr(p, "c31md"),
	   "control characters (C0, C1) dropped from document strings");
	free(p);
	cJSON_Delete(d);
	d = cJSON_Parse("[]");
	ok(isc_report_summary(d, NULL, &p) == -EINVAL, "a non-object is refused");
	isc_err_clear();
	cJSON_Delete(d);
}

/*
 * The headline is verdict.headline's parts as the rules worded them: text
 * escaped, a workload name as a code span (escaped instead when a code span
 * could not hold it), a location in parentheses; nothing reworded.
 */
static void test_headline_parts(void)
{
	static const char *doc =
		"{\"schema_version\":2,\"verdict\":{\"class\":\"python_bound\",\"sentence\":\"not shown\","
		"\"headline\":[{\"text\":\"12 % of it; the hottest is \"},{\"code\":\"crunch\"},{\"text\":\" \"},"
		"{\"file\":\"a|b.py\",\"line\":3},{\"text\":\", then \"},{\"code\":\"f<g>\"},{\"text\":\" *x*.\"}]}}";
	cJSON *d = cJSON_Parse(doc);
	char *md = render(d, ISC_REPORT_MD);
	ok(md && strstr(md, "\n**12 % of it; the hottest is `crunch` (a\\|b.py:3), then f\\<g\\> \\*x\\*.**\n"),
	   "headline: text escaped, names as code spans, locations in parentheses");
	ok(md && !strstr(md, "not shown"), "headline: verdict.sentence is not said when there are parts");
	free(md);
	cJSON_Delete(d);
}

/*
 * The comparison's quantile table: base_quantiles_ns are p0, p5, ..., p100
 * (21 values), here (i + 1) ms, and this run's twice those; each row must
 * show the quantile it names (p95 is index 19: 20 ms and 40 ms).
 */
static void test_quantile_rows(void)
{
	char doc[2048];
	size_t n = (size_t)snprintf(doc, sizeof(doc), "{\"schema_version\":2,\"tool\":{\"name\":\"iscope-analyze\"},"
				    "\"comparison\":{\"verdict\":\"regressed\",\"baselines\":3,\"scopes\":[{\"name\":\"step\","
				    "\"base_quantiles_ns\":[");
	for (int side = 0; side < 2; side++) {
		for (int i = 0; i < 21; i++)
			n += (size_t)snprintf(doc + n, sizeof(doc) - n, "%s%d", i ? "," : "", (i + 1) * 1000000 * (side + 1));
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, side ? "]}]}}" : "],\"quantiles_ns\":[");
	}
	cJSON *d = cJSON_Parse(doc);
	char *md = render(d, ISC_REPORT_MD);
	ok(md && strstr(md, "| min | 1.0 ms | 2.0 ms | +100.0 % |") && strstr(md, "| p5 | 2.0 ms | 4.0 ms |") &&
		   strstr(md, "| p25 | 6.0 ms | 12.0 ms |") && strstr(md, "| p50 | 11.0 ms | 22.0 ms |") &&
		   strstr(md, "| p75 | 16.0 ms | 32.0 ms |") && strstr(md, "| p95 | 20.0 ms | 40.0 ms |") &&
		   strstr(md, "| max | 21.0 ms | 42.0 ms |"),
	   "comparison quantiles: each row the quantile it names (p95 = index 19)");
	free(md);
	cJSON_Delete(d);
}

/* The marks table holds the user's mark() counters, not the agent's own environment marks. */
static void test_marks(void)
{
	static const char *doc =
		"{\"schema_version\":2,\"tool\":{\"name\":\"iscope-analyze\"},\"marks\":["
		"{\"name\":\"python.hexversion\",\"count\":1,\"sum\":51119600},"
		"{\"name\":\"torch.num_threads\",\"count\":1,\"sum\":2},"
		"{\"name\":\"tokens\",\"count\":4,\"sum\":512},"
		"{\"name\":\"torch.compile_s\",\"count\":1,\"sum\":3}]}";
	cJSON *d = cJSON_Parse(doc);
	char *md = render(d, ISC_REPORT_MD);
	ok(md && strstr(md, "| tokens | 4 | 512 |") && strstr(md, "| torch.compile_s | 1 | 3 |"),
	   "marks table: the user's marks, torch.* ones included");
	ok(md && !strstr(md, "python.hexversion") && !strstr(md, "| torch.num_threads |"),
	   "marks table: not the agent's python.hexversion and torch.num_threads");
	free(md);
	cJSON_Delete(d);
}

/* The split in three, the off-CPU reasons and the thread pools (issue 14). */
static void test_waits(void)
{
	static const char *doc =
		"{\"schema_version\":2,\"summary\":{\"wall_ns\":10000000000},"
		"\"cpu\":{\"split\":{\"python_pct\":40,\"ops_pct\":30,\"torch_ops_pct\":10,\"other_c_pct\":20,"
		"\"off_cpu_pct\":30,\"python_ns\":4000000000,\"ops_ns\":3000000000,\"torch_ops_ns\":1000000000,"
		"\"other_c_ns\":2000000000,\"off_cpu_ns\":3000000000,\"traced_ns\":10000000000,\"off_cpu_measured\":true},"
		"\"top_functions\":[{\"name\":\"tokenize\",\"kind\":\"python\",\"file\":\"t.py\",\"line\":3,"
		"\"self_pct\":35}],"
		"\"off_cpu_reasons\":[{\"reason\":\"io_pipe\",\"ns\":2000000000,\"pct\":80,\"in_torch_ops_ns\":0,"
		"\"in_dataloader_ns\":0,\"top\":[{\"name\":\"read_request\",\"file\":\"t.py\",\"line\":9,"
		"\"ns\":2000000000}]},{\"reason\":\"gil\",\"ns\":500000000,\"pct\":20,\"in_torch_ops_ns\":0,"
		"\"in_dataloader_ns\":0,\"top\":[]}],"
		"\"thread_pools\":[{\"pid\":7,\"name\":\"pt_worker\",\"traced\":false,\"threads\":7,\"cpu_ns\":1000000000,"
		"\"cpu_pct\":50,\"runnable_mean\":3.5,\"futex\":\"0xabc\"}]},"
		"\"verdict\":{\"class\":\"python_bound\",\"explained_pct\":60,\"finding\":\"python_bound\"},"
		"\"findings\":[{\"id\":\"python_bound\",\"title\":\"t\",\"evidence\":{\"metrics\":{}}}]}";
	cJSON *d = cJSON_Parse(doc);
	char *md = render(d, ISC_REPORT_MD), *html = render(d, ISC_REPORT_HTML);
	ok(md && strstr(md, "| Python interpreter | torch ops | other C code | off-CPU waiting |") &&
	   strstr(md, "| 4.00 s (40.0 %) | 1.00 s (10.0 %) | 2.00 s (20.0 %) | 3.00 s (30.0 %) |"),
	   "CPU table: interpreter, torch ops, other C code, off-CPU");
	ok(md && strstr(md, "| io_pipe | 2.00 s | 80.0 % | 0 ns | `read_request` |") &&
	   strstr(md, "| gil | 500.0 ms | 20.0 % | 0 ns |  |"),
	   "off-CPU reasons: one row each, with the Python functions");
	ok(md && strstr(md, "| pt_worker (futex 0xabc) | no | 7 | 1.00 s (50.0 %) | 3.50 |"),
	   "thread pools: name with its futex, traced, threads, CPU, runnable");
	ok(html && strstr(html, "Python interpreter 40.0 %, torch ops 10.0 %, other C code 20.0 %, off-CPU waiting 30.0 %"),
	   "HTML: the CPU bar in four parts, in that order");
	free(md);
	free(html);
	cJSON_Delete(d);
}

/* A memory finding's contributors are ranked by bytes: a Memory column, no empty Time column (issue 25). */
static void test_memory_rows(void)
{
	cJSON *d = load("full.json"), *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(d, "findings"))
		if (!strcmp(isc_doc_str(f, "id", ""), "rss_growth"))
			break;
	cJSON *top = cJSON_Parse("[{\"name\":\"cache_results\",\"file\":\"m.py\",\"line\":13,\"kind\":\"python\","
				 "\"value_bytes\":31457280,\"pct\":75},{\"name\":\"keep\",\"file\":\"m.py\",\"line\":30,"
				 "\"kind\":\"python\",\"value_bytes\":10485760,\"pct\":25}]");
	ok(f && top && cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(f, "evidence"), "top", top),
	   "rss_growth's contributors replaced by two ranked by bytes");
	char *md = render(d, ISC_REPORT_MD);
	ok(md && strstr(md, "| # | Top contributor | Kind | Location | Memory | Share | Detail |\n"),
	   "the table has a Memory column and no Time column");
	ok(md && strstr(md, "| 1 | cache_results | python | m.py:13 | 30.0 MiB | 75.0 % |"), "the first row: 30 MiB, 75 %%");
	ok(md && strstr(md, "| 2 | keep | python | m.py:30 | 10.0 MiB | 25.0 % |"), "the second row: 10 MiB, 25 %%");
	free(md);
	cJSON_Delete(d);
}

/* A memory.sites entry: name at m.py:line, of host memory or of device 0, retained bytes. */
static cJSON *mem_site(const char *name, int line, bool device, double retained)
{
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "name", name);
	cJSON_AddStringToObject(x, "file", "m.py");
	cJSON_AddNumberToObject(x, "line", line);
	cJSON_AddStringToObject(x, "memory", device ? "device" : "host");
	if (device)
		cJSON_AddNumberToObject(x, "device", 0);
	else
		cJSON_AddNullToObject(x, "device");
	cJSON_AddNumberToObject(x, "allocated_bytes", retained);
	cJSON_AddNumberToObject(x, "retained_bytes", retained);
	cJSON_AddBoolToObject(x, "leak", false);
	return x;
}

/*
 * memory.sites with 12 host sites ranked first (retained 12 .. 1 MiB) and
 * 3 device sites after them (the analysis keeps up to 20 of each kind):
 * the report shows the first 10 host sites and, in a table of its own,
 * all 3 device sites; with device sites only, the one table as before.
 */
static void test_sites_by_kind(void)
{
	cJSON *d = load("full.json"), *mem = d ? cJSON_GetObjectItem(d, "memory") : NULL;
	cJSON *sites = cJSON_CreateArray(), *sm = cJSON_CreateObject();
	char name[32];
	for (int i = 1; i <= 12; i++) {
		snprintf(name, sizeof(name), "host_%d", i);
		cJSON_AddItemToArray(sites, mem_site(name, 100 + i, false, (13 - i) * 1048576.0));
	}
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "dev_%d", i);
		cJSON_AddItemToArray(sites, mem_site(name, 200 + i, true, (4 - i) * 1024.0));
	}
	cJSON_AddNumberToObject(sm, "samples", 500);
	cJSON_AddNumberToObject(sm, "interval_bytes", 524288);
	if (mem) {
		cJSON_DeleteItemFromObjectCaseSensitive(mem, "sites");
		cJSON_DeleteItemFromObjectCaseSensitive(mem, "sampling");
	}
	ok(mem && cJSON_AddItemToObject(mem, "sites", sites) && cJSON_AddItemToObject(mem, "sampling", sm),
	   "memory.sites: 12 host sites, then 3 device sites");
	char *md = render(d, ISC_REPORT_MD);
	const char *h = md ? strstr(md, "\nHost memory:\n") : NULL, *dv = md ? strstr(md, "\nDevice memory:\n") : NULL;
	ok(h && dv && h < dv, "two tables: host memory, then device memory");
	ok(h && strstr(h, "| 10 | `host_10` (m.py:110) |") && !strstr(md, "`host_11`") && !strstr(md, "`host_12`") &&
		   strstr(h, "\nAnd 2 more host sites.\n"),
	   "host memory: its first 10 sites, and 2 more");
	ok(dv && strstr(dv, "| 1 | `dev_1` (m.py:201), device 0 memory |") &&
		   strstr(dv, "| 2 | `dev_2` (m.py:202), device 0 memory |") &&
		   strstr(dv, "| 3 | `dev_3` (m.py:203), device 0 memory |") && !strstr(dv, "more device sites"),
	   "device memory: its 3 sites, though 12 host sites rank before them");
	free(md);
	/* device sites only: one table, no kind named */
	for (int i = 0; i < 12; i++)
		cJSON_DeleteItemFromArray(sites, 0);
	md = render(d, ISC_REPORT_MD);
	ok(md && !strstr(md, "Host memory:") && !strstr(md, "Device memory:") &&
		   strstr(md, "| 3 | `dev_3` (m.py:203), device 0 memory |"),
	   "device sites only: the one table, as before");
	free(md);
	cJSON_Delete(d);
}

int main(int argc, char **argv)
{
	dir = argc > 1 ? argv[1] : "tests/data/report";
	test_full();
	test_old_shape();
	test_damaged_fields();
	test_native();
	test_limits();
	test_summary();
	test_headline_parts();
	test_marks();
	test_quantile_rows();
	test_waits();
	test_memory_rows();
	test_sites_by_kind();
	return tap_done();
}
