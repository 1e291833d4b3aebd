/*
 * pyremote.c - reads CPython thread stacks out of another address space.
 *
 *   _PyRuntime.interpreters.head -> PyInterpreterState --next--> ...
 *        threads.head / tstate_head -> PyThreadState --next--> ...
 *            frame (3.9/3.10) | cframe->current_frame (3.11/3.12) | current_frame (3.13+)
 *                -> frame --previous/f_back--> ...   (innermost first)
 *                     f_code / f_executable -> PyCodeObject: names, first line, line table
 *                     f_lasti / prev_instr / instr_ptr -> instruction -> line, opcode class
 *   innermost frame at a call or an operator (callee):
 *       depth at the instruction (pycode.c, once per code object)
 *       -> value stack slots: the callable, its self, the operands
 *       -> their types (flags once per type: an extension's? torch's?)
 *
 * Each object is read with one bounded call of r->read into a local
 * buffer; fields are taken from that copy only, so an object changing under
 * us yields an inconsistent stack, not an out-of-bounds access.  Lists are
 * cut at ISC_PY_MAX_* entries, so cycles cost a bounded number of reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_format.h" /* enum isc_py_callee_kind */
#include "private/isc_util.h" /* isc_utf8_valid (common/text.c) */
#include "pycode.h"
#include "pyremote.h"

#define OBJ_MAX 1024        /* bytes read per struct: every offset used lies below */
#define CACHE_SLOTS 1024    /* line tables kept, direct-mapped by code address */
#define CACHE_TAB_MAX (16u << 10)
#define LINE_BITS 12        /* lines of (code, offset) kept, direct-mapped: 1 << LINE_BITS */
#define DEPTH_SLOTS 512     /* stack-depth tables kept, direct-mapped by code address */
#define DEPTH_UNITS_MAX (64u << 10) /* code units of a code object analysed */
#define TYPE_SLOTS 1024     /* type flags kept (open addressing) */
#define TYPE_BASES 8        /* bases followed from a type */
#define CSTR_MAX 256        /* bytes of a C string (tp_name, ml_name) */
#define DICT_ENTRIES_MAX 512
#define ADDR_MIN 4096u
#define ADDR_MAX (1ull << 57)

struct cache_ent {
	uint64_t code, tab;
	uint8_t *bytes;
	size_t len;
};

/*
 * The line of one instruction offset of one code object (and line table):
 * a walk finds the outer frames of a stack at the same offsets sample
 * after sample, and decoding a module body's table from its start each
 * time was the walk's largest cost (perf of `import torch` under the
 * allocation sampler, 2026-11-28: isc_py_addr2line 0.55 % of the run,
 * more than the shim's own wrappers).
 */
struct line_ent {
	uint64_t code, tab;
	int64_t off;
	uint32_t first, line;
};

/* A code object's depth table (pycode.c); units NULL: it could not be analysed. */
struct depth_ent {
	uint64_t code, nunits, tab;
	struct isc_py_unit *units;
	bool tried;
};

/* Flags of a type object, found once (type_info). */
enum {
	TI_EXT = 1,       /* it or a base is an extension's: a static type outside the interpreter's
			   * image, or one whose tp_dealloc lies outside it */
	TI_TORCH = 2,     /* it or a base has a tp_name of torch's ("torch._C._TensorBase") */
	TI_HEAP = 4,
	TI_CFUNC = 8,     /* builtin_function_or_method or a subtype */
	TI_DESCR = 16,    /* method_descriptor */
	TI_MODULE = 32,   /* module or a subtype */
	TI_CAPSULE = 64,
	TI_TYPE = 128,    /* type or a subtype: its objects are classes */
	TI_PYFUNC = 256,  /* function: Python code */
	TI_BOUND = 512,   /* method: a bound method (its __func__ decides) */
};

struct type_ent {
	uint64_t addr;
	uint16_t flags;
	uint64_t bases[TYPE_BASES]; /* tp_base, its tp_base, ... (0 after the last) */
};

