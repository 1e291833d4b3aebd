/*
 * test_analyze.c - iscope-analyze's library side (lib/analyze, with the
 * rules and the report on its output) on synthetic timelines with exactly
 * known answers.
 *
 * Timelines are built here with the library's own container writer: a
 * FILE_HEADER chunk (ISTL magic), one TL_STRINGS chunk per string,
 * TL_EVENTS chunks that each start with a TL_CTX record, and an END chunk.
 *
 * Also a fixture writer for tests/cli/analyze_report.bats:
 *   test_analyze --write {basic|hostile|truncated} FILE
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_report.h"
#include "isc_stats.h"
#include "isc_merge.h"
#include "isc_trace_int.h"
#include "tap.h"
#include "tlwrite.h"

/* ---- timeline builder ------------------------------------------------- */
#define TL_MAX_THREADS 16
#define TL_MAX_DEPTH 256

struct tl_thread {
	uint32_t pid, tid;
	uint64_t stack[TL_MAX_DEPTH];
	unsigned depth;
};

struct tl {
	struct isc_writer *w;
	struct isc_buf ev; /* records of the events chunk being built */
	uint64_t base, last, next_span, nevents;
	uint32_t pid, tid;
	bool open, ctx;
	struct tl_thread th[TL_MAX_THREADS];
	unsigned nth;
};

static void tl_open(struct tl *t, FILE *f, const char *cmdline)
{
	struct isc_tl_header h;
	memset(t, 0, sizeof(*t));
	memset(&h, 0, sizeof(h));
	strcpy(h.host, "testhost");
	snprintf(h.cmdline, sizeof(h.cmdline), "%s", cmdline);
	h.ncpu = 4;
	h.sample_hz = 10;
	h.epoch_realtime_ns = 1700000000000000000ull;
	tlw_open(&t->w, f, &h);
	t->next_span = 1;
}

static void tl_string(struct tl *t, uint32_t id, uint8_t kind, uint32_t line, const char *name, const char *file)
{
	tlw_string(t->w, id, kind, line, name, file);
}

/* Writes the events built so far as one TL_EVENTS chunk. */
static void tl_flush(struct tl *t)
{
	if (t->open)
		tlw_chunk(t->w, ISC_CHUNK_TL_EVENTS, t->base, &t->ev);
	t->ev.len = 0;
	t->open = t->ctx = false;
}

/* Appends one timed record of context (pid, tid): n varint fields, then bytes. */
static void tl_rec(struct tl *t, uint8_t type, uint64_t ts, uint32_t pid, uint32_t tid, int n,
		   const uint64_t *f, const void *bytes, size_t nbytes, bool len_prefix)
{
	struct isc_buf r = { 0 };
	if (!t->open) {
		t->open = true;
		t->base = t->last = ts;
	}
	if (!t->ctx || pid != t->pid || tid != t->tid) {
		isc_buf_put_varint(&r, pid);
		isc_buf_put_varint(&r, tid);
		isc_buf_put_record(&t->ev, ISC_REC_TL_CTX, ts, &t->last, r.data, r.len);
		r.len = 0;
		t->pid = pid;
		t->tid = tid;
		t->ctx = true;
	}
	for (int i = 0; i < n; i++)
		isc_buf_put_varint(&r, f[i]);
	if (len_prefix)
		isc_buf_put_bytes(&r, bytes, nbytes);
	else if (nbytes)
		isc_buf_put(&r, bytes, nbytes);
	isc_buf_put_record(&t->ev, type, ts, &t->last, r.data, r.len);
	isc_buf_free(&r);
	t->nevents++;
}

static struct tl_thread *tl_thread(struct tl *t, uint32_t pid, uint32_t tid)
{
	for (unsigned i = 0; i < t->nth; i++)
		if (t->th[i].pid == pid && t->th[i].tid == tid)
			return &t->th[i];
	if (t->nth == TL_MAX_THREADS)
		abort();
	t->th[t->nth] = (struct tl_thread){ .pid = pid, .tid = tid };
	return &t->th[t->nth++];
}

/* Opens a span of kind on (pid, tid); returns its id. */
static uint64_t tl_call(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, uint8_t kind, uint32_t name)
{
	struct tl_thread *th = tl_thread(t, pid, tid);
	uint64_t id = t->next_span++;
	uint64_t f[5] = { id, th->depth ? th->stack[th->depth - 1] : 0, th->depth, kind, name };
	tl_rec(t, ISC_REC_TL_SPAN_BEGIN, ts, pid, tid, 5, f, NULL, 0, false);
	th->stack[th->depth++] = id;
	return id;
}

/* Closes the innermost span of (pid, tid); flags 1 = closed by merge. */
static void tl_ret_flags(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t flags)
{
	struct tl_thread *th = tl_thread(t, pid, tid);
	uint64_t f[2] = { th->stack[--th->depth], flags };
	tl_rec(t, ISC_REC_TL_SPAN_END, ts, pid, tid, 2, f, NULL, 0, false);
}

static void tl_ret(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid)
{
	tl_ret_flags(t, ts, pid, tid, 0);
}

/* A whole span [b, e) with nothing inside. */
static void tl_leaf(struct tl *t, uint64_t b, uint64_t e, uint32_t pid, uint32_t tid, uint8_t kind, uint32_t name)
{
	tl_call(t, b, pid, tid, kind, name);
	tl_ret(t, e, pid, tid);
}

static void tl_thread_sample_sw(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t cpu_ns,
				uint64_t vcsw, uint64_t ivcsw)
{
	uint64_t f[9] = { pid, tid, cpu_ns, 0, 'R', 1, vcsw, ivcsw, 0 };
	tl_rec(t, ISC_REC_THREAD_SAMPLE, ts, 0, 0, 9, f, NULL, 0, false);
}

static void tl_thread_sample(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t cpu_ns)
{
	tl_thread_sample_sw(t, ts, pid, tid, cpu_ns, 0, 0);
}

static void tl_proc_sample(struct tl *t, uint64_t ts, uint32_t pid, uint64_t rss, uint64_t vcsw, uint64_t ivcsw)
{
	uint64_t f[9] = { pid, ts / 2, 0, rss, 1000, 7, 4, vcsw, ivcsw };
	tl_rec(t, ISC_REC_PROC_SAMPLE, ts, 0, 0, 9, f, NULL, 0, false);
}

/* THREAD_SAMPLE with a state ('R', 'S', 'D'). */
static void tl_thread_state(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, char state)
{
	uint64_t f[9] = { pid, tid, 0, 0, (uint64_t)state, 0, 0, 0, 0 };
	tl_rec(t, ISC_REC_THREAD_SAMPLE, ts, 0, 0, 9, f, NULL, 0, false);
}

/*
 * A thread found off CPU in state ('S', 'D'): its THREAD_WAIT (call
 * family, descriptor kind, first argument, wchan), then the THREAD_SAMPLE
 * at the same instant (every test here writes the two together).
 */
static void tl_blocked(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, char state, uint64_t call, uint64_t kind,
		       uint64_t a0, const char *wchan)
{
	uint64_t f[10] = { pid, tid, call, 0, a0, 0, 0, call == ISC_WAIT_FUTEX ? 0x7ffd0000 : 0, kind ? 4 : 0, kind };
	tl_rec(t, ISC_REC_THREAD_WAIT, ts, 0, 0, 10, f, wchan, strlen(wchan), false);
	tl_thread_state(t, ts, pid, tid, state);
}

/* PROC_SAMPLE with CPU time (utime), RSS and thread count. */
static void tl_proc_cpu(struct tl *t, uint64_t ts, uint32_t pid, uint64_t cpu_ns, uint64_t rss, uint64_t nthreads)
{
	uint64_t f[9] = { pid, cpu_ns, 0, rss, 0, 0, nthreads, 0, 0 };
	tl_rec(t, ISC_REC_PROC_SAMPLE, ts, 0, 0, 9, f, NULL, 0, false);
}

static void tl_close(struct tl *t, uint64_t dropped, uint64_t flags, int status)
{
	struct isc_buf b = { 0 }, r = { 0 };
	uint64_t ts = 0;
	tl_flush(t);
	isc_buf_put_varint(&r, t->nevents);
	isc_buf_put_varint(&r, dropped);
	isc_buf_put_varint(&r, 0);
	isc_buf_put_varint(&r, flags);
	isc_buf_put_varint(&r, isc_zigzag(status));
	isc_buf_put_record(&b, ISC_REC_END_STATS, 0, &ts, r.data, r.len);
	tlw_chunk(t->w, ISC_CHUNK_END, 0, &b);
	isc_writer_flush(t->w);
	isc_writer_free(t->w);
	isc_buf_free(&b);
	isc_buf_free(&r);
	isc_buf_free(&t->ev);
}

/* Runs the analysis on the bytes of f from the start; *rc gets its return. */
static cJSON *analyze_file(FILE *f, unsigned top_n, int *rc)
{
	struct isc_timeline *t = NULL;
	struct isc_analyze_opts o = { .top_n = top_n };
	cJSON *doc = NULL;
	rewind(f);
	isc_err_clear();
	if ((*rc = isc_timeline_open(&t, f)) == 0)
		*rc = isc_analyze_timeline(t, &o, &doc);
	isc_timeline_free(t);
	return doc;
}

static cJSON *analyze(FILE *f)
{
	int rc;
	cJSON *d = analyze_file(f, 0, &rc);
	if (rc)
		printf("# analyze: %d %s\n", rc, isc_err_msg());
	return d;
}

static double N(const cJSON *d, const char *path)
{
	double v = NAN;
	isc_doc_have(d, path, &v);
	return v;
}

/* cpu.top_functions entry by name (and kind when not NULL). */
static const cJSON *fn_named(const cJSON *d, const char *name)
{
	const cJSON *fn, *arr = isc_doc_get(d, "cpu.top_functions");
	cJSON_ArrayForEach(fn, arr)
		if (isc_doc_str(fn, "name", NULL) && !strcmp(isc_doc_str(fn, "name", NULL), name))
			return fn;
	return NULL;
}

static double FN(const cJSON *d, const char *name, const char *field)
{
	return N(fn_named(d, name), field);
}

/* The first row of the array at path whose key is the string value; NULL if none. */
static const cJSON *row_where(const cJSON *d, const char *path, const char *key, const char *value)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, isc_doc_get(d, path))
		if (isc_doc_str(x, key, NULL) && !strcmp(isc_doc_str(x, key, NULL), value))
			return x;
	return NULL;
}

/* Thread tid of the first process in processes[]; NULL if none. */
static const cJSON *thread_tid(const cJSON *d, double tid)
{
	const cJSON *th;
	cJSON_ArrayForEach(th, isc_doc_get(cJSON_GetArrayItem(isc_doc_get(d, "processes"), 0), "threads"))
		if (N(th, "tid") == tid)
			return th;
	return NULL;
}

enum { S_MAIN = 1, S_A, S_F, S_B, S_FACT, S_STEP, S_REQ, S_X, S_SLEEP, S_G, S_DL, S_DLANN, S_READ };

static void common_strings(struct tl *t)
{
	tl_string(t, S_MAIN, ISC_STR_CODE, 1, "<module>", "infer.py");
	tl_string(t, S_A, ISC_STR_CFUNC, 0, "torch.matmul", "torch");
	tl_string(t, S_F, ISC_STR_CODE, 12, "crunch", "hot_function.py");
	tl_string(t, S_B, ISC_STR_CFUNC, 0, "len", "builtins");
	tl_string(t, S_FACT, ISC_STR_CODE, 3, "fact", "rec.py");
	tl_string(t, S_STEP, ISC_STR_SCOPE, 0, "step", "");
	tl_string(t, S_REQ, ISC_STR_SCOPE, 0, "request", "");
	tl_string(t, S_X, ISC_STR_CFUNC, 0, "torch.relu", "torch");
	tl_string(t, S_SLEEP, ISC_STR_CFUNC, 0, "time.sleep", "time");
	tl_string(t, S_G, ISC_STR_CODE, 20, "g", "rec.py");
	tl_string(t, S_DL, ISC_STR_CODE, 623, "_BaseDataLoaderIter.__next__",
		  "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py");
	tl_string(t, S_DLANN, ISC_STR_SCOPE, 0, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "");
	tl_string(t, S_READ, ISC_STR_CFUNC, 0, "posix.read", "posix");
}

/* A timeline of cmdline into f, with the common strings defined. */
static void tl_open_common(struct tl *t, FILE *f, const char *cmdline)
{
	tl_open(t, f, cmdline);
	common_strings(t);
}

/* Ends t (exit status 0) and analyses what f holds; NULL (said why) when the analysis fails. */
static cJSON *tl_close_analyze(struct tl *t, FILE *f)
{
	tl_close(t, 0, 0, 0);
	return analyze(f);
}

/* Item i of the array at path, as a number. */
static double NA(const cJSON *d, const char *path, int i)
{
	const cJSON *x = cJSON_GetArrayItem(isc_doc_get(d, path), i);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* iterations.spans[i] == [b, e] */
static bool span_is(const cJSON *d, int i, double b, double e)
{
	const cJSON *p = cJSON_GetArrayItem(isc_doc_get(d, "iterations.spans"), i);
	return cJSON_GetArraySize(p) == 2 && cJSON_GetArrayItem(p, 0)->valuedouble == b &&
	       cJSON_GetArrayItem(p, 1)->valuedouble == e;
}

/* The spans drawn above test_compensation: pid 10, threads 10 and 11. */
static void compensation_spans(struct tl *t)
{
	tl_call(t, 0, 10, 10, ISC_SPAN_PYTHON, S_MAIN);
	tl_leaf(t, 100, 400, 10, 10, ISC_SPAN_OP, S_A);
	tl_call(t, 500, 10, 10, ISC_SPAN_PYTHON, S_F);
	tl_leaf(t, 600, 700, 10, 10, ISC_SPAN_OP, S_B);
	tl_ret(t, 900, 10, 10);
	tl_ret(t, 1000, 10, 10);
	tl_call(t, 2000, 10, 11, ISC_SPAN_SCOPE, S_STEP);
	tl_call(t, 2100, 10, 11, ISC_SPAN_PYTHON, S_F);
	tl_leaf(t, 2200, 2300, 10, 11, ISC_SPAN_OP, S_B);
	tl_ret(t, 2900, 10, 11);
	tl_ret(t, 3000, 10, 11);
}

/* ---- tests -------------------------------------------------------------- */
/*
 * Overhead compensation: process 10 measured 10 ns per event (CALIBRATION).
 * Expected values by hand from the rule in iscope-analyze(1): a span's self
 * loses (1 + direct children) events, its total (1 + 2 x descendants),
 * a scope's latency 2 x the spans inside it.
 *   thread 10: main [0,1000) { A [100,400); f [500,900) { B [600,700) } }
 *     main self 300 - 3x10 = 270, total 1000 - 7x10 = 930
 *     A 300 - 10 = 290; f self 300 - 20 = 280, total 400 - 30 = 370;
 *     B 100 - 10 = 90
 *   thread 11: scope step [2000,3000) { f [2100,2900) { B [2200,2300) } }
 *     step latency 1000 - 4x10 = 960; f self 700 - 20 = 680, total 800 - 30
 *     = 770; B 90; the with-block's own 200 - 10 (f's hooks) = 190
 * Overhead found: thread 10: 30 + 10 + 20 + 10, thread 11: 10 + 20 + 10.
 */
/*
 * The document of compensation_spans() in a process calibrated at cal
 * (CALIBRATION's six fields), raw: --no-compensation.  0 or the error of
 * reading or analysing; the caller frees *d.
 */
static int analyze_calibrated(const uint64_t cal[6], bool raw, cJSON **d)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 infer.py");
	tl_rec(&t, ISC_REC_CALIBRATION, 0, 10, 10, 6, cal, NULL, 0, false);
	compensation_spans(&t);
	tl_close(&t, 0, 0, 0);
	struct isc_timeline *tl = NULL;
	struct isc_analyze_opts o = { .raw_times = raw };
	*d = NULL;
	rewind(f);
	int rc = isc_timeline_open(&tl, f);
	if (!rc)
		rc = isc_analyze_timeline(tl, &o, d);
	isc_timeline_free(tl);
	fclose(f);
	return rc;
}

