/*
 * isc_dist.h - the ranks of a distributed job, shared by the merge (which
 * aligns the clocks of several inputs on their collectives) and the
 * analysis (which builds the job view): what the stages below the tools
 * share, not the tools (lib/merge/dist_coll.c, dist_facts.c,
 * dist_align.c).
 *
 *   names      which kernel, scope and mark names are collectives and rank
 *              facts (NCCL/RCCL kernels, "gloo:all_reduce" annotations, the
 *              agent's dist.* marks)
 *   tracker    the collectives of each unit (a rank, or an input), in
 *              order, from timeline events
 *   facts      which process is which rank: the agent's marks, Kineto's
 *              distributedInfo, parent processes
 *   align      clock offsets between clock domains from the ends of the
 *              collectives every rank leaves together
 *
 * The rules are stated for users in iscope-merge(1) and iscope-analyze(1)
 * (DISTRIBUTED JOBS) and formats/timeline.md §11.
 */
#ifndef ISC_DIST_H
#define ISC_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isc.h"      /* struct isc_tl_event */
#include "isc_util.h" /* struct isc_umap */

/* ---- names (dist_coll.c) ------------------------------------------------ */
enum isc_coll_op {
	ISC_COLL_NONE = 0,
	ISC_COLL_ALL_REDUCE,
	ISC_COLL_ALL_GATHER,
	ISC_COLL_REDUCE_SCATTER,
	ISC_COLL_ALL_TO_ALL,
	ISC_COLL_BARRIER,
	ISC_COLL_BROADCAST,
	ISC_COLL_REDUCE,
	ISC_COLL_GATHER,
	ISC_COLL_SCATTER,
	ISC_COLL_SEND,
	ISC_COLL_RECV,
	ISC_COLL_SEND_RECV, /* an NCCL SendRecv kernel: all_to_all and grouped point-to-point */
	ISC_COLL_OTHER,     /* a communication kernel of no known operation (ncclDevKernel_Generic) */
	ISC_COLL_N
};

/* "all_reduce", ...; "" for ISC_COLL_NONE. */
const char *isc_coll_op_name(unsigned op);
/* The op of a name isc_coll_op_name gives, ISC_COLL_NONE when none. */
unsigned isc_coll_op_parse(const char *name);
/*
 * A symmetric collective: every rank of the group leaves it together,
 * within the network's latency (all_reduce, all_gather, reduce_scatter,
 * all_to_all, barrier, an NCCL SendRecv kernel).  Only these align clocks.
 */
bool isc_coll_symmetric(unsigned op);
/*
 * NCCL-tests' bus-bandwidth factor for a group of n ranks: all_reduce
 * 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast,
 * reduce 1; 0 when none applies (barrier, point-to-point, unknown).
 */
double isc_coll_bus_factor(unsigned op, unsigned n);
/*
 * The message size NCCL-tests divides by the time (algorithm bandwidth)
 * from a rank's input bytes: all_gather n x input (the gathered output),
 * every other op its input.
 */
double isc_coll_size_bytes(unsigned op, unsigned n, double input_bytes);

/* Element types, as the agent's marks and the kernels' names give them. */
enum isc_dtype {
	ISC_DT_NONE = 0, ISC_DT_F32, ISC_DT_F16, ISC_DT_BF16, ISC_DT_F64, ISC_DT_I8, ISC_DT_U8, ISC_DT_I16,
	ISC_DT_I32, ISC_DT_I64, ISC_DT_BOOL, ISC_DT_F8, ISC_DT_OTHER, ISC_DT_N
};
/* "float32", ...; NULL for ISC_DT_NONE. */
const char *isc_dtype_name(unsigned dt);
/* A torch dtype name ("float32", "torch.float32", "float", "half", "bfloat16", "int8"...) -> enum; OTHER when unknown. */
unsigned isc_dtype_parse(const char *s, size_t n);

/*
 * A communication kernel (HTA's rule: "nccl" in the name, and RCCL's
 * "rccl"): its op from the name (ncclKernel_AllReduce_RING_LL_Sum_float,
 * ncclDevKernel_AllGather_RING_LL, ncclKernel_SendRecv_...: the word after
 * "Kernel_"), ISC_COLL_OTHER when the word is unknown; *dtype (may be
 * NULL) the element type the name ends with, ISC_DT_NONE when it names
 * none.  ISC_COLL_NONE: not a communication kernel.
 */
