/*
 * analyze_pysample.c - statistics of sampled Python stacks.
 *
 * Every PY_SAMPLE is one thread's stack at one tick: it stands for one
 * sampling period of that thread's time.  A function's self time is the
 * number of samples with it innermost times the period, its total time the
 * number of samples with it anywhere on the stack (once per sample, however
 * deep the recursion); the same per line.  The uncertainty is binomial: of n
 * samples, k fell on the function, and k/n has the Wilson score interval at
 * 95 % (isc_wilson95), which stays inside [0, 1] and is honest for small k;
 * the interval on the time is n x period times it.  The period is 1/hz of
 * the PY_SAMPLER record, or, in a trace cut before it, the mean spacing of
 * the ticks seen.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_format.h"
#include "analyze_pysample.h"

struct row {
	uint32_t name_id, line; /* line: 0 for function rows */
	uint64_t self, total, native, native_on;
	uint64_t interp_self; /* function rows: innermost and running bytecode */
	uint64_t s_interp_self, s_native; /* the same (and native) while a scope was open */
	uint64_t last; /* sample number that last counted total */
	bool torch;
};

struct trow {
	uint32_t pid, tid;
	uint64_t samples, on, interp_on, native_on, off;
	uint64_t torch_on, off_py; /* of native_on: torch ops; of off: bytecode innermost */
};

struct isc_pysamp {
	struct isc_umap fmap, lmap, tmap, torch_files, torch_pids; /* name_id -> row; (name_id, line) -> row; (pid, tid) -> trow */
	struct row *fn, *ln;
	size_t nfn, capfn, nln, capln;
	struct trow *th;
	size_t nth, capth;
	uint64_t n, truncated, ticks_seen, last_tick, first_tick;
	uint64_t scoped_n; /* samples taken while a scope was open on the thread */
	uint64_t py_on, torch_on, other_on, off_py, off_native;
	bool last_torch; /* the last sample added was in a C call counted as a torch op */
	uint64_t s_py_on, s_torch_on, s_other_on, s_off_py, s_off_native; /* the same while a scope was open */
	bool have_sampler;
	uint64_t sampler[6]; /* hz ticks stacks reads failed cpu_ns */
};

int isc_pysamp_new(struct isc_pysamp **ps)
{
	*ps = calloc(1, sizeof(**ps));
	return *ps ? 0 : -ENOMEM;
}

void isc_pysamp_free(struct isc_pysamp *ps)
{
	if (!ps)
		return;
	isc_umap_free(&ps->fmap);
	isc_umap_free(&ps->lmap);
	isc_umap_free(&ps->tmap);
	isc_umap_free(&ps->torch_files);
	isc_umap_free(&ps->torch_pids);
	free(ps->fn);
	free(ps->ln);
	free(ps->th);
	free(ps);
}

bool isc_pysamp_have(const struct isc_pysamp *ps)
{
	return ps && ps->n > 0;
}

void isc_wilson95(uint64_t k, uint64_t n, double *lo, double *hi)
{
	const double z = 1.96;
	if (!n) {
		*lo = *hi = 0;
		return;
	}
	double p = (double)k / (double)n, nn = (double)n, d = 1 + z * z / nn;
	double c = (p + z * z / (2 * nn)) / d;
	double h = z / d * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
	*lo = c - h < 0 ? 0 : c - h;
	*hi = c + h > 1 ? 1 : c + h;
}

static struct row *row_get(struct isc_umap *m, struct row **v, size_t *n, size_t *cap, uint32_t name_id,
			   uint32_t line)
{
	uint32_t *slot;
	if (isc_umap_slot(m, (uint64_t)name_id << 32 | line, &slot))
		return NULL;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(v, cap, *n, sizeof(**v))) {
			isc_umap_del(m, (uint64_t)name_id << 32 | line);
			return NULL;
		}
		memset(&(*v)[*n], 0, sizeof(**v));
		(*v)[*n].name_id = name_id;
		(*v)[*n].line = line;
		(*v)[*n].last = UINT64_MAX;
		*slot = (uint32_t)(*n)++;
	}
	return &(*v)[*slot];
}