static void test_compensation(void)
{
	for (int raw = 0; raw < 2; raw++) {
		const uint64_t cal[6] = { 1, 10000, 5000, 200000, 300000, 10002 };
		cJSON *d;
		int rc = analyze_calibrated(cal, raw, &d);
		ok(rc == 0 && d, "compensation%s: analysis succeeds", raw ? " (raw)" : "");
		if (!raw) {
			ok(FN(d, "<module>", "self_ns") == 270 && FN(d, "<module>", "total_ns") == 930,
			   "compensation: main self 270 total 930 (%g %g)", FN(d, "<module>", "self_ns"),
			   FN(d, "<module>", "total_ns"));
			ok(FN(d, "torch.matmul", "self_ns") == 290 && FN(d, "len", "self_ns") == 180,
			   "compensation: op self times 290, 2 x 90");
			ok(FN(d, "crunch", "self_ns") == 960 && FN(d, "crunch", "total_ns") == 1140,
			   "compensation: f self 280 + 680, total 370 + 770 (%g %g)", FN(d, "crunch", "self_ns"),
			   FN(d, "crunch", "total_ns"));
			ok(N(d, "iterations.latency_ns.min") == 1000 && N(d, "iterations.latency_ns_estimated.min") == 960 &&
			   N(d, "recording.iteration_overhead_removed_ns") == 40,
			   "compensation: the iteration measured 1000, estimated without its 4 events 960 (%g %g)",
			   N(d, "iterations.latency_ns.min"), N(d, "iterations.latency_ns_estimated.min"));
			ok(N(d, "iterations.latency_estimate.removed_pct") == 4 &&
			   cJSON_IsFalse(isc_doc_get(d, "iterations.latency_estimate.withheld")) &&
			   cJSON_IsNull(isc_doc_get(d, "iterations.latency_estimate.reason")),
			   "compensation: 4 %% removed, the estimate shown");
			ok(N(d, "cpu.split.python_ns") == 270 + 280 + 680 + 190 && N(d, "cpu.split.ops_ns") == 290 + 180,
			   "compensation: the CPU split adds up the corrected self times (%g %g)",
			   N(d, "cpu.split.python_ns"), N(d, "cpu.split.ops_ns"));
			ok(cJSON_IsTrue(isc_doc_get(d, "recording.compensated")) && N(d, "recording.per_event_ns") == 10 &&
			   !strcmp(isc_doc_str(d, "recording.mechanism", NULL), "setprofile"),
			   "compensation: recording names setprofile, 10 ns per event, compensated");
		} else {
			ok(FN(d, "<module>", "self_ns") == 300 && FN(d, "<module>", "total_ns") == 1000 &&
			   FN(d, "crunch", "self_ns") == 1000 && N(d, "iterations.latency_ns.min") == 1000 &&
			   N(d, "recording.iteration_overhead_removed_ns") == 0 &&
			   cJSON_IsNull(isc_doc_get(d, "iterations.latency_ns_estimated")) &&
			   cJSON_IsNull(isc_doc_get(d, "iterations.latency_estimate")),
			   "--no-compensation: times as recorded, no estimate");
			ok(!cJSON_IsTrue(isc_doc_get(d, "recording.compensated")), "--no-compensation: compensated false");
		}
		/* both: the cost found in self times, and its share of the time before correction */
		ok(N(d, "recording.overhead_ns") == 110 && N(d, "recording.events_compensated") == (raw ? 0 : 12) &&
		   N(d, "recording.overhead_pct") == 5.5, /* 110 of (1000 + 1000) */
		   "compensation%s: overhead 110 ns, 5.5 %% of the traced time before correction (%g %g %g)",
		   raw ? " (raw)" : "", N(d, "recording.overhead_ns"), N(d, "recording.events_compensated"),
		   N(d, "recording.overhead_pct"));
		ok(N(d, "recording.traced_slowdown") == 1.06, /* 2000 / (2000 - 110) = 1.058 */
		   "compensation%s: the traced code ran 1.06x as long recorded (%g)", raw ? " (raw)" : "",
		   N(d, "recording.traced_slowdown"));
		cJSON_Delete(d);
	}
}

/*
 * The same spans at 150 ns an event: the step's 4 events would take 600 of
 * its measured 1000 ns, 60 % (over the 50 % the estimate may remove): the
 * headline stays 1000, the estimate is withheld and says why.
 */
static void test_compensation_withheld(void)
{
	const uint64_t cal[6] = { 1, 150000, 5000, 200000, 1700000, 10002 };
	cJSON *d;
	int rc = analyze_calibrated(cal, 0, &d);
	ok(rc == 0 && N(d, "iterations.latency_ns.min") == 1000 && N(d, "iterations.latency_ns.p50") == 1000,
	   "150 ns an event: the measured 1000 ns stays the latency (%g)", N(d, "iterations.latency_ns.min"));
	ok(N(d, "iterations.latency_estimate.removed_pct") == 60 &&
	   cJSON_IsTrue(isc_doc_get(d, "iterations.latency_estimate.withheld")) &&
	   cJSON_IsNull(isc_doc_get(d, "iterations.latency_ns_estimated")) &&
	   strstr(isc_doc_str(d, "iterations.latency_estimate.reason", ""), "60.0 %"),
	   "60 %% of it would go: the estimate withheld, with the share in the reason");
	cJSON_Delete(d);
}

/*
 * A loop that lasts its deadline, and two that do not, at 10 ns an event
 * (test_compensation's calibration): six spans of scope step on thread 11
 * (the first the warm-up), span i holding calls[i] Python calls (each 2
 * events: 20 ns removed) and lasting dur[i].  By the rule in
 * iscope-analyze(1): withheld when the removals' median absolute deviation
 * is at least 0.02 % of the median iteration and over 4 times the times'.
 *   deadline: times 100000 but one 100900 (a late wake-up): median
 *     deviation 0; removals 2000 2200 1900 2100 2400: median 2100,
 *     deviation 100 (0.1 %) -> withheld although 10600 of 500900 (2.12 %)
 *     is removed
 *   fixed work: 100 calls each, times 99000-101000: removals all 2000,
 *     deviation 0 -> shown
 *   work that varies: the same calls as the deadline loop, each 500 ns of
 *     the time (50000 + 500 x calls): times' deviation 2500, removals' 100
 *     -> shown
 */
static cJSON *deadline_doc(const uint32_t calls[6], const uint64_t dur[6])
{
	const uint64_t cal[6] = { 1, 10000, 5000, 200000, 300000, 10002 };
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 infer.py");
	tl_rec(&t, ISC_REC_CALIBRATION, 0, 10, 10, 6, cal, NULL, 0, false);
	uint64_t ts = 1000;
	for (int i = 0; i < 6; i++) {
		tl_call(&t, ts, 10, 11, ISC_SPAN_SCOPE, S_STEP);
		for (uint32_t k = 0; k < calls[i]; k++) {
			tl_call(&t, ts + 10 + 20 * k, 10, 11, ISC_SPAN_PYTHON, S_F);
			tl_ret(&t, ts + 20 + 20 * k, 10, 11);
		}
		tl_ret(&t, ts + dur[i], 10, 11);
		ts += dur[i] + 1000;
	}
	return tl_close_analyze(&t, f);
}

static void test_compensation_deadline(void)
{
	static const uint32_t varied[6] = { 100, 100, 110, 95, 105, 120 }, fixed[6] = { 100, 100, 100, 100, 100, 100 };
	static const uint64_t deadline[6] = { 100000, 100000, 100000, 100900, 100000, 100000 },
			      noisy[6] = { 100000, 99000, 101000, 100500, 100200, 99600 },
			      follows[6] = { 100000, 100000, 105000, 97500, 102500, 110000 };
	cJSON *d = deadline_doc(varied, deadline);
	ok(d && N(d, "iterations.samples") == 5 && N(d, "iterations.latency_ns.p50") == 100000 &&
	   N(d, "iterations.latency_estimate.removed_pct") == 2.12 &&
	   cJSON_IsTrue(isc_doc_get(d, "iterations.latency_estimate.withheld")) &&
	   cJSON_IsNull(isc_doc_get(d, "iterations.latency_ns_estimated")) &&
	   strstr(isc_doc_str(d, "iterations.latency_estimate.reason", ""), "0.100 %") &&
	   strstr(isc_doc_str(d, "iterations.latency_estimate.reason", ""), "deadline"),
	   "a deadline loop: 2.12 %% removed, withheld, the removals' 0.100 %% deviation in the reason (%g, %s)",
	   N(d, "iterations.latency_estimate.removed_pct"), isc_doc_str(d, "iterations.latency_estimate.reason", "-"));
	cJSON_Delete(d);
	d = deadline_doc(fixed, noisy);
	ok(d && cJSON_IsFalse(isc_doc_get(d, "iterations.latency_estimate.withheld")) &&
	   N(d, "iterations.latency_ns_estimated.min") == 99000 - 2000,
	   "fixed work, noisy times: the estimate shown (%g)", N(d, "iterations.latency_ns_estimated.min"));
	cJSON_Delete(d);
	d = deadline_doc(varied, follows);
	ok(d && cJSON_IsFalse(isc_doc_get(d, "iterations.latency_estimate.withheld")) &&
	   N(d, "iterations.latency_ns_estimated.min") == 97500 - 1900,
	   "work that varies, times that follow it: the estimate shown (%g)",
	   N(d, "iterations.latency_ns_estimated.min"));
	cJSON_Delete(d);
}

/*
 * A process calibrated twice (at start 20 ns per event, at exit 10 ns):
 * with the first pass (isc_analyze_calibrations) the lower cost applies
 * from the first event on, so the figures are test_compensation's; without
 * it, the first record applies: main self 300 - 3 x 20 = 240.
 */
static void test_calibration_lowest(void)
{
	for (int prepass = 0; prepass < 2; prepass++) {
		FILE *f = tmpfile();
		struct tl t;
		tl_open_common(&t, f, "python3 infer.py");
		const uint64_t start[6] = { 2, 20000, 5000, 200000, 400000, 10002 };
		const uint64_t exit_[6] = { 2, 10000, 5000, 150000, 250000, 10002 };
		tl_rec(&t, ISC_REC_CALIBRATION, 0, 10, 10, 6, start, NULL, 0, false);
		compensation_spans(&t);
		tl_rec(&t, ISC_REC_CALIBRATION, 3500, 10, 10, 6, exit_, NULL, 0, false);
		tl_close(&t, 0, 0, 0);
		struct isc_timeline *tl = NULL;
		struct isc_analyze_calib *cals = NULL;
		size_t ncals = 0;
		cJSON *d = NULL;
		rewind(f);
		int rc = isc_timeline_open(&tl, f);
		if (!rc && prepass && !(rc = isc_analyze_calibrations(tl, &cals, &ncals)))
			rc = isc_timeline_rewind(&tl, f);
		struct isc_analyze_opts o = { .calibs = cals, .ncalibs = ncals };
		if (!rc)
			rc = isc_analyze_timeline(tl, &o, &d);
		isc_timeline_free(tl);
		fclose(f);
		ok(rc == 0 && d, "calibrated twice%s: analysis succeeds", prepass ? " (first pass)" : "");
		const cJSON *c0 = cJSON_GetArrayItem(isc_doc_get(d, "recording.calibrations"), 0);
		const cJSON *c1 = cJSON_GetArrayItem(isc_doc_get(d, "recording.calibrations"), 1);
		ok(cJSON_GetArraySize(isc_doc_get(d, "recording.calibrations")) == 2,
		   "calibrated twice: both records listed");
		if (prepass) {
			ok(ncals == 1 && cals[0].pid == 10 && cals[0].f[1] == 10000, "first pass: pid 10 at 10000 ps");
			ok(FN(d, "<module>", "self_ns") == 270 && FN(d, "<module>", "total_ns") == 930,
			   "the lower (exit) cost: main self 270 total 930 (%g %g)", FN(d, "<module>", "self_ns"),
			   FN(d, "<module>", "total_ns"));
			ok(N(d, "iterations.latency_ns_estimated.min") == 960, "the lower cost: the iteration loses 4 x 10 (%g)",
			   N(d, "iterations.latency_ns_estimated.min"));
			ok(N(d, "recording.per_event_ns") == 10, "the lower cost: per_event_ns 10 (%g)",
			   N(d, "recording.per_event_ns"));
			ok(cJSON_IsFalse(cJSON_GetObjectItem(c0, "used")), "the start record (20 ns): used false");
			ok(cJSON_IsTrue(cJSON_GetObjectItem(c1, "used")), "the exit record (10 ns): used true");
		} else {
			ok(FN(d, "<module>", "self_ns") == 240, "no first pass: the first record's 20 ns: main self 240 (%g)",
			   FN(d, "<module>", "self_ns"));
			ok(cJSON_IsTrue(cJSON_GetObjectItem(c0, "used")), "no first pass: the start record used");
			ok(cJSON_IsFalse(cJSON_GetObjectItem(c1, "used")), "no first pass: the exit record unused");
		}
		free(cals);
		cJSON_Delete(d);
	}
}

/*
 * The first pass's choice per process, from the rule (lowest nonzero
 * per_event_ps; all zero: the first record): pid 20 [0, 15000] -> 15000;
 * pid 21 [8000, 12000] -> 8000 (the earlier, lower one); pid 22 [0] -> 0.
 * Sorted by pid.
 */
static void test_calibration_choice(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 infer.py");
	const uint64_t recs[][2] = { { 21, 8000 }, { 20, 0 }, { 22, 0 }, { 20, 15000 }, { 21, 12000 } };
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		const uint64_t cal[6] = { 1, recs[i][1], 5000, 200000, 300000, 10002 };
		tl_rec(&t, ISC_REC_CALIBRATION, 100 * i, (uint32_t)recs[i][0], (uint32_t)recs[i][0], 6, cal, NULL, 0,
		       false);
	}
	tl_close(&t, 0, 0, 0);
	struct isc_timeline *tl = NULL;
	struct isc_analyze_calib *c = NULL;
	size_t n = 0;
	rewind(f);
	int rc = isc_timeline_open(&tl, f);
	if (!rc)
		rc = isc_analyze_calibrations(tl, &c, &n);
	isc_timeline_free(tl);
	fclose(f);
	ok(rc == 0 && n == 3, "first pass: three calibrated processes (%zu)", n);
	ok(n == 3 && c[0].pid == 20 && c[0].f[1] == 15000, "first pass: a 0 first record gives way to a nonzero one");
	ok(n == 3 && c[1].pid == 21 && c[1].f[1] == 8000, "first pass: a lower start record beats a higher exit one");
	ok(n == 3 && c[2].pid == 22 && c[2].f[1] == 0, "first pass: only a 0 record: it stays");
	free(c);
}

