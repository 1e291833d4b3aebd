/* header.c - the file header chunk shared by traces and timelines. */
#include <errno.h>
#include <string.h>

#include "isc_config.h"
#include "format.h"

void isc_copy_bytes(char *dst, size_t cap, const uint8_t *src, size_t len, char sep)
{
	size_t n = len < cap - 1 ? len : cap - 1;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] ? (char)src[i] : sep;
	while (n > 0 && dst[n - 1] == sep && sep != '\0')
		n--;
	dst[n] = '\0';
}

static int put_str_rec(struct isc_buf *b, uint8_t type, const char *s, size_t len)
{
	uint64_t ts = 0;
	return isc_buf_put_record(b, type, 0, &ts, s, len);
}

int isc_header_encode(struct isc_buf *b, uint32_t file_magic, const struct isc_tl_header *h)
{
	struct isc_buf t = { 0 };
	uint64_t ts = 0;
	int rc = 0;
	uint8_t fmt[8] = { (uint8_t)file_magic, (uint8_t)(file_magic >> 8), (uint8_t)(file_magic >> 16),
			   (uint8_t)(file_magic >> 24), ISC_FORMAT_VERSION_MAJOR, 0,
			   ISC_FORMAT_VERSION_MINOR, 0 };
	rc |= isc_buf_put_record(b, ISC_REC_HDR_FORMAT, 0, &ts, fmt, sizeof(fmt));
	rc |= put_str_rec(b, ISC_REC_HDR_HOST, h->host, strlen(h->host));
	rc |= put_str_rec(b, ISC_REC_HDR_CMDLINE, h->cmdline, strlen(h->cmdline));
	rc |= put_str_rec(b, ISC_REC_HDR_BOOT_ID, h->boot_id, strlen(h->boot_id));
	rc |= isc_buf_put_varint(&t, h->epoch_realtime_ns);
	rc |= isc_buf_put_varint(&t, h->epoch_mono_ns);
	rc |= isc_buf_put_varint(&t, h->clock_uncertainty_ns);
	rc |= isc_buf_put_record(b, ISC_REC_HDR_CLOCK, 0, &ts, t.data, t.len);
	t.len = 0;
	rc |= isc_buf_put_varint(&t, h->recorder_pid);
	rc |= isc_buf_put_varint(&t, h->ncpu);
	rc |= isc_buf_put_varint(&t, h->sample_hz);
	rc |= isc_buf_put(&t, ISC_VERSION, strlen(ISC_VERSION));
	rc |= isc_buf_put_record(b, ISC_REC_HDR_RECORDER, 0, &ts, t.data, t.len);
	isc_buf_free(&t);
	return rc ? -ENOMEM : 0;
}

int isc_header_parse(const uint8_t *p, size_t len, struct isc_tl_header *h, uint32_t *file_magic)
{
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	bool have_format = false;
	memset(h, 0, sizeof(*h));
	isc_cursor_init(&c, p, len, 0);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		const uint8_t *q = r.body, *e = r.body + r.len;
		uint64_t v[4] = { 0 };
		switch (r.type) {
		case ISC_REC_HDR_FORMAT:
			if (r.len < 8)
				goto bad;
			*file_magic = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
			if (q[4] != ISC_FORMAT_VERSION_MAJOR || q[5] != 0) {
				isc_err_push("unsupported format version %u.%u", q[4] | q[5] << 8, q[6] | q[7] << 8);
				return -EPROTO;
			}
			have_format = true;
			break;
		case ISC_REC_HDR_HOST:
			isc_copy_bytes(h->host, sizeof(h->host), q, r.len, '?');
			break;
		case ISC_REC_HDR_CMDLINE:
			isc_copy_bytes(h->cmdline, sizeof(h->cmdline), q, r.len, ' ');
			break;
		case ISC_REC_HDR_BOOT_ID:
			isc_copy_bytes(h->boot_id, sizeof(h->boot_id), q, r.len, '?');
			break;
		case ISC_REC_HDR_CLOCK:
			for (int i = 0; i < 3; i++)
				if (isc_get_varint(&q, e, &v[i]))
					goto bad;
			h->epoch_realtime_ns = v[0];
			h->epoch_mono_ns = v[1];
			h->clock_uncertainty_ns = v[2];
			break;
		case ISC_REC_HDR_RECORDER:
			for (int i = 0; i < 3; i++)
				if (isc_get_varint(&q, e, &v[i]))
					goto bad;
			h->recorder_pid = (uint32_t)v[0];
			h->ncpu = (uint32_t)v[1];
			h->sample_hz = (uint32_t)v[2];
			break;
		default: /* unknown header records are skipped */
			break;
		}
	}
	if (rc < 0)
		goto bad;
	if (!have_format) {
		isc_err_push("file header has no format record");
		return -EBADMSG;
	}
	return 0;
bad:
	isc_err_push("corrupt file header");
	return -EBADMSG;
}

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
	case ISC_REC_PY_SAMPLE: return 5;    /* then depth x (code_id, line) */
	case ISC_REC_PY_SAMPLER: return 6;
	case ISC_REC_NVTX_RANGE: return 6;
	case ISC_REC_GPU_MEMORY: return 8;
	case ISC_REC_GPU_DROPPED: return 1;
	case ISC_REC_GPU_AGENT: return 4; /* then the agent's version */
	case ISC_REC_DEVICE: return 6; /* then name bytes */
	case ISC_REC_META: return 1;   /* key length, then key and value bytes */
	case ISC_REC_CALIBRATION: return 6;
	case ISC_REC_EXCEPTION: return 1; /* then counted type, file, function; the message */
	default: return 0;
	}
}

bool isc_ring_record_ok(const struct isc_rec *r, uint16_t chunk)
{
	const uint8_t *p = r->body, *e = r->body + r->len;
	uint64_t v;
	unsigned n;
	if (chunk == ISC_CHUNK_GPU_EVENTS) {
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
