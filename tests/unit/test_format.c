/*
 * test_format.c - varints, the record cursor, the file header and the zstd
 * frame container: round trips, truncation at every byte, corruption in
 * the middle (only the damaged frame is lost).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_trace_int.h"
#include "isc_shm.h"
#include "tap.h"

static void test_varint(void)
{
	const uint64_t vals[] = { 0, 1, 127, 128, 300, 16383, 16384, (1ull << 35) + 7, UINT64_MAX - 1, UINT64_MAX };
	bool all = true;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t buf[10];
		unsigned n = isc_put_varint(buf, vals[i]);
		const uint8_t *p = buf;
		uint64_t v = 0;
		if (isc_get_varint(&p, buf + n, &v) || v != vals[i] || p != buf + n)
			all = false;
		/* every strict prefix is truncated */
		for (unsigned k = 0; k < n; k++) {
			p = buf;
			if (isc_get_varint(&p, buf + k, &v) != -EBADMSG)
				all = false;
		}
	}
	ok(all, "varint round trip and truncation for boundary values");
	uint8_t over[11] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0 };
	const uint8_t *p = over;
	uint64_t v;
	ok(isc_get_varint(&p, over + 11, &v) == -EBADMSG, "a varint wider than 64 bits is rejected");
	ok(isc_unzigzag(isc_zigzag(-5)) == -5 && isc_zigzag(-1) == 1 && isc_zigzag(1) == 2 &&
		   isc_unzigzag(isc_zigzag(INT64_MIN)) == INT64_MIN,
	   "zigzag maps signed values");
}