struct isc_pycache {
	struct cache_ent e[CACHE_SLOTS];
	struct depth_ent d[DEPTH_SLOTS];
	struct type_ent t[TYPE_SLOTS];
	struct line_ent l[1u << LINE_BITS];
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
	for (unsigned i = 0; i < DEPTH_SLOTS; i++)
		free(r->cache->d[i].units);
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
	struct line_ent *l = &r->cache->l[((code >> 4) + (uint64_t)off * 0x100000001B3ull) * 0x9E3779B97F4A7C15ull >> (64 - LINE_BITS)];
	if (l->code == code && l->tab == tab && l->off == off && l->first == first && code)
		return l->line;
	struct cache_ent *e = &r->cache->e[(code >> 4) % CACHE_SLOTS];
	uint32_t line;
	if (e->bytes && e->code == code && e->tab == tab) {
		line = isc_py_addr2line(r->L.line_format, e->bytes, e->len, first, off);
	} else {
		uint8_t *b;
		size_t n;
		if (read_bytes_obj(r, tab, &b, &n))
			return 0;
		line = isc_py_addr2line(r->L.line_format, b, n, first, off);
		if (n <= CACHE_TAB_MAX) {
			free(e->bytes);
			*e = (struct cache_ent){ code, tab, b, n };
		} else {
			free(b);
		}
	}
	*l = (struct line_ent){ code, tab, off, first, line };
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

/* ---- callees -------------------------------------------------------------- */

static bool in_image(const struct isc_pyremote *r, uint64_t a)
{
	return a >= r->img_lo && a < r->img_hi;
}

/*
 * A NUL-terminated C string at addr (tp_name, ml_name) into buf: read a
 * page at a time, so that no read reaches past the page of the NUL.
 * Printable, well-formed UTF-8 only.  The length, or a negative errno.
 */
static int read_cstr(struct isc_pyremote *r, uint64_t addr, char *buf, size_t cap)
{
	size_t n = 0;
	if (cap > CSTR_MAX + 1)
		cap = CSTR_MAX + 1;
	while (n + 1 < cap) {
		uint64_t a = addr + n;
		size_t chunk = 4096 - (size_t)(a & 4095);
		if (chunk > cap - 1 - n)
			chunk = cap - 1 - n;
		int rc = rd(r, a, buf + n, chunk);
		if (rc)
			return rc;
		char *z = memchr(buf + n, 0, chunk);
		if (z) {
			n = (size_t)(z - buf);
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
					return -EBADMSG;
			/* a stale pointer's bytes are rarely well-formed UTF-8 (a real name always is) */
			if (!isc_utf8_valid(buf, n))
				return -EBADMSG;
			return (int)n;
		}
		n += chunk;
	}
	return -EBADMSG; /* longer than any name we keep */
}

/*
 * Flags of the type object at addr (and the bases it has), read once and
 * kept; NULL when unreadable.  A type is an extension's when it, or a base
 * of it, is a static type outside the interpreter's image or has its
 * tp_dealloc outside it (a heap type made by C code: pybind11, PyO3);
 * a class defined in Python deallocates with the interpreter's
 * subtype_dealloc, and its bases decide.
 */
static const struct type_ent *type_info(struct isc_pyremote *r, uint64_t addr)
{
	const struct isc_pylayout *L = &r->L;
	const struct isc_pytypes *T = &r->types;
	if (!addr_ok(addr))
		return NULL;
	size_t j = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 40) % TYPE_SLOTS;
	struct type_ent *slot = NULL;
	for (unsigned probe = 0; probe < 16; probe++, j = (j + 1) % TYPE_SLOTS) {
		struct type_ent *e = &r->cache->t[j];
		if (e->addr == addr)
			return e;
		if (!e->addr) {
			slot = e;
			break;
		}
	}
	static struct type_ent spare; /* the table's neighbourhood is full: not kept */
	struct type_ent *e = slot ? slot : &spare;
	uint32_t offs[] = { L->tp_name, L->tp_flags, L->tp_base, L->tp_dealloc };
	size_t tl = span(offs, 4);
	if (!tl || L->tp_name == ISC_PY_NONE || L->tp_flags == ISC_PY_NONE || L->tp_base == ISC_PY_NONE)
		return NULL;
	struct type_ent x = { addr, 0, { 0 } };
	bool image = r->img_hi > r->img_lo;
	uint64_t t = addr;
	for (unsigned lvl = 0; t && lvl <= TYPE_BASES; lvl++) {
		uint8_t tb[OBJ_MAX];
		char name[64];
		if (rd(r, t, tb, tl)) {
			if (!lvl)
				return NULL;
			break;
		}
		bool heap = (u64_at(tb, tl, L->tp_flags) & L->tpflags_heaptype) != 0;
		uint64_t dealloc = u64_at(tb, tl, L->tp_dealloc);
		if (!lvl) {
			x.flags |= heap ? TI_HEAP : 0;
			x.flags |= t == T->method_descr ? TI_DESCR : 0;
			x.flags |= t == T->capsule ? TI_CAPSULE : 0;
			x.flags |= t == T->function ? TI_PYFUNC : 0;
			x.flags |= t == T->method ? TI_BOUND : 0;
		}
		x.flags |= t == T->cfunction ? TI_CFUNC : 0;
		x.flags |= t == T->module ? TI_MODULE : 0;
		x.flags |= t == T->type ? TI_TYPE : 0;
		if (image && ((!heap && !in_image(r, t)) || (dealloc && !in_image(r, dealloc))))
			x.flags |= TI_EXT;
		if (read_cstr(r, u64_at(tb, tl, L->tp_name), name, sizeof(name)) >= 0 && !strncmp(name, "torch.", 6))
			x.flags |= TI_TORCH;
		uint64_t base = u64_at(tb, tl, L->tp_base);
		if (lvl < TYPE_BASES)
			x.bases[lvl] = base;
		if (base == addr || base == t)
			break; /* a cycle: a lie */
		t = base;
	}
	*e = x;
	return e;
}

