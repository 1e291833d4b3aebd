/*
 * record.c - iscope-record's engine.
 *
 *   workload processes                     recorder
 *   +--------------------------+           +---------------------------+
 *   | _agent: thread -> ring --+-- shm ---->| drain thread: validate,   |
 *   |         strings area ----+  file     |  batch per stream, zstd   |--> trace
 *   +--------------------------+           | sampler thread: /proc     |
 *                                          | main: fork/exec, wait all |
 *                                          +---------------------------+
 *
 * The drain thread wakes every DRAIN_MS, maps new <pid>.shm files (and the
 * CUDA agent's <pid>.cuda.shm, whose streams become GPU_EVENTS chunks) of the
 * session directory, copies committed bytes out of every ring (checking
 * every record: the shared memory is untrusted), and appends them to the
 * stream's pending buffer.  A stream's pending records become one EVENTS
 * frame when they reach PENDING_MAX bytes or flush_ms of age.  Strings are
 * read *after* the rings in each cycle and written before any events frame,
 * so every id an events frame uses was defined earlier in the file.  After
 * each cycle a ROUND frame carries a watermark W: every event older than W
 * is already in the file (W = the start of the cycle ROUND_LAG cycles ago,
 * and never past the oldest pending event).
 *
 * Untrusted shared memory.  The traced processes write the <pid>.shm files
 * and may be buggy or hostile (they run as the same user, so they can do
 * nothing to the recorder that kill(2) could not, but they must not be able
 * to make it crash, overflow or hang):
 *   - the files are opened with openat(session dir, O_NOFOLLOW|O_NONBLOCK)
 *     and must be regular files of our uid without group/other access;
 *   - the header is validated once and only the validated copies of its
 *     sizes and offsets are used; every other field (head, tail, counters,
 *     state) is re-read and bounds-checked at each use;
 *   - records are copied out of the ring into private memory before they
 *     are parsed, so a producer writing concurrently cannot change them
 *     between the check and the use;
 *   - a process that truncates its file after we mapped it makes the next
 *     access fault with SIGBUS: every access runs under shm_guard(), which
 *     turns that fault into "this process's shared memory is gone".
 * The session directory is mode 0700 (mkdtemp), checked after creation,
 * and holds recorder.lock, locked by the recorder for its whole life: an
 * agent that finds it unlocked at exit knows the recorder is gone and
 * removes its own file (see _agent.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_log.h"
#include "gpu_setup.h"
#include "../format/format.h" /* header, string defs, ring record checks */
#include "isc_record.h"
#include "sampler.h"
#include "isc_shm.h"

#define DRAIN_MS 20
#define DRAIN_MIN_MS 2
#define DRAIN_FILL 0.125 /* a ring found fuller than this: drain sooner */
#define ROUND_LAG 5
#define PENDING_MAX (128u << 10)
#define MAX_PROCS 4096
#define CLOCK_PAIR_NS 10000000000ull /* a (realtime, monotonic) pair every 10 s */
#define STR_WINDOW (4u << 20) /* string-area bytes per STRINGS chunk (< ISC_CHUNK_MAX_PAYLOAD) */
/* A pending buffer is flushed, whatever its age, once this many bytes were
 * drained from all rings after it started: it holds the ROUND watermark
 * back, and a reader (iscope-merge) must keep every event after the
 * watermark in memory.  So a slow thread beside a busy one costs the
 * merge at most HOLD_MAX of records, not --flush-ms of the busy thread. */
#define HOLD_MAX (1u << 20)
#define LOCK_NAME "recorder.lock"

extern char **environ;

struct stream {
	uint32_t tid;
	bool started, broken;
	struct isc_buf pending;
	uint64_t ts;           /* running timestamp after the last drained record */
	uint64_t pending_base; /* ts before the first pending record */
	uint64_t pending_since;/* when the first pending record was drained */
	uint64_t pending_mark; /* rec.drained then */
	uint32_t seq;
	uint64_t dropped_seen;
	uint64_t events;
};

struct proc {
	pid_t pid;
	const char *suffix; /* ".shm": the Python agent's file; ".cuda.shm": the CUDA agent's */
	uint16_t chunk;     /* EVENTS, or GPU_EVENTS for the CUDA agent's streams */
	int fd;
	uint8_t *map;
	size_t map_len;
	uint32_t nslots, ring_size; /* validated copies of the header */
	uint32_t nbig, big_ring_size;
	uint64_t str_off, str_size, ring_off;
	uint64_t str_read;
	uint32_t str_seq;
	struct stream *streams;
	bool info_written, closed;
	bool faulted; /* its mapping raised SIGBUS: never touched again */
	bool exited;  /* a PROC_EXIT was written for its pid (under plock) */
	bool warned;  /* one warning per file for a file that is refused */
	uint64_t slot_dropped_seen, str_dropped_seen;
};

