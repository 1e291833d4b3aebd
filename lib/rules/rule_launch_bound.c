/*
 * rule_launch_bound.c - launch_bound: the host cannot launch kernels as
 * fast as the GPU runs them.
 *
 * Trigger: the launch pattern of gpu_split.c (>= 100 launches; half the
 * kernels shorter than 10 µs or half the GPU ops shorter than their launch
 * call; mean queue of the busiest stream below 1 — HTA's kernel-launch
 * statistics flag the same "GPU op shorter than its launch" case) and a
 * launch part >= 10 % of the GPU span.  The launch part is the GPU's idle
 * between launches: the host-wait gaps of at most 50 µs before launched
 * ops (the host's whole per-op cost, framework dispatch included, not only
 * the launch call), or the time in launch calls when larger.  So when the
 * signature holds, the idle between the short kernels is launch_bound's,
 * and only the longer gaps (host work between steps) stay cpu_bound's.
 * Severity critical from 50 %.  Verdict share: the launch part.
 * Evidence: launches, short kernels, ops shorter than their launch call,
 * queue length, the short gaps, launch delay quantiles, the most frequent
 * short kernels, then where their launches come from (gpu.launch.call_sites:
 * the Python function, or in sample mode the Python line, of the calls).
 * What-if: the launch part gone (CUDA graphs replay a whole step with one
 * launch; torch.compile fuses small kernels), at most the idle it explains
 * (rules.c bounds every candidate's saving by its share).
 */
#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *k;
	const struct isc_gpu_split *s = isc_rgpu_split(c);
	if (!s)
		return;
	double share = isc_rpct(s->launch, c->g.span);
	if (!s->launch_pattern || share < TRIGGER_PCT)
		return;
	cJSON *f = isc_fnd_new(o, "launch_bound", share >= 50 ? "critical" : "warning", share / 100 * c->quality,
			   "Kernel launches hold the GPU back: %.0f %% of its span is idle while the host launches; %.0f %% of "
			   "kernels run under 10 us and %.0f %% of ops are shorter than their launch call",
			   share, 100 * s->short_share, 100 * s->shorter_share);
	isc_fnd_metric(o, f, "launch_idle_pct", share);
	isc_fnd_metric(o, f, "launches", isc_doc_num(c->doc, "gpu.launch.launches", 0));
	isc_fnd_metric(o, f, "short_kernels_pct", 100 * s->short_share);
	isc_fnd_metric(o, f, "op_shorter_than_launch_pct", 100 * s->shorter_share);
	isc_fnd_metric(o, f, "queue_length_mean", c->g.queue_mean);
	isc_fnd_metric(o, f, "launch_delay_p50_ns", isc_doc_num(c->doc, "gpu.launch.delay_ns.p50", 0));
	if (c->g.launch_api >= 0)
		isc_fnd_metric(o, f, "launch_api_ns", c->g.launch_api);
	isc_fnd_metric(o, f, "launch_gaps_ns", c->g.launch_gaps);
	isc_fnd_metric(o, f, "gpu_span_ns", c->g.span);
	int n = 0;
	cJSON_ArrayForEach(k, isc_doc_arr(c->doc, "gpu.kernels.top"))
		if (isc_doc_num(k, "mean_ns", 0) < 10000 && n++ < TOP)
			isc_fnd_detail(o, isc_fnd_top(o, f, NULL, isc_doc_str(k, "name", "?"), "kernel", isc_doc_num(k, "total_ns", 0), isc_doc_num(k, "pct", -1)),
				   "%.0f launches, mean %.1f us", isc_doc_num(k, "count", 0), isc_doc_num(k, "mean_ns", 0) / 1e3);
	/* where the launches come from (gpu.launch.call_sites: the Python line in sample mode) */
	n = 0;
	cJSON_ArrayForEach(k, isc_doc_arr(c->doc, "gpu.launch.call_sites")) {
		const cJSON *py = isc_doc_get(k, "python");
		if (n++ >= TOP || !cJSON_IsObject(py))
			continue;
		isc_fnd_detail(o, isc_fnd_top(o, f, py, NULL, "python", isc_doc_num(k, "kernel_ns", 0), -1),
			   "launched %.0f times%s%s", isc_doc_num(k, "launches", 0), cJSON_IsString(isc_doc_get(k, "op")) ? " in " : "",
			   isc_doc_str(k, "op", ""));
	}
	isc_fnd_suggest(c, o, f, s->launch,
		    "Launch less often: capture the step in a CUDA graph (torch.cuda.graphs, or torch.compile(mode="
		    "\"reduce-overhead\")), fuse small elementwise kernels (torch.compile), and batch more work per call.",
		    "the GPU's idle between launches removed (the gaps of at most 50 us before launched ops, or the "
		    "launch calls when longer), as a CUDA graph replay or fused kernels do; at most the idle it explains",
		    "%.0f %% of kernels finish in under 10 us, faster than the host can issue the next one; the queue "
		    "holds %.2f ops on average, and the GPU idles %.1f ms in the gaps between launches.",
		    100 * s->short_share, c->g.queue_mean, s->launch / 1e6);
	isc_fnd_candidate(o, f, "launch_bound", share, c->quality);
}

const struct rule isc_rule_launch_bound = { "launch_bound", eval };
