/*
 * test_merge.c - iscope-merge's ordering and span pairing on synthetic
 * traces: each tie-break rule of formats/timeline.md §5 on its own, span
 * pairing with lost and missing returns, string interning across
 * processes, damaged input, and the bounded reorder window.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_merge.h"
#include "tap.h"
#include "tracegen.h"

#define U(x) ((uint64_t)(x))

struct cap {
	struct isc_tl_event ev[4096];
	char names[4096][64];
	char str[256][64];
	uint64_t frame0[4096]; /* PY_SAMPLE: the global string id of its innermost frame */
	int n;
	struct isc_tl_stats st;
};

static int c_string(void *ctx, const struct isc_tl_string *s)
{
	struct cap *c = ctx;
	if (s->id < 256)
		snprintf(c->str[s->id], sizeof(c->str[0]), "%s", s->name);
	return 0;
}

static int c_event(void *ctx, const struct isc_tl_event *ev)
{
	struct cap *c = ctx;
	if (c->n < 4096) {
		c->ev[c->n] = *ev;
		if (ev->type == ISC_REC_PY_SAMPLE) {
			const uint8_t *p = ev->bytes;
			if (isc_get_varint(&p, ev->bytes + ev->nbytes, &c->frame0[c->n]))
				c->frame0[c->n] = UINT64_MAX;
		}
		c->ev[c->n].raw = NULL;
		c->ev[c->n].bytes = NULL;
		snprintf(c->names[c->n], sizeof(c->names[0]), "%s", ev->name_id < 256 ? c->str[ev->name_id] : "");
		c->n++;
	}
	return 0;
}

static int c_end(void *ctx, const struct isc_tl_stats *st)
{
	((struct cap *)ctx)->st = *st;
	return 0;
}

static void c_destroy(void *ctx)
{
	(void)ctx;
}

static int run_merge(char **bufs, size_t *lens, size_t n, struct cap *c, struct isc_merge_result *res)
{
	struct isc_merge_input in[4];
	struct isc_sink sink = { c, NULL, c_string, c_event, c_end, c_destroy };
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		in[i].in = fmemopen(bufs[i], lens[i], "r");
		in[i].name = "test";
	}
	int rc = isc_merge(in, n, &sink, res);
	for (size_t i = 0; i < n; i++)
		fclose(in[i].in);
	return rc;
}

/* Index of the first captured event of type/pid/tid/ts (and value when >= 0). */
static int find(struct cap *c, uint8_t type, uint32_t pid, uint32_t tid, uint64_t ts, int64_t value)
{
	for (int i = 0; i < c->n; i++)
		if (c->ev[i].type == type && c->ev[i].pid == pid && c->ev[i].tid == tid && c->ev[i].ts == ts &&
		    (value < 0 || c->ev[i].value == value || (c->ev[i].nf > 3 && (int64_t)c->ev[i].f[3] == value)))
			return i;
	return -1;
}

#define EPOCH 1000000u

