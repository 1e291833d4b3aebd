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
 *
 * A sample is in C when its innermost frame sits in a call of a C callee
 * or an operator on an extension's object, as the recorder read it from
 * the frame's value stack (PY_SAMPLE's callee, 1.4); the C time is kept
 * by (callee, calling function), and counts as torch ops when the callee
 * is torch's (its module, or a type deriving from one of torch's).  A
 * trace before 1.4 (no callee) counts every call or operator as an unnamed C
 * call, a torch op when made from torch's own Python code.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_format.h"
#include "isc_findings.h" /* isc_is_torch_op */
#include "analyze_pysample.h"

/* The name of C time whose callee the recorder could not read (or a trace's before 1.4). */
#define UNNAMED_C "(a C call the sampler could not name)"

struct row {
	uint32_t name_id, line; /* line: 0 for function rows */
	uint64_t self, total, native; /* native: innermost and in C */
	uint64_t interp_self; /* function rows: innermost and running bytecode */
	uint64_t s_interp_self; /* the same while a scope was open */
	uint64_t cfm;  /* function rows: innermost in a call of a C function or method (a C call span in exact mode) */
	uint64_t last; /* sample number that last counted total */
};

/* C time of one callee called from one function (the innermost frame's). */
struct crow {
	uint32_t callee, caller; /* string ids: CFUNC (0: unnamed), CODE */
	uint64_t samples, on, s_samples;
	uint8_t kind;            /* enum isc_py_callee_kind */
	bool torch;
};

/* A thread's run-queue wait so far (schedstat, 1.9) at a sample's time. */
struct wpoint {
	uint64_t ts, wait_ns;
};

struct trow {
	uint32_t pid, tid;
	uint64_t samples, on, interp_on, native_on, off;
	uint64_t torch_on, off_py; /* of native_on: torch ops; of off: bytecode innermost */
	struct wpoint *w;          /* its samples' schedstat waits, in time order */
	size_t nw, capw;
};

struct isc_pysamp {
	struct isc_umap fmap, lmap, tmap, torch_files; /* name_id -> row; (name_id, line) -> row; (pid, tid) -> trow */
	struct isc_umap cmap, slotmap; /* (callee, caller) -> crow; (thread, callee, caller) of slot samples -> count */
	struct row *fn, *ln;
	size_t nfn, capfn, nln, capln;
	struct crow *cr;
	size_t ncr, capcr;
	uint64_t *slotn;
	size_t nslotn, capslotn;
	uint64_t unidentified; /* samples in C whose callee could not be read */
	struct trow *th;
	size_t nth, capth;
	uint64_t n, truncated, ticks_seen, last_tick, first_tick;
	uint64_t scoped_n; /* samples taken while a scope was open on the thread */
	uint64_t py_on, torch_on, other_on, off_py, off_native;
	bool last_torch, last_in_c; /* the last sample added: in C, counted as a torch op */
	bool last_busy;             /* the last sample added: its thread running or runnable (state R) */
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
	isc_umap_free(&ps->cmap);
	isc_umap_free(&ps->slotmap);
	free(ps->cr);
	free(ps->slotn);
	free(ps->fn);
	free(ps->ln);
	for (size_t i = 0; i < ps->nth; i++)
		free(ps->th[i].w);
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

/* The crow of (callee, caller), made on first sight. */
static struct crow *crow_get(struct isc_pysamp *ps, uint32_t callee, uint32_t caller)
{
	uint32_t *slot;
	uint64_t key = (uint64_t)callee << 32 | caller;
	if (isc_umap_slot(&ps->cmap, key, &slot))
		return NULL;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&ps->cr, &ps->capcr, ps->ncr, sizeof(*ps->cr))) {
			isc_umap_del(&ps->cmap, key);
			return NULL;
		}
		ps->cr[ps->ncr] = (struct crow){ callee, caller, 0, 0, 0, ISC_PY_CALLEE_UNKNOWN, false };
		*slot = (uint32_t)ps->ncr++;
	}
	return &ps->cr[*slot];
}

