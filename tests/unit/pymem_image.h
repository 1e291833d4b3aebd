/*
 * pymem_image.h - a fake CPython address space for the stack walker
 * (lib/record/pyremote.c), shared by tests/unit/test_pyremote.c and
 * tests/fuzz/fuzz_pymem.c.
 *
 * The layout is synthetic (not any real CPython's): the walker must follow
 * whatever offsets it is given, and the tests must not depend on which
 * Pythons the build machine has.  The image is a flat buffer at IMG_BASE;
 * reads outside it fail with -EFAULT, like unmapped memory.
 */
#ifndef PYMEM_IMAGE_H
#define PYMEM_IMAGE_H

#include <errno.h>
#include <string.h>

#include "pyremote.h"

#define IMG_BASE 0x100000ull
#define IMG_SIZE 65536u /* offsets above 0x8000: an extension's memory (img_callee) */

/* Addresses of the fixture's objects (offsets into the image). */
enum {
	A_RUNTIME = 0x0000, A_INTERP = 0x0100, A_TS1 = 0x0200, A_TS2 = 0x0300,
	A_FR1 = 0x0400, A_FR2 = 0x0480, A_FR3 = 0x0500, A_SHIM = 0x0580,
	A_CODE1 = 0x1000, A_CODE2 = 0x1400, A_TAB = 0x2000,
	A_S_F = 0x3000, A_S_G = 0x3100, A_S_FILE = 0x3200, A_S_UNI = 0x3300,
	A_CODETYPE = 0x4000, A_STRTYPE = 0x4100, A_BYTESTYPE = 0x4200,
};

static const struct isc_pylayout img_layout = {
	.hexversion = 0x030B00F0u, .version = "synthetic",
	.rt_interp_head = 16, .is_next = 0, .is_threads_head = 8,
	.ts_next = 0, .ts_interp = 8, .ts_thread_id = 16, .ts_native_thread_id = 24, .ts_frame = 32,
	.cf_current_frame = ISC_PY_NONE, .frame_kind = ISC_PY_FRAME_INTERP,
	.fr_previous = 0, .fr_code = 8, .fr_instr = 16, .fr_owner = 24, .owner_cstack = 3,
	.co_code = 128, .co_qualname = 48, .co_linetable = 56, .line_format = ISC_PY_LINES_311,
	.co_filename = 32, .co_name = 40, .co_firstlineno = 64,
	.ob_type = 8, .var_size = 16, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
	.str_kind_bit = 2, .str_compact_bit = 5, .str_ascii_bit = 6,
	.opclass = { [171] = ISC_PY_OP_CALL, [122] = ISC_PY_OP_SLOT },
	/* bytecode: 10 pushes one, 171 a call (3.13's layout: callable, self
	 * or NULL, arguments), 122 a binary operator, 83 returns; any other
	 * opcode is a no-op */
	.co_stacksize = 76, .co_nlocalsplus = 72, .co_exceptiontable = 80, .fr_stack = 64,
	.jump_unit = 2, .extended_arg = 144, .cmp_shift = 0,
	.deopt = { [1] = 1, [10] = 10, [83] = 83, [122] = 122, [144] = 144, [171] = 171 },
	.flow = { [83] = ISC_PY_FLOW_END },
	.se_form = { [171] = ISC_PY_SE_ARG },
	.se_base = { [10] = 1, [83] = -1, [122] = -1, [171] = -1 },
	.se_jbase = { [10] = 1, [83] = -1, [122] = -1, [171] = -1 },
	.se_mul = { [171] = -1 },
	.callform = { [171] = ISC_PY_CF_SELF << 4 | 2 },
	.slotform = { [122] = ISC_PY_SF_BINARY },
	.nb_slot = { [0] = ISC_PY_SLOT_ADD, [4] = ISC_PY_SLOT_MATMUL },
	.cf_ml = 16, .cf_self = 24, .cf_module = 32, .ml_name = 0, .ml_flags = 16, .meth_static = 0x20,
	.md_type = 16, .md_method = 40, .pm_func = 16, .pm_self = 24,
	.tp_name = 24, .tp_flags = 32, .tp_base = 40, .tp_dealloc = 48, .tp_dict = 56, .ht_qualname = 64,
	.tpflags_heaptype = 1u << 9,
	.dict_format = ISC_PY_DICT_311, .dict_keys = 32, .dict_values = 40,
	.dk_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10, .dk_nentries = 16, .dk_indices = 32,
};

