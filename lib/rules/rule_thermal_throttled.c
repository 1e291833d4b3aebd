/*
 * rule_thermal_throttled.c - thermal_throttled: the GPU ran at reduced clocks.
 *
 * Throttling slows work only while there is work: a sample counts when GPU
 * work ran in its interval and its reasons do not include gpu_idle (idle
 * clocks are low by design), gpu.nvml[].busy_samples; of those, the ones
 * with a throttling clock-event reason (power cap, HW slowdown, SW/HW
 * thermal, power brake) are throttled_busy_samples (analyze_gpu.c).
 * Trigger: >= 10 % of the busy samples throttled.  Severity critical when
 * half of them are, with a thermal or slowdown reason seen, else warning.
 * Verdict share (gpu_split.c): with a thermal or slowdown reason (a
 * machine at fault), the throttled part of the compute time (compute x
 * throttled_busy_ns / busy_ns), so a busy GPU throttled most of the time
 * is thermal_throttled rather than gpu_compute_bound; with the power cap
 * alone (how a GPU runs a saturating load: a GEMM on an H200 at 1500 of
 * 1980 MHz), only the time that part lost to the lower clock (x (1 -
 * throttled SM clock / the highest busy one)), so such a run stays
 * gpu_compute_bound with this finding beside it.
 * Evidence: samples, reasons, SM clock of the throttled samples and the
 * highest of the busy ones, temperature, power.
 * What-if: the throttled compute at the highest SM clock seen while the
 * GPU worked: throttled compute x (1 - throttled clock / that clock) — an
 * upper bound (memory-bound kernels do not scale with the SM clock);
 * unknown without both clocks.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_SHARE 0.10

/* A reason that slows work (analyze_gpu.c's NV_THROTTLE), not idle, application or display clocks. */
static bool throttle_reason(const char *r)
{
	static const char *const names[] = { "sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(r, names[i]))
			return true;
	return false;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *n, *r;
	const struct isc_gpu_split *s = &c->split;
	double samples = 0, thr = 0, temp = 0, power = 0, thermal = 0;
	double lo = s->sm_mhz_throttled, hi = s->sm_mhz_busy; /* gpu_split.c read them */
	cJSON_ArrayForEach(n, isc_doc_arr(c->doc, "gpu.nvml")) {
		samples += isc_doc_num(n, "busy_samples", 0);
		thr += isc_doc_num(n, "throttled_busy_samples", 0);
		if (isc_doc_num(n, "temp_c_max", 0) > temp)
			temp = isc_doc_num(n, "temp_c_max", 0);
		if (isc_doc_num(n, "power_w_max", 0) > power)
			power = isc_doc_num(n, "power_w_max", 0);
		cJSON_ArrayForEach(r, isc_doc_get(n, "throttle_reasons"))
			if (cJSON_IsNumber(r) && r->string && (strstr(r->string, "thermal") || strstr(r->string, "slowdown")))
				thermal = r->valuedouble > thermal ? r->valuedouble : thermal;
	}
	if (samples <= 0 || thr / samples < TRIGGER_SHARE)
		return;
	double share = c->g.span > 0 ? isc_rpct(s->throttled, c->g.span) : 100 * thr / samples;
	cJSON *f = isc_fnd_new(o, "thermal_throttled", thr / samples >= 0.5 && thermal > 0 ? "critical" : "warning",
			   thr / samples * c->quality,
			   "The GPU clocks were throttled in %.0f %% of the samples taken while it worked (SM %.0f MHz "
			   "throttled, up to %.0f MHz; up to %.0f C)", 100 * thr / samples, lo, hi, temp);
	isc_fnd_metric(o, f, "throttled_samples_pct", 100 * thr / samples);
	isc_fnd_metric(o, f, "busy_samples", samples);
	isc_fnd_metric(o, f, "sm_mhz_min", lo);
	isc_fnd_metric(o, f, "sm_mhz_max", hi);
	isc_fnd_metric(o, f, "temp_c_max", temp);
	isc_fnd_metric(o, f, "power_w_max", power);
	cJSON_ArrayForEach(n, isc_doc_arr(c->doc, "gpu.nvml"))
		cJSON_ArrayForEach(r, isc_doc_get(n, "throttle_reasons"))
			if (cJSON_IsNumber(r) && r->string && r->valuedouble > 0 && throttle_reason(r->string))
				isc_fnd_detail(o, isc_fnd_top(o, f, NULL, r->string, "gpu", -1, isc_rpct(r->valuedouble, isc_doc_num(n, "samples", 1))),
					   "GPU %.0f: %.0f samples", isc_doc_num(n, "device", 0), r->valuedouble);
	isc_fnd_suggest(c, o, f, hi > 0 && lo > 0 ? c->g.compute * s->throttled_share * (1 - lo / hi) : -1,
		    "Check cooling and power: airflow, fan curves, the power limit (nvidia-smi -q -d PERFORMANCE,POWER), "
		    "other jobs on the GPU; cap clocks (nvidia-smi -lgc) for steady latency.",
		    "the throttled compute at the highest SM clock seen while the GPU worked (upper bound)",
		    "The SM clock dropped to %.0f MHz from %.0f MHz while the GPU computed.", lo, hi);
	isc_fnd_candidate(o, f, "thermal_throttled", share, c->quality);
}

const struct rule isc_rule_thermal_throttled = { "thermal_throttled", eval };
