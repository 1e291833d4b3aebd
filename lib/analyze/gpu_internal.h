/*
 * gpu_internal.h - what the files of the GPU analysis share, inside
 * lib/analyze only: struct isc_gpu_ana and the parts it is made of.
 * analyze.c sees none of it (analyze_gpu.h is its interface); the
 * definitions the files apply are stated at the top of analyze_gpu.c.
 *
 *   analyze_gpu.c  the entry points: events in timeline order, the end of
 *     │            the pass; launch calls, sync calls, NVML, DEVICE, META
 *     ├─> gpu_busy.c   the accumulator: per device and stream busy
 *     │                intervals, HTA's temporal and idle breakdown, kernels,
 *     │                copies, launch delays; --hta-compat's step FIFO
 *     ├─> gpu_iter.c   the steady-state iterations: which scope spans are
 *     │                steady iterations, the time inside them (windows),
 *     │                the statistics of the ops launched inside them
 *     ├─> gpu_host.c   host spans: the CPU spans open per thread, what the
 *     │                host did while a device was idle, call and
 *     │                allocation sites
 *     ├─> gpu_emit.c   gpu.* of the findings document, from the finished state
 *     └─> gpu_names.c  what a name is to the analysis (launch call, sync
 *                      call, copy, ProfilerStep...), NVML's reason names
 *
 * Calls go down the picture: analyze_gpu.c calls the others, gpu_iter.c
 * and gpu_host.c ask gpu_names.c what a name is, gpu_iter.c and
 * gpu_emit.c ask gpu_busy.c for a union's busy time and span (and
 * gpu_iter.c feeds its own accumulators through it), gpu_emit.c reads
 * gpu_names.c's reason names; gpu_host.c reads the iteration mask that
 * gpu_iter.c keeps in struct isc_gpu_ana (no call); no file calls
 * analyze_gpu.c back.
 */
#ifndef ISC_GPU_INTERNAL_H
#define ISC_GPU_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "isc.h"
#include "isc_util.h"       /* struct isc_umap, isc_grow */
#include "analyze_devmem.h" /* struct isc_devmem, enum isc_dm_site_kind */
#include "analyze_series.h" /* struct isc_series */
#include "alloc_sites.h"    /* struct isc_asite_model */

#define GPU_MAX_HDEV 8             /* devices followed for host_during_idle */
#define GPU_SAMPLES_MAX (1u << 20) /* launch delays kept for the quantiles */
#define GPU_GAP_NS 1000000         /* gpu.gaps threshold */
#define GPU_TOP_GAPS 5
#define GPU_NVML_MAX 64            /* NVML devices followed (as the sampler) */
#define GPU_NV_REASONS 9           /* entries of isc_gpu_nv_reasons */
#define GPU_IT_SLOTS 8             /* scope names followed as candidate iterations (gpu_iter.c) */

/* Index stored in map m for key, or a new element of *arr (zeroed) at index *n. */
static inline uint32_t isc_gpu_map_index(struct isc_umap *m, uint64_t key, void *arr, size_t *n, size_t *cap,
					 size_t sz, bool *fresh)
{
	uint32_t *slot;
	*fresh = false;
	if (isc_umap_slot(m, key, &slot))
		return ISC_UMAP_NONE;
	if (*slot != ISC_UMAP_NONE)
		return *slot;
	if (isc_grow(arr, cap, *n, sz))
		return ISC_UMAP_NONE; /* the key stays with ISC_UMAP_NONE: looked up again next time */
	memset((char *)*(void **)arr + *n * sz, 0, sz);
	*slot = (uint32_t)*n;
	*fresh = true;
	return (uint32_t)(*n)++;
}

