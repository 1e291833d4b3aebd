/*
 * pyframe.h - the Python frame that makes a CUDA call, read in the process
 * by the CUDA agent (pyframe.c says how and why).
 */
#ifndef ISC_CUDA_PYFRAME_H
#define ISC_CUDA_PYFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finds CPython in the process and its layout: 0, or -1 with the reason in why. */
int isc_cuda_py_init(char *why, size_t len);
/* The calling thread's innermost Python frame: its code object's address and instruction offset (the
 * line table's units); false when the thread runs no Python or the walk fails. */
bool isc_cuda_py_frame(uint64_t *code, int64_t *off);
/* Reads len bytes at addr of this process, for pyremote.c: 0, or -EFAULT; past an unmapped page, zeros. */
int isc_cuda_self_read(void *ctx, uint64_t addr, void *dst, size_t len);
/* Qualified name, file and current line of code object code at off (a live one); false when unreadable. */
bool isc_cuda_py_describe(uint64_t code, int64_t off, char *name, size_t nlen, char *file, size_t flen,
			  uint32_t *line);

#endif
