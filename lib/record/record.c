/*
 * record.c - iscope-record's engine: session directory, workload child,
 * signals, the drain and sampler threads.  Reading the agents' shared
 * memory is drain.c; writing chunks (or keeping them for the flight
 * recorder) is frames.c; the state they share is recorder.h.
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
 * is already in the file (W = the start of the cycle REC_ROUND_LAG cycles ago,
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
 * removes its own file (see tools/iscope-record/python/agent_shm.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_alloc.h"
#include "isc_log.h"
#include "gpu_setup.h"
#include "isc_trace_int.h"
#include "isc_record.h"
#include "pysample.h"
#include "sampler.h"
#include "isc_shm.h"
#include "recorder.h"

#define DRAIN_MS 20
#define DRAIN_MIN_MS 2
#define DRAIN_FILL 0.125 /* a ring found fuller than this: drain sooner */
#define PENDING_MAX (128u << 10)
#define CLOCK_PAIR_NS 10000000000ull /* a (realtime, monotonic) pair every 10 s */
/* A pending buffer is flushed, whatever its age, once this many bytes were
 * drained from all rings after it started: it holds the ROUND watermark
 * back, and a reader (iscope-merge) must keep every event after the
 * watermark in memory.  So a slow thread beside a busy one costs the
 * merge at most HOLD_MAX of records, not --flush-ms of the busy thread. */
#define HOLD_MAX (1u << 20)
#define LOCK_NAME "recorder.lock"

extern char **environ;

static volatile pid_t forward_pid;          /* the workload while it runs */
static volatile sig_atomic_t late_signal;  /* received after it exited */
static volatile sig_atomic_t forwarded;    /* bit per signal forwarded to it, not yet checked */

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
	if (forward_pid > 0) {
		kill(forward_pid, sig);
		forwarded |= 1 << sig;
	} else {
		late_signal = sig;
	}
}

/*
 * After forwarding: says so when the workload ignores the signal (its
 * SigIgn mask in /proc/PID/status), since then nothing visible happens
 * and a user waiting for it to stop waits for ever.  Once per signal.
 */
static void check_forwarded(pid_t pid, int sigs, int *told)
{
	static const char *const names[] = { [SIGINT] = "SIGINT", [SIGTERM] = "SIGTERM", [SIGHUP] = "SIGHUP" };
	char path[64], line[256];
	unsigned long long ign = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigIgn: %llx", &ign) == 1)
			break;
	fclose(f);
	for (int sig = 1; sig < 32; sig++) {
		if (!((unsigned)sigs & (1u << sig)) || ((unsigned)*told & (1u << sig)) || !(ign & (1ull << (sig - 1))))
			continue;
		*told = (int)((unsigned)*told | (1u << sig));
		isc_log(ISC_LOG_WARN, "forwarded %s to the workload (pid %d), which ignores it; it goes on running "
			"(SIGKILL stops it)", sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig] ? names[sig] : "a signal",
			(int)pid);
	}
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

/* One pass over every process and ring.  final: flush everything. */
static void detect_gone(struct recorder *r);

static void drain_cycle(struct recorder *r, bool final)
{
	uint64_t now = isc_now_ns();
	r->fill_max = 0;
	isc_drain_scan(r);
	for (unsigned k = 0; k < r->nprocs; k++)
		if (!r->procs[k]->closed)
			isc_drain_proc(r, r->procs[k], now);
	isc_native_drain(r->native); /* NULL: --native off */
	detect_gone(r);
	/* flush old or big pending buffers; find the oldest still pending */
	uint64_t oldest = UINT64_MAX;
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct rec_proc *p = r->procs[k];
		if (!p->streams)
			continue;
		for (uint32_t i = 0; i < p->nslots; i++) {
			struct rec_stream *s = &p->streams[i];
			if (!s->pending.len)
				continue;
			if (final || s->pending.len >= r->pending_max ||
			    now - s->pending_since >= (uint64_t)r->o->flush_ms * 1000000u ||
			    r->drained - s->pending_mark >= HOLD_MAX) {
				isc_drain_flush(r, p, s);
			} else if (s->pending_base < oldest)
				oldest = s->pending_base;
		}
	}
	if (isc_native_pending_base(r->native) < oldest)
		oldest = isc_native_pending_base(r->native);
	uint64_t w = r->ncycles >= REC_ROUND_LAG ? r->cycle_start[r->ncycles % REC_ROUND_LAG] : 0;
	r->cycle_start[r->ncycles++ % REC_ROUND_LAG] = now;
	if (final)
		w = UINT64_MAX;
	if (oldest < w)
		w = oldest;
	if (w > r->watermark && !r->o->ring_bytes) {
		r->watermark = w;
		isc_rec_emit(r, ISC_CHUNK_ROUND, 0, 0, w, 0, "", 0, true);
	}
}

static void write_clock_pair(struct recorder *r);

/*
 * Time to the next drain cycle: DRAIN_MS while every ring was found less
 * than DRAIN_FILL full, shorter in proportion when one was fuller (a thread
 * writing 10 M events/s fills a 1 MiB ring in about 25 ms), so a busy ring
 * is visited several times before it could fill, at least DRAIN_MIN_MS.
 */
/*
 * Sleeps ns, or less when stopping begins (wake_all): the sampler and drain
 * threads would otherwise each finish a sleep of up to a sampling period
 * after the workload ended (60 ms of a 64 ms run of `python3 -c pass`).
 */
static void rec_sleep(const struct recorder *r, uint64_t ns)
{
	struct pollfd p = { r->wake_fd, POLLIN, 0 }; /* fd -1: poll ignores it and just sleeps */
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	ppoll(&p, 1, &ts, NULL);
}

