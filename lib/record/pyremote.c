/*
 * pyremote.c - reads CPython thread stacks out of another address space.
 *
 *   _PyRuntime.interpreters.head -> PyInterpreterState --next--> ...
 *        threads.head / tstate_head -> PyThreadState --next--> ...
 *            frame (3.9/3.10) | cframe->current_frame (3.11/3.12) | current_frame (3.13+)
 *                -> frame --previous/f_back--> ...   (innermost first)
 *                     f_code / f_executable -> PyCodeObject: names, first line, line table
 *                     f_lasti / prev_instr / instr_ptr -> instruction -> line, opcode class
 *
 * Each object is read with one bounded call of r->read into a local
 * buffer; fields are taken from that copy only, so an object changing under
 * us yields an inconsistent stack, not an out-of-bounds access.  Lists are
 * cut at ISC_PY_MAX_* entries, so cycles cost a bounded number of reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pyremote.h"

#define OBJ_MAX 1024        /* bytes read per struct: every offset used lies below */
#define CACHE_SLOTS 1024    /* line tables kept, direct-mapped by code address */
#define CACHE_TAB_MAX (16u << 10)
#define ADDR_MIN 4096u
#define ADDR_MAX (1ull << 57)

struct cache_ent {
	uint64_t code, tab;
	uint8_t *bytes;
	size_t len;
};

struct isc_pycache {
	struct cache_ent e[CACHE_SLOTS];
};

int isc_pyremote_init(struct isc_pyremote *r, const struct isc_pylayout *L, isc_pymem_fn *fn, void *ctx,
		      uint64_t runtime)
{
	memset(r, 0, sizeof(*r));
	r->L = *L;
	r->read = fn;
	r->ctx = ctx;
	r->runtime = runtime;
	r->pthread_tid_off = ISC_PY_NONE;
	r->cache = calloc(1, sizeof(*r->cache));
	return r->cache ? 0 : -ENOMEM;
}

void isc_pyremote_fini(struct isc_pyremote *r)
{
	if (!r->cache)
		return;
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		free(r->cache->e[i].bytes);
	free(r->cache);
	r->cache = NULL;
}

static bool addr_ok(uint64_t a)
{
	return a >= ADDR_MIN && a < ADDR_MAX;
}

static int rd(struct isc_pyremote *r, uint64_t addr, void *dst, size_t len)
{
	if (!addr_ok(addr) || addr + len < addr || addr + len > ADDR_MAX)
		return -EFAULT;
	r->reads++;
	return r->read(r->ctx, addr, dst, len);
}

