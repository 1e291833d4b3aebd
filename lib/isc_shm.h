/*
 * isc_shm.h - the shared-memory file a traced process writes and the
 * recorder drains.  Header-only (inline producer and consumer helpers) so
 * the Python agent can use it without linking libiscope.
 *
 * One file per process: <session dir>/<pid>.shm, created by the agent with
 * O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, mapped MAP_SHARED by both sides.
 *
 *   +----------------------+ 0
 *   | struct isc_shm_proc  |   4096 bytes
 *   +----------------------+ ISC_SHM_SLOTS_OFF
 *   | slot headers         |   nslots x 64 bytes
 *   +----------------------+ str_off
 *   | string area          |   str_size bytes of STRING_DEF records
 *   +----------------------+ ring_off
 *   | ring 0 ... nbig-1    |   nbig x big_ring_size bytes (power of two)
 *   | ring nbig ...        |   (nslots - nbig) x ring_size bytes (power of two)
 *   +----------------------+
 *
 * The first nbig slots (the first threads of the process: the main thread,
 * then the first ones it starts) get big rings, the others ordinary ones:
 * a busy thread has room for a few hundred ms of records at 10 M events/s
 * while the whole file stays within the recorder's budget (--trace-size).
 *
 * Each thread claims one slot and is the single producer of its ring; the
 * recorder's drain thread is the single consumer.  head/tail are byte
 * counters that only grow; used = head - tail.  The producer publishes with
 * a release store of head, the consumer with a release store of tail.  A
 * record that does not fit is dropped and counted: the producer never
 * waits.  Records in a ring use the trace record encoding; the timestamp
 * delta of each timed record is relative to the previous timed record the
 * producer *committed* to this ring (the first is relative to 0), so drops
 * never break the delta chain.
 *
 * Everything in this file is untrusted for the recorder: it bounds-checks
 * every field it reads.
 */
#ifndef ISC_SHM_H
#define ISC_SHM_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "isc_format.h" /* isc_put_varint */

#define ISC_SHM_MAGIC 0x4D485349u /* "ISHM" */
#define ISC_SHM_VERSION 2
#define ISC_SHM_SLOTS_OFF 4096u
#define ISC_SHM_SLOT_SIZE 64u
#define ISC_SHM_MAX_SLOTS 1024u
#define ISC_SHM_DEFAULT_SLOTS 64u /* the Python agent's, without INFERSCOPE_SLOTS */
#define ISC_SHM_BIG_RINGS 8u      /* its big rings, with INFERSCOPE_BIG_RING_KB */

enum isc_slot_state {
	ISC_SLOT_FREE = 0,
	ISC_SLOT_ACTIVE = 1, /* claimed by a live thread */
	ISC_SLOT_EXITED = 2, /* thread ended; drain may still read it */
};

enum isc_proc_state {
	ISC_PROC_STARTING = 0,
	ISC_PROC_RUNNING = 1,
	ISC_PROC_EXITED = 2, /* interpreter finalized normally */
};

struct isc_shm_proc {
	uint32_t magic;   /* ISC_SHM_MAGIC, written last by the creator */
	uint32_t version; /* ISC_SHM_VERSION */
	uint32_t pid;
	uint32_t ppid;
	uint64_t file_size;
	uint32_t nslots;
	uint32_t ring_size; /* bytes per ring of slots >= nbig, power of two */
	uint64_t str_off;
	uint64_t str_size;
	uint64_t ring_off;
	uint64_t start_ts; /* CLOCK_MONOTONIC ns when the agent attached */
	_Atomic uint32_t nslots_used; /* slots ever claimed (high-water mark) */
	_Atomic uint32_t state;       /* enum isc_proc_state */
	_Atomic uint64_t str_committed; /* bytes of valid records in string area */
	_Atomic uint64_t str_dropped;   /* string defs that did not fit */
	_Atomic uint64_t slot_dropped;  /* events lost because no slot was free */
	char cmdline[2048];             /* NUL-separated argv, truncated */
	uint32_t cmdline_len;
	uint32_t nbig;          /* slots [0, nbig) have rings of big_ring_size */
	uint32_t big_ring_size; /* power of two >= ring_size; unused when nbig = 0 */
};

