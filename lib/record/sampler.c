/*
 * sampler.c - reads /proc for the recorder's sampler thread.
 *
 * Per process /proc/P/stat; per thread task/T/stat and task/T/status (a
 * process's context switches are the sum over its live threads);
 * system-wide /proc/pressure/{cpu,memory,io} and /proc/meminfo.
 * Descriptors stay open and are re-read with pread(…, 0), so a tick costs
 * a few syscalls per thread.  smaps_rollup and numa_maps cost milliseconds
 * on a large process and are read only on "slow" ticks (1 Hz), and
 * smaps_rollup also on a tick whose RSS moved SMAPS_MOVE bytes or more
 * from the last read, so the composition keeps up with fast growth (the
 * memory at an out-of-memory death is at most one tick old).
 *
 * A thread found blocked (state S or D) gets a THREAD_WAIT record before
 * its THREAD_SAMPLE: what it waits in, from task/T/syscall (opened the
 * first time the thread is seen blocked, then kept open), the kind of the
 * descriptor the call waits on (readlink + stat of /proc/P/fd/N, cached
 * per process for FD_CACHE_NS: a number closed and reused for another kind
 * of file within that time keeps the old kind), and, outside a system
 * call, task/T/wchan.  For poll and ppoll the first descriptors are read
 * from the workload's memory (process_vm_readv, as the recorder may
 * ptrace its own children).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "isc_config.h"
#include "sampler.h"
#include "isc_shm.h"
#if ISC_HAVE_NUMA
#include <numa.h>
#endif

#define MAX_TIDS 4096
#define FD_CACHE 64                   /* descriptor kinds remembered per process (direct-mapped) */
#define FD_CACHE_NS 1000000000u       /* for at most 1 s */
#define NOT_OPEN (-2)                 /* a lazily opened descriptor not tried yet */

struct tstate {
	pid_t tid;
	int fd_stat, fd_status, fd_syscall, fd_wchan;
	unsigned gen;
};

struct fd_kind_entry {
	int fd;
	uint8_t kind;
	uint64_t ts;
};

/* RSS change since the last smaps_rollup read that triggers another one. */
#define SMAPS_MOVE (16ull << 20)

struct pstate {
	pid_t pid;
	int fd_stat;
	uint64_t smaps_rss; /* RSS (bytes) at the last smaps_rollup read */
	struct tstate *t;
	size_t nt, capt;
	unsigned gen;
	struct fd_kind_entry fdk[FD_CACHE];
};

struct isc_sampler {
	struct pstate *p;
	size_t np, capp;
	int fd_psi[3], fd_meminfo;
	long ticks_per_s, page_size;
	bool numa;
	bool waits; /* THREAD_WAIT for blocked threads */
	unsigned gen;
	uint64_t names; /* THREAD_NAME records written so far */
	char buf[16384];
};

static int open_ro(const char *path)
{
	return open(path, O_RDONLY | O_CLOEXEC);
}

int isc_sampler_new(struct isc_sampler **sp)
{
	struct isc_sampler *s = calloc(1, sizeof(*s));
	const char *psi[3] = { "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io" };
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < 3; i++)
		s->fd_psi[i] = open_ro(psi[i]);
	s->fd_meminfo = open_ro("/proc/meminfo");
	s->waits = true;
	s->ticks_per_s = sysconf(_SC_CLK_TCK);
	s->page_size = sysconf(_SC_PAGESIZE);
#if ISC_HAVE_NUMA
	s->numa = numa_available() >= 0;
#endif
	*sp = s;
	return 0;
}

/* Reads a whole small file from an open descriptor into s->buf. */
static ssize_t reread(struct isc_sampler *s, int fd)
{
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, s->buf, sizeof(s->buf) - 1, 0);
	if (n < 0)
		return -1;
	s->buf[n] = '\0';
	return n;
}

static void put_rec(struct isc_buf *b, uint8_t type, uint64_t now, uint64_t *last, const uint64_t *v,
		    unsigned n)
{
	uint8_t body[16 * 10];
	unsigned len = 0;
	for (unsigned i = 0; i < n; i++)
		len += isc_put_varint(body + len, v[i]);
	isc_buf_put_record(b, type, now, last, body, len);
}

static int open_lazy(int *fd, const struct pstate *p, const struct tstate *t, const char *name)
{
	if (*fd == NOT_OPEN) {
		char path[96];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)p->pid, (int)t->tid, name);
		*fd = open_ro(path);
	}
	return *fd;
}

