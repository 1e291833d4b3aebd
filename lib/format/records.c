/*
 * records.c - what the format says about record bodies beyond the file
 * header: how many leading varints a sample-class record has, which
 * records an agent may write into a ring (the recorder's check on
 * untrusted shared memory), and the STRING_DEF and EXCEPTION bodies; and
 * the NUL-safe copy of record bytes into C strings.
 */
#include <errno.h>
#include <string.h>

#include "isc_trace_int.h"

unsigned isc_record_nvarints(uint8_t type)
{
	switch (type) {
	case ISC_REC_PROC_SAMPLE: return 9;
	case ISC_REC_THREAD_SAMPLE: return 9;
	case ISC_REC_PRESSURE: return 4;
	case ISC_REC_MEMINFO: return 4;
	case ISC_REC_NUMA_MAPS: return 2; /* pid n, then n values */
	case ISC_REC_SMAPS: return 5;
	case ISC_REC_CLOCK_PAIR: return 2;
	case ISC_REC_PROC_INFO: return 2; /* then varint len + cmdline */
	case ISC_REC_PROC_EXIT: return 3;
	case ISC_REC_THREAD_NAME: return 2; /* then name bytes */
	case ISC_REC_DROPPED: return 1;
	case ISC_REC_GPU_SAMPLE: return 12;
	case ISC_REC_GPU_INFO: return 5; /* then uuid NUL name */
	case ISC_REC_WARNING: return 2;  /* then the message */
	case ISC_REC_THREAD_WAIT: return 10; /* then wchan bytes */
	case ISC_REC_PY_SAMPLE: return 5;    /* then depth x (code_id, line), then (flags bit 4) callee_id callee,
					      then (flags bit 5) run_ns wait_ns */
	case ISC_REC_PY_SAMPLER: return 6;
	case ISC_REC_NVTX_RANGE: return 6;
	case ISC_REC_GPU_MEMORY: return 8;
	case ISC_REC_GPU_DROPPED: return 1;
	case ISC_REC_GPU_AGENT: return 4; /* then the agent's version */
	case ISC_REC_DEVICE: return 6; /* then name bytes */
	case ISC_REC_META: return 1;   /* key length, then key and value bytes */
	case ISC_REC_SOURCE_INFO: return 6; /* then name NUL host NUL boot id */
	case ISC_REC_CALIBRATION: return 6;
	case ISC_REC_EXCEPTION: return 1; /* then counted type, file, function; the message */
	case ISC_REC_EXCEPTION_REF: return 4;
	case ISC_REC_NATIVE_SAMPLER: return 9;
	case ISC_REC_NATIVE_SAMPLE: return 4; /* pid tid flags nkernel, then the chain, registers, stack */
	case ISC_REC_NATIVE_MAP: return 7;    /* then counted build id, path */
	case ISC_REC_NATIVE_TASK: return 5;   /* then comm */
	case ISC_REC_NATIVE_LOST: return 3;
	case ISC_REC_NATIVE_KSYM: return 3;   /* then the name */
	case ISC_REC_NATIVE_STATS: return 8;
	case ISC_REC_ALLOC:
	case ISC_REC_TL_ALLOC: return 8;      /* then depth x (code_id, line), nnative, addresses */
	case ISC_REC_FREE:
	case ISC_REC_TL_FREE: return 6;
	case ISC_REC_ALLOC_SITE:
	case ISC_REC_TL_ALLOC_SITE: return 12; /* then depth x (code_id, line) */
	case ISC_REC_ALLOC_INFO:
	case ISC_REC_TL_ALLOC_INFO: return 9;
	default: return 0;
	}
}

int isc_alloc_stack_parse(uint8_t type, const uint8_t *p, size_t len, const uint8_t **pairs, uint64_t *depth,
			  uint64_t f[12])
{
	const uint8_t *e = p + len;
	uint64_t v;
	unsigned n = isc_record_nvarints(type);
	bool alloc = type == ISC_REC_ALLOC || type == ISC_REC_TL_ALLOC;
	if (!alloc && type != ISC_REC_ALLOC_SITE && type != ISC_REC_TL_ALLOC_SITE)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (isc_get_varint(&p, e, &f[i]))
			return -EBADMSG;
	*depth = f[n - 1];
	*pairs = p;
	if (*depth > ISC_ALLOC_MAX_DEPTH)
		return -EBADMSG;
	for (uint64_t i = 0; i < 2 * *depth; i++)
		if (isc_get_varint(&p, e, &v))
			return -EBADMSG;
	if (alloc) { /* native frames: a count, then the addresses */
		uint64_t nn;
		if (isc_get_varint(&p, e, &nn) || nn > ISC_ALLOC_MAX_NATIVE)
			return -EBADMSG;
		for (uint64_t i = 0; i < nn; i++)
			if (isc_get_varint(&p, e, &v))
				return -EBADMSG;
	}
	return 0;
}

