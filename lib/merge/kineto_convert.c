/*
 * kineto_convert.c - the Kineto importer's conversion (kineto.h): the
 * fields of one event, as kineto_scan.c picked them (text), to one item of
 * the sort (formats/timeline.md §10 is the mapping):
 *
 *   ph "X" + cat   -> span (python, op, scope), GPU call or GPU operation
 *                     (kernel, memcpy, memset, sync, annotation) by cat
 *   ph "i" [memory] -> mark (and CUDA device memory: a GPU_MEMORY record)
 *   ph "M"          -> process and thread names
 *   ts, dur (µs text) -> ns exactly; pid, tid -> 32 bits; names interned
 *
 * and the other top-level members to header material: baseTimeNanoseconds,
 * deviceProperties (DEVICE records), distributedInfo and other scalars
 * (META records).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cjson/cJSON.h>

#include "isc_format.h" /* ISC_SPAN_*, ISC_GPU_*, ISC_STR_*, ISC_SYNC_* */
#include "kineto.h"

/* ---- fields ------------------------------------------------------------- */

/* A pid or tid: integers wrap to 32 bits (Kineto writes truncated pthread ids), other text is hashed. */
static bool id32(const struct kt_jv *v, uint32_t *out)
{
	int64_t x;
	bool inexact;
	*out = 0;
	if (v->t == J_NONE)
		return true;
	if (v->t == J_NUM || (v->n && ((v->s[0] >= '0' && v->s[0] <= '9') || v->s[0] == '-'))) {
		int rc = isc_kjson_dec(v->s, v->n, 0, &x, &inexact);
		if (rc == -ERANGE || (!rc && inexact))
			return false;
		if (!rc) {
			*out = x >= INT32_MIN && x <= (int64_t)UINT32_MAX ? (uint32_t)x : (uint32_t)(x ^ (x >> 32));
			return true;
		}
		if (v->t == J_NUM)
			return false;
	}
	uint32_t h = 2166136261u; /* FNV-1a of a name such as "stream 7" */
	for (size_t i = 0; i < v->n; i++)
		h = (h ^ (uint8_t)v->s[i]) * 16777619u;
	*out = h | 0x80000000u;
	return true;
}

/* An optional unsigned argument; absent, non-numeric or out of range -> dflt. */
static uint64_t arg_u64(const struct kt_jv *v, uint64_t dflt)
{
	int64_t x;
	bool inexact;
	if ((v->t != J_NUM && v->t != J_STR) || !v->n || isc_kjson_dec(v->s, v->n, 0, &x, &inexact) || x < 0)
		return dflt;
	return (uint64_t)x;
}

/* A numeric argument that does not fit 64 bits (then the event is bad, not the number 0). */
static bool too_big(const struct kt_jv *v)
{
	int64_t x;
	bool inexact;
	return v->t == J_NUM && isc_kjson_dec(v->s, v->n, 0, &x, &inexact) == -ERANGE;
}

/* A device or stream argument: like a tid, -1 ("all streams": context and device syncs) wraps to 2^32 - 1. */
static uint32_t arg_u32(const struct kt_jv *v, uint32_t dflt)
{
	uint32_t x;
	if (v->t != J_NUM || !id32(v, &x))
		return dflt;
	return x;
}

static bool cat_is(const struct kt_jv *c, const char *lit)
{
	return c->t == J_STR && strlen(lit) == c->n && !strncasecmp(c->s, lit, c->n);
}

static const struct catmap {
	const char *cat;
	uint8_t type, kind;
} cats[] = { /* case-insensitive: legacy files write "Kernel", "Runtime", "Operator" */
	{ "kernel", IT_GPU_OP, ISC_GPU_KERNEL },
	{ "gpu_memcpy", IT_GPU_OP, ISC_GPU_MEMCPY },
	{ "memcpy", IT_GPU_OP, ISC_GPU_MEMCPY },
	{ "gpu_memset", IT_GPU_OP, ISC_GPU_MEMSET },
	{ "memset", IT_GPU_OP, ISC_GPU_MEMSET },
	{ "cuda_sync", IT_GPU_OP, ISC_GPU_SYNC },
	{ "gpu_user_annotation", IT_GPU_OP, ISC_GPU_OTHER },
	{ "cuda_runtime", IT_GPU_API, 1 },
	{ "runtime", IT_GPU_API, 1 },
	{ "hip_runtime", IT_GPU_API, 1 },
	{ "cuda_driver", IT_GPU_API, 2 },
	{ "driver", IT_GPU_API, 2 },
	{ "hip_driver", IT_GPU_API, 2 },
	{ "cpu_op", IT_SPAN, ISC_SPAN_OP },
	{ "operator", IT_SPAN, ISC_SPAN_OP },
	{ "user_annotation", IT_SPAN, ISC_SPAN_SCOPE },
	{ "python_function", IT_SPAN, ISC_SPAN_PYTHON },
	{ "python", IT_SPAN, ISC_SPAN_PYTHON },
	{ "trace", 0, 0 }, /* the profiler's own span: skipped */
};

