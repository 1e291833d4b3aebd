/*
 * report_gpu.c - the report's "## GPU" section: GPU use over time, then
 * per device its time breakdown (idle, compute, non-compute), idle time by
 * stream and what the host did while it sat idle; the same inside the
 * steady iterations (gpu.in_iterations); then the top kernels,
 * launches, memcpy and memset, and synchronization.  Device memory is in
 * the Memory section (report_memory.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* gpu.devices[].temporal_breakdown as one stacked bar a device (HTML only). */
static void gpu_breakdown_chart(struct isc_rep *m, const cJSON *root)
{
	enum { MAXD = 16 };
	struct isc_rep_bar bar[MAXD];
	char label[MAXD][300]; /* the chart cuts it shorter, at a character boundary */
	size_t n = 0;
	const cJSON *dev;
	if (!m->html)
		return;
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices")) {
		if (n == MAXD)
			break;
		const char *name = isc_doc_str(dev, "name", NULL);
		char id[32];
		snprintf(label[n], sizeof(label[n]), "GPU %s%s%s", isc_rep_field(id, sizeof(id), dev, "id", 'i'),
			 name ? ": " : "", name ? name : "");
		bar[n] = (struct isc_rep_bar){ label[n],
					       { isc_rep_pct_seg(dev, "temporal_breakdown.compute_pct", "compute", "#2e8b57"),
						 isc_rep_pct_seg(dev, "temporal_breakdown.non_compute_pct", "non-compute",
								 "#e0a030"),
						 isc_rep_pct_seg(dev, "temporal_breakdown.idle_pct", "idle", "#c8c8c8") },
					       3, NULL };
		n += isc_rep_any_seg(&bar[n]);
	}
	if (n)
		isc_rep_chart_bars(m, "GPU time breakdown", "Share of the device's span (%)", 100, bar, n);
}

/* One row of a GPU name table: "| name | count | time |". */
static void name_rows(struct isc_rep *m, const cJSON *arr, const char *kind)
{
	char b[2][64];
	const cJSON *x;
	cJSON_ArrayForEach(x, arr) {
		isc_rep_putf(m, "| %s | ", kind);
		isc_rep_md(m, isc_doc_str(x, "name", "?"));
		isc_rep_putf(m, " | %s | %s |\n", isc_rep_field(b[0], 64, x, "count", 'i'),
			     isc_rep_field(b[1], 64, x, "total_ns", 'n'));
	}
}

/* The host's functions that overlapped a device's idle gaps. */
static void host_idle_table(struct isc_rep *m, const cJSON *dev)
{
	char b[4][64];
	const cJSON *x;
	int n = cJSON_GetArraySize(isc_doc_arr(dev, "host_during_idle.ops")) +
		cJSON_GetArraySize(isc_doc_arr(dev, "host_during_idle.python"));
	if (!n)
		return;
	isc_rep_putf(m, "\nWhile this GPU sat idle (%s), the host was in:\n\n",
	     isc_rep_field(b[0], 64, dev, "host_during_idle.idle_ns", 'n'));
	isc_rep_put(m, "| Function | Kind | Location | In idle gaps | Self | Of idle time |\n|---|---|---|---:|---:|---:|\n");
	for (int k = 0; k < 2; k++)
		cJSON_ArrayForEach(x, isc_doc_arr(dev, k ? "host_during_idle.python" : "host_during_idle.ops")) {
			isc_rep_put(m, "| ");
			isc_rep_md(m, isc_doc_str(x, "name", "?"));
			isc_rep_put(m, k ? " | python | " : " | op | ");
			isc_rep_location(m, x, false);
			isc_rep_putf(m, " | %s | %s | %s |\n", isc_rep_field(b[1], 64, x, "idle_ns", 'n'),
			     isc_rep_field(b[2], 64, x, "self_idle_ns", 'n'), isc_rep_field(b[3], 64, x, "idle_pct", 'p'));
		}
	isc_rep_put(m, "\nIn idle gaps: time of the span (its outermost call) inside the GPU's idle gaps; self: without "
	       "its children.\n");
}

/*
 * The CUDA agent's own cost (gpu.agent), for the report's recording part:
 * it runs inside the workload, so a run with it never ran "no extra code".
 */
