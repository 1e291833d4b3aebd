/* iscope-analyze: a timeline in, findings JSON out (see iscope-analyze(1)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_config.h"
#include "isc_config_api.h"
#include "tool.h"
#include "isc_merge.h"
#include "isc_job.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL, "write the findings to FILE instead of stdout" },
	{ "pretty", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_ANALYZE_PRETTY", "pretty", "false", "indent the JSON" },
	{ "top", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_ANALYZE_TOP", "top", "30",
	  "number of functions in cpu.top_functions" },
	{ "hta-compat", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_ANALYZE_HTA_COMPAT", "hta_compat", "false",
	  "GPU numbers by HTA's rules (whole µs, last ProfilerStep dropped), to compare with it" },
	{ "baseline", 0, ISC_OPT_VALUE, "FILE", NULL, NULL, NULL,
	  "compare with the findings FILE of an earlier run (repeat for several runs): adds comparison" },
	{ "history", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false",
	  "the operands are findings of a series, oldest first: adds history (change points) to the newest" },
	{ "job", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false",
	  "the operands are findings of the ranks of one job (each rank analysed where it ran): the job view from them" },
	{ "threshold", 0, ISC_OPT_VALUE, "PCT", "INFERSCOPE_ANALYZE_THRESHOLD", "threshold", "5",
	  "smallest change of the median called regressed or improved, percent" },
	{ "latency-basis", 0, ISC_OPT_VALUE, "BASIS", "INFERSCOPE_ANALYZE_LATENCY_BASIS", "latency_basis", "auto",
	  "auto: iterations less their waits for a CPU when every run has them; wall: wall time" },
	{ "fail-on-regression", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_FAIL_ON_REGRESSION", "fail_on_regression", "false",
	  "exit with status 3 when the comparison (or the history) says regressed" },
	{ "no-compensation", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_ANALYZE_NO_COMPENSATION", "no_compensation", "false",
	  "keep the recorder's measured cost per event in the times (exact Python mode)" },
	{ "native-nodes", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_ANALYZE_NATIVE_NODES", "native_nodes", "4096",
	  "at most N nodes in the native stack tree (native.tree, the flame graphs), 16 to 1000000" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false",
	  "no progress line and no summary on stderr" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-analyze", opts, sizeof(opts) / sizeof(opts[0]), false,
	"[OPTION]... [--baseline FILE]... [TIMELINE|TRACE|FINDINGS]\n"
	"   or: iscope-analyze [OPTION]... RANK_TRACE...\n   or: iscope-analyze --history [OPTION]... FINDINGS...\n"
	"   or: iscope-analyze --job [OPTION]... FINDINGS...",
	"Reads a timeline (.istl from iscope-merge), a trace (.isc, merged on the fly)\n"
	"or a PyTorch profiler trace (Kineto JSON); stdin when none or '-'.  Writes\n"
	"findings JSON: summary, processes and threads, iterations and latency,\n"
	"CPU hot functions and time split, GPU time by device and stream (HTA's\n"
	"definitions), memory, verdict and findings.  INPUT may also be findings\n"
	"JSON (with --baseline or --history).  Exit status 3 with\n"
	"--fail-on-regression when the verdict is regressed.",
};

struct progress {
	struct timespec start;
	bool shown;
};

/* Live line on stderr (only when it is a terminal): events read and rate. */
static void show_progress(void *ctx, uint64_t events, uint64_t ts_ns)
{
	struct progress *p = ctx;
	struct timespec now;
	(void)ts_ns;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double s = (double)(now.tv_sec - p->start.tv_sec) + (double)(now.tv_nsec - p->start.tv_nsec) / 1e9;
	fprintf(stderr, "\r\033[Kiscope-analyze: %.1fM events read, %.1fM events/s", (double)events / 1e6,
		s > 0 ? (double)events / 1e6 / s : 0.0);
	p->shown = true;
}

/* Findings JSON from the file name (or stdin) into *doc; 0 or -1 with the error printed. */
static int load_findings(const char *name, cJSON **doc)
{
	const char *shown;
	FILE *f = isc_tool_in_open(name, &shown);
	if (!f)
		return -1;
	int rc = isc_findings_read(f, doc);
	if (rc)
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
	isc_tool_in_close(f);
	return rc ? -1 : 0;
}

/*
 * The n inputs of one job (names: Kineto traces, or the traces of several
 * hosts) merged in memory as iscope-merge would and analysed (*doc, *res);
 * returns the exit status: 0, 1 (*doc may be set: a damaged input) or 2
 * (not one job, or inputs that are not a job's), the errors printed.
 */
