/*
 * pycode.h - static analysis of a CPython code object's bytecode: the depth
 * of the value stack at every instruction (pycode.c).
 *
 * CPython's stack depth at an instruction does not depend on the path that
 * reached it (the compiler checks this when it computes co_stacksize), so
 * it can be computed once per code object from the bytecode alone, with
 * the version's opcode tables of pylayout.h.  The sampler needs it because
 * 3.9 to 3.13 do not save the stack pointer of the frame that is running:
 * with the depth at the current instruction, a CALL's callable and an
 * operator's operands lie at known slots from the stack's base.
 */
#ifndef ISC_PYCODE_H
#define ISC_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pylayout.h"

#define ISC_PY_CODE_UNITS_MAX (1u << 18) /* code units analysed per code object */

/* One code unit after analysis: an instruction's start (op is its base
 * opcode, oparg with its EXTENDED_ARG prefixes), a prefix or cache (depth -1). */
struct isc_py_unit {
	int16_t depth; /* value stack depth when the instruction starts; -1: not an instruction, or unreachable */
	uint8_t op;    /* base opcode (deopt) */
	uint8_t pad;
	uint32_t oparg;
};

/*
 * Stack effect of base opcode op with oparg (jump: the jump is taken), as
 * the interpreter leaves the stack for the next instruction; INT32_MIN when
 * op is not an opcode of L's version.
 */
int32_t isc_py_stack_effect(const struct isc_pylayout *L, unsigned op, uint32_t oparg, bool jump);

/*
 * Depth of the value stack at every instruction of code (nunits code
 * units of 2 bytes: opcode, argument; specialised or instrumented
 * opcodes are read as their base ones), by a walk of every path from the
 * first instruction and, from 3.11, from every exception handler of the
 * exception table exc (exclen bytes; NULL before 3.11).  out[0..nunits)
 * is filled (depth -1 where no instruction starts or none is reachable).
 * stacksize bounds every depth (co_stacksize; 0: 32767).
 * Returns 0, -EINVAL for an opcode the version does not have, an
 * instruction or a jump running out of the code, -EBADMSG for two paths
 * that disagree on a depth or a depth out of bounds (not CPython's
 * bytecode, or an image torn while read), -ENOMEM.
 */
int isc_py_depths(const struct isc_pylayout *L, const uint8_t *code, size_t nunits, const uint8_t *exc, size_t exclen,
		  unsigned stacksize, struct isc_py_unit *out);

#endif
