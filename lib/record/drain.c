/*
 * drain.c - the recorder's reading of the agents' shared memory, which is
 * untrusted (record.c's top comment says what that means): attaching to a
 * <pid>.shm / <pid>.cuda.shm file after checking it, copying each ring's
 * committed records out and checking every one, the string area, the
 * process header, and SIGBUS from a file truncated under the mapping.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isc_log.h"
#include "isc_alloc.h"
#include "isc_shm.h"
#include "isc_trace_int.h" /* isc_ring_record_ok */
#include "recorder.h"

#define STR_WINDOW (4u << 20) /* string-area bytes per STRINGS chunk (< ISC_CHUNK_MAX_PAYLOAD) */

static __thread sigjmp_buf *shm_jmp; /* set while this thread reads shared memory */

/*
 * SIGBUS while shm_jmp is set: a traced process truncated its file under
 * our mapping.  Jump back to shm_guard(), which closes that process.  A
 * SIGBUS anywhere else is a real bug: take the default action.
 */
void isc_drain_on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	(void)ctx;
	if (shm_jmp)
		siglongjmp(*shm_jmp, 1);
	signal(sig, SIG_DFL);
}

static void drain_strings(struct recorder *r, struct rec_proc *p);

/*
 * Writes a stream's pending records as one EVENTS frame, after any string
 * definitions committed so far: the records were read from the ring after
 * the ids they use were committed, so reading the string area now finds
 * them all.  keep: a flight recorder never evicts the frame.
 */
static void flush_stream_keep(struct recorder *r, struct rec_proc *p, struct rec_stream *s, bool keep)
{
	if (!s->pending.len)
		return;
	if (!p->faulted)
		drain_strings(r, p);
	isc_rec_emit(r, p->chunk, (uint32_t)p->pid, s->tid, s->pending_base, s->seq++, s->pending.data,
	     s->pending.len, keep);
	s->pending.len = 0;
}

static void flush_stream(struct recorder *r, struct rec_proc *p, struct rec_stream *s)
{
	flush_stream_keep(r, p, s, false);
}

/*
 * Flight recorder: a Python thread's stream begins with THREAD_BEGIN (its
 * Python name) and, in the process's first thread, CALIBRATION; they go out
 * as a frame of their own that is never evicted, so the names and the
 * recording cost survive a window (formats/trace.md).
 */
static bool head_record(const struct recorder *r, const struct rec_proc *p, const struct rec_stream *s, uint8_t type)
{
	return r->o->ring_bytes && !r->direct && p->chunk == ISC_CHUNK_EVENTS && !s->head_done &&
	       (type == ISC_REC_THREAD_BEGIN || type == ISC_REC_CALIBRATION);
}

/* Adds the records [from, to) to the stream's pending buffer; ts is the
 * time after the last of them; mark is rec.drained. */
static void pending_append(struct rec_stream *s, const uint8_t *from, const uint8_t *to, uint64_t ts, uint64_t now,
			   uint64_t mark)
{
	if (!s->pending.len) {
		s->pending_base = s->ts;
		s->pending_since = now;
		s->pending_mark = mark;
	}
	if (to > from && !isc_buf_put(&s->pending, from, (size_t)(to - from)))
		s->ts = ts;
}

/* Refuses a process's file for good, with one warning. */
static int proc_refuse(struct recorder *r, struct rec_proc *p, const char *why)
{
	if (!p->warned) {
		isc_log(ISC_LOG_WARN, "ignoring %s/%d%s: %s", r->dir, (int)p->pid, p->suffix, why);
		r->res->warnings++;
		p->warned = true;
	}
	p->closed = true;
	return -EBADMSG;
}

/*
 * Maps <dir>/<pid>.shm when the agent has published it; 0 = not ready yet,
 * 1 = attached, negative = refused for good.  Runs under shm_guard().
 */