struct frame {
	struct isc_buf data;
	bool keep; /* survives flight-recorder eviction */
};

struct rec {
	const struct isc_record_opts *o;
	struct isc_record_result *res;
	struct isc_writer *w;
	pthread_mutex_t wlock; /* writer, frames, res counters */
	char dir[256];
	int dirfd;  /* the session directory, opened once (O_DIRECTORY|O_NOFOLLOW) */
	int lockfd; /* recorder.lock, flock'ed while we run */
	uint64_t epoch;
	struct proc *procs[MAX_PROCS];
	unsigned nprocs;
	pthread_mutex_t plock; /* procs[] membership (sampler reads pids) */
	pid_t child;
	volatile int stop; /* set by main when every process has exited */
	uint8_t *scratch;
	size_t scratch_cap;
	uint64_t cycle_start[ROUND_LAG];
	unsigned ncycles;
	uint64_t watermark;
	struct frame *frames; /* flight-recorder mode */
	size_t nframes, frames_cap, frames_bytes;
	uint64_t evicted_frames;
	struct isc_buf tmp;
	uint64_t last_progress;
	bool direct; /* flight recorder: write through (at exit) */
	struct sigaction old_pipe;
	size_t pending_max; /* raw bytes of a stream's events per frame */
	uint64_t ring_max;  /* the largest ring we told the agents (INFERSCOPE_[BIG_]RING_KB) */
	double fill_max;    /* this cycle: largest share of a ring found in use */
	uint64_t drained;   /* bytes of records drained from all rings so far */
	struct isc_gpu_setup gpu; /* CUDA agent injection, NVML */
};

static volatile pid_t forward_pid;          /* the workload while it runs */
static volatile sig_atomic_t late_signal;  /* received after it exited */
static __thread sigjmp_buf *shm_jmp;       /* set while this thread reads shared memory */

/*
 * SIGBUS while shm_jmp is set: a traced process truncated its file under
 * our mapping.  Jump back to shm_guard(), which closes that process.  A
 * SIGBUS anywhere else is a real bug: take the default action.
 */
static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	(void)ctx;
	if (shm_jmp)
		siglongjmp(*shm_jmp, 1);
	signal(sig, SIG_DFL);
}

/*
 * INT/TERM/HUP sent with kill(2) go to the workload.  A terminal's ^C is
 * not forwarded: it already reached the workload's process group.  Once
 * the workload has exited, the main loop passes signals on to whatever is
 * left of the session (see signal_children).
 */
static void forward_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (si->si_code != SI_USER)
		return;
	if (forward_pid > 0)
		kill(forward_pid, sig);
	else
		late_signal = sig;
}

/* Sends sig to our remaining children (orphans re-parented to us included). */
static void signal_children(int sig)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	FILE *f = fopen(path, "re");
	long pid;
	if (!f)
		return;
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 0)
			kill((pid_t)pid, sig);
	fclose(f);
}

/* Writes (or, in flight-recorder mode, keeps) one chunk.  Caller holds wlock. */
static void emit_locked(struct rec *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base,
			uint32_t seq, const void *payload, size_t len, bool keep)
{
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, type, 0, pid, tid, base, seq, (uint32_t)len };
	int rc;
	if (r->res->write_failed)
		return;
	if (!r->o->ring_bytes || r->direct) {
		rc = isc_writer_chunk(r->w, &h, payload);
		if (rc) {
			r->res->write_failed = true;
			snprintf(r->res->write_error, sizeof(r->res->write_error), "%s", isc_err_msg());
			isc_err_clear();
		}
		return;
	}
	if (r->nframes == r->frames_cap) {
		size_t cap = r->frames_cap ? r->frames_cap * 2 : 256;
		struct frame *f = realloc(r->frames, cap * sizeof(*f));
		if (!f)
			return;
		r->frames = f;
		r->frames_cap = cap;
	}
	struct frame *f = &r->frames[r->nframes];
	memset(f, 0, sizeof(*f));
	if (isc_writer_encode(r->w, &h, payload, &f->data))
		return;
	f->keep = keep;
	r->nframes++;
	if (!keep)
		r->frames_bytes += f->data.len;
	/* evict the oldest evictable frames beyond the flight-recorder size,
	 * never the newest one */
	size_t i = 0;
	while (r->frames_bytes > r->o->ring_bytes && i + 1 < r->nframes) {
		if (!r->frames[i].keep) {
			r->frames_bytes -= r->frames[i].data.len;
			isc_buf_free(&r->frames[i].data);
			memmove(&r->frames[i], &r->frames[i + 1], (r->nframes - i - 1) * sizeof(*f));
			r->nframes--;
			r->evicted_frames++;
		} else {
			i++;
		}
	}
}

static void emit(struct rec *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base, uint32_t seq,
		 const void *payload, size_t len, bool keep)
{
	pthread_mutex_lock(&r->wlock);
	emit_locked(r, type, pid, tid, base, seq, payload, len, keep);
	pthread_mutex_unlock(&r->wlock);
}

