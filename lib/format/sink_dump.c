/*
 * sink_dump.c - iscope-merge --dump: one line per event, deterministic.
 * Processes and threads are numbered in order of appearance (P1, T1) so
 * two recordings of the same program give the same text; times and sampler
 * values (which vary run to run) appear only with --dump-times.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "isc_merge.h"
#include "isc_trace_int.h" /* EXCEPTION strings */
#include "isc_native_codec.h" /* native sampler records */

struct idmap {
	uint32_t key[256];
	uint32_t pid_of[256];
	unsigned n;
};

/* A string as the dump shows it: "name file:line" (TEXT: "name"), the name's length. */
struct dump_name {
	char *line;
	size_t nlen;
};

struct dump_sink {
	struct isc_sink base;
	FILE *out;
	bool times;
	struct dump_name *names; /* by gid, owned */
	size_t nnames;
	struct idmap pids, tids;
};

/* 1-based ordinal of key (per pid for threads); 0 when the table is full. */
static unsigned ordinal(struct idmap *m, uint32_t key, uint32_t pid)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->key[i] == key && m->pid_of[i] == pid)
			return i + 1;
	if (m->n == 256)
		return 0;
	m->key[m->n] = key;
	m->pid_of[m->n] = pid;
	return ++m->n;
}

/* A process's ordinal: by (source, pid), the source a merge of several inputs gave it (0 for the first). */
static unsigned proc_ordinal(struct dump_sink *s, uint32_t source, uint32_t pid)
{
	return ordinal(&s->pids, pid, source);
}

static unsigned thread_ordinal(struct dump_sink *s, uint32_t source, uint32_t pid, uint32_t tid)
{
	/* number threads within their process */
	uint32_t proc = proc_ordinal(s, source, pid);
	unsigned n = 0, k = ordinal(&s->tids, tid, proc);
	for (unsigned i = 0; i < k && i < s->tids.n; i++)
		if (s->tids.pid_of[i] == proc)
			n++;
	return n;
}

static int d_begin(void *ctx, const struct isc_tl_header *h)
{
	struct dump_sink *s = ctx;
	fprintf(s->out, "# inferscope timeline dump v1\n");
	if (s->times)
		fprintf(s->out, "# host=%s cmdline=%s\n", h->host, h->cmdline);
	return 0;
}

