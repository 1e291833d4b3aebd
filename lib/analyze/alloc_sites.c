/*
 * alloc_sites.c - the allocation site model (alloc_sites.h): sampled
 * allocations and releases in, live bytes by site out.
 *
 *   TL_ALLOC  --> site(pid, innermost frame) += w; live[pid, addr] = (site, w, size)
 *   TL_FREE   --> live[pid, addr] --> site -= w
 *   TL_ALLOC_SITE (the shim's table at a death) --> the site's exact counts
 *   isc_asite_exact (device memory) --> as ALLOC / FREE, weight = size, in
 *                    the space (pid, 1 + device): sites and live pointers
 *                    apart from the host's (space 0); the peak is the
 *                    device's (every process's); a failed allocation
 *                    counts at its site and is remembered, with every
 *                    site's live bytes then (copy on write, as the peak)
 *   boundary  --> B++ (each site remembers its value lazily, below)
 *
 * Three things are kept without copying every site at every moment:
 *
 * - live at the process's peak: when a modification of any site raises
 *   the process's total to a new maximum, the process's version goes up;
 *   a site about to change whose saved version is older saves its current
 *   value first (copy on write).  Its value at the peak is that saved
 *   value, or its current one when it did not change since.
 * - live at each iteration boundary: the same, against the boundary
 *   count: a site about to change appends (first boundary it did not see
 *   change, its value) to its series; boundaries after its last change
 *   have its current value.
 * - live in the last seconds: 16 buckets of 250 ms per site, each the
 *   value at the bucket's end, filled when the site next changes.
 * - a device site's live bytes over the whole run: ISC_ASITE_BUCKETS
 *   values at the caller's bucket ends (isc_asite_exact's bucket, shift),
 *   pairs merged when the caller's grid doubled since the site last
 *   changed (once per doubling, when it next changes or is read).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_sites.h"

#define DEFAULT_INTERVAL (512u << 10) /* iscope-record's, for a process without ALLOC_INFO */
#define HIST_N 16
#define HIST_NS 250000000ull
#define UNSET INT64_MIN /* a series bucket the site did not change in */

struct bval { /* live (and allocated so far) from boundary from_b on, up to the next entry's */
	uint32_t from_b;
	double live, var, alloc, avar;
};

struct site {
	uint32_t pid, depth;
	uint32_t space; /* 0: host memory; 1 + device: that device's memory */
	uint8_t what;   /* enum isc_asite_what */
	uint64_t key;
	uint32_t *frames;
	uint64_t nalloc, nfree;
	double alloc, alloc_var, freed, freed_var, live, live_var;
	uint32_t pver;          /* proc version when pval was saved */
	double pval, pvar;
	uint32_t sver;          /* snapshot version when sval was saved */
	double sval, svar;
	uint32_t fver;          /* failures when fval was saved */
	double fval;
	double objects;
	struct bval *ser;
	uint32_t nser, capser, mark; /* mark: boundary count at its last change */
	bool hist_on;
	uint64_t hist_first, hist_at;
	double hist[HIST_N];
	uint64_t growth_ts;
	bool table;
	double t_live, t_err, t_alloc, t_freed;
	uint64_t t_nalloc, t_nfree;
	int64_t *tser;   /* device sites: live at each bucket's end (UNSET: unchanged in it); NULL until then */
	uint32_t tshift; /* the grid's doublings tser is at */
	uint64_t nfail;  /* device sites: allocations that failed */
};

struct aproc {
	uint32_t pid, space, ver;
	double live, peak;
	uint64_t peak_ts, interval;
	uint64_t first_ts, last_ts; /* of its ALLOC and FREE records */
};

/* open addressing, (a, b) -> v; state 0 empty, 1 used, 2 deleted */
struct kent {
	uint64_t a, b;
	uint32_t v;
	uint8_t state;
	double w, size; /* live pointers: the sample's weight and size */
	uint64_t tag;   /* live device allocations: the caller's (isc_asite_exact) */
};
struct kmap {
	struct kent *e;
	size_t cap, used, dead;
};