static void drain_strings(struct rec *r, struct proc *p);

/*
 * Writes a stream's pending records as one EVENTS frame, after any string
 * definitions committed so far: the records were read from the ring after
 * the ids they use were committed, so reading the string area now finds
 * them all.
 */
static void flush_stream(struct rec *r, struct proc *p, struct stream *s)
{
	if (!s->pending.len)
		return;
	if (!p->faulted)
		drain_strings(r, p);
	emit(r, p->chunk, (uint32_t)p->pid, s->tid, s->pending_base, s->seq++, s->pending.data,
	     s->pending.len, false);
	s->pending.len = 0;
}

/* Adds the records [from, to) to the stream's pending buffer; ts is the
 * time after the last of them; mark is rec.drained. */
static void pending_append(struct stream *s, const uint8_t *from, const uint8_t *to, uint64_t ts, uint64_t now,
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
static int proc_refuse(struct rec *r, struct proc *p, const char *why)
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
static int proc_attach(struct rec *r, struct proc *p)
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
 * A process's producer files: <pid>.shm from the Python agent, and
 * <pid>.cuda.shm from the CUDA agent, whose streams go into GPU_EVENTS
 * chunks.  Each file is a struct proc of its own; both share the pid's
 * string ids (the CUDA agent's start at ISC_STRING_ID_CUDA_BASE).
 */
static const struct { const char *suffix; uint16_t chunk; } producers[] = {
	{ ".shm", ISC_CHUNK_EVENTS },
	{ ".cuda.shm", ISC_CHUNK_GPU_EVENTS },
};

static struct proc *proc_add(struct rec *r, pid_t pid, unsigned producer)
{
	for (unsigned i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid && r->procs[i]->suffix == producers[producer].suffix)
			return r->procs[i];
	if (r->nprocs == MAX_PROCS)
		return NULL;
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->suffix = producers[producer].suffix;
	p->chunk = producers[producer].chunk;
	p->fd = -1;
	pthread_mutex_lock(&r->plock);
	r->procs[r->nprocs++] = p;
	pthread_mutex_unlock(&r->plock);
	return p;
}

/* Looks for <pid>.shm and <pid>.cuda.shm files that appeared since the last cycle. */
static void scan_session(struct rec *r)
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
				proc_add(r, (pid_t)pid, k);
	}
	closedir(d);
}

/*
 * Copies the committed records of one ring into the stream's pending
 * buffer, checking each; a record that does not parse marks the stream
 * broken (its ring is then discarded, with a warning).
 */
static void drain_slot(struct rec *r, struct proc *p, uint32_t i, uint64_t now)
{
	struct isc_shm_slot *slot = isc_shm_slot_at(p->map, i);
	struct stream *s = &p->streams[i];
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
		if (!isc_ring_record_ok(&rec, p->chunk)) {
			c = before; /* not copied: the ring is broken from here */
			rc = -EBADMSG;
			break;
		}
		events++;
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
 * New string definitions, checked record by record, as STRINGS frames of
 * at most STR_WINDOW bytes.  A corrupt record (or one larger than the
 * window, which no agent writes) skips everything committed so far.
 * Runs under shm_guard().
 */
static void drain_strings(struct rec *r, struct proc *p)
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
		while ((rc = isc_cursor_next(&c, &rec)) == 1)
			good = c.p;
		size_t ok = (size_t)(good - r->tmp.data);
		if (rc < 0 || (!ok && len == STR_WINDOW)) {
			isc_log(ISC_LOG_WARN, "pid %d: corrupt string table in shared memory", (int)p->pid);
			r->res->warnings++;
			p->str_read = committed;
		} else {
			p->str_read += ok;
		}
		if (ok)
			emit(r, ISC_CHUNK_STRINGS, (uint32_t)p->pid, 0, 0, p->str_seq++, r->tmp.data, ok, true);
		if (!ok)
			break; /* a record cut by the end of what is committed: wait */
	}
}

/* PROC_INFO from the header.  Runs under shm_guard(): the fields are
 * copied out before anything is allocated. */
static void write_proc_info(struct rec *r, struct proc *p, uint64_t now)
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
	emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, r->tmp.data, r->tmp.len, true);
	isc_buf_free(&b);
	p->info_written = true;
}

/* The process's file shrank under our mapping (SIGBUS): forget it. */
static void proc_fault(struct rec *r, struct proc *p)
{
	p->faulted = true;
	p->closed = true;
	isc_log(ISC_LOG_WARN, "pid %d: its shared-memory file was truncated under us (SIGBUS); its later events are lost",
		(int)p->pid);
	r->res->warnings++;
}

typedef void shm_fn(struct rec *r, struct proc *p, void *arg);

