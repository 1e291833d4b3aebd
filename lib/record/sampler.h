/* sampler.h - /proc, PSI, meminfo and NUMA sampling for the recorder. */
#ifndef ISC_SAMPLER_H
#define ISC_SAMPLER_H

#include <sys/types.h>

#include "isc.h"

struct isc_sampler;
int isc_sampler_new(struct isc_sampler **s);
/*
 * Samples the given processes and their threads, plus system-wide pressure
 * and meminfo, appending timed SAMPLES records (ts = now) to b.  slow: also
 * the costly files (smaps_rollup, numa_maps).  Keeps file descriptors open
 * between ticks; forgets processes that are gone.
 */
int isc_sampler_tick(struct isc_sampler *s, const pid_t *pids, size_t n, uint64_t now, bool slow,
		     struct isc_buf *b, uint64_t *last_ts);
void isc_sampler_free(struct isc_sampler *s);
/* THREAD_NAME records written so far: a tick that wrote one holds a thread's
 * first sample and its name, which a flight recorder must keep. */
uint64_t isc_sampler_names(const struct isc_sampler *s);

/* ---- /proc text (procfs.c) --------------------------------------------- */
/*
 * Fields of a /proc/PID[/task/TID]/stat line in buf, after the last ')':
 * f[k] is field k + 3 of proc(5) (f[0] = 0 stands for the state, which
 * goes to *state), at most nf.  Returns how many of f were filled (1 when
 * only the state was there), -1 when the line has no ") S".
 */
int isc_procfs_stat(char *buf, unsigned long long *f, int nf, char *state);
/* The number after key (e.g. "voluntary_ctxt_switches:", "\nRss:") in buf, 0 when absent. */
unsigned long long isc_procfs_field(const char *buf, const char *key);
/* The number after key (e.g. "total=", "avg10=") in a PSI line, times scale; 0 when absent. */
uint64_t isc_procfs_psi(const char *line, const char *key, double scale);
/* THREAD_WAIT records for blocked threads: on (the default) or off (the cost benchmark's baseline). */
void isc_sampler_set_waits(struct isc_sampler *s, bool on);

/* ---- what a blocked thread waits in (proc_wait.c) ----------------------- */
struct isc_proc_syscall {
	uint8_t call;     /* enum isc_wait_call */
	long nr;          /* system call number, -1 when not in one */
	uint64_t arg[6];  /* its arguments (in a call only) */
};
/*
 * Parses the text of /proc/PID/task/TID/syscall ("running", "-1 SP PC" or
 * "NR A0 .. A5 SP PC").  0, or -EBADMSG when it is none of those.
 */
int isc_proc_syscall_parse(const char *text, struct isc_proc_syscall *out);
/* enum isc_wait_call of a system call number of this machine's architecture. */
uint8_t isc_wait_call_of(long nr);
#define ISC_FDARG_NONE (-1)    /* no descriptor argument */
#define ISC_FDARG_POLLFDS (-2) /* arg0 points to arg1 struct pollfd (poll, ppoll) */
#define ISC_FDARG_NFDS (-3)    /* arg0 is the highest descriptor + 1 (select, pselect6) */
/* Which argument of the call (nr, its family call) is the descriptor it waits on: an index or ISC_FDARG_*. */
int isc_wait_fd_arg(long nr, uint8_t call);
/*
 * enum isc_fd_kind of a descriptor from readlink(/proc/PID/fd/N) and, for
 * a path, the st_mode of stat() through the link (0: unknown, then the
 * path decides: /dev/... but /dev/shm is a device, the rest a file).
 */
uint8_t isc_fd_kind_of_link(const char *target, unsigned mode);

#endif