/* Kind of descriptor fd of process p (enum isc_fd_kind), through the cache. */
static uint8_t fd_kind(struct pstate *p, int fd, uint64_t now)
{
	struct fd_kind_entry *c = &p->fdk[(unsigned)fd % FD_CACHE];
	if (c->ts && c->fd == fd && now - c->ts < FD_CACHE_NS)
		return c->kind;
	char path[64], target[256];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)p->pid, fd);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return ISC_FD_NONE;
	target[n] = '\0';
	struct stat st;
	unsigned mode = target[0] == '/' && !stat(path, &st) ? (unsigned)st.st_mode : 0;
	*c = (struct fd_kind_entry){ fd, isc_fd_kind_of_link(target, mode), now ? now : 1 };
	return c->kind;
}

/* The first valid descriptor of the pollfd array a blocked poll() waits on, or -1. */
static int poll_first_fd(const struct pstate *p, uint64_t addr, uint64_t nfds)
{
	struct pollfd pf[4];
	size_t n = nfds < 4 ? (size_t)nfds : 4;
	struct iovec local = { pf, n * sizeof(pf[0]) }, remote = { (void *)(uintptr_t)addr, n * sizeof(pf[0]) };
	if (!n || process_vm_readv(p->pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (pf[i].fd >= 0)
			return pf[i].fd;
	return -1;
}

/* THREAD_WAIT for a thread seen blocked: what it waits in (file comment). */
static void sample_wait(struct isc_sampler *s, struct pstate *p, struct tstate *t, char state, uint64_t now,
			struct isc_buf *b, uint64_t *last)
{
	struct isc_proc_syscall sc = { .call = ISC_WAIT_UNKNOWN, .nr = -1 };
	if (reread(s, open_lazy(&t->fd_syscall, p, t, "syscall")) > 0 && isc_proc_syscall_parse(s->buf, &sc))
		sc.call = ISC_WAIT_UNKNOWN;
	int fd = -1;
	uint8_t kind = ISC_FD_NONE;
	if (sc.nr >= 0) {
		int which = isc_wait_fd_arg(sc.nr, sc.call);
		if (which >= 0)
			fd = sc.arg[which] <= INT32_MAX ? (int)sc.arg[which] : -1;
		else if (which == ISC_FDARG_POLLFDS)
			fd = poll_first_fd(p, sc.arg[0], sc.arg[1]);
		else if (which == ISC_FDARG_NFDS)
			fd = sc.arg[0] > 0 && sc.arg[0] <= INT32_MAX ? (int)sc.arg[0] - 1 : -1;
		if (fd >= 0)
			kind = fd_kind(p, fd, now);
	}
	uint8_t body[16 * 10 + 64];
	unsigned len = 0;
	uint64_t v[10] = { (uint64_t)p->pid, (uint64_t)t->tid, sc.call, (uint64_t)(sc.nr + 1),
			   sc.arg[0], sc.arg[1], sc.arg[2], sc.arg[3], (uint64_t)(fd + 1), kind };
	for (unsigned i = 0; i < 10; i++)
		len += isc_put_varint(body + len, v[i]);
	/* outside a system call (or in D), the kernel function it sleeps in */
	if ((sc.call == ISC_WAIT_NO_SYSCALL || state == 'D') && reread(s, open_lazy(&t->fd_wchan, p, t, "wchan")) > 0 &&
	    strcmp(s->buf, "0")) {
		size_t n = strcspn(s->buf, "\n");
		if (n > 63)
			n = 63;
		memcpy(body + len, s->buf, n);
		len += (unsigned)n;
	}
	isc_buf_put_record(b, ISC_REC_THREAD_WAIT, now, last, body, len);
}

/* One THREAD_SAMPLE (after a THREAD_WAIT when blocked); adds the thread's context switches to csw[2]. */
static void sample_thread(struct isc_sampler *s, struct pstate *p, struct tstate *t, uint64_t now,
			  struct isc_buf *b, uint64_t *last, uint64_t *csw)
{
	unsigned long long f[40] = { 0 };
	char state = '?';
	if (reread(s, t->fd_stat) <= 0 || isc_procfs_stat(s->buf, f, 38, &state) < 37)
		return;
	/* f[k] = stat field k + 3 with f[0] = the state placeholder */
	uint64_t ns_per_tick = 1000000000u / (uint64_t)s->ticks_per_s;
	uint64_t utime = f[11] * ns_per_tick, stime = f[12] * ns_per_tick;
	uint64_t cpu = f[36];
	uint64_t vcsw = 0, ivcsw = 0, node = 0;
	if (reread(s, t->fd_status) > 0) {
		vcsw = isc_procfs_field(s->buf, "voluntary_ctxt_switches:");
		ivcsw = isc_procfs_field(s->buf, "nonvoluntary_ctxt_switches:");
	}
#if ISC_HAVE_NUMA
	if (s->numa) {
		int nd = numa_node_of_cpu((int)cpu);
		node = nd >= 0 ? (uint64_t)nd + 1 : 0;
	}
#endif
	csw[0] += vcsw;
	csw[1] += ivcsw;
	if (s->waits && (state == 'S' || state == 'D'))
		sample_wait(s, p, t, state, now, b, last);
	uint64_t v[9] = { (uint64_t)p->pid, (uint64_t)t->tid, utime, stime, (uint64_t)(unsigned char)state,
			  cpu, vcsw, ivcsw, node };
	put_rec(b, ISC_REC_THREAD_SAMPLE, now, last, v, 9);
}

static struct tstate *thread_find(struct pstate *p, pid_t tid)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i].tid == tid)
			return &p->t[i];
	return NULL;
}