/* ---- names (gpu_names.c) ------------------------------------------------- */
enum {
	GPU_NC_KNOWN = 1,
	GPU_NC_STEP = 2,          /* ProfilerStep#N */
	GPU_NC_LAUNCH = 4,        /* a launch call of the launch statistics */
	GPU_NC_GRAPH = 8,         /* a graph launch: one call, many ops */
	GPU_NC_SYNC = 16,         /* a call that blocks the host on the GPU */
	GPU_NC_NONCOMPUTE = 32,   /* an op name HTA does not count as compute */
	GPU_NC_BLOCKING_COPY = 64, /* a synchronous copy call (cudaMemcpy, cuMemcpyHtoD, hipMemcpy...) */
	GPU_NC_ASYNC_COPY = 128,  /* an asynchronous copy call: blocking when host memory is pageable */
	GPU_NC_SITE = 256,        /* a call whose call site is kept: syncs, copies, memsets, graph launches */
	GPU_NC_ALLOC = 512,       /* a device memory allocation call (cudaMalloc, cuMemAlloc, hipMalloc...) */
};

struct isc_gpu_ana;

/* The GPU_NC_* bits of string id (classified once, then cached); 0 when out of memory (g->oom set). */
unsigned isc_gpu_name_class(struct isc_gpu_ana *g, uint32_t id);

/* NVML clock-event reasons (nvmlClocksEventReason* / nvmlClocksThrottleReason* of nvml.h). */
struct gpu_nv_reason {
	uint64_t bit;
	const char *name; /* the key in gpu.nvml[].throttle_reasons */
};
extern const struct gpu_nv_reason isc_gpu_nv_reasons[GPU_NV_REASONS];

/* ---- the accumulator (gpu_busy.c) ---------------------------------------- */
/* One op as the statistics see it; times in ns (--hta-compat: rounded). */
struct gpu_op {
	int64_t ts, end;
	int64_t api_ts, api_end; /* launch call, when has_api */
	int64_t api_dur;         /* its exact duration */
	uint64_t bytes;
	uint32_t name_id, device, stream;
	uint32_t site;           /* the call's call site (struct gpu_site), ISC_UMAP_NONE when not kept */
	uint8_t kind, copy_kind, src_mem, dst_mem;
	bool has_api, api_launch, compute, streamless;
	bool first_of_call;      /* the first op of its call (a graph launch has many) */
};

struct gpu_union { /* union of intervals arriving by start */
	bool any;
	int64_t first, g_s, g_e, cummax, busy;
};

struct gpu_dev {
	uint32_t id;
	uint64_t ops;
	struct gpu_union all, comp;
};

struct gpu_stream {
	uint32_t device, id;
	uint64_t ops;
	bool has_prev;
	int64_t prev_end, host_wait, kernel_wait, other;
	int64_t host_wait_launch; /* host-wait gaps of at most ISC_LAUNCH_CALL_LONG_NS before a launched op */
	/* ends of the ops in flight (ascending, a ring), for the queue length */
	int64_t *q;
	size_t qh, qn, qcap;
	uint64_t q_max;
	bool q_any;
	int64_t q_first, q_last, q_sum;
};

struct gpu_kstat {
	uint32_t name_id;
	uint64_t count;
	int64_t total, min, max;
};

struct gpu_mstat {
	uint32_t id; /* its index before the output sorts the rows */
	uint8_t kind, copy_kind, src_mem, dst_mem;
	uint64_t count, bytes;
	int64_t total, api; /* api: time in the launching calls */
};

struct gpu_mcsite { /* bytes a call site launched in one memcpy row */
	uint32_t row, site;
	uint64_t bytes, count;
};

struct gpu_lsite { /* kernels a call site launched */
	uint32_t site;
	uint64_t launches;
	int64_t kernel_ns;
};

struct gpu_gap { /* an idle interval of a device */
	uint32_t device;
	int64_t start, end;
};

struct gpu_nstat { /* count and time by name */
	uint32_t name_id;   /* 0: an unnamed sync op, by sync_kind */
	uint8_t sync_kind;  /* enum isc_sync_kind */
	uint64_t count;
	int64_t total;
};

/* Up to GPU_SAMPLES_MAX values; a uniform reservoir sample beyond (fixed seed). */
struct gpu_samples {
	int64_t *v;
	size_t n, cap;
	uint64_t seen, rng;
	int64_t max;
};

