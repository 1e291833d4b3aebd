/*
 * pylayout_gen.c - prints one CPython version's struct layout as a C
 * initializer of struct isc_pylayout (lib/record/pylayout.h).
 *
 * Built and run at build time by scripts/gen-pylayouts.sh, once per CPython
 * found with its internal headers, with -DPy_BUILD_CORE -I<include>
 * -I<include>/internal: every offset below is the compiler's offsetof
 * against that version's own headers, so nothing is copied by hand.
 * The output is not a program's input: the recorder checks the running
 * interpreter's version against it before using any offset.
 */
#define NEED_OPCODE_TABLES
#define NEED_OPCODE_METADATA
#include <Python.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#else
#include "frameobject.h"
#endif
#include "opcode.h"
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#include "internal/pycore_opcode.h"
#elif PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_opcode_metadata.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_dict.h"
#endif
#include "pylayout_opnames.h" /* opcode names a version lacks: -1 */
#include "pylayout.h"         /* enum isc_py_se_form, isc_py_flow, isc_py_callform, isc_py_slot... */

#define OFF(name, type, member) printf("\t.%s = %zu,\n", name, offsetof(type, member))
#define NONE(name) printf("\t.%s = ISC_PY_NONE,\n", name)

/* First set bit of a bitfield member set to all ones in an all-zero object. */
static int first_bit(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++)
			if (p[i] >> b & 1)
				return (int)(i * 8 + (size_t)b);
	return -1;
}

#define STATE_BIT(field, val, out)                                              \
	do {                                                                    \
		PyASCIIObject o;                                                \
		memset(&o, 0, sizeof(o));                                       \
		o.state.field = val;                                            \
		out = first_bit((unsigned char *)&o.state, sizeof(o.state));   \
	} while (0)

/* ---- bytecode ----------------------------------------------------------- */

#define V311 (PY_VERSION_HEX >= 0x030B0000)
#define V312 (PY_VERSION_HEX >= 0x030C0000)
#define V313 (PY_VERSION_HEX >= 0x030D0000)
#define NOEFFECT (-1000)

static bool real(int op)
{
	return op >= 0 && op < 256;
}

/* Base opcode of op: itself before 3.11; the header's deopt table, and the
 * instrumented forms of 3.12+ mapped to what they instrument. */
static int deopt_of(int op)
{
#if V311
	static const int instr[][2] = {
		{ INSTRUMENTED_RESUME, RESUME }, { INSTRUMENTED_END_FOR, END_FOR }, { INSTRUMENTED_END_SEND, END_SEND },
		{ INSTRUMENTED_RETURN_VALUE, RETURN_VALUE }, { INSTRUMENTED_RETURN_CONST, RETURN_CONST },
		{ INSTRUMENTED_YIELD_VALUE, YIELD_VALUE }, { INSTRUMENTED_LOAD_SUPER_ATTR, LOAD_SUPER_ATTR },
		{ INSTRUMENTED_FOR_ITER, FOR_ITER }, { INSTRUMENTED_CALL, CALL }, { INSTRUMENTED_CALL_KW, CALL_KW },
		{ INSTRUMENTED_CALL_FUNCTION_EX, CALL_FUNCTION_EX }, { INSTRUMENTED_JUMP_FORWARD, JUMP_FORWARD },
		{ INSTRUMENTED_JUMP_BACKWARD, JUMP_BACKWARD }, { INSTRUMENTED_POP_JUMP_IF_FALSE, POP_JUMP_IF_FALSE },
		{ INSTRUMENTED_POP_JUMP_IF_TRUE, POP_JUMP_IF_TRUE }, { INSTRUMENTED_POP_JUMP_IF_NONE, POP_JUMP_IF_NONE },
		{ INSTRUMENTED_POP_JUMP_IF_NOT_NONE, POP_JUMP_IF_NOT_NONE },
	};
	for (size_t i = 0; i < sizeof(instr) / sizeof(instr[0]); i++)
		if (instr[i][0] == op && real(instr[i][1]))
			return instr[i][1];
	/* INSTRUMENTED_LINE and INSTRUMENTED_INSTRUCTION keep the opcode they
	 * replace elsewhere: a code object holding them cannot be analysed */
	if (op == INSTRUMENTED_LINE || op == INSTRUMENTED_INSTRUCTION || op == ENTER_EXECUTOR)
		return 0;
	return _PyOpcode_Deopt[op];
#else
	return op;
#endif
}

static int popcount4(int a)
{
	return (a & 1) + (a >> 1 & 1) + (a >> 2 & 1) + (a >> 3 & 1);
}

