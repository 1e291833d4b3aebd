/*
 * fake_cuda.c - test double of the CUDA driver, built as libcuda.so.1.
 *
 * cuInit does what the real driver does with CUDA_INJECTION64_PATH: it
 * loads that library and calls its InitializeInjection, once per process.
 * The fake_* calls (fake_cuda.h) stand for CUDA work; they are handed to
 * the CUPTI double (fake_cupti.c) that the injected library loaded, found
 * through the library's handle, so they reach the same libcupti the agent
 * talks to.  Without an injected agent they do nothing, as CUDA work is
 * invisible without a profiler.
 *
 * FAKE_CUDA_MODE=stub makes it behave like the toolkit's stub libcuda
 * (every call returns CUDA_ERROR_STUB_LIBRARY, nothing is injected).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define CUDA_ERROR_STUB_LIBRARY 34

static struct {
	pthread_once_t once;
	int rc;
	void *agent;
	void (*launch)(const char *, uint32_t, uint64_t, const int *, const int *);
	void (*graph)(int, uint32_t, uint64_t);
	void (*launch_driver)(const char *, uint32_t, uint64_t);
	void (*launch_driver_ex)(const char *, uint32_t, uint64_t);
	void (*launch_reused)(const char *, uint32_t, uint64_t);
	int (*flush)(uint32_t);
	void (*driver_call)(uint32_t);
	void (*memcpy_)(uint64_t, uint8_t, uint8_t, uint8_t, uint32_t, int);
	void (*memset_)(uint64_t, uint32_t);
	void (*sync)(uint32_t);
	void (*device_sync)(void);
	void (*event_record)(uint32_t, uint32_t);
	void (*event_sync)(uint32_t);
	void (*malloc_)(uint64_t, uint64_t);
	void (*free_)(uint64_t, uint64_t);
	void (*malloc_fail)(uint64_t);
	void (*push)(const char *);
	void (*pop)(void);
	void (*name)(const char *);
} d = { .once = PTHREAD_ONCE_INIT };

static int stub(void)
{
	const char *m = getenv("FAKE_CUDA_MODE");
	return m && !strcmp(m, "stub");
}

static void init_once(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	if (stub()) {
		d.rc = CUDA_ERROR_STUB_LIBRARY;
		return;
	}
	if (!path || !*path)
		return;
	d.agent = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d.agent) {
		fprintf(stderr, "fake-cuda: cannot load %s: %s\n", path, dlerror());
		return;
	}
	int (*init)(void) = (int (*)(void))dlsym(d.agent, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "fake-cuda: %s has no InitializeInjection\n", path);
		return;
	}
	init();
	/* the CUPTI double, as loaded by the agent (dlsym searches its dependencies) */
	d.launch = (void (*)(const char *, uint32_t, uint64_t, const int *, const int *))dlsym(d.agent, "fakecupti_launch");
	d.graph = (void (*)(int, uint32_t, uint64_t))dlsym(d.agent, "fakecupti_graph_launch");
	d.launch_reused = (void (*)(const char *, uint32_t, uint64_t))dlsym(d.agent, "fakecupti_launch_reused_name");
	d.flush = (int (*)(uint32_t))dlsym(d.agent, "cuptiActivityFlushAll");
	d.driver_call = (void (*)(uint32_t))dlsym(d.agent, "fakecupti_driver_call");
	d.launch_driver = (void (*)(const char *, uint32_t, uint64_t))dlsym(d.agent, "fakecupti_launch_driver");
	d.launch_driver_ex = (void (*)(const char *, uint32_t, uint64_t))dlsym(d.agent, "fakecupti_launch_driver_ex");
	d.memcpy_ = (void (*)(uint64_t, uint8_t, uint8_t, uint8_t, uint32_t, int))dlsym(d.agent, "fakecupti_memcpy");
	d.memset_ = (void (*)(uint64_t, uint32_t))dlsym(d.agent, "fakecupti_memset");
	d.sync = (void (*)(uint32_t))dlsym(d.agent, "fakecupti_sync");
	d.device_sync = (void (*)(void))dlsym(d.agent, "fakecupti_device_sync");
	d.event_record = (void (*)(uint32_t, uint32_t))dlsym(d.agent, "fakecupti_event_record");
	d.event_sync = (void (*)(uint32_t))dlsym(d.agent, "fakecupti_event_sync");
	d.malloc_ = (void (*)(uint64_t, uint64_t))dlsym(d.agent, "fakecupti_malloc");
	d.free_ = (void (*)(uint64_t, uint64_t))dlsym(d.agent, "fakecupti_free");
	d.malloc_fail = (void (*)(uint64_t))dlsym(d.agent, "fakecupti_malloc_fail");
	d.push = (void (*)(const char *))dlsym(d.agent, "fakecupti_nvtx_push");
	d.pop = (void (*)(void))dlsym(d.agent, "fakecupti_nvtx_pop");
	d.name = (void (*)(const char *))dlsym(d.agent, "fakecupti_name_thread");
	void (*devices)(void) = (void (*)(void))dlsym(d.agent, "fakecupti_driver_init");
	if (!d.launch || !devices) {
		fprintf(stderr, "fake-cuda: %s is not linked with the CUPTI double\n", path);
		d.launch = NULL;
		return;
	}
	devices();
}

