/*
 * kineto_scan.c - the Kineto importer's streaming scanner (kineto.h): the
 * JSON text of a trace read front to back from the byte source, no seeks,
 * in bounded memory.
 *
 *   { "deviceProperties": [...], "traceEvents": [ {...}, {...}, ... ], ... }
 *     |                            |               |
 *     other members: captured      each element: parsed in place in the
 *     (16 MiB at most) and handed  source window when it fits WINDOW, else
 *     to isc_kconv_top             captured with a size and nesting limit
 *                                  and parsed; its fields (struct kt_event)
 *                                  handed to isc_kconv_event
 *
 * Only the bracket structure is followed between elements; inside one
 * element kineto_json.c reads the values.  Damage is worded here: where the
 * text ended or broke (byte offset), and which element was bad and why.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kineto.h"

#define WINDOW (64u << 10)   /* events up to this size are parsed in place */
#define VALUE_MAX (16u << 20) /* largest event or top-level value kept */

/* ---- damage -------------------------------------------------------------- */

static void damage(struct kt_scan *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void damage(struct kt_scan *k, const char *fmt, ...)
{
	if (k->res->damaged)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->res->damage, sizeof(k->res->damage), fmt, ap);
	va_end(ap);
	k->res->damaged = true;
}

static uint64_t text_offset(const struct kt_scan *k)
{
	return k->src.base + k->src.pos;
}

/* An element skipped: counted, and the first one worded with its number. */
static void bad_event(struct kt_scan *k, const char *why)
{
	k->res->bad_events++;
	damage(k, "event #%llu: %s", (unsigned long long)k->res->events_in, why);
}

/* ---- one element's fields ------------------------------------------------ */

/* An array of up to three non-negative integers (grid, block). */
static bool jdim3(struct kt_jp *j, uint32_t d[3], bool *ok)
{
	char *save = j->p;
	struct kt_jv v;
	*ok = false;
	if (j->p >= j->e || *j->p != '[')
		return isc_kjson_value(j, &v);
	j->p++;
	d[0] = d[1] = d[2] = 1;
	for (int i = 0;; i++) {
		isc_kjson_ws(j);
		char *s;
		size_t n;
		int64_t x;
		bool inexact;
		if (i == 0 && j->p < j->e && *j->p == ']')
			break;
		if (i >= 3 || !isc_kjson_num(j, &s, &n) || isc_kjson_dec(s, n, 0, &x, &inexact) || x < 0 || x > UINT32_MAX) {
			j->p = save; /* not the shape we know: validate and skip */
			return isc_kjson_value(j, &v);
		}
		d[i] = (uint32_t)x;
		isc_kjson_ws(j);
		if (j->p < j->e && *j->p == ',') {
			j->p++;
			continue;
		}
		break;
	}
	if (j->p >= j->e || *j->p++ != ']')
		return false;
	*ok = true;
	return true;
}

static bool parse_args(struct kt_jp *j, struct kt_event *ev)
{
	unsigned st = 0;
	char *k;
	size_t kn;
	int rc;
	if (++j->depth > j->max_depth)
		return false;
	while ((rc = isc_kjson_member(j, &st, &k, &kn)) == 1) {
		struct kt_jv v, *dst = NULL;
		if (kt_keyeq(k, kn, "grid")) {
			if (!jdim3(j, ev->grid, &ev->have_grid))
				return false;
		} else if (kt_keyeq(k, kn, "block")) {
			if (!jdim3(j, ev->block, &ev->have_block))
				return false;
		} else {
			if (!isc_kjson_value(j, &v))
				return false;
			switch (kn) {
			case 4:
				if (kt_keyeq(k, kn, "name"))
					dst = &ev->aname;
				else if (kt_keyeq(k, kn, "Addr"))
					dst = &ev->mem_addr;
				break;
			case 5:
				if (kt_keyeq(k, kn, "bytes"))
					dst = &ev->bytes;
				else if (kt_keyeq(k, kn, "Bytes"))
					dst = &ev->mem_bytes;
				break;
			case 3:
				if (kt_keyeq(k, kn, "cid"))
					dst = &ev->cid;
				break;
			case 6:
				if (kt_keyeq(k, kn, "stream"))
					dst = &ev->stream;
				else if (kt_keyeq(k, kn, "device"))
					dst = &ev->device;
				else if (kt_keyeq(k, kn, "labels"))
					dst = NULL;
				break;
			default:
				if (kt_keyeq(k, kn, "correlation"))
					dst = &ev->correlation;
				else if (kt_keyeq(k, kn, "cbid"))
					dst = &ev->cbid;
				else if (kt_keyeq(k, kn, "registers per thread"))
					dst = &ev->regs;
				else if (kt_keyeq(k, kn, "shared memory"))
					dst = &ev->shmem;
				else if (kt_keyeq(k, kn, "cuda_sync_kind"))
					dst = &ev->sync_kind;
				else if (kt_keyeq(k, kn, "Device Type"))
					dst = &ev->mem_dtype;
				else if (kt_keyeq(k, kn, "Device Id"))
					dst = &ev->mem_did;
				else if (kt_keyeq(k, kn, "Total Allocated"))
					dst = &ev->mem_talloc;
				else if (kt_keyeq(k, kn, "Total Reserved"))
					dst = &ev->mem_tres;
				else if (kt_keyeq(k, kn, "wait_on_cuda_event_id"))
					dst = &ev->event_id;
				else if (kt_keyeq(k, kn, "graph id") || kt_keyeq(k, kn, "graph node id") ||
					 kt_keyeq(k, kn, "graphId") || kt_keyeq(k, kn, "graph_id"))
					ev->graph = true;
				break;
			}
			if (dst)
				*dst = v;
		}
	}
	if (rc < 0)
		return false;
	j->depth--;
	return true;
}