struct gpu_acc {
	struct isc_umap dev_map, st_map, k_map, s_map, mc_map;
	struct gpu_dev *devs;
	size_t ndevs, devs_cap;
	struct gpu_stream *sts;
	size_t nsts, sts_cap;
	struct gpu_kstat *ks;
	size_t nks, ks_cap;
	struct gpu_mstat *ms;
	size_t nms, ms_cap;
	struct gpu_nstat *ss;
	size_t nss, ss_cap;
	struct gpu_mcsite *mcs;
	size_t nmcs, mcs_cap;
	struct isc_umap ls_map; /* site -> ls[] */
	struct gpu_lsite *ls;
	size_t nls, ls_cap;
	uint64_t ops, kernels, short_kernels, no_api;
	uint64_t launches, shorter, long_call, long_delay;
	int64_t launch_api, launch_kernels; /* kernels with a launch call: time in the calls, in the kernels */
	struct gpu_samples delay;
	uint64_t gaps;
	int64_t gaps_total;
	struct gpu_gap top_gaps[GPU_TOP_GAPS]; /* longest first */
	size_t ntop_gaps;
};

/* An op in --hta-compat's step FIFO. */
struct gpu_pend {
	struct gpu_op op;
	bool sure; /* launched before the latest step start */
};

/* Adds one op to the statistics a; hta selects which ops count as GPU time.  0 or -ENOMEM. */
int isc_gpu_acc_op(struct gpu_acc *a, const struct gpu_op *op, bool hta);
void isc_gpu_acc_free(struct gpu_acc *a);
/* Busy time (length of the union) and span (last end - first start) of u; 0 when empty. */
int64_t isc_gpu_union_busy(const struct gpu_union *u);
/* Busy time of u up to t, for t at or after the start of the latest interval added. */
int64_t isc_gpu_union_busy_at(const struct gpu_union *u, int64_t t);
/* Adds [s, e) to u; intervals come by start. */
void isc_gpu_union_add(struct gpu_union *u, int64_t s, int64_t e);
int64_t isc_gpu_union_span(const struct gpu_union *u);
/* Adds dur to the row of name_id, or of sync_kind when name_id is 0 (a sync op with no name).  0 or -ENOMEM. */
int isc_gpu_nstat_add(struct isc_umap *m, struct gpu_nstat **arr, size_t *n, size_t *cap, uint32_t name_id,
		      uint8_t sync_kind, int64_t dur);
/* --hta-compat: an op (rounded) in start order; has_corr: it has a correlation id.  0 or -ENOMEM. */
int isc_gpu_hta_op(struct isc_gpu_ana *g, const struct gpu_op *op, bool has_corr);
/* --hta-compat: a new ProfilerStep starts at ts (rounded).  0 or -ENOMEM. */
int isc_gpu_hta_step(struct isc_gpu_ana *g, int64_t ts);
/* --hta-compat: feeds the FIFO's sure front to the kept ops, or all of it when all is set.  0 or -ENOMEM. */
int isc_gpu_hta_settle(struct isc_gpu_ana *g, bool all);

/* ---- host spans (gpu_host.c) --------------------------------------------- */
struct gpu_hdev { /* default-definition union of one device, live */
	uint32_t id;
	bool any;
	int64_t cur_end, closed;
	uint64_t seq; /* ops seen: a pending tail is real once seq moves on */
};

struct gpu_hframe {
	uint64_t span_id;
	uint32_t name_id;
	uint8_t kind;
	uint8_t it_mask; /* iteration slots with a steady iteration open at its begin (gpu_iter.c) */
	bool outermost;
	int64_t begin;
	int64_t snap[GPU_MAX_HDEV];  /* idle_cum at the begin */
	int64_t cidle[GPU_MAX_HDEV]; /* idle overlap of the direct children */
	int64_t ctail[GPU_MAX_HDEV]; /* the pending part of it, as of cseq */
	uint64_t cseq[GPU_MAX_HDEV];
};

struct gpu_hthread {
	uint32_t pid;
	struct gpu_hframe *st;
	size_t depth, cap;
	int64_t rt_end; /* end of its latest runtime API call */
	bool rt_launch; /* that call launches work (GPU_NC_LAUNCH, GPU_NC_GRAPH) */
};

