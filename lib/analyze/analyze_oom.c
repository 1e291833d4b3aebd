/*
 * analyze_oom.c - oom: the workload died of out-of-memory.
 *
 * Kinds, by the evidence that decides them (the first that applies):
 *   host_oom_killer    the recorder's WARNING OOM_KILL: a process of the
 *                      session was killed by SIGKILL while the kernel
 *                      counted an OOM kill (its memory cgroup's
 *                      oom_kill, or /proc/vmstat oom_kill)
 *   cuda_oom           an unhandled torch.cuda.OutOfMemoryError (or an
 *                      exception saying "CUDA out of memory"), as the
 *                      Python agent's EXCEPTION record; else a device
 *                      allocation the CUDA agent saw fail, when the
 *                      workload then exited with a non-zero status
 *   host_alloc_failed  an unhandled MemoryError
 * The site: where the exception was raised (file and line of the
 * innermost traceback frame); for the OOM killer, the Python function
 * charged with the most RSS growth in the last GROWTH_WINDOW_NS before
 * the kill (each increase between two samples goes to the innermost
 * Python function of the main thread at the later one), else the one
 * running at the last sample; for a failed device allocation, its
 * allocation site (the allocation site model's: isc_gpu_ana_failure).
 * Memory at the end (isc_oom_mem_at): the reading with
 * the highest RSS among those of the last END_WINDOW_NS before the end
 * (PROC_SAMPLE RSS and smaps_rollup Rss, including the one the Python
 * agent takes when an unhandled MemoryError ends the program), with the
 * composition of the latest smaps_rollup record at or before it (else the
 * first after it: anonymous vs file-backed), and the live device memory
 * (isc_oom_gpu.live_bytes: what gpu.devices[].memory.end_bytes say);
 * for cuda_oom with a failed allocation recorded, what its device held
 * when it failed (device_at_failure: the site model's, by site).  The
 * last reading is often taken after the interpreter freed the memory on
 * its way out; the highest one of the last seconds is what the process
 * held when it died.  Memory: the
 * readings of the last GROWTH_WINDOW_NS per process (at most RING of each
 * kind).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_oom.h"
#include "isc_format.h"  /* ISC_WARN_OOM_KILL */
#include "isc_trace_int.h" /* struct isc_exception */

#define GROWTH_WINDOW_NS 10000000000ull
#define END_WINDOW_NS 2000000000ull
#define RING 512
#define TOP 5

struct sample {
	uint64_t ts, rss;
	uint32_t fn;
};

struct smaps {
	uint64_t ts, rss, pss, swap, anon;
};

struct oproc {
	uint32_t pid;
	struct sample r[RING];
	size_t head, n;
	struct smaps s[RING];
	size_t s_head, s_n;
};

struct isc_oom {
	struct isc_umap map;
	struct oproc **ps;
	size_t nps, cap;
	/* the OOM kill */
	bool killed;
	uint64_t kill_ts;
	uint32_t kill_pid;
	char *kill_msg;
	/* the last out-of-memory exception */
	bool exc;
	bool exc_cuda;
	uint64_t exc_ts;
	uint32_t exc_pid;
	char *exc_type, *exc_msg, *exc_file, *exc_fn;
	uint32_t exc_line;
};

int isc_oom_new(struct isc_oom **o)
{
	*o = calloc(1, sizeof(**o));
	return *o ? 0 : -ENOMEM;
}

void isc_oom_free(struct isc_oom *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nps; i++)
		free(o->ps[i]);
	free(o->ps);
	free(o->kill_msg);
	free(o->exc_type);
	free(o->exc_msg);
	free(o->exc_file);
	free(o->exc_fn);
	isc_umap_free(&o->map);
	free(o);
}

