/*
 * pylayout_opnames.h - every opcode name of CPython 3.9 to 3.13, defined
 * as -1 where the version being built against lacks it, so that
 * pylayout_gen.c can name opcodes of every version in one text and take
 * their numbers from the version's own opcode.h.  Included by
 * pylayout_gen.c only, after opcode.h.  The list is the union of the
 * #defines of Include/opcode.h (3.9-3.12) and Include/opcode_ids.h (3.13).
 */
#ifndef ASYNC_GEN_WRAP
#define ASYNC_GEN_WRAP (-1)
#endif
#ifndef BEFORE_ASYNC_WITH
#define BEFORE_ASYNC_WITH (-1)
#endif
#ifndef BEFORE_WITH
#define BEFORE_WITH (-1)
#endif
#ifndef BINARY_ADD
#define BINARY_ADD (-1)
#endif
#ifndef BINARY_AND
#define BINARY_AND (-1)
#endif
#ifndef BINARY_FLOOR_DIVIDE
#define BINARY_FLOOR_DIVIDE (-1)
#endif
#ifndef BINARY_LSHIFT
#define BINARY_LSHIFT (-1)
#endif
#ifndef BINARY_MATRIX_MULTIPLY
#define BINARY_MATRIX_MULTIPLY (-1)
#endif
#ifndef BINARY_MODULO
#define BINARY_MODULO (-1)
#endif
#ifndef BINARY_MULTIPLY
#define BINARY_MULTIPLY (-1)
#endif
#ifndef BINARY_OP
#define BINARY_OP (-1)
#endif
#ifndef BINARY_OP_ADAPTIVE
#define BINARY_OP_ADAPTIVE (-1)
#endif
#ifndef BINARY_OP_ADD_FLOAT
#define BINARY_OP_ADD_FLOAT (-1)
#endif
#ifndef BINARY_OP_ADD_INT
#define BINARY_OP_ADD_INT (-1)
#endif
#ifndef BINARY_OP_ADD_UNICODE
#define BINARY_OP_ADD_UNICODE (-1)
#endif
#ifndef BINARY_OP_INPLACE_ADD_UNICODE
#define BINARY_OP_INPLACE_ADD_UNICODE (-1)
#endif
#ifndef BINARY_OP_MULTIPLY_FLOAT
#define BINARY_OP_MULTIPLY_FLOAT (-1)
#endif
#ifndef BINARY_OP_MULTIPLY_INT
#define BINARY_OP_MULTIPLY_INT (-1)
#endif
#ifndef BINARY_OP_SUBTRACT_FLOAT
#define BINARY_OP_SUBTRACT_FLOAT (-1)
#endif
#ifndef BINARY_OP_SUBTRACT_INT
#define BINARY_OP_SUBTRACT_INT (-1)
#endif
#ifndef BINARY_OR
#define BINARY_OR (-1)
#endif
#ifndef BINARY_POWER
#define BINARY_POWER (-1)
#endif
#ifndef BINARY_RSHIFT
#define BINARY_RSHIFT (-1)
#endif
#ifndef BINARY_SLICE
#define BINARY_SLICE (-1)
#endif
#ifndef BINARY_SUBSCR
#define BINARY_SUBSCR (-1)
#endif
#ifndef BINARY_SUBSCR_ADAPTIVE
#define BINARY_SUBSCR_ADAPTIVE (-1)
#endif
#ifndef BINARY_SUBSCR_DICT
#define BINARY_SUBSCR_DICT (-1)
#endif
#ifndef BINARY_SUBSCR_GETITEM
#define BINARY_SUBSCR_GETITEM (-1)
#endif
#ifndef BINARY_SUBSCR_LIST_INT
#define BINARY_SUBSCR_LIST_INT (-1)
#endif
#ifndef BINARY_SUBSCR_STR_INT
#define BINARY_SUBSCR_STR_INT (-1)
#endif
#ifndef BINARY_SUBSCR_TUPLE_INT
#define BINARY_SUBSCR_TUPLE_INT (-1)
#endif
#ifndef BINARY_SUBTRACT
#define BINARY_SUBTRACT (-1)
#endif
#ifndef BINARY_TRUE_DIVIDE
#define BINARY_TRUE_DIVIDE (-1)
#endif
#ifndef BINARY_XOR
#define BINARY_XOR (-1)
#endif
#ifndef BUILD_CONST_KEY_MAP
#define BUILD_CONST_KEY_MAP (-1)
#endif
#ifndef BUILD_LIST
#define BUILD_LIST (-1)
#endif
#ifndef BUILD_MAP
#define BUILD_MAP (-1)
#endif
#ifndef BUILD_SET
#define BUILD_SET (-1)
#endif
#ifndef BUILD_SLICE
#define BUILD_SLICE (-1)
#endif
#ifndef BUILD_STRING
#define BUILD_STRING (-1)
#endif
#ifndef BUILD_TUPLE
#define BUILD_TUPLE (-1)
#endif
#ifndef CACHE
#define CACHE (-1)
#endif
#ifndef CALL
#define CALL (-1)
#endif
#ifndef CALL_ADAPTIVE
#define CALL_ADAPTIVE (-1)
#endif
#ifndef CALL_ALLOC_AND_ENTER_INIT
#define CALL_ALLOC_AND_ENTER_INIT (-1)
#endif
#ifndef CALL_BOUND_METHOD_EXACT_ARGS
#define CALL_BOUND_METHOD_EXACT_ARGS (-1)
#endif
#ifndef CALL_BOUND_METHOD_GENERAL
#define CALL_BOUND_METHOD_GENERAL (-1)
#endif
#ifndef CALL_BUILTIN_CLASS
#define CALL_BUILTIN_CLASS (-1)
#endif
#ifndef CALL_BUILTIN_FAST
#define CALL_BUILTIN_FAST (-1)
#endif
#ifndef CALL_BUILTIN_FAST_WITH_KEYWORDS
#define CALL_BUILTIN_FAST_WITH_KEYWORDS (-1)
#endif
#ifndef CALL_BUILTIN_O
#define CALL_BUILTIN_O (-1)
#endif
#ifndef CALL_FUNCTION
#define CALL_FUNCTION (-1)
#endif
#ifndef CALL_FUNCTION_EX
#define CALL_FUNCTION_EX (-1)
#endif
#ifndef CALL_FUNCTION_KW
#define CALL_FUNCTION_KW (-1)
#endif
#ifndef CALL_INTRINSIC_1
#define CALL_INTRINSIC_1 (-1)
#endif
#ifndef CALL_INTRINSIC_2
#define CALL_INTRINSIC_2 (-1)
#endif
#ifndef CALL_ISINSTANCE
#define CALL_ISINSTANCE (-1)
#endif
#ifndef CALL_KW
#define CALL_KW (-1)
#endif
#ifndef CALL_LEN
#define CALL_LEN (-1)
#endif
#ifndef CALL_LIST_APPEND
#define CALL_LIST_APPEND (-1)
#endif
#ifndef CALL_METHOD
#define CALL_METHOD (-1)
#endif
#ifndef CALL_METHOD_DESCRIPTOR_FAST
#define CALL_METHOD_DESCRIPTOR_FAST (-1)
#endif
#ifndef CALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS
#define CALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS (-1)
#endif
#ifndef CALL_METHOD_DESCRIPTOR_NOARGS
#define CALL_METHOD_DESCRIPTOR_NOARGS (-1)
#endif
#ifndef CALL_METHOD_DESCRIPTOR_O
#define CALL_METHOD_DESCRIPTOR_O (-1)
#endif
#ifndef CALL_NON_PY_GENERAL
#define CALL_NON_PY_GENERAL (-1)
#endif
#ifndef CALL_NO_KW_BUILTIN_FAST
#define CALL_NO_KW_BUILTIN_FAST (-1)
#endif
#ifndef CALL_NO_KW_BUILTIN_O
#define CALL_NO_KW_BUILTIN_O (-1)
#endif
#ifndef CALL_NO_KW_ISINSTANCE
#define CALL_NO_KW_ISINSTANCE (-1)
#endif
#ifndef CALL_NO_KW_LEN
#define CALL_NO_KW_LEN (-1)
#endif
#ifndef CALL_NO_KW_LIST_APPEND
#define CALL_NO_KW_LIST_APPEND (-1)
#endif
#ifndef CALL_NO_KW_METHOD_DESCRIPTOR_FAST
#define CALL_NO_KW_METHOD_DESCRIPTOR_FAST (-1)
#endif
#ifndef CALL_NO_KW_METHOD_DESCRIPTOR_NOARGS
#define CALL_NO_KW_METHOD_DESCRIPTOR_NOARGS (-1)
#endif
#ifndef CALL_NO_KW_METHOD_DESCRIPTOR_O
#define CALL_NO_KW_METHOD_DESCRIPTOR_O (-1)
#endif
#ifndef CALL_NO_KW_STR_1
#define CALL_NO_KW_STR_1 (-1)
#endif
#ifndef CALL_NO_KW_TUPLE_1
#define CALL_NO_KW_TUPLE_1 (-1)
#endif
#ifndef CALL_NO_KW_TYPE_1
#define CALL_NO_KW_TYPE_1 (-1)
#endif
#ifndef CALL_PY_EXACT_ARGS
#define CALL_PY_EXACT_ARGS (-1)
#endif
#ifndef CALL_PY_GENERAL
#define CALL_PY_GENERAL (-1)
#endif
#ifndef CALL_PY_WITH_DEFAULTS
#define CALL_PY_WITH_DEFAULTS (-1)
#endif
#ifndef CALL_STR_1
#define CALL_STR_1 (-1)
#endif
#ifndef CALL_TUPLE_1
#define CALL_TUPLE_1 (-1)
#endif
#ifndef CALL_TYPE_1
#define CALL_TYPE_1 (-1)
#endif
#ifndef CHECK_EG_MATCH
#define CHECK_EG_MATCH (-1)
#endif
#ifndef CHECK_EXC_MATCH
#define CHECK_EXC_MATCH (-1)
#endif
#ifndef CLEANUP_THROW
#define CLEANUP_THROW (-1)
#endif
#ifndef COMPARE_OP
#define COMPARE_OP (-1)
#endif
#ifndef COMPARE_OP_ADAPTIVE
#define COMPARE_OP_ADAPTIVE (-1)
#endif
#ifndef COMPARE_OP_FLOAT
#define COMPARE_OP_FLOAT (-1)
#endif
#ifndef COMPARE_OP_FLOAT_JUMP
#define COMPARE_OP_FLOAT_JUMP (-1)
#endif
#ifndef COMPARE_OP_INT
#define COMPARE_OP_INT (-1)
#endif
#ifndef COMPARE_OP_INT_JUMP
#define COMPARE_OP_INT_JUMP (-1)
#endif
#ifndef COMPARE_OP_STR
#define COMPARE_OP_STR (-1)
#endif
#ifndef COMPARE_OP_STR_JUMP
#define COMPARE_OP_STR_JUMP (-1)
#endif
#ifndef CONTAINS_OP
#define CONTAINS_OP (-1)
#endif
#ifndef CONTAINS_OP_DICT
#define CONTAINS_OP_DICT (-1)
#endif
#ifndef CONTAINS_OP_SET
#define CONTAINS_OP_SET (-1)
#endif
#ifndef CONVERT_VALUE
#define CONVERT_VALUE (-1)
#endif
#ifndef COPY
#define COPY (-1)
#endif
#ifndef COPY_DICT_WITHOUT_KEYS
#define COPY_DICT_WITHOUT_KEYS (-1)
#endif
#ifndef COPY_FREE_VARS
#define COPY_FREE_VARS (-1)
#endif
#ifndef DELETE_ATTR
#define DELETE_ATTR (-1)
#endif
#ifndef DELETE_DEREF
#define DELETE_DEREF (-1)
#endif
#ifndef DELETE_FAST
#define DELETE_FAST (-1)
#endif
#ifndef DELETE_GLOBAL
#define DELETE_GLOBAL (-1)
#endif
#ifndef DELETE_NAME
#define DELETE_NAME (-1)
#endif
#ifndef DELETE_SUBSCR
#define DELETE_SUBSCR (-1)
#endif
#ifndef DICT_MERGE
#define DICT_MERGE (-1)
#endif
#ifndef DICT_UPDATE
#define DICT_UPDATE (-1)
#endif
#ifndef DO_TRACING
#define DO_TRACING (-1)
#endif
#ifndef DUP_TOP
#define DUP_TOP (-1)
#endif
#ifndef DUP_TOP_TWO
#define DUP_TOP_TWO (-1)
#endif
#ifndef END_ASYNC_FOR
#define END_ASYNC_FOR (-1)
#endif
#ifndef END_FOR
#define END_FOR (-1)
#endif
#ifndef END_SEND
#define END_SEND (-1)
#endif
#ifndef ENTER_EXECUTOR
#define ENTER_EXECUTOR (-1)
#endif
#ifndef EXCEPT_HANDLER
#define EXCEPT_HANDLER (-1)
#endif
#ifndef EXIT_INIT_CHECK
#define EXIT_INIT_CHECK (-1)
#endif
#ifndef EXTENDED_ARG
#define EXTENDED_ARG (-1)
#endif
#ifndef EXTENDED_ARG_QUICK
#define EXTENDED_ARG_QUICK (-1)
#endif
#ifndef FORMAT_SIMPLE
#define FORMAT_SIMPLE (-1)
#endif
#ifndef FORMAT_VALUE
#define FORMAT_VALUE (-1)
#endif
#ifndef FORMAT_WITH_SPEC
#define FORMAT_WITH_SPEC (-1)
#endif
#ifndef FOR_ITER
#define FOR_ITER (-1)
#endif
#ifndef FOR_ITER_GEN
#define FOR_ITER_GEN (-1)
#endif
#ifndef FOR_ITER_LIST
#define FOR_ITER_LIST (-1)
#endif
#ifndef FOR_ITER_RANGE
#define FOR_ITER_RANGE (-1)
#endif
#ifndef FOR_ITER_TUPLE
#define FOR_ITER_TUPLE (-1)
#endif
#ifndef GEN_START
#define GEN_START (-1)
#endif
#ifndef GET_AITER
#define GET_AITER (-1)
#endif
#ifndef GET_ANEXT
#define GET_ANEXT (-1)
#endif
#ifndef GET_AWAITABLE
#define GET_AWAITABLE (-1)
#endif
#ifndef GET_ITER
#define GET_ITER (-1)
#endif
#ifndef GET_LEN
#define GET_LEN (-1)
#endif
#ifndef GET_YIELD_FROM_ITER
#define GET_YIELD_FROM_ITER (-1)
#endif
#ifndef IMPORT_FROM
#define IMPORT_FROM (-1)
#endif
#ifndef IMPORT_NAME
#define IMPORT_NAME (-1)
#endif
#ifndef IMPORT_STAR
#define IMPORT_STAR (-1)
#endif
#ifndef INPLACE_ADD
#define INPLACE_ADD (-1)
#endif
#ifndef INPLACE_AND
#define INPLACE_AND (-1)
#endif
#ifndef INPLACE_FLOOR_DIVIDE
#define INPLACE_FLOOR_DIVIDE (-1)
#endif
#ifndef INPLACE_LSHIFT
#define INPLACE_LSHIFT (-1)
#endif
#ifndef INPLACE_MATRIX_MULTIPLY
#define INPLACE_MATRIX_MULTIPLY (-1)
#endif
#ifndef INPLACE_MODULO
#define INPLACE_MODULO (-1)
#endif
#ifndef INPLACE_MULTIPLY
#define INPLACE_MULTIPLY (-1)
#endif
#ifndef INPLACE_OR
#define INPLACE_OR (-1)
#endif
#ifndef INPLACE_POWER
#define INPLACE_POWER (-1)
#endif
#ifndef INPLACE_RSHIFT
#define INPLACE_RSHIFT (-1)
#endif
#ifndef INPLACE_SUBTRACT
#define INPLACE_SUBTRACT (-1)
#endif
#ifndef INPLACE_TRUE_DIVIDE
#define INPLACE_TRUE_DIVIDE (-1)
#endif
#ifndef INPLACE_XOR
#define INPLACE_XOR (-1)
#endif
#ifndef INSTRUMENTED_CALL
#define INSTRUMENTED_CALL (-1)
#endif
#ifndef INSTRUMENTED_CALL_FUNCTION_EX
#define INSTRUMENTED_CALL_FUNCTION_EX (-1)
#endif
#ifndef INSTRUMENTED_CALL_KW
#define INSTRUMENTED_CALL_KW (-1)
#endif
#ifndef INSTRUMENTED_END_FOR
#define INSTRUMENTED_END_FOR (-1)
#endif
#ifndef INSTRUMENTED_END_SEND
#define INSTRUMENTED_END_SEND (-1)
#endif
#ifndef INSTRUMENTED_FOR_ITER
#define INSTRUMENTED_FOR_ITER (-1)
#endif
#ifndef INSTRUMENTED_INSTRUCTION
#define INSTRUMENTED_INSTRUCTION (-1)
#endif
#ifndef INSTRUMENTED_JUMP_BACKWARD
#define INSTRUMENTED_JUMP_BACKWARD (-1)
#endif
#ifndef INSTRUMENTED_JUMP_FORWARD
#define INSTRUMENTED_JUMP_FORWARD (-1)
#endif
#ifndef INSTRUMENTED_LINE
#define INSTRUMENTED_LINE (-1)
#endif
#ifndef INSTRUMENTED_LOAD_SUPER_ATTR
#define INSTRUMENTED_LOAD_SUPER_ATTR (-1)
#endif
#ifndef INSTRUMENTED_POP_JUMP_IF_FALSE
#define INSTRUMENTED_POP_JUMP_IF_FALSE (-1)
#endif
#ifndef INSTRUMENTED_POP_JUMP_IF_NONE
#define INSTRUMENTED_POP_JUMP_IF_NONE (-1)
#endif
#ifndef INSTRUMENTED_POP_JUMP_IF_NOT_NONE
#define INSTRUMENTED_POP_JUMP_IF_NOT_NONE (-1)
#endif
#ifndef INSTRUMENTED_POP_JUMP_IF_TRUE
#define INSTRUMENTED_POP_JUMP_IF_TRUE (-1)
#endif
#ifndef INSTRUMENTED_RESUME
#define INSTRUMENTED_RESUME (-1)
#endif
#ifndef INSTRUMENTED_RETURN_CONST
#define INSTRUMENTED_RETURN_CONST (-1)
#endif
#ifndef INSTRUMENTED_RETURN_VALUE
#define INSTRUMENTED_RETURN_VALUE (-1)
#endif
#ifndef INSTRUMENTED_YIELD_VALUE
#define INSTRUMENTED_YIELD_VALUE (-1)
#endif
#ifndef INTERPRETER_EXIT
#define INTERPRETER_EXIT (-1)
#endif
#ifndef IS_OP
#define IS_OP (-1)
#endif
#ifndef JUMP
#define JUMP (-1)
#endif
#ifndef JUMP_ABSOLUTE
#define JUMP_ABSOLUTE (-1)
#endif
#ifndef JUMP_BACKWARD
#define JUMP_BACKWARD (-1)
#endif
#ifndef JUMP_BACKWARD_NO_INTERRUPT
#define JUMP_BACKWARD_NO_INTERRUPT (-1)
#endif
#ifndef JUMP_BACKWARD_QUICK
#define JUMP_BACKWARD_QUICK (-1)
#endif
#ifndef JUMP_FORWARD
#define JUMP_FORWARD (-1)
#endif
#ifndef JUMP_IF_FALSE_OR_POP
#define JUMP_IF_FALSE_OR_POP (-1)
#endif
#ifndef JUMP_IF_NOT_EXC_MATCH
#define JUMP_IF_NOT_EXC_MATCH (-1)
#endif
#ifndef JUMP_IF_TRUE_OR_POP
#define JUMP_IF_TRUE_OR_POP (-1)
#endif
#ifndef JUMP_NO_INTERRUPT
#define JUMP_NO_INTERRUPT (-1)
#endif
#ifndef KW_NAMES
#define KW_NAMES (-1)
#endif
#ifndef LIST_APPEND
#define LIST_APPEND (-1)
#endif
#ifndef LIST_EXTEND
#define LIST_EXTEND (-1)
#endif
#ifndef LIST_TO_TUPLE
#define LIST_TO_TUPLE (-1)
#endif
#ifndef LOAD_ASSERTION_ERROR
#define LOAD_ASSERTION_ERROR (-1)
#endif
#ifndef LOAD_ATTR
#define LOAD_ATTR (-1)
#endif
#ifndef LOAD_ATTR_ADAPTIVE
#define LOAD_ATTR_ADAPTIVE (-1)
#endif
#ifndef LOAD_ATTR_CLASS
#define LOAD_ATTR_CLASS (-1)
#endif
#ifndef LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN
#define LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN (-1)
#endif
#ifndef LOAD_ATTR_INSTANCE_VALUE
#define LOAD_ATTR_INSTANCE_VALUE (-1)
#endif
#ifndef LOAD_ATTR_METHOD_LAZY_DICT
#define LOAD_ATTR_METHOD_LAZY_DICT (-1)
#endif
#ifndef LOAD_ATTR_METHOD_NO_DICT
#define LOAD_ATTR_METHOD_NO_DICT (-1)
#endif
#ifndef LOAD_ATTR_METHOD_WITH_VALUES
#define LOAD_ATTR_METHOD_WITH_VALUES (-1)
#endif
#ifndef LOAD_ATTR_MODULE
#define LOAD_ATTR_MODULE (-1)
#endif
#ifndef LOAD_ATTR_NONDESCRIPTOR_NO_DICT
#define LOAD_ATTR_NONDESCRIPTOR_NO_DICT (-1)
#endif
#ifndef LOAD_ATTR_NONDESCRIPTOR_WITH_VALUES
#define LOAD_ATTR_NONDESCRIPTOR_WITH_VALUES (-1)
#endif
#ifndef LOAD_ATTR_PROPERTY
#define LOAD_ATTR_PROPERTY (-1)
#endif
#ifndef LOAD_ATTR_SLOT
#define LOAD_ATTR_SLOT (-1)
#endif
#ifndef LOAD_ATTR_WITH_HINT
#define LOAD_ATTR_WITH_HINT (-1)
#endif
#ifndef LOAD_BUILD_CLASS
#define LOAD_BUILD_CLASS (-1)
#endif
#ifndef LOAD_CLASSDEREF
#define LOAD_CLASSDEREF (-1)
#endif
#ifndef LOAD_CLOSURE
#define LOAD_CLOSURE (-1)
#endif
#ifndef LOAD_CONST
#define LOAD_CONST (-1)
#endif
#ifndef LOAD_CONST__LOAD_FAST
#define LOAD_CONST__LOAD_FAST (-1)
#endif
#ifndef LOAD_DEREF
#define LOAD_DEREF (-1)
#endif
#ifndef LOAD_FAST
#define LOAD_FAST (-1)
#endif
#ifndef LOAD_FAST_AND_CLEAR
#define LOAD_FAST_AND_CLEAR (-1)
#endif
#ifndef LOAD_FAST_CHECK
#define LOAD_FAST_CHECK (-1)
#endif
#ifndef LOAD_FAST_LOAD_FAST
#define LOAD_FAST_LOAD_FAST (-1)
#endif
#ifndef LOAD_FAST__LOAD_CONST
#define LOAD_FAST__LOAD_CONST (-1)
#endif
#ifndef LOAD_FAST__LOAD_FAST
#define LOAD_FAST__LOAD_FAST (-1)
#endif
#ifndef LOAD_FROM_DICT_OR_DEREF
#define LOAD_FROM_DICT_OR_DEREF (-1)
#endif
#ifndef LOAD_FROM_DICT_OR_GLOBALS
#define LOAD_FROM_DICT_OR_GLOBALS (-1)
#endif
#ifndef LOAD_GLOBAL
#define LOAD_GLOBAL (-1)
#endif
#ifndef LOAD_GLOBAL_ADAPTIVE
#define LOAD_GLOBAL_ADAPTIVE (-1)
#endif
#ifndef LOAD_GLOBAL_BUILTIN
#define LOAD_GLOBAL_BUILTIN (-1)
#endif
#ifndef LOAD_GLOBAL_MODULE
#define LOAD_GLOBAL_MODULE (-1)
#endif
#ifndef LOAD_LOCALS
#define LOAD_LOCALS (-1)
#endif
#ifndef LOAD_METHOD
#define LOAD_METHOD (-1)
#endif
#ifndef LOAD_METHOD_ADAPTIVE
#define LOAD_METHOD_ADAPTIVE (-1)
#endif
#ifndef LOAD_METHOD_CLASS
#define LOAD_METHOD_CLASS (-1)
#endif
#ifndef LOAD_METHOD_MODULE
#define LOAD_METHOD_MODULE (-1)
#endif
#ifndef LOAD_METHOD_NO_DICT
#define LOAD_METHOD_NO_DICT (-1)
#endif
#ifndef LOAD_METHOD_WITH_DICT
#define LOAD_METHOD_WITH_DICT (-1)
#endif
#ifndef LOAD_METHOD_WITH_VALUES
#define LOAD_METHOD_WITH_VALUES (-1)
#endif
#ifndef LOAD_NAME
#define LOAD_NAME (-1)
#endif
#ifndef LOAD_SUPER_ATTR
#define LOAD_SUPER_ATTR (-1)
#endif
#ifndef LOAD_SUPER_ATTR_ATTR
#define LOAD_SUPER_ATTR_ATTR (-1)
#endif
#ifndef LOAD_SUPER_ATTR_METHOD
#define LOAD_SUPER_ATTR_METHOD (-1)
#endif
#ifndef LOAD_SUPER_METHOD
#define LOAD_SUPER_METHOD (-1)
#endif
#ifndef LOAD_ZERO_SUPER_ATTR
#define LOAD_ZERO_SUPER_ATTR (-1)
#endif
#ifndef LOAD_ZERO_SUPER_METHOD
#define LOAD_ZERO_SUPER_METHOD (-1)
#endif
#ifndef MAKE_CELL
#define MAKE_CELL (-1)
#endif
#ifndef MAKE_FUNCTION
#define MAKE_FUNCTION (-1)
#endif
#ifndef MAP_ADD
#define MAP_ADD (-1)
#endif
#ifndef MATCH_CLASS
#define MATCH_CLASS (-1)
#endif
#ifndef MATCH_KEYS
#define MATCH_KEYS (-1)
#endif
#ifndef MATCH_MAPPING
#define MATCH_MAPPING (-1)
#endif
#ifndef MATCH_SEQUENCE
#define MATCH_SEQUENCE (-1)
#endif
#ifndef NOP
#define NOP (-1)
#endif
#ifndef POP_BLOCK
#define POP_BLOCK (-1)
#endif
#ifndef POP_EXCEPT
#define POP_EXCEPT (-1)
#endif
#ifndef POP_JUMP_BACKWARD_IF_FALSE
#define POP_JUMP_BACKWARD_IF_FALSE (-1)
#endif
#ifndef POP_JUMP_BACKWARD_IF_NONE
#define POP_JUMP_BACKWARD_IF_NONE (-1)
#endif
#ifndef POP_JUMP_BACKWARD_IF_NOT_NONE
#define POP_JUMP_BACKWARD_IF_NOT_NONE (-1)
#endif
#ifndef POP_JUMP_BACKWARD_IF_TRUE
#define POP_JUMP_BACKWARD_IF_TRUE (-1)
#endif
#ifndef POP_JUMP_FORWARD_IF_FALSE
#define POP_JUMP_FORWARD_IF_FALSE (-1)
#endif
#ifndef POP_JUMP_FORWARD_IF_NONE
#define POP_JUMP_FORWARD_IF_NONE (-1)
#endif
#ifndef POP_JUMP_FORWARD_IF_NOT_NONE
#define POP_JUMP_FORWARD_IF_NOT_NONE (-1)
#endif
#ifndef POP_JUMP_FORWARD_IF_TRUE
#define POP_JUMP_FORWARD_IF_TRUE (-1)
#endif
#ifndef POP_JUMP_IF_FALSE
#define POP_JUMP_IF_FALSE (-1)
#endif
#ifndef POP_JUMP_IF_NONE
#define POP_JUMP_IF_NONE (-1)
#endif
#ifndef POP_JUMP_IF_NOT_NONE
#define POP_JUMP_IF_NOT_NONE (-1)
#endif
#ifndef POP_JUMP_IF_TRUE
#define POP_JUMP_IF_TRUE (-1)
#endif
#ifndef POP_TOP
#define POP_TOP (-1)
#endif
#ifndef PRECALL
#define PRECALL (-1)
#endif
#ifndef PRECALL_ADAPTIVE
#define PRECALL_ADAPTIVE (-1)
#endif
#ifndef PRECALL_BOUND_METHOD
#define PRECALL_BOUND_METHOD (-1)
#endif
#ifndef PRECALL_BUILTIN_CLASS
#define PRECALL_BUILTIN_CLASS (-1)
#endif
#ifndef PRECALL_BUILTIN_FAST_WITH_KEYWORDS
#define PRECALL_BUILTIN_FAST_WITH_KEYWORDS (-1)
#endif
#ifndef PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS
#define PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS (-1)
#endif
#ifndef PRECALL_NO_KW_BUILTIN_FAST
#define PRECALL_NO_KW_BUILTIN_FAST (-1)
#endif
#ifndef PRECALL_NO_KW_BUILTIN_O
#define PRECALL_NO_KW_BUILTIN_O (-1)
#endif
#ifndef PRECALL_NO_KW_ISINSTANCE
#define PRECALL_NO_KW_ISINSTANCE (-1)
#endif
#ifndef PRECALL_NO_KW_LEN
#define PRECALL_NO_KW_LEN (-1)
#endif
#ifndef PRECALL_NO_KW_LIST_APPEND
#define PRECALL_NO_KW_LIST_APPEND (-1)
#endif
#ifndef PRECALL_NO_KW_METHOD_DESCRIPTOR_FAST
#define PRECALL_NO_KW_METHOD_DESCRIPTOR_FAST (-1)
#endif
#ifndef PRECALL_NO_KW_METHOD_DESCRIPTOR_NOARGS
#define PRECALL_NO_KW_METHOD_DESCRIPTOR_NOARGS (-1)
#endif
#ifndef PRECALL_NO_KW_METHOD_DESCRIPTOR_O
#define PRECALL_NO_KW_METHOD_DESCRIPTOR_O (-1)
#endif
#ifndef PRECALL_NO_KW_STR_1
#define PRECALL_NO_KW_STR_1 (-1)
#endif
#ifndef PRECALL_NO_KW_TUPLE_1
#define PRECALL_NO_KW_TUPLE_1 (-1)
#endif
#ifndef PRECALL_NO_KW_TYPE_1
#define PRECALL_NO_KW_TYPE_1 (-1)
#endif
#ifndef PRECALL_PYFUNC
#define PRECALL_PYFUNC (-1)
#endif
#ifndef PREP_RERAISE_STAR
#define PREP_RERAISE_STAR (-1)
#endif
#ifndef PRINT_EXPR
#define PRINT_EXPR (-1)
#endif
#ifndef PUSH_EXC_INFO
#define PUSH_EXC_INFO (-1)
#endif
#ifndef PUSH_NULL
#define PUSH_NULL (-1)
#endif
#ifndef RAISE_VARARGS
#define RAISE_VARARGS (-1)
#endif
#ifndef RERAISE
#define RERAISE (-1)
#endif
#ifndef RESERVED
#define RESERVED (-1)
#endif
#ifndef RESUME
#define RESUME (-1)
#endif
#ifndef RESUME_CHECK
#define RESUME_CHECK (-1)
#endif
#ifndef RESUME_QUICK
#define RESUME_QUICK (-1)
#endif
#ifndef RETURN_CONST
#define RETURN_CONST (-1)
#endif
#ifndef RETURN_GENERATOR
#define RETURN_GENERATOR (-1)
#endif
#ifndef RETURN_VALUE
#define RETURN_VALUE (-1)
#endif
#ifndef ROT_FOUR
#define ROT_FOUR (-1)
#endif
#ifndef ROT_N
#define ROT_N (-1)
#endif
#ifndef ROT_THREE
#define ROT_THREE (-1)
#endif
#ifndef ROT_TWO
#define ROT_TWO (-1)
#endif
#ifndef SEND
#define SEND (-1)
#endif
#ifndef SEND_GEN
#define SEND_GEN (-1)
#endif
#ifndef SETUP_ANNOTATIONS
#define SETUP_ANNOTATIONS (-1)
#endif
#ifndef SETUP_ASYNC_WITH
#define SETUP_ASYNC_WITH (-1)
#endif
#ifndef SETUP_CLEANUP
#define SETUP_CLEANUP (-1)
#endif
#ifndef SETUP_FINALLY
#define SETUP_FINALLY (-1)
#endif
#ifndef SETUP_WITH
#define SETUP_WITH (-1)
#endif
#ifndef SET_ADD
#define SET_ADD (-1)
#endif
#ifndef SET_FUNCTION_ATTRIBUTE
#define SET_FUNCTION_ATTRIBUTE (-1)
#endif
#ifndef SET_UPDATE
#define SET_UPDATE (-1)
#endif
#ifndef STORE_ATTR
#define STORE_ATTR (-1)
#endif
#ifndef STORE_ATTR_ADAPTIVE
#define STORE_ATTR_ADAPTIVE (-1)
#endif
#ifndef STORE_ATTR_INSTANCE_VALUE
#define STORE_ATTR_INSTANCE_VALUE (-1)
#endif
#ifndef STORE_ATTR_SLOT
#define STORE_ATTR_SLOT (-1)
#endif
#ifndef STORE_ATTR_WITH_HINT
#define STORE_ATTR_WITH_HINT (-1)
#endif
#ifndef STORE_DEREF
#define STORE_DEREF (-1)
#endif
#ifndef STORE_FAST
#define STORE_FAST (-1)
#endif
#ifndef STORE_FAST_LOAD_FAST
#define STORE_FAST_LOAD_FAST (-1)
#endif
#ifndef STORE_FAST_MAYBE_NULL
#define STORE_FAST_MAYBE_NULL (-1)
#endif
#ifndef STORE_FAST_STORE_FAST
#define STORE_FAST_STORE_FAST (-1)
#endif
#ifndef STORE_FAST__LOAD_FAST
#define STORE_FAST__LOAD_FAST (-1)
#endif
#ifndef STORE_FAST__STORE_FAST
#define STORE_FAST__STORE_FAST (-1)
#endif
#ifndef STORE_GLOBAL
#define STORE_GLOBAL (-1)
#endif
#ifndef STORE_NAME
#define STORE_NAME (-1)
#endif
#ifndef STORE_SLICE
#define STORE_SLICE (-1)
#endif
#ifndef STORE_SUBSCR
#define STORE_SUBSCR (-1)
#endif
#ifndef STORE_SUBSCR_ADAPTIVE
#define STORE_SUBSCR_ADAPTIVE (-1)
#endif
#ifndef STORE_SUBSCR_DICT
#define STORE_SUBSCR_DICT (-1)
#endif
#ifndef STORE_SUBSCR_LIST_INT
#define STORE_SUBSCR_LIST_INT (-1)
#endif
#ifndef SWAP
#define SWAP (-1)
#endif
#ifndef TO_BOOL
#define TO_BOOL (-1)
#endif
#ifndef TO_BOOL_ALWAYS_TRUE
#define TO_BOOL_ALWAYS_TRUE (-1)
#endif
#ifndef TO_BOOL_BOOL
#define TO_BOOL_BOOL (-1)
#endif
#ifndef TO_BOOL_INT
#define TO_BOOL_INT (-1)
#endif
#ifndef TO_BOOL_LIST
#define TO_BOOL_LIST (-1)
#endif
#ifndef TO_BOOL_NONE
#define TO_BOOL_NONE (-1)
#endif
#ifndef TO_BOOL_STR
#define TO_BOOL_STR (-1)
#endif
#ifndef UNARY_INVERT
#define UNARY_INVERT (-1)
#endif
#ifndef UNARY_NEGATIVE
#define UNARY_NEGATIVE (-1)
#endif
#ifndef UNARY_NOT
#define UNARY_NOT (-1)
#endif
#ifndef UNARY_POSITIVE
#define UNARY_POSITIVE (-1)
#endif
#ifndef UNPACK_EX
#define UNPACK_EX (-1)
#endif
#ifndef UNPACK_SEQUENCE
#define UNPACK_SEQUENCE (-1)
#endif
#ifndef UNPACK_SEQUENCE_ADAPTIVE
#define UNPACK_SEQUENCE_ADAPTIVE (-1)
#endif
#ifndef UNPACK_SEQUENCE_LIST
#define UNPACK_SEQUENCE_LIST (-1)
#endif
#ifndef UNPACK_SEQUENCE_TUPLE
#define UNPACK_SEQUENCE_TUPLE (-1)
#endif
#ifndef UNPACK_SEQUENCE_TWO_TUPLE
#define UNPACK_SEQUENCE_TWO_TUPLE (-1)
#endif
#ifndef WITH_EXCEPT_START
#define WITH_EXCEPT_START (-1)
#endif
#ifndef YIELD_FROM
#define YIELD_FROM (-1)
#endif
#ifndef YIELD_VALUE
#define YIELD_VALUE (-1)
#endif
