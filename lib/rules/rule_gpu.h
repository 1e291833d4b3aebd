/*
 * rule_gpu.h - the split of a GPU's span among the GPU verdict classes,
 * shared by rule_gpu_compute_bound.c, rule_launch_bound.c, rule_cpu_bound.c,
 * rule_sync_bound.c and rule_gpu_throttle.c so that they divide the same
 * idle time and never count it twice (gpu_split() in rule_cpu_bound.c):
 *
 *   host_wait  = device idle x host_wait share of the streams' idle gaps
 *   launch     = min(host time in launch calls (each counted up to 50 µs:
 *                start-up calls can take seconds), host_wait) when the launch
 *                pattern holds (>= 100 launches, half the kernels < 10 µs or
 *                half the ops shorter than their launch call, mean queue of
 *                the busiest stream < 1), else 0; without the launch-call
 *                total, host_wait x the share of ops shorter than their call
 *   sync       = min(host time blocked in synchronising calls and blocking
 *                copies (gpu.sync.call_sites_total_ns) x idle share,
 *                host_wait - launch) + idle waiting on other streams
 *                (HTA's "other" gaps: launched in time, started late)
 *   cpu        = host_wait - launch - (sync's host part)
 *   compute    = compute time x (1 - throttled share of NVML samples)
 *   throttled  = compute time x throttled share
 */
#ifndef RULE_GPU_H
#define RULE_GPU_H

#include "rules.h"

struct gpu_split {
	double launch, sync, cpu, compute, throttled; /* ns of the GPU span */
	double throttled_share;                        /* [0,1] */
	bool launch_pattern;
	double short_share, shorter_share;             /* [0,1] */
};

void gpu_split(const struct rule_ctx *c, struct gpu_split *s);

#endif