static struct oproc *proc_of(struct isc_oom *o, uint32_t pid, bool add)
{
	uint32_t *slot, i = isc_umap_get(&o->map, pid);
	if (i != ISC_UMAP_NONE)
		return o->ps[i];
	if (!add || isc_grow(&o->ps, &o->cap, o->nps, sizeof(*o->ps)))
		return NULL;
	struct oproc *p = calloc(1, sizeof(*p));
	if (!p || isc_umap_slot(&o->map, pid, &slot)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	*slot = (uint32_t)o->nps;
	o->ps[o->nps++] = p;
	return p;
}

int isc_oom_rss(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t rss, uint32_t fn)
{
	struct oproc *p = proc_of(o, pid, true);
	if (!p)
		return -ENOMEM;
	if (!rss)
		return 0; /* a process already gone (its zombie has no memory) */
	/* forget samples older than the window, keeping one before it (the base of the first increase) */
	while (p->n > 1 && ts - p->r[(p->head + 1) % RING].ts > GROWTH_WINDOW_NS) {
		p->head = (p->head + 1) % RING;
		p->n--;
	}
	if (p->n == RING) {
		p->head = (p->head + 1) % RING;
		p->n--;
	}
	p->r[(p->head + p->n++) % RING] = (struct sample){ ts, rss, fn };
	return 0;
}

int isc_oom_smaps(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t rss, uint64_t pss, uint64_t swap,
		  uint64_t anon)
{
	struct oproc *p = proc_of(o, pid, true);
	if (!p)
		return -ENOMEM;
	while (p->s_n > 1 && ts - p->s[(p->s_head + 1) % RING].ts > GROWTH_WINDOW_NS) {
		p->s_head = (p->s_head + 1) % RING;
		p->s_n--;
	}
	if (p->s_n == RING) {
		p->s_head = (p->s_head + 1) % RING;
		p->s_n--;
	}
	p->s[(p->s_head + p->s_n++) % RING] = (struct smaps){ ts, rss, pss, swap, anon };
	return 0;
}

int isc_oom_mem_at(const struct isc_oom *o, uint32_t pid, uint64_t end, struct isc_oom_mem *m)
{
	const struct oproc *p = proc_of((struct isc_oom *)o, pid, false);
	memset(m, 0, sizeof(*m));
	if (!p)
		return 0;
	/* the last reading at or before end (end 0: the last of all) */
	uint64_t last = 0;
	bool any = false;
	for (size_t i = 0; i < p->n; i++) {
		const struct sample *x = &p->r[(p->head + i) % RING];
		if ((!end || x->ts <= end) && (!any || x->ts > last))
			last = x->ts, any = true;
	}
	for (size_t i = 0; i < p->s_n; i++) {
		const struct smaps *x = &p->s[(p->s_head + i) % RING];
		if ((!end || x->ts <= end) && (!any || x->ts > last))
			last = x->ts, any = true;
	}
	if (!any)
		return 0;
	/* the highest RSS of the window ending at the last reading (ties: the later) */
	uint64_t from = last > END_WINDOW_NS ? last - END_WINDOW_NS : 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct sample *x = &p->r[(p->head + i) % RING];
		if (x->ts >= from && x->ts <= last && (!m->have_rss || x->rss >= m->rss))
			m->have_rss = true, m->rss = x->rss, m->ts = x->ts;
	}
	for (size_t i = 0; i < p->s_n; i++) {
		const struct smaps *x = &p->s[(p->s_head + i) % RING];
		if (x->ts >= from && x->ts <= last && (!m->have_rss || x->rss > m->rss || (x->rss == m->rss && x->ts > m->ts)))
			m->have_rss = true, m->rss = x->rss, m->ts = x->ts;
	}
	/*
	 * its composition: the latest smaps_rollup record at or before it (a
	 * sampler tick's records share one time; the sampler re-reads
	 * smaps_rollup when the RSS moved 16 MiB), else the first after it
	 */
	const struct smaps *best = NULL;
	for (size_t i = 0; i < p->s_n; i++) {
		const struct smaps *x = &p->s[(p->s_head + i) % RING];
		if (x->ts <= m->ts)
			best = x;
		else if (!best && x->ts <= last)
			best = x;
	}
	if (best) {
		m->have_smaps = true;
		m->s_rss = best->rss;
		m->pss = best->pss;
		m->swap = best->swap;
		m->anon = best->anon;
	}
	return 1;
}

/* A copy of n bytes of workload text (cleaned); NULL when out of memory. */
static char *text(const uint8_t *p, size_t n)
{
	return isc_text_dup(p, n, '?', true);
}

/* Where needle (a C string) first occurs in the n bytes at p, or NULL. */
static const uint8_t *find(const uint8_t *p, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; k <= n && i <= n - k; i++)
		if (!memcmp(p + i, needle, k))
			return p + i;
	return NULL;
}

