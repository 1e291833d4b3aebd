/*
 * test_gpu_merge.c - the GPU record codec and the merge of CUDA agent
 * records (GPU_EVENTS chunks) on synthetic traces whose every byte is
 * known: order by start within the announced delay, launch links by
 * correlation id, the Python span of the launching call, the clock check,
 * late records.  TAP.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "isc_merge.h"
#include "../unit/tap.h"
#include "../unit/tracegen.h"

#define PID 100
#define TID 101
#define EPOCH 1000
#define CUPTI_BUILT 130001 /* what GPU_AGENT says; the merge does not look */

/* ---- codec -------------------------------------------------------------- */

static bool same(const struct isc_gpu_fields *a, const struct isc_gpu_fields *b)
{
	return a->device == b->device && a->stream == b->stream && a->kind == b->kind && a->dur_ns == b->dur_ns &&
	       a->correlation == b->correlation && a->bytes == b->bytes && a->copy_kind == b->copy_kind &&
	       a->src_mem == b->src_mem && a->dst_mem == b->dst_mem && a->has_launch == b->has_launch &&
	       !memcmp(a->grid, b->grid, sizeof(a->grid)) && !memcmp(a->block, b->block, sizeof(a->block)) &&
	       a->registers == b->registers && a->shared_mem == b->shared_mem && a->has_link == b->has_link &&
	       a->api_tid == b->api_tid && a->launch_span_id == b->launch_span_id &&
	       a->launch_gap_ns == b->launch_gap_ns && a->has_context == b->has_context && a->context == b->context;
}

static void test_codec(void)
{
	struct isc_tl_event ev, out;
	struct isc_buf b = { 0 };
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_GPU_OP;
	ev.name_id = 77;
	ev.gpu = (struct isc_gpu_fields){ .device = 1, .stream = 7, .kind = ISC_GPU_KERNEL, .dur_ns = 5000,
					  .correlation = 42, .flags = ISC_GPU_FLAG_GRAPH, .grid = { 8, 4, 2 },
					  .block = { 256, 2, 1 }, .registers = 32, .shared_mem = 4096, .has_launch = true,
					  .has_link = true, .api_tid = 123, .launch_span_id = 99, .launch_gap_ns = -300,
					  .has_context = true, .context = 3 };
	isc_gpu_encode(&b, &ev);
	memset(&out, 0, sizeof(out));
	ok(!isc_gpu_decode(&out, ISC_REC_GPU_OP, b.data, b.len) && same(&ev.gpu, &out.gpu) && out.name_id == 77 &&
		   out.gpu.flags == (ISC_GPU_FLAG_GRAPH | ISC_GPU_FLAG_LAUNCH | ISC_GPU_FLAG_LINK | ISC_GPU_FLAG_CONTEXT),
	   "GPU_OP with launch, link and context groups round-trips; the flags tell the groups");

	ev.gpu.has_launch = false;
	ev.gpu.has_context = false;
	memset(ev.gpu.grid, 0, sizeof(ev.gpu.grid)); /* not encoded without has_launch */
	memset(ev.gpu.block, 0, sizeof(ev.gpu.block));
	ev.gpu.registers = ev.gpu.shared_mem = 0;
	ev.gpu.context = 0;
	b.len = 0;
	isc_gpu_encode(&b, &ev);
	ok(!isc_gpu_decode(&out, ISC_REC_GPU_OP, b.data, b.len) && same(&ev.gpu, &out.gpu) && !out.gpu.has_launch,
	   "a link without a launch configuration is not taken for one");

	/* a body of before the presence flags: 11 fields, then the launch group */
	b.len = 0;
	uint64_t legacy[19] = { 0, 1, ISC_GPU_KERNEL, 5, 100, 9, 0, 0, 0, 0, ISC_GPU_FLAG_GRAPH, 2, 1, 1, 64, 1, 1, 16, 0 };
	for (int i = 0; i < 19; i++)
		isc_buf_put_varint(&b, legacy[i]);
	ok(!isc_gpu_decode(&out, ISC_REC_GPU_OP, b.data, b.len) && out.gpu.has_launch && out.gpu.block[0] == 64 &&
		   out.gpu.registers == 16 && !out.gpu.has_link,
	   "an old body with its launch group and no presence flag decodes it");

	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_GPU_API;
	ev.name_id = 5;
	ev.gpu = (struct isc_gpu_fields){ .dur_ns = 10, .correlation = 42, .kind = 1, .cbid = 211, .launch_span_id = 17 };
	b.len = 0;
	isc_gpu_encode(&b, &ev);
	ok(!isc_gpu_decode(&out, ISC_REC_GPU_API, b.data, b.len) && out.gpu.launch_span_id == 17 && out.gpu.cbid == 211,
	   "GPU_API keeps its span_id");
	ev.gpu.launch_span_id = 0;
	b.len = 0;
	isc_gpu_encode(&b, &ev);
	ok(!isc_gpu_decode(&out, ISC_REC_GPU_API, b.data, b.len) && out.gpu.launch_span_id == 0,
	   "GPU_API without span_id: 6 fields, span 0");
	isc_buf_free(&b);
}

