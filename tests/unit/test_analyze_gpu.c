/*
 * test_analyze_gpu.c - gpu.* of iscope-analyze (analyze_gpu.c) on synthetic
 * timelines whose answers are worked out by hand in the comments: temporal
 * and idle breakdowns, launch statistics, queue length, kernel, memcpy and
 * sync tables, host activity while the GPU is idle, the --hta-compat
 * ProfilerStep rule and rounding, bounded launch bookkeeping, the report.
 *
 * Timelines are written with the library's container writer as in
 * test_analyze.c: FILE_HEADER (ISTL), one TL_STRINGS chunk per string,
 * TL_EVENTS chunks starting with TL_CTX, an END chunk.  Times are in µs
 * through U() unless a test is about sub-µs times.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"
#include "isc_trace_int.h"
#include "tap.h"
#include "tlwrite.h"

#define U(x) ((uint64_t)(x) * 1000u)
#define HOST 100 /* pid = tid of the host thread */

/* ---- timeline builder ----------------------------------------------------- */
struct tl {
	struct isc_writer *w;
	struct isc_buf ev;
	uint64_t base, last, next_span, nevents, stack[64];
	unsigned depth;
	uint32_t pid, tid;
	bool open, ctx;
	uint64_t status; /* the workload's exit status (END_STATS) */
};

static void tl_open(struct tl *t, FILE *f)
{
	struct isc_tl_header h;
	memset(t, 0, sizeof(*t));
	memset(&h, 0, sizeof(h));
	strcpy(h.host, "gpuhost");
	strcpy(h.cmdline, "python3 serve.py");
	h.ncpu = 8;
	h.epoch_realtime_ns = 1700000000000000000ull; /* whole µs: --hta-compat rounds on this grid */
	tlw_open(&t->w, f, &h);
	t->next_span = 1;
}

static void tl_string(struct tl *t, uint32_t id, uint8_t kind, uint32_t line, const char *name, const char *file)
{
	tlw_string(t->w, id, kind, line, name, file);
}

/* Appends one record of context (pid, tid) with body r. */
static void tl_put(struct tl *t, uint8_t type, uint64_t ts, uint32_t pid, uint32_t tid, const struct isc_buf *r)
{
	if (!t->open) {
		t->open = true;
		t->base = t->last = ts;
	}
	if (!t->ctx || pid != t->pid || tid != t->tid) {
		struct isc_buf c = { 0 };
		isc_buf_put_varint(&c, pid);
		isc_buf_put_varint(&c, tid);
		isc_buf_put_record(&t->ev, ISC_REC_TL_CTX, ts, &t->last, c.data, c.len);
		isc_buf_free(&c);
		t->pid = pid;
		t->tid = tid;
		t->ctx = true;
	}
	isc_buf_put_record(&t->ev, type, ts, &t->last, r->data, r->len);
	t->nevents++;
}

static void tl_begin(struct tl *t, uint64_t ts, uint8_t kind, uint32_t name)
{
	struct isc_buf r = { 0 };
	uint64_t id = t->next_span++, f[5] = { id, t->depth ? t->stack[t->depth - 1] : 0, t->depth, kind, name };
	for (int i = 0; i < 5; i++)
		isc_buf_put_varint(&r, f[i]);
	tl_put(t, ISC_REC_TL_SPAN_BEGIN, ts, HOST, HOST, &r);
	t->stack[t->depth++] = id;
	isc_buf_free(&r);
}

static void tl_end(struct tl *t, uint64_t ts)
{
	struct isc_buf r = { 0 };
	isc_buf_put_varint(&r, t->stack[--t->depth]);
	isc_buf_put_varint(&r, 0);
	tl_put(t, ISC_REC_TL_SPAN_END, ts, HOST, HOST, &r);
	isc_buf_free(&r);
}

/* An API call [ts, ts + dur) of kind api (1 runtime, 2 driver) on thread tid of the host process. */
static void tl_api_kind(struct tl *t, uint32_t tid, uint8_t api, uint64_t ts, uint64_t dur, uint32_t name, uint64_t corr)
{
	struct isc_tl_event ev = { .type = ISC_REC_GPU_API, .name_id = name };
	struct isc_buf r = { 0 };
	ev.gpu.dur_ns = dur;
	ev.gpu.correlation = corr;
	ev.gpu.kind = api;
	if (isc_gpu_encode(&r, &ev))
		abort();
	tl_put(t, ISC_REC_GPU_API, ts, HOST, tid, &r);
	isc_buf_free(&r);
}

/* A launch (or any) runtime API call [ts, ts + dur) on thread tid of the host process. */
static void tl_api_on(struct tl *t, uint32_t tid, uint64_t ts, uint64_t dur, uint32_t name, uint64_t corr)
{
	tl_api_kind(t, tid, 1, ts, dur, name, corr);
}

static void tl_api(struct tl *t, uint64_t ts, uint64_t dur, uint32_t name, uint64_t corr)
{
	tl_api_on(t, HOST, ts, dur, name, corr);
}

struct op {
	uint32_t device, stream;
	uint8_t kind;
	uint32_t name;
	uint64_t dur, corr, bytes;
	uint8_t copy_kind, src, dst;
	uint32_t flags;
	uint32_t api_tid; /* with link_gap: linked by the merge to its call on api_tid */
	int64_t link_gap;
};

/* A GPU op on device o.device (default 0) starting at ts. */
static void tl_op(struct tl *t, uint64_t ts, struct op o)
{
	struct isc_tl_event ev = { .type = ISC_REC_GPU_OP, .name_id = o.name };
	struct isc_buf r = { 0 };
	ev.gpu = (struct isc_gpu_fields){ .device = o.device, .stream = o.stream, .kind = o.kind, .dur_ns = o.dur,
					  .correlation = o.corr, .bytes = o.bytes, .copy_kind = o.copy_kind,
					  .src_mem = o.src, .dst_mem = o.dst, .flags = o.flags,
					  .has_link = o.api_tid != 0, .api_tid = o.api_tid, .launch_gap_ns = o.link_gap };
	if (isc_gpu_encode(&r, &ev))
		abort();
	tl_put(t, ISC_REC_GPU_OP, ts, 0, 0, &r);
	isc_buf_free(&r);
}

static void tl_device(struct tl *t, uint32_t id, const char *name)
{
	struct isc_buf r = { 0 };
	uint64_t f[6] = { id, 108, 40ull << 30, 8, 0, 0 };
	for (int i = 0; i < 6; i++)
		isc_buf_put_varint(&r, f[i]);
	isc_buf_put(&r, name, strlen(name));
	tl_put(t, ISC_REC_DEVICE, t->last, 0, 0, &r);
	isc_buf_free(&r);
}

/* A record of n varint fields f (GPU_SAMPLE, GPU_INFO, GPU_MEMORY...), of no thread. */
static void tl_raw(struct tl *t, uint8_t type, uint64_t ts, const uint64_t *f, unsigned n)
{
	struct isc_buf r = { 0 };
	for (unsigned i = 0; i < n; i++)
		isc_buf_put_varint(&r, f[i]);
	tl_put(t, type, ts, 0, 0, &r);
	isc_buf_free(&r);
}

static void tl_close(struct tl *t)
{
	struct isc_buf b = { 0 }, r = { 0 };
	uint64_t ts = 0, f[5] = { t->nevents, 0, 0, 0, t->status };
	if (t->open)
		tlw_chunk(t->w, ISC_CHUNK_TL_EVENTS, t->base, &t->ev);
	for (int i = 0; i < 5; i++)
		isc_buf_put_varint(&r, f[i]);
	isc_buf_put_record(&b, ISC_REC_END_STATS, 0, &ts, r.data, r.len);
	tlw_chunk(t->w, ISC_CHUNK_END, 0, &b);
	isc_writer_flush(t->w);
	isc_writer_free(t->w);
	isc_buf_free(&b);
	isc_buf_free(&r);
	isc_buf_free(&t->ev);
}

static cJSON *analyze(FILE *f, bool hta)
{
	struct isc_timeline *t = NULL;
	struct isc_analyze_opts o = { .hta_compat = hta };
	cJSON *doc = NULL;
	int rc;
	rewind(f);
	isc_err_clear();
	if ((rc = isc_timeline_open(&t, f)) == 0)
		rc = isc_analyze_timeline(t, &o, &doc);
	if (rc)
		printf("# analyze: %d %s\n", rc, isc_err_msg());
	isc_timeline_free(t);
	return doc;
}

static double N(const cJSON *d, const char *path)
{
	double v = NAN;
	isc_doc_have(d, path, &v);
	return v;
}

static const char *S(const cJSON *d, const char *path)
{
	const char *s = isc_doc_str(d, path, NULL);
	return s ? s : "";
}

/* Item i of the array at path. */
static const cJSON *at(const cJSON *d, const char *path, int i)
{
	return cJSON_GetArrayItem(isc_doc_get(d, path), i);
}

enum {
	S_GEMM = 1, S_NCCL, S_MEMCPY, S_SSYNC, S_CSYNC, S_LAUNCH, S_MCPYA, S_SSYNCA, S_DSYNCA, S_FEED, S_COPY, S_SMALL,
	S_WAIT, S_TEAR, S_STEP1, S_STEP2, S_STEP3, S_GRAPH, S_EVREC, S_MEMSET, S_MCPY, S_CUMCPY, S_ESYNCA,
	S_PINNED, S_DTOH, S_INNER, S_BUILTIN, S_CULAUNCH, S_SCOPE_STEP, S_MALLOC, S_FREE, S_CUCOOP,
};

static void strings(struct tl *t)
{
	tl_string(t, S_GEMM, ISC_STR_CFUNC, 0, "gemm_kernel", "");
	tl_string(t, S_NCCL, ISC_STR_CFUNC, 0, "ncclKernel_AllReduce_RING", "");
	tl_string(t, S_MEMCPY, ISC_STR_CFUNC, 0, "Memcpy HtoD (Pageable -> Device)", "");
	tl_string(t, S_SSYNC, ISC_STR_CFUNC, 0, "Stream Sync", "");
	tl_string(t, S_CSYNC, ISC_STR_CFUNC, 0, "Context Sync", "");
	tl_string(t, S_LAUNCH, ISC_STR_CFUNC, 0, "cudaLaunchKernel", "");
	tl_string(t, S_MCPYA, ISC_STR_CFUNC, 0, "cudaMemcpyAsync", "");
	tl_string(t, S_SSYNCA, ISC_STR_CFUNC, 0, "cudaStreamSynchronize", "");
	tl_string(t, S_DSYNCA, ISC_STR_CFUNC, 0, "cudaDeviceSynchronize", "");
	tl_string(t, S_FEED, ISC_STR_CODE, 10, "feed", "serve.py");
	tl_string(t, S_COPY, ISC_STR_CFUNC, 0, "aten::copy_", "");
	tl_string(t, S_SMALL, ISC_STR_CFUNC, 0, "small_kernel", "");
	tl_string(t, S_WAIT, ISC_STR_CODE, 20, "wait_loop", "serve.py");
	tl_string(t, S_TEAR, ISC_STR_CODE, 30, "teardown", "serve.py");
	tl_string(t, S_STEP1, ISC_STR_SCOPE, 0, "ProfilerStep#1", "");
	tl_string(t, S_STEP2, ISC_STR_SCOPE, 0, "ProfilerStep#2", "");
	tl_string(t, S_STEP3, ISC_STR_SCOPE, 0, "ProfilerStep#3", "");
	tl_string(t, S_GRAPH, ISC_STR_CFUNC, 0, "cudaGraphLaunch", "");
	tl_string(t, S_EVREC, ISC_STR_CFUNC, 0, "cudaEventRecord", "");
	tl_string(t, S_MEMSET, ISC_STR_CFUNC, 0, "Memset (Device)", "");
	tl_string(t, S_MCPY, ISC_STR_CFUNC, 0, "cudaMemcpy_v3020", "");
	tl_string(t, S_CUMCPY, ISC_STR_CFUNC, 0, "cuMemcpyDtoH_v2", "");
	tl_string(t, S_ESYNCA, ISC_STR_CFUNC, 0, "cudaEventSynchronize", "");
	tl_string(t, S_PINNED, ISC_STR_CFUNC, 0, "Memcpy HtoD (Pinned -> Device)", "");
	tl_string(t, S_DTOH, ISC_STR_CFUNC, 0, "Memcpy DtoH (Device -> Pageable)", "");
	tl_string(t, S_INNER, ISC_STR_CFUNC, 0, "aten::_copy_inner", "");
	tl_string(t, S_BUILTIN, ISC_STR_CODE, 0, "<built-in method synchronize>", ""); /* as Kineto names C functions */
	tl_string(t, S_CULAUNCH, ISC_STR_CFUNC, 0, "cuLaunchKernel", "");
	tl_string(t, S_SCOPE_STEP, ISC_STR_SCOPE, 0, "step", "");
	tl_string(t, S_MALLOC, ISC_STR_CFUNC, 0, "cudaMalloc", "");
	tl_string(t, S_FREE, ISC_STR_CFUNC, 0, "cudaFree", "");
	tl_string(t, S_CUCOOP, ISC_STR_CFUNC, 0, "cuLaunchCooperativeKernel", "");
}