struct isc_shm_slot {
	_Atomic uint32_t tid;   /* kernel thread id (gettid) */
	_Atomic uint32_t state; /* enum isc_slot_state */
	_Atomic uint64_t head;  /* bytes ever written (producer) */
	_Atomic uint64_t tail;  /* bytes ever consumed (recorder) */
	_Atomic uint64_t dropped; /* records dropped because the ring was full */
	uint64_t last_ts;       /* producer-private: ts of last committed record */
	char name[24];          /* thread name, NUL padded (informational) */
};

_Static_assert(sizeof(struct isc_shm_proc) <= ISC_SHM_SLOTS_OFF, "proc header too big");
_Static_assert(sizeof(struct isc_shm_slot) <= ISC_SHM_SLOT_SIZE, "slot too big");

static inline struct isc_shm_slot *isc_shm_slot_at(void *base, uint32_t i)
{
	return (struct isc_shm_slot *)((char *)base + ISC_SHM_SLOTS_OFF + (uint64_t)i * ISC_SHM_SLOT_SIZE);
}

/*
 * Offset of ring i from ring_off, and its size, for a layout of nbig big
 * rings followed by ordinary ones.  The recorder passes its validated
 * copies of the header's fields, never the shared header itself.
 */
static inline uint64_t isc_shm_ring_offset(uint32_t nbig, uint32_t big, uint32_t ring, uint32_t i)
{
	if (i < nbig)
		return (uint64_t)i * big;
	return (uint64_t)nbig * big + (uint64_t)(i - nbig) * ring;
}

static inline uint32_t isc_shm_ring_len(uint32_t nbig, uint32_t big, uint32_t ring, uint32_t i)
{
	return i < nbig ? big : ring;
}

/* Producer side (the agent trusts its own header). */
static inline uint8_t *isc_shm_ring_at(void *base, const struct isc_shm_proc *p, uint32_t i)
{
	return (uint8_t *)base + p->ring_off + isc_shm_ring_offset(p->nbig, p->big_ring_size, p->ring_size, i);
}

/*
 * Layout helpers both agents use when they create their file: an unsigned
 * setting from the environment (def when unset or not a plain number,
 * clamped to [lo, hi]), and offsets rounded up to the page.
 */
static inline uint32_t isc_shm_env_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi)
{
	const char *s = getenv(name);
	char *end;
	if (!s || !*s)
		return def;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end)
		return def;
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

#define ISC_SHM_PAGE 4096u
static inline uint64_t isc_shm_page_align(uint64_t v)
{
	return (v + ISC_SHM_PAGE - 1) & ~(uint64_t)(ISC_SHM_PAGE - 1);
}

/*
 * An agent's shared-memory file, the same for both agents: creates
 * <session>/<pid><suffix> (O_EXCL, O_NOFOLLOW, mode 0600), sizes it to
 * h->file_size and maps it; copies h's pid, ppid, sizes, offsets and
 * start_ts, sets the version and the process's /proc/self/cmdline.
 * Returns the mapping, not yet published: the caller sets up what it
 * needs, then stores ISC_SHM_MAGIC (release).  NULL on failure, with the
 * reason in err and no file left behind.
 */