/*
 * The change of the value stack's depth by base opcode op with oparg, the
 * jump taken or not (NOEFFECT: not an opcode of this version).  3.13 from
 * the header's generated metadata; before, CPython's compile.c
 * stack_effect() of each version, except where the interpreter's stack
 * differs from the compiler's books (pylayout.h).
 * tests/unit/check-stack-effects.py compares the table with dis.stack_effect.
 */
static int effect(int op, int oparg, int jump)
{
#if V313
	(void)jump;
	if (!_PyOpcode_opcode_metadata[op].valid_entry || op == CACHE || op == RESERVED)
		return NOEFFECT;
	int popped = _PyOpcode_num_popped(op, oparg), pushed = _PyOpcode_num_pushed(op, oparg);
	return popped < 0 || pushed < 0 ? NOEFFECT : pushed - popped;
#else
	static const int k[][2] = {
		{ NOP, 0 }, { POP_TOP, -1 }, { ROT_TWO, 0 }, { ROT_THREE, 0 }, { ROT_FOUR, 0 }, { ROT_N, 0 },
		{ DUP_TOP, 1 }, { DUP_TOP_TWO, 2 }, { UNARY_POSITIVE, 0 }, { UNARY_NEGATIVE, 0 }, { UNARY_NOT, 0 },
		{ UNARY_INVERT, 0 }, { BINARY_MATRIX_MULTIPLY, -1 }, { INPLACE_MATRIX_MULTIPLY, -1 },
		{ BINARY_POWER, -1 }, { BINARY_MULTIPLY, -1 }, { BINARY_MODULO, -1 }, { BINARY_ADD, -1 },
		{ BINARY_SUBTRACT, -1 }, { BINARY_FLOOR_DIVIDE, -1 }, { BINARY_TRUE_DIVIDE, -1 },
		{ INPLACE_FLOOR_DIVIDE, -1 }, { INPLACE_TRUE_DIVIDE, -1 }, { INPLACE_ADD, -1 }, { INPLACE_SUBTRACT, -1 },
		{ INPLACE_MULTIPLY, -1 }, { INPLACE_MODULO, -1 }, { BINARY_LSHIFT, -1 }, { BINARY_RSHIFT, -1 },
		{ BINARY_AND, -1 }, { BINARY_XOR, -1 }, { BINARY_OR, -1 }, { INPLACE_POWER, -1 }, { INPLACE_LSHIFT, -1 },
		{ INPLACE_RSHIFT, -1 }, { INPLACE_AND, -1 }, { INPLACE_XOR, -1 }, { INPLACE_OR, -1 }, { BINARY_OP, -1 },
		{ BINARY_SUBSCR, -1 }, { STORE_SUBSCR, -3 }, { DELETE_SUBSCR, -2 }, { BINARY_SLICE, -2 },
		{ STORE_SLICE, -4 }, { GET_ITER, 0 }, { GET_YIELD_FROM_ITER, 0 }, { PRINT_EXPR, -1 },
		{ LOAD_BUILD_CLASS, 1 }, { YIELD_FROM, -1 }, { GET_AWAITABLE, 0 }, { LOAD_ASSERTION_ERROR, 1 },
		{ LIST_TO_TUPLE, 0 }, { RETURN_VALUE, -1 }, { IMPORT_STAR, -1 }, { SETUP_ANNOTATIONS, 0 },
		{ YIELD_VALUE, 0 }, { POP_BLOCK, 0 }, { POP_EXCEPT, V311 ? -1 : -3 }, { RERAISE, V311 ? -1 : -3 },
		{ WITH_EXCEPT_START, 1 }, { GET_AITER, 0 }, { GET_ANEXT, 1 }, { BEFORE_ASYNC_WITH, 1 },
		{ BEFORE_WITH, 1 }, { END_ASYNC_FOR, V311 ? -2 : -7 }, { STORE_NAME, -1 }, { DELETE_NAME, 0 },
		{ STORE_ATTR, -2 }, { DELETE_ATTR, -1 }, { STORE_GLOBAL, -1 }, { DELETE_GLOBAL, 0 }, { LOAD_CONST, 1 },
		{ LOAD_NAME, 1 }, { COMPARE_OP, -1 }, { IS_OP, -1 }, { CONTAINS_OP, -1 }, { IMPORT_NAME, -1 },
		{ IMPORT_FROM, 1 }, { JUMP_FORWARD, 0 }, { JUMP_ABSOLUTE, 0 }, { JUMP_BACKWARD, 0 },
		{ JUMP_BACKWARD_NO_INTERRUPT, 0 }, { POP_JUMP_IF_FALSE, -1 }, { POP_JUMP_IF_TRUE, -1 },
		{ POP_JUMP_IF_NONE, -1 }, { POP_JUMP_IF_NOT_NONE, -1 }, { POP_JUMP_FORWARD_IF_FALSE, -1 },
		{ POP_JUMP_FORWARD_IF_TRUE, -1 }, { POP_JUMP_FORWARD_IF_NONE, -1 }, { POP_JUMP_FORWARD_IF_NOT_NONE, -1 },
		{ POP_JUMP_BACKWARD_IF_FALSE, -1 }, { POP_JUMP_BACKWARD_IF_TRUE, -1 }, { POP_JUMP_BACKWARD_IF_NONE, -1 },
		{ POP_JUMP_BACKWARD_IF_NOT_NONE, -1 }, { JUMP_IF_NOT_EXC_MATCH, -2 }, { LOAD_FAST, 1 },
		{ STORE_FAST, -1 }, { DELETE_FAST, 0 }, { LOAD_FAST_CHECK, 1 }, { LOAD_FAST_AND_CLEAR, 1 },
		{ LOAD_CLOSURE, 1 }, { LOAD_DEREF, 1 }, { STORE_DEREF, -1 }, { DELETE_DEREF, 0 }, { LOAD_CLASSDEREF, 1 },
		{ EXTENDED_ARG, 0 }, { LIST_APPEND, -1 }, { SET_ADD, -1 }, { MAP_ADD, -2 }, { LOAD_METHOD, 1 },
		{ LIST_EXTEND, -1 }, { SET_UPDATE, -1 }, { DICT_MERGE, -1 }, { DICT_UPDATE, -1 }, { GEN_START, 0 },
		{ MATCH_CLASS, V311 ? -2 : -1 }, { MATCH_MAPPING, 1 }, { MATCH_SEQUENCE, 1 }, { MATCH_KEYS, V311 ? 1 : 2 },
		{ COPY_DICT_WITHOUT_KEYS, 0 }, { GET_LEN, 1 }, { ASYNC_GEN_WRAP, 0 }, { CHECK_EG_MATCH, 0 },
		{ CHECK_EXC_MATCH, 0 }, { COPY, 1 }, { COPY_FREE_VARS, 0 }, { KW_NAMES, 0 }, { MAKE_CELL, 0 },
		{ PREP_RERAISE_STAR, -1 }, { PUSH_EXC_INFO, 1 }, { PUSH_NULL, 1 }, { RESUME, 0 },
		{ RETURN_GENERATOR, 1 }, { SWAP, 0 }, { CALL_INTRINSIC_1, 0 }, { CALL_INTRINSIC_2, -1 },
		{ CLEANUP_THROW, -1 }, { END_FOR, -2 }, { END_SEND, -1 }, { INTERPRETER_EXIT, -1 },
		{ LOAD_FROM_DICT_OR_DEREF, 0 }, { LOAD_FROM_DICT_OR_GLOBALS, 0 }, { LOAD_LOCALS, 1 },
		{ RETURN_CONST, 0 }, { PRECALL, 0 },
	};
	if (op < 0)
		return NOEFFECT;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (k[i][0] == op)
			return k[i][1];
	if (op == FOR_ITER)
		return V312 || !jump ? 1 : -1;
	if (op == JUMP_IF_FALSE_OR_POP || op == JUMP_IF_TRUE_OR_POP)
		return jump ? 0 : -1;
	if (op == SETUP_FINALLY)
		return jump ? 6 : 0;
	if (op == SETUP_WITH)
		return jump ? 6 : 1;
	if (op == SETUP_ASYNC_WITH)
		return jump ? 5 : 0;
	if (op == SEND)
		return V312 || !jump ? 0 : -1;
	if (op == UNPACK_SEQUENCE)
		return oparg - 1;
	if (op == UNPACK_EX)
		return (oparg & 0xFF) + (oparg >> 8);
	if (op == BUILD_TUPLE || op == BUILD_LIST || op == BUILD_SET || op == BUILD_STRING)
		return 1 - oparg;
	if (op == BUILD_MAP)
		return 1 - 2 * oparg;
	if (op == BUILD_CONST_KEY_MAP)
		return -oparg;
	if (op == LOAD_ATTR)
		return V312 ? (oparg & 1) : 0;
	if (op == LOAD_GLOBAL)
		return V311 ? 1 + (oparg & 1) : 1;
	if (op == LOAD_SUPER_ATTR)
		return -2 + (oparg & 1);
	if (op == RAISE_VARARGS)
		return -oparg;
	if (op == CALL_FUNCTION)
		return -oparg;
	if (op == CALL_FUNCTION_KW || op == CALL_METHOD || op == CALL)
		return -oparg - 1; /* 3.11's CALL: its PRECALL's -oparg and its own -1 */
	if (op == CALL_FUNCTION_EX)
		return (V311 ? -2 : -1) - (oparg & 1);
	if (op == MAKE_FUNCTION)
		return (V311 ? 0 : -1) - popcount4(oparg);
	if (op == BUILD_SLICE)
		return oparg == 3 ? -2 : -1;
	if (op == FORMAT_VALUE)
		return (oparg & 4) ? -1 : 0;
	return NOEFFECT;
#endif
}