struct gpu_hfn { /* one function on one device, over the run (slot 0) or inside iteration slot - 1 */
	uint32_t name_id;
	uint8_t kind, hdev, slot;
	int64_t idle, self, ptail, pself; /* confirmed; pending since pseq */
	uint64_t pseq;
};

/* The host thread (pid, tid), added when new; NULL when out of memory. */
struct gpu_hthread *isc_gpu_hthread_get(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid);
/* A SPAN_BEGIN / SPAN_END of the host.  0 or -ENOMEM. */
int isc_gpu_host_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev);
int isc_gpu_host_end(struct isc_gpu_ana *g, const struct isc_tl_event *ev);
/* Index of device id in hd[], added when there is room; ISC_UMAP_NONE otherwise. */
uint32_t isc_gpu_hdev_index(struct isc_gpu_ana *g, uint32_t id);
/* An op [ts, end) of device hd[hi] (default definitions: exact times). */
void isc_gpu_host_op(struct isc_gpu_ana *g, uint32_t hi, int64_t ts, int64_t end);
/* The call site of a call made now on thread (pid, tid), py_site the call's own Python line (0: none; used
 * when no Python function with a file is open on the thread): its index in sites[], ISC_UMAP_NONE when out
 * of memory. */
uint32_t isc_gpu_call_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid, uint32_t py_site);
/* The allocation site of device memory allocated now on thread (pid, tid) by a call of Python line py_site
 * (0: unknown): its kind, *id its string id. */
enum isc_dm_site_kind isc_gpu_mem_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid, uint32_t py_site,
				       uint32_t *id);
/* End of the pass: closes the open spans, keeps the pending tails a later op confirmed. */
void isc_gpu_host_finish(struct isc_gpu_ana *g);

/* ---- the analysis (analyze_gpu.c) ---------------------------------------- */
struct gpu_launch {
	uint64_t corr;
	int64_t ts, end;   /* rounded under --hta-compat */
	int64_t ts_exact, end_exact;
	uint32_t pid, tid, name_id;
	uint32_t site;     /* its call site when GPU_NC_SITE, else ISC_UMAP_NONE */
	uint16_t cls;      /* GPU_NC_* bits of the call's name */
	uint8_t it_mask;   /* iteration slots with a steady iteration open at the call (gpu_iter.c) */
	uint32_t py_site;  /* the call's Python line (GPU_API py_site), 0 none */
	bool live, used;   /* used: an op was paired with it */
};

/* A call site: the op a Python function called, and that function (name ids, 0 = none). */
struct gpu_site {
	uint32_t op_id, py_id;
};

struct gpu_csite { /* synchronizing calls of one name at one call site */
	uint32_t api_id, site;
	uint64_t count;
	int64_t total;
};

struct gpu_ddev { /* a DEVICE record */
	char *name;
	uint64_t mem, link_bw; /* 0: unknown */
};

struct gpu_nvdev { /* the NVML samples of one device index */
	uint32_t index;
	bool info;                  /* a GPU_INFO was seen */
	uint64_t link_bw, info_total; /* from GPU_INFO */
	uint64_t samples, used_last, used_max, total, power_max, throttled, reasons[GPU_NV_REASONS];
	uint32_t sm_min, sm_max, temp_max; /* sm_min: 0 until a nonzero clock is seen */
	double util_sum;
	/* throttled work: each sample against the work of its interval (analyze_gpu.c, on_gpu_sample) */
	int64_t prev_busy;          /* the device's busy time up to the previous sample */
	uint64_t busy_samples, thr_busy_samples;
	int64_t busy_ns, thr_busy_ns;
	uint32_t sm_min_thr, sm_max_busy; /* 0: none seen */
};

/* Synchronizing calls (gpu.sync's api_calls, call_sites, blocking_copies): of the run, of an iteration slot. */
struct gpu_sync {
	struct isc_umap sapi_map; /* name_id -> sapi[] */
	struct gpu_nstat *sapi;
	size_t nsapi, sapi_cap;
	struct isc_umap cs_map;   /* api name_id << 32 | site -> cs[] */
	struct gpu_csite *cs;
	size_t ncs, cs_cap;
	uint64_t bcopies;         /* blocking copies: calls, time in them */
	int64_t bcopies_ns;
};

