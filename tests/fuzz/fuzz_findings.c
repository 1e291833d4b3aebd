/*
 * fuzz_findings.c - any bytes as findings JSON through iscope-report's
 * renderer, as Markdown and as HTML (the path iscope-report takes: parse
 * with cJSON, refuse anything but an object, render).  Then the rule
 * engine (which reads only the document) on the same object, and the report
 * of its result: findings files are edited by hand and by scripts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_verdict.h"
#include "isc_analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	char *out = NULL;
	fuzz_rejected = 1;
	if (!doc)
		return 0;
	for (int f = ISC_REPORT_MD; f <= ISC_REPORT_HTML; f++) {
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
	cJSON_Delete(doc);
	isc_err_clear();
	return 0;
}
