/*
 * fuzz_findings.c - any bytes as findings JSON through iscope-report's
 * renderer, as Markdown, as HTML and as the flame-graph formats of the
 * native stacks (the path iscope-report takes: parse
 * with cJSON, refuse anything but an object, render).  Then the rule
 * engine (which reads only the document) on the same object, and the report
 * of its result: findings files are edited by hand and by scripts.  Then
 * run comparison and history (iscope-analyze --baseline / --history read
 * findings of earlier runs) with the document as both sides, and the
 * report of the comparison.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_verdict.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	char *out = NULL;
	fuzz_rejected = 1;
	if (!doc)
		return 0;
	for (int f = ISC_REPORT_MD; f <= ISC_REPORT_SPEEDSCOPE; f++) {
		int rc = isc_report_render(doc, (enum isc_report_format)f, &out);
		if (f == ISC_REPORT_MD)
			fuzz_rejected = rc != 0;
		if (rc == 0) {
			/* the result is one NUL-terminated string: read it all */
			volatile size_t n = strlen(out);
			(void)n;
			free(out);
		}
	}
	if (cJSON_IsObject(doc) && isc_findings_evaluate(doc) == 0 &&
	    isc_report_render(doc, ISC_REPORT_HTML, &out) == 0)
		free(out);
	cJSON *base = cJSON_IsObject(doc) ? cJSON_Duplicate(doc, true) : NULL;
	if (base) {
		const cJSON *bases[10];
		const char *names[10];
		for (int i = 0; i < 10; i++) { /* ten runs: enough for history's CUSUM to run */
			bases[i] = base;
			names[i] = "run";
		}
		if (isc_findings_compare(doc, bases, 2, NULL) == 0 && isc_report_render(doc, ISC_REPORT_HTML, &out) == 0)
			free(out);
		if (isc_findings_history(doc, bases, names, 10, NULL) == 0 && isc_report_render(doc, ISC_REPORT_MD, &out) == 0)
			free(out);
		cJSON_Delete(base);
	}
	cJSON_Delete(doc);
	isc_err_clear();
	return 0;
}
