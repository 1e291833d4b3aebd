/*
 * kineto_sort.c - the Kineto importer's external sort (kineto.h): items
 * buffered and sorted by key, spilled as sorted runs to a tmpfile() when
 * the buffer is full, read back in blocks and merged with a heap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kineto.h"

static void key_of(const struct kt_item *it, struct kt_skey *k)
{
	k->ts = it->ts;
	k->ctx = (uint64_t)it->pid << 32 | it->tid;
	k->tie = it->type == IT_SPAN ? (uint64_t)(INT64_MAX - it->dur) : 1ULL << 63;
	k->seq = it->seq;
}

static int skey_cmp(const struct kt_skey *a, const struct kt_skey *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->ctx != b->ctx)
		return a->ctx < b->ctx ? -1 : 1;
	if (a->tie != b->tie)
		return a->tie < b->tie ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int skey_qcmp(const void *a, const void *b)
{
	return skey_cmp(a, b);
}

static int item_cmp(const struct kt_item *a, const struct kt_item *b)
{
	struct kt_skey x, y;
	key_of(a, &x);
	key_of(b, &y);
	return skey_cmp(&x, &y);
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void sort_buffer(struct isc_ksort *k)
{
	for (size_t i = 0; i < k->nitems; i++) {
		key_of(&k->items[i], &k->keys[i]);
		k->keys[i].idx = i;
	}
	qsort(k->keys, k->nitems, sizeof(*k->keys), skey_qcmp);
}

/* Sorts the buffer and appends it to the temporary file as one run. */
static int spill(struct isc_ksort *k)
{
	int rc;
	if (!k->tmp) {
		if (!(k->tmp = tmpfile())) {
			rc = -errno;
			isc_err_push("Cannot create a temporary file: %s", strerror(errno));
			return rc;
		}
		k->tmpfd = fileno(k->tmp);
	}
	if (k->nruns == k->capruns) {
		size_t cap = k->capruns ? k->capruns * 2 : 16;
		struct kt_run *r = realloc(k->runs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		k->runs = r;
		k->capruns = cap;
	}
	uint64_t off = k->nruns ? k->runs[k->nruns - 1].off + k->runs[k->nruns - 1].n * sizeof(struct kt_item) : 0;
	sort_buffer(k);
	k->wbuf.len = 0;
	for (size_t i = 0; i < k->nitems; i++) {
		if ((rc = isc_buf_put(&k->wbuf, &k->items[k->keys[i].idx], sizeof(struct kt_item))))
			return rc;
		if (k->wbuf.len >= (1u << 20) || i + 1 == k->nitems) {
			if ((rc = write_all(k->tmpfd, k->wbuf.data, k->wbuf.len))) {
				isc_err_push("Failed to write a temporary file: %s", strerror(-rc));
				return rc;
			}
			k->wbuf.len = 0;
		}
	}
	k->runs[k->nruns++] = (struct kt_run){ .off = off, .n = k->nitems };
	k->nitems = 0;
	return 0;
}

int isc_ksort_init(struct isc_ksort *k, size_t budget)
{
	memset(k, 0, sizeof(*k));
	k->tmpfd = -1;
	k->capitems = budget / (sizeof(struct kt_item) + sizeof(struct kt_skey));
	if (k->capitems < 64)
		k->capitems = 64;
	k->items = malloc(k->capitems * sizeof(*k->items));
	k->keys = malloc(k->capitems * sizeof(*k->keys));
	k->peak_bytes = k->capitems * (sizeof(struct kt_item) + sizeof(struct kt_skey));
	return k->items && k->keys ? 0 : -ENOMEM;
}

int isc_ksort_push(struct isc_ksort *k, struct kt_item *it)
{
	it->seq = k->seq++;
	if (k->nitems == k->capitems) {
		int rc = spill(k);
		if (rc)
			return rc;
	}
	k->items[k->nitems++] = *it;
	return 0;
}

/* Current item of a run, reading the next block of a spilled run when needed; NULL when drained. */
static const struct kt_item *run_peek(struct isc_ksort *k, struct kt_run *r, int *err)
{
	if (r->keys)
		return r->pos < r->len ? &r->items[r->keys[r->pos].idx] : NULL;
	if (r->pos < r->len)
		return &r->buf[r->pos];
	if (r->next == r->n)
		return NULL;
	size_t want = r->n - r->next < r->cap ? (size_t)(r->n - r->next) : r->cap;
	size_t bytes = want * sizeof(struct kt_item), got = 0;
	off_t at = (off_t)(r->off + r->next * sizeof(struct kt_item));
	while (got < bytes) {
		ssize_t n = pread(k->tmpfd, (uint8_t *)r->buf + got, bytes - got, at + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? -errno : -EIO;
			isc_err_push("Failed to read a temporary file: %s", strerror(n < 0 ? errno : EIO));
			return NULL;
		}
		got += (size_t)n;
	}
	r->next += want;
	r->pos = 0;
	r->len = want;
	return r->buf;
}

static int runs_cmp(struct isc_ksort *k, struct kt_run **h, size_t a, size_t b)
{
	int e = 0;
	return item_cmp(run_peek(k, h[a], &e), run_peek(k, h[b], &e));
}

static void runs_down(struct isc_ksort *k, struct kt_run **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && runs_cmp(k, h, l, m) < 0)
			m = l;
		if (r < n && runs_cmp(k, h, r, m) < 0)
			m = r;
		if (m == i)
			return;
		struct kt_run *t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

int isc_ksort_begin(struct isc_ksort *k)
{
	int rc = 0;
	sort_buffer(k);
	k->tail.keys = k->keys;
	k->tail.items = k->items;
	k->tail.len = k->nitems;
	if (!(k->heap = calloc(k->nruns + 1, sizeof(*k->heap))))
		return -ENOMEM;
	if (k->nruns) { /* read buffers: sort_budget shared, at least 4 KiB each */
		size_t per = (k->capitems * (sizeof(struct kt_item) + sizeof(struct kt_skey))) / k->nruns;
		size_t cap = per / sizeof(struct kt_item);
		if (cap < 4096 / sizeof(struct kt_item) + 1)
			cap = 4096 / sizeof(struct kt_item) + 1;
		if (cap > (1u << 20) / sizeof(struct kt_item))
			cap = (1u << 20) / sizeof(struct kt_item);
		uint64_t held = (uint64_t)k->capitems * (sizeof(struct kt_item) + sizeof(struct kt_skey)) +
				(uint64_t)k->nruns * cap * sizeof(struct kt_item);
		if (held > k->peak_bytes)
			k->peak_bytes = held;
		for (size_t i = 0; i < k->nruns; i++) {
			if (!(k->runs[i].buf = malloc(cap * sizeof(struct kt_item))))
				return -ENOMEM;
			k->runs[i].cap = cap;
		}
	}
	for (size_t i = 0; i < k->nruns; i++) {
		if (run_peek(k, &k->runs[i], &rc))
			k->heap[k->nheap++] = &k->runs[i];
		else if (rc)
			return rc;
	}
	if (k->tail.len)
		k->heap[k->nheap++] = &k->tail;
	for (size_t i = k->nheap; i-- > 0;)
		runs_down(k, k->heap, k->nheap, i);
	return 0;
}

const struct kt_item *isc_ksort_peek(struct isc_ksort *k, int *err)
{
	return k->nheap ? run_peek(k, k->heap[0], err) : NULL;
}

int isc_ksort_next(struct isc_ksort *k)
{
	int rc = 0;
	k->heap[0]->pos++;
	if (!run_peek(k, k->heap[0], &rc)) {
		if (rc)
			return rc;
		k->heap[0] = k->heap[--k->nheap];
	}
	runs_down(k, k->heap, k->nheap, 0);
	return 0;
}

void isc_ksort_free(struct isc_ksort *k)
{
	free(k->items);
	free(k->keys);
	isc_buf_free(&k->wbuf);
	if (k->tmp)
		fclose(k->tmp);
	for (size_t i = 0; i < k->nruns; i++)
		free(k->runs[i].buf);
	free(k->runs);
	free(k->heap);
}