bool isc_ring_record_ok(const struct isc_rec *r, uint16_t chunk)
{
	const uint8_t *p = r->body, *e = r->body + r->len;
	uint64_t v;
	unsigned n;
	if (chunk == ISC_CHUNK_ALLOC) { /* the allocation shim's: samples, releases, its start, a warning */
		const uint8_t *pairs;
		uint64_t f[12], depth;
		switch (r->type) {
		case ISC_REC_ALLOC:
			return isc_alloc_stack_parse(r->type, p, r->len, &pairs, &depth, f) == 0 && f[0] <= UINT32_MAX;
		case ISC_REC_FREE:
		case ISC_REC_ALLOC_INFO:
		case ISC_REC_WARNING:
		case ISC_REC_DROPPED:
			n = isc_record_nvarints(r->type);
			break;
		default:
			return false;
		}
	} else if (chunk == ISC_CHUNK_GPU_EVENTS) {
		struct isc_tl_event ev;
		struct isc_string_def d;
		uint64_t off, tid;
		switch (r->type) {
		case ISC_REC_GPU_OP:
		case ISC_REC_GPU_API: /* start offset, host thread, then the fields */
			return !isc_get_varint(&p, e, &off) && !isc_get_varint(&p, e, &tid) && tid <= UINT32_MAX &&
			       isc_gpu_decode(&ev, r->type, p, (size_t)(e - p)) == 0;
		case ISC_REC_NVTX_RANGE:
		case ISC_REC_GPU_MEMORY:
			if (isc_get_varint(&p, e, &off) || isc_get_varint(&p, e, &tid) || tid > UINT32_MAX)
				return false;
			n = isc_record_nvarints(r->type);
			break;
		case ISC_REC_STRING_DEF:
			return isc_string_def_parse(r->body, r->len, &d) == 0;
		case ISC_REC_GPU_DROPPED:
		case ISC_REC_DROPPED:
		case ISC_REC_GPU_AGENT:
		case ISC_REC_WARNING:
		case ISC_REC_DEVICE:
		case ISC_REC_META:
			n = isc_record_nvarints(r->type);
			break;
		default:
			return false;
		}
	} else {
		switch (r->type) {
		case ISC_REC_PY_CALL:
		case ISC_REC_C_CALL:
		case ISC_REC_SCOPE_BEGIN:
		case ISC_REC_DROPPED: n = 1; break;
		case ISC_REC_MARK: n = 2; break;
		case ISC_REC_CALIBRATION: n = 6; break;
		case ISC_REC_EXCEPTION: n = 1; break;
		case ISC_REC_EXCEPTION_REF: n = 4; break;
		case ISC_REC_SMAPS: n = 5; break; /* before the EXCEPTION of an out-of-memory error */
		case ISC_REC_PY_RETURN:
		case ISC_REC_C_RETURN:
		case ISC_REC_SCOPE_END:
		case ISC_REC_THREAD_BEGIN:
		case ISC_REC_THREAD_END: n = 0; break;
		default: return false;
		}
	}
	while (n--)
		if (isc_get_varint(&p, e, &v))
			return false;
	return true;
}

int isc_string_def_parse(const uint8_t *p, size_t len, struct isc_string_def *d)
{
	const uint8_t *e = p + len;
	uint64_t nlen, flen;
	if (isc_get_varint(&p, e, &d->id) || p >= e)
		return -EBADMSG;
	d->kind = *p++;
	if (isc_get_varint(&p, e, &d->line) || isc_get_varint(&p, e, &nlen) || nlen > (uint64_t)(e - p))
		return -EBADMSG;
	d->name = p;
	d->nlen = (size_t)nlen;
	p += nlen;
	if (isc_get_varint(&p, e, &flen) || flen > (uint64_t)(e - p))
		return -EBADMSG;
	d->file = p;
	d->flen = (size_t)flen;
	if (d->id == 0 || d->id >= ISC_STRING_ID_LIMIT)
		return -EBADMSG;
	return 0;
}

/* One counted string of an EXCEPTION record: varint length, then the bytes. */
static int counted(const uint8_t **p, const uint8_t *e, const uint8_t **s, size_t *n)
{
	uint64_t len;
	if (isc_get_varint(p, e, &len) || len > (uint64_t)(e - *p))
		return -EBADMSG;
	*s = *p;
	*n = (size_t)len;
	*p += len;
	return 0;
}

int isc_exception_parse(const uint8_t *p, size_t len, struct isc_exception *x)
{
	const uint8_t *e = p + len;
	if (counted(&p, e, &x->type, &x->ntype) || counted(&p, e, &x->file, &x->nfile) ||
	    counted(&p, e, &x->func, &x->nfunc))
		return -EBADMSG;
	x->msg = p;
	x->nmsg = (size_t)(e - p);
	return 0;
}