static int proc_attach(struct recorder *r, struct rec_proc *p)
{
	char name[32];
	struct stat st;
	snprintf(name, sizeof(name), "%d%s", (int)p->pid, p->suffix);
	if (p->fd < 0) {
		/* O_NONBLOCK: a FIFO planted under that name must not block us */
		p->fd = openat(r->dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (p->fd < 0)
			return errno == ENOENT ? 0 : proc_refuse(r, p, errno == ELOOP ? "a symbolic link" : strerror(errno));
	}
	if (fstat(p->fd, &st))
		return 0;
	if (!S_ISREG(st.st_mode))
		return proc_refuse(r, p, "not a regular file");
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return proc_refuse(r, p, "not owned by us with mode 0600");
	if ((uint64_t)st.st_size < ISC_SHM_SLOTS_OFF)
		return 0;
	if (!p->map) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
		if (m == MAP_FAILED)
			return 0;
		p->map = m;
		p->map_len = (size_t)st.st_size;
	}
	struct isc_shm_proc *h = (struct isc_shm_proc *)p->map;
	if (atomic_load_explicit((_Atomic uint32_t *)&h->magic, memory_order_acquire) != ISC_SHM_MAGIC)
		return 0;
	uint64_t nslots = h->nslots, ring = h->ring_size, nbig = h->nbig, big = h->big_ring_size;
	uint64_t str_off = h->str_off, str_size = h->str_size, ring_off = h->ring_off;
	if (!nbig)
		big = ring;
	if (h->version != ISC_SHM_VERSION || h->pid != (uint32_t)p->pid || nslots == 0 ||
	    nslots > ISC_SHM_MAX_SLOTS || ring < 4096 || ring > r->ring_max || (ring & (ring - 1)) ||
	    nbig > nslots || big < ring || big > r->ring_max || (big & (big - 1)) ||
	    str_off < ISC_SHM_SLOTS_OFF + nslots * ISC_SHM_SLOT_SIZE || str_size > p->map_len ||
	    str_off > p->map_len - str_size || ring_off < str_off + str_size ||
	    ring_off > p->map_len ||
	    isc_shm_ring_offset((uint32_t)nbig, (uint32_t)big, (uint32_t)ring, (uint32_t)nslots) > p->map_len - ring_off)
		return proc_refuse(r, p, "inconsistent shared-memory header");
	p->nslots = (uint32_t)nslots;
	p->ring_size = (uint32_t)ring;
	p->nbig = (uint32_t)nbig;
	p->big_ring_size = (uint32_t)big;
	ring = big; /* the scratch buffer holds the largest ring */
	p->str_off = str_off;
	p->str_size = str_size;
	p->ring_off = ring_off;
	p->streams = calloc(nslots, sizeof(*p->streams));
	if (!p->streams)
		return -ENOMEM;
	if (r->scratch_cap < ring) {
		uint8_t *s = realloc(r->scratch, ring);
		if (!s)
			return -ENOMEM;
		r->scratch = s;
		r->scratch_cap = ring;
	}
	return 1;
}

/*
 * A process's producer files: <pid>.shm from the Python agent,
 * <pid>.cuda.shm from the CUDA agent, whose streams go into GPU_EVENTS
 * chunks, and <pid>.alloc.shm from the allocation shim, whose streams go
 * into ALLOC chunks.  Each file is a struct rec_proc of its own; all share the
 * pid's string ids (the CUDA agent's start at ISC_STRING_ID_CUDA_BASE, the
 * shim's at ISC_STRING_ID_ALLOC_BASE).
 */
static const struct { const char *suffix; uint16_t chunk; } producers[] = {
	{ ".shm", ISC_CHUNK_EVENTS },
	{ ".cuda.shm", ISC_CHUNK_GPU_EVENTS },
	{ ISC_ALLOC_SUFFIX, ISC_CHUNK_ALLOC },
};

struct rec_proc *isc_drain_proc_add(struct recorder *r, pid_t pid, unsigned producer)
{
	for (unsigned i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid && r->procs[i]->suffix == producers[producer].suffix)
			return r->procs[i];
	if (r->nprocs == REC_MAX_PROCS)
		return NULL;
	struct rec_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->suffix = producers[producer].suffix;
	p->chunk = producers[producer].chunk;
	p->fd = -1;
	pthread_mutex_lock(&r->plock);
	for (unsigned k = 0; k < r->nprocs; k++) /* another file of a process already gone */
		if (r->procs[k]->pid == pid && r->procs[k]->exited) {
			p->exited = true;
			p->exit_ts = r->procs[k]->exit_ts;
		}
	for (unsigned k = 0; k < r->nreaped && k < 64; k++)
		if (r->reaped[k].pid == pid) {
			p->exited = true;
			p->exit_ts = r->reaped[k].ts;
		}
	r->procs[r->nprocs++] = p;
	pthread_mutex_unlock(&r->plock);
	return p;
}

