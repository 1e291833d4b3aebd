/*
 * gpu_setup.h - the recorder's GPU side (record.c uses it): whether the
 * workload gets the CUDA agent (CUDA_INJECTION64_PATH), and the NVML
 * sampler.  See iscope-record(1), GPU.
 */
#ifndef ISC_GPU_SETUP_H
#define ISC_GPU_SETUP_H

#include "isc.h"
#include "isc_record.h" /* enum isc_cuda_mode */

struct isc_nvml;

struct isc_gpu_setup {
	char *env[3];         /* "CUDA_INJECTION64_PATH=..." etc. to add, NULL-terminated; owned */
	bool replace_cuda, replace_nvtx; /* drop the user's value of that variable */
	bool driver;          /* a CUDA driver (not the stub) loads */
	int driver_version;   /* its cuDriverGetVersion, 0 if none */
	struct isc_buf warnings; /* WARNING records (timed, from ts 0) for a SAMPLES chunk */
	uint64_t warnings_ts;
	struct isc_nvml *nvml; /* open NVML, NULL when absent or off */
};

/*
 * Decides the GPU collection of one recording: probes the CUDA driver
 * ($INFERSCOPE_CUDA_DRIVER, default libcuda.so.1: dlopen, then
 * cuDriverGetVersion, which the toolkit's stub fails), checks the
 * injection variables the user already has, opens NVML when sample_hz is
 * not 0.  agent is the absolute path of libiscope-cuda.so, NULL when this
 * build has none.  Each reason GPU data will be missing gets one WARNING
 * record in s->warnings and, unless quiet, one line on stderr.  now is the
 * time of the records.  Returns 0 (nothing here stops a recording) or
 * -ENOMEM.  Free with isc_gpu_setup_free.
 */
int isc_gpu_setup(struct isc_gpu_setup *s, const char *agent, enum isc_cuda_mode mode, unsigned sample_hz,
		  bool quiet, uint64_t now);
void isc_gpu_setup_free(struct isc_gpu_setup *s);

/* Loads and initialises NVML (libnvidia-ml.so.1); 0, or -ENOENT / -ENOMEM
 * with the reason in why.  Close with isc_nvml_close (NULL is a no-op). */
int isc_nvml_open(struct isc_nvml **n, char *why, size_t len);
void isc_nvml_close(struct isc_nvml *n);

/*
 * NVML sampling thread: GPU_INFO once per device, then GPU_SAMPLE per
 * device at hz (at most 10).  emit(ctx, records, len, base_ts, keep) is
 * called with one SAMPLES payload per tick, from the thread.  The thread
 * owns nothing of setup.  Between ticks it waits on wake_fd (-1: none),
 * which the recorder makes readable when stopping begins, after
 * isc_nvml_stopping() (a woken thread that saw no flag would wait again on
 * a readable fd: a spin); stop joins it.  Returns 0 or a negative errno.
 */
typedef void isc_nvml_emit_fn(void *ctx, const void *records, size_t len, uint64_t base_ts, bool keep);
struct isc_nvml_thread;
int isc_nvml_start(struct isc_nvml_thread **t, struct isc_nvml *n, unsigned hz, int wake_fd, isc_nvml_emit_fn *emit,
		   void *ctx);
void isc_nvml_stopping(struct isc_nvml_thread *t);
void isc_nvml_stop(struct isc_nvml_thread *t);

#endif