/*
 * The names torch.profiler gives its own record_function ranges:
 * "ProfilerStep#N", "enumerate(DataLoader)#...", "Optimizer.step#SGD.step",
 * "Optimizer.zero_grad#...".  Newer files put them under "user_annotation";
 * legacy ones (PyTorch 1.8-1.9) under "Operator", where they would pass for
 * ops.
 */
static bool record_function_name(const char *s, size_t n)
{
	static const char *const pre[] = { "ProfilerStep#", "enumerate(DataLoader)", "Optimizer." };
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		size_t m = strlen(pre[i]);
		if (n >= m && !memcmp(s, pre[i], m) && (i != 2 || memchr(s, '#', n)))
			return true;
	}
	return false;
}

/* "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync", "Device Sync" */
static uint8_t sync_kind(const char *s, size_t n)
{
	if (memmem(s, n, "Wait Event", 10))
		return ISC_SYNC_STREAM_WAIT_EVENT;
	if (memmem(s, n, "Event", 5))
		return ISC_SYNC_EVENT;
	if (memmem(s, n, "Stream", 6))
		return ISC_SYNC_STREAM;
	if (memmem(s, n, "Context", 7) || memmem(s, n, "Device", 6))
		return ISC_SYNC_CONTEXT;
	return ISC_SYNC_UNKNOWN;
}

/* "Memcpy HtoD (Pageable -> Device)", "Memset (Device)" */
static void copy_kinds(const char *s, size_t n, struct kt_item *it)
{
	static const char *dirs[] = { NULL, "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	static const struct { const char *w; uint8_t k; } mems[] = {
		{ "Pageable", ISC_MEM_PAGEABLE }, { "Pinned", ISC_MEM_PINNED },
		{ "Device", ISC_MEM_DEVICE }, { "Managed", ISC_MEM_MANAGED },
	};
	for (uint8_t d = 1; d < 6; d++)
		if (memmem(s, n, dirs[d], 4))
			it->copy_kind = d;
	const char *lp = memchr(s, '(', n);
	if (!lp)
		return;
	size_t rest = n - (size_t)(lp - s);
	const char *arrow = memmem(lp, rest, "->", 2);
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
		size_t l = strlen(mems[i].w);
		const char *at = memmem(lp, rest, mems[i].w, l);
		if (!at)
			continue;
		if (arrow && at < arrow)
			it->src_mem = mems[i].k;
		else if (arrow || it->kind == ISC_GPU_MEMSET)
			it->dst_mem = mems[i].k;
		const char *at2 = memmem(at + l, rest - (size_t)(at + l - lp), mems[i].w, l);
		if (at2 && arrow && at2 > arrow) /* "Device -> Device" */
			it->dst_mem = mems[i].k;
	}
}

/* ---- names -------------------------------------------------------------- */

/*
 * Interns (kind, line, name, file) like the merge does: dense ids from 1
 * in order of first appearance, deduplicated by content.  The caller has
 * replaced NULs by '?' (names come from JSON, where \u0000 is legal).
 */
static int intern(struct kt_conv *k, uint8_t kind, uint32_t line, const char *name, size_t nl, const char *file,
		  size_t fl, uint32_t *id)
{
	int rc = isc_strtab_intern(&k->st, kind, line, name, nl, file, fl, id);
	return rc < 0 ? rc : 0;
}

/* "torch/nn/modules/module.py(1501): _call_impl" -> name, file, line */
static int intern_python(struct kt_conv *k, const char *s, size_t n, uint32_t *id)
{
	const char *colon = memmem(s, n, "): ", 3);
	if (colon) {
		const char *lp = colon;
		while (lp > s && lp[-1] >= '0' && lp[-1] <= '9')
			lp--;
		if (lp > s && lp < colon && lp[-1] == '(' && colon - lp <= 9) {
			uint32_t line = 0;
			for (const char *p = lp; p < colon; p++)
				line = line * 10 + (uint32_t)(*p - '0');
			return intern(k, ISC_STR_CODE, line, colon + 3, n - (size_t)(colon + 3 - s), s,
				      (size_t)(lp - 1 - s), id);
		}
	}
	return intern(k, ISC_STR_CODE, 0, s, n, "", 0, id);
}