/* Whether the C callee of string id id is torch's by its name and module. */
static bool torch_callee(const struct isc_timeline *t, uint32_t id)
{
	const struct isc_tl_string *s = id ? isc_timeline_string_borrow(t, id) : NULL;
	return s && isc_is_torch_op(s->name, s->file);
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
	ps->last_busy = ev->f[2] == 'R';
	unsigned op = flags & 3;
	uint32_t *slot;
	if (isc_umap_slot(&ps->tmap, (uint64_t)ev->pid << 32 | ev->tid, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&ps->th, &ps->capth, ps->nth, sizeof(*ps->th))) {
			isc_umap_del(&ps->tmap, (uint64_t)ev->pid << 32 | ev->tid);
			return -ENOMEM;
		}
		ps->th[ps->nth] = (struct trow){ .pid = ev->pid, .tid = ev->tid };
		*slot = (uint32_t)ps->nth++;
	}
	uint32_t ti = *slot;
	struct trow *tr = &ps->th[ti];
	uint64_t sn = ps->n++;
	if (!ps->ticks_seen || ev->ts != ps->last_tick) {
		if (!ps->ticks_seen)
			ps->first_tick = ev->ts;
		ps->ticks_seen++;
		ps->last_tick = ev->ts;
	}
	ps->truncated += (flags & ISC_PY_SAMPLE_TRUNCATED) != 0;
	ps->scoped_n += in_scope;
	tr->samples++;
	/* the callee after the frames (1.4); a trace before 1.4: every call or operator an unnamed C call */
	const uint8_t *q = p;
	uint64_t callee_id = 0, ckind = ISC_PY_CALLEE_UNKNOWN, id, line, caller = 0;
	for (uint64_t k = 0; k < depth; k++) {
		if (isc_get_varint(&q, e, &id) || isc_get_varint(&q, e, &line) || id > UINT32_MAX || line > UINT32_MAX)
			return -EBADMSG;
		if (!k)
			caller = id;
	}
	bool named = depth && (flags & ISC_PY_SAMPLE_CALLEE);
	if (named && (isc_get_varint(&q, e, &callee_id) || isc_get_varint(&q, e, &ckind) || callee_id > UINT32_MAX))
		return -EBADMSG;
	/* 1.9: the thread's schedstat after the callee; its wait so far, kept when it never goes back */
	uint64_t run_ns, wait_ns;
	if (flags & ISC_PY_SAMPLE_SCHED) {
		if (isc_get_varint(&q, e, &run_ns) || isc_get_varint(&q, e, &wait_ns))
			return -EBADMSG;
		if (!tr->nw || (ev->ts > tr->w[tr->nw - 1].ts && wait_ns >= tr->w[tr->nw - 1].wait_ns)) {
			if (isc_grow(&tr->w, &tr->capw, tr->nw, sizeof(*tr->w)))
				return -ENOMEM;
			tr->w[tr->nw++] = (struct wpoint){ ev->ts, wait_ns };
		}
	}
	unsigned kind = named ? (unsigned)(ckind & 7) : op ? ISC_PY_CALLEE_UNKNOWN : ISC_PY_CALLEE_NONE;
	/* in C: a C callee, or a call (instruction class 1) whose callee could not be read (an
	 * operator that could not be read is most often the interpreter's) */
	bool native = depth && ((kind >= ISC_PY_CALLEE_FUNCTION && kind <= ISC_PY_CALLEE_OBJECT) ||
				(kind == ISC_PY_CALLEE_UNKNOWN && (named ? op == 1 : op != 0)));
	bool torch = false;
	if (native && kind != ISC_PY_CALLEE_UNKNOWN)
		torch = (ckind & ISC_PY_CALLEE_TORCH) || torch_callee(t, (uint32_t)callee_id);
	else if (native) /* unread: a call made from torch's own Python code */
		torch = torch_code(ps, t, (uint32_t)caller);
	if (native && kind == ISC_PY_CALLEE_UNKNOWN) {
		callee_id = 0;
		ps->unidentified++;
	}
	ps->last_in_c = native;
	ps->last_torch = torch;
	for (uint64_t k = 0; k < depth; k++) {
		if (isc_get_varint(&p, e, &id) || isc_get_varint(&p, e, &line))
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
			f->cfm += native && (kind == ISC_PY_CALLEE_FUNCTION || kind == ISC_PY_CALLEE_METHOD);
			if (native) {
				f->native++;
				l->native++;
				struct crow *c = crow_get(ps, (uint32_t)callee_id, (uint32_t)id);
				if (!c)
					return -ENOMEM;
				c->samples++;
				c->on += on;
				c->s_samples += in_scope;
				c->kind = (uint8_t)kind;
				c->torch = c->torch || torch;
				/* exact mode moves slot time out of the function by thread (isc_pysamp_slot_thread) */
				if (kind == ISC_PY_CALLEE_SLOT && ti < 4096) {
					uint64_t key = (uint64_t)ti << 52 | (uint64_t)(c - ps->cr);
					uint32_t *sn;
					if (isc_umap_slot(&ps->slotmap, key, &sn))
						return -ENOMEM;
					if (*sn == ISC_UMAP_NONE) {
						if (isc_grow(&ps->slotn, &ps->capslotn, ps->nslotn, sizeof(*ps->slotn))) {
							isc_umap_del(&ps->slotmap, key);
							return -ENOMEM;
						}
						ps->slotn[ps->nslotn] = 0;
						*sn = (uint32_t)ps->nslotn++;
					}
					ps->slotn[*sn]++;
				}
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

/* The wait so far at time ts, linear between the samples around it; false outside them. */
static bool wait_at(const struct trow *tr, uint64_t ts, double *w)
{
	size_t lo = 0, hi = tr->nw;
	if (!tr->nw || ts < tr->w[0].ts || ts > tr->w[tr->nw - 1].ts)
		return false;
	while (hi - lo > 1) { /* the last point at or before ts */
		size_t mid = lo + (hi - lo) / 2;
		if (tr->w[mid].ts <= ts)
			lo = mid;
		else
			hi = mid;
	}
	const struct wpoint *a = &tr->w[lo], *b = lo + 1 < tr->nw ? &tr->w[lo + 1] : a;
	*w = (double)a->wait_ns;
	if (b->ts > a->ts)
		*w += (double)(b->wait_ns - a->wait_ns) * (double)(ts - a->ts) / (double)(b->ts - a->ts);
	return true;
}

bool isc_pysamp_cpu_wait(const struct isc_pysamp *ps, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
			 uint64_t *wait_ns)
{
	uint32_t ti = isc_umap_get(&ps->tmap, (uint64_t)pid << 32 | tid);
	double a, b;
	if (ti == ISC_UMAP_NONE || to < from || !wait_at(&ps->th[ti], from, &a) || !wait_at(&ps->th[ti], to, &b))
		return false;
	double w = b - a > 0 ? b - a : 0;
	*wait_ns = (uint64_t)llround(w < (double)(to - from) ? w : (double)(to - from));
	return true;
}

bool isc_pysamp_last_busy(const struct isc_pysamp *ps)
{
	return ps->last_busy;
}

bool isc_pysamp_last_torch(const struct isc_pysamp *ps)
{
	return ps->last_torch;
}

bool isc_pysamp_last_in_c(const struct isc_pysamp *ps)
{
	return ps->last_in_c;
}

int isc_pysamp_slots(const struct isc_pysamp *ps, struct isc_pysamp_slot **out, size_t *n)
{
	size_t m = 0;
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < ps->ncr; i++)
		m += ps->cr[i].kind == ISC_PY_CALLEE_SLOT;
	if (!m)
		return 0;
	struct isc_pysamp_slot *v = calloc(m, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ps->ncr; i++) {
		const struct crow *c = &ps->cr[i];
		if (c->kind != ISC_PY_CALLEE_SLOT)
			continue;
		uint32_t fi = isc_umap_get(&ps->fmap, (uint64_t)c->caller << 32);
		const struct row *f = fi != ISC_UMAP_NONE ? &ps->fn[fi] : NULL;
		v[(*n)++] = (struct isc_pysamp_slot){ c->caller, c->callee, c->samples, f && f->self > f->cfm ? f->self - f->cfm : 0,
						      c->torch, (uint32_t)i };
	}
	*out = v;
	return 0;
}

uint64_t isc_pysamp_slot_thread(const struct isc_pysamp *ps, const struct isc_pysamp_slot *s, uint32_t pid, uint32_t tid)
{
	uint32_t ti = isc_umap_get(&ps->tmap, (uint64_t)pid << 32 | tid);
	uint32_t k = ti != ISC_UMAP_NONE && ti < 4096 ? isc_umap_get(&ps->slotmap, (uint64_t)ti << 52 | s->row) : ISC_UMAP_NONE;
	return k != ISC_UMAP_NONE ? ps->slotn[k] : 0;
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

static int by_self(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return a->name_id != b->name_id ? (a->name_id < b->name_id ? -1 : 1) : (a->line < b->line ? -1 : a->line > b->line);
}

static int by_thread(const void *x, const void *y)
{
	const struct trow *a = x, *b = y;
	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : (a->tid < b->tid ? -1 : a->tid > b->tid);
}

static int by_crow(const void *x, const void *y)
{
	const struct crow *a = x, *b = y;
	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	if (a->callee != b->callee)
		return a->callee < b->callee ? -1 : 1;
	return a->caller < b->caller ? -1 : a->caller > b->caller;
}

static const char *kind_name(uint8_t kind)
{
	switch (kind) {
	case ISC_PY_CALLEE_FUNCTION: return "function";
	case ISC_PY_CALLEE_METHOD: return "method";
	case ISC_PY_CALLEE_SLOT: return "slot";
	case ISC_PY_CALLEE_OBJECT: return "object";
	default: return "unknown";
	}
}

/* A C callee's name and module: its CFUNC string, or the unnamed one. */
static void callee_loc(struct isc_jb *jb, cJSON *o, const struct isc_timeline *t, uint32_t id)
{
	const struct isc_tl_string *s = id ? isc_timeline_string_borrow(t, id) : NULL;
	isc_jb_str(jb, o, "name", s ? s->name : UNNAMED_C);
	isc_jb_str(jb, o, "file", s ? s->file : "");
}

/* "caller": the Python function (name, file, first line) whose frame made the call. */
static void caller_obj(struct isc_jb *jb, cJSON *o, const struct isc_timeline *t, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	cJSON *c = isc_jb_obj(jb, o, "caller");
	isc_jb_str(jb, c, "name", s ? s->name : "?");
	isc_jb_str(jb, c, "file", s ? s->file : "");
	isc_jb_num(jb, c, "line", s ? s->line : 0);
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
	isc_jb_num(jb, sp, "unidentified_samples", (double)ps->unidentified);

	/* sorted copies; the accumulators stay as they are */
	size_t nf = ps->nfn, nl = ps->nln, nt = ps->nth;
	struct row *fr = malloc((nf ? nf : 1) * sizeof(*fr)), *lr = malloc((nl ? nl : 1) * sizeof(*lr));
	struct trow *tr = malloc((nt ? nt : 1) * sizeof(*tr));
	struct crow *cr = NULL;
	if (!fr || !lr || !tr) {
		jb->oom = true;
		goto out;
	}
	isc_copy_n(fr, ps->fn, nf, sizeof(*fr));
	isc_copy_n(lr, ps->ln, nl, sizeof(*lr));
	isc_copy_n(tr, ps->th, nt, sizeof(*tr));
	isc_sort(fr, nf, sizeof(*fr), by_self);
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
	isc_sort(lr, nl, sizeof(*lr), by_self);
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
	/* C time by callee and calling function, most first */
	size_t nc = ps->ncr;
	cr = malloc((nc ? nc : 1) * sizeof(*cr));
	if (!cr) {
		jb->oom = true;
		goto out;
	}
	isc_copy_n(cr, ps->cr, nc, sizeof(*cr));
	isc_sort(cr, nc, sizeof(*cr), by_crow);
	arr = isc_jb_arr(jb, s, "native_calls");
	for (size_t i = 0; i < nc && i < top_n; i++) {
		cJSON *o = isc_jb_push_obj(jb, arr);
		callee_loc(jb, o, t, cr[i].callee);
		isc_jb_str(jb, o, "callee_kind", kind_name(cr[i].kind));
		caller_obj(jb, o, t, cr[i].caller);
		isc_jb_num(jb, o, "samples", (double)cr[i].samples);
		isc_jb_num(jb, o, "on_cpu_samples", (double)cr[i].on);
		times(jb, o, "ns", cr[i].samples, n, per);
		isc_jb_bool(jb, o, "torch", cr[i].torch);
	}
	isc_sort(tr, nt, sizeof(*tr), by_thread);
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
	free(cr);
}

/* One op row: a callee's C samples summed over its calling functions. */
struct orow {
	uint32_t callee, caller; /* caller: the calling function with the most of them */
	uint64_t samples, s_samples, caller_samples;
	bool torch;
};

static int by_callee(const void *x, const void *y)
{
	const struct crow *a = x, *b = y;
	if (a->callee != b->callee)
		return a->callee < b->callee ? -1 : 1;
	if (a->samples != b->samples)
		return a->samples < b->samples ? 1 : -1;
	return a->caller < b->caller ? -1 : a->caller > b->caller;
}

/* The op rows of the CPU tables from the crows (n of them, sorted here) into o; returns their count. */
static size_t op_rows(struct crow *c, size_t n, struct orow *o)
{
	isc_sort(c, n, sizeof(*c), by_callee);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (!m || o[m - 1].callee != c[i].callee)
			o[m++] = (struct orow){ c[i].callee, c[i].caller, 0, 0, c[i].samples, false };
		o[m - 1].samples += c[i].samples;
		o[m - 1].s_samples += c[i].s_samples;
		o[m - 1].torch = o[m - 1].torch || c[i].torch;
	}
	return m;
}

/* Sort keys of the merged tables: bytecode self samples of a function,
 * C samples of a callee; all samples or only those inside a scope. */
static bool g_scoped;

static uint64_t key_f(const struct row *r)
{
	return g_scoped ? r->s_interp_self : r->interp_self;
}

static uint64_t key_o(const struct orow *r)
{
	return g_scoped ? r->s_samples : r->samples;
}

static int by_key_f(const void *x, const void *y)
{
	uint64_t a = key_f(x), b = key_f(y);
	return a != b ? (a < b ? 1 : -1) : by_self(x, y);
}

static int by_key_o(const void *x, const void *y)
{
	const struct orow *a = x, *b = y;
	uint64_t ka = key_o(a), kb = key_o(b);
	if (ka != kb)
		return ka < kb ? 1 : -1;
	return a->callee < b->callee ? -1 : a->callee > b->callee;
}

/*
 * python rows (bytecode self time) and op rows (a C callee, named as exact
 * mode names it: the same rows for the same calls) merged by self time
 * into arr, as the exact mode's tables; self_pct of denom_ns.  The arrays
 * are sorted here.
 */
static void merged_table(const struct isc_timeline *t, struct isc_jb *jb, cJSON *arr, struct row *fr, size_t nf,
			 struct orow *orw, size_t no, bool scoped, double per, uint64_t denom_ns, unsigned top_n)
{
	g_scoped = scoped;
	isc_sort(fr, nf, sizeof(*fr), by_key_f);
	isc_sort(orw, no, sizeof(*orw), by_key_o);
	size_t fi = 0, oi = 0;
	for (unsigned k = 0; k < top_n; k++) {
		uint64_t fs = fi < nf ? key_f(&fr[fi]) : 0, os = oi < no ? key_o(&orw[oi]) : 0;
		if (!fs && !os)
			break;
		bool isfn = fs >= os;
		uint64_t self = isfn ? fs : os;
		cJSON *o = isc_jb_push_obj(jb, arr);
		if (isfn) {
			const struct row *r = &fr[fi++];
			const struct isc_tl_string *s = isc_timeline_string_borrow(t, r->name_id);
			isc_jb_str(jb, o, "name", s ? s->name : "?");
			isc_jb_str(jb, o, "kind", "python");
			isc_jb_str(jb, o, "file", s ? s->file : "");
			isc_jb_num(jb, o, "line", s ? s->line : 0);
		} else {
			const struct orow *r = &orw[oi++];
			callee_loc(jb, o, t, r->callee);
			isc_jb_str(jb, o, "kind", "op");
			isc_jb_num(jb, o, "line", 0);
		}
		isc_jb_num_or_null(jb, o, "calls", false, 0);
		isc_jb_num(jb, o, "self_ns", round((double)self * per));
		if (!scoped)
			isc_jb_num(jb, o, "total_ns", round((double)(isfn ? fr[fi - 1].total : self) * per));
		isc_jb_num(jb, o, "self_pct", denom_ns ? round(10000.0 * (double)self * per / (double)denom_ns) / 100 : 0);
		if (!scoped && isfn)
			isc_jb_num(jb, o, "ops_self_ns", round((double)fr[fi - 1].native * per));
		if (!isfn) { /* torch's by the callee; the function calling it most (not part of the row's identity) */
			isc_jb_bool(jb, o, "torch", orw[oi - 1].torch);
			caller_obj(jb, o, t, orw[oi - 1].caller);
		}
	}
}

static int by_op_callers(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->native != b->native)
		return a->native < b->native ? 1 : -1;
	return a->name_id < b->name_id ? -1 : a->name_id > b->name_id;
}

