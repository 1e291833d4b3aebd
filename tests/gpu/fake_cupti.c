/*
 * fake_cupti.c - test double of CUPTI's activity API (libcupti.so.13),
 * for tests/gpu.  Built against the real CUPTI headers: every record it
 * delivers is a real CUpti_Activity* struct, packed into the buffers the
 * client hands it, delivered through the client's buffer callbacks and
 * stamped with the client's timestamp callback.  The fake CUDA driver
 * (fake_cuda.c) forwards the test workload's "launches" to the fakecupti_*
 * functions below, which simulate a GPU:
 *
 *   launch: runtime + driver API records (one correlation id) at once; the
 *           kernel starts 3 us after the call or when its stream is free,
 *           and reaches a buffer when it completes (completion order)
 *   copy:   10 GB/s; a synchronous copy (cudaMemcpy) returns when the
 *           copy is done, as the real one does
 *   sync:   stream (cudaStreamSynchronize), event (cudaEventSynchronize) or
 *           device (cudaDeviceSynchronize) synchronization: returns when
 *           the work is done
 *   clock:  the double's own (stamp()): the client's clock, less the time
 *           the host took beyond the model to come back from the double's
 *           blocking calls (f.late).  What the GPU does and how long a
 *           host-side wait lasts are data: a kernel runs for its given
 *           duration, a blocking call (a sync, a synchronous copy, a launch
 *           with FAKE_CUPTI_LAUNCH_NS) returns at the instant the model
 *           says, in its records and on the double's clock, however late
 *           the host thread really woke up (beside other jobs: tens of us
 *           to ms).  The host thread still waits, really, until then, so
 *           that the host's own timeline (its Python spans) holds the call;
 *           what it does between calls stays the host's time.  The double's
 *           clock lags the host's by the sum of those wake-up delays
 *           (FAKE_CUPTI_STATS prints it): microseconds a call on a quiet
 *           machine; given back where no instant of the model moves (a
 *           launch on a stream with work still queued: repay()), at a
 *           cudaMalloc or cudaFree (reanchor()), and when the host thread
 *           calls more than FAKE_CUPTI_HOST_OWN_NS (50 us) after it came
 *           back (own_time(): its events in between stay before the
 *           call).  FAKE_CUPTI_WAKE_LATE_NS=N makes every blocking call
 *           wake N ns late on purpose (tests/gpu/gpu.bats shows the
 *           records do not move).
 *   buffers: one queue for API/marker/device records, one per stream;
 *           cuptiActivityFlushAll hands the stream queues over first, so
 *           the client sees operations before the calls that launched them
 *
 * API records: every runtime call makes a driver call inside it, with the
 * same correlation id (calls()), as CUPTI reports when the runtime goes
 * through the driver's API: the worst case for a client that records
 * both (on an H200 with CUDA 13 a runtime launch made no driver record);
 * a launch through the driver alone (fakecupti_launch_driver) has its
 * driver record only.  Per-call switches (cuptiActivityEnableRuntimeApi,
 * cuptiActivityEnableDriverApi) apply until the kind is enabled again,
 * which switches every call of the kind back on, as CUPTI documents.
 *
 * Callbacks: the subscriber's function is called at the entry of each
 * runtime or driver call it was enabled on (cuptiEnableCallback; the
 * driver call inside a runtime call too, after it), with the call's
 * correlation id, on the calling thread; FAKE_CUPTI_STATS=1 prints at exit
 * how many were enabled and run ("fake-cupti-stats: ...") and how far the
 * double's clock lags the host's ("fake-cupti-clock: woke_late_ns=N
 * late_ns=N late_max_ns=N": how much later than asked the host thread
 * woke from the double's waits, in all; the lag, in all and the most one
 * call added).
 * Knobs (environment): FAKE_CUPTI_VERSION=N (cuptiGetVersion),
 * FAKE_CUPTI_FAIL=subscribe|privileges|memory2|driverapi (driverapi:
 * cuptiActivityEnableDriverApi fails), FAKE_CUPTI_DROPPED=N
 * (reported once by cuptiActivityGetNumDroppedRecords), FAKE_CUPTI_SKEW_NS=N
 * (added to GPU times: negative puts kernels before their launch),
 * (fakecupti_malloc_fail: a cudaMalloc that returns out of memory),
 * FAKE_CUPTI_LAUNCH_NS=N (a kernel launch call lasts at least N ns, spent
 * on the CPU as the driver's work for a launch is, and its kernel starts
 * 1 us before the call returns: tests/verdict's launch-bound scenario),
 * FAKE_CUPTI_SYNC_NS=N (a synchronization returns N ns after the work it
 * waits for is done, as a driver's wake-up does; the GPU is idle for that
 * time by construction: tests/verdict's sync-bound scenario; on the
 * double's clock, so exactly N).
 * Mistakes of the client are printed on stderr with "fake-cupti:".
 */
#include <cupti.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define NQUEUE 17 /* 0: API, markers, devices; 1 + stream % 16: device work */
#define MAXPEND 4096

struct fbuf {
	uint8_t *p;
	size_t size, used;
	int queue;
};

