/*
 * fuzz_job.c - the readers of a distributed job (issue 27; formats/timeline.md
 * §4.1, §4.6, §11) on any bytes:
 *
 *   - Kineto text (first byte '{' or the gzip magic): the bytes are cut at
 *     each "\n--rank--\n" into up to 8 rank files, merged by isc_job_merge
 *     (distributedInfo facts, collective kernels, clock alignment, the
 *     k-way merge) into a timeline, which is then analysed as a job
 *     (isc_analyze_run: rank facts, one analysis per rank, the reduce);
 *   - anything else: a timeline (raw chunks framed here, fuzz_frames.h)
 *     replayed into the text dump (TL_CTX source, SOURCE_INFO's bytes) and
 *     analysed by isc_analyze_run, as iscope-analyze does.
 *
 * fuzz_rejected: the merge's or the timeline reader's verdict.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_frames.h"
#include "fuzz_verdict.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_job.h"
#include "isc_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RANKS 8
static const char sep[] = "\n--rank--\n";

/* Analyses a timeline as iscope-analyze does (the job path when it holds ranks). */
static void analyze(FILE *f)
{
	struct isc_analyze_opts o = { 0 };
	struct isc_analyze_result r;
	cJSON *doc = NULL;
	if (isc_analyze_run(f, &o, &doc, &r) == 0 && doc)
		free(cJSON_PrintUnformatted(doc));
	cJSON_Delete(doc);
	isc_err_clear();
}

static void job(const uint8_t *data, size_t size)
{
	struct isc_merge_input in[MAX_RANKS];
	FILE *raw[MAX_RANKS];
	enum isc_input_kind kinds[MAX_RANKS];
	struct isc_tl_header hdrs[MAX_RANKS];
	struct isc_job_result res;
	struct isc_sink *sink = NULL;
	char *tl = NULL;
	size_t tlen = 0, n = 0;
	const uint8_t *p = data, *e = data + size;
	fuzz_rejected = 1;
	while (p && p < e && n < MAX_RANKS) { /* p: never NULL, said for the compiler's -Wnonnull */
		const uint8_t *q = memmem(p, (size_t)(e - p), sep, sizeof(sep) - 1);
		const uint8_t *end = q && n + 1 < MAX_RANKS ? q : e;
		if (end == p || !(raw[n] = fmemopen((void *)p, (size_t)(end - p), "rb")))
			break;
		in[n].name = "rank";
		if (isc_input_open_hdr(raw[n], &in[n].in, &kinds[n], &hdrs[n])) {
			fclose(raw[n]);
			break;
		}
		n++;
		p = end == e ? e : end + sizeof(sep) - 1;
	}
	FILE *out = open_memstream(&tl, &tlen);
	if (n >= 2 && out && isc_sink_timeline_new(&sink, out) == 0) {
		int rc = isc_job_merge(in, kinds, hdrs, n, sink, NULL, &res);
		fuzz_rejected = rc != 0;
		isc_job_result_free(&res);
	}
	isc_sink_free(sink);
	if (out)
		fclose(out);
	for (size_t i = 0; i < n; i++) {
		fclose(in[i].in);
		fclose(raw[i]);
	}
	isc_err_clear();
	FILE *f = tl && tlen ? fmemopen(tl, tlen, "rb") : NULL;
	if (f) {
		analyze(f);
		fclose(f);
	}
	free(tl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size && (data[0] == '{' || (size >= 2 && data[0] == 0x1f && data[1] == 0x8b))) {
		job(data, size);
		return 0;
	}
	struct isc_buf frames = { 0 };
	struct isc_timeline *t = NULL;
	struct isc_sink *dump = NULL;
	FILE *null = fopen("/dev/null", "w");
	FILE *f = fuzz_open(data, size, &frames);
	fuzz_rejected = 1;
	if (f && null && isc_timeline_open(&t, f) == 0 && isc_sink_dump_new(&dump, null, true) == 0) {
		char damage[256];
		fuzz_rejected = isc_timeline_replay(t, dump, damage, sizeof(damage)) != 0;
	}
	isc_sink_free(dump);
	isc_timeline_free(t);
	isc_err_clear();
	if (f) {
		fclose(f);
		if ((f = fuzz_open(data, size, &frames))) {
			analyze(f);
			fclose(f);
		}
	}
	if (null)
		fclose(null);
	isc_buf_free(&frames);
	return 0;
}
