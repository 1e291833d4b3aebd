/*
 * test_pyframe_read.c - the CUDA agent's in-process reader of Python
 * strings (tools/iscope-record/cuda/pyframe.c, isc_cuda_self_read): a
 * read that runs from a mapped page into an unmapped one (the reader
 * takes a str's largest header before it knows the kind, past the end of
 * a short ASCII str at the end of an arena) must not fault in the
 * workload: the bytes of the mapped page come back, the rest as zeros.
 * TAP.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "pyframe.h"
#include "../unit/tap.h"

int main(void)
{
	uint8_t buf[64], want[64];
	uint8_t *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		ok(false, "mmap");
		return tap_done();
	}
	for (int i = 0; i < 3 * 4096; i++)
		m[i] = (uint8_t)(i * 7 + 1);
	/* within a page */
	ok(isc_cuda_self_read(NULL, (uint64_t)(uintptr_t)(m + 100), buf, 56) == 0 && !memcmp(buf, m + 100, 56),
	   "a read within a page: the bytes");
	/* across two mapped pages */
	ok(isc_cuda_self_read(NULL, (uint64_t)(uintptr_t)(m + 4096 - 20), buf, 56) == 0 && !memcmp(buf, m + 4096 - 20, 56),
	   "a read across two mapped pages: the bytes");
	/* the last 8 bytes of a page, the next one unmapped: 8 bytes, then zeros */
	munmap(m + 2 * 4096, 4096);
	memcpy(want, m + 2 * 4096 - 8, 8);
	memset(want + 8, 0, 48);
	memset(buf, 0xAA, sizeof(buf));
	ok(isc_cuda_self_read(NULL, (uint64_t)(uintptr_t)(m + 2 * 4096 - 8), buf, 56) == 0 && !memcmp(buf, want, 56),
	   "a read from the last 8 bytes of a page into an unmapped one: those bytes, then zeros, no fault");
	/* the next page readable no more (PROT_NONE, a guard page) */
	mprotect(m + 4096, 4096, PROT_NONE);
	memcpy(want, m + 4096 - 16, 16);
	memset(want + 16, 0, 40);
	ok(isc_cuda_self_read(NULL, (uint64_t)(uintptr_t)(m + 4096 - 16), buf, 56) == 0 && !memcmp(buf, want, 56),
	   "a read into a PROT_NONE page: the readable bytes, then zeros, no fault");
	return tap_done();
}