static void test_cursor(void)
{
	struct isc_buf b = { 0 };
	uint64_t last = 1000;
	uint8_t body[2] = { 7, 9 };
	isc_buf_put_record(&b, ISC_REC_PY_CALL, 1005, &last, body, 1);
	isc_buf_put_record(&b, ISC_REC_STRING_DEF, 0, &last, body, 2); /* untimed: no delta */
	isc_buf_put_record(&b, ISC_REC_PY_RETURN, 1105, &last, NULL, 0);
	isc_buf_put_record(&b, 0x7e, 1105, &last, body, 2); /* unknown timed type */
	isc_buf_put_record(&b, ISC_REC_C_CALL, 1200, &last, body, 1);
	struct isc_cursor c;
	struct isc_rec r;
	uint64_t ts[5];
	uint8_t types[5];
	int n = 0, rc;
	isc_cursor_init(&c, b.data, b.len, 1000);
	while ((rc = isc_cursor_next(&c, &r)) == 1 && n < 5) {
		ts[n] = r.ts;
		types[n++] = r.type;
	}
	ok(rc == 0 && n == 5, "five records, clean end");
	ok(ts[0] == 1005 && ts[1] == 1005 && ts[2] == 1105 && ts[3] == 1105 && ts[4] == 1200,
	   "delta timestamps accumulate; untimed records keep the time");
	ok(types[3] == 0x7e, "an unknown record is returned (the caller skips it by size)");
	bool trunc = true;
	for (size_t k = 1; k < b.len; k++) {
		isc_cursor_init(&c, b.data, k, 1000);
		while ((rc = isc_cursor_next(&c, &r)) == 1)
			;
		/* cut inside a record = corrupt; cut on a boundary = clean end */
		(void)rc;
		if (rc != 0 && rc != -EBADMSG)
			trunc = false;
	}
	ok(trunc, "a record list cut at any byte ends cleanly or reports corruption");
	uint8_t huge[] = { ISC_REC_PY_CALL, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	isc_cursor_init(&c, huge, sizeof(huge), 5);
	ok(isc_cursor_next(&c, &r) == -EBADMSG, "a delta that overflows the clock is corrupt");
	uint8_t big[] = { ISC_REC_PY_CALL, 0x7f, 0x00 };
	isc_cursor_init(&c, big, sizeof(big), 0);
	ok(isc_cursor_next(&c, &r) == -EBADMSG, "a size beyond the buffer is corrupt");
	isc_buf_free(&b);
}

/*
 * Timed records whose delta needs 1, 2, ... 10 varint bytes, each width at
 * both of its ends (127 and 128, 16383 and 16384, ..., 2^63): the record's size
 * counts the delta's bytes, so every record reads back with its time and
 * its one-byte body.
 */
static void test_delta_widths(void)
{
	struct isc_buf b = { 0 };
	uint64_t deltas[20], last = 0, t = 0;
	size_t n = 0;
	for (unsigned w = 7; w <= 56; w += 7) {
		deltas[n++] = (1ull << w) - 1; /* the last of w / 7 bytes */
		deltas[n++] = 1ull << w;       /* the first of one more */
	}
	deltas[n++] = 1ull << 63; /* ten bytes; the times' sum stays below 2^64 */
	for (size_t i = 0; i < n; i++) {
		uint8_t body = (uint8_t)(0xa0 + i);
		t += deltas[i];
		isc_buf_put_record(&b, ISC_REC_PY_CALL, t, &last, &body, 1);
	}
	struct isc_cursor c;
	struct isc_rec r;
	size_t got = 0, right = 0;
	int rc;
	t = 0;
	isc_cursor_init(&c, b.data, b.len, 0);
	while ((rc = isc_cursor_next(&c, &r)) == 1 && got < n) {
		t += deltas[got];
		right += r.type == ISC_REC_PY_CALL && r.ts == t && r.len == 1 && r.body[0] == 0xa0 + got;
		got++;
	}
	ok(rc == 0 && got == n, "%zu records with deltas at each varint width's ends, clean end (%d, %zu)", n, rc, got);
	ok(right == n, "each with its time and its body: %zu of %zu", right, n);
	isc_buf_free(&b);
}

static void test_header(void)
{
	struct isc_tl_header h, g;
	struct isc_buf b = { 0 };
	uint32_t magic = 0;
	memset(&h, 0, sizeof(h));
	strcpy(h.host, "node-7");
	strcpy(h.cmdline, "python3 infer.py --batch 8");
	strcpy(h.boot_id, "1234-abcd");
	h.epoch_mono_ns = 123456789;
	h.epoch_realtime_ns = 1700000000123456789ull;
	h.clock_uncertainty_ns = 42;
	h.ncpu = 2;
	h.sample_hz = 20;
	h.recorder_pid = 99;
	ok(isc_header_encode(&b, ISC_TRACE_MAGIC, &h) == 0, "header encodes");
	ok(isc_header_parse(b.data, b.len, &g, &magic) == 0 && magic == ISC_TRACE_MAGIC, "header parses");
	ok(!strcmp(g.host, h.host) && !strcmp(g.cmdline, h.cmdline) && !strcmp(g.boot_id, h.boot_id) &&
		   g.epoch_mono_ns == h.epoch_mono_ns && g.epoch_realtime_ns == h.epoch_realtime_ns &&
		   g.clock_uncertainty_ns == 42 && g.ncpu == 2 && g.sample_hz == 20 && g.recorder_pid == 99,
	   "every header field survives the round trip");
	b.data[6] = 9; /* major version 9 */
	isc_err_clear();
	ok(isc_header_parse(b.data, b.len, &g, &magic) == -EPROTO && strstr(isc_err_msg(), "version"),
	   "an unknown major version is refused with a message");
	isc_buf_free(&b);
}

/* Writes n chunks of distinct payloads to a memory buffer. */
static char *write_chunks(int n, size_t *len, size_t *frame_end)
{
	char *mem = NULL;
	FILE *f = open_memstream(&mem, len);
	struct isc_writer *w;
	isc_writer_new(&w, f, 3);
	for (int i = 0; i < n; i++) {
		char payload[200];
		int pl = snprintf(payload, sizeof(payload), "chunk %d payload %0*d", i, 20 + i * 3, i);
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_EVENTS, 0, 100 + i, 200 + i, 1000 * i, i,
					      (uint32_t)pl };
		isc_writer_chunk(w, &h, payload);
		fflush(f);
		frame_end[i] = (size_t)isc_writer_bytes(w);
	}
	isc_writer_flush(w);
	isc_writer_free(w);
	fclose(f);
	return mem;
}

/* Reads a buffer; returns chunks read, stores error count. */
static int read_all(const char *buf, size_t len, int *errors, int *ids)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "r");
	if (!len) {
		fclose(f);
		f = fopen("/dev/null", "r");
	}
	struct isc_reader *r;
	struct isc_chunk_header h;
	const uint8_t *p;
	int n = 0, rc;
	*errors = 0;
	isc_reader_new(&r, f);
	while ((rc = isc_reader_next(r, &h, &p)) != 0) {
		if (rc < 0) {
			(*errors)++;
			if (*errors > 100)
				break;
			continue;
		}
		ids[n++] = (int)h.seq;
		char want[200];
		int pl = snprintf(want, sizeof(want), "chunk %d payload %0*d", h.seq, 20 + (int)h.seq * 3, h.seq);
		if ((int)h.payload_len != pl || memcmp(p, want, (size_t)pl) || h.pid != 100 + h.seq ||
		    h.tid != 200 + h.seq || h.base_ts != 1000ull * h.seq)
			ids[n - 1] = -1;
	}
	isc_reader_free(r);
	fclose(f);
	return n;
}