/* Whether type t is sub (or derives from it, through the bases kept). */
static bool derives(const struct type_ent *t, uint64_t sub)
{
	if (t->addr == sub)
		return true;
	for (unsigned i = 0; i < TYPE_BASES && t->bases[i]; i++)
		if (t->bases[i] == sub)
			return true;
	return false;
}

/* The ob_type of the object at addr (0 when unreadable). */
static uint64_t type_of(struct isc_pyremote *r, uint64_t addr)
{
	uint64_t t = 0;
	if (!addr_ok(addr) || r->L.ob_type > OBJ_MAX || rd(r, addr + r->L.ob_type, &t, 8))
		return 0;
	return t;
}

/*
 * The depth table of the code object at code (cb: its first cl bytes),
 * computed on first sight and kept; NULL when it cannot be analysed.  *n:
 * its code units.
 */
static const struct isc_py_unit *code_units(struct isc_pyremote *r, uint64_t code, const uint8_t *cb, size_t cl,
					    size_t *n)
{
	const struct isc_pylayout *L = &r->L;
	bool v311 = L->frame_kind == ISC_PY_FRAME_INTERP;
	uint64_t tab = v311 ? u64_at(cb, cl, L->co_exceptiontable) : u64_at(cb, cl, L->co_code);
	int64_t size = v311 ? (int64_t)u64_at(cb, cl, L->var_size) : -1;
	struct depth_ent *e = &r->cache->d[(code >> 4) % DEPTH_SLOTS];
	if (e->tried && e->code == code && e->tab == tab && (size < 0 || e->nunits == (uint64_t)size)) {
		*n = e->nunits;
		return e->units;
	}
	free(e->units);
	*e = (struct depth_ent){ code, 0, tab, NULL, true };
	if (!L->jump_unit || L->co_stacksize == ISC_PY_NONE)
		return NULL;
	uint8_t *bytes = NULL, *exc = NULL;
	size_t nb = 0, ne = 0;
	if (v311) {
		if (size <= 0 || size > DEPTH_UNITS_MAX || !(bytes = malloc((size_t)size * 2)) ||
		    rd(r, code + L->co_code, bytes, (size_t)size * 2))
			goto out;
		nb = (size_t)size * 2;
		if (addr_ok(tab) && read_bytes_obj(r, tab, &exc, &ne))
			goto out;
	} else if (read_bytes_obj(r, tab, &bytes, &nb) || nb / 2 > DEPTH_UNITS_MAX) {
		goto out;
	}
	struct isc_py_unit *units = malloc((nb / 2 ? nb / 2 : 1) * sizeof(*units));
	int32_t ss = (int32_t)u32_at(cb, cl, L->co_stacksize);
	if (units && !isc_py_depths(L, bytes, nb / 2, ne ? exc : NULL, ne, ss > 0 ? (unsigned)ss : 0, units)) {
		e->units = units;
		e->nunits = nb / 2;
	} else {
		free(units);
	}
out:
	free(bytes);
	free(exc);
	*n = e->nunits;
	return e->units;
}

