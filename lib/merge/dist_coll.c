/*
 * dist_coll.c - which events of a timeline are collectives, and the
 * collectives of each unit (a rank, or a merge input) in order
 * (isc_dist.h).
 *
 * Two views of one collective, chosen per unit:
 *
 *   GPU   a communication kernel (GPU_OP, "nccl" or "rccl" in its name):
 *         it starts when its rank arrives and spins until every rank has,
 *         so its start is the arrival and its shortest duration across
 *         ranks the transfer.  Used when the unit has any.
 *   CPU   a collective call: a scope "BACKEND:OP" (the PyTorch profiler's
 *         record_function around a collective, or the Python agent's
 *         wrapper, which also writes dist.seq, dist.pg and
 *         dist.bytes.DTYPE marks inside it).  A blocking call returns when
 *         the collective completes.
 *
 * Channel: kernels by (device, stream), calls by thread, numbered in order
 * of their first collective; a collective's idx is its position on its
 * channel, which matches collectives across ranks when no sequence number
 * is known (older traces: one channel per process group, in launch order).
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "isc_dist.h"
#include "isc_format.h" /* ISC_REC_*, ISC_SPAN_SCOPE, ISC_GPU_KERNEL, ISC_STR_* */

/* ---- names -------------------------------------------------------------- */
static const char *const op_names[ISC_COLL_N] = {
	"", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier", "broadcast",
	"reduce", "gather", "scatter", "send", "recv", "send_recv", "other",
};

const char *isc_coll_op_name(unsigned op)
{
	return op < ISC_COLL_N ? op_names[op] : "";
}

unsigned isc_coll_op_parse(const char *name)
{
	for (unsigned i = 1; name && i < ISC_COLL_N; i++)
		if (!strcmp(name, op_names[i]))
			return i;
	return ISC_COLL_NONE;
}

bool isc_coll_symmetric(unsigned op)
{
	return op == ISC_COLL_ALL_REDUCE || op == ISC_COLL_ALL_GATHER || op == ISC_COLL_REDUCE_SCATTER ||
	       op == ISC_COLL_ALL_TO_ALL || op == ISC_COLL_BARRIER || op == ISC_COLL_SEND_RECV;
}

double isc_coll_bus_factor(unsigned op, unsigned n)
{
	if (n < 1)
		return 0;
	switch (op) {
	case ISC_COLL_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case ISC_COLL_ALL_GATHER:
	case ISC_COLL_REDUCE_SCATTER:
	case ISC_COLL_ALL_TO_ALL:
		return (double)(n - 1) / n;
	case ISC_COLL_BROADCAST:
	case ISC_COLL_REDUCE:
		return 1;
	default:
		return 0;
	}
}

double isc_coll_size_bytes(unsigned op, unsigned n, double input_bytes)
{
	return op == ISC_COLL_ALL_GATHER ? input_bytes * n : input_bytes;
}

static const char *const dt_names[ISC_DT_N] = {
	NULL, "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
	"float8", "other",
};

const char *isc_dtype_name(unsigned dt)
{
	return dt < ISC_DT_N ? dt_names[dt] : NULL;
}