static void test_self_total(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 infer.py");
	/* main [0,1000): op A [100,400), python f [500,900) with op B [600,700) */
	tl_call(&t, 0, 10, 10, ISC_SPAN_PYTHON, S_MAIN);
	tl_leaf(&t, 100, 400, 10, 10, ISC_SPAN_OP, S_A);
	tl_call(&t, 500, 10, 10, ISC_SPAN_PYTHON, S_F);
	tl_leaf(&t, 600, 700, 10, 10, ISC_SPAN_OP, S_B);
	tl_ret(&t, 900, 10, 10);
	tl_ret(&t, 1000, 10, 10);
	cJSON *d = tl_close_analyze(&t, f);
	ok(d != NULL, "analysis of a simple timeline succeeds");
	ok(FN(d, "<module>", "self_ns") == 300 && FN(d, "<module>", "total_ns") == 1000,
	   "self = duration - children (300), total = duration (1000)");
	ok(FN(d, "crunch", "self_ns") == 300 && FN(d, "crunch", "total_ns") == 400, "nested python self/total");
	ok(FN(d, "torch.matmul", "self_ns") == 300 && FN(d, "len", "self_ns") == 100, "op self times");
	ok(FN(d, "<module>", "ops_self_ns") == 300 && FN(d, "crunch", "ops_self_ns") == 100,
	   "op time is credited to the nearest python caller");
	ok(!strcmp(isc_doc_str(fn_named(d, "len"), "kind", NULL), "op") &&
	   !strcmp(isc_doc_str(fn_named(d, "crunch"), "kind", NULL), "python"), "kinds python / op");
	ok(FN(d, "crunch", "line") == 12 && !strcmp(isc_doc_str(fn_named(d, "crunch"), "file", NULL), "hot_function.py"),
	   "file and line from the string table");
	const cJSON *first = cJSON_GetArrayItem(isc_doc_get(d, "cpu.top_functions"), 0);
	ok(N(first, "self_ns") == 300 && !strcmp(isc_doc_str(first, "name", NULL), "<module>"),
	   "sorted by self time, ties by total time");
	ok(N(d, "cpu.split.python_ns") == 600 && N(d, "cpu.split.ops_ns") == 400 &&
	   N(d, "cpu.split.off_cpu_ns") == 0 && N(d, "cpu.split.python_pct") == 60,
	   "split without samples: python 600, ops 400, off-CPU 0");
	ok(!cJSON_IsTrue(isc_doc_get(d, "cpu.split.off_cpu_measured")), "off-CPU marked as not measured");
	/* torch.matmul (module torch) is a torch op, len (builtins) other C code */
	ok(N(d, "cpu.split.torch_ops_ns") == 300 && N(d, "cpu.split.other_c_ns") == 100 &&
	   N(d, "cpu.split.torch_ops_pct") == 30 && N(d, "cpu.split.other_c_pct") == 10,
	   "split in three: torch ops 300 (30 %%), other C 100 (10 %%)");
	ok(FN(d, "crunch", "self_pct") == 30, "self_pct of traced time");
	ok(N(d, "summary.wall_ns") == 1000 && N(d, "summary.events") == 8 && N(d, "summary.processes") == 1 &&
	   N(d, "summary.threads") == 1, "summary: wall, events, processes, threads");
	ok(!strcmp(isc_doc_str(d, "verdict.class", NULL), "python_bound"), "verdict python_bound when Python leads");
	/* Python-side work: the interpreter (600) and builtins (len, 100) of 1000 */
	ok(strstr(isc_doc_str(d, "verdict.sentence", NULL),
		  "70 % of traced CPU time is Python-side work (interpreter 60 %, C builtins and other extensions 10 %)") != NULL,
	   "verdict sentence names the share: %s", isc_doc_str(d, "verdict.sentence", NULL));
	ok(N(d, "schema_version") == ISC_FINDINGS_SCHEMA_VERSION && !strcmp(isc_doc_str(d, "tool.name", NULL), "iscope-analyze"),
	   "schema_version and tool");
	ok(!strcmp(isc_doc_str(d, "environment.host", NULL), "testhost") && N(d, "environment.ncpu") == 4,
	   "environment from the header");
	cJSON_Delete(d);

	int rc;
	d = analyze_file(f, 2, &rc);
	ok(cJSON_GetArraySize(isc_doc_get(d, "cpu.top_functions")) == 2 && N(d, "cpu.functions") == 4,
	   "top_n limits the list, cpu.functions counts all");
	cJSON_Delete(d);
	fclose(f);
}

static void test_recursion(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 rec.py");
	/* fact -> fact -> fact: [0,900) [100,800) [200,700) */
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_FACT);
	tl_call(&t, 100, 1, 1, ISC_SPAN_PYTHON, S_FACT);
	tl_leaf(&t, 200, 700, 1, 1, ISC_SPAN_PYTHON, S_FACT);
	tl_ret(&t, 800, 1, 1);
	tl_ret(&t, 900, 1, 1);
	/* mutual: g [1000,2000) -> fact [1100,1900) -> g [1200,1800);
	 * meanwhile fact [1150,1250) on thread 2: outermost there, so it counts */
	tl_call(&t, 1000, 1, 1, ISC_SPAN_PYTHON, S_G);
	tl_call(&t, 1100, 1, 1, ISC_SPAN_PYTHON, S_FACT);
	tl_call(&t, 1150, 1, 2, ISC_SPAN_PYTHON, S_FACT);
	tl_call(&t, 1200, 1, 1, ISC_SPAN_PYTHON, S_G);
	tl_ret(&t, 1250, 1, 2);
	tl_ret(&t, 1800, 1, 1);
	tl_ret(&t, 1900, 1, 1);
	tl_ret(&t, 2000, 1, 1);
	cJSON *d = tl_close_analyze(&t, f);
	ok(FN(d, "fact", "calls") == 5, "recursive calls all counted");
	ok(FN(d, "fact", "total_ns") == 900 + 800 + 100, "recursion counted once in total_ns, per thread (got %g)",
	   FN(d, "fact", "total_ns"));
	ok(FN(d, "g", "total_ns") == 1000, "mutual recursion: g's total is its outermost activation");
	ok(FN(d, "fact", "self_ns") == 900 + 200 + 100, "self time sums every activation");
	ok(FN(d, "g", "self_ns") == 200 + 600, "self of g");
	cJSON_Delete(d);
	fclose(f);
}

static void test_scopes_and_iterations(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 serve.py");
	/* main [0, 100000): scope step x5 with durations 1000 (warm-up), 100, 200, 300, 400 */
	tl_call(&t, 0, 5, 5, ISC_SPAN_PYTHON, S_MAIN);
	uint64_t ts = 10, durs[5] = { 1000, 100, 200, 300, 400 };
	for (int i = 0; i < 5; i++) {
		tl_call(&t, ts, 5, 5, ISC_SPAN_SCOPE, S_STEP);
		tl_leaf(&t, ts + 10, ts + 60, 5, 5, ISC_SPAN_OP, S_X);
		tl_ret(&t, ts + durs[i], 5, 5);
		ts += durs[i] + 10;
	}
	/* scope request x2, longer in total but rarer */
	for (int i = 0; i < 2; i++) {
		tl_leaf(&t, ts, ts + 20000, 5, 5, ISC_SPAN_SCOPE, S_REQ);
		ts += 20010;
	}
	tl_ret(&t, 100000, 5, 5);
	/* an outermost scope on another thread: its uncovered time is interpreter time */
	tl_call(&t, 200000, 5, 6, ISC_SPAN_SCOPE, S_REQ);
	tl_leaf(&t, 200100, 200400, 5, 6, ISC_SPAN_OP, S_X);
	tl_ret(&t, 201000, 5, 6);
	cJSON *d = tl_close_analyze(&t, f);
	ok(!strcmp(isc_doc_str(d, "iterations.name", NULL), "step"), "iteration scope = most frequent scope name");
	ok(N(d, "iterations.count") == 5, "count = all iterations");
	ok(N(d, "iterations.warmup_excluded") == 1 && N(d, "iterations.samples") == 4, "first iteration is warm-up");
	ok(cJSON_IsTrue(isc_doc_get(d, "run.too_short")) &&
		   !strcmp(isc_doc_str(d, "run.too_short_reason", ""), "4 steady-state iterations (fewer than 5)"),
	   "4 steady-state iterations: too short, said (%s)", isc_doc_str(d, "run.too_short_reason", "(null)"));
	ok(N(d, "iterations.latency_ns.p50") == 200 && N(d, "iterations.latency_ns.p90") == 400 &&
	   N(d, "iterations.latency_ns.p99") == 400, "nearest-rank p50/p90/p99 = 200/400/400");
	ok(N(d, "iterations.latency_ns.mean") == 250 && N(d, "iterations.latency_ns.min") == 100 &&
	   N(d, "iterations.latency_ns.max") == 400, "mean/min/max without warm-up");
	ok(cJSON_IsNull(isc_doc_get(d, "iterations.latency_ci95_ns.p50.low")),
	   "CI bound is null when 4 samples cannot give 95 %%");
	ok(cJSON_GetArraySize(isc_doc_get(d, "iterations.spans")) == 5 && span_is(d, 0, 10, 1010) &&
	   span_is(d, 1, 1020, 1120) && span_is(d, 4, 1650, 2050) && N(d, "iterations.warmup_spans") == 1 &&
	   cJSON_IsFalse(isc_doc_get(d, "iterations.spans_truncated")),
	   "spans: warm-up and steady iterations, relative times, the warm-up one first");
	const cJSON *hc = isc_doc_get(d, "iterations.histogram.counts");
	ok(cJSON_GetArraySize(hc) == 20 && cJSON_GetArraySize(isc_doc_get(d, "iterations.histogram.edges_ns")) == 21 &&
	   NA(d, "iterations.histogram.edges_ns", 0) == 100 && NA(d, "iterations.histogram.edges_ns", 1) == 115 &&
	   NA(d, "iterations.histogram.edges_ns", 20) == 400,
	   "histogram: 20 linear bins from min to max (edges 100, 115, ..., 400)");
	ok(NA(d, "iterations.histogram.counts", 0) == 1 && NA(d, "iterations.histogram.counts", 6) == 1 &&
	   NA(d, "iterations.histogram.counts", 13) == 1 && NA(d, "iterations.histogram.counts", 19) == 1,
	   "histogram: 100, 200, 300, 400 fall in bins 0, 6, 13, 19");
	ok(cJSON_IsNull(isc_doc_get(d, "iterations.dataloader")), "no DataLoader: dataloader null");
	/* scope frames are transparent: main's self = 100000 - ops (5 x 50) */
	ok(FN(d, "<module>", "self_ns") == 100000 - 250, "scope spans do not take self time from their caller");
	const cJSON *in = isc_doc_get(d, "cpu.top_functions_in_scopes");
	const cJSON *in0 = cJSON_GetArrayItem(in, 0);
	ok(cJSON_GetArraySize(in) == 1 && !strcmp(isc_doc_str(in0, "name", NULL), "torch.relu") && N(in0, "self_ns") == 550 &&
	   N(in0, "calls") == 6 && N(in0, "self_pct") == 100 && N(d, "cpu.scoped_ns") == 550,
	   "functions inside scopes: only what ran while a scope was open");
	ok(N(d, "cpu.split.python_ns") == 100000 - 250 + 700 && N(d, "cpu.split.ops_ns") == 250 + 300,
	   "outermost scope's uncovered time counts as Python time");
	cJSON_Delete(d);
	fclose(f);

	/* two processes x 3 iterations: one warm-up each; a single iteration is kept */
	f = tmpfile();
	tl_open_common(&t, f, "python3 mp.py");
	ts = 0;
	for (uint64_t i = 0; i < 3; i++) {
		tl_call(&t, ts, 7, 7, ISC_SPAN_SCOPE, S_STEP);
		tl_call(&t, ts + 1, 8, 8, ISC_SPAN_SCOPE, S_STEP);
		tl_ret(&t, ts + 100 * (i + 1), 7, 7);
		tl_ret(&t, ts + 1 + 1000 * (i + 1), 8, 8);
		ts += 5000;
	}
	d = tl_close_analyze(&t, f);
	ok(N(d, "iterations.count") == 6 && N(d, "iterations.warmup_excluded") == 2,
	   "warm-up: first iteration of each process");
	ok(N(d, "iterations.latency_ns.min") == 200 && N(d, "iterations.latency_ns.max") == 3000,
	   "the excluded ones are the earliest of each process");
	ok(cJSON_GetArraySize(isc_doc_get(d, "iterations.spans")) == 6 && N(d, "iterations.warmup_spans") == 2 &&
	   span_is(d, 0, 0, 100) && span_is(d, 1, 1, 1001) && span_is(d, 2, 5000, 5200) && span_is(d, 3, 5001, 7001),
	   "two processes: both warm-up spans lead, then the steady ones by start");
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	tl_open_common(&t, f, "python3 one.py");
	tl_leaf(&t, 0, 500, 7, 7, ISC_SPAN_SCOPE, S_STEP);
	d = tl_close_analyze(&t, f);
	ok(N(d, "iterations.count") == 1 && N(d, "iterations.warmup_excluded") == 0 &&
	   N(d, "iterations.latency_ns.p50") == 500, "a single iteration is not warm-up");
	ok(cJSON_GetArraySize(isc_doc_get(d, "iterations.histogram.counts")) == 1 &&
	   NA(d, "iterations.histogram.counts", 0) == 1 && NA(d, "iterations.histogram.edges_ns", 0) == 500 &&
	   NA(d, "iterations.histogram.edges_ns", 1) == 500, "min == max: one bin");
	cJSON_Delete(d);
	fclose(f);

	f = tmpfile();
	tl_open_common(&t, f, "python3 none.py");
	tl_leaf(&t, 0, 500, 7, 7, ISC_SPAN_PYTHON, S_MAIN);
	d = tl_close_analyze(&t, f);
	ok(N(d, "iterations.count") == 0 && cJSON_IsNull(isc_doc_get(d, "iterations.name")) &&
	   cJSON_IsNull(isc_doc_get(d, "iterations.latency_ns.p50")), "no scopes: count 0, nulls");
	ok(cJSON_IsNull(isc_doc_get(d, "iterations.histogram")) &&
	   cJSON_GetArraySize(isc_doc_get(d, "iterations.spans")) == 0 && N(d, "iterations.warmup_spans") == 0,
	   "no iterations: histogram null, spans empty");
	cJSON_Delete(d);
	fclose(f);

	/* more iterations than spans keeps: the first 1000 */
	f = tmpfile();
	tl_open_common(&t, f, "python3 many.py");
	for (uint64_t i = 0; i < 1100; i++)
		tl_leaf(&t, 100 * i, 100 * i + 50, 7, 7, ISC_SPAN_SCOPE, S_STEP);
	d = tl_close_analyze(&t, f);
	ok(cJSON_GetArraySize(isc_doc_get(d, "iterations.spans")) == 1000 &&
	   cJSON_IsTrue(isc_doc_get(d, "iterations.spans_truncated")) && span_is(d, 999, 99900, 99950),
	   "spans: at most 1000, the first ones, truncation flagged");
	double hsum = 0;
	for (int i = 0; i < cJSON_GetArraySize(isc_doc_get(d, "iterations.histogram.counts")); i++)
		hsum += NA(d, "iterations.histogram.counts", i);
	ok(hsum == 1099 && hsum == N(d, "iterations.samples"), "histogram counts sum to samples (%g)", hsum);
	cJSON_Delete(d);
	fclose(f);
}

