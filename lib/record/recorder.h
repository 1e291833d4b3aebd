/*
 * recorder.h - the recorder's state, shared by record.c (session, child,
 * signals, threads), drain.c (the agents' untrusted shared memory) and
 * frames.c (chunks written, or kept for the flight recorder).  Private to
 * lib/record.
 */
#ifndef ISC_RECORDER_H
#define ISC_RECORDER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "isc.h"
#include "isc_record.h"
#include "gpu_setup.h"
#include "memcg.h"
#include "native.h"

#define REC_ROUND_LAG 5
#define REC_MAX_PROCS 4096

struct rec_stream {
	uint32_t tid;
	bool started, broken;
	bool head_done; /* flight recorder: its head (THREAD_BEGIN, CALIBRATION) was written as a kept frame */
	struct isc_buf pending;
	uint64_t ts;           /* running timestamp after the last drained record */
	uint64_t pending_base; /* ts before the first pending record */
	uint64_t pending_since;/* when the first pending record was drained */
	uint64_t pending_mark; /* rec.drained then */
	uint32_t seq;
	uint64_t dropped_seen;
	uint64_t events;
};

struct rec_proc {
	pid_t pid;
	const char *suffix; /* ".shm": the Python agent's file; ".cuda.shm": the CUDA agent's; ".alloc.shm": the allocation shim's */
	uint16_t chunk;     /* EVENTS; GPU_EVENTS for the CUDA agent's streams; ALLOC for the shim's */
	int fd;
	uint8_t *map;
	size_t map_len;
	uint32_t nslots, ring_size; /* validated copies of the header */
	uint32_t nbig, big_ring_size;
	uint64_t str_off, str_size, ring_off;
	uint64_t str_read;
	struct rec_stream *streams;
	bool info_written, closed;
	bool faulted; /* its mapping raised SIGBUS: never touched again */
	bool exited;  /* a PROC_EXIT was written for its pid (under plock) */
	bool warned;  /* one warning per file for a file that is refused */
	bool sites_done;  /* allocation shim's file: its site table was written (alloc_table.c) */
	uint64_t exit_ts; /* when the recorder saw the process die (0: alive) */
	uint64_t slot_dropped_seen, str_dropped_seen;
};

struct rec_frame {
	struct isc_buf data;
	bool keep; /* survives flight-recorder eviction */
};

struct recorder {
	const struct isc_record_opts *o;
	struct isc_record_result *res;
	struct isc_writer *w;
	pthread_mutex_t wlock; /* writer, frames, res counters */
	char dir[256];
	int dirfd;  /* the session directory, opened once (O_DIRECTORY|O_NOFOLLOW) */
	int lockfd; /* recorder.lock, flock'ed while we run */
	uint64_t epoch;
	struct rec_proc *procs[REC_MAX_PROCS];
	unsigned nprocs;
	pthread_mutex_t plock; /* procs[] membership (sampler reads pids) */
	pid_t child;
	volatile int stop; /* set by main when every process has exited */
	int wake_fd; /* eventfd, made readable when stopping begins: wakes the sleeping threads (-1: none) */
	uint8_t *scratch;
	size_t scratch_cap;
	uint64_t cycle_start[REC_ROUND_LAG];
	unsigned ncycles;
	uint64_t watermark;
	struct rec_frame *frames; /* flight-recorder mode */
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
	bool python;              /* the workload command runs CPython (runs_python) */
	bool python_sample;       /* Python stacks sampled (--python, or auto without GPU tracing) */
	/* STRINGS seq per pid, shared by every writer of the pid's strings (the
	 * Python and CUDA agents' files, the Python sampler); under wlock */
	struct {
		pid_t pid;
		uint32_t seq;
	} strseq[REC_MAX_PROCS];
	unsigned nstrseq;
	bool py_warned; /* the Python sampler's first warning was printed */
	/* processes reaped before any file of theirs was added (under plock):
	 * a file found later is born exited, with that time */
	struct {
		pid_t pid;
		uint64_t ts;
	} reaped[64];
	unsigned nreaped;
	struct isc_memcg cg;      /* --memory-limit's cgroup; OOM-kill counters */
	struct isc_native *native; /* --native: the perf events' sampler, NULL when off */
	char *alloc_env[5];       /* the allocation shim's variables in the workload's environment (owned) */
};

/* ---- frames.c ---------------------------------------------------------- */
/* Writes (or, in flight-recorder mode, keeps) one chunk; a write error is
 * kept in r->res.  _locked: the caller holds r->wlock. */
void isc_rec_emit(struct recorder *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base, uint32_t seq,
		  const void *payload, size_t len, bool keep);
void isc_rec_emit_locked(struct recorder *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base,
			 uint32_t seq, const void *payload, size_t len, bool keep);
/* A STRINGS chunk of pid, with the pid's next seq (formats/trace.md §3). */
void isc_rec_emit_strings(struct recorder *r, pid_t pid, const void *payload, size_t len);
/* The file execvp would run for cmd (record.c): cmd when it holds a '/', else the first
 * executable PATH entry, into path[cap]; NULL when none. */
const char *isc_rec_find_command(const char *cmd, char *path, size_t cap);

/* ---- drain.c ----------------------------------------------------------- */
/* SIGBUS handler (SA_SIGINFO): a fault while reading a traced process's
 * mapping closes that process; any other SIGBUS takes the default action. */
void isc_drain_on_sigbus(int sig, siginfo_t *si, void *ctx);
/* The process's producer file (0: <pid>.shm, 1: <pid>.cuda.shm, 2: <pid>.alloc.shm), added
 * once; NULL when REC_MAX_PROCS are tracked or out of memory. */
struct rec_proc *isc_drain_proc_add(struct recorder *r, pid_t pid, unsigned producer);
/* Adds the producer files that appeared in the session directory. */
void isc_drain_scan(struct recorder *r);
/* One cycle on process p: attach, PROC_INFO, rings, strings, counters. */
void isc_drain_proc(struct recorder *r, struct rec_proc *p, uint64_t now);
/* Writes stream s's pending records (after p's new strings) as one frame. */
void isc_drain_flush(struct recorder *r, struct rec_proc *p, struct rec_stream *s);

/* ---- alloc_table.c ------------------------------------------------------ */
/* 1 when the command is a static executable (LD_PRELOAD cannot enter it). */
int isc_alloc_static_exe(const char *cmd);
/* Writes the site table of an exited process's <pid>.alloc.shm (once), or a
 * WARNING saying why not.  Runs under the drain's SIGBUS guard. */
void isc_alloc_sites_write(struct recorder *r, struct rec_proc *p);

#endif
