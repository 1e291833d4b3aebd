/*
 * fuzz_kineto.c - any bytes through the Kineto importer, into a sink that
 * checks what the importer promises: strings defined before use with dense
 * ids, times never going back, every span end closing an open span of its
 * context, an END with the event count.  A broken promise aborts.  A small
 * sort budget makes the external sort spill runs even on small inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_verdict.h"
#include "isc_kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct check {
	uint32_t strings;
	uint64_t last_ts, events, open[64];
	unsigned nopen;
	bool begun, ended;
};

static int c_begin(void *ctx, const struct isc_tl_header *h)
{
	struct check *c = ctx;
	(void)h;
	if (c->begun)
		abort();
	c->begun = true;
	return 0;
}

static int c_string(void *ctx, const struct isc_tl_string *s)
{
	struct check *c = ctx;
	if (!c->begun || s->id != c->strings + 1 || !s->name || !s->file)
		abort();
	c->strings = s->id;
	return 0;
}

static int c_event(void *ctx, const struct isc_tl_event *ev)
{
	struct check *c = ctx;
	if (!c->begun || c->ended || ev->ts < c->last_ts || ev->name_id > c->strings)
		abort();
	c->last_ts = ev->ts;
	c->events++;
	if (ev->type == ISC_REC_TL_SPAN_BEGIN && c->nopen < 64) {
		c->open[c->nopen++] = ev->span_id;
	} else if (ev->type == ISC_REC_TL_SPAN_END) {
		unsigned i = c->nopen;
		while (i > 0 && c->open[i - 1] != ev->span_id)
			i--;
		if (i > 0) {
			for (; i < c->nopen; i++)
				c->open[i - 1] = c->open[i];
			c->nopen--;
		}
	}
	return 0;
}

static int c_end(void *ctx, const struct isc_tl_stats *st)
{
	struct check *c = ctx;
	if (c->ended || st->events != c->events)
		abort();
	c->ended = true;
	return 0;
}

static void c_destroy(void *ctx)
{
	(void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct check c = { 0 };
	struct isc_sink sink = { &c, c_begin, c_string, c_event, c_end, c_destroy };
	struct isc_kineto_opts o = { .sort_budget = 16u << 10, .max_depth = 16 };
	struct isc_kineto_result res;
	FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
	if (!f)
		return 0;
	int rc = isc_kineto_import(f, "fuzz", &sink, &o, &res);
	fuzz_rejected = rc != 0; /* < 0 nothing imported, 1 damaged */
	if (rc >= 0 && (!c.ended || (rc == 1) != res.damaged))
		abort();
	if (rc < 0 && c.ended)
		abort();
	fclose(f);
	isc_err_clear();
	return 0;
}