static void test_tiebreaks(void)
{
	char *buf[2] = { NULL, NULL };
	size_t len[2];
	struct tg g;
	struct cap *c = calloc(1, sizeof(*c));
	struct isc_merge_result res;

	for (int k = 0; k < 2; k++) {
		FILE *f = open_memstream(&buf[k], &len[k]);
		tg_open(&g, f, EPOCH, "boot-A");
		tg_begin(&g, 0);
		tg_string(&g, 1, ISC_STR_MARK, 0, "m", "");
		tg_chunk(&g, ISC_CHUNK_STRINGS, 10, 0);
		if (k == 0) {
			/* rule 5 (rank): the samples chunk comes first in the file */
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_THREAD_SAMPLE, EPOCH + 400, 9, U(10), U(11), U(0), U(0), U('R'), U(0), U(0), U(0), U(0));
			tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
			/* rule 6 (queue creation): two samples chunks, same ts */
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_PRESSURE, EPOCH + 500, 4, U(0), U(1), U(0), U(111));
			tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_PRESSURE, EPOCH + 500, 4, U(0), U(1), U(0), U(222));
			tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
			/* thread 10/12 written first, though its event is later than 10/11's */
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_MARK, EPOCH + 300, 2, U(1), isc_zigzag(12));
			tg_rec(&g, ISC_REC_MARK, EPOCH + 700, 2, U(1), isc_zigzag(1));
			tg_chunk(&g, ISC_CHUNK_EVENTS, 10, 12);
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_MARK, EPOCH + 100, 2, U(1), isc_zigzag(0));
			tg_rec(&g, ISC_REC_MARK, EPOCH + 300, 2, U(1), isc_zigzag(11));
			tg_rec(&g, ISC_REC_MARK, EPOCH + 400, 2, U(1), isc_zigzag(4));
			tg_rec(&g, ISC_REC_MARK, EPOCH + 600, 2, U(1), isc_zigzag(61));
			tg_rec(&g, ISC_REC_MARK, EPOCH + 600, 2, U(1), isc_zigzag(62));
			tg_chunk(&g, ISC_CHUNK_EVENTS, 10, 11);
			/* rule 3 (pid): pid 9, same ts as pid 10's mark, written last */
			tg_begin(&g, 0);
			tg_string(&g, 1, ISC_STR_MARK, 0, "m", "");
			tg_chunk(&g, ISC_CHUNK_STRINGS, 9, 0);
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_MARK, EPOCH + 300, 2, U(1), isc_zigzag(9));
			tg_chunk(&g, ISC_CHUNK_EVENTS, 9, 99);
		} else {
			/* rule 2 (input): same ts, pid and tid as input 0's first mark */
			tg_begin(&g, EPOCH);
			tg_rec(&g, ISC_REC_MARK, EPOCH + 100, 2, U(1), isc_zigzag(1000));
			tg_chunk(&g, ISC_CHUNK_EVENTS, 10, 11);
		}
		tg_close(&g, true);
		fclose(f);
	}
	int rc = run_merge(buf, len, 2, c, &res);
	ok(rc == 0, "two inputs merge cleanly");
	int a = find(c, ISC_REC_MARK, 10, 11, 100, 0), b = find(c, ISC_REC_MARK, 10, 11, 100, 1000);
	ok(a >= 0 && b >= 0 && a < b, "rule 2: equal ts, pid, tid -> input order");
	int p9 = find(c, ISC_REC_MARK, 9, 99, 300, 9), p10 = find(c, ISC_REC_MARK, 10, 11, 300, 11);
	ok(p9 >= 0 && p10 >= 0 && p9 < p10, "rule 3: equal ts -> lower pid first");
	int t11 = p10, t12 = find(c, ISC_REC_MARK, 10, 12, 300, 12);
	ok(t12 >= 0 && t11 < t12, "rule 4: equal ts and pid -> lower tid first");
	int ag = find(c, ISC_REC_MARK, 10, 11, 400, 4), smp = find(c, ISC_REC_THREAD_SAMPLE, 10, 11, 400, -1);
	ok(ag >= 0 && smp >= 0 && ag < smp, "rule 5: agent event before recorder record at the same ts/pid/tid");
	int s1 = find(c, ISC_REC_PRESSURE, 0, 0, 500, 111), s2 = find(c, ISC_REC_PRESSURE, 0, 0, 500, 222);
	ok(s1 >= 0 && s2 >= 0 && s1 < s2, "rule 6: queue creation order");
	int m1 = find(c, ISC_REC_MARK, 10, 11, 600, 61), m2 = find(c, ISC_REC_MARK, 10, 11, 600, 62);
	ok(m1 >= 0 && m2 == m1 + 1, "rule 7: arrival order within a queue");
	bool sorted = true;
	for (int i = 1; i < c->n; i++)
		if (c->ev[i].ts < c->ev[i - 1].ts)
			sorted = false;
	ok(sorted && c->ev[0].ts == 100, "rule 1: output sorted by time, relative to the epoch");
	ok(c->st.events == (uint64_t)c->n && !c->st.abrupt, "end stats count the events");
	free(buf[0]);
	free(buf[1]);
	free(c);
}