static inline void *isc_shm_create(const char *session, const char *suffix, const struct isc_shm_proc *h,
				   char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	void *base;
	if (snprintf(path, sizeof(path), "%s/%u%s", session, (unsigned)h->pid, suffix) >= (int)sizeof(path)) {
		snprintf(err, errlen, "session path too long");
		return NULL;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, (off_t)h->file_size) < 0) {
		snprintf(err, errlen, "%s: cannot size to %llu bytes: %s", path, (unsigned long long)h->file_size,
			 strerror(errno));
		goto fail;
	}
	base = mmap(NULL, h->file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
		goto fail;
	}
	close(fd);
	struct isc_shm_proc *p = base;
	p->version = ISC_SHM_VERSION;
	p->pid = h->pid;
	p->ppid = h->ppid;
	p->file_size = h->file_size;
	p->nslots = h->nslots;
	p->ring_size = h->ring_size;
	p->nbig = h->nbig;
	p->big_ring_size = h->big_ring_size;
	p->str_off = h->str_off;
	p->str_size = h->str_size;
	p->ring_off = h->ring_off;
	p->start_ts = h->start_ts;
	int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	while (cfd >= 0 && n < sizeof(p->cmdline)) {
		ssize_t r = read(cfd, p->cmdline + n, sizeof(p->cmdline) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (cfd >= 0)
		close(cfd);
	p->cmdline_len = (uint32_t)n;
	return base;
fail:
	unlink(path);
	close(fd);
	return NULL;
}

/*
 * Producer: copies a complete record (len bytes) into the ring, or drops it.
 * Returns 1 if written, 0 if dropped (and counted).  Only the owning thread
 * may call this for a given slot.
 */
static inline int isc_ring_push(struct isc_shm_slot *s, uint8_t *ring, uint32_t ring_size,
				const uint8_t *rec, uint32_t len)
{
	uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	if (ring_size - (head - tail) < len) {
		atomic_store_explicit(&s->dropped,
				      atomic_load_explicit(&s->dropped, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		return 0;
	}
	uint32_t pos = (uint32_t)(head & (ring_size - 1));
	uint32_t first = ring_size - pos < len ? ring_size - pos : len;
	memcpy(ring + pos, rec, first);
	if (first < len)
		memcpy(ring, rec + first, len - first);
	atomic_store_explicit(&s->head, head + len, memory_order_release);
	return 1;
}

/*
 * Consumer: copies up to max committed bytes out of the ring into out
 * (which does not wrap) without consuming them.  Returns bytes copied.
 */
static inline uint32_t isc_ring_peek(struct isc_shm_slot *s, const uint8_t *ring, uint32_t ring_size,
				     uint8_t *out, uint32_t max)
{
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
	uint64_t avail = head - tail;
	if (avail > ring_size) /* hostile or corrupt producer */
		return 0;
	uint32_t n = avail < max ? (uint32_t)avail : max;
	uint32_t pos = (uint32_t)(tail & (ring_size - 1));
	uint32_t first = ring_size - pos < n ? ring_size - pos : n;
	memcpy(out, ring + pos, first);
	if (first < n)
		memcpy(out + first, ring, n - first);
	return n;
}

/*
 * Producer, at its exit: when the recorder is gone (killed: its
 * recorder.lock, which it keeps flock'ed while it runs, can be locked),
 * nobody will read or remove our file <session>/<file>: remove it, and the
 * session directory once nothing else is in it.  Without a recorder.lock
 * (a session made by hand) nothing is removed.
 */
static inline void isc_shm_remove_if_orphaned(const char *session, const char *file)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/recorder.lock", session);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		snprintf(path, sizeof(path), "%s/%s", session, file);
		unlink(path);
		DIR *d = opendir(session);
		struct dirent *e;
		int others = 0;
		while (d && (e = readdir(d)))
			others += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "recorder.lock");
		if (d)
			closedir(d);
		if (d && !others) { /* the last one out; a race with another is harmless */
			snprintf(path, sizeof(path), "%s/recorder.lock", session);
			unlink(path);
			rmdir(session);
		}
	}
	close(fd);
}

/* Consumer: releases n bytes previously peeked. */
static inline void isc_ring_consume(struct isc_shm_slot *s, uint32_t n)
{
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	atomic_store_explicit(&s->tail, tail + n, memory_order_release);
}

#endif
