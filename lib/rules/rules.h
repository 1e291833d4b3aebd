/*
 * rules.h - the rule engine behind verdict and findings[] (rules.c), and
 * what every rule module (rule_*.c) sees.  Private to lib/.
 *
 * A rule reads only the measured sections of the findings document (never
 * the timeline), appends zero or more findings through the builder below,
 * and may nominate its finding as a verdict candidate: the class it stands
 * for and the share of the run that class explains.  The engine then picks
 * the verdict and ranks the findings (rules.c says how; iscope-analyze(1),
 * VERDICT, states it for users).
 *
 * Builder calls tolerate a NULL finding (an allocation failed earlier): the
 * failure is remembered in the rule_out and reported once by the engine, so
 * rules need no error paths of their own.
 */
#ifndef RULES_H
#define RULES_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "isc_findings.h"

/* The GPU span divided among the GPU verdict classes (gpu_split.c says how). */
struct isc_gpu_split {
	double launch, sync, cpu, compute, throttled; /* ns of the GPU span */
	double throttled_share;                        /* [0,1] */
	double clock_deficit;                          /* [0,1]: 1 - throttled SM clock / busy SM clock */
	double sm_mhz_throttled, sm_mhz_busy;          /* lowest throttled busy, highest busy SM clock; 0 unknown */
	bool launch_pattern;
	double short_share, shorter_share;             /* [0,1] */
};

struct rule_ctx {
	const cJSON *doc;
	double wall_ns;       /* summary.wall_ns: base of estimated_saving_pct */
	double ncpu;          /* environment.ncpu, 0 when unknown */
	bool gpu;             /* the run has GPU operations (gpu.ops > 0) */
	const cJSON *dev;     /* the GPU device with the longest span, or NULL */
	double gpu_span_ns;   /* its temporal_breakdown.span_ns (0 without) */
	double quality;       /* data quality factor in [0,1] (rules.c, quality()) */
	bool iterations;      /* doc is the iteration view: cpu.* of the time inside iterations (rules.c) */
	bool gpu_iterations;  /* doc's gpu.* are gpu.in_iterations' (the GPU inside the steady iterations) */
	/*
	 * GPU facts of dev, in ns (rules.c, gpu_facts()).  span: the device's
	 * span, or the steady-state iterations' total time when longer (the
	 * difference counts as idle waiting for the host).
	 */
	struct {
		double span, idle, busy, compute;
		double other_wait; /* idle in the streams' "other" gaps (launched in time, started late) */
		double host_wait;  /* idle - other_wait - kernel_wait gaps: no work queued anywhere */
		double launch_api; /* host time in launch calls (gpu.launch.api_total_ns), -1 unknown */
		double launch_gaps; /* host-wait gaps of at most 50 us before launched ops (streams' host_wait_launch_ns) */
		double sync_api;   /* host time in synchronising calls and blocking copies */
		double queue_mean; /* mean queue length of the busiest stream */
	} g;
	struct isc_gpu_split split; /* of g, computed once (gpu_split.c) */
};

#define RULE_MAX_CANDIDATES 16

struct rule_cand {
	const char *cls;      /* verdict class */
	double explained_pct; /* share of the run (CPU classes: traced time; GPU classes: GPU span) */
	double quality;       /* evidence quality of this candidate, [0,1] */
	cJSON *finding;       /* the finding that backs it */
};

struct rule_out {
	cJSON *arr;           /* findings[] being built */
	bool oom;
	struct rule_cand cand[RULE_MAX_CANDIDATES];
	unsigned ncand;
};

struct rule {
	const char *id;
	void (*eval)(const struct rule_ctx *c, struct rule_out *o);
};

/* ---- reading the document (rule_read.c) ------------------------------- */
/*
 * Is fn (an entry of cpu.functions / top_functions) code the user owns, a
 * suggestion's fair target?  False for the interpreter's frozen modules
 * (<frozen importlib._bootstrap>), the standard library (a file under
 * .../lib/pythonX.Y/ outside site-packages and dist-packages), installed
 * packages (site-packages, dist-packages: torch among them), C functions
 * without a file, and InferScope's own agent.
 */