int64_t isc_oom_exception_gpu(const struct isc_exception *x)
{
	static const char tail[] = "OutOfMemoryError";
	size_t k = sizeof(tail) - 1;
	bool cuda = (x->ntype >= k && !memcmp(x->type + x->ntype - k, tail, k)) ||
		    find(x->msg, x->nmsg, "CUDA out of memory");
	if (!cuda)
		return -2;
	for (const uint8_t *p = x->msg, *end = x->msg + x->nmsg; (p = find(p, (size_t)(end - p), "GPU ")); p += 4) {
		int64_t n = 0;
		const uint8_t *d = p + 4;
		for (; d < end && *d >= '0' && *d <= '9' && n < 1000000; d++)
			n = n * 10 + (*d - '0');
		if (d > p + 4 && n < 1000000)
			return n;
	}
	return -1;
}

int isc_oom_exception(struct isc_oom *o, uint64_t ts, uint32_t pid, const struct isc_exception *x, uint64_t line)
{
	char *type = text(x->type, x->ntype), *msg = text(x->msg, x->nmsg);
	int rc = 0;
	if (!type || !msg) {
		rc = -ENOMEM;
		goto out;
	}
	bool cuda = isc_oom_exception_gpu(x) >= -1;
	bool host = !strcmp(type, "MemoryError");
	if (!cuda && !host)
		goto out;
	char *file = text(x->file, x->nfile), *fn = text(x->func, x->nfunc);
	if (!file || !fn) {
		free(file);
		free(fn);
		rc = -ENOMEM;
		goto out;
	}
	free(o->exc_type);
	free(o->exc_msg);
	free(o->exc_file);
	free(o->exc_fn);
	o->exc_type = type;
	o->exc_msg = msg;
	o->exc_file = file;
	o->exc_fn = fn;
	type = msg = NULL;
	o->exc = true;
	o->exc_cuda = cuda;
	o->exc_ts = ts;
	o->exc_pid = pid;
	o->exc_line = line > UINT32_MAX ? 0 : (uint32_t)line;
out:
	free(type);
	free(msg);
	return rc;
}

int isc_oom_warning(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t code, const uint8_t *msg, size_t n)
{
	if (code != ISC_WARN_OOM_KILL || o->killed)
		return 0;
	char *m = isc_text_dup(msg, n, '?', true);
	if (!m)
		return -ENOMEM;
	o->killed = true;
	o->kill_ts = ts;
	o->kill_pid = pid;
	o->kill_msg = m;
	return 0;
}

/* name, file and line of s. */
static void loc(struct isc_jb *jb, cJSON *o, const struct isc_tl_string *s)
{
	isc_jb_str(jb, o, "name", s ? s->name : "?");
	isc_jb_str(jb, o, "file", s ? s->file : "");
	isc_jb_num(jb, o, "line", s ? s->line : 0);
}

struct grow {
	uint32_t fn;
	uint64_t bytes;
};

static int cmp_grow(const void *x, const void *y)
{
	const struct grow *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->fn < b->fn ? -1 : a->fn > b->fn;
}

/*
 * growth_before of p (may be NULL: no RSS samples) up to end: the RSS
 * increase in the window; top: the allocation sites at the death when
 * sites is not NULL, else the RSS increase by function, the top one in
 * *top.
 */
