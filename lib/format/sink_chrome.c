/*
 * sink_chrome.c - iscope-merge --format=chrome: Chrome Trace Event JSON
 * for Perfetto UI and chrome://tracing, of any timeline (recorded or
 * imported from Kineto).
 *
 *   {"traceEvents":[
 *     M  process_name / thread_name   processes, threads, GPU devices and streams
 *     X  spans (cat op, python, scope), GPU operations, API calls
 *     s/f flow "ac2g" from an API call to its GPU ops: id = correlation for
 *         Kineto imports; pid << 32 | correlation otherwise (ids are per process)
 *     i  marks, process exits, dropped records
 *     C  counters from the sampler: RSS, CPU
 *   ],"displayTimeUnit":"ns","otherData":{header and META records}}
 *
 * Times are µs with three decimals, so ns survive.  A span is written as
 * one X event when it ends (open spans are kept per thread: memory is the
 * open spans, not the trace).  GPU operations go to a pseudo-process per
 * device, pid GPU_PID + device, one thread per stream.  The file is not
 * sorted by time; both viewers sort on load.
 *
 * A job (a timeline of several sources, SOURCE_INFO: iscope-merge of many
 * ranks' traces) puts each rank in its own group: the pid of every
 * process and GPU device of a source is a number of its own, given in
 * order of appearance (two ranks' pid 1234 or "GPU 0" never meet), named
 * "rank R: ..." (the source's META rank, else "source K") with the
 * original pid in the name, and sorted by rank so that a rank's processes
 * and devices sit together; flow ids are the output pid << 32 |
 * correlation, and an API call's correlation only meets its own source's
 * GPU operations.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "isc_merge.h"

#define GPU_PID 1000000000u /* above any Linux pid (at most 2^22) */
#define NB 4096             /* hash buckets */
#define CORR_SLOTS (1u << 16) /* recent API calls remembered for flow arrows */

struct name {
	char *name, *file;
	uint32_t line;
	uint8_t kind;
};

struct open {
	uint64_t id, ts;
	uint32_t name_id, depth;
	uint8_t kind;
};

enum { NS_THREAD, NS_PROC, NS_DEVICE, NS_STREAM, NS_PMAP };

struct ctx { /* one (pid, tid): its open spans; a process; a device; a device stream */
	uint64_t key;
	uint8_t ns;
	struct open *v;
	size_t n, cap;
	bool named;
	char *tname;    /* thread name, written at the end: THREAD_BEGIN's beats the sampler's comm */
	bool tname_begin;
	uint64_t cpu_ns, cpu_ts; /* PROC_SAMPLE: last CPU time, for the CPU counter */
	bool have_cpu;
	uint32_t out;   /* NS_PMAP: the output pid of (source, pid) in a job */
	struct ctx *next;
};

struct api { /* an API call, or a GPU op that came before its API call (same start) */
	uint64_t corr, ts;
	uint32_t pid, tid, source;
	bool used, started;
};

struct chrome_sink {
	struct isc_sink base;
	FILE *out;
	bool any;
	struct isc_tl_header hdr;
	struct name *names;
	size_t nnames;
	struct ctx *ctx[NB];
	struct api *apis, *early;
	char **dev_names;
	size_t ndev_names;
	char **metas; /* key, value pairs */
	size_t nmetas;
	uint64_t last_ts;
	bool kineto; /* META source=kineto: one process, flow id = correlation */
	bool job;    /* SOURCE_INFO seen: pids per source (job_pid) */
	uint32_t npids; /* output pids given in a job */
	int64_t *src_rank; /* a job's sources' ranks (META rank), -1 unknown */
	size_t nsrc;
};

#define JOB_PID_BASE 1000u /* a job's output pids, from here */

