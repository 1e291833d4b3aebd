/*
 * analyze_sections.c - the findings document built from the state
 * analyze.c's pass leaves (analyze_pass.h): isc_ana_build writes the
 * sections in the document's order, calling the modules that own them,
 * and writes the small ones itself (summary, environment, marks):
 *
 *   schema_version, tool
 *   summary, environment                this file
 *   processes, iterations               sections_run.c
 *   cpu (functions, split)              sections_cpu.c (--python=sample:
 *                                       analyze_pysample.c adds to it)
 *   python                              analyze_pysample.c
 *   native                              analyze_native.c
 *   recording                           analyze_recording.c
 *   cpu (off-CPU, pools, in_iterations) sections_cpu.c
 *   memory                              sections_run.c (numa: analyze_numa.c)
 *   gpu                                 analyze_gpu.c
 *   timeseries                          analyze_series.c
 *   oom                                 analyze_oom.c
 *   run                                 sections_run.c
 *   marks                               this file
 *
 * The order matters: a section may use what an earlier one computed
 * (iterations before cpu.in_iterations, memory and run; cpu.in_iterations
 * before run), kept in struct ana, never read back from the document.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isc_analyze.h"
#include "isc_findings.h" /* ISC_FINDINGS_SCHEMA_VERSION */
#include "isc_config.h"   /* ISC_VERSION */
#include "analyze_gpu.h"
#include "analyze_numa.h"
#include "analyze_oom.h"
#include "sections.h"

/* The name of a WARNING code (enum isc_warning); unknown codes are "other". */
static const char *warning_kind(uint64_t code)
{
	static const char *const names[] = { "other", "no_driver", "stub_driver", "injection_taken", "not_built",
					     "no_nvml", "cupti_version", "cupti_privileges", "cupti_subscriber",
					     "cupti_error", "cupti_kinds", [ISC_WARN_NO_PY_AGENT] = "no_python_agent",
					     [ISC_WARN_OOM_KILL] = "oom_kill", [ISC_WARN_NATIVE] = "native_not_sampled" };
	return code < sizeof(names) / sizeof(names[0]) && names[code] ? names[code] : "other";
}

/* The command line of process pid, NULL when unknown (isc_oom_emit's callback). */
static const char *proc_command(void *ctx, uint32_t pid)
{
	const struct ana *a = ctx;
	uint32_t i = isc_umap_get(&a->pr_map, pid);
	return i == ISC_UMAP_NONE ? NULL : a->prs[i]->command;
}

