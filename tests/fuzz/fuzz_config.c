/* fuzz_config.c - any bytes as ./.inferscope.yaml. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "isc.h"
#include "isc_config_api.h"
#include "fuzz_verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct isc_opt opts[] = {
	{ "sample-hz", 0, ISC_OPT_VALUE, "N", NULL, "sample_hz", "20", "rate" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, NULL, "quiet", "false", "quiet" },
	{ "ring", 0, ISC_OPT_VALUE, "SIZE", NULL, "ring", NULL, "size" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];
	struct isc_config *c;
	uint64_t v;
	if (fd < 0) {
		fd = memfd_create("fuzz-yaml", 0);
		isc_log_set_level("error");
	}
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (isc_config_new(&c, "iscope-record", opts, 3) == 0) {
		fuzz_rejected = isc_config_load_file(c, path) < 0;
		isc_config_get_u64(c, "sample-hz", &v);
		isc_config_get_size(c, "ring", &v);
		isc_config_free(c);
	}
	isc_err_clear();
	return 0;
}