static int form_x(int form, int a)
{
	switch (form) {
	case ISC_PY_SE_ARG: return a;
	case ISC_PY_SE_AND1: return a & 1;
	case ISC_PY_SE_FLAGS4: return popcount4(a);
	case ISC_PY_SE_UNPACK: return (a & 0xFF) + (a >> 8);
	case ISC_PY_SE_SLICE3: return a == 3;
	case ISC_PY_SE_SPEC: return (a >> 2) & 1;
	default: return 0;
	}
}

static unsigned char t_deopt[256], t_caches[256], t_flow[256], t_form[256], t_call[256], t_slotform[256],
	t_slotop[256], t_nb[32];
static signed char t_base[256], t_jbase[256], t_mul[256];

/*
 * effect() of each base opcode as base + mul * X(oparg) for the first form
 * of pylayout.h that reproduces it at every oparg tried; an opcode no form
 * fits stops the generator (a version whose stack effects this build does
 * not understand is better refused than sampled wrong).
 */
static int fit_effects(void)
{
	static const int forms[] = { ISC_PY_SE_CONST, ISC_PY_SE_ARG, ISC_PY_SE_AND1, ISC_PY_SE_FLAGS4,
				     ISC_PY_SE_UNPACK, ISC_PY_SE_SLICE3, ISC_PY_SE_SPEC };
	for (int op = 0; op < 256; op++) {
		t_form[op] = ISC_PY_SE_NONE;
		if (t_deopt[op] != op || effect(op, 0, 0) == NOEFFECT)
			continue;
		bool done = false;
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]) && !done; f++) {
			int x1 = -1;
			for (int a = 0; a < 1024 && x1 < 0; a++)
				if (form_x(forms[f], a) != form_x(forms[f], 0))
					x1 = a;
			int mul = 0, b, jb;
			if (x1 > 0)
				mul = (effect(op, x1, 0) - effect(op, 0, 0)) / (form_x(forms[f], x1) - form_x(forms[f], 0));
			b = effect(op, 0, 0) - mul * form_x(forms[f], 0);
			jb = effect(op, 0, 1) - mul * form_x(forms[f], 0);
			bool fits = b >= -128 && b < 128 && jb >= -128 && jb < 128 && mul >= -128 && mul < 128;
			for (int a = 0; a < 70000 && fits; a += a < 600 ? 1 : 257)
				fits = effect(op, a, 0) == b + mul * form_x(forms[f], a) &&
				       effect(op, a, 1) == jb + mul * form_x(forms[f], a);
			if (fits) {
				t_form[op] = (unsigned char)forms[f];
				t_base[op] = (signed char)b;
				t_jbase[op] = (signed char)jb;
				t_mul[op] = (signed char)mul;
				done = true;
			}
		}
		if (!done) {
			fprintf(stderr, "pylayout_gen: no stack-effect form fits opcode %d\n", op);
			return -1;
		}
	}
	return 0;
}

