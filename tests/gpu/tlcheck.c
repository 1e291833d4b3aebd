/*
 * tlcheck.c - reads a timeline (.istl) and prints its GPU records with
 * every field, one line each, then checks the links the merge made,
 * recomputing them on its own from the spans it reads:
 *
 *   - each GPU_API's span_id is the innermost python/op span open on its
 *     thread at its start (tlcheck follows every thread's open spans);
 *   - each GPU_OP with a link names an API call seen before it with the
 *     same correlation id, on the thread api_tid, and launch_span_id is
 *     that call's span; launch_gap_ns is its start minus the call's start;
 *   - every record's time is >= the previous one's.
 *
 * Output lines (tests/gpu/gpu.bats greps them): "op ...", "api ..." (with
 * " site=FUNCTION@FILE:LINE" when the call has its Python line),
 * "nvtx ...", "mem ...", "device ...", "meta ...", "warning ...",
 * "agent ...", "gpu_dropped N", "gpu_sample ...", "gpu_info ...", then
 *   "summary ops=N kernels=N linked=N stack=N bad_links=N unordered=N
 *    gpu_records=N dropped=N"
 * where stack counts linked operations whose launch span is a Python
 * function, gpu_records the records a CUDA agent wrote (GPU_*, DEVICE,
 * its META) and dropped the counts of the DROPPED records.  Exit status
 * 0, or 1 when a link is wrong or the input bad.  With -t, every "op" and
 * "api" line ends with " t=START end=END" (ns, the timeline's clock).
 *
 *   tlcheck [-t] TIMELINE
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"

#define MAXT 256
#define MAXSPAN (1u << 20)
#define MAXCORR (1u << 18)

struct thr {
	uint32_t pid, tid;
	uint64_t stack[512];
	int depth;
};

struct api {
	uint32_t pid, tid;
	uint64_t corr, ts, span;
	bool used;
};

struct later { /* an operation written before its call (clock skew): checked at the call */
	uint32_t pid, tid;
	uint64_t corr, ts, span;
	int64_t gap;
};

static struct thr threads[MAXT];
static int nthreads;
static uint32_t span_name[MAXSPAN]; /* span id -> name id (python/op spans) */
static uint8_t span_kind[MAXSPAN];
static struct api apis[MAXCORR];
static struct later laters[4096];
static size_t nlaters;
static uint32_t pids[64];
static int npids;

/* Processes numbered in order of appearance, as in iscope-merge --dump. */
static int proc_ordinal(uint32_t pid)
{
	for (int i = 0; i < npids; i++)
		if (pids[i] == pid)
			return i + 1;
	if (npids == 64)
		return 0;
	pids[npids++] = pid;
	return npids;
}

/* The first call of (pid, correlation id), or a free entry for it. */
static struct api *api_slot(uint32_t pid, uint64_t corr)
{
	uint32_t i = (uint32_t)((corr * 2654435761u) ^ pid) % MAXCORR;
	for (uint32_t n = 0; n < MAXCORR && apis[i].used; n++, i = (i + 1) % MAXCORR)
		if (apis[i].pid == pid && apis[i].corr == corr)
			return &apis[i];
	return &apis[i];
}

static struct thr *thread(uint32_t pid, uint32_t tid)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i].pid == pid && threads[i].tid == tid)
			return &threads[i];
	if (nthreads == MAXT)
		return NULL;
	threads[nthreads] = (struct thr){ .pid = pid, .tid = tid };
	return &threads[nthreads++];
}

static const char *name(struct isc_timeline *t, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	return s ? s->name : "?";
}

static const char *span_str(struct isc_timeline *t, uint64_t span)
{
	if (!span)
		return "-";
	if (span >= MAXSPAN || !span_kind[span])
		return "?";
	return name(t, span_name[span]);
}