/* Counts a synchronizing call api_id of dur ns at site into s (api: into api_calls too; copy: a blocking copy).  0 or -ENOMEM. */
int isc_gpu_sync_call(struct gpu_sync *s, uint32_t api_id, uint32_t site, int64_t dur, bool api, bool copy);
void isc_gpu_sync_free(struct gpu_sync *s);

/* Adds NVML sample f (GPU_SAMPLE fields) to d; work: GPU work in its interval, ns.  (analyze_gpu.c) */
void isc_gpu_nv_add(struct gpu_nvdev *d, const uint64_t *f, int64_t work);

/* ---- steady-state iterations (gpu_iter.c) -------------------------------- */
struct gpu_itdev { /* one device (hd[] index) inside the windows of a slot */
	int64_t snap_busy, snap_comp; /* busy and compute time up to the open period's start */
	int64_t busy, comp;           /* inside the closed periods */
	int64_t first_busy;           /* busy time up to the first window's start */
	struct gpu_union after;       /* ops launched from the first window's start on */
};

struct gpu_itslot { /* one scope name, a candidate iteration */
	uint32_t name_id;     /* its name; with step, the first ProfilerStep#N seen */
	bool step;            /* ProfilerStep#N: every such name is this slot */
	struct isc_umap pids; /* pid -> instances begun */
	uint64_t steady;      /* steady instances ended (not the first of their process) */
	uint32_t open;        /* steady instances open now, all threads */
	bool any;             /* a window opened */
	int64_t from, first_from; /* start of the open period, of the first */
	int64_t window_ns;    /* length of the union of the closed steady instances */
	struct gpu_itdev dev[GPU_MAX_HDEV];
	struct gpu_acc acc;   /* the ops launched inside */
	struct gpu_sync sync; /* the synchronizing calls made inside */
	struct gpu_nvdev *nv; /* NVML samples taken inside (GPU_NVML_MAX), allocated at the first */
	size_t nnv;
};

struct gpu_itopen { /* a scope instance open now */
	uint64_t span_id;
	uint32_t pid, tid;
	uint8_t slot;
	bool steady;
};

/* SPAN_BEGIN / SPAN_END of the host: scopes open and close iterations.  0 or -ENOMEM. */
int isc_gpu_iter_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev);
int isc_gpu_iter_end(struct isc_gpu_ana *g, const struct isc_tl_event *ev);
/* An op (exact times) of device hd[hi] (ISC_UMAP_NONE: not followed), launched at launch_ts while
 * the iteration slots of mask were open.  0 or -ENOMEM. */
int isc_gpu_iter_op(struct isc_gpu_ana *g, const struct gpu_op *op, uint8_t mask, int64_t launch_ts, uint32_t hi);
/* The NVML device of index in slot k's samples, added when there is room; NULL otherwise. */
struct gpu_nvdev *isc_gpu_iter_nvdev(struct isc_gpu_ana *g, size_t k, uint32_t index);
/* The slot of the iteration scope (name_id, or any ProfilerStep#N when step); NULL when not followed. */
struct gpu_itslot *isc_gpu_iter_slot(struct isc_gpu_ana *g, uint32_t name_id, bool step);
/* Idle time of device hd[hi] inside slot s's windows. */
int64_t isc_gpu_iter_idle(const struct isc_gpu_ana *g, const struct gpu_itslot *s, size_t hi);
void isc_gpu_iter_free(struct isc_gpu_ana *g);

struct gpu_gmem { /* GPU_MEMORY device allocations of one device */
	uint32_t device;
	int64_t net, peak;
};