static int d_string(void *ctx, const struct isc_tl_string *str)
{
	struct dump_sink *s = ctx;
	if (str->id >= s->nnames) {
		size_t n = s->nnames ? s->nnames : 1024;
		while (n <= str->id)
			n *= 2;
		struct dump_name *nn = realloc(s->names, n * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		s->names = nn;
		memset(s->names + s->nnames, 0, (n - s->nnames) * sizeof(*nn));
		s->nnames = n;
	}
	char *line = NULL; /* text (an exception's type or message) alone */
	if ((str->kind == ISC_STR_TEXT ? asprintf(&line, "%s", str->name)
				       : asprintf(&line, "%s %s:%u", str->name, str->file, str->line)) < 0)
		return -ENOMEM;
	free(s->names[str->id].line);
	s->names[str->id] = (struct dump_name){ line, strlen(str->name) };
	return 0;
}

static const char *name_of(struct dump_sink *s, uint32_t id)
{
	return id < s->nnames && s->names[id].line ? s->names[id].line : "?";
}

static const char *kind_name(uint8_t k)
{
	return k == ISC_SPAN_PYTHON ? "python" : k == ISC_SPAN_OP ? "op" : k == ISC_SPAN_SCOPE ? "scope" : "?";
}

/* Workload bytes on one line: NUL separators as spaces, controls as \xNN. */
static void put_text(FILE *o, const uint8_t *b, size_t n)
{
	while (n && !b[n - 1])
		n--;
	for (size_t i = 0; i < n; i++) {
		if (!b[i])
			fputc(' ', o);
		else if (b[i] < 0x20 || b[i] == 0x7f || b[i] == '\\')
			fprintf(o, "\\x%02x", b[i]);
		else
			fputc(b[i], o);
	}
}

static const char *record_name(uint8_t type)
{
	switch (type) {
	case ISC_REC_PROC_SAMPLE: return "proc_sample";
	case ISC_REC_THREAD_SAMPLE: return "thread_sample";
	case ISC_REC_PRESSURE: return "pressure";
	case ISC_REC_MEMINFO: return "meminfo";
	case ISC_REC_NUMA_MAPS: return "numa_maps";
	case ISC_REC_SMAPS: return "smaps";
	case ISC_REC_CLOCK_PAIR: return "clock_pair";
	case ISC_REC_THREAD_NAME: return "thread_name";
	case ISC_REC_GPU_SAMPLE: return "gpu_sample";
	case ISC_REC_GPU_INFO: return "gpu_info";
	case ISC_REC_GPU_MEMORY: return "gpu_memory";
	case ISC_REC_GPU_DROPPED: return "gpu_dropped";
	case ISC_REC_GPU_AGENT: return "gpu_agent";
	case ISC_REC_THREAD_WAIT: return "thread_wait";
	case ISC_REC_PY_SAMPLE: return "py_sample";
	case ISC_REC_PY_SAMPLER: return "py_sampler";
	case ISC_REC_NATIVE_SAMPLER: return "native_sampler";
	case ISC_REC_NATIVE_LOST: return "native_lost";
	case ISC_REC_NATIVE_STATS: return "native_stats";
	default: return NULL;
	}
}

/*
 * The native sampler's records with text or arrays (formats/timeline.md
 * §9): a sample's flags, chain length, register count and stack bytes (not
 * the values: addresses vary between runs); a mapping's range, file
 * offset, protection, source, build id in hex and path; a task event.
 */
static void put_native(struct dump_sink *s, const struct isc_tl_event *ev)
{
	static const char *const whats[] = { "?", "fork", "exit", "comm", "exec" };
	FILE *o = s->out;
	struct isc_native_sample smp;
	struct isc_native_map m;
	struct isc_native_task t;
	struct isc_native_ksym k;
	switch (ev->type) {
	case ISC_REC_NATIVE_SAMPLE:
		if (!isc_native_sample_parse(ev->raw, ev->nraw, &smp))
			fprintf(o, "native_sample flags=%" PRIu32 " kernel=%" PRIu32 " regs=%" PRIu32 " stack=%zu\n",
				smp.flags, smp.nkernel, smp.nregs, smp.stack_len);
		break;
	case ISC_REC_NATIVE_MAP:
		if (isc_native_map_parse(ev->raw, ev->nraw, &m))
			break;
		fprintf(o, "native_map %" PRIx64 "-%" PRIx64 " %" PRIx64 " %s %s ", m.start, m.start + m.len, m.pgoff,
			m.prot & ISC_NATIVE_PROT_EXEC ? "x" : "-", m.source == ISC_NATIVE_MAP_SNAPSHOT ? "maps" : "mmap");
		for (size_t i = 0; i < m.build_id_len; i++)
			fprintf(o, "%02x", m.build_id[i]);
		fputs(m.build_id_len ? " " : "- ", o);
		put_text(o, m.path, m.path_len);
		fputc('\n', o);
		break;
	case ISC_REC_NATIVE_TASK:
		if (isc_native_task_parse(ev->raw, ev->nraw, &t))
			break;
		fprintf(o, "native_task %s ", whats[t.what < 5 ? t.what : 0]);
		if (t.what == ISC_NATIVE_TASK_FORK)
			fprintf(o, "from P%u T%u ", proc_ordinal(s, ev->source, t.ppid), thread_ordinal(s, ev->source, t.ppid, t.ptid));
		put_text(o, t.comm, t.comm_len);
		fputc('\n', o);
		break;
	case ISC_REC_NATIVE_KSYM:
		if (isc_native_ksym_parse(ev->raw, ev->nraw, &k))
			break;
		fprintf(o, "native_ksym %" PRIx64 " ", k.start);
		put_text(o, k.name, k.name_len);
		fputc('\n', o);
		break;
	}
}

/* The allocation records (formats/timeline.md §9): fields by name, frames
 * innermost first as NAME FILE:FIRSTLINE:LINE. */
static void alloc_line(struct dump_sink *s, const struct isc_tl_event *ev)
{
	static const char *domains[] = { "?", "malloc", "mmap", "pyraw", "pymem", "pyobj" };
	FILE *o = s->out;
	const uint64_t *f = ev->f;
	if (ev->type == ISC_REC_TL_ALLOC_INFO) {
		fprintf(o, "alloc_info phase=%" PRIu64 " interval=%" PRIu64 " flags=%" PRIu64 " samples=%" PRIu64
			   " frees=%" PRIu64 " sites=%" PRIu64 " lost_sites=%" PRIu64 " lost_ptrs=%" PRIu64 " bad=%" PRIu64 "\n",
			f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]);
		return;
	}
	if (ev->type == ISC_REC_TL_FREE) {
		fprintf(o, "free %s size=%" PRIu64 " weight=%" PRIu64 " site=%" PRIu64 " addr=0x%" PRIx64 "\n",
			domains[f[4] < 6 ? f[4] : 0], f[2], f[3], f[5], f[1]);
		return;
	}
	if (ev->type == ISC_REC_TL_ALLOC)
		fprintf(o, "alloc %s size=%" PRIu64 " weight=%" PRIu64 " site=%" PRIu64 " flags=%" PRIu64 " addr=0x%" PRIx64,
			domains[f[4] < 6 ? f[4] : 0], f[2], f[3], f[6], f[5], f[1]);
	else
		fprintf(o, "alloc_site %" PRIu64 " live=%" PRIu64 " err=%" PRIu64 " n=%" PRIu64 " alloc=%" PRIu64 "/%" PRIu64
			   " free=%" PRIu64 "/%" PRIu64 " peak=%" PRIu64 " peak_age=%" PRIu64 " growth_age=%" PRIu64,
			f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10]);
	const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
	uint64_t depth = ev->type == ISC_REC_TL_ALLOC ? f[7] : f[11], id, line;
	for (uint64_t k = 0; k < depth && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &line); k++)
		fprintf(o, " %s:%" PRIu64, name_of(s, (uint32_t)id), line);
	fputc('\n', o);
}

