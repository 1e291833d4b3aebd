/* buf.c - the growable byte buffer (isc.h, struct isc_buf) every stage appends to. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"

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

void isc_buf_free(struct isc_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