static struct op kern(uint32_t stream, uint32_t name, uint64_t dur, uint64_t corr)
{
	return (struct op){ .stream = stream, .kind = ISC_GPU_KERNEL, .name = name, .dur = dur, .corr = corr };
}

/*
 * Scenario A, device 0, streams 7 and 8 (µs; launch call -> op):
 *
 *   call [0,2) c1      -> K1 gemm  s7 [10,30)     delay 8
 *   call [3,4) c2      -> K2 nccl  s8 [20,50)     delay 16
 *   call [40,41) c3 memcpyAsync -> M1 s7 [80,90)  delay 39, 4096 B HtoD pageable
 *   call [85,87) c4    -> K3 small s7 [95,96)     delay 8, shorter than its call
 *   call [87,88) c5    -> K4 gemm  s7 [200,210)   delay 112 (> 100)
 *   call [110,170) c8  -> K6 gemm  s8 [180,185)   delay 10, call > 50, shorter than it
 *   call [220,230) c6 cudaStreamSynchronize -> Stream Sync s7 [221,229)
 *   call [300,301) c7  -> K5 small s7 [305,308)   delay 4
 *   call [319,331) c9 cudaDeviceSynchronize -> Context Sync, no stream [320,330)
 * Host: feed [30,100) > aten::copy_ [60,70); wait_loop [120,190); teardown [400,500).
 *
 * Default: span 298, busy [10,50) [80,90) [95,96) [180,185) [200,210) [305,308)
 * = 69, idle 229, compute (no nccl) 39, non-compute 30.
 * s7 gaps: M1 50 host (call 40 > 30; launched by cudaMemcpyAsync, a launch
 * call, and at most 50: a launch gap), K3 5 kernel (< 30), K4 104 other,
 * K5 95 host (sync op left out, call 300 > 210); s8: K6 130 host.
 * Queue s7: launches 0,40,85,87,300, ends 30,90,96,210,308: in flight at
 * each launch 1,1,2,3,1 -> max 3; mean = sum(end - launch) 222 / (308 - 0).
 * Delays 4 8 8 10 16 39 112: p50 10, p90 39 + 0.4 * 73 = 68.2, max 112.
 * Host idle: feed 39 (= [50,80) + [90,95) + [96,100)), self 29; copy_ 10;
 * wait_loop 65 ([120,180) + [185,190): its tail is confirmed by K4);
 * teardown after the last op: not idle time.
 */
static void write_a(FILE *f)
{
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_device(&t, 0, "Test GPU");
	tl_api(&t, U(0), U(2), S_LAUNCH, 1);
	tl_api(&t, U(3), U(1), S_LAUNCH, 2);
	tl_op(&t, U(10), kern(7, S_GEMM, U(20), 1));
	tl_op(&t, U(20), kern(8, S_NCCL, U(30), 2));
	tl_begin(&t, U(30), ISC_SPAN_PYTHON, S_FEED);
	tl_api(&t, U(40), U(1), S_MCPYA, 3);
	tl_begin(&t, U(60), ISC_SPAN_OP, S_COPY);
	tl_end(&t, U(70));
	tl_op(&t, U(80), (struct op){ .stream = 7, .kind = ISC_GPU_MEMCPY, .name = S_MEMCPY, .dur = U(10), .corr = 3,
				       .bytes = 4096, .copy_kind = ISC_COPY_HTOD, .src = ISC_MEM_PAGEABLE,
				       .dst = ISC_MEM_DEVICE });
	tl_api(&t, U(85), U(2), S_LAUNCH, 4);
	tl_api(&t, U(87), U(1), S_LAUNCH, 5);
	tl_op(&t, U(95), kern(7, S_SMALL, U(1), 4));
	tl_end(&t, U(100));
	tl_api(&t, U(110), U(60), S_LAUNCH, 8);
	tl_begin(&t, U(120), ISC_SPAN_PYTHON, S_WAIT);
	tl_op(&t, U(180), kern(8, S_GEMM, U(5), 8));
	tl_end(&t, U(190));
	tl_op(&t, U(200), kern(7, S_GEMM, U(10), 5));
	tl_api(&t, U(220), U(10), S_SSYNCA, 6);
	tl_op(&t, U(221), (struct op){ .stream = 7, .kind = ISC_GPU_SYNC, .name = S_SSYNC, .dur = U(8), .corr = 6 });
	tl_api(&t, U(300), U(1), S_LAUNCH, 7);
	tl_op(&t, U(305), kern(7, S_SMALL, U(3), 7));
	tl_api(&t, U(319), U(12), S_DSYNCA, 9);
	tl_op(&t, U(320), (struct op){ .stream = UINT32_MAX, .kind = ISC_GPU_SYNC, .name = S_CSYNC, .dur = U(10),
					.corr = 9, .flags = ISC_GPU_FLAG_NO_STREAM });
	tl_begin(&t, U(400), ISC_SPAN_PYTHON, S_TEAR);
	tl_end(&t, U(500));
	tl_close(&t);
}

/* The item of array a whose "id" is id. */
static const cJSON *by_id(const cJSON *a, double id)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, a)
		if (N(x, "id") == id)
			return x;
	return NULL;
}

static const cJSON *stream_of(const cJSON *dev, double id)
{
	return by_id(isc_doc_get(dev, "streams"), id);
}

