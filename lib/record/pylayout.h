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

/*
 * Stack effect of an opcode (after deopt[]), as the runtime sees it at the
 * start of the next instruction: base + mul * X(oparg), X by se_form[]
 * (jbase instead of base when the jump is taken).  It is the compiler's
 * stack_effect() except where the interpreter's stack differs from the
 * compiler's books: on 3.11 PRECALL is 0 and CALL pops the arguments (the
 * compiler books them on PRECALL, the interpreter pops them in CALL: a
 * sample inside CALL sees them on the stack); on 3.11 and 3.12
 * RETURN_GENERATOR pushes 1 (the value the generator is first resumed
 * with, which the next POP_TOP drops; 3.13 books it so); on 3.10
 * GEN_START is 0 (a generator's code starts at depth 1, the value it pops:
 * counted from 0 instead, which leaves every later depth the same).
 */
enum isc_py_se_form {
	ISC_PY_SE_CONST = 0,   /* X = 0 */
	ISC_PY_SE_ARG = 1,     /* X = oparg */
	ISC_PY_SE_AND1 = 2,    /* X = oparg & 1 */
	ISC_PY_SE_FLAGS4 = 3,  /* X = bits set in oparg & 15 (MAKE_FUNCTION) */
	ISC_PY_SE_UNPACK = 4,  /* X = (oparg & 255) + (oparg >> 8) (UNPACK_EX) */
	ISC_PY_SE_SLICE3 = 5,  /* X = oparg == 3 (BUILD_SLICE) */
	ISC_PY_SE_SPEC = 6,    /* X = (oparg >> 2) & 1 (FORMAT_VALUE with a spec) */
	ISC_PY_SE_NONE = 255,  /* not an opcode of this version: the code cannot be analysed */
};

/* Control flow of an opcode (flow[]): jump kind in bits 0-1, bit 2 no fall-through. */
enum isc_py_flow {
	ISC_PY_JUMP_NONE = 0,
	ISC_PY_JUMP_ABS = 1,  /* target oparg (x jump_unit bytes) */
	ISC_PY_JUMP_FWD = 2,  /* target the next instruction (after its caches) + oparg */
	ISC_PY_JUMP_BACK = 3, /* target the next instruction (after its caches) - oparg */
	ISC_PY_FLOW_END = 4,  /* never falls through (return, raise, unconditional jump) */
};

/*
 * Where a call's callable lies on the value stack at the CALL (callform[],
 * kind << 4 | k), D the stack depth at the instruction:
 *   PLAIN k: callable at D - k - oparg, arguments from D - oparg
 *   METH k:  D - k - oparg holds a method or NULL; when a method, it is the
 *            callable and D - k + 1 - oparg its self, else D - k + 1 - oparg
 *            is the callable (3.9/3.10 CALL_METHOD, 3.11 PRECALL/CALL, 3.12 CALL)
 *   SELF k:  D - k - oparg the callable, D - k + 1 - oparg its self or NULL (3.13)
 *   EX k:    callable at D - k - (oparg & 1) (CALL_FUNCTION_EX)
 */
enum isc_py_callform {
	ISC_PY_CF_NONE = 0, ISC_PY_CF_PLAIN = 1, ISC_PY_CF_METH = 2, ISC_PY_CF_SELF = 3, ISC_PY_CF_EX = 4,
};

/* Operand positions of an operator (slotform[]), D the depth at the instruction. */
enum isc_py_slotform {
	ISC_PY_SF_NONE = 0,
	ISC_PY_SF_BINARY = 1,  /* left D - 2, right D - 1; the slot from slotop[] or nb_slot[oparg] */
	ISC_PY_SF_COMPARE = 2, /* left D - 2, right D - 1; the slot from oparg >> cmp_shift */
	ISC_PY_SF_UNARY = 3,   /* operand D - 1 */
	ISC_PY_SF_AT2 = 4,     /* the container at D - 2 (subscript read, store, delete) */
	ISC_PY_SF_AT1 = 5,     /* the container at D - 1 (x in container) */
	ISC_PY_SF_AT3 = 6,     /* the container at D - 3 (slice read, store) */
};