/* Keeps the earliest time for the header's epoch, then hands the item to the sort. */
static int push_item(struct kt_conv *k, struct kt_item *it)
{
	if (!k->have_min || it->ts < k->min_ts) {
		k->min_ts = it->ts;
		k->have_min = true;
	}
	return isc_ksort_push(k->sort, it);
}

/* ---- one event ----------------------------------------------------------- */

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* The process or thread name of key in map (pnames, tnames), NULL when none. */
static const char *name_of(const struct kt_conv *k, const struct isc_umap *map, uint64_t key)
{
	uint32_t i = isc_umap_get(map, key);
	return i == ISC_UMAP_NONE ? NULL : k->names[i];
}

/* ph "M": a process or thread name kept (the last one given wins); other metadata only counted. */
static int on_meta(struct kt_conv *k, struct kt_event *ev)
{
	uint32_t pid, tid;
	k->res->metadata++;
	if (ev->name.t != J_STR || ev->aname.t != J_STR)
		return 0; /* sort indexes, labels */
	bool proc = kt_keyeq(ev->name.s, ev->name.n, "process_name");
	if (!proc && !kt_keyeq(ev->name.s, ev->name.n, "thread_name"))
		return 0;
	if (!id32(&ev->pid, &pid) || !id32(&ev->tid, &tid))
		return 0;
	size_t n = ev->aname.n;
	while (n && ev->aname.s[n - 1] == ' ') /* "stream 7 " */
		n--;
	char *name = dup_n(ev->aname.s, n);
	uint32_t *slot;
	if (!name || isc_grow(&k->names, &k->capnames, k->nnames, sizeof(*k->names)) ||
	    isc_umap_slot(proc ? &k->pnames : &k->tnames, proc ? pid : (uint64_t)pid << 32 | tid, &slot)) {
		free(name);
		return -ENOMEM;
	}
	if (*slot == ISC_UMAP_NONE) /* a new pid or thread; else the later name replaces the earlier */
		*slot = (uint32_t)k->nnames++;
	else
		free(k->names[*slot]);
	k->names[*slot] = name;
	return 0;
}

/* A time field (µs text) to ns, rounded once below 1 ns; false with the reason in *why. */
static bool time_ns(const struct kt_jv *v, const char *field, int64_t *ns, const char **why)
{
	bool inexact;
	if (isc_kjson_dec(v->s, v->n, 3, ns, &inexact)) {
		*why = field[0] == 't' ? "\"ts\" out of range" : "\"dur\" out of range";
		return false;
	}
	return true;
}

/* One more CPU-side item of pid (the command is the busiest named process). */
static int count_pid(struct kt_conv *k, uint32_t pid)
{
	uint32_t i = isc_umap_get(&k->pid_events, pid), *slot;
	if (i == ISC_UMAP_NONE) {
		if (isc_grow(&k->cpu_items, &k->capcpu_items, k->ncpu_items, sizeof(*k->cpu_items)) ||
		    isc_umap_slot(&k->pid_events, pid, &slot))
			return -ENOMEM;
		*slot = i = (uint32_t)k->ncpu_items++;
		k->cpu_items[i] = 0;
	}
	k->cpu_items[i]++;
	return 0;
}