/*
 * Runs fn(r, p, arg), which reads p's shared memory, with a SIGBUS from
 * that mapping caught: fn is then abandoned where it faulted and p is
 * closed (proc_fault).  fn must not hold a lock or be inside an allocation
 * while it reads shared memory: private copies first, then the work.
 */
static void shm_guard(struct rec *r, struct proc *p, shm_fn *fn, void *arg)
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

static void flush_guarded(struct rec *r, struct proc *p, void *s)
{
	flush_stream(r, p, s);
}

/* One cycle's work on process p: attach, rings, strings, counters. */
static void drain_proc(struct rec *r, struct proc *p, void *arg)
{
	uint64_t now = *(const uint64_t *)arg;
	if (!p->streams && proc_attach(r, p) <= 0)
		return;
	if (!p->info_written)
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
}

/* One pass over every process and ring.  final: flush everything. */
static void detect_gone(struct rec *r);

static void drain_cycle(struct rec *r, bool final)
{
	uint64_t now = isc_now_ns();
	r->fill_max = 0;
	scan_session(r);
	for (unsigned k = 0; k < r->nprocs; k++)
		if (!r->procs[k]->closed)
			shm_guard(r, r->procs[k], drain_proc, &now);
	detect_gone(r);
	/* flush old or big pending buffers; find the oldest still pending */
	uint64_t oldest = UINT64_MAX;
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct proc *p = r->procs[k];
		if (!p->streams)
			continue;
		for (uint32_t i = 0; i < p->nslots; i++) {
			struct stream *s = &p->streams[i];
			if (!s->pending.len)
				continue;
			if (final || s->pending.len >= r->pending_max ||
			    now - s->pending_since >= (uint64_t)r->o->flush_ms * 1000000u ||
			    r->drained - s->pending_mark >= HOLD_MAX) {
				if (!p->faulted)
					shm_guard(r, p, flush_guarded, s);
				if (p->faulted) /* without the strings it could not read */
					flush_stream(r, p, s);
			} else if (s->pending_base < oldest)
				oldest = s->pending_base;
		}
	}
	uint64_t w = r->ncycles >= ROUND_LAG ? r->cycle_start[r->ncycles % ROUND_LAG] : 0;
	r->cycle_start[r->ncycles++ % ROUND_LAG] = now;
	if (final)
		w = UINT64_MAX;
	if (oldest < w)
		w = oldest;
	if (w > r->watermark && !r->o->ring_bytes) {
		r->watermark = w;
		emit(r, ISC_CHUNK_ROUND, 0, 0, w, 0, "", 0, true);
	}
}

static void write_clock_pair(struct rec *r);

/*
 * Time to the next drain cycle: DRAIN_MS while every ring was found less
 * than DRAIN_FILL full, shorter in proportion when one was fuller (a thread
 * writing 10 M events/s fills a 1 MiB ring in about 25 ms), so a busy ring
 * is visited several times before it could fill, at least DRAIN_MIN_MS.
 */
static int drain_sleep_ms(double fill)
{
	if (fill <= DRAIN_FILL)
		return DRAIN_MS;
	double ms = DRAIN_MS * DRAIN_FILL / fill;
	return ms < DRAIN_MIN_MS ? DRAIN_MIN_MS : (int)ms;
}

static void *drain_main(void *arg)
{
	struct rec *r = arg;
	uint64_t last_pair = isc_now_ns();
	while (!r->stop) {
		drain_cycle(r, false);
		if (isc_now_ns() - last_pair >= CLOCK_PAIR_NS) {
			write_clock_pair(r);
			last_pair = isc_now_ns();
		}
		/* what a cycle wrote reaches the file now, not when stdio's buffer
		 * fills: a recorder killed with SIGKILL loses only the events it
		 * still held (at most --flush-ms old, plus one cycle) */
		if (!r->o->ring_bytes) {
			pthread_mutex_lock(&r->wlock);
			if (!r->res->write_failed && isc_writer_flush(r->w)) {
				r->res->write_failed = true;
				snprintf(r->res->write_error, sizeof(r->res->write_error), "%s", isc_err_msg());
				isc_err_clear();
			}
			pthread_mutex_unlock(&r->wlock);
		}
		if (r->o->progress) {
			uint64_t now = isc_now_ns();
			if (now - r->last_progress > 500000000u) {
				r->last_progress = now;
				pthread_mutex_lock(&r->wlock);
				fprintf(stderr, "\riscope-record: %llu events, %llu dropped, %.1f MB   ",
					(unsigned long long)r->res->events, (unsigned long long)r->res->dropped,
					(double)isc_writer_bytes(r->w) / 1e6);
				pthread_mutex_unlock(&r->wlock);
			}
		}
		poll(NULL, 0, drain_sleep_ms(r->fill_max));
	}
	return NULL;
}

struct sampler_ctx {
	struct rec *r;
	volatile int stop;
};

/* Whether procs[i] is the first file of its pid (a process may have two). */
static bool proc_first(const struct rec *r, unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (r->procs[j]->pid == r->procs[i]->pid)
			return false;
	return true;
}