unsigned isc_coll_kernel(const char *name, unsigned *dtype);
/*
 * A collective call annotated as a scope: "BACKEND:OP" with OP a
 * torch.distributed collective ("nccl:all_reduce", "gloo:all_gather",
 * "nccl:_all_gather_base", "nccl:all_to_all", "gloo:barrier"): what the
 * PyTorch profiler records around a collective and the Python agent
 * records in its place (formats/trace.md, §6.1 "Names the agent writes").
 * ISC_COLL_NONE otherwise.
 */
unsigned isc_coll_scope(const char *name);

/* The agent's dist.* marks (formats/trace.md), by name. */
enum isc_dist_mark {
	ISC_DM_NONE = 0,
	ISC_DM_RANK,       /* dist.rank: from torch.distributed.init_process_group */
	ISC_DM_WORLD,      /* dist.world_size */
	ISC_DM_LOCAL_RANK, /* dist.local_rank */
	ISC_DM_JOB,        /* dist.job: a hash of the job's rendezvous */
	ISC_DM_BACKEND,    /* dist.backend.NAME = 1 */
	ISC_DM_ENV_RANK,   /* dist.env.rank: from RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK at start */
	ISC_DM_ENV_WORLD,  /* dist.env.world_size */
	ISC_DM_ENV_LOCAL,  /* dist.env.local_rank */
	ISC_DM_ENV_JOB,    /* dist.env.job */
	ISC_DM_SEQ,        /* dist.seq: the collective's number in its process group, from 1 */
	ISC_DM_PG,         /* dist.pg: the process group's number (0: the default group) */
	ISC_DM_BYTES,      /* dist.bytes.DTYPE: this rank's input bytes */
};
/* The mark's meaning; *dtype (may be NULL) the DTYPE of dist.bytes.DTYPE; backend (may be NULL) that of dist.backend.NAME. */
unsigned isc_dist_mark(const char *name, unsigned *dtype, const char **backend);

/* ---- the collectives of each unit (dist_coll.c) ----------------------- */
/* One collective as one rank saw it. */
struct isc_coll {
	int64_t start, end; /* ns on the unit's clock */
	uint64_t seq;       /* dist.seq, 0 unknown */
	uint64_t bytes;     /* this rank's input bytes, 0 unknown */
	uint64_t idx;       /* its position on its channel, from 0 */
	uint32_t pg;        /* dist.pg (with seq) */
	uint32_t chan;      /* channel: the stream (kernels) or thread (calls), numbered by first collective */
	uint8_t op, dtype;
	bool gpu;           /* a communication kernel; else a CPU call */
};

struct isc_coll_pending; /* a collective call open on a thread */

/* Channels of one kind: key -> number, in order of first collective, and each one's count. */
struct isc_coll_chans {
	struct isc_umap map;
	uint64_t *n;
	size_t count, cap;
};

struct isc_coll_unit {
	struct isc_coll *kern, *call; /* kernels and CPU calls, each in start order (kernels) or end order (calls) */
	size_t nkern, ncall, capkern, capcall;
	uint64_t dropped;             /* past the tracker's cap */
	struct isc_coll_chans ck, cc; /* kernel channels (device, stream), call channels (thread) */
	struct isc_umap open;         /* pid << 32 | tid -> index in pend */
	struct isc_coll_pending *pend;
	size_t npend, cappend;
};

/*
 * Names are classified once per string id (a small cache); name_of gives
 * the string of an id (NULL when unknown) and its kind.
 */
struct isc_coll_tracker {
	const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind);
	void *ctx;
	size_t cap; /* most collectives kept per unit and list */
	uint16_t *cls; /* per string id: classification + 1, 0 not yet */
	size_t ncls;
	struct isc_coll_unit *units;
	size_t nunits, capunits;
	struct isc_umap bykey; /* isc_colltrk_unit's keys -> unit */
};

/* Most collectives one rank's log (and the merge's alignment) keeps: the first ones. */
#define ISC_DIST_LOG_MAX 65536u

/* A tracker of nunits units (more with isc_colltrk_unit) keeping at most cap collectives per list; 0 or -ENOMEM. */
int isc_colltrk_init(struct isc_coll_tracker *t, size_t nunits, size_t cap,
		     const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind), void *ctx);
/* The unit of key (a new one, numbered after the others, the first time); 0 or -ENOMEM. */
int isc_colltrk_unit(struct isc_coll_tracker *t, uint64_t key, size_t *u);
/*
 * Feeds one timeline event of unit u (events of a unit in timeline order):
 * communication kernels (GPU_OP), collective scopes (SPAN_BEGIN/END) and
 * the dist.seq, dist.pg and dist.bytes marks inside them.  0 or -ENOMEM.
 */