static void thread_close(struct tstate *t)
{
	if (t->fd_stat >= 0)
		close(t->fd_stat);
	if (t->fd_status >= 0)
		close(t->fd_status);
	if (t->fd_syscall >= 0)
		close(t->fd_syscall);
	if (t->fd_wchan >= 0)
		close(t->fd_wchan);
}

/* Discovers threads, names new ones, samples each; forgets exited ones.
 * csw receives the live threads' voluntary and involuntary switches. */
static void sample_threads(struct isc_sampler *s, struct pstate *p, uint64_t now, struct isc_buf *b,
			   uint64_t *last, uint64_t *csw)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d)
		return;
	p->gen++;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0)
			continue;
		struct tstate *t = thread_find(p, tid);
		if (!t) {
			if (p->nt == MAX_TIDS)
				continue;
			if (p->nt == p->capt) {
				size_t cap = p->capt ? p->capt * 2 : 16;
				struct tstate *n = realloc(p->t, cap * sizeof(*n));
				if (!n)
					continue;
				p->t = n;
				p->capt = cap;
			}
			t = &p->t[p->nt++];
			t->tid = tid;
			t->fd_syscall = t->fd_wchan = NOT_OPEN;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)p->pid, (int)tid);
			t->fd_stat = open_ro(path);
			snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)p->pid, (int)tid);
			t->fd_status = open_ro(path);
			snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)p->pid, (int)tid);
			int fd = open_ro(path);
			ssize_t n = fd >= 0 ? read(fd, s->buf, 64) : -1;
			if (fd >= 0)
				close(fd);
			if (n > 0) {
				uint8_t body[100];
				unsigned len = isc_put_varint(body, (uint64_t)p->pid);
				len += isc_put_varint(body + len, (uint64_t)tid);
				if (s->buf[n - 1] == '\n')
					n--;
				memcpy(body + len, s->buf, (size_t)n);
				isc_buf_put_record(b, ISC_REC_THREAD_NAME, now, last, body, len + (size_t)n);
				s->names++;
			}
		}
		t->gen = p->gen;
		sample_thread(s, p, t, now, b, last, csw);
	}
	closedir(d);
	for (size_t i = 0; i < p->nt;) {
		if (p->t[i].gen != p->gen) {
			thread_close(&p->t[i]);
			p->t[i] = p->t[--p->nt];
		} else {
			i++;
		}
	}
}

