/*
 * gpu_setup.c - which GPU collection a recording gets (gpu_setup.h).
 *
 *   --no-cuda ------------------------------------------> nothing, silently
 *   libcuda.so.1 does not load / is the stub -----------> note, WARNING, no agent
 *   CUDA_INJECTION64_PATH set by another tool, no --force -> note, WARNING, no agent
 *   no libiscope-cuda.so in this build -----------------> note, WARNING, no agent
 *   otherwise: CUDA_INJECTION64_PATH (and NVTX_INJECTION64_PATH) = the agent
 *
 * INFERSCOPE_FORCE_CUDA=1 injects even when no driver loads (test doubles
 * that the probe cannot see).  NVML is opened separately: without it, one
 * note (unless the missing driver already said it all).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "isc_log.h"
#include "gpu_setup.h"

#define CUDA_ERROR_STUB_LIBRARY 34

/* One reason GPU data will be missing: a WARNING record and a stderr line. */
static int note(struct isc_gpu_setup *s, bool quiet, enum isc_warning code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int note(struct isc_gpu_setup *s, bool quiet, enum isc_warning code, const char *fmt, ...)
{
	char msg[1024];
	struct isc_buf body = { 0 };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!quiet)
		isc_log(ISC_LOG_WARN, "note: %s", msg);
	int rc = isc_buf_put_varint(&body, 0);
	rc |= isc_buf_put_varint(&body, code);
	rc |= isc_buf_put(&body, msg, strlen(msg));
	uint64_t last = s->warnings_ts;
	rc |= isc_buf_put_record(&s->warnings, ISC_REC_WARNING, s->warnings_ts, &last, body.data, body.len);
	isc_buf_free(&body);
	return rc ? -ENOMEM : 0;
}

/* Probes the driver: 1 usable, 0 not (with *why). */
static int probe_driver(struct isc_gpu_setup *s, char *why, size_t len, enum isc_warning *code)
{
	const char *name = getenv("INFERSCOPE_CUDA_DRIVER");
	if (!name || !*name)
		name = "libcuda.so.1";
	/* kept loaded: unloading a driver library is not worth its risks */
	void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
	*code = ISC_WARN_NO_DRIVER;
	if (!h) {
		snprintf(why, len, "no CUDA driver (%s)", dlerror());
		return 0;
	}
	int (*version)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
	int v = 0, rc = version ? version(&v) : -1;
	if (rc == CUDA_ERROR_STUB_LIBRARY) {
		*code = ISC_WARN_STUB_DRIVER;
		snprintf(why, len, "%s is the CUDA toolkit's stub driver (CUDA_ERROR_STUB_LIBRARY), not an installed driver",
			 name);
		return 0;
	}
	if (rc != 0) {
		snprintf(why, len, "%s: cuDriverGetVersion failed (%d)", name, rc);
		return 0;
	}
	s->driver_version = v;
	return 1;
}

static int add_env(struct isc_gpu_setup *s, const char *name, const char *value)
{
	size_t i = 0;
	while (s->env[i])
		i++;
	return asprintf(&s->env[i], "%s=%s", name, value) < 0 ? -ENOMEM : 0;
}

int isc_gpu_setup(struct isc_gpu_setup *s, const char *agent, enum isc_cuda_mode mode, unsigned sample_hz,
		  bool quiet, uint64_t now)
{
	char why[512];
	enum isc_warning code;
	int rc = 0;
	memset(s, 0, sizeof(*s));
	s->warnings_ts = now;
	if (mode == ISC_CUDA_OFF)
		return 0;
	const char *force_env = getenv("INFERSCOPE_FORCE_CUDA");
	bool forced = force_env && *force_env && strcmp(force_env, "0");
	s->driver = probe_driver(s, why, sizeof(why), &code);
	if (!s->driver && !forced)
		rc |= note(s, quiet, code, "%s: GPU activity and GPU samples not recorded", why);
	if (s->driver || forced) {
		const char *cur = getenv("CUDA_INJECTION64_PATH");
		if (!agent) {
			rc |= note(s, quiet, ISC_WARN_NOT_BUILT,
				  "this iscope-record was built without CUPTI (no libiscope-cuda.so): GPU activity not recorded");
		} else if (cur && *cur && strcmp(cur, agent) && mode != ISC_CUDA_FORCE) {
			rc |= note(s, quiet, ISC_WARN_INJECTION_TAKEN,
				  "CUDA_INJECTION64_PATH is already set (%s), by another tool; left alone, GPU activity not "
				  "recorded (--force replaces it)", cur);
		} else {
			const char *nvtx = getenv("NVTX_INJECTION64_PATH");
			s->replace_cuda = true;
			rc |= add_env(s, "CUDA_INJECTION64_PATH", agent);
			if (!nvtx || !*nvtx || !strcmp(nvtx, agent) || mode == ISC_CUDA_FORCE) {
				s->replace_nvtx = true;
				rc |= add_env(s, "NVTX_INJECTION64_PATH", agent);
			} else {
				rc |= note(s, quiet, ISC_WARN_INJECTION_TAKEN,
					   "NVTX_INJECTION64_PATH is already set (%s), by another tool; left alone, NVTX "
					   "ranges not recorded (--force replaces it)", nvtx);
			}
		}
	}
	if (sample_hz && isc_nvml_open(&s->nvml, why, sizeof(why)) < 0 && s->driver)
		rc |= note(s, quiet, ISC_WARN_NO_NVML, "no NVML (%s): GPU utilization, clocks and power not sampled", why);
	return rc ? -ENOMEM : 0;
}

void isc_gpu_setup_free(struct isc_gpu_setup *s)
{
	for (size_t i = 0; i < sizeof(s->env) / sizeof(s->env[0]); i++)
		free(s->env[i]);
	isc_buf_free(&s->warnings);
	isc_nvml_close(s->nvml);
	memset(s, 0, sizeof(*s));
}