int isc_colltrk_event(struct isc_coll_tracker *t, size_t u, const struct isc_tl_event *ev);
/*
 * The collectives of unit u: its kernels when it has any (the GPU's view:
 * a kernel starts as the rank arrives and ends as the transfer does), else
 * its CPU calls, in start order.  Valid until isc_colltrk_free.
 */
const struct isc_coll *isc_colltrk_get(struct isc_coll_tracker *t, size_t u, size_t *n);
void isc_colltrk_free(struct isc_coll_tracker *t);

/* ---- which process is which rank (dist_facts.c) ----------------------- */
#define ISC_RANK_NONE UINT32_MAX

/* One process's facts, or a source's (pid 0 = the Kineto file's distributedInfo). */
struct isc_rank_proc {
	uint32_t source, pid, ppid;
	uint32_t rank, world, local; /* ISC_RANK_NONE unknown */
	uint32_t env_rank, env_world, env_local;
	uint64_t job, env_job; /* 0 unknown */
	char backend[16];
	bool init; /* rank from torch.distributed's initialization (else from the environment) */
};

/* A rank as resolved: its processes and what they said. */
struct isc_rank {
	uint32_t rank, world, local; /* world, local: ISC_RANK_NONE unknown */
	uint32_t source;             /* the input (timeline source) it came from */
	uint64_t job;
	char backend[16];
	uint32_t *pids;              /* its processes (0: every process of the source, a Kineto file) */
	size_t npids, cappids;
};

struct isc_rank_facts {
	const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind);
	void *ctx;
	struct isc_rank_proc *procs;
	size_t nprocs, capprocs;
	struct isc_umap byproc; /* source << 32 | pid -> index in procs */
	/* resolved (isc_rankfacts_resolve) */
	struct isc_rank *ranks;  /* sorted by rank */
	size_t nranks, capranks;
	struct isc_umap owner;   /* source << 32 | pid -> index in ranks; pid 0: the whole source */
	char conflict[256];      /* why the facts do not make one job ("" when they do) */
};

void isc_rankfacts_init(struct isc_rank_facts *f, const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind),
			void *ctx);
/* Takes the facts of one event (MARK dist.*, META rank/world_size/backend, PROC_INFO); 0 or -ENOMEM. */
int isc_rankfacts_event(struct isc_rank_facts *f, const struct isc_tl_event *ev);
/*
 * Resolves the facts into ranks (iscope-analyze(1), DISTRIBUTED JOBS):
 * a process's own torch.distributed facts, else (when no process of its
 * source initialized torch.distributed) its environment's, else its
 * parent's; a Kineto source's distributedInfo covers the whole source.
 * 0, -ENOMEM, or -EINVAL when the facts are not one job (two processes or
 * inputs claim one rank, different world sizes, backends or
 * rendezvous): f->conflict says which, in words.
 */
int isc_rankfacts_resolve(struct isc_rank_facts *f);
/* The index in f->ranks of the rank (source, pid) belongs to, ISC_RANK_NONE for none. */
uint32_t isc_rankfacts_owner(const struct isc_rank_facts *f, uint32_t source, uint32_t pid);
void isc_rankfacts_free(struct isc_rank_facts *f);

/* ---- clock alignment (dist_align.c) ------------------------------------ */
/* One rank's end of one symmetric collective: key identifies the collective across ranks. */
struct isc_align_end {
	uint64_t key;
	uint32_t domain; /* clock domain, 0 .. ndomains-1 */
	int64_t end_ns;  /* on the domain's own clock */
};

struct isc_align_result {
	int64_t offset_ns;      /* add to the domain's times to put them on the reference's clock */
	uint64_t uncertainty_ns; /* largest |residual| of the collectives used */
	uint64_t used;          /* collectives it rests on */
	bool aligned;           /* false: shares no collective with the reference (offset 0) */
};

/*
 * Offsets of ndomains clock domains to domain ref: per collective key
 * (appearing in two domains), the median end in each domain; a domain's
 * offset is the median over those collectives of (its median end on the
 * reference's clock - its own), through already aligned domains when it
 * shares none with the reference.  ends is reordered.  0 or -ENOMEM.
 */
int isc_clock_align(struct isc_align_end *ends, size_t n, size_t ndomains, uint32_t ref,
		    struct isc_align_result *out);

#endif