static int analyze_job_inputs(int n, char **names, const struct isc_analyze_opts *ao, cJSON **doc,
			      struct isc_analyze_result *res)
{
	struct isc_merge_input *in = calloc((size_t)n, sizeof(*in));
	FILE **raw = calloc((size_t)n, sizeof(*raw));
	enum isc_input_kind *kind = calloc((size_t)n, sizeof(*kind));
	struct isc_tl_header *hdr = calloc((size_t)n, sizeof(*hdr));
	struct isc_job_result jr = { 0 };
	int status = 1, opened = 0;
	if (!in || !raw || !kind || !hdr) {
		isc_log(ISC_LOG_ERROR, "out of memory");
		goto out;
	}
	for (; opened < n; opened++) {
		if (!(raw[opened] = isc_tool_in_open(names[opened], &in[opened].name)))
			goto out;
		if (isc_input_open_hdr(raw[opened], &in[opened].in, &kind[opened], &hdr[opened])) {
			isc_log(ISC_LOG_ERROR, "%s: %s", names[opened], isc_err_msg());
			isc_tool_in_close(raw[opened]);
			goto out;
		}
	}
	/* iscope-merge's rule: several Kineto traces, or traces of several boots (hosts) */
	bool job = false;
	for (int i = 0; i < n; i++) {
		job |= kind[i] == ISC_INPUT_KINETO;
		for (int j = 0; j < i && kind[i] == ISC_INPUT_TRACE; j++)
			job |= kind[j] == ISC_INPUT_TRACE && strcmp(hdr[i].boot_id, hdr[j].boot_id);
	}
	for (int i = 0; i < n; i++)
		if (!job || (kind[i] != ISC_INPUT_KINETO && kind[i] != ISC_INPUT_TRACE)) {
			status = isc_tool_usage_error(&tool, "%s: several inputs must be one job's ranks (Kineto traces, or "
							     "traces of several hosts); merge them first with iscope-merge",
						      in[i].name);
			goto out;
		}
	int rc = isc_analyze_run_job(in, kind, hdr, (size_t)n, ao, doc, res, &jr);
	if (rc == -EINVAL && jr.conflict[0]) {
		isc_log(ISC_LOG_ERROR, "not one job: %s", jr.conflict);
		status = 2;
		goto out;
	}
	if (res->merge.bad_input) /* a damaged input: the job is analysed with its prefix, then exit 1 */
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events)", in[res->merge.bad_input - 1].name, res->merge.damage,
			(unsigned long long)res->merge.events_out);
	if (rc < 0)
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
	for (size_t s = 0; s < jr.nsources; s++)
		if (!jr.sources[s].ranks[0])
			isc_log(ISC_LOG_WARN, "%s: no rank (%s): merged on its own clock, as it is", jr.sources[s].name,
				jr.sources[s].kineto ? "no distributedInfo" : "no dist.* marks");
	if (jr.nmissing)
		isc_log(ISC_LOG_WARN, "%zu of %u ranks present; missing ranks %s%s", jr.nranks, jr.world_size, jr.missing,
			strlen(jr.missing) + 1 >= sizeof(jr.missing) ? "..." : "");
	status = rc < 0 || res->merge.bad_input ? 1 : 0;
out:
	for (int i = 0; i < opened; i++) {
		fclose(in[i].in);
		isc_tool_in_close(raw[i]);
	}
	free(in);
	free(raw);
	free(kind);
	free(hdr);
	isc_job_result_free(&jr);
	return status;
}

/*
 * Every --baseline value, in command-line order (getopt_long keeps an
 * option's argument next to it when it permutes argv; the parser has
 * accepted each one, so an unambiguous prefix "--base" is the option too).
 */
static size_t baselines(int argc, char **argv, int first, const char **out)
{
	size_t n = 0;
	for (int i = 1; i < first && i < argc; i++) {
		const char *a = argv[i], *eq;
		if (!strcmp(a, "--"))
			break;
		if (strncmp(a, "--", 2) || strlen(a) < 4)
			continue;
		size_t len = (eq = strchr(a, '=')) ? (size_t)(eq - a - 2) : strlen(a) - 2;
		if (len > strlen("baseline") || strncmp(a + 2, "baseline", len))
			continue;
		if (eq)
			out[n++] = eq + 1;
		else if (i + 1 < argc)
			out[n++] = argv[++i];
	}
	return n;
}