/* A code object of torch's own Python files (a path component "torch"):
 * a C call made from there is a torch op. */
static bool torch_code(struct isc_pysamp *ps, const struct isc_timeline *t, uint32_t id)
{
	uint32_t v = isc_umap_get(&ps->torch_files, id), *slot;
	if (v != ISC_UMAP_NONE)
		return v;
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	bool torch = s && s->file && (strstr(s->file, "/torch/") || strstr(s->file, "/torchvision/") ||
				      strstr(s->file, "/torchaudio/"));
	if (!isc_umap_slot(&ps->torch_files, id, &slot))
		*slot = torch;
	return torch;
}

/* Code of the standard library (or frozen in the interpreter): its C calls
 * are builtins and import machinery, never torch ops. */
static bool stdlib_code(const struct isc_timeline *t, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	if (!s || !s->file || !*s->file || s->file[0] == '<')
		return true;
	const char *lib = strstr(s->file, "/lib/python3");
	return lib && !strstr(lib, "-packages/");
}

int isc_pysamp_add(struct isc_pysamp *ps, const struct isc_timeline *t, const struct isc_tl_event *ev, bool in_scope)
{
	if (ev->type == ISC_REC_PY_SAMPLER) {
		if (ev->nf == 6) {
			ps->have_sampler = true;
			memcpy(ps->sampler, ev->f, sizeof(ps->sampler));
		}
		return 0;
	}
	if (ev->type != ISC_REC_PY_SAMPLE || ev->nf != 5)
		return 0;
	const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
	uint64_t depth = ev->f[4], flags = ev->f[3];
	/* on CPU: running, not runnable and kept waiting for a CPU (flags bit 3) */
	bool on = ev->f[2] == 'R' && !(flags & 8);
	unsigned op = flags & 3;
	uint32_t *slot;
	if (isc_umap_slot(&ps->tmap, (uint64_t)ev->pid << 32 | ev->tid, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&ps->th, &ps->capth, ps->nth, sizeof(*ps->th))) {
			isc_umap_del(&ps->tmap, (uint64_t)ev->pid << 32 | ev->tid);
			return -ENOMEM;
		}
		ps->th[ps->nth] = (struct trow){ ev->pid, ev->tid, 0, 0, 0, 0, 0, 0, 0 };
		*slot = (uint32_t)ps->nth++;
	}
	struct trow *tr = &ps->th[*slot];
	uint64_t sn = ps->n++;
	if (!ps->ticks_seen || ev->ts != ps->last_tick) {
		if (!ps->ticks_seen)
			ps->first_tick = ev->ts;
		ps->ticks_seen++;
		ps->last_tick = ev->ts;
	}
	ps->truncated += (flags & 4) != 0;
	ps->scoped_n += in_scope;
	tr->samples++;
	bool native = depth && op != 0, torch = false;
	ps->last_torch = false;
	/* a process with torch's code on a stack uses torch: its operators on
	 * objects (tensor @ tensor) count as torch ops */
	const uint8_t *q = p;
	bool uses_torch = isc_umap_get(&ps->torch_pids, ev->pid) != ISC_UMAP_NONE;
	for (uint64_t k = 0; k < depth && !uses_torch; k++) {
		uint64_t id, line;
		if (isc_get_varint(&q, e, &id) || isc_get_varint(&q, e, &line) || id > UINT32_MAX)
			return -EBADMSG;
		if (torch_code(ps, t, (uint32_t)id)) {
			uses_torch = true;
			if (isc_umap_slot(&ps->torch_pids, ev->pid, &slot))
				return -ENOMEM;
			*slot = 1;
		}
	}
	for (uint64_t k = 0; k < depth; k++) {
		uint64_t id, line;
		if (isc_get_varint(&p, e, &id) || isc_get_varint(&p, e, &line) || id > UINT32_MAX || line > UINT32_MAX)
			return -EBADMSG;
		struct row *f = row_get(&ps->fmap, &ps->fn, &ps->nfn, &ps->capfn, (uint32_t)id, 0);
		struct row *l = row_get(&ps->lmap, &ps->ln, &ps->nln, &ps->capln, (uint32_t)id, (uint32_t)line);
		if (!f || !l)
			return -ENOMEM;
		if (k == 0) {
			f->self++;
			l->self++;
			f->interp_self += !native;
			f->s_interp_self += !native && in_scope;
			if (native) {
				f->native++;
				l->s_native += in_scope;
				/* a C call from torch's Python code is a torch op; in a
				 * process that runs torch, so is one from the user's own
				 * code (torch.matmul(x, w), x @ w): the standard library's
				 * calls stay other C code */
				torch = torch_code(ps, t, (uint32_t)id) || (uses_torch && !stdlib_code(t, (uint32_t)id));
				l->native++;
				l->native_on += on;
				l->torch = torch;
				ps->last_torch = torch;
			}
		}
		if (f->last != sn) {
			f->total++;
			f->last = sn;
		}
		if (l->last != sn) {
			l->total++;
			l->last = sn;
		}
	}
	if (on) {
		tr->on++;
		if (depth && !native) {
			tr->interp_on++;
			ps->py_on++;
			ps->s_py_on += in_scope;
		} else {
			tr->native_on++;
			if (torch) {
				tr->torch_on++;
				ps->torch_on++;
				ps->s_torch_on += in_scope;
			} else {
				ps->other_on++;
				ps->s_other_on += in_scope;
			}
		}
	} else {
		tr->off++;
		if (depth && !native) {
			tr->off_py++;
			ps->off_py++;
			ps->s_off_py += in_scope;
		} else {
			ps->off_native++;
			ps->s_off_native += in_scope;
		}
	}
	return 0;
}

