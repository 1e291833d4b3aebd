/* iscope-merge: traces in, one ordered timeline out (see iscope-merge(1)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_config_api.h"
#include "isc_merge.h"
#include "tool.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL, "write to FILE instead of stdout" },
	{ "format", 'f', ISC_OPT_VALUE, "FMT", "INFERSCOPE_MERGE_FORMAT", "format", "timeline",
	  "output format: timeline (.istl)" },
	{ "dump", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false",
	  "print a deterministic text dump instead (no times, numbered processes/threads)" },
	{ "dump-times", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false", "the dump with times and sampler values (implies --dump)" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false", "no informational messages (damage is always reported)" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-merge", opts, sizeof(opts) / sizeof(opts[0]), false, "[OPTION]... [TRACE]...",
	"Merges one or more traces (.isc; stdin when none or '-') into one timeline\n"
	"ordered by time, with calls paired into spans.",
};
#define MAX_INPUTS 64

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	struct isc_merge_input in[MAX_INPUTS];
	struct isc_merge_result res;
	struct isc_sink *sink = NULL;
	FILE *out = stdout;
	size_t n = 0;
	int first, rc, status = 1;

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	bool dump = isc_config_flag(c, "dump") || isc_config_flag(c, "dump-times");
	const char *fmt = isc_config_get(c, "format");
	if (!dump && strcmp(fmt, "timeline")) {
		isc_log(ISC_LOG_ERROR, "unknown --format '%s' (known: timeline)", fmt);
		status = 2;
		goto out;
	}
	if (argc - first > MAX_INPUTS) {
		isc_log(ISC_LOG_ERROR, "at most %d inputs", MAX_INPUTS);
		status = 2;
		goto out;
	}
	for (int i = first; i < argc || (i == first && n == 0); i++) {
		const char *name = i < argc ? argv[i] : "-";
		if (!strcmp(name, "-")) {
			in[n].in = stdin;
			in[n].name = "stdin";
		} else if (!(in[n].in = fopen(name, "re"))) {
			isc_log(ISC_LOG_ERROR, "%s: %s", name, strerror(errno));
			goto out;
		} else {
			in[n].name = name;
		}
		n++;
	}
	const char *path = isc_config_get(c, "output");
	if (path && strcmp(path, "-")) {
		if (!(out = fopen(path, "we"))) {
			isc_log(ISC_LOG_ERROR, "%s: %s", path, strerror(errno));
			goto out;
		}
	} else if (!dump && isatty(STDOUT_FILENO)) {
		isc_log(ISC_LOG_ERROR, "refusing to write a binary timeline to a terminal; use -o FILE or a pipe");
		status = 2;
		goto out;
	}
	rc = dump ? isc_sink_dump_new(&sink, out, isc_config_flag(c, "dump-times")) : isc_sink_timeline_new(&sink, out);
	if (rc)
		goto out;
	rc = isc_merge(in, n, sink, &res);
	if (rc < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		goto out;
	}
	if (rc == 1) {
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events, %llu damaged frames skipped)",
			in[res.bad_input - 1].name, res.damage, (unsigned long long)res.events_out,
			(unsigned long long)res.damaged_frames);
		status = 1;
	} else {
		status = 0;
	}
	if (!isc_config_flag(c, "quiet") && res.late_events)
		isc_log(ISC_LOG_INFO, "%llu events arrived after their reorder window",
			(unsigned long long)res.late_events);
out:
	isc_sink_free(sink);
	for (size_t i = 0; i < n; i++)
		if (in[i].in != stdin)
			fclose(in[i].in);
	if (out != stdout && out && fclose(out) && status == 0) {
		isc_log(ISC_LOG_ERROR, "%s: %s", isc_config_get(c, "output"), strerror(errno));
		status = 1;
	}
	isc_config_free(c);
	return status;
}