static void test_pairing(void)
{
	char *buf = NULL;
	size_t len;
	struct tg g;
	struct cap *c = calloc(1, sizeof(*c));
	struct isc_merge_result res;
	FILE *f = open_memstream(&buf, &len);
	tg_open(&g, f, 0, "b");
	tg_begin(&g, 0);
	tg_string(&g, 1, ISC_STR_CODE, 3, "main", "t.py");
	tg_string(&g, 2, ISC_STR_CFUNC, 0, "torch.matmul", "torch");
	tg_string(&g, 3, ISC_STR_CODE, 9, "stuck", "t.py");
	tg_string(&g, 4, ISC_STR_SCOPE, 0, "step", "");
	tg_chunk(&g, ISC_CHUNK_STRINGS, 5, 0);
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_PY_RETURN, 5, 0);                 /* return without call: ignored */
	tg_rec(&g, ISC_REC_PY_CALL, 10, 1, U(1));             /* main */
	tg_rec(&g, ISC_REC_C_CALL, 20, 1, U(2));              /* matmul, return lost */
	tg_rec(&g, ISC_REC_PY_RETURN, 30, 0);                 /* closes matmul (flag) and main */
	tg_rec(&g, ISC_REC_C_CALL, 40, 1, U(2));              /* scope begins inside a C call */
	tg_rec(&g, ISC_REC_SCOPE_BEGIN, 41, 1, U(4));
	tg_rec(&g, ISC_REC_C_RETURN, 42, 0);                  /* pairs with the C call, not the scope */
	tg_rec(&g, ISC_REC_PY_CALL, 50, 1, U(1));
	tg_rec(&g, ISC_REC_PY_CALL, 60, 1, U(3));             /* never returns */
	tg_rec(&g, ISC_REC_SCOPE_END, 70, 0);
	tg_rec(&g, ISC_REC_MARK, 80, 2, U(7), isc_zigzag(-3)); /* undefined string id 7 */
	tg_chunk(&g, ISC_CHUNK_EVENTS, 5, 6);
	tg_close(&g, false); /* no END chunk: abrupt */
	fclose(f);
	int rc = run_merge(&buf, &len, 1, c, &res);
	ok(rc == 0, "merge of one thread");
	ok(res.unmatched_returns == 1, "a return without its call is ignored and counted");
	int mm = -1, mmend = -1, mainb = -1, mainend = -1;
	for (int i = 0; i < c->n; i++) {
		struct isc_tl_event *e = &c->ev[i];
		if (e->type == ISC_REC_TL_SPAN_BEGIN && e->ts == 10)
			mainb = i;
		if (e->type == ISC_REC_TL_SPAN_BEGIN && e->ts == 20)
			mm = i;
		if (e->type == ISC_REC_TL_SPAN_END && e->ts == 30 && mmend < 0)
			mmend = i;
		else if (e->type == ISC_REC_TL_SPAN_END && e->ts == 30)
			mainend = i;
	}
	ok(mainb >= 0 && mm >= 0 && c->ev[mm].parent_id == c->ev[mainb].span_id && c->ev[mm].depth == 1 &&
		   c->ev[mainb].depth == 0 && !strcmp(c->names[mm], "torch.matmul"),
	   "a C call nests under its Python caller (parent, depth, name)");
	ok(mmend >= 0 && c->ev[mmend].span_id == c->ev[mm].span_id && c->ev[mmend].flags == 1,
	   "a C call whose return was lost is closed by its caller's return, flagged");
	ok(mainend >= 0 && c->ev[mainend].span_id == c->ev[mainb].span_id && c->ev[mainend].flags == 0,
	   "the caller's own return closes it normally");
	int cend = -1, sbeg = -1, send = -1;
	for (int i = 0; i < c->n; i++) {
		if (c->ev[i].type == ISC_REC_TL_SPAN_END && c->ev[i].ts == 42)
			cend = i;
		if (c->ev[i].type == ISC_REC_TL_SPAN_BEGIN && c->ev[i].kind == ISC_SPAN_SCOPE)
			sbeg = i;
		if (c->ev[i].type == ISC_REC_TL_SPAN_END && c->ev[i].kind == ISC_SPAN_SCOPE)
			send = i;
	}
	ok(cend >= 0 && c->ev[cend].kind == ISC_SPAN_OP && c->ev[cend].flags == 0,
	   "scopes live on their own stack: a C return inside a scope closes the C call");
	ok(sbeg >= 0 && send >= 0 && c->ev[send].ts == 70 && c->ev[send].flags == 0 && !strcmp(c->names[sbeg], "step"),
	   "the scope ends at its own end record");
	int stuck = 0, closed = 0;
	for (int i = 0; i < c->n; i++)
		if (c->ev[i].type == ISC_REC_TL_SPAN_END && c->ev[i].flags == 1 && c->ev[i].ts == 80)
			closed++;
		else if (c->ev[i].type == ISC_REC_TL_SPAN_BEGIN && c->ev[i].ts == 60)
			stuck = c->ev[i].depth == 1;
	ok(stuck && closed == 2, "calls that never return are closed at the thread's last event, flagged");
	/* matmul (its return lost), then stuck and the second main (never returned) */
	ok(res.closed_by_merge == 3, "the result counts the 3 spans the merge closed (%llu)",
	   (unsigned long long)res.closed_by_merge);
	int mk = find(c, ISC_REC_MARK, 5, 6, 80, -3);
	ok(mk >= 0 && strstr(c->names[mk], "unknown #7"), "an undefined string id gets a placeholder name");
	ok(c->st.abrupt, "a trace without an end chunk is marked abrupt");
	free(buf);
	free(c);
}