void isc_rep_cuda_agent_cost(struct isc_rep *m, const cJSON *root)
{
	char b[4][64];
	const cJSON *a = isc_doc_get(root, "gpu.agent");
	double n, cpu;
	if (!cJSON_IsObject(a))
		return;
	n = isc_doc_num(a, "cupti_overhead_records", 0);
	isc_rep_putf(m, "\nThe CUDA agent ran in the workload: CUPTI reported %s of its own overhead (%.0f record%s)",
		     isc_rep_fmt_ns(b[0], 64, isc_doc_num(a, "cupti_overhead_ns", 0)), n, n == 1 ? "" : "s");
	if (isc_doc_have(a, "agent_cpu_ns", &cpu)) {
		isc_rep_putf(m, ", the agent used %s of CPU converting %s records", isc_rep_fmt_ns(b[1], 64, cpu),
			     isc_rep_field(b[2], 64, a, "records", 'i'));
		if (isc_doc_num(a, "callbacks", 0) > 0)
			isc_rep_putf(m, " and about %s in %s launch callbacks", isc_rep_fmt_ns(b[1], 64, isc_doc_num(a, "callback_ns", 0)),
				     isc_rep_field(b[2], 64, a, "callbacks", 'i'));
	} else {
		isc_rep_put(m, "; the agent's own totals are missing (it did not reach its exit)");
	}
	if (isc_doc_have(a, "per_launch_ns", &cpu))
		isc_rep_putf(m, ": about %s per launch call (%s launches)", isc_rep_fmt_ns(b[3], 64, cpu),
			     isc_rep_field(b[2], 64, a, "launches", 'i'));
	isc_rep_putf(m, ".  CUPTI's cost inside each CUDA call is in no record: compare with a run without the agent "
			"(`--no-cuda`).  Driver API calls %s.\n",
		     cJSON_IsTrue(isc_doc_get(a, "driver_api")) ? "recorded (`--cuda-driver-api`)"
								 : "not recorded (kernels launched through the driver alone, "
								   "such as Triton's, have no launching call; `--cuda-driver-api`)");
}

/* gpu.in_iterations: the device inside the steady iterations, which the GPU verdict classes judge. */
static void in_iterations(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	const cJSON *it = isc_doc_get(root, "gpu.in_iterations"), *dev, *s;
	if (!cJSON_IsObject(it))
		return;
	isc_rep_put(m, "\n### Inside the steady iterations\n\n");
	isc_rep_putf(m, "%s steady iterations of ", isc_rep_field(b[0], 64, it, "iterations", 'i'));
	isc_rep_code(m, isc_doc_str(it, "scope", "?"));
	isc_rep_putf(m, " (the first of each process left out as the warm-up), %s in all, holding %s of the GPU work "
		     "launched from the first one on; %s ops launched inside them.  The GPU classes judge these numbers "
		     "when that share is at least 50 %%; the tables above are the whole run's.\n\n",
		     isc_rep_field(b[1], 64, it, "window_ns", 'n'), isc_rep_field(b[2], 64, it, "share_pct", 'p'),
		     isc_rep_field(b[3], 64, it, "ops", 'i'));
	isc_rep_put(m, "| Device | Idle | Compute | Non-compute | Host wait | Kernels | Launches | Kernels < 10 µs | "
		       "Ops shorter than their call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	cJSON_ArrayForEach(dev, isc_doc_arr(it, "devices")) {
		double hw = 0;
		cJSON_ArrayForEach(s, isc_doc_arr(dev, "streams"))
			hw += isc_doc_num(s, "idle_breakdown.host_wait_ns", 0);
		isc_rep_putf(m, "| %s | %s | %s | %s | ", isc_rep_field(b[0], 64, dev, "id", 'i'),
			     isc_rep_field(b[1], 64, dev, "temporal_breakdown.idle_pct", 'p'),
			     isc_rep_field(b[2], 64, dev, "temporal_breakdown.compute_pct", 'p'),
			     isc_rep_field(b[3], 64, dev, "temporal_breakdown.non_compute_pct", 'p'));
		isc_rep_putf(m, "%s | %s | %s | %s | %s |\n", isc_rep_fmt_ns(b[4], 64, hw),
			     isc_rep_field(b[5], 64, it, "kernels.count", 'i'), isc_rep_field(b[6], 64, it, "launch.launches", 'i'),
			     isc_rep_field(b[7], 64, it, "launch.short_kernels_under_10us", 'i'),
			     isc_rep_field(b[0], 64, it, "launch.gpu_op_shorter_than_launch", 'i'));
	}
}