static void wake_all(const struct recorder *r)
{
	uint64_t one = 1;
	if (r->wake_fd >= 0 && write(r->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN at most (the counter is full): readable already */
	}
}

static int drain_sleep_ms(double fill)
{
	if (fill <= DRAIN_FILL)
		return DRAIN_MS;
	double ms = DRAIN_MS * DRAIN_FILL / fill;
	return ms < DRAIN_MIN_MS ? DRAIN_MIN_MS : (int)ms;
}

static void *drain_main(void *arg)
{
	struct recorder *r = arg;
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
				fprintf(stderr, "\riscope-record: %llu events, %llu stack samples, %llu dropped, %.1f MB   ",
					(unsigned long long)r->res->events, (unsigned long long)r->res->stack_samples,
					(unsigned long long)r->res->dropped, (double)isc_writer_bytes(r->w) / 1e6);
				pthread_mutex_unlock(&r->wlock);
			}
		}
		rec_sleep(r, (uint64_t)drain_sleep_ms(r->fill_max) * 1000000u);
	}
	return NULL;
}

struct sampler_ctx {
	struct recorder *r;
	volatile int stop;
};

/* Whether procs[i] is the first agent file of its pid (a process may have
 * two).  The allocation shim's file does not count: a process that has
 * only that one (a shell, a compiler) is not sampled nor counted, as
 * before the shim existed; its allocation records are kept. */
static bool proc_first(const struct recorder *r, unsigned i)
{
	if (r->procs[i]->chunk == ISC_CHUNK_ALLOC)
		return false;
	for (unsigned j = 0; j < i; j++)
		if (r->procs[j]->pid == r->procs[i]->pid && r->procs[j]->chunk != ISC_CHUNK_ALLOC)
			return false;
	return true;
}

/* NVML samples (nvml.c's thread) go out as SAMPLES chunks. */
static void nvml_emit(void *ctx, const void *records, size_t len, uint64_t base_ts, bool keep)
{
	isc_rec_emit(ctx, ISC_CHUNK_SAMPLES, 0, 0, base_ts, 0, records, len, keep);
}

/* The native sampler's records go out as NATIVE chunks. */
static void native_emit(void *ctx, const void *records, size_t len, uint64_t base_ts, bool keep)
{
	isc_rec_emit(ctx, ISC_CHUNK_NATIVE, 0, 0, base_ts, 0, records, len, keep);
}

/*
 * The processes a sampler tick reads, into pids (REC_MAX_PROCS): the workload's
 * first process, then every other process once (its first shm file); with
 * live_only, not those seen exiting.  Returns how many.
 */
static size_t session_pids(struct recorder *r, pid_t *pids, bool live_only)
{
	size_t n = 0;
	pthread_mutex_lock(&r->plock);
	if (r->child > 0)
		pids[n++] = r->child;
	for (unsigned i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid != r->child && proc_first(r, i) && !(live_only && r->procs[i]->exited))
			pids[n++] = r->procs[i]->pid;
	pthread_mutex_unlock(&r->plock);
	return n;
}

/*
 * Sleeps until the next tick of a sampler running every period ns and
 * sets *now; false when the sampler was told to stop.  A tick late by more
 * than a period is not caught up: the next one is a period from now.
 */
static bool next_tick(const struct sampler_ctx *sc, uint64_t period, uint64_t *next, uint64_t *now)
{
	for (;;) {
		if (sc->stop)
			return false;
		*now = isc_now_ns();
		if (*now >= *next)
			break;
		rec_sleep(sc->r, *next - *now);
	}
	*next += period;
	if (*next < *now)
		*next = *now + period;
	return true;
}

static void *sampler_main(void *arg)
{
	struct sampler_ctx *sc = arg;
	struct recorder *r = sc->r;
	struct isc_sampler *smp = NULL;
	struct isc_buf b = { 0 };
	pid_t pids[REC_MAX_PROCS];
	uint64_t period = 1000000000u / r->o->sample_hz, next = isc_now_ns(), last_slow = 0, now;
	uint32_t seq = 0;
	if (isc_sampler_new(&smp))
		return NULL;
	while (next_tick(sc, period, &next, &now)) {
		size_t n = session_pids(r, pids, false);
		bool slow = now - last_slow >= 1000000000u;
		if (slow)
			last_slow = now;
		b.len = 0;
		uint64_t last = now, names = isc_sampler_names(smp);
		isc_sampler_tick(smp, pids, n, now, slow, &b, &last);
		/* a tick that named a thread is never evicted: thread names survive a flight recording */
		if (b.len)
			isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, seq++, b.data, b.len, isc_sampler_names(smp) != names);
	}
	isc_buf_free(&b);
	isc_sampler_free(smp);
	return NULL;
}

/* The Python stack sampler's hooks: strings before samples, warnings once. */
static void py_strings(void *ctx, pid_t pid, const void *records, size_t len)
{
	isc_rec_emit_strings(ctx, pid, records, len);
}

static void py_warn(void *ctx, pid_t pid, const char *msg)
{
	struct recorder *r = ctx;
	if (!r->py_warned && !r->o->quiet)
		isc_log(ISC_LOG_WARN, "%s", msg);
	r->py_warned = true;
	struct isc_buf b = { 0 }, body = { 0 };
	uint64_t now = isc_now_ns(), last = now;
	isc_buf_put_varint(&body, (uint64_t)pid);
	isc_buf_put_varint(&body, ISC_WARN_PY_STACKS);
	isc_buf_put(&body, msg, strlen(msg));
	if (!isc_buf_put_record(&b, ISC_REC_WARNING, now, &last, body.data, body.len))
		isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, b.data, b.len, true);
	isc_buf_free(&b);
	isc_buf_free(&body);
}

/*
 * Every 1/python_hz s (both Python modes), the Python stacks of the
 * workload and of every process whose Python agent published a file, one
 * SAMPLES chunk per tick; at the end the sampler's totals (PY_SAMPLER).
 */
