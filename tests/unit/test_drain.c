/*
 * test_drain.c - the recorder's drain of the agents' untrusted shared
 * memory (lib/record/drain.c), without a workload: the test writes a
 * <pid>.shm file as an agent would (isc_shm_create, records pushed with
 * isc_ring_push), runs the drain over the session directory, and reads the
 * trace chunks it wrote back.  Then the hostile variants: a head far past
 * the tail, a record of a kind an agent may not write, bytes that do not
 * parse, a file another user could write, a header whose sizes do not fit
 * the file.  Each must cost only that ring or file, with one warning, and
 * never a crash.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isc_shm.h"
#include "recorder.h"
#include "tap.h"

#define RING 4096u

struct env {
	char dir[64];
	struct isc_record_opts o;
	struct isc_record_result res;
	struct recorder r;
	FILE *out;
	struct isc_shm_proc *h; /* the agent's mapping */
};

/* A session with the agent file of pid (this process) made and published. */
static int setup(struct env *e, mode_t mode)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/isc-drain.XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	e->o.flush_ms = 1000;
	e->out = tmpfile();
	e->r.o = &e->o;
	e->r.res = &e->res;
	snprintf(e->r.dir, sizeof(e->r.dir), "%s", e->dir);
	e->r.dirfd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e->r.ring_max = 1u << 20;
	e->r.pending_max = 128u << 10;
	pthread_mutex_init(&e->r.wlock, NULL);
	pthread_mutex_init(&e->r.plock, NULL);
	if (!e->out || e->r.dirfd < 0 || isc_writer_new(&e->r.w, e->out, 1))
		return -1;
	uint64_t str_off = isc_shm_page_align(ISC_SHM_SLOTS_OFF + 2 * ISC_SHM_SLOT_SIZE);
	uint64_t ring_off = isc_shm_page_align(str_off + 4096);
	struct isc_shm_proc h = { .pid = (uint32_t)getpid(), .ppid = 1, .file_size = ring_off + 2 * RING, .nslots = 2,
				  .ring_size = RING, .str_off = str_off, .str_size = 4096, .ring_off = ring_off, .start_ts = 1 };
	char err[PATH_MAX + 256];
	if (!(e->h = isc_shm_create(e->dir, ".shm", &h, err, sizeof(err))))
		return -1;
	char path[128];
	snprintf(path, sizeof(path), "%s/%d.shm", e->dir, (int)getpid());
	if (mode != 0600 && chmod(path, mode))
		return -1;
	return 0;
}

static void publish(struct env *e)
{
	__atomic_store_n(&e->h->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);
}

/* Slot i claimed by thread tid; its ring. */
static uint8_t *slot(struct env *e, uint32_t i, uint32_t tid, struct isc_shm_slot **s)
{
	*s = isc_shm_slot_at(e->h, i);
	atomic_store(&(*s)->tid, tid);
	atomic_store(&(*s)->state, ISC_SLOT_ACTIVE);
	if (atomic_load(&e->h->nslots_used) < i + 1)
		atomic_store(&e->h->nslots_used, i + 1);
	return isc_shm_ring_at(e->h, e->h, i);
}

/* n PY_CALL records (code ids 1..n, 10 ns apart) pushed into the ring. */
static void push_calls(struct isc_shm_slot *s, uint8_t *ring, unsigned n)
{
	struct isc_buf b = { 0 };
	uint64_t last = 0;
	for (unsigned i = 1; i <= n; i++) {
		uint8_t body[10];
		unsigned bl = isc_put_varint(body, i);
		b.len = 0;
		last = 0;
		isc_buf_put_record(&b, ISC_REC_PY_CALL, 10, &last, body, bl);
		isc_ring_push(s, ring, RING, b.data, (uint32_t)b.len);
	}
	isc_buf_free(&b);
}

/* Drains twice (attach, then flush every stream); returns the EVENTS records written for tid. */
static unsigned drain(struct env *e, uint32_t tid)
{
	uint64_t now = 1000;
	for (int k = 0; k < 2; k++) {
		isc_drain_scan(&e->r);
		for (unsigned i = 0; i < e->r.nprocs; i++)
			if (!e->r.procs[i]->closed)
				isc_drain_proc(&e->r, e->r.procs[i], now);
	}
	for (unsigned i = 0; i < e->r.nprocs; i++) {
		struct rec_proc *p = e->r.procs[i];
		for (uint32_t j = 0; p->streams && j < p->nslots; j++)
			isc_drain_flush(&e->r, p, &p->streams[j]);
	}
	isc_writer_flush(e->r.w);
	rewind(e->out);
	struct isc_reader *rd;
	struct isc_chunk_header ch;
	const uint8_t *pl;
	unsigned n = 0;
	if (isc_reader_new(&rd, e->out))
		return 0;
	while (isc_reader_next(rd, &ch, &pl) == 1) {
		if (ch.type != ISC_CHUNK_EVENTS || ch.tid != tid)
			continue;
		struct isc_cursor c;
		struct isc_rec rec;
		isc_cursor_init(&c, pl, ch.payload_len, ch.base_ts);
		while (isc_cursor_next(&c, &rec) == 1)
			n += rec.type == ISC_REC_PY_CALL;
	}
	isc_reader_free(rd);
	return n;
}