/*
 * Parses one traceEvents element at j->p, leaving j->p after it; false =
 * invalid JSON or the end of the text came first.  Wrong types set ev->bad.
 */
static bool parse_object(struct kt_jp *j, struct kt_event *ev)
{
	memset(ev, 0, offsetof(struct kt_event, badbuf));
	isc_kjson_ws(j);
	if (j->p >= j->e || *j->p != '{') {
		struct kt_jv v;
		ev->bad = "not an object";
		return isc_kjson_value(j, &v);
	}
	unsigned st = 0;
	char *key;
	size_t kn;
	int rc;
	j->depth = 1;
	while ((rc = isc_kjson_member(j, &st, &key, &kn)) == 1) {
		struct kt_jv v, *dst = NULL;
		if (kn == 4 && kt_keyeq(key, kn, "args") && j->p < j->e && *j->p == '{') {
			if (!parse_args(j, ev))
				return false;
		} else {
			if (!isc_kjson_value(j, &v))
				return false;
			uint8_t want = 0; /* 0: string or number */
			if (kt_keyeq(key, kn, "ph"))
				dst = &ev->ph, want = J_STR;
			else if (kt_keyeq(key, kn, "cat"))
				dst = &ev->cat, want = J_STR;
			else if (kt_keyeq(key, kn, "name"))
				dst = &ev->name, want = J_STR;
			else if (kt_keyeq(key, kn, "ts"))
				dst = &ev->ts, want = J_NUM;
			else if (kt_keyeq(key, kn, "dur"))
				dst = &ev->dur, want = J_NUM;
			else if (kt_keyeq(key, kn, "pid"))
				dst = &ev->pid;
			else if (kt_keyeq(key, kn, "tid"))
				dst = &ev->tid;
			else if (kt_keyeq(key, kn, "args"))
				ev->bad = "\"args\" is not an object";
			if (dst) {
				static const char *tn[] = { "absent", "a string", "a number", "a literal", "an array", "an object" };
				if ((want && v.t != want) || (!want && v.t != J_STR && v.t != J_NUM)) {
					snprintf(ev->badbuf, sizeof(ev->badbuf), "\"%.*s\" is %s, not %s", (int)kn, key,
						 tn[v.t], want == J_STR ? "a string" : want == J_NUM ? "a number"
								     : "a number or a string");
					ev->bad = ev->badbuf;
				}
				*dst = v;
			}
		}
	}
	return rc == 0;
}

/* A whole captured element (unescaped in place). */
static bool parse_event(struct kt_scan *k, char *b, size_t n, struct kt_event *ev)
{
	struct kt_jp j = { b, b + n, 0, k->max_depth, NULL, 0 };
	if (!parse_object(&j, ev))
		return false;
	isc_kjson_ws(&j);
	return j.p == j.e;
}

/* ---- the stream ---------------------------------------------------------- */

static int peekc(struct kt_scan *k)
{
	struct kt_src *s = &k->src;
	if (s->pos == s->len && isc_ksrc_more(s) <= 0)
		return -1;
	return s->buf[s->pos];
}

static int skip_ws(struct kt_scan *k)
{
	int c;
	while ((c = peekc(k)) == ' ' || c == '\n' || c == '\r' || c == '\t')
		k->src.pos++;
	return c;
}

