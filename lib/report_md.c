/*
 * report_md.c - findings JSON -> Markdown report, and the same Markdown as
 * one self-contained HTML page (cmark in safe mode; pipe tables converted
 * here, since CommonMark has none).
 *
 * Layout, in this order: title; the headline (one bold sentence: where the
 * time goes, the number that shows it, the function to look at with
 * file:line); the verdict line; then the sections "End-to-end latency",
 * "CPU", "GPU", "Memory", "Findings", "Suggestions", "Environment" (titles
 * scripts rely on).  Every field may be missing: it shows as "n/a" or its
 * line is left out.
 *
 * Escaping: every string that came from the workload goes through
 * isc_md_escape() (tables, prose) or code_span() (prose only, and only for
 * strings with nothing a renderer could misread), never raw.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cmark.h>

#include "isc_analyze.h"

struct md {
	struct isc_buf b;
	int err;
};

static void put(struct md *m, const char *s)
{
	if (!m->err)
		m->err = isc_buf_put(&m->b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(struct md *m, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	if (!m->err)
		m->err = isc_buf_put(&m->b, tmp, (size_t)n);
}

static bool is_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

/*
 * Always escaped: characters that start inline markup, HTML, entities, GFM
 * tables/strikethrough or math.  '_' is left alone between two word
 * characters, where CommonMark cannot read it as emphasis (module_name.py).
 * A leading block marker ("- ", "+ ", "--", "=", "1. ", "1) ") is escaped
 * as well, though the report never starts a line with a workload string.
 */