void isc_rep_sec_gpu(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	const cJSON *dev, *s, *x;
	static const struct isc_rep_series_def gpu_series[] = {
		{ "gpu_busy_pct", "GPU busy (ops running)", "#2e8b57", false, 'p' },
		{ "gpu_util_pct", "GPU utilization (NVML)", "#8e44ad", false, 'p' },
	};
	isc_rep_put(m, "\n## GPU\n\n");
	if (!cJSON_GetArraySize(isc_doc_arr(root, "gpu.devices"))) {
		size_t before = m->b.len;
		isc_rep_over_time(m, root, "GPU use over time", gpu_series, 2, ISC_REP_UNIT_PCT);
		if (m->b.len == before)
			isc_rep_put(m, "No GPU activity recorded.\n");
		return;
	}
	bool hta = !strcmp(isc_doc_str(root, "gpu.mode", ""), "hta-compat");
	isc_rep_put(m, hta ? "Numbers by HTA's rules (`--hta-compat`: times rounded to whole µs, cuda\\_sync counted as GPU "
		     "time). "
		   : "Exact numbers (ns), with HTA's definitions. ");
	isc_rep_put(m, "ProfilerStep rule: ");
	isc_rep_md(m, isc_doc_str(root, "gpu.step_rule", "n/a"));
	isc_rep_put(m, ".\n");
	isc_rep_over_time(m, root, "GPU use over time", gpu_series, 2, ISC_REP_UNIT_PCT);
	gpu_breakdown_chart(m, root);
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices")) {
		isc_rep_putf(m, "\n### Device %s", isc_rep_field(b[0], 64, dev, "id", 'i'));
		const char *name = isc_doc_str(dev, "name", "");
		if (*name) {
			isc_rep_put(m, ": ");
			isc_rep_md(m, name);
		}
		if (isc_doc_num(dev, "ops", 0) == 0) { /* device memory records only */
			isc_rep_put(m, "\n\nNo GPU ops: device memory records only (below, under Memory).\n");
			continue;
		}
		isc_rep_putf(m, "\n\n%s GPU ops.\n\n", isc_rep_field(b[0], 64, dev, "ops", 'i'));
		static const char *const part[] = { "idle", "compute", "non_compute" };
		isc_rep_put(m, "| Span | Idle | Compute | Non-compute |\n|---:|---:|---:|---:|\n| ");
		isc_rep_put(m, isc_rep_field(b[0], 64, dev, "temporal_breakdown.span_ns", 'n'));
		for (int i = 0; i < 3; i++) { /* 2 decimals, as HTA gives them */
			char path[64];
			double v;
			snprintf(path, sizeof(path), "temporal_breakdown.%s_ns", part[i]);
			isc_rep_putf(m, " | %s", isc_rep_field(b[1], 64, dev, path, 'n'));
			snprintf(path, sizeof(path), "temporal_breakdown.%s_pct", part[i]);
			if (isc_doc_have(dev, path, &v) && isfinite(v))
				isc_rep_putf(m, " (%.2f %%)", v);
		}
		isc_rep_put(m, " |\n");
		isc_rep_put(m, "\nIdle time by stream: host wait (the op's launch call began after the previous op ended), "
		       "kernel wait (gap < 30 µs), other; queue: ops launched and not finished.\n\n");
		isc_rep_put(m, "| Stream | Ops | Host wait | Kernel wait | Other | Queue mean | Queue max |\n"
		       "|---:|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(s, isc_doc_arr(dev, "streams")) {
			double q;
			char qm[32] = "n/a";
			if (isc_doc_have(s, "queue_length.mean", &q))
				snprintf(qm, sizeof(qm), "%.2f", q);
			isc_rep_putf(m, "| %s | %s | %s | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, s, "id", 'i'),
			     isc_rep_field(b[1], 64, s, "ops", 'i'),
			     isc_rep_field(b[2], 64, s, "idle_breakdown.host_wait_ns", 'n'),
			     isc_rep_field(b[3], 64, s, "idle_breakdown.kernel_wait_ns", 'n'),
			     isc_rep_field(b[4], 64, s, "idle_breakdown.other_ns", 'n'), qm,
			     isc_rep_field(b[5], 64, s, "queue_length.max", 'i'));
		}
		host_idle_table(m, dev);
	}
	in_iterations(m, root);

	isc_rep_put(m, "\n### Top kernels\n\n");
	isc_rep_putf(m, "%s kernels of %s names, %s in all; these cover %s of the time.\n\n",
	     isc_rep_field(b[0], 64, root, "gpu.kernels.count", 'i'),
	     isc_rep_field(b[1], 64, root, "gpu.kernels.distinct", 'i'),
	     isc_rep_field(b[2], 64, root, "gpu.kernels.total_ns", 'n'),
	     isc_rep_field(b[3], 64, root, "gpu.kernels.top_pct", 'p'));
	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.kernels.top"))) {
		int i = 0;
		isc_rep_put(m, "| # | Kernel | Count | Total | Mean | Min | Max | Share |\n|---:|---|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, isc_doc_arr(root, "gpu.kernels.top")) {
			isc_rep_putf(m, "| %d | ", ++i);
			isc_rep_md_cut(m, isc_doc_str(x, "name", "?"), 120);
			isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, x, "count", 'i'),
			     isc_rep_field(b[1], 64, x, "total_ns", 'n'), isc_rep_field(b[2], 64, x, "mean_ns", 'n'),
			     isc_rep_field(b[3], 64, x, "min_ns", 'n'), isc_rep_field(b[4], 64, x, "max_ns", 'n'),
			     isc_rep_field(b[5], 64, x, "pct", 'p'));
		}
		if (isc_doc_num(root, "gpu.kernels.others.count", 0) > 0)
			isc_rep_putf(m, "| | %s other names | %s | %s | | | | |\n",
			     isc_rep_field(b[0], 64, root, "gpu.kernels.others.distinct", 'i'),
			     isc_rep_field(b[1], 64, root, "gpu.kernels.others.count", 'i'),
			     isc_rep_field(b[2], 64, root, "gpu.kernels.others.total_ns", 'n'));
	}

	isc_rep_put(m, "\n### Launches\n\n");
	isc_rep_putf(m, "%s launch calls paired with their GPU op; launch delay (op start - call end) median %s, p90 %s, "
		"max %s.\n\n",
	     isc_rep_field(b[0], 64, root, "gpu.launch.launches", 'i'),
	     isc_rep_field(b[1], 64, root, "gpu.launch.delay_ns.p50", 'n'),
	     isc_rep_field(b[2], 64, root, "gpu.launch.delay_ns.p90", 'n'),
	     isc_rep_field(b[3], 64, root, "gpu.launch.delay_ns.max", 'n'));
	isc_rep_put(m, "| GPU op shorter than its launch call | Launch call > 50 µs | Delay > 100 µs | Kernels < 10 µs |\n"
	       "|---:|---:|---:|---:|\n");
	isc_rep_putf(m, "| %s | %s | %s | %s of %s |\n",
		     isc_rep_field(b[0], 64, root, "gpu.launch.gpu_op_shorter_than_launch", 'i'),
	     isc_rep_field(b[1], 64, root, "gpu.launch.launch_call_over_50us", 'i'),
	     isc_rep_field(b[2], 64, root, "gpu.launch.delay_over_100us", 'i'),
	     isc_rep_field(b[3], 64, root, "gpu.launch.short_kernels_under_10us", 'i'),
	     isc_rep_field(b[4], 64, root, "gpu.launch.kernels", 'i'));

	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.memcpy"))) {
		isc_rep_put(m, "\n### Memcpy and memset\n\n| Kind | Direction | From | To | Count | Bytes | Time | Bandwidth |\n"
		       "|---|---|---|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, isc_doc_arr(root, "gpu.memcpy")) {
			double bw;
			char bws[32] = "n/a";
			if (isc_doc_have(x, "bandwidth_gb_per_s", &bw))
				snprintf(bws, sizeof(bws), "%.2f GB/s", bw);
			isc_rep_put(m, "| ");
			isc_rep_md(m, isc_doc_str(x, "kind", "?"));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "direction", ""));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "src_memory", ""));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "dst_memory", ""));
			isc_rep_putf(m, " | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, x, "count", 'i'), isc_rep_field(b[1], 64, x, "bytes", 'b'),
			     isc_rep_field(b[2], 64, x, "total_ns", 'n'), bws);
		}
	}

	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.sync.ops")) || cJSON_GetArraySize(isc_doc_arr(root, "gpu.sync.api_calls"))) {
		isc_rep_putf(m, "\n### Synchronization\n\n%s in cuda\\_sync operations, %s in synchronising calls.\n\n",
		     isc_rep_field(b[0], 64, root, "gpu.sync.ops_total_ns", 'n'), isc_rep_field(b[1], 64, root, "gpu.sync.api_total_ns", 'n'));
		isc_rep_put(m, "| Kind | Name | Count | Time |\n|---|---|---:|---:|\n");
		name_rows(m, isc_doc_arr(root, "gpu.sync.ops"), "GPU op");
		name_rows(m, isc_doc_arr(root, "gpu.sync.api_calls"), "call");
	}
}