bool isc_ruser_code(const cJSON *fn);
/* The first of cpu.top_functions of kind ("python", "op"; NULL: any). */
const cJSON *isc_rtop_fn(const cJSON *doc, const char *kind);
/*
 * System (kernel-mode) time of the traced threads: judging iterations
 * (c->iterations), cpu.system_ns of the view (0 when not measured there);
 * else the sum of
 * processes[].threads[].system_ns over traced threads when any has one,
 * else of processes[].system_ns (a process's untraced threads, a BLAS
 * pool spinning in sched_yield say, then count too).  *of_threads (may be
 * NULL) says which.
 */
double isc_rsystem_ns(const struct rule_ctx *c, bool *of_threads);
/*
 * Share of traced time spent in the kernel on page faults (rule_read.c):
 * isc_rsystem_ns() / traced time, counted only while the traced processes'
 * faults run at >= 1000/s; 0-100.  host_memory_bound's share; op_compute_bound
 * subtracts it, since faults on fresh tensors happen inside ops.
 */
double isc_rfault_pct(const struct rule_ctx *c, double *faults_per_s);
/*
 * Whether memory.sites[] entry x is host memory: memory "host", or no
 * memory member (a document from before device sites).  The host rules
 * (memory_leak, memory_churn) read only these; device memory sites are
 * gpu_memory_leak's and gpu_memory_peak_site's (gpu.devices[].memory).
 */
bool isc_rhost_site(const cJSON *x);
/*
 * Blocked share of the traced threads' off-CPU time, 0-1: cpu.blocked_ns /
 * cpu.split.off_cpu_ns from thread samples (state S or D) when some
 * sample caught a thread blocked or at least 20 samples were taken inside
 * spans (cpu.state_samples), else voluntary / (voluntary + involuntary)
 * context switches, else 1.
 */
double isc_roff_cpu_blocked(const struct rule_ctx *c);
/*
 * Off-CPU reasons (cpu.off_cpu_reasons, from the sampler's THREAD_WAIT):
 * true when the document has them.  isc_rreason_ns() is the blocked ns of
 * one reason ("io_pipe"), less its part while a DataLoader's __next__ was
 * open when no_dataloader; isc_rreason_field() any number of that reason's
 * entry.  Both 0 for a reason with no time.
 */
bool isc_rhave_reasons(const cJSON *doc);
double isc_rreason_ns(const cJSON *doc, const char *reason, bool no_dataloader);
double isc_rreason_field(const cJSON *doc, const char *reason, const char *field);
/*
 * Whether a cpu.top_functions op row is a torch op: its "torch" flag
 * (--python=sample's C call rows), else by its module (isc_is_torch_op).
 */
bool isc_rrow_torch(const cJSON *fn);
/*
 * The first of cpu.top_functions that is a torch op (by its module, as
 * cpu.split.torch_ops_ns counts them), else the first op; NULL if none.
 */
const cJSON *isc_rtop_torch_op(const cJSON *doc);
/* cpu.split.torch_ops_pct, or ops_pct in a document from before the split in three. */
double isc_rtorch_ops_pct(const cJSON *doc);
/* 100 * part / whole, 0 when whole <= 0. */
double isc_rpct(double part, double whole);
/*
 * True when a summary.warnings[] entry says GPU tracing failed although a
 * CUDA driver was found, and the run has no GPU operations; *which (may be
 * NULL) receives that warning.  The data quality (rules.c) and
 * rule_gpu_not_traced.c use it.
 */
bool isc_rgpu_trace_failed(const cJSON *doc, const cJSON **which);
/* Computes c->split from c->g and the document (gpu_split.c); the engine calls it. */
void isc_gpu_split(const struct rule_ctx *c, struct isc_gpu_split *s);
/* c->split when the run has a GPU device with a span, else NULL: the GPU class rules' precondition. */
const struct isc_gpu_split *isc_rgpu_split(const struct rule_ctx *c);
/* The first of cpu_bound, sync_bound, launch_bound found so far, or NULL:
 * GPU idle time already in the estimate of a cause (gpu_gaps, gpu_low_util). */