static void test_exact(void)
{
	FILE *f = tmpfile();
	write_a(f);
	cJSON *d = analyze(f, false);
	const cJSON *dev = at(d, "gpu.devices", 0);
	ok(d && cJSON_GetArraySize(isc_doc_get(d, "gpu.devices")) == 1 && N(dev, "id") == 0 &&
	   !strcmp(S(dev, "name"), "Test GPU"), "one device, named by its DEVICE record");
	ok(!strcmp(S(d, "gpu.mode"), "exact") && strstr(S(d, "gpu.step_rule"), "all GPU ops kept"),
	   "mode exact, step rule stated: %s", S(d, "gpu.step_rule"));
	ok(N(d, "gpu.ops") == 9 && N(dev, "ops") == 7, "9 ops, 7 of them device work (syncs apart)");
	ok(N(dev, "temporal_breakdown.span_ns") == U(298) && N(dev, "temporal_breakdown.idle_ns") == U(229) &&
	   N(dev, "temporal_breakdown.compute_ns") == U(39) && N(dev, "temporal_breakdown.non_compute_ns") == U(30),
	   "temporal breakdown: span 298, idle 229, compute 39, non-compute 30 µs");
	ok(N(dev, "temporal_breakdown.idle_pct") == 76.85 && N(dev, "temporal_breakdown.compute_pct") == 13.09 &&
	   N(dev, "temporal_breakdown.non_compute_pct") == 10.07, "percentages of the span, 2 decimals");
	const cJSON *s7 = stream_of(dev, 7), *s8 = stream_of(dev, 8);
	ok(N(s7, "idle_breakdown.host_wait_ns") == U(145) && N(s7, "idle_breakdown.kernel_wait_ns") == U(5) &&
	   N(s7, "idle_breakdown.other_ns") == U(104) && N(s7, "ops") == 5,
	   "stream 7: host wait 145, kernel wait 5, other 104 µs (sync op left out)");
	ok(N(s8, "idle_breakdown.host_wait_ns") == U(130) && N(s8, "idle_breakdown.kernel_wait_ns") == 0 &&
	   N(s8, "idle_breakdown.other_ns") == 0, "stream 8: host wait 130 µs");
	ok(N(s7, "idle_breakdown.host_wait_launch_ns") == U(50) && N(s8, "idle_breakdown.host_wait_launch_ns") == 0,
	   "launch gaps: M1's 50 µs (at most 50 µs, before a launched op), not K5's 95 or K6's 130");
	ok(N(s7, "queue_length.max") == 3 && N(s7, "queue_length.mean") == 0.72 && N(s8, "queue_length.max") == 1 &&
	   N(s8, "queue_length.mean") == 0.67, "queue length: stream 7 max 3 mean 0.72, stream 8 max 1 mean 0.67");

	ok(N(d, "gpu.launch.launches") == 7 && N(d, "gpu.launch.gpu_op_shorter_than_launch") == 2 &&
	   N(d, "gpu.launch.launch_call_over_50us") == 1 && N(d, "gpu.launch.delay_over_100us") == 1 &&
	   N(d, "gpu.launch.short_kernels_under_10us") == 3 && N(d, "gpu.launch.kernels") == 6,
	   "launch statistics: 7 launches, 2 ops shorter than their call, 1 call > 50 µs, 1 delay > 100 µs, "
	   "3 of 6 kernels < 10 µs");
	ok(N(d, "gpu.launch.delay_ns.p50") == U(10) && N(d, "gpu.launch.delay_ns.p90") == 68200 &&
	   N(d, "gpu.launch.delay_ns.max") == U(112) && cJSON_IsTrue(isc_doc_get(d, "gpu.launch.delay_exact")),
	   "launch delay p50 10 µs, p90 68.2 µs (interpolated), max 112 µs");

	ok(N(d, "gpu.kernels.count") == 6 && N(d, "gpu.kernels.total_ns") == U(69) &&
	   N(d, "gpu.kernels.distinct") == 3, "kernel table totals");
	const cJSON *k0 = at(d, "gpu.kernels.top", 0), *k1 = at(d, "gpu.kernels.top", 1);
	ok(cJSON_GetArraySize(isc_doc_get(d, "gpu.kernels.top")) == 2 && !strcmp(S(k0, "name"), "gemm_kernel") &&
	   N(k0, "count") == 3 && N(k0, "total_ns") == U(35) && N(k0, "min_ns") == U(5) && N(k0, "max_ns") == U(20) &&
	   N(k0, "mean_ns") == 11667 && !strcmp(S(k1, "name"), "ncclKernel_AllReduce_RING"),
	   "top kernels until 80 %% of kernel time: gemm (3, 35 µs, 5..20) then nccl");
	ok(N(d, "gpu.kernels.top_pct") == 94.2 && N(d, "gpu.kernels.others.count") == 2 &&
	   N(d, "gpu.kernels.others.total_ns") == U(4), "the rest summed as others");

	const cJSON *m = at(d, "gpu.memcpy", 0);
	ok(cJSON_GetArraySize(isc_doc_get(d, "gpu.memcpy")) == 1 && !strcmp(S(m, "kind"), "memcpy") &&
	   !strcmp(S(m, "direction"), "HtoD") && !strcmp(S(m, "src_memory"), "pageable") &&
	   !strcmp(S(m, "dst_memory"), "device") && N(m, "bytes") == 4096 && N(m, "total_ns") == U(10) &&
	   N(m, "bandwidth_gb_per_s") == 0.41, "memcpy by direction and memory, 4096 B in 10 µs = 0.41 GB/s");

	ok(!strcmp(S(at(d, "gpu.sync.ops", 0), "name"), "Context Sync") && N(at(d, "gpu.sync.ops", 0), "total_ns") == U(10) &&
	   !strcmp(S(at(d, "gpu.sync.ops", 1), "name"), "Stream Sync") && N(d, "gpu.sync.ops_total_ns") == U(18),
	   "sync ops by kind, longest first");
	ok(!strcmp(S(at(d, "gpu.sync.api_calls", 0), "name"), "cudaDeviceSynchronize") &&
	   N(at(d, "gpu.sync.api_calls", 0), "total_ns") == U(12) && N(d, "gpu.sync.api_total_ns") == U(22),
	   "synchronising API calls by name");

	ok(N(dev, "host_during_idle.idle_ns") == U(229), "host_during_idle: the device's idle time");
	const cJSON *p0 = at(dev, "host_during_idle.python", 0), *p1 = at(dev, "host_during_idle.python", 1);
	ok(cJSON_GetArraySize(isc_doc_get(dev, "host_during_idle.python")) == 2 && !strcmp(S(p0, "name"), "wait_loop") &&
	   N(p0, "idle_ns") == U(65) && N(p0, "self_idle_ns") == U(65) && !strcmp(S(p1, "name"), "feed") &&
	   N(p1, "idle_ns") == U(39) && N(p1, "self_idle_ns") == U(29) && !strcmp(S(p1, "file"), "serve.py") &&
	   N(p1, "line") == 10, "python during idle: wait_loop 65 µs (tail confirmed by a later op), feed 39 (self 29)");
	ok(N(p0, "idle_pct") == 28.38, "idle_pct of the device's idle time");
	const cJSON *o0 = at(dev, "host_during_idle.ops", 0);
	ok(cJSON_GetArraySize(isc_doc_get(dev, "host_during_idle.ops")) == 1 && !strcmp(S(o0, "name"), "aten::copy_") &&
	   N(o0, "idle_ns") == U(10), "ops during idle: aten::copy_ 10 µs; teardown after the last op is not idle");
	cJSON_Delete(d);

	/* --hta-compat, no ProfilerStep: all kept; the stream sync counts as (non-compute) GPU time,
	 * the context sync without a stream does not: busy 69 + 8 */
	d = analyze(f, true);
	dev = at(d, "gpu.devices", 0);
	ok(!strcmp(S(d, "gpu.mode"), "hta-compat") && strstr(S(d, "gpu.step_rule"), "fewer than 2") &&
	   N(d, "gpu.dropped_ops") == 0, "hta-compat without steps keeps everything: %s", S(d, "gpu.step_rule"));
	ok(N(dev, "temporal_breakdown.span_ns") == U(298) && N(dev, "temporal_breakdown.idle_ns") == U(221) &&
	   N(dev, "temporal_breakdown.compute_ns") == U(39) && N(dev, "temporal_breakdown.non_compute_ns") == U(38),
	   "hta-compat: cuda_sync with a stream is GPU time, without one it is not");
	ok(N(stream_of(dev, 7), "idle_breakdown.host_wait_ns") == U(145), "hta-compat: idle breakdown without syncs");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Scenario B (µs): ProfilerStep#1 [0,100), #2 [100,300), then #3 [300,400)
 * when with3.  c1 [10,11) -> K1 [20,30); c2 [90,91) -> K2 [150,160) (launched
 * in step 1, runs in step 2); c3 [110,111) -> K3 [120,130) (launched in step
 * 2); K4 [170,175) with correlation 99 and no call; K5 [180,185) without a
 * correlation; with3: c6 [310,311) -> K6 [320,330).
 * Two step names: kept K1 K2 K5 (span 165, busy 25; s7 gaps: K2 120 host,
 * K5 20 kernel).  Three: K3 is kept as well, K6 dropped.
 */
static void write_b(FILE *f, bool with3, uint32_t second_name)
{
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_begin(&t, 0, ISC_SPAN_SCOPE, S_STEP1);
	tl_api(&t, U(10), U(1), S_LAUNCH, 1);
	tl_op(&t, U(20), kern(7, S_GEMM, U(10), 1));
	tl_api(&t, U(90), U(1), S_LAUNCH, 2);
	tl_end(&t, U(100));
	tl_begin(&t, U(100), ISC_SPAN_SCOPE, second_name);
	tl_api(&t, U(110), U(1), S_LAUNCH, 3);
	tl_op(&t, U(120), kern(7, S_GEMM, U(10), 3));
	tl_op(&t, U(150), kern(7, S_GEMM, U(10), 2));
	tl_op(&t, U(170), kern(7, S_GEMM, U(5), 99));
	tl_op(&t, U(180), kern(7, S_GEMM, U(5), 0));
	tl_end(&t, U(300));
	if (with3) {
		tl_begin(&t, U(300), ISC_SPAN_SCOPE, S_STEP3);
		tl_api(&t, U(310), U(1), S_LAUNCH, 6);
		tl_op(&t, U(320), kern(7, S_GEMM, U(10), 6));
		tl_end(&t, U(400));
	}
	tl_close(&t);
}

static void test_step_rule(void)
{
	FILE *f = tmpfile();
	write_b(f, false, S_STEP2);
	cJSON *d = analyze(f, true);
	const cJSON *dev = at(d, "gpu.devices", 0);
	ok(N(d, "gpu.ops") == 3 && N(d, "gpu.dropped_ops") == 2 && strstr(S(d, "gpu.step_rule"), "ProfilerStep#2") &&
	   strstr(S(d, "gpu.step_rule"), "2 of 5"), "two step names: ops launched in the last step and orphans dropped: %s",
	   S(d, "gpu.step_rule"));
	ok(N(dev, "temporal_breakdown.span_ns") == U(165) && N(dev, "temporal_breakdown.idle_ns") == U(140),
	   "kept ops only: span 165, idle 140 (an op launched before the step and run after it is kept)");
	ok(N(stream_of(dev, 7), "idle_breakdown.host_wait_ns") == U(120) &&
	   N(stream_of(dev, 7), "idle_breakdown.kernel_wait_ns") == U(20), "idle breakdown over the kept ops");
	ok(N(d, "gpu.launch.launches") == 2 && N(d, "gpu.profiler_steps") == 2, "launches of kept ops only");
	cJSON_Delete(d);
	d = analyze(f, false);
	ok(N(d, "gpu.ops") == 5 && N(d, "gpu.dropped_ops") == 0 &&
	   N(at(d, "gpu.devices", 0), "temporal_breakdown.span_ns") == U(165) &&
	   N(at(d, "gpu.devices", 0), "temporal_breakdown.idle_ns") == U(125), "default mode drops nothing");
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	write_b(f, true, S_STEP2);
	d = analyze(f, true);
	dev = at(d, "gpu.devices", 0);
	ok(N(d, "gpu.ops") == 4 && N(d, "gpu.dropped_ops") == 2 && strstr(S(d, "gpu.step_rule"), "ProfilerStep#3"),
	   "three steps: the second step's ops are kept once the third begins");
	ok(N(dev, "temporal_breakdown.span_ns") == U(165) && N(dev, "temporal_breakdown.idle_ns") == U(130),
	   "kept: K1 K3 K2 K5 in start order (busy 35)");
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	write_b(f, false, S_STEP1); /* ProfilerStep#1 twice: one name */
	d = analyze(f, true);
	ok(N(d, "gpu.ops") == 5 && N(d, "gpu.dropped_ops") == 0 && strstr(S(d, "gpu.step_rule"), "fewer than 2"),
	   "one step name: HTA drops nothing");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Rounding (ns): kernel [1500,2600) -> [2000,2000); memset [3100,3500) ->
 * [4000,3000), negative as in HTA; kernel [5000,7000).  HTA's union: busy
 * 0 - 1000 + 2000 = 1000, span 5000, compute 2000, non-compute -1000.
 * Exact: span 5500, busy 1100 + 400 + 2000, compute 3100.
 */
static void test_rounding(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_op(&t, 1500, kern(7, S_GEMM, 1100, 0));
	tl_op(&t, 3100, (struct op){ .stream = 7, .kind = ISC_GPU_MEMSET, .name = S_MEMSET, .dur = 400, .bytes = 64,
				     .dst = ISC_MEM_DEVICE });
	tl_op(&t, 5000, kern(7, S_GEMM, 2000, 0));
	tl_close(&t);
	cJSON *d = analyze(f, true);
	const cJSON *dev = at(d, "gpu.devices", 0);
	ok(N(dev, "temporal_breakdown.span_ns") == 5000 && N(dev, "temporal_breakdown.idle_ns") == 4000 &&
	   N(dev, "temporal_breakdown.compute_ns") == 2000 && N(dev, "temporal_breakdown.non_compute_ns") == -1000,
	   "hta-compat rounds starts up and ends down to µs, negative sub-µs ops included, as HTA");
	cJSON_Delete(d);
	d = analyze(f, false);
	dev = at(d, "gpu.devices", 0);
	ok(N(dev, "temporal_breakdown.span_ns") == 5500 && N(dev, "temporal_breakdown.idle_ns") == 2000 &&
	   N(dev, "temporal_breakdown.compute_ns") == 3100 && N(dev, "temporal_breakdown.non_compute_ns") == 400,
	   "exact mode keeps the ns");
	const cJSON *m = at(d, "gpu.memcpy", 0);
	ok(!strcmp(S(m, "kind"), "memset") && cJSON_IsNull(isc_doc_get(m, "direction")) && N(m, "bytes") == 64,
	   "memset row without a direction");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * An op inside a longer one (ns, device 0): kernel s7 [1000,5000), kernel
 * s8 [2000,2500) wholly inside it, kernel s7 [6000,7000).  By the union:
 * busy 4000 + 1000 = 5000 (the short kernel adds nothing and does not end
 * the first group early), compute 5000, span 6000, idle 1000.
 */
static void test_nested_ops(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_op(&t, 1000, kern(7, S_GEMM, 4000, 0));
	tl_op(&t, 2000, kern(8, S_GEMM, 500, 0));
	tl_op(&t, 6000, kern(7, S_GEMM, 1000, 0));
	tl_close(&t);
	cJSON *d = analyze(f, false);
	const cJSON *dev = at(d, "gpu.devices", 0);
	ok(N(dev, "temporal_breakdown.span_ns") == 6000, "span 1000 .. 7000 (got %g)",
	   N(dev, "temporal_breakdown.span_ns"));
	ok(N(dev, "busy_ns") == 5000, "a kernel inside a longer one adds no busy time and cuts none: 5000 (got %g)",
	   N(dev, "busy_ns"));
	ok(N(dev, "temporal_breakdown.idle_ns") == 1000 && N(dev, "temporal_breakdown.compute_ns") == 5000,
	   "idle 1000 (the gap 5000 .. 6000), compute 5000 (got %g, %g)", N(dev, "temporal_breakdown.idle_ns"),
	   N(dev, "temporal_breakdown.compute_ns"));
	cJSON_Delete(d);
	fclose(f);
}

/* One cudaGraphLaunch [0,5) owns 3 kernels [10,20) [20,30) [40,50): all see the call. */
static void test_graph(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_api(&t, 0, U(5), S_GRAPH, 9);
	tl_op(&t, U(10), kern(7, S_GEMM, U(10), 9));
	tl_op(&t, U(20), kern(7, S_GEMM, U(10), 9));
	tl_op(&t, U(40), kern(7, S_GEMM, U(10), 9));
	tl_close(&t);
	cJSON *d = analyze(f, false);
	const cJSON *s = stream_of(at(d, "gpu.devices", 0), 7);
	ok(N(d, "gpu.launch.ops_without_launch_call") == 0 && N(d, "gpu.launch.launches") == 0,
	   "graph kernels keep their launch call; a graph launch is not a kernel launch");
	ok(N(s, "idle_breakdown.kernel_wait_ns") == U(10) && N(s, "queue_length.max") == 3,
	   "graph kernels: gaps after the launch are kernel wait; 3 queued at once");
	cJSON_Delete(d);
	fclose(f);
}

/* 300000 calls without ops push the first launch out of the bounded bookkeeping. */
static void test_bounded(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_api(&t, 0, 100, S_LAUNCH, 1);
	for (uint64_t i = 0; i < 300000; i++)
		tl_api(&t, 200 + i, 1, S_EVREC, 1000 + i);
	tl_api(&t, 400000, 100, S_LAUNCH, 2);
	tl_op(&t, 500000, kern(7, S_GEMM, 1000, 1));
	tl_op(&t, 600000, kern(7, S_GEMM, 1000, 2));
	tl_close(&t);
	cJSON *d = analyze(f, false);
	ok(N(d, "gpu.launch.ops_without_launch_call") == 1 && N(d, "gpu.launch.launches") == 1,
	   "launch calls are forgotten oldest first beyond the bound");
	cJSON_Delete(d);
	fclose(f);
}

static void test_cpu_only_and_report(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_begin(&t, 0, ISC_SPAN_PYTHON, S_FEED);
	tl_end(&t, 1000);
	tl_close(&t);
	cJSON *d = analyze(f, false);
	char *md = NULL;
	ok(d && cJSON_IsArray(isc_doc_get(d, "gpu.devices")) && !cJSON_GetArraySize(isc_doc_get(d, "gpu.devices")) &&
	   N(d, "gpu.ops") == 0, "CPU-only timeline: gpu.devices is empty");
	ok(N(d, "gpu.gaps.count") == 0 && !cJSON_GetArraySize(isc_doc_get(d, "gpu.gaps.top")) &&
	   cJSON_IsArray(isc_doc_get(d, "gpu.nvml")) && !cJSON_GetArraySize(isc_doc_get(d, "gpu.nvml")) &&
	   cJSON_IsArray(isc_doc_get(d, "gpu.sync.call_sites")) && N(d, "gpu.sync.blocking_copies.count") == 0 &&
	   N(d, "gpu.launch.api_total_ns") == 0, "CPU-only: no gaps, no NVML devices, no call sites");
	ok(cJSON_IsNull(cJSON_GetArrayItem(isc_doc_get(d, "timeseries.gpu_busy_pct"), 0)) &&
	   cJSON_IsNull(cJSON_GetArrayItem(isc_doc_get(d, "timeseries.gpu_util_pct"), 0)),
	   "CPU-only: the GPU channels of timeseries are null");
	ok(!isc_report_render(d, ISC_REPORT_MD, &md) && strstr(md, "## GPU\n\nNo GPU activity recorded."),
	   "report: no GPU activity");
	free(md);
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	write_a(f);
	d = analyze(f, false);
	md = NULL;
	int rc = isc_report_render(d, ISC_REPORT_MD, &md);
	const char *gpu = md ? strstr(md, "## GPU\n") : NULL, *mem = gpu ? strstr(gpu, "## Memory") : NULL;
	ok(!rc && gpu && mem, "report has a GPU section");
	if (gpu && mem) {
		size_t n = (size_t)(mem - gpu);
		char *sec = strndup(gpu, n);
		ok(strstr(sec, "Test GPU") && strstr(sec, "76.85") && strstr(sec, "| 7 |"),
		   "GPU section: device, idle %%, streams");
		ok(strstr(sec, "gemm_kernel") && strstr(sec, "HtoD") && strstr(sec, "wait_loop") &&
		   strstr(sec, "aten::copy\\_") && strstr(sec, "cudaDeviceSynchronize"),
		   "GPU section: kernels, memcpy, host during idle, sync (escaped)");
		ok(strstr(sec, "Launch") && strstr(sec, "68.2 µs"), "GPU section: launch statistics");
		if (!strstr(sec, "Test GPU"))
			printf("# %s\n", sec);
		free(sec);
	}
	free(md);
	md = NULL;
	ok(!isc_report_render(d, ISC_REPORT_HTML, &md) && strstr(md, "<td>gemm_kernel</td>"), "HTML report renders");
	free(md);
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Correlation ids of two processes collide (corr 5 on thread 100 at 0, then
 * on thread 200 at 10 µs): an op the merge linked to thread 100's call is
 * not paired with thread 200's; the one linked to thread 200's is.
 */
static void test_linked(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_api_on(&t, 100, 0, U(1), S_LAUNCH, 5);
	tl_api_on(&t, 200, U(10), U(1), S_LAUNCH, 5);
	struct op a = kern(7, S_GEMM, U(5), 5), b = kern(8, S_GEMM, U(5), 5);
	a.api_tid = 100;
	a.link_gap = (int64_t)U(20);
	b.api_tid = 200;
	b.link_gap = (int64_t)U(20);
	tl_op(&t, U(20), a);
	tl_op(&t, U(30), b);
	tl_close(&t);
	cJSON *d = analyze(f, false);
	ok(N(d, "gpu.launch.launches") == 1 && N(d, "gpu.launch.ops_without_launch_call") == 1 &&
	   N(d, "gpu.launch.delay_ns.max") == U(19), "a linked op is paired only with the call it is linked to");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * CUPTI with runtime and driver API records on: cudaLaunchKernel [0,8) µs
 * makes cuLaunchKernel [2,6), both with correlation id 9; the merge links
 * the kernel [10,15) to the outer (runtime) call, and so does the analysis.
 */
static void test_nested_driver_call(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_api_on(&t, 100, 0, U(8), S_LAUNCH, 9);
	tl_api_on(&t, 100, U(2), U(4), S_CULAUNCH, 9);
	struct op k = kern(7, S_GEMM, U(5), 9);
	k.api_tid = 100;
	k.link_gap = (int64_t)U(10);
	tl_op(&t, U(10), k);
	tl_close(&t);
	cJSON *d = analyze(f, false);
	ok(N(d, "gpu.launch.launches") == 1 && N(d, "gpu.launch.ops_without_launch_call") == 0 &&
	   N(d, "gpu.launch.delay_ns.max") == U(2) && N(d, "gpu.launch.gpu_op_shorter_than_launch") == 1,
	   "a driver call inside its runtime call: the op is paired with the runtime call");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * A driver launch inside a runtime launch of its thread is that launch,
 * however CUPTI numbers it and whenever its op comes (µs; gpu.agent.launches
 * counts launch calls, gpu.launch.launches the calls paired with an op):
 *   A  cudaLaunchKernel [0,10) c1 makes cuLaunchKernel [5,8) c1, after its
 *      kernel [4,9) c1 started: the op has taken its call already
 *   B  cudaLaunchKernel [20,30) c2 makes cuLaunchKernel [22,28) c3, an id of
 *      its own, which its kernel [40,45) carries
 *   C  cuLaunchKernel [50,52) c4 alone (cuBLAS, Triton): kernel [55,60) c4
 *   D  cuLaunchCooperativeKernel [62,64) c5 alone: kernel [66,70) c5
 * Four launches, each op with its call.  (The analysis before counted A's
 * and B's driver calls again and not D: 5 calls, 3 paired.)
 */
static void test_nested_driver_launch(void)
{
	FILE *f = tmpfile();
	struct tl t;
	struct isc_buf a = { 0 };
	tl_open(&t, f);
	strings(&t);
	for (unsigned i = 0; i < 4; i++) /* GPU_AGENT: cupti_version cupti_built lag_ms flush_ms, agent version */
		isc_buf_put_varint(&a, i < 2 ? 130001 : 1000);
	tl_put(&t, ISC_REC_GPU_AGENT, 0, HOST, 0, &a);
	isc_buf_free(&a);
	tl_api_kind(&t, 100, 1, 0, U(10), S_LAUNCH, 1);
	tl_op(&t, U(4), kern(7, S_GEMM, U(5), 1));
	tl_api_kind(&t, 100, 2, U(5), U(3), S_CULAUNCH, 1);
	tl_api_kind(&t, 100, 1, U(20), U(10), S_LAUNCH, 2);
	tl_api_kind(&t, 100, 2, U(22), U(6), S_CULAUNCH, 3);
	tl_op(&t, U(40), kern(7, S_GEMM, U(5), 3));
	tl_api_kind(&t, 100, 2, U(50), U(2), S_CULAUNCH, 4);
	tl_op(&t, U(55), kern(7, S_GEMM, U(5), 4));
	tl_api_kind(&t, 100, 2, U(62), U(2), S_CUCOOP, 5);
	tl_op(&t, U(66), kern(7, S_GEMM, U(4), 5));
	tl_close(&t);
	cJSON *d = analyze(f, false);
	printf("# agent.launches %g launch.launches %g without %g\n", N(d, "gpu.agent.launches"),
	       N(d, "gpu.launch.launches"), N(d, "gpu.launch.ops_without_launch_call"));
	ok(N(d, "gpu.agent.launches") == 4, "a driver launch inside a runtime launch is not counted again");
	ok(N(d, "gpu.launch.launches") == 4 && N(d, "gpu.launch.ops_without_launch_call") == 0,
	   "each op paired with its launch call, the one carrying the driver call's own id and a cooperative launch too");
	cJSON_Delete(d);
	fclose(f);
}

static struct op copy_op(uint32_t name, uint64_t dur, uint64_t corr, uint64_t bytes, uint8_t dir, uint8_t src, uint8_t dst)
{
	return (struct op){ .stream = 7, .kind = ISC_GPU_MEMCPY, .name = name, .dur = dur, .corr = corr, .bytes = bytes,
			    .copy_kind = dir, .src = src, .dst = dst };
}

/*
 * Scenario C, call sites (µs):
 *   feed [0,100) > aten::copy_ [10,60) > aten::_copy_inner [15,55):
 *     cudaMemcpyAsync [20,30) c1 -> HtoD pageable 4096 B [35,45): blocking
 *     cudaStreamSynchronize [30,50)
 *   wait_loop [100,200) > "<built-in method synchronize>" [105,140) (no
 *     file: not taken as the Python function): cudaDeviceSynchronize [110,130);
 *     cudaMemcpyAsync [150,151) c3 -> HtoD pinned 1000 B [160,161): not blocking
 *   (no span) cudaStreamSynchronize [300,305); cudaMemcpyAsync [310,311) c7 -> pinned 9000 B [315,316)
 *   teardown [400,500): cudaMemcpy_v3020 [410,440) c5 with the driver's
 *     cuMemcpyDtoH_v2 [412,438) c5 inside -> DtoH pageable 64 B [415,435);
 *     cudaMemcpyAsync [450,452) c6 -> pinned 3000 B [455,456)
 *   (no span) cudaEventSynchronize [600,601)
 * Call sites by time: cudaMemcpy 30 (teardown), then the two of 20 by name
 * (cudaDeviceSynchronize in wait_loop, cudaStreamSynchronize in feed >
 * aten::copy_, the outermost op), cudaMemcpyAsync 10 (feed > aten::copy_), cudaStreamSynchronize
 * 5 (no site); the event sync is sixth.  Blocking copies: 2, 40 µs.
 * Pinned row: teardown's 3000 B beat wait_loop's 1000; the 9000 B without a
 * site do not count.
 */
static void write_c(FILE *f)
{
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_begin(&t, 0, ISC_SPAN_PYTHON, S_FEED);
	tl_begin(&t, U(10), ISC_SPAN_OP, S_COPY);
	tl_begin(&t, U(15), ISC_SPAN_OP, S_INNER);
	tl_api(&t, U(20), U(10), S_MCPYA, 1);
	tl_api(&t, U(30), U(20), S_SSYNCA, 0);
	tl_op(&t, U(35), copy_op(S_MEMCPY, U(10), 1, 4096, ISC_COPY_HTOD, ISC_MEM_PAGEABLE, ISC_MEM_DEVICE));
	tl_end(&t, U(55));
	tl_end(&t, U(60));
	tl_end(&t, U(100));
	tl_begin(&t, U(100), ISC_SPAN_PYTHON, S_WAIT);
	tl_begin(&t, U(105), ISC_SPAN_PYTHON, S_BUILTIN);
	tl_api(&t, U(110), U(20), S_DSYNCA, 0);
	tl_end(&t, U(140));
	tl_api(&t, U(150), U(1), S_MCPYA, 3);
	tl_op(&t, U(160), copy_op(S_PINNED, U(1), 3, 1000, ISC_COPY_HTOD, ISC_MEM_PINNED, ISC_MEM_DEVICE));
	tl_end(&t, U(200));
	tl_api(&t, U(300), U(5), S_SSYNCA, 0);
	tl_api(&t, U(310), U(1), S_MCPYA, 7);
	tl_op(&t, U(315), copy_op(S_PINNED, U(1), 7, 9000, ISC_COPY_HTOD, ISC_MEM_PINNED, ISC_MEM_DEVICE));
	tl_begin(&t, U(400), ISC_SPAN_PYTHON, S_TEAR);
	tl_api(&t, U(410), U(30), S_MCPY, 5);
	tl_api_kind(&t, HOST, 2, U(412), U(26), S_CUMCPY, 5);
	tl_op(&t, U(415), copy_op(S_DTOH, U(20), 5, 64, ISC_COPY_DTOH, ISC_MEM_DEVICE, ISC_MEM_PAGEABLE));
	tl_api(&t, U(450), U(2), S_MCPYA, 6);
	tl_op(&t, U(455), copy_op(S_PINNED, U(1), 6, 3000, ISC_COPY_HTOD, ISC_MEM_PINNED, ISC_MEM_DEVICE));
	tl_end(&t, U(500));
	tl_api(&t, U(600), U(1), S_ESYNCA, 0);
	tl_close(&t);
}

/* Whether x has op (NULL: null) and python name py (NULL: null). */
static bool site_is(const cJSON *x, const char *op, const char *py)
{
	const cJSON *o = isc_doc_get(x, "op"), *p = isc_doc_get(x, "python");
	if (op ? !cJSON_IsString(o) || strcmp(o->valuestring, op) : !cJSON_IsNull(o))
		return false;
	return py ? !strcmp(S(x, "python.name"), py) : cJSON_IsNull(p);
}

static void test_call_sites(void)
{
	FILE *f = tmpfile();
	write_c(f);
	for (int hta = 0; hta < 2; hta++) {
		cJSON *d = analyze(f, hta);
		const cJSON *cs = isc_doc_get(d, "gpu.sync.call_sites");
		const cJSON *c0 = at(d, "gpu.sync.call_sites", 0), *c1 = at(d, "gpu.sync.call_sites", 1),
			    *c2 = at(d, "gpu.sync.call_sites", 2), *c3 = at(d, "gpu.sync.call_sites", 3),
			    *c4 = at(d, "gpu.sync.call_sites", 4);
		ok(cJSON_GetArraySize(cs) == 5 && !strcmp(S(c0, "api"), "cudaMemcpy_v3020") && N(c0, "count") == 1 &&
		   N(c0, "total_ns") == U(30) && site_is(c0, NULL, "teardown") && !strcmp(S(c0, "python.file"), "serve.py") &&
		   N(c0, "python.line") == 30, "%s: call site 1: the blocking cudaMemcpy in teardown (serve.py:30), 30 µs",
		   hta ? "hta-compat" : "exact");
		ok(!strcmp(S(c1, "api"), "cudaDeviceSynchronize") && N(c1, "total_ns") == U(20) && site_is(c1, NULL, "wait_loop") &&
		   !strcmp(S(c2, "api"), "cudaStreamSynchronize") && N(c2, "total_ns") == U(20) &&
		   site_is(c2, "aten::copy_", "feed"), "call sites 2, 3: equal times by name; the outermost op under the Python function, which has a file");
		ok(!strcmp(S(c3, "api"), "cudaMemcpyAsync") && N(c3, "count") == 1 && N(c3, "total_ns") == U(10) &&
		   site_is(c3, "aten::copy_", "feed"), "call site 4: the pageable async copy only (the pinned ones do not block)");
		ok(!strcmp(S(c4, "api"), "cudaStreamSynchronize") && N(c4, "total_ns") == U(5) && site_is(c4, NULL, NULL),
		   "call site 5: outside every span, op and python null; the sixth is cut");
		ok(N(d, "gpu.sync.blocking_copies.count") == 2 && N(d, "gpu.sync.blocking_copies.total_ns") == U(40),
		   "blocking copies: the synchronous cudaMemcpy and the pageable async copy, 40 µs");
		ok(N(d, "gpu.sync.call_sites_total_ns") == U(86),
		   "call_sites_total_ns: all 6 groups, the api calls' 76 µs and the pageable async copy's 10");
		ok(cJSON_GetArraySize(isc_doc_get(d, "gpu.sync.api_calls")) == 4 && N(d, "gpu.sync.api_total_ns") == U(76) &&
		   !strcmp(S(at(d, "gpu.sync.api_calls", 0), "name"), "cudaMemcpy_v3020"),
		   "the driver's cuMemcpyDtoH inside cudaMemcpy is not counted again");
		const cJSON *m0 = at(d, "gpu.memcpy", 0), *m1 = at(d, "gpu.memcpy", 1), *m2 = at(d, "gpu.memcpy", 2);
		ok(!strcmp(S(m0, "direction"), "DtoH") && N(m0, "launch_api_ns") == U(30) &&
		   site_is(isc_doc_get(m0, "top_call_site"), NULL, "teardown"),
		   "DtoH row: launched by cudaMemcpy (30 µs, not its driver call's 26), from teardown");
		ok(!strcmp(S(m1, "src_memory"), "pageable") && N(m1, "launch_api_ns") == U(10) &&
		   site_is(isc_doc_get(m1, "top_call_site"), "aten::copy_", "feed") &&
		   !strcmp(S(m1, "top_call_site.python.file"), "serve.py") && N(m1, "top_call_site.python.line") == 10,
		   "pageable HtoD row: launch calls 10 µs, top call site aten::copy_ in feed (serve.py:10)");
		ok(!strcmp(S(m2, "src_memory"), "pinned") && N(m2, "count") == 3 && N(m2, "bytes") == 13000 &&
		   N(m2, "launch_api_ns") == U(4) && site_is(isc_doc_get(m2, "top_call_site"), NULL, "teardown"),
		   "pinned row: 3 calls of 4 µs; teardown's 3000 B beat wait_loop's 1000, bytes without a site do not count");
		cJSON_Delete(d);
	}
	fclose(f);
}

#define B U(1000) /* scenario D starts here: relative times are from B */
#define GIB (1ull << 30)

/* An NVML sample of device index at B + us. */
static void tl_sample(struct tl *t, uint64_t us, uint64_t index, uint64_t util, uint64_t used, uint64_t total, uint64_t sm,
		      uint64_t power_mw, uint64_t temp, uint64_t reasons)
{
	uint64_t f[12] = { index, util, 0, used, total, sm, 800, power_mw, temp, reasons, 0, 0 };
	tl_raw(t, ISC_REC_GPU_SAMPLE, B + U(us), f, 12);
}

/* A GPU_MEMORY record of device 0 at B + us: op 1 alloc, 2 free. */
static void tl_mem(struct tl *t, uint64_t us, uint64_t op, uint64_t kind, uint64_t bytes)
{
	uint64_t f[8] = { 0, 7, op, kind, bytes, 0x7f0000000000ull, 0, 0 };
	tl_raw(t, ISC_REC_GPU_MEMORY, B + U(us), f, 8);
}

/*
 * Scenario D (µs from B): devices 0 and 1.
 *   cudaLaunchKernel [0,5) c1 -> K1 dev 0 [100,500)
 *   cudaGraphLaunch [50,57) c2 -> K2 dev 0 [300,800), K3 dev 0 [2800,3000)
 *   K4 dev 0 [3500,3600), K5 dev 0 [9600,10000), K6 dev 1 [1000,1500),
 *   K7 dev 1 [4000,4100): no call.  Host span [0,10000).
 * Gaps >= 1 ms: dev 0 [800,2800) 2000 and [3600,9600) 6000 ([3000,3500) is
 * shorter), dev 1 [1500,4000) 2500: 3, 10500.  Busy: dev 0 700 + 200 + 100
 * + 400 = 1400, dev 1 600.  Launch calls with kernels: 5 + 7 (the graph
 * launch once), their kernels 400 + 500 + 200.
 * All devices, 1 ms buckets: busy [100,800) 70 %, [1000,1500) 50,
 * [2800,3000) 20, [3500,3600) 10, [4000,4100) 10, 0 0 0 0, [9600,10000) 40.
 * NVML: dev 0 at 200 (40 %, 1 GiB, 1000 MHz, 200 W, 60 C, gpu_idle), 600
 * (80 %, 3 GiB, 1500 MHz, 300.5 W, 70 C, sw_power_cap + sw_thermal), 5200
 * (0 %, 1 GiB, 1200 MHz); dev 1 at 650 (10 %, 2 GiB of 16, clocks, power
 * and temperature not read, hw_slowdown + hw_thermal).  Bucket 0: util
 * (40 + 80 + 10) / 3, memory max 3 + 2 GiB; bucket 5: 0 %, 1 + 2 GiB.
 * Throttled work (NVML samples against the work that ran in the interval
 * since the device's previous sample): dev 0 at 200 is gpu_idle (idle
 * clocks whatever ran: not a busy sample); at 600 (200,600] held 400 µs of
 * work ([200,500) K1 and [300,600) K2, overlapping): busy, throttled; at
 * 5200 (600,5200] held [600,800) + [2800,3000) + [3500,3600) = 500: busy,
 * not throttled.  busy_samples 2, throttled_busy_samples 1, busy_ns 900,
 * throttled_busy_ns 400, throttled SM 1500 MHz, busiest clock 1500.  Dev 1
 * at 650 is throttled (hw_slowdown + hw_thermal) before its first op
 * (1000): no work in its interval, not a busy sample.
 * GPU_INFO of index 1: link 31507692304 B/s.  GPU_MEMORY dev 0: +100 MB
 * +50 -100 +20 device (peak 150), +1 GiB pinned (not device memory).
 */
static void write_d(FILE *f)
{
	struct tl t;
	uint64_t info[5] = { 1, 4, 16, 31507692304ull, 16 * GIB };
	tl_open(&t, f);
	strings(&t);
	tl_begin(&t, B, ISC_SPAN_PYTHON, S_FEED);
	tl_device(&t, 0, "Test GPU");
	tl_raw(&t, ISC_REC_GPU_INFO, B, info, 5);
	tl_api(&t, B, U(5), S_LAUNCH, 1);
	tl_mem(&t, 20, 1, ISC_MEM_DEVICE, 100000000);
	tl_mem(&t, 30, 1, ISC_MEM_DEVICE, 50000000);
	tl_mem(&t, 40, 2, ISC_MEM_DEVICE, 100000000);
	tl_api(&t, B + U(50), U(7), S_GRAPH, 2);
	tl_mem(&t, 50, 1, ISC_MEM_DEVICE, 20000000);
	tl_mem(&t, 60, 1, ISC_MEM_PINNED, GIB);
	tl_op(&t, B + U(100), kern(7, S_GEMM, U(400), 1));
	tl_sample(&t, 200, 0, 40, GIB, 8 * GIB, 1000, 200000, 60, 0x1);
	tl_op(&t, B + U(300), kern(7, S_GEMM, U(500), 2));
	tl_sample(&t, 600, 0, 80, 3 * GIB, 8 * GIB, 1500, 300500, 70, 0x24);
	tl_sample(&t, 650, 1, 10, 2 * GIB, 16 * GIB, 0, 0, 0, 0x48);
	struct op k6 = kern(9, S_SMALL, U(500), 0), k7 = kern(9, S_SMALL, U(100), 0);
	k6.device = k7.device = 1;
	tl_op(&t, B + U(1000), k6);
	tl_op(&t, B + U(2800), kern(7, S_GEMM, U(200), 2));
	tl_op(&t, B + U(3500), kern(7, S_SMALL, U(100), 0));
	tl_op(&t, B + U(4000), k7);
	tl_sample(&t, 5200, 0, 0, GIB, 8 * GIB, 1200, 100000, 50, 0);
	tl_op(&t, B + U(9600), kern(7, S_GEMM, U(400), 0));
	tl_end(&t, B + U(10000));
	tl_close(&t);
}

/* Whether the numbers of array path of d are want[0..n) (NAN: null). */
static bool series_is(const cJSON *d, const char *path, const double *want, int n)
{
	const cJSON *a = isc_doc_get(d, path);
	if (cJSON_GetArraySize(a) != n)
		return false;
	for (int i = 0; i < n; i++) {
		const cJSON *x = cJSON_GetArrayItem(a, i);
		if (isnan(want[i]) ? !cJSON_IsNull(x) : !cJSON_IsNumber(x) || x->valuedouble != want[i]) {
			printf("# %s[%d]: want %g\n", path, i, want[i]);
			return false;
		}
	}
	return true;
}

static void test_gaps_nvml(void)
{
	FILE *f = tmpfile();
	write_d(f);
	cJSON *d = analyze(f, false);
	const cJSON *g0 = at(d, "gpu.gaps.top", 0), *g1 = at(d, "gpu.gaps.top", 1), *g2 = at(d, "gpu.gaps.top", 2);
	ok(N(d, "gpu.gaps.threshold_ns") == 1e6 && N(d, "gpu.gaps.count") == 3 && N(d, "gpu.gaps.total_ns") == U(10500) &&
	   cJSON_GetArraySize(isc_doc_get(d, "gpu.gaps.top")) == 3, "gaps of 1 ms or more: 3, 10.5 ms (0.5 ms left out)");
	ok(N(g0, "device") == 0 && N(g0, "start_ns") == U(3600) && N(g0, "end_ns") == U(9600) && N(g0, "dur_ns") == U(6000) &&
	   N(g1, "device") == 1 && N(g1, "start_ns") == U(1500) && N(g1, "dur_ns") == U(2500) && N(g2, "device") == 0 &&
	   N(g2, "start_ns") == U(800) && N(g2, "end_ns") == U(2800),
	   "longest first, times relative to summary.start_ns, each device its own");
	const cJSON *d0 = by_id(isc_doc_get(d, "gpu.devices"), 0), *d1 = by_id(isc_doc_get(d, "gpu.devices"), 1);
	ok(N(d0, "busy_ns") == U(1400) && N(d1, "busy_ns") == U(600), "busy_ns: union of each device's ops");
	ok(N(d, "gpu.launch.api_total_ns") == U(12) && N(d, "gpu.launch.kernel_total_ns") == U(1100) &&
	   N(d, "gpu.launch.launches") == 1, "launch: 12 µs in calls (a graph launch once) for 1100 µs of their kernels");
	ok(cJSON_IsNull(isc_doc_get(d0, "link_bw_bytes_per_s")) && N(d0, "memory_total_bytes") == 40.0 * GIB &&
	   N(d0, "memory_peak_bytes") == 150000000 && !strcmp(S(d0, "memory_peak_source"), "allocations"),
	   "device 0: memory from its DEVICE record, peak of the net device allocations (pinned ones apart)");
	ok(N(d1, "link_bw_bytes_per_s") == 31507692304.0 && N(d1, "memory_total_bytes") == 16.0 * GIB &&
	   N(d1, "memory_peak_bytes") == 2.0 * GIB && !strcmp(S(d1, "memory_peak_source"), "nvml"),
	   "device 1: link and memory from NVML, peak NVML used memory");
	const cJSON *n0 = at(d, "gpu.nvml", 0), *n1 = at(d, "gpu.nvml", 1);
	ok(cJSON_GetArraySize(isc_doc_get(d, "gpu.nvml")) == 2 && N(n0, "device") == 0 && N(n0, "samples") == 3 &&
	   N(n0, "util_gpu_pct_mean") == 40 && N(n0, "mem_used_max_bytes") == 3.0 * GIB &&
	   N(n0, "mem_total_bytes") == 8.0 * GIB, "nvml device 0: 3 samples, 40 %% mean, 3 of 8 GiB");
	ok(N(n0, "sm_mhz_min") == 1000 && N(n0, "sm_mhz_max") == 1500 && N(n0, "temp_c_max") == 70 &&
	   N(n0, "power_w_max") == 300.5, "nvml device 0: clocks 1000..1500 MHz, 70 C, 300.5 W");
	const cJSON *r0 = isc_doc_get(n0, "throttle_reasons"), *r1 = isc_doc_get(n1, "throttle_reasons");
	ok(N(n0, "throttled_samples") == 1 && cJSON_GetArraySize(r0) == 3 && N(r0, "gpu_idle") == 1 &&
	   N(r0, "sw_power_cap") == 1 && N(r0, "sw_thermal") == 1,
	   "nvml device 0: reasons decoded; gpu_idle is no throttling, power cap + thermal is one throttled sample");
	ok(N(n1, "samples") == 1 && cJSON_IsNull(isc_doc_get(n1, "sm_mhz_min")) &&
	   cJSON_IsNull(isc_doc_get(n1, "temp_c_max")) && cJSON_IsNull(isc_doc_get(n1, "power_w_max")) &&
	   N(n1, "throttled_samples") == 1 && cJSON_GetArraySize(r1) == 2 && N(r1, "hw_slowdown") == 1 &&
	   N(r1, "hw_thermal") == 1, "nvml device 1: unread values are null; hw_slowdown + hw_thermal");
	ok(N(n0, "busy_samples") == 2 && N(n0, "throttled_busy_samples") == 1 && N(n0, "busy_ns") == U(900) &&
	   N(n0, "throttled_busy_ns") == U(400) && N(n0, "sm_mhz_min_throttled") == 1500 && N(n0, "sm_mhz_max_busy") == 1500,
	   "nvml device 0: the gpu_idle sample is no work; 2 samples with work, 1 throttled (400 of 900 us)");
	ok(N(n1, "busy_samples") == 0 && N(n1, "throttled_busy_samples") == 0 && N(n1, "throttled_busy_ns") == 0 &&
	   cJSON_IsNull(isc_doc_get(n1, "sm_mhz_min_throttled")) && cJSON_IsNull(isc_doc_get(n1, "sm_mhz_max_busy")),
	   "nvml device 1: throttled before its first op: no throttled work");
	static const double busy[10] = { 70, 50, 20, 10, 10, 0, 0, 0, 0, 40 };
	double util[10], mem[10];
	for (int i = 0; i < 10; i++)
		util[i] = mem[i] = NAN;
	util[0] = 43.333;
	util[5] = 0;
	mem[0] = 5.0 * GIB;
	mem[5] = 3.0 * GIB;
	ok(N(d, "timeseries.bucket_ns") == 1e6 && series_is(d, "timeseries.gpu_busy_pct", busy, 10),
	   "timeseries.gpu_busy_pct: union of all devices per 1 ms bucket");
	ok(series_is(d, "timeseries.gpu_util_pct", util, 10) && series_is(d, "timeseries.gpu_mem_used_bytes", mem, 10),
	   "timeseries: NVML utilization (mean of the samples), used memory (max of the sum over devices)");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Scenario E (µs), device 0, stream 7, scope("step") on the host thread:
 *   call c1 [0,1) -> K0 gemm [5,15)                       start-up
 *   step #1 [100,200): c2 [110,111) -> K1 gemm [120,150)  the warm-up
 *   step #2 [300,400): c3 [310,311) -> K2 gemm [320,380); NVML sample at
 *            350; feed [380,395) (the GPU idle from 380 to K3 at 520)
 *   cudaStreamSynchronize [420,430); NVML sample at 450   between steps
 *   step #3 [500,600): c4 [505,506) -> K3 nccl [520,540); c5 [550,551) ->
 *            K4 gemm [590,650) (past the step's end); cudaStreamSynchronize
 *            [560,580)
 *   step #4 from 700, never ended: c6 [710,711) -> K5 gemm [720,730)
 * Steady: #2 and #3 (#4 is incomplete: its window is not counted).
 * Window 100 + 100 = 200; busy inside: K2 60, K3 20, K4's [590,600) 10 =
 * 90; compute (nccl is not): 70; idle 110.  Launched inside steady steps:
 * K2, K3, K4, K5 (4 ops, 4 kernels, 4 launches).  share: busy of the ops
 * launched from 300 on: 60 + 20 + 60 + 10 = 150, of which 90 inside: 60 %.
 * Sync calls inside: the 20 µs one (the run: 30).  NVML inside: 1 sample
 * (the run: 2).  Host during idle inside: feed, 15 of 110 µs (13.64 %).
 * Whole run unchanged: 6 kernels, span 725, busy 190.
 */
static void write_e(FILE *f)
{
	struct tl t;
	uint64_t nv[12] = { 0, 50, 0, GIB, 8 * GIB, 1400, 800, 200000, 60, 0, 0, 0 };
	tl_open(&t, f);
	strings(&t);
	tl_device(&t, 0, "Test GPU");
	tl_api(&t, U(0), U(1), S_LAUNCH, 1);
	tl_op(&t, U(5), kern(7, S_GEMM, U(10), 1));
	tl_begin(&t, U(100), ISC_SPAN_SCOPE, S_SCOPE_STEP);
	tl_api(&t, U(110), U(1), S_LAUNCH, 2);
	tl_op(&t, U(120), kern(7, S_GEMM, U(30), 2));
	tl_end(&t, U(200));
	tl_begin(&t, U(300), ISC_SPAN_SCOPE, S_SCOPE_STEP);
	tl_api(&t, U(310), U(1), S_LAUNCH, 3);
	tl_op(&t, U(320), kern(7, S_GEMM, U(60), 3));
	tl_raw(&t, ISC_REC_GPU_SAMPLE, U(350), nv, 12);
	tl_begin(&t, U(380), ISC_SPAN_PYTHON, S_FEED);
	tl_end(&t, U(395));
	tl_end(&t, U(400));
	tl_api(&t, U(420), U(10), S_SSYNCA, 0);
	tl_raw(&t, ISC_REC_GPU_SAMPLE, U(450), nv, 12);
	tl_begin(&t, U(500), ISC_SPAN_SCOPE, S_SCOPE_STEP);
	tl_api(&t, U(505), U(1), S_LAUNCH, 4);
	tl_op(&t, U(520), kern(7, S_NCCL, U(20), 4));
	tl_api(&t, U(550), U(1), S_LAUNCH, 5);
	tl_api(&t, U(560), U(20), S_SSYNCA, 0);
	tl_op(&t, U(590), kern(7, S_GEMM, U(60), 5));
	tl_end(&t, U(600));
	tl_begin(&t, U(700), ISC_SPAN_SCOPE, S_SCOPE_STEP);
	tl_api(&t, U(710), U(1), S_LAUNCH, 6);
	tl_op(&t, U(720), kern(7, S_GEMM, U(10), 6));
	tl_close(&t);
}

static void test_iterations(void)
{
	FILE *f = tmpfile();
	write_e(f);
	cJSON *prev = NULL;
	for (int hta = 0; hta < 2; hta++) {
		cJSON *d = analyze(f, hta);
		const char *m = hta ? "hta-compat" : "exact";
		const cJSON *it = isc_doc_get(d, "gpu.in_iterations"), *d0 = at(it, "devices", 0);
		ok(N(d, "iterations.samples") == 2 && !strcmp(S(it, "scope"), "step") && N(it, "iterations") == 2 &&
		   N(it, "window_ns") == U(200), "%s: 2 steady steps (the warm-up and the incomplete one out), 200 us", m);
		ok(cJSON_GetArraySize(isc_doc_get(it, "devices")) == 1 && N(d0, "busy_ns") == U(90) &&
		   N(d0, "temporal_breakdown.span_ns") == U(200) && N(d0, "temporal_breakdown.idle_ns") == U(110) &&
		   N(d0, "temporal_breakdown.compute_ns") == U(70) && N(d0, "temporal_breakdown.non_compute_ns") == U(20) &&
		   N(d0, "temporal_breakdown.compute_pct") == 35, "%s: inside the steps busy 90, compute 70, idle 110 of 200", m);
		ok(N(it, "ops") == 4 && N(it, "kernels.count") == 4 && N(it, "launch.launches") == 4 &&
		   N(d0, "ops") == 4 && N(at(d0, "streams", 0), "ops") == 4,
		   "%s: the 4 ops launched inside steady steps (K5's step never ended, launched inside all the same)", m);
		ok(N(it, "share_pct") == 60, "%s: share 90 of 150 us launched from the first steady step on (%g)", m,
		   N(it, "share_pct"));
		ok(N(it, "sync.api_total_ns") == U(20) && N(d, "gpu.sync.api_total_ns") == U(30) &&
		   cJSON_GetArraySize(isc_doc_get(it, "nvml")) == 1 && N(at(it, "nvml", 0), "samples") == 1 &&
		   N(at(d, "gpu.nvml", 0), "samples") == 2, "%s: the sync call and the NVML sample inside, not those between", m);
		const cJSON *h = at(d0, "host_during_idle.python", 0);
		ok(N(d0, "host_during_idle.idle_ns") == U(110) && !strcmp(S(h, "name"), "feed") && N(h, "idle_ns") == U(15) &&
		   N(h, "idle_pct") == 13.64, "%s: host during idle inside: feed, 15 of 110 us", m);
		ok(N(d, "gpu.kernels.count") == 6 && (hta || (N(at(d, "gpu.devices", 0), "temporal_breakdown.span_ns") == U(725) &&
							     N(at(d, "gpu.devices", 0), "busy_ns") == U(190))),
		   "%s: the whole run's figures stay: 6 kernels, span 725, busy 190", m);
		if (prev) {
			char *a = cJSON_PrintUnformatted(isc_doc_get(prev, "gpu.in_iterations")), *b = cJSON_PrintUnformatted(it);
			ok(a && b && !strcmp(a, b), "--hta-compat: the same in_iterations (exact times)");
			free(a);
			free(b);
		}
		cJSON_Delete(prev);
		prev = d;
	}
	cJSON_Delete(prev);
	fclose(f);
}

/*
 * Scenario F: device memory by site, every figure by site read from the
 * allocation site model (memory.sites).  Host thread of pid HOST, times in
 * ms from B; each allocation is a cudaMalloc (correlation c) and its
 * CUPTI memory record 1 µs later, inside the Python function shown:
 *   1  feed       +100 MB at A1
 *   3  wait_loop  +300 MB at A2
 *   4  wait_loop  + 50 MB at A3      device 450 MB: the peak
 *   5  cudaFree A2 (-300 MB)
 *   7  feed       +200 MB at A4
 *   300           cudaFree A3 (-50 MB): the run outgrows 256 buckets of
 *                 1 ms, the grid doubles to 2 ms after both sites changed
 *   310 teardown  cudaMalloc fails (out of memory); the workload exits 1
 * At the peak (4 ms): wait_loop 350 MB (77.77 %), feed 100 MB (22.22 %).
 * At the end: feed 300 MB, wait_loop 0.  oom: cuda_oom at teardown
 * (serve.py:30), which allocated nothing: no memory.sites entry.
 */
#define MB 1000000ull
static const struct fmem {
	uint64_t ms, corr, address, bytes;
	uint32_t fn;  /* the Python function open (0: none, a release) */
	bool alloc;
} F_MEM[] = {
	{ 1, 11, 0xA1000, 100 * MB, S_FEED, true },  { 3, 12, 0xA2000, 300 * MB, S_WAIT, true },
	{ 4, 13, 0xA3000, 50 * MB, S_WAIT, true },   { 5, 14, 0xA2000, 300 * MB, 0, false },
	{ 7, 15, 0xA4000, 200 * MB, S_FEED, true },  { 300, 16, 0xA3000, 50 * MB, 0, false },
};
#define F_N (sizeof(F_MEM) / sizeof(F_MEM[0]))

/* A CUPTI memory record of device 0 at ts on the host process: fields device stream op kind bytes address corr flags. */
static void tl_mem_of(struct tl *t, uint64_t ts, bool alloc, uint64_t bytes, uint64_t address, uint64_t corr)
{
	struct isc_buf r = { 0 };
	uint64_t f[8] = { 0, 0, alloc ? 1 : 2, ISC_MEM_DEVICE, bytes, address, corr, 0 };
	for (int i = 0; i < 8; i++)
		isc_buf_put_varint(&r, f[i]);
	tl_put(t, ISC_REC_GPU_MEMORY, ts, HOST, HOST, &r);
	isc_buf_free(&r);
}

/*
 * after: the workload goes on after the failure before it exits (scenario
 * F'): at 320 ms feed releases A4 (200 MB), at 330 ms wait_loop allocates
 * 300 MB at A5.  At the failure (310 ms) device 0 held 300 MB, all feed's
 * (A1 100 + A4 200; wait_loop had released all it made); at the end feed
 * 100 and wait_loop 300.
 */
static void write_f_as(FILE *f, bool after, const char *exc_msg);

static void write_f(FILE *f, bool after)
{
	write_f_as(f, after, NULL);
}

/*
 * exc_msg: no failed cudaMalloc is recorded (as with Kineto's [memory]
 * events); instead teardown raises torch.OutOfMemoryError with exc_msg at
 * 310.001 ms, an EXCEPTION record of the Python agent.
 */
static void write_f_as(FILE *f, bool after, const char *exc_msg)
{
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_device(&t, 0, "Test GPU");
	for (size_t i = 0; i < F_N; i++) {
		const struct fmem *e = &F_MEM[i];
		uint64_t ts = B + U(e->ms * 1000);
		if (e->fn)
			tl_begin(&t, ts - U(1), ISC_SPAN_PYTHON, e->fn);
		tl_api(&t, ts, U(5), e->alloc ? S_MALLOC : S_FREE, e->corr);
		tl_mem_of(&t, ts + U(1), e->alloc, e->bytes, e->address, e->corr);
		if (e->fn)
			tl_end(&t, ts + U(10));
	}
	/* the failed cudaMalloc in teardown, then the exit status 1 */
	struct isc_tl_event ev = { .type = ISC_REC_GPU_API, .name_id = S_MALLOC };
	struct isc_buf r = { 0 };
	ev.gpu.dur_ns = U(5);
	ev.gpu.correlation = 17;
	ev.gpu.kind = 1;
	ev.gpu.flags = ISC_GPU_API_FLAG_ERROR;
	if (isc_gpu_encode(&r, &ev))
		abort();
	tl_begin(&t, B + U(310000), ISC_SPAN_PYTHON, S_TEAR);
	if (exc_msg) { /* EXCEPTION: line, counted type, file, function, then the message */
		static const char type[] = "torch.OutOfMemoryError", file[] = "serve.py", fn[] = "teardown";
		r.len = 0;
		isc_buf_put_varint(&r, 31);
		isc_buf_put_bytes(&r, type, sizeof(type) - 1);
		isc_buf_put_bytes(&r, file, sizeof(file) - 1);
		isc_buf_put_bytes(&r, fn, sizeof(fn) - 1);
		isc_buf_put(&r, exc_msg, strlen(exc_msg));
		tl_put(&t, ISC_REC_EXCEPTION, B + U(310001), HOST, HOST, &r);
	} else {
		tl_put(&t, ISC_REC_GPU_API, B + U(310001), HOST, HOST, &r);
	}
	tl_end(&t, B + U(310010));
	isc_buf_free(&r);
	for (int i = 0; after && i < 2; i++) {
		uint64_t ts = B + U(320000 + 10000 * i);
		if (i)
			tl_begin(&t, ts - U(1), ISC_SPAN_PYTHON, S_WAIT);
		tl_api(&t, ts, U(5), i ? S_MALLOC : S_FREE, 18 + i);
		tl_mem_of(&t, ts + U(1), i == 1, i ? 300 * MB : 200 * MB, i ? 0xA5000 : 0xA4000, 18 + i);
		if (i)
			tl_end(&t, ts + U(10));
	}
	t.status = 1;
	tl_close(&t);
}

/* The memory.sites entry of device 0 named name (NULL: none). */
static const cJSON *dev_site_of(const cJSON *d, const char *name)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, isc_doc_get(d, "memory.sites"))
		if (!strcmp(S(x, "memory"), "device") && N(x, "device") == 0 && !strcmp(S(x, "name"), name))
			return x;
	return NULL;
}

/*
 * Live bytes of the function fn at the end of each bucket of over_time
 * (start, width), worked out from F_MEM alone: the allocations made in fn
 * and not yet released by the bucket's end.
 */
static double f_live(uint32_t fn, double end_ns)
{
	double live = 0;
	for (size_t i = 0; i < F_N; i++) {
		if ((double)(B + U(F_MEM[i].ms * 1000) + U(1)) >= end_ns)
			break;
		uint32_t owner = F_MEM[i].fn;
		for (size_t k = 0; !owner && k < i; k++) /* a release: the allocation at its address */
			if (F_MEM[k].alloc && F_MEM[k].address == F_MEM[i].address)
				owner = F_MEM[k].fn;
		if (owner == fn)
			live += F_MEM[i].alloc ? (double)F_MEM[i].bytes : -(double)F_MEM[i].bytes;
	}
	return live;
}

static void test_memory_sites(void)
{
	FILE *f = tmpfile();
	write_f(f, false);
	cJSON *d = analyze(f, false);
	const cJSON *m = isc_doc_get(at(d, "gpu.devices", 0), "memory");
	const cJSON *p0 = at(m, "peak_sites", 0), *p1 = at(m, "peak_sites", 1);
	const cJSON *wait = dev_site_of(d, "wait_loop"), *feed = dev_site_of(d, "feed");
	ok(N(m, "peak_bytes") == 450 * MB && cJSON_GetArraySize(isc_doc_get(m, "peak_sites")) == 2 &&
	   !strcmp(S(p0, "name"), "wait_loop") && N(p0, "bytes") == 350 * MB && N(p0, "pct_of_peak") == 77.77 &&
	   N(p0, "allocations") == 2 && N(p0, "line") == 20 && !strcmp(S(p1, "name"), "feed") && N(p1, "bytes") == 100 * MB &&
	   N(p1, "pct_of_peak") == 22.22 && N(p1, "allocations") == 2 && N(m, "peak_sites_other_bytes") == 0,
	   "peak_sites: at the 450 MB peak wait_loop 350 MB (2 allocations), feed 100 MB (not its 300 MB at the end)");
	ok(wait && feed && N(wait, "live_peak_bytes") == N(p0, "bytes") && N(feed, "live_peak_bytes") == N(p1, "bytes") &&
	   N(wait, "live_end_bytes") == 0 && N(feed, "live_end_bytes") == 300 * MB && N(feed, "allocated_bytes") == 300 * MB,
	   "peak_sites are the site model's: memory.sites' live_peak_bytes, the same numbers");
	/* over_time: 2 ms buckets (after the doubling) from the first memory record, B + 1 ms + 1 µs */
	double start = N(m, "over_time.start_ns"), width = N(m, "over_time.bucket_ns");
	const cJSON *ss = isc_doc_get(m, "over_time.sites"), *al = isc_doc_get(m, "over_time.allocated_bytes");
	int nb = cJSON_GetArraySize(al), bad = cJSON_GetArraySize(ss) != 2;
	for (int i = 0; i < 2 && !bad; i++) {
		const cJSON *x = cJSON_GetArrayItem(ss, i), *v = isc_doc_get(x, "bytes");
		uint32_t fn = i ? S_FEED : S_WAIT;
		bad += strcmp(S(x, "name"), i ? "feed" : "wait_loop") != 0 || cJSON_GetArraySize(v) != nb;
		for (int b = 0; b < nb && b < cJSON_GetArraySize(v); b++) {
			double want = f_live(fn, start + (b + 1) * width); /* the document's time 0: the DEVICE record's, 0 */
			if (cJSON_GetArrayItem(v, b)->valuedouble != want) {
				if (!bad++)
					printf("# %s bucket %d: %g, want %g\n", S(x, "name"), b, cJSON_GetArrayItem(v, b)->valuedouble, want);
			}
		}
	}
	for (int b = 0; b < nb && !bad; b++) /* the sites' series add up to the device's */
		bad += cJSON_GetArrayItem(al, b)->valuedouble !=
		       cJSON_GetArrayItem(isc_doc_get(cJSON_GetArrayItem(ss, 0), "bytes"), b)->valuedouble +
			       cJSON_GetArrayItem(isc_doc_get(cJSON_GetArrayItem(ss, 1), "bytes"), b)->valuedouble;
	ok(start == B + U(1001) && width == 2e6 && nb == 150 && !bad,
	   "over_time.sites: each bucket's end as worked out from the records, after the grid doubled (%d wrong)", bad);
	ok(!strcmp(S(d, "oom.kind"), "cuda_oom") && !strcmp(S(d, "oom.site.name"), "teardown") &&
	   N(d, "oom.site.line") == 30 && !strcmp(S(d, "oom.site_source"), "allocation") &&
	   N(d, "oom.memory_at_end.gpu_live_bytes") == 300 * MB && N(m, "failures.count") == 1 && !dev_site_of(d, "teardown"),
	   "a CUDA OOM's site is the model's site of the failed cudaMalloc (teardown:30), which holds nothing: no memory.sites entry");
	cJSON_Delete(d);
	fclose(f);
}

/* Finding id of d's findings[] (NULL: none). */
static const cJSON *finding(const cJSON *d, const char *id)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, isc_doc_get(d, "findings"))
		if (!strcmp(S(x, "id"), id))
			return x;
	return NULL;
}

/*
 * Scenario F' (write_f after): what held the device when the allocation
 * failed is what it held then, not at the end: feed 300 MB, 100 % of the
 * 300 MB live at 310 ms; wait_loop, which held nothing then, is no
 * contributor though it holds 300 of the 400 MB at the end.
 */
static void test_oom_at_failure(void)
{
	FILE *f = tmpfile();
	write_f(f, true);
	cJSON *d = analyze(f, false);
	const cJSON *af = isc_doc_get(d, "oom.device_at_failure"), *s0 = at(af, "sites", 0);
	ok(N(d, "oom.memory_at_end.gpu_live_bytes") == 400 * MB && N(af, "device") == 0 &&
	   N(af, "at_ns") == B + U(310001) && N(af, "live_bytes") == 300 * MB &&
	   cJSON_GetArraySize(isc_doc_get(af, "sites")) == 1 && !strcmp(S(s0, "name"), "feed") &&
	   N(s0, "line") == 10 && !strcmp(S(s0, "kind"), "python") && N(s0, "live_bytes") == 300 * MB,
	   "oom.device_at_failure: 300 MB live on device 0 at the failed cudaMalloc, all feed's (400 MB at the end)");
	const cJSON *o = finding(d, "oom"), *t0 = at(o, "evidence.top", 0), *t1 = at(o, "evidence.top", 1);
	ok(o && cJSON_GetArraySize(isc_doc_get(o, "evidence.top")) == 2 && !strcmp(S(t0, "name"), "teardown") &&
	   !strcmp(S(t1, "name"), "feed") && N(t1, "value_bytes") == 300 * MB && N(t1, "pct") == 100 &&
	   N(o, "evidence.metrics.gpu_live_at_failure_bytes") == 300 * MB,
	   "the oom finding: teardown, then feed with its 300 MB at the failure, 100 %% (not 100 MB at the end, nor wait_loop)");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Scenario F'' (write_f_as after, with an exception): as F', but the failed
 * cudaMalloc is not recorded; teardown raises torch.OutOfMemoryError
 * naming GPU 0 at 310.001 ms.  By hand, as for F': device 0 held 300 MB
 * then, all feed's (A1 100 + A4 200; wait_loop's A2 and A3 released at 5
 * and 300 ms); at the end feed 100, wait_loop 300.  So device_at_failure
 * is 300 MB of feed on device 0 at the error's time, basis exception, and
 * the oom finding's contributor feed 300 MB, 100 % (before: no
 * device_at_failure; wait_loop 300 MB 75 %, feed 100 MB 25 %, at the end).
 * A message naming GPU 1, which has no memory records: no snapshot, the
 * finding falls back to live at the end.
 */
static void test_oom_at_exception(void)
{
	FILE *f = tmpfile();
	write_f_as(f, true, "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
			    "of which 1.10 GiB is free.");
	cJSON *d = analyze(f, false);
	const cJSON *af = isc_doc_get(d, "oom.device_at_failure"), *s0 = at(af, "sites", 0);
	ok(!strcmp(S(d, "oom.kind"), "cuda_oom") && !strcmp(S(d, "oom.site_source"), "exception"),
	   "an exception-only CUDA OOM: cuda_oom, its site from the exception");
	ok(cJSON_IsObject(af) && !strcmp(S(af, "basis"), "exception") && N(af, "device") == 0 &&
	   N(af, "at_ns") == B + U(310001) && N(af, "live_bytes") == 300 * MB &&
	   cJSON_GetArraySize(isc_doc_get(af, "sites")) == 1 && !strcmp(S(s0, "name"), "feed") && N(s0, "line") == 10 &&
	   N(s0, "live_bytes") == 300 * MB,
	   "oom.device_at_failure without a failed allocation: 300 MB of feed on device 0 when the error was raised "
	   "(400 MB at the end), basis exception");
	const cJSON *o = finding(d, "oom"), *t1 = at(o, "evidence.top", 1);
	ok(o && cJSON_GetArraySize(isc_doc_get(o, "evidence.top")) == 2 && !strcmp(S(t1, "name"), "feed") &&
	   N(t1, "value_bytes") == 300 * MB && N(t1, "pct") == 100 &&
	   strstr(S(t1, "detail"), "when the out-of-memory error was raised") &&
	   N(o, "evidence.metrics.gpu_live_at_failure_bytes") == 300 * MB,
	   "the oom finding: feed with its 300 MB when the error was raised, 100 %% (not wait_loop's 300 MB at the end)");
	char *md = NULL;
	ok(!isc_report_render(d, ISC_REPORT_MD, &md) && md &&
	   strstr(md, "When the out-of-memory error was raised (its failed allocation was not recorded)") &&
	   !strstr(md, "When the allocation failed"),
	   "report: what the device held when the error was raised, said as such");
	free(md);
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	write_f_as(f, true, "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 15.90 GiB total capacity)");
	d = analyze(f, false);
	o = finding(d, "oom");
	const cJSON *e0 = at(o, "evidence.top", 1), *e1 = at(o, "evidence.top", 2);
	ok(cJSON_IsNull(isc_doc_get(d, "oom.device_at_failure")) && e0 && e1 && !strcmp(S(e0, "name"), "wait_loop") &&
	   N(e0, "value_bytes") == 300 * MB && !strcmp(S(e1, "name"), "feed") && N(e1, "value_bytes") == 100 * MB,
	   "an error naming GPU 1, which has no memory records: no device_at_failure; live at the end (wait_loop 300, "
	   "feed 100 MB)");
	cJSON_Delete(d);
	fclose(f);
}

/*
 * Scenario G (ms from B), device 0, CUPTI memory records in scope("step")
 * iterations (an address, or 0: paired by size), all on the host thread:
 *   start-up   W +100 MB at A0
 *   step 1     T +10 at A1, -A1                      (the warm-up)
 *   step 2     X +20 at A2, -A2; K +8 at A3; S +4 (no address), -4 (no
 *              address); a release at A9, which nothing allocated
 *   step 3     -A3 (K, made in step 2); Y +20 at A4, -A4; Z +30 at A5;
 *              Z' +30 at A5 again (Z's release was lost: Z ends here)
 *   after      -A5
 * Churn, between the ends of step 1 and step 3 (2 iterations): X K S Y Z
 * Z', 6 allocations, 112 MB: 3 and 56 MB an iteration.  Released in the
 * iteration that made them: X, S (step 2), Y, Z (step 3): 4 of 6,
 * 66.66 %; K was made in step 2 and released in step 3.  Baseline: the
 * least live bytes at a step's end after the first: step 2 108 MB (W K),
 * step 3 130 (W Z').  Allocations 8, releases 7 (1 unmatched), peak 130
 * MB, end 100 MB (W).
 */
static const struct gmem {
	uint64_t ms, address, bytes;
	int op; /* 1 alloc, 2 release, 'b' scope begin, 'e' scope end */
} G_MEM[] = {
	{ 1, 0xA0, 100 * MB, 1 }, { 2, 0, 0, 'b' }, { 3, 0xA1, 10 * MB, 1 }, { 4, 0xA1, 10 * MB, 2 },
	{ 5, 0, 0, 'e' },        { 6, 0, 0, 'b' }, { 7, 0xA2, 20 * MB, 1 }, { 8, 0xA2, 20 * MB, 2 },
	{ 9, 0xA3, 8 * MB, 1 },  { 10, 0, 4 * MB, 1 }, { 11, 0, 4 * MB, 2 }, { 12, 0xA9, 7 * MB, 2 },
	{ 13, 0, 0, 'e' },       { 14, 0, 0, 'b' }, { 15, 0xA3, 8 * MB, 2 }, { 16, 0xA4, 20 * MB, 1 },
	{ 17, 0xA4, 20 * MB, 2 }, { 18, 0xA5, 30 * MB, 1 }, { 19, 0xA5, 30 * MB, 1 }, { 20, 0, 0, 'e' },
	{ 21, 0xA5, 30 * MB, 2 },
};

static void write_g(FILE *f)
{
	struct tl t;
	tl_open(&t, f);
	strings(&t);
	tl_device(&t, 0, "Test GPU");
	for (size_t i = 0; i < sizeof(G_MEM) / sizeof(G_MEM[0]); i++) {
		const struct gmem *e = &G_MEM[i];
		uint64_t ts = B + U(e->ms * 1000);
		if (e->op == 'b')
			tl_begin(&t, ts, ISC_SPAN_SCOPE, S_SCOPE_STEP);
		else if (e->op == 'e')
			tl_end(&t, ts);
		else
			tl_mem_of(&t, ts, e->op == 1, e->bytes, e->address, 0);
	}
	tl_close(&t);
}

static void test_churn(void)
{
	FILE *f = tmpfile();
	write_g(f);
	cJSON *d = analyze(f, false);
	const cJSON *m = isc_doc_get(at(d, "gpu.devices", 0), "memory");
	ok(N(m, "churn.iterations") == 2 && N(m, "churn.allocations_per_iteration") == 3 &&
	   N(m, "churn.bytes_per_iteration") == 56 * MB,
	   "churn: 6 allocations, 112 MB over the 2 iterations after the warm-up");
	ok(N(m, "churn.short_lived_pct") == 66.66,
	   "churn: 4 of the 6 released in the iteration that made them (by address, by size, a lost release) (%g)",
	   N(m, "churn.short_lived_pct"));
	ok(N(m, "baseline_bytes") == 108 * MB && N(m, "allocations") == 8 && N(m, "releases") == 7 &&
	   N(m, "releases_unmatched") == 1 && N(m, "peak_bytes") == 130 * MB && N(m, "end_bytes") == 100 * MB &&
	   !strcmp(S(m, "pairing"), "size"),
	   "totals: baseline 108 MB, 8 allocations, 7 releases (1 unmatched), peak 130 MB, end 100 MB");
	cJSON_Delete(d);
	fclose(f);
}

int main(void)
{
	test_exact();
	test_step_rule();
	test_rounding();
	test_nested_ops();
	test_graph();
	test_bounded();
	test_linked();
	test_nested_driver_call();
	test_nested_driver_launch();
	test_call_sites();
	test_gaps_nvml();
	test_iterations();
	test_memory_sites();
	test_oom_at_failure();
	test_oom_at_exception();
	test_churn();
	test_cpu_only_and_report();
	return tap_done();
}