/* Five steady-state iterations (six, the first a warm-up) of 30 ms, 25 ms of op each: not too short. */
static void test_five_iterations(void)
{
	FILE *f = tmpfile();
	struct tl t;
	const uint64_t MS = 1000000;
	tl_open_common(&t, f, "python3 serve.py");
	tl_call(&t, 0, 5, 5, ISC_SPAN_PYTHON, S_MAIN);
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t b = 10 * MS + i * 31 * MS;
		tl_call(&t, b, 5, 5, ISC_SPAN_SCOPE, S_STEP);
		tl_leaf(&t, b + MS, b + 26 * MS, 5, 5, ISC_SPAN_OP, S_X);
		tl_ret(&t, b + 30 * MS, 5, 5);
	}
	tl_ret(&t, 200 * MS, 5, 5);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "iterations.count") == 6 && N(d, "iterations.samples") == 5, "6 iterations, 5 after the warm-up");
	ok(N(d, "cpu.split.traced_ns") >= 50 * MS, "premise: 200 ms traced, above the 50 ms of too_short (%g)",
	   N(d, "cpu.split.traced_ns"));
	ok(cJSON_IsFalse(isc_doc_get(d, "run.too_short")) && cJSON_IsNull(isc_doc_get(d, "run.too_short_reason")),
	   "5 steady-state iterations (the least): not too short (%s)", isc_doc_str(d, "run.too_short_reason", "null"));
	cJSON_Delete(d);
	fclose(f);
}

/*
 * memory.composition from the smaps_rollup record at the end (SMAPS: pid
 * rss pss swap anon): RSS 500 MiB, PSS 490, swap 1, anonymous 450; the
 * file-backed part is RSS less anonymous, 50 MiB.
 */
static void test_composition(void)
{
	FILE *f = tmpfile();
	struct tl t;
	const uint64_t MS = 1000000, MB = 1048576;
	tl_open_common(&t, f, "python3 hold.py");
	tl_leaf(&t, 0, 900 * MS, 30, 30, ISC_SPAN_PYTHON, S_MAIN);
	for (uint64_t i = 0; i < 9; i++)
		tl_proc_sample(&t, i * 100 * MS + 1, 30, 500 * MB, 0, 0);
	uint64_t sm[5] = { 30, 500 * MB, 490 * MB, 1 * MB, 450 * MB };
	tl_rec(&t, ISC_REC_SMAPS, 850 * MS, 0, 0, 5, sm, NULL, 0, false);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "memory.composition.rss_bytes") == 500 * MB && N(d, "memory.composition.pss_bytes") == 490 * MB &&
		   N(d, "memory.composition.anon_bytes") == 450 * MB && N(d, "memory.composition.swap_bytes") == 1 * MB,
	   "composition: RSS, PSS, anonymous and swap of the smaps record");
	ok(N(d, "memory.composition.file_bytes") == 50 * MB, "composition: file-backed = RSS - anonymous = 50 MiB (got %g MiB)",
	   N(d, "memory.composition.file_bytes") / MB);
	cJSON_Delete(d);
	fclose(f);
}

static void test_histogram(void)
{
	uint64_t x[100], e[21], c[20];
	for (int i = 0; i < 100; i++)
		x[i] = (uint64_t)i;
	unsigned k = isc_histogram_linear(x, 100, 20, e, c);
	bool exact = k == 20 && e[0] == 0 && e[20] == 99;
	for (unsigned b = 0; b < k && exact; b++) {
		uint64_t want = 0;
		for (int i = 0; i < 100; i++)
			want += x[i] >= e[b] && (x[i] < e[b + 1] || (b == k - 1 && x[i] == e[k]));
		exact = c[b] == want && e[b] <= e[b + 1];
	}
	ok(exact, "each bin holds exactly the values between its edges");
	uint64_t big[2] = { 0, UINT64_MAX };
	k = isc_histogram_linear(big, 2, 20, e, c);
	ok(k == 20 && e[20] == UINT64_MAX && e[1] == UINT64_MAX / 20 + 1 && c[0] == 1 && c[19] == 1,
	   "the whole u64 range without overflow");
	uint64_t same[3] = { 7, 7, 7 };
	ok(isc_histogram_linear(same, 3, 20, e, c) == 1 && e[0] == 7 && e[1] == 7 && c[0] == 3, "equal values: one bin");
}

static void test_dataloader(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 loader.py");
	/* DataLoader [0,100) (a nested __next__ inside), step [100,200) warm-up,
	 * DL [200,300), step [300,500), DL [500,600), step [600,800), DL [800,1000);
	 * on thread 2, four Kineto enumerate(DataLoader) annotations of 10 ns in [510,580) */
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_DL);
	tl_leaf(&t, 10, 90, 1, 1, ISC_SPAN_PYTHON, S_DL);
	tl_ret(&t, 100, 1, 1);
	tl_leaf(&t, 100, 200, 1, 1, ISC_SPAN_SCOPE, S_STEP);
	tl_leaf(&t, 200, 300, 1, 1, ISC_SPAN_PYTHON, S_DL);
	tl_leaf(&t, 300, 500, 1, 1, ISC_SPAN_SCOPE, S_STEP);
	tl_call(&t, 500, 1, 1, ISC_SPAN_PYTHON, S_DL);
	for (uint64_t b = 510; b < 590; b += 20)
		tl_leaf(&t, b, b + 10, 1, 2, ISC_SPAN_SCOPE, S_DLANN);
	tl_ret(&t, 600, 1, 1);
	tl_leaf(&t, 600, 800, 1, 1, ISC_SPAN_SCOPE, S_STEP);
	tl_leaf(&t, 800, 1000, 1, 1, ISC_SPAN_PYTHON, S_DL);
	tl_ret(&t, 1000, 1, 1);
	cJSON *d = tl_close_analyze(&t, f);
	ok(!strcmp(isc_doc_str(d, "iterations.name", NULL), "step") && N(d, "iterations.count") == 3,
	   "DataLoader annotations are never the iterations, even when more frequent");
	ok(N(d, "iterations.dataloader.total_ns") == 540 && N(d, "iterations.dataloader.calls") == 8,
	   "outermost DataLoader spans: 4 x __next__ (500 ns) + 4 annotations (40 ns)");
	ok(N(d, "iterations.dataloader.pct_of_step") == 28,
	   "pct_of_step: 140 ns inside the steady period [300, 800) = 28 %% (got %g)",
	   N(d, "iterations.dataloader.pct_of_step"));
	ok(!strcmp(isc_doc_str(d, "iterations.dataloader.function.name", NULL), "_BaseDataLoaderIter.__next__") &&
	   N(d, "iterations.dataloader.function.line") == 623, "the DataLoader function with the most time");
	cJSON_Delete(d);
	fclose(f);
}

static void test_cpu_samples(void)
{
	FILE *f = tmpfile();
	struct tl t;
	const uint64_t MS = 1000000, MB = 1048576;
	tl_open_common(&t, f, "python3 threads.py");
	/* pid 1: <module> -> time.sleep [50, 250) ms on tid 1; tid 2, 3 sampler-only.
	 * pid 2: crunch [0, 300) ms on its main thread.  pid 3: g on tid 4 only. */
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 0, 2, 2, ISC_SPAN_PYTHON, S_F);
	tl_call(&t, 0, 3, 4, ISC_SPAN_PYTHON, S_G);
	/* round 1: R S R -> 2 */
	tl_thread_state(&t, 0, 1, 1, 'R');
	tl_thread_state(&t, 0, 1, 2, 'S');
	tl_thread_state(&t, 0, 2, 2, 'R');
	tl_proc_cpu(&t, 0, 1, 0, 10 * MB, 3);
	tl_proc_cpu(&t, 0, 2, 0, 1 * MB, 1);
	tl_proc_cpu(&t, 0, 3, 0, 2 * MB, 1);
	tl_call(&t, 50 * MS, 1, 1, ISC_SPAN_OP, S_SLEEP);
	/* round 2: S R D -> 1 */
	tl_thread_state(&t, 100 * MS, 1, 1, 'S');
	tl_thread_state(&t, 100 * MS, 1, 2, 'R');
	tl_thread_state(&t, 100 * MS, 2, 2, 'D');
	tl_proc_cpu(&t, 100 * MS, 1, 50 * MS, 30 * MB, 3);
	tl_proc_cpu(&t, 100 * MS, 2, 100 * MS, 6 * MB, 1);
	tl_proc_cpu(&t, 100 * MS, 3, 0, 9 * MB, 1);
	/* round 3, spread over 0.5 ms: S R R R -> 3 */
	tl_thread_state(&t, 200 * MS, 1, 1, 'S');
	tl_thread_state(&t, 200 * MS + 500000, 1, 2, 'R');
	tl_thread_state(&t, 200 * MS + 500000, 2, 2, 'R');
	tl_thread_state(&t, 200 * MS + 500000, 1, 3, 'R');
	tl_proc_cpu(&t, 200 * MS + 500000, 1, 150 * MS + 500000, 25 * MB, 3);
	tl_proc_cpu(&t, 200 * MS + 500000, 2, 200 * MS + 500000, 6 * MB, 1);
	tl_proc_cpu(&t, 200 * MS + 500000, 3, 0, 9 * MB, 1);
	tl_ret(&t, 250 * MS, 1, 1);
	/* rounds 4 and 5: one thread twice at the same time -> two rounds of 1 */
	tl_thread_state(&t, 260 * MS, 1, 2, 'R');
	tl_thread_state(&t, 260 * MS, 1, 2, 'R');
	tl_ret(&t, 300 * MS, 1, 1);
	tl_ret(&t, 300 * MS, 2, 2);
	tl_ret(&t, 300 * MS, 3, 4);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "cpu.runnable_threads_mean") == 1.6 && N(d, "cpu.runnable_threads_max") == 3,
	   "runnable threads per round: 2, 1, 3, 1, 1 (mean %g, max %g)", N(d, "cpu.runnable_threads_mean"),
	   N(d, "cpu.runnable_threads_max"));
	ok(N(d, "cpu.threads_max") == 3, "threads_max: the most threads of one process");
	ok(N(d, "cpu.blocked_ns") == 300 * MS, "blocked: 2 x 100 ms asleep + 100 ms in D (got %g)", N(d, "cpu.blocked_ns"));
	ok(N(d, "cpu.state_samples") == 4,
	   "state samples: tid 1 at 100 and 200 ms, pid 2 at 100 and 200.5 ms (not first samples, not outside spans; "
	   "got %g)", N(d, "cpu.state_samples"));
	const cJSON *o0 = cJSON_GetArrayItem(isc_doc_get(d, "cpu.off_cpu_top"), 0);
	const cJSON *o1 = cJSON_GetArrayItem(isc_doc_get(d, "cpu.off_cpu_top"), 1);
	ok(cJSON_GetArraySize(isc_doc_get(d, "cpu.off_cpu_top")) == 2 && !strcmp(isc_doc_str(o0, "name", NULL), "time.sleep") &&
	   !strcmp(isc_doc_str(o0, "kind", NULL), "op") && N(o0, "blocked_ns") == 200 * MS &&
	   !strcmp(isc_doc_str(o0, "python.name", NULL), "<module>") && N(o0, "python.line") == 1,
	   "off-CPU top: time.sleep 200 ms, called from <module>");
	ok(!strcmp(isc_doc_str(o1, "name", NULL), "crunch") && !strcmp(isc_doc_str(o1, "kind", NULL), "python") &&
	   N(o1, "blocked_ns") == 100 * MS && !strcmp(isc_doc_str(o1, "python.name", NULL), "crunch"),
	   "a Python function blocked itself: it is its own Python function");
	const cJSON *g0 = cJSON_GetArrayItem(isc_doc_get(d, "memory.growth_top"), 0);
	const cJSON *g1 = cJSON_GetArrayItem(isc_doc_get(d, "memory.growth_top"), 1);
	const cJSON *g2 = cJSON_GetArrayItem(isc_doc_get(d, "memory.growth_top"), 2);
	ok(cJSON_GetArraySize(isc_doc_get(d, "memory.growth_top")) == 3 && !strcmp(isc_doc_str(g0, "name", NULL), "<module>") &&
	   N(g0, "growth_bytes") == 20 * MB && !strcmp(isc_doc_str(g0, "file", NULL), "infer.py"),
	   "RSS growth charged to the innermost Python function of the main thread (op frames skipped)");
	ok(!strcmp(isc_doc_str(g1, "name", NULL), "g") && N(g1, "growth_bytes") == 7 * MB &&
	   !strcmp(isc_doc_str(g2, "name", NULL), "crunch") && N(g2, "growth_bytes") == 5 * MB,
	   "no traced main thread: the busiest traced thread; shrinking is not charged");
	/* 300 ms do not fit 256 buckets of 1 ms: bucket i is [2i, 2i + 2) ms */
	ok(N(d, "timeseries.bucket_ns") == 2 * MS && N(d, "timeseries.buckets") == 150 && N(d, "timeseries.t0_ns") == 0 &&
	   N(d, "timeseries.ncpu") == 4, "timeseries: 150 buckets of 2 ms");
	ok(NA(d, "timeseries.cpu_cores", 25) == 1.5 && NA(d, "timeseries.cpu_cores", 75) == 2 &&
	   NA(d, "timeseries.cpu_cores", 125) == 0,
	   "cpu_cores: utime deltas / interval, summed over processes (%g %g %g)", NA(d, "timeseries.cpu_cores", 25),
	   NA(d, "timeseries.cpu_cores", 75), NA(d, "timeseries.cpu_cores", 125));
	ok(NA(d, "timeseries.rss_bytes", 0) == 13 * MB && NA(d, "timeseries.rss_bytes", 50) == 45 * MB &&
	   NA(d, "timeseries.rss_bytes", 100) == 40 * MB && cJSON_IsNull(cJSON_GetArrayItem(
		   isc_doc_get(d, "timeseries.rss_bytes"), 25)),
	   "rss_bytes: the sum over live processes after each sample; null between samples");
	ok(NA(d, "timeseries.runnable_threads", 0) == 2 && NA(d, "timeseries.runnable_threads", 50) == 1 &&
	   NA(d, "timeseries.runnable_threads", 100) == 3 && NA(d, "timeseries.runnable_threads", 130) == 1 &&
	   cJSON_IsNull(cJSON_GetArrayItem(isc_doc_get(d, "timeseries.runnable_threads"), 75)),
	   "runnable_threads: one point per round, at its first sample");
	cJSON_Delete(d);
	fclose(f);

	/* a process said to use more cores than the machine has: capped at ncpu */
	f = tmpfile();
	tl_open(&t, f, "python3 ticks.py");
	tl_proc_cpu(&t, 0, 1, 0, MB, 1);
	tl_proc_cpu(&t, 10 * MS, 1, 60 * MS, MB, 1);
	tl_proc_cpu(&t, 20 * MS, 1, 60 * MS, MB, 1);
	d = tl_close_analyze(&t, f);
	ok(NA(d, "timeseries.cpu_cores", 5) == 4 && NA(d, "timeseries.cpu_cores", 15) == 0,
	   "cpu_cores is capped at ncpu (clock-tick rounding)");
	ok(cJSON_IsNull(isc_doc_get(d, "cpu.runnable_threads_mean")) && cJSON_IsNull(isc_doc_get(d, "cpu.blocked_ns")) &&
	   cJSON_IsNull(isc_doc_get(d, "cpu.state_samples")) &&
	   N(d, "cpu.threads_max") == 1, "no thread samples: runnable and blocked are null");
	cJSON_Delete(d);
	fclose(f);
}