bool isc_pysamp_last_torch(const struct isc_pysamp *ps)
{
	return ps->last_torch;
}

/* The sampling period in ns: 1/hz, else the mean spacing of the ticks seen. */
static double period_ns(const struct isc_pysamp *ps)
{
	if (ps->have_sampler && ps->sampler[0])
		return 1e9 / (double)ps->sampler[0];
	if (ps->ticks_seen >= 2)
		return (double)(ps->last_tick - ps->first_tick) / (double)(ps->ticks_seen - 1);
	return 0;
}

/* Sample counts (python on, torch on, other C on, off in bytecode, off in a call) to ns. */
static void split_of(const struct isc_pysamp *ps, uint64_t py_on, uint64_t torch_on, uint64_t other_on,
		     uint64_t off_py, uint64_t off_native, struct isc_pysamp_split *s)
{
	double per = period_ns(ps);
	s->python_on_ns = (uint64_t)llround((double)py_on * per);
	s->torch_on_ns = (uint64_t)llround((double)torch_on * per);
	s->other_c_on_ns = (uint64_t)llround((double)other_on * per);
	s->off_py_ns = (uint64_t)llround((double)off_py * per);
	s->off_native_ns = (uint64_t)llround((double)off_native * per);
}

void isc_pysamp_split(const struct isc_pysamp *ps, bool in_scopes, struct isc_pysamp_split *s)
{
	if (in_scopes)
		split_of(ps, ps->s_py_on, ps->s_torch_on, ps->s_other_on, ps->s_off_py, ps->s_off_native, s);
	else
		split_of(ps, ps->py_on, ps->torch_on, ps->other_on, ps->off_py, ps->off_native, s);
}

bool isc_pysamp_thread_split(const struct isc_pysamp *ps, uint32_t pid, uint32_t tid, struct isc_pysamp_split *s)
{
	memset(s, 0, sizeof(*s));
	uint32_t i = isc_umap_get(&ps->tmap, (uint64_t)pid << 32 | tid);
	if (i == ISC_UMAP_NONE)
		return false;
	const struct trow *tr = &ps->th[i];
	split_of(ps, tr->interp_on, tr->torch_on, tr->native_on - tr->torch_on, tr->off_py, tr->off - tr->off_py, s);
	return true;
}