/* Reads k (<= 3) value-stack slots from index lo into v (zeros past the stack). */
static int stack_slots(struct isc_pyremote *r, uint64_t base, int64_t lo, int depth, uint64_t *v, unsigned k)
{
	memset(v, 0, k * 8);
	if (lo < 0 || lo >= depth)
		return -EFAULT;
	unsigned have = (unsigned)(depth - lo) < k ? (unsigned)(depth - lo) : k;
	return rd(r, base + 8 * (uint64_t)lo, v, have * 8);
}

/* The callable at c (self or the first argument: a method's self candidates) into out. */
static void callee_of_call(struct isc_pyremote *r, uint64_t c, uint64_t self, uint64_t arg0, struct isc_pycallee *out,
			   unsigned bound_depth)
{
	const struct isc_pylayout *L = &r->L;
	uint32_t offs[] = { L->ob_type, L->cf_ml, L->cf_self, L->cf_module, L->md_type, L->md_method, L->pm_func, L->pm_self };
	size_t ol = span(offs, 8);
	uint8_t ob[OBJ_MAX];
	out->src = ISC_PY_SRC_UNKNOWN;
	if (!ol || !addr_ok(c) || rd(r, c, ob, ol))
		return;
	const struct type_ent *t = type_info(r, u64_at(ob, ol, L->ob_type));
	if (!t)
		return;
	uint16_t tflags = t->flags; /* t may be the spare entry the next type_info overwrites */
	if (tflags & TI_CFUNC) {
		uint64_t s = u64_at(ob, ol, L->cf_self);
		const struct type_ent *st = s ? type_info(r, type_of(r, s)) : NULL;
		out->src = ISC_PY_SRC_CFUNC;
		out->ml = u64_at(ob, ol, L->cf_ml);
		out->module = u64_at(ob, ol, L->cf_module);
		/* a module function (no self, a module, a capsule: pybind11), a
		 * classmethod (self is a class) or a method of self's type */
		if (!st || (st->flags & (TI_MODULE | TI_CAPSULE)))
			out->type = 0;
		else
			out->type = st->flags & TI_TYPE ? s : st->addr;
		const struct type_ent *own = out->type ? type_info(r, out->type) : NULL;
		out->torch = own && (own->flags & TI_TORCH);
	} else if (tflags & TI_DESCR) {
		uint64_t dtype = u64_at(ob, ol, L->md_type), s = self ? self : arg0;
		const struct type_ent *st = s ? type_info(r, type_of(r, s)) : NULL;
		out->src = ISC_PY_SRC_DESCR;
		out->ml = u64_at(ob, ol, L->md_method);
		out->type = st && derives(st, dtype) ? st->addr : dtype;
		const struct type_ent *own = type_info(r, out->type);
		out->torch = own && (own->flags & TI_TORCH);
	} else if (tflags & TI_PYFUNC) {
		out->src = ISC_PY_SRC_NONE; /* its frame is about to be pushed */
	} else if (tflags & TI_BOUND) {
		/* a bound method (3.9/3.10 call them as they are; later versions
		 * unpack them first): what its __func__ is, called on __self__ */
		if (!bound_depth)
			callee_of_call(r, u64_at(ob, ol, L->pm_func), u64_at(ob, ol, L->pm_self), 0, out, 1);
	} else {
		/* a class, or an object with tp_call: C when it is an extension's */
		const struct type_ent *k = tflags & TI_TYPE ? type_info(r, c) : t;
		out->src = k && (k->flags & TI_EXT) ? ISC_PY_SRC_OBJECT : k ? ISC_PY_SRC_NONE : ISC_PY_SRC_UNKNOWN;
		out->type = k ? k->addr : 0;
		out->torch = k && (k->flags & TI_TORCH);
	}
}

