/* fuzz_trace.c - any bytes through iscope-merge's trace reader and merge. */
#include <stdint.h>
#include <stdio.h>

#include "isc_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct isc_merge_input in;
	struct isc_merge_result res;
	struct isc_sink *sink;
	if (!null)
		null = fopen("/dev/null", "w");
	in.in = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
	in.name = "fuzz";
	if (!in.in)
		return 0;
	if (isc_sink_dump_new(&sink, null, true) == 0) {
		isc_merge(&in, 1, sink, &res);
		isc_sink_free(sink);
	}
	fclose(in.in);
	isc_err_clear();
	return 0;
}