static bool eqn(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

unsigned isc_dtype_parse(const char *s, size_t n)
{
	static const struct {
		const char *name;
		unsigned dt;
	} tab[] = {
		{ "float32", ISC_DT_F32 }, { "float", ISC_DT_F32 }, { "f32", ISC_DT_F32 },
		{ "float16", ISC_DT_F16 }, { "half", ISC_DT_F16 }, { "f16", ISC_DT_F16 },
		{ "bfloat16", ISC_DT_BF16 }, { "bf16", ISC_DT_BF16 }, { "__nv_bfloat16", ISC_DT_BF16 },
		{ "float64", ISC_DT_F64 }, { "double", ISC_DT_F64 }, { "f64", ISC_DT_F64 },
		{ "int8", ISC_DT_I8 }, { "int8_t", ISC_DT_I8 }, { "char", ISC_DT_I8 }, { "i8", ISC_DT_I8 },
		{ "uint8", ISC_DT_U8 }, { "uint8_t", ISC_DT_U8 }, { "u8", ISC_DT_U8 },
		{ "int16", ISC_DT_I16 }, { "short", ISC_DT_I16 },
		{ "int32", ISC_DT_I32 }, { "int32_t", ISC_DT_I32 }, { "int", ISC_DT_I32 }, { "i32", ISC_DT_I32 },
		{ "uint32_t", ISC_DT_I32 }, { "u32", ISC_DT_I32 },
		{ "int64", ISC_DT_I64 }, { "int64_t", ISC_DT_I64 }, { "long", ISC_DT_I64 }, { "i64", ISC_DT_I64 },
		{ "uint64_t", ISC_DT_I64 }, { "u64", ISC_DT_I64 },
		{ "bool", ISC_DT_BOOL },
		{ "float8_e4m3fn", ISC_DT_F8 }, { "float8_e5m2", ISC_DT_F8 }, { "f8e4m3", ISC_DT_F8 }, { "f8e5m2", ISC_DT_F8 },
	};
	if (n > 6 && !memcmp(s, "torch.", 6)) {
		s += 6;
		n -= 6;
	}
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (eqn(s, n, tab[i].name))
			return tab[i].dt;
	return ISC_DT_OTHER;
}

/* Words of an NCCL/RCCL kernel name after "Kernel_", as NCCL spells its operations. */
static unsigned kernel_word(const char *w, size_t n)
{
	static const struct {
		const char *word;
		unsigned op;
	} tab[] = {
		{ "AllReduce", ISC_COLL_ALL_REDUCE }, { "AllGather", ISC_COLL_ALL_GATHER },
		{ "ReduceScatter", ISC_COLL_REDUCE_SCATTER }, { "Broadcast", ISC_COLL_BROADCAST },
		{ "Reduce", ISC_COLL_REDUCE }, { "SendRecv", ISC_COLL_SEND_RECV }, { "Send", ISC_COLL_SEND },
		{ "Recv", ISC_COLL_RECV }, { "AllToAll", ISC_COLL_ALL_TO_ALL }, { "AlltoAll", ISC_COLL_ALL_TO_ALL },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (eqn(w, n, tab[i].word))
			return tab[i].op;
	return ISC_COLL_OTHER;
}

unsigned isc_coll_kernel(const char *name, unsigned *dtype)
{
	if (dtype)
		*dtype = ISC_DT_NONE;
	if (!name || (!strstr(name, "nccl") && !strstr(name, "rccl")))
		return ISC_COLL_NONE;
	const char *k = strstr(name, "Kernel_");
	if (!k)
		return ISC_COLL_OTHER;
	k += 7;
	size_t wl = strcspn(k, "_(<");
	unsigned op = kernel_word(k, wl);
	/* the element type: the last '_' word before the argument list (..._Sum_float(...)) */
	size_t end = strcspn(name, "(<");
	const char *e = name + end, *b = e;
	while (b > k && b[-1] != '_')
		b--;
	if (dtype && b > k && e > b) {
		unsigned dt = isc_dtype_parse(b, (size_t)(e - b));
		*dtype = dt == ISC_DT_OTHER ? ISC_DT_NONE : dt;
	}
	return op;
}

/* A collective's name as torch.distributed and the profiler spell it -> op. */
static unsigned call_word(const char *w)
{
	char buf[48];
	size_t n = 0;
	while (*w == '_') /* _all_gather_base, _reduce_scatter_base */
		w++;
	for (; *w && n + 1 < sizeof(buf); w++)
		if (*w != '_')
			buf[n++] = *w;
	buf[n] = '\0';
	static const char *const suffixes[] = { "base", "single", "intotensor", "tensor", "coalesced" };
	for (int again = 1; again;) {
		again = 0;
		for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
			size_t sl = strlen(suffixes[i]);
			if (n > sl && !strcmp(buf + n - sl, suffixes[i])) {
				buf[n -= sl] = '\0';
				again = 1;
			}
		}
	}
	static const struct {
		const char *word;
		unsigned op;
	} tab[] = {
		{ "allreduce", ISC_COLL_ALL_REDUCE }, { "allgather", ISC_COLL_ALL_GATHER },
		{ "reducescatter", ISC_COLL_REDUCE_SCATTER }, { "alltoall", ISC_COLL_ALL_TO_ALL },
		{ "barrier", ISC_COLL_BARRIER }, { "broadcast", ISC_COLL_BROADCAST }, { "reduce", ISC_COLL_REDUCE },
		{ "gather", ISC_COLL_GATHER }, { "scatter", ISC_COLL_SCATTER }, { "send", ISC_COLL_SEND },
		{ "recv", ISC_COLL_RECV },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(buf, tab[i].word))
			return tab[i].op;
	return ISC_COLL_NONE;
}

unsigned isc_coll_scope(const char *name)
{
	const char *c = name ? strchr(name, ':') : NULL;
	if (!c || c == name || c[1] == ':' || strchr(c + 1, ':') || c - name > 16)
		return ISC_COLL_NONE;
	for (const char *p = name; p < c; p++) /* a backend's name: a word */
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return ISC_COLL_NONE;
	return call_word(c + 1);
}

unsigned isc_dist_mark(const char *name, unsigned *dtype, const char **backend)
{
	static const struct {
		const char *name;
		unsigned m;
	} tab[] = {
		{ "dist.rank", ISC_DM_RANK }, { "dist.world_size", ISC_DM_WORLD }, { "dist.local_rank", ISC_DM_LOCAL_RANK },
		{ "dist.job", ISC_DM_JOB }, { "dist.env.rank", ISC_DM_ENV_RANK }, { "dist.env.world_size", ISC_DM_ENV_WORLD },
		{ "dist.env.local_rank", ISC_DM_ENV_LOCAL }, { "dist.env.job", ISC_DM_ENV_JOB }, { "dist.seq", ISC_DM_SEQ },
		{ "dist.pg", ISC_DM_PG },
	};
	if (dtype)
		*dtype = ISC_DT_NONE;
	if (backend)
		*backend = NULL;
	if (!name || strncmp(name, "dist.", 5))
		return ISC_DM_NONE;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(name, tab[i].name))
			return tab[i].m;
	if (!strncmp(name, "dist.bytes.", 11) && name[11]) {
		if (dtype)
			*dtype = isc_dtype_parse(name + 11, strlen(name + 11));
		return ISC_DM_BYTES;
	}
	if (!strncmp(name, "dist.backend.", 13) && name[13]) {
		if (backend)
			*backend = name + 13;
		return ISC_DM_BACKEND;
	}
	return ISC_DM_NONE;
}