static struct ctx *ctx_get(struct chrome_sink *s, uint8_t ns, uint64_t key)
{
	size_t h = (size_t)(((key ^ ns) * 0x9E3779B97F4A7C15ULL) >> 52) % NB;
	for (struct ctx *c = s->ctx[h]; c; c = c->next)
		if (c->key == key && c->ns == ns)
			return c;
	struct ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->key = key;
	c->ns = ns;
	c->next = s->ctx[h];
	s->ctx[h] = c;
	return c;
}

/* The inside of a JSON string: escapes, control characters, invalid UTF-8 as U+FFFD. */
static void put_esc(FILE *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		if (c == '"' || c == '\\') {
			fputc('\\', o);
			fputc(c, o);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(o, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			fputc(c, o);
			i++;
		} else {
			size_t len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
			bool ok = len && i + len <= n;
			for (size_t j = 1; ok && j < len; j++)
				ok = (p[i + j] & 0xC0) == 0x80;
			if (ok && len == 3) /* overlongs and surrogates */
				ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
			if (ok && len == 4)
				ok = !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
			if (ok) {
				fwrite(p + i, 1, len, o);
				i += len;
			} else {
				fputs("\\ufffd", o);
				i++;
			}
		}
	}
}

/* A JSON string. */
static void put_str(FILE *o, const uint8_t *p, size_t n)
{
	fputc('"', o);
	put_esc(o, p, n);
	fputc('"', o);
}

/* A C string inside a JSON string being written. */
static void put_frag(FILE *o, const char *s)
{
	put_esc(o, (const uint8_t *)s, strlen(s));
}

static void put_cstr(FILE *o, const char *s)
{
	put_str(o, (const uint8_t *)s, strlen(s));
}