static void *pysampler_main(void *arg)
{
	struct sampler_ctx *sc = arg;
	struct recorder *r = sc->r;
	struct isc_pysampler *smp = NULL;
	/* exact mode: stacks it cannot read are no loss worth a warning (the agent records every call) */
	struct isc_pysampler_hooks hooks = { r, py_strings, r->python_sample ? py_warn : NULL };
	struct isc_buf b = { 0 };
	pid_t pids[REC_MAX_PROCS];
	uint64_t period = 1000000000u / r->o->python_hz, next = isc_now_ns(), now;
	if (isc_pysampler_new(&smp, &hooks))
		return NULL;
	while (next_tick(sc, period, &next, &now)) {
		size_t n = session_pids(r, pids, true);
		b.len = 0;
		uint64_t last = now;
		isc_pysampler_tick(smp, pids, n, now, &b, &last);
		if (b.len)
			isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, b.data, b.len, false);
		uint64_t tot[4];
		isc_pysampler_stats(smp, tot);
		pthread_mutex_lock(&r->wlock);
		r->res->stack_samples = tot[1]; /* the live line and the summary count them */
		pthread_mutex_unlock(&r->wlock);
	}
	/* totals: the rate, the sampler's work and its own CPU time */
	struct timespec cpu;
	uint64_t st[4], last = isc_now_ns(), cpu_ns = 0;
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu))
		cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	isc_pysampler_stats(smp, st);
	uint8_t body[70];
	unsigned bl = isc_put_varint(body, r->o->python_hz);
	for (int i = 0; i < 4; i++)
		bl += isc_put_varint(body + bl, st[i]);
	bl += isc_put_varint(body + bl, cpu_ns);
	b.len = 0;
	uint64_t ts = last;
	isc_buf_put_record(&b, ISC_REC_PY_SAMPLER, ts, &last, body, bl);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, ts, 0, b.data, b.len, true);
	isc_buf_free(&b);
	isc_pysampler_free(smp);
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

static int write_header(struct recorder *r)
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
		isc_rec_emit(r, ISC_CHUNK_FILE_HEADER, 0, 0, 0, 0, b.data, b.len, true);
	isc_buf_free(&b);
	return rc;
}

/* One META record: key (under 64 bytes), value cut at 255 bytes. */
static void put_meta(struct isc_buf *b, uint64_t now, uint64_t *last, const char *key, const char *v)
{
	uint8_t body[10 + 64 + 256];
	size_t kl = strnlen(key, 63), vl = strnlen(v, 255);
	unsigned n = isc_put_varint(body, kl);
	memcpy(body + n, key, kl);
	memcpy(body + n + kl, v, vl);
	isc_buf_put_record(b, ISC_REC_META, now, last, body, n + kl + vl);
}

/*
 * The settings a run's speed depends on, as META records (key, value) in a
 * samples chunk after the header, so a comparison can show them first:
 * environment variables that set threads, allocators, devices and ranks
 * (only those set), the CPU model, the kernel and the CPU frequency
 * governor.  Nothing here is secret: no variable outside the list is read.
 */
static void write_environment(struct recorder *r)
{
	static const char *const vars[] = {
		"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
		"KMP_AFFINITY", "GOMP_CPU_AFFINITY", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING",
		"PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDNN_V8_API_ENABLED", "NCCL_ALGO", "NCCL_PROTO", "WORLD_SIZE",
		"LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK", "MALLOC_ARENA_MAX", "LD_PRELOAD", "PYTHONOPTIMIZE",
	};
	char key[64], val[256], line[512];
	struct utsname u;
	FILE *f;
	r->tmp.len = 0;
	uint64_t now = isc_now_ns(), last = now;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]) + 3; i++) {
		const char *v = NULL;
		val[0] = '\0';
		if (i < sizeof(vars) / sizeof(vars[0])) {
			snprintf(key, sizeof(key), "env.%s", vars[i]);
			v = getenv(vars[i]);
		} else if (i == sizeof(vars) / sizeof(vars[0])) {
			snprintf(key, sizeof(key), "host.cpu_model");
			if ((f = fopen("/proc/cpuinfo", "re"))) {
				while (!v && fgets(line, sizeof(line), f))
					if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
						snprintf(val, sizeof(val), "%s", strchr(line, ':') + 2);
						val[strcspn(val, "\n")] = '\0';
						v = val;
					}
				fclose(f);
			}
		} else if (i == sizeof(vars) / sizeof(vars[0]) + 1) {
			snprintf(key, sizeof(key), "host.kernel");
			if (!uname(&u))
				v = u.release;
		} else {
			snprintf(key, sizeof(key), "host.cpu_governor");
			if ((f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "re"))) {
				if (fgets(val, sizeof(val), f)) {
					val[strcspn(val, "\n")] = '\0';
					v = val;
				}
				fclose(f);
			}
		}
		if (v)
			put_meta(&r->tmp, now, &last, key, v);
	}
	if (r->tmp.len)
		isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, r->tmp.data, r->tmp.len, true);
}

/*
 * META "record.python_mode": which Python mode r->python_sample chose, and
 * why; with --memory-limit, "record.memory_limit": the limit in bytes.
 */
static void write_python_mode(struct recorder *r)
{
	int m = r->o->python_mode;
	const char *v = m == ISC_PY_SAMPLE ? "sample (--python=sample)"
			: m == ISC_PY_EXACT ? "exact (--python=exact)"
			: r->gpu.replace_cuda ? "sample (--python=auto: GPU activity traced, the CUDA agent reads the Python line of each CUDA call)"
					      : "sample (--python=auto: GPU activity not traced)";
	uint64_t now = isc_now_ns(), last = now;
	char lim[32];
	r->tmp.len = 0;
	put_meta(&r->tmp, now, &last, "record.python_mode", v);
	if (r->o->memory_limit) {
		snprintf(lim, sizeof(lim), "%llu", (unsigned long long)r->o->memory_limit);
		put_meta(&r->tmp, now, &last, "record.memory_limit", lim);
	}
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, r->tmp.data, r->tmp.len, true);
}