/* ---- the tracker -------------------------------------------------------- */
struct isc_coll_pending {
	uint64_t span_id;
	struct isc_coll c;
	bool used;
};

/* Classification of a string id, cached: 1 + (class << 8 | value). */
enum { CL_NONE, CL_KERNEL, CL_SCOPE, CL_MARK };

static unsigned classify(struct isc_coll_tracker *t, uint32_t id, unsigned *value, unsigned *extra)
{
	*value = *extra = 0;
	if (id < t->ncls && t->cls[id]) {
		unsigned c = t->cls[id] - 1u;
		*value = c & 0x3f;
		*extra = c >> 6 & 0x1f;
		return c >> 11;
	}
	uint8_t kind = 0;
	const char *name = t->name_of(t->ctx, id, &kind);
	unsigned cl = CL_NONE, v = 0, x = 0;
	if (name && kind == ISC_STR_SCOPE && (v = isc_coll_scope(name)))
		cl = CL_SCOPE;
	else if (name && kind == ISC_STR_MARK && (v = isc_dist_mark(name, &x, NULL)))
		cl = CL_MARK;
	else if (name && kind != ISC_STR_MARK && kind != ISC_STR_SCOPE && (v = isc_coll_kernel(name, &x)))
		cl = CL_KERNEL;
	if (id < (1u << 26)) { /* the cache: ids are dense from 1 */
		if (id >= t->ncls) {
			size_t n = t->ncls ? t->ncls : 1024;
			while (n <= id)
				n *= 2;
			uint16_t *c = realloc(t->cls, n * sizeof(*c));
			if (c) {
				memset(c + t->ncls, 0, (n - t->ncls) * sizeof(*c));
				t->cls = c;
				t->ncls = n;
			}
		}
		if (id < t->ncls)
			t->cls[id] = (uint16_t)(1u + (cl << 11 | x << 6 | v));
	}
	*value = v;
	*extra = x;
	return cl;
}

int isc_colltrk_init(struct isc_coll_tracker *t, size_t nunits, size_t cap,
		     const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind), void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->name_of = name_of;
	t->ctx = ctx;
	t->cap = cap;
	if (nunits && !(t->units = calloc(nunits, sizeof(*t->units))))
		return -ENOMEM;
	t->nunits = t->capunits = nunits;
	return 0;
}

int isc_colltrk_unit(struct isc_coll_tracker *t, uint64_t key, size_t *u)
{
	uint32_t *slot;
	if (isc_umap_slot(&t->bykey, key, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&t->units, &t->capunits, t->nunits, sizeof(*t->units))) {
			isc_umap_del(&t->bykey, key);
			return -ENOMEM;
		}
		memset(&t->units[t->nunits], 0, sizeof(*t->units));
		*slot = (uint32_t)t->nunits++;
	}
	*u = *slot;
	return 0;
}

/* The channel of key in u: its index, and the collective's position on it. */
static int channel(struct isc_coll_chans *cs, uint64_t key, uint32_t *chan, uint64_t *idx)
{
	uint32_t *slot;
	if (isc_umap_slot(&cs->map, key, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&cs->n, &cs->cap, cs->count, sizeof(*cs->n)))
			return -ENOMEM;
		cs->n[cs->count] = 0;
		*slot = (uint32_t)cs->count++;
	}
	*chan = *slot;
	*idx = cs->n[*slot]++;
	return 0;
}

