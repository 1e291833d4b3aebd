/*
 * fake_cuda.h - what the test double of the CUDA driver (libcuda.so.1,
 * fake_cuda.c) offers the test workloads: cuInit as the driver has it,
 * and fake_* calls that stand for CUDA work (a launch, a copy...), handed
 * to the test double of CUPTI when the injected agent loaded it.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stdint.h>

int cuInit(unsigned int flags);
int cuDriverGetVersion(int *version);

void fake_launch(const char *kernel, unsigned stream, unsigned long long dur_ns);
void fake_launch_cfg(const char *kernel, unsigned stream, unsigned long long dur_ns, const int grid[3],
		     const int block[3]);
void fake_graph_launch(int kernels, unsigned stream, unsigned long long dur_ns);
/* cuLaunchKernel alone, no runtime call (as Triton launches its kernels) */
void fake_launch_driver(const char *kernel, unsigned stream, unsigned long long dur_ns);
/* cuLaunchKernelEx alone (as cuBLAS launches its GEMMs with CUDA 13) */
void fake_launch_driver_ex(const char *kernel, unsigned stream, unsigned long long dur_ns);
/* a launch whose kernel name CUPTI gives at the address of the last such
 * launch's (a module loaded where another was); fake_flush() between them */
void fake_launch_reused_name(const char *kernel, unsigned stream, unsigned long long dur_ns);
/* a driver call of CUPTI callback id cbid alone (any id: the double's names know a few) */
void fake_driver_call(unsigned cbid);
/* cuptiActivityFlushAll(0), as the agent's flusher calls it: the records so far delivered */
void fake_flush(void);
/* copy_kind, src, dst: CUPTI's values (CUPTI_ACTIVITY_MEMCPY_KIND_*, _MEMORY_KIND_*) */
void fake_memcpy(unsigned long long bytes, int copy_kind, int src, int dst, unsigned stream, int async);
void fake_memset(unsigned long long bytes, unsigned stream);
void fake_sync(unsigned stream);        /* cudaStreamSynchronize */
void fake_device_sync(void);            /* cudaDeviceSynchronize */
void fake_event_record(unsigned event, unsigned stream); /* cudaEventRecord (events 0..63) */
void fake_event_sync(unsigned event);   /* cudaEventSynchronize */
void fake_malloc(unsigned long long bytes, unsigned long long address);
void fake_free(unsigned long long bytes, unsigned long long address);
void fake_malloc_fail(unsigned long long bytes); /* cudaMalloc returning out of memory */
/* NVTX: fake_nvtx_inject plays the NVTX loader (NVTX_INJECTION64_PATH) */
int fake_nvtx_inject(void);
void fake_nvtx_push(const char *name);
void fake_nvtx_pop(void);
void fake_name_thread(const char *name);
/* 1 when an injected agent is attached (InitializeInjection ran) */
int fake_injected(void);

#endif
