/* codec.c - varints, the record cursor and the record encoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"

int isc_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	const uint8_t *q = *p;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (q >= end)
			return -EBADMSG;
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -EBADMSG;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*v = r;
			return 0;
		}
	}
	return -EBADMSG;
}

int isc_cursor_next(struct isc_cursor *c, struct isc_rec *rec)
{
	const uint8_t *p = c->p;
	uint64_t size, delta;
	if (p == c->end)
		return 0;
	rec->type = *p++;
	if (isc_get_varint(&p, c->end, &size) || size > (uint64_t)(c->end - p))
		return -EBADMSG;
	const uint8_t *body_end = p + size;
	if (rec->type < 0x80) {
		if (isc_get_varint(&p, body_end, &delta))
			return -EBADMSG;
		if (delta > UINT64_MAX - c->ts)
			return -EBADMSG;
		c->ts += delta;
	}
	rec->ts = c->ts;
	rec->body = p;
	rec->len = (size_t)(body_end - p);
	c->p = body_end;
	return 1;
}

static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int isc_buf_put_record(struct isc_buf *b, uint8_t type, uint64_t ts, uint64_t *last_ts,
		       const void *body, size_t len)
{
	uint64_t delta = 0;
	size_t size = len;
	int rc;
	if (type < 0x80) {
		delta = ts >= *last_ts ? ts - *last_ts : 0; /* clamp: deltas are unsigned */
		size += varint_len(delta);
	}
	if ((rc = isc_buf_reserve(b, 1 + 10 + size)))
		return rc;
	isc_buf_put_u8(b, type);
	isc_buf_put_varint(b, size);
	if (type < 0x80) {
		isc_buf_put_varint(b, delta);
		*last_ts += delta;
	}
	return isc_buf_put(b, body, len);
}