struct isc_asite_model {
	struct site *sites;
	size_t nsites, capsites;
	struct kmap by_stack; /* (pid, key) -> site; collisions resolved by probing the site's frames */
	struct kmap live;     /* (pid, address) -> site, with weight and size */
	struct kmap shm;      /* (pid, shim site index) -> site */
	struct kmap bysize;   /* exact records without an address: (space pid, size) -> top of its stack in szs */
	struct szent { uint32_t site, next; uint64_t tag; } *szs; /* live allocations paired by size; next: below it,
								   * or free list */
	size_t nszs, capszs;
	uint32_t szfree;      /* free list through next (UINT32_MAX: none) */
	struct aproc *procs;
	size_t nprocs, capprocs;
	uint64_t *bts;        /* boundary times */
	size_t nb, capb;
	uint32_t snap_ver;    /* snapshots taken */
	uint64_t snap_ts;
	struct isc_asite_stats *out;
	size_t nout; /* entries of out */
	size_t *rank;
	struct isc_asite_gaps gaps;
	bool has_device;
	bool failed; /* some allocation failed: fail is the latest */
	bool exc_failed; /* none failed, a CUDA out-of-memory error was raised: fail is its (isc_asite_exception) */
	uint32_t fail_ver; /* failures seen: each site's fval is its value at the latest */
	struct isc_asite_failure fail;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	h ^= (b + 0x632BE59BD9B4E019ull) * 0x94D049BB133111EBull;
	return h ^ (h >> 31);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *n = realloc(*p, c * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

/* ---- the map ------------------------------------------------------------ */

static int kmap_rehash(struct kmap *m, size_t cap)
{
	struct kent *e = calloc(cap, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->e[i].state == 1) {
			size_t j = mix(m->e[i].a, m->e[i].b) & (cap - 1);
			while (e[j].state)
				j = (j + 1) & (cap - 1);
			e[j] = m->e[i];
		}
	free(m->e);
	m->e = e;
	m->cap = cap;
	m->dead = 0;
	return 0;
}

/* The entry of (a, b), or NULL. */
static struct kent *kmap_find(const struct kmap *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	for (size_t i = mix(a, b) & (m->cap - 1), k = 0; k < m->cap && m->e[i].state; k++, i = (i + 1) & (m->cap - 1))
		if (m->e[i].state == 1 && m->e[i].a == a && m->e[i].b == b)
			return &m->e[i];
	return NULL;
}

static struct kent *kmap_put(struct kmap *m, uint64_t a, uint64_t b)
{
	if ((m->used + m->dead + 1) * 4 > m->cap * 3 &&
	    kmap_rehash(m, m->cap && (m->used + 1) * 2 > m->cap ? m->cap * 2 : m->cap ? m->cap : 64))
		return NULL;
	size_t i = mix(a, b) & (m->cap - 1);
	while (m->e[i].state == 1)
		i = (i + 1) & (m->cap - 1);
	if (m->e[i].state == 2)
		m->dead--;
	m->e[i] = (struct kent){ a, b, 0, 1, 0, 0, 0 };
	m->used++;
	return &m->e[i];
}

static void kmap_del(struct kmap *m, struct kent *e)
{
	e->state = 2;
	m->used--;
	m->dead++;
}

/* ---- model -------------------------------------------------------------- */

int isc_asite_new(struct isc_asite_model **m)
{
	*m = calloc(1, sizeof(**m));
	if (*m)
		(*m)->szfree = UINT32_MAX;
	return *m ? 0 : -ENOMEM;
}

void isc_asite_free(struct isc_asite_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nsites; i++) {
		free(m->sites[i].frames);
		free(m->sites[i].ser);
		free(m->sites[i].tser);
	}
	free(m->sites);
	free(m->by_stack.e);
	free(m->live.e);
	free(m->shm.e);
	free(m->bysize.e);
	free(m->szs);
	free(m->procs);
	free(m->bts);
	free(m->out);
	free(m->rank);
	free(m);
}

/*
 * The memory of space (0: host; 1 + device) whose peak a site's is: the
 * process pid's host memory; a device's memory, whichever process holds
 * it (pid: the first one seen).
 */
static struct aproc *proc_get(struct isc_asite_model *m, uint32_t pid, uint32_t space)
{
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].space == space && (space || m->procs[i].pid == pid))
			return &m->procs[i];
	if (grow((void **)&m->procs, &m->capprocs, m->nprocs + 1, sizeof(*m->procs)))
		return NULL;
	/* exact records: no sampling interval (the leak window is its least, 2) */
	m->procs[m->nprocs] = (struct aproc){ .pid = pid, .space = space, .interval = space ? 0 : DEFAULT_INTERVAL };
	return &m->procs[m->nprocs++];
}

static uint64_t stack_key(const uint32_t *frames, uint32_t depth)
{
	uint64_t h = 1469598103934665603ull ^ depth;
	for (uint32_t i = 0; i < 2 * depth; i++)
		h = (h ^ frames[i]) * 1099511628211ull;
	return h;
}

/*
 * The site of (pid, innermost frame), made on first use with stack as its
 * stack (the first one seen: a line reached from two callers is one site);
 * its index, or -ENOMEM.
 */
static long site_get(struct isc_asite_model *m, uint32_t pid, uint32_t space, uint8_t what, const uint32_t *frames,
		     uint32_t depth)
{
	uint32_t leaf = depth ? 1 : 0;
	uint64_t key = stack_key(frames, leaf) ^ what, a = (uint64_t)space << 32 | pid;
	/* colliding keys are chained through b = key + k */
	for (uint64_t k = 0;; k++) {
		struct kent *e = kmap_find(&m->by_stack, a, key + k);
		if (!e)
			break;
		struct site *s = &m->sites[e->v];
		if ((s->depth ? 1u : 0u) == leaf && s->what == what &&
		    !memcmp(s->frames, frames, (size_t)leaf * 2 * sizeof(uint32_t)))
			return e->v;
	}
	if (grow((void **)&m->sites, &m->capsites, m->nsites + 1, sizeof(*m->sites)))
		return -ENOMEM;
	struct site *s = &m->sites[m->nsites];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->space = space;
	s->what = what;
	s->depth = depth;
	s->key = key;
	s->frames = malloc((size_t)(depth ? depth : 1) * 2 * sizeof(uint32_t));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, (size_t)depth * 2 * sizeof(uint32_t));
	uint64_t k = 0;
	while (kmap_find(&m->by_stack, a, key + k))
		k++;
	struct kent *e = kmap_put(&m->by_stack, a, key + k);
	if (!e) {
		free(s->frames);
		return -ENOMEM;
	}
	e->v = (uint32_t)m->nsites;
	return (long)m->nsites++;
}