static void write_clock_pair(struct recorder *r)
{
	struct isc_clock_pair cp;
	uint8_t body[20];
	isc_clock_pair(&cp);
	unsigned n = isc_put_varint(body, cp.realtime_ns);
	n += isc_put_varint(body + n, cp.bracket_ns);
	uint64_t last = cp.mono_ns;
	r->tmp.len = 0;
	isc_buf_put_record(&r->tmp, ISC_REC_CLOCK_PAIR, cp.mono_ns, &last, body, n);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, cp.mono_ns, 0, r->tmp.data, r->tmp.len, true);
}

/* The largest power-of-two KiB count <= bytes, from 64 KiB to 1 GiB. */
static uint64_t ring_kb(uint64_t bytes)
{
	uint64_t kb = 64;
	while (kb * 2 * 1024 <= bytes && kb < (1u << 20))
		kb *= 2;
	return kb;
}

/*
 * The file execvp would run for cmd: cmd itself when it holds a '/', else
 * the first executable PATH entry (the default PATH when unset), into
 * path[cap].  NULL when none is found.
 */
const char *isc_rec_find_command(const char *cmd, char *path, size_t cap)
{
	if (strchr(cmd, '/'))
		return cmd;
	const char *pp = getenv("PATH");
	for (const char *d = pp ? pp : "/usr/local/bin:/usr/bin:/bin"; d; d = strchr(d, ':') ? strchr(d, ':') + 1 : NULL) {
		size_t n = strcspn(d, ":");
		if ((size_t)snprintf(path, cap, "%.*s/%s", (int)n, n ? d : ".", cmd) < cap && !access(path, X_OK))
			return path;
	}
	return NULL;
}

/*
 * Whether the command runs CPython: its program (looked up in PATH as
 * execvp does; after env(1) and its settings when it starts with env) is
 * named python* (a shim too), or is a script whose #! line names python,
 * or resolves to a file named python*.  Other wrappers that start Python
 * later are not recognised: no warning is better than a false one.
 */
static bool runs_python(char *const *argv)
{
	char path[PATH_MAX], real[PATH_MAX], head[256];
	const char *found = NULL, *cmd = argv[0];
	const char *prog = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
	if (!strcmp(prog, "env")) {
		size_t i = 1;
		while (argv[i] && (argv[i][0] == '-' || strchr(argv[i], '=')))
			i += (!strcmp(argv[i], "-u") || !strcmp(argv[i], "-C")) && argv[i + 1] ? 2 : 1;
		if (!argv[i])
			return false;
		cmd = argv[i];
	}
	const char *named = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
	if (!strncmp(named, "python", 6)) /* a pyenv or venv shim too */
		return true;
	found = isc_rec_find_command(cmd, path, sizeof(path));
	if (!found)
		return false;
	int fd = open(found, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = fd >= 0 ? read(fd, head, sizeof(head) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 2)
		return false;
	head[n] = '\0';
	if (head[0] == '#' && head[1] == '!') {
		head[strcspn(head, "\n")] = '\0';
		return strstr(head, "python") != NULL;
	}
	const char *base = realpath(found, real) ? strrchr(real, '/') + 1 : NULL;
	return base && !strncmp(base, "python", 6);
}

/*
 * A Python workload whose <pid>.shm never attached ran without the Python
 * agent: one note on stderr (unless quiet) and a WARNING record.  Called
 * after the drain's last look at the session directory.
 */
static void check_python_agent(struct recorder *r)
{
	const char *en = getenv("INFERSCOPE_ENABLE");
	if (!r->python || (en && !strcmp(en, "0")))
		return;
	for (unsigned k = 0; k < r->nprocs; k++) {
		const struct rec_proc *p = r->procs[k];
		if (p->pid == r->child && !strcmp(p->suffix, ".shm") && (p->streams || p->warned || p->faulted))
			return; /* attached (or refused, which was said) */
	}
	char msg[PATH_MAX + 320], probe[PATH_MAX];
	DIR *d = opendir(r->o->agent_dir);
	bool have = false;
	struct dirent *e;
	while (d && (e = readdir(d)))
		have |= !strncmp(e->d_name, "_agent.", 7) && strstr(e->d_name, ".so");
	if (d)
		closedir(d);
	snprintf(probe, sizeof(probe), "%s/sitecustomize.py", r->o->agent_dir);
	if (!have || access(probe, R_OK))
		snprintf(msg, sizeof(msg), "no Python agent in %s: no Python calls, ops or marks were recorded "
			 "(reinstall InferScope, or set INFERSCOPE_AGENT_DIR)", r->o->agent_dir);
	else
		snprintf(msg, sizeof(msg), "the Python agent of %s was not loaded into the workload: no Python calls, "
			 "ops or marks were recorded (a Python older than 3.9 or another ABI, python -S or -E, or a "
			 "PYTHONPATH the workload replaced)", r->o->agent_dir);
	if (!r->o->quiet)
		isc_log(ISC_LOG_WARN, "note: %s", msg);
	struct isc_buf body = { 0 }, rec = { 0 };
	uint64_t now = isc_now_ns(), last = now;
	int rc = isc_buf_put_varint(&body, (uint64_t)r->child);
	rc |= isc_buf_put_varint(&body, ISC_WARN_NO_PY_AGENT);
	rc |= isc_buf_put(&body, msg, strlen(msg));
	rc |= isc_buf_put_record(&rec, ISC_REC_WARNING, now, &last, body.data, body.len);
	if (!rc)
		isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, rec.data, rec.len, true);
	isc_buf_free(&body);
	isc_buf_free(&rec);
}