static double pct1(uint64_t k, uint64_t n)
{
	return n ? round(10000.0 * (double)k / (double)n) / 100 : 0;
}

/* Time estimate of k of n samples and its 95 % interval, into o. */
static void times(struct isc_jb *jb, cJSON *o, const char *key, uint64_t k, uint64_t n, double per)
{
	char name[40];
	double lo, hi;
	isc_wilson95(k, n, &lo, &hi);
	isc_jb_num(jb, o, key, round((double)k * per));
	snprintf(name, sizeof(name), "%s_low", key);
	isc_jb_num(jb, o, name, round(lo * (double)n * per));
	snprintf(name, sizeof(name), "%s_high", key);
	isc_jb_num(jb, o, name, round(hi * (double)n * per));
}

static void loc(struct isc_jb *jb, cJSON *o, const struct isc_timeline *t, uint32_t id, uint32_t line)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	isc_jb_str(jb, o, "name", s ? s->name : NULL);
	isc_jb_str(jb, o, "file", s ? s->file : NULL);
	isc_jb_num(jb, o, "line", line ? line : s ? s->line : 0);
}

/* memcpy and qsort with a NULL table are undefined even for 0 rows (a
 * timeline with stack samples but no functions, which the fuzzer makes) */
static void rows_copy(void *dst, const void *src, size_t n, size_t size)
{
	if (n)
		memcpy(dst, src, n * size);
}

static void rows_sort(void *rows, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(rows, n, size, cmp);
}

static int by_self(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return a->name_id != b->name_id ? (a->name_id < b->name_id ? -1 : 1) : (a->line < b->line ? -1 : a->line > b->line);
}

static int by_native(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->native != b->native)
		return a->native < b->native ? 1 : -1;
	return by_self(x, y);
}

static int by_thread(const void *x, const void *y)
{
	const struct trow *a = x, *b = y;
	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : (a->tid < b->tid ? -1 : a->tid > b->tid);
}