static void test_quantiles(void)
{
	uint64_t x[100];
	size_t lo, hi;
	for (int i = 0; i < 100; i++)
		x[i] = (uint64_t)i + 1;
	ok(isc_quantile_sorted(x, 100, .5) == 50 && isc_quantile_sorted(x, 100, .99) == 99 &&
	   isc_quantile_sorted(x, 1, .99) == 1 && isc_quantile_sorted(x, 100, 1) == 100,
	   "nearest-rank quantiles");
	isc_quantile_ci(100, .5, .95, &lo, &hi);
	ok(lo == 40 && hi == 61, "CI ranks of the median, n=100: 40..61 (got %zu..%zu)", lo, hi);
	isc_quantile_ci(100, .9, .95, &lo, &hi);
	ok(lo == 84 && hi == 96, "CI ranks of p90, n=100: 84..96 (got %zu..%zu)", lo, hi);
	isc_quantile_ci(100, .99, .95, &lo, &hi);
	ok(lo == 97 && hi == 0, "p99 upper bound needs more than 100 samples");
	isc_quantile_ci(1000, .99, .95, &lo, &hi);
	ok(lo == 983 && hi == 997, "CI ranks of p99, n=1000: 983..997 (got %zu..%zu)", lo, hi);
	isc_quantile_ci(5, .5, .95, &lo, &hi);
	ok(lo == 0 && hi == 0, "n=5 cannot bound the median at 95 %%");
	isc_quantile_ci(6, .5, .95, &lo, &hi);
	ok(lo == 1 && hi == 6, "n=6: min..max bound the median");
}

static void test_split_offcpu(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 io.py");
	/* 10 s main; op time.sleep [2 s, 8 s) off CPU; CPU 4 s over the window */
	const uint64_t S = 1000000000ull;
	tl_call(&t, 0, 3, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_thread_sample(&t, 0, 3, 3, 0);
	tl_leaf(&t, 2 * S, 8 * S, 3, 3, ISC_SPAN_OP, S_SLEEP);
	tl_thread_sample(&t, 10 * S, 3, 3, 4 * S);
	tl_ret(&t, 10 * S, 3, 3);
	/* a pool thread seen only by the sampler */
	uint64_t nf[2] = { 3, 4 };
	tl_rec(&t, ISC_REC_THREAD_NAME, 10 * S, 0, 0, 2, nf, "pool-1", 6, false);
	tl_thread_sample(&t, 10 * S, 3, 4, 3 * S);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "cpu.split.off_cpu_ns") == 6 * S && N(d, "cpu.split.ops_ns") == 0 && N(d, "cpu.split.python_ns") == 4 * S,
	   "blocked time is taken from op time: off 6 s, ops 0, python 4 s");
	ok(cJSON_IsTrue(isc_doc_get(d, "cpu.split.off_cpu_measured")) && N(d, "cpu.split.off_cpu_pct") == 60,
	   "off-CPU measured, 60 %%");
	ok(!strcmp(isc_doc_str(d, "verdict.class", NULL), "io_wait"), "verdict io_wait when off-CPU leads");
	const cJSON *ths = isc_doc_get(cJSON_GetArrayItem(isc_doc_get(d, "processes"), 0), "threads");
	const cJSON *t0 = cJSON_GetArrayItem(ths, 0), *t1 = cJSON_GetArrayItem(ths, 1);
	ok(cJSON_GetArraySize(ths) == 2 && N(t0, "tid") == 3 && cJSON_IsTrue(isc_doc_get(t0, "traced")) &&
	   N(t0, "cpu_ns") == 4 * S, "main thread first, traced, cpu_ns from its last sample");
	ok(N(t1, "tid") == 4 && cJSON_IsFalse(isc_doc_get(t1, "traced")) && N(t1, "cpu_ns") == 3 * S &&
	   !strcmp(isc_doc_str(t1, "name", NULL), "pool-1"), "sampler-only thread listed with its comm name");
	cJSON_Delete(d);
	fclose(f);

	/* CPU below the Python share: the excess off-CPU comes from Python time */
	f = tmpfile();
	tl_open_common(&t, f, "python3 gil.py");
	tl_call(&t, 0, 3, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_thread_sample(&t, 0, 3, 3, 0);
	tl_leaf(&t, 1 * S, 2 * S, 3, 3, ISC_SPAN_OP, S_A);
	tl_thread_sample(&t, 10 * S, 3, 3, 5 * S);
	tl_ret(&t, 10 * S, 3, 3);
	d = tl_close_analyze(&t, f);
	ok(N(d, "cpu.split.off_cpu_ns") == 5 * S && N(d, "cpu.split.ops_ns") == 0 &&
	   N(d, "cpu.split.python_ns") == 5 * S && N(d, "cpu.split.off_cpu_from_python_ns") == 4 * S,
	   "off-CPU beyond op time is taken from Python time");
	cJSON_Delete(d);
	fclose(f);

	/* off-CPU leads and the threads were preempted, not blocked: contention */
	f = tmpfile();
	tl_open_common(&t, f, "python3 busy.py");
	tl_call(&t, 0, 3, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_thread_sample_sw(&t, 0, 3, 3, 0, 10, 100);
	tl_thread_sample_sw(&t, 10 * S, 3, 3, 3 * S, 12, 900);
	tl_ret(&t, 10 * S, 3, 3);
	d = tl_close_analyze(&t, f);
	ok(!strcmp(isc_doc_str(d, "verdict.class", NULL), "thread_contention") &&
	   N(d, "cpu.split.involuntary_switches") == 800 && N(d, "cpu.split.voluntary_switches") == 2,
	   "off-CPU with mostly involuntary switches: thread_contention (%s)", isc_doc_str(d, "verdict.sentence", NULL));
	cJSON_Delete(d);
	fclose(f);

	/* ops lead, without thread samples: whether the op time was on-CPU is
	 * not known, so op_compute_bound is not chosen (issue 18) */
	f = tmpfile();
	tl_open_common(&t, f, "python3 mm.py");
	tl_call(&t, 0, 3, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 10, 3, 3, ISC_SPAN_PYTHON, S_F);
	tl_leaf(&t, 20, 900, 3, 3, ISC_SPAN_OP, S_A);
	tl_ret(&t, 950, 3, 3);
	tl_ret(&t, 1000, 3, 3);
	d = tl_close_analyze(&t, f);
	ok(strcmp(isc_doc_str(d, "verdict.class", NULL), "op_compute_bound") &&
	   !strcmp(isc_doc_str(cJSON_GetArrayItem(isc_doc_get(d, "verdict.missing"), 0), "class", NULL), "op_compute_bound") &&
	   strstr(isc_doc_str(cJSON_GetArrayItem(isc_doc_get(d, "verdict.missing"), 0), "how", NULL), "--sample-hz"),
	   "no thread samples: op_compute_bound not chosen, verdict.missing says why and how (%s)",
	   isc_doc_str(d, "verdict.class", NULL));
	cJSON_Delete(d);
	fclose(f);

	/* ops lead, on-CPU by the thread samples */
	f = tmpfile();
	tl_open_common(&t, f, "python3 mm.py");
	tl_call(&t, 0, 3, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_thread_sample(&t, 5, 3, 3, 0);
	tl_call(&t, 10, 3, 3, ISC_SPAN_PYTHON, S_F);
	tl_leaf(&t, 20, 900, 3, 3, ISC_SPAN_OP, S_A);
	tl_ret(&t, 950, 3, 3);
	tl_thread_sample(&t, 990, 3, 3, 985);
	tl_ret(&t, 1000, 3, 3);
	d = tl_close_analyze(&t, f);
	ok(!strcmp(isc_doc_str(d, "verdict.class", NULL), "op_compute_bound"), "verdict op_compute_bound when ops lead (%s)",
	   isc_doc_str(d, "verdict.class", NULL));
	ok(!strcmp(isc_doc_str(cJSON_GetArrayItem(isc_doc_get(d, "cpu.top_op_callers"), 0), "name", NULL), "crunch"),
	   "top_op_callers names the Python function calling the ops");
	ok(strstr(isc_doc_str(d, "verdict.sentence", NULL), "called mostly from crunch (hot_function.py:12)") != NULL,
	   "sentence: %s", isc_doc_str(d, "verdict.sentence", NULL));
	cJSON_Delete(d);
	fclose(f);
}

static void test_memory_processes(void)
{
	FILE *f = tmpfile();
	struct tl t;
	const uint64_t S = 1000000000ull, MB = 1048576;
	tl_open_common(&t, f, "python3 grow.py");
	uint8_t cmd[] = "python3\0infer.py\0--n\0003\0";
	uint64_t pi[2] = { 20, 1 };
	tl_rec(&t, ISC_REC_PROC_INFO, 0, 0, 0, 2, pi, cmd, sizeof(cmd) - 1, true);
	tl_call(&t, 0, 20, 20, ISC_SPAN_PYTHON, S_MAIN);
	/* 10 s: 500 MB spike in the first second, then 100 MB + 2 MB/s; a second process at 50 MB */
	for (uint64_t ms = 0; ms <= 10000; ms += 100) {
		uint64_t ts = ms * 1000000;
		uint64_t rss = ms < 1000 ? 500 * MB : 100 * MB + 2 * MB * ms / 1000;
		tl_proc_sample(&t, ts, 20, rss, ms / 10, ms / 100);
		tl_proc_sample(&t, ts + 1, 21, 50 * MB, 0, 0);
	}
	tl_ret(&t, 10 * S + 5, 20, 20);
	uint64_t ex[3] = { 21, isc_zigzag(3), 0 };
	tl_rec(&t, ISC_REC_PROC_EXIT, 10 * S + 10, 0, 0, 3, ex, NULL, 0, false);
	uint64_t mi[4] = { 8000 * MB, 4000 * MB, 1000 * MB, 900 * MB };
	tl_rec(&t, ISC_REC_MEMINFO, 10 * S + 20, 0, 0, 4, mi, NULL, 0, false);
	uint64_t ps[4] = { 1, 100, 50, 1234 };
	tl_rec(&t, ISC_REC_PRESSURE, 10 * S + 30, 0, 0, 4, ps, NULL, 0, false);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "memory.rss_peak_bytes") == 550 * MB, "RSS peak is the peak of the processes' sum");
	double slope = N(d, "memory.rss_growth_bytes_per_s");
	ok(fabs(slope - 2.0 * MB) < 0.01 * MB, "RSS slope after the first 10 %% = 2 MiB/s (got %.0f)", slope);
	ok(N(d, "memory.swap_used_bytes_max") == 100 * MB && N(d, "memory.pressure.memory.some_avg10_max") == 12.34,
	   "swap used and memory pressure");
	ok(cJSON_IsNull(isc_doc_get(d, "memory.pressure.cpu.some_avg10_max")), "missing pressure is null");
	const cJSON *p0 = cJSON_GetArrayItem(isc_doc_get(d, "processes"), 0);
	const cJSON *p1 = cJSON_GetArrayItem(isc_doc_get(d, "processes"), 1);
	ok(N(p0, "pid") == 20 && N(p0, "ppid") == 1 && !strcmp(isc_doc_str(p0, "command", NULL), "python3 infer.py --n 3"),
	   "process command from PROC_INFO (NULs -> spaces): %s", isc_doc_str(p0, "command", NULL));
	ok(N(p0, "context_switches.voluntary_per_s") == 100 && N(p0, "context_switches.involuntary_per_s") == 10,
	   "per-process context switch rates");
	ok(N(d, "cpu.context_switches.voluntary_per_s") == 100, "total context switch rate");
	ok(N(p1, "exit_status") == 3 && !strcmp(isc_doc_str(p1, "exit_how", NULL), "exited") &&
	   cJSON_IsNull(isc_doc_get(p0, "exit_status")), "exit status from PROC_EXIT, null when unknown");
	ok(N(d, "memory.major_faults") == 14 && N(d, "memory.minor_faults") == 2000, "faults summed over processes");
	ok(cJSON_IsArray(isc_doc_get(d, "findings")), "findings is an array");
	cJSON_Delete(d);
	fclose(f);

	/* steady-state growth: between the warm-up iteration's end and the last iteration's end */
	f = tmpfile();
	tl_open_common(&t, f, "python3 leak.py");
	tl_call(&t, 0, 30, 30, ISC_SPAN_PYTHON, S_MAIN);
	for (uint64_t ms = 0, it = 1; ms <= 10000; ms += 50) {
		uint64_t ts = ms * 1000000;
		if (ms == it * 1000 && it <= 9) {
			if (it > 1)
				tl_ret(&t, ts, 30, 30);
			if (it < 9)
				tl_call(&t, ts, 30, 30, ISC_SPAN_SCOPE, S_STEP);
			it++;
		}
		uint64_t rss = ms < 2000 ? 10 * MB * ms / 1000 : ms < 9500 ? 20 * MB + 5 * MB * (ms - 2000) / 1000 : 5 * MB;
		tl_proc_sample(&t, ts + 1, 30, rss, 0, 0);
	}
	tl_ret(&t, 10 * S + 5, 30, 30);
	d = tl_close_analyze(&t, f);
	slope = N(d, "memory.rss_growth_after_warmup_bytes_per_s");
	ok(N(d, "iterations.count") == 8 && fabs(slope - 5.0 * MB) < 0.01 * MB && N(d, "memory.after_warmup_span_ns") == 7 * S,
	   "RSS growth after warm-up, teardown excluded: 5 MiB/s (got %.0f)", slope);
	const cJSON *fd, *found = NULL;
	cJSON_ArrayForEach(fd, isc_doc_get(d, "findings"))
		if (!strcmp(isc_doc_str(fd, "id", NULL), "rss_growth"))
			found = fd;
	ok(found != NULL, "rss_growth finding raised");
	cJSON_Delete(d);
	fclose(f);

	/* the streaming slope directly: 2 doublings, exact line */
	struct isc_lsq *l;
	double s;
	uint64_t n;
	isc_lsq_new(&l);
	for (uint64_t i = 0; i < 3000; i++)
		isc_lsq_add(l, i * 1000000, i < 300 ? 1e9 : 5.0 * (double)i);
	bool got = isc_lsq_slope(l, 300 * 1000000ull, UINT64_MAX, &s, &n);
	ok(got && fabs(s - 5000) < 1e-6 && n >= 2650 && n <= 2700,
	   "bucketed least squares exact after the cut (slope %.6f, %llu points)", s, (unsigned long long)n);
	got = isc_lsq_slope(l, 300 * 1000000ull, 1000 * 1000000ull, &s, &n);
	ok(got && fabs(s - 5000) < 1e-6 && n >= 650 && n <= 700, "slope over a closed range (%llu points)",
	   (unsigned long long)n);
	ok(!isc_lsq_slope(l, 1000 * 1000000ull, 1000 * 1000000ull, &s, &n), "empty range: no slope");
	ok(isc_lsq_add(l, 0, 1) == -EINVAL, "time going back is refused");
	isc_lsq_free(l);
}