void isc_drain_scan(struct recorder *r)
{
	int fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		for (unsigned k = 0; pid > 0 && pid <= INT32_MAX && k < sizeof(producers) / sizeof(producers[0]); k++)
			if (!strcmp(end, producers[k].suffix))
				isc_drain_proc_add(r, (pid_t)pid, k);
	}
	closedir(d);
}

/* False for an agent's SMAPS record (trace.md §6.1) naming another process than its own. */
static bool own_pid(const struct isc_rec *r, pid_t pid)
{
	const uint8_t *q = r->body;
	uint64_t v;
	if (r->type != ISC_REC_SMAPS)
		return true;
	return !isc_get_varint(&q, r->body + r->len, &v) && v == (uint64_t)pid;
}

/*
 * Copies the committed records of one ring into the stream's pending
 * buffer, checking each; a record that does not parse marks the stream
 * broken (its ring is then discarded, with a warning).
 */
static void drain_slot(struct recorder *r, struct rec_proc *p, uint32_t i, uint64_t now)
{
	struct isc_shm_slot *slot = isc_shm_slot_at(p->map, i);
	struct rec_stream *s = &p->streams[i];
	uint8_t *ring = p->map + p->ring_off + isc_shm_ring_offset(p->nbig, p->big_ring_size, p->ring_size, i);
	uint32_t rsize = isc_shm_ring_len(p->nbig, p->big_ring_size, p->ring_size, i);
	if (!s->started) {
		uint32_t tid = atomic_load_explicit(&slot->tid, memory_order_acquire);
		if (!tid)
			return;
		s->tid = tid;
		s->started = true;
	}
	if (s->broken)
		return; /* its ring is no longer read */
	uint64_t head = atomic_load_explicit(&slot->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&slot->tail, memory_order_relaxed);
	if (head - tail > rsize) {
		s->broken = true;
		isc_log(ISC_LOG_WARN, "pid %d thread %u: ring head %llu is %llu bytes past its tail (ring of %u); ring discarded",
			(int)p->pid, s->tid, (unsigned long long)head, (unsigned long long)(head - tail), rsize);
		r->res->warnings++;
		return;
	}
	uint32_t n = isc_ring_peek(slot, ring, rsize, r->scratch, rsize);
	if ((double)n / rsize > r->fill_max)
		r->fill_max = (double)n / rsize;
	struct isc_cursor c;
	struct isc_rec rec;
	int rc;
	isc_cursor_init(&c, r->scratch, n, s->ts);
	const uint8_t *start = r->scratch; /* first record not yet pending */
	uint64_t events = 0;
	for (struct isc_cursor before = c; (rc = isc_cursor_next(&c, &rec)) == 1; before = c) {
		if (!isc_ring_record_ok(&rec, p->chunk) || !own_pid(&rec, p->pid)) {
			c = before; /* not copied: the ring is broken from here */
			rc = -EBADMSG;
			break;
		}
		events++;
		if (r->o->ring_bytes && p->chunk == ISC_CHUNK_EVENTS && !s->head_done && !head_record(r, p, s, rec.type)) {
			/* the first record past the head: the head so far becomes a kept frame */
			pending_append(s, start, before.p, before.ts, now, r->drained);
			flush_stream_keep(r, p, s, !r->direct);
			start = before.p;
			s->head_done = true;
		}
		if (s->pending.len + (size_t)(c.p - start) >= r->pending_max) {
			pending_append(s, start, c.p, c.ts, now, r->drained);
			flush_stream(r, p, s);
			start = c.p;
		}
	}
	/* c.p stops before a record that does not parse; the agent publishes
	 * whole records only, so one cut by the end of the data is corrupt too */
	pending_append(s, start, c.p, c.ts, now, r->drained);
	if (events) {
		s->events += events;
		pthread_mutex_lock(&r->wlock);
		r->res->events += events;
		pthread_mutex_unlock(&r->wlock);
	}
	if (rc < 0) {
		s->broken = true;
		isc_log(ISC_LOG_WARN, "pid %d thread %u: corrupt record in shared memory; rest of its ring discarded",
			(int)p->pid, s->tid);
		r->res->warnings++;
	} else {
		isc_ring_consume(slot, (uint32_t)(c.p - r->scratch));
		r->drained += (uint64_t)(c.p - r->scratch);
	}
	uint64_t dropped = atomic_load_explicit(&slot->dropped, memory_order_relaxed);
	if (dropped > s->dropped_seen) {
		uint8_t body[10];
		unsigned bl = isc_put_varint(body, dropped - s->dropped_seen);
		uint64_t t = s->ts;
		pending_append(s, body, body, s->ts, now, r->drained); /* sets the base if empty */
		isc_buf_put_record(&s->pending, ISC_REC_DROPPED, t, &t, body, bl);
		pthread_mutex_lock(&r->wlock);
		r->res->dropped += dropped - s->dropped_seen;
		pthread_mutex_unlock(&r->wlock);
		s->dropped_seen = dropped;
	}
}

