/*
 * fuzz_trace.c - any bytes through iscope-merge's trace reader and merge,
 * into the text dump or (last byte odd) the binary timeline writer.  Bytes
 * without the zstd magic are decoded chunks, framed here (fuzz_frames.h).
 */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_frames.h"
#include "fuzz_verdict.h"
#include "isc_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct isc_buf frames = { 0 };
	struct isc_merge_input in;
	struct isc_merge_result res;
	struct isc_sink *sink;
	int rc;
	if (!null)
		null = fopen("/dev/null", "w");
	in.in = fuzz_open(data, size, &frames);
	in.name = "fuzz";
	if (!in.in) {
		isc_buf_free(&frames);
		return 0;
	}
	if (size && (data[size - 1] & 1))
		rc = isc_sink_timeline_new(&sink, null);
	else
		rc = isc_sink_dump_new(&sink, null, true);
	if (rc == 0) {
		fuzz_rejected = isc_merge(&in, 1, sink, &res) != 0; /* < 0 error, 1 damaged */
		isc_sink_free(sink);
	}
	fclose(in.in);
	isc_buf_free(&frames);
	isc_err_clear();
	return 0;
}