struct img {
	uint8_t *m;
	size_t size;
	int fail_errno; /* when set, every read fails with it (the process is gone) */
};

static inline int img_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct img *im = ctx;
	if (im->fail_errno)
		return -im->fail_errno;
	if (addr < IMG_BASE || addr - IMG_BASE > im->size || len > im->size - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(dst, im->m + (addr - IMG_BASE), len);
	return 0;
}

static inline void put64(uint8_t *m, uint32_t at, uint64_t v)
{
	memcpy(m + at, &v, 8);
}

static inline void put32(uint8_t *m, uint32_t at, uint32_t v)
{
	memcpy(m + at, &v, 4);
}

/* A compact str at at: ascii (kind 1) or UCS-2 (kind 2) of n characters. */
static inline void put_str(uint8_t *m, uint32_t at, const uint16_t *chars, unsigned n, bool ascii)
{
	put64(m, at + 8, IMG_BASE + A_STRTYPE);
	put64(m, at + 16, n);
	unsigned kind = ascii ? 1 : 2;
	put32(m, at + 32, kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0));
	uint32_t data = at + (ascii ? 40 : 56);
	for (unsigned i = 0; i < n; i++) {
		if (ascii)
			m[data + i] = (uint8_t)chars[i];
		else
			memcpy(m + data + 2 * i, &chars[i], 2);
	}
}

static inline void put_ascii(uint8_t *m, uint32_t at, const char *s)
{
	uint16_t c[64];
	unsigned n = 0;
	for (; s[n] && n < 64; n++)
		c[n] = (uint8_t)s[n];
	put_str(m, at, c, n, true);
}

/* A code object at at; its bytecode (code units) at at + 128. */
static inline void put_code(uint8_t *m, uint32_t at, uint32_t name, uint32_t file, uint32_t first, uint32_t tab)
{
	put64(m, at + 8, IMG_BASE + A_CODETYPE);
	put64(m, at + 32, IMG_BASE + file);
	put64(m, at + 40, IMG_BASE + name);
	put64(m, at + 48, IMG_BASE + name);
	put64(m, at + 56, IMG_BASE + tab);
	put32(m, at + 64, first);
	for (unsigned i = 0; i < 16; i++)
		m[at + 128 + 2 * i] = 1; /* an opcode of class interp */
	m[at + 128 + 2 * 3] = 171;  /* unit 3: a call */
}

static inline void put_frame(uint8_t *m, uint32_t at, uint32_t prev, uint32_t code, unsigned unit, uint8_t owner)
{
	put64(m, at, prev ? IMG_BASE + prev : 0);
	put64(m, at + 8, IMG_BASE + code);
	put64(m, at + 16, IMG_BASE + code + 128 + 2 * unit);
	m[at + 24] = owner;
}

/*
 * The fixture: one interpreter, two threads (tids 101 and 102).  Thread 101:
 * f (code1, line table: units 0-1 line 10, 2-3 line 11, 4+ line 12) at unit 3
 * (a call) <- a C-stack shim frame (skipped) <- g (code2, UCS-2 name "gé",
 * same table, first line 20) at unit 0.  Thread 102: g at unit 4.
 */
