/*
 * analyze_run.c - iscope-analyze's library entry point: the stages
 * composed, each called once, in this order (isc_analyze.h):
 *
 *   input ──> findings JSON? ──────────────────────────────┐
 *     │                                                     │
 *     └─> timeline (a trace merged, Kineto imported) ──>    │
 *           first pass: calibrations ──> measuring pass ──> rules ──> comparison
 *           and rank facts               (analyze.c,          (lib/rules) (lib/compare,
 *           (analyze.c)                   analyze_*.c;                     with baselines)
 *                                         a job: one per rank
 *                                         and the reduce,
 *                                         distributed.c)
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
#include "analyze_dist.h"

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

static const char *string_of(void *ctx, uint32_t id, uint8_t *kind)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(ctx, id);
	if (s)
		*kind = s->kind;
	return s ? s->name : NULL;
}

int isc_analyze_run(FILE *in, const struct isc_analyze_opts *o, cJSON **out, struct isc_analyze_result *r)
{
	struct isc_timeline *t = NULL;
	struct isc_analyze_calib *cals = NULL;
	struct isc_analyze_opts ao = *o;
	struct isc_rank_facts facts;
	FILE *pin = NULL, *owned = NULL;
	int rc;
	*out = NULL;
	memset(r, 0, sizeof(*r));
	isc_rankfacts_init(&facts, string_of, NULL);
	if ((rc = isc_input_open(in, &pin, &r->kind)))
		return rc;
	if (r->kind == ISC_INPUT_FINDINGS) { /* a saved analysis: compare (or just re-emit) it */
		rc = isc_findings_read(pin, out);
		goto compare;
	}
	if ((rc = isc_timeline_open_any(&t, pin, &owned, &r->merge)))
		goto done;
	/*
	 * first pass: each process's calibration (the lowest of its start and
	 * exit ones) and which process is which rank; a Kineto import has no
	 * calibration, and its ranks are in its first records
	 */
	facts.ctx = t;
	if ((rc = isc_dist_first_pass(t, &facts, r->kind == ISC_INPUT_KINETO, &cals, &ao.ncalibs)) ||
	    (rc = isc_timeline_rewind(&t, owned)))
		goto done;
	facts.ctx = NULL;
	if (r->kind == ISC_INPUT_KINETO) { /* no calibration there */
		free(cals);
		cals = NULL;
		ao.ncalibs = 0;
	}
	ao.calibs = cals;
	if ((rc = isc_rankfacts_resolve(&facts)) == -EINVAL) {
		isc_err_push("%s", facts.conflict);
		goto done;
	}
	if (rc)
		goto done;
	if (isc_dist_is_job(&facts)) { /* one analysis per rank, then the job view */
		rc = isc_dist_measure(t, &ao, &facts, out);
		if (*out && isc_findings_evaluate(*out)) {
			cJSON_Delete(*out);
			*out = NULL;
			isc_err_push("out of memory");
			rc = -ENOMEM;
		}
	} else {
		rc = isc_analyze_timeline(t, &ao, out);
	}
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
	isc_rankfacts_free(&facts);
	isc_timeline_free(t);
	if (owned)
		fclose(owned);
	if (pin)
		fclose(pin);
	free(cals);
	return rc;
}
