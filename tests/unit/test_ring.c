/*
 * test_ring.c - the single-producer ring of isc_shm.h under a concurrent
 * producer and consumer: records arrive whole, in order, and every record
 * is either delivered or counted as dropped; the producer never waits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "isc_shm.h"
#include "isc.h"
#include "tap.h"

#define RING 4096u
#define N 400000u

static struct isc_shm_slot slot;
static uint8_t ring[RING];
static volatile int producer_done;
static uint64_t pushed;

/* Record i: type 0x01, size, varint i, then i % 23 filler bytes. */
static unsigned make_rec(uint8_t *buf, uint64_t i)
{
	uint8_t body[40];
	unsigned n = isc_put_varint(body, i);
	unsigned fill = (unsigned)(i % 23);
	memset(body + n, (int)(i & 0xff), fill);
	n += fill;
	buf[0] = 0x01;
	unsigned h = 1 + isc_put_varint(buf + 1, n);
	memcpy(buf + h, body, n);
	return h + n;
}

static void *producer(void *arg)
{
	(void)arg;
	uint8_t rec[64];
	for (uint64_t i = 0; i < N; i++)
		pushed += (uint64_t)isc_ring_push(&slot, ring, RING, rec, make_rec(rec, i));
	producer_done = 1;
	return NULL;
}

int main(void)
{
	pthread_t t;
	uint8_t out[RING];
	uint64_t got = 0, last = 0, bad = 0;
	bool first = true;
	pthread_create(&t, NULL, producer, NULL);
	for (;;) {
		int done = producer_done;
		uint32_t n = isc_ring_peek(&slot, ring, RING, out, RING);
		uint32_t pos = 0;
		while (pos < n) {
			const uint8_t *p = out + pos + 1;
			uint64_t size, i;
			if (isc_get_varint(&p, out + n, &size) || size > (uint64_t)(out + n - p)) {
				bad++;
				break;
			}
			const uint8_t *b = p;
			if (out[pos] != 0x01 || isc_get_varint(&b, p + size, &i) || (!first && i <= last))
				bad++;
			for (const uint8_t *q = b; q < p + size; q++)
				if (*q != (uint8_t)(i & 0xff))
					bad++;
			first = false;
			last = i;
			got++;
			pos = (uint32_t)(p + size - out);
		}
		isc_ring_consume(&slot, pos);
		if (done && n == 0)
			break;
	}
	pthread_join(t, NULL);
	uint64_t dropped = atomic_load(&slot.dropped);
	ok(bad == 0, "every record arrives whole and in order (%llu bad)", (unsigned long long)bad);
	ok(got == pushed, "consumer got exactly what the producer committed (%llu)", (unsigned long long)got);
	ok(got + dropped == N, "delivered + dropped = produced (%llu + %llu)", (unsigned long long)got,
	   (unsigned long long)dropped);
	ok(atomic_load(&slot.head) == atomic_load(&slot.tail), "ring empty at the end");

	/* a full ring drops instead of overwriting */
	struct isc_shm_slot s2;
	uint8_t r2[64], rec[64];
	memset(&s2, 0, sizeof(s2));
	unsigned len = make_rec(rec, 5);
	int accepted = 0;
	for (int i = 0; i < 100; i++)
		accepted += isc_ring_push(&s2, r2, sizeof(r2), rec, len);
	ok(accepted == (int)(sizeof(r2) / len) && atomic_load(&s2.dropped) == (uint64_t)(100 - accepted),
	   "full ring: %d accepted, the rest counted as dropped", accepted);
	/* a hostile head far beyond tail is refused by the consumer */
	atomic_store(&s2.head, 1u << 30);
	ok(isc_ring_peek(&s2, r2, sizeof(r2), out, sizeof(out)) == 0, "a corrupt head is not trusted");
	return tap_done();
}