cJSON *isc_ana_build(struct ana *a, bool damaged)
{
	const struct isc_tl_header *h = isc_timeline_header_borrow(a->t);
	const struct isc_tl_stats *st = isc_timeline_stats_borrow(a->t);
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	isc_jb_num(&a->jb, root, "schema_version", ISC_FINDINGS_SCHEMA_VERSION);
	cJSON *tool = isc_jb_obj(&a->jb, root, "tool");
	isc_jb_str(&a->jb, tool, "name", "iscope-analyze");
	isc_jb_str(&a->jb, tool, "version", ISC_VERSION);

	/* python and op spans: none in --python=sample mode (scopes may exist), whose split comes from the samples */
	uint64_t call_spans = 0, ntraced = 0;
	for (size_t i = 0; i < a->nths; i++) {
		call_spans += a->ths[i]->spans_begun;
		ntraced += a->ths[i]->traced;
	}
	bool from_samples = !call_spans && isc_pysamp_have(a->pys);
	struct ana_cpu_split whole;
	isc_ana_cpu_totals(a, from_samples, &whole);
	uint64_t traced = whole.python + whole.ops;

	cJSON *s = isc_jb_obj(&a->jb, root, "summary");
	isc_jb_num(&a->jb, s, "wall_ns", a->have_ts ? (double)(a->last_ts - a->first_ts) : 0);
	isc_jb_num(&a->jb, s, "start_ns", (double)a->first_ts);
	isc_jb_num(&a->jb, s, "end_ns", (double)a->last_ts);
	isc_jb_num(&a->jb, s, "events", (double)st->events);
	isc_jb_num(&a->jb, s, "dropped_events", (double)(st->have_end ? st->dropped : a->dropped_sum));
	isc_jb_num(&a->jb, s, "lost_frames", (double)st->lost_frames);
	/* abrupt: the trace was cut short, or the workload was killed */
	bool cut = !st->have_end || st->abrupt;
	isc_jb_bool(&a->jb, s, "abrupt", cut || st->signaled);
	isc_jb_str(&a->jb, s, "end_reason", cut ? "cut" : st->signaled ? "signaled" : "exited");
	/* a cut trace never recorded how the workload ended */
	isc_jb_num_or_null(&a->jb, s, "exit_status", !cut, st->exit_status);
	isc_jb_num_or_null(&a->jb, s, "exit_signal", !cut && st->signaled, st->exit_status - 128);
	isc_jb_num(&a->jb, s, "processes", (double)a->nprs);
	isc_jb_num(&a->jb, s, "threads", (double)a->nths);
	isc_jb_num(&a->jb, s, "traced_threads", (double)ntraced);
	/* the trace, or the timeline; frames a flight recorder evicted are not damage */
	isc_jb_bool(&a->jb, s, "damaged", damaged || (st->lost_frames > 0 && !st->window));
	isc_jb_bool(&a->jb, s, "complete", st->have_end);
	isc_jb_num(&a->jb, s, "unclosed_spans", (double)a->unclosed_spans);
	isc_jb_num(&a->jb, s, "merge_closed_spans", (double)a->merge_closed_spans);
	isc_jb_num(&a->jb, s, "unmatched_span_ends", (double)a->unmatched_ends);
	isc_jb_num(&a->jb, s, "clock_uncertainty_ns", (double)h->clock_uncertainty_ns);
	isc_jb_num(&a->jb, s, "warnings_total", (double)a->warns_total);
	cJSON *ws = isc_jb_arr(&a->jb, s, "warnings");
	for (size_t i = 0; i < a->nwarns; i++) {
		cJSON *w = isc_jb_push_obj(&a->jb, ws);
		if (!w)
			break;
		isc_jb_num(&a->jb, w, "pid", a->warns[i].pid);
		isc_jb_num(&a->jb, w, "code", (double)a->warns[i].code);
		isc_jb_str(&a->jb, w, "kind", warning_kind(a->warns[i].code));
		isc_jb_str(&a->jb, w, "message", a->warns[i].msg);
		isc_jb_num(&a->jb, w, "count", (double)a->warns[i].count);
	}

	cJSON *env = isc_jb_obj(&a->jb, root, "environment");
	isc_jb_str(&a->jb, env, "host", h->host);
	isc_jb_str(&a->jb, env, "cmdline", h->cmdline);
	isc_jb_num(&a->jb, env, "ncpu", h->ncpu);
	isc_jb_num(&a->jb, env, "sample_hz", h->sample_hz);
	char when[64] = "";
	time_t secs = (time_t)(h->epoch_realtime_ns / 1000000000u);
	struct tm tm;
	if (h->epoch_realtime_ns && gmtime_r(&secs, &tm))
		snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(h->epoch_realtime_ns % 1000000000u));
	isc_jb_str(&a->jb, env, "start_time", *when ? when : NULL);
	if (a->meta && env) { /* the recorder's env.* and host.* settings */
		cJSON_AddItemToObject(env, "meta", a->meta);
		a->meta = NULL;
	}

	struct ana_switches sw = { 0 };
	isc_ana_emit_processes(a, root, &sw);
	if (isc_ana_emit_iterations(a, root))
		goto oom;

	cJSON *cpu = isc_jb_obj(&a->jb, root, "cpu");
	if (isc_ana_emit_functions(a, cpu, traced))
		goto oom;
	if (from_samples) {
		isc_pysamp_emit_cpu(a->pys, a->t, &a->jb, cpu, traced, a->top_n);
		isc_pysamp_emit(a->pys, a->t, &a->jb, root, a->top_n);
	}
	if (isc_nat_emit(a->nat, a, root))
		goto oom;
	isc_ana_emit_cpu_split(a, cpu, &whole, &sw);
	isc_ana_emit_recording(a, root, traced);
	if (isc_ana_emit_off_cpu(a, cpu) || isc_ana_emit_pools(a, cpu) ||
	    isc_ana_emit_in_iterations(a, cpu, from_samples) || isc_ana_emit_memory(a, root) ||
	    isc_numa_emit(a->numa, a->out.memory))
		goto oom;
	struct isc_gpu_iter git = { a->out.it_name_id, a->out.it_step, a->out.it_name, a->out.it_samples };
	if (isc_gpu_ana_emit(a->gpu, root, a->out.it_name ? &git : NULL) ||
	    isc_series_emit(a->series, a->first_ts, a->last_ts, h->ncpu, root))
		goto oom;
	struct isc_oom_gpu gf;
	struct isc_oom_sites os = { 0 };
	uint32_t dpid;
	uint64_t dts;
	isc_gpu_ana_failure(a->gpu, &gf);
	if (isc_ana_oom_device_sites(a, &gf))
		goto oom;
	if (isc_oom_host_death(a->oom, &dpid, &dts))
		isc_ana_oom_sites(a, dpid, dts, &os);
	if (isc_oom_emit(a->oom, &a->jb, root, a->first_ts, st->have_end ? st->exit_status : 0, &gf, &os, a->t,
			 proc_command, a))
		goto oom;

	isc_ana_emit_run(a, root, st, traced, call_spans);

	cJSON *mk = isc_jb_arr(&a->jb, root, "marks");
	for (size_t i = 0; i < a->nmks; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, mk);
		if (!o)
			break;
		const struct ana_mark *mk = &a->mks[i];
		double its = (double)a->out.it_count, wall = a->have_ts ? (double)(a->last_ts - a->first_ts) : 0;
		isc_jb_str(&a->jb, o, "name", isc_ana_str_name(a, mk->name_id));
		isc_jb_num(&a->jb, o, "count", (double)mk->count);
		isc_jb_num(&a->jb, o, "sum", (double)mk->sum);
		/* rates: per iteration of the scope, per second of the analyzed span (summary.wall_ns) */
		isc_jb_num_or_null(&a->jb, o, "per_iteration", its > 0, round(100 * (double)mk->sum / its) / 100);
		isc_jb_num_or_null(&a->jb, o, "per_s", wall > 0, round(100 * (double)mk->sum / (wall / 1e9)) / 100);
		isc_jb_num(&a->jb, o, "first_ns", (double)(mk->first_ts - a->first_ts));
		isc_jb_num(&a->jb, o, "last_ns", (double)(mk->last_ts - a->first_ts));
		cJSON *ser = isc_jb_obj(&a->jb, o, "series");
		isc_jb_num(&a->jb, ser, "bucket_ns", (double)mk->width);
		unsigned used = (unsigned)((mk->last_ts - mk->first_ts) / mk->width) + 1;
		cJSON *sums = isc_jb_arr(&a->jb, ser, "sums");
		for (unsigned b = 0; b < used && b < ANA_MARK_BUCKETS; b++)
			isc_jb_push_num(&a->jb, sums, mk->buckets[b]);
	}
	if (a->jb.oom)
		goto oom;
	return root;
oom:
	cJSON_Delete(root);
	return NULL;
}
