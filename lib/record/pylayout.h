/*
 * pylayout.h - where CPython keeps what a stack sampler reads, per version.
 *
 * One struct isc_pylayout per CPython minor version: byte offsets of the
 * fields the out-of-process sampler follows (runtime -> interpreters ->
 * thread states -> frames -> code objects -> str/bytes), the bit positions
 * of the str state, how a frame says where it is, and how to turn that
 * into a line.  The table (pylayout_table.c) is generated at build time by
 * pylayout_gen.c compiled against each CPython's own internal headers
 * (scripts/gen-pylayouts.sh); 3.13+ layouts are also published by the
 * interpreter itself (_Py_DebugOffsets), which the sampler prefers.
 */
#ifndef ISC_PYLAYOUT_H
#define ISC_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define ISC_PY_NONE UINT32_MAX /* the field does not exist in this version */

enum isc_py_frame_kind {
	ISC_PY_FRAME_OBJECT = 1, /* 3.9-3.10: PyFrameObject, f_lasti an int */
	ISC_PY_FRAME_INTERP = 2, /* 3.11+: _PyInterpreterFrame, an instruction pointer */
};

enum isc_py_lines {
	ISC_PY_LINES_LNOTAB = 1, /* 3.9 co_lnotab, byte offsets */
	ISC_PY_LINES_310 = 2,    /* 3.10 co_linetable (PEP 626), byte offsets */
	ISC_PY_LINES_311 = 3,    /* 3.11+ location table, code units */
};

/* Instruction classes (opclass[]): what the leaf frame is doing. */
enum isc_py_opclass {
	ISC_PY_OP_INTERP = 0, /* bytecode the interpreter runs itself */
	ISC_PY_OP_CALL = 1,   /* a call: a C callable (torch op, builtin) runs */
	ISC_PY_OP_SLOT = 2,   /* a generic operator or subscript: a type's C slot */
};

struct isc_pylayout {
	uint32_t hexversion;  /* PY_VERSION_HEX of the headers */
	const char *version;  /* PY_VERSION of the headers */
	uint32_t rt_interp_head;
	uint32_t is_next, is_threads_head;
	uint32_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id;
	uint32_t ts_frame;         /* PyThreadState: frame (3.9/3.10), cframe (3.11/3.12), current_frame (3.13+) */
	uint32_t cf_current_frame; /* _PyCFrame.current_frame (3.11/3.12) */
	int frame_kind;
	uint32_t fr_previous, fr_code, fr_instr, fr_owner;
	int owner_cstack; /* owner value of C-stack shim frames (3.12+), else -1 */
	uint32_t co_code;     /* 3.9/3.10: PyBytes *co_code; 3.11+: offset of co_code_adaptive */
	uint32_t co_qualname, co_linetable;
	int line_format;
	uint32_t co_filename, co_name, co_firstlineno;
	uint32_t ob_type, var_size, bytes_sval;
	uint32_t str_length, str_state, str_ascii_size, str_compact_size;
	int str_kind_bit, str_compact_bit, str_ascii_bit;
	uint8_t opclass[256];
};

/* The generated table: every CPython the build found headers for. */
extern const struct isc_pylayout isc_pylayouts[];
extern const size_t isc_npylayouts;

/*
 * The layout for CPython major.minor (the patch level may differ: layouts
 * are taken per minor series; the one of the same patch when there is one).
 * NULL when the build saw no headers of that minor version.
 */
const struct isc_pylayout *isc_pylayout_find(unsigned major, unsigned minor, unsigned patch);

#endif