int isc_md_escape(struct isc_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t digits = 0;
	int rc = 0;
	while (p[digits] >= '0' && p[digits] <= '9')
		digits++;
	for (size_t i = 0; p[i] && !rc; i++) {
		unsigned char c = p[i];
		bool esc = strchr("\\`*[]<>#|!~&$_", c) != NULL;
		if (c == '_' && i > 0 && is_alnum(p[i - 1]) && is_alnum(p[i + 1]))
			esc = false;
		bool gap = p[i + 1] == ' ' || p[i + 1] == '\t' || p[i + 1] == '\0';
		if (i == 0 && (c == '=' || ((c == '-' || c == '+') && (gap || p[1] == c))))
			esc = true;
		if (digits && i == digits && (c == '.' || c == ')') && gap)
			esc = true;
		if (c == '\t' || c == '\n' || c == '\r') {
			rc = isc_buf_put_u8(b, ' ');
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			continue; /* control characters are dropped */
		if (esc)
			rc = isc_buf_put_u8(b, '\\');
		if (!rc)
			rc = isc_buf_put_u8(b, c);
	}
	return rc;
}

static void esc(struct md *m, const char *s)
{
	if (!m->err)
		m->err = isc_md_escape(&m->b, s ? s : "");
}

/* `s` when s holds nothing a renderer could misread, else the escaped text. */
static void code_span(struct md *m, const char *s)
{
	bool plain = *s != '\0' && s[0] != ' ' && s[strlen(s) - 1] != ' ';
	for (const unsigned char *p = (const unsigned char *)s; *p && plain; p++)
		if (*p < 0x20 || *p == 0x7f || strchr("`<>|&\\$", *p))
			plain = false;
	if (!plain) {
		esc(m, s);
		return;
	}
	put(m, "`");
	put(m, s);
	put(m, "`");
}

/* ---- number formatting ------------------------------------------------- */
/*
 * Numbers too large for a fixed-point field (only a hand-made or corrupt
 * document has them) are shown in exponent form: "%.0f" of 1e300 does not
 * fit the callers' 64-byte buffers, and a cut number would be a wrong one.
 */
#define FIXED_MAX 1e15

static const char *fmt_ns(char *buf, size_t cap, double ns)
{
	double a = fabs(ns);
	if (a >= FIXED_MAX * 1e9)
		snprintf(buf, cap, "%.3e s", ns / 1e9);
	else if (a < 1e3)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(buf, cap, "%.1f µs", ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	return buf;
}

static const char *fmt_bytes(char *buf, size_t cap, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	double a = fabs(b);
	while (a >= 1024 && u < 4) {
		a /= 1024;
		b /= 1024;
		u++;
	}
	snprintf(buf, cap, a >= FIXED_MAX ? "%.3e %s" : u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

/* Field at path formatted by kind: 'n' ns, 'b' bytes, 'p' percent, 'i' integer, 'r' rate. */
static const char *field(char *buf, size_t cap, const cJSON *o, const char *path, char kind)
{
	double v;
	if (!isc_json_num(o, path, &v) || !isfinite(v)) {
		snprintf(buf, cap, "n/a");
		return buf;
	}
	bool big = fabs(v) >= FIXED_MAX;
	switch (kind) {
	case 'n': return fmt_ns(buf, cap, v);
	case 'b': return fmt_bytes(buf, cap, v);
	case 'p': snprintf(buf, cap, big ? "%.3e %%" : "%.1f %%", v); return buf;
	case 'r': snprintf(buf, cap, big ? "%.3e/s" : "%.1f/s", v); return buf;
	default: snprintf(buf, cap, big ? "%.3e" : "%.0f", v); return buf;
	}
}

static double num(const cJSON *o, const char *path, double def)
{
	double v;
	return isc_json_num(o, path, &v) && isfinite(v) ? v : def;
}

static const char *str(const cJSON *o, const char *path, const char *def)
{
	const char *s = isc_json_str(o, path);
	return s ? s : def;
}

static const cJSON *array(const cJSON *o, const char *path)
{
	const cJSON *a = isc_json_get(o, path);
	return cJSON_IsArray(a) ? a : NULL;
}

/* "(file:line)" / "(file)" escaped, nothing when file is empty. */
static void location(struct md *m, const cJSON *fn, bool parens)
{
	const char *file = str(fn, "file", "");
	double line = num(fn, "line", 0);
	if (!*file)
		return;
	put(m, parens ? "(" : "");
	esc(m, file);
	if (line > 0)
		putf(m, ":%.0f", line);
	put(m, parens ? ")" : "");
}

static const cJSON *top_fn(const cJSON *root, const char *kind)
{
	const cJSON *fn;
	cJSON_ArrayForEach(fn, array(root, "cpu.top_functions"))
		if (!kind || !strcmp(str(fn, "kind", ""), kind))
			return fn;
	return NULL;
}

/* ---- sections ----------------------------------------------------------- */
/* The first line: where the time goes, the number, the function to look at. */
static void headline(struct md *m, const cJSON *root)
{
	double py = num(root, "cpu.split.python_pct", 0), ops = num(root, "cpu.split.ops_pct", 0);
	double off = num(root, "cpu.split.off_cpu_pct", 0);
	const char *cls = str(root, "verdict.class", NULL);
	if (!cls)
		cls = py + ops + off <= 0 ? "unknown" : py >= ops && py >= off ? "python_bound"
						      : ops >= off ? "op_compute_bound" : "io_wait";
	bool contention = !strcmp(cls, "thread_contention");
	const cJSON *fn = top_fn(root, !strcmp(cls, "python_bound") ? "python" : NULL);
	put(m, "**");
	if (!strcmp(cls, "python_bound") && fn) {
		putf(m, "%.0f %% of traced CPU time is Python interpreter time; the hottest function is ", py);
		code_span(m, str(fn, "name", "?"));
		put(m, " ");
		location(m, fn, true);
		putf(m, ", %.0f %% self time.", num(fn, "self_pct", 0));
	} else if (!strcmp(cls, "op_compute_bound") && fn) {
		const cJSON *op = top_fn(root, "op"), *caller = cJSON_GetArrayItem(array(root, "cpu.top_op_callers"), 0);
		putf(m, "%.0f %% of traced CPU time is in torch ops", ops);
		if (op) {
			put(m, "; the heaviest is ");
			code_span(m, str(op, "name", "?"));
			/* self_pct is of all traced time (off-CPU included), not of ops */
			putf(m, " (self time %.0f %% of all traced time)", num(op, "self_pct", 0));
		}
		if (caller) {
			put(m, ", called mostly from ");
			code_span(m, str(caller, "name", "?"));
			put(m, " ");
			location(m, caller, true);
		}
		put(m, ".");
	} else if (contention && fn) {
		putf(m, "%.0f %% of traced time the threads were runnable but not running (%.0f involuntary context "
		     "switches vs %.0f voluntary): the CPUs are oversubscribed; the hottest function is ", off,
		     num(root, "cpu.split.involuntary_switches", 0), num(root, "cpu.split.voluntary_switches", 0));
		code_span(m, str(fn, "name", "?"));
		put(m, " ");
		location(m, fn, true);
		put(m, ".");
	} else if (!strcmp(cls, "io_wait") && fn) {
		putf(m, "%.0f %% of traced time the threads were off-CPU, blocked inside calls; the hottest function is ",
		     off);
		code_span(m, str(fn, "name", "?"));
		put(m, " ");
		location(m, fn, true);
		put(m, ".");
	} else {
		put(m, "No traced function time was recorded: is the workload a Python program run under iscope-record?");
	}
	put(m, "**\n\n");
	char b1[64], b2[64];
	const char *sc = str(root, "iterations.name", NULL);
	putf(m, "Verdict: **%s**", cls);
	if (isc_json_num(root, "verdict.confidence", &(double){ 0 }))
		putf(m, " (confidence %.2f)", num(root, "verdict.confidence", 0));
	putf(m, ". Wall time %s", field(b1, sizeof(b1), root, "summary.wall_ns", 'n'));
	if (sc && num(root, "iterations.count", 0) > 0) {
		putf(m, ", %.0f iterations of ", num(root, "iterations.count", 0));
		code_span(m, sc);
		putf(m, ", median %s", field(b2, sizeof(b2), root, "iterations.latency_ns.p50", 'n'));
	}
	put(m, ".\n");
	if (cJSON_IsTrue(isc_json_get(root, "summary.damaged")))
		put(m, "\n> The input was damaged: this report covers the part that could be read.\n");
	const char *end = str(root, "summary.end_reason", "");
	if (!strcmp(end, "signaled"))
		putf(m, "\n> The workload was killed by signal %s (exit status %s): the trace holds what it "
			"recorded until then.\n",
		     field(b1, sizeof(b1), root, "summary.exit_signal", 'i'),
		     field(b2, sizeof(b2), root, "summary.exit_status", 'i'));
	else if (!strcmp(end, "cut"))
		put(m, "\n> The recording was cut short (no end record: the recorder was killed, or the trace "
		       "was truncated): this report covers what was written.\n");
}

static void sec_latency(struct md *m, const cJSON *root)
{
	char b[8][64];
	put(m, "\n## End-to-end latency\n\n");
	const char *name = str(root, "iterations.name", NULL);
	if (!name || num(root, "iterations.count", 0) <= 0) {
		put(m, "No iterations recorded. Wrap one request in `with scope(\"step\"):` "
		       "(`from inferscope import scope`) to get per-iteration latency.\n");
	} else {
		put(m, "| Scope | Iterations | Warm-up excluded | p50 | p90 | p99 | Mean | Min | Max |\n");
		put(m, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n| ");
		esc(m, name);
		putf(m, " | %s | %s | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, root, "iterations.count", 'i'),
		     field(b[1], 64, root, "iterations.warmup_excluded", 'i'),
		     field(b[2], 64, root, "iterations.latency_ns.p50", 'n'),
		     field(b[3], 64, root, "iterations.latency_ns.p90", 'n'),
		     field(b[4], 64, root, "iterations.latency_ns.p99", 'n'),
		     field(b[5], 64, root, "iterations.latency_ns.mean", 'n'),
		     field(b[6], 64, root, "iterations.latency_ns.min", 'n'),
		     field(b[7], 64, root, "iterations.latency_ns.max", 'n'));
		put(m, "\n95 % confidence intervals (distribution-free, from order statistics):");
		static const char *const q[] = { "p50", "p90", "p99" };
		for (int i = 0; i < 3; i++) {
			char lo[64], hi[64];
			snprintf(lo, sizeof(lo), "iterations.latency_ci95_ns.%s.low", q[i]);
			snprintf(hi, sizeof(hi), "iterations.latency_ci95_ns.%s.high", q[i]);
			double v;
			if (isc_json_num(root, lo, &v) && isc_json_num(root, hi, &v))
				putf(m, " %s %s – %s%s", q[i], field(b[0], 64, root, lo, 'n'),
				     field(b[1], 64, root, hi, 'n'), i < 2 ? ";" : ".");
			else
				putf(m, " %s needs more iterations%s", q[i], i < 2 ? ";" : ".");
		}
		put(m, "\n");
		const char *rule = str(root, "iterations.rule", NULL);
		if (rule) {
			put(m, "\nRule: ");
			esc(m, rule);
			put(m, ".\n");
		}
	}
	putf(m, "\nWall time %s; %s events recorded, %s dropped.\n", field(b[0], 64, root, "summary.wall_ns", 'n'),
	     field(b[1], 64, root, "summary.events", 'i'), field(b[2], 64, root, "summary.dropped_events", 'i'));
}

/* A function table; the total column only when with_total. */
static void fn_table(struct md *m, const cJSON *fns, bool with_total)
{
	char b[4][64];
	const cJSON *fn;
	int i = 0;
	put(m, with_total ? "| # | Function | Kind | Location | Calls | Self | Total | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|---:|\n"
			  : "| # | Function | Kind | Location | Calls | Self | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(fn, fns) {
		putf(m, "| %d | ", ++i);
		esc(m, str(fn, "name", "?"));
		put(m, " | ");
		esc(m, str(fn, "kind", "?"));
		put(m, " | ");
		location(m, fn, false);
		putf(m, " | %s | %s |", field(b[0], 64, fn, "calls", 'i'), field(b[1], 64, fn, "self_ns", 'n'));
		if (with_total)
			putf(m, " %s |", field(b[2], 64, fn, "total_ns", 'n'));
		putf(m, " %s |\n", field(b[3], 64, fn, "self_pct", 'p'));
	}
}

static void sec_cpu(struct md *m, const cJSON *root)
{
	char b[8][64];
	put(m, "\n## CPU\n\n");
	putf(m, "Traced time %s on %s traced threads, split into:\n\n", field(b[0], 64, root, "cpu.split.traced_ns", 'n'),
	     field(b[1], 64, root, "summary.traced_threads", 'i'));
	put(m, "| Python interpreter | torch ops | off-CPU waiting |\n|---:|---:|---:|\n");
	putf(m, "| %s (%s) | %s (%s) | %s (%s) |\n", field(b[0], 64, root, "cpu.split.python_ns", 'n'),
	     field(b[1], 64, root, "cpu.split.python_pct", 'p'), field(b[2], 64, root, "cpu.split.ops_ns", 'n'),
	     field(b[3], 64, root, "cpu.split.ops_pct", 'p'), field(b[4], 64, root, "cpu.split.off_cpu_ns", 'n'),
	     field(b[5], 64, root, "cpu.split.off_cpu_pct", 'p'));
	if (!cJSON_IsTrue(isc_json_get(root, "cpu.split.off_cpu_measured")))
		put(m, "\nOff-CPU time was not measured (no CPU samples of the traced threads).\n");
	putf(m, "\nContext switches: %s voluntary, %s involuntary.\n",
	     field(b[0], 64, root, "cpu.context_switches.voluntary_per_s", 'r'),
	     field(b[1], 64, root, "cpu.context_switches.involuntary_per_s", 'r'));

	put(m, "\n### Top functions by self time\n\n");
	if (!cJSON_GetArraySize(array(root, "cpu.top_functions"))) {
		put(m, "No function spans recorded.\n");
	} else {
		fn_table(m, array(root, "cpu.top_functions"), true);
		put(m, "\nSelf % is of the traced time; total time counts a recursive function once (its outermost "
		       "call).\n");
	}
	if (cJSON_GetArraySize(array(root, "cpu.top_functions_in_scopes"))) {
		put(m, "\n### Top functions inside iterations\n\nThe same while a `scope` was open (start-up and "
		       "imports left out); self % is of the ");
		put(m, field(b[0], 64, root, "cpu.scoped_ns", 'n'));
		put(m, " spent inside scopes.\n\n");
		fn_table(m, array(root, "cpu.top_functions_in_scopes"), false);
	}

	put(m, "\n### Threads\n");
	const cJSON *p, *t;
	cJSON_ArrayForEach(p, array(root, "processes")) {
		putf(m, "\nProcess %s", field(b[0], 64, p, "pid", 'i'));
		if (isc_json_num(p, "ppid", &(double){ 0 }))
			putf(m, " (parent %s)", field(b[0], 64, p, "ppid", 'i'));
		const char *cmd = str(p, "command", "");
		if (*cmd) {
			put(m, ": ");
			esc(m, cmd);
		}
		putf(m, ". CPU %s", field(b[0], 64, p, "cpu_ns", 'n'));
		if (isc_json_num(p, "exit_status", &(double){ 0 }))
			putf(m, ", exit status %s", field(b[0], 64, p, "exit_status", 'i'));
		putf(m, ", context switches %s voluntary, %s involuntary.\n\n",
		     field(b[0], 64, p, "context_switches.voluntary_per_s", 'r'),
		     field(b[1], 64, p, "context_switches.involuntary_per_s", 'r'));
		put(m, "| TID | Name | CPU | Traced | Events | Python | Ops | Off-CPU |\n");
		put(m, "|---:|---|---:|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(t, array(p, "threads")) {
			putf(m, "| %s | ", field(b[0], 64, t, "tid", 'i'));
			esc(m, str(t, "name", ""));
			putf(m, " | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, t, "cpu_ns", 'n'),
			     cJSON_IsTrue(isc_json_get(t, "traced")) ? "yes" : "no", field(b[1], 64, t, "events", 'i'),
			     field(b[2], 64, t, "python_ns", 'n'), field(b[3], 64, t, "ops_ns", 'n'),
			     field(b[4], 64, t, "off_cpu_ns", 'n'));
		}
	}
}

/* s escaped, cut to about max bytes (at a UTF-8 boundary) with an ellipsis: kernel names run to kilobytes. */
static void esc_cut(struct md *m, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max) {
		esc(m, s);
		return;
	}
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	char *c = strndup(s, max);
	if (!c) {
		m->err = -ENOMEM;
		return;
	}
	esc(m, c);
	put(m, "…");
	free(c);
}

/* One row of a GPU name table: "| name | count | time |". */
static void name_rows(struct md *m, const cJSON *arr, const char *kind)
{
	char b[2][64];
	const cJSON *x;
	cJSON_ArrayForEach(x, arr) {
		putf(m, "| %s | ", kind);
		esc(m, str(x, "name", "?"));
		putf(m, " | %s | %s |\n", field(b[0], 64, x, "count", 'i'), field(b[1], 64, x, "total_ns", 'n'));
	}
}

/* The host's functions that overlapped a device's idle gaps. */
static void host_idle_table(struct md *m, const cJSON *dev)
{
	char b[4][64];
	const cJSON *x;
	int n = cJSON_GetArraySize(array(dev, "host_during_idle.ops")) +
		cJSON_GetArraySize(array(dev, "host_during_idle.python"));
	if (!n)
		return;
	putf(m, "\nWhile this GPU sat idle (%s), the host was in:\n\n",
	     field(b[0], 64, dev, "host_during_idle.idle_ns", 'n'));
	put(m, "| Function | Kind | Location | In idle gaps | Self | Of idle time |\n|---|---|---|---:|---:|---:|\n");
	for (int k = 0; k < 2; k++)
		cJSON_ArrayForEach(x, array(dev, k ? "host_during_idle.python" : "host_during_idle.ops")) {
			put(m, "| ");
			esc(m, str(x, "name", "?"));
			put(m, k ? " | python | " : " | op | ");
			location(m, x, false);
			putf(m, " | %s | %s | %s |\n", field(b[1], 64, x, "idle_ns", 'n'),
			     field(b[2], 64, x, "self_idle_ns", 'n'), field(b[3], 64, x, "idle_pct", 'p'));
		}
	put(m, "\nIn idle gaps: time of the span (its outermost call) inside the GPU's idle gaps; self: without "
	       "its children.\n");
}

static void sec_gpu(struct md *m, const cJSON *root)
{
	char b[8][64];
	const cJSON *dev, *s, *x;
	put(m, "\n## GPU\n\n");
	if (!cJSON_GetArraySize(array(root, "gpu.devices"))) {
		put(m, "No GPU activity recorded.\n");
		return;
	}
	bool hta = !strcmp(str(root, "gpu.mode", ""), "hta-compat");
	put(m, hta ? "Numbers by HTA's rules (`--hta-compat`: times rounded to whole µs, cuda\\_sync counted as GPU "
		     "time). "
		   : "Exact numbers (ns), with HTA's definitions. ");
	put(m, "ProfilerStep rule: ");
	esc(m, str(root, "gpu.step_rule", "n/a"));
	put(m, ".\n");
	cJSON_ArrayForEach(dev, array(root, "gpu.devices")) {
		putf(m, "\n### Device %s", field(b[0], 64, dev, "id", 'i'));
		const char *name = str(dev, "name", "");
		if (*name) {
			put(m, ": ");
			esc(m, name);
		}
		putf(m, "\n\n%s GPU ops.\n\n", field(b[0], 64, dev, "ops", 'i'));
		static const char *const part[] = { "idle", "compute", "non_compute" };
		put(m, "| Span | Idle | Compute | Non-compute |\n|---:|---:|---:|---:|\n| ");
		put(m, field(b[0], 64, dev, "temporal_breakdown.span_ns", 'n'));
		for (int i = 0; i < 3; i++) { /* 2 decimals, as HTA gives them */
			char path[64];
			double v;
			snprintf(path, sizeof(path), "temporal_breakdown.%s_ns", part[i]);
			putf(m, " | %s", field(b[1], 64, dev, path, 'n'));
			snprintf(path, sizeof(path), "temporal_breakdown.%s_pct", part[i]);
			if (isc_json_num(dev, path, &v) && isfinite(v))
				putf(m, " (%.2f %%)", v);
		}
		put(m, " |\n");
		put(m, "\nIdle time by stream: host wait (the op's launch call began after the previous op ended), "
		       "kernel wait (gap < 30 µs), other; queue: ops launched and not finished.\n\n");
		put(m, "| Stream | Ops | Host wait | Kernel wait | Other | Queue mean | Queue max |\n"
		       "|---:|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(s, array(dev, "streams")) {
			double q;
			char qm[32] = "n/a";
			if (isc_json_num(s, "queue_length.mean", &q))
				snprintf(qm, sizeof(qm), "%.2f", q);
			putf(m, "| %s | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, s, "id", 'i'),
			     field(b[1], 64, s, "ops", 'i'), field(b[2], 64, s, "idle_breakdown.host_wait_ns", 'n'),
			     field(b[3], 64, s, "idle_breakdown.kernel_wait_ns", 'n'),
			     field(b[4], 64, s, "idle_breakdown.other_ns", 'n'), qm,
			     field(b[5], 64, s, "queue_length.max", 'i'));
		}
		host_idle_table(m, dev);
	}

	put(m, "\n### Top kernels\n\n");
	putf(m, "%s kernels of %s names, %s in all; these cover %s of the time.\n\n",
	     field(b[0], 64, root, "gpu.kernels.count", 'i'), field(b[1], 64, root, "gpu.kernels.distinct", 'i'),
	     field(b[2], 64, root, "gpu.kernels.total_ns", 'n'), field(b[3], 64, root, "gpu.kernels.top_pct", 'p'));
	if (cJSON_GetArraySize(array(root, "gpu.kernels.top"))) {
		int i = 0;
		put(m, "| # | Kernel | Count | Total | Mean | Min | Max | Share |\n|---:|---|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, array(root, "gpu.kernels.top")) {
			putf(m, "| %d | ", ++i);
			esc_cut(m, str(x, "name", "?"), 120);
			putf(m, " | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, x, "count", 'i'),
			     field(b[1], 64, x, "total_ns", 'n'), field(b[2], 64, x, "mean_ns", 'n'),
			     field(b[3], 64, x, "min_ns", 'n'), field(b[4], 64, x, "max_ns", 'n'),
			     field(b[5], 64, x, "pct", 'p'));
		}
		if (num(root, "gpu.kernels.others.count", 0) > 0)
			putf(m, "| | %s other names | %s | %s | | | | |\n",
			     field(b[0], 64, root, "gpu.kernels.others.distinct", 'i'),
			     field(b[1], 64, root, "gpu.kernels.others.count", 'i'),
			     field(b[2], 64, root, "gpu.kernels.others.total_ns", 'n'));
	}

	put(m, "\n### Launches\n\n");
	putf(m, "%s launch calls paired with their GPU op; launch delay (op start - call end) median %s, p90 %s, "
		"max %s.\n\n",
	     field(b[0], 64, root, "gpu.launch.launches", 'i'), field(b[1], 64, root, "gpu.launch.delay_ns.p50", 'n'),
	     field(b[2], 64, root, "gpu.launch.delay_ns.p90", 'n'), field(b[3], 64, root, "gpu.launch.delay_ns.max", 'n'));
	put(m, "| GPU op shorter than its launch call | Launch call > 50 µs | Delay > 100 µs | Kernels < 10 µs |\n"
	       "|---:|---:|---:|---:|\n");
	putf(m, "| %s | %s | %s | %s of %s |\n", field(b[0], 64, root, "gpu.launch.gpu_op_shorter_than_launch", 'i'),
	     field(b[1], 64, root, "gpu.launch.launch_call_over_50us", 'i'),
	     field(b[2], 64, root, "gpu.launch.delay_over_100us", 'i'),
	     field(b[3], 64, root, "gpu.launch.short_kernels_under_10us", 'i'),
	     field(b[4], 64, root, "gpu.launch.kernels", 'i'));

	if (cJSON_GetArraySize(array(root, "gpu.memcpy"))) {
		put(m, "\n### Memcpy and memset\n\n| Kind | Direction | From | To | Count | Bytes | Time | Bandwidth |\n"
		       "|---|---|---|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, array(root, "gpu.memcpy")) {
			double bw;
			char bws[32] = "n/a";
			if (isc_json_num(x, "bandwidth_gb_per_s", &bw))
				snprintf(bws, sizeof(bws), "%.2f GB/s", bw);
			put(m, "| ");
			esc(m, str(x, "kind", "?"));
			put(m, " | ");
			esc(m, str(x, "direction", ""));
			put(m, " | ");
			esc(m, str(x, "src_memory", ""));
			put(m, " | ");
			esc(m, str(x, "dst_memory", ""));
			putf(m, " | %s | %s | %s | %s |\n", field(b[0], 64, x, "count", 'i'), field(b[1], 64, x, "bytes", 'b'),
			     field(b[2], 64, x, "total_ns", 'n'), bws);
		}
	}

	if (cJSON_GetArraySize(array(root, "gpu.sync.ops")) || cJSON_GetArraySize(array(root, "gpu.sync.api_calls"))) {
		putf(m, "\n### Synchronization\n\n%s in cuda\\_sync operations, %s in synchronising calls.\n\n",
		     field(b[0], 64, root, "gpu.sync.ops_total_ns", 'n'), field(b[1], 64, root, "gpu.sync.api_total_ns", 'n'));
		put(m, "| Kind | Name | Count | Time |\n|---|---|---:|---:|\n");
		name_rows(m, array(root, "gpu.sync.ops"), "GPU op");
		name_rows(m, array(root, "gpu.sync.api_calls"), "call");
	}
}

static void sec_memory(struct md *m, const cJSON *root)
{
	char b[8][64], growth[80];
	put(m, "\n## Memory\n\n");
	put(m, "| RSS peak | RSS growth after warm-up | Major faults | Minor faults | Swap used (max) |\n");
	put(m, "|---:|---:|---:|---:|---:|\n");
	double g;
	if (isc_json_num(root, "memory.rss_growth_bytes_per_s", &g) && isfinite(g))
		snprintf(growth, sizeof(growth), "%s/s", fmt_bytes(b[7], 64, g));
	else
		snprintf(growth, sizeof(growth), "n/a");
	putf(m, "| %s | %s | %s | %s | %s |\n", field(b[0], 64, root, "memory.rss_peak_bytes", 'b'), growth,
	     field(b[2], 64, root, "memory.major_faults", 'i'), field(b[3], 64, root, "memory.minor_faults", 'i'),
	     field(b[4], 64, root, "memory.swap_used_bytes_max", 'b'));
	putf(m, "\nPressure stall (highest 10 s average, some): CPU %s, memory %s, I/O %s.\n",
	     field(b[0], 64, root, "memory.pressure.cpu.some_avg10_max", 'p'),
	     field(b[1], 64, root, "memory.pressure.memory.some_avg10_max", 'p'),
	     field(b[2], 64, root, "memory.pressure.io.some_avg10_max", 'p'));
	put(m, "\nRSS is the sum over the recorded processes; growth is the least-squares slope after the "
	       "first 10 % of the run.\n");
}

static void sec_findings(struct md *m, const cJSON *root)
{
	const cJSON *f, *arr = array(root, "findings");
	put(m, "\n## Findings\n\n");
	if (!cJSON_GetArraySize(arr))
		put(m, "No findings.\n");
	int i = 0;
	cJSON_ArrayForEach(f, arr) {
		putf(m, "%d. **", ++i);
		esc(m, str(f, "title", "?"));
		put(m, "** (");
		esc(m, str(f, "severity", "info"));
		put(m, ")");
		const cJSON *e, *ev = isc_json_get(f, "evidence");
		bool first = true;
		if (!cJSON_IsObject(ev))
			ev = NULL;
		cJSON_ArrayForEach(e, ev) {
			if (!cJSON_IsNumber(e) && !cJSON_IsString(e))
				continue;
			put(m, first ? ". Evidence: " : ", ");
			first = false;
			esc(m, e->string);
			put(m, " = ");
			if (cJSON_IsNumber(e))
				putf(m, "%.15g", e->valuedouble);
			else
				esc(m, e->valuestring);
		}
		put(m, first ? "\n" : ".\n");
	}
}

static void sec_suggestions(struct md *m, const cJSON *root)
{
	const cJSON *f;
	bool any = false;
	put(m, "\n## Suggestions\n\n");
	cJSON_ArrayForEach(f, array(root, "findings")) {
		const char *s = str(f, "suggestion", NULL);
		if (!s)
			continue;
		any = true;
		put(m, "- ");
		esc(m, s);
		double sv;
		if (isc_json_num(f, "estimated_saving_pct", &sv) && isfinite(sv))
			putf(m, " (estimated saving: up to %.0f %% of traced time)", sv);
		put(m, "\n");
	}
	if (!any)
		put(m, "None.\n");
}

static void sec_environment(struct md *m, const cJSON *root)
{
	char b[4][64];
	put(m, "\n## Environment\n\n| | |\n|---|---|\n| Host | ");
	esc(m, str(root, "environment.host", "n/a"));
	put(m, " |\n| Command | ");
	esc(m, str(root, "environment.cmdline", "n/a"));
	putf(m, " |\n| CPUs | %s |\n| Sample rate | %s Hz |\n", field(b[0], 64, root, "environment.ncpu", 'i'),
	     field(b[1], 64, root, "environment.sample_hz", 'i'));
	put(m, "| Analyzer | ");
	esc(m, str(root, "tool.name", "n/a"));
	put(m, " ");
	esc(m, str(root, "tool.version", ""));
	putf(m, " (findings schema %s) |\n", field(b[2], 64, root, "schema_version", 'i'));
}

static int render_md(const cJSON *root, struct md *m)
{
	put(m, "# InferScope report\n\n");
	headline(m, root);
	sec_latency(m, root);
	sec_cpu(m, root);
	sec_gpu(m, root);
	sec_memory(m, root);
	sec_findings(m, root);
	sec_suggestions(m, root);
	sec_environment(m, root);
	if (!m->err)
		m->err = isc_buf_put_u8(&m->b, '\0');
	return m->err;
}

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<title>InferScope report</title>\n<style>\n"
	"body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#222}\n"
	"code{background:#f3f3f3;padding:0 .2em}\n"
	"h2{border-bottom:1px solid #ddd;margin-top:2rem}\n"
	"blockquote{border-left:4px solid #c60;margin:0;padding-left:1rem}\n"
	"table{border-collapse:collapse;margin:1rem 0}\n"
	"th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}\n"
	"th{background:#f3f3f3}\n.r{text-align:right}\n"
	"</style>\n</head>\n<body>\n";
static const char html_tail[] = "</body>\n</html>\n";

/* Appends cmark's safe HTML for Markdown text md[0, len). */
static void cmark_put(struct md *m, const char *md, size_t len, bool inline_only)
{
	char *h = cmark_markdown_to_html(md, len, CMARK_OPT_SAFE);
	if (!h) {
		m->err = -ENOMEM;
		return;
	}
	size_t n = strlen(h);
	if (inline_only && n >= 9 && !strncmp(h, "<p>", 3) && !strcmp(h + n - 5, "</p>\n")) {
		h[n - 5] = '\0';
		put(m, h + 3);
	} else {
		put(m, h);
	}
	free(h);
}

/* Splits a table line into cells at unescaped '|'; returns the count. */
static size_t table_cells(const char *line, size_t len, const char **cell, size_t *clen, size_t max)
{
	size_t n = 0, start = 1; /* the line starts with '|' */
	for (size_t i = 1; i < len; i++) {
		if (line[i] == '\\') {
			i++;
			continue;
		}
		if (line[i] != '|')
			continue;
		if (n < max) {
			size_t a = start, b = i;
			while (a < b && line[a] == ' ')
				a++;
			while (b > a && line[b - 1] == ' ')
				b--;
			cell[n] = line + a;
			clen[n] = b - a;
			n++;
		}
		start = i + 1;
	}
	return n;
}

static bool is_table_start(const char *p)
{
	const char *nl = strchr(p, '\n');
	return *p == '|' && nl && !strncmp(nl + 1, "|---", 4);
}

/*
 * The Markdown as HTML.  CommonMark (cmark) has no tables, so the report's
 * pipe tables are converted here: the structure from the table syntax,
 * every cell's content through cmark (header cells are fixed strings of
 * this file and only HTML-escaped).  Everything else goes to cmark whole.
 */
static void md_to_html(struct md *m, const char *md)
{
	enum { MAXC = 16 };
	const char *p = md, *text = md;
	while (*p) { /* p is at the start of a line */
		if (!is_table_start(p)) {
			const char *nl = strchr(p, '\n');
			p = nl ? nl + 1 : p + strlen(p);
			continue;
		}
		cmark_put(m, text, (size_t)(p - text), false);
		const char *cell[MAXC];
		size_t clen[MAXC], nh, nd;
		const char *nl = strchr(p, '\n');
		nh = table_cells(p, (size_t)(nl - p), cell, clen, MAXC);
		bool right[MAXC] = { false };
		const char *d = nl + 1, *dnl = strchr(d, '\n');
		const char *dcell[MAXC];
		size_t dlen[MAXC];
		nd = table_cells(d, dnl ? (size_t)(dnl - d) : strlen(d), dcell, dlen, MAXC);
		for (size_t i = 0; i < nd && i < MAXC; i++)
			right[i] = dlen[i] && dcell[i][dlen[i] - 1] == ':';
		put(m, "<table>\n<thead><tr>");
		for (size_t i = 0; i < nh; i++) {
			put(m, right[i] ? "<th class=\"r\">" : "<th>");
			for (size_t k = 0; k < clen[i]; k++) {
				char c = cell[i][k];
				put(m, c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : (char[]){ c, 0 });
			}
			put(m, "</th>");
		}
		put(m, "</tr></thead>\n<tbody>\n");
		p = dnl ? dnl + 1 : d + strlen(d);
		while (*p == '|') {
			nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p), n = table_cells(p, len, cell, clen, MAXC);
			put(m, "<tr>");
			for (size_t i = 0; i < n; i++) {
				put(m, right[i] ? "<td class=\"r\">" : "<td>");
				cmark_put(m, cell[i], clen[i], true);
				put(m, "</td>");
			}
			put(m, "</tr>\n");
			p += len + (nl != NULL);
		}
		put(m, "</tbody>\n</table>\n");
		text = p;
	}
	cmark_put(m, text, (size_t)(p - text), false);
}

int isc_report_render(const cJSON *root, enum isc_report_format f, char **out)
{
	struct md m = { { 0 }, 0 };
	*out = NULL;
	if (!cJSON_IsObject(root)) {
		isc_err_push("not a findings document (not a JSON object)");
		return -EINVAL;
	}
	if (render_md(root, &m))
		goto oom;
	if (f == ISC_REPORT_MD) {
		*out = (char *)m.b.data;
		return 0;
	}
	struct md h = { { 0 }, 0 };
	put(&h, html_head);
	md_to_html(&h, (const char *)m.b.data);
	put(&h, html_tail);
	isc_buf_free(&m.b);
	if (h.err || isc_buf_put_u8(&h.b, '\0')) {
		isc_buf_free(&h.b);
		goto oom;
	}
	*out = (char *)h.b.data;
	return 0;
oom:
	isc_buf_free(&m.b);
	isc_err_push("out of memory");
	return -ENOMEM;
}