struct pend { /* a GPU operation not complete yet */
	uint64_t end;
	int queue;
	size_t size;
	union {
		CUpti_ActivityKernel10 k;
		CUpti_ActivityMemcpy6 c;
		CUpti_ActivityMemset4 s;
	} r;
};

static struct {
	pthread_mutex_t mu;
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc done;
	CUpti_TimestampCallbackFunc ts_cb;
	bool ts_ignored, enabled[64], any_enabled, subscribed, nvtx, finalized, overhead_done;
	bool forked; /* a fork child: CUDA is unusable there, calls do nothing */
	CUpti_ActivityThreadIdType tid_type;
	uint32_t corr, marker_id;
	struct fbuf cur[NQUEUE];
	struct fbuf *full;
	size_t nfull, capfull;
	struct pend pend[MAXPEND];
	size_t npend;
	uint64_t stream_free[64];
	size_t dropped;
	bool dropped_reported;
	int64_t skew;
	uint64_t launch_ns, sync_ns;
	/* the double's clock: the host's less late, never before vlast (the
	 * latest instant handed out); wake_late: FAKE_CUPTI_WAKE_LATE_NS */
	uint64_t late, vlast, wake_late, late_max, woke_late;
	uint64_t woke_at; /* the host's clock when a thread last came back from a blocking call, and which */
	pid_t woke_tid;
	uint64_t own_ns;  /* FAKE_CUPTI_HOST_OWN_NS: own_time() */
	uint64_t events[64]; /* cudaEventRecord: the instant each event completes */
	uint8_t runtime_off[1024], driver_off[1024];
	/* the callback API: the subscriber's function, the runtime calls it is enabled on */
	CUpti_CallbackFunc cb;
	void *cb_ud;
	uint8_t cb_runtime[1024], cb_driver[1024];
	unsigned cb_enabled, cb_domains; /* cbids enabled, whole domains enabled */
	uint64_t cb_fired;
	bool cb_paused;   /* fakecupti_bench_pause_callbacks: none fired (tests/bench/cuda_agent_cost) */
	bool cb_unlocked; /* FAKE_CUPTI_CB_UNLOCKED=1: the subscriber's callback runs outside f.mu, as CUPTI's do */
	uint64_t appended; /* records handed to buffers */
	const char *name_as_is; /* fakecupti_launch_reused_name: the kernel name pointer to give */
} f = { .mu = PTHREAD_MUTEX_INITIALIZER };

static __thread uint32_t nvtx_stack[64];
static __thread int nvtx_depth;

static uint64_t own_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* a different epoch: a client that forgot the callback gets nonsense */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1000000000000000ull;
}

/* The host's clock: the client's timestamp callback. */
static uint64_t host(void)
{
	return f.ts_cb && !f.ts_ignored ? f.ts_cb() : own_clock();
}

/* The double's clock (see the top): the host's less the wake-up delays
 * the model does not count, monotonic.  Caller holds f.mu. */
static uint64_t stamp(void)
{
	uint64_t v = host() - f.late;
	if (v < f.vlast)
		return f.vlast;
	f.vlast = v;
	return v;
}

/*
 * The lag is given back where that changes no instant of the model: a
 * call that does not block (a launch, an asynchronous copy or memset) on a
 * stream busy until 3 us after bound starts its work when the stream is
 * free, whenever it is made before bound, and lasts the host's own time:
 * it may be stamped as late as bound on the double's clock (the callers
 * leave 1 us to spare).  (Not a blocking call: its start is the start of
 * the host's wait.)  Caller holds f.mu, before it stamps the call.
 */
static void repay(uint64_t bound)
{
	uint64_t v = host() - f.late;
	if (!f.late || bound <= v)
		return;
	f.late -= bound - v < f.late ? bound - v : f.late;
}

/*
 * The lag is kept for a call the host thread makes soon after it came
 * back from a blocking one: within FAKE_CUPTI_HOST_OWN_NS (50 us) on the
 * host's clock, as the next launch of a loop that synchronizes each step
 * (.item()).  A thread that took longer, or another thread, may have made
 * events of its own on the host's clock in between (the end of a step:
 * tests/verdict's startup_gemm in exact mode lost a step's first kernel
 * from its iteration beside other jobs) that a lagging stamp would put
 * after this call: the clock goes back to the host's, and the wake-up's
 * delay is host time before the call.  (Counting the thread's CPU time
 * instead, so that a preempted thread keeps the lag, was tried: sync_bound's
 * syncs were 24-28 % of the span in two runs without our hogs on this
 * shared machine, cpu_bound; with the host's clock, 51 and 87 %.)
 */
static void own_time(void)
{
	if (f.late && (gettid() != f.woke_tid || host() - f.woke_at > f.own_ns))
		f.late = 0;
}

/* repay() before a launch or copy on stream s (none with a launch cost: its kernel starts with the call). */
static void repay_stream(uint32_t s)
{
	own_time();
	if (!f.launch_ns && f.stream_free[s % 64] > 4000)
		repay(f.stream_free[s % 64] - 4000); /* 1 us to spare: the host's clock moves on while it stamps */
}

/* A blocking call returns at until on the double's clock: whatever the
 * host took beyond it (it woke up late) is not the double's time. */