/* NVML samples (nvml.c's thread) go out as SAMPLES chunks. */
static void nvml_emit(void *ctx, const void *records, size_t len, uint64_t base_ts, bool keep)
{
	emit(ctx, ISC_CHUNK_SAMPLES, 0, 0, base_ts, 0, records, len, keep);
}

static void *sampler_main(void *arg)
{
	struct sampler_ctx *sc = arg;
	struct rec *r = sc->r;
	struct isc_sampler *smp = NULL;
	struct isc_buf b = { 0 };
	pid_t pids[MAX_PROCS];
	uint64_t period = 1000000000u / r->o->sample_hz, next = isc_now_ns(), last_slow = 0;
	uint32_t seq = 0;
	if (isc_sampler_new(&smp))
		return NULL;
	while (!sc->stop) {
		uint64_t now = isc_now_ns();
		if (now < next) {
			poll(NULL, 0, (int)((next - now) / 1000000u) + 1);
			continue;
		}
		next += period;
		if (next < now)
			next = now + period;
		size_t n = 0;
		pthread_mutex_lock(&r->plock);
		if (r->child > 0)
			pids[n++] = r->child;
		for (unsigned i = 0; i < r->nprocs; i++)
			if (r->procs[i]->pid != r->child && proc_first(r, i))
				pids[n++] = r->procs[i]->pid;
		pthread_mutex_unlock(&r->plock);
		bool slow = now - last_slow >= 1000000000u;
		if (slow)
			last_slow = now;
		b.len = 0;
		uint64_t last = now;
		isc_sampler_tick(smp, pids, n, now, slow, &b, &last);
		if (b.len)
			emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, seq++, b.data, b.len, false);
	}
	isc_buf_free(&b);
	isc_sampler_free(smp);
	return NULL;
}

/* Joins argv into a display string, single-quoting arguments a shell would split. */
static void isc_quote_argv(char *out, size_t cap, char *const *argv)
{
	size_t len = 0;
	out[0] = '\0';
	for (char *const *a = argv; *a && len + 4 < cap; a++) {
		bool plain = **a && strspn(*a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
						"-_./=:,+@%") == strlen(*a);
		if (len)
			out[len++] = ' ';
		if (!plain)
			out[len++] = '\'';
		for (const char *c = *a; *c && len + 5 < cap; c++) {
			if (*c == '\'' && !plain) {
				memcpy(out + len, "'\\''", 4);
				len += 4;
			} else {
				out[len++] = *c;
			}
		}
		if (!plain)
			out[len++] = '\'';
		out[len] = '\0';
	}
}

static int write_header(struct rec *r)
{
	struct isc_tl_header h;
	struct isc_clock_pair cp;
	struct isc_buf b = { 0 };
	FILE *f;
	memset(&h, 0, sizeof(h));
	gethostname(h.host, sizeof(h.host) - 1);
	isc_quote_argv(h.cmdline, sizeof(h.cmdline), r->o->argv);
	if ((f = fopen("/proc/sys/kernel/random/boot_id", "re"))) {
		if (fgets(h.boot_id, sizeof(h.boot_id), f))
			h.boot_id[strcspn(h.boot_id, "\n")] = '\0';
		fclose(f);
	}
	isc_clock_pair(&cp);
	r->epoch = cp.mono_ns;
	h.epoch_mono_ns = cp.mono_ns;
	h.epoch_realtime_ns = cp.realtime_ns;
	h.clock_uncertainty_ns = cp.bracket_ns;
	h.recorder_pid = (uint32_t)getpid();
	h.ncpu = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
	h.sample_hz = r->o->sample_hz;
	int rc = isc_header_encode(&b, ISC_TRACE_MAGIC, &h);
	if (!rc)
		emit(r, ISC_CHUNK_FILE_HEADER, 0, 0, 0, 0, b.data, b.len, true);
	isc_buf_free(&b);
	return rc;
}

static void write_clock_pair(struct rec *r)
{
	struct isc_clock_pair cp;
	uint8_t body[20];
	isc_clock_pair(&cp);
	unsigned n = isc_put_varint(body, cp.realtime_ns);
	n += isc_put_varint(body + n, cp.bracket_ns);
	uint64_t last = cp.mono_ns;
	r->tmp.len = 0;
	isc_buf_put_record(&r->tmp, ISC_REC_CLOCK_PAIR, cp.mono_ns, &last, body, n);
	emit(r, ISC_CHUNK_SAMPLES, 0, 0, cp.mono_ns, 0, r->tmp.data, r->tmp.len, true);
}

/* The largest power-of-two KiB count <= bytes, from 64 KiB to 1 GiB. */
static uint64_t ring_kb(uint64_t bytes)
{
	uint64_t kb = 64;
	while (kb * 2 * 1024 <= bytes && kb < (1u << 20))
		kb *= 2;
	return kb;
}

