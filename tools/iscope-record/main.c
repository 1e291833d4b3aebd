/* iscope-record: run a workload and write its trace (see iscope-record(1)). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_config_api.h"
#include "isc_record.h"
#include "tool.h"

static const struct isc_opt opts[] = {
	{ "output", 'o', ISC_OPT_VALUE, "FILE", NULL, NULL, NULL,
	  "write the trace to FILE instead of stdout; in FILE %h is the host name, %r the rank (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK), %% a %" },
	{ "ring", 0, ISC_OPT_VALUE, "SIZE", "INFERSCOPE_RING", "ring", NULL,
	  "flight-recorder mode: keep only the newest SIZE of trace, written at exit (a bare number is MiB)" },
	{ "trace-size", 0, ISC_OPT_VALUE, "SIZE", "INFERSCOPE_TRACE_SIZE_MB", "trace_size_mb", "100M",
	  "shared-memory budget per traced process: 1/64 per thread ring (a bare number is MiB)" },
	{ "sample-hz", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_SAMPLE_HZ", "sample_hz", "20",
	  "sampler rate for /proc, pressure and NUMA (0 = off)" },
	{ "python", 0, ISC_OPT_VALUE, "MODE", "INFERSCOPE_PYTHON_MODE", "python", "auto",
	  "Python recording: sample (stacks read from outside at --python-hz; with GPU tracing, the Python line of each CUDA call), exact (every call: sys.monitoring on CPython 3.12+, the profile hook before) or auto (sample)" },
	{ "python-hz", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_PYTHON_HZ", "python_hz", "100",
	  "Python stack samples per second and thread (1..1000); in exact mode they place the time of operators on extension objects (x @ w)" },
	{ "native", 0, ISC_OPT_VALUE, "MODE", "INFERSCOPE_NATIVE", "native", "off",
	  "native stacks of every thread from perf events (off, on, or auto: on when perf_event_open is permitted)" },
	{ "native-hz", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_NATIVE_HZ", "native_hz", NULL,
	  "native samples per second of a thread's CPU time (1..1000; default: --python-hz)" },
	{ "native-stack", 0, ISC_OPT_VALUE, "SIZE", "INFERSCOPE_NATIVE_STACK", "native_stack", "32K",
	  "bytes of user stack copied per native sample, 1K..63K (a size like 16K or 32K)" },
	{ "flush-ms", 0, ISC_OPT_VALUE, "MS", "INFERSCOPE_FLUSH_MS", "flush_ms", "1000",
	  "longest time buffered events wait before they are written" },
	{ "level", 0, ISC_OPT_VALUE, "N", "INFERSCOPE_ZSTD_LEVEL", "zstd_level", "3", "zstd compression level" },
	{ "quiet", 'q', ISC_OPT_FLAG, NULL, "INFERSCOPE_QUIET", "quiet", "false",
	  "no live status line, no summary and no notes" },
	{ "no-cuda", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_NO_CUDA", "no_cuda", "false",
	  "record no GPU activity and no GPU samples (no CUDA agent, no NVML)" },
	{ "cuda-driver-api", 0, ISC_OPT_FLAG, NULL, "INFERSCOPE_CUDA_DRIVER_API", "cuda_driver_api", "false",
	  "record CUDA driver API calls too (CUPTI DRIVER activity): kernels launched through the driver alone (Triton's cuLaunchKernel) then have their launching call, at a cost per call" },
	{ "memory-limit", 0, ISC_OPT_VALUE, "SIZE", "INFERSCOPE_MEMORY_LIMIT", "memory_limit", NULL,
	  "run the workload in a memory cgroup limited to SIZE (a bare number is MiB), to reproduce an out-of-memory" },
	{ "memory-sampling", 0, ISC_OPT_VALUE, "off|BYTES", "INFERSCOPE_MEMORY_SAMPLING", "memory_sampling", "512K",
	  "sample one allocation per BYTES allocated on average (a bare number is bytes; 512K by default), or off" },
	{ "force", 0, ISC_OPT_FLAG, NULL, NULL, NULL, "false",
	  "replace a CUDA_INJECTION64_PATH or NVTX_INJECTION64_PATH set by another tool" },
	ISC_OPT_LOG_LEVEL,
};

static const struct isc_tool tool = {
	"iscope-record", opts, sizeof(opts) / sizeof(opts[0]), true, "[OPTION]... [--] COMMAND [ARG]...",
	"Runs COMMAND, records Python calls, torch ops, GPU activity and samples of\n"
	"every process it starts, and writes a trace (.isc) to stdout or FILE.",
};

/*
 * The output path with %h (the host name, as the trace's header has it),
 * %r (the rank the environment gives, as the Python agent reads it:
 * RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK) and %% expanded, in
 * a new string; NULL with a one-line reason in why when it cannot be.
 */