/*
 * New string definitions, checked record by record (framing, then a
 * STRING_DEF body that parses: a frame iscope-merge would reject loses
 * the whole trace's exit status), as STRINGS frames of at most STR_WINDOW
 * bytes; a record the window's end cuts starts the next window.  A
 * corrupt record (or one larger than the window, which no agent writes)
 * skips everything committed so far; the good ones before it are kept.
 * Runs under shm_guard().
 */
static void drain_strings(struct recorder *r, struct rec_proc *p)
{
	struct isc_shm_proc *h = (struct isc_shm_proc *)p->map;
	uint64_t committed = atomic_load_explicit(&h->str_committed, memory_order_acquire);
	const uint8_t *base = p->map + p->str_off;
	if (committed > p->str_size)
		committed = p->str_size;
	while (committed > p->str_read) {
		struct isc_cursor c;
		struct isc_rec rec;
		size_t len = committed - p->str_read > STR_WINDOW ? STR_WINDOW : (size_t)(committed - p->str_read);
		int rc;
		r->tmp.len = 0;
		if (isc_buf_put(&r->tmp, base + p->str_read, len))
			return;
		isc_cursor_init(&c, r->tmp.data, len, 0);
		const uint8_t *good = r->tmp.data;
		while ((rc = isc_cursor_next(&c, &rec)) == 1) {
			struct isc_string_def d;
			/* what iscope-merge accepts in a STRINGS frame, nothing else */
			if (rec.type != ISC_REC_STRING_DEF || isc_string_def_parse(rec.body, rec.len, &d)) {
				rc = -EBADMSG;
				break;
			}
			good = c.p;
		}
		size_t ok = (size_t)(good - r->tmp.data);
		/* the window ended before what is committed: the record it cut
		 * is read whole at the start of the next one (checked there) */
		bool cut = len < committed - p->str_read;
		if (rc < 0 && cut && ok) {
			p->str_read += ok;
		} else if (rc < 0 || (!ok && len == STR_WINDOW)) {
			isc_log(ISC_LOG_WARN, "pid %d: corrupt string table in shared memory", (int)p->pid);
			r->res->warnings++;
			p->str_read = committed;
		} else {
			p->str_read += ok;
		}
		if (ok)
			isc_rec_emit_strings(r, p->pid, r->tmp.data, ok);
		if (!ok)
			break; /* a record cut by the end of what is committed: wait */
	}
}

/* PROC_INFO from the header.  Runs under shm_guard(): the fields are
 * copied out before anything is allocated.  Not from the allocation
 * shim's file: a process that has only that one (a shell, a compiler) is
 * not one of the session's processes (record.c, proc_first), and its first
 * image may be a shell that exec'ed the Python whose agent names it. */
