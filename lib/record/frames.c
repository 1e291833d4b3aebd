/*
 * frames.c - the recorder's output: each chunk is written through at once,
 * or in flight-recorder mode (--ring) encoded and kept in memory, the
 * oldest evictable frames dropped beyond the ring size.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder.h"

/* Writes (or, in flight-recorder mode, keeps) one chunk.  Caller holds wlock. */
void isc_rec_emit_locked(struct recorder *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base,
			uint32_t seq, const void *payload, size_t len, bool keep)
{
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, type, 0, pid, tid, base, seq, (uint32_t)len };
	int rc;
	if (r->res->write_failed)
		return;
	if (!r->o->ring_bytes || r->direct) {
		rc = isc_writer_chunk(r->w, &h, payload);
		if (rc) {
			r->res->write_failed = true;
			snprintf(r->res->write_error, sizeof(r->res->write_error), "%s", isc_err_msg());
			isc_err_clear();
		}
		return;
	}
	if (r->nframes == r->frames_cap) {
		size_t cap = r->frames_cap ? r->frames_cap * 2 : 256;
		struct rec_frame *f = realloc(r->frames, cap * sizeof(*f));
		if (!f)
			return;
		r->frames = f;
		r->frames_cap = cap;
	}
	struct rec_frame *f = &r->frames[r->nframes];
	memset(f, 0, sizeof(*f));
	if (isc_writer_encode(r->w, &h, payload, &f->data))
		return;
	f->keep = keep;
	r->nframes++;
	if (!keep)
		r->frames_bytes += f->data.len;
	/* evict the oldest evictable frames beyond the flight-recorder size,
	 * never the newest one */
	size_t i = 0;
	while (r->frames_bytes > r->o->ring_bytes && i + 1 < r->nframes) {
		if (!r->frames[i].keep) {
			r->frames_bytes -= r->frames[i].data.len;
			isc_buf_free(&r->frames[i].data);
			memmove(&r->frames[i], &r->frames[i + 1], (r->nframes - i - 1) * sizeof(*f));
			r->nframes--;
			r->evicted_frames++;
		} else {
			i++;
		}
	}
}

void isc_rec_emit(struct recorder *r, uint16_t type, uint32_t pid, uint32_t tid, uint64_t base, uint32_t seq,
		 const void *payload, size_t len, bool keep)
{
	pthread_mutex_lock(&r->wlock);
	isc_rec_emit_locked(r, type, pid, tid, base, seq, payload, len, keep);
	pthread_mutex_unlock(&r->wlock);
}

void isc_rec_emit_strings(struct recorder *r, pid_t pid, const void *payload, size_t len)
{
	pthread_mutex_lock(&r->wlock);
	unsigned i = 0;
	while (i < r->nstrseq && r->strseq[i].pid != pid)
		i++;
	if (i == r->nstrseq && i < REC_MAX_PROCS)
		r->strseq[r->nstrseq++] = (typeof(r->strseq[0])){ pid, 0 };
	uint32_t seq = i < REC_MAX_PROCS ? r->strseq[i].seq++ : 0;
	isc_rec_emit_locked(r, ISC_CHUNK_STRINGS, (uint32_t)pid, 0, 0, seq, payload, len, true);
	pthread_mutex_unlock(&r->wlock);
}
