/*
 * analyze_pass.h - the state of analyze.c's pass over a timeline, which
 * analyze_sections.c turns into the findings document.  Private to
 * lib/analyze.
 */
#ifndef ISC_ANALYZE_PASS_H
#define ISC_ANALYZE_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_util.h"
#include "isc_jbuild.h"
#include "analyze_wait.h"
#include "analyze_pysample.h"
#include "alloc_sites.h"
#include "analyze_native.h"


/* ---- analysis state ----------------------------------------------------- */
struct ana_fn {
	uint32_t name_id;
	uint8_t kind;
	bool dataloader; /* DataLoader __next__ (is_dataloader_fn) */
	bool torch;      /* an op of torch (isc_is_torch_op) */
	bool sampled;    /* an operator's slot whose time came from stack samples: calls not counted */
	uint64_t calls, self_ns, total_ns;
	uint64_t ops_self_ns; /* python fns: self time of ops they call directly */
	uint64_t scoped_calls, scoped_self_ns; /* while a scope was open on the thread */
	uint64_t scoped_ops_self_ns; /* python fns: ops_self_ns while a scope was open */
	uint64_t growth_bytes; /* python fns: RSS growth while innermost on a main thread */
};

enum { DL_NO, DL_INNER, DL_OUTER }; /* frame.dl */

struct ana_frame {
	uint64_t span_id, begin_ts, child_ns;
	uint64_t dl_at_begin; /* scope frames: dl_time(begin_ts) */
	uint32_t idx;   /* fn index; scope index for scope frames; ISC_UMAP_NONE for unknown kinds */
	uint32_t py_fn; /* nearest python fn on the stack, this frame included */
	uint8_t kind;
	uint8_t dl;
	bool outermost;
	uint64_t spans0;  /* thread's spans_begun after this frame's begin: descendants follow */
	uint32_t nchild;  /* python/op spans whose self time this frame's time excludes */
};

struct ana_thread {
	uint32_t pid, tid;
	char *name, *comm;
	struct ana_frame *stack;
	size_t depth, cap;
	struct isc_umap active; /* fn index -> activations on the stack */
	unsigned open_scopes;
	uint64_t events, python_ns, ops_ns;
	uint64_t torch_ns;               /* the part of ops_ns in torch ops */
	uint64_t blk_ns, blk_torch_ns, blk_ops_ns; /* sampled blocked time: all, inside torch ops, inside any op */
	uint64_t off_ops_ns, off_py_ns, off_torch_ns; /* set at the end */
	/* the last THREAD_WAIT: its time, call, descriptor kind, page-fault wchan */
	uint64_t wait_ts, wait_call, wait_kind, wait_addr; /* wait_addr: a futex's word */
	bool wait_fault, wait_timed;
	uint8_t known_reason; /* its last reason other than other, at known_ts */
	uint64_t known_ts;
	uint64_t futex, futex_votes; /* the futex word it waits on most (majority vote) */
	uint64_t r_samples;          /* samples in state R */
	uint64_t gil_ns;             /* sampled blocked time waiting for the GIL */
	bool traced, have_cpu, have_numa;
	uint64_t cpu_ns, sys_ns, last_cpu, numa_node;
	uint64_t sample_ts; /* of the last THREAD_SAMPLE (have_cpu) */
	uint64_t round;     /* last sample round it was counted in */
	unsigned dl_depth;  /* DataLoader frames on the stack */
	char state;
	/* first and last CPU sample taken while the stack was non-empty */
	unsigned win_n;
	uint64_t w_ts0, w_cpu0, w_ts1, w_cpu1;
	uint64_t w_vcsw0, w_ivcsw0, w_vcsw1, w_ivcsw1;
	/* overhead compensation (analyze_recording.c) */
	uint64_t spans_begun;  /* python and op spans begun on the thread */
	uint64_t cost_ps;      /* its process's measured cost per event, 0 = none */
	uint64_t overhead_ns;  /* recording cost in its self times (taken out unless raw_times) */
	uint64_t dropped;      /* records its ring lost (DROPPED) */
	/*
	 * The same while a scope is open on it (the iterations): self times,
	 * sampled blocked time, and the CPU, system time, wall time and
	 * switches between consecutive samples both taken inside a scope
	 * (it_pairs of them; prev_in_scope: the previous sample was).
	 */
	uint64_t it_python_ns, it_ops_ns, it_torch_ns;
	uint64_t it_blk_ns, it_blk_ops_ns, it_blk_torch_ns;
	uint64_t it_off_ops_ns, it_off_py_ns, it_off_torch_ns; /* set at the end */
	uint64_t it_wall_ns, it_cpu_ns, it_sys_ns, it_vcsw, it_ivcsw, it_pairs;
	uint64_t prev_vcsw, prev_ivcsw;
	bool prev_in_scope;
	/* --python=sample: its last stack sample (a stand-in frame for off-CPU time) */
	struct ana_frame py_frame; /* idx, py_fn: fn of the innermost function; kind python */
	uint64_t py_ts;        /* time of that sample, 0 = none */
	bool py_in_c;          /* the innermost frame was in a call (C code) */
	bool py_torch;         /* ... and that call counts as a torch op (analyze_pysample.c) */
};