const char *isc_rgpu_idle_covered(const struct rule_out *o);
/* The entry of distributed.collectives.by_op that takes most time (count x transfer), or NULL (rule_communication_bound.c). */
const cJSON *isc_rcomm_top_op(const cJSON *doc);
/* Value of mark name (its sum / count, the last value for a once-set mark), false when absent. */
bool isc_rmark(const cJSON *doc, const char *name, double *v);

/*
 * Words the verdict (rule_headline.c): sets verdict.headline (parts: our
 * text, workload names, locations) and verdict.sentence (the same as plain
 * text) once verdict and findings[] are in root.  0 or -ENOMEM.
 */
int isc_rules_headline(cJSON *root);

/* ---- building findings ------------------------------------------------- */
/* Appends a finding; severity "critical", "warning" or "info". */
cJSON *isc_fnd_new(struct rule_out *o, const char *id, const char *severity, double confidence,
	       const char *title_fmt, ...) __attribute__((format(printf, 5, 6)));
void isc_fnd_metric(struct rule_out *o, cJSON *f, const char *key, double v);
void isc_fnd_range(struct rule_out *o, cJSON *f, double start_ns, double end_ns, const char *label);
/*
 * Top contributor: name/file/line copied from src (an object of the
 * document, may be NULL: then name is used), kind, value_ns and pct (< 0:
 * left out).  Returns the item (for isc_fnd_detail) or NULL.
 */
cJSON *isc_fnd_top(struct rule_out *o, cJSON *f, const cJSON *src, const char *name, const char *kind,
	       double value_ns, double pct);
void isc_fnd_detail(struct rule_out *o, cJSON *top, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A top contributor's memory (value_bytes): what a memory finding ranks it by; < 0 left out. */
void isc_fnd_bytes(struct rule_out *o, cJSON *top, double bytes);
/*
 * The suggestion: saving_ns < 0 means no what-if could be computed (null);
 * estimated_saving_pct = saving_ns / wall_ns.  rationale is a format.
 */
void isc_fnd_suggest(const struct rule_ctx *c, struct rule_out *o, cJSON *f, double saving_ns, const char *action,
		 const char *estimate, const char *rationale_fmt, ...) __attribute__((format(printf, 7, 8)));
/* Memory the suggestion of f would free (suggestion.estimated_saving_bytes, an estimate). */
void isc_fnd_saving_bytes(struct rule_out *o, cJSON *f, double bytes);
/* The finding with that id already appended, or NULL. */
const cJSON *isc_fnd_find(const struct rule_out *o, const char *id);
/* Nominates f for the verdict. */
void isc_fnd_candidate(struct rule_out *o, cJSON *f, const char *cls, double explained_pct, double quality);

/* ---- the rules (rule_*.c), in evaluation order -------------------------- */
extern const struct rule isc_rule_data_loss, isc_rule_abrupt_end, isc_rule_gpu_not_traced;
extern const struct rule isc_rule_python_bound, isc_rule_op_compute_bound, isc_rule_thread_contention, isc_rule_io_wait,
	isc_rule_host_memory_bound, isc_rule_lock_wait, isc_rule_gil_contention, isc_rule_rss_growth, isc_rule_numa_remote, isc_rule_tail_latency, isc_rule_dataloader;
extern const struct rule isc_rule_gpu_compute_bound, isc_rule_launch_bound, isc_rule_cpu_bound, isc_rule_transfer_bound,
	isc_rule_sync_bound, isc_rule_gpu_gaps, isc_rule_gpu_low_util, isc_rule_gpu_memory_high, isc_rule_thermal_throttled;
extern const struct rule isc_rule_oom, isc_rule_memory_leak, isc_rule_memory_churn;
extern const struct rule isc_rule_straggler, isc_rule_communication_bound;
extern const struct rule isc_rule_gpu_memory_peak_site, isc_rule_gpu_memory_leak, isc_rule_gpu_memory_headroom,
	isc_rule_gpu_memory_fragmentation;

#endif