static uint8_t reflect_cmp(uint8_t slot)
{
	switch (slot) {
	case ISC_PY_SLOT_LT: return ISC_PY_SLOT_GT;
	case ISC_PY_SLOT_LE: return ISC_PY_SLOT_GE;
	case ISC_PY_SLOT_GT: return ISC_PY_SLOT_LT;
	case ISC_PY_SLOT_GE: return ISC_PY_SLOT_LE;
	default: return slot;
	}
}

/* An operator's slot, run on operand a (b: the right operand of a binary one, else 0). */
static void callee_of_slot(struct isc_pyremote *r, uint8_t slot, bool compare, uint64_t a, uint64_t b,
			   struct isc_pycallee *out)
{
	/* copies: a full table hands out one spare entry, which the second call would overwrite */
	const struct type_ent *pa = type_info(r, type_of(r, a));
	struct type_ent ea = pa ? *pa : (struct type_ent){ 0 };
	const struct type_ent *ta = pa ? &ea : NULL;
	const struct type_ent *tb = b ? type_info(r, type_of(r, b)) : NULL;
	out->src = ta ? ISC_PY_SRC_NONE : ISC_PY_SRC_UNKNOWN;
	if (!slot || (!ta && !tb)) {
		out->src = ISC_PY_SRC_UNKNOWN;
		return;
	}
	const struct type_ent *t = NULL;
	if (ta && (ta->flags & TI_EXT)) {
		t = ta;
	} else if (tb && (tb->flags & TI_EXT)) {
		t = tb; /* int * tensor: the tensor's reflected slot runs */
		out->reflected = !compare;
		slot = compare ? reflect_cmp(slot) : slot;
	}
	if (!t)
		return;
	out->src = ISC_PY_SRC_SLOT;
	out->slot = slot;
	out->type = t->addr;
	out->torch = (t->flags & TI_TORCH) != 0;
}

/*
 * The callee of the innermost frame (at addr, fb its first fl bytes; code
 * at code, cb its first cl bytes) at code unit unit, whose live opcode is
 * op: out->src NONE when the interpreter runs the instruction itself.
 */
static void read_callee(struct isc_pyremote *r, uint64_t addr, const uint8_t *fb, size_t fl, uint64_t code,
			const uint8_t *cb, size_t cl, int64_t unit, uint8_t op, struct isc_pycallee *out)
{
	const struct isc_pylayout *L = &r->L;
	memset(out, 0, sizeof(*out));
	if (!L->opclass[op])
		return;
	out->src = ISC_PY_SRC_UNKNOWN;
	size_t n = 0;
	const struct isc_py_unit *u = r->types.type ? code_units(r, code, cb, cl, &n) : NULL;
	if (!u || unit < 0 || (uint64_t)unit >= n || u[unit].depth < 0)
		return;
	int d = u[unit].depth;
	uint32_t oparg = u[unit].oparg;
	unsigned base_op = u[unit].op, cf = L->callform[base_op], sf = L->slotform[base_op];
	uint64_t base;
	if (L->frame_kind == ISC_PY_FRAME_INTERP) {
		int32_t nl = (int32_t)u32_at(cb, cl, L->co_nlocalsplus);
		if (nl < 0 || nl > 65536 || L->fr_stack == ISC_PY_NONE)
			return;
		base = addr + L->fr_stack + 8 * (uint64_t)nl;
	} else {
		base = u64_at(fb, fl, L->fr_stack);
	}
	uint64_t v[3];
	int64_t lo;
	if (cf) {
		unsigned form = cf >> 4, k = cf & 15;
		lo = form == ISC_PY_CF_EX ? (int64_t)d - k - (oparg & 1) : (int64_t)d - k - oparg;
		if (stack_slots(r, base, lo, d, v, 3))
			return;
		if (form == ISC_PY_CF_METH)
			callee_of_call(r, v[0] ? v[0] : v[1], v[0] ? v[1] : 0, !v[0] && oparg ? v[2] : 0, out, 0);
		else if (form == ISC_PY_CF_SELF)
			callee_of_call(r, v[0], v[1], !v[1] && oparg ? v[2] : 0, out, 0);
		else if (form == ISC_PY_CF_PLAIN)
			callee_of_call(r, v[0], 0, oparg ? v[1] : 0, out, 0);
		else
			callee_of_call(r, v[0], 0, 0, out, 0);
	} else if (sf) {
		uint8_t slot = L->slotop[base_op];
		bool cmp = sf == ISC_PY_SF_COMPARE;
		if (sf == ISC_PY_SF_BINARY && !slot)
			slot = oparg < 32 ? L->nb_slot[oparg] : 0;
		if (cmp)
			slot = (oparg >> L->cmp_shift) <= 5 ? (uint8_t)(ISC_PY_SLOT_LT + (oparg >> L->cmp_shift)) : 0;
		lo = sf == ISC_PY_SF_BINARY || cmp || sf == ISC_PY_SF_AT2 ? d - 2 : sf == ISC_PY_SF_AT3 ? d - 3 : d - 1;
		if (stack_slots(r, base, lo, d, v, 2))
			return;
		callee_of_slot(r, slot, cmp, v[0], sf == ISC_PY_SF_BINARY || cmp ? v[1] : 0, out);
	}
}