static void growth(const struct oproc *p, uint64_t end, struct isc_jb *jb, cJSON *oom, const struct isc_timeline *t,
		   const struct isc_oom_sites *sites, uint32_t *top)
{
	struct grow g[RING];
	size_t ng = 0;
	uint64_t first = 0, up = 0;
	bool any = false;
	*top = 0;
	for (size_t i = 1; p && i < p->n; i++) {
		const struct sample *a = &p->r[(p->head + i - 1) % RING], *b = &p->r[(p->head + i) % RING];
		if (b->ts > end || end - b->ts > GROWTH_WINDOW_NS)
			continue;
		if (!any)
			first = a->ts;
		any = true;
		if (b->rss <= a->rss)
			continue;
		up += b->rss - a->rss;
		size_t k = 0;
		while (k < ng && g[k].fn != b->fn)
			k++;
		if (k == ng)
			g[ng++] = (struct grow){ b->fn, 0 };
		g[k].bytes += b->rss - a->rss;
	}
	cJSON *gb = isc_jb_obj(jb, oom, "growth_before");
	isc_jb_num_or_null(jb, gb, "window_ns", p, any ? (double)(end - first) : 0);
	isc_jb_num_or_null(jb, gb, "rss_increase_bytes", p, (double)up);
	isc_jb_str(jb, gb, "source", sites ? "allocation_samples" : "rss_samples");
	cJSON *arr = isc_jb_arr(jb, gb, "top");
	if (sites) {
		isc_jb_num(jb, gb, "sites_window_ns", (double)sites->window_ns);
		for (size_t k = 0; k < sites->n; k++) {
			const struct isc_oom_site *s = &sites->top[k];
			cJSON *x = isc_jb_push_obj(jb, arr);
			isc_jb_str(jb, x, "name", s->name);
			isc_jb_str(jb, x, "file", s->file);
			isc_jb_num(jb, x, "line", s->line);
			isc_jb_num(jb, x, "bytes", s->growth > 0 ? (double)(uint64_t)(s->growth + 0.5) : 0);
			isc_jb_num(jb, x, "live_bytes", s->live);
			isc_jb_num(jb, x, "live_err_bytes", s->live_err);
			isc_jb_bool(jb, x, "growing", s->growing);
		}
		return;
	}
	isc_sort(g, ng, sizeof(*g), cmp_grow);
	for (size_t k = 0, shown = 0; k < ng && shown < TOP; k++) {
		if (!g[k].fn)
			continue;
		cJSON *x = isc_jb_push_obj(jb, arr);
		loc(jb, x, isc_timeline_string_borrow(t, g[k].fn));
		isc_jb_num(jb, x, "bytes", (double)g[k].bytes);
		if (!shown++)
			*top = g[k].fn;
	}
}

bool isc_oom_host_death(const struct isc_oom *o, uint32_t *pid, uint64_t *ts)
{
	if (o->killed) {
		*pid = o->kill_pid;
		*ts = o->kill_ts;
		return true;
	}
	if (o->exc && !o->exc_cuda) {
		*pid = o->exc_pid;
		*ts = o->exc_ts;
		return true;
	}
	return false;
}