static inline void img_build(uint8_t *m)
{
	memset(m, 0, IMG_SIZE);
	put64(m, A_RUNTIME + 16, IMG_BASE + A_INTERP);
	put64(m, A_INTERP + 8, IMG_BASE + A_TS1);
	put64(m, A_TS1, IMG_BASE + A_TS2);
	put64(m, A_TS1 + 8, IMG_BASE + A_INTERP);
	put64(m, A_TS1 + 16, 0x7f0000001000ull);
	put64(m, A_TS1 + 24, 101);
	put64(m, A_TS1 + 32, IMG_BASE + A_FR1);
	put64(m, A_TS2 + 8, IMG_BASE + A_INTERP);
	put64(m, A_TS2 + 24, 102);
	put64(m, A_TS2 + 32, IMG_BASE + A_FR3);
	put_frame(m, A_FR1, A_SHIM, A_CODE1, 3, 0);
	put_frame(m, A_SHIM, A_FR2, A_CODE1, 0, 3);
	put_frame(m, A_FR2, 0, A_CODE2, 0, 0);
	put_frame(m, A_FR3, 0, A_CODE2, 4, 0);
	/* bytes object: 3.11 table, entries (code 13: no columns, line delta svarint)
	 * of 2 units each: +8 (10 from first 2? no: from first line) */
	uint8_t tab[] = { 0x80 | 13 << 3 | 1, 0 /* delta 0: line = first */, 0x80 | 13 << 3 | 1, 2 /* +1 */,
			  0x80 | 13 << 3 | 7, 2 /* +1 */ };
	put64(m, A_TAB + 8, IMG_BASE + A_BYTESTYPE);
	put64(m, A_TAB + 16, sizeof(tab));
	memcpy(m + A_TAB + 32, tab, sizeof(tab));
	put_code(m, A_CODE1, A_S_F, A_S_FILE, 10, A_TAB);
	put_code(m, A_CODE2, A_S_UNI, A_S_FILE, 20, A_TAB);
	put_ascii(m, A_S_F, "f");
	put_ascii(m, A_S_G, "g");
	put_ascii(m, A_S_FILE, "/src/model.py");
	uint16_t ge[2] = { 'g', 0xE9 };
	put_str(m, A_S_UNI, ge, 2, false);
}

/*
 * Callees (img_callee): the interpreter's image is IMG_BASE + [0, 0x8000),
 * an extension's above.  Core types (static, in the image): builtin
 * function, method descriptor, module, capsule, type, function, method,
 * int, object.  The extension: torch._C._TensorBase (static), Tensor (a
 * heap type deriving from it, __module__ "torch" in its dict).
 */
enum {
	A_T_CFUNC = 0x5000, A_T_DESCR = 0x5080, A_T_MODULE = 0x5100, A_T_CAPSULE = 0x5180, A_T_TYPE = 0x5200,
	A_T_FUNC = 0x5280, A_T_METHOD = 0x5300, A_T_INT = 0x5380, A_T_OBJECT = 0x5400, A_CSTR = 0x5800,
	A_CODE3 = 0x5C00, A_MODOBJ = 0x5E00, A_INT1 = 0x5E40, A_INT2 = 0x5E60, A_FUNC = 0x5E80, A_ML1 = 0x5F00,
	A_S_TIME = 0x6100, A_PYFUNC = 0x6200, A_BOUND = 0x6240, A_DEALLOC_CORE = 0x6800,
	A_EXT = 0x8000, A_T_TBASE = 0x8000, A_T_TENSOR = 0x8100, A_S_TENSOR = 0x8300, A_DICT = 0x8400,
	A_KEYS = 0x8440, A_S_DOC = 0x8500, A_S_MODKEY = 0x8540, A_S_TORCH = 0x8580, A_TEN1 = 0x8600, A_TEN2 = 0x8620,
	A_DESCR = 0x8700, A_ML2 = 0x8780, A_DEALLOC_EXT = 0x9000,
};

/* A type object at at named name (a C string written at cstr), static unless heap. */
static inline void put_type(uint8_t *m, uint32_t at, const char *name, uint32_t cstr, uint32_t base, uint32_t dealloc,
			    bool heap)
{
	put64(m, at + 8, IMG_BASE + A_T_TYPE);
	memcpy(m + cstr, name, strlen(name) + 1);
	put64(m, at + 24, IMG_BASE + cstr);
	put64(m, at + 32, heap ? 1u << 9 : 0);
	put64(m, at + 40, base ? IMG_BASE + base : 0);
	put64(m, at + 48, IMG_BASE + dealloc);
}