static void test_container(void)
{
	size_t len, ends[8];
	int ids[16], errors;
	char *buf = write_chunks(8, &len, ends);
	int n = read_all(buf, len, &errors, ids);
	bool good = n == 8 && errors == 0;
	for (int i = 0; i < n; i++)
		good = good && ids[i] == i;
	ok(good, "8 chunks round trip through zstd frames with every header field");

	bool prefix_ok = true;
	for (size_t cut = 0; cut < len; cut++) {
		int whole = 0;
		while (whole < 8 && ends[whole] <= cut)
			whole++;
		n = read_all(buf, cut, &errors, ids);
		if (n != whole || errors != (cut == (whole ? ends[whole - 1] : 0) ? 0 : 1))
			prefix_ok = false;
		for (int i = 0; i < n; i++)
			if (ids[i] != i)
				prefix_ok = false;
	}
	ok(prefix_ok, "cut at every byte: every whole frame before the cut is kept, one error for the partial frame");

	/* flip a byte inside frame 3: frames 0-2 and 4-7 survive */
	char *bad = malloc(len);
	memcpy(bad, buf, len);
	bad[ends[2] + (ends[3] - ends[2]) / 2] ^= 0x5a;
	n = read_all(bad, len, &errors, ids);
	bool resync = errors == 1 && n == 7;
	for (int i = 0, want = 0; i < n; i++, want++) {
		if (want == 3)
			want++;
		if (ids[i] != want)
			resync = false;
	}
	ok(resync, "a corrupt frame in the middle loses only that frame (got %d chunks, %d errors)", n, errors);
	free(bad);

	/* 70 MiB of garbage between two frames: skipped with bounded memory */
	size_t glen = 70u << 20;
	char *big = calloc(1, ends[0] + glen + (ends[1] - ends[0]));
	memcpy(big, buf, ends[0]);
	memcpy(big + ends[0] + glen, buf + ends[0], ends[1] - ends[0]);
	n = read_all(big, ends[0] + glen + (ends[1] - ends[0]), &errors, ids);
	ok(n == 2 && errors == 1 && ids[0] == 0 && ids[1] == 1,
	   "70 MiB of garbage between frames: one error, both frames kept (%d, %d)", n, errors);
	free(big);

	const char junk[] = "this is not a trace at all, just text\n";
	n = read_all(junk, sizeof(junk) - 1, &errors, ids);
	ok(n == 0 && errors >= 1, "text input yields no chunks and an error");
	free(buf);
}

/*
 * A spool gives back the chunks written to it, header fields and payload
 * bytes, to each of two readers in turn: kept in memory (budget not
 * reached) and spilled to a compressed file (budget passed at chunk 3).
 */
static bool spool_round_trip(size_t budget, bool *spilled)
{
	enum { N = 7 };
	struct isc_spool *sp;
	struct isc_writer *w;
	uint8_t pay[N][300];
	bool good = !isc_spool_new(&sp, budget, -5) && !isc_writer_new_spool(&w, sp);
	for (int i = 0; good && i < N; i++) {
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, (uint16_t)(100 + i), 0, (uint32_t)(1000 + i),
					      (uint32_t)(2000 + i), 0x1122334455667700ull + (uint64_t)i, (uint32_t)(7 * i),
					      (uint32_t)(i == 2 ? 0 : 40 * i + 1) };
		for (size_t k = 0; k < sizeof(pay[i]); k++)
			pay[i][k] = (uint8_t)(i * 31 + k * 7);
		good = !isc_writer_chunk(w, &h, pay[i]) && !isc_writer_flush(w);
	}
	isc_writer_free(w);
	*spilled = isc_spool_spilled(sp);
	for (int pass = 0; good && pass < 2; pass++) {
		struct isc_reader *r;
		struct isc_chunk_header h;
		const uint8_t *p;
		int i = 0;
		good = !isc_reader_new_spool(&r, sp);
		for (; good && isc_reader_next(r, &h, &p) == 1; i++) {
			uint32_t len = i == 2 ? 0 : 40 * (uint32_t)i + 1;
			good = i < N && h.type == 100 + i && h.pid == (uint32_t)(1000 + i) && h.tid == (uint32_t)(2000 + i) &&
			       h.base_ts == 0x1122334455667700ull + (uint64_t)i && h.seq == (uint32_t)(7 * i) &&
			       h.payload_len == len && !memcmp(p, pay[i], len);
		}
		good = good && i == N;
		isc_reader_free(r);
	}
	isc_spool_free(sp);
	return good;
}

static void test_spool(void)
{
	bool spilled;
	ok(spool_round_trip(1 << 20, &spilled), "a spool in memory gives back its 7 chunks, twice");
	ok(!spilled, "under its budget a spool stays in memory");
	ok(spool_round_trip(200, &spilled), "a spool spilled to a file gives back its 7 chunks, twice");
	ok(spilled, "past its budget a spool spills");
}

int main(void)
{
	test_varint();
	test_delta_widths();
	test_cursor();
	test_header();
	test_container();
	test_spool();
	return tap_done();
}