static void write_warning(struct recorder *r, pid_t pid, unsigned code, const char *msg);

/*
 * The allocation shim's variables (iscope-record(1), ALLOCATION SAMPLING):
 * LD_PRELOAD with the shim first (the user's preloads after it), the
 * sampling interval and its rings' size, the workload's pid (below),
 * ASAN_OPTIONS with verify_asan_link_order=0; with sampling off, an interval
 * of 0, which turns off a shim the user preloads himself.  Strings into
 * r->alloc_env (owned).  0 or -ENOMEM.
 */
static int alloc_env(struct recorder *r, const char *preload, uint64_t ring_kb)
{
	uint64_t kb = ring_kb < ISC_ALLOC_DEFAULT_RING_KB ? ring_kb : ISC_ALLOC_DEFAULT_RING_KB;
	int bad = asprintf(&r->alloc_env[0], "INFERSCOPE_ALLOC_INTERVAL=%llu",
			   (unsigned long long)(r->o->alloc_shim ? r->o->memory_sampling : 0)) < 0;
	if (r->o->alloc_shim) {
		/* AddressSanitizer refuses to start when it is not the first
		 * library; the shim calls the next malloc, ASan's: tell it so */
		const char *asan = getenv("ASAN_OPTIONS");
		if (asan && strstr(asan, "verify_asan_link_order")) /* the user's say */
			bad |= asprintf(&r->alloc_env[4], "ASAN_OPTIONS=%s", asan) < 0;
		else
			bad |= asprintf(&r->alloc_env[4], "ASAN_OPTIONS=%s%sverify_asan_link_order=0", asan ? asan : "",
					asan && *asan ? ":" : "") < 0;
		/* the workload's pid, written by the child between fork and exec */
		bad |= asprintf(&r->alloc_env[3], "INFERSCOPE_ALLOC_ROOT=%020d", 0) < 0;
		bad |= asprintf(&r->alloc_env[1], "INFERSCOPE_ALLOC_RING_KB=%llu", (unsigned long long)kb) < 0;
		bad |= asprintf(&r->alloc_env[2], "LD_PRELOAD=%s%s%s", r->o->alloc_shim, preload && *preload ? ":" : "",
				preload ? preload : "") < 0;
	}
	return bad ? -ENOMEM : 0;
}

/* Environment of the workload: the user's plus our variables. */
static char **child_env(struct recorder *r)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 12 + sizeof(r->gpu.env) / sizeof(r->gpu.env[0]), sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	const char *pypath = NULL, *preload = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "PYTHONPATH=", 11))
			pypath = environ[i] + 11;
		else if (r->o->alloc_shim && !strncmp(environ[i], "LD_PRELOAD=", 11))
			preload = environ[i] + 11;
		else if (r->o->alloc_shim && !strncmp(environ[i], "ASAN_OPTIONS=", 13))
			continue; /* replaced (alloc_env) */
		else if (strncmp(environ[i], "INFERSCOPE_SESSION=", 19) &&
			 strncmp(environ[i], "INFERSCOPE_PYTHON_MODE=", 23) &&
			 strncmp(environ[i], "INFERSCOPE_RING_KB=", 19) &&
			 strncmp(environ[i], "INFERSCOPE_BIG_RING_KB=", 23) &&
			 strncmp(environ[i], "INFERSCOPE_CUDA_DRIVER_API=", 27) &&
			 strncmp(environ[i], "INFERSCOPE_ALLOC_INTERVAL=", 26) &&
			 strncmp(environ[i], "INFERSCOPE_ALLOC_RING_KB=", 25) &&
			 strncmp(environ[i], "INFERSCOPE_ALLOC_ROOT=", 22) &&
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
	char *ours[6] = { NULL, NULL, NULL, NULL, NULL, NULL };
	if (asprintf(&ours[0], "INFERSCOPE_SESSION=%s", r->dir) < 0 ||
	    asprintf(&ours[1], "INFERSCOPE_RING_KB=%llu", (unsigned long long)kb) < 0 ||
	    asprintf(&ours[2], "INFERSCOPE_BIG_RING_KB=%llu", (unsigned long long)big_kb) < 0 ||
	    asprintf(&ours[3], "PYTHONPATH=%s%s%s", r->o->agent_dir, pypath && *pypath ? ":" : "",
		     pypath ? pypath : "") < 0 ||
	    asprintf(&ours[4], "INFERSCOPE_PYTHON_MODE=%s", r->python_sample ? "sample" : "exact") < 0 ||
	    /* read by the CUDA agent: DRIVER activity only when asked for */
	    asprintf(&ours[5], "INFERSCOPE_CUDA_DRIVER_API=%d", r->o->cuda_driver_api ? 1 : 0) < 0 ||
	    alloc_env(r, preload, big_kb) < 0) {
		for (int i = 0; i < 6; i++) /* glibc leaves a failed one NULL */
			free(ours[i]);
		free(env);
		return NULL;
	}
	for (int i = 0; i < 6; i++)
		env[k++] = ours[i];
	for (int i = 0; i < 5; i++)
		if (r->alloc_env[i])
			env[k++] = r->alloc_env[i];
	env[k] = NULL;
	return env;
}

/*
 * Why allocations will not be sampled, said once at the start (a WARNING,
 * code 16, and a note unless quiet): no shim in this installation, or a
 * command that is a static executable.  pid: the workload's.
 */
