/*
 * gpu_names.c - what a name means to the GPU analysis: which CUDA and HIP
 * calls launch work, block the host, copy or allocate, which op names
 * HTA counts as compute, and ProfilerStep#N (GPU_NC_* of gpu_internal.h);
 * also the names of NVML's clock-event reasons.  A name is classified the
 * first time its string id is seen and cached per id.
 *
 *   launch call   cudaLaunchKernel(ExC), cudaLaunchCooperativeKernel,
 *                 cudaMemcpyAsync, cudaMemsetAsync, cuLaunchKernel(Ex),
 *                 cuLaunchCooperativeKernel(MultiDevice), cuLaunch,
 *                 cuLaunchGrid(Async) (the driver's launch calls the CUDA
 *                 agent records by default) and the hip equivalents, as
 *                 the name or the name + "_suffix" (cudaLaunchKernel_ptsz)
 *   graph launch  a name holding "GraphLaunch": one call, many ops
 *   sync call     a name holding "Synchronize", cudaMemset, hipMemset, and
 *                 a synchronous copy: cudaMemcpy*, cuMemcpy*, hipMemcpy*
 *                 without "Async" or "Peer" (with "Async" and no "Peer":
 *                 an async copy, blocking only for pageable memory, which
 *                 analyze_gpu.c sees from its op)
 *   non-compute   a name holding "Memcpy", "Memset" or "nccl" (any case)
 *   call site kept  syncs, graph launches, copies and memsets
 *   allocation    cudaMalloc*, cuMemAlloc*, cuMemCreate*, hipMalloc*
 */
#include <string.h>

#include "gpu_internal.h"

/* s is name or name + "_suffix" (cudaLaunchKernel_ptsz, ..._v11060). */
static bool is_api(const char *s, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(s, name, n) && (s[n] == '\0' || s[n] == '_');
}

/* The GPU_NC_* bits of name s (the definitions at the top of this file). */
static unsigned classify(const char *s)
{
	static const char *const launch[] = {
		"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaMemcpyAsync",
		"cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
		"cuLaunchCooperativeKernelMultiDevice", "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync",
		"hipLaunchKernel", "hipExtLaunchKernel",
		"hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
	};
	static const char *const blocking[] = { "cudaMemset", "hipMemset" };
	unsigned c = GPU_NC_KNOWN;
	if (!strncmp(s, "ProfilerStep", 12))
		c |= GPU_NC_STEP;
	for (size_t i = 0; i < sizeof(launch) / sizeof(launch[0]); i++)
		if (is_api(s, launch[i]))
			c |= GPU_NC_LAUNCH;
	if (strstr(s, "GraphLaunch"))
		c |= GPU_NC_GRAPH;
	if (strstr(s, "Synchronize"))
		c |= GPU_NC_SYNC;
	for (size_t i = 0; i < sizeof(blocking) / sizeof(blocking[0]); i++)
		if (is_api(s, blocking[i]))
			c |= GPU_NC_SYNC;
	/* copy calls; a peer copy does not wait for the host, async or not */
	if ((!strncmp(s, "cudaMemcpy", 10) || !strncmp(s, "cuMemcpy", 8) || !strncmp(s, "hipMemcpy", 9)) &&
	    !strstr(s, "Peer"))
		c |= strstr(s, "Async") ? GPU_NC_ASYNC_COPY : GPU_NC_BLOCKING_COPY | GPU_NC_SYNC;
	if (strstr(s, "Memcpy") || strstr(s, "Memset") || strcasestr(s, "nccl"))
		c |= GPU_NC_NONCOMPUTE;
	if (c & (GPU_NC_SYNC | GPU_NC_GRAPH) || strstr(s, "Memcpy") || strstr(s, "Memset"))
		c |= GPU_NC_SITE;
	if (!strncmp(s, "cudaMalloc", 10) || !strncmp(s, "cuMemAlloc", 10) || !strncmp(s, "cuMemCreate", 11) ||
	    !strncmp(s, "hipMalloc", 9))
		c |= GPU_NC_ALLOC;
	return c;
}

unsigned isc_gpu_name_class(struct isc_gpu_ana *g, uint32_t id)
{
	uint32_t *slot;
	if (isc_umap_slot(&g->names, id, &slot)) {
		g->oom = true;
		return 0;
	}
	if (*slot == ISC_UMAP_NONE) {
		const char *s = isc_gpu_str_name(g, id);
		*slot = s ? classify(s) : GPU_NC_KNOWN;
	}
	return *slot;
}

const struct gpu_nv_reason isc_gpu_nv_reasons[] = {
	{ 0x1, "gpu_idle" },       { 0x2, "applications_clocks" }, { 0x4, "sw_power_cap" },
	{ 0x8, "hw_slowdown" },    { 0x10, "sync_boost" },         { 0x20, "sw_thermal" },
	{ 0x40, "hw_thermal" },    { 0x80, "hw_power_brake" },     { 0x100, "display_clocks" },
};
