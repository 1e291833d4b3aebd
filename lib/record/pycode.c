/*
 * pycode.c - the value stack depth at every instruction of a code object.
 *
 *   units:  | op arg | op arg | cache | cache | op arg | ...     (3.11+: caches after
 *             EXTENDED_ARG prefixes      instructions, skipped)
 *   walk:   worklist from unit 0 (depth 0) and every exception handler
 *           (3.11+: its table's depth, + 1 for lasti, + 1 for the
 *           exception); an instruction at depth d gives its next one
 *           d + effect(no jump) unless it never falls through, and its
 *           jump target d + effect(jump).  A unit reached twice must be
 *           reached at the same depth (CPython's compiler guarantees it).
 *
 * The bytes are the other process's and untrusted: every index is checked,
 * every depth bounded, and the walk visits each unit at most once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pycode.h"

int32_t isc_py_stack_effect(const struct isc_pylayout *L, unsigned op, uint32_t oparg, bool jump)
{
	if (op > 255 || L->se_form[op] == ISC_PY_SE_NONE)
		return INT32_MIN;
	int32_t x;
	switch (L->se_form[op]) {
	case ISC_PY_SE_CONST: x = 0; break;
	case ISC_PY_SE_ARG: x = (int32_t)(oparg & 0x7fffffff); break;
	case ISC_PY_SE_AND1: x = oparg & 1; break;
	case ISC_PY_SE_FLAGS4: x = (oparg & 1) + (oparg >> 1 & 1) + (oparg >> 2 & 1) + (oparg >> 3 & 1); break;
	case ISC_PY_SE_UNPACK: x = (int32_t)((oparg & 0xFF) + ((oparg >> 8) & 0xFFFFFF)); break;
	case ISC_PY_SE_SLICE3: x = oparg == 3; break;
	case ISC_PY_SE_SPEC: x = (oparg >> 2) & 1; break;
	default: return INT32_MIN;
	}
	int64_t e = (int64_t)(jump ? L->se_jbase[op] : L->se_base[op]) + (int64_t)L->se_mul[op] * x;
	return e < -(1 << 24) || e > (1 << 24) ? INT32_MIN : (int32_t)e;
}

/* 3.11+ exception table varint: 6 bits a byte, most significant first, bit 6 = more. */
static int exc_varint(const uint8_t *p, size_t len, size_t *i, uint32_t *v)
{
	uint32_t x = 0;
	for (int k = 0; k < 5; k++) {
		if (*i >= len)
			return -1;
		uint8_t b = p[(*i)++];
		x = x << 6 | (b & 63);
		if (!(b & 64)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

struct walk {
	struct isc_py_unit *out;
	uint32_t *todo;
	size_t n, ntodo;
	int limit;
};

static int reach(struct walk *w, uint64_t unit, int64_t depth)
{
	if (unit >= w->n)
		return -EINVAL;
	if (depth < 0 || depth > w->limit)
		return -EBADMSG;
	struct isc_py_unit *u = &w->out[unit];
	if (u->depth >= 0)
		return u->depth == depth ? 0 : -EBADMSG;
	u->depth = (int16_t)depth;
	w->todo[w->ntodo++] = (uint32_t)unit; /* at most once per unit: n slots */
	return 0;
}

/* Walks the instruction starting at unit i (its EXTENDED_ARG prefixes first). */
static int step(const struct isc_pylayout *L, const uint8_t *code, struct walk *w, size_t i)
{
	int d = w->out[i].depth;
	uint32_t ext = 0;
	unsigned op = L->deopt[code[2 * i]];
	while (op == L->extended_arg) {
		ext = (ext | code[2 * i + 1]) << 8;
		if (++i >= w->n || ext > (1u << 24))
			return -EINVAL;
		/* the prefixed instruction starts at the prefix's depth; it may
		 * also be a jump target of its own */
		struct isc_py_unit *u = &w->out[i];
		if (u->depth >= 0 && u->depth != d)
			return -EBADMSG;
		u->depth = (int16_t)d;
		op = L->deopt[code[2 * i]];
	}
	uint32_t oparg = ext | code[2 * i + 1];
	w->out[i].op = (uint8_t)op;
	w->out[i].oparg = oparg;
	int32_t e0 = isc_py_stack_effect(L, op, oparg, false), e1 = isc_py_stack_effect(L, op, oparg, true);
	if (e0 == INT32_MIN || e1 == INT32_MIN || op == L->extended_arg)
		return -EINVAL;
	uint64_t next = i + 1 + (uint64_t)L->caches[op];
	unsigned flow = L->flow[op];
	int rc = 0;
	if (!(flow & ISC_PY_FLOW_END))
		rc = reach(w, next, (int64_t)d + e0);
	uint64_t arg_units = (uint64_t)oparg * L->jump_unit / 2, target = UINT64_MAX;
	switch (flow & 3) {
	case ISC_PY_JUMP_ABS: target = arg_units; break;
	case ISC_PY_JUMP_FWD: target = next + arg_units; break;
	case ISC_PY_JUMP_BACK: target = arg_units <= next ? next - arg_units : UINT64_MAX; break;
	default: break;
	}
	if (!rc && (flow & 3))
		rc = reach(w, target, (int64_t)d + e1);
	return rc;
}

int isc_py_depths(const struct isc_pylayout *L, const uint8_t *code, size_t nunits, const uint8_t *exc, size_t exclen,
		  unsigned stacksize, struct isc_py_unit *out)
{
	if (!nunits || nunits > ISC_PY_CODE_UNITS_MAX || !L->jump_unit)
		return -EINVAL;
	for (size_t i = 0; i < nunits; i++)
		out[i] = (struct isc_py_unit){ -1, 0, 0, 0 };
	struct walk w = { out, malloc(nunits * sizeof(uint32_t)), nunits, 0,
			  stacksize && stacksize < 32767 ? (int)stacksize : 32767 };
	if (!w.todo)
		return -ENOMEM;
	int rc = reach(&w, 0, 0);
	/* 3.11+: every handler, at the depth its table entry restores, plus
	 * the lasti it may push, plus the exception */
	for (size_t i = 0; !rc && exc && i < exclen;) {
		uint32_t start, len, target, dl;
		if (exc_varint(exc, exclen, &i, &start) || exc_varint(exc, exclen, &i, &len) ||
		    exc_varint(exc, exclen, &i, &target) || exc_varint(exc, exclen, &i, &dl)) {
			rc = -EINVAL;
			break;
		}
		rc = reach(&w, target, (int64_t)(dl >> 1) + (dl & 1) + 1);
	}
	while (!rc && w.ntodo)
		rc = step(L, code, &w, w.todo[--w.ntodo]);
	free(w.todo);
	return rc;
}