static void settle(uint64_t until)
{
	uint64_t h = host();
	if (h - f.late > until) {
		if (h - f.late - until > f.late_max)
			f.late_max = h - f.late - until;
		f.late = h - until;
	}
	if (f.vlast < until)
		f.vlast = until;
}

static uint32_t thread_id(void)
{
	return f.tid_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM ? (uint32_t)gettid() : (uint32_t)pthread_self();
}

static const char *env_fail(void)
{
	const char *s = getenv("FAKE_CUPTI_FAIL");
	return s ? s : "";
}

static size_t record_size(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
	case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
	case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
	case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
	case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
	case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
	case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
	default: return 0;
	}
}

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

/* Appends a record to a queue's buffer, asking the client for a new
 * buffer when it is full; without one the record is dropped and counted.
 * Caller holds f.mu. */
static void append(int queue, const void *rec)
{
	size_t size = record_size(*(const CUpti_ActivityKind *)rec);
	struct fbuf *b = &f.cur[queue];
	if (!f.enabled[*(const CUpti_ActivityKind *)rec] || f.finalized || f.forked)
		return;
	if (b->p && align8(b->used) + size > b->size) {
		if (f.nfull == f.capfull) {
			f.capfull = f.capfull ? f.capfull * 2 : 16;
			f.full = realloc(f.full, f.capfull * sizeof(*f.full));
		}
		f.full[f.nfull++] = *b;
		b->p = NULL;
	}
	if (!b->p) {
		uint8_t *p = NULL;
		size_t sz = 0, max = 0;
		if (f.req)
			f.req(&p, &sz, &max);
		if (!p || sz < size) {
			f.dropped++;
			return;
		}
		if ((uintptr_t)p % 8)
			fprintf(stderr, "fake-cupti: buffer %p is not 8-byte aligned\n", (void *)p);
		*b = (struct fbuf){ p, sz, 0, queue };
	}
	b->used = align8(b->used);
	memcpy(b->p + b->used, rec, size);
	b->used += size;
	f.appended++;
}

/* Operations whose end has passed (all of them when forced: those still
 * running then have no times, like CUPTI's incomplete records) go to
 * their stream's buffer, earliest end first.  Caller holds f.mu. */
static void complete(bool forced)
{
	uint64_t now = stamp();
	for (;;) {
		size_t best = f.npend;
		for (size_t i = 0; i < f.npend; i++)
			if ((forced || f.pend[i].end <= now) && (best == f.npend || f.pend[i].end < f.pend[best].end))
				best = i;
		if (best == f.npend)
			return;
		struct pend *p = &f.pend[best];
		if (p->end > now) {
			uint64_t *se = p->r.k.kind == CUPTI_ACTIVITY_KIND_MEMCPY ? &p->r.c.start
				     : p->r.k.kind == CUPTI_ACTIVITY_KIND_MEMSET ? &p->r.s.start : &p->r.k.start;
			se[0] = se[1] = 0; /* start and end follow each other in the three structs */
		}
		append(p->queue, &p->r);
		f.pend[best] = f.pend[--f.npend];
	}
}

static void pend_add(int queue, uint64_t end, const void *rec)
{
	if (f.npend == MAXPEND)
		complete(true);
	struct pend *p = &f.pend[f.npend++];
	p->queue = queue;
	p->end = end;
	memcpy(&p->r, rec, record_size(*(const CUpti_ActivityKind *)rec));
}

static int stream_queue(uint32_t stream)
{
	return 1 + (int)(stream % 16);
}

/* The GPU side of an operation on a stream: starts when the stream is
 * free and at least 3 us after the call started; returns its start. */
static uint64_t gpu_start(uint32_t stream, uint64_t call, uint64_t dur)
{
	uint64_t s = call + 3000;
	if (f.stream_free[stream % 64] > s)
		s = f.stream_free[stream % 64];
	f.stream_free[stream % 64] = s + dur;
	return s;
}

static uint32_t api_error; /* returnValue of the next API records (a failing call) */

static void api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start, uint64_t end, uint32_t corr)
{
	if ((kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid < 1024 && f.runtime_off[cbid]) ||
	    (kind == CUPTI_ACTIVITY_KIND_DRIVER && cbid < 1024 && f.driver_off[cbid]))
		return;
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.cbid = cbid;
	a.start = start;
	a.end = end;
	a.processId = (uint32_t)getpid();
	a.threadId = thread_id();
	a.correlationId = corr;
	a.returnValue = api_error;
	append(0, &a);
}

/* The subscriber's callback at the entry of call cbid of domain dom, when enabled on it (sample mode). */
static void fire(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, uint32_t corr)
{
	const uint8_t *on = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? f.cb_runtime : f.cb_driver;
	if (!f.cb || cbid >= 1024 || !on[cbid] || f.forked || f.cb_paused)
		return;
	CUpti_CallbackData d;
	memset(&d, 0, sizeof(d));
	d.callbackSite = CUPTI_API_ENTER;
	d.correlationId = corr;
	d.functionName = "fake";
	f.cb_fired++;
	/* Real CUPTI runs the callbacks of calls on several threads at once; by
	 * default the double runs them under its lock (one at a time), with
	 * FAKE_CUPTI_CB_UNLOCKED=1 as CUPTI does (the agent's lock-free path
	 * under concurrency).  The caller's state is its locals; the double's
	 * may move on meanwhile, as a driver's does. */
	if (f.cb_unlocked)
		pthread_mutex_unlock(&f.mu);
	f.cb(f.cb_ud, dom, cbid, &d);
	if (f.cb_unlocked)
		pthread_mutex_lock(&f.mu);
}

