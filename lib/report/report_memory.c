/*
 * report_memory.c - the report's "## Memory" section: host memory (RSS,
 * faults, swap, pressure stalls, where RSS grew, what was resident at the
 * end), the out-of-memory death when there was one, memory over time,
 * then per GPU device its memory by allocation site (the peak, the
 * caching allocator's totals, leak candidates, churn, failed allocations).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The allocator's reserved (highest in each bucket) and allocated bytes over time: a chart in the HTML page. */
static void allocator_chart(struct isc_rep *m, const cJSON *ot)
{
	const cJSON *rs = isc_doc_arr(ot, "reserved_max_bytes"), *ta = isc_doc_arr(ot, "total_allocated_bytes");
	struct isc_rep_ts ts = { isc_doc_num(ot, "start_ns", 0), isc_doc_num(ot, "bucket_ns", 0), 0, 0 };
	int n = cJSON_GetArraySize(rs);
	if (!m->html || n <= 0 || n > ISC_REP_MAX_BUCKETS || cJSON_GetArraySize(ta) != n || ts.bucket_ns <= 0)
		return;
	double *v = calloc(2 * (size_t)n, sizeof(*v));
	if (!v) {
		m->err = -ENOMEM;
		return;
	}
	ts.n = (size_t)n;
	for (int i = 0; i < n; i++) {
		v[i] = isc_rep_value(cJSON_GetArrayItem(rs, i));
		v[n + i] = isc_rep_value(cJSON_GetArrayItem(ta, i));
	}
	struct isc_rep_line l[2] = { { "reserved (highest in the bucket)", v, "#c03d3e" },
				     { "allocated (at the bucket's end)", v + n, "#3b75af" } };
	isc_rep_put(m, ISC_REP_CHART_BEGIN);
	isc_svg_timeseries(m, "Device memory reserved and allocated by PyTorch's caching allocator", &ts, l, 2,
			   ISC_REP_UNIT_BYTES, NULL, 0);
	isc_rep_put(m, ISC_REP_CHART_END);
	free(v);
}

/*
 * gpu.devices[].memory of one device: its peak with what was live at it by
 * site (a table), the peak sites stacked over time (a chart in the HTML
 * page), leak candidates and churn.
 */
