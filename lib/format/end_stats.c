/*
 * end_stats.c - the END chunk's END_STATS record: events, dropped, lost
 * frames, flags and the zigzag exit status, written by the recorder and
 * the timeline sink and read by the merge and the timeline reader.
 */
#include <errno.h>

#include "isc.h"
#include "isc_trace_int.h"

unsigned isc_end_stats_encode(uint8_t *body, const struct isc_end_stats *e)
{
	unsigned n = isc_put_varint(body, e->events);
	n += isc_put_varint(body + n, e->dropped);
	n += isc_put_varint(body + n, e->lost_frames);
	n += isc_put_varint(body + n, e->flags);
	n += isc_put_varint(body + n, isc_zigzag(e->status));
	return n;
}

int isc_end_stats_read(const uint8_t *p, size_t len, struct isc_end_stats *e, bool *found)
{
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	*found = false;
	isc_cursor_init(&c, p, len, 0);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		uint64_t v[5] = { 0 };
		const uint8_t *q = r.body, *end = r.body + r.len;
		if (r.type != ISC_REC_END_STATS)
			continue;
		for (int i = 0; i < 5; i++)
			if (isc_get_varint(&q, end, &v[i]))
				return -EBADMSG;
		*e = (struct isc_end_stats){ v[0], v[1], v[2], v[3], (int)isc_unzigzag(v[4]) };
		*found = true;
	}
	return rc;
}