/* A runtime call wrapping a driver call, [t0, t1]: t1 0 is now (after
 * the subscriber's callback ran), else the instant a blocking call returns. */
static uint32_t calls_until(CUpti_CallbackId rt, CUpti_CallbackId drv, uint64_t t0, uint64_t t1)
{
	uint32_t corr = ++f.corr;
	fire(CUPTI_CB_DOMAIN_RUNTIME_API, rt, corr);
	fire(CUPTI_CB_DOMAIN_DRIVER_API, drv, corr);
	if (!t1)
		t1 = stamp();
	api(CUPTI_ACTIVITY_KIND_DRIVER, drv, t0 + (t1 - t0) / 4, t1 - (t1 - t0) / 4, corr);
	api(CUPTI_ACTIVITY_KIND_RUNTIME, rt, t0, t1, corr);
	return corr;
}

static uint32_t calls(CUpti_CallbackId rt, CUpti_CallbackId drv, uint64_t t0)
{
	return calls_until(rt, drv, t0, 0);
}

/* ---- the simulated GPU, driven by fake_cuda.c -------------------------- */

static const char *keep(const char *s)
{
	static struct { char *s; } names[256];
	for (int i = 0; i < 256; i++) {
		if (!names[i].s) {
			names[i].s = strdup(s);
			return names[i].s;
		}
		if (!strcmp(names[i].s, s))
			return names[i].s;
	}
	return "overflow";
}

static void kernel(const char *name, uint32_t stream, uint64_t call, uint64_t dur, uint32_t corr,
		   const int grid[3], const int block[3], uint32_t graph)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.registersPerThread = 32;
	k.start = gpu_start(stream, call, dur) + (uint64_t)f.skew;
	k.end = k.start + dur;
	k.completed = k.end;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = stream;
	k.gridX = grid[0];
	k.gridY = grid[1];
	k.gridZ = grid[2];
	k.blockX = block[0];
	k.blockY = block[1];
	k.blockZ = block[2];
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 3072;
	k.correlationId = corr;
	k.name = f.name_as_is ? f.name_as_is : keep(name);
	k.graphId = graph;
	pend_add(stream_queue(stream), k.end - (uint64_t)f.skew, &k);
}

/* The CPU cost of a launch call (FAKE_CUPTI_LAUNCH_NS): spins until t0 +
 * ns, on the host's clock as the double's counts it; a thread preempted
 * meanwhile comes back late, which the double's clock leaves out. */
static void launch_cost(uint64_t t0)
{
	if (!f.launch_ns)
		return;
	while (host() - f.late < t0 + f.launch_ns)
		;
	settle(t0 + f.launch_ns);
}

EXPORT void fakecupti_launch(const char *name, uint32_t stream, uint64_t dur, const int *grid, const int *block)
{
	static const int g1[3] = { 1, 1, 1 };
	pthread_mutex_lock(&f.mu);
	repay_stream(stream);
	uint64_t t0 = stamp();
	api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, t0, t0 + 100, ++f.corr);
	launch_cost(t0);
	uint32_t corr = calls(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, t0);
	/* with a launch cost, the kernel starts 1 us before the call returns,
	 * as in real traces (the 3 us of gpu_start counted back) */
	kernel(name, stream, f.launch_ns > 4000 ? t0 + f.launch_ns - 4000 : t0, dur, corr, grid ? grid : g1,
	       block ? block : g1, 0);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

/* A kernel launched through the driver API alone (cuLaunchKernel as Triton
 * does, cuLaunchKernelEx as cuBLAS does: cbid): no runtime call. */
static void launch_driver(CUpti_CallbackId cbid, const char *name, uint32_t stream, uint64_t dur)
{
	static const int g1[3] = { 1, 1, 1 };
	pthread_mutex_lock(&f.mu);
	repay_stream(stream);
	uint64_t t0 = stamp();
	uint32_t corr = ++f.corr;
	fire(CUPTI_CB_DOMAIN_DRIVER_API, cbid, corr);
	api(CUPTI_ACTIVITY_KIND_DRIVER, cbid, t0, stamp() + 500, corr);
	kernel(name, stream, t0, dur, corr, g1, g1, 0);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

/*
 * A launch whose kernel name CUPTI gives at the same address as the last
 * such launch's, with the new text: a module unloaded and another loaded
 * where it was (the agent caches names by CUPTI's pointer).  The caller
 * flushes the records of one before the next (one thread).
 */
EXPORT void fakecupti_launch_reused_name(const char *name, uint32_t stream, uint64_t dur)
{
	static char at[256];
	snprintf(at, sizeof(at), "%s", name);
	f.name_as_is = at;
	fakecupti_launch(at, stream, dur, NULL, NULL);
	f.name_as_is = NULL;
}

EXPORT void fakecupti_launch_driver(const char *name, uint32_t stream, uint64_t dur)
{
	launch_driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, name, stream, dur);
}