static void device_memory(struct isc_rep *m, const cJSON *dev)
{
	static const char *const colors[] = { "#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2", "#a0a0a0" };
	const cJSON *mem = isc_doc_get(dev, "memory"), *x;
	char b[6][64];
	if (!cJSON_IsObject(mem))
		return;
	isc_rep_putf(m, "\n### Device %s memory by allocation site\n\n", isc_rep_field(b[0], 64, dev, "id", 'i'));
	isc_rep_putf(m, "Peak: %s of live %s, reached at %s", isc_rep_field(b[0], 64, mem, "peak_bytes", 'b'),
		     !strcmp(isc_doc_str(mem, "source", ""), "driver") ? "driver allocations (CUPTI; under PyTorch, reserved segments)"
								: "tensor allocations (PyTorch's allocator)",
		     isc_rep_field(b[1], 64, mem, "peak_ns", 'n'));
	if (isc_doc_have(mem, "total_bytes", &(double){ 0 }))
		isc_rep_putf(m, "; the device has %s: headroom %s (%s)", isc_rep_field(b[2], 64, mem, "total_bytes", 'b'),
			     isc_rep_field(b[3], 64, mem, "headroom_bytes", 'b'),
			     isc_rep_field(b[4], 64, mem, "headroom_pct", 'p'));
	isc_rep_putf(m, ". %s allocations, %s releases%s.\n", isc_rep_field(b[0], 64, mem, "allocations", 'i'),
		     isc_rep_field(b[1], 64, mem, "releases", 'i'),
		     !strcmp(isc_doc_str(mem, "pairing", ""), "size") ? " (no addresses: a release is paired with the latest live "
								 "allocation of its size)" : "");
	const cJSON *ca = isc_doc_get(mem, "allocator");
	if (cJSON_IsObject(ca)) {
		isc_rep_putf(m, "\nPyTorch's caching allocator (its own totals, memory allocated before the trace "
				"included): reserved peak %s at %s, with %s allocated; allocated peak %s; at the end %s "
				"reserved, %s allocated.\n",
			     isc_rep_field(b[0], 64, ca, "reserved_peak_bytes", 'b'),
			     isc_rep_field(b[1], 64, ca, "reserved_peak_ns", 'n'),
			     isc_rep_field(b[2], 64, ca, "allocated_at_reserved_peak_bytes", 'b'),
			     isc_rep_field(b[3], 64, ca, "allocated_peak_bytes", 'b'), isc_rep_field(b[4], 64, ca, "reserved_end_bytes", 'b'),
			     isc_rep_field(b[5], 64, ca, "allocated_end_bytes", 'b'));
		allocator_chart(m, isc_doc_get(mem, "over_time"));
	}
	const cJSON *ps = isc_doc_arr(mem, "peak_sites");
	if (cJSON_GetArraySize(ps) > 0) {
		isc_rep_put(m, "\n| Live at the peak | Share | Site | Kind |\n|---:|---:|---|---|\n");
		cJSON_ArrayForEach(x, ps) {
			isc_rep_putf(m, "| %s | %s | ", isc_rep_field(b[0], 64, x, "bytes", 'b'), isc_rep_field(b[1], 64, x, "pct_of_peak", 'p'));
			isc_rep_code(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			isc_rep_location(m, x, true);
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "kind", ""));
			isc_rep_put(m, " |\n");
		}
	}
	const cJSON *ot = isc_doc_get(mem, "over_time"), *al = isc_doc_arr(ot, "allocated_bytes"), *ss = isc_doc_arr(ot, "sites");
	struct isc_rep_ts ts = { isc_doc_num(ot, "start_ns", 0), isc_doc_num(ot, "bucket_ns", 0), 0, 0 };
	int n = cJSON_GetArraySize(al), ns = cJSON_GetArraySize(ss);
	if (m->html && n > 0 && n <= ISC_REP_MAX_BUCKETS && ts.bucket_ns > 0 && ns <= 5) {
		double *v = calloc((size_t)n * (size_t)(ns + 1), sizeof(*v));
		struct isc_rep_line l[6];
		if (!v) {
			m->err = -ENOMEM;
			return;
		}
		ts.n = (size_t)n;
		for (int i = 0; i < n; i++)
			v[(size_t)ns * ts.n + (size_t)i] = isc_rep_value(cJSON_GetArrayItem(al, i));
		for (int k = 0; k < ns; k++) {
			const cJSON *site = cJSON_GetArrayItem(ss, k), *sv = isc_doc_arr(site, "bytes");
			for (int i = 0; i < n; i++) {
				double y = isc_rep_value(cJSON_GetArrayItem(sv, i));
				y = isnan(y) ? 0 : y;
				v[(size_t)k * ts.n + (size_t)i] = y;
				v[(size_t)ns * ts.n + (size_t)i] -= y; /* what the other sites hold */
			}
			l[k] = (struct isc_rep_line){ isc_doc_str(site, "name", "?"), v + (size_t)k * ts.n, colors[k] };
		}
		l[ns] = (struct isc_rep_line){ "other sites", v + (size_t)ns * ts.n, colors[5] };
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_stacked(m, "Live device memory by allocation site", &ts, l, (size_t)ns + 1);
		isc_rep_put(m, ISC_REP_CHART_END);
		free(v);
	}
	const cJSON *lk = isc_doc_arr(mem, "leak_candidates");
	if (cJSON_GetArraySize(lk) > 0) {
		isc_rep_put(m, "\nLeak candidates (live bytes grew from the end of the first iteration to the last):\n\n"
			       "| Per iteration | Growth | Iterations | Site |\n|---:|---:|---:|---|\n");
		cJSON_ArrayForEach(x, lk) {
			isc_rep_putf(m, "| %s | %s | %s | ", isc_rep_field(b[0], 64, x, "bytes_per_iteration", 'b'),
				     isc_rep_field(b[1], 64, x, "growth_bytes", 'b'),
				     isc_rep_field(b[2], 64, x, "iterations", 'i'));
			isc_rep_code(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			isc_rep_location(m, x, true);
			isc_rep_put(m, " |\n");
		}
	}
	if (isc_doc_num(mem, "churn.iterations", 0) > 0)
		isc_rep_putf(m, "\nPer iteration: %s allocations, %s allocated, %s of them released in the same "
				"iteration.\n",
			     isc_rep_field(b[0], 64, mem, "churn.allocations_per_iteration", 'i'),
			     isc_rep_field(b[1], 64, mem, "churn.bytes_per_iteration", 'b'),
			     isc_rep_field(b[2], 64, mem, "churn.short_lived_pct", 'p'));
	if (isc_doc_num(mem, "failures.count", 0) > 0)
		isc_rep_putf(m, "\n**%s device allocation(s) failed** (out of memory), the last of %s at %s.\n",
			     isc_rep_field(b[0], 64, mem, "failures.count", 'i'),
			     isc_rep_field(b[1], 64, mem, "failures.last_bytes", 'b'),
			     isc_rep_field(b[2], 64, mem, "failures.last_ns", 'n'));
}