static void set(unsigned char *t, int op, int v)
{
	if (real(op))
		t[op] = (unsigned char)v;
}

static void bytecode_tables(void)
{
	for (int op = 0; op < 256; op++) {
		t_deopt[op] = (unsigned char)deopt_of(op);
#if V311
		t_caches[op] = _PyOpcode_Caches[t_deopt[op]];
#endif
	}
	/* jumps: CPython's hasjabs (before 3.11) and hasjrel, backward ones apart */
	static const int abs_ops[] = { JUMP_ABSOLUTE, JUMP_IF_NOT_EXC_MATCH };
	static const int abs_310[] = { JUMP_IF_FALSE_OR_POP, JUMP_IF_TRUE_OR_POP, POP_JUMP_IF_FALSE, POP_JUMP_IF_TRUE };
	static const int fwd_ops[] = { FOR_ITER, JUMP_FORWARD, SETUP_ASYNC_WITH, SETUP_FINALLY, SETUP_WITH, SEND,
				       POP_JUMP_FORWARD_IF_FALSE, POP_JUMP_FORWARD_IF_TRUE, POP_JUMP_FORWARD_IF_NONE,
				       POP_JUMP_FORWARD_IF_NOT_NONE, POP_JUMP_IF_NONE, POP_JUMP_IF_NOT_NONE };
	static const int back_ops[] = { JUMP_BACKWARD, JUMP_BACKWARD_NO_INTERRUPT, POP_JUMP_BACKWARD_IF_FALSE,
					POP_JUMP_BACKWARD_IF_TRUE, POP_JUMP_BACKWARD_IF_NONE, POP_JUMP_BACKWARD_IF_NOT_NONE };
	static const int end_ops[] = { RETURN_VALUE, RETURN_CONST, RAISE_VARARGS, RERAISE, JUMP_FORWARD,
				       JUMP_ABSOLUTE, JUMP_BACKWARD, JUMP_BACKWARD_NO_INTERRUPT, INTERPRETER_EXIT };
	for (size_t i = 0; i < sizeof(abs_ops) / sizeof(abs_ops[0]); i++)
		set(t_flow, abs_ops[i], ISC_PY_JUMP_ABS);
	for (size_t i = 0; i < sizeof(abs_310) / sizeof(abs_310[0]); i++)
		set(t_flow, abs_310[i], V311 ? ISC_PY_JUMP_FWD : ISC_PY_JUMP_ABS);
	for (size_t i = 0; i < sizeof(fwd_ops) / sizeof(fwd_ops[0]); i++)
		set(t_flow, fwd_ops[i], ISC_PY_JUMP_FWD);
	for (size_t i = 0; i < sizeof(back_ops) / sizeof(back_ops[0]); i++)
		set(t_flow, back_ops[i], ISC_PY_JUMP_BACK);
	for (size_t i = 0; i < sizeof(end_ops) / sizeof(end_ops[0]); i++)
		if (real(end_ops[i]))
			t_flow[end_ops[i]] |= ISC_PY_FLOW_END;
	/* calls: where the callable is (pylayout.h) */
	set(t_call, CALL_FUNCTION, ISC_PY_CF_PLAIN << 4 | 1);
	set(t_call, CALL_FUNCTION_KW, ISC_PY_CF_PLAIN << 4 | 2);
	set(t_call, CALL_METHOD, ISC_PY_CF_METH << 4 | 2);
	set(t_call, PRECALL, ISC_PY_CF_METH << 4 | 2);
	set(t_call, CALL, (V313 ? ISC_PY_CF_SELF : ISC_PY_CF_METH) << 4 | 2);
	set(t_call, CALL_KW, ISC_PY_CF_SELF << 4 | 3);
	set(t_call, CALL_FUNCTION_EX, ISC_PY_CF_EX << 4 | (V313 ? 3 : 2));
	/* operators: their operands and slots */
	static const int binops[][2] = {
		{ BINARY_ADD, ISC_PY_SLOT_ADD }, { BINARY_AND, ISC_PY_SLOT_AND },
		{ BINARY_FLOOR_DIVIDE, ISC_PY_SLOT_FLOORDIV }, { BINARY_LSHIFT, ISC_PY_SLOT_LSHIFT },
		{ BINARY_MATRIX_MULTIPLY, ISC_PY_SLOT_MATMUL }, { BINARY_MULTIPLY, ISC_PY_SLOT_MUL },
		{ BINARY_MODULO, ISC_PY_SLOT_MOD }, { BINARY_OR, ISC_PY_SLOT_OR }, { BINARY_POWER, ISC_PY_SLOT_POW },
		{ BINARY_RSHIFT, ISC_PY_SLOT_RSHIFT }, { BINARY_SUBTRACT, ISC_PY_SLOT_SUB },
		{ BINARY_TRUE_DIVIDE, ISC_PY_SLOT_TRUEDIV }, { BINARY_XOR, ISC_PY_SLOT_XOR },
		{ INPLACE_ADD, ISC_PY_SLOT_IADD }, { INPLACE_AND, ISC_PY_SLOT_IAND },
		{ INPLACE_FLOOR_DIVIDE, ISC_PY_SLOT_IFLOORDIV }, { INPLACE_LSHIFT, ISC_PY_SLOT_ILSHIFT },
		{ INPLACE_MATRIX_MULTIPLY, ISC_PY_SLOT_IMATMUL }, { INPLACE_MULTIPLY, ISC_PY_SLOT_IMUL },
		{ INPLACE_MODULO, ISC_PY_SLOT_IMOD }, { INPLACE_OR, ISC_PY_SLOT_IOR }, { INPLACE_POWER, ISC_PY_SLOT_IPOW },
		{ INPLACE_RSHIFT, ISC_PY_SLOT_IRSHIFT }, { INPLACE_SUBTRACT, ISC_PY_SLOT_ISUB },
		{ INPLACE_TRUE_DIVIDE, ISC_PY_SLOT_ITRUEDIV }, { INPLACE_XOR, ISC_PY_SLOT_IXOR },
	};
	for (size_t i = 0; i < sizeof(binops) / sizeof(binops[0]); i++) {
		set(t_slotform, binops[i][0], ISC_PY_SF_BINARY);
		set(t_slotop, binops[i][0], binops[i][1]);
	}
	set(t_slotform, BINARY_OP, ISC_PY_SF_BINARY);
	set(t_slotform, COMPARE_OP, ISC_PY_SF_COMPARE);
	static const int unops[][2] = { { UNARY_NEGATIVE, ISC_PY_SLOT_NEG }, { UNARY_POSITIVE, ISC_PY_SLOT_POS },
					{ UNARY_INVERT, ISC_PY_SLOT_INVERT } };
	for (size_t i = 0; i < sizeof(unops) / sizeof(unops[0]); i++) {
		set(t_slotform, unops[i][0], ISC_PY_SF_UNARY);
		set(t_slotop, unops[i][0], unops[i][1]);
	}
	static const int cont[][3] = {
		{ BINARY_SUBSCR, ISC_PY_SF_AT2, ISC_PY_SLOT_GETITEM }, { STORE_SUBSCR, ISC_PY_SF_AT2, ISC_PY_SLOT_SETITEM },
		{ DELETE_SUBSCR, ISC_PY_SF_AT2, ISC_PY_SLOT_DELITEM }, { CONTAINS_OP, ISC_PY_SF_AT1, ISC_PY_SLOT_CONTAINS },
		{ BINARY_SLICE, ISC_PY_SF_AT3, ISC_PY_SLOT_GETITEM }, { STORE_SLICE, ISC_PY_SF_AT3, ISC_PY_SLOT_SETITEM },
	};
	for (size_t i = 0; i < sizeof(cont) / sizeof(cont[0]); i++) {
		set(t_slotform, cont[i][0], cont[i][1]);
		set(t_slotop, cont[i][0], cont[i][2]);
	}
#ifdef NB_ADD
	/* BINARY_OP's oparg: the NB_* of opcode.h */
	static const int nb[][2] = {
		{ NB_ADD, ISC_PY_SLOT_ADD }, { NB_AND, ISC_PY_SLOT_AND }, { NB_FLOOR_DIVIDE, ISC_PY_SLOT_FLOORDIV },
		{ NB_LSHIFT, ISC_PY_SLOT_LSHIFT }, { NB_MATRIX_MULTIPLY, ISC_PY_SLOT_MATMUL },
		{ NB_MULTIPLY, ISC_PY_SLOT_MUL }, { NB_REMAINDER, ISC_PY_SLOT_MOD }, { NB_OR, ISC_PY_SLOT_OR },
		{ NB_POWER, ISC_PY_SLOT_POW }, { NB_RSHIFT, ISC_PY_SLOT_RSHIFT }, { NB_SUBTRACT, ISC_PY_SLOT_SUB },
		{ NB_TRUE_DIVIDE, ISC_PY_SLOT_TRUEDIV }, { NB_XOR, ISC_PY_SLOT_XOR },
		{ NB_INPLACE_ADD, ISC_PY_SLOT_IADD }, { NB_INPLACE_AND, ISC_PY_SLOT_IAND },
		{ NB_INPLACE_FLOOR_DIVIDE, ISC_PY_SLOT_IFLOORDIV }, { NB_INPLACE_LSHIFT, ISC_PY_SLOT_ILSHIFT },
		{ NB_INPLACE_MATRIX_MULTIPLY, ISC_PY_SLOT_IMATMUL }, { NB_INPLACE_MULTIPLY, ISC_PY_SLOT_IMUL },
		{ NB_INPLACE_REMAINDER, ISC_PY_SLOT_IMOD }, { NB_INPLACE_OR, ISC_PY_SLOT_IOR },
		{ NB_INPLACE_POWER, ISC_PY_SLOT_IPOW }, { NB_INPLACE_RSHIFT, ISC_PY_SLOT_IRSHIFT },
		{ NB_INPLACE_SUBTRACT, ISC_PY_SLOT_ISUB }, { NB_INPLACE_TRUE_DIVIDE, ISC_PY_SLOT_ITRUEDIV },
		{ NB_INPLACE_XOR, ISC_PY_SLOT_IXOR },
	};
	for (size_t i = 0; i < sizeof(nb) / sizeof(nb[0]); i++)
		if (nb[i][0] >= 0 && nb[i][0] < 32)
			t_nb[nb[i][0]] = (unsigned char)nb[i][1];
#endif
}