static bool sample_proc(struct isc_sampler *s, struct pstate *p, uint64_t now, bool slow,
			struct isc_buf *b, uint64_t *last)
{
	unsigned long long f[40] = { 0 };
	char state;
	if (reread(s, p->fd_stat) <= 0 || isc_procfs_stat(s->buf, f, 24, &state) < 22)
		return false; /* gone */
	uint64_t ns_per_tick = 1000000000u / (uint64_t)s->ticks_per_s;
	/* /proc/P/status counts the main thread only: sum the threads instead */
	uint64_t csw[2] = { 0, 0 };
	sample_threads(s, p, now, b, last, csw);
	/* f[7] minflt, f[9] majflt, f[11] utime, f[12] stime, f[17] threads, f[21] rss */
	uint64_t v[9] = { (uint64_t)p->pid, f[11] * ns_per_tick, f[12] * ns_per_tick,
			  f[21] * (uint64_t)s->page_size, f[7], f[9], f[17], csw[0], csw[1] };
	put_rec(b, ISC_REC_PROC_SAMPLE, now, last, v, 9);
	bool moved = v[3] >= p->smaps_rss + SMAPS_MOVE || v[3] + SMAPS_MOVE <= p->smaps_rss;
	if (!slow && !moved)
		return true;
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)p->pid);
	int fd = open_ro(path);
	p->smaps_rss = v[3];
	if (fd >= 0) {
		if (reread(s, fd) > 0) {
			uint64_t sv[5] = { (uint64_t)p->pid, isc_procfs_field(s->buf, "\nRss:") * 1024,
					   isc_procfs_field(s->buf, "\nPss:") * 1024,
					   isc_procfs_field(s->buf, "\nSwap:") * 1024,
					   isc_procfs_field(s->buf, "\nAnonymous:") * 1024 };
			put_rec(b, ISC_REC_SMAPS, now, last, sv, 5);
		}
		close(fd);
	}
	if (!slow || !s->numa)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)p->pid);
	FILE *nm = fopen(path, "re");
	if (nm) {
		uint64_t pages[14] = { 0 };
		unsigned maxn = 0;
		char line[1024];
		while (fgets(line, sizeof(line), nm)) {
			for (char *q = strstr(line, " N"); q; q = strstr(q + 1, " N")) {
				char *end;
				unsigned long node = strtoul(q + 2, &end, 10);
				if (*end == '=' && node < 14) {
					pages[node] += strtoull(end + 1, NULL, 10);
					if (node + 1 > maxn)
						maxn = (unsigned)node + 1;
				}
			}
		}
		fclose(nm);
		uint64_t v2[16] = { (uint64_t)p->pid, maxn };
		memcpy(v2 + 2, pages, maxn * sizeof(uint64_t));
		put_rec(b, ISC_REC_NUMA_MAPS, now, last, v2, 2 + maxn);
	}
	return true;
}

static void sample_system(struct isc_sampler *s, uint64_t now, struct isc_buf *b, uint64_t *last)
{
	for (int i = 0; i < 3; i++) {
		if (reread(s, s->fd_psi[i]) <= 0)
			continue;
		char *full = strstr(s->buf, "full");
		uint64_t v[4] = { (uint64_t)i, isc_procfs_psi(s->buf, "total=", 1),
				  full ? isc_procfs_psi(full, "total=", 1) : 0, isc_procfs_psi(s->buf, "avg10=", 100) };
		put_rec(b, ISC_REC_PRESSURE, now, last, v, 4);
	}
	if (reread(s, s->fd_meminfo) > 0) {
		uint64_t v[4] = { isc_procfs_field(s->buf, "MemTotal:") * 1024,
				  isc_procfs_field(s->buf, "MemAvailable:") * 1024,
				  isc_procfs_field(s->buf, "SwapTotal:") * 1024,
				  isc_procfs_field(s->buf, "SwapFree:") * 1024 };
		put_rec(b, ISC_REC_MEMINFO, now, last, v, 4);
	}
}

static void proc_close(struct pstate *p)
{
	if (p->fd_stat >= 0)
		close(p->fd_stat);
	for (size_t i = 0; i < p->nt; i++)
		thread_close(&p->t[i]);
	free(p->t);
}

int isc_sampler_tick(struct isc_sampler *s, const pid_t *pids, size_t n, uint64_t now, bool slow,
		     struct isc_buf *b, uint64_t *last_ts)
{
	s->gen++;
	for (size_t k = 0; k < n; k++) {
		struct pstate *p = NULL;
		for (size_t i = 0; i < s->np; i++)
			if (s->p[i].pid == pids[k])
				p = &s->p[i];
		if (!p) {
			if (s->np == s->capp) {
				size_t cap = s->capp ? s->capp * 2 : 8;
				struct pstate *np = realloc(s->p, cap * sizeof(*np));
				if (!np)
					return -ENOMEM;
				s->p = np;
				s->capp = cap;
			}
			char path[64];
			p = &s->p[s->np++];
			memset(p, 0, sizeof(*p));
			p->pid = pids[k];
			snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
			p->fd_stat = open_ro(path);
		}
		if (p->fd_stat >= 0 && !sample_proc(s, p, now, slow, b, last_ts)) {
			close(p->fd_stat); /* exited: stop reading it */
			p->fd_stat = -1;
		}
	}
	sample_system(s, now, b, last_ts);
	return 0;
}

void isc_sampler_set_waits(struct isc_sampler *s, bool on)
{
	s->waits = on;
}

void isc_sampler_free(struct isc_sampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->np; i++)
		proc_close(&s->p[i]);
	free(s->p);
	for (int i = 0; i < 3; i++)
		if (s->fd_psi[i] >= 0)
			close(s->fd_psi[i]);
	if (s->fd_meminfo >= 0)
		close(s->fd_meminfo);
	free(s);
}

uint64_t isc_sampler_names(const struct isc_sampler *s)
{
	return s->names;
}
