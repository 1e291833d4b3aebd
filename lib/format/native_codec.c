/*
 * native_codec.c - encode and parse the native sampler's record bodies
 * (isc_native_codec.h; formats/trace.md §6.6).  The parsers take untrusted
 * bytes: counts are bounded before any array is filled, lengths before any
 * pointer is formed.
 */
#include <errno.h>
#include <string.h>

#include "isc_trace_int.h" /* isc_record_nvarints */
#include "isc_native_codec.h"

/* Reads a varint that must fit in 32 bits. */
static int get_u32(const uint8_t **p, const uint8_t *e, uint32_t *v)
{
	uint64_t x;
	if (isc_get_varint(p, e, &x) || x > UINT32_MAX)
		return -EBADMSG;
	*v = (uint32_t)x;
	return 0;
}

int isc_native_sample_encode(struct isc_buf *b, const struct isc_native_sample *s)
{
	if (s->nkernel > ISC_NATIVE_MAX_KERNEL || s->nregs > ISC_NATIVE_MAX_REGS)
		return -EINVAL;
	int rc = isc_buf_reserve(b, 40 + 10 * ((size_t)s->nkernel + s->nregs) + s->stack_len);
	rc |= isc_buf_put_varint(b, s->pid);
	rc |= isc_buf_put_varint(b, s->tid);
	rc |= isc_buf_put_varint(b, s->flags);
	rc |= isc_buf_put_varint(b, s->nkernel);
	for (uint32_t i = 0; i < s->nkernel; i++)
		rc |= isc_buf_put_varint(b, s->kernel[i]);
	rc |= isc_buf_put_varint(b, s->nregs);
	for (uint32_t i = 0; i < s->nregs; i++)
		rc |= isc_buf_put_varint(b, s->regs[i]);
	rc |= isc_buf_put(b, s->stack, s->stack_len);
	return rc ? -ENOMEM : 0;
}

int isc_native_sample_parse(const uint8_t *body, size_t len, struct isc_native_sample *s)
{
	const uint8_t *p = body, *e = body + len;
	if (get_u32(&p, e, &s->pid) || get_u32(&p, e, &s->tid) || get_u32(&p, e, &s->flags) ||
	    get_u32(&p, e, &s->nkernel) || s->nkernel > ISC_NATIVE_MAX_KERNEL)
		return -EBADMSG;
	for (uint32_t i = 0; i < s->nkernel; i++)
		if (isc_get_varint(&p, e, &s->kernel[i]))
			return -EBADMSG;
	if (get_u32(&p, e, &s->nregs) || s->nregs > ISC_NATIVE_MAX_REGS)
		return -EBADMSG;
	for (uint32_t i = 0; i < s->nregs; i++)
		if (isc_get_varint(&p, e, &s->regs[i]))
			return -EBADMSG;
	s->stack = p;
	s->stack_len = (size_t)(e - p);
	return 0;
}

int isc_native_map_encode(struct isc_buf *b, const struct isc_native_map *m)
{
	int rc = isc_buf_put_varint(b, m->pid);
	rc |= isc_buf_put_varint(b, 0);
	rc |= isc_buf_put_varint(b, m->start);
	rc |= isc_buf_put_varint(b, m->len);
	rc |= isc_buf_put_varint(b, m->pgoff);
	rc |= isc_buf_put_varint(b, m->prot);
	rc |= isc_buf_put_varint(b, m->source);
	rc |= isc_buf_put_bytes(b, m->build_id, m->build_id_len);
	rc |= isc_buf_put(b, m->path, m->path_len);
	return rc ? -ENOMEM : 0;
}

int isc_native_map_parse(const uint8_t *body, size_t len, struct isc_native_map *m)
{
	const uint8_t *p = body, *e = body + len;
	uint32_t tid;
	uint64_t blen;
	if (get_u32(&p, e, &m->pid) || get_u32(&p, e, &tid) || isc_get_varint(&p, e, &m->start) ||
	    isc_get_varint(&p, e, &m->len) || isc_get_varint(&p, e, &m->pgoff) || get_u32(&p, e, &m->prot) ||
	    get_u32(&p, e, &m->source) || isc_get_varint(&p, e, &blen) || blen > (uint64_t)(e - p) ||
	    blen > 64 || m->len == 0 || m->start + m->len < m->start)
		return -EBADMSG;
	m->build_id = p;
	m->build_id_len = (size_t)blen;
	p += blen;
	m->path = p;
	m->path_len = (size_t)(e - p);
	return 0;
}