static char *expand_output(const char *pat, char *why, size_t cap)
{
	static const char *const rank_env[] = { "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK" };
	size_t n = 0, sz = strlen(pat) + 1;
	char *o = malloc(sz);
	for (const char *p = pat; o && *p && !*why; p++) {
		char host[256], one[2] = { *p, '\0' };
		const char *add = one;
		if (*p == '%') {
			switch (*++p) {
			case '%':
				add = "%";
				break;
			case 'h':
				if (gethostname(host, sizeof(host)))
					snprintf(why, cap, "%s: %%h: no host name: %s", pat, strerror(errno));
				host[sizeof(host) - 1] = '\0';
				add = host;
				break;
			case 'r':
				add = NULL;
				for (size_t i = 0; i < sizeof(rank_env) / sizeof(rank_env[0]) && !add; i++) {
					const char *v = getenv(rank_env[i]);
					if (v && *v && strlen(v) < 11 && strspn(v, "0123456789") == strlen(v))
						add = v;
				}
				if (!add)
					snprintf(why, cap,
						 "%s: %%r: no rank in the environment (RANK, SLURM_PROCID, "
						 "OMPI_COMM_WORLD_RANK, PMI_RANK)",
						 pat);
				break;
			case '\0':
				snprintf(why, cap, "%s: a lone %% ends the output name (%%h host, %%r rank, %%%% a %%)", pat);
				break;
			default:
				snprintf(why, cap, "%s: unknown %%%.1s in the output name (%%h host, %%r rank, %%%% a %%)", pat, p);
				break;
			}
			if (*why)
				break;
		}
		size_t k = strlen(add);
		if (n + k + 1 > sz) {
			char *g = realloc(o, sz = (n + k + 1) * 2);
			if (!g) {
				free(o);
				o = NULL;
				break;
			}
			o = g;
		}
		memcpy(o + n, add, k + 1);
		n += k;
	}
	if (o && !*why) {
		o[n] = '\0';
		return o;
	}
	if (!*why)
		snprintf(why, cap, "out of memory");
	free(o);
	return NULL;
}

/*
 * An agent file beside this binary (a build tree: beside/NAME), else in
 * the installation this binary belongs to (PREFIX/LIBDIR/inferscope/NAME
 * when it runs as PREFIX/BINDIR/iscope-record, wherever PREFIX now is:
 * a staged DESTDIR or a moved tree); buf when it exists, else NULL.
 */
static const char *agent_path(char *buf, size_t len, const char *beside, const char *name)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return NULL;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", buf);
	if ((size_t)snprintf(buf, len, "%s/%s", dir, beside) < len && !access(buf, R_OK))
		return buf;
	size_t dl = strlen(dir), bl = strlen(ISC_BINDIR);
	if (ISC_BINDIR[0] == '/' || ISC_LIBDIR[0] == '/' || dl <= bl || dir[dl - bl - 1] != '/' ||
	    strcmp(dir + dl - bl, ISC_BINDIR))
		return NULL;
	dir[dl - bl - 1] = '\0'; /* the prefix */
	if ((size_t)snprintf(buf, len, "%s/%s/inferscope/%s", dir, ISC_LIBDIR, name) < len && !access(buf, R_OK))
		return buf;
	return NULL;
}

/* The Python agent's directory: $INFERSCOPE_AGENT_DIR, else python/ beside
 * this binary or in its installation, else the configured install path. */
static const char *agent_dir(char *buf, size_t len)
{
	const char *env = getenv("INFERSCOPE_AGENT_DIR");
	if (env && *env)
		return env;
	const char *p = agent_path(buf, len, "python", "python");
	return p ? p : ISC_AGENT_DIR;
}

/*
 * The CUDA agent: $INFERSCOPE_CUDA_AGENT, else cuda/libiscope-cuda.so beside
 * this binary (a build tree) or in its installation, else the configured
 * install path; NULL when this build has none.  The driver needs an
 * absolute path.
 */
static const char *cuda_agent(char *buf, size_t len)
{
	const char *env = getenv("INFERSCOPE_CUDA_AGENT");
	if (env && *env)
		return env;
	const char *p = agent_path(buf, len, "cuda/libiscope-cuda.so", "libiscope-cuda.so");
	if (p)
		return p;
	return ISC_HAVE_CUPTI && !access(ISC_CUDA_AGENT, R_OK) ? ISC_CUDA_AGENT : NULL;
}

/*
 * The allocation sampler: $INFERSCOPE_ALLOC_SHIM, else
 * alloc/libiscope-alloc.so beside this binary (a build tree) or in its
 * installation, else the configured install path; NULL when none exists.
 * LD_PRELOAD wants an absolute path.
 */