/* 1: a call of a callable (C code runs while the frame sits there);
 * 2: a generic operator or subscript (a type slot, C for tensors). */
static unsigned char cls[256];

static void classify(void)
{
	static const int calls[] = { CALL_FUNCTION, CALL_FUNCTION_KW, CALL_FUNCTION_EX, CALL_METHOD, CALL, CALL_KW,
				     PRECALL, INSTRUMENTED_CALL, INSTRUMENTED_CALL_KW, INSTRUMENTED_CALL_FUNCTION_EX };
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		set(cls, calls[i], 1);
	for (int op = 0; op < 256; op++)
		if (t_slotform[op])
			cls[op] = 2;
#if V311
	/* specialised forms: a call keeps its class (C-callable variants run C
	 * code; Python-function variants push a frame, so they are never the
	 * leaf); an operator's specialised forms run inline in the interpreter. */
	for (int op = 0; op < 256; op++)
		if (_PyOpcode_Deopt[op] && _PyOpcode_Deopt[op] != op && cls[_PyOpcode_Deopt[op]] == 1)
			cls[op] = 1;
	/* 3.11's adaptive forms run the generic operator until they specialise */
	static const int adaptive[] = { BINARY_OP_ADAPTIVE, BINARY_SUBSCR_ADAPTIVE, COMPARE_OP_ADAPTIVE,
					STORE_SUBSCR_ADAPTIVE };
	for (size_t i = 0; i < sizeof(adaptive) / sizeof(adaptive[0]); i++)
		if (real(adaptive[i]))
			cls[adaptive[i]] = 2;
#endif
}