/* Type slots an operator runs (slotop[], nb_slot[]): names in pyremote.c. */
enum isc_py_slot {
	ISC_PY_SLOT_NONE = 0,
	ISC_PY_SLOT_ADD, ISC_PY_SLOT_AND, ISC_PY_SLOT_FLOORDIV, ISC_PY_SLOT_LSHIFT, ISC_PY_SLOT_MATMUL,
	ISC_PY_SLOT_MUL, ISC_PY_SLOT_MOD, ISC_PY_SLOT_OR, ISC_PY_SLOT_POW, ISC_PY_SLOT_RSHIFT, ISC_PY_SLOT_SUB,
	ISC_PY_SLOT_TRUEDIV, ISC_PY_SLOT_XOR,
	ISC_PY_SLOT_IADD, ISC_PY_SLOT_IAND, ISC_PY_SLOT_IFLOORDIV, ISC_PY_SLOT_ILSHIFT, ISC_PY_SLOT_IMATMUL,
	ISC_PY_SLOT_IMUL, ISC_PY_SLOT_IMOD, ISC_PY_SLOT_IOR, ISC_PY_SLOT_IPOW, ISC_PY_SLOT_IRSHIFT, ISC_PY_SLOT_ISUB,
	ISC_PY_SLOT_ITRUEDIV, ISC_PY_SLOT_IXOR,
	ISC_PY_SLOT_LT, ISC_PY_SLOT_LE, ISC_PY_SLOT_EQ, ISC_PY_SLOT_NE, ISC_PY_SLOT_GT, ISC_PY_SLOT_GE,
	ISC_PY_SLOT_NEG, ISC_PY_SLOT_POS, ISC_PY_SLOT_INVERT,
	ISC_PY_SLOT_GETITEM, ISC_PY_SLOT_SETITEM, ISC_PY_SLOT_DELITEM, ISC_PY_SLOT_CONTAINS,
	ISC_PY_NSLOTS
};

/* How a dict's keys object is laid out (dict_format): where a type's __module__ is read. */
enum isc_py_dict_format {
	ISC_PY_DICT_NONE = 0,
	ISC_PY_DICT_39 = 1,  /* 3.9/3.10 Objects/dict-common.h: dk_size, 24-byte entries */
	ISC_PY_DICT_311 = 2, /* 3.11+ pycore_dict.h: dk_log2_size, dk_kind (unicode: 16-byte entries) */
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

	/* ---- the value stack: static depths per code object (isc_py_depths) ---- */
	uint32_t co_stacksize;      /* PyCodeObject.co_stacksize (int) */
	uint32_t co_nlocalsplus;    /* 3.11+: co_nlocalsplus (int); the stack follows the locals */
	uint32_t co_exceptiontable; /* 3.11+: co_exceptiontable (bytes) */
	uint32_t fr_stack;          /* 3.11+: _PyInterpreterFrame.localsplus; 3.9/3.10: f_valuestack (a pointer) */
	uint8_t jump_unit;          /* bytes per unit of a jump's oparg: 1 (3.9), 2 */
	uint8_t extended_arg;       /* EXTENDED_ARG */
	uint8_t cmp_shift;          /* COMPARE_OP: oparg >> cmp_shift is Py_LT .. Py_GE */
	uint8_t deopt[256];         /* base opcode of a specialised or instrumented one (itself for a base one) */
	uint8_t caches[256];        /* inline cache units after the instruction (3.11+) */
	uint8_t flow[256];          /* enum isc_py_flow */
	uint8_t se_form[256];       /* enum isc_py_se_form */
	int8_t se_base[256], se_jbase[256], se_mul[256];
	uint8_t callform[256];      /* enum isc_py_callform << 4 | k */
	uint8_t slotform[256];      /* enum isc_py_slotform */
	uint8_t slotop[256];        /* enum isc_py_slot of an operator opcode of its own (3.9/3.10 BINARY_ADD) */
	uint8_t nb_slot[32];        /* BINARY_OP: oparg -> enum isc_py_slot */

	/* ---- objects a callee is named from ---- */
	uint32_t cf_ml, cf_self, cf_module;   /* PyCFunctionObject: m_ml, m_self, m_module */
	uint32_t ml_name, ml_flags;           /* PyMethodDef */
	uint32_t meth_static;                 /* METH_STATIC */
	uint32_t md_type, md_method;          /* PyMethodDescrObject: d_common.d_type, d_method */
	uint32_t pm_func, pm_self;            /* PyMethodObject (a bound method): im_func, im_self */
	uint32_t tp_name, tp_flags, tp_base, tp_dict, tp_dealloc;
	uint32_t ht_qualname;                 /* PyHeapTypeObject */
	uint64_t tpflags_heaptype;            /* Py_TPFLAGS_HEAPTYPE */
	int dict_format;                      /* enum isc_py_dict_format */
	uint32_t dict_keys, dict_values;      /* PyDictObject: ma_keys, ma_values */
	uint32_t dk_size, dk_kind, dk_nentries, dk_indices; /* keys object (dk_size: dk_log2_size from 3.11) */
	uint32_t dk_log2_index_bytes;         /* 3.11+ */
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
