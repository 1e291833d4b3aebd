/* iscope-merge: traces in, one ordered timeline out (see iscope-merge(1)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_config_api.h"
#include "isc_job.h"
#include "isc_kineto.h"
#include "isc_merge.h"
#include "tool.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL, "write to FILE instead of stdout" },
	{ "format", 'f', ISC_OPT_VALUE, "FMT", "INFERSCOPE_MERGE_FORMAT", "format", "timeline",
	  "output format: timeline (.istl) or chrome (Chrome Trace Event JSON, for Perfetto)" },
	{ "dump", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false",
	  "print a deterministic text dump instead (no times, numbered processes/threads)" },
	{ "dump-times", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false", "the dump with times and sampler values (implies --dump)" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false", "no informational messages (damage is always reported)" },
	{ "sort-memory", 0, ISC_OPT_VALUE, "MIB", "INFERSCOPE_SORT_MEMORY", "sort_memory", "64",
	  "memory for sorting a Kineto input; more goes to sorted runs in a temporary file" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-merge", opts, sizeof(opts) / sizeof(opts[0]), false, "[OPTION]... [TRACE]...",
	"Merges one or more traces (.isc; stdin when none or '-') into one timeline\n"
	"ordered by time, with calls paired into spans; or imports one PyTorch\n"
	"profiler (Kineto) trace (.json, .json.gz); or merges every rank's Kineto\n"
	"trace, or every host's recording, of one distributed job, their clocks\n"
	"aligned on the collectives.",
};
#define MAX_INPUTS 64

/* Imports in[0]; returns the exit status. */
static const struct isc_tool_out *output; /* for naming it in write errors */

/* The object an error is about: the output after a failed write, else the input. */
static const char *culprit(const char *input)
{
	return output->f && ferror(output->f) ? isc_tool_out_name(output) : input;
}

static int import_kineto(const struct isc_merge_input *in, struct isc_sink *sink, size_t sort_mib, bool quiet)
{
	struct isc_kineto_opts ko = { .sort_budget = sort_mib << 20 };
	struct isc_kineto_result kr;
	int rc = isc_kineto_import(in->in, in->name, sink, &ko, &kr);
	if (rc < 0) {
		isc_log(ISC_LOG_ERROR, "%s: %s", culprit(in->name), isc_err_msg());
		return 1;
	}
	if (rc == 1)
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events)", in->name, kr.damage,
			(unsigned long long)kr.events_out);
	if (!quiet)
		isc_log(ISC_LOG_INFO,
			"%s: %llu GPU ops, %llu API calls, %llu CPU spans, %llu marks; %llu flow events ignored, "
			"%llu events of unknown categories skipped, %llu spans cut to their parent, %llu sorted runs spilled",
			in->name, (unsigned long long)kr.gpu_ops, (unsigned long long)kr.api_calls,
			(unsigned long long)(kr.cpu_ops + kr.python_functions + kr.annotations),
			(unsigned long long)kr.marks, (unsigned long long)kr.flows, (unsigned long long)kr.unknown,
			(unsigned long long)kr.clamped, (unsigned long long)kr.runs);
	return rc == 1 ? 1 : 0;
}

/* Merges the n Kineto traces of one job (and any traces with them); returns the exit status. */
static int merge_job(const struct isc_merge_input *in, const enum isc_input_kind *kind,
		     const struct isc_tl_header *hdr, size_t n, struct isc_sink *sink, size_t sort_mib, bool quiet)
{
	struct isc_kineto_opts ko = { .sort_budget = sort_mib << 20 };
	struct isc_job_result jr;
	int rc = isc_job_merge(in, kind, hdr, n, sink, &ko, &jr);
	if (rc == -EINVAL && jr.conflict[0]) {
		isc_log(ISC_LOG_ERROR, "not one job: %s", jr.conflict);
		isc_job_result_free(&jr);
		return 2;
	}
	if (rc < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		isc_job_result_free(&jr);
		return 1;
	}
	if (rc == 1)
		isc_log(ISC_LOG_ERROR, "%s: %s (kept %llu events)", in[jr.bad_input - 1].name, jr.damage,
			(unsigned long long)jr.kept);
	static const char *const methods[] = { "reference", "collectives", "wall clock" };
	for (size_t s = 0; s < jr.nsources; s++) {
		const struct isc_job_source *js = &jr.sources[s];
		if (!js->ranks[0])
			isc_log(ISC_LOG_WARN, "%s: no rank (%s): merged on its own clock, as it is", js->name,
				js->kineto ? "no distributedInfo" : "no dist.* marks");
		if (quiet)
			continue;
		isc_log(ISC_LOG_INFO, "%s: rank %s, clock offset %+.3f ms (+/- %.3f ms, %s, %llu collectives)", js->name,
			js->ranks[0] ? js->ranks : "?", (double)js->offset_ns / 1e6, (double)js->uncertainty_ns / 1e6,
			js->method >= 0 && js->method < 3 ? methods[js->method] : "?", (unsigned long long)js->collectives);
	}
	if (jr.nmissing)
		isc_log(ISC_LOG_WARN, "%zu of %u ranks present; missing ranks %s%s", jr.nranks, jr.world_size, jr.missing,
			strlen(jr.missing) + 1 >= sizeof(jr.missing) ? "..." : "");
	isc_job_result_free(&jr);
	return rc == 1 ? 1 : 0;
}