static int keep(struct isc_coll_tracker *t, struct isc_coll_unit *u, const struct isc_coll *c)
{
	struct isc_coll **v = c->gpu ? &u->kern : &u->call;
	size_t *n = c->gpu ? &u->nkern : &u->ncall, *cap = c->gpu ? &u->capkern : &u->capcall;
	if (*n >= t->cap) {
		u->dropped++;
		return 0;
	}
	if (isc_grow(v, cap, *n, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = *c;
	return 0;
}

int isc_colltrk_event(struct isc_coll_tracker *t, size_t ui, const struct isc_tl_event *ev)
{
	struct isc_coll_unit *u = &t->units[ui];
	unsigned v, x;
	uint64_t key = (uint64_t)ev->pid << 32 | ev->tid;
	uint32_t pi;
	switch (ev->type) {
	case ISC_REC_GPU_OP:
		if (ev->gpu.kind != ISC_GPU_KERNEL || classify(t, ev->name_id, &v, &x) != CL_KERNEL)
			return 0;
		struct isc_coll k = { .start = (int64_t)ev->ts, .end = (int64_t)(ev->ts + ev->gpu.dur_ns), .op = (uint8_t)v,
				      .dtype = (uint8_t)x, .gpu = true };
		if (channel(&u->ck, (uint64_t)ev->gpu.device << 32 | ev->gpu.stream, &k.chan, &k.idx))
			return -ENOMEM;
		return keep(t, u, &k);
	case ISC_REC_TL_SPAN_BEGIN:
		if (ev->kind != ISC_SPAN_SCOPE || classify(t, ev->name_id, &v, &x) != CL_SCOPE ||
		    isc_umap_get(&u->open, key) != ISC_UMAP_NONE) /* one collective at a time per thread: the outer */
			return 0;
		uint32_t *slot;
		if (isc_grow(&u->pend, &u->cappend, u->npend, sizeof(*u->pend)) || isc_umap_slot(&u->open, key, &slot))
			return -ENOMEM;
		for (pi = 0; pi < u->npend && u->pend[pi].used; pi++) /* a free entry */
			;
		if (pi == u->npend)
			u->npend++;
		*slot = pi;
		u->pend[pi] = (struct isc_coll_pending){ ev->span_id, { .start = (int64_t)ev->ts, .op = (uint8_t)v }, true };
		return 0;
	case ISC_REC_MARK:
		if ((pi = isc_umap_get(&u->open, key)) == ISC_UMAP_NONE || classify(t, ev->name_id, &v, &x) != CL_MARK)
			return 0;
		if (v == ISC_DM_SEQ && ev->value > 0)
			u->pend[pi].c.seq = (uint64_t)ev->value;
		else if (v == ISC_DM_PG && ev->value >= 0 && ev->value < UINT32_MAX)
			u->pend[pi].c.pg = (uint32_t)ev->value;
		else if (v == ISC_DM_BYTES && ev->value >= 0) {
			u->pend[pi].c.bytes = (uint64_t)ev->value;
			u->pend[pi].c.dtype = (uint8_t)x;
		}
		return 0;
	case ISC_REC_TL_SPAN_END:
	case ISC_REC_THREAD_END:
		if ((pi = isc_umap_get(&u->open, key)) == ISC_UMAP_NONE ||
		    (ev->type == ISC_REC_TL_SPAN_END && u->pend[pi].span_id != ev->span_id))
			return 0;
		isc_umap_del(&u->open, key);
		u->pend[pi].used = false;
		if (ev->type == ISC_REC_THREAD_END)
			return 0; /* never ended: not kept */
		struct isc_coll c = u->pend[pi].c;
		c.end = (int64_t)ev->ts;
		if (channel(&u->cc, key, &c.chan, &c.idx))
			return -ENOMEM;
		return keep(t, u, &c);
	default:
		return 0;
	}
}

static int by_start(const void *a, const void *b)
{
	const struct isc_coll *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->chan != y->chan)
		return x->chan < y->chan ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

const struct isc_coll *isc_colltrk_get(struct isc_coll_tracker *t, size_t ui, size_t *n)
{
	struct isc_coll_unit *u = &t->units[ui];
	if (u->nkern) {
		*n = u->nkern;
		return u->kern; /* GPU_OPs come in start order */
	}
	if (u->ncall > 1) /* qsort may not be given NULL, which an empty list can be */
		qsort(u->call, u->ncall, sizeof(*u->call), by_start); /* kept as they ended */
	*n = u->ncall;
	return u->call;
}

void isc_colltrk_free(struct isc_coll_tracker *t)
{
	for (size_t i = 0; i < t->nunits; i++) {
		struct isc_coll_unit *u = &t->units[i];
		free(u->kern);
		free(u->call);
		isc_umap_free(&u->ck.map);
		free(u->ck.n);
		isc_umap_free(&u->cc.map);
		free(u->cc.n);
		isc_umap_free(&u->open);
		free(u->pend);
	}
	free(t->units);
	isc_umap_free(&t->bykey);
	free(t->cls);
	memset(t, 0, sizeof(*t));
}