int isc_kconv_event(struct kt_conv *k, struct kt_event *ev, const char **why)
{
	struct kt_item it;
	int rc;
	*why = NULL;
	if (ev->ph.t != J_STR || ev->ph.n != 1) {
		*why = ev->ph.t == J_NONE ? "no \"ph\"" : "\"ph\" is not a one-letter string";
		return 0;
	}
	char ph = ev->ph.s[0];
	if (ph == 'M')
		return on_meta(k, ev);
	if (ph == 's' || ph == 'f' || ph == 't') {
		k->res->flows++;
		return 0;
	}
	const struct catmap *cm = NULL;
	if (ph == 'X') {
		for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]) && !cm && ev->cat.t == J_STR; i++)
			if (ev->cat.n == strlen(cats[i].cat) && cat_is(&ev->cat, cats[i].cat))
				cm = &cats[i];
		if (!cm) {
			k->res->unknown++;
			return 0;
		}
		if (!cm->type) {
			k->res->skipped++;
			return 0;
		}
	} else if (ph == 'i' || ph == 'I') {
		if (ev->name.t != J_STR || !kt_keyeq(ev->name.s, ev->name.n, "[memory]")) {
			k->res->skipped++; /* global instants: "Iteration Start", "Record Window End" */
			return 0;
		}
	} else {
		k->res->unknown++;
		return 0;
	}
	memset(&it, 0, sizeof(it));
	if (ev->ts.t != J_NUM) {
		*why = "no \"ts\"";
		return 0;
	}
	if (!time_ns(&ev->ts, "ts", &it.ts, why))
		return 0;
	if (ph == 'X') {
		if (ev->dur.t != J_NUM) {
			*why = "a complete event (ph X) without \"dur\"";
			return 0;
		}
		if (!time_ns(&ev->dur, "dur", &it.dur, why))
			return 0;
		if (it.dur < 0) {
			*why = "negative \"dur\"";
			return 0;
		}
		if (it.ts > INT64_MAX - it.dur) {
			*why = "\"ts\" + \"dur\" out of range";
			return 0;
		}
	}
	if (!id32(&ev->pid, &it.pid) || !id32(&ev->tid, &it.tid)) {
		*why = "\"pid\" or \"tid\" out of range";
		return 0;
	}
	const char *name = ev->name.t == J_STR ? ev->name.s : "";
	size_t nl = ev->name.t == J_STR ? ev->name.n : 0;
	for (size_t i = 0; i < nl; i++)
		if (!ev->name.s[i])
			ev->name.s[i] = '?';
	if (ph != 'X') { /* [memory] */
		it.type = IT_MARK;
		if (ev->mem_bytes.t == J_NUM) {
			bool inexact;
			if (isc_kjson_dec(ev->mem_bytes.s, ev->mem_bytes.n, 0, &it.value, &inexact)) {
				*why = "\"Bytes\" out of range";
				return 0;
			}
		}
		/* CUDA device memory (Device Type 1, a device id): also a GPU_MEMORY record */
		int64_t dtype, did;
		bool inexact;
		if (ev->mem_dtype.t == J_NUM && ev->mem_did.t == J_NUM &&
		    !isc_kjson_dec(ev->mem_dtype.s, ev->mem_dtype.n, 0, &dtype, &inexact) && dtype == 1 &&
		    !isc_kjson_dec(ev->mem_did.s, ev->mem_did.n, 0, &did, &inexact) && did >= 0 && did <= UINT32_MAX &&
		    it.value != 0 && it.value != INT64_MIN) {
			int64_t addr;
			it.kind = 1;
			it.device = (uint32_t)did;
			if (ev->mem_addr.t == J_NUM && !isc_kjson_dec(ev->mem_addr.s, ev->mem_addr.n, 0, &addr, &inexact) &&
			    addr > 0 && !inexact)
				it.correlation = (uint64_t)addr;
			/* the caching allocator's totals after this event, when both are exact and >= 0 */
			int64_t ta, tr;
			bool ia, ir;
			if (ev->mem_talloc.t == J_NUM && ev->mem_tres.t == J_NUM &&
			    !isc_kjson_dec(ev->mem_talloc.s, ev->mem_talloc.n, 0, &ta, &ia) &&
			    !isc_kjson_dec(ev->mem_tres.s, ev->mem_tres.n, 0, &tr, &ir) && !ia && !ir && ta >= 0 &&
			    tr >= 0) {
				it.flags = 1;
				it.total[0] = (uint64_t)ta;
				it.total[1] = (uint64_t)tr;
			}
			k->res->gpu_memory++;
		}
		if ((rc = intern(k, ISC_STR_MARK, 0, name, nl, "", 0, &it.name_id)))
			return rc;
		k->res->marks++;
		return push_item(k, &it);
	}
	it.type = cm->type;
	it.kind = cm->kind;
	if (it.kind == ISC_SPAN_OP && record_function_name(name, nl))
		it.kind = ISC_SPAN_SCOPE; /* legacy files file annotations under "Operator" */
	if (cm->type == IT_SPAN) {
		if (cm->kind == ISC_SPAN_PYTHON)
			rc = intern_python(k, name, nl, &it.name_id);
		else
			rc = intern(k, it.kind == ISC_SPAN_SCOPE ? ISC_STR_SCOPE : ISC_STR_CFUNC, 0, name, nl, "", 0,
				    &it.name_id);
		if (rc)
			return rc;
		if (it.kind == ISC_SPAN_OP)
			k->res->cpu_ops++;
		else if (it.kind == ISC_SPAN_PYTHON)
			k->res->python_functions++;
		else
			k->res->annotations++;
		if ((rc = count_pid(k, it.pid)))
			return rc;
		return push_item(k, &it);
	}
	if (too_big(&ev->correlation) || too_big(&ev->bytes)) {
		*why = "\"correlation\" or \"bytes\" out of range";
		return 0;
	}
	if ((rc = intern(k, ISC_STR_CFUNC, 0, name, nl, "", 0, &it.name_id)))
		return rc;
	it.correlation = arg_u64(&ev->correlation, 0);
	if (cm->type == IT_GPU_API) {
		it.cbid = (uint32_t)arg_u64(ev->cbid.t ? &ev->cbid : &ev->cid, 0);
		k->res->api_calls++;
		if (cm->kind == 1)
			k->res->runtime_calls++;
		else
			k->res->driver_calls++;
		if ((rc = count_pid(k, it.pid)))
			return rc;
		return push_item(k, &it);
	}
	/* a GPU operation: context 0/0, the device and stream in the record */
	it.device = arg_u32(&ev->device, it.pid);
	it.stream = arg_u32(&ev->stream, ev->tid.t == J_NUM ? it.tid : 0);
	if (ev->stream.t == J_NUM && ev->stream.s[0] == '-') { /* -1: context and device syncs */
		it.stream = ISC_GPU_NONE;
		it.flags |= ISC_GPU_FLAG_NO_STREAM;
	}
	it.pid = it.tid = 0;
	it.value = (int64_t)arg_u64(&ev->bytes, 0);
	if (ev->graph)
		it.flags |= ISC_GPU_FLAG_GRAPH;
	if (cm->kind == ISC_GPU_OTHER)
		it.flags |= ISC_GPU_FLAG_ANNOTATION;
	if (cm->kind == ISC_GPU_MEMCPY || cm->kind == ISC_GPU_MEMSET)
		copy_kinds(name, nl, &it);
	if (cm->kind == ISC_GPU_SYNC) { /* copy_kind: the sync type; bytes: the event waited for */
		const struct kt_jv *sk = ev->sync_kind.t == J_STR ? &ev->sync_kind : &ev->name;
		it.copy_kind = sync_kind(sk->t == J_STR ? sk->s : "", sk->t == J_STR ? sk->n : 0);
		it.value = (int64_t)arg_u64(&ev->event_id, 0);
	}
	if (ev->have_grid && ev->have_block) {
		it.has_launch = 1;
		memcpy(it.launch, ev->grid, sizeof(ev->grid));
		memcpy(it.launch + 3, ev->block, sizeof(ev->block));
		it.launch[6] = (uint32_t)arg_u64(&ev->regs, 0);
		it.launch[7] = (uint32_t)arg_u64(&ev->shmem, 0);
	}
	switch (cm->kind) {
	case ISC_GPU_KERNEL: k->res->kernels++; break;
	case ISC_GPU_MEMCPY: k->res->memcpys++; break;
	case ISC_GPU_MEMSET: k->res->memsets++; break;
	case ISC_GPU_SYNC: k->res->syncs++; break;
	default: k->res->gpu_annotations++; break;
	}
	if (cm->kind != ISC_GPU_OTHER)
		k->res->gpu_ops++;
	return push_item(k, &it);
}

