/* fuzz_timeline.c - any bytes through the timeline reader. */
#include <stdint.h>
#include <stdio.h>

#include "isc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isc_timeline *t;
	struct isc_tl_event ev;
	FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
	if (!f)
		return 0;
	if (isc_timeline_open(&t, f) == 0) {
		int rc, errors = 0;
		while ((rc = isc_timeline_next(t, &ev)) != 0 && errors < 1000) {
			if (rc < 0) {
				errors++;
				continue;
			}
			const struct isc_tl_string *s = isc_timeline_string_borrow(t, ev.name_id);
			if (s && s->name[0] == '\1')
				errors++;
		}
		isc_timeline_free(t);
	}
	fclose(f);
	isc_err_clear();
	return 0;
}