enum img_callee_case {
	IMG_CALL_FUNCTION, /* time.sleep(1): a builtin function of a module */
	IMG_CALL_METHOD,   /* t.matmul(u): a method descriptor of _TensorBase, self a Tensor */
	IMG_CALL_PYTHON,   /* f(1): a Python function (its frame is about to be pushed) */
	IMG_CALL_BOUND,    /* b(1): a bound method whose __func__ is time.sleep (3.9/3.10 call them whole) */
	IMG_OP_TENSORS,    /* t @ u */
	IMG_OP_INTS,       /* 1 + 2 */
	IMG_OP_REFLECTED,  /* 1 + t: the tensor's reflected slot */
};

/*
 * The fixture (img_build first) with thread 101's innermost frame in a
 * code object (A_CODE3) whose value stack holds the operands of case c:
 * calls at unit 3 of [push, push, push, call 1, return] (depth 3: the
 * callable, its self or NULL, one argument); operators at unit 2 of
 * [push, push, binary, return] (depth 2: the operands).
 */
static inline void img_callee(uint8_t *m, enum img_callee_case c)
{
	uint32_t cs = A_CSTR;
	const struct { uint32_t at; const char *name; } types[] = {
		{ A_T_CFUNC, "builtin_function_or_method" }, { A_T_DESCR, "method_descriptor" }, { A_T_MODULE, "module" },
		{ A_T_CAPSULE, "PyCapsule" }, { A_T_TYPE, "type" }, { A_T_FUNC, "function" }, { A_T_METHOD, "method" },
		{ A_T_INT, "int" }, { A_T_OBJECT, "object" },
	};
	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		put_type(m, types[i].at, types[i].name, cs, types[i].at == A_T_OBJECT ? 0 : A_T_OBJECT, A_DEALLOC_CORE, false);
		cs += 32;
	}
	put_type(m, A_T_TBASE, "torch._C._TensorBase", A_T_TBASE + 0x80, A_T_OBJECT, A_DEALLOC_EXT, false);
	put_type(m, A_T_TENSOR, "Tensor", A_T_TENSOR + 0x80, A_T_TBASE, A_DEALLOC_CORE, true);
	put_ascii(m, A_S_TENSOR, "Tensor");
	put64(m, A_T_TENSOR + 64, IMG_BASE + A_S_TENSOR);
	put64(m, A_T_TENSOR + 56, IMG_BASE + A_DICT);
	/* Tensor's dict: a unicode-keys table of 8 slots, 2 entries */
	put64(m, A_DICT + 32, IMG_BASE + A_KEYS);
	m[A_KEYS + 8] = 3;
	m[A_KEYS + 9] = 3;
	m[A_KEYS + 10] = 1;
	put64(m, A_KEYS + 16, 2);
	put_ascii(m, A_S_DOC, "__doc__");
	put_ascii(m, A_S_MODKEY, "__module__");
	put_ascii(m, A_S_TORCH, "torch");
	put64(m, A_KEYS + 40, IMG_BASE + A_S_DOC);
	put64(m, A_KEYS + 48, IMG_BASE + A_S_DOC);
	put64(m, A_KEYS + 56, IMG_BASE + A_S_MODKEY);
	put64(m, A_KEYS + 64, IMG_BASE + A_S_TORCH);
	/* objects */
	put64(m, A_MODOBJ + 8, IMG_BASE + A_T_MODULE);
	put64(m, A_INT1 + 8, IMG_BASE + A_T_INT);
	put64(m, A_INT2 + 8, IMG_BASE + A_T_INT);
	put64(m, A_TEN1 + 8, IMG_BASE + A_T_TENSOR);
	put64(m, A_TEN2 + 8, IMG_BASE + A_T_TENSOR);
	put64(m, A_PYFUNC + 8, IMG_BASE + A_T_FUNC);
	put64(m, A_BOUND + 8, IMG_BASE + A_T_METHOD);
	put64(m, A_BOUND + 16, IMG_BASE + A_FUNC);
	put64(m, A_BOUND + 24, IMG_BASE + A_TEN1);
	put64(m, A_FUNC + 8, IMG_BASE + A_T_CFUNC);
	put64(m, A_FUNC + 16, IMG_BASE + A_ML1);
	put64(m, A_FUNC + 24, IMG_BASE + A_MODOBJ);
	put64(m, A_FUNC + 32, IMG_BASE + A_S_TIME);
	memcpy(m + A_ML1 + 0x40, "sleep", 6);
	put64(m, A_ML1, IMG_BASE + A_ML1 + 0x40);
	put32(m, A_ML1 + 16, 0x8);
	put_ascii(m, A_S_TIME, "time");
	put64(m, A_DESCR + 8, IMG_BASE + A_T_DESCR);
	put64(m, A_DESCR + 16, IMG_BASE + A_T_TBASE);
	put64(m, A_DESCR + 40, IMG_BASE + A_ML2);
	memcpy(m + A_ML2 + 0x40, "matmul", 7);
	put64(m, A_ML2, IMG_BASE + A_ML2 + 0x40);
	put32(m, A_ML2 + 16, 0x8);
	/* the code object and the frame */
	bool call = c <= IMG_CALL_BOUND;
	static const uint8_t callcode[] = { 10, 0, 10, 0, 10, 0, 171, 1, 83, 0 }, opcode[] = { 10, 0, 10, 0, 122, 4, 83, 0 };
	put_code(m, A_CODE3, A_S_F, A_S_FILE, 30, A_TAB);
	memset(m + A_CODE3 + 128, 0, 32);
	memcpy(m + A_CODE3 + 128, call ? callcode : opcode, call ? sizeof(callcode) : sizeof(opcode));
	if (c == IMG_OP_INTS || c == IMG_OP_REFLECTED)
		m[A_CODE3 + 128 + 5] = 0; /* + */
	put64(m, A_CODE3 + 16, call ? 5 : 4);
	put32(m, A_CODE3 + 76, 4);
	put_frame(m, A_FR1, A_SHIM, A_CODE3, call ? 3 : 2, 0);
	uint64_t s[3] = { 0, 0, 0 };
	switch (c) {
	case IMG_CALL_FUNCTION: s[0] = A_FUNC; s[2] = A_INT1; break;
	case IMG_CALL_METHOD: s[0] = A_DESCR; s[1] = A_TEN1; s[2] = A_TEN2; break;
	case IMG_CALL_PYTHON: s[0] = A_PYFUNC; s[2] = A_INT1; break;
	case IMG_CALL_BOUND: s[0] = A_BOUND; s[2] = A_INT1; break;
	case IMG_OP_TENSORS: s[0] = A_TEN1; s[1] = A_TEN2; break;
	case IMG_OP_INTS: s[0] = A_INT1; s[1] = A_INT2; break;
	case IMG_OP_REFLECTED: s[0] = A_INT1; s[1] = A_TEN1; break;
	}
	for (int i = 0; i < 3; i++)
		put64(m, A_FR1 + 64 + 8 * (uint32_t)i, s[i] ? IMG_BASE + s[i] : 0);
}

/* The interpreter's types and image for callees (the fixture's). */
static inline void img_callee_remote(struct isc_pyremote *r)
{
	r->types = (struct isc_pytypes){ IMG_BASE + A_T_CFUNC, IMG_BASE + A_T_DESCR, IMG_BASE + A_T_MODULE,
					 IMG_BASE + A_T_CAPSULE, IMG_BASE + A_T_TYPE, IMG_BASE + A_T_FUNC,
					 IMG_BASE + A_T_METHOD };
	r->img_lo = IMG_BASE;
	r->img_hi = IMG_BASE + A_EXT;
}

static inline int img_remote(struct isc_pyremote *r, struct img *im)
{
	int rc = isc_pyremote_init(r, &img_layout, img_read, im, IMG_BASE + A_RUNTIME);
	r->code_type = IMG_BASE + A_CODETYPE;
	r->str_type = IMG_BASE + A_STRTYPE;
	r->bytes_type = IMG_BASE + A_BYTESTYPE;
	return rc;
}

#endif