static void print_table(const char *name, const unsigned char *t, size_t n)
{
	printf("\t.%s = {", name);
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", t[i]);
	printf("},\n");
}

static void print_stable(const char *name, const signed char *t, size_t n)
{
	printf("\t.%s = {", name);
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", t[i]);
	printf("},\n");
}

int main(void)
{
	int kind, compact, ascii;
	STATE_BIT(kind, 7, kind);
	STATE_BIT(compact, 1, compact);
	STATE_BIT(ascii, 1, ascii);
	printf("{\n\t.hexversion = 0x%08lxu,\n", (unsigned long)PY_VERSION_HEX);
	printf("\t.version = \"%s\",\n", PY_VERSION);
	OFF("rt_interp_head", _PyRuntimeState, interpreters.head);
	OFF("is_next", PyInterpreterState, next);
#if PY_VERSION_HEX >= 0x030B0000
	OFF("is_threads_head", PyInterpreterState, threads.head);
#else
	OFF("is_threads_head", PyInterpreterState, tstate_head);
#endif
	OFF("ts_next", PyThreadState, next);
	OFF("ts_interp", PyThreadState, interp);
	OFF("ts_thread_id", PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030B0000
	OFF("ts_native_thread_id", PyThreadState, native_thread_id);
#else
	printf("\t.ts_native_thread_id = ISC_PY_NONE,\n");
#endif
#if PY_VERSION_HEX >= 0x030D0000
	OFF("ts_frame", PyThreadState, current_frame);
	printf("\t.cf_current_frame = ISC_PY_NONE,\n");
#elif PY_VERSION_HEX >= 0x030B0000
	OFF("ts_frame", PyThreadState, cframe);
	OFF("cf_current_frame", _PyCFrame, current_frame);
#else
	OFF("ts_frame", PyThreadState, frame);
	printf("\t.cf_current_frame = ISC_PY_NONE,\n");
#endif
#if PY_VERSION_HEX >= 0x030B0000
	printf("\t.frame_kind = ISC_PY_FRAME_INTERP,\n");
	OFF("fr_previous", _PyInterpreterFrame, previous);
#if PY_VERSION_HEX >= 0x030D0000
	OFF("fr_code", _PyInterpreterFrame, f_executable);
	OFF("fr_instr", _PyInterpreterFrame, instr_ptr);
#else
	OFF("fr_code", _PyInterpreterFrame, f_code);
	OFF("fr_instr", _PyInterpreterFrame, prev_instr);
#endif
	OFF("fr_owner", _PyInterpreterFrame, owner);
#if PY_VERSION_HEX >= 0x030C0000
	printf("\t.owner_cstack = %d,\n", (int)FRAME_OWNED_BY_CSTACK);
#else
	printf("\t.owner_cstack = -1,\n");
#endif
	OFF("co_code", PyCodeObject, co_code_adaptive);
	OFF("co_qualname", PyCodeObject, co_qualname);
	OFF("co_linetable", PyCodeObject, co_linetable);
	printf("\t.line_format = ISC_PY_LINES_311,\n");
#else
	printf("\t.frame_kind = ISC_PY_FRAME_OBJECT,\n");
	OFF("fr_previous", PyFrameObject, f_back);
	OFF("fr_code", PyFrameObject, f_code);
	OFF("fr_instr", PyFrameObject, f_lasti);
	printf("\t.fr_owner = ISC_PY_NONE,\n\t.owner_cstack = -1,\n");
	OFF("co_code", PyCodeObject, co_code);
	printf("\t.co_qualname = ISC_PY_NONE,\n");
#if PY_VERSION_HEX >= 0x030A0000
	OFF("co_linetable", PyCodeObject, co_linetable);
	printf("\t.line_format = ISC_PY_LINES_310,\n");
#else
	OFF("co_linetable", PyCodeObject, co_lnotab);
	printf("\t.line_format = ISC_PY_LINES_LNOTAB,\n");
#endif
#endif
	OFF("co_filename", PyCodeObject, co_filename);
	OFF("co_name", PyCodeObject, co_name);
	OFF("co_firstlineno", PyCodeObject, co_firstlineno);
	OFF("ob_type", PyObject, ob_type);
	OFF("var_size", PyVarObject, ob_size);
	OFF("bytes_sval", PyBytesObject, ob_sval);
	OFF("str_length", PyASCIIObject, length);
	OFF("str_state", PyASCIIObject, state);
	printf("\t.str_ascii_size = %zu,\n", sizeof(PyASCIIObject));
	printf("\t.str_compact_size = %zu,\n", sizeof(PyCompactUnicodeObject));
	printf("\t.str_kind_bit = %d,\n\t.str_compact_bit = %d,\n\t.str_ascii_bit = %d,\n", kind, compact,
	       ascii);
	bytecode_tables();
	if (fit_effects())
		return 1;
	classify();
	print_table("opclass", cls, 256);

	/* the value stack */
	OFF("co_stacksize", PyCodeObject, co_stacksize);
#if V311
	OFF("co_nlocalsplus", PyCodeObject, co_nlocalsplus);
	OFF("co_exceptiontable", PyCodeObject, co_exceptiontable);
	OFF("fr_stack", _PyInterpreterFrame, localsplus);
	printf("\t.jump_unit = 2,\n");
#else
	NONE("co_nlocalsplus");
	NONE("co_exceptiontable");
	OFF("fr_stack", PyFrameObject, f_valuestack);
	printf("\t.jump_unit = %d,\n", PY_VERSION_HEX >= 0x030A0000 ? 2 : 1);
#endif
	printf("\t.extended_arg = %d,\n", EXTENDED_ARG);
	printf("\t.cmp_shift = %d,\n", V313 ? 5 : V312 ? 4 : 0);
	print_table("deopt", t_deopt, 256);
	print_table("caches", t_caches, 256);
	print_table("flow", t_flow, 256);
	print_table("se_form", t_form, 256);
	print_stable("se_base", t_base, 256);
	print_stable("se_jbase", t_jbase, 256);
	print_stable("se_mul", t_mul, 256);
	print_table("callform", t_call, 256);
	print_table("slotform", t_slotform, 256);
	print_table("slotop", t_slotop, 256);
	print_table("nb_slot", t_nb, 32);

	/* callees */
	OFF("cf_ml", PyCFunctionObject, m_ml);
	OFF("cf_self", PyCFunctionObject, m_self);
	OFF("cf_module", PyCFunctionObject, m_module);
	OFF("ml_name", PyMethodDef, ml_name);
	OFF("ml_flags", PyMethodDef, ml_flags);
	printf("\t.meth_static = %d,\n", METH_STATIC);
	OFF("md_type", PyMethodDescrObject, d_common.d_type);
	OFF("md_method", PyMethodDescrObject, d_method);
	OFF("pm_func", PyMethodObject, im_func);
	OFF("pm_self", PyMethodObject, im_self);
	OFF("tp_name", PyTypeObject, tp_name);
	OFF("tp_flags", PyTypeObject, tp_flags);
	OFF("tp_base", PyTypeObject, tp_base);
	OFF("tp_dict", PyTypeObject, tp_dict);
	OFF("tp_dealloc", PyTypeObject, tp_dealloc);
	OFF("ht_qualname", PyHeapTypeObject, ht_qualname);
	printf("\t.tpflags_heaptype = %lluu,\n", (unsigned long long)Py_TPFLAGS_HEAPTYPE);
	OFF("dict_keys", PyDictObject, ma_keys);
	OFF("dict_values", PyDictObject, ma_values);
#if V311
	printf("\t.dict_format = ISC_PY_DICT_311,\n");
	OFF("dk_size", PyDictKeysObject, dk_log2_size);
	OFF("dk_log2_index_bytes", PyDictKeysObject, dk_log2_index_bytes);
	OFF("dk_kind", PyDictKeysObject, dk_kind);
	OFF("dk_nentries", PyDictKeysObject, dk_nentries);
	OFF("dk_indices", PyDictKeysObject, dk_indices);
#else
	/* Objects/dict-common.h, not installed: the same fields in the same
	 * order from 3.6 through 3.10 */
	struct dk39 {
		Py_ssize_t dk_refcnt, dk_size;
		void *dk_lookup;
		Py_ssize_t dk_usable, dk_nentries;
		char dk_indices[];
	};
	printf("\t.dict_format = ISC_PY_DICT_39,\n");
	OFF("dk_size", struct dk39, dk_size);
	NONE("dk_log2_index_bytes");
	NONE("dk_kind");
	OFF("dk_nentries", struct dk39, dk_nentries);
	OFF("dk_indices", struct dk39, dk_indices);
#endif
	printf("},\n");
	return 0;
}