static void write_proc_info(struct recorder *r, struct rec_proc *p, uint64_t now)
{
	struct isc_shm_proc *h = (struct isc_shm_proc *)p->map;
	for (unsigned k = 0; k < r->nprocs; k++) /* once per pid, whichever file came first */
		if (r->procs[k] != p && r->procs[k]->pid == p->pid && r->procs[k]->info_written) {
			p->info_written = true;
			return;
		}
	char cmdline[sizeof(h->cmdline)];
	uint64_t start = h->start_ts; /* untrusted: used only when plausible */
	uint32_t ppid = h->ppid, clen = h->cmdline_len;
	if (clen > sizeof(cmdline))
		clen = sizeof(cmdline);
	memcpy(cmdline, h->cmdline, clen);
	if (start >= r->epoch && start <= now)
		now = start;
	struct isc_buf b = { 0 };
	uint64_t last = now;
	isc_buf_put_varint(&b, (uint64_t)p->pid);
	isc_buf_put_varint(&b, ppid);
	isc_buf_put_bytes(&b, cmdline, clen);
	r->tmp.len = 0;
	isc_buf_put_record(&r->tmp, ISC_REC_PROC_INFO, now, &last, b.data, b.len);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, r->tmp.data, r->tmp.len, true);
	isc_buf_free(&b);
	p->info_written = true;
}

/* The process's file shrank under our mapping (SIGBUS): forget it. */
static void proc_fault(struct recorder *r, struct rec_proc *p)
{
	p->faulted = true;
	p->closed = true;
	isc_log(ISC_LOG_WARN, "pid %d: its shared-memory file was truncated under us (SIGBUS); its later events are lost",
		(int)p->pid);
	r->res->warnings++;
}

typedef void shm_fn(struct recorder *r, struct rec_proc *p, void *arg);

/*
 * Runs fn(r, p, arg), which reads p's shared memory, with a SIGBUS from
 * that mapping caught: fn is then abandoned where it faulted and p is
 * closed (proc_fault).  fn must not hold a lock or be inside an allocation
 * while it reads shared memory: private copies first, then the work.
 */
static void shm_guard(struct recorder *r, struct rec_proc *p, shm_fn *fn, void *arg)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 1)) { /* 1: restore the mask, SIGBUS is blocked in the handler */
		shm_jmp = NULL;
		proc_fault(r, p);
		return;
	}
	shm_jmp = &jb;
	fn(r, p, arg);
	shm_jmp = NULL;
}

static void flush_guarded(struct recorder *r, struct rec_proc *p, void *s)
{
	flush_stream(r, p, s);
}

/* One cycle's work on process p: attach, rings, strings, counters. */
static void drain_proc(struct recorder *r, struct rec_proc *p, void *arg)
{
	uint64_t now = *(const uint64_t *)arg;
	if (!p->streams && proc_attach(r, p) <= 0)
		return;
	if (!p->info_written && p->chunk != ISC_CHUNK_ALLOC)
		write_proc_info(r, p, now);
	struct isc_shm_proc *h = (struct isc_shm_proc *)p->map;
	uint32_t used = atomic_load_explicit(&h->nslots_used, memory_order_acquire);
	if (used > p->nslots)
		used = p->nslots;
	for (uint32_t i = 0; i < used; i++)
		drain_slot(r, p, i, now);
	drain_strings(r, p);
	/* counters only grow; a hostile writer lowering one gains nothing */
	uint64_t sd = atomic_load_explicit(&h->slot_dropped, memory_order_relaxed);
	uint64_t strd = atomic_load_explicit(&h->str_dropped, memory_order_relaxed);
	if (sd > p->slot_dropped_seen) {
		pthread_mutex_lock(&r->wlock);
		r->res->dropped += sd - p->slot_dropped_seen;
		pthread_mutex_unlock(&r->wlock);
		p->slot_dropped_seen = sd;
	}
	if (strd > p->str_dropped_seen) {
		isc_log(ISC_LOG_WARN, "pid %d: string table full, %llu names lost", (int)p->pid,
			(unsigned long long)(strd - p->str_dropped_seen));
		p->str_dropped_seen = strd;
	}
	/* the allocation shim's live sites, once the process is gone: after its
	 * rings, whose last records its table already counts */
	if (p->chunk == ISC_CHUNK_ALLOC && (p->exited || r->stop) && !p->sites_done)
		isc_alloc_sites_write(r, p);
}

void isc_drain_proc(struct recorder *r, struct rec_proc *p, uint64_t now)
{
	shm_guard(r, p, drain_proc, &now);
}

void isc_drain_flush(struct recorder *r, struct rec_proc *p, struct rec_stream *s)
{
	if (!p->faulted)
		shm_guard(r, p, flush_guarded, s);
	if (p->faulted) /* without the strings it could not read */
		flush_stream(r, p, s);
}