/* ---- the other top-level members ---------------------------------------- */

void isc_kconv_meta(struct kt_conv *k, const char *key, const char *val, size_t vlen)
{
	if (k->nmetas == KT_META_MAX || vlen > KT_META_VALUE_MAX)
		return;
	char *kk = strdup(key), *vv = dup_n(val, vlen);
	if (!kk || !vv) {
		free(kk);
		free(vv);
		return;
	}
	k->metas[k->nmetas++] = (struct kt_meta){ kk, vv };
}

static void on_devices(struct kt_conv *k, const char *text, size_t n)
{
	cJSON *a = cJSON_ParseWithLength(text, n), *d, *arr = cJSON_IsArray(a) ? a : NULL;
	cJSON_ArrayForEach(d, arr)
	{
		const cJSON *f[6] = { cJSON_GetObjectItemCaseSensitive(d, "id"),
				      cJSON_GetObjectItemCaseSensitive(d, "numSms"),
				      cJSON_GetObjectItemCaseSensitive(d, "totalGlobalMem"),
				      cJSON_GetObjectItemCaseSensitive(d, "computeMajor"),
				      cJSON_GetObjectItemCaseSensitive(d, "computeMinor"),
				      cJSON_GetObjectItemCaseSensitive(d, "name") };
		struct kt_dev v = { 0 };
		uint64_t *dst[5] = { &v.id, &v.sms, &v.mem, &v.major, &v.minor };
		if (!cJSON_IsNumber(f[0]))
			continue;
		for (int i = 0; i < 5; i++) /* exact for integers below 2^53, as every value here is */
			if (cJSON_IsNumber(f[i]) && f[i]->valuedouble >= 0 && f[i]->valuedouble < 1.8e19)
				*dst[i] = (uint64_t)f[i]->valuedouble;
		if (isc_grow(&k->devs, &k->capdevs, k->ndevs, sizeof(*k->devs)))
			break;
		v.name = strdup(cJSON_IsString(f[5]) ? f[5]->valuestring : "");
		if (!v.name)
			break;
		k->devs[k->ndevs++] = v;
	}
	cJSON_Delete(a);
}