static const char *alloc_shim(char *buf, size_t len)
{
	const char *env = getenv("INFERSCOPE_ALLOC_SHIM");
	if (env && *env)
		return env;
	const char *p = agent_path(buf, len, "alloc/libiscope-alloc.so", "libiscope-alloc.so");
	if (p)
		return p;
	return !access(ISC_ALLOC_SHIM, R_OK) ? ISC_ALLOC_SHIM : NULL;
}

/*
 * When the trace goes into a pipe, widen it to the largest size an
 * unprivileged process may set (/proc/sys/fs/pipe-max-size, 1 MiB by
 * default; the kernel's default is 64 KiB): the drain thread writes into
 * it, and a reader that loses its CPU for a moment (iscope-merge on a
 * 2-core machine beside a 2-thread workload) would otherwise block the
 * drain until the workload's rings fill and events are dropped.  About
 * 2 s of a typical trace.  Best effort: a failure leaves the pipe as it was.
 */
static void grow_pipe(int fd)
{
	struct stat st;
	char buf[32] = "";
	long max = 1 << 20;
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return;
	int pf = open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC);
	if (pf >= 0) {
		ssize_t n = read(pf, buf, sizeof(buf) - 1);
		if (n > 0 && atol(buf) > 0)
			max = atol(buf);
		close(pf);
	}
	if (max > 16 << 20)
		max = 16 << 20;
	while (max >= 65536 && fcntl(fd, F_SETPIPE_SZ, (int)max) < 0)
		max /= 2;
}