/* A site: `name` (file:line). */
static void site_cell(struct isc_rep *m, const cJSON *x)
{
	isc_rep_code(m, isc_doc_str(x, "name", "?"));
	if (*isc_doc_str(x, "file", ""))
		isc_rep_put(m, " ");
	isc_rep_location(m, x, true);
}

/* An estimate "12.0 MiB ± 1.5 MiB" (just the value when its error is 0; n/a when missing). */
static const char *estimate(char *buf, size_t cap, const cJSON *x, const char *key, const char *err_key)
{
	char v[64], e[64];
	isc_rep_field(v, sizeof(v), x, key, 'b');
	if (isc_doc_num(x, err_key, 0) >= 1 && strcmp(v, "n/a"))
		snprintf(buf, cap, "%s ± %s", v, isc_rep_field(e, sizeof(e), x, err_key, 'b'));
	else
		snprintf(buf, cap, "%s", v);
	return buf;
}

#define SITES_SHOWN 10 /* of each memory kind */

static bool is_device(const cJSON *x)
{
	return !strcmp(isc_doc_str(x, "memory", "host"), "device");
}

/*
 * The first SITES_SHOWN sites of one memory kind (device or host) of
 * memory.sites, in its order, as a table; what (non-NULL when both kinds
 * are there) names the kind above it and in the count of the rest.
 */
static void site_table(struct isc_rep *m, const cJSON *sites, bool device, const char *what)
{
	const cJSON *x;
	char b[6][96];
	int n = 0, i = 0;
	if (what)
		isc_rep_putf(m, "\n%s:\n", what);
	isc_rep_put(m, "\n| # | Site | Allocated | Freed | Live at the peak | Live at the end | Retained | "
		       "Growth per iteration | Leak |\n|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
	cJSON_ArrayForEach(x, sites) {
		if (is_device(x) != device)
			continue;
		if (n++ >= SITES_SHOWN)
			continue;
		isc_rep_putf(m, "| %d | ", ++i);
		site_cell(m, x);
		double dv;
		if (device && isc_doc_have(x, "device", &dv))
			isc_rep_putf(m, ", device %.0f memory", dv);
		double g;
		char grow[96] = "n/a";
		if (isc_doc_have(x, "growth_per_iteration_bytes", &g) && isfinite(g)) {
			char v[64];
			snprintf(grow, sizeof(grow), "%s%s", g < 0 ? "-" : "", isc_rep_fmt_bytes(v, sizeof(v), fabs(g)));
		}
		char leak[96] = "no";
		if (cJSON_IsTrue(isc_doc_get(x, "leak")))
			snprintf(leak, sizeof(leak), "yes, %s per iteration",
				 isc_rep_field(b[5], 96, x, "leak_per_iteration_bytes", 'b'));
		isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s | %s |\n",
			     estimate(b[0], 96, x, "allocated_bytes", "allocated_err_bytes"),
			     estimate(b[1], 96, x, "freed_bytes", "freed_err_bytes"),
			     estimate(b[2], 96, x, "live_peak_bytes", "live_peak_err_bytes"),
			     estimate(b[3], 96, x, "live_end_bytes", "live_end_err_bytes"),
			     estimate(b[4], 96, x, "retained_bytes", "retained_err_bytes"), grow, leak);
	}
	if (n > i)
		isc_rep_putf(m, "\nAnd %d more%s.\n", n - i, what ? (device ? " device sites" : " host sites") : "");
}