static void teardown(struct env *e)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%d.shm", e->dir, (int)getpid());
	unlink(path);
	rmdir(e->dir);
	for (unsigned i = 0; i < e->r.nprocs; i++) {
		struct rec_proc *p = e->r.procs[i];
		if (p->map)
			munmap(p->map, p->map_len);
		if (p->fd >= 0)
			close(p->fd);
		for (uint32_t j = 0; p->streams && j < p->nslots; j++)
			isc_buf_free(&p->streams[j].pending);
		free(p->streams);
		free(p);
	}
	munmap(e->h, e->h->file_size);
	isc_writer_free(e->r.w);
	fclose(e->out);
	close(e->r.dirfd);
	free(e->r.scratch);
	isc_buf_free(&e->r.tmp);
}

int main(void)
{
	struct env e;
	struct isc_shm_slot *s;
	uint8_t *ring;

	if (!ok(!setup(&e, 0600), "a session and an agent file"))
		return tap_done();
	ring = slot(&e, 0, 101, &s);
	push_calls(s, ring, 50);
	publish(&e);
	unsigned n = drain(&e, 101);
	ok(n == 50 && e.res.events == 50, "50 calls pushed, 50 drained into EVENTS (%u, %llu)", n,
	   (unsigned long long)e.res.events);
	ok(e.res.warnings == 0, "no warning for a well-behaved agent");
	ok(atomic_load(&s->tail) == atomic_load(&s->head), "the ring was consumed to its head");
	teardown(&e);

	/* a head more than a ring past the tail */
	setup(&e, 0600);
	ring = slot(&e, 0, 102, &s);
	push_calls(s, ring, 5);
	atomic_store(&s->head, atomic_load(&s->tail) + 10 * RING);
	publish(&e);
	n = drain(&e, 102);
	ok(n == 0 && e.res.warnings == 1, "head past the tail: ring discarded, one warning (%u, %u)", n, e.res.warnings);
	teardown(&e);

	/* good records, then bytes that do not parse, in one ring; the other ring is fine */
	setup(&e, 0600);
	ring = slot(&e, 0, 103, &s);
	push_calls(s, ring, 3);
	const uint8_t junk[] = { ISC_REC_PY_CALL, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	isc_ring_push(s, ring, RING, junk, sizeof(junk));
	struct isc_shm_slot *s2;
	uint8_t *ring2 = slot(&e, 1, 104, &s2);
	push_calls(s2, ring2, 7);
	publish(&e);
	n = drain(&e, 103);
	ok(n == 3, "corrupt record: the 3 before it kept (%u)", n);
	ok(drain(&e, 104) == 7, "the other thread's ring is untouched");
	ok(e.res.warnings == 1, "one warning (%u)", e.res.warnings);
	teardown(&e);

	/* a record of a kind the Python agent may not write (PROC_INFO is the recorder's) */
	setup(&e, 0600);
	ring = slot(&e, 0, 105, &s);
	push_calls(s, ring, 2);
	struct isc_buf b = { 0 };
	uint64_t last = 0;
	uint8_t body[4] = { 1, 1, 'x', 'y' };
	isc_buf_put_record(&b, ISC_REC_PROC_INFO, 0, &last, body, sizeof(body));
	isc_ring_push(s, ring, RING, b.data, (uint32_t)b.len);
	isc_buf_free(&b);
	push_calls(s, ring, 2);
	publish(&e);
	n = drain(&e, 105);
	ok(n == 2 && e.res.warnings == 1, "a planted PROC_INFO stops the ring there, one warning (%u, %u)", n,
	   e.res.warnings);
	teardown(&e);

	/* a file others may write is refused whole */
	setup(&e, 0666);
	ring = slot(&e, 0, 106, &s);
	push_calls(s, ring, 4);
	publish(&e);
	n = drain(&e, 106);
	ok(n == 0 && e.res.warnings == 1, "mode 0666: refused, one warning (%u, %u)", n, e.res.warnings);
	teardown(&e);

	/* and one others may only read: the rings hold the workload's names and arguments */
	static const mode_t readable[] = { 0640, 0604, 0644 };
	for (size_t i = 0; i < sizeof(readable) / sizeof(readable[0]); i++) {
		setup(&e, readable[i]);
		ring = slot(&e, 0, 110 + (uint32_t)i, &s);
		push_calls(s, ring, 4);
		publish(&e);
		n = drain(&e, 110 + (uint32_t)i);
		ok(n == 0 && e.res.warnings == 1, "mode 0%o: refused, one warning (%u, %u)", (unsigned)readable[i], n,
		   e.res.warnings);
		teardown(&e);
	}

	/* a header whose rings do not fit the file */
	setup(&e, 0600);
	ring = slot(&e, 0, 107, &s);
	push_calls(s, ring, 4);
	e.h->nslots = 1000;
	publish(&e);
	n = drain(&e, 107);
	ok(n == 0 && e.res.warnings == 1, "rings beyond the file: refused, one warning (%u, %u)", n, e.res.warnings);
	teardown(&e);
	return tap_done();
}
