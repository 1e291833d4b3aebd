/*
 * rule_gpu_compute_bound.c - gpu_compute_bound: the GPU is busy computing.
 *
 * Trigger: compute part (gpu_split.c: compute time not run throttled) >= 50 %
 * of the GPU span.  Severity info (a busy GPU is the goal; what remains is
 * making kernels cheaper).  Verdict share: that part, nominated only when
 * the GPU is saturated (>= 80 %: below it the GPU has headroom and what
 * keeps it idle is the cause) or when no host-side part (cpu, launch,
 * sync) reaches 10 %.  80 % is where nsys's and DCGM's guidance calls a GPU
 * well utilized.
 * Evidence: the top kernels by total time (gpu.kernels.top).
 * What-if: FP32 GEMM kernels (names with "sgemm", or "gemm" with "f32" /
 * "fp32") run 2x faster on tensor cores with TF32 or bfloat16
 * (torch.backends.cuda.matmul.allow_tf32, autocast) — NVIDIA quotes up to
 * 8x for TF32 on A100; 2x is the assumption, stated in the estimate.
 * Without such kernels no saving is computed.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rules.h"

#define TRIGGER_PCT 50
#define SATURATED_PCT 80
#define NOTHING_ELSE_PCT 10
#define TOP 5

static bool fp32_gemm(const char *k)
{
	return strstr(k, "sgemm") || (strcasestr(k, "gemm") && (strstr(k, "f32") || strstr(k, "fp32")));
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *k;
	const struct isc_gpu_split *s = isc_rgpu_split(c);
	if (!s)
		return;
	double share = isc_rpct(s->compute, c->g.span);
	if (share < TRIGGER_PCT)
		return;
	const char *top = isc_doc_str(cJSON_GetArrayItem(isc_doc_arr(c->doc, "gpu.kernels.top"), 0), "name", "?");
	cJSON *f = isc_fnd_new(o, "gpu_compute_bound", "info", share / 100 * c->quality,
			   "The GPU computed %.0f %% of its span; the heaviest kernel is %s", share, top);
	isc_fnd_metric(o, f, "compute_pct", share);
	isc_fnd_metric(o, f, "gpu_idle_pct", isc_rpct(c->g.idle, c->g.span));
	isc_fnd_metric(o, f, "gpu_span_ns", c->g.span);
	double gemm = 0;
	int n = 0;
	cJSON_ArrayForEach(k, isc_doc_arr(c->doc, "gpu.kernels.top")) {
		const char *name = isc_doc_str(k, "name", "?");
		if (fp32_gemm(name))
			gemm += isc_doc_num(k, "total_ns", 0);
		if (n++ < TOP)
			isc_fnd_detail(o, isc_fnd_top(o, f, NULL, name, "kernel", isc_doc_num(k, "total_ns", 0), isc_doc_num(k, "pct", -1)),
				   "%.0f launches, mean %.1f us", isc_doc_num(k, "count", 0), isc_doc_num(k, "mean_ns", 0) / 1e3);
	}
	if (gemm > 0)
		isc_fnd_suggest(c, o, f, gemm / 2,
			    "Run the FP32 matrix multiplies on tensor cores: torch.backends.cuda.matmul.allow_tf32 = True, "
			    "or torch.autocast(\"cuda\", dtype=torch.bfloat16) (float16 on GPUs older than Ampere, which have "
			    "neither TF32 nor bfloat16); then fuse the rest with torch.compile.",
			    "FP32 GEMM kernels 2x faster in TF32/bfloat16 (assumed)",
			    "FP32 GEMM kernels take %.1f ms of GPU time.", gemm / 1e6);
	else
		isc_fnd_suggest(c, o, f, -1,
			    "Make the heaviest kernels cheaper: lower precision (bfloat16/FP8), fusion (torch.compile), "
			    "or a larger batch per kernel if latency allows.",
			    NULL, "%s and the kernels after it keep the GPU %.0f %% busy.", top, share);
	/* a GPU below SATURATED_PCT has headroom: the cause is what leaves it idle,
	 * unless nothing else explains NOTHING_ELSE_PCT */
	if (share >= SATURATED_PCT || (isc_rpct(s->cpu, c->g.span) < NOTHING_ELSE_PCT && isc_rpct(s->launch, c->g.span) < NOTHING_ELSE_PCT &&
				       isc_rpct(s->sync, c->g.span) < NOTHING_ELSE_PCT))
		isc_fnd_candidate(o, f, "gpu_compute_bound", share, c->quality);
}

const struct rule isc_rule_gpu_compute_bound = { "gpu_compute_bound", eval };