static void test_strings_across_processes(void)
{
	char *buf = NULL;
	size_t len;
	struct tg g;
	struct cap *c = calloc(1, sizeof(*c));
	struct isc_merge_result res;
	FILE *f = open_memstream(&buf, &len);
	tg_open(&g, f, 0, "b");
	for (uint32_t pid = 1; pid <= 2; pid++) {
		tg_begin(&g, 0);
		tg_string(&g, pid == 1 ? 1 : 5, ISC_STR_CODE, 3, "work", "w.py"); /* same code, other ids */
		tg_chunk(&g, ISC_CHUNK_STRINGS, pid, 0);
		tg_begin(&g, 0);
		tg_rec(&g, ISC_REC_PY_CALL, 10 * pid, 1, U(pid == 1 ? 1 : 5));
		tg_rec(&g, ISC_REC_PY_RETURN, 10 * pid + 1, 0);
		tg_chunk(&g, ISC_CHUNK_EVENTS, pid, pid);
	}
	tg_close(&g, true);
	fclose(f);
	run_merge(&buf, &len, 1, c, &res);
	int a = find(c, ISC_REC_TL_SPAN_BEGIN, 1, 1, 10, -1), b = find(c, ISC_REC_TL_SPAN_BEGIN, 2, 2, 20, -1);
	ok(a >= 0 && b >= 0 && c->ev[a].name_id == c->ev[b].name_id && !strcmp(c->names[a], "work"),
	   "identical definitions in two processes share one global string");
	free(buf);
	free(c);
}

static void test_damage_and_window(void)
{
	char *buf = NULL;
	size_t len;
	struct tg g;
	struct cap *c = calloc(1, sizeof(*c));
	struct isc_merge_result res;
	FILE *f = open_memstream(&buf, &len);
	tg_open(&g, f, 0, "b");
	tg_begin(&g, 0);
	tg_string(&g, 1, ISC_STR_MARK, 0, "tick", "");
	tg_chunk(&g, ISC_CHUNK_STRINGS, 1, 0);
	for (uint64_t r = 0; r < 200; r++) {
		for (uint32_t tid = 1; tid <= 2; tid++) {
			tg_begin(&g, r * 1000);
			for (uint64_t k = 0; k < 5; k++)
				tg_rec(&g, ISC_REC_MARK, r * 1000 + k * 10 + tid, 2, U(1), isc_zigzag((int64_t)r));
			tg_chunk(&g, ISC_CHUNK_EVENTS, 1, tid);
		}
		tg_round(&g, r * 1000 + 999);
	}
	tg_close(&g, true);
	fclose(f);
	int rc = run_merge(&buf, &len, 1, c, &res);
	ok(rc == 0 && res.events_out == 2000, "2000 events through 200 rounds");
	ok(res.max_buffered <= 10, "reorder window bounded by one round (peak %llu buffered)",
	   (unsigned long long)res.max_buffered);
	size_t cut = len * 2 / 3;
	rc = run_merge(&buf, &cut, 1, c, &res);
	ok(rc == 1 && res.events_out > 1000 && res.events_out < 2000 && res.damaged_frames == 1,
	   "truncated trace: exit 1, the %llu events before the damage are kept", (unsigned long long)res.events_out);
	ok(strstr(res.damage, "truncated") != NULL, "the damage message says truncated: %s", res.damage);
	free(buf);
	free(c);
}