static void test_damage(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct tl t;
	tl_open_common(&t, f, "python3 killed.py");
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_MAIN);
	for (int i = 0; i < 50; i++)
		tl_leaf(&t, 10 + 20 * (uint64_t)i, 20 + 20 * (uint64_t)i, 1, 1, ISC_SPAN_OP, S_A);
	tl_flush(&t);
	fflush(f);
	size_t cut = len; /* the second events chunk will be cut in half */
	for (int i = 50; i < 100; i++)
		tl_leaf(&t, 10 + 20 * (uint64_t)i, 20 + 20 * (uint64_t)i, 1, 1, ISC_SPAN_OP, S_A);
	tl_ret(&t, 2100, 1, 1);
	tl_close(&t, 0, 0, 0);
	fclose(f);
	FILE *g = fmemopen(buf, cut + (len - cut) / 3, "r");
	int rc;
	cJSON *d = analyze_file(g, 0, &rc);
	ok(rc == -EBADMSG && d != NULL, "truncated input: -EBADMSG and a document");
	ok(strstr(isc_err_msg(), "analyzed 101 events") != NULL, "message says what was kept: %s", isc_err_msg());
	ok(cJSON_IsTrue(isc_doc_get(d, "summary.damaged")) && N(d, "summary.events") == 101,
	   "summary.damaged and the events read before the damage");
	ok(N(d, "summary.unclosed_spans") == 1 && FN(d, "torch.matmul", "calls") == 50 &&
	   FN(d, "<module>", "total_ns") == 1000, "the open span is closed at the last event");
	ok(cJSON_IsTrue(isc_doc_get(d, "summary.abrupt")) && cJSON_IsNull(isc_doc_get(d, "summary.exit_status")),
	   "no end chunk: abrupt, exit status unknown");
	cJSON_Delete(d);
	fclose(g);

	/* flip a byte in the middle of the first events chunk: later chunks still count */
	buf[cut - 20] ^= 0x55;
	g = fmemopen(buf, len, "r");
	d = analyze_file(g, 0, &rc);
	ok(rc == -EBADMSG && d && N(d, "summary.events") == 101, "corrupt middle frame: the rest is analyzed (%g)",
	   N(d, "summary.events"));
	ok(N(d, "summary.unmatched_span_ends") == 1, "the END of a span begun in the lost chunk is counted");
	cJSON_Delete(d);
	fclose(g);
	free(buf);

	f = tmpfile();
	fputs("this is not a timeline", f);
	struct isc_timeline *tt = NULL;
	rewind(f);
	ok(isc_timeline_open(&tt, f) < 0, "not a timeline: open fails");
	fclose(f);
}

static void test_span_repair(void)
{
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 x.py");
	/* main [0,1000) -> f [100, ?) -> op [200, ?): main's END arrives first */
	uint64_t m = tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 100, 1, 1, ISC_SPAN_PYTHON, S_F);
	tl_call(&t, 200, 1, 1, ISC_SPAN_OP, S_A);
	uint64_t fe[2] = { m, 0 };
	tl_rec(&t, ISC_REC_TL_SPAN_END, 1000, 1, 1, 2, fe, NULL, 0, false);
	uint64_t bogus[2] = { 9999, 0 };
	tl_rec(&t, ISC_REC_TL_SPAN_END, 1001, 1, 1, 2, bogus, NULL, 0, false);
	/* merge-closed span */
	tl_call(&t, 2000, 1, 1, ISC_SPAN_SCOPE, S_STEP);
	tl_ret_flags(&t, 2500, 1, 1, 1);
	tl_close(&t, 0, 1, -9);
	cJSON *d = analyze(f);
	ok(N(d, "summary.unclosed_spans") == 2 && N(d, "summary.unmatched_span_ends") == 1,
	   "inner spans closed by an outer END; unknown END counted");
	ok(FN(d, "torch.matmul", "self_ns") == 800 && FN(d, "crunch", "self_ns") == 100 && FN(d, "<module>", "self_ns") == 100,
	   "repaired spans end at the outer END");
	ok(N(d, "summary.merge_closed_spans") == 1 && N(d, "iterations.incomplete_excluded") == 1 &&
	   N(d, "iterations.samples") == 0, "merge-closed iteration counted but not in latency");
	ok(cJSON_IsTrue(isc_doc_get(d, "summary.abrupt")) && cJSON_IsNull(isc_doc_get(d, "summary.exit_status")) &&
	   !strcmp(isc_doc_str(d, "summary.end_reason", NULL), "cut"),
	   "abrupt flag from the end chunk: cut short, so the exit status is unknown");
	cJSON_Delete(d);
	fclose(f);
}

static const char HOSTILE[] = "<script>alert(1)</script>|*x*";

/* The hostile fixture: workload strings full of Markdown/HTML syntax. */
static void write_hostile(FILE *f)
{
	struct tl t;
	tl_open(&t, f, "python3 evil|`x`.py");
	tl_string(&t, 1, ISC_STR_CODE, 7, HOSTILE, "ev|l_[dir]/*a*.py");
	tl_string(&t, 2, ISC_STR_CFUNC, 0, "# [link](javascript:alert(1)) &amp; `tick`", "m\ttab");
	tl_string(&t, 3, ISC_STR_SCOPE, 0, "st|ep\n<b>", "");
	tl_string(&t, 4, ISC_STR_CODE, 1, "bad\xff\xfeutf8", "x.py");
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, 4);
	for (uint64_t i = 0; i < 3; i++) {
		tl_call(&t, 10 + 1000 * i, 1, 1, ISC_SPAN_SCOPE, 3);
		tl_call(&t, 20 + 1000 * i, 1, 1, ISC_SPAN_PYTHON, 1);
		tl_leaf(&t, 30 + 1000 * i, 40 + 1000 * i, 1, 1, ISC_SPAN_OP, 2);
		tl_ret(&t, 900 + 1000 * i, 1, 1);
		tl_ret(&t, 950 + 1000 * i, 1, 1);
	}
	tl_rec(&t, ISC_REC_THREAD_BEGIN, 5000, 1, 2, 0, NULL, "thr|<i>\x01", 8, false);
	tl_leaf(&t, 5000, 5100, 1, 2, ISC_SPAN_OP, 2);
	tl_ret(&t, 6000, 1, 1);
	tl_close(&t, 0, 0, 0);
}

/* The basic fixture: a small, complete run. */
static void write_basic(FILE *f)
{
	struct tl t;
	const uint64_t MS = 1000000;
	tl_open_common(&t, f, "python3 infer.py");
	tl_call(&t, 0, 100, 100, ISC_SPAN_PYTHON, S_MAIN);
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t b = MS + i * 10 * MS;
		tl_call(&t, b, 100, 100, ISC_SPAN_SCOPE, S_STEP);
		tl_call(&t, b + 10, 100, 100, ISC_SPAN_PYTHON, S_F);
		tl_leaf(&t, b + 2 * MS, b + 3 * MS + i * 1000, 100, 100, ISC_SPAN_OP, S_A);
		tl_ret(&t, b + 8 * MS, 100, 100);
		tl_ret(&t, b + 9 * MS, 100, 100);
		tl_proc_sample(&t, b + 9 * MS + 1, 100, 100 * 1048576 + i * 4096, i, i);
		tl_thread_sample(&t, b + 9 * MS + 2, 100, 100, b);
		tl_flush(&t); /* one events chunk per iteration, as the merge would */
	}
	tl_ret(&t, 210 * MS, 100, 100);
	tl_close(&t, 0, 0, 0);
}

/*
 * run.outcome from the end record and the exceptions (sections_run.c):
 * truncated (no clean end) before killed (a signal: status 128 + N) before
 * failed (a non-zero status, or an exception in a main thread) before
 * window before completed.  The exception shown is a main thread's
 * (tid == pid) over any worker's, whichever came first; an EXCEPTION_REF
 * names its strings by id (line, where, type, message).
 */
enum { S_EXC_WHERE = 40, S_EXC_TYPE, S_EXC_MSG };

/* An EXCEPTION record: varint line, counted type, file, function, then the message. */
static void tl_exception(struct tl *t, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t line, const char *type,
			 const char *file, const char *func, const char *msg)
{
	struct isc_buf b = { 0 };
	isc_buf_put_bytes(&b, type, strlen(type));
	isc_buf_put_bytes(&b, file, strlen(file));
	isc_buf_put_bytes(&b, func, strlen(func));
	isc_buf_put(&b, msg, strlen(msg));
	tl_rec(t, ISC_REC_EXCEPTION, ts, pid, tid, 1, &line, b.data, b.len, false);
	isc_buf_free(&b);
}

/*
 * A 50 ms run of process 100 (main thread 100, worker 101) ended with
 * flags and status; excs: 0 none, 1 a worker's exception, 2 a worker's,
 * then the main thread's (an EXCEPTION_REF), then another worker's.
 */
static cJSON *outcome_run(uint64_t flags, int status, int excs)
{
	FILE *f = tmpfile();
	struct tl t;
	const uint64_t MS = 1000000;
	tl_open_common(&t, f, "python3 infer.py");
	tl_string(&t, S_EXC_WHERE, ISC_STR_CODE, 7, "load_batch", "/srv/app/data.py");
	tl_string(&t, S_EXC_TYPE, ISC_STR_TEXT, 0, "ValueError", "");
	tl_string(&t, S_EXC_MSG, ISC_STR_TEXT, 0, "bad shape (3, 4)", "");
	tl_call(&t, 0, 100, 100, ISC_SPAN_PYTHON, S_MAIN);
	tl_leaf(&t, MS, 40 * MS, 100, 100, ISC_SPAN_PYTHON, S_F);
	tl_leaf(&t, MS, 30 * MS, 100, 101, ISC_SPAN_PYTHON, S_G);
	if (excs >= 1)
		tl_exception(&t, 30 * MS, 100, 101, 22, "KeyError", "rec.py", "g", "'x'");
	if (excs >= 2) {
		uint64_t ref[4] = { 7, S_EXC_WHERE, S_EXC_TYPE, S_EXC_MSG };
		tl_rec(&t, ISC_REC_EXCEPTION_REF, 45 * MS, 100, 100, 4, ref, NULL, 0, false);
		tl_exception(&t, 46 * MS, 100, 101, 23, "OSError", "rec.py", "g", "late");
	}
	tl_ret(&t, 50 * MS, 100, 100);
	tl_close(&t, 0, flags, status);
	cJSON *d = analyze(f);
	fclose(f);
	return d;
}

