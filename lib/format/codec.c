/* codec.c - varints, record cursor and the growable buffer encoders. */
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

int isc_buf_reserve(struct isc_buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < extra) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	uint8_t *d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int isc_buf_put(struct isc_buf *b, const void *p, size_t n)
{
	int rc = isc_buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int isc_buf_put_u8(struct isc_buf *b, uint8_t v)
{
	return isc_buf_put(b, &v, 1);
}

int isc_buf_put_varint(struct isc_buf *b, uint64_t v)
{
	int rc = isc_buf_reserve(b, 10);
	if (rc)
		return rc;
	b->len += isc_put_varint(b->data + b->len, v);
	return 0;
}

int isc_buf_put_bytes(struct isc_buf *b, const void *p, size_t n)
{
	int rc = isc_buf_put_varint(b, n);
	return rc ? rc : isc_buf_put(b, p, n);
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

void isc_buf_free(struct isc_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