static void on_distributed(struct kt_conv *k, const char *text, size_t n)
{
	cJSON *o = cJSON_ParseWithLength(text, n);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return;
	}
	char *flat = cJSON_PrintUnformatted(o);
	if (flat)
		isc_kconv_meta(k, "distributedInfo", flat, strlen(flat));
	free(flat);
	static const char *keys[] = { "rank", "world_size", "backend" };
	for (int i = 0; i < 3; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		char num[32];
		if (cJSON_IsNumber(v)) {
			snprintf(num, sizeof(num), "%.0f", v->valuedouble);
			isc_kconv_meta(k, keys[i], num, strlen(num));
		} else if (cJSON_IsString(v)) {
			isc_kconv_meta(k, keys[i], v->valuestring, strlen(v->valuestring));
		}
	}
	cJSON_Delete(o);
}

void isc_kconv_top(struct kt_conv *k, const char *key, char *t, size_t n)
{
	if (!n)
		return;
	if (!strcmp(key, "baseTimeNanoseconds")) {
		bool inexact;
		int64_t v;
		if (!isc_kjson_dec(t, n, 0, &v, &inexact) && !inexact) {
			k->base_ns = v;
			k->have_base = true;
		}
	} else if (!strcmp(key, "deviceProperties")) {
		on_devices(k, t, n);
	} else if (!strcmp(key, "distributedInfo")) {
		on_distributed(k, t, n);
	} else if (t[0] == '"' && n >= 2) { /* other scalars: kept as metadata */
		struct kt_jp j = { t, t + n, 0, 1, NULL, 0 };
		char *s;
		size_t sl;
		char mk[300];
		if (isc_kjson_str(&j, &s, &sl)) {
			snprintf(mk, sizeof(mk), "kineto.%s", key);
			isc_kconv_meta(k, mk, s, sl);
		}
	} else if (t[0] != '{' && t[0] != '[') {
		char mk[300];
		snprintf(mk, sizeof(mk), "kineto.%s", key);
		isc_kconv_meta(k, mk, t, n);
	}
}

const char *isc_kconv_process_name(const struct kt_conv *c, uint32_t pid)
{
	return name_of(c, &c->pnames, pid);
}

const char *isc_kconv_thread_name(const struct kt_conv *c, uint32_t pid, uint32_t tid)
{
	return name_of(c, &c->tnames, (uint64_t)pid << 32 | tid);
}

const char *isc_kconv_command(const struct kt_conv *c)
{
	const char *pn = NULL;
	uint64_t best = 0, pid;
	uint32_t i;
	for (size_t pos = 0; isc_umap_each(&c->pid_events, &pos, &pid, &i);) { /* ties: the first in slot order */
		const char *nm = name_of(c, &c->pnames, pid);
		if (nm && c->cpu_items[i] > best) {
			best = c->cpu_items[i];
			pn = nm;
		}
	}
	return pn;
}

void isc_kconv_free(struct kt_conv *c)
{
	isc_strtab_free(&c->st);
	isc_umap_free(&c->pnames);
	isc_umap_free(&c->tnames);
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	isc_umap_free(&c->pid_events);
	free(c->cpu_items);
	for (size_t i = 0; i < c->ndevs; i++)
		free(c->devs[i].name);
	free(c->devs);
	for (size_t i = 0; i < c->nmetas; i++) {
		free(c->metas[i].key);
		free(c->metas[i].val);
	}
}
