/* iscope-report: findings JSON in, Markdown or HTML report out (see iscope-report(1)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isc_findings.h"
#include "isc_report.h"
#include "isc_config.h"
#include "isc_config_api.h"
#include "tool.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL,
	  "write the report to FILE instead of stdout (*.html / *.htm imply -f html)" },
	{ "format", 'f', ISC_OPT_VALUE, "FMT", "INFERSCOPE_REPORT_FORMAT", "format", NULL,
	  "md (Markdown, the default), html (one self-contained page), or the native stacks as folded "
	  "(flamegraph.pl's input) or speedscope (speedscope.app's file format)" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false",
	  "no informational messages (errors are always printed)" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-report", opts, sizeof(opts) / sizeof(opts[0]), false, "[OPTION]... [FINDINGS]",
	"Reads findings JSON (from iscope-analyze; stdin when none or '-') and writes\n"
	"a report: Markdown by default, or one self-contained HTML page; or the\n"
	"native stacks of the findings for flame-graph tools (folded, speedscope).",
};
#define MAX_INPUT (256u << 20)

/* Reads all of in into a malloc'd buffer; 0, -EFBIG or a negative errno. */
static int slurp(FILE *in, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			char *nb = cap >= MAX_INPUT ? NULL : realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return cap >= MAX_INPUT ? -EFBIG : -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		size_t got = fread(b + n, 1, cap - n, in);
		n += got;
		if (got == 0) {
			if (ferror(in)) {
				int e = errno ? errno : EIO;
				free(b);
				return -e;
			}
			break;
		}
	}
	*buf = b;
	*len = n;
	return 0;
}

/* Colours unless NO_COLOR is set and not empty (no-color.org) or the terminal is dumb or unknown. */
static bool want_color(void)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
	return !(no && *no) && term && *term && strcmp(term, "dumb");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcasecmp(s + a - b, suffix);
}

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	cJSON *doc = NULL;
	char *data = NULL, *text = NULL;
	size_t len = 0;
	FILE *in = stdin;
	struct isc_tool_out out = { 0 };
	const char *name = "stdin", *path = NULL, *fmt;
	enum isc_report_format f = ISC_REPORT_MD;
	int first, rc, status = 1;

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	path = isc_config_get(c, "output");
	static const char *const formats[] = { "md", "markdown", "html", "folded", "speedscope", NULL };
	int fi = 0;
	fmt = isc_config_get(c, "format");
	if (isc_config_get_choice(c, "format", formats, &fi) < 0) {
		status = isc_tool_usage_error(&tool, "%s", isc_err_msg());
		goto out;
	}
	if (fmt && fi == 2)
		f = ISC_REPORT_HTML;
	else if (fmt && fi == 3)
		f = ISC_REPORT_FOLDED;
	else if (fmt && fi == 4)
		f = ISC_REPORT_SPEEDSCOPE;
	else if (!fmt && path && (ends_with(path, ".html") || ends_with(path, ".htm")))
		f = ISC_REPORT_HTML;
	if (argc - first > 1) {
		status = isc_tool_usage_error(&tool, "one findings file at a time (got %d)", argc - first);
		goto out;
	}
	if (!(in = isc_tool_in_open(first < argc ? argv[first] : NULL, &name)))
		goto out;
	if (isc_tool_out_open(&out, path)) /* before reading: a bad path fails at once */
		goto out;
	if ((rc = slurp(in, &data, &len))) {
		isc_log(ISC_LOG_ERROR, "%s: %s", name, rc == -EFBIG ? "larger than 256 MiB" : strerror(-rc));
		goto out;
	}
	if (!(doc = cJSON_ParseWithLength(data, len))) {
		const char *at = cJSON_GetErrorPtr();
		if (at && at >= data && at <= data + len)
			isc_log(ISC_LOG_ERROR, "%s: not findings JSON: parse error at byte %zu", name, (size_t)(at - data));
		else
			isc_log(ISC_LOG_ERROR, "%s: not findings JSON: parse error", name);
		goto out;
	}
	if (!cJSON_IsObject(doc)) {
		isc_log(ISC_LOG_ERROR, "%s: not findings JSON: the top level is not an object", name);
		goto out;
	}
	if (isc_findings_check(doc)) { /* JSON, but not iscope-analyze's: a report of n/a would say nothing */
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
		goto out;
	}
	/* a person at a terminal who asked for nothing in particular gets the summary */
	if (!path && !fmt && isatty(STDOUT_FILENO)) {
		struct isc_summary_opts so = { want_color(), in == stdin ? NULL : name };
		rc = isc_report_summary(doc, &so, &text);
	} else {
		rc = isc_report_render(doc, f, &text);
	}
	if (rc) {
		isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
		goto out;
	}
	if (fputs(text, isc_tool_out_begin(&out)) == EOF) {
		isc_log(ISC_LOG_ERROR, "%s: Failed to write: %s", isc_tool_out_name(&out), strerror(errno ? errno : EIO));
		goto out;
	}
	status = 0;
out:
	if (isc_tool_out_close(&out, status == 0))
		status = 1;
	free(text);
	free(data);
	cJSON_Delete(doc);
	isc_tool_in_close(in);
	isc_config_free(c);
	return status;
}