/* The reason the input ended: I/O error, gzip damage or plain truncation. */
static int ended(struct kt_scan *k, const char *where)
{
	if (k->src.err) {
		isc_err_push("Failed to read: %s", strerror(-k->src.err));
		return k->src.err;
	}
	if (k->src.gz_bad)
		damage(k, "corrupt gzip data after byte %llu of JSON text %s", (unsigned long long)text_offset(k), where);
	else if (k->src.gz_trunc)
		damage(k, "truncated gzip data after byte %llu of JSON text %s", (unsigned long long)text_offset(k), where);
	else
		damage(k, "truncated JSON at byte %llu %s", (unsigned long long)text_offset(k), where);
	k->stop = true;
	return 0;
}

static int syntax(struct kt_scan *k, const char *what, const char *where)
{
	damage(k, "invalid JSON at byte %llu %s: %s", (unsigned long long)text_offset(k), where, what);
	k->stop = true;
	return 0;
}

enum { CAP_OK, CAP_DEEP = 1, CAP_BIG = 2 };

/*
 * Copies the JSON value at the cursor into out (NULL: skip it) and
 * consumes it.  Only the bracket structure is followed (strings and
 * escapes respected, depth counted, no recursion); a value deeper than
 * max_depth or longer than VALUE_MAX is consumed but not kept (*flags).
 * 1 = a value, 0 = the input ended or is not a value (damage set), <0 I/O.
 */
static int capture(struct kt_scan *k, struct isc_buf *out, unsigned *flags, const char *where)
{
	struct kt_src *s = &k->src;
	uint64_t depth = 0;
	bool in_str = false, esc = false, scalar;
	int c = skip_ws(k);
	*flags = CAP_OK;
	if (out)
		out->len = 0;
	if (c < 0)
		return ended(k, where);
	if (c == '{' || c == '[' || c == '"')
		scalar = false;
	else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n')
		scalar = true;
	else
		return syntax(k, "expected a value", where);
	for (;;) {
		if (s->pos == s->len && isc_ksrc_more(s) <= 0) {
			if (scalar && !s->err)
				return 1; /* a number at the very end: the caller finds the missing bracket */
			return ended(k, where);
		}
		const uint8_t *p = s->buf + s->pos, *e = s->buf + s->len, *q = p;
		bool done = false;
		if (scalar) {
			while (q < e && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || *q == '.' || *q == '-' ||
					 *q == '+' || *q == 'E'))
				q++;
			done = q < e;
		} else {
			for (; q < e; q++) {
				uint8_t ch = *q;
				if (in_str) {
					if (esc)
						esc = false;
					else if (ch == '\\')
						esc = true;
					else if (ch == '"')
						in_str = false;
					if (!in_str && depth == 0) {
						q++;
						done = true;
						break;
					}
					continue;
				}
				if (ch == '"') {
					in_str = true;
				} else if (ch == '{' || ch == '[') {
					if (++depth > k->max_depth)
						*flags |= CAP_DEEP;
				} else if (ch == '}' || ch == ']') {
					if (depth == 0 || --depth == 0) {
						q++;
						done = true;
						break;
					}
				}
			}
		}
		size_t n = (size_t)(q - p);
		if (out && !*flags) {
			if (out->len + n > VALUE_MAX)
				*flags |= CAP_BIG;
			else if (isc_buf_put(out, p, n))
				return -ENOMEM;
		}
		s->pos += n;
		if (done)
			return 1;
	}
}

/* A key string at the cursor (consumed); at most cap-1 bytes kept, raw. */
static int read_key(struct kt_scan *k, char *key, size_t cap, const char *where)
{
	size_t n = 0;
	bool esc = false;
	if (skip_ws(k) != '"')
		return peekc(k) < 0 ? ended(k, where) : syntax(k, "expected a key", where);
	k->src.pos++;
	for (;;) {
		int c = peekc(k);
		if (c < 0)
			return ended(k, where);
		k->src.pos++;
		if (esc) {
			esc = false;
		} else if (c == '\\') {
			esc = true;
			continue;
		} else if (c == '"') {
			key[n] = '\0';
			return 1;
		}
		if (n + 1 < cap)
			key[n++] = (char)c;
	}
}

/* Hands one event to the conversion; a bad one is counted and worded here. */
static int convert(struct kt_scan *k, struct kt_event *ev)
{
	const char *why = NULL;
	int rc = isc_kconv_event(k->conv, ev, &why);
	if (!rc && why)
		bad_event(k, why);
	return rc;
}