static const char *const slot_names[ISC_PY_NSLOTS] = {
	[ISC_PY_SLOT_ADD] = "add", [ISC_PY_SLOT_AND] = "and", [ISC_PY_SLOT_FLOORDIV] = "floordiv",
	[ISC_PY_SLOT_LSHIFT] = "lshift", [ISC_PY_SLOT_MATMUL] = "matmul", [ISC_PY_SLOT_MUL] = "mul",
	[ISC_PY_SLOT_MOD] = "mod", [ISC_PY_SLOT_OR] = "or", [ISC_PY_SLOT_POW] = "pow", [ISC_PY_SLOT_RSHIFT] = "rshift",
	[ISC_PY_SLOT_SUB] = "sub", [ISC_PY_SLOT_TRUEDIV] = "truediv", [ISC_PY_SLOT_XOR] = "xor",
	[ISC_PY_SLOT_IADD] = "iadd", [ISC_PY_SLOT_IAND] = "iand", [ISC_PY_SLOT_IFLOORDIV] = "ifloordiv",
	[ISC_PY_SLOT_ILSHIFT] = "ilshift", [ISC_PY_SLOT_IMATMUL] = "imatmul", [ISC_PY_SLOT_IMUL] = "imul",
	[ISC_PY_SLOT_IMOD] = "imod", [ISC_PY_SLOT_IOR] = "ior", [ISC_PY_SLOT_IPOW] = "ipow",
	[ISC_PY_SLOT_IRSHIFT] = "irshift", [ISC_PY_SLOT_ISUB] = "isub", [ISC_PY_SLOT_ITRUEDIV] = "itruediv",
	[ISC_PY_SLOT_IXOR] = "ixor", [ISC_PY_SLOT_LT] = "lt", [ISC_PY_SLOT_LE] = "le", [ISC_PY_SLOT_EQ] = "eq",
	[ISC_PY_SLOT_NE] = "ne", [ISC_PY_SLOT_GT] = "gt", [ISC_PY_SLOT_GE] = "ge", [ISC_PY_SLOT_NEG] = "neg",
	[ISC_PY_SLOT_POS] = "pos", [ISC_PY_SLOT_INVERT] = "invert", [ISC_PY_SLOT_GETITEM] = "getitem",
	[ISC_PY_SLOT_SETITEM] = "setitem", [ISC_PY_SLOT_DELITEM] = "delitem", [ISC_PY_SLOT_CONTAINS] = "contains",
};

/*
 * The str value of key "__module__" in the dict at d (a heap type's
 * tp_dict) into buf: its entries scanned for a str key that reads
 * "__module__" (the interned str, remembered once found).  Length or -errno.
 */