EXPORT int cuInit(unsigned int flags)
{
	(void)flags;
	pthread_once(&d.once, init_once);
	return d.rc;
}

EXPORT int cuDriverGetVersion(int *version)
{
	if (stub())
		return CUDA_ERROR_STUB_LIBRARY;
	*version = 13000;
	return 0;
}

EXPORT int fake_injected(void)
{
	return d.launch != NULL;
}

EXPORT void fake_launch_cfg(const char *kernel, unsigned stream, unsigned long long dur_ns, const int grid[3],
			    const int block[3])
{
	if (d.launch)
		d.launch(kernel, stream, dur_ns, grid, block);
}

EXPORT void fake_launch(const char *kernel, unsigned stream, unsigned long long dur_ns)
{
	static const int grid[3] = { 4, 2, 1 }, block[3] = { 128, 1, 1 };
	fake_launch_cfg(kernel, stream, dur_ns, grid, block);
}

EXPORT void fake_launch_driver(const char *kernel, unsigned stream, unsigned long long dur_ns)
{
	if (d.launch_driver)
		d.launch_driver(kernel, stream, dur_ns);
}

EXPORT void fake_launch_driver_ex(const char *kernel, unsigned stream, unsigned long long dur_ns)
{
	if (d.launch_driver_ex)
		d.launch_driver_ex(kernel, stream, dur_ns);
}

EXPORT void fake_launch_reused_name(const char *kernel, unsigned stream, unsigned long long dur_ns)
{
	if (d.launch_reused)
		d.launch_reused(kernel, stream, dur_ns);
}

EXPORT void fake_driver_call(unsigned cbid)
{
	if (d.driver_call)
		d.driver_call(cbid);
}

EXPORT void fake_flush(void)
{
	if (d.flush)
		d.flush(0);
}

EXPORT void fake_graph_launch(int kernels, unsigned stream, unsigned long long dur_ns)
{
	if (d.graph)
		d.graph(kernels, stream, dur_ns);
}

EXPORT void fake_memcpy(unsigned long long bytes, int copy_kind, int src, int dst, unsigned stream, int async)
{
	if (d.memcpy_)
		d.memcpy_(bytes, (uint8_t)copy_kind, (uint8_t)src, (uint8_t)dst, stream, async);
}

EXPORT void fake_memset(unsigned long long bytes, unsigned stream)
{
	if (d.memset_)
		d.memset_(bytes, stream);
}

EXPORT void fake_sync(unsigned stream)
{
	if (d.sync)
		d.sync(stream);
}

EXPORT void fake_device_sync(void)
{
	if (d.device_sync)
		d.device_sync();
}

EXPORT void fake_event_record(unsigned event, unsigned stream)
{
	if (d.event_record)
		d.event_record(event, stream);
}

EXPORT void fake_event_sync(unsigned event)
{
	if (d.event_sync)
		d.event_sync(event);
}

EXPORT void fake_malloc(unsigned long long bytes, unsigned long long address)
{
	if (d.malloc_)
		d.malloc_(bytes, address);
}

EXPORT void fake_malloc_fail(unsigned long long bytes)
{
	if (d.malloc_fail)
		d.malloc_fail(bytes);
}

EXPORT void fake_free(unsigned long long bytes, unsigned long long address)
{
	if (d.free_)
		d.free_(bytes, address);
}

/* What the NVTX library does at its first call when NVTX_INJECTION64_PATH is set. */
EXPORT int fake_nvtx_inject(void)
{
	const char *path = getenv("NVTX_INJECTION64_PATH");
	if (!path || !*path)
		return 0;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*init)(const void *) = h ? (int (*)(const void *))dlsym(h, "InitializeInjectionNvtx2") : NULL;
	if (!init) {
		fprintf(stderr, "fake-cuda: NVTX injection %s: %s\n", path, h ? "no InitializeInjectionNvtx2" : dlerror());
		return 0;
	}
	return init((const void *)fake_nvtx_inject);
}

EXPORT void fake_nvtx_push(const char *name)
{
	if (d.push)
		d.push(name);
}

EXPORT void fake_nvtx_pop(void)
{
	if (d.pop)
		d.pop();
}

EXPORT void fake_name_thread(const char *name)
{
	if (d.name)
		d.name(name);
}