/* Field readers on a local copy; an offset of ISC_PY_NONE or past the copy reads 0. */
static uint64_t u64_at(const uint8_t *b, size_t blen, uint32_t off)
{
	uint64_t v = 0;
	if (off != ISC_PY_NONE && (size_t)off + 8 <= blen)
		memcpy(&v, b + off, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *b, size_t blen, uint32_t off)
{
	uint32_t v = 0;
	if (off != ISC_PY_NONE && (size_t)off + 4 <= blen)
		memcpy(&v, b + off, 4);
	return v;
}

/* Bytes to read of an object so that every used offset (+8) is inside. */
static size_t span(const uint32_t *offs, unsigned n)
{
	size_t m = 8;
	for (unsigned i = 0; i < n; i++)
		if (offs[i] != ISC_PY_NONE && (size_t)offs[i] + 8 > m)
			m = (size_t)offs[i] + 8;
	return m > OBJ_MAX ? 0 : m;
}

int isc_pyremote_debug_offsets(struct isc_pyremote *r, uint32_t *hexversion)
{
	uint64_t d[73];
	int rc = rd(r, r->runtime, d, sizeof(d));
	if (rc)
		return rc;
	if (memcmp(d, "xdebugpy", 8))
		return -EPROTO;
	*hexversion = (uint32_t)d[1];
	/* the 3.13 struct; 3.14 reordered it (and is refused here) */
	if ((d[1] >> 16) != 0x030D || d[2] != 0)
		return -EPROTO;
	static const uint8_t used[] = { 5, 8, 9, 21, 22, 23, 24, 25, 29, 30, 31, 33, 35, 36, 37, 38, 39, 43, 45, 65, 66,
					68, 69, 70 };
	for (unsigned i = 0; i < sizeof(used); i++)
		if (d[used[i]] > 65535) /* an offset, not a size: bounded */
			return -EPROTO;
	struct isc_pylayout *L = &r->L;
	L->rt_interp_head = (uint32_t)d[5];
	L->is_next = (uint32_t)d[8];
	L->is_threads_head = (uint32_t)d[9];
	L->ts_next = (uint32_t)d[21];
	L->ts_interp = (uint32_t)d[22];
	L->ts_frame = (uint32_t)d[23];
	L->cf_current_frame = ISC_PY_NONE;
	L->ts_thread_id = (uint32_t)d[24];
	L->ts_native_thread_id = (uint32_t)d[25];
	L->frame_kind = ISC_PY_FRAME_INTERP;
	L->fr_previous = (uint32_t)d[29];
	L->fr_code = (uint32_t)d[30];
	L->fr_instr = (uint32_t)d[31];
	L->fr_owner = (uint32_t)d[33];
	L->co_filename = (uint32_t)d[35];
	L->co_name = (uint32_t)d[36];
	L->co_qualname = (uint32_t)d[37];
	L->co_linetable = (uint32_t)d[38];
	L->co_firstlineno = (uint32_t)d[39];
	L->co_code = (uint32_t)d[43];
	L->ob_type = (uint32_t)d[45];
	L->var_size = (uint32_t)d[65];
	L->bytes_sval = (uint32_t)d[66];
	L->str_state = (uint32_t)d[68];
	L->str_length = (uint32_t)d[69];
	L->str_ascii_size = (uint32_t)d[70];
	L->line_format = ISC_PY_LINES_311;
	return 0;
}

/* ---- line tables ---------------------------------------------------------- */

/* 3.11+ varints: 6 bits a byte, bit 6 = more. */
static uint32_t lt_varint(const uint8_t *t, size_t len, size_t *i)
{
	uint32_t v = 0;
	unsigned shift = 0;
	while (*i < len && shift < 32) {
		uint8_t b = t[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

uint32_t isc_py_addr2line(int format, const uint8_t *t, size_t len, uint32_t firstlineno, int64_t off)
{
	int64_t line = firstlineno;
	if (off < 0)
		return firstlineno;
	if (format == ISC_PY_LINES_LNOTAB) { /* Objects/lnotab_notes.txt (3.9) */
		int64_t addr = 0;
		for (size_t i = 0; i + 1 < len; i += 2) {
			addr += t[i];
			if (addr > off)
				break;
			line += (int8_t)t[i + 1];
		}
	} else if (format == ISC_PY_LINES_310) { /* PEP 626: (start delta, line delta) pairs */
		int64_t end = 0;
		for (size_t i = 0; i + 1 < len; i += 2) {
			int64_t start = end;
			end += t[i];
			int8_t ld = (int8_t)t[i + 1];
			int64_t here = -1;
			if (ld != -128) {
				line += ld;
				here = line;
			}
			if (start <= off && off < end)
				return here > 0 && here < UINT32_MAX ? (uint32_t)here : 0;
		}
		return 0;
	} else if (format == ISC_PY_LINES_311) { /* Objects/locations.md */
		int64_t addr = 0;
		size_t i = 0;
		while (i < len) {
			uint8_t first = t[i++];
			if (!(first & 128))
				return 0; /* not an entry start: corrupt */
			unsigned code = (first >> 3) & 15;
			int64_t end = addr + (first & 7) + 1;
			int64_t here = line;
			if (code == 15) {
				here = -1;
			} else if (code == 14 || code == 13) {
				uint32_t u = lt_varint(t, len, &i);
				line += (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
				here = line;
			} else if (code == 11 || code == 12) {
				line += code - 10;
				here = line;
			}
			while (i < len && !(t[i] & 128))
				i++; /* the rest of the entry: columns */
			if (addr <= off && off < end)
				return here > 0 && here < UINT32_MAX ? (uint32_t)here : 0;
			addr = end;
		}
		return 0;
	} else {
		return 0;
	}
	return line > 0 && line < UINT32_MAX ? (uint32_t)line : 0;
}

/* The bytes object at addr into a malloc'ed buffer (*out, *len); 0 or -errno. */
static int read_bytes_obj(struct isc_pyremote *r, uint64_t addr, uint8_t **out, size_t *len)
{
	const struct isc_pylayout *L = &r->L;
	uint8_t h[64];
	size_t hl = (size_t)L->bytes_sval;
	if (hl > sizeof(h) || L->var_size + 8 > hl)
		return -EPROTO;
	int rc = rd(r, addr, h, hl);
	if (rc)
		return rc;
	if (r->bytes_type && u64_at(h, hl, L->ob_type) != r->bytes_type)
		return -EBADMSG;
	int64_t n = (int64_t)u64_at(h, hl, L->var_size);
	if (n < 0 || n > (int64_t)ISC_PY_LINETABLE_MAX)
		return -EBADMSG;
	uint8_t *b = malloc((size_t)n + 1);
	if (!b)
		return -ENOMEM;
	if (n && (rc = rd(r, addr + L->bytes_sval, b, (size_t)n))) {
		free(b);
		return rc;
	}
	*out = b;
	*len = (size_t)n;
	return 0;
}

static uint32_t line_of(struct isc_pyremote *r, uint64_t code, uint64_t tab, uint32_t first, int64_t off)
{
	struct cache_ent *e = &r->cache->e[(code >> 4) % CACHE_SLOTS];
	if (e->bytes && e->code == code && e->tab == tab)
		return isc_py_addr2line(r->L.line_format, e->bytes, e->len, first, off);
	uint8_t *b;
	size_t n;
	if (read_bytes_obj(r, tab, &b, &n))
		return 0;
	uint32_t line = isc_py_addr2line(r->L.line_format, b, n, first, off);
	if (n <= CACHE_TAB_MAX) {
		free(e->bytes);
		*e = (struct cache_ent){ code, tab, b, n };
	} else {
		free(b);
	}
	return line;
}

/* ---- strings -------------------------------------------------------------- */

static size_t put_utf8(char *o, uint32_t c)
{
	if (c >= 0xD800 && c < 0xE000)
		c = '?';
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6);
		o[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12);
		o[1] = (char)(0x80 | (c >> 6 & 63));
		o[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	if (c > 0x10FFFF)
		c = 0xFFFD;
	o[0] = (char)(0xF0 | c >> 18);
	o[1] = (char)(0x80 | (c >> 12 & 63));
	o[2] = (char)(0x80 | (c >> 6 & 63));
	o[3] = (char)(0x80 | (c & 63));
	return 4;
}

int isc_pyremote_str(struct isc_pyremote *r, uint64_t addr, char *buf, size_t cap)
{
	const struct isc_pylayout *L = &r->L;
	uint8_t h[128];
	size_t hl = L->str_compact_size;
	if (cap < 5 || hl > sizeof(h) || hl < L->str_ascii_size || L->str_length + 8 > hl ||
	    L->str_state + 4 > hl)
		return -EPROTO;
	buf[0] = '\0';
	int rc = rd(r, addr, h, hl);
	if (rc)
		return rc;
	if (r->str_type && u64_at(h, hl, L->ob_type) != r->str_type)
		return -EBADMSG;
	int64_t len = (int64_t)u64_at(h, hl, L->str_length);
	uint32_t st = u32_at(h, hl, L->str_state);
	unsigned kind = (st >> L->str_kind_bit) & 7;
	bool compact = (st >> L->str_compact_bit) & 1, ascii = (st >> L->str_ascii_bit) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || len < 0 || len > (1ll << 40))
		return -EBADMSG;
	size_t n = (size_t)len < ISC_PY_NAME_MAX ? (size_t)len : ISC_PY_NAME_MAX;
	uint8_t raw[ISC_PY_NAME_MAX * 4];
	if (n && (rc = rd(r, addr + (ascii ? L->str_ascii_size : hl), raw, n * kind)))
		return rc;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
				       : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
						 (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
		if (c == 0)
			c = '?';
		char u[4];
		size_t k = put_utf8(u, c);
		if (o + k + 1 > cap || o + k > ISC_PY_NAME_MAX)
			break;
		memcpy(buf + o, u, k);
		o += k;
	}
	buf[o] = '\0';
	return (int)o;
}

/* ---- the walk ------------------------------------------------------------- */

/*
 * One frame at addr into f, its caller into *prev: 1, 0 for a shim frame
 * (skipped), negative when unreadable.  The current instruction's class
 * is read for the leaf only (the sample's flags describe the innermost
 * frame), one read less for every other frame.
 */
static int read_frame(struct isc_pyremote *r, uint64_t addr, struct isc_pyframe *f, uint64_t *prev, bool leaf)
{
	const struct isc_pylayout *L = &r->L;
	uint8_t fb[OBJ_MAX], cb[OBJ_MAX];
	uint32_t fo[] = { L->fr_previous, L->fr_code, L->fr_instr, L->fr_owner };
	uint32_t co[] = { L->co_filename, L->co_name, L->co_qualname, L->co_firstlineno, L->co_linetable,
			  L->frame_kind == ISC_PY_FRAME_OBJECT ? L->co_code : ISC_PY_NONE, L->ob_type };
	size_t fl = span(fo, 4), cl = span(co, 7);
	if (!fl || !cl || rd(r, addr, fb, fl))
		return -EFAULT;
	*prev = u64_at(fb, fl, L->fr_previous);
	if (L->fr_owner != ISC_PY_NONE && L->owner_cstack >= 0 && fb[L->fr_owner] == (uint8_t)L->owner_cstack)
		return 0;
	uint64_t code = u64_at(fb, fl, L->fr_code);
	if (rd(r, code, cb, cl))
		return -EFAULT;
	if (r->code_type && u64_at(cb, cl, L->ob_type) != r->code_type)
		return -EBADMSG;
	memset(f, 0, sizeof(*f));
	f->code = code;
	f->name = u64_at(cb, cl, L->co_name);
	f->qualname = u64_at(cb, cl, L->co_qualname);
	f->file = u64_at(cb, cl, L->co_filename);
	int32_t first = (int32_t)u32_at(cb, cl, L->co_firstlineno);
	f->firstlineno = first > 0 ? (uint32_t)first : 0;
	int64_t off; /* in the line table's units */
	uint64_t opaddr = 0;
	if (L->frame_kind == ISC_PY_FRAME_OBJECT) {
		int32_t lasti = (int32_t)u32_at(fb, fl, L->fr_instr);
		int64_t byte = L->line_format == ISC_PY_LINES_310 ? (int64_t)lasti * 2 : lasti;
		off = byte;
		uint64_t cc = u64_at(cb, cl, L->co_code);
		if (lasti >= 0 && addr_ok(cc))
			opaddr = cc + L->bytes_sval + (uint64_t)byte;
	} else {
		uint64_t ip = u64_at(fb, fl, L->fr_instr), base = code + L->co_code;
		off = ip >= base && ip - base < (1u << 26) ? (int64_t)((ip - base) / 2) : -1;
		if (off >= 0)
			opaddr = ip;
	}
	uint8_t op;
	if (leaf && opaddr && !rd(r, opaddr, &op, 1))
		f->opclass = L->opclass[op];
	f->line = line_of(r, code, u64_at(cb, cl, L->co_linetable), f->firstlineno, off);
	return 1;
}

static void walk_frames(struct isc_pyremote *r, uint64_t frame, struct isc_pystack *s)
{
	for (unsigned steps = 0; frame && steps < 2 * ISC_PY_MAX_DEPTH; steps++) {
		if (s->depth == ISC_PY_MAX_DEPTH) {
			s->truncated = true;
			return;
		}
		uint64_t prev = 0;
		int rc = read_frame(r, frame, &s->frames[s->depth], &prev, s->depth == 0);
		if (rc < 0) {
			s->truncated = true;
			return;
		}
		s->depth += (uint32_t)rc;
		if (prev == frame)
			break; /* a frame that is its own caller: a lie */
		frame = prev;
	}
	if (frame)
		s->truncated = true;
}

int isc_pyremote_thread(struct isc_pyremote *r, uint64_t ts, struct isc_pystack *s)
{
	const struct isc_pylayout *L = &r->L;
	uint64_t frame = 0;
	s->depth = 0;
	s->truncated = false;
	if (L->ts_frame > OBJ_MAX || rd(r, ts + L->ts_frame, &frame, 8))
		return -EFAULT;
	if (L->cf_current_frame != ISC_PY_NONE && frame) {
		uint64_t cf = 0;
		if (L->cf_current_frame > OBJ_MAX || rd(r, frame + L->cf_current_frame, &cf, 8))
			return -EFAULT;
		frame = cf;
	}
	walk_frames(r, frame, s);
	return 0;
}

int isc_pyremote_sample(struct isc_pyremote *r, struct isc_pystack *out, unsigned cap, unsigned *n)
{
	const struct isc_pylayout *L = &r->L;
	uint8_t tb[OBJ_MAX];
	uint32_t to[] = { L->ts_next, L->ts_interp, L->ts_thread_id, L->ts_native_thread_id, L->ts_frame };
	size_t tl = span(to, 5);
	uint64_t interp;
	*n = 0;
	/* the interpreter state is large (3.13: its list fields lie 7 KiB in): two reads */
	if (!tl || L->rt_interp_head > 65536 || L->is_next > 65536 || L->is_threads_head > 65536)
		return -EPROTO;
	int rc = rd(r, r->runtime + L->rt_interp_head, &interp, 8);
	if (rc)
		return rc;
	for (unsigned ni = 0; interp && ni < ISC_PY_MAX_INTERPS; ni++) {
		uint64_t ts, inext;
		if ((rc = rd(r, interp + L->is_threads_head, &ts, 8)) || (rc = rd(r, interp + L->is_next, &inext, 8)))
			return rc == -ESRCH ? rc : 0;
		for (unsigned nt = 0; ts && nt < ISC_PY_MAX_THREADS && *n < cap; nt++) {
			if ((rc = rd(r, ts, tb, tl)))
				return rc == -ESRCH ? rc : 0;
			if (u64_at(tb, tl, L->ts_interp) != interp)
				break; /* not a thread of this interpreter: a stale or lying list */
			struct isc_pystack *s = &out[*n];
			s->thread_id = u64_at(tb, tl, L->ts_thread_id);
			s->tid = (uint32_t)u64_at(tb, tl, L->ts_native_thread_id);
			s->depth = 0;
			s->truncated = false;
			if (!s->tid && r->pthread_tid_off != ISC_PY_NONE && addr_ok(s->thread_id)) {
				uint32_t tid;
				if (!rd(r, s->thread_id + r->pthread_tid_off, &tid, 4))
					s->tid = tid;
			}
			uint64_t frame = u64_at(tb, tl, L->ts_frame);
			if (L->cf_current_frame != ISC_PY_NONE && frame) {
				uint64_t cf = 0;
				if (L->cf_current_frame > OBJ_MAX || rd(r, frame + L->cf_current_frame, &cf, 8))
					cf = 0;
				frame = cf;
			}
			walk_frames(r, frame, s);
			(*n)++;
			uint64_t next = u64_at(tb, tl, L->ts_next);
			if (next == ts)
				break;
			ts = next;
		}
		if (inext == interp)
			break;
		interp = inext;
	}
	return 0;
}

const struct isc_pylayout *isc_pylayout_find(unsigned major, unsigned minor, unsigned patch)
{
	const struct isc_pylayout *best = NULL;
	for (size_t i = 0; i < isc_npylayouts; i++) {
		const struct isc_pylayout *L = &isc_pylayouts[i];
		if ((L->hexversion >> 24) != major || (L->hexversion >> 16 & 255) != minor)
			continue;
		unsigned p = L->hexversion >> 8 & 255;
		if (p == patch)
			return L;
		if (!best || p > (best->hexversion >> 8 & 255))
			best = L;
	}
	return best;
}