/* Saves what the lazy views need before site s changes at ts. */
static int before_change(struct isc_asite_model *m, struct site *s, struct aproc *p, uint64_t ts)
{
	if (s->pver != p->ver) { /* its value at the latest peak */
		s->pval = s->live;
		s->pvar = s->live_var;
		s->pver = p->ver;
	}
	if (s->sver != m->snap_ver) { /* its value at the snapshot */
		s->sval = s->live;
		s->svar = s->live_var;
		s->sver = m->snap_ver;
	}
	if (s->fver != m->fail_ver) { /* its value at the latest failed allocation */
		s->fval = s->live;
		s->fver = m->fail_ver;
	}
	if (!p->first_ts || ts < p->first_ts)
		p->first_ts = ts;
	if (ts > p->last_ts)
		p->last_ts = ts;
	uint32_t nb = (uint32_t)m->nb;
	if (s->mark < nb) { /* its value at the boundaries since its last change */
		if (s->nser || s->live || s->alloc) { /* a new site has nothing to keep; churn (live 0) has its bytes allocated */
			size_t cap = s->capser;
			if (grow((void **)&s->ser, &cap, (size_t)s->nser + 1, sizeof(*s->ser)))
				return -ENOMEM;
			s->capser = (uint32_t)cap;
			s->ser[s->nser++] = (struct bval){ s->mark + 1, s->live, s->live_var, s->alloc, s->alloc_var };
		}
		s->mark = nb;
	}
	uint64_t b = ts / HIST_NS; /* its value at the end of the buckets since */
	if (!s->hist_on) {
		s->hist_on = true;
		s->hist_first = s->hist_at = b;
	} else if (b > s->hist_at) {
		for (uint64_t k = b - s->hist_at > HIST_N ? b - HIST_N : s->hist_at; k < b; k++)
			s->hist[k % HIST_N] = s->live;
		s->hist_at = b;
	}
	return 0;
}

/* After s changed: the process's total, and a new peak. */
static void after_change(struct aproc *p, double delta, uint64_t ts)
{
	p->live += delta;
	if (p->live > p->peak) {
		p->peak = p->live;
		p->peak_ts = ts;
		p->ver++;
	}
}

/* (string id, line) pairs of a record body into frames; false when short. */
static bool read_frames(const uint8_t *p, const uint8_t *e, uint64_t depth, uint32_t *frames)
{
	uint64_t v;
	for (uint64_t i = 0; i < 2 * depth; i++) {
		if (isc_get_varint(&p, e, &v))
			return false;
		frames[i] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	}
	return true;
}

static int on_alloc(struct isc_asite_model *m, const struct isc_tl_event *ev)
{
	uint32_t frames[2 * ISC_ALLOC_MAX_DEPTH];
	const uint64_t *f = ev->f; /* tid address size weight domain flags site depth */
	if (ev->nf < 8 || f[7] > ISC_ALLOC_MAX_DEPTH || !read_frames(ev->bytes, ev->bytes + ev->nbytes, f[7], frames)) {
		m->gaps.bad_records++;
		return -EBADMSG;
	}
	struct aproc *p = proc_get(m, ev->pid, 0);
	long si = p ? site_get(m, ev->pid, 0, ISC_ASITE_STACK, frames, (uint32_t)f[7]) : -ENOMEM;
	if (si < 0)
		return -ENOMEM;
	struct site *s = &m->sites[si];
	double w = (double)f[3], size = (double)f[2], var = w * (w - size);
	if (var < 0)
		var = 0;
	if (before_change(m, s, p, ev->ts))
		return -ENOMEM;
	s->nalloc++;
	s->objects += size > 0 ? w / size : 0;
	s->alloc += w;
	s->alloc_var += var;
	s->live += w;
	s->live_var += var;
	s->growth_ts = ev->ts;
	after_change(p, w, ev->ts);
	struct kent *e = kmap_find(&m->shm, ev->pid, f[6]);
	if (!e && !(e = kmap_put(&m->shm, ev->pid, f[6])))
		return -ENOMEM;
	e->v = (uint32_t)si;
	if (f[5] & ISC_ALLOC_F_UNTRACKED) {
		m->gaps.untracked++;
		return 0;
	}
	struct kent *l = kmap_find(&m->live, ev->pid, f[1]);
	if (l) { /* its release was not recorded: it is gone */
		struct site *o = &m->sites[l->v];
		double ov = l->w * (l->w - l->size);
		if (before_change(m, o, p, ev->ts))
			return -ENOMEM;
		o->live -= l->w;
		o->live_var -= ov > 0 ? ov : 0;
		after_change(p, -l->w, ev->ts);
		m->gaps.unmatched_frees++;
	} else if (!(l = kmap_put(&m->live, ev->pid, f[1]))) {
		return -ENOMEM;
	}
	l->v = (uint32_t)si;
	l->w = w;
	l->size = size;
	return 0;
}