static void check_alloc(struct recorder *r, pid_t pid)
{
	char msg[PATH_MAX + 200];
	if (!r->o->memory_sampling)
		return;
	if (!r->o->alloc_shim)
		snprintf(msg, sizeof(msg), "no libiscope-alloc.so in this installation: allocations were not sampled "
			 "(reinstall InferScope, or set INFERSCOPE_ALLOC_SHIM)");
	else if (isc_alloc_static_exe(r->o->argv[0]))
		snprintf(msg, sizeof(msg), "%s is a static executable, which LD_PRELOAD cannot enter: its allocations "
			 "were not sampled", r->o->argv[0]);
	else
		return;
	if (!r->o->quiet)
		isc_log(ISC_LOG_WARN, "note: %s", msg);
	write_warning(r, pid, ISC_WARN_NO_ALLOC, msg);
}

/* fork + exec; an exec failure comes back through a close-on-exec pipe. */
#define CG_JOIN_FAILED 0x40000000 /* or'ed into the errno the child reports */

static void write_warning(struct recorder *r, pid_t pid, unsigned code, const char *msg);
static void native_refused(struct recorder *r, const char *why);

/*
 * --native: the perf events are opened on the child between its fork and
 * its exec (it waits on gfd for a byte), so that they are enabled at exec
 * and inherited by everything it starts.  A failure with --native=auto is
 * a warning and a recording without native stacks; with --native=on the
 * child is killed and the recording does not start.
 */
static int attach_native(struct recorder *r, pid_t pid, int gfd)
{
	char why[320];
	int rc = 0;
	if (isc_native_attach(r->native, pid, why, sizeof(why))) {
		if (r->o->native_mode == ISC_NATIVE_ON) {
			isc_err_push("Cannot sample native stacks (--native=on): %s", why);
			rc = -EPERM;
		} else {
			native_refused(r, why);
		}
	}
	if (write(gfd, "g", 1) != 1)
		rc = rc ? rc : -errno;
	close(gfd);
	return rc;
}

static int start_child(struct recorder *r, char **env)
{
	int pfd[2], gfd[2] = { -1, -1 };
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	if (r->native && pipe2(gfd, O_CLOEXEC)) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		if (gfd[0] >= 0) {
			close(gfd[0]);
			close(gfd[1]);
		}
		isc_err_push("Cannot fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		if (gfd[0] >= 0) { /* wait until the native sampler's events are on us */
			char g;
			close(gfd[1]);
			while (read(gfd[0], &g, 1) < 0 && errno == EINTR)
				;
		}
		sigaction(SIGPIPE, &r->old_pipe, NULL); /* ours is SIG_IGN */
		/* a background job of a non-interactive shell starts with INT and
		 * QUIT ignored, and an ignored signal stays so across exec: the
		 * workload gets the defaults back, so the signals we forward act */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (r->o->child_stdout_to_stderr)
			dup2(2, 1);
		if (r->alloc_env[3]) { /* INFERSCOPE_ALLOC_ROOT=<our pid>, without allocating */
			char *d = r->alloc_env[3] + 22 + 19;
			for (long v = (long)getpid(); v > 0 && d >= r->alloc_env[3] + 22; v /= 10)
				*d-- = (char)('0' + v % 10);
		}
		if (r->cg.procs_fd >= 0) { /* --memory-limit: join the cgroup before exec */
			char b[24];
			int n = snprintf(b, sizeof(b), "%d", (int)getpid());
			if (write(r->cg.procs_fd, b, (size_t)n) != n) {
				int e = errno | CG_JOIN_FAILED;
				if (write(pfd[1], &e, sizeof(e)) < 0)
					_exit(127);
				_exit(127);
			}
		}
		execvpe(r->o->argv[0], r->o->argv, env);
		int e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	if (gfd[0] >= 0) {
		close(gfd[0]);
		int arc = attach_native(r, pid, gfd[1]);
		if (arc) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(pfd[0]);
			return arc;
		}
	}
	int e = 0;
	ssize_t got;
	do
		got = read(pfd[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	if (got == (ssize_t)sizeof(e) && e & CG_JOIN_FAILED) {
		waitpid(pid, NULL, 0);
		e &= ~CG_JOIN_FAILED;
		isc_err_push("Cannot limit memory: cannot move the workload into %s: %s", r->cg.dir, strerror(e));
		return -e;
	}
	if (got == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		r->res->exec_errno = e;
		isc_err_push("Cannot run '%s': %s", r->o->argv[0], strerror(e));
		return -e;
	}
	r->child = pid;
	return 0;
}

/* A WARNING record (formats/trace.md) of pid with code and message, now. */
static void write_warning(struct recorder *r, pid_t pid, unsigned code, const char *msg)
{
	uint8_t body[512];
	size_t len = strlen(msg) < 480 ? strlen(msg) : 480;
	unsigned n = isc_put_varint(body, (uint64_t)pid);
	n += isc_put_varint(body + n, code);
	memcpy(body + n, msg, len);
	uint64_t now = isc_now_ns(), last = now;
	struct isc_buf b = { 0 };
	isc_buf_put_record(&b, ISC_REC_WARNING, now, &last, body, n + len);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, b.data, b.len, true);
	isc_buf_free(&b);
}

/* --native=auto without native stacks: one line (unless quiet) and a WARNING. */
static void native_refused(struct recorder *r, const char *why)
{
	if (!r->o->quiet)
		isc_log(ISC_LOG_WARN, "native stacks are not sampled (--native=auto): %s; the recording has Python "
			"stacks only", why);
	write_warning(r, 0, ISC_WARN_NATIVE, why);
	isc_native_free(r->native);
	r->native = NULL;
}

/*
 * --native=on|auto: the sampler, checked on ourselves before the workload
 * starts (so that --native=on fails before running anything), and the
 * META record saying how native stacks were sampled.
 */