void isc_pysamp_emit_cpu(const struct isc_pysamp *ps, const struct isc_timeline *t, struct isc_jb *jb, cJSON *cpu,
			 uint64_t traced_ns, unsigned top_n)
{
	double per = period_ns(ps);
	size_t nf = ps->nfn, nc = ps->ncr;
	struct row *fr = malloc((nf ? nf : 1) * sizeof(*fr));
	struct crow *cr = malloc((nc ? nc : 1) * sizeof(*cr));
	struct orow *orw = malloc((nc ? nc : 1) * sizeof(*orw));
	/* the span tables hold no time in sample mode (functions named only to
	 * charge off-CPU time): replaced, not appended to */
	cJSON_DeleteItemFromObject(cpu, "top_functions");
	cJSON_DeleteItemFromObject(cpu, "top_functions_in_scopes");
	cJSON_DeleteItemFromObject(cpu, "top_op_callers");
	cJSON *top = isc_jb_arr(jb, cpu, "top_functions"), *callers = isc_jb_arr(jb, cpu, "top_op_callers");
	cJSON *in = isc_jb_arr(jb, cpu, "top_functions_in_scopes");
	if (!fr || !cr || !orw || !top || !callers || !in) {
		jb->oom |= !fr || !cr || !orw;
		goto out;
	}
	isc_copy_n(fr, ps->fn, nf, sizeof(*fr));
	isc_copy_n(cr, ps->cr, nc, sizeof(*cr));
	cJSON_DeleteItemFromObject(cpu, "functions");
	isc_jb_num(jb, cpu, "functions", (double)nf);
	size_t no = op_rows(cr, nc, orw);
	merged_table(t, jb, top, fr, nf, orw, no, false, per, traced_ns, top_n);
	uint64_t scoped_ns = (uint64_t)llround((double)ps->scoped_n * per);
	cJSON_DeleteItemFromObject(cpu, "scoped_ns");
	isc_jb_num(jb, cpu, "scoped_ns", (double)scoped_ns);
	merged_table(t, jb, in, fr, nf, orw, no, true, per, scoped_ns, top_n);
	/* the Python functions whose frames were in C calls most, as exact mode's */
	isc_sort(fr, nf, sizeof(*fr), by_op_callers);
	for (size_t i = 0; i < nf && i < 10 && fr[i].native; i++) {
		cJSON *o = isc_jb_push_obj(jb, callers);
		loc(jb, o, t, fr[i].name_id, 0);
		isc_jb_num(jb, o, "ops_self_ns", round((double)fr[i].native * per));
		isc_jb_num(jb, o, "ops_pct", traced_ns ? round(10000.0 * (double)fr[i].native * per / (double)traced_ns) / 100 : 0);
	}
out:
	free(fr);
	free(cr);
	free(orw);
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