static int on_free(struct isc_asite_model *m, const struct isc_tl_event *ev)
{
	const uint64_t *f = ev->f; /* tid address size weight domain site */
	if (ev->nf < 6) {
		m->gaps.bad_records++;
		return -EBADMSG;
	}
	struct aproc *p = proc_get(m, ev->pid, 0);
	if (!p)
		return -ENOMEM;
	struct kent *l = kmap_find(&m->live, ev->pid, f[1]);
	double w, size;
	uint32_t si;
	if (l) {
		w = l->w;
		size = l->size;
		si = l->v;
	} else { /* its ALLOC was lost: the shim's site index may still say where */
		struct kent *e = kmap_find(&m->shm, ev->pid, f[5]);
		m->gaps.unmatched_frees++;
		if (!e)
			return 0;
		w = (double)f[3];
		size = (double)f[2];
		si = e->v;
	}
	struct site *s = &m->sites[si];
	double var = w * (w - size);
	if (var < 0)
		var = 0;
	if (before_change(m, s, p, ev->ts))
		return -ENOMEM;
	s->nfree++;
	s->freed += w;
	s->freed_var += var;
	s->live -= w;
	s->live_var -= var;
	if (s->live_var < 0 || s->live < 0.5) /* float residue of equal sums */
		s->live_var = 0;
	if (s->live < 0.5 && s->live > -0.5)
		s->live = 0;
	after_change(p, -w, ev->ts);
	if (l)
		kmap_del(&m->live, l);
	return 0;
}

/* The recorder's copy of the shim's table at the process's death. */
static int on_table(struct isc_asite_model *m, const struct isc_tl_event *ev)
{
	uint32_t frames[2 * ISC_ALLOC_MAX_DEPTH];
	const uint64_t *f = ev->f;
	if (ev->nf < 12 || f[11] > ISC_ALLOC_MAX_DEPTH || !read_frames(ev->bytes, ev->bytes + ev->nbytes, f[11], frames)) {
		m->gaps.bad_records++;
		return -EBADMSG;
	}
	if (!proc_get(m, ev->pid, 0))
		return -ENOMEM;
	long si = site_get(m, ev->pid, 0, ISC_ASITE_STACK, frames, (uint32_t)f[11]);
	if (si < 0)
		return -ENOMEM;
	struct site *s = &m->sites[si]; /* the shim's entries are by whole stack: summed by line here */
	s->table = true;
	s->t_live += (double)f[1];
	s->t_err = sqrt(s->t_err * s->t_err + (double)f[2] * (double)f[2]);
	s->t_alloc += (double)f[4];
	s->t_nalloc += f[5];
	s->t_freed += (double)f[6];
	s->t_nfree += f[7];
	struct kent *e = kmap_find(&m->shm, ev->pid, f[0]);
	if (!e && !(e = kmap_put(&m->shm, ev->pid, f[0])))
		return -ENOMEM;
	e->v = (uint32_t)si;
	return 0;
}