static int setup_native(struct recorder *r)
{
	char why[320];
	const struct isc_record_opts *o = r->o;
	if (o->native_mode == ISC_NATIVE_OFF)
		return 0;
	struct isc_native_cfg cfg = { o->native_hz ? o->native_hz : o->python_hz,
				      o->native_stack ? o->native_stack : ISC_NATIVE_STACK_DEFAULT, o->flush_ms, native_emit, r };
	int rc = isc_native_new(&r->native, &cfg, why, sizeof(why));
	if (rc && o->native_mode == ISC_NATIVE_ON) {
		isc_err_push("Cannot sample native stacks (--native=on): %s", why);
		return rc;
	}
	if (rc) {
		native_refused(r, why);
		return 0;
	}
	char v[200];
	snprintf(v, sizeof(v), "%s (--native=%s), %u Hz, %u-byte stacks, %s", "on",
		 o->native_mode == ISC_NATIVE_ON ? "on" : "auto", cfg.hz, cfg.stack_bytes,
		 isc_native_kernel(r->native) ? "kernel call chains" : "user space only (kernel samples not permitted)");
	uint64_t now = isc_now_ns(), last = now;
	r->tmp.len = 0;
	put_meta(&r->tmp, now, &last, "record.native", v);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, r->tmp.data, r->tmp.len, true);
	return 0;
}

/* PROC_EXIT of pid: status (exit code or 128 + signal), how 0 exited,
 * 1 killed by a signal, 2 gone without its status being seen. */
static void write_exit(struct recorder *r, pid_t pid, int status, unsigned how)
{
	uint8_t body[30];
	unsigned n = isc_put_varint(body, (uint64_t)pid);
	n += isc_put_varint(body + n, isc_zigzag(status));
	n += isc_put_varint(body + n, how);
	uint64_t now = isc_now_ns(), last = now;
	struct isc_buf b = { 0 };
	isc_buf_put_record(&b, ISC_REC_PROC_EXIT, now, &last, body, n);
	isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, now, 0, b.data, b.len, true);
	isc_buf_free(&b);
}