struct ana_proc {
	uint32_t pid, ppid;
	bool have_info, have_exit, alive, have_rss;
	uint64_t info_ts; /* of its PROC_INFO: when it started (the agent's start time) */
	char *command;
	int64_t exit_status;
	uint64_t exit_how;
	unsigned nsamples;
	uint64_t s_ts0, s_ts1, vcsw0, ivcsw0, vcsw1, ivcsw1, cpu_ns, sys_ns;
	uint64_t rss, rss_peak, minflt, majflt, swap_max;
	bool have_smaps;
	/* the CALIBRATION record of the process (formats/trace.md §6.1) */
	bool have_calib;
	uint64_t calib[6]; /* mechanism per_event_ps calls plain_ns hooked_ns events */
	/* the GIL's futex word: of the timed futex waits seen in Python code,
	 * the majority word (Boyer-Moore vote); trusted at GIL_VOTES */
	uint64_t gil_word, gil_votes;
};

struct ana_iter {
	uint64_t begin_ts, dur;
	uint64_t lat; /* dur less the recording cost of the events inside (= dur uncorrected) */
	uint64_t dl_begin, dl_end; /* dl_time() at its begin and end */
	uint32_t pid;
	bool complete;
	uint32_t mark; /* its end's boundary in the allocation site model (isc_asite_boundary) */
	uint32_t tid;  /* the thread it ran on */
};

struct ana_scope {
	uint32_t name_id;
	bool dataloader; /* a Kineto enumerate(DataLoader) annotation */
	bool profiler_step; /* every Kineto ProfilerStep#N, as one scope */
	bool collective; /* a collective call ("nccl:all_reduce", "gloo:all_gather"): never an iteration, not "in a scope" */
	uint64_t total_ns;
	struct ana_iter *s;
	size_t n, cap;
};

#define ANA_MARK_BUCKETS 32

/*
 * A mark name: count and sum, the first and last time, and the sum over
 * time in ANA_MARK_BUCKETS buckets from the first mark, each width ns wide
 * (1 ms at first, doubled with neighbours merged pairwise as the run grows).
 */
struct ana_mark {
	uint32_t name_id;
	uint64_t count;
	int64_t sum;
	uint64_t first_ts, last_ts, width;
	double buckets[ANA_MARK_BUCKETS];
};

/* cpu.off_cpu_top: blocked time by (innermost span, its Python function) */
struct ana_off_row {
	uint32_t idx, py_fn; /* frame.idx (a scope index when scope), frame.py_fn */
	bool scope;
	uint8_t reason; /* enum isc_off_reason */
	uint64_t ns;
};

struct ana_pressure {
	bool have;
	unsigned n;
	uint64_t avg10_max_x100, ts0, tot0, ts1, tot1;
};

/*
 * Blocked time by reason and by (span, Python function), for the whole run
 * (struct ana's own fields) and again for the time inside iterations
 * (ana.it_off).
 */
struct ana_off_acc {
	struct isc_umap map; /* off_row key -> index */
	struct ana_off_row *rows;
	size_t n, cap;
	uint64_t blocked_ns, state_samples;
	uint64_t reason_ns[ISC_OFF_N], reason_torch_ns[ISC_OFF_N], reason_dl_ns[ISC_OFF_N];
};

#define ANA_MAX_WARNINGS 16
#define ANA_MAX_EXCEPTIONS 8

/* An EXCEPTION record: the unhandled exception that ended a thread. */
struct ana_exc {
	uint32_t pid, tid;
	uint64_t ts, line;
	char *type, *file, *func, *msg; /* whole, malloc'd (never cut: EXCEPTION_REF carries them whole) */
};

/* A WARNING record of the recorder or an agent (formats/trace.md), with its repeats. */
struct ana_warn {
	uint32_t pid;
	uint64_t code, count;
	char *msg;
};