/* The traceEvents array, element by element. */
static int read_events(struct kt_scan *k)
{
	const char *where = "in traceEvents";
	int c = skip_ws(k), rc;
	if (c < 0)
		return ended(k, where);
	if (c != '[') {
		isc_err_push("not a Kineto trace: traceEvents is not an array");
		return -EBADMSG;
	}
	k->have_events = true;
	k->src.pos++;
	if ((c = skip_ws(k)) == ']') {
		k->src.pos++;
		return 0;
	}
	for (;;) {
		unsigned flags = 0;
		struct kt_event ev;
		struct kt_src *s = &k->src;
		bool parsed = false;
		/* fast path: the element parsed in place in a window of at least WINDOW bytes */
		if (skip_ws(k) == '{') {
			while (s->len - s->pos < WINDOW && !s->eof)
				if (isc_ksrc_more(s) <= 0)
					break;
			struct kt_jp j = { (char *)s->buf + s->pos, (char *)s->buf + s->len, 0, k->max_depth, k->arena, 0 };
			if ((parsed = parse_object(&j, &ev)))
				s->pos = (size_t)((uint8_t *)j.p - s->buf);
		}
		/* else (larger, deeper, invalid, or not an object): copied with limits, then parsed */
		if (!parsed && (rc = capture(k, &k->val, &flags, where)) <= 0)
			return rc;
		k->res->events_in++;
		if (parsed) {
			if (ev.bad)
				bad_event(k, ev.bad);
			else if ((rc = convert(k, &ev)))
				return rc;
		} else if (flags & CAP_DEEP) {
			char why[64];
			snprintf(why, sizeof(why), "nested deeper than %u levels", k->max_depth);
			bad_event(k, why);
		} else if (flags & CAP_BIG) {
			bad_event(k, "larger than 16 MiB");
		} else if (!parse_event(k, (char *)k->val.data, k->val.len, &ev)) {
			bad_event(k, "invalid JSON");
		} else if (ev.bad) {
			bad_event(k, ev.bad);
		} else if ((rc = convert(k, &ev))) {
			return rc;
		}
		c = skip_ws(k);
		if (c == ',') {
			k->src.pos++;
			continue;
		}
		if (c == ']') {
			k->src.pos++;
			return 0;
		}
		return c < 0 ? ended(k, where) : syntax(k, "expected ',' or ']' after an event", where);
	}
}

int isc_kscan_run(struct kt_scan *k)
{
	const char *where = "at the top level";
	char key[256];
	int c = skip_ws(k), rc;
	if (c != '{') {
		if (k->src.err)
			return ended(k, where);
		isc_err_push(c < 0 ? (k->src.gz ? "empty or damaged gzip stream" : "empty input")
				   : "not a Kineto trace: not a JSON object");
		return -EBADMSG;
	}
	k->src.pos++;
	if (skip_ws(k) == '}') {
		k->src.pos++;
		return 0;
	}
	for (;;) {
		unsigned flags;
		if ((rc = read_key(k, key, sizeof(key), where)) <= 0)
			return rc;
		if ((c = skip_ws(k)) != ':')
			return c < 0 ? ended(k, where) : syntax(k, "expected ':'", where);
		k->src.pos++;
		if (!strcmp(key, "traceEvents")) {
			if ((rc = read_events(k)) < 0 || k->stop)
				return rc;
		} else {
			bool keep = strcmp(key, "INFO") != 0;
			if ((rc = capture(k, keep ? &k->val : NULL, &flags, where)) <= 0)
				return rc;
			if (keep && !flags)
				isc_kconv_top(k->conv, key, (char *)k->val.data, k->val.len);
		}
		c = skip_ws(k);
		if (c == ',') {
			k->src.pos++;
			continue;
		}
		if (c == '}') {
			k->src.pos++;
			break;
		}
		return c < 0 ? ended(k, where) : syntax(k, "expected ',' or '}'", where);
	}
	if (skip_ws(k) >= 0)
		damage(k, "data after the JSON object at byte %llu", (unsigned long long)text_offset(k));
	else if (k->src.err)
		return ended(k, where);
	else if (k->src.gz_bad || k->src.gz_trunc)
		ended(k, "after the JSON object");
	return 0;
}

int isc_kscan_open(struct kt_scan *s, FILE *in, struct kt_conv *conv, struct isc_kineto_result *res,
		   unsigned max_depth)
{
	s->conv = conv;
	s->res = res;
	s->max_depth = max_depth;
	if (!(s->arena = malloc(KT_SRC_CAP)))
		return -ENOMEM;
	return isc_ksrc_open(&s->src, in);
}

void isc_kscan_close(struct kt_scan *s)
{
	isc_ksrc_close(&s->src);
	free(s->arena);
	isc_buf_free(&s->val);
}