/* Sends the timeline in in[0] through sink (a conversion); returns the exit status. */
static int replay_timeline(const struct isc_merge_input *in, struct isc_sink *sink)
{
	struct isc_timeline *t = NULL;
	char damage[512];
	int rc = isc_timeline_open(&t, in->in);
	if (!rc)
		rc = isc_timeline_replay(t, sink, damage, sizeof(damage));
	isc_timeline_free(t);
	if (rc < 0)
		isc_log(ISC_LOG_ERROR, "%s: %s", culprit(in->name), isc_err_msg());
	else if (rc == 1)
		isc_log(ISC_LOG_ERROR, "%s: %s (kept the events before it)", in->name, damage);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	struct isc_merge_input in[MAX_INPUTS];
	FILE *raw[MAX_INPUTS];
	enum isc_input_kind kind[MAX_INPUTS];
	struct isc_tl_header hdr[MAX_INPUTS];
	struct isc_merge_result res;
	struct isc_sink *sink = NULL;
	struct isc_tool_out outf = { 0 };
	FILE *out = stdout;
	size_t n = 0;
	int first, rc, status = 1;

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	bool dump = isc_config_flag(c, "dump") || isc_config_flag(c, "dump-times");
	static const char *const formats[] = { "timeline", "chrome", NULL };
	int fi = 0;
	if (isc_config_get_choice(c, "format", formats, &fi) < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		status = 2;
		goto out;
	}
	bool chrome = !dump && fi == 1;
	char *end = NULL;
	unsigned long sort_mib = strtoul(isc_config_get(c, "sort-memory"), &end, 10);
	if (!end || *end || sort_mib < 1 || sort_mib > (1ul << 20)) {
		isc_log(ISC_LOG_ERROR, "invalid value '%s' for --sort-memory (MiB, 1 or more)",
			isc_config_get(c, "sort-memory"));
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
		if (!(raw[n] = isc_tool_in_open(name, &in[n].name)))
			goto out;
		if (isc_input_open_hdr(raw[n], &in[n].in, &kind[n], &hdr[n])) { /* the type, by the first bytes */
			isc_log(ISC_LOG_ERROR, "%s: %s", name, isc_err_msg());
			isc_tool_in_close(raw[n]);
			goto out;
		}
		n++;
	}
	const char *path = isc_config_get(c, "output");
	if ((!path || !strcmp(path, "-")) && !dump && !chrome && isatty(STDOUT_FILENO)) {
		isc_log(ISC_LOG_ERROR, "refusing to write a binary timeline to a terminal; use -o FILE or a pipe");
		status = 2;
		goto out;
	}
	if (isc_tool_out_open(&outf, path))
		goto out;
	out = isc_tool_out_begin(&outf);
	output = &outf;
	rc = dump ? isc_sink_dump_new(&sink, out, isc_config_flag(c, "dump-times"))
	     : chrome ? isc_sink_chrome_new(&sink, out) : isc_sink_timeline_new(&sink, out);
	if (rc)
		goto out;
	bool job = false; /* several Kineto traces, or traces of several boots (hosts): one job's ranks */
	for (size_t i = 0; i < n && n > 1; i++) {
		job |= kind[i] == ISC_INPUT_KINETO;
		for (size_t j = 0; j < i && kind[i] == ISC_INPUT_TRACE; j++)
			job |= kind[j] == ISC_INPUT_TRACE && strcmp(hdr[i].boot_id, hdr[j].boot_id);
	}
	for (size_t i = 0; i < n && n > 1; i++)
		if ((!job && kind[i] == ISC_INPUT_KINETO) || kind[i] == ISC_INPUT_TIMELINE) {
			isc_log(ISC_LOG_ERROR, "%s: a %s must be the only input (got %zu inputs)", in[i].name,
				kind[i] == ISC_INPUT_KINETO ? "Kineto trace" : "timeline", n);
			status = 2;
			goto out;
		}
	if (job) {
		status = merge_job(in, kind, hdr, n, sink, sort_mib, isc_config_flag(c, "quiet"));
		if (status == 2) /* refused before anything was written: a file this run created goes */
			outf.written = false;
		goto out;
	}
	if (kind[0] == ISC_INPUT_KINETO) {
		status = import_kineto(&in[0], sink, sort_mib, isc_config_flag(c, "quiet"));
		goto out;
	}
	if (kind[0] == ISC_INPUT_TIMELINE) { /* converted to text or chrome; never re-merged */
		if (!dump && !chrome) {
			isc_log(ISC_LOG_ERROR, "%s: already a timeline, not a trace (--dump or --format=chrome convert it)",
				in[0].name);
			goto out;
		}
		status = replay_timeline(&in[0], sink);
		goto out;
	}
	rc = isc_merge(in, n, sink, &res);
	if (rc < 0) {
		isc_log(ISC_LOG_ERROR, "%s%s%s", ferror(out) ? isc_tool_out_name(&outf) : "", ferror(out) ? ": " : "",
			isc_err_msg());
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
	if (res.out_of_range)
		isc_log(ISC_LOG_WARN, "dropped %llu events more than 2^62 ns after the session epoch",
			(unsigned long long)res.out_of_range);
	if (!isc_config_flag(c, "quiet") && res.late_events)
		isc_log(ISC_LOG_INFO, "%llu events arrived after their reorder window",
			(unsigned long long)res.late_events);
out:
	isc_sink_free(sink);
	for (size_t i = 0; i < n; i++) {
		fclose(in[i].in);
		isc_tool_in_close(raw[i]);
	}
	if (isc_tool_out_close(&outf, status == 0))
		status = 1;
	isc_config_free(c);
	return status;
}