int isc_asite_event(struct isc_asite_model *m, const struct isc_tl_event *ev)
{
	switch (ev->type) {
	case ISC_REC_TL_ALLOC:
		return on_alloc(m, ev);
	case ISC_REC_TL_FREE:
		return on_free(m, ev);
	case ISC_REC_TL_ALLOC_SITE:
		return on_table(m, ev);
	case ISC_REC_TL_ALLOC_INFO: { /* phase interval ... */
		struct aproc *p;
		if (ev->nf < 2) {
			m->gaps.bad_records++;
			return -EBADMSG;
		}
		if (!(p = proc_get(m, ev->pid, 0)))
			return -ENOMEM;
		if (ev->f[1]) {
			p->interval = ev->f[1];
			m->gaps.interval = ev->f[1];
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Merges pairs of buckets of a series of values at bucket ends (the grid's width doubled). */
static void merge_pairs(int64_t *v)
{
	for (size_t b = 0; b < ISC_ASITE_BUCKETS / 2; b++)
		v[b] = v[2 * b + 1] != UNSET ? v[2 * b + 1] : v[2 * b];
	for (size_t b = ISC_ASITE_BUCKETS / 2; b < ISC_ASITE_BUCKETS; b++)
		v[b] = UNSET;
}

/* Brings series v, at from doublings, to to (from <= to): past 9, every value is in bucket 0. */
static void catch_up(int64_t *v, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to && k - from < 9; k++)
		merge_pairs(v);
}

/* Site s's live bytes (just changed) at the end of bucket x->bucket of the caller's grid. */
static int series_put(struct site *s, const struct isc_asite_exact *x)
{
	if (x->bucket >= ISC_ASITE_BUCKETS)
		return 0; /* not a bucket of the grid */
	if (!s->tser) {
		if (!(s->tser = malloc(ISC_ASITE_BUCKETS * sizeof(*s->tser))))
			return -ENOMEM;
		for (size_t b = 0; b < ISC_ASITE_BUCKETS; b++)
			s->tser[b] = UNSET;
		s->tshift = x->shift;
	}
	if (x->shift > s->tshift) {
		catch_up(s->tser, s->tshift, x->shift);
		s->tshift = x->shift;
	}
	s->tser[x->bucket] = (int64_t)s->live;
	return 0;
}

/* Site s (of process p) changes by delta bytes, exactly (no variance), at x's time. */
static int exact_change(struct isc_asite_model *m, struct site *s, struct aproc *p, double delta,
			const struct isc_asite_exact *x)
{
	uint64_t ts = x->ts;
	if (before_change(m, s, p, ts))
		return -ENOMEM;
	if (delta > 0) {
		s->nalloc++;
		s->objects += 1;
		s->alloc += delta;
		s->growth_ts = ts;
	} else {
		s->nfree++;
		s->freed -= delta;
	}
	s->live += delta;
	after_change(p, delta, ts);
	return series_put(s, x);
}

/*
 * A record without an address (older Kineto files): a release pairs with
 * the latest live allocation of the same size (a stack per size:
 * temporaries are freed soon after they are made).
 */
static int exact_by_size(struct isc_asite_model *m, const struct isc_asite_exact *x, struct aproc *p, uint64_t a,
			 struct isc_asite_paired *out)
{
	struct kent *e = kmap_find(&m->bysize, a, x->size);
	if (!x->alloc) {
		if (!e) {
			out->unmatched = true;
			return 0; /* made before the trace */
		}
		uint32_t i = e->v, site = m->szs[i].site;
		if (m->szs[i].next == UINT32_MAX)
			kmap_del(&m->bysize, e);
		else
			e->v = m->szs[i].next;
		m->szs[i].next = m->szfree;
		m->szfree = i;
		*out = (struct isc_asite_paired){ .released = true, .size = x->size, .tag = m->szs[i].tag };
		return exact_change(m, &m->sites[site], p, -(double)x->size, x);
	}
	long si = site_get(m, x->pid, p->space, x->what, x->frames, x->depth);
	if (si < 0)
		return -ENOMEM;
	uint32_t i = m->szfree;
	if (i != UINT32_MAX)
		m->szfree = m->szs[i].next;
	else if (m->nszs >= UINT32_MAX - 1 || grow((void **)&m->szs, &m->capszs, m->nszs + 1, sizeof(*m->szs)))
		return -ENOMEM;
	else
		i = (uint32_t)m->nszs++;
	uint32_t below = e ? e->v : UINT32_MAX;
	if (!e && !(e = kmap_put(&m->bysize, a, x->size))) {
		m->szs[i].next = m->szfree;
		m->szfree = i;
		return -ENOMEM;
	}
	m->szs[i] = (struct szent){ (uint32_t)si, below, x->tag };
	e->v = i;
	m->has_device = true;
	return exact_change(m, &m->sites[si], p, (double)x->size, x);
}

/*
 * An allocation that failed: its site counts it; the latest is remembered,
 * with its device's live bytes and (from now on, as each site changes) every
 * site's.
 */
static int exact_failed(struct isc_asite_model *m, const struct isc_asite_exact *x, uint32_t space)
{
	struct aproc *p = proc_get(m, x->pid, space);
	long si = p ? site_get(m, x->pid, space, x->what, x->frames, x->depth) : -ENOMEM;
	if (si < 0 || m->fail_ver >= UINT32_MAX - 1)
		return si < 0 ? -ENOMEM : 0;
	struct site *s = &m->sites[si];
	s->nfail++;
	m->failed = true;
	m->exc_failed = false;
	m->fail_ver++;
	m->fail = (struct isc_asite_failure){ .id = (uint32_t)si, .pid = x->pid, .device = x->device, .depth = s->depth,
					     .what = s->what, .frames = s->frames, .ts = x->ts, .size = x->size,
					     .device_live = p->live > 0 ? (uint64_t)p->live : 0 };
	return 0;
}

int isc_asite_exact(struct isc_asite_model *m, const struct isc_asite_exact *x, struct isc_asite_paired *out)
{
	struct isc_asite_paired none;
	if (!out)
		out = &none;
	memset(out, 0, sizeof(*out));
	if (x->depth > ISC_ALLOC_MAX_DEPTH || x->device >= UINT32_MAX - 1 || x->size > ISC_ASITE_SIZE_MAX)
		return 0;
	uint32_t space = x->device + 1;
	uint64_t a = (uint64_t)space << 32 | x->pid;
	if (x->failed)
		return exact_failed(m, x, space);
	struct aproc *p = proc_get(m, x->pid, space);
	if (!p)
		return -ENOMEM;
	if (!x->address)
		return exact_by_size(m, x, p, a, out);
	struct kent *l = kmap_find(&m->live, a, x->address);
	if (l) { /* a release, or an allocation at a live address: its release was lost */
		uint32_t v = l->v;
		double w = l->w;
		*out = (struct isc_asite_paired){ .released = true, .size = (uint64_t)w, .tag = l->tag };
		kmap_del(&m->live, l);
		if (exact_change(m, &m->sites[v], p, -w, x))
			return -ENOMEM;
	}
	if (!x->alloc) {
		out->unmatched = !l;
		return 0; /* with no live allocation: made before the trace */
	}
	long si = site_get(m, x->pid, space, x->what, x->frames, x->depth);
	if (si < 0)
		return -ENOMEM;
	if (!(l = kmap_put(&m->live, a, x->address)))
		return -ENOMEM;
	l->v = (uint32_t)si;
	l->w = l->size = (double)x->size;
	l->tag = x->tag;
	m->has_device = true;
	return exact_change(m, &m->sites[si], p, (double)x->size, x);
}

void isc_asite_series(const struct isc_asite_model *m, uint32_t id, uint32_t shift, int64_t *out, size_t nb)
{
	const struct site *s = id < m->nsites ? &m->sites[id] : NULL;
	int64_t v[ISC_ASITE_BUCKETS], cur = 0;
	if (s && s->tser) {
		memcpy(v, s->tser, sizeof(v));
		if (shift > s->tshift)
			catch_up(v, s->tshift, shift);
	} else {
		for (size_t b = 0; b < ISC_ASITE_BUCKETS; b++)
			v[b] = UNSET;
	}
	for (size_t b = 0; b < nb; b++) {
		if (b < ISC_ASITE_BUCKETS && v[b] != UNSET)
			cur = v[b];
		out[b] = cur;
	}
}

bool isc_asite_last_failure(const struct isc_asite_model *m, struct isc_asite_failure *out)
{
	if (m->failed)
		*out = m->fail;
	return m->failed;
}

void isc_asite_exception(struct isc_asite_model *m, uint64_t ts, uint32_t pid, int64_t device)
{
	const struct aproc *d = NULL;
	if (m->failed || m->fail_ver >= UINT32_MAX - 1)
		return;
	for (size_t i = 0; i < m->nprocs; i++) { /* device spaces: one per device, every process's */
		const struct aproc *p = &m->procs[i];
		if (!p->space)
			continue;
		if (device >= 0 ? (int64_t)p->space == device + 1 : (!d || p->live > d->live))
			d = p;
	}
	if (!d)
		return;
	m->fail_ver++;
	m->exc_failed = true;
	m->fail = (struct isc_asite_failure){ .id = UINT32_MAX, .pid = pid, .device = d->space - 1, .ts = ts,
					     .device_live = d->live > 0 ? (uint64_t)d->live : 0 };
}

bool isc_asite_exception_failure(const struct isc_asite_model *m, struct isc_asite_failure *out)
{
	if (m->exc_failed)
		*out = m->fail;
	return m->exc_failed;
}

bool isc_asite_last(const struct isc_asite_model *m, const struct isc_asite_stats **out, size_t *n)
{
	*out = m->out;
	*n = m->out ? m->nout : 0;
	return m->out != NULL;
}

bool isc_asite_has_device(const struct isc_asite_model *m)
{
	return m->has_device;
}

int isc_asite_boundary(struct isc_asite_model *m, uint64_t ts)
{
	if (m->nb >= UINT32_MAX - 1 || grow((void **)&m->bts, &m->capb, m->nb + 1, sizeof(*m->bts)))
		return -ENOMEM;
	m->bts[m->nb++] = ts;
	return 0;
}

uint32_t isc_asite_nmarks(const struct isc_asite_model *m)
{
	return (uint32_t)m->nb;
}

void isc_asite_snapshot(struct isc_asite_model *m, uint64_t ts)
{
	m->snap_ver++;
	m->snap_ts = ts;
}

void isc_asite_gaps(const struct isc_asite_model *m, struct isc_asite_gaps *g)
{
	*g = m->gaps;
}

/* ---- report ------------------------------------------------------------- */

/* Live bytes (and variance), and bytes allocated so far (and variance), of s at boundary b (1-based). */
static void at_boundary(const struct site *s, uint32_t b, double *live, double *var, double *alloc, double *avar)
{
	if (b > s->mark) {
		*live = s->live;
		*var = s->live_var;
		*alloc = s->alloc;
		*avar = s->alloc_var;
		return;
	}
	*live = *var = *alloc = *avar = 0; /* before its first entry: nothing live, nothing allocated */
	uint32_t lo = 0, hi = s->nser;
	while (lo < hi) { /* the last entry with from_b <= b */
		uint32_t mid = (lo + hi) / 2;
		if (s->ser[mid].from_b <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		*live = s->ser[lo - 1].live;
		*var = s->ser[lo - 1].var;
		*alloc = s->ser[lo - 1].alloc;
		*avar = s->ser[lo - 1].avar;
	}
}

/* Slope of y over x (n points) and its standard error. */
static void slope(const double *x, const double *y, size_t n, double *b, double *err)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0, sse = 0;
	*b = *err = 0;
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	if (sxx <= 0)
		return;
	*b = sxy / sxx;
	for (size_t i = 0; i < n; i++) {
		double r = y[i] - my - *b * (x[i] - mx);
		sse += r * r;
	}
	if (n > 2)
		*err = sqrt(sse / (double)(n - 2) / sxx);
}

/* The steady-state part of a site's numbers over boundaries marks[0, n), n >= 2 (see isc_asite_report). */
static int steady(const struct isc_asite_model *m, const struct site *s, uint64_t interval, const uint32_t *marks,
		  size_t n, struct isc_asite_stats *o)
{
	double *x = malloc(n * sizeof(double)), *t = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	double *fl = malloc(n * sizeof(double)), var_last = 0, a0 = 0, av0 = 0;
	if (!x || !t || !y || !fl) {
		free(x);
		free(t);
		free(y);
		free(fl);
		return -ENOMEM;
	}
	uint64_t t0 = m->bts[marks[0] - 1];
	for (size_t i = 0; i < n; i++) {
		double v, al, av;
		at_boundary(s, marks[i], &y[i], &v, &al, &av);
		x[i] = (double)i;
		t[i] = (double)(m->bts[marks[i] - 1] - t0) / 1e9;
		if (i == 0) {
			a0 = al;
			av0 = av;
		}
		if (i == n - 1) {
			var_last = v;
			o->alloc_steady = al - a0;
			o->alloc_steady_err = sqrt(av - av0 > 0 ? av - av0 : 0);
			o->steady_ns = m->bts[marks[i] - 1] - t0;
		}
	}
	o->intervals = (unsigned)(n - 1);
	double e;
	slope(x, y, n, &o->slope_per_iter, &o->slope_err);
	slope(t, y, n, &o->slope_per_s, &e);
	fl[n - 1] = y[n - 1];
	for (size_t i = n - 1; i-- > 0;)
		fl[i] = y[i] < fl[i + 1] ? y[i] : fl[i + 1];
	o->retained = fl[n - 1] - fl[0];
	o->retained_err = sqrt(var_last);
	double per = o->retained / (double)(n - 1);
	if (per > 0) {
		/* an iteration allocating per bytes goes unsampled with probability e^(-per/T): w such that w
		 * such misses in a row happen anywhere in the run with probability below ISC_ASITE_LEAK_MISS */
		double w = ceil(log((double)(n - 1) / ISC_ASITE_LEAK_MISS) * (double)interval / per);
		o->leak_window = w < 2 ? 2 : w > 1e6 ? 1000000 : (unsigned)w;
	}
	/* a floor that grows at least once in every leak_window iterations */
	bool every = o->leak_window && o->intervals >= o->leak_window;
	size_t since = 0;
	for (size_t i = 1; i < n && every; i++) {
		since = fl[i] > fl[i - 1] ? 0 : since + 1;
		if (since >= o->leak_window)
			every = false;
	}
	o->leak = every && o->intervals >= ISC_ASITE_LEAK_MIN_INTERVALS && o->retained > 2 * o->retained_err &&
		  o->retained > 0;
	o->leak_per_iter = o->leak ? per : 0;
	free(x);
	free(t);
	free(y);
	free(fl);
	return 0;
}

static int rank_cmp(const void *a, const void *b, void *ctx)
{
	const struct isc_asite_stats *o = ctx;
	const struct isc_asite_stats *x = &o[*(const size_t *)a], *y = &o[*(const size_t *)b];
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->live_end != y->live_end)
		return x->live_end > y->live_end ? -1 : 1;
	if (x->alloc_bytes != y->alloc_bytes)
		return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/*
 * The report over the steady states st[0, nst) (by process), or, when all
 * is not NULL, over the boundaries all[0, nall) for every process.
 */
static int report(struct isc_asite_model *m, const struct isc_asite_steady *st, size_t nst, const uint32_t *all,
		  size_t nall, const struct isc_asite_stats **out, size_t *n)
{
	struct isc_asite_stats *o = calloc(m->nsites ? m->nsites : 1, sizeof(*o));
	size_t *rank = calloc(m->nsites ? m->nsites : 1, sizeof(*rank));
	if (!o || !rank) {
		free(o);
		free(rank);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nsites; i++) {
		const struct site *s = &m->sites[i];
		struct isc_asite_stats *r = &o[i];
		struct aproc *p = proc_get(m, s->pid, s->space);
		r->id = (uint32_t)i;
		r->pid = s->pid;
		r->device_mem = s->space > 0;
		r->device = s->space ? s->space - 1 : 0;
		r->what = s->what;
		r->depth = s->depth;
		r->frames = s->frames;
		r->alloc_count = s->nalloc;
		r->free_count = s->nfree;
		r->fail_count = s->nfail;
		r->alloc_bytes = s->alloc;
		r->alloc_err = sqrt(s->alloc_var);
		r->freed_bytes = s->freed;
		r->freed_err = sqrt(s->freed_var);
		r->live_end = s->live;
		r->live_end_err = sqrt(s->live_var > 0 ? s->live_var : 0);
		bool saved = p && s->pver == p->ver;
		r->live_peak = saved ? s->pval : s->live;
		r->live_peak_err = sqrt(saved ? (s->pvar > 0 ? s->pvar : 0) : (s->live_var > 0 ? s->live_var : 0));
		r->peak_ts = p ? p->peak_ts : 0;
		r->growth_ts = s->growth_ts;
		r->objects = s->objects;
		r->first_ts = p ? p->first_ts : 0;
		r->last_ts = p ? p->last_ts : 0;
		if (m->fail_ver) /* saved when it changed since the failure, else its current value */
			r->live_fail = s->fver == m->fail_ver ? s->fval : s->live;
		if (m->snap_ver) {
			bool snap = s->sver == m->snap_ver;
			double v = snap ? s->svar : s->live_var;
			r->live_snap = snap ? s->sval : s->live;
			r->live_snap_err = sqrt(v > 0 ? v : 0);
		}
		if (s->table && s->t_nalloc > s->nalloc) { /* records were lost: the shim's counts are whole */
			r->from_table = true;
			r->alloc_count = s->t_nalloc;
			r->free_count = s->t_nfree;
			r->alloc_bytes = s->t_alloc;
			r->freed_bytes = s->t_freed;
			r->live_end = s->t_live;
			r->live_end_err = s->t_err;
		}
		const uint32_t *marks = all;
		size_t nmarks = nall;
		for (size_t k = 0; !all && k < nst; k++)
			if (st[k].pid == s->pid) {
				marks = st[k].marks;
				nmarks = st[k].n;
				break;
			}
		bool iters = marks && nmarks >= 2;
		for (size_t k = 0; iters && k < nmarks; k++) /* named boundaries must exist, in order */
			iters = marks[k] >= 1 && marks[k] <= m->nb && (!k || marks[k] > marks[k - 1]);
		if (iters && steady(m, s, p ? p->interval : DEFAULT_INTERVAL, marks, nmarks, r)) {
			free(o);
			free(rank);
			return -ENOMEM;
		}
		if (!iters) {
			r->retained = r->live_end;
			r->retained_err = r->live_end_err;
		}
		rank[i] = i;
	}
	qsort_r(rank, m->nsites, sizeof(*rank), rank_cmp, o);
	struct isc_asite_stats *sorted = calloc(m->nsites ? m->nsites : 1, sizeof(*sorted));
	if (!sorted) {
		free(o);
		free(rank);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nsites; i++)
		sorted[i] = o[rank[i]];
	free(o);
	free(m->out);
	free(m->rank);
	m->out = sorted;
	m->rank = rank; /* rank[i]: the site of report entry i */
	m->nout = m->nsites;
	*out = sorted;
	*n = m->nsites;
	return 0;
}

int isc_asite_report(struct isc_asite_model *m, unsigned steady_from, const struct isc_asite_stats **out,
		     size_t *n)
{
	uint32_t *all = NULL;
	size_t nall = 0;
	if (steady_from >= 1 && steady_from < m->nb) {
		if (!(all = malloc((m->nb - steady_from + 1) * sizeof(*all))))
			return -ENOMEM;
		for (size_t b = steady_from; b <= m->nb; b++)
			all[nall++] = (uint32_t)b;
	}
	static const uint32_t none[1];
	int rc = report(m, NULL, 0, all ? all : none, nall, out, n);
	free(all);
	return rc;
}

int isc_asite_report_steady(struct isc_asite_model *m, const struct isc_asite_steady *st, size_t nst,
			    const struct isc_asite_stats **out, size_t *n)
{
	return report(m, st, nst, NULL, 0, out, n);
}

/* Live bytes of s at time ts, from its last-seconds buckets. */
static double live_at(const struct site *s, uint64_t ts)
{
	uint64_t q = ts / HIST_NS;
	if (!s->hist_on || q <= s->hist_first)
		return 0; /* it had not changed yet: nothing live */
	if (q - 1 >= s->hist_at)
		return s->live;
	uint64_t k = q - 1;
	if (s->hist_at - k >= HIST_N) /* older than the buckets: the oldest kept */
		k = s->hist_at - (HIST_N - 1);
	return s->hist[k % HIST_N];
}

static int death_cmp(const void *a, const void *b)
{
	const struct isc_asite_death *x = a, *y = b;
	if (x->growing != y->growing)
		return x->growing ? -1 : 1;
	if (x->live != y->live)
		return x->live > y->live ? -1 : 1;
	return x->index < y->index ? -1 : 1;
}

size_t isc_asite_death(struct isc_asite_model *m, uint32_t pid, uint64_t ts, uint64_t window_ns,
		       struct isc_asite_death *out, size_t cap)
{
	size_t n = 0;
	struct isc_asite_death *all = calloc(m->nsites ? m->nsites : 1, sizeof(*all));
	if (!all || !m->out)
		goto done;
	for (size_t i = 0; i < m->nsites; i++) {
		const struct site *s = &m->sites[m->rank[i]];
		if (s->pid != pid || s->space)
			continue; /* host memory only: the OOM killer's */
		double before = live_at(s, ts > window_ns ? ts - window_ns : 0);
		struct isc_asite_death *d = &all[n++];
		d->index = i;
		d->live = s->table ? s->t_live : s->live;
		d->live_err = s->table ? s->t_err : sqrt(s->live_var > 0 ? s->live_var : 0);
		d->growth = s->live - before;
		d->growing = d->growth > 0;
	}
	qsort(all, n, sizeof(*all), death_cmp);
	if (n > cap)
		n = cap;
	memcpy(out, all, n * sizeof(*out));
done:
	free(all);
	return n;
}