static void test_run_outcome(void)
{
	static const struct {
		uint64_t flags;
		int status;
		const char *outcome;
		double exit_status, signal; /* -1: null */
		const char *why;
	} c[] = {
		{ 0, 0, "completed", 0, -1, "a clean end, status 0" },
		{ 0, 1, "failed", 1, -1, "status 1" },
		{ ISC_END_SIGNALED, 137, "killed", 137, 9, "SIGKILL: status 128 + 9" },
		{ ISC_END_SIGNALED, 143, "killed", 143, 15, "SIGTERM: status 128 + 15" },
		{ ISC_END_ABRUPT, 0, "truncated", -1, -1, "no clean end" },
		{ ISC_END_ABRUPT | ISC_END_SIGNALED, 137, "truncated", -1, -1, "no clean end wins over a signal" },
		{ ISC_END_WINDOW, 0, "window", 0, -1, "a flight recording" },
		{ ISC_END_WINDOW, 2, "failed", 2, -1, "a failed flight recording" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cJSON *d = outcome_run(c[i].flags, c[i].status, 0);
		const cJSON *es = isc_doc_get(d, "run.exit_status"), *sg = isc_doc_get(d, "run.signal");
		ok(d && !strcmp(isc_doc_str(d, "run.outcome", "?"), c[i].outcome), "%s: outcome %s (got %s)", c[i].why,
		   c[i].outcome, isc_doc_str(d, "run.outcome", "?"));
		ok(c[i].exit_status < 0 ? cJSON_IsNull(es) : cJSON_IsNumber(es) && es->valuedouble == c[i].exit_status,
		   "%s: exit_status %g (-1: null)", c[i].why, c[i].exit_status);
		ok(c[i].signal < 0 ? cJSON_IsNull(sg) : cJSON_IsNumber(sg) && sg->valuedouble == c[i].signal,
		   "%s: signal %g (-1: null)", c[i].why, c[i].signal);
		cJSON_Delete(d);
	}
	/* a worker thread's exception does not fail a run that exited 0 */
	cJSON *d = outcome_run(0, 0, 1);
	ok(d && !strcmp(isc_doc_str(d, "run.outcome", "?"), "completed"), "a worker's exception, status 0: completed (%s)",
	   isc_doc_str(d, "run.outcome", "?"));
	ok(!strcmp(isc_doc_str(d, "run.exception.type", "?"), "KeyError") &&
	   cJSON_IsFalse(isc_doc_get(d, "run.exception.main_thread")) && N(d, "run.exception.tid") == 101,
	   "the worker's exception is listed, not in a main thread");
	cJSON_Delete(d);
	/* worker, main (EXCEPTION_REF), worker: the main thread's is the run's */
	d = outcome_run(0, 1, 2);
	ok(d && !strcmp(isc_doc_str(d, "run.outcome", "?"), "failed"), "a main thread's exception, status 1: failed");
	ok(N(d, "run.exceptions_total") == 3, "3 exceptions counted (%g)", N(d, "run.exceptions_total"));
	ok(N(d, "run.exception.tid") == 100 && cJSON_IsTrue(isc_doc_get(d, "run.exception.main_thread")),
	   "the main thread's exception is shown over the workers' before and after it (tid %g)",
	   N(d, "run.exception.tid"));
	ok_str(isc_doc_str(d, "run.exception.type", NULL), "ValueError", "EXCEPTION_REF: the type from its type id");
	ok_str(isc_doc_str(d, "run.exception.message", NULL), "bad shape (3, 4)", "EXCEPTION_REF: the message from its id");
	ok_str(isc_doc_str(d, "run.exception.function", NULL), "load_batch", "EXCEPTION_REF: the function from its place");
	ok_str(isc_doc_str(d, "run.exception.file", NULL), "/srv/app/data.py", "EXCEPTION_REF: the file from its place");
	ok(N(d, "run.exception.line") == 7, "EXCEPTION_REF: the line its record states (%g)", N(d, "run.exception.line"));
	cJSON_Delete(d);
}

static void test_hostile_json_and_report(void)
{
	FILE *f = tmpfile();
	write_hostile(f);
	cJSON *d = analyze(f);
	ok(fn_named(d, HOSTILE) != NULL, "hostile name copied verbatim into JSON");
	ok(fn_named(d, "bad??utf8") != NULL, "invalid UTF-8 replaced by '?'");
	char *txt = cJSON_PrintUnformatted(d);
	cJSON *back = cJSON_Parse(txt);
	ok(back && fn_named(back, HOSTILE) != NULL, "the JSON text round-trips the hostile name");
	cJSON_Delete(back);
	free(txt);

	char *md = NULL, *html = NULL;
	ok(isc_report_render(d, ISC_REPORT_MD, &md) == 0 && md, "Markdown rendered");
	ok(md && !strstr(md, "<script>") && strstr(md, "\\<script\\>alert(1)\\</script\\>\\|\\*x\\*"),
	   "hostile name backslash-escaped in Markdown");
	ok(md && !strstr(md, "[link](") && !strstr(md, "<b>") && !strstr(md, "<i>") && !strstr(md, "\x01"),
	   "no live link, no raw HTML, no control characters");
	/* every table row of the top-functions table has exactly 9 unescaped pipes */
	const char *row = md ? strstr(md, "\n| 1 | ") : NULL;
	int pipes = 0;
	for (const char *p = row ? row + 1 : NULL; p && *p && *p != '\n'; p++)
		if (*p == '|' && p[-1] != '\\')
			pipes++;
	ok(pipes == 9, "table row keeps its 8 columns (%d unescaped pipes)", pipes);
	ok(isc_report_render(d, ISC_REPORT_HTML, &html) == 0 && html && !strstr(html, "<script>") &&
	   strstr(html, "&lt;script&gt;") && !strstr(html, "href=") && strstr(html, "<!DOCTYPE html>"),
	   "HTML: escaped by cmark, self-contained page");
	ok(html && strstr(html, "<td>&lt;script&gt;alert(1)&lt;/script&gt;|*x*</td>") && strstr(html, "<th class=\"r\">Calls</th>"),
	   "HTML tables: one cell per column, the name escaped inside it");
	ok(html && !strstr(html, "http://") && !strstr(html, "https://") && !strstr(html, "src="),
	   "HTML makes no external requests");
	free(md);
	free(html);
	cJSON_Delete(d);
	fclose(f);
}

static void test_report(void)
{
	FILE *f = tmpfile();
	write_basic(f);
	cJSON *d = analyze(f);
	char *md = NULL;
	ok(isc_report_render(d, ISC_REPORT_MD, &md) == 0, "report of the basic fixture");
	const char *l2 = md ? strchr(md, '\n') : NULL;
	ok(md && !strncmp(md, "# InferScope report\n\n**", 23) && l2 && strstr(md, "the hottest function is `crunch` "
	   "(hot_function.py:12)"), "headline first: share, function, file:line");
	static const char *const secs[] = { "\n## End-to-end latency\n", "\n## CPU\n", "\n## GPU\n", "\n## Memory\n",
					    "\n## Findings\n", "\n## Suggestions\n", "\n## Environment\n" };
	const char *prev = md;
	bool order = md != NULL;
	for (size_t i = 0; i < 7 && order; i++) {
		const char *s = strstr(md, secs[i]);
		order = s && s > prev;
		prev = s;
	}
	ok(order, "sections in order with the fixed titles");
	ok(md && strstr(md, "No GPU activity recorded."), "GPU placeholder");
	ok(md && strstr(md, "| step | 20 | 1 |"), "latency table: scope, count, warm-up");
	free(md);
	cJSON_Delete(d);
	fclose(f);

	/* missing fields are tolerated */
	cJSON *empty = cJSON_Parse("{\"cpu\": {\"top_functions\": [{}, 3]}, \"processes\": [{\"threads\": [{}]}]}");
	md = NULL;
	ok(isc_report_render(empty, ISC_REPORT_MD, &md) == 0 && md && strstr(md, "## Environment"),
	   "a nearly empty document renders");
	free(md);
	cJSON_Delete(empty);
	cJSON *arr = cJSON_Parse("[1,2]");
	ok(isc_report_render(arr, ISC_REPORT_MD, &md) == -EINVAL, "a non-object is refused");
	cJSON_Delete(arr);

	struct isc_buf b = { 0 };
	isc_md_escape(&b, "a_b _c_ 1. -x\t\x7f\x1b");
	isc_buf_put_u8(&b, 0);
	ok(!strcmp((char *)b.data, "a_b \\_c\\_ 1. -x "), "md escape: intraword _ kept, tab -> space, controls dropped (%s)",
	   (char *)b.data);
	static const char *const cases[][2] = {
		{ "-lead", "-lead" }, { "- x", "\\- x" }, { "--x", "\\--x" }, { "12. x", "12\\. x" },
		{ "0.1.0", "0.1.0" }, { "3)", "3\\)" }, { "=", "\\=" }, { "a&b<c>`d`[e](f)", "a\\&b\\<c\\>\\`d\\`\\[e\\](f)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b.len = 0;
		isc_md_escape(&b, cases[i][0]);
		isc_buf_put_u8(&b, 0);
		ok(!strcmp((char *)b.data, cases[i][1]), "md escape '%s' -> '%s' (got '%s')", cases[i][0], cases[i][1],
		   (char *)b.data);
	}
	isc_buf_free(&b);
}

static uint64_t rnd_state;

static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (rnd_state >> 33) % n : rnd_state >> 11;
}

/* Random but well-formed records: spans that do not nest, unknown ids and
 * kinds, extreme sample values.  The analysis must cope with all of it. */
static void write_soup(FILE *f, uint64_t seed)
{
	struct tl t;
	uint64_t ts = rnd(1000), v[9];
	uint8_t bytes[16];
	rnd_state = seed;
	tl_open(&t, f, "soup");
	for (uint32_t id = 1; id < 12; id++)
		tl_string(&t, id, (uint8_t)rnd(6), (uint32_t)rnd(100), id % 3 ? "fn" : "sc\x01|", "f.py");
	for (int i = 0; i < 400; i++) {
		ts += rnd(4) == 0 ? rnd(1ull << 40) : rnd(1000);
		uint32_t pid = (uint32_t)rnd(3), tid = (uint32_t)rnd(4);
		for (int k = 0; k < 9; k++)
			v[k] = rnd(5) == 0 ? rnd(0) : rnd(1000000);
		for (int k = 0; k < 16; k++)
			bytes[k] = (uint8_t)rnd(256);
		switch (rnd(10)) {
		case 0: case 1: case 2:
			v[0] = 1 + rnd(50);
			v[3] = rnd(5);
			v[4] = rnd(14);
			tl_rec(&t, ISC_REC_TL_SPAN_BEGIN, ts, pid, tid, 5, v, NULL, 0, false);
			break;
		case 3: case 4: case 5:
			v[0] = 1 + rnd(50);
			v[1] = rnd(3);
			tl_rec(&t, ISC_REC_TL_SPAN_END, ts, pid, tid, 2, v, NULL, 0, false);
			break;
		case 6:
			v[0] = pid;
			v[1] = tid;
			tl_rec(&t, ISC_REC_THREAD_SAMPLE, ts, 0, 0, 9, v, NULL, 0, false);
			break;
		case 7:
			v[0] = pid;
			tl_rec(&t, ISC_REC_PROC_SAMPLE, ts, 0, 0, 9, v, NULL, 0, false);
			break;
		case 8:
			v[0] = rnd(5);
			tl_rec(&t, ISC_REC_PRESSURE, ts, 0, 0, 4, v, NULL, 0, false);
			tl_rec(&t, ISC_REC_MEMINFO, ts, 0, 0, 4, v, NULL, 0, false);
			break;
		default:
			v[0] = pid;
			v[1] = tid;
			tl_rec(&t, ISC_REC_THREAD_NAME, ts, 0, 0, 2, v, bytes, rnd(16), false);
			tl_rec(&t, ISC_REC_PROC_INFO, ts, 0, 0, 2, v, bytes, rnd(16), true);
			v[1] = isc_zigzag((int64_t)rnd(0));
			tl_rec(&t, ISC_REC_PROC_EXIT, ts, 0, 0, 3, v, NULL, 0, false);
			v[0] = rnd(14);
			tl_rec(&t, ISC_REC_MARK, ts, pid, tid, 2, v, NULL, 0, false);
			break;
		}
		if (rnd(50) == 0)
			tl_flush(&t);
	}
	tl_close(&t, rnd(10), rnd(2), (int)rnd(300) - 150);
}

static void test_soup(void)
{
	int bad = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		FILE *f = tmpfile();
		int rc;
		char *md = NULL, *html = NULL, *txt = NULL;
		write_soup(f, seed);
		cJSON *d = analyze_file(f, 0, &rc);
		cJSON *back = NULL;
		if (rc || !d || isc_report_render(d, ISC_REPORT_MD, &md) || isc_report_render(d, ISC_REPORT_HTML, &html) ||
		    !(txt = cJSON_PrintUnformatted(d)) || !(back = cJSON_Parse(txt))) {
			if (!bad++)
				printf("# seed %llu: rc %d %s\n", (unsigned long long)seed, rc, isc_err_msg());
		}
		cJSON_Delete(back);
		free(txt);
		free(md);
		free(html);
		cJSON_Delete(d);
		fclose(f);
	}
	ok(bad == 0, "200 random event soups: analysis, JSON and both renderings succeed (%d failed)", bad);
}

static int write_fixture(const char *kind, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return 1;
	}
	if (!strcmp(kind, "basic")) {
		write_basic(f);
	} else if (!strcmp(kind, "hostile")) {
		write_hostile(f);
	} else if (!strcmp(kind, "truncated")) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		write_basic(m);
		fclose(m);
		fwrite(buf, 1, len - 20, f); /* cuts into the end chunk's frame */
		free(buf);
	} else {
		fprintf(stderr, "unknown fixture %s\n", kind);
		fclose(f);
		return 2;
	}
	return fclose(f) ? 1 : 0;
}

/* name of item 0 of array key of o, "" when absent */
static const char *first_name(const cJSON *o, const char *key)
{
	const char *n = isc_doc_str(cJSON_GetArrayItem(isc_doc_get(o, key), 0), "name", NULL);
	return n ? n : "";
}

/* The reason of each blocked sample (THREAD_WAIT), by reason, caller, pool. */
static void test_off_reasons(void)
{
	const uint64_t MS = 1000000;
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 waits.py");
	static const struct {
		uint32_t tid;
		const char *comm;
	} names[] = { { 1, "python3" }, { 2, "python3" }, { 3, "python3" }, { 7, "python3" },
		      { 4, "pt_worker_3" }, { 5, "pt_worker_12" }, { 6, "pt_worker_7" } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t nf[2] = { 1, names[i].tid };
		tl_rec(&t, ISC_REC_THREAD_NAME, 0, 0, 0, 2, nf, names[i].comm, strlen(names[i].comm), false);
	}
	/* tid 1 reads a pipe then sleeps; 2 runs Python (crunch) with no C call; 3 is in torch.matmul;
	 * 7 reads a pipe inside a DataLoader's __next__; 4, 5, 6 are untraced pool workers */
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 0, 1, 1, ISC_SPAN_OP, S_READ);
	tl_call(&t, 0, 1, 2, ISC_SPAN_PYTHON, S_F);
	tl_call(&t, 0, 1, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 0, 1, 3, ISC_SPAN_OP, S_A);
	tl_call(&t, 0, 1, 7, ISC_SPAN_PYTHON, S_DL);
	tl_call(&t, 0, 1, 7, ISC_SPAN_OP, S_READ);
	for (uint32_t tid = 1; tid <= 7; tid++)
		tl_thread_state(&t, 0, 1, tid, 'R');
	/* 100 ms: everyone blocked, each THREAD_WAIT before its THREAD_SAMPLE */
	tl_blocked(&t, 100 * MS, 1, 1, 'S', ISC_WAIT_READ, ISC_FD_PIPE, 3, "");
	tl_blocked(&t, 100 * MS, 1, 2, 'S', ISC_WAIT_FUTEX, 0, 0x5000, "");
	tl_blocked(&t, 100 * MS, 1, 3, 'S', ISC_WAIT_FUTEX, 0, 0x6000, "");
	tl_blocked(&t, 100 * MS, 1, 7, 'S', ISC_WAIT_READ, ISC_FD_PIPE, 5, "");
	tl_blocked(&t, 100 * MS, 1, 4, 'S', ISC_WAIT_FUTEX, 0, 0xabc, "");
	tl_blocked(&t, 100 * MS, 1, 5, 'S', ISC_WAIT_FUTEX, 0, 0xabc, "");
	tl_blocked(&t, 100 * MS, 1, 6, 'S', ISC_WAIT_FUTEX, 0, 0xdef, "");
	tl_ret(&t, 150 * MS, 1, 1);
	tl_call(&t, 150 * MS, 1, 1, ISC_SPAN_OP, S_SLEEP);
	/* 200 ms: 1 sleeps; 2 is blocked with no THREAD_WAIT (other); 4 parks on its pool's futex again */
	tl_blocked(&t, 200 * MS, 1, 1, 'S', ISC_WAIT_SLEEP, 0, 1, "");
	tl_thread_state(&t, 200 * MS, 1, 2, 'S');
	tl_blocked(&t, 200 * MS, 1, 4, 'S', ISC_WAIT_FUTEX, 0, 0xabc, "");
	/* 300 ms: 2 waits for the disk in a page fault (D, no system call) */
	tl_blocked(&t, 300 * MS, 1, 2, 'D', ISC_WAIT_NO_SYSCALL, 0, 0, "filemap_fault");
	tl_ret(&t, 400 * MS, 1, 1);
	tl_ret(&t, 400 * MS, 1, 1);
	tl_ret(&t, 400 * MS, 1, 2);
	tl_ret(&t, 400 * MS, 1, 3);
	tl_ret(&t, 400 * MS, 1, 3);
	tl_ret(&t, 400 * MS, 1, 7);
	tl_ret(&t, 400 * MS, 1, 7);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "cpu.blocked_ns") == 700 * MS, "blocked: 4 x 100 ms at 100 ms, 2 x 100 at 200, 100 at 300 (got %g)",
	   N(d, "cpu.blocked_ns"));
	const cJSON *r = isc_doc_get(d, "cpu.off_cpu_reasons");
	static const char *const order[] = { "io_pipe", "sleep", "thread_wait", "gil", "page_in", "other" };
	static const double ns[] = { 200 * MS, 100 * MS, 100 * MS, 100 * MS, 100 * MS, 100 * MS };
	bool in_order = cJSON_GetArraySize(r) == 6;
	for (int i = 0; i < 6 && in_order; i++) {
		const cJSON *x = cJSON_GetArrayItem(r, i);
		in_order = !strcmp(isc_doc_str(x, "reason", NULL), order[i]) && N(x, "ns") == ns[i];
	}
	ok(in_order, "reasons largest first (ties in the schema's order): io_pipe 200 ms, then sleep, thread_wait, "
		     "gil, page_in, other 100 ms each");
	const cJSON *pipe = cJSON_GetArrayItem(r, 0);
	ok(N(pipe, "pct") == 28.57 && N(pipe, "in_dataloader_ns") == 100 * MS && N(pipe, "in_torch_ops_ns") == 0,
	   "io_pipe: 200/700 = 28.57 %% of the blocked time, 100 ms of it inside the DataLoader's __next__");
	ok(cJSON_GetArraySize(isc_doc_get(pipe, "top")) == 2, "io_pipe: two Python callers (<module>, __next__)");
	const cJSON *tw = cJSON_GetArrayItem(r, 2), *gil = cJSON_GetArrayItem(r, 3);
	ok(N(tw, "in_torch_ops_ns") == 100 * MS && !strcmp(first_name(tw, "top"), "<module>"),
	   "thread_wait: the futex inside torch.matmul, all of it in torch ops, charged to <module>");
	ok(!strcmp(first_name(gil, "top"), "crunch") && N(gil, "in_torch_ops_ns") == 0,
	   "gil: the futex while crunch ran Python with no C call open");
	ok(!strcmp(first_name(cJSON_GetArrayItem(r, 4), "top"), "crunch"), "page_in: crunch waited in a fault");
	const cJSON *top0 = cJSON_GetArrayItem(isc_doc_get(d, "cpu.off_cpu_top"), 0);
	ok(!strcmp(isc_doc_str(top0, "name", NULL), "posix.read") && !strcmp(isc_doc_str(top0, "reason", NULL), "io_pipe") &&
	   N(top0, "blocked_ns") == 100 * MS, "off_cpu_top rows carry their reason");
	const cJSON *t2 = thread_tid(d, 2);
	ok(t2 && N(t2, "gil_wait_ns") == 100 * MS, "thread 2 waited 100 ms for the GIL");
	/* pools: traced python3 x4; pt_worker on futex 0xabc x2 (3 and 12 are numbering); pt_worker 0xdef x1 */
	const cJSON *p, *abc = NULL, *def = NULL, *py = NULL;
	cJSON_ArrayForEach(p, isc_doc_get(d, "cpu.thread_pools")) {
		const char *fx = isc_doc_str(p, "futex", NULL);
		if (!strcmp(isc_doc_str(p, "name", NULL), "pt_worker") && fx && !strcmp(fx, "0xabc"))
			abc = p;
		else if (!strcmp(isc_doc_str(p, "name", NULL), "pt_worker") && fx && !strcmp(fx, "0xdef"))
			def = p;
		else if (!strcmp(isc_doc_str(p, "name", NULL), "python3"))
			py = p;
	}
	ok(cJSON_GetArraySize(isc_doc_get(d, "cpu.thread_pools")) == 3 && abc && N(abc, "threads") == 2 &&
	   !cJSON_IsTrue(isc_doc_get(abc, "traced")) && def && N(def, "threads") == 1 && py && N(py, "threads") == 4 &&
	   cJSON_IsTrue(isc_doc_get(py, "traced")) && cJSON_IsNull(isc_doc_get(py, "futex")),
	   "pools: python3 x4 traced; pt_worker x2 on 0xabc; pt_worker x1 on 0xdef");
	/* io_wait: off-CPU 100 %% x blocked 700/1600 x (io_pipe 200 - 100 in the DataLoader + sleep 100)/700 = 12.5 %% */
	const cJSON *io = row_where(d, "findings", "id", "io_wait");
	ok(io && N(io, "evidence.metrics.blocked_pct") == 12.5,
	   "io_wait counts only I/O and sleep outside the DataLoader: 12.5 %% (got %g)",
	   io ? N(io, "evidence.metrics.blocked_pct") : -1);
	ok(io && !strcmp(first_name(isc_doc_get(io, "evidence"), "top"), "posix.read"), "io_wait's top: the pipe read");
	cJSON_Delete(d);
}