static void put_us(FILE *o, uint64_t ns)
{
	fprintf(o, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Starts one event object: the separator and the common fields. */
static void ev_start(struct chrome_sink *s, char ph, uint32_t pid, uint32_t tid)
{
	fputs(s->any ? ",\n{" : "\n{", s->out);
	s->any = true;
	fprintf(s->out, "\"ph\":\"%c\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, ph, pid, tid);
}

static const struct name *name_of(const struct chrome_sink *s, uint32_t id)
{
	static const struct name none = { (char *)"?", (char *)"", 0, 0 };
	return id < s->nnames && s->names[id].name ? &s->names[id] : &none;
}

static void meta_name(struct chrome_sink *s, const char *what, uint32_t pid, uint32_t tid, const uint8_t *b, size_t n)
{
	ev_start(s, 'M', pid, tid);
	fprintf(s->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	put_str(s->out, b, n);
	fputs("}}", s->out);
}

static void sort_index(struct chrome_sink *s, uint32_t pid, int64_t idx)
{
	ev_start(s, 'M', pid, 0);
	fprintf(s->out, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%" PRId64 "}}", idx);
}

static int64_t rank_of(const struct chrome_sink *s, uint32_t source)
{
	return source < s->nsrc ? s->src_rank[source] : -1;
}

/*
 * The output pid of pid (a process, or GPU_PID + device) of source in a
 * job, named and sorted by rank the first time; pid itself outside a job.
 * 0 when out of memory.
 */
static uint32_t job_pid(struct chrome_sink *s, uint32_t source, uint32_t pid)
{
	if (!s->job)
		return pid;
	struct ctx *c = ctx_get(s, NS_PMAP, (uint64_t)source << 32 | pid);
	if (!c)
		return 0;
	if (c->out)
		return c->out;
	c->out = JOB_PID_BASE + s->npids++;
	char buf[320];
	int64_t r = rank_of(s, source);
	int n = r >= 0 ? snprintf(buf, sizeof(buf), "rank %" PRId64 ": ", r) : snprintf(buf, sizeof(buf), "source %" PRIu32 ": ", source);
	if (pid >= GPU_PID) {
		uint32_t dev = pid - GPU_PID;
		const char *dn = dev < s->ndev_names && s->dev_names[dev] ? s->dev_names[dev] : "";
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, dn[0] ? "GPU %" PRIu32 " (%s)" : "GPU %" PRIu32, dev, dn);
	} else {
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "process %" PRIu32, pid);
	}
	meta_name(s, "process_name", c->out, 0, (const uint8_t *)buf, (size_t)n);
	/* a rank's processes, then its devices, together; ranks in order */
	sort_index(s, c->out, (r >= 0 ? r : 1000000 + (int64_t)source) * 1000000 + (pid >= GPU_PID ? 500000 : 0) + (c->out - JOB_PID_BASE));
	return c->out;
}

static int keep_source(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	s->job = true;
	if (ev->nf < 1 || ev->f[0] >= ISC_TL_MAX_SOURCES || ev->f[0] < s->nsrc)
		return 0;
	size_t n = (size_t)ev->f[0] + 1;
	int64_t *v = realloc(s->src_rank, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = s->nsrc; i < n; i++)
		v[i] = -1;
	s->src_rank = v;
	s->nsrc = n;
	return 0;
}

static int c_begin(void *cx, const struct isc_tl_header *h)
{
	struct chrome_sink *s = cx;
	s->hdr = *h;
	fputs("{\"traceEvents\":[", s->out);
	return ferror(s->out) ? -EIO : 0;
}

static int c_string(void *cx, const struct isc_tl_string *str)
{
	struct chrome_sink *s = cx;
	if (str->id >= s->nnames) {
		size_t n = s->nnames ? s->nnames : 1024;
		while (n <= str->id)
			n *= 2;
		struct name *v = realloc(s->names, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + s->nnames, 0, (n - s->nnames) * sizeof(*v));
		s->names = v;
		s->nnames = n;
	}
	struct name *nm = &s->names[str->id];
	free(nm->name);
	free(nm->file);
	nm->name = strdup(str->name);
	nm->file = strdup(str->file);
	nm->line = str->line;
	nm->kind = str->kind;
	return nm->name && nm->file ? 0 : -ENOMEM;
}

static void write_span(struct chrome_sink *s, uint32_t pid, uint32_t tid, const struct open *o, uint64_t end,
		       bool by_merge)
{
	static const char *cats[] = { "span", "python", "op", "scope" };
	const struct name *nm = name_of(s, o->name_id);
	ev_start(s, 'X', pid, tid);
	fprintf(s->out, ",\"cat\":\"%s\",\"name\":", cats[o->kind < 4 ? o->kind : 0]);
	put_cstr(s->out, nm->name);
	fputs(",\"ts\":", s->out);
	put_us(s->out, o->ts);
	fputs(",\"dur\":", s->out);
	put_us(s->out, end >= o->ts ? end - o->ts : 0);
	fprintf(s->out, ",\"args\":{\"depth\":%" PRIu32, o->depth);
	if (nm->file[0]) {
		fputs(",\"file\":", s->out);
		put_cstr(s->out, nm->file);
		fprintf(s->out, ",\"line\":%" PRIu32, nm->line);
	}
	if (by_merge)
		fputs(",\"closed_by_merge\":true", s->out);
	fputs("}}", s->out);
}

static void gpu_names(struct chrome_sink *s, uint32_t dev, uint32_t stream, uint32_t pid)
{
	if (s->job) { /* named by job_pid; its streams by its output pid */
		struct ctx *st = ctx_get(s, NS_STREAM, (uint64_t)pid << 32 | stream);
		if (st && !st->named) {
			char buf[64];
			int n = stream == ISC_GPU_NONE ? snprintf(buf, sizeof(buf), "no stream (context and device syncs)")
						       : snprintf(buf, sizeof(buf), "stream %" PRIu32, stream);
			meta_name(s, "thread_name", pid, stream, (const uint8_t *)buf, (size_t)n);
			st->named = true;
		}
		return;
	}
	struct ctx *d = ctx_get(s, NS_DEVICE, dev);
	struct ctx *st = ctx_get(s, NS_STREAM, (uint64_t)dev << 32 | stream);
	char buf[320];
	if (d && !d->named) {
		const char *dn = dev < s->ndev_names && s->dev_names[dev] ? s->dev_names[dev] : "";
		int n = snprintf(buf, sizeof(buf), dn[0] ? "GPU %" PRIu32 " (%s)" : "GPU %" PRIu32, dev, dn);
		meta_name(s, "process_name", GPU_PID + dev, 0, (const uint8_t *)buf, (size_t)n);
		sort_index(s, GPU_PID + dev, (int64_t)GPU_PID + dev);
		d->named = true;
	}
	if (st && !st->named) {
		int n = stream == ISC_GPU_NONE ? snprintf(buf, sizeof(buf), "no stream (context and device syncs)")
					       : snprintf(buf, sizeof(buf), "stream %" PRIu32, stream);
		meta_name(s, "thread_name", GPU_PID + dev, stream, (const uint8_t *)buf, (size_t)n);
		st->named = true;
	}
}

static void flow(struct chrome_sink *s, struct api *a, uint32_t pid, uint32_t tid, uint64_t ts);

/* The slot of a correlation id of a source (a job's ranks count theirs alike). */
static size_t corr_slot(uint32_t source, uint64_t corr)
{
	return (size_t)((corr + (uint64_t)source * 0x9E3779B1u) % CORR_SLOTS);
}

static void write_gpu_op(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	static const char *cats[] = { "gpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_other" };
	static const char *copies[] = { "", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	static const char *mems[] = { "unknown", "pageable", "pinned", "device", "managed" };
	const struct isc_gpu_fields *g = &ev->gpu;
	uint32_t pid = job_pid(s, ev->source, GPU_PID + g->device);
	FILE *o = s->out;
	gpu_names(s, g->device, g->stream, pid);
	ev_start(s, 'X', pid, g->stream);
	fprintf(o, ",\"cat\":\"%s\",\"name\":",
		g->flags & ISC_GPU_FLAG_ANNOTATION ? "gpu_user_annotation" : cats[g->kind < 6 ? g->kind : 0]);
	put_cstr(o, name_of(s, ev->name_id)->name);
	fputs(",\"ts\":", o);
	put_us(o, ev->ts);
	fputs(",\"dur\":", o);
	put_us(o, g->dur_ns);
	fprintf(o, ",\"args\":{\"device\":%" PRIu32 ",\"stream\":%" PRIu32, g->device, g->stream);
	if (g->correlation)
		fprintf(o, ",\"correlation\":%" PRIu64, g->correlation);
	if (g->bytes)
		fprintf(o, ",\"bytes\":%" PRIu64, g->bytes);
	if (g->copy_kind && g->copy_kind < 6)
		fprintf(o, ",\"copy\":\"%s\"", copies[g->copy_kind]);
	if (g->kind == ISC_GPU_MEMCPY || g->kind == ISC_GPU_MEMSET)
		fprintf(o, ",\"src_mem\":\"%s\",\"dst_mem\":\"%s\"", mems[g->src_mem < 5 ? g->src_mem : 0],
			mems[g->dst_mem < 5 ? g->dst_mem : 0]);
	if (g->has_launch)
		fprintf(o, ",\"grid\":[%" PRIu32 ",%" PRIu32 ",%" PRIu32 "],\"block\":[%" PRIu32 ",%" PRIu32 ",%" PRIu32
			   "],\"registers per thread\":%" PRIu32 ",\"shared memory\":%" PRIu32,
			g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2], g->registers,
			g->shared_mem);
	if (g->flags & ISC_GPU_FLAG_GRAPH)
		fputs(",\"graph\":true", o);
	fputs("}}", o);
	/* the arrow from the launching call, once per correlation, then to every op it launched */
	struct api *a = g->correlation ? &s->apis[corr_slot(ev->source, g->correlation)] : NULL;
	if (a && a->used && a->corr == g->correlation && !s->kineto && ev->pid && a->pid != job_pid(s, ev->source, ev->pid))
		return; /* correlation ids are per process: another process's call */
	if (a && (!a->used || a->corr != g->correlation || a->source != ev->source)) { /* its call starts at the same time, later in the order */
		s->early[corr_slot(ev->source, g->correlation)] = (struct api){ g->correlation, ev->ts, pid, g->stream, ev->source, true, false };
		return;
	}
	if (a)
		flow(s, a, pid, g->stream, ev->ts);
}

/* An arrow from API call a to the GPU op at (pid, tid, ts). */
static void flow(struct chrome_sink *s, struct api *a, uint32_t pid, uint32_t tid, uint64_t ts)
{
	FILE *o = s->out;
	uint64_t id = s->kineto && !s->job ? a->corr : (uint64_t)a->pid << 32 | (a->corr & 0xffffffffu);
	if (!a->started) {
		ev_start(s, 's', a->pid, a->tid);
		fprintf(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%" PRIu64 ",\"ts\":", id);
		put_us(o, a->ts);
		fputc('}', o);
		a->started = true;
	}
	ev_start(s, 'f', pid, tid);
	fprintf(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%" PRIu64 ",\"bp\":\"e\",\"ts\":", id);
	put_us(o, ts);
	fputc('}', o);
}

static void write_api(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	const struct isc_gpu_fields *g = &ev->gpu;
	FILE *o = s->out;
	ev_start(s, 'X', ev->pid, ev->tid);
	fprintf(o, ",\"cat\":\"%s\",\"name\":", g->kind == 2 ? "cuda_driver" : g->kind == 1 ? "cuda_runtime" : "gpu_api");
	put_cstr(o, name_of(s, ev->name_id)->name);
	fputs(",\"ts\":", o);
	put_us(o, ev->ts);
	fputs(",\"dur\":", o);
	put_us(o, g->dur_ns);
	fputs(",\"args\":{", o);
	if (g->correlation)
		fprintf(o, "\"correlation\":%" PRIu64 ",", g->correlation);
	fprintf(o, "\"cbid\":%" PRIu32 "}}", g->cbid);
	if (!g->correlation)
		return;
	struct api *a = &s->apis[corr_slot(ev->source, g->correlation)], *e = &s->early[corr_slot(ev->source, g->correlation)];
	*a = (struct api){ g->correlation, ev->ts, ev->pid, ev->tid, ev->source, true, false };
	if (e->used && e->corr == g->correlation && e->source == ev->source) { /* an op that started with its call */
		flow(s, a, e->pid, e->tid, e->ts);
		e->used = false;
	}
}

static void counter(struct chrome_sink *s, uint32_t pid, uint64_t ts, const char *name, const char *key, double v)
{
	ev_start(s, 'C', pid, 0);
	fprintf(s->out, ",\"name\":\"%s\",\"ts\":", name);
	put_us(s->out, ts);
	fprintf(s->out, ",\"args\":{\"%s\":%.6g}}", key, v);
}

static void instant(struct chrome_sink *s, const struct isc_tl_event *ev, char scope, const char *name, size_t nlen,
		    const char *key, int64_t v)
{
	ev_start(s, 'i', ev->pid, ev->tid);
	fprintf(s->out, ",\"s\":\"%c\",\"name\":", scope);
	put_str(s->out, (const uint8_t *)name, nlen);
	fputs(",\"ts\":", s->out);
	put_us(s->out, ev->ts);
	fprintf(s->out, ",\"args\":{\"%s\":%" PRId64 "}}", key, v);
}

/*
 * A Python stack sample (PY_SAMPLE) as an instant event on its thread:
 * named by the innermost function, with the stack root first ("outer
 * (a.py:3) > leaf (b.py:9)"), the thread's state, whether it was on a CPU
 * (state R, not preempted) and (1.1) the C callee the innermost frame
 * runs, when it has one ("callee": "torch._C._nn.linear").  Viewers show
 * them as ticks on the thread's track; their args are the stack.
 */
#define SAMPLE_FRAMES_MAX 256
static void py_sample(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	uint64_t ids[SAMPLE_FRAMES_MAX], lines[SAMPLE_FRAMES_MAX], callee = 0, kind = 0;
	size_t n = 0;
	const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
	if (ev->nf != 5)
		return;
	/* the frames (depth of them), then the callee (flags bit 4) */
	while (n < ev->f[4] && n < SAMPLE_FRAMES_MAX && !isc_get_varint(&p, e, &ids[n]) && !isc_get_varint(&p, e, &lines[n]))
		n++;
	if (n == ev->f[4] && (ev->f[3] & ISC_PY_SAMPLE_CALLEE) && (isc_get_varint(&p, e, &callee) || isc_get_varint(&p, e, &kind)))
		callee = 0;
	char state = ev->f[2] > 32 && ev->f[2] < 127 ? (char)ev->f[2] : '?';
	const char *leaf = n ? name_of(s, (uint32_t)ids[0])->name : "(no Python frame)";
	ev_start(s, 'i', ev->pid, ev->tid);
	fputs(",\"s\":\"t\",\"cat\":\"python_sample\",\"name\":", s->out);
	put_cstr(s->out, leaf);
	fputs(",\"ts\":", s->out);
	put_us(s->out, ev->ts);
	fprintf(s->out, ",\"args\":{\"state\":\"%c\",\"on_cpu\":%s,\"stack\":\"", state,
		state == 'R' && !(ev->f[3] & 8) ? "true" : "false");
	for (size_t i = n; i-- > 0;) { /* root first */
		const struct name *nm = name_of(s, (uint32_t)ids[i]);
		char loc[64];
		snprintf(loc, sizeof(loc), ":%" PRIu64 ")%s", lines[i], i ? " > " : "");
		put_frag(s->out, nm->name); /* the stack is one JSON string */
		fputs(" (", s->out);
		put_frag(s->out, *nm->file ? nm->file : "?");
		fputs(loc, s->out);
	}
	fputs("\"", s->out);
	if (callee) {
		fputs(",\"callee\":", s->out);
		put_cstr(s->out, name_of(s, (uint32_t)callee)->name);
	}
	fputs("}}", s->out);
}

static int keep_meta(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	if (ev->nf < 1 || ev->f[0] > ev->nbytes)
		return 0;
	char **m = realloc(s->metas, (s->nmetas + 2) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	s->metas = m;
	size_t kl = (size_t)ev->f[0];
	m[s->nmetas] = strndup((const char *)ev->bytes, kl);
	m[s->nmetas + 1] = strndup((const char *)ev->bytes + kl, ev->nbytes - kl);
	s->nmetas += 2;
	if (m[s->nmetas - 2] && m[s->nmetas - 1] && !strcmp(m[s->nmetas - 2], "source") &&
	    !strcmp(m[s->nmetas - 1], "kineto"))
		s->kineto = true;
	if (m[s->nmetas - 2] && m[s->nmetas - 1] && !strcmp(m[s->nmetas - 2], "rank") && ev->source < s->nsrc) {
		char *end;
		long long r = strtoll(m[s->nmetas - 1], &end, 10);
		if (!*end && end != m[s->nmetas - 1] && r >= 0 && r < INT32_MAX)
			s->src_rank[ev->source] = r;
	}
	return m[s->nmetas - 2] && m[s->nmetas - 1] ? 0 : -ENOMEM;
}

static int keep_device(struct chrome_sink *s, const struct isc_tl_event *ev)
{
	if (ev->nf < 6 || ev->f[0] >= 65536)
		return 0;
	size_t id = (size_t)ev->f[0];
	if (id >= s->ndev_names) {
		char **v = realloc(s->dev_names, (id + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + s->ndev_names, 0, (id + 1 - s->ndev_names) * sizeof(*v));
		s->dev_names = v;
		s->ndev_names = id + 1;
	}
	free(s->dev_names[id]);
	return (s->dev_names[id] = strndup((const char *)ev->bytes, ev->nbytes)) ? 0 : -ENOMEM;
}

static int c_event(void *cx, const struct isc_tl_event *evin)
{
	struct chrome_sink *s = cx;
	struct ctx *c;
	struct isc_tl_event local;
	const struct isc_tl_event *ev = evin;
	if (evin->type == ISC_REC_SOURCE_INFO)
		return keep_source(s, evin);
	if (s->job && evin->pid && evin->type != ISC_REC_GPU_OP) { /* a process of a rank: its own pid */
		local = *evin;
		if (!(local.pid = job_pid(s, evin->source, evin->pid)))
			return -ENOMEM;
		ev = &local;
	}
	if (ev->ts > s->last_ts && ev->type < 0x80)
		s->last_ts = ev->ts;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		if (!(c = ctx_get(s, NS_THREAD, (uint64_t)ev->pid << 32 | ev->tid)))
			return -ENOMEM;
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 16;
			struct open *v = realloc(c->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			c->v = v;
			c->cap = cap;
		}
		c->v[c->n++] = (struct open){ ev->span_id, ev->ts, ev->name_id, ev->depth, ev->kind };
		break;
	case ISC_REC_TL_SPAN_END:
		if (!(c = ctx_get(s, NS_THREAD, (uint64_t)ev->pid << 32 | ev->tid)))
			return -ENOMEM;
		for (size_t i = c->n; i-- > 0;) /* the innermost of its stack: near the top */
			if (c->v[i].id == ev->span_id) {
				write_span(s, ev->pid, ev->tid, &c->v[i], ev->ts, ev->flags & 1);
				memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof(*c->v));
				c->n--;
				break;
			}
		break;
	case ISC_REC_MARK: {
		const char *n = name_of(s, ev->name_id)->name;
		instant(s, ev, 't', n, strlen(n), "value", ev->value);
		break;
	}
	case ISC_REC_THREAD_BEGIN:
	case ISC_REC_THREAD_NAME:
		if (!(c = ctx_get(s, NS_THREAD, (uint64_t)ev->pid << 32 | ev->tid)))
			return -ENOMEM;
		if (ev->nbytes && (ev->type == ISC_REC_THREAD_BEGIN || !c->tname_begin)) {
			free(c->tname);
			if (!(c->tname = strndup((const char *)ev->bytes, ev->nbytes)))
				return -ENOMEM;
			c->tname_begin = ev->type == ISC_REC_THREAD_BEGIN;
		}
		break;
	case ISC_REC_PROC_INFO: {
		char buf[1024];
		size_t n = ev->nbytes < sizeof(buf) ? ev->nbytes : sizeof(buf);
		while (n && !ev->bytes[n - 1])
			n--;
		for (size_t i = 0; i < n; i++)
			buf[i] = ev->bytes[i] ? (char)ev->bytes[i] : ' ';
		if (s->job) { /* "rank R: its command line (pid P)", sorted by job_pid */
			char named[1200];
			int64_t r = rank_of(s, ev->source);
			int k = r >= 0 ? snprintf(named, sizeof(named), "rank %" PRId64 ": %.*s (pid %" PRIu32 ")", r, (int)n, buf, evin->pid)
				       : snprintf(named, sizeof(named), "source %" PRIu32 ": %.*s (pid %" PRIu32 ")", ev->source, (int)n,
						  buf, evin->pid);
			meta_name(s, "process_name", ev->pid, 0, (const uint8_t *)named, k > 0 && (size_t)k < sizeof(named) ? (size_t)k : 0);
			break;
		}
		meta_name(s, "process_name", ev->pid, 0, (const uint8_t *)buf, n);
		sort_index(s, ev->pid, ev->pid);
		break;
	}
	case ISC_REC_PROC_EXIT:
		instant(s, ev, 'p', "exit", 4, "status", ev->value);
		break;
	case ISC_REC_DROPPED:
		instant(s, ev, 't', "dropped", 7, "records", (int64_t)ev->f[0]);
		break;
	case ISC_REC_PROC_SAMPLE:
		if (ev->nf < 4 || !(c = ctx_get(s, NS_PROC, ev->pid)))
			break;
		counter(s, ev->pid, ev->ts, "RSS", "rss_bytes", (double)ev->f[3]);
		if (c->have_cpu && ev->ts > c->cpu_ts && ev->f[1] + ev->f[2] >= c->cpu_ns)
			counter(s, ev->pid, ev->ts, "CPU", "cpu_pct",
				100.0 * (double)(ev->f[1] + ev->f[2] - c->cpu_ns) / (double)(ev->ts - c->cpu_ts));
		c->cpu_ns = ev->f[1] + ev->f[2];
		c->cpu_ts = ev->ts;
		c->have_cpu = true;
		break;
	case ISC_REC_PY_SAMPLE:
		py_sample(s, ev);
		break;
	case ISC_REC_GPU_OP:
		write_gpu_op(s, ev);
		break;
	case ISC_REC_GPU_API:
		write_api(s, ev);
		break;
	case ISC_REC_DEVICE:
		return keep_device(s, ev);
	case ISC_REC_META:
		return keep_meta(s, ev);
	default:
		break;
	}
	return ferror(s->out) ? -EIO : 0;
}

static int c_end(void *cx, const struct isc_tl_stats *st)
{
	struct chrome_sink *s = cx;
	FILE *o = s->out;
	for (size_t h = 0; h < NB; h++) /* spans a damaged input left open end at the last event */
		for (struct ctx *c = s->ctx[h]; c; c = c->next) {
			for (size_t i = c->n; i-- > 0;)
				write_span(s, (uint32_t)(c->key >> 32), (uint32_t)c->key, &c->v[i], s->last_ts, true);
			if (c->tname)
				meta_name(s, "thread_name", (uint32_t)(c->key >> 32), (uint32_t)c->key,
					  (const uint8_t *)c->tname, strlen(c->tname));
		}
	fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"inferscope\",\"host\":", o);
	put_cstr(o, s->hdr.host);
	fputs(",\"cmdline\":", o);
	put_cstr(o, s->hdr.cmdline);
	fprintf(o, ",\"epoch_realtime_ns\":\"%" PRIu64 "\",\"events\":\"%" PRIu64 "\"", s->hdr.epoch_realtime_ns,
		st->events);
	for (size_t i = 0; i + 1 < s->nmetas; i += 2) {
		fputs(",", o);
		put_cstr(o, s->metas[i]);
		fputc(':', o);
		put_cstr(o, s->metas[i + 1]);
	}
	fputs("}}\n", o);
	if (fflush(o) || ferror(o)) {
		isc_err_push("Failed to write: %s", strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

static void c_destroy(void *cx)
{
	struct chrome_sink *s = cx;
	for (size_t i = 0; i < s->nnames; i++) {
		free(s->names[i].name);
		free(s->names[i].file);
	}
	free(s->names);
	for (size_t h = 0; h < NB; h++)
		for (struct ctx *c = s->ctx[h], *n; c; c = n) {
			n = c->next;
			free(c->v);
			free(c->tname);
			free(c);
		}
	for (size_t i = 0; i < s->ndev_names; i++)
		free(s->dev_names[i]);
	free(s->dev_names);
	for (size_t i = 0; i < s->nmetas; i++)
		free(s->metas[i]);
	free(s->metas);
	free(s->apis);
	free(s->early);
	free(s->src_rank);
	free(s);
}

int isc_sink_chrome_new(struct isc_sink **out, FILE *f)
{
	struct chrome_sink *s = calloc(1, sizeof(*s));
	if (!s || !(s->apis = calloc(CORR_SLOTS, sizeof(*s->apis))) || !(s->early = calloc(CORR_SLOTS, sizeof(*s->early)))) {
		if (s)
			free(s->apis);
		free(s);
		return -ENOMEM;
	}
	s->out = f;
	s->base = (struct isc_sink){ s, c_begin, c_string, c_event, c_end, c_destroy };
	*out = &s->base;
	return 0;
}