/* ---- a sink that keeps everything --------------------------------------- */

struct kept {
	struct isc_tl_event ev;
	char meta[64];
};

struct keep {
	struct kept *ev;
	size_t n, cap;
	char *names[256];
};

static int k_string(void *ctx, const struct isc_tl_string *s)
{
	struct keep *k = ctx;
	if (s->id < 256)
		k->names[s->id] = strdup(s->name);
	return 0;
}

static int k_event(void *ctx, const struct isc_tl_event *ev)
{
	struct keep *k = ctx;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 64;
		k->ev = realloc(k->ev, k->cap * sizeof(*k->ev));
	}
	struct kept *e = &k->ev[k->n++];
	memset(e, 0, sizeof(*e));
	e->ev = *ev;
	e->ev.raw = e->ev.bytes = NULL;
	if (ev->type == ISC_REC_META && ev->nbytes < sizeof(e->meta))
		memcpy(e->meta, ev->bytes, ev->nbytes);
	return 0;
}

static const char *name(const struct keep *k, uint32_t id)
{
	return id < 256 && k->names[id] ? k->names[id] : "?";
}

static const struct kept *find(const struct keep *k, uint8_t type, int nth)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->ev[i].ev.type == type && nth-- == 0)
			return &k->ev[i];
	return NULL;
}

static void keep_free(struct keep *k)
{
	for (int i = 0; i < 256; i++)
		free(k->names[i]);
	free(k->ev);
}

static int merge_file(FILE *f, struct keep *k, struct isc_merge_result *res)
{
	struct isc_sink s = { k, NULL, k_string, k_event, NULL, NULL };
	struct isc_merge_input in = { f, "synthetic" };
	memset(k, 0, sizeof(*k));
	rewind(f);
	return isc_merge(&in, 1, &s, res);
}

/* ---- CUDA agent records, as the agent writes them ------------------------ */

/* A timed GPU record at trace time ts (when written) for an operation
 * that started at start: zigzag offset, tid, then n varints. */
static void gpu_rec(struct tg *g, uint8_t type, uint64_t ts, uint64_t start, uint32_t tid, int n, ...)
{
	struct isc_buf body = { 0 };
	va_list ap;
	isc_buf_put_varint(&body, isc_zigzag((int64_t)(start - ts)));
	isc_buf_put_varint(&body, tid);
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		isc_buf_put_varint(&body, va_arg(ap, uint64_t));
	va_end(ap);
	isc_buf_put_record(&g->b, type, ts, &g->last, body.data, body.len);
	isc_buf_free(&body);
}

static void kernel(struct tg *g, uint64_t ts, uint64_t start, uint64_t stream, uint64_t corr)
{
	gpu_rec(g, ISC_REC_GPU_OP, ts, start, 0, 11, (uint64_t)0, stream, (uint64_t)ISC_GPU_KERNEL,
		(uint64_t)ISC_STRING_ID_CUDA_BASE, (uint64_t)1000, corr, (uint64_t)0, (uint64_t)0, (uint64_t)0,
		(uint64_t)0, (uint64_t)0);
}

static void api(struct tg *g, uint64_t ts, uint64_t start, uint64_t corr)
{
	gpu_rec(g, ISC_REC_GPU_API, ts, start, TID, 6, (uint64_t)ISC_STRING_ID_CUDA_BASE + 1, (uint64_t)200, corr,
		(uint64_t)1, (uint64_t)211, (uint64_t)0);
}

