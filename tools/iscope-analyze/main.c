/* iscope-analyze: a timeline in, findings JSON out (see iscope-analyze(1)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "isc_analyze.h"
#include "isc_config.h"
#include "isc_config_api.h"
#include "tool.h"
#include "isc_merge.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL, "write the findings to FILE instead of stdout" },
	{ "pretty", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_ANALYZE_PRETTY", "pretty", "false", "indent the JSON" },
	{ "top", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_ANALYZE_TOP", "top", "30",
	  "number of functions in cpu.top_functions" },
	{ "hta-compat", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_ANALYZE_HTA_COMPAT", "hta_compat", "false",
	  "GPU numbers by HTA's rules (whole µs, last ProfilerStep dropped), to compare with it" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false",
	  "no progress line and no summary on stderr" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-analyze", opts, sizeof(opts) / sizeof(opts[0]), false, "[OPTION]... [TIMELINE|TRACE]",
	"Reads a timeline (.istl from iscope-merge), a trace (.isc, merged on the fly)\n"
	"or a PyTorch profiler trace (Kineto JSON); stdin when none or '-'.  Writes\n"
	"findings JSON: summary, processes and threads, iterations and latency,\n"
	"CPU hot functions and time split, GPU time by device and stream (HTA's\n"
	"definitions), memory, verdict and findings.",
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

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	struct isc_timeline *t = NULL;
	struct isc_analyze_opts ao = { 0 };
	struct progress prog = { { 0, 0 }, false };
	cJSON *doc = NULL;
	char *text = NULL;
	FILE *in = stdin, *owned = NULL;
	struct isc_tool_out out = { 0 };
	struct isc_merge_result mres = { 0 };
	const char *name = "stdin", *path = NULL;
	uint64_t top = ISC_ANALYZE_TOP_DEFAULT;
	int first, rc, status = 1;
	bool written = false;

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	if (isc_config_get_u64(c, "top", &top) < 0 || top == 0 || top > 100000) {
		isc_log(ISC_LOG_ERROR, "invalid value '%s' for --top: expected 1 to 100000", isc_config_get(c, "top"));
		status = 2;
		goto out;
	}
	if (argc - first > 1) {
		status = isc_tool_usage_error(&tool, "one timeline at a time (got %d); merge them first with iscope-merge",
					      argc - first);
		goto out;
	}
	if (first < argc && strcmp(argv[first], "-")) {
		name = argv[first];
		if (!(in = fopen(name, "re"))) {
			isc_log(ISC_LOG_ERROR, "%s: %s", name, strerror(errno));
			goto out;
		}
	} else if (isatty(STDIN_FILENO)) {
		status = isc_tool_usage_error(&tool, "refusing to read a binary timeline from a terminal; give a FILE or a pipe");
		goto out;
	}
	path = isc_config_get(c, "output");
	if (isc_tool_out_open(&out, path)) /* before the analysis: a bad path fails at once */
		goto out;
	if ((rc = isc_timeline_open_any(&t, in, &owned, &mres))) {
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
		goto out;
	}
	if (mres.bad_input) /* a damaged trace: its prefix is analyzed, then exit 1 */
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events)", name, mres.damage,
			(unsigned long long)mres.events_out);
	ao.top_n = (unsigned)top;
	ao.hta_compat = isc_config_flag(c, "hta-compat");
	if (!isc_config_flag(c, "quiet") && isatty(STDERR_FILENO)) {
		clock_gettime(CLOCK_MONOTONIC, &prog.start);
		ao.progress = show_progress;
		ao.progress_ctx = &prog;
	}
	rc = isc_analyze_timeline(t, &ao, &doc);
	if (prog.shown)
		fprintf(stderr, "\r\033[K");
	if (rc < 0)
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
	if (!doc)
		goto out;
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
	status = rc < 0 || mres.bad_input ? 1 : 0;
	written = true;
	if (!isc_config_flag(c, "quiet") && isc_log_enabled(ISC_LOG_INFO)) {
		double ev = 0, pr = 0, th = 0;
		isc_json_num(doc, "summary.events", &ev);
		isc_json_num(doc, "summary.processes", &pr);
		isc_json_num(doc, "summary.threads", &th);
		isc_log(ISC_LOG_INFO, "%s: %.0f events, %.0f processes, %.0f threads; verdict %s", name, ev, pr, th,
			isc_json_str(doc, "verdict.class") ? isc_json_str(doc, "verdict.class") : "n/a");
	}
out:
	if (isc_tool_out_close(&out, written))
		status = 1;
	free(text);
	cJSON_Delete(doc);
	isc_timeline_free(t);
	if (owned)
		fclose(owned);
	if (in && in != stdin)
		fclose(in);
	isc_config_free(c);
	return status;
}