void isc_pysamp_emit(const struct isc_pysamp *ps, const struct isc_timeline *t, struct isc_jb *jb, cJSON *root,
		     unsigned top_n)
{
	if (!isc_pysamp_have(ps))
		return;
	double per = period_ns(ps);
	uint64_t n = ps->n;
	cJSON *py = isc_jb_obj(jb, root, "python");
	cJSON *s = isc_jb_obj(jb, py, "samples");
	isc_jb_num_or_null(jb, s, "hz", ps->have_sampler, (double)ps->sampler[0]);
	isc_jb_num(jb, s, "period_ns", round(per));
	isc_jb_num(jb, s, "samples", (double)n);
	isc_jb_num(jb, s, "truncated_stacks", (double)ps->truncated);
	isc_jb_str(jb, s, "interval", "wilson_95");
	uint64_t native_on = ps->torch_on + ps->other_on, off = ps->off_py + ps->off_native;
	cJSON *sp = isc_jb_obj(jb, s, "split");
	isc_jb_num(jb, sp, "interpreter_samples", (double)ps->py_on);
	isc_jb_num(jb, sp, "native_samples", (double)native_on);
	isc_jb_num(jb, sp, "torch_op_samples", (double)ps->torch_on);
	isc_jb_num(jb, sp, "off_cpu_samples", (double)off);
	isc_jb_num(jb, sp, "interpreter_pct", pct1(ps->py_on, n));
	isc_jb_num(jb, sp, "native_pct", pct1(native_on, n));
	isc_jb_num(jb, sp, "off_cpu_pct", pct1(off, n));

	/* sorted copies; the accumulators stay as they are */
	size_t nf = ps->nfn, nl = ps->nln, nt = ps->nth;
	struct row *fr = malloc((nf ? nf : 1) * sizeof(*fr)), *lr = malloc((nl ? nl : 1) * sizeof(*lr));
	struct trow *tr = malloc((nt ? nt : 1) * sizeof(*tr));
	if (!fr || !lr || !tr) {
		jb->oom = true;
		goto out;
	}
	rows_copy(fr, ps->fn, nf, sizeof(*fr));
	rows_copy(lr, ps->ln, nl, sizeof(*lr));
	rows_copy(tr, ps->th, nt, sizeof(*tr));
	rows_sort(fr, nf, sizeof(*fr), by_self);
	cJSON *arr = isc_jb_arr(jb, s, "functions");
	for (size_t i = 0; i < nf && i < top_n; i++) {
		cJSON *o = isc_jb_push_obj(jb, arr);
		loc(jb, o, t, fr[i].name_id, 0);
		isc_jb_num(jb, o, "self_samples", (double)fr[i].self);
		isc_jb_num(jb, o, "total_samples", (double)fr[i].total);
		times(jb, o, "self_ns", fr[i].self, n, per);
		times(jb, o, "total_ns", fr[i].total, n, per);
		isc_jb_num(jb, o, "self_pct", pct1(fr[i].self, n));
		isc_jb_num(jb, o, "total_pct", pct1(fr[i].total, n));
	}
	rows_sort(lr, nl, sizeof(*lr), by_self);
	arr = isc_jb_arr(jb, s, "lines");
	for (size_t i = 0; i < nl && i < top_n && lr[i].self; i++) {
		cJSON *o = isc_jb_push_obj(jb, arr);
		loc(jb, o, t, lr[i].name_id, lr[i].line);
		isc_jb_num(jb, o, "self_samples", (double)lr[i].self);
		isc_jb_num(jb, o, "total_samples", (double)lr[i].total);
		times(jb, o, "self_ns", lr[i].self, n, per);
		isc_jb_num(jb, o, "self_pct", pct1(lr[i].self, n));
		isc_jb_num(jb, o, "native_samples", (double)lr[i].native);
	}
	rows_sort(lr, nl, sizeof(*lr), by_native);
	arr = isc_jb_arr(jb, s, "native_calls");
	for (size_t i = 0; i < nl && i < top_n && lr[i].native; i++) {
		cJSON *o = isc_jb_push_obj(jb, arr);
		loc(jb, o, t, lr[i].name_id, lr[i].line);
		isc_jb_num(jb, o, "samples", (double)lr[i].native);
		isc_jb_num(jb, o, "on_cpu_samples", (double)lr[i].native_on);
		times(jb, o, "ns", lr[i].native, n, per);
		isc_jb_bool(jb, o, "torch", lr[i].torch);
	}
	rows_sort(tr, nt, sizeof(*tr), by_thread);
	arr = isc_jb_arr(jb, s, "threads");
	for (size_t i = 0; i < nt; i++) {
		cJSON *o = isc_jb_push_obj(jb, arr);
		isc_jb_num(jb, o, "pid", tr[i].pid);
		isc_jb_num(jb, o, "tid", tr[i].tid);
		isc_jb_num(jb, o, "samples", (double)tr[i].samples);
		isc_jb_num(jb, o, "on_cpu_samples", (double)tr[i].on);
		isc_jb_num(jb, o, "off_cpu_samples", (double)tr[i].off);
		isc_jb_num(jb, o, "interpreter_samples", (double)tr[i].interp_on);
		isc_jb_num(jb, o, "native_samples", (double)tr[i].native_on);
		isc_jb_num(jb, o, "on_cpu_pct", pct1(tr[i].on, tr[i].samples));
		times(jb, o, "on_cpu_ns", tr[i].on, tr[i].samples, per);
	}
out:
	free(fr);
	free(lr);
	free(tr);
}

/* Sort keys of the merged tables: bytecode self samples of a function,
 * C samples of a line; all samples or only those inside a scope. */
static bool g_scoped;

static uint64_t key_f(const struct row *r)
{
	return g_scoped ? r->s_interp_self : r->interp_self;
}

static uint64_t key_l(const struct row *r)
{
	return g_scoped ? r->s_native : r->native;
}

