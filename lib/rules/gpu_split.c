/*
 * gpu_split.c - the split of a GPU's span among the GPU verdict classes,
 * computed once by the engine into rule_ctx.split (rules.h) and read by
 * rule_gpu_compute_bound.c, rule_launch_bound.c, rule_cpu_bound.c,
 * rule_sync_bound.c and rule_thermal_throttled.c, so that they divide the same
 * idle time and never count it twice:
 *
 *   host_wait  = device idle x host_wait share of the streams' idle gaps
 *   launch     = min(the larger of the host time in launch calls (each
 *                counted up to 50 µs: start-up calls can take seconds) and
 *                the streams' host-wait gaps of at most 50 µs before launched
 *                ops (host_wait_launch_ns: the idle between launches, the
 *                host's per-op cost, dispatch included, that CUDA graphs and
 *                fusion remove), host_wait) when the launch pattern holds
 *                (>= 100 launches, half the kernels < 10 µs or half the ops
 *                shorter than their launch call, mean queue of the busiest
 *                stream < 1), else 0; without the launch-call total, the
 *                larger of the gaps and host_wait x the share of ops shorter
 *                than their call
 *   sync       = min(host time blocked in synchronising calls and blocking
 *                copies (gpu.sync.call_sites_total_ns) x idle share,
 *                host_wait - launch) + idle waiting on other streams
 *                (HTA's "other" gaps: launched in time, started late)
 *   cpu        = host_wait - launch - (sync's host part)
 *   throttled  = compute time x throttled share x clock deficit: the
 *                throttled share is the share of the GPU's work in the
 *                NVML sample intervals that ran throttled (gpu.nvml[]:
 *                throttled_busy_ns / busy_ns; idle clocks and intervals
 *                without work are not throttled work).  The clock deficit
 *                is 1 when any device saw a thermal or slowdown reason (a
 *                machine at fault: its throttled work is the finding's),
 *                else, the power cap alone (how a GPU runs a saturating
 *                load within its power budget: a GEMM on an H200 at 1500
 *                of 1980 MHz), 1 - the lowest SM clock of a throttled
 *                busy sample / the highest of a busy one (1 when either
 *                is unknown): the time the throttled work would not have
 *                taken at full clock (an upper bound: memory-bound kernels
 *                do not scale with the SM clock), so that such a run stays
 *                gpu_compute_bound
 *   compute    = compute time - throttled
 */
#include <string.h>

#include "rules.h"

#define LAUNCH_MIN 100

void isc_gpu_split(const struct rule_ctx *c, struct isc_gpu_split *s)
{
	const cJSON *d = c->doc, *n;
	double launches = isc_doc_num(d, "gpu.launch.launches", 0), kernels = isc_doc_num(d, "gpu.launch.kernels", 0);
	double samples = 0, thr = 0;
	*s = (struct isc_gpu_split){ 0 };
	s->short_share = kernels > 0 ? isc_doc_num(d, "gpu.launch.short_kernels_under_10us", 0) / kernels : 0;
	s->shorter_share = launches > 0 ? isc_doc_num(d, "gpu.launch.gpu_op_shorter_than_launch", 0) / launches : 0;
	s->launch_pattern = launches >= LAUNCH_MIN && (s->short_share >= 0.5 || s->shorter_share >= 0.5) &&
			    c->g.queue_mean < 1;
	double hw = c->g.host_wait;
	if (s->launch_pattern) {
		/* one-off start-up calls can take seconds: at most ISC_LAUNCH_CALL_LONG_NS per launch */
		double max = launches * ISC_LAUNCH_CALL_LONG_NS;
		double api = c->g.launch_api < max ? c->g.launch_api : max;
		double l = c->g.launch_api >= 0 ? api : hw * s->shorter_share;
		if (c->g.launch_gaps > l)
			l = c->g.launch_gaps;
		s->launch = l < hw ? l : hw;
	}
	double idle_share = c->g.span > 0 ? c->g.idle / c->g.span : 0;
	double sync_host = c->g.sync_api * idle_share;
	if (sync_host > hw - s->launch)
		sync_host = hw - s->launch;
	s->sync = sync_host + c->g.other_wait;
	s->cpu = hw - s->launch - sync_host;
	double lo = 0, hi = 0;
	bool fault = false;
	cJSON_ArrayForEach(n, isc_doc_arr(d, "gpu.nvml")) {
		const cJSON *r;
		samples += isc_doc_num(n, "busy_ns", 0);
		thr += isc_doc_num(n, "throttled_busy_ns", 0);
		double l = isc_doc_num(n, "sm_mhz_min_throttled", 0), h = isc_doc_num(n, "sm_mhz_max_busy", 0);
		if (l > 0 && (lo == 0 || l < lo))
			lo = l;
		if (h > hi)
			hi = h;
		cJSON_ArrayForEach(r, isc_doc_get(n, "throttle_reasons"))
			if (cJSON_IsNumber(r) && r->valuedouble > 0 && r->string &&
			    (strstr(r->string, "thermal") || strstr(r->string, "slowdown") || strstr(r->string, "brake")))
				fault = true;
	}
	s->sm_mhz_throttled = lo;
	s->sm_mhz_busy = hi;
	s->throttled_share = samples > 0 ? thr / samples : 0;
	s->clock_deficit = fault || lo <= 0 || hi <= 0 ? 1 : hi > lo ? 1 - lo / hi : 0;
	s->throttled = c->g.compute * s->throttled_share * s->clock_deficit;
	s->compute = c->g.compute - s->throttled;
}
