/*
 * fuzz_frames.h - lets the trace and timeline fuzzers reach past the zstd
 * container.  Every frame carries a content checksum, so a mutated
 * compressed file almost never decodes: the fuzzer would only ever test
 * the container.  Inputs that do not start with the zstd magic are
 * therefore taken as decoded chunks (a 32-byte chunk header, then
 * payload_len bytes; the last chunk gets what is left) and compressed here
 * into valid frames, so mutations land in the records themselves.  Inputs
 * that start with the magic go to the reader unchanged.
 * tests/fuzz/make-raw-seeds.py makes such inputs from real files.
 */
#ifndef FUZZ_FRAMES_H
#define FUZZ_FRAMES_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "isc.h"

static inline uint32_t fuzz_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Opens data as a stream for a reader: as it is, or (no zstd magic) as
 * decoded chunks re-encoded into *frames (which the caller frees after
 * closing the stream).  NULL when out of memory.
 */
static inline FILE *fuzz_open(const uint8_t *data, size_t size, struct isc_buf *frames)
{
	static struct isc_writer *w;
	frames->len = 0;
	if (size >= 4 && fuzz_le32(data) == 0xFD2FB528u)
		return fmemopen((void *)data, size, "r");
	if (!w && isc_writer_new(&w, NULL, 1))
		return NULL;
	while (size >= ISC_CHUNK_HEADER_SIZE) {
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, 0, 0, 0, 0, 0, 0, 0 };
		uint64_t base = 0;
		h.type = (uint16_t)(data[4] | data[5] << 8);
		h.pid = fuzz_le32(data + 8);
		h.tid = fuzz_le32(data + 12);
		for (int i = 7; i >= 0; i--)
			base = base << 8 | data[16 + i];
		h.base_ts = base;
		h.seq = fuzz_le32(data + 24);
		size_t len = fuzz_le32(data + 28);
		if (len > size - ISC_CHUNK_HEADER_SIZE)
			len = size - ISC_CHUNK_HEADER_SIZE;
		h.payload_len = (uint32_t)len;
		if (isc_writer_encode(w, &h, data + ISC_CHUNK_HEADER_SIZE, frames))
			return NULL;
		data += ISC_CHUNK_HEADER_SIZE + len;
		size -= ISC_CHUNK_HEADER_SIZE + len;
	}
	return frames->len ? fmemopen(frames->data, frames->len, "r") : fopen("/dev/null", "r");
}

#endif