/*
 * memory.sites (the allocation samples, issue 25, and the device memory
 * records): live bytes by line, ranked by retained bytes, host and device
 * sites in a table each (device op sites allocating GiB never push the
 * host's lines out); then memory.peak_composition, the sites that held the
 * RSS peak.
 */
static void alloc_sites(struct isc_rep *m, const cJSON *root)
{
	const cJSON *sites = isc_doc_arr(root, "memory.sites"), *x;
	char b[6][96];
	int n = cJSON_GetArraySize(sites);
	if (n <= 0)
		return;
	bool dev = false, host = false;
	cJSON_ArrayForEach(x, sites) {
		dev |= is_device(x);
		host |= !is_device(x);
	}
	if (cJSON_IsObject(isc_doc_get(root, "memory.sampling")))
		isc_rep_putf(m, "\n### Memory by allocation site\n\nFrom %s allocation samples, one per %s allocated on "
				"average: each number is an estimate, ± one standard error.%s\n",
			     isc_rep_field(b[0], 96, root, "memory.sampling.samples", 'i'),
			     isc_rep_field(b[1], 96, root, "memory.sampling.interval_bytes", 'b'),
			     dev ? " Device memory sites are exact: every allocation was recorded." : "");
	else
		isc_rep_put(m, "\n### Memory by allocation site\n\nFrom the device memory records: every allocation, "
			       "exact.\n");
	if (host)
		site_table(m, sites, false, dev ? "Host memory" : NULL);
	if (dev)
		site_table(m, sites, true, host ? "Device memory" : NULL);
	isc_rep_put(m, "\nRetained: what a line kept over the steady-state iterations (live at the end without "
		       "iterations); a leak outranks churn of any size.\n");
	const cJSON *pc = isc_doc_get(root, "memory.peak_composition");
	if (!cJSON_IsObject(pc))
		return;
	isc_rep_putf(m, "\nAt the RSS peak (%s, at %s) the sampled sites held %s; %s is not attributed to a site "
			"(the interpreter, libraries, allocator overhead).\n",
		     isc_rep_field(b[0], 96, pc, "rss_bytes", 'b'), isc_rep_field(b[1], 96, pc, "at_ns", 'n'),
		     estimate(b[2], 96, pc, "sampled_live_bytes", "sampled_live_err_bytes"),
		     isc_rep_field(b[3], 96, pc, "unattributed_bytes", 'b'));
	const cJSON *ps = isc_doc_arr(pc, "sites");
	if (cJSON_GetArraySize(ps) <= 0)
		return;
	isc_rep_put(m, "\n| Live at the RSS peak | Of RSS | Site |\n|---:|---:|---|\n");
	cJSON_ArrayForEach(x, ps) {
		isc_rep_putf(m, "| %s | %s | ", estimate(b[0], 96, x, "live_bytes", "live_err_bytes"),
			     isc_rep_field(b[1], 96, x, "pct_of_rss", 'p'));
		site_cell(m, x);
		isc_rep_put(m, " |\n");
	}
}