static int dict_module(struct isc_pyremote *r, uint64_t d, char *buf, size_t cap)
{
	const struct isc_pylayout *L = &r->L;
	uint8_t db[OBJ_MAX], kb[64];
	uint32_t doffs[] = { L->dict_keys, L->dict_values };
	size_t dl = span(doffs, 2);
	if (!L->dict_format || !dl || rd(r, d, db, dl) || u64_at(db, dl, L->dict_values))
		return -ENOENT; /* a split dict: no type has one */
	uint64_t keys = u64_at(db, dl, L->dict_keys);
	if (L->dk_indices > sizeof(kb) || rd(r, keys, kb, L->dk_indices))
		return -EFAULT;
	uint64_t size, nentries = u64_at(kb, L->dk_indices, L->dk_nentries), ix;
	size_t esz = 24, koff = 8;
	if (L->dict_format == ISC_PY_DICT_311) {
		uint8_t lsz = kb[L->dk_size], lix = kb[L->dk_log2_index_bytes];
		if (lsz > 30 || lix > 33)
			return -EBADMSG;
		size = 1ull << lsz;
		ix = 1ull << lix;
		if (kb[L->dk_kind] == 1) { /* DICT_KEYS_UNICODE: key, value */
			esz = 16;
			koff = 0;
		}
	} else {
		size = u64_at(kb, L->dk_indices, L->dk_size);
		if (size > (1ull << 30))
			return -EBADMSG;
		ix = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffull ? 4 : 8);
	}
	if (nentries > size || nentries > DICT_ENTRIES_MAX)
		return -EBADMSG;
	uint8_t *ents = malloc(nentries * esz + 1);
	int rc = -ENOENT;
	if (!ents)
		return -ENOMEM;
	if (nentries && rd(r, keys + L->dk_indices + ix, ents, nentries * esz)) {
		rc = -EFAULT;
		goto out;
	}
	for (uint64_t i = 0; i < nentries && rc == -ENOENT; i++) {
		uint64_t k = u64_at(ents, nentries * esz, (uint32_t)(i * esz + koff));
		uint64_t v = u64_at(ents, nentries * esz, (uint32_t)(i * esz + koff + 8));
		char kn[16];
		if (!k || !v)
			continue;
		if (r->module_key ? k != r->module_key
				  : isc_pyremote_str(r, k, kn, sizeof(kn)) != 10 || strcmp(kn, "__module__"))
			continue;
		r->module_key = k;
		rc = isc_pyremote_str(r, v, buf, cap);
	}
out:
	free(ents);
	return rc;
}

/* The __qualname__ and __module__ of the type at t, as type objects give them. */
static int type_names(struct isc_pyremote *r, uint64_t t, char *qual, size_t qcap, char *mod, size_t mcap)
{
	const struct isc_pylayout *L = &r->L;
	const struct type_ent *ti = type_info(r, t);
	uint8_t tb[OBJ_MAX];
	uint32_t offs[] = { L->tp_name, L->tp_dict };
	size_t tl = span(offs, 2);
	if (!ti || !tl || rd(r, t, tb, tl))
		return -EFAULT;
	mod[0] = '\0';
	if (ti->flags & TI_HEAP) { /* ht_qualname, and __module__ from the type's dict */
		uint64_t q = 0;
		if (L->ht_qualname == ISC_PY_NONE || rd(r, t + L->ht_qualname, &q, 8) ||
		    isc_pyremote_str(r, q, qual, qcap) < 0)
			return -EBADMSG;
		if (dict_module(r, u64_at(tb, tl, L->tp_dict), mod, mcap) < 0)
			mod[0] = '\0';
		return 0;
	}
	char full[CSTR_MAX + 1];
	if (read_cstr(r, u64_at(tb, tl, L->tp_name), full, sizeof(full)) < 0)
		return -EBADMSG;
	const char *dot = strrchr(full, '.');
	snprintf(qual, qcap, "%s", dot ? dot + 1 : full);
	snprintf(mod, mcap, "%.*s", dot ? (int)(dot - full) : 8, dot ? full : "builtins");
	return 0;
}

