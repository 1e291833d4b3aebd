/*
 * analyze_run.c - iscope-analyze's library entry point: the stages
 * composed, each called once, in this order (isc_analyze.h):
 *
 *   input ──> findings JSON? ──────────────────────────────┐
 *     │                                                     │
 *     └─> timeline (a trace merged, Kineto imported) ──>    │
 *           first pass: calibrations ──> measuring pass ──> rules ──> comparison
 *           (analyze.c)                  (analyze.c,          (lib/rules) (lib/compare,
 *                                         analyze_*.c)                     with baselines)
 *
 * The measuring pass writes the document and never reads it back; the
 * rules and the comparison only read what it wrote (and add their
 * sections).  Nothing here prints: the tool does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"

int isc_analyze_timeline(struct isc_timeline *t, const struct isc_analyze_opts *o, cJSON **out)
{
	int rc = isc_analyze_measure(t, o, out);
	if (*out && isc_findings_evaluate(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		isc_err_push("out of memory");
		return -ENOMEM;
	}
	return rc;
}

int isc_analyze_run(FILE *in, const struct isc_analyze_opts *o, cJSON **out, struct isc_analyze_result *r)
{
	struct isc_timeline *t = NULL;
	struct isc_analyze_calib *cals = NULL;
	struct isc_analyze_opts ao = *o;
	FILE *pin = NULL, *owned = NULL;
	int rc;
	*out = NULL;
	memset(r, 0, sizeof(*r));
	if ((rc = isc_input_open(in, &pin, &r->kind)))
		return rc;
	if (r->kind == ISC_INPUT_FINDINGS) { /* a saved analysis: compare (or just re-emit) it */
		rc = isc_findings_read(pin, out);
		goto compare;
	}
	if ((rc = isc_timeline_open_any(&t, pin, &owned, &r->merge)))
		goto done;
	/* first pass: each process's calibration (the lowest of its start and exit ones) */
	if (r->kind != ISC_INPUT_KINETO &&
	    ((rc = isc_analyze_calibrations(t, &cals, &ao.ncalibs)) || (rc = isc_timeline_rewind(&t, owned))))
		goto done;
	ao.calibs = cals;
	rc = isc_analyze_timeline(t, &ao, out);
compare:
	if (*out && o->nbaselines) {
		int crc = isc_findings_compare(*out, o->baselines, o->nbaselines, &o->compare);
		if (crc) {
			cJSON_Delete(*out);
			*out = NULL;
			rc = crc;
		}
	}
done:
	isc_timeline_free(t);
	if (owned)
		fclose(owned);
	if (pin)
		fclose(pin);
	free(cals);
	return rc;
}