/* Environment of the workload: the user's plus our variables. */
static char **child_env(struct rec *r)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 5 + sizeof(r->gpu.env) / sizeof(r->gpu.env[0]), sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	const char *pypath = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "PYTHONPATH=", 11))
			pypath = environ[i] + 11;
		else if (strncmp(environ[i], "INFERSCOPE_SESSION=", 19) &&
			 strncmp(environ[i], "INFERSCOPE_RING_KB=", 19) &&
			 strncmp(environ[i], "INFERSCOPE_BIG_RING_KB=", 23) &&
			 (!r->gpu.replace_cuda || strncmp(environ[i], "CUDA_INJECTION64_PATH=", 22)) &&
			 (!r->gpu.replace_nvtx || strncmp(environ[i], "NVTX_INJECTION64_PATH=", 22)))
			env[k++] = environ[i];
	}
	for (size_t i = 0; r->gpu.env[i]; i++) /* owned by r->gpu */
		env[k++] = r->gpu.env[i];
	/* the budget per process: ISC_SHM_BIG_RINGS rings of 1/16 (the first
	 * threads), the other slots share what is left; powers of two */
	uint64_t big_kb = ring_kb(r->o->buffer_bytes / 16);
	uint64_t bigs = ISC_SHM_BIG_RINGS * big_kb * 1024;
	uint64_t rest = r->o->buffer_bytes > bigs ? r->o->buffer_bytes - bigs : 0;
	uint64_t kb = ring_kb(rest / (ISC_SHM_DEFAULT_SLOTS - ISC_SHM_BIG_RINGS));
	if (big_kb <= kb)
		big_kb = kb;
	r->ring_max = big_kb * 1024;
	char *ours[4] = { NULL, NULL, NULL, NULL };
	if (asprintf(&ours[0], "INFERSCOPE_SESSION=%s", r->dir) < 0 ||
	    asprintf(&ours[1], "INFERSCOPE_RING_KB=%llu", (unsigned long long)kb) < 0 ||
	    asprintf(&ours[2], "INFERSCOPE_BIG_RING_KB=%llu", (unsigned long long)big_kb) < 0 ||
	    asprintf(&ours[3], "PYTHONPATH=%s%s%s", r->o->agent_dir, pypath && *pypath ? ":" : "",
		     pypath ? pypath : "") < 0) {
		for (int i = 0; i < 4; i++) /* glibc leaves a failed one NULL */
			free(ours[i]);
		free(env);
		return NULL;
	}
	for (int i = 0; i < 4; i++)
		env[k++] = ours[i];
	env[k] = NULL;
	return env;
}

/* fork + exec; an exec failure comes back through a close-on-exec pipe. */
static int start_child(struct rec *r, char **env)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		isc_err_push("Cannot fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		sigaction(SIGPIPE, &r->old_pipe, NULL); /* ours is SIG_IGN */
		if (r->o->child_stdout_to_stderr)
			dup2(2, 1);
		execvpe(r->o->argv[0], r->o->argv, env);
		int e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	int e = 0;
	ssize_t got;
	do
		got = read(pfd[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	if (got == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		r->res->exec_errno = e;
		isc_err_push("Cannot run '%s': %s", r->o->argv[0], strerror(e));
		return -e;
	}
	r->child = pid;
	return 0;
}

/* PROC_EXIT of pid: status (exit code or 128 + signal), how 0 exited,
 * 1 killed by a signal, 2 gone without its status being seen. */
static void write_exit(struct rec *r, pid_t pid, int status, unsigned how)
{
	uint8_t body[30];
	unsigned n = isc_put_varint(body, (uint64_t)pid);
	n += isc_put_varint(body + n, isc_zigzag(status));
	n += isc_put_varint(body + n, how);
	uint64_t now = isc_now_ns(), last = now;
	struct isc_buf b = { 0 };
	isc_buf_put_record(&b, ISC_REC_PROC_EXIT, now, &last, body, n);
	emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, b.data, b.len, true);
	isc_buf_free(&b);
}

/* Marks every file of pid as exited; false when one already was. */
static bool mark_exited(struct rec *r, pid_t pid)
{
	bool first = true;
	pthread_mutex_lock(&r->plock);
	for (unsigned k = 0; k < r->nprocs; k++)
		if (r->procs[k]->pid == pid) {
			first = first && !r->procs[k]->exited;
			r->procs[k]->exited = true;
		}
	pthread_mutex_unlock(&r->plock);
	return first;
}

/*
 * Processes that are not our children (DataLoader workers, reaped by the
 * workload itself) never reach our waitpid: a traced process that no
 * longer exists gets a PROC_EXIT with how = 2, so the merge can end its
 * open spans at about the right time.  Our own children stay zombies
 * until the main thread, which marks them first (waitid WNOWAIT), reaps
 * them, so they are never reported here.
 */
static void detect_gone(struct rec *r)
{
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct proc *p = r->procs[k];
		if (p->exited || !p->streams || kill(p->pid, 0) == 0 || errno != ESRCH)
			continue;
		if (mark_exited(r, p->pid))
			write_exit(r, p->pid, 0, 2);
	}
}

