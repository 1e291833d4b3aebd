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
#include "isc_job.h"

/* The bytes of a job's merged timeline kept in memory by isc_analyze_run_job (8 DLRM ranks: 1.1 MB) */
#define JOB_SPOOL ((size_t)256 << 20)

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

/* The timeline read again from its start: from owned (isc_timeline_open_any), else from spool sp. */
static int rewind_tl(struct isc_timeline **t, FILE *owned, const struct isc_spool *sp)
{
	if (owned)
		return isc_timeline_rewind(t, owned);
	isc_timeline_free(*t);
	*t = NULL;
	return isc_timeline_open_spool(t, sp);
}

/* The analysis of timeline t (of an input of kind r->kind), from its first pass; frees t. */
static int analyze_tl(struct isc_timeline *t, FILE *owned, const struct isc_spool *sp, const struct isc_analyze_opts *o,
		      cJSON **out, struct isc_analyze_result *r)
{
	struct isc_analyze_calib *cals = NULL;
	struct isc_analyze_opts ao = *o;
	struct isc_rank_facts facts;
	int rc;
	isc_rankfacts_init(&facts, string_of, NULL);
	/*
	 * first pass: each process's calibration (the lowest of its start and
	 * exit ones) and which process is which rank; a Kineto import has no
	 * calibration, and its ranks are in its first records
	 */
	facts.ctx = t;
	if ((rc = isc_dist_first_pass(t, &facts, r->kind == ISC_INPUT_KINETO, &cals, &ao.ncalibs)) ||
	    (rc = rewind_tl(&t, owned, sp)))
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
done:
	isc_rankfacts_free(&facts);
	isc_timeline_free(t);
	free(cals);
	return rc;
}

static int compare(const struct isc_analyze_opts *o, cJSON **out, int rc)
{
	if (*out && o->nbaselines) {
		int crc = isc_findings_compare(*out, o->baselines, o->nbaselines, &o->compare);
		if (crc) {
			cJSON_Delete(*out);
			*out = NULL;
			rc = crc;
		}
	}
	return rc;
}

int isc_analyze_run(FILE *in, const struct isc_analyze_opts *o, cJSON **out, struct isc_analyze_result *r)
{
	struct isc_timeline *t = NULL;
	FILE *pin = NULL, *owned = NULL;
	int rc;
	*out = NULL;
	memset(r, 0, sizeof(*r));
	if ((rc = isc_input_open(in, &pin, &r->kind)))
		return rc;
	if (r->kind == ISC_INPUT_FINDINGS) /* a saved analysis: compare (or just re-emit) it */
		rc = isc_findings_read(pin, out);
	else if (!(rc = isc_timeline_open_any(&t, pin, &owned, &r->merge)))
		rc = analyze_tl(t, owned, NULL, o, out, r);
	rc = compare(o, out, rc);
	if (owned)
		fclose(owned);
	fclose(pin);
	return rc;
}

int isc_analyze_run_job(const struct isc_merge_input *in, const enum isc_input_kind *kinds,
			const struct isc_tl_header *hdrs, size_t n, const struct isc_analyze_opts *o, cJSON **out,
			struct isc_analyze_result *r, struct isc_job_result *jr)
{
	struct isc_spool *sp = NULL;
	struct isc_sink *sink = NULL;
	struct isc_timeline *t = NULL;
	int rc, mrc;
	*out = NULL;
	memset(r, 0, sizeof(*r));
	memset(jr, 0, sizeof(*jr));
	r->kind = ISC_INPUT_TIMELINE; /* analysed as iscope-merge's output would be */
	/* the job's timeline in memory (spilled past JOB_SPOOL, compressed fast): never compressed to be read once */
	if ((rc = isc_spool_new(&sp, JOB_SPOOL, -5)) || (rc = isc_sink_timeline_new_spool(&sink, sp)))
		goto out;
	if ((mrc = isc_job_merge(in, kinds, hdrs, n, sink, NULL, jr)) < 0) {
		rc = mrc;
		goto out;
	}
	if (mrc == 1) {
		r->merge.bad_input = jr->bad_input;
		r->merge.events_out = jr->kept;
		snprintf(r->merge.damage, sizeof(r->merge.damage), "%s", jr->damage);
	}
	isc_sink_free(sink);
	sink = NULL;
	if (!(rc = isc_timeline_open_spool(&t, sp)))
		rc = analyze_tl(t, NULL, sp, o, out, r);
	rc = compare(o, out, rc);
out:
	isc_sink_free(sink);
	isc_spool_free(sp);
	return rc;
}