int isc_native_task_encode(struct isc_buf *b, const struct isc_native_task *t)
{
	int rc = isc_buf_put_varint(b, t->pid);
	rc |= isc_buf_put_varint(b, t->tid);
	rc |= isc_buf_put_varint(b, t->what);
	rc |= isc_buf_put_varint(b, t->ppid);
	rc |= isc_buf_put_varint(b, t->ptid);
	rc |= isc_buf_put(b, t->comm, t->comm_len);
	return rc ? -ENOMEM : 0;
}

int isc_native_task_parse(const uint8_t *body, size_t len, struct isc_native_task *t)
{
	const uint8_t *p = body, *e = body + len;
	if (get_u32(&p, e, &t->pid) || get_u32(&p, e, &t->tid) || get_u32(&p, e, &t->what) ||
	    get_u32(&p, e, &t->ppid) || get_u32(&p, e, &t->ptid))
		return -EBADMSG;
	t->comm = p;
	t->comm_len = (size_t)(e - p);
	return 0;
}

int isc_native_sampler_encode(struct isc_buf *b, const struct isc_native_sampler *s)
{
	const uint64_t v[] = { 0, 0, s->event, s->period_ns, s->stack_bytes, s->arch, s->nregs, s->flags, s->nrings };
	int rc = 0;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		rc |= isc_buf_put_varint(b, v[i]);
	return rc ? -ENOMEM : 0;
}

int isc_native_sampler_parse(const uint8_t *body, size_t len, struct isc_native_sampler *s)
{
	const uint8_t *p = body, *e = body + len;
	uint64_t v[9];
	for (int i = 0; i < 9; i++)
		if (isc_get_varint(&p, e, &v[i]))
			return -EBADMSG;
	*s = (struct isc_native_sampler){ v[2], v[3], v[4], v[5], v[6], v[7], v[8] };
	return s->nregs > ISC_NATIVE_MAX_REGS ? -EBADMSG : 0;
}

int isc_native_ksym_encode(struct isc_buf *b, const struct isc_native_ksym *k)
{
	int rc = isc_buf_put_varint(b, 0);
	rc |= isc_buf_put_varint(b, 0);
	rc |= isc_buf_put_varint(b, k->start);
	rc |= isc_buf_put(b, k->name, k->name_len);
	return rc ? -ENOMEM : 0;
}

int isc_native_ksym_parse(const uint8_t *body, size_t len, struct isc_native_ksym *k)
{
	const uint8_t *p = body, *e = body + len;
	uint64_t pid, tid;
	if (isc_get_varint(&p, e, &pid) || isc_get_varint(&p, e, &tid) || isc_get_varint(&p, e, &k->start))
		return -EBADMSG;
	k->name = p;
	k->name_len = (size_t)(e - p);
	return 0;
}

bool isc_native_record_ok(uint8_t type, const uint8_t *body, size_t len)
{
	union {
		struct isc_native_sample s;
		struct isc_native_map m;
		struct isc_native_task t;
		struct isc_native_sampler c;
		struct isc_native_ksym k;
	} u;
	const uint8_t *p = body, *e = body + len;
	uint64_t v;
	switch (type) {
	case ISC_REC_NATIVE_SAMPLER: return isc_native_sampler_parse(body, len, &u.c) == 0;
	case ISC_REC_NATIVE_SAMPLE: return isc_native_sample_parse(body, len, &u.s) == 0;
	case ISC_REC_NATIVE_MAP: return isc_native_map_parse(body, len, &u.m) == 0;
	case ISC_REC_NATIVE_TASK: return isc_native_task_parse(body, len, &u.t) == 0;
	case ISC_REC_NATIVE_KSYM: return isc_native_ksym_parse(body, len, &u.k) == 0;
	case ISC_REC_NATIVE_LOST:
	case ISC_REC_NATIVE_STATS:
		for (unsigned i = 0; i < isc_record_nvarints(type); i++)
			if (isc_get_varint(&p, e, &v))
				return false;
		return true;
	default:
		return false;
	}
}