int isc_pyremote_callee_name(struct isc_pyremote *r, const struct isc_pycallee *c, uint8_t *kind, bool *torch,
			     char *name, size_t ncap, char *module, size_t mcap)
{
	const struct isc_pylayout *L = &r->L;
	char base[CSTR_MAX + 1], qual[ISC_PY_NAME_MAX + 4];
	*torch = c->torch;
	name[0] = module[0] = '\0';
	if (c->src == ISC_PY_SRC_CFUNC || c->src == ISC_PY_SRC_DESCR) {
		uint8_t mb[32];
		uint32_t offs[] = { L->ml_name, L->ml_flags };
		size_t ml = span(offs, 2);
		if (!ml || ml > sizeof(mb) || !addr_ok(c->ml) || rd(r, c->ml, mb, ml) ||
		    read_cstr(r, u64_at(mb, ml, L->ml_name), base, sizeof(base)) <= 0)
			return -EBADMSG;
		bool is_static = (u32_at(mb, ml, L->ml_flags) & L->meth_static) != 0;
		if (c->src == ISC_PY_SRC_CFUNC && (!c->type || is_static)) {
			/* a module function: `__module__.name` (m_module) */
			*kind = ISC_PY_CALLEE_FUNCTION;
			if (isc_pyremote_str(r, c->module, module, mcap) < 0)
				module[0] = '\0';
			snprintf(name, ncap, "%s%s%s", module, *module ? "." : "", base);
		} else {
			*kind = ISC_PY_CALLEE_METHOD;
			if (type_names(r, c->type, qual, sizeof(qual), module, mcap))
				return -EBADMSG;
			snprintf(name, ncap, "%s.%s", qual, base);
		}
	} else if (c->src == ISC_PY_SRC_SLOT) {
		*kind = ISC_PY_CALLEE_SLOT;
		if (c->slot >= ISC_PY_NSLOTS || !slot_names[c->slot] ||
		    type_names(r, c->type, qual, sizeof(qual), module, mcap))
			return -EBADMSG;
		snprintf(name, ncap, "%s.__%s%s__", qual, c->reflected ? "r" : "",
			 c->reflected && slot_names[c->slot][0] == 'i' ? slot_names[c->slot] + 1 : slot_names[c->slot]);
	} else if (c->src == ISC_PY_SRC_OBJECT) {
		*kind = ISC_PY_CALLEE_OBJECT;
		if (type_names(r, c->type, qual, sizeof(qual), module, mcap))
			return -EBADMSG;
		snprintf(name, ncap, "%s%s%s", module, *module ? "." : "", qual);
	} else {
		return -EINVAL;
	}
	*torch = *torch || !strncmp(module, "torch", 5);
	return 0;
}

/* ---- the walk ------------------------------------------------------------- */

/*
 * One frame at addr into f, its caller into *prev: 1, 0 for a shim frame
 * (skipped), negative when unreadable.  The current instruction's class
 * is read for the leaf only (the sample's flags describe the innermost
 * frame), one read less for every other frame.
 */
static int read_frame(struct isc_pyremote *r, uint64_t addr, struct isc_pyframe *f, uint64_t *prev,
		      struct isc_pycallee *callee)
{
	const struct isc_pylayout *L = &r->L;
	bool v311 = L->frame_kind == ISC_PY_FRAME_INTERP, leaf = callee != NULL;
	uint8_t fb[OBJ_MAX], cb[OBJ_MAX];
	uint32_t fo[] = { L->fr_previous, L->fr_code, L->fr_instr, L->fr_owner, v311 ? ISC_PY_NONE : L->fr_stack };
	uint32_t co[] = { L->co_filename, L->co_name, L->co_qualname, L->co_firstlineno, L->co_linetable,
			  !v311 ? L->co_code : ISC_PY_NONE, L->ob_type,
			  leaf ? L->co_stacksize : ISC_PY_NONE, leaf && v311 ? L->co_nlocalsplus : ISC_PY_NONE,
			  leaf && v311 ? L->co_exceptiontable : ISC_PY_NONE, leaf && v311 ? L->var_size : ISC_PY_NONE };
	size_t fl = span(fo, 5), cl = span(co, 11);
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
	if (leaf && opaddr && !rd(r, opaddr, &op, 1)) {
		f->opclass = L->opclass[op];
		/* the code unit of the instruction: off counts bytes before 3.11 */
		read_callee(r, addr, fb, fl, code, cb, cl, v311 ? off : off / 2, op, callee);
	}
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
		int rc = read_frame(r, frame, &s->frames[s->depth], &prev, s->depth == 0 ? &s->callee : NULL);
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
			memset(&s->callee, 0, sizeof(s->callee));
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
