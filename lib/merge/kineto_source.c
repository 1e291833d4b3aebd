/*
 * kineto_source.c - the Kineto importer's bytes: a FILE read forward only
 * (a pipe works), plain JSON text or gzip inflated on the fly by a
 * producer thread, into one contiguous window (kineto.h, struct kt_src).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kineto.h"

/* Inflates up to cap bytes into out: 1 (*got > 0), 0 at the end, negative on an I/O error. */
static int gz_inflate(struct kt_src *s, uint8_t *out, size_t cap, size_t *got, bool *trunc, bool *bad)
{
	*got = 0;
	for (;;) {
		if (!s->z.avail_in && !s->in_eof) {
			size_t n = fread(s->in, 1, KT_SRC_IN, s->f);
			if (!n) {
				s->in_eof = true;
				if (ferror(s->f))
					return -EIO;
			}
			s->z.next_in = s->in;
			s->z.avail_in = (uInt)n;
		}
		if (s->member_end) { /* concatenated gzip members are one stream */
			if (!s->z.avail_in) {
				if (s->in_eof)
					return 0;
				continue;
			}
			if (s->z.next_in[0] != 0x1f) /* trailing bytes after the last member */
				return 0;
			inflateReset(&s->z);
			s->member_end = false;
		}
		s->z.next_out = out;
		s->z.avail_out = (uInt)cap;
		int zr = inflate(&s->z, Z_NO_FLUSH);
		*got = cap - s->z.avail_out;
		if (zr == Z_STREAM_END) {
			s->member_end = true;
		} else if (zr == Z_BUF_ERROR || zr == Z_OK) {
			if (!*got && !s->z.avail_in && s->in_eof) {
				*trunc = true;
				return 0;
			}
		} else {
			*bad = true;
			return *got ? 1 : 0; /* the next call ends it */
		}
		if (*got)
			return 1;
	}
}

static void *gz_thread(void *arg)
{
	struct kt_src *s = arg;
	bool trunc = false, bad = false;
	int rc = 1;
	pthread_mutex_lock(&s->mu);
	while (rc > 0 && !s->stop && !bad) {
		while (s->count == KT_QN && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop)
			break;
		unsigned slot = (s->head + s->count) % KT_QN;
		pthread_mutex_unlock(&s->mu); /* inflate outside the lock: the slot is not in the queue yet */
		size_t got;
		rc = gz_inflate(s, s->chunk[slot], KT_CHUNK, &got, &trunc, &bad);
		pthread_mutex_lock(&s->mu);
		if (got) {
			s->clen[slot] = got;
			s->count++;
			pthread_cond_broadcast(&s->cv);
		}
	}
	s->z_err = rc < 0 ? rc : 0;
	s->z_trunc = trunc;
	s->z_bad = bad;
	s->done = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Next gzip text into buf[len..cap): the queue's (or inflated here); 1, 0 at the end, negative on error. */
static int gz_more(struct kt_src *s, size_t cap)
{
	if (!s->threaded) {
		size_t got;
		bool trunc = false, bad = false;
		int rc = s->gz_bad ? 0 : gz_inflate(s, s->buf + s->len, cap, &got, &trunc, &bad);
		s->len += rc > 0 ? got : 0;
		s->gz_trunc |= trunc;
		s->gz_bad |= bad;
		return rc;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->count && !s->done)
		pthread_cond_wait(&s->cv, &s->mu);
	int rc = 1;
	if (s->count) {
		size_t n = s->clen[s->head] - s->coff < cap ? s->clen[s->head] - s->coff : cap;
		memcpy(s->buf + s->len, s->chunk[s->head] + s->coff, n);
		s->len += n;
		if ((s->coff += n) == s->clen[s->head]) {
			s->coff = 0;
			s->head = (s->head + 1) % KT_QN;
			s->count--;
			pthread_cond_broadcast(&s->cv);
		}
	} else {
		rc = s->z_err;
		s->gz_trunc = s->z_trunc;
		s->gz_bad = s->z_bad;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int isc_ksrc_more(struct kt_src *s)
{
	if (s->pos) {
		memmove(s->buf, s->buf + s->pos, s->len - s->pos);
		s->base += s->pos;
		s->len -= s->pos;
		s->pos = 0;
	}
	if (s->eof)
		return s->err;
	if (s->len == KT_SRC_CAP)
		return 1;
	int rc;
	if (s->gz) {
		rc = gz_more(s, KT_SRC_CAP - s->len);
	} else {
		size_t n = fread(s->buf + s->len, 1, KT_SRC_CAP - s->len, s->f);
		s->len += n;
		rc = n ? 1 : ferror(s->f) ? -EIO : 0;
	}
	if (rc <= 0) {
		s->eof = true;
		s->err = rc;
	}
	return rc;
}

int isc_ksrc_open(struct kt_src *s, FILE *f)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	if (!(s->buf = malloc(KT_SRC_CAP)))
		return -ENOMEM;
	int c1 = getc(f), c2 = c1 == 0x1f ? getc(f) : EOF;
	if (c1 == 0x1f && c2 == 0x8b) {
		s->gz = true;
		if (!(s->in = malloc(KT_SRC_IN)))
			return -ENOMEM;
		s->in[0] = 0x1f;
		s->in[1] = 0x8b;
		s->z.next_in = s->in;
		s->z.avail_in = 2;
		if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK)
			return -ENOMEM;
		s->zinit = true;
		for (unsigned i = 0; i < KT_QN; i++)
			if (!(s->chunk[i] = malloc(KT_CHUNK)))
				return 0; /* inflate in the caller's thread */
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->cv, NULL);
		s->threaded = !pthread_create(&s->thread, NULL, gz_thread, s);
		if (!s->threaded) {
			pthread_mutex_destroy(&s->mu);
			pthread_cond_destroy(&s->cv);
		}
		return 0;
	}
	if (c1 != EOF) { /* plain: the bytes peeked start the buffer */
		s->buf[s->len++] = (uint8_t)c1;
		if (c2 != EOF)
			s->buf[s->len++] = (uint8_t)c2;
	} else if (ferror(f)) {
		return -EIO;
	}
	return 0;
}

void isc_ksrc_close(struct kt_src *s)
{
	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
	}
	if (s->zinit)
		inflateEnd(&s->z);
	for (unsigned i = 0; i < KT_QN; i++)
		free(s->chunk[i]);
	free(s->in);
	free(s->buf);
}