static void test_samples_and_exits(void)
{
	char *buf = NULL;
	size_t len;
	struct tg g;
	struct cap *c = calloc(1, sizeof(*c));
	struct isc_merge_result res;
	FILE *f = open_memstream(&buf, &len);
	tg_open(&g, f, 0, "b");
	tg_begin(&g, 0);
	tg_string(&g, 1, ISC_STR_CODE, 1, "worker_loop", "w.py");
	tg_chunk(&g, ISC_CHUNK_STRINGS, 7, 0);
	/* one samples chunk, equal times, written against pid/tid order */
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_THREAD_SAMPLE, 50, 9, U(7), U(8), U(0), U(0), U('S'), U(0), U(0), U(0), U(0));
	tg_rec(&g, ISC_REC_PROC_SAMPLE, 50, 9, U(7), U(0), U(0), U(0), U(0), U(0), U(1), U(0), U(0));
	tg_rec(&g, ISC_REC_MEMINFO, 50, 4, U(1), U(1), U(0), U(0));
	/* a stack sample whose innermost frame the sampler could not name (code_id 0) */
	tg_rec(&g, ISC_REC_PY_SAMPLE, 60, 9, U(7), U(8), U('R'), U(0), U(2), U(0), U(5), U(1), U(9));
	tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
	/* pid 7 calls and dies (os._exit, SIGKILL) at 500 */
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_PY_CALL, 100, 1, U(1));
	tg_rec(&g, ISC_REC_MARK, 200, 2, U(1), U(0));
	tg_chunk(&g, ISC_CHUNK_EVENTS, 7, 8);
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_PROC_EXIT, 500, 3, U(7), isc_zigzag(137), U(1));
	tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
	tg_round(&g, 600);
	/* another process runs on long after */
	tg_begin(&g, 0);
	tg_rec(&g, ISC_REC_MEMINFO, 10000, 4, U(2), U(2), U(0), U(0));
	tg_chunk(&g, ISC_CHUNK_SAMPLES, 0, 0);
	tg_close(&g, true);
	fclose(f);
	int rc = run_merge(&buf, &len, 1, c, &res);
	int mi = find(c, ISC_REC_MEMINFO, 0, 0, 50, -1), ps = find(c, ISC_REC_PROC_SAMPLE, 7, 0, 50, -1),
	    ts = find(c, ISC_REC_THREAD_SAMPLE, 7, 8, 50, -1);
	ok(rc == 0 && mi >= 0 && ps > mi && ts > ps,
	   "records of one samples chunk at equal times follow pid, then tid (%d %d %d)", mi, ps, ts);
	int py = find(c, ISC_REC_PY_SAMPLE, 7, 8, 60, -1);
	ok(py >= 0 && c->frame0[py] < 256 && !strcmp(c->str[c->frame0[py]], "(a Python frame the sampler could not name)"),
	   "a sampled frame of code_id 0 is named for what it is, not <unknown #0> (%s)",
	   py >= 0 && c->frame0[py] < 256 ? c->str[c->frame0[py]] : "none");
	int end = -1;
	for (int i = 0; i < c->n; i++)
		if (c->ev[i].type == ISC_REC_TL_SPAN_END)
			end = i;
	ok(end >= 0 && c->ev[end].ts == 500 && c->ev[end].flags == 1,
	   "a span left open by a dead process ends at its exit, flagged");
	ok(res.late_events == 0, "closing it emits nothing out of order");
	free(buf);
	free(c);
}

int main(void)
{
	test_tiebreaks();
	test_pairing();
	test_strings_across_processes();
	test_damage_and_window();
	test_samples_and_exits();
	return tap_done();
}
