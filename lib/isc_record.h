/* isc_record.h - the recorder: session, child process, drain and sampler. */
#ifndef ISC_RECORD_H
#define ISC_RECORD_H

#include "isc.h"

uint64_t isc_now_ns(void); /* CLOCK_MONOTONIC in ns */

struct isc_clock_pair {
	uint64_t realtime_ns, mono_ns, bracket_ns;
};
void isc_clock_pair(struct isc_clock_pair *p);

enum isc_cuda_mode {
	ISC_CUDA_AUTO,  /* inject when a CUDA driver loads and nobody else injects */
	ISC_CUDA_OFF,   /* --no-cuda: no agent, no NVML, no notes */
	ISC_CUDA_FORCE, /* --force: replace another tool's injection variables */
};

enum isc_python_mode {
	ISC_PY_AUTO,   /* sample, or exact when the CUDA agent is injected */
	ISC_PY_EXACT,  /* --python=exact: every call through the agent's hook */
	ISC_PY_SAMPLE, /* --python=sample: stacks read from outside, no per-call hook */
};

enum isc_native_mode {
	ISC_NATIVE_OFF,  /* --native=off (default): no native stacks */
	ISC_NATIVE_AUTO, /* --native=auto: sampled when perf_event_open is permitted, else a warning */
	ISC_NATIVE_ON,   /* --native=on: sampled, or the recording does not start */
};

struct isc_record_opts {
	char *const *argv;      /* workload command, argv[0] looked up in PATH */
	FILE *out;              /* trace destination */
	const char *agent_dir;  /* directory holding sitecustomize.py and _agent */
	uint64_t buffer_bytes;  /* total shared-memory budget (default 100 MB) */
	uint64_t ring_bytes;    /* flight-recorder size; 0 = stream the whole run */
	unsigned sample_hz;     /* sampler rate, 0 = off */
	int python_mode;        /* enum isc_python_mode: auto (default), exact, sample */
	unsigned python_hz;     /* Python stack sampling rate (--python-hz) */
	unsigned flush_ms;      /* max age of buffered events before a frame is written */
	int level;              /* zstd level */
	bool child_stdout_to_stderr;
	bool progress;          /* live line on stderr */
	const char *cuda_agent; /* absolute path of libiscope-cuda.so, NULL: not built */
	int cuda_mode;          /* enum isc_cuda_mode: auto, off (--no-cuda), force */
	bool cuda_driver_api;   /* --cuda-driver-api: the CUDA agent records driver API calls too */
	bool quiet;             /* no notes on stderr (GPU collection off and why) */
	uint64_t memory_limit;  /* --memory-limit: run the workload in a cgroup of this many bytes; 0 none */
	int native_mode;        /* enum isc_native_mode */
	unsigned native_hz;     /* native samples per second of a thread's CPU time (--native-hz) */
	uint32_t native_stack;  /* user stack bytes copied per native sample (--native-stack) */
	uint64_t memory_sampling; /* --memory-sampling: mean bytes between allocation samples; 0 off */
	const char *alloc_shim; /* absolute path of libiscope-alloc.so, NULL: none found */
};

struct isc_record_result {
	int status;            /* workload: exit code, or 128 + signal */
	int signal;            /* the signal that killed the workload, 0 if it exited */
	bool workload_started;
	int exec_errno;        /* the command could not be executed (errno) */
	uint64_t events, dropped, bytes;
	uint64_t stack_samples; /* Python stacks the out-of-process sampler wrote (--python=sample) */
	unsigned processes;
	bool write_failed;     /* trace output failed (message in write_error) */
	char write_error[256];
	unsigned warnings;     /* corrupt shared memory etc. (messages printed) */
};

/*
 * Runs the workload under recording until it and every process that joined
 * the session have exited.  Returns 0 when the recording ran (even if the
 * workload failed: see res->status), negative when it could not start.
 */
int isc_record_run(const struct isc_record_opts *o, struct isc_record_result *res);

#endif