int isc_oom_emit(const struct isc_oom *o, struct isc_jb *jb, cJSON *root, uint64_t start_ns, int exit_status,
		 const struct isc_oom_gpu *gpu, const struct isc_oom_sites *sites, const struct isc_timeline *t,
		 const char *(*command)(void *ctx, uint32_t pid), void *ctx)
{
	const char *kind;
	uint32_t pid;
	uint64_t ts;
	if (o->killed) {
		kind = "host_oom_killer", pid = o->kill_pid, ts = o->kill_ts;
	} else if (o->exc) {
		kind = o->exc_cuda ? "cuda_oom" : "host_alloc_failed", pid = o->exc_pid, ts = o->exc_ts;
	} else if (gpu && gpu->have && exit_status != 0) {
		kind = "cuda_oom", pid = 0, ts = (uint64_t)gpu->ts;
	} else {
		isc_jb_chk(jb, cJSON_AddNullToObject(root, "oom"));
		return 0;
	}
	cJSON *oom = isc_jb_obj(jb, root, "oom");
	isc_jb_str(jb, oom, "kind", kind);
	isc_jb_num_or_null(jb, oom, "pid", pid != 0, (double)pid);
	isc_jb_str(jb, oom, "command", pid && command ? command(ctx, pid) : NULL);
	isc_jb_num(jb, oom, "at_ns", ts > start_ns ? (double)(ts - start_ns) : 0);
	const struct oproc *p = pid ? proc_of((struct isc_oom *)o, pid, false) : NULL;
	/* the dead process's allocation sites, when it had samples (a host death) */
	const struct isc_oom_sites *by_sites = sites && sites->sampled && strcmp(kind, "cuda_oom") ? sites : NULL;
	uint32_t top = 0;
	if (p || by_sites)
		growth(p, ts, jb, oom, t, by_sites, &top);
	else
		isc_jb_chk(jb, cJSON_AddNullToObject(oom, "growth_before"));

	/* the site and how it was found */
	const char *how, *evidence;
	char ev[700];
	const struct isc_tl_string *at = NULL;
	const struct isc_oom_site *live = NULL;
	if (o->killed && by_sites && by_sites->n) { /* the site holding the most live bytes, growing first */
		live = &by_sites->top[0];
		how = "live_bytes";
		evidence = o->kill_msg;
	} else if (o->killed) {
		const struct sample *last = p && p->n ? &p->r[(p->head + p->n - 1) % RING] : NULL;
		uint32_t f = top ? top : last ? last->fn : 0;
		how = top ? "rss_growth" : f ? "python_stack" : "unknown";
		at = f ? isc_timeline_string_borrow(t, f) : NULL;
		evidence = o->kill_msg;
	} else if (o->exc) {
		how = "exception";
		snprintf(ev, sizeof(ev), "%s in %s%s%s", o->exc_type, o->exc_fn, *o->exc_msg ? ": " : "", o->exc_msg);
		evidence = ev;
	} else {
		how = gpu->site ? "allocation" : "unknown";
		at = gpu->site;
		evidence = "a device memory allocation failed (CUDA agent) and the workload exited with an error";
	}
	if (live) {
		cJSON *site = isc_jb_obj(jb, oom, "site");
		isc_jb_str(jb, site, "name", live->name);
		isc_jb_str(jb, site, "file", live->file);
		isc_jb_num(jb, site, "line", live->line);
		isc_jb_num(jb, site, "live_bytes", live->live);
		isc_jb_num(jb, site, "live_err_bytes", live->live_err);
		isc_jb_bool(jb, site, "growing", live->growing);
	} else if (at || (o->exc && !o->killed)) {
		cJSON *site = isc_jb_obj(jb, oom, "site");
		isc_jb_str(jb, site, "name", at ? at->name : o->exc_fn);
		isc_jb_str(jb, site, "file", at ? at->file : o->exc_file);
		isc_jb_num(jb, site, "line", at ? at->line : o->exc_line);
	} else {
		isc_jb_chk(jb, cJSON_AddNullToObject(oom, "site"));
	}
	isc_jb_str(jb, oom, "site_source", how);
	isc_jb_str(jb, oom, "evidence", evidence);

	cJSON *end = isc_jb_obj(jb, oom, "memory_at_end");
	struct isc_oom_mem m;
	if (pid)
		isc_oom_mem_at(o, pid, ts, &m);
	else
		memset(&m, 0, sizeof(m));
	isc_jb_num_or_null(jb, end, "rss_bytes", m.have_rss, (double)m.rss);
	bool sm = m.have_smaps;
	isc_jb_num_or_null(jb, end, "anon_bytes", sm, (double)m.anon);
	isc_jb_num_or_null(jb, end, "file_bytes", sm, m.s_rss > m.anon ? (double)(m.s_rss - m.anon) : 0);
	isc_jb_num_or_null(jb, end, "swap_bytes", sm, (double)m.swap);
	isc_jb_num_or_null(jb, end, "gpu_live_bytes", gpu && gpu->have_live, gpu ? (double)gpu->live_bytes : 0);

	/* a CUDA out of memory with a failed allocation recorded, or its error
	 * raised: its device then, by site */
	if (!strcmp(kind, "cuda_oom") && gpu && (gpu->have || gpu->at_exception)) {
		cJSON *af = isc_jb_obj(jb, oom, "device_at_failure");
		isc_jb_str(jb, af, "basis", gpu->have ? "failed_allocation" : "exception");
		isc_jb_num(jb, af, "device", gpu->device);
		isc_jb_num(jb, af, "at_ns", gpu->ts > (int64_t)start_ns ? (double)((uint64_t)gpu->ts - start_ns) : 0);
		isc_jb_num(jb, af, "live_bytes", (double)gpu->fail_live_bytes);
		cJSON *ss = isc_jb_arr(jb, af, "sites");
		for (size_t i = 0; i < gpu->nsites; i++) {
			const struct isc_oom_dsite *s = &gpu->sites[i];
			cJSON *x = isc_jb_push_obj(jb, ss);
			isc_jb_num(jb, x, "pid", s->pid);
			isc_jb_str(jb, x, "name", s->name);
			isc_jb_str(jb, x, "file", s->file);
			isc_jb_num(jb, x, "line", s->line);
			isc_jb_str(jb, x, "kind", s->kind);
			isc_jb_num(jb, x, "live_bytes", (double)s->live);
		}
	} else {
		isc_jb_chk(jb, cJSON_AddNullToObject(oom, "device_at_failure"));
	}
	return jb->oom ? -ENOMEM : 0;
}