/*
 * The GIL's futex word, learned from 3 timed waits in Python code, makes a
 * timed wait on it inside a C call a GIL wait too (a thread forced to drop
 * the GIL right after a call returned); before 3 such waits, and on any
 * other word, a wait in a C call stays thread_wait.
 */
static void test_gil_word(void)
{
	const uint64_t MS = 1000000;
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 gil.py");
	/* tid 2 runs Python (crunch), no C call; tid 3 is inside a C call (S_A) */
	tl_call(&t, 0, 1, 2, ISC_SPAN_PYTHON, S_F);
	tl_call(&t, 0, 1, 3, ISC_SPAN_PYTHON, S_MAIN);
	tl_call(&t, 0, 1, 3, ISC_SPAN_OP, S_A);
	tl_thread_state(&t, 0, 1, 2, 'R');
	tl_thread_state(&t, 0, 1, 3, 'R');
	/* 100 ms: 3 waits on the GIL's word before anything voted for it */
	tl_blocked(&t, 100 * MS, 1, 3, 'S', ISC_WAIT_FUTEX, 0, 0x5000, "");
	for (uint64_t k = 1; k <= 3; k++) { /* 100, 200, 300 ms: 2's GIL waits in Python code */
		tl_blocked(&t, k * 100 * MS, 1, 2, 'S', ISC_WAIT_FUTEX, 0, 0x5000, "");
		if (k > 1)
			tl_thread_state(&t, k * 100 * MS, 1, 3, 'R');
	}
	tl_thread_state(&t, 400 * MS, 1, 2, 'R');
	/* 400 ms: 3 waits on the learned word; 500 ms: on another one */
	tl_blocked(&t, 400 * MS, 1, 3, 'S', ISC_WAIT_FUTEX, 0, 0x5000, "");
	tl_blocked(&t, 500 * MS, 1, 3, 'S', ISC_WAIT_FUTEX, 0, 0x6000, "");
	tl_ret(&t, 600 * MS, 1, 2);
	tl_ret(&t, 600 * MS, 1, 3);
	tl_ret(&t, 600 * MS, 1, 3);
	cJSON *d = tl_close_analyze(&t, f);
	double gil = N(row_where(d, "cpu.off_cpu_reasons", "reason", "gil"), "ns");
	double tw = N(row_where(d, "cpu.off_cpu_reasons", "reason", "thread_wait"), "ns");
	double g2 = N(thread_tid(d, 2), "gil_wait_ns"), g3 = N(thread_tid(d, 3), "gil_wait_ns");
	ok(gil == 400 * MS, "gil: 2's 300 ms in Python code and 3's 100 ms in a C call on the learned word (got %g)", gil);
	ok(tw == 200 * MS, "thread_wait: 3's wait before the word was learned and its wait on another word (got %g)", tw);
	ok(g2 == 300 * MS && g3 == 100 * MS, "gil_wait_ns: thread 2 300 ms, thread 3 100 ms (got %g, %g)", g2, g3);
	cJSON_Delete(d);
}

/*
 * The start of a --python=sample recording: the common strings and
 * MainThread (pid 1, tid 1) beginning at 0.
 */
static void tl_open_sampled(struct tl *t, FILE *f, const char *cmdline)
{
	tl_open_common(t, f, cmdline);
	tl_rec(t, ISC_REC_THREAD_BEGIN, 0, 1, 1, 0, NULL, "MainThread", 10, false);
}

/*
 * PY_SAMPLE of MainThread running, with flags (bit 3: preempted) and its
 * stack of depth (string id, line) frames, innermost first (at most 4).
 */
static void tl_py_sample(struct tl *t, uint64_t ts, uint64_t flags, const uint32_t (*fr)[2], unsigned depth)
{
	uint64_t pf[5] = { 1, 1, 'R', flags, depth };
	uint8_t b[4 * 2 * 10];
	unsigned n = 0;
	if (depth > 4)
		abort();
	for (unsigned i = 0; i < depth; i++) {
		n += isc_put_varint(b + n, fr[i][0]);
		n += isc_put_varint(b + n, fr[i][1]);
	}
	tl_rec(t, ISC_REC_PY_SAMPLE, ts, 1, 1, 5, pf, b, n, false);
}

/*
 * --python=sample, a thread kept waiting for a CPU (preempted), never
 * blocked: its switches are counted from its stack samples' window, so
 * the off-CPU time is not read as blocking (no io_wait).  Thread samples
 * every 50 ms, always R, 5 involuntary switches each; stack samples every
 * 10 ms from 5 ms, every other one preempted (flags bit 3): 25 of 50 off
 * CPU.  The window opens at the first thread sample after a stack sample
 * (50 ms, ivcsw 5) and closes at the last (500 ms, ivcsw 50): 45
 * involuntary switches, 0 voluntary.
 */
static void test_sampled_preemption(void)
{
	const uint64_t MS = 1000000;
	FILE *f = tmpfile();
	struct tl t;
	tl_open_sampled(&t, f, "python3 spin.py");
	const uint32_t crunch[1][2] = { { S_F, 13 } };
	for (uint64_t ms = 0; ms <= 500; ms += 5) {
		if (ms % 50 == 0)
			tl_thread_sample_sw(&t, ms * MS, 1, 1, ms / 2 * MS, 0, ms / 10);
		if (ms % 10 == 5)
			tl_py_sample(&t, ms * MS, (ms / 10) % 2 ? 8u : 0u, crunch, 1);
	}
	uint64_t sampler[6] = { 100, 50, 50, 150, 0, 5 * MS };
	tl_rec(&t, ISC_REC_PY_SAMPLER, 500 * MS, 0, 0, 6, sampler, NULL, 0, false);
	cJSON *d = tl_close_analyze(&t, f);
	ok(N(d, "cpu.split.involuntary_switches") == 45 && N(d, "cpu.split.voluntary_switches") == 0,
	   "switches of the sampled window: 45 involuntary, 0 voluntary (got %g, %g)",
	   N(d, "cpu.split.involuntary_switches"), N(d, "cpu.split.voluntary_switches"));
	ok(N(d, "cpu.split.off_cpu_pct") == 50, "25 of 50 stack samples preempted: 50 %% off CPU (got %g)",
	   N(d, "cpu.split.off_cpu_pct"));
	ok(!row_where(d, "findings", "id", "io_wait"), "preempted, not blocked: no io_wait");
	cJSON_Delete(d);
}

/*
 * --python=sample, a recursive function: a function's total counts a
 * sample once however deep it is on the stack.  10 stack samples every
 * 10 ms at 100 Hz (period 10 ms), innermost first: 4 x fact;fact;fact
 * (fact innermost, 3 deep) and 6 x crunch;fact;fact.  By construction:
 * fact self 4, total 10 (not 4 x 3 + 6 x 2 = 24); crunch self 6, total 6;
 * fact's total 10 x 10 ms = 100 ms, the whole of the sampled time.
 */
static void test_sampled_recursion(void)
{
	const uint64_t MS = 1000000;
	FILE *f = tmpfile();
	struct tl t;
	tl_open_sampled(&t, f, "python3 rec.py");
	const uint32_t fact3[3][2] = { { S_FACT, 4 }, { S_FACT, 4 }, { S_FACT, 4 } };
	const uint32_t crunch_fact2[3][2] = { { S_F, 13 }, { S_FACT, 4 }, { S_FACT, 4 } };
	for (uint64_t k = 0; k < 10; k++)
		tl_py_sample(&t, (10 + 10 * k) * MS, 0, k >= 4 ? crunch_fact2 : fact3, 3);
	uint64_t sampler[6] = { 100, 10, 10, 30, 0, 1 * MS };
	tl_rec(&t, ISC_REC_PY_SAMPLER, 110 * MS, 0, 0, 6, sampler, NULL, 0, false);
	cJSON *d = tl_close_analyze(&t, f);
	const cJSON *fact = row_where(d, "python.samples.functions", "name", "fact");
	const cJSON *crunch = row_where(d, "python.samples.functions", "name", "crunch");
	ok(N(d, "python.samples.samples") == 10 && N(d, "python.samples.period_ns") == 10 * MS,
	   "10 samples at 100 Hz (got %g, period %g ns)", N(d, "python.samples.samples"),
	   N(d, "python.samples.period_ns"));
	ok(fact && N(fact, "self_samples") == 4, "fact innermost in 4 samples (got %g)", N(fact, "self_samples"));
	ok(fact && N(fact, "total_samples") == 10, "fact 3 and 2 deep counted once per sample: total 10, not 24 (got %g)",
	   N(fact, "total_samples"));
	ok(fact && N(fact, "total_ns") == 100 * MS, "fact's total time 10 x 10 ms (got %g)", N(fact, "total_ns"));
	ok(crunch && N(crunch, "self_samples") == 6 && N(crunch, "total_samples") == 6,
	   "crunch innermost in the other 6: self 6, total 6 (got %g, %g)", N(crunch, "self_samples"),
	   N(crunch, "total_samples"));
	cJSON_Delete(d);
}

/* A short D wait that ended before its system call was read takes the thread's last reason, for 1 s. */
static void test_off_reason_sticky(void)
{
	const uint64_t MS = 1000000;
	FILE *f = tmpfile();
	struct tl t;
	tl_open_common(&t, f, "python3 mmap.py");
	tl_call(&t, 0, 1, 1, ISC_SPAN_PYTHON, S_F);
	tl_call(&t, 0, 1, 2, ISC_SPAN_PYTHON, S_F);
	tl_thread_state(&t, 0, 1, 1, 'R');
	tl_thread_state(&t, 0, 1, 2, 'R');
	/* 100 ms: thread 1 in a page fault; thread 2 in D, "running" by the time the file was read, nothing known */
	tl_blocked(&t, 100 * MS, 1, 1, 'D', ISC_WAIT_NO_SYSCALL, 0, 0, "");
	tl_blocked(&t, 100 * MS, 1, 2, 'D', ISC_WAIT_RUNNING, 0, 0, "");
	/* 200 ms: thread 1 in D, "running": its page fault of 100 ms ago stands in */
	tl_blocked(&t, 200 * MS, 1, 1, 'D', ISC_WAIT_RUNNING, 0, 0, "");
	/* 1200 ms: the same, 1.1 s after the last known reason: other */
	tl_blocked(&t, 1200 * MS, 1, 1, 'D', ISC_WAIT_RUNNING, 0, 0, "");
	tl_ret(&t, 1300 * MS, 1, 1);
	tl_ret(&t, 1300 * MS, 1, 2);
	cJSON *d = tl_close_analyze(&t, f);
	const cJSON *r = isc_doc_get(d, "cpu.off_cpu_reasons");
	double page_in = N(row_where(d, "cpu.off_cpu_reasons", "reason", "page_in"), "ns");
	double other = N(row_where(d, "cpu.off_cpu_reasons", "reason", "other"), "ns");
	ok(page_in == 200 * MS && other == 1100 * MS && cJSON_GetArraySize(r) == 2,
	   "page_in 100 + 100 ms (the short D wait at 200 ms), other 100 ms (nothing known) + 1000 ms (known 1.1 s "
	   "before): got page_in %g, other %g", page_in, other);
	cJSON_Delete(d);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--write"))
		return write_fixture(argv[2], argv[3]);
	test_self_total();
	test_compensation();
	test_compensation_withheld();
	test_compensation_deadline();
	test_calibration_lowest();
	test_calibration_choice();
	test_recursion();
	test_scopes_and_iterations();
	test_five_iterations();
	test_quantiles();
	test_histogram();
	test_dataloader();
	test_cpu_samples();
	test_split_offcpu();
	test_off_reasons();
	test_gil_word();
	test_sampled_preemption();
	test_sampled_recursion();
	test_off_reason_sticky();
	test_memory_processes();
	test_composition();
	test_damage();
	test_span_repair();
	test_run_outcome();
	test_hostile_json_and_report();
	test_report();
	test_soup();
	return tap_done();
}