struct isc_gpu_ana {
	struct isc_timeline *t;
	struct isc_series *ser; /* timeseries.gpu_* (borrowed, may be NULL) */
	bool hta, oom;
	int64_t us_off; /* --hta-compat: ns offset of the source µs grid */
	struct isc_umap names; /* name_id -> GPU_NC_* */
	/* launch calls in arrival order (a ring), indexed by correlation */
	struct gpu_launch *lr;
	size_t lr_head, lr_n, lr_cap;
	struct isc_umap l_map;
	/* acc[0]: every op; acc[1]: --hta-compat, the ops kept by the step rule */
	struct gpu_acc acc[2];
	struct gpu_pend *pq;
	size_t pq_head, pq_n, pq_cap;
	uint64_t pq_forced;
	/* ProfilerStep annotations */
	uint64_t steps;
	char *step_name;       /* the first name seen */
	bool steps_distinct;   /* a second name was seen */
	bool have_step;
	int64_t last_step;     /* start of the latest (rounded under --hta-compat) */
	char *last_step_name;
	/* devices and metadata */
	struct isc_umap dname_map; /* device id -> dd[] */
	struct gpu_ddev *dd;
	size_t ndd, dd_cap;
	struct gpu_nvdev nv[GPU_NVML_MAX];
	size_t nnv;
	struct isc_umap gm_map; /* device id -> gm[] */
	struct gpu_gmem *gm;
	size_t ngm, gm_cap;
	bool have_rank, have_world;
	double rank, world_size;
	/* device memory: each device's totals (analyze_devmem.c); by site: asites */
	struct isc_devmem *dm;
	struct isc_asite_model *asites; /* the allocation site model (borrowed): device sites, and the pairing */
	bool kineto;               /* META source=kineto: GPU_MEMORY records follow their [memory] MARK */
	uint32_t mark_pid, mark_tid; /* the latest MARK */
	uint32_t last_mem_dev;     /* device of the latest GPU_MEMORY: a failed allocation's (API records have none) */
	uint64_t mark_ts;
	/* the CUDA agent's own cost (gpu.agent): GPU_AGENT records, its META
	 * cuda.agent.*, CUPTI's OVERHEAD records (calls of kind 3, device ops
	 * named "overhead: ...") by name, launch calls */
	uint64_t agents, agent_cpu_ns, agent_records, agent_callbacks, agent_callback_ns, agent_cost_procs;
	int driver_api;            /* -1 unknown, 0 off, 1 on (any process) */
	struct isc_umap ovh_map;
	struct gpu_nstat *ovh;
	size_t novh, ovh_cap;
	uint64_t launch_calls;
	/* synchronising calls */
	struct gpu_sync sy;
	struct isc_umap site_map; /* op_id << 32 | py_id -> sites[] */
	struct gpu_site *sites;
	size_t nsites, sites_cap;
	/* steady-state iterations (gpu_iter.c) */
	struct gpu_itslot *its;   /* GPU_IT_SLOTS, allocated at the first scope */
	size_t nits;
	uint8_t it_mask;          /* slots with a steady iteration open now */
	struct gpu_union it_all[GPU_MAX_HDEV], it_comp[GPU_MAX_HDEV]; /* hd[]'s ops, exact times, every op */
	struct gpu_itopen *ito;   /* scope instances open now */
	size_t nito, ito_cap;
	/* timeseries.gpu_busy_pct: the union of all devices' ops, current group */
	bool busy_any;
	int64_t busy_s, busy_e;
	bool have_ts;
	uint64_t first_ts; /* summary.start_ns */
	/* host during idle */
	struct gpu_hdev hd[GPU_MAX_HDEV];
	size_t nhd;
	struct isc_umap pid_mask; /* pid -> bit set of hd[] it launched on */
	struct isc_umap th_map;
	struct gpu_hthread *ths;
	size_t nths, ths_cap;
	struct isc_umap fn_map;
	struct gpu_hfn *fns;
	size_t nfns, fns_cap;
	int64_t last_ts;
};

/* The name of string id, NULL when unknown. */
static inline const char *isc_gpu_str_name(const struct isc_gpu_ana *g, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(g->t, id);
	return s ? s->name : NULL;
}

/* ---- output (gpu_emit.c) ------------------------------------------------- */
/* Adds root.gpu from the finished pass, the op statistics of a; it: the iteration slot (NULL: none). */
int isc_gpu_emit(struct isc_gpu_ana *g, struct gpu_acc *a, cJSON *root, struct gpu_itslot *it, const char *it_name);

#endif