static int by_key_f(const void *x, const void *y)
{
	uint64_t a = key_f(x), b = key_f(y);
	return a != b ? (a < b ? 1 : -1) : by_self(x, y);
}

static int by_key_l(const void *x, const void *y)
{
	uint64_t a = key_l(x), b = key_l(y);
	return a != b ? (a < b ? 1 : -1) : by_self(x, y);
}

/*
 * python rows (bytecode self time) and op rows (a C call, named by its
 * calling line) merged by self time into arr, as the exact mode's tables;
 * self_pct of denom_ns.  The arrays are sorted here.
 */
static void merged_table(const struct isc_timeline *t, struct isc_jb *jb, cJSON *arr, struct row *fr, size_t nf,
			 struct row *lr, size_t nl, bool scoped, double per, uint64_t denom_ns, unsigned top_n)
{
	g_scoped = scoped;
	rows_sort(fr, nf, sizeof(*fr), by_key_f);
	rows_sort(lr, nl, sizeof(*lr), by_key_l);
	size_t fi = 0, li = 0;
	for (unsigned k = 0; k < top_n; k++) {
		uint64_t fs = fi < nf ? key_f(&fr[fi]) : 0, ls = li < nl ? key_l(&lr[li]) : 0;
		if (!fs && !ls)
			break;
		bool isfn = fs >= ls;
		const struct row *r = isfn ? &fr[fi++] : &lr[li++];
		uint64_t self = isfn ? fs : ls;
		const struct isc_tl_string *s = isc_timeline_string_borrow(t, r->name_id);
		cJSON *o = isc_jb_push_obj(jb, arr);
		char name[1100];
		snprintf(name, sizeof(name), isfn ? "%s" : "C call in %s", s ? s->name : "?");
		isc_jb_str(jb, o, "name", name);
		isc_jb_str(jb, o, "kind", isfn ? "python" : "op");
		isc_jb_str(jb, o, "file", s ? s->file : "");
		isc_jb_num(jb, o, "line", isfn ? (s ? s->line : 0) : r->line);
		isc_jb_num_or_null(jb, o, "calls", false, 0);
		isc_jb_num(jb, o, "self_ns", round((double)self * per));
		if (!scoped)
			isc_jb_num(jb, o, "total_ns", round((double)(isfn ? r->total : self) * per));
		isc_jb_num(jb, o, "self_pct", denom_ns ? round(10000.0 * (double)self * per / (double)denom_ns) / 100 : 0);
		if (!scoped && isfn)
			isc_jb_num(jb, o, "ops_self_ns", round((double)r->native * per));
		if (!isfn) /* the rules' torch ops: a C call row has no op name to tell by */
			isc_jb_bool(jb, o, "torch", r->torch);
	}
}

static int by_name_line(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->name_id != b->name_id)
		return a->name_id < b->name_id ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/*
 * The C-call rows of the CPU tables, one per calling function: the lines
 * of lr (n of them) summed into their function's first row, which keeps
 * the line with the most C samples (the exact mode's tables have one row
 * per op, not per call site; torch.matmul called from three lines of
 * forward is one "C call in forward", pointed at its heaviest line; the
 * per-line figures stay in python.samples and top_op_callers).  Returns
 * the new count.
 */
static size_t per_function(struct row *lr, size_t n)
{
	rows_sort(lr, n, sizeof(*lr), by_name_line);
	size_t m = 0;
	for (size_t i = 0, j; i < n; i = j) {
		struct row acc = lr[i];
		uint64_t best = lr[i].native;
		for (j = i + 1; j < n && lr[j].name_id == lr[i].name_id; j++) {
			if (lr[j].native > best) {
				best = lr[j].native;
				acc.line = lr[j].line;
			}
			acc.self += lr[j].self;
			acc.total += lr[j].total;
			acc.native += lr[j].native;
			acc.native_on += lr[j].native_on;
			acc.s_native += lr[j].s_native;
			acc.torch = acc.torch || lr[j].torch;
		}
		lr[m++] = acc;
	}
	return m;
}

