/*
 * fuzz_pymem.c - any bytes as the memory of a CPython process whose stacks
 * the sampler walks (lib/record/pyremote.c): the input is the address
 * space at IMG_BASE (zero-padded to IMG_SIZE), walked with the synthetic
 * layout of tests/unit/pymem_image.h and with every real layout the build
 * knows, names and files read for every frame found, and the innermost
 * frame's callee (its code's stack depths, the value stack, types, a
 * type's dict) named.  Seeds: the unit test's fixtures and variants
 * (tests/fuzz/corpus/pymem, README there).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../unit/pymem_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct img *im, const struct isc_pylayout *L, uint64_t runtime)
{
	static struct isc_pystack st[8];
	struct isc_pyremote r;
	unsigned n = 0;
	char buf[ISC_PY_NAME_MAX + 8];
	if (isc_pyremote_init(&r, L, img_read, im, runtime))
		return;
	r.code_type = IMG_BASE + A_CODETYPE;
	r.str_type = IMG_BASE + A_STRTYPE;
	r.bytes_type = IMG_BASE + A_BYTESTYPE;
	img_callee_remote(&r); /* callees read too: value stacks, types, dicts */
	uint32_t hex;
	if (L == &img_layout)
		isc_pyremote_debug_offsets(&r, &hex);
	isc_pyremote_sample(&r, st, 8, &n);
	for (unsigned i = 0; i < n; i++) {
		for (uint32_t k = 0; k < st[i].depth; k++) {
			isc_pyremote_str(&r, st[i].frames[k].name, buf, sizeof(buf));
			isc_pyremote_str(&r, st[i].frames[k].file, buf, sizeof(buf));
		}
		uint8_t kind;
		bool torch;
		char mod[ISC_PY_NAME_MAX + 8];
		if (st[i].callee.src != ISC_PY_SRC_NONE && st[i].callee.src != ISC_PY_SRC_UNKNOWN)
			isc_pyremote_callee_name(&r, &st[i].callee, &kind, &torch, buf, sizeof(buf), mod, sizeof(mod));
	}
	isc_pyremote_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t mem[IMG_SIZE];
	struct img im = { mem, IMG_SIZE, 0 };
	memset(mem, 0, sizeof(mem));
	memcpy(mem, data, size < IMG_SIZE ? size : IMG_SIZE);
	walk(&im, &img_layout, IMG_BASE + A_RUNTIME);
	for (size_t i = 0; i < isc_npylayouts; i++)
		walk(&im, &isc_pylayouts[i], IMG_BASE + A_RUNTIME);
	return 0;
}
