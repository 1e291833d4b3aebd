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

#define OFF(name, type, member) printf("\t.%s = %zu,\n", name, offsetof(type, member))

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

/* 1: a call of a callable (C code runs while the frame sits there);
 * 2: a generic operator or subscript (a type slot, C for tensors). */
static unsigned char cls[256];

static void classify(void)
{
	int calls[] = {
#ifdef CALL_FUNCTION
		CALL_FUNCTION,
#endif
#ifdef CALL_FUNCTION_KW
		CALL_FUNCTION_KW,
#endif
#ifdef CALL_FUNCTION_EX
		CALL_FUNCTION_EX,
#endif
#ifdef CALL_METHOD
		CALL_METHOD,
#endif
#ifdef CALL
		CALL,
#endif
#ifdef CALL_KW
		CALL_KW,
#endif
#ifdef PRECALL
		PRECALL,
#endif
		-1 };
	int ops[] = {
#ifdef BINARY_OP
		BINARY_OP,
#endif
#ifdef BINARY_SUBSCR
		BINARY_SUBSCR,
#endif
#ifdef STORE_SUBSCR
		STORE_SUBSCR,
#endif
#ifdef COMPARE_OP
		COMPARE_OP,
#endif
#ifdef BINARY_MATRIX_MULTIPLY
		BINARY_MATRIX_MULTIPLY, INPLACE_MATRIX_MULTIPLY, BINARY_POWER, BINARY_MULTIPLY,
		BINARY_MODULO, BINARY_ADD, BINARY_SUBTRACT, BINARY_FLOOR_DIVIDE, BINARY_TRUE_DIVIDE,
		INPLACE_FLOOR_DIVIDE, INPLACE_TRUE_DIVIDE, INPLACE_ADD, INPLACE_SUBTRACT,
		INPLACE_MULTIPLY, INPLACE_MODULO, BINARY_LSHIFT, BINARY_RSHIFT, BINARY_AND,
		BINARY_XOR, BINARY_OR, INPLACE_POWER, INPLACE_LSHIFT, INPLACE_RSHIFT, INPLACE_AND,
		INPLACE_XOR, INPLACE_OR,
#endif
		-1 };
	for (int i = 0; calls[i] >= 0; i++)
		cls[calls[i]] = 1;
	for (int i = 0; ops[i] >= 0; i++)
		cls[ops[i]] = 2;
#if PY_VERSION_HEX >= 0x030B0000
	/* specialised forms: a call keeps its class (C-callable variants run C
	 * code; Python-function variants push a frame, so they are never the
	 * leaf); an operator's specialised forms run inline in the interpreter. */
	for (int op = 0; op < 256; op++)
		if (_PyOpcode_Deopt[op] && _PyOpcode_Deopt[op] != op && cls[_PyOpcode_Deopt[op]] == 1)
			cls[op] = 1;
#endif
#ifdef INSTRUMENTED_CALL
	cls[INSTRUMENTED_CALL] = 1;
#endif
#ifdef INSTRUMENTED_CALL_KW
	cls[INSTRUMENTED_CALL_KW] = 1;
#endif
#ifdef INSTRUMENTED_CALL_FUNCTION_EX
	cls[INSTRUMENTED_CALL_FUNCTION_EX] = 1;
#endif
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
	classify();
	printf("\t.opclass = {");
	for (int i = 0; i < 256; i++)
		printf("%s%d", i ? "," : "", cls[i]);
	printf("},\n},\n");
	return 0;
}