int main(int argc, char **argv)
{
	struct isc_timeline *t;
	struct isc_tl_event ev;
	uint64_t last = 0, ops = 0, kernels = 0, linked = 0, stack = 0, bad = 0, unordered = 0, gpu_records = 0,
		 dropped = 0;
	bool times = argc > 1 && !strcmp(argv[1], "-t");
	if (times) {
		argv++;
		argc--;
	}
	FILE *in = argc > 1 ? fopen(argv[1], "rb") : NULL;
	int rc;
	if (!in || isc_timeline_open(&t, in)) {
		fprintf(stderr, "tlcheck: cannot read %s: %s\n", argc > 1 ? argv[1] : "(no file)", isc_err_msg());
		return 1;
	}
	while ((rc = isc_timeline_next(t, &ev)) == 1) {
		struct thr *th = thread(ev.pid, ev.tid);
		const struct isc_gpu_fields *g = &ev.gpu;
		if (ev.ts < last && ev.type < 0x80)
			unordered++;
		if (ev.type < 0x80)
			last = ev.ts;
		if ((ev.type >= ISC_REC_GPU_OP && ev.type <= ISC_REC_GPU_AGENT) || ev.type == ISC_REC_DEVICE ||
		    (ev.type == ISC_REC_META && ev.pid)) /* the merge's own META has no process */
			gpu_records++;
		if (ev.type == ISC_REC_DROPPED && ev.nf)
			dropped += ev.f[0];
		switch (ev.type) {
		case ISC_REC_TL_SPAN_BEGIN:
			if (ev.kind != ISC_SPAN_SCOPE && th && th->depth < 512)
				th->stack[th->depth++] = ev.span_id;
			if (ev.span_id < MAXSPAN) {
				span_name[ev.span_id] = ev.name_id;
				span_kind[ev.span_id] = ev.kind;
			}
			break;
		case ISC_REC_TL_SPAN_END:
			if (th && th->depth && th->stack[th->depth - 1] == ev.span_id)
				th->depth--;
			break;
		case ISC_REC_GPU_API: {
			uint64_t inner = th && th->depth ? th->stack[th->depth - 1] : 0;
			printf("api %s kind=%u cbid=%u corr=%" PRIu64 " tid=%s flags=%u span=%s%s", name(t, ev.name_id),
			       g->kind, g->cbid, g->correlation, ev.tid == ev.pid ? "main" : "other", g->flags,
			       span_str(t, g->launch_span_id), g->launch_span_id == inner ? "" : " SPAN-MISMATCH");
			if (g->py_site) { /* the Python line of the call: function@basename(file):line */
				const struct isc_tl_string *ps = isc_timeline_string_borrow(t, g->py_site);
				const char *base = ps && strrchr(ps->file, '/') ? strrchr(ps->file, '/') + 1 : ps ? ps->file : "";
				printf(" site=%s@%s:%u", ps ? ps->name : "?", base, ps ? ps->line : 0);
			}
			if (times)
				printf(" t=%" PRIu64 " end=%" PRIu64, ev.ts, ev.ts + g->dur_ns);
			printf("\n");
			if (g->launch_span_id != inner)
				bad++;
			struct api *a = api_slot(ev.pid, g->correlation);
			if (g->correlation && !a->used)
				*a = (struct api){ ev.pid, ev.tid, g->correlation, ev.ts, g->launch_span_id, true };
			for (size_t i = 0; i < nlaters; i++) /* the call of operations seen before it */
				if (laters[i].corr == g->correlation && laters[i].pid == ev.pid) {
					if (laters[i].tid != ev.tid || (int64_t)(laters[i].ts - ev.ts) != laters[i].gap) {
						printf("late-link corr=%" PRIu64 " LINK-MISMATCH\n", g->correlation);
						bad++;
					}
					laters[i] = laters[--nlaters];
					i--;
				}
			break;
		}
		case ISC_REC_GPU_OP: {
			static const char *kinds[] = { "?", "kernel", "memcpy", "memset", "sync", "other" };
			ops++;
			kernels += g->kind == ISC_GPU_KERNEL;
			printf("op %s %s dev=%u stream=%u dur=%" PRIu64 " corr=%" PRIu64 " bytes=%" PRIu64
			       " copy=%u src=%u dst=%u flags=%u",
			       kinds[g->kind < 6 ? g->kind : 0], name(t, ev.name_id), g->device, g->stream, g->dur_ns,
			       g->correlation, g->bytes, g->copy_kind, g->src_mem, g->dst_mem,
			       g->flags & ~(uint32_t)(ISC_GPU_FLAG_LAUNCH | ISC_GPU_FLAG_LINK | ISC_GPU_FLAG_CONTEXT));
			if (g->has_launch)
				printf(" grid=%u,%u,%u block=%u,%u,%u regs=%u shmem=%u", g->grid[0], g->grid[1], g->grid[2],
				       g->block[0], g->block[1], g->block[2], g->registers, g->shared_mem);
			if (g->has_context)
				printf(" ctx=%u", g->context);
			if (g->has_link) {
				struct api *a = api_slot(ev.pid, g->correlation);
				bool seen = a->used;
				bool ok = seen && a->tid == g->api_tid && a->span == g->launch_span_id &&
					  (int64_t)(ev.ts - a->ts) == g->launch_gap_ns;
				if (!seen && g->launch_gap_ns < 0 && nlaters < 4096) { /* its call comes later */
					laters[nlaters++] = (struct later){ ev.pid, g->api_tid, g->correlation, ev.ts,
									   g->launch_span_id, g->launch_gap_ns };
					ok = true;
				}
				printf(" launch=%s span=%s gap=%s%s", g->api_tid == ev.pid ? "main" : "other",
				       span_str(t, g->launch_span_id), g->launch_gap_ns < 0 ? "negative" : "ok",
				       ok ? "" : " LINK-MISMATCH");
				linked++;
				if (!ok)
					bad++;
				if (g->launch_span_id < MAXSPAN && span_kind[g->launch_span_id] == ISC_SPAN_PYTHON)
					stack++;
			} else {
				printf(" launch=none");
			}
			printf(" p=%d pid_ctx=%s", proc_ordinal(ev.pid), ev.pid && !ev.tid ? "ok" : "bad");
			if (times)
				printf(" t=%" PRIu64 " end=%" PRIu64, ev.ts, ev.ts + g->dur_ns);
			printf("\n");
			break;
		}
		case ISC_REC_NVTX_RANGE:
			printf("nvtx %s dur_pos=%d domain=%s color=%#" PRIx64 " category=%" PRIu64 " flags=%" PRIu64
			       " tid=%s\n",
			       name(t, (uint32_t)ev.f[0]), ev.f[1] > 0, ev.f[2] ? name(t, (uint32_t)ev.f[2]) : "-", ev.f[3],
			       ev.f[4], ev.f[5], ev.tid == ev.pid ? "main" : "other");
			break;
		case ISC_REC_GPU_MEMORY:
			printf("mem dev=%" PRIu64 " stream=%" PRIu64 " op=%" PRIu64 " kind=%" PRIu64 " bytes=%" PRIu64
			       " addr=%#" PRIx64 " corr_pos=%d flags=%" PRIu64 "\n",
			       ev.f[0], ev.f[1], ev.f[2], ev.f[3], ev.f[4], ev.f[5], ev.f[6] > 0, ev.f[7]);
			break;
		case ISC_REC_GPU_DROPPED:
			printf("gpu_dropped %" PRIu64 "\n", ev.f[0]);
			break;
		case ISC_REC_GPU_AGENT:
			printf("agent cupti=%" PRIu64 " built=%" PRIu64 " lag_ms=%" PRIu64 " flush_ms=%" PRIu64 " version=%.*s\n",
			       ev.f[0], ev.f[1], ev.f[2], ev.f[3], (int)ev.nbytes, (const char *)ev.bytes);
			break;
		case ISC_REC_WARNING:
			printf("warning pid=%s code=%" PRIu64 " %.*s\n", ev.f[0] ? "workload" : "session", ev.f[1],
			       (int)ev.nbytes, (const char *)ev.bytes);
			break;
		case ISC_REC_DEVICE:
			printf("device id=%" PRIu64 " sms=%" PRIu64 " memory=%" PRIu64 " cc=%" PRIu64 ".%" PRIu64
			       " link_bw=%" PRIu64 " name=%.*s\n",
			       ev.f[0], ev.f[1], ev.f[2], ev.f[3], ev.f[4], ev.f[5], (int)ev.nbytes, (const char *)ev.bytes);
			break;
		case ISC_REC_META:
			if (ev.nf == 1 && ev.f[0] <= ev.nbytes)
				printf("meta %.*s=%.*s\n", (int)ev.f[0], (const char *)ev.bytes, (int)(ev.nbytes - ev.f[0]),
				       (const char *)ev.bytes + ev.f[0]);
			break;
		case ISC_REC_GPU_SAMPLE:
			printf("gpu_sample index=%" PRIu64 " util=%" PRIu64 " mem_util=%" PRIu64 " used=%" PRIu64
			       " total=%" PRIu64 " sm=%" PRIu64 " memclk=%" PRIu64 " power=%" PRIu64 " temp=%" PRIu64
			       " reasons=%#" PRIx64 " tx=%" PRIu64 " rx=%" PRIu64 "\n",
			       ev.f[0], ev.f[1], ev.f[2], ev.f[3], ev.f[4], ev.f[5], ev.f[6], ev.f[7], ev.f[8], ev.f[9], ev.f[10],
			       ev.f[11]);
			break;
		case ISC_REC_GPU_INFO: {
			size_t ul = strnlen((const char *)ev.bytes, ev.nbytes);
			printf("gpu_info index=%" PRIu64 " gen=%" PRIu64 " width=%" PRIu64 " link_bw=%" PRIu64 " total=%" PRIu64
			       " uuid=%.*s name=%.*s\n",
			       ev.f[0], ev.f[1], ev.f[2], ev.f[3], ev.f[4], (int)ul, (const char *)ev.bytes,
			       (int)(ul < ev.nbytes ? ev.nbytes - ul - 1 : 0), (const char *)ev.bytes + ul + 1);
			break;
		}
		default:
			break;
		}
	}
	bad += nlaters; /* operations whose call never came */
	printf("summary ops=%" PRIu64 " kernels=%" PRIu64 " linked=%" PRIu64 " stack=%" PRIu64 " bad_links=%" PRIu64
	       " unordered=%" PRIu64 " gpu_records=%" PRIu64 " dropped=%" PRIu64 "\n",
	       ops, kernels, linked, stack, bad, unordered, gpu_records, dropped);
	if (rc < 0)
		fprintf(stderr, "tlcheck: %s\n", isc_err_msg());
	isc_timeline_free(t);
	fclose(in);
	return rc < 0 || bad ? 1 : 0;
}
