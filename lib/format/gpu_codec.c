/*
 * gpu_codec.c - body encoding of the GPU_OP and GPU_API records
 * (formats/timeline.md §4.4).
 *
 * GPU_OP: 11 varints, then two optional groups whose presence the flags
 * field tells: ISC_GPU_FLAG_LAUNCH (8 varints of launch configuration)
 * then ISC_GPU_FLAG_LINK (api_tid, launch_span_id, zigzag launch_gap_ns),
 * then ISC_GPU_FLAG_CONTEXT (context).
 * Bodies written before those flags existed have the launch group with no
 * flag: it is recognised by the bytes left after the 11 fields.
 * GPU_API: 6 varints, then an optional span_id, then an optional py_site
 * (span_id written, 0 when none, whenever py_site is).
 */
#include <errno.h>
#include <string.h>

#include "isc.h"

int isc_gpu_encode(struct isc_buf *b, const struct isc_tl_event *ev)
{
	const struct isc_gpu_fields *g = &ev->gpu;
	int rc = 0;
	if (ev->type == ISC_REC_GPU_API) {
		uint64_t v[8] = { ev->name_id, g->dur_ns, g->correlation, g->kind, g->cbid, g->flags,
				  g->launch_span_id, g->py_site };
		for (int i = 0; i < (g->py_site ? 8 : g->launch_span_id ? 7 : 6); i++)
			rc |= isc_buf_put_varint(b, v[i]);
		return rc ? -ENOMEM : 0;
	}
	uint32_t flags = g->flags & ~(ISC_GPU_FLAG_LAUNCH | ISC_GPU_FLAG_LINK | ISC_GPU_FLAG_CONTEXT);
	flags |= (g->has_launch ? ISC_GPU_FLAG_LAUNCH : 0) | (g->has_link ? ISC_GPU_FLAG_LINK : 0) |
		 (g->has_context ? ISC_GPU_FLAG_CONTEXT : 0);
	uint64_t v[11] = { g->device, g->stream, g->kind, ev->name_id, g->dur_ns, g->correlation, g->bytes,
			   g->copy_kind, g->src_mem, g->dst_mem, flags };
	for (int i = 0; i < 11; i++)
		rc |= isc_buf_put_varint(b, v[i]);
	if (g->has_launch) {
		uint64_t l[8] = { g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2],
				  g->registers, g->shared_mem };
		for (int i = 0; i < 8; i++)
			rc |= isc_buf_put_varint(b, l[i]);
	}
	if (g->has_link) {
		rc |= isc_buf_put_varint(b, g->api_tid);
		rc |= isc_buf_put_varint(b, g->launch_span_id);
		rc |= isc_buf_put_varint(b, isc_zigzag(g->launch_gap_ns));
	}
	if (g->has_context)
		rc |= isc_buf_put_varint(b, g->context);
	return rc ? -ENOMEM : 0;
}

int isc_gpu_decode(struct isc_tl_event *ev, uint8_t type, const uint8_t *p, size_t len)
{
	const uint8_t *e = p + len;
	struct isc_gpu_fields *g = &ev->gpu;
	uint64_t v[11];
	memset(g, 0, sizeof(*g));
	if (type == ISC_REC_GPU_API) {
		for (int i = 0; i < 6; i++)
			if (isc_get_varint(&p, e, &v[i]))
				return -EBADMSG;
		ev->name_id = (uint32_t)v[0];
		g->dur_ns = v[1];
		g->correlation = v[2];
		g->kind = (uint8_t)v[3];
		g->cbid = (uint32_t)v[4];
		g->flags = (uint32_t)v[5];
		if (p < e && isc_get_varint(&p, e, &g->launch_span_id))
			return -EBADMSG;
		uint64_t site = 0;
		if (p < e && (isc_get_varint(&p, e, &site) || site > UINT32_MAX))
			return -EBADMSG;
		g->py_site = (uint32_t)site;
		return 0;
	}
	for (int i = 0; i < 11; i++)
		if (isc_get_varint(&p, e, &v[i]))
			return -EBADMSG;
	g->device = (uint32_t)v[0];
	g->stream = (uint32_t)v[1];
	g->kind = (uint8_t)v[2];
	ev->name_id = (uint32_t)v[3];
	g->dur_ns = v[4];
	g->correlation = v[5];
	g->bytes = v[6];
	g->copy_kind = (uint8_t)v[7];
	g->src_mem = (uint8_t)v[8];
	g->dst_mem = (uint8_t)v[9];
	g->flags = (uint32_t)v[10];
	bool groups = g->flags & (ISC_GPU_FLAG_LAUNCH | ISC_GPU_FLAG_LINK | ISC_GPU_FLAG_CONTEXT);
	if (groups ? (g->flags & ISC_GPU_FLAG_LAUNCH) != 0 : p < e) {
		uint64_t l[8];
		for (int i = 0; i < 8; i++)
			if (isc_get_varint(&p, e, &l[i]))
				return -EBADMSG;
		for (int i = 0; i < 3; i++) {
			g->grid[i] = (uint32_t)l[i];
			g->block[i] = (uint32_t)l[3 + i];
		}
		g->registers = (uint32_t)l[6];
		g->shared_mem = (uint32_t)l[7];
		g->has_launch = true;
	}
	if (g->flags & ISC_GPU_FLAG_LINK) {
		uint64_t tid, gap;
		if (isc_get_varint(&p, e, &tid) || isc_get_varint(&p, e, &g->launch_span_id) ||
		    isc_get_varint(&p, e, &gap))
			return -EBADMSG;
		g->api_tid = (uint32_t)tid;
		g->launch_gap_ns = isc_unzigzag(gap);
		g->has_link = true;
	}
	if (g->flags & ISC_GPU_FLAG_CONTEXT) {
		uint64_t ctx;
		if (isc_get_varint(&p, e, &ctx))
			return -EBADMSG;
		g->context = (uint32_t)ctx;
		g->has_context = true;
	}
	/* later fields (a newer minor version) are skipped */
	return 0;
}
