/*
 * fuzz_timeline.c - any bytes through the timeline reader, the analyzer's
 * first pass (calibrations) and the analyzer (every rule, the GPU analysis
 * included), then the report of whatever it found.  Bytes without the zstd
 * magic are decoded chunks, framed here (fuzz_frames.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_frames.h"
#include "fuzz_verdict.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"
#include "isc_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isc_buf frames = { 0 };
	struct isc_timeline *t;
	cJSON *doc = NULL;
	char *text = NULL;
	FILE *f = fuzz_open(data, size, &frames);
	if (!f) {
		isc_buf_free(&frames);
		return 0;
	}
	fuzz_rejected = 1;
	/* as iscope-analyze: a first pass for the calibrations, then the analysis */
	struct isc_analyze_calib *cals = NULL;
	struct isc_analyze_opts o = { 0 };
	if (isc_timeline_open(&t, f) == 0) {
		if (isc_analyze_calibrations(t, &cals, &o.ncalibs))
			o.ncalibs = 0;
		o.calibs = cals;
		if (isc_timeline_rewind(&t, f) == 0)
			fuzz_rejected = isc_analyze_timeline(t, &o, &doc) != 0; /* -EBADMSG: damaged */
		isc_timeline_free(t);
	}
	free(cals);
	if (doc && isc_report_render(doc, ISC_REPORT_MD, &text) == 0)
		free(text);
	cJSON_Delete(doc);
	fclose(f);
	isc_buf_free(&frames);
	isc_err_clear();
	return 0;
}