void isc_pysamp_emit_cpu(const struct isc_pysamp *ps, const struct isc_timeline *t, struct isc_jb *jb, cJSON *cpu,
			 uint64_t traced_ns, unsigned top_n)
{
	double per = period_ns(ps);
	size_t nf = ps->nfn, nl = ps->nln;
	struct row *fr = malloc((nf ? nf : 1) * sizeof(*fr)), *lr = malloc((nl ? nl : 1) * sizeof(*lr));
	/* the span tables hold no time in sample mode (functions named only to
	 * charge off-CPU time): replaced, not appended to */
	cJSON_DeleteItemFromObject(cpu, "top_functions");
	cJSON_DeleteItemFromObject(cpu, "top_functions_in_scopes");
	cJSON_DeleteItemFromObject(cpu, "top_op_callers");
	cJSON *top = isc_jb_arr(jb, cpu, "top_functions"), *callers = isc_jb_arr(jb, cpu, "top_op_callers");
	cJSON *in = isc_jb_arr(jb, cpu, "top_functions_in_scopes");
	if (!fr || !lr || !top || !callers || !in) {
		jb->oom |= !fr || !lr;
		goto out;
	}
	rows_copy(fr, ps->fn, nf, sizeof(*fr));
	rows_copy(lr, ps->ln, nl, sizeof(*lr));
	cJSON_DeleteItemFromObject(cpu, "functions");
	isc_jb_num(jb, cpu, "functions", (double)nf);
	size_t ncf = per_function(lr, nl);
	merged_table(t, jb, top, fr, nf, lr, ncf, false, per, traced_ns, top_n);
	uint64_t scoped_ns = (uint64_t)llround((double)ps->scoped_n * per);
	cJSON_DeleteItemFromObject(cpu, "scoped_ns");
	isc_jb_num(jb, cpu, "scoped_ns", (double)scoped_ns);
	merged_table(t, jb, in, fr, nf, lr, ncf, true, per, scoped_ns, top_n);
	/* the Python lines calling torch ops most (per line again) */
	rows_copy(lr, ps->ln, nl, sizeof(*lr));
	g_scoped = false;
	rows_sort(lr, nl, sizeof(*lr), by_key_l);
	for (size_t i = 0, k = 0; i < nl && k < top_n && lr[i].native; i++) {
		if (!lr[i].torch)
			continue;
		k++;
		cJSON *o = isc_jb_push_obj(jb, callers);
		loc(jb, o, t, lr[i].name_id, lr[i].line);
		isc_jb_num(jb, o, "ops_self_ns", round((double)lr[i].native * per));
		isc_jb_num(jb, o, "ops_pct", traced_ns ? round(10000.0 * (double)lr[i].native * per / (double)traced_ns) / 100 : 0);
	}
out:
	free(fr);
	free(lr);
}

void isc_pysamp_emit_sampler(const struct isc_pysamp *ps, struct isc_jb *jb, cJSON *obj, uint64_t wall_ns)
{
	cJSON *o = isc_jb_obj(jb, obj, "sampler");
	bool h = ps->have_sampler;
	isc_jb_num_or_null(jb, o, "hz", h, (double)ps->sampler[0]);
	isc_jb_num_or_null(jb, o, "ticks", h, (double)ps->sampler[1]);
	isc_jb_num(jb, o, "stacks", (double)ps->n);
	isc_jb_num_or_null(jb, o, "reads", h, (double)ps->sampler[3]);
	isc_jb_num_or_null(jb, o, "cpu_ns", h, (double)ps->sampler[5]);
	isc_jb_num_or_null(jb, o, "cpu_pct", h && wall_ns, pct1(ps->sampler[5], wall_ns));
	isc_jb_num_or_null(jb, o, "per_tick_ns", h && ps->sampler[1], round((double)ps->sampler[5] / (double)(ps->sampler[1] ? ps->sampler[1] : 1)));
}