/* Marks every file of pid as exited; false when one already was. */
static bool mark_exited(struct recorder *r, pid_t pid)
{
	bool first = true, found = false;
	uint64_t now = isc_now_ns();
	pthread_mutex_lock(&r->plock);
	for (unsigned k = 0; k < r->nprocs; k++)
		if (r->procs[k]->pid == pid) {
			first = first && !r->procs[k]->exited;
			if (!r->procs[k]->exit_ts)
				r->procs[k]->exit_ts = now;
			r->procs[k]->exited = true;
			found = true;
		}
	if (!found) {
		r->reaped[r->nreaped % 64].pid = pid;
		r->reaped[r->nreaped++ % 64].ts = now;
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
static void detect_gone(struct recorder *r)
{
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct rec_proc *p = r->procs[k];
		if (p->exited || !p->streams || kill(p->pid, 0) == 0 || errno != ESRCH)
			continue;
		bool agent = false; /* a process only the allocation shim saw gets no PROC_EXIT */
		for (unsigned j = 0; j < r->nprocs; j++)
			agent |= r->procs[j]->pid == p->pid && r->procs[j]->chunk != ISC_CHUNK_ALLOC;
		if (!agent) {
			pthread_mutex_lock(&r->plock);
			p->exit_ts = isc_now_ns();
			p->exited = true;
			pthread_mutex_unlock(&r->plock);
		} else if (mark_exited(r, p->pid)) {
			write_exit(r, p->pid, 0, 2);
		}
	}
}

/* Unmaps and removes every file of the session, then the directory. */
static void cleanup_session(struct recorder *r)
{
	for (unsigned k = 0; k < r->nprocs; k++) {
		struct rec_proc *p = r->procs[k];
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
static int make_session_dir(struct recorder *r)
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
	struct recorder r;
	struct sampler_ctx sc = { &r, 0 }, pc = { &r, 0 };
	pthread_t drain_thr, sampler_thr, py_thr;
	bool sampler_on = false, drain_on = false, py_on = false;
	struct isc_nvml_thread *nvml_thr = NULL;
	struct sigaction sa, old[3], old_bus;
	const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	char **env = NULL;
	int rc;

	memset(&r, 0, sizeof(r));
	r.cg.procs_fd = -1;
	memset(res, 0, sizeof(*res));
	r.o = o;
	r.res = res;
	r.child = -1;
	r.dirfd = r.lockfd = -1;
	r.wake_fd = -1;
	/* a flight-recorder holds several frames: keep them well under its size */
	r.pending_max = PENDING_MAX;
	if (o->ring_bytes && o->ring_bytes / 4 < PENDING_MAX)
		r.pending_max = o->ring_bytes / 4 > 4096 ? o->ring_bytes / 4 : 4096;
	pthread_mutex_init(&r.wlock, NULL);
	pthread_mutex_init(&r.plock, NULL);
	if ((rc = isc_writer_new(&r.w, o->out, o->level)))
		return rc;
	r.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* a traced process truncating its file makes our reads fault: see drain.c */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = isc_drain_on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	if ((rc = make_session_dir(&r)))
		goto out_writer;
	if ((rc = write_header(&r)))
		goto out_dir;
	write_clock_pair(&r);
	write_environment(&r);
	/* GPU: the CUDA agent's variables for child_env, and why GPU data will lack */
	if ((rc = isc_gpu_setup(&r.gpu, o->cuda_agent, o->cuda_mode, o->sample_hz, o->quiet, isc_now_ns())))
		goto out_dir;
	if (r.gpu.warnings.len)
		isc_rec_emit(&r, ISC_CHUNK_SAMPLES, 0, 0, r.gpu.warnings_ts, 0, r.gpu.warnings.data, r.gpu.warnings.len, true);
	/* --python=auto samples, with a GPU too: the CUDA agent then reads the
	 * Python line of each CUDA call in the process (issue 29), which exact
	 * mode's call spans gave at the cost of a hook on every call */
	r.python_sample = o->python_mode != ISC_PY_EXACT;
	write_python_mode(&r);
	if (!(env = child_env(&r))) {
		rc = -ENOMEM;
		goto out_dir;
	}
	/* orphaned descendants (daemonized workers) are re-parented to us */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* a vanished trace reader must not kill the recorder; the workload
	 * gets its own disposition back in start_child */
	sigaction(SIGPIPE, &(struct sigaction){ .sa_handler = SIG_IGN }, &r.old_pipe);
	r.python = runs_python(o->argv);
	if (o->memory_limit) {
		if ((rc = isc_memcg_create(&r.cg, o->memory_limit)))
			goto out_dir;
		if (!o->quiet)
			fprintf(stderr, "iscope-record: note: the workload runs in cgroup v%d %s, limited to %.1f MiB\n",
				r.cg.version, r.cg.dir, (double)o->memory_limit / 1048576);
	} else {
		isc_memcg_baseline(&r.cg);
	}
	if ((rc = setup_native(&r)))
		goto out_dir;
	if ((rc = start_child(&r, env)))
		goto out_dir;
	res->workload_started = true;
	forward_pid = r.child;
	check_alloc(&r, r.child);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid must see late signals */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	isc_drain_proc_add(&r, r.child, 0);
	/* the helper threads never take INT/TERM/HUP: the main thread must */
	sigset_t block, oldmask;
	sigemptyset(&block);
	for (int i = 0; i < 3; i++)
		sigaddset(&block, sigs[i]);
	pthread_sigmask(SIG_BLOCK, &block, &oldmask);
	drain_on = !pthread_create(&drain_thr, NULL, drain_main, &r);
	if (o->sample_hz)
		sampler_on = !pthread_create(&sampler_thr, NULL, sampler_main, &sc);
	/* exact mode samples the stacks too: an operator's C slot (x @ w) has
	 * no call event, and the samples say which share of a function's
	 * time sat in one (iscope-analyze moves it to an op row) */
	if (o->python_hz)
		py_on = !pthread_create(&py_thr, NULL, pysampler_main, &pc);
	if (o->sample_hz && r.gpu.nvml)
		isc_nvml_start(&nvml_thr, r.gpu.nvml, o->sample_hz, r.wake_fd, nvml_emit, &r);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);

	/* wait for every process of the session, the workload first or last */
	int told = 0;
	for (;;) {
		int st;
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		/* look before reaping, so the drain never reports a child as gone */
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
			if (errno == EINTR) {
				if (forwarded && forward_pid > 0) {
					int sigs = forwarded;
					forwarded = 0;
					check_forwarded(forward_pid, sigs, &told);
				}
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
		char why[400];
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && isc_memcg_oom_killed(&r.cg, why, sizeof(why))) {
			write_warning(&r, pid, ISC_WARN_OOM_KILL, why);
			if (!o->quiet)
				fprintf(stderr, "iscope-record: process %d was %s\n", (int)pid, why);
		}
		write_exit(&r, pid, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), WIFEXITED(st) ? 0 : 1);
		if (pid == r.child) {
			res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
			forward_pid = 0;
		}
	}
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	/* every flag before the wake-up: a woken thread that saw no flag would
	 * spin in rec_sleep (the eventfd stays readable) until its flag came */
	sc.stop = 1;
	pc.stop = 1;
	r.stop = 1;
	isc_nvml_stopping(nvml_thr);
	wake_all(&r);
	if (sampler_on)
		pthread_join(sampler_thr, NULL);
	if (py_on)
		pthread_join(py_thr, NULL);
	isc_nvml_stop(nvml_thr);
	if (drain_on)
		pthread_join(drain_thr, NULL);
	write_clock_pair(&r);
	drain_cycle(&r, false); /* the agent files of processes that just ended */
	check_python_agent(&r);
	isc_native_finish(r.native); /* its last records, kernel symbols and totals, before the final ROUND */
	drain_cycle(&r, true);
	if (o->progress)
		fprintf(stderr, "\r\033[K");

	/* end chunk, then (flight recorder) the kept frames in order */
	{
		struct isc_buf b = { 0 };
		uint8_t body[60];
		struct isc_end_stats e = { res->events, res->dropped, r.evicted_frames,
					   res->signal ? ISC_END_SIGNALED : 0, res->status };
		unsigned n = isc_end_stats_encode(body, &e);
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
			isc_rec_emit_locked(&r, ISC_CHUNK_ROUND, 0, 0, UINT64_MAX, 0, "", 0, true);
		}
		r.direct = true;
		isc_rec_emit_locked(&r, ISC_CHUNK_END, 0, 0, 0, 0, b.data, b.len, true);
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
	isc_memcg_destroy(&r.cg);
	cleanup_session(&r);
out_writer:
	sigaction(SIGBUS, &old_bus, NULL);
	if (env) {
		for (char **e = env; *e; e++)
			if (!strncmp(*e, "INFERSCOPE_SESSION=", 19) || !strncmp(*e, "INFERSCOPE_RING_KB=", 19) ||
			    !strncmp(*e, "INFERSCOPE_BIG_RING_KB=", 23) || !strncmp(*e, "INFERSCOPE_PYTHON_MODE=", 23) ||
			    !strncmp(*e, "INFERSCOPE_CUDA_DRIVER_API=", 27) || !strncmp(*e, "PYTHONPATH=", 11))
				free(*e);
		free(env);
	}
	for (int i = 0; i < 5; i++)
		free(r.alloc_env[i]);
	isc_gpu_setup_free(&r.gpu);
	isc_native_free(r.native);
	for (size_t i = 0; i < r.nframes; i++)
		isc_buf_free(&r.frames[i].data);
	free(r.frames);
	free(r.scratch);
	isc_buf_free(&r.tmp);
	isc_writer_free(r.w);
	if (r.wake_fd >= 0)
		close(r.wake_fd);
	return rc;
}