static void agent(struct tg *g, uint64_t ts, uint64_t lag_ms)
{
	tg_rec(g, ISC_REC_GPU_AGENT, ts, 4, (uint64_t)CUPTI_BUILT, (uint64_t)CUPTI_BUILT, lag_ms, (uint64_t)100);
}

/*
 * The thread TID runs f() over [2000, 9000] (trace times).  The CUDA
 * agent's records come in one chunk written at 8000, out of order: two
 * kernels of one graph launch (corr 7, starting 4000 and 5000), a kernel
 * nobody launched that we know of (corr 9, at 3500), then the call
 * cudaLaunchKernel (corr 7) that started at 3000.
 */
static void test_links(void)
{
	FILE *f = tmpfile();
	struct tg g;
	struct keep k;
	struct isc_merge_result res;
	tg_open(&g, f, EPOCH, "boot");
	tg_begin(&g, 0);
	tg_string(&g, 1, ISC_STR_CODE, 3, "f", "w.py");
	tg_string(&g, ISC_STRING_ID_CUDA_BASE, ISC_STR_CFUNC, 0, "gemm", "");
	tg_string(&g, ISC_STRING_ID_CUDA_BASE + 1, ISC_STR_CFUNC, 0, "cudaLaunchKernel", "");
	tg_chunk(&g, ISC_CHUNK_STRINGS, PID, 0);
	tg_begin(&g, 0);
	agent(&g, 1900, 1);
	tg_chunk(&g, ISC_CHUNK_GPU_EVENTS, PID, TID);
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_PY_CALL, 2000, 1, (uint64_t)1);
	tg_rec(&g, ISC_REC_PY_RETURN, 9000, 0);
	tg_chunk(&g, ISC_CHUNK_EVENTS, PID, TID);
	tg_round(&g, 8000);
	tg_begin(&g, 1900);
	kernel(&g, 8000, 4000, 1, 7);
	kernel(&g, 8000, 5000, 1, 7);
	kernel(&g, 8000, 3500, 2, 9);
	api(&g, 8000, 3000, 7);
	tg_chunk(&g, ISC_CHUNK_GPU_EVENTS, PID, TID);
	tg_round(&g, UINT64_MAX);
	tg_close(&g, true);

	int rc = merge_file(f, &k, &res);
	ok(rc == 0, "the trace merges (%d)", rc);
	bool ordered = true;
	for (size_t i = 1; i < k.n; i++)
		ordered &= k.ev[i].ev.ts >= k.ev[i - 1].ev.ts;
	ok(ordered && res.late_events == 0, "time order kept, no late record (%llu)", (unsigned long long)res.late_events);

	const struct kept *span = find(&k, ISC_REC_TL_SPAN_BEGIN, 0), *call = find(&k, ISC_REC_GPU_API, 0);
	ok(span && call && call->ev.ts == 3000 - EPOCH && call->ev.pid == PID && call->ev.tid == TID &&
		   call->ev.gpu.launch_span_id == span->ev.span_id && !strcmp(name(&k, call->ev.name_id), "cudaLaunchKernel"),
	   "the call is at its start, on its thread, inside f()");
	const struct kept *k0 = find(&k, ISC_REC_GPU_OP, 0), *k1 = find(&k, ISC_REC_GPU_OP, 1),
			  *k2 = find(&k, ISC_REC_GPU_OP, 2);
	ok(k0 && k1 && k2 && k0->ev.ts == 3500 - EPOCH && k1->ev.ts == 4000 - EPOCH && k2->ev.ts == 5000 - EPOCH,
	   "operations at their starts, in order");
	ok(k0 && !k0->ev.gpu.has_link && k0->ev.pid == PID && k0->ev.tid == 0,
	   "an operation with an unknown correlation id has no link; context (pid, 0)");
	ok(k1 && k2 && k1->ev.gpu.has_link && k2->ev.gpu.has_link && k1->ev.gpu.api_tid == TID &&
		   k1->ev.gpu.launch_span_id == span->ev.span_id && k2->ev.gpu.launch_span_id == span->ev.span_id &&
		   k1->ev.gpu.launch_gap_ns == 1000 && k2->ev.gpu.launch_gap_ns == 2000,
	   "both kernels of the graph launch link to the one call, f() and their gaps");
	ok(k1 && !strcmp(name(&k, k1->ev.name_id), "gemm"), "the agent's string ids (from 2^25) are mapped");
	const struct kept *meta = find(&k, ISC_REC_META, 0);
	/* a META body's bytes are its key then its value */
	ok(meta && !strcmp(meta->meta, "gpu.min_launch_gap_ns1000") && !find(&k, ISC_REC_META, 1),
	   "META gpu.min_launch_gap_ns=1000, no skew");
	ok(res.gpu_ops == 3 && res.gpu_linked == 2 && res.gpu_calls == 1 && res.min_launch_gap_ns == 1000,
	   "result: 3 operations, 2 linked, 1 call, smallest gap 1000 ns");
	keep_free(&k);
	fclose(f);
}

