/*
 * classify.c - what a mixed stack's native frames say about the Python
 * code above them (unwind.h): the torch op they run, and whether the CPU
 * time is the interpreter's, a torch op's or other C code's.
 *
 *   <module> (run.py:3)          Python frames: where
 *   forward (m.py:12)
 *   ---------------------------  the native part: frames inside the
 *   THPVariable_matmul            innermost Python frame
 *   at::_ops::matmul::call   -->  op "aten::matmul" (the outermost
 *   at::_ops::mm::call            at::_ops frame; the innermost is mm)
 *   sgemm_kernel_ZEN         -->  class torch: a torch library's frame
 *                                 in the native part
 */
#include <stdio.h>
#include <string.h>

#include "unwind.h"

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "";
}

bool isc_native_torch_lib(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "libtorch", 8) || !strncmp(b, "libc10", 6) || (path && strstr(path, "/torch/"));
}

/* The C library the interpreter calls itself (malloc, memcpy, a system call's wrapper). */
static bool libc_lib(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "libpthread", 10);
}

/* The dynamic loader: loading a library is not the interpreter's work. */
static bool loader_lib(const char *path)
{
	return !strncmp(base_name(path), "ld-linux", 8);
}

/* "at::_ops::NAME::call" / "::redispatch" -> NAME's span in *len; NULL otherwise. */
static const char *ops_name(const char *name, size_t *len)
{
	if (strncmp(name, "at::_ops::", 10))
		return NULL;
	const char *n = name + 10, *sep = strstr(n, "::");
	if (!sep || sep == n || (strcmp(sep, "::call") && strcmp(sep, "::redispatch")))
		return NULL;
	*len = (size_t)(sep - n);
	return n;
}

/* The native part of s: frames [0, *end) inside the innermost Python
 * frame, or inside the innermost evaluation loop of an unpaired stack
 * (the interpreter's call machinery directly inside it left out).  false
 * when s is no Python code's stack. */
static bool native_part(const struct isc_stack *s, unsigned *end)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->f[i].kind == ISC_FRAME_PYTHON) {
			*end = i;
			return true;
		}
	for (unsigned i = 0; i < s->n; i++)
		if (s->f[i].interp) {
			while (i > 0 && s->f[i - 1].interp_lib && s->f[i - 1].kind != ISC_FRAME_KERNEL)
				i--;
			*end = i;
			return true;
		}
	return false;
}

bool isc_native_op(const struct isc_stack *s, bool outermost, char *buf, size_t cap)
{
	unsigned end = s->n;
	(void)native_part(s, &end);
	for (unsigned k = 0; k < end; k++) {
		unsigned i = outermost ? end - 1 - k : k;
		const struct isc_frame *f = &s->f[i];
		size_t len;
		const char *n;
		if (f->kind == ISC_FRAME_OP && f->name[0] != '[') { /* "[worker threads]": not known */
			snprintf(buf, cap, "%s", f->name);
			return true;
		}
		if (f->kind == ISC_FRAME_NATIVE && (n = ops_name(f->name, &len))) {
			snprintf(buf, cap, "aten::%.*s", (int)len, n);
			return true;
		}
	}
	return false;
}

enum isc_cpu_class isc_native_class(const struct isc_stack *s)
{
	unsigned end;
	if (!native_part(s, &end))
		return ISC_CPU_NONE;
	for (unsigned i = 0; i < end; i++)
		if (s->f[i].kind == ISC_FRAME_OP ||
		    ((s->f[i].kind == ISC_FRAME_NATIVE || s->f[i].kind == ISC_FRAME_UNNAMED) &&
		     isc_native_torch_lib(s->f[i].lib)))
			return ISC_CPU_TORCH;
	for (unsigned i = 0; i < end; i++)
		if (s->f[i].kind != ISC_FRAME_KERNEL && loader_lib(s->f[i].lib))
			return ISC_CPU_OTHER;
	for (unsigned i = end; i-- > 0;) { /* the outermost frame in user space */
		if (s->f[i].kind == ISC_FRAME_KERNEL)
			continue;
		return s->f[i].interp_lib || libc_lib(s->f[i].lib) ? ISC_CPU_INTERP : ISC_CPU_OTHER;
	}
	return ISC_CPU_INTERP; /* bytecode, or the kernel on the interpreter's behalf */
}