int main(int argc, char **argv)
{
	struct isc_config *c = NULL;
	struct isc_record_opts o = { 0 };
	struct isc_record_result res;
	char pathbuf[PATH_MAX], cudabuf[PATH_MAX], allocbuf[PATH_MAX];
	uint64_t v;
	FILE *out = stdout;
	char *opath = NULL; /* -o with %h, %r expanded */
	int first, rc, status = 1;

	status = isc_tool_start(&tool, argc, argv, &c, &first);
	if (status >= 0)
		return status;
	status = 1;
	if (first >= argc) {
		isc_log(ISC_LOG_ERROR, "no command to record");
		fprintf(stderr, "Usage: iscope-record %s\n", tool.usage);
		status = 2;
		goto out;
	}
	o.argv = argv + first;
	o.agent_dir = agent_dir(pathbuf, sizeof(pathbuf));
	o.cuda_agent = cuda_agent(cudabuf, sizeof(cudabuf));
	o.cuda_mode = isc_config_flag(c, "no-cuda") ? ISC_CUDA_OFF : isc_config_flag(c, "force") ? ISC_CUDA_FORCE : ISC_CUDA_AUTO;
	o.cuda_driver_api = isc_config_flag(c, "cuda-driver-api");
	o.buffer_bytes = 100u << 20;
	o.sample_hz = 20;
	o.python_hz = 100;
	o.flush_ms = 1000;
	o.level = 3;
	if (isc_config_get_size(c, "trace-size", &o.buffer_bytes) < 0 || isc_config_get_size(c, "ring", &o.ring_bytes) < 0 ||
	    isc_config_get_size(c, "memory-limit", &o.memory_limit) < 0 ||
	    isc_config_get_u64(c, "sample-hz", &v) < 0 || (o.sample_hz = (unsigned)v, 0) ||
	    isc_config_get_u64(c, "flush-ms", &v) < 0 || (o.flush_ms = (unsigned)v, 0) ||
	    isc_config_get_u64(c, "python-hz", &v) < 0 || (o.python_hz = v > 100000 ? 100000 : (unsigned)v, 0) ||
	    isc_config_get_u64(c, "level", &v) < 0 || (o.level = (int)v, 0)) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		status = 2;
		goto out;
	}
	if (o.sample_hz > 1000 || o.level < 1 || o.level > 19) {
		isc_log(ISC_LOG_ERROR, "--sample-hz must be 0..1000 and --level 1..19");
		status = 2;
		goto out;
	}
	static const char *const pymodes[] = { "auto", "exact", "sample", NULL };
	int pm = 0;
	if (isc_config_get_choice(c, "python", pymodes, &pm) < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		status = 2;
		goto out;
	}
	const char *ms = isc_config_get(c, "memory-sampling");
	o.memory_sampling = 512u << 10;
	if (ms && !strcmp(ms, "off")) {
		o.memory_sampling = 0;
	} else if (ms && (isc_parse_size(ms, &o.memory_sampling) < 0 || o.memory_sampling == 0)) {
		isc_log(ISC_LOG_ERROR, "--memory-sampling must be off or a number of bytes above 0 (512K, 4M), not '%s'",
			ms);
		status = 2;
		goto out;
	}
	o.alloc_shim = o.memory_sampling ? alloc_shim(allocbuf, sizeof(allocbuf)) : NULL;
	o.python_mode = pm == 0 ? ISC_PY_AUTO : pm == 2 ? ISC_PY_SAMPLE : ISC_PY_EXACT;
	if (o.python_hz < 1 || o.python_hz > 1000) {
		isc_log(ISC_LOG_ERROR, "--python-hz must be 1..1000");
		status = 2;
		goto out;
	}
	const char *native = isc_config_get(c, "native");
	if (native && strcmp(native, "off") && strcmp(native, "on") && strcmp(native, "auto")) {
		isc_log(ISC_LOG_ERROR, "--native must be off, on or auto, not '%s'", native);
		status = 2;
		goto out;
	}
	o.native_mode = !native || !strcmp(native, "off") ? ISC_NATIVE_OFF : !strcmp(native, "on") ? ISC_NATIVE_ON : ISC_NATIVE_AUTO;
	uint64_t nhz = 0, nstack = 32768;
	if (isc_config_get_u64(c, "native-hz", &nhz) < 0 || isc_config_get_size(c, "native-stack", &nstack) < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		status = 2;
		goto out;
	}
	if ((isc_config_get(c, "native-hz") && (nhz < 1 || nhz > 1000)) || nstack < 1024 || nstack > 64512) {
		isc_log(ISC_LOG_ERROR, "--native-hz must be 1..1000 and --native-stack 1K..63K");
		status = 2;
		goto out;
	}
	o.native_hz = (unsigned)nhz;
	o.native_stack = (uint32_t)nstack;
	const char *path = isc_config_get(c, "output");
	if (path && strcmp(path, "-")) {
		char why[512] = "";
		if (!(opath = expand_output(path, why, sizeof(why)))) {
			isc_log(ISC_LOG_ERROR, "%s", why);
			status = 2;
			goto out;
		}
		path = opath;
		out = fopen(path, "we");
		if (!out) {
			isc_log(ISC_LOG_ERROR, "%s: %s", path, strerror(errno));
			goto out;
		}
	} else {
		if (isatty(STDOUT_FILENO)) {
			isc_log(ISC_LOG_ERROR, "refusing to write a binary trace to a terminal; use -o FILE or a pipe");
			status = 2;
			goto out;
		}
		o.child_stdout_to_stderr = true;
		grow_pipe(STDOUT_FILENO);
	}
	o.out = out;
	bool quiet = isc_config_flag(c, "quiet");
	o.progress = !quiet && isatty(STDERR_FILENO);
	o.quiet = quiet;
	rc = isc_record_run(&o, &res);
	if (rc < 0) {
		isc_log(ISC_LOG_ERROR, "%s", isc_err_msg());
		/* as a shell: 127 not found, 126 found but not executable */
		status = res.exec_errno ? (res.exec_errno == ENOENT ? 127 : 126) : 1;
		goto out;
	}
	/* the workload's status; 1 when it succeeded but its trace is lost */
	status = res.status;
	if (out != stdout && fclose(out) && !res.write_failed) {
		res.write_failed = true;
		snprintf(res.write_error, sizeof(res.write_error), "Failed to write: %s", strerror(errno));
	}
	out = NULL;
	if (res.write_failed) {
		isc_log(ISC_LOG_ERROR, "%s: %s (the workload was not stopped: it exited with status %d)",
			path && strcmp(path, "-") ? path : "stdout", res.write_error, res.status);
		if (status == 0)
			status = 1;
	} else if (!quiet) {
		char how[48] = "";
		if (res.signal)
			snprintf(how, sizeof(how), " (killed by signal %d)", res.signal);
		char size[32];
		if (res.bytes < 1000000)
			snprintf(size, sizeof(size), "%.0f kB", (double)res.bytes / 1e3);
		else
			snprintf(size, sizeof(size), "%.1f MB", (double)res.bytes / 1e6);
		fprintf(stderr, "iscope-record: %llu events (%llu dropped) and %llu stack samples from %u processes, %s "
			"trace, exit status %d%s\n",
			(unsigned long long)res.events, (unsigned long long)res.dropped,
			(unsigned long long)res.stack_samples, res.processes, size, res.status, how);
	}
	if (isc_log_enabled(ISC_LOG_DEBUG)) {
		struct rusage ru;
		if (!getrusage(RUSAGE_SELF, &ru))
			isc_log(ISC_LOG_DEBUG, "peak RSS %ld KiB (the recorder alone, not the workload)", ru.ru_maxrss);
	}
out:
	if (out && out != stdout && fclose(out) && status == 0) {
		isc_log(ISC_LOG_ERROR, "%s: %s", opath ? opath : isc_config_get(c, "output"), strerror(errno));
		status = 1;
	}
	free(opath);
	isc_config_free(c);
	return status;
}