EXPORT void fakecupti_launch_driver_ex(const char *name, uint32_t stream, uint64_t dur)
{
	launch_driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, name, stream, dur);
}

EXPORT void fakecupti_graph_launch(int n, uint32_t stream, uint64_t dur)
{
	static const int g1[3] = { 2, 1, 1 }, b1[3] = { 64, 1, 1 };
	pthread_mutex_lock(&f.mu);
	repay_stream(stream);
	uint64_t t0 = stamp();
	uint32_t corr = calls(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, t0);
	for (int i = 0; i < n; i++)
		kernel("graph_node_kernel", stream, t0, dur, corr, g1, b1, 7);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

/* Waits, with the lock released, until the double's clock passes until
 * (one sleep to 200 us before it, then a spin, as the CUDA driver spins
 * in a synchronous call), then settles the clock at until: the call
 * returns then, whenever the host thread really woke up.  (It took the
 * host's instant of waking, as it was: each 3.4 ms copy of tests/verdict's
 * transfer_bound returned 56 us after the copy ended at the median beside
 * other CPU-bound jobs, and sync_bound's idle followed the host's load.)
 * FAKE_CUPTI_WAKE_LATE_NS=N: wakes N ns late on purpose. */
static void wait_until(uint64_t until)
{
	uint64_t target = until + f.late + f.wake_late;
	pthread_mutex_unlock(&f.mu);
	uint64_t now = host();
	if (target > now + 200000) {
		uint64_t ns = target - now - 200000;
		struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
		nanosleep(&ts, NULL);
	}
	while ((now = host()) < target)
		;
	pthread_mutex_lock(&f.mu);
	f.woke_late += now - (target - f.wake_late); /* the premise, measured on the host's clock */
	settle(until);
	f.woke_at = host();
	f.woke_tid = gettid();
}

/* 10 GB/s: bytes / 10 ns.  A synchronous copy returns when it is done. */
EXPORT void fakecupti_memcpy(uint64_t bytes, uint8_t copy_kind, uint8_t src, uint8_t dst, uint32_t stream, int async)
{
	pthread_mutex_lock(&f.mu);
	if (async)
		repay_stream(stream);
	else
		own_time();
	uint64_t t0 = stamp(), dur = bytes / 10 + 1000;
	uint64_t start = gpu_start(stream, t0, dur);
	if (!async)
		wait_until(start + dur);
	uint32_t corr = async ? calls(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, t0)
			      : calls_until(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, t0,
					    start + dur);
	CUpti_ActivityMemcpy6 c;
	memset(&c, 0, sizeof(c));
	c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	c.copyKind = copy_kind;
	c.srcKind = src;
	c.dstKind = dst;
	c.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
	c.bytes = bytes;
	c.start = start + (uint64_t)f.skew;
	c.end = c.start + dur;
	c.deviceId = 0;
	c.contextId = 1;
	c.streamId = stream;
	c.correlationId = corr;
	c.runtimeCorrelationId = corr;
	c.copyCount = 1;
	pend_add(stream_queue(stream), c.end - (uint64_t)f.skew, &c);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_memset(uint64_t bytes, uint32_t stream)
{
	pthread_mutex_lock(&f.mu);
	repay_stream(stream);
	uint64_t t0 = stamp(), dur = bytes / 20 + 500;
	uint32_t corr = calls(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, t0);
	CUpti_ActivityMemset4 s;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.value = 0;
	s.bytes = bytes;
	s.start = gpu_start(stream, t0, dur) + (uint64_t)f.skew;
	s.end = s.start + dur;
	s.deviceId = 0;
	s.contextId = 1;
	s.streamId = stream;
	s.correlationId = corr;
	s.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
	s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	pend_add(stream_queue(stream), s.end - (uint64_t)f.skew, &s);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

/* The synchronizations: of one stream, of the whole device (every
 * stream) or of an event (the work its stream had when it was recorded).
 * The call returns, on the double's clock, when that work is done and
 * FAKE_CUPTI_SYNC_NS more (the driver's wake-up), or 1 us after it began
 * when the work was done already: an instant of the model, not of the
 * host's waking. */
enum sync_what { SYNC_STREAM, SYNC_DEVICE, SYNC_EVENT };

static void sync_(enum sync_what what, uint32_t id)
{
	static const struct { CUpti_CallbackId rt, drv; CUpti_ActivitySynchronizationType type; } k[] = {
		[SYNC_STREAM] = { CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
				  CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
				  CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE },
		[SYNC_DEVICE] = { CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
				  CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
				  CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE },
		[SYNC_EVENT] = { CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
				 CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
				 CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE },
	};
	pthread_mutex_lock(&f.mu);
	uint64_t t0, until;
	own_time();
	if (what == SYNC_EVENT) {
		until = f.events[id % 64];
	} else {
		until = f.stream_free[id % 64];
		if (what == SYNC_DEVICE)
			for (int i = 0; i < 64; i++)
				if (f.stream_free[i] > until)
					until = f.stream_free[i];
	}
	t0 = stamp();
	uint64_t ret = until + f.sync_ns > t0 + 1000 ? until + f.sync_ns : t0 + 1000;
	wait_until(ret);
	uint32_t corr = calls_until(k[what].rt, k[what].drv, t0, ret);
	CUpti_ActivitySynchronization2 s;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = k[what].type;
	s.start = t0 + 500;
	s.end = ret;
	s.correlationId = corr;
	s.contextId = 1;
	s.streamId = what == SYNC_STREAM ? id : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	s.cudaEventId = what == SYNC_EVENT ? id : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	s.cudaEventSyncId = 0;
	append(0, &s);
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_sync(uint32_t stream)
{
	sync_(SYNC_STREAM, stream);
}

EXPORT void fakecupti_device_sync(void)
{
	sync_(SYNC_DEVICE, 0);
}

/* cudaEventRecord(event, stream): the event completes when the work queued
 * on the stream so far is done. */
EXPORT void fakecupti_event_record(uint32_t event, uint32_t stream)
{
	pthread_mutex_lock(&f.mu);
	uint64_t t0 = stamp();
	calls(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, t0);
	f.events[event % 64] = f.stream_free[stream % 64];
	complete(false);
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_event_sync(uint32_t event)
{
	sync_(SYNC_EVENT, event);
}

/* A call that queues no GPU work (cudaMalloc, cudaFree) puts the double's
 * clock back on the host's: its records are what the analysis places among
 * the host's own spans (the iteration a device allocation belongs to:
 * tests/gpu/memory.bats), which a lagging clock would move before the
 * scope that made them.  The lag is given back to the host there, so a gap
 * before the next kernel holds the host's wake-up delays since the last
 * such call: none in the verdict scenarios without device memory calls. */
static void reanchor(void)
{
	f.late = 0;
}

static void memory(CUpti_ActivityMemoryOperationType op, uint64_t bytes, uint64_t address)
{
	reanchor();
	uint64_t t0 = stamp();
	uint32_t corr = op == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
				? calls(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, t0)
				: calls(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, t0);
	CUpti_ActivityMemory4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = op;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.correlationId = corr;
	m.address = address;
	m.bytes = bytes;
	m.timestamp = t0 + 200;
	m.processId = (uint32_t)getpid();
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	append(0, &m);
}

EXPORT void fakecupti_malloc(uint64_t bytes, uint64_t address)
{
	pthread_mutex_lock(&f.mu);
	memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, bytes, address);
	pthread_mutex_unlock(&f.mu);
}

/* A cudaMalloc that fails for want of memory: cudaErrorMemoryAllocation (2)
 * from the runtime, CUDA_ERROR_OUT_OF_MEMORY (2) from the driver, and, as
 * with CUPTI, no MEMORY2 record (nothing was allocated). */
EXPORT void fakecupti_malloc_fail(uint64_t bytes)
{
	(void)bytes; /* CUPTI's API records carry no size */
	pthread_mutex_lock(&f.mu);
	api_error = 2;
	reanchor();
	calls(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, stamp());
	api_error = 0;
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_free(uint64_t bytes, uint64_t address)
{
	pthread_mutex_lock(&f.mu);
	memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, bytes, address);
	pthread_mutex_unlock(&f.mu);
}

/* NVTX: does nothing unless InitializeInjectionNvtx2 was called, as with
 * the real NVTX library. */
EXPORT void fakecupti_nvtx_push(const char *name)
{
	pthread_mutex_lock(&f.mu);
	if (f.nvtx && nvtx_depth < 64) {
		CUpti_ActivityMarker2 m;
		CUpti_ActivityMarkerData2 d;
		memset(&m, 0, sizeof(m));
		memset(&d, 0, sizeof(d));
		m.kind = CUPTI_ACTIVITY_KIND_MARKER;
		m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
		m.timestamp = stamp();
		m.id = ++f.marker_id;
		m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
		m.objectId.pt.processId = (uint32_t)getpid();
		m.objectId.pt.threadId = thread_id();
		m.name = keep(name);
		m.domain = keep("fake.domain");
		append(0, &m);
		d.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
		d.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
		d.id = m.id;
		d.color = 0xFF76B900;
		d.category = 3;
		append(0, &d);
		nvtx_stack[nvtx_depth++] = m.id;
	}
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_nvtx_pop(void)
{
	pthread_mutex_lock(&f.mu);
	if (f.nvtx && nvtx_depth > 0) {
		CUpti_ActivityMarker2 m;
		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MARKER;
		m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
		m.timestamp = stamp();
		m.id = nvtx_stack[--nvtx_depth];
		m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
		m.objectId.pt.processId = (uint32_t)getpid();
		m.objectId.pt.threadId = thread_id();
		append(0, &m);
	}
	pthread_mutex_unlock(&f.mu);
}

/* A driver call of callback id cbid alone, 100 ns (recorded when its kind and id are on). */
EXPORT void fakecupti_driver_call(uint32_t cbid)
{
	pthread_mutex_lock(&f.mu);
	uint64_t t0 = stamp();
	uint32_t corr = ++f.corr;
	fire(CUPTI_CB_DOMAIN_DRIVER_API, cbid, corr);
	api(CUPTI_ACTIVITY_KIND_DRIVER, cbid, t0, t0 + 100, corr);
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_name_thread(const char *name)
{
	pthread_mutex_lock(&f.mu);
	CUpti_ActivityName n;
	memset(&n, 0, sizeof(n));
	n.kind = CUPTI_ACTIVITY_KIND_NAME;
	n.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	n.objectId.pt.processId = (uint32_t)getpid();
	n.objectId.pt.threadId = thread_id();
	n.name = keep(name);
	append(0, &n);
	pthread_mutex_unlock(&f.mu);
}

/* Device and context records, as the driver reports them at cuInit. */
EXPORT void fakecupti_driver_init(void)
{
	pthread_mutex_lock(&f.mu);
	CUpti_ActivityDevice5 d;
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.globalMemoryBandwidth = 1555000000; /* KB/s */
	d.globalMemorySize = 40ull << 30;
	d.numMultiprocessors = 108;
	d.computeCapabilityMajor = 8;
	d.computeCapabilityMinor = 0;
	d.id = 0;
	for (int i = 0; i < 16; i++)
		d.uuid.bytes[i] = (char)(0x10 + i);
	d.name = "Fake GPU 0";
	append(0, &d);
	CUpti_ActivityContext3 c;
	memset(&c, 0, sizeof(c));
	c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	c.contextId = 1;
	c.deviceId = 0;
	c.nullStreamId = 7;
	append(0, &c);
	pthread_mutex_unlock(&f.mu);
}

/* ---- the CUPTI entry points the agent calls --------------------------- */

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	const char *v = getenv("FAKE_CUPTI_VERSION");
	*version = v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	switch (result) {
	case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
	case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
	default: *str = "CUPTI_ERROR_UNKNOWN"; break;
	}
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata)
{
	if (!strcmp(env_fail(), "subscribe") || f.subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	f.subscribed = true;
	f.cb = callback;
	f.cb_ud = userdata;
	*subscriber = (CUpti_SubscriberHandle)&f;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	(void)subscriber;
	f.subscribed = false;
	f.cb = NULL;
	return CUPTI_SUCCESS;
}

/* Runtime and driver calls are simulated: a callback on any other domain counts, never fires. */
EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
				       CUpti_CallbackId cbid)
{
	(void)subscriber;
	if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) && cbid < 1024) {
		uint8_t *on = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? f.cb_runtime : f.cb_driver;
		f.cb_enabled += enable && !on[cbid];
		on[cbid] = enable != 0;
	} else {
		f.cb_enabled += enable != 0;
	}
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain)
{
	(void)subscriber;
	f.cb_domains += enable != 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		memset(f.cb_runtime, enable != 0, sizeof(f.cb_runtime));
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
		memset(f.cb_driver, enable != 0, sizeof(f.cb_driver));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	f.tid_type = type;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	if (!fn)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (f.any_enabled) {
		fprintf(stderr, "fake-cupti: timestamp callback registered after a kind was enabled: ignored\n");
		f.ts_ignored = true;
	}
	f.ts_cb = fn;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						   CUpti_BuffersCallbackCompleteFunc done)
{
	if (!req || !done)
		return CUPTI_ERROR_INVALID_PARAMETER;
	f.req = req;
	f.done = done;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (!strcmp(env_fail(), "privileges"))
		return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
	if (!strcmp(env_fail(), "memory2") && kind == CUPTI_ACTIVITY_KIND_MEMORY2)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (kind == CUPTI_ACTIVITY_KIND_KERNEL)
		fprintf(stderr, "fake-cupti: CUPTI_ACTIVITY_KIND_KERNEL serializes kernels\n");
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	f.enabled[kind] = true;
	f.any_enabled = true;
	/* the kind switches every call of its API back on (cupti_activity.h) */
	if (kind == CUPTI_ACTIVITY_KIND_RUNTIME)
		memset(f.runtime_off, 0, sizeof(f.runtime_off));
	if (kind == CUPTI_ACTIVITY_KIND_DRIVER)
		memset(f.driver_off, 0, sizeof(f.driver_off));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind < 64)
		f.enabled[kind] = false;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid < 1024)
		f.runtime_off[cbid] = !enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (!strcmp(env_fail(), "driverapi"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (cbid < 1024)
		f.driver_off[cbid] = !enable;
	return CUPTI_SUCCESS;
}

/* Hands every buffer with records to the client, device queues first. */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	pthread_mutex_lock(&f.mu);
	if (!f.done || f.finalized) {
		pthread_mutex_unlock(&f.mu);
		return CUPTI_SUCCESS;
	}
	complete(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (!f.overhead_done && f.enabled[CUPTI_ACTIVITY_KIND_OVERHEAD]) {
		CUpti_ActivityOverhead3 o;
		memset(&o, 0, sizeof(o));
		o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
		o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
		o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
		o.objectId.pt.processId = (uint32_t)getpid();
		o.objectId.pt.threadId = thread_id();
		o.start = stamp();
		o.end = o.start + 1500;
		append(0, &o);
		f.overhead_done = true;
	}
	for (int q = NQUEUE - 1; q >= 0; q--)
		if (f.cur[q].p && f.cur[q].used) {
			if (f.nfull == f.capfull) {
				f.capfull = f.capfull ? f.capfull * 2 : 16;
				f.full = realloc(f.full, f.capfull * sizeof(*f.full));
			}
			f.full[f.nfull++] = f.cur[q];
			f.cur[q].p = NULL;
		}
	struct fbuf *list = f.full;
	size_t n = f.nfull;
	f.full = NULL;
	f.nfull = f.capfull = 0;
	CUpti_BuffersCallbackCompleteFunc done = f.done;
	pthread_mutex_unlock(&f.mu);
	for (size_t i = 0; i < n; i++)
		done(NULL, list[i].queue ? (uint32_t)list[i].queue - 1 : 0, list[i].p, list[i].size, list[i].used);
	free(list);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	size_t off = 0;
	if (*record) {
		off = (size_t)((uint8_t *)*record - buffer);
		off = align8(off + record_size((*record)->kind));
	}
	if (off >= valid || record_size(((CUpti_Activity *)(buffer + off))->kind) == 0)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + off);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped)
{
	(void)context;
	(void)stream;
	pthread_mutex_lock(&f.mu);
	if (!f.dropped_reported) {
		const char *s = getenv("FAKE_CUPTI_DROPPED");
		f.dropped += s ? strtoul(s, NULL, 10) : 0;
		f.dropped_reported = true;
	}
	*dropped = f.dropped;
	f.dropped = 0;
	pthread_mutex_unlock(&f.mu);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	static const struct { CUpti_CallbackDomain d; uint32_t id; const char *name; } names[] = {
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch_v10000" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize_v3020" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, "cuEventRecord" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc_v3020" },
		{ CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree_v3020" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, "cuMemcpyAsync" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, "cuMemcpy" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2" },
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2" },
		/* the callback id of cudaLaunchKernel's runtime call (211) in the driver's domain */
		{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuD3D10GetDevices, "cuD3D10GetDevices" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].d == domain && names[i].id == cbid) {
			*name = names[i].name;
			return CUPTI_SUCCESS;
		}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult cuptiFinalize(void)
{
	pthread_mutex_lock(&f.mu);
	f.finalized = true;
	pthread_mutex_unlock(&f.mu);
	return CUPTI_SUCCESS;
}

/* NVTX_INJECTION64_PATH -> (the agent) -> here: NVTX calls now reach us. */
EXPORT int InitializeInjectionNvtx2(const void *get_export_table)
{
	(void)get_export_table;
	f.nvtx = true;
	return 1;
}

static void atfork_child(void)
{
	pthread_mutex_init(&f.mu, NULL);
	f.forked = true;
}

/* For tests/bench/cuda_agent_cost: callbacks paused or not (the same
 * launches with and without the subscriber's callback), and how many
 * records went to buffers and callbacks ran so far. */
EXPORT void fakecupti_bench_pause_callbacks(int paused)
{
	pthread_mutex_lock(&f.mu);
	f.cb_paused = paused != 0;
	pthread_mutex_unlock(&f.mu);
}

/* n runtime launch callbacks and nothing else (paused: none), each with a correlation id of its own. */
EXPORT void fakecupti_bench_fire(int n)
{
	pthread_mutex_lock(&f.mu);
	for (int i = 0; i < n; i++)
		fire(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, ++f.corr);
	pthread_mutex_unlock(&f.mu);
}

EXPORT void fakecupti_bench_counts(uint64_t *records, uint64_t *fired)
{
	pthread_mutex_lock(&f.mu);
	*records = f.appended;
	*fired = f.cb_fired;
	pthread_mutex_unlock(&f.mu);
}

/* FAKE_CUPTI_STATS=1: what the client asked of the callback API, and how often it ran, at exit. */
__attribute__((destructor)) static void fake_stats(void)
{
	if (getenv("FAKE_CUPTI_STATS") && !f.forked)
	{
		fprintf(stderr, "fake-cupti-stats: callbacks enabled=%u domains=%u fired=%llu\n", f.cb_enabled, f.cb_domains,
			(unsigned long long)f.cb_fired);
		fprintf(stderr, "fake-cupti-clock: woke_late_ns=%llu late_ns=%llu late_max_ns=%llu\n",
			(unsigned long long)f.woke_late, (unsigned long long)f.late, (unsigned long long)f.late_max);
	}
}

__attribute__((constructor)) static void fake_init(void)
{
	const char *s = getenv("FAKE_CUPTI_SKEW_NS");
	f.skew = s ? strtoll(s, NULL, 10) : 0;
	s = getenv("FAKE_CUPTI_LAUNCH_NS");
	f.launch_ns = s ? strtoull(s, NULL, 10) : 0;
	s = getenv("FAKE_CUPTI_SYNC_NS");
	f.sync_ns = s ? strtoull(s, NULL, 10) : 0;
	s = getenv("FAKE_CUPTI_HOST_OWN_NS");
	f.own_ns = s ? strtoull(s, NULL, 10) : 50000;
	s = getenv("FAKE_CUPTI_WAKE_LATE_NS");
	f.wake_late = s ? strtoull(s, NULL, 10) : 0;
	s = getenv("FAKE_CUPTI_CB_UNLOCKED");
	f.cb_unlocked = s && !strcmp(s, "1");
	pthread_atfork(NULL, NULL, atfork_child);
}
