/*
 * pyframe.c - the CUDA agent's view of the Python frame that makes a CUDA
 * call, read in the process, on the calling thread, at the call (issue 29:
 * in the sampled Python mode no call spans say which Python line launched
 * a kernel).
 *
 *   PyGILState_GetThisThreadState()          this thread's PyThreadState
 *     -> frame (3.9/3.10) | cframe->current_frame (3.11/3.12) | current_frame (3.13)
 *        -> the innermost frame with a code object (3.12+: C-stack shim frames skipped)
 *           -> f_code / f_executable, and f_lasti / prev_instr / instr_ptr: an offset
 *
 * A pointer walk and one C-API call that reads a thread-local (no Python
 * code runs, the GIL is neither taken nor needed: the frames are this
 * thread's own, and they do not change while it is inside the CUDA call).
 * The offsets come from the layouts the out-of-process sampler uses
 * (lib/record/pylayout.h, generated from each CPython's own headers),
 * chosen by the running interpreter's version (Py_GetVersion); the code
 * object is checked against PyCode_Type before anything of it is read,
 * and a thread whose walk fails gives no frame.  Why not have the Python
 * agent publish the offsets and its threads' states in shared memory: it
 * is built once for every CPython (limited API) and knows no internal
 * layout either; the layouts exist once, here and in the sampler, and the
 * thread state of the calling thread is one call away, also for threads
 * the Python agent never saw.
 *
 * Names and lines (isc_cuda_py_describe) are read once per code object
 * and offset, by the caller's cache: the code object is alive then (its
 * frame is running); strings through pyremote.c's reader with a memory
 * copy, through process_vm_readv across a page (isc_cuda_self_read).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pyframe.h"
#include "record/pyremote.h" /* struct isc_pylayout, isc_pylayout_find, isc_py_addr2line, isc_pyremote_str */

static struct {
	const struct isc_pylayout *L;
	void *(*tstate)(void);
	uint64_t code_type;
	struct isc_pyremote r; /* for its string reader */
} P;

/*
 * In-process reads for pyremote.c's string reader: a plain copy within
 * the page of addr (mapped: a live object starts there).  The reader
 * takes a str's largest header (a compact non-ASCII one) before it knows
 * the kind, which runs past the end of a short ASCII str: across a page,
 * the copy goes through process_vm_readv on this process, which stops at
 * an unmapped page instead of faulting in the workload; what lies past
 * it reads as zeros (for an ASCII str those bytes are not looked at).
 * Where the call is refused (a seccomp filter) a read across a page
 * fails: no line rather than a crash.
 */
int isc_cuda_self_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (!len)
		return 0;
	if ((addr & ~(uint64_t)4095) == ((addr + len - 1) & ~(uint64_t)4095)) {
		memcpy(dst, (const void *)(uintptr_t)addr, len);
		return 0;
	}
	/* two remote pieces, the page of addr and the rest: a transfer stops between pieces, not inside one */
	size_t first = 4096 - (size_t)(addr & 4095);
	struct iovec l = { dst, len }, r[2] = { { (void *)(uintptr_t)addr, first },
						 { (void *)(uintptr_t)(addr + first), len - first } };
	ssize_t n = process_vm_readv(getpid(), &l, 1, r, 2, 0);
	if (n <= 0)
		return -EFAULT;
	memset((uint8_t *)dst + n, 0, len - (size_t)n);
	return 0;
}

static uint64_t ld64(uint64_t a)
{
	uint64_t v;
	memcpy(&v, (const void *)(uintptr_t)a, 8);
	return v;
}

static bool plausible(uint64_t a)
{
	return a >= 4096 && a < (1ull << 47) && !(a & 7);
}

int isc_cuda_py_init(char *why, size_t len)
{
	const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	void *(*ts)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	unsigned major = 0, minor = 0, patch = 0;
	if (!ver || !ts || !code_type) {
		snprintf(why, len, "no CPython in the process");
		return -1;
	}
	if (sscanf(ver(), "%u.%u.%u", &major, &minor, &patch) < 2 || !(P.L = isc_pylayout_find(major, minor, patch))) {
		snprintf(why, len, "CPython %u.%u: this build has no layout for it", major, minor);
		return -1;
	}
	if (isc_pyremote_init(&P.r, P.L, isc_cuda_self_read, NULL, 0)) {
		P.L = NULL;
		snprintf(why, len, "out of memory");
		return -1;
	}
	P.tstate = ts;
	P.code_type = (uint64_t)(uintptr_t)code_type;
	P.r.code_type = P.code_type;
	return 0;
}

bool isc_cuda_py_frame(uint64_t *code, int64_t *off)
{
	const struct isc_pylayout *L = P.L;
	if (!L)
		return false;
	uint64_t ts = (uint64_t)(uintptr_t)P.tstate(), f;
	if (!plausible(ts) || !plausible(f = ld64(ts + L->ts_frame)))
		return false;
	if (L->cf_current_frame != ISC_PY_NONE && !plausible(f = ld64(f + L->cf_current_frame)))
		return false;
	for (unsigned depth = 0; plausible(f) && depth < 64; depth++, f = ld64(f + L->fr_previous)) {
		if (L->fr_owner != ISC_PY_NONE && L->owner_cstack >= 0 &&
		    *(const uint8_t *)(uintptr_t)(f + L->fr_owner) == (uint8_t)L->owner_cstack)
			continue; /* a C-stack shim frame (3.12+) */
		uint64_t c = ld64(f + L->fr_code);
		if (!plausible(c) || ld64(c + L->ob_type) != P.code_type)
			return false;
		*code = c;
		if (L->frame_kind == ISC_PY_FRAME_OBJECT) {
			int32_t lasti;
			memcpy(&lasti, (const void *)(uintptr_t)(f + L->fr_instr), 4);
			*off = L->line_format == ISC_PY_LINES_310 ? (int64_t)lasti * 2 : lasti;
		} else {
			uint64_t ip = ld64(f + L->fr_instr), base = c + L->co_code;
			*off = ip >= base && ip - base < (1u << 26) ? (int64_t)((ip - base) / 2) : -1;
		}
		return true;
	}
	return false;
}

bool isc_cuda_py_describe(uint64_t code, int64_t off, char *name, size_t nlen, char *file, size_t flen,
			  uint32_t *line)
{
	const struct isc_pylayout *L = P.L;
	if (!L || !plausible(code))
		return false;
	uint64_t qn = L->co_qualname != ISC_PY_NONE ? ld64(code + L->co_qualname) : 0;
	if (!plausible(qn) || isc_pyremote_str(&P.r, qn, name, nlen) < 0)
		if (isc_pyremote_str(&P.r, ld64(code + L->co_name), name, nlen) < 0)
			return false;
	if (isc_pyremote_str(&P.r, ld64(code + L->co_filename), file, flen) < 0)
		file[0] = '\0';
	int32_t first;
	memcpy(&first, (const void *)(uintptr_t)(code + L->co_firstlineno), 4);
	*line = first > 0 ? (uint32_t)first : 0;
	uint64_t tab = ld64(code + L->co_linetable);
	if (plausible(tab)) {
		int64_t n;
		memcpy(&n, (const void *)(uintptr_t)(tab + L->var_size), 8);
		if (n > 0 && n <= (int64_t)ISC_PY_LINETABLE_MAX) {
			uint32_t l = isc_py_addr2line(L->line_format, (const uint8_t *)(uintptr_t)(tab + L->bytes_sval),
						      (size_t)n, *line, off);
			if (l)
				*line = l;
		}
	}
	return true;
}