struct ana {
	struct isc_timeline *t;
	unsigned top_n;
	cJSON *meta; /* environment.meta: the recorder's env.* and host.* META records, or NULL */
	struct isc_jb jb; /* oom: an allocation failed while building the document */
	/*
	 * What the sections wrote that later sections need, kept here so the
	 * pass never reads its own document back (set by sections_run.c and
	 * sections_cpu.c).
	 */
	struct {
		const char *it_name;          /* iterations.name, NULL without iterations */
		uint32_t it_name_id;          /* its scope's name id (the first ProfilerStep#N when it_step) */
		bool it_step;                 /* the iterations are ProfilerStep#N */
		uint64_t it_count, it_samples; /* iterations.count, iterations.samples */
		bool in_it;                   /* cpu.in_iterations was written (not null) */
		uint64_t in_it_traced_ns;     /* cpu.in_iterations.split.traced_ns */
		double in_it_share_pct;       /* cpu.in_iterations.share_pct */
		cJSON *memory;                /* the memory object, which analyze_numa.c adds to */
	} out;
	struct isc_umap fn_map, th_map, pr_map, sc_map, mk_map;
	struct ana_fn *fns;
	size_t nfns, fns_cap;
	struct ana_thread **ths;
	size_t nths, ths_cap;
	struct ana_proc **prs;
	size_t nprs, prs_cap;
	struct ana_scope *scs;
	size_t nscs, scs_cap;
	struct ana_mark *mks;
	size_t nmks, mks_cap;
	bool have_ts;
	uint64_t first_ts, last_ts;
	uint64_t first_agent_ts; /* the first agent event (span, mark, thread): 0 before one */
	uint64_t dropped_sum, unmatched_ends, unclosed_spans, merge_closed_spans;
	struct ana_warn warns[ANA_MAX_WARNINGS]; /* distinct WARNING records (code, message), first seen first */
	size_t nwarns;
	uint64_t warns_total;
	struct ana_exc excs[ANA_MAX_EXCEPTIONS]; /* the first ones recorded */
	size_t nexcs;
	uint64_t excs_total;
	uint64_t rss_total, rss_total_peak;
	bool have_rss;
	struct isc_lsq *rss_lsq;
	bool have_meminfo;
	uint64_t swap_used_max, mem_avail_min;
	struct ana_pressure psi[3];
	uint64_t warm_end_ts, iter_end_ts; /* set by isc_ana_emit_iterations (sections_run.c) */
	uint64_t iter_begin_ts;            /* the first iteration's start, 0 without (emit_iterations) */
	/* sample rounds (round_sample): runnable threads */
	bool round_open;
	uint64_t round_t0, round_id, round_runnable, rounds, runnable_sum, runnable_max;
	uint64_t threads_max;
	bool have_threads;
	/* the same over the rounds taken while some thread had a scope open */
	unsigned scoped_threads; /* threads with a scope open now */
	bool scope_seen;         /* a scope has begun, first at scope_ts */
	uint64_t scope_ts;
	uint64_t after_scope_ns; /* traced self time of spans that began after the first scope began */
	uint64_t after_at_scope_end; /* after_scope_ns when the last scope so far ended (shutdown left out) */
	/* CPU time of traced threads (thread samples) since the first scope
	 * began, and its value when the last scope so far ended */
	uint64_t cpu_after_scope_ns, cpu_after_at_scope_end;
	/* --python=sample: stack samples after the first scope began, and inside one;
	 * the same of the samples whose thread was busy (running or runnable) */
	uint64_t ps_after, ps_in, ps_busy_after, ps_busy_in;
	uint64_t ps_at_scope_end, ps_busy_at_scope_end; /* ps_after, ps_busy_after when the last scope so far ended */
	bool round_in_it;
	uint64_t it_rounds, it_runnable_sum, it_runnable_max;
	struct ana_off_acc it_off; /* blocked time inside iterations */
	struct isc_umap off_map; /* off_row key -> index */
	struct ana_off_row *offs;
	size_t noffs, offs_cap;
	uint64_t blocked_ns;
	bool have_wait; /* some THREAD_WAIT: the blocked time has reasons */
	uint64_t reason_ns[ISC_OFF_N], reason_torch_ns[ISC_OFF_N], reason_dl_ns[ISC_OFF_N];
	uint64_t state_samples; /* thread samples inside a span that could charge blocked time */
	/* outermost DataLoader spans: closed time, and the open ones (count, sum of begins) */
	uint64_t dl_closed_ns, dl_calls, dl_open, dl_open_begin_sum;
	struct isc_gpu_ana *gpu; /* gpu.* (analyze_gpu.c) */
	struct isc_oom *oom;     /* oom (analyze_oom.c) */
	/* memory.growth_sites: RSS increases by (Python function, innermost scope) name ids */
	struct isc_umap gs_map;
	struct gsite {
		uint32_t fn, scope; /* string ids, 0: none */
		uint64_t bytes;
	} *gs;
	size_t ngs, gs_cap;
	struct isc_series *series; /* timeseries.* (analyze_series.c) */
	struct isc_numa *numa;     /* memory.numa (analyze_numa.c) */
	struct isc_pysamp *pys;    /* python.samples (analyze_pysample.c) */
	/* allocation sampling (sections_alloc.c): the site model, fed every allocation record and every scope's end */
	struct isc_asite_model *asites;
	bool alloc_records;        /* some allocation record (TL_ALLOC, TL_FREE, TL_ALLOC_SITE, TL_ALLOC_INFO) */
	struct isc_asite_steady *asteady; /* per process, its steady-state boundaries (set by isc_ana_emit_iterations) */
	size_t nasteady;
	uint32_t *amarks;          /* their marks */
	uint64_t rss_peak_ts;      /* when rss_total_peak was reached */
	uint64_t memory_limit;     /* iscope-record --memory-limit (META record.memory_limit), 0: none */
	struct isc_nat *nat;       /* native stacks (analyze_native.c) */
	uint32_t step_scope;       /* 1 + index of the ProfilerStep#N scope, 0 before one */
	bool raw_times;            /* --no-compensation: keep the recording cost in */
	uint64_t removed_iter_ns;  /* ... out of the latencies of the iteration scope's spans */
	const struct isc_analyze_calib *calibs; /* each process's, chosen in a first pass; or NULL */
	size_t ncalibs;
	struct isc_analyze_calib *cals; /* the CALIBRATION records read, in order (at most ISC_ANA_CALS) */
	size_t ncals, cals_cap;
};
#define ISC_ANA_CALS 1024