/* True when the newest change point of an iteration-latency metric is a regression. */
static bool history_regressed(const cJSON *doc)
{
	const cJSON *m, *c, *last = NULL;
	bool any = false;
	cJSON_ArrayForEach(m, isc_doc_get(doc, "history.metrics")) {
		const char *path = isc_doc_str(m, "path", NULL);
		if (!path || (strncmp(path, "iterations.latency_ns", 21) && strcmp(path, "summary.wall_ns")))
			continue;
		last = NULL;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "change_points"))
			last = c;
		const char *d = last ? isc_doc_str(last, "direction", NULL) : NULL;
		any = any || (d && !strcmp(d, "regressed"));
	}
	return any;
}

/*
 * The operands of --job and --history: the findings documents
 * argv[first..], loaded into docs (*n of them) once the output is open.
 * 0, or the exit status: 2 when none was given (saying need), 1 when the
 * output or a document failed (said).
 */
static int operand_docs(int argc, char **argv, int first, const char *need, struct isc_tool_out *out, const char *path,
			cJSON **docs, size_t *n)
{
	if (first >= argc)
		return isc_tool_usage_error(&tool, "%s", need);
	if (isc_tool_out_open(out, path))
		return 1;
	for (int i = first; i < argc; i++, (*n)++)
		if (load_findings(argv[i], &docs[*n]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	struct isc_analyze_opts ao = { 0 };
	struct isc_analyze_result res = { 0 };
	struct progress prog = { { 0, 0 }, false };
	cJSON *doc = NULL;
	char *text = NULL;
	FILE *in = stdin;
	struct isc_tool_out out = { 0 };
	const char *name = "stdin", *path = NULL, **bnames = NULL;
	uint64_t top = ISC_ANALYZE_TOP_DEFAULT;
	int first, rc = 0, status = 1;
	bool written = false;
	cJSON **bdocs = NULL;
	size_t nb = 0, nloaded = 0;
	struct isc_compare_opts co = { 0, 0, false, false };

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	if (isc_config_get_u64(c, "top", &top) < 0 || top == 0 || top > 100000) {
		isc_log(ISC_LOG_ERROR, "invalid value '%s' for --top: expected 1 to 100000", isc_config_get(c, "top"));
		status = 2;
		goto out;
	}
	uint64_t nodes = 0;
	if (isc_config_get_u64(c, "native-nodes", &nodes) < 0 || nodes < 16 || nodes > 1000000) {
		status = isc_tool_usage_error(&tool, "invalid value '%s' for --native-nodes: expected 16 to 1000000",
					      isc_config_get(c, "native-nodes"));
		goto out;
	}
	co.threshold_pct = ISC_COMPARE_THRESHOLD_DEFAULT;
	if (isc_config_get_double(c, "threshold", 0, 1000, &co.threshold_pct) < 0) {
		status = isc_tool_usage_error(&tool, "%s", isc_err_msg());
		goto out;
	}
	static const char *const bases[] = { "auto", "wall", NULL };
	int bi = 0;
	if (isc_config_get_choice(c, "latency-basis", bases, &bi) < 0) {
		status = isc_tool_usage_error(&tool, "%s", isc_err_msg());
		goto out;
	}
	co.wall_only = bi == 1;
	if (!(bnames = calloc((size_t)argc + 1, sizeof(*bnames))) ||
	    !(bdocs = calloc((size_t)argc + 1, sizeof(*bdocs)))) {
		isc_log(ISC_LOG_ERROR, "out of memory");
		goto out;
	}
	nb = baselines(argc, argv, first, bnames);
	path = isc_config_get(c, "output");
	if (isc_config_flag(c, "job")) {
		if (nb || isc_config_flag(c, "history")) {
			status = isc_tool_usage_error(&tool, "--job mixes with neither --baseline nor --history");
			goto out;
		}
		if ((status = operand_docs(argc, argv, first, "--job needs the findings of the job's ranks", &out, path,
					   bdocs, &nloaded)))
			goto out;
		status = 1;
		if ((rc = isc_analyze_job((const cJSON *const *)bdocs, nloaded, &doc))) {
			isc_log(ISC_LOG_ERROR, "%s%s", rc == -EINVAL ? "not one job: " : "", isc_err_msg());
			status = rc == -EINVAL ? 2 : 1;
			rc = 0;
			goto out;
		}
		goto write;
	}
	if (isc_config_flag(c, "history")) {
		if (nb) {
			status = isc_tool_usage_error(&tool, "--history and --baseline do not mix");
			goto out;
		}
		if ((status = operand_docs(argc, argv, first, "--history needs the findings of a series, oldest first", &out,
					   path, bdocs, &nloaded)))
			goto out;
		status = 1;
		doc = cJSON_Duplicate(bdocs[nloaded - 1], true);
		if (!doc || isc_findings_history(doc, (const cJSON *const *)bdocs, (const char *const *)argv + first,
						 nloaded, &co)) {
			isc_log(ISC_LOG_ERROR, "%s", doc ? isc_err_msg() : "out of memory");
			goto out;
		}
		goto write;
	}
	for (; nloaded < nb; nloaded++)
		if (load_findings(bnames[nloaded], &bdocs[nloaded]))
			goto out;
	ao.top_n = (unsigned)top;
	ao.hta_compat = isc_config_flag(c, "hta-compat");
	ao.raw_times = isc_config_flag(c, "no-compensation");
	ao.native_nodes = (unsigned)nodes;
	ao.baselines = (const cJSON *const *)bdocs;
	ao.nbaselines = nb;
	ao.compare = co;
	if (argc - first > 1) { /* one job's ranks: merged here, in memory */
		if (isc_tool_out_open(&out, path))
			goto out;
		if ((status = analyze_job_inputs(argc - first, argv + first, &ao, &doc, &res)) == 2 || !doc)
			goto out;
		rc = status && !res.merge.bad_input ? -EIO : 0;
		name = "the job";
		goto write;
	}
	if (!(in = isc_tool_in_open(first < argc ? argv[first] : NULL, &name)))
		goto out;
	if (in == stdin && isatty(STDIN_FILENO)) {
		status = isc_tool_usage_error(&tool, "refusing to read a binary timeline from a terminal; give a FILE or a pipe");
		goto out;
	}
	if (isc_tool_out_open(&out, path)) /* before the analysis: a bad path fails at once */
		goto out;
	if (!isc_config_flag(c, "quiet") && isatty(STDERR_FILENO)) {
		clock_gettime(CLOCK_MONOTONIC, &prog.start);
		ao.progress = show_progress;
		ao.progress_ctx = &prog;
	}
	rc = isc_analyze_run(in, &ao, &doc, &res);
	if (prog.shown)
		fprintf(stderr, "\r\033[K");
	if (res.merge.bad_input) /* a damaged trace: its prefix is analyzed, then exit 1 */
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events)", name, res.merge.damage,
			(unsigned long long)res.merge.events_out);
	if (rc < 0)
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
	if (!doc)
		goto out;
write:
	text = isc_config_flag(c, "pretty") ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
	if (!text) {
		isc_log(ISC_LOG_ERROR, "out of memory");
		goto out;
	}
	FILE *f = isc_tool_out_begin(&out);
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) || ferror(f)) {
		isc_log(ISC_LOG_ERROR, "%s: Failed to write: %s", isc_tool_out_name(&out), strerror(errno ? errno : EIO));
		goto out;
	}
	status = rc < 0 || res.merge.bad_input ? 1 : 0;
	written = true;
	if (status == 0 && isc_config_flag(c, "fail-on-regression")) {
		const char *v = isc_doc_str(doc, "comparison.verdict", NULL);
		if ((v && !strcmp(v, "regressed")) || history_regressed(doc))
			status = ISC_EXIT_REGRESSED;
	}
	if (!isc_config_flag(c, "quiet") && isc_log_enabled(ISC_LOG_INFO)) {
		double ev = 0, pr = 0, th = 0;
		isc_doc_have(doc, "summary.events", &ev);
		isc_doc_have(doc, "summary.processes", &pr);
		isc_doc_have(doc, "summary.threads", &th);
		isc_log(ISC_LOG_INFO, "%s: %.0f events, %.0f processes, %.0f threads; verdict %s", name, ev, pr, th,
			isc_doc_str(doc, "verdict.class", NULL) ? isc_doc_str(doc, "verdict.class", NULL) : "n/a");
	}
	if (!isc_config_flag(c, "quiet") && isc_doc_get(doc, "comparison")) {
		double chg = 0, p = 1;
		const cJSON *sc = cJSON_GetArrayItem(isc_doc_get(doc, "comparison.scopes"), 0);
		isc_doc_have(sc, "change_pct", &chg);
		isc_doc_have(sc, "p_value", &p);
		isc_log(ISC_LOG_INFO, "%s: %s against %zu baseline%s (median %+.1f %%, p = %.2g)", name,
			isc_doc_str(doc, "comparison.verdict", NULL), nb, nb == 1 ? "" : "s", chg, p);
	}
out:
	if (isc_tool_out_close(&out, written))
		status = 1;
	free(text);
	cJSON_Delete(doc);
	for (size_t i = 0; bdocs && i < nloaded; i++)
		cJSON_Delete(bdocs[i]);
	free(bdocs);
	free(bnames);
	isc_tool_in_close(in);
	isc_config_free(c);
	return status;
}