static int d_event(void *ctx, const struct isc_tl_event *ev)
{
	struct dump_sink *s = ctx;
	FILE *o = s->out;
	bool sample = (ev->type >= ISC_REC_PROC_SAMPLE && ev->type <= ISC_REC_GPU_INFO &&
		       ev->type != ISC_REC_PROC_INFO && ev->type != ISC_REC_PROC_EXIT) ||
		      ev->type == ISC_REC_THREAD_WAIT || ev->type == ISC_REC_PY_SAMPLE || ev->type == ISC_REC_PY_SAMPLER ||
		      (ev->type >= ISC_REC_NATIVE_SAMPLER && ev->type <= ISC_REC_NATIVE_STATS) ||
		      (ev->type >= ISC_REC_TL_ALLOC && ev->type <= ISC_REC_TL_ALLOC_INFO); /* vary with the sampling */
	if (sample && !s->times)
		return 0;
	if (s->times)
		fprintf(o, "%" PRIu64 " ", ev->ts);
	if (ev->source) /* a merge of several inputs: the input, numbered from 0 */
		fprintf(o, "S%u ", ev->source);
	if (ev->pid)
		fprintf(o, "P%u ", proc_ordinal(s, ev->source, ev->pid));
	if (ev->tid)
		fprintf(o, "T%u ", thread_ordinal(s, ev->source, ev->pid, ev->tid));
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		fprintf(o, "B %s %s d%u\n", kind_name(ev->kind), name_of(s, ev->name_id), ev->depth);
		break;
	case ISC_REC_TL_SPAN_END:
		fprintf(o, "E %s %s%s\n", kind_name(ev->kind), name_of(s, ev->name_id),
			ev->flags & 1 ? " (closed by merge)" : "");
		break;
	case ISC_REC_MARK:
		fprintf(o, "M %s %" PRId64 "\n", name_of(s, ev->name_id), ev->value);
		break;
	case ISC_REC_THREAD_BEGIN:
		fprintf(o, "TB ");
		put_text(o, ev->bytes, ev->nbytes);
		fputc('\n', o);
		break;
	case ISC_REC_THREAD_END:
		fprintf(o, "TE\n");
		break;
	case ISC_REC_EXCEPTION: {
		struct isc_exception x;
		if (ev->nf < 1 || isc_exception_parse(ev->bytes, ev->nbytes, &x)) {
			fprintf(o, "X (unreadable)\n");
			break;
		}
		fprintf(o, "X ");
		put_text(o, x.type, x.ntype);
		fputc(' ', o);
		put_text(o, x.file, x.nfile);
		fprintf(o, ":%" PRIu64 " ", ev->f[0]);
		put_text(o, x.func, x.nfunc);
		fprintf(o, ": ");
		put_text(o, x.msg, x.nmsg);
		fputc('\n', o);
		break;
	}
	case ISC_REC_EXCEPTION_REF: { /* EXCEPTION's line, the strings whole and not escaped */
		const struct dump_name *w = ev->nf == 4 && ev->f[1] < s->nnames ? &s->names[ev->f[1]] : NULL;
		if (!w || !w->line) {
			fprintf(o, "X (unreadable)\n");
			break;
		}
		/* w->line is "function file:line": shown "file:line function" */
		fprintf(o, "X %s %s %.*s: %s\n", name_of(s, (uint32_t)ev->f[2]), w->line + w->nlen + 1, (int)w->nlen,
			w->line, name_of(s, (uint32_t)ev->f[3]));
		break;
	}
	case ISC_REC_DROPPED:
		fprintf(o, "DROPPED %" PRIu64 "\n", ev->f[0]);
		break;
	case ISC_REC_PROC_INFO:
		fprintf(o, "PROC ");
		put_text(o, ev->bytes, ev->nbytes);
		fputc('\n', o);
		break;
	case ISC_REC_PROC_EXIT:
		fprintf(o, "EXIT %" PRId64 "%s\n", ev->value,
			ev->f[2] == 1 ? " (signal)" : ev->f[2] == 2 ? " (gone, status not seen)" : "");
		break;
	case ISC_REC_GPU_OP: {
		static const char *kinds[] = { "?", "kernel", "memcpy", "memset", "sync", "other" };
		const struct isc_gpu_fields *g = &ev->gpu;
		fprintf(o, "GPU dev%u s%u %s %s corr=%" PRIu64 " dur=%" PRIu64, g->device, g->stream,
			kinds[g->kind < 6 ? g->kind : 0], name_of(s, ev->name_id), g->correlation, g->dur_ns);
		if (g->bytes)
			fprintf(o, " bytes=%" PRIu64 " copy=%u mem=%u>%u", g->bytes, g->copy_kind, g->src_mem, g->dst_mem);
		if (g->flags & ISC_GPU_FLAG_GRAPH)
			fputs(" graph", o);
		if (g->flags & ISC_GPU_FLAG_ANNOTATION)
			fputs(" annotation", o);
		if (g->flags & ISC_GPU_FLAG_NO_STREAM)
			fputs(" no-stream", o);
		if (g->has_link)
			fprintf(o, " launch=T%u", thread_ordinal(s, ev->source, ev->pid, g->api_tid));
		fputc('\n', o);
		break;
	}
	case ISC_REC_NVTX_RANGE:
		fprintf(o, "NVTX %s dur=%" PRIu64 "\n", name_of(s, (uint32_t)ev->f[0]), ev->f[1]);
		break;
	case ISC_REC_WARNING:
		fprintf(o, "WARNING %" PRIu64 " ", ev->f[1]);
		put_text(o, ev->bytes, ev->nbytes);
		fputc('\n', o);
		break;
	case ISC_REC_GPU_API: {
		static const char *apis[] = { "other", "runtime", "driver", "other" };
		fprintf(o, "API %s %s corr=%" PRIu64 " dur=%" PRIu64 "\n", apis[ev->gpu.kind < 4 ? ev->gpu.kind : 0],
			name_of(s, ev->name_id), ev->gpu.correlation, ev->gpu.dur_ns);
		break;
	}
	case ISC_REC_DEVICE:
		fprintf(o, "DEVICE %" PRIu64 " sms=%" PRIu64 " mem=%" PRIu64 " cc=%" PRIu64 ".%" PRIu64 " link=%" PRIu64 " ",
			ev->f[0], ev->f[1], ev->f[2], ev->f[3], ev->f[4], ev->f[5]);
		put_text(o, ev->bytes, ev->nbytes);
		fputc('\n', o);
		break;
	case ISC_REC_CALIBRATION: /* measured values vary between runs: with --dump-times only */
		fprintf(o, "CALIBRATION %s", ev->f[0] == 2 ? "sys.monitoring" : ev->f[0] == 1 ? "setprofile" : "other");
		if (s->times)
			fprintf(o, " per_event_ps=%" PRIu64 " calls=%" PRIu64 " plain_ns=%" PRIu64 " hooked_ns=%" PRIu64
				   " events=%" PRIu64, ev->f[1], ev->f[2], ev->f[3], ev->f[4], ev->f[5]);
		fputc('\n', o);
		break;
	case ISC_REC_SOURCE_INFO: {
		static const char *const methods[] = { "reference", "collectives", "wall-clock" };
		const uint8_t *host = memchr(ev->bytes, 0, ev->nbytes);
		const uint8_t *hend = host ? memchr(host + 1, 0, ev->nbytes - (size_t)(host + 1 - ev->bytes)) : NULL;
		fprintf(o, "SOURCE %" PRIu64 " %s offset=%" PRId64 " uncertainty=%" PRIu64 " method=%s collectives=%" PRIu64
			   " host=", ev->f[0], ev->f[1] == ISC_SOURCE_KINETO ? "kineto" : "traces", isc_unzigzag(ev->f[2]),
			ev->f[3], ev->f[4] < 3 ? methods[ev->f[4]] : "?", ev->f[5]);
		if (host)
			put_text(o, host + 1, (size_t)((hend ? hend : ev->bytes + ev->nbytes) - (host + 1)));
		fputc('\n', o);
		break;
	}
	case ISC_REC_META:
		if (ev->nf == 1 && ev->f[0] <= ev->nbytes) {
			fputs("META ", o);
			put_text(o, ev->bytes, (size_t)ev->f[0]);
			fputc('=', o);
			put_text(o, ev->bytes + ev->f[0], ev->nbytes - (size_t)ev->f[0]);
			fputc('\n', o);
		}
		break;
	case ISC_REC_PY_SAMPLE: {
		/* state letter, flags, then the frames innermost first: name:line */
		fprintf(o, "py_sample %c %" PRIu64, ev->nf == 5 && ev->f[2] > 32 && ev->f[2] < 127 ? (char)ev->f[2] : '?',
			ev->nf == 5 ? ev->f[3] : 0);
		const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
		uint64_t id, line, kind;
		for (uint64_t k = 0; ev->nf == 5 && k < ev->f[4] && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &line); k++)
			fprintf(o, " %s:%" PRIu64, name_of(s, (uint32_t)id), line);
		/* 1.4: the callee, after the frames: "-> NAME MODULE kind K" */
		if (ev->nf == 5 && (ev->f[3] & ISC_PY_SAMPLE_CALLEE) && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &kind))
			fprintf(o, " -> %s kind %" PRIu64, id ? name_of(s, (uint32_t)id) : "-", kind);
		/* 1.9: the thread's schedstat: "sched RUN WAIT" (ns so far) */
		if (ev->nf == 5 && (ev->f[3] & ISC_PY_SAMPLE_SCHED) && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &kind))
			fprintf(o, " sched %" PRIu64 " %" PRIu64, id, kind);
		fputc('\n', o);
		break;
	}
	case ISC_REC_NATIVE_SAMPLE:
	case ISC_REC_NATIVE_MAP:
	case ISC_REC_NATIVE_TASK:
	case ISC_REC_NATIVE_KSYM:
		put_native(s, ev);
		break;
	case ISC_REC_TL_ALLOC:
	case ISC_REC_TL_FREE:
	case ISC_REC_TL_ALLOC_SITE:
	case ISC_REC_TL_ALLOC_INFO:
		alloc_line(s, ev);
		break;
	default:
		if (record_name(ev->type))
			fprintf(o, "%s", record_name(ev->type));
		else
			fprintf(o, "R%02x", ev->type);
		for (unsigned i = 0; i < ev->nf; i++)
			fprintf(o, " %" PRIu64, ev->f[i]);
		if (ev->nbytes)
			fprintf(o, " %.*s", (int)ev->nbytes, (const char *)ev->bytes);
		fputc('\n', o);
		break;
	}
	return ferror(o) ? -EIO : 0;
}

static int d_end(void *ctx, const struct isc_tl_stats *st)
{
	struct dump_sink *s = ctx;
	fprintf(s->out, "END events=%" PRIu64 " dropped=%" PRIu64 " lost_frames=%" PRIu64 " abrupt=%d status=%d%s%s\n",
		s->times ? st->events : 0, st->dropped, st->lost_frames, st->abrupt, st->exit_status,
		st->signaled ? " (signal)" : "", st->window ? " window=1" : "");
	if (fflush(s->out) || ferror(s->out)) {
		isc_err_push("Failed to write: %s", strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

static void d_destroy(void *ctx)
{
	struct dump_sink *s = ctx;
	for (size_t i = 0; i < s->nnames; i++)
		free(s->names[i].line);
	free(s->names);
	free(s);
}

int isc_sink_dump_new(struct isc_sink **out, FILE *f, bool with_times)
{
	struct dump_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->out = f;
	s->times = with_times;
	s->base = (struct isc_sink){ s, d_begin, d_string, d_event, d_end, d_destroy };
	*out = &s->base;
	return 0;
}