/* An operation 500 ns before its call: linked all the same, skew reported. */
static void test_skew(void)
{
	FILE *f = tmpfile();
	struct tg g;
	struct keep k;
	struct isc_merge_result res;
	tg_open(&g, f, EPOCH, "boot");
	tg_begin(&g, 0);
	tg_string(&g, ISC_STRING_ID_CUDA_BASE, ISC_STR_CFUNC, 0, "gemm", "");
	tg_string(&g, ISC_STRING_ID_CUDA_BASE + 1, ISC_STR_CFUNC, 0, "cudaLaunchKernel", "");
	tg_chunk(&g, ISC_CHUNK_STRINGS, PID, 0);
	tg_begin(&g, 0);
	agent(&g, 1500, 1);
	kernel(&g, 8000, 2500, 1, 7);
	api(&g, 8000, 3000, 7);
	tg_chunk(&g, ISC_CHUNK_GPU_EVENTS, PID, TID);
	tg_round(&g, UINT64_MAX);
	tg_close(&g, true);
	int rc = merge_file(f, &k, &res);
	const struct kept *op = find(&k, ISC_REC_GPU_OP, 0), *m0 = find(&k, ISC_REC_META, 0),
			  *m1 = find(&k, ISC_REC_META, 1);
	ok(rc == 0 && op && op->ev.gpu.has_link && op->ev.gpu.launch_gap_ns == -500,
	   "an operation written before its call still links to it, gap -500");
	ok(m0 && m1 && !strcmp(m0->meta, "gpu.min_launch_gap_ns-500") && !strcmp(m1->meta, "gpu.clock_skew_ns500"),
	   "META gpu.min_launch_gap_ns=-500 and gpu.clock_skew_ns=500");
	keep_free(&k);
	fclose(f);
}

/*
 * The release delay: a ROUND at 100000 comes before a record written at
 * 100100 that started at 50000.  Without an announced delay that start is
 * already behind the output: a late record.  With GPU_AGENT announcing
 * 1 ms before the ROUND, the merge waits and it is in order.
 */
static uint64_t late_records(uint64_t lag_ms)
{
	FILE *f = tmpfile();
	struct tg g;
	struct keep k;
	struct isc_merge_result res;
	tg_open(&g, f, EPOCH, "boot");
	tg_begin(&g, 0);
	tg_string(&g, ISC_STRING_ID_CUDA_BASE, ISC_STR_CFUNC, 0, "gemm", "");
	tg_chunk(&g, ISC_CHUNK_STRINGS, PID, 0);
	if (lag_ms) {
		tg_begin(&g, 0);
		agent(&g, 1500, lag_ms);
		tg_chunk(&g, ISC_CHUNK_GPU_EVENTS, PID, TID);
	}
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_MARK, 60000, 2, (uint64_t)0, (uint64_t)2);
	tg_rec(&g, ISC_REC_MARK, 90000, 2, (uint64_t)0, (uint64_t)2);
	tg_chunk(&g, ISC_CHUNK_EVENTS, PID, TID);
	tg_round(&g, 100000);
	tg_begin(&g, 90000);
	kernel(&g, 100100, 50000, 1, 0);
	tg_chunk(&g, ISC_CHUNK_GPU_EVENTS, PID, TID);
	tg_round(&g, UINT64_MAX);
	tg_close(&g, true);
	merge_file(f, &k, &res);
	keep_free(&k);
	fclose(f);
	return res.late_events;
}

static void test_window(void)
{
	ok(late_records(0) == 1, "no delay announced: the record that started long before is late");
	ok(late_records(1) == 0, "GPU_AGENT announces 1 ms: the merge waits for it");
}

int main(void)
{
	test_codec();
	test_links();
	test_skew();
	test_window();
	return tap_done();
}