void isc_rep_sec_memory(struct isc_rep *m, const cJSON *root)
{
	char b[8][64], growth[80];
	isc_rep_put(m, "\n## Memory\n\n");
	isc_rep_put(m, "| RSS peak | RSS growth after warm-up | Major faults | Minor faults | Swap used (max) |\n");
	isc_rep_put(m, "|---:|---:|---:|---:|---:|\n");
	double g;
	if (isc_doc_have(root, "memory.rss_growth_bytes_per_s", &g) && isfinite(g))
		snprintf(growth, sizeof(growth), "%s/s", isc_rep_fmt_bytes(b[7], 64, g));
	else
		snprintf(growth, sizeof(growth), "n/a");
	isc_rep_putf(m, "| %s | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, root, "memory.rss_peak_bytes", 'b'), growth,
	     isc_rep_field(b[2], 64, root, "memory.major_faults", 'i'),
	     isc_rep_field(b[3], 64, root, "memory.minor_faults", 'i'),
	     isc_rep_field(b[4], 64, root, "memory.swap_used_bytes_max", 'b'));
	isc_rep_putf(m, "\nPressure stall (highest 10 s average, some): CPU %s, memory %s, I/O %s.\n",
	     isc_rep_field(b[0], 64, root, "memory.pressure.cpu.some_avg10_max", 'p'),
	     isc_rep_field(b[1], 64, root, "memory.pressure.memory.some_avg10_max", 'p'),
	     isc_rep_field(b[2], 64, root, "memory.pressure.io.some_avg10_max", 'p'));
	isc_rep_put(m, "\nRSS is the sum over the recorded processes; growth is the least-squares slope after the "
	       "first 10 % of the run.\n");
	static const struct isc_rep_series_def mem_series[] = {
		{ "rss_bytes", "RSS", "#3b75af", true, 'b' },
		{ "gpu_mem_used_bytes", "GPU memory used", "#c0392b", true, 'b' },
	};
	const cJSON *gs = isc_doc_arr(root, "memory.growth_sites"), *x;
	bool sampled = !strcmp(isc_doc_str(root, "memory.growth_sites_source", ""), "allocation_samples");
	if (cJSON_GetArraySize(gs) > 0 && sampled) {
		/* from the allocation samples: what each line kept over the steady state, no scope */
		isc_rep_put(m, "\n| Retained | Site | Leak |\n|---:|---|---|\n");
		cJSON_ArrayForEach(x, gs) {
			isc_rep_putf(m, "| %s | ", isc_rep_field(b[0], 64, x, "bytes", 'b'));
			site_cell(m, x);
			isc_rep_putf(m, " | %s |\n", cJSON_IsTrue(isc_doc_get(x, "leak")) ? "yes" : "no");
		}
	} else if (cJSON_GetArraySize(gs) > 0) {
		isc_rep_put(m, "\n| RSS growth | Site | Scope |\n|---:|---|---|\n");
		cJSON_ArrayForEach(x, gs) {
			isc_rep_putf(m, "| %s | ", isc_rep_field(b[0], 64, x, "bytes", 'b'));
			isc_rep_code(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			isc_rep_location(m, x, true);
			isc_rep_put(m, " | ");
			if (isc_doc_str(x, "scope", NULL))
				isc_rep_code(m, isc_doc_str(x, "scope", ""));
			isc_rep_put(m, " |\n");
		}
	}
	alloc_sites(m, root);
	const cJSON *co = isc_doc_get(root, "memory.composition");
	if (cJSON_IsObject(co))
		isc_rep_putf(m, "\nResident at the end (smaps_rollup): %s anonymous, %s file-backed, %s swapped.\n",
			     isc_rep_field(b[0], 64, co, "anon_bytes", 'b'), isc_rep_field(b[1], 64, co, "file_bytes", 'b'),
			     isc_rep_field(b[2], 64, co, "swap_bytes", 'b'));
	const cJSON *oom = isc_doc_get(root, "oom");
	if (cJSON_IsObject(oom)) {
		isc_rep_put(m, "\n### Out of memory\n\n**The workload died of out-of-memory** (");
		isc_rep_md(m, isc_doc_str(oom, "kind", "?"));
		isc_rep_putf(m, ") at %s: ", isc_rep_field(b[0], 64, oom, "at_ns", 'n'));
		isc_rep_md(m, isc_doc_str(oom, "evidence", ""));
		const cJSON *site = isc_doc_get(oom, "site");
		if (cJSON_IsObject(site)) {
			isc_rep_put(m, ". Site: ");
			isc_rep_code(m, isc_doc_str(site, "name", "?"));
			if (*isc_doc_str(site, "file", ""))
				isc_rep_put(m, " ");
			isc_rep_location(m, site, true);
			if (!strcmp(isc_doc_str(oom, "site_source", ""), "live_bytes"))
				isc_rep_putf(m, ", the site holding the most live bytes%s (%s)",
					     cJSON_IsTrue(isc_doc_get(site, "growing")) ? " among those growing before the death" : "",
					     estimate(b[0], 64, site, "live_bytes", "live_err_bytes"));
		} else {
			isc_rep_put(m, ". Site: unknown");
		}
		isc_rep_putf(m, ". At the end: RSS %s (anonymous %s, file-backed %s), device memory live %s",
			     isc_rep_field(b[0], 64, oom, "memory_at_end.rss_bytes", 'b'),
			     isc_rep_field(b[1], 64, oom, "memory_at_end.anon_bytes", 'b'),
			     isc_rep_field(b[2], 64, oom, "memory_at_end.file_bytes", 'b'),
			     isc_rep_field(b[3], 64, oom, "memory_at_end.gpu_live_bytes", 'b'));
		if (isc_doc_have(oom, "growth_before.rss_increase_bytes", &g))
			isc_rep_putf(m, "; RSS rose %s in the last %s before", isc_rep_field(b[4], 64, oom, "growth_before.rss_increase_bytes", 'b'),
				     isc_rep_field(b[5], 64, oom, "growth_before.window_ns", 'n'));
		isc_rep_put(m, ".\n");
		/* a cuda_oom with its failed allocation recorded (or only its error): what the device held then, by site */
		const cJSON *daf = isc_doc_get(oom, "device_at_failure");
		if (cJSON_IsObject(daf)) {
			isc_rep_putf(m, "\nWhen %s (at %s), device %s held %s live",
				     !strcmp(isc_doc_str(daf, "basis", ""), "exception")
					     ? "the out-of-memory error was raised (its failed allocation was not recorded)"
					     : "the allocation failed",
				     isc_rep_field(b[0], 64, daf, "at_ns", 'n'),
				     isc_rep_field(b[1], 64, daf, "device", 'i'), isc_rep_field(b[2], 64, daf, "live_bytes", 'b'));
			if (cJSON_GetArraySize(isc_doc_arr(daf, "sites")) > 0) {
				isc_rep_put(m, ":\n\n| Live then | Site |\n|---:|---|\n");
				cJSON_ArrayForEach(x, isc_doc_arr(daf, "sites")) {
					isc_rep_putf(m, "| %s | ", isc_rep_field(b[0], 64, x, "live_bytes", 'b'));
					site_cell(m, x);
					isc_rep_put(m, " |\n");
				}
			} else {
				isc_rep_put(m, ".\n");
			}
		}
		const cJSON *top = isc_doc_arr(oom, "growth_before.top");
		if (!strcmp(isc_doc_str(oom, "growth_before.source", ""), "allocation_samples") && cJSON_GetArraySize(top) > 0) {
			isc_rep_put(m, "\n| Live at the death | Growing | Site |\n|---:|---|---|\n");
			cJSON_ArrayForEach(x, top) {
				isc_rep_putf(m, "| %s | %s | ", estimate(b[0], 64, x, "live_bytes", "live_err_bytes"),
					     cJSON_IsTrue(isc_doc_get(x, "growing")) ? "yes" : "no");
				site_cell(m, x);
				isc_rep_put(m, " |\n");
			}
		}
	}
	isc_rep_over_time(m, root, "Memory over time", mem_series, 2, ISC_REP_UNIT_BYTES);
	const cJSON *dev;
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices"))
		device_memory(m, dev);
}