/*
 * Overhead compensation (analyze_recording.c).  The recording cost of one
 * span's events, in ns: cost_ps per event; `events` recorded events.
 */
static inline uint64_t isc_ana_cost_ns(uint64_t cost_ps, uint64_t events)
{
	return (cost_ps * events + 500) / 1000;
}

/* Writes root.recording: the mechanism, the calibration, what was removed, drops per thread. */
void isc_ana_emit_recording(struct ana *a, cJSON *root, uint64_t traced_ns);

/* Builds the whole findings document from the finished pass; NULL when out of memory. */
cJSON *isc_ana_build(struct ana *a, bool damaged);

/*
 * The measuring pass in parts (analyze.c), so that one pass over a
 * timeline can feed several analyses (distributed.c: one per rank):
 * isc_ana_init, then isc_ana_event for each event the analysis sees, then
 * isc_ana_finish (the document, NULL with *rc set on failure), and
 * isc_ana_release in every case (also after a failed init).  0 or a
 * negative errno.
 */
int isc_ana_init(struct ana *a, struct isc_timeline *t, const struct isc_analyze_opts *o);
int isc_ana_event(struct ana *a, const struct isc_tl_event *ev);
cJSON *isc_ana_finish(struct ana *a, bool damaged, int *rc);
void isc_ana_release(struct ana *a);
/*
 * The next event of t for an analysis pass: 1, or 0 at the end or when it
 * stops at damage, or -ENOMEM; damaged chunks are skipped and counted in
 * *ndamage, the first one's message kept in first_err (may be NULL).
 */
int isc_ana_next(struct isc_timeline *t, struct isc_tl_event *ev, uint64_t *ndamage, char *first_err, size_t errlen);
/*
 * The first pass (isc_analyze_calibrations): each process's chosen
 * calibration, and hook (may be NULL) called with every event; with
 * untimed_only it stops at the first timed record (the preamble only), and
 * so it does when hook returns ISC_ANA_STOP (hook knows there is nothing
 * more to find: no calibration can follow).  0, or -ENOMEM or what else
 * hook returned.
 */
#define ISC_ANA_STOP 1
int isc_ana_first_pass(struct isc_timeline *t, struct isc_analyze_calib **out, size_t *n,
		       int (*hook)(void *ctx, const struct isc_tl_event *ev), void *ctx, bool untimed_only);
/* After a pass: 0 without damage, else -EBADMSG with the message pushed (what was damaged, what analyzed). */
int isc_ana_damage(struct isc_timeline *t, uint64_t ndamage, const char *first_err);

#endif