/* Unmaps and removes every file of the session, then the directory. */
static void cleanup_session(struct rec *r)
{
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct proc *p = r->procs[k];
		if (p->map)
			munmap(p->map, p->map_len);
		if (p->fd >= 0)
			close(p->fd);
		if (p->streams)
			for (uint32_t i = 0; i < p->nslots; i++)
				isc_buf_free(&p->streams[i].pending);
		free(p->streams);
		free(p);
	}
	r->nprocs = 0;
	if (r->dirfd < 0)
		return;
	/* our files, and those of processes that appeared too late to be attached */
	int fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(r->dirfd, e->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	if (r->lockfd >= 0)
		close(r->lockfd);
	close(r->dirfd);
	rmdir(r->dir);
}

/*
 * Creates the session directory: mode 0700 (mkdtemp), in /dev/shm, else
 * $TMPDIR, else /tmp; opens it (no symbolic link followed), checks it is
 * a directory of ours that nobody else can enter, and creates
 * recorder.lock in it, flock'ed until we exit.
 */
static int make_session_dir(struct rec *r)
{
	const char *bases[] = { "/dev/shm", getenv("TMPDIR"), "/tmp" };
	struct stat st;
	int e = ENOENT;
	r->dirfd = r->lockfd = -1;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (!bases[i] || !*bases[i] || access(bases[i], W_OK))
			continue;
		if ((size_t)snprintf(r->dir, sizeof(r->dir), "%s/inferscope-XXXXXX", bases[i]) >= sizeof(r->dir)) {
			r->dir[0] = '\0';
			e = ENAMETOOLONG;
			continue;
		}
		if (mkdtemp(r->dir))
			break;
		e = errno;
		r->dir[0] = '\0';
	}
	if (!r->dir[0]) {
		isc_err_push("Cannot create a session directory: %s", strerror(e));
		return -e;
	}
	r->dirfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->dirfd < 0 || fstat(r->dirfd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		e = r->dirfd < 0 ? errno : EPERM;
		isc_err_push("Cannot use the session directory %s: %s", r->dir,
			     r->dirfd < 0 ? strerror(e) : "not a private directory of ours");
		goto fail;
	}
	r->lockfd = openat(r->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r->lockfd < 0 || flock(r->lockfd, LOCK_EX | LOCK_NB)) {
		e = errno;
		isc_err_push("Cannot create %s/%s: %s", r->dir, LOCK_NAME, strerror(e));
		goto fail;
	}
	return 0;
fail:
	if (r->lockfd >= 0) {
		close(r->lockfd);
		unlinkat(r->dirfd, LOCK_NAME, 0);
	}
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->dirfd = r->lockfd = -1;
	rmdir(r->dir);
	return -e;
}

