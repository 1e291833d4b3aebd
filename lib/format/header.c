/* header.c - the file header chunk shared by traces and timelines (its HDR_* records); the other record bodies are records.c. */
#include <errno.h>
#include <string.h>

#include "isc_util.h"
#include "isc_config.h"
#include "isc_trace_int.h"

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
