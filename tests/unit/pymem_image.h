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
#define IMG_SIZE 65536u

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

static inline int img_remote(struct isc_pyremote *r, struct img *im)
{
	int rc = isc_pyremote_init(r, &img_layout, img_read, im, IMG_BASE + A_RUNTIME);
	r->code_type = IMG_BASE + A_CODETYPE;
	r->str_type = IMG_BASE + A_STRTYPE;
	r->bytes_type = IMG_BASE + A_BYTESTYPE;
	return rc;
}

#endif