int isc_record_run(const struct isc_record_opts *o, struct isc_record_result *res)
{
	struct rec r;
	struct sampler_ctx sc = { &r, 0 };
	pthread_t drain_thr, sampler_thr;
	bool sampler_on = false, drain_on = false;
	struct isc_nvml_thread *nvml_thr = NULL;
	struct sigaction sa, old[3], old_bus;
	const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	char **env = NULL;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(res, 0, sizeof(*res));
	r.o = o;
	r.res = res;
	r.child = -1;
	r.dirfd = r.lockfd = -1;
	/* a flight-recorder holds several frames: keep them well under its size */
	r.pending_max = PENDING_MAX;
	if (o->ring_bytes && o->ring_bytes / 4 < PENDING_MAX)
		r.pending_max = o->ring_bytes / 4 > 4096 ? o->ring_bytes / 4 : 4096;
	pthread_mutex_init(&r.wlock, NULL);
	pthread_mutex_init(&r.plock, NULL);
	if ((rc = isc_writer_new(&r.w, o->out, o->level)))
		return rc;
	/* a traced process truncating its file makes our reads fault: see shm_guard */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	if ((rc = make_session_dir(&r)))
		goto out_writer;
	if ((rc = write_header(&r)))
		goto out_dir;
	write_clock_pair(&r);
	/* GPU: the CUDA agent's variables for child_env, and why GPU data will lack */
	if ((rc = isc_gpu_setup(&r.gpu, o->cuda_agent, o->cuda_mode, o->sample_hz, o->quiet, isc_now_ns())))
		goto out_dir;
	if (r.gpu.warnings.len)
		emit(&r, ISC_CHUNK_SAMPLES, 0, 0, r.gpu.warnings_ts, 0, r.gpu.warnings.data, r.gpu.warnings.len, true);
	if (!(env = child_env(&r))) {
		rc = -ENOMEM;
		goto out_dir;
	}
	/* orphaned descendants (daemonized workers) are re-parented to us */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* a vanished trace reader must not kill the recorder; the workload
	 * gets its own disposition back in start_child */
	sigaction(SIGPIPE, &(struct sigaction){ .sa_handler = SIG_IGN }, &r.old_pipe);
	if ((rc = start_child(&r, env)))
		goto out_dir;
	res->workload_started = true;
	forward_pid = r.child;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid must see late signals */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	proc_add(&r, r.child, 0);
	/* the helper threads never take INT/TERM/HUP: the main thread must */
	sigset_t block, oldmask;
	sigemptyset(&block);
	for (int i = 0; i < 3; i++)
		sigaddset(&block, sigs[i]);
	pthread_sigmask(SIG_BLOCK, &block, &oldmask);
	drain_on = !pthread_create(&drain_thr, NULL, drain_main, &r);
	if (o->sample_hz)
		sampler_on = !pthread_create(&sampler_thr, NULL, sampler_main, &sc);
	if (o->sample_hz && r.gpu.nvml)
		isc_nvml_start(&nvml_thr, r.gpu.nvml, o->sample_hz, nvml_emit, &r);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);

	/* wait for every process of the session, the workload first or last */
	for (;;) {
		int st;
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		/* look before reaping, so the drain never reports a child as gone */
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
			if (errno == EINTR) {
				if (late_signal) {
					signal_children(late_signal);
					late_signal = 0;
				}
				continue;
			}
			break; /* ECHILD: nobody left */
		}
		pid_t pid = si.si_pid;
		mark_exited(&r, pid);
		if (waitpid(pid, &st, 0) != pid)
			continue;
		write_exit(&r, pid, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), WIFEXITED(st) ? 0 : 1);
		if (pid == r.child) {
			res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
			forward_pid = 0;
		}
	}
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (sampler_on) {
		sc.stop = 1;
		pthread_join(sampler_thr, NULL);
	}
	isc_nvml_stop(nvml_thr);
	r.stop = 1;
	if (drain_on)
		pthread_join(drain_thr, NULL);
	write_clock_pair(&r);
	drain_cycle(&r, true);
	if (o->progress)
		fprintf(stderr, "\r\033[K");

	/* end chunk, then (flight recorder) the kept frames in order */
	{
		struct isc_buf b = { 0 };
		uint8_t body[60];
		unsigned n = isc_put_varint(body, res->events);
		n += isc_put_varint(body + n, res->dropped);
		n += isc_put_varint(body + n, r.evicted_frames);
		n += isc_put_varint(body + n, res->signal ? ISC_END_SIGNALED : 0);
		n += isc_put_varint(body + n, isc_zigzag(res->status));
		uint64_t last = 0;
		isc_buf_put_record(&b, ISC_REC_END_STATS, 0, &last, body, n);
		pthread_mutex_lock(&r.wlock);
		if (o->ring_bytes) {
			for (size_t i = 0; i < r.nframes && !res->write_failed; i++)
				if (isc_writer_raw(r.w, r.frames[i].data.data, r.frames[i].data.len)) {
					res->write_failed = true;
					snprintf(res->write_error, sizeof(res->write_error), "%s", isc_err_msg());
				}
			r.direct = true;
			emit_locked(&r, ISC_CHUNK_ROUND, 0, 0, UINT64_MAX, 0, "", 0, true);
		}
		r.direct = true;
		emit_locked(&r, ISC_CHUNK_END, 0, 0, 0, 0, b.data, b.len, true);
		pthread_mutex_unlock(&r.wlock);
		isc_buf_free(&b);
	}
	if (!res->write_failed && isc_writer_flush(r.w)) {
		res->write_failed = true;
		snprintf(res->write_error, sizeof(res->write_error), "%s", isc_err_msg());
	}
	res->bytes = isc_writer_bytes(r.w);
	res->processes = 0;
	for (unsigned k = 0; k < r.nprocs; k++)
		res->processes += proc_first(&r, k);
	rc = 0;
out_dir:
	cleanup_session(&r);
out_writer:
	sigaction(SIGBUS, &old_bus, NULL);
	if (env) {
		for (char **e = env; *e; e++)
			if (!strncmp(*e, "INFERSCOPE_SESSION=", 19) || !strncmp(*e, "INFERSCOPE_RING_KB=", 19) ||
			    !strncmp(*e, "INFERSCOPE_BIG_RING_KB=", 23) || !strncmp(*e, "PYTHONPATH=", 11))
				free(*e);
		free(env);
	}
	isc_gpu_setup_free(&r.gpu);
	for (size_t i = 0; i < r.nframes; i++)
		isc_buf_free(&r.frames[i].data);
	free(r.frames);
	free(r.scratch);
	isc_buf_free(&r.tmp);
	isc_writer_free(r.w);
	return rc;
}
