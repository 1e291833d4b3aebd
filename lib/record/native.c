/*
 * native.c - the native stack sampler of iscope-record (--native): a
 * software cpu-clock perf event per online CPU on the workload's first
 * process, opened between its fork and its exec, inherited by every
 * thread and process it creates, enabled at exec.  Each sample carries
 * the thread's user registers and a copy of the top of its user stack
 * (unwound offline with DWARF CFI, lib/native), and, where the kernel
 * allows it, the kernel call chain.  The kernel writes the samples and
 * the side-band records (exec'd and mmap'ed files with their build ids,
 * forks, exits, thread names) into one ring per CPU; the recorder's drain
 * thread copies them out every cycle: the workload makes no system call
 * for a sample.
 *
 *   workload threads (any CPU)          recorder drain thread (every cycle)
 *   timer tick -> kernel copies regs    +-> ring cpu0 --+
 *   + stack into the ring of its CPU ---+-> ring cpu1 --+-> parse, sort by time,
 *                                       +-> ...       --+   NATIVE chunks
 *
 * Why inherit from the first process instead of one event per pid as the
 * drain learns of them: inheritance follows every fork from its first
 * instruction (the drain sees a process only once its agent published a
 * file, 20 ms or more later, and never a process without an agent).
 * Inherited events cannot be mmap'ed with cpu = -1, so the events are
 * per CPU (as perf record's), and a forked child's samples land in its
 * parent's rings.
 *
 * Maps: the kernel reports every executable mmap (PERF_RECORD_MMAP2, with
 * the file's build id since Linux 5.12) after exec; a process's
 * /proc/PID/maps is read once, after its exec is seen, for what the kernel
 * does not report ([vsyscall]); a mapping already reported is not written
 * twice.  [vdso] is the kernel's and so ours: its build id is ours.
 * Kernel frames are named as they come: the first kernel call chain
 * loads /proc/kallsyms, and each kernel function met gets a NATIVE_KSYM
 * before the first sample that passes through it.  A forked child has its parent's maps (readers copy them at its
 * NATIVE_TASK fork, formats/trace.md §6.6).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "isc.h"
#include "isc_native_codec.h" /* record bodies */
#include "isc_util.h"         /* isc_sort */
#include "native.h"

#define RING_PAGES 256u  /* data pages per CPU ring (1 MiB with 4 KiB pages): 0.6 s of samples at 100 Hz, 16 KiB */
#define MIN_RING_PAGES 8u
#define MAX_CPUS 1024
#define SET_BITS 16      /* the map and kernel-ip sets: 65536 entries each */
#define KEEP_MAX (1u << 20)    /* bytes of maps and tasks per chunk before it is cut */
#define SAMPLES_MAX (4u << 20) /* bytes of samples per chunk (see emit_pending) */

#ifdef __x86_64__
/* perf's x86 registers a sample carries (bit = enum perf_event_x86_regs) ... */
#define REGS_MASK (0x1ffull | 0xff0000ull) /* AX BX CX DX SI DI BP SP IP, R8-R15 */
/* ... in that order, and the DWARF number each is stored under */
static const uint8_t perf_to_dwarf[ISC_NATIVE_X86_64_NREGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 16,
								 8, 9, 10, 11, 12, 13, 14, 15 };
#endif

struct ring {
	int fd;
	uint8_t *base; /* control page + data */
	size_t map_len, data_size;
	unsigned cpu;
};

/* One record parsed out of a ring, its body encoded in the cycle's arena. */
struct pending {
	uint64_t ts;
	uint8_t type;
	bool keep;
	size_t off, len;
};

struct isc_native {
	struct isc_native_cfg cfg;
	struct perf_event_attr attr;
	bool kernel, build_id_attr;
	struct ring *rings;
	unsigned nrings;
	uint8_t *scratch; /* one record, unwrapped */
	size_t scratch_cap;
	struct isc_buf arena, out_keep, out_samples;
	uint64_t samples_base, samples_last, samples_since; /* the samples chunk being collected */
	struct pending *pend;
	size_t npend, cappend;
	uint64_t *maps_seen, *kips; /* open-addressing sets (0 = empty): maps written, kernel symbols written */
	unsigned nmaps_seen, nkips;
	uint64_t samples, lost, throttled, bytes, cpu_ns;
	struct { dev_t dev; uint64_t ino; uint8_t id[20]; uint8_t len; } bid[256]; /* build ids by file */
	unsigned nbid;
	uint8_t vdso_id[20];
	int vdso_len;
	struct ksym *ksyms; /* /proc/kallsyms, sorted */
	char *ktext;        /* its text, holding the names */
	size_t nksyms;
	bool ksyms_loaded;
	uint32_t execs[64]; /* processes that exec'd this cycle */
	unsigned nexecs;
};

static long perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Adds key to a set of 2^SET_BITS entries; true when it was not there (or
 * the set is full: then everything is new). */
static bool set_add(uint64_t *set, unsigned *n, uint64_t key)
{
	if (!key)
		key = 1;
	if (*n >= (1u << SET_BITS) * 3 / 4)
		return true;
	for (uint64_t i = isc_mix64(key);; i++) {
		uint64_t *s = &set[i & ((1u << SET_BITS) - 1)];
		if (*s == key)
			return false;
		if (!*s) {
			*s = key;
			++*n;
			return true;
		}
	}
}

static int memory_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct { const uint8_t *p; size_t len; } *m = ctx;
	if (off > m->len || len > m->len - off)
		return -EIO;
	memcpy(buf, m->p + off, len);
	return 0;
}

static void fill_attr(struct isc_native *n, bool kernel)
{
	struct perf_event_attr *a = &n->attr;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = 1000000000ull / (n->cfg.hz ? n->cfg.hz : 100);
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER | (kernel ? PERF_SAMPLE_CALLCHAIN : 0);
#ifdef __x86_64__
	a->sample_regs_user = REGS_MASK;
#endif
	a->sample_stack_user = n->cfg.stack_bytes;
	a->exclude_callchain_user = 1; /* user frames come from the stack copy */
	a->exclude_kernel = !kernel;
	a->exclude_hv = 1;
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->build_id = n->build_id_attr;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

int isc_native_new(struct isc_native **out, const struct isc_native_cfg *cfg, char *why, size_t whylen)
{
	*out = NULL;
#ifndef __x86_64__
	(void)cfg;
	snprintf(why, whylen, "native stacks are sampled on x86-64 only");
	return -ENOTSUP;
#else
	struct isc_native *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->cfg = *cfg;
	n->cfg.stack_bytes &= ~7u;
	if (n->cfg.stack_bytes > ISC_NATIVE_STACK_MAX)
		n->cfg.stack_bytes = ISC_NATIVE_STACK_MAX & ~7u;
	/* try on ourselves: kernel samples first (root, CAP_PERFMON, or
	 * perf_event_paranoid <= 1), then user only; build ids in MMAP2
	 * first (Linux 5.12), then without */
	int e = 0;
	for (int k = 1; k >= 0; k--) {
		for (int b = 1; b >= 0; b--) {
			n->build_id_attr = b;
			fill_attr(n, k);
			n->attr.enable_on_exec = 0;
			long fd = perf_open(&n->attr, 0, -1);
			if (fd >= 0) {
				close((int)fd);
				n->kernel = k;
				goto ok;
			}
			if (!e || errno != EINVAL)
				e = errno;
		}
	}
	if (e == EACCES || e == EPERM) {
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
		int par = -9;
		if (f) {
			if (fscanf(f, "%d", &par) != 1)
				par = -9;
			fclose(f);
		}
		if (geteuid() == 0)
			snprintf(why, whylen, "perf_event_open refused (%s) although running as root: a seccomp filter "
				 "or a security module blocks it", strerror(e));
		else if (par >= 3)
			snprintf(why, whylen, "perf_event_open refused (%s): perf_event_paranoid is %d; run as root or "
				 "with CAP_PERFMON, or set it to 2 or less", strerror(e), par);
		else
			snprintf(why, whylen, "perf_event_open refused (%s; perf_event_paranoid is %d): a seccomp filter "
				 "or a security module blocks it", strerror(e), par);
	} else {
		snprintf(why, whylen, "perf_event_open failed (%s)", strerror(e ? e : ENOSYS));
	}
	free(n);
	return -(e ? e : ENOSYS);
ok:
	n->maps_seen = calloc(1u << SET_BITS, sizeof(uint64_t));
	n->kips = calloc(1u << SET_BITS, sizeof(uint64_t));
	if (!n->maps_seen || !n->kips) {
		isc_native_free(n);
		return -ENOMEM;
	}
	/* the [vdso] of every process of this kernel is ours: its build id */
	unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
	if (vdso) {
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)vdso;
		struct { const uint8_t *p; size_t len; } img = { (const uint8_t *)vdso, 0 };
		/* its size: the end of its section headers (the image is small, one or two pages) */
		img.len = (size_t)(eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize);
		if (img.len > (1u << 16))
			img.len = 0;
		n->vdso_len = img.len ? isc_build_id_read(memory_read, &img, img.len, n->vdso_id, sizeof(n->vdso_id)) : 0;
	}
	*out = n;
	return 0;
#endif
}

bool isc_native_kernel(const struct isc_native *n)
{
	return n && n->kernel;
}

/* A record into the cycle's list: body appended to the arena. */
static int pend_add(struct isc_native *n, uint64_t ts, uint8_t type, bool keep, const struct isc_buf *body)
{
	if (n->npend == n->cappend) {
		size_t cap = n->cappend ? n->cappend * 2 : 256;
		struct pending *p = realloc(n->pend, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		n->pend = p;
		n->cappend = cap;
	}
	n->pend[n->npend++] = (struct pending){ ts, type, keep, n->arena.len, body->len };
	return isc_buf_put(&n->arena, body->data, body->len);
}

/* The build id of a mapped file, by (dev, ino), read once. */
static int build_id_for(struct isc_native *n, dev_t dev, uint64_t ino, const char *path, uint8_t *id)
{
	for (unsigned i = 0; i < n->nbid; i++)
		if (n->bid[i].dev == dev && n->bid[i].ino == ino) {
			memcpy(id, n->bid[i].id, n->bid[i].len);
			return n->bid[i].len;
		}
	int len = isc_build_id_of_path(path, id, 20);
	if (n->nbid < sizeof(n->bid) / sizeof(n->bid[0])) {
		n->bid[n->nbid].dev = dev;
		n->bid[n->nbid].ino = ino;
		memcpy(n->bid[n->nbid].id, id, (size_t)len);
		n->bid[n->nbid++].len = (uint8_t)len;
	}
	return len;
}

/* A NATIVE_MAP, unless the same mapping of the same file was written. */
static int add_map(struct isc_native *n, uint64_t ts, struct isc_native_map *m)
{
	uint64_t fk = 1469598103934665603ULL;
	for (size_t i = 0; i < m->path_len; i++)
		fk = (fk ^ m->path[i]) * 1099511628211ULL;
	uint64_t key = isc_mix64(m->pid ^ isc_mix64(m->start ^ isc_mix64(m->len ^ isc_mix64(m->pgoff ^ fk))));
	if (!set_add(n->maps_seen, &n->nmaps_seen, key))
		return 0;
	struct isc_buf b = { 0 };
	int rc = isc_native_map_encode(&b, m);
	if (!rc)
		rc = pend_add(n, ts, ISC_REC_NATIVE_MAP, true, &b);
	isc_buf_free(&b);
	return rc;
}

/* The executable mappings of /proc/PID/maps as NATIVE_MAPs at ts. */
static void snapshot_maps(struct isc_native *n, uint32_t pid, uint64_t ts)
{
	char path[64], line[4096 + 128];
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned maj, mnr;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &mnr, &ino, &pos) < 7 ||
		    strlen(perms) < 3 || perms[2] != 'x' || end <= start)
			continue;
		char *file = line + pos;
		file[strcspn(file, "\n")] = '\0';
		uint8_t id[20];
		int idl = 0;
		if (!strcmp(file, "[vdso]")) {
			idl = n->vdso_len;
			memcpy(id, n->vdso_id, (size_t)idl);
		} else if (file[0] == '/' && ino) {
			idl = build_id_for(n, makedev(maj, mnr), ino, file, id);
		}
		struct isc_native_map m = { pid, start, end - start, off, ISC_NATIVE_PROT_EXEC, ISC_NATIVE_MAP_SNAPSHOT,
					    id, (const uint8_t *)file, (size_t)idl, strlen(file) };
		add_map(n, ts, &m);
	}
	fclose(f);
}

/* The sample_id trailer of a side-band record (TID, TIME): pid tid time. */
static bool sample_id(const uint8_t *rec, size_t size, uint32_t *pid, uint32_t *tid, uint64_t *ts)
{
	if (size < sizeof(struct perf_event_header) + 16)
		return false;
	memcpy(pid, rec + size - 16, 4);
	memcpy(tid, rec + size - 12, 4);
	memcpy(ts, rec + size - 8, 8);
	return true;
}

struct ksym {
	uint64_t start;
	char *name;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The kernel's text symbols from /proc/kallsyms, sorted, read the first
 * time a kernel call chain comes (addresses hidden by kptr_restrict read
 * as 0 and give none: kernel frames are then named by address).  The
 * file (about 120000 lines, 5 MB) is read whole with large reads and
 * parsed in place, the names left in that buffer (n->ktext): the drain
 * thread pays this once, beside the workload, and sscanf and a strdup per
 * line made it about 100 ms of CPU on a 2-CPU machine against the
 * kernel's own formatting of the file. */
static void load_ksyms(struct isc_native *n)
{
	n->ksyms_loaded = true;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t len = 0, cap = 8u << 20;
	char *text = malloc(cap);
	for (ssize_t r = 1; text && r > 0;) {
		if (cap - len < (1u << 20)) {
			char *t = realloc(text, cap * 2);
			if (!t)
				break;
			text = t;
			cap *= 2;
		}
		r = read(fd, text + len, cap - len - 1);
		len += r > 0 ? (size_t)r : 0;
	}
	close(fd);
	if (!text)
		return;
	text[len] = '\n';
	n->ktext = text;
	size_t ncap = 0;
	for (char *p = text, *end = text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p) + 1), *q = p;
		uint64_t a = 0;
		for (; (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'); q++) /* the kernel writes %px: lower case */
			a = a << 4 | (uint64_t)(*q <= '9' ? *q - '0' : *q - 'a' + 10);
		char *line = p;
		p = nl + 1;
		/* "ADDR T NAME" or "ADDR t NAME\t[module]" */
		if (q == line || q + 3 > nl || q[0] != ' ' || q[2] != ' ' || !a ||
		    (q[1] != 't' && q[1] != 'T' && q[1] != 'w' && q[1] != 'W'))
			continue;
		char *name = q + 3, *ne = name;
		while (ne < nl && *ne != '\t' && *ne != ' ')
			ne++;
		if (ne == name)
			continue;
		*ne = '\0';
		if (n->nksyms == ncap) {
			ncap = ncap ? ncap * 2 : 65536;
			struct ksym *k = realloc(n->ksyms, ncap * sizeof(*k));
			if (!k)
				break;
			n->ksyms = k;
		}
		n->ksyms[n->nksyms++] = (struct ksym){ a, name };
	}
	isc_sort(n->ksyms, n->nksyms, sizeof(*n->ksyms), ksym_cmp); /* NULL when kallsyms hides every address */
}

/* A NATIVE_KSYM (at ts, before the sample that needs it) for the kernel
 * function holding ip, the first time that function is met. */
static void name_kernel_ip(struct isc_native *n, uint64_t ip, uint64_t ts)
{
	if (!n->ksyms_loaded)
		load_ksyms(n);
	if (!n->nksyms || ip < n->ksyms[0].start)
		return;
	size_t lo = 0, hi = n->nksyms; /* the last symbol starting at or before ip */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (n->ksyms[mid].start <= ip)
			lo = mid;
		else
			hi = mid;
	}
	if (!set_add(n->kips, &n->nkips, n->ksyms[lo].start))
		return;
	struct isc_native_ksym k = { n->ksyms[lo].start, (const uint8_t *)n->ksyms[lo].name, strlen(n->ksyms[lo].name) };
	struct isc_buf b = { 0 };
	if (!isc_native_ksym_encode(&b, &k))
		pend_add(n, ts, ISC_REC_NATIVE_KSYM, true, &b);
	isc_buf_free(&b);
}

/* A PERF_RECORD_SAMPLE: TID, TIME, IP, [CALLCHAIN], REGS_USER, STACK_USER. */
static int parse_sample(struct isc_native *n, const uint8_t *rec, size_t size, struct isc_buf *b, uint64_t *ts)
{
	const struct perf_event_header *h = (const void *)rec;
	const uint8_t *p = rec + sizeof(*h), *e = rec + size;
	struct isc_native_sample s;
	uint64_t v, abi, nr;
	memset(&s, 0, offsetof(struct isc_native_sample, kernel));
#define TAKE(dst, sz) do { if ((size_t)(e - p) < (sz)) return -EBADMSG; memcpy((dst), p, (sz)); p += (sz); } while (0)
	TAKE(&v, 8); /* ip: the kernel chain's first entry, or the user ip register */
	TAKE(&s.pid, 4);
	TAKE(&s.tid, 4);
	TAKE(ts, 8);
	if (n->attr.sample_type & PERF_SAMPLE_CALLCHAIN) {
		TAKE(&nr, 8);
		for (uint64_t i = 0; i < nr; i++) {
			TAKE(&v, 8);
			if (v >= (uint64_t)PERF_CONTEXT_MAX)
				continue; /* PERF_CONTEXT_KERNEL and the other markers */
			if (s.nkernel < ISC_NATIVE_MAX_KERNEL)
				s.kernel[s.nkernel++] = v;
			name_kernel_ip(n, v, *ts);
		}
	}
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		s.flags |= ISC_NATIVE_SAMPLE_KERNEL;
	TAKE(&abi, 8);
	if (abi == PERF_SAMPLE_REGS_ABI_64) {
#ifdef __x86_64__
		s.nregs = ISC_NATIVE_X86_64_NREGS;
		for (unsigned i = 0; i < ISC_NATIVE_X86_64_NREGS; i++)
			TAKE(&s.regs[perf_to_dwarf[i]], 8);
#endif
	} else if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		return -EBADMSG; /* a 32-bit task: its registers are not the ones we unwind */
	}
	uint64_t ssize, dyn = 0;
	TAKE(&ssize, 8);
	const uint8_t *stack = p;
	if (ssize) {
		if ((size_t)(e - p) < ssize + 8)
			return -EBADMSG;
		p += ssize;
		TAKE(&dyn, 8);
	}
#undef TAKE
	if (!s.nregs)
		s.flags |= ISC_NATIVE_SAMPLE_NO_USER;
	s.stack = stack;
	s.stack_len = s.nregs ? (size_t)(dyn < ssize ? dyn : ssize) : 0;
	if (s.nregs && dyn < n->cfg.stack_bytes)
		s.flags |= ISC_NATIVE_SAMPLE_STACK_END;
	n->samples++;
	return isc_native_sample_encode(b, &s);
}

/* One ring record into the cycle's list (or a count). */
static void take_record(struct isc_native *n, const uint8_t *rec, size_t size)
{
	const struct perf_event_header *h = (const void *)rec;
	struct isc_buf b = { 0 };
	uint64_t ts = 0;
	uint32_t pid, tid;
	uint8_t type = 0;
	bool keep = true;
	n->bytes += size;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (parse_sample(n, rec, size, &b, &ts))
			break;
		type = ISC_REC_NATIVE_SAMPLE;
		keep = false;
		break;
	case PERF_RECORD_MMAP2: {
		/* pid tid addr len pgoff {maj min ino ino_gen | build id} prot flags filename sample_id */
		const size_t fixed = sizeof(*h) + 8 + 24 + 24 + 8;
		if (size < fixed + 16 || !sample_id(rec, size, &pid, &tid, &ts))
			break;
		uint64_t addr, len, pgoff, ino = 0;
		uint32_t prot, maj = 0, mnr = 0;
		memcpy(&pid, rec + 8, 4);
		memcpy(&addr, rec + 16, 8);
		memcpy(&len, rec + 24, 8);
		memcpy(&pgoff, rec + 32, 8);
		memcpy(&prot, rec + 64, 4);
		const char *file = (const char *)rec + fixed;
		size_t flen = strnlen(file, size - 16 - fixed);
		if (!(prot & PROT_EXEC) || !len)
			break;
		char path[4096];
		snprintf(path, sizeof(path), "%.*s", (int)flen, file);
		uint8_t id[20];
		int idl = 0;
		if (!strcmp(path, "[vdso]")) { /* every process's is ours */
			idl = n->vdso_len;
			memcpy(id, n->vdso_id, (size_t)idl);
		} else if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			idl = rec[40] <= 20 ? rec[40] : 0;
			memcpy(id, rec + 44, (size_t)idl);
		} else {
			memcpy(&maj, rec + 40, 4);
			memcpy(&mnr, rec + 44, 4);
			memcpy(&ino, rec + 48, 8);
			if (path[0] == '/' && ino)
				idl = build_id_for(n, makedev(maj, mnr), ino, path, id);
		}
		struct isc_native_map m = { pid, addr, len, pgoff, ISC_NATIVE_PROT_EXEC, ISC_NATIVE_MAP_MMAP, id,
					    (const uint8_t *)path, (size_t)idl, flen };
		add_map(n, ts, &m);
		return;
	}
	case PERF_RECORD_COMM: {
		uint32_t cpid, ctid;
		if (size < sizeof(*h) + 8 + 16 || !sample_id(rec, size, &pid, &tid, &ts))
			break;
		memcpy(&cpid, rec + 8, 4);
		memcpy(&ctid, rec + 12, 4);
		const char *comm = (const char *)rec + 16;
		bool exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
		struct isc_native_task t = { cpid, ctid, exec ? ISC_NATIVE_TASK_EXEC : ISC_NATIVE_TASK_COMM, 0, 0,
					     (const uint8_t *)comm, strnlen(comm, size - 16 - 16) };
		if (isc_native_task_encode(&b, &t))
			break;
		type = ISC_REC_NATIVE_TASK;
		if (pend_add(n, ts, type, keep, &b) == 0 && exec && n->nexecs < sizeof(n->execs) / sizeof(n->execs[0]))
			n->execs[n->nexecs++] = cpid; /* its /proc maps after this cycle's records */
		isc_buf_free(&b);
		return;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		uint32_t f[4];
		if (size < sizeof(*h) + 24 + 16 || !sample_id(rec, size, &pid, &tid, &ts))
			break;
		memcpy(f, rec + 8, 16); /* pid ppid tid ptid */
		struct isc_native_task t = { f[0], f[2], h->type == PERF_RECORD_FORK ? ISC_NATIVE_TASK_FORK : ISC_NATIVE_TASK_EXIT,
					     f[1], f[3], NULL, 0 };
		if (isc_native_task_encode(&b, &t))
			break;
		type = ISC_REC_NATIVE_TASK;
		break;
	}
	case PERF_RECORD_LOST: {
		uint64_t lost;
		if (size < sizeof(*h) + 16 + 16 || !sample_id(rec, size, &pid, &tid, &ts))
			break;
		memcpy(&lost, rec + 16, 8);
		n->lost += lost;
		if (isc_buf_put_varint(&b, 0) || isc_buf_put_varint(&b, 0) || isc_buf_put_varint(&b, lost))
			break;
		type = ISC_REC_NATIVE_LOST;
		break;
	}
	case PERF_RECORD_THROTTLE:
		n->throttled++;
		break;
	default:
		break;
	}
	if (type)
		pend_add(n, ts, type, keep, &b);
	isc_buf_free(&b);
}

static int pend_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off; /* stable: ring order */
}

/* Writes the samples collected so far as one NATIVE chunk. */
static void flush_samples(struct isc_native *n)
{
	if (n->out_samples.len)
		n->cfg.emit(n->cfg.ctx, n->out_samples.data, n->out_samples.len, n->samples_base, false);
	n->out_samples.len = 0;
}

/*
 * The cycle's records in time order: maps, tasks and the rest at once as
 * a kept chunk; samples appended to the chunk being collected, written
 * once it holds SAMPLES_MAX bytes or its oldest sample is flush_ms old.
 * Big chunks matter here: consecutive stack copies of a thread are mostly
 * the same bytes, which zstd finds only within one frame (a recording of
 * 63 KiB stacks compressed 2.2x in chunks of 64 KiB, 13x in 1 MiB, 28x in
 * 4 MiB).
 */
static void emit_pending(struct isc_native *n, uint64_t now)
{
	isc_sort(n->pend, n->npend, sizeof(*n->pend), pend_cmp);
	uint64_t base = 0, last = 0;
	n->out_keep.len = 0;
	for (size_t i = 0; i < n->npend; i++) {
		const struct pending *p = &n->pend[i];
		struct isc_buf *o = p->keep ? &n->out_keep : &n->out_samples;
		if (!p->keep && !o->len)
			n->samples_base = n->samples_last = n->samples_since = p->ts;
		if (p->keep && !o->len)
			base = last = p->ts;
		if (isc_buf_put_record(o, p->type, p->ts, p->keep ? &last : &n->samples_last, n->arena.data + p->off,
				       p->len))
			continue;
		if (p->keep && o->len >= KEEP_MAX) {
			n->cfg.emit(n->cfg.ctx, o->data, o->len, base, true);
			o->len = 0;
		} else if (!p->keep && o->len >= SAMPLES_MAX) {
			flush_samples(n);
		}
	}
	if (n->out_keep.len)
		n->cfg.emit(n->cfg.ctx, n->out_keep.data, n->out_keep.len, base, true);
	n->out_keep.len = 0;
	if (n->out_samples.len && now - n->samples_since >= (uint64_t)n->cfg.flush_ms * 1000000u)
		flush_samples(n);
	n->npend = 0;
	n->arena.len = 0;
}

uint64_t isc_native_pending_base(const struct isc_native *n)
{
	return n && n->out_samples.len ? n->samples_base : UINT64_MAX;
}

int isc_native_attach(struct isc_native *n, pid_t pid, char *why, size_t whylen)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long page = sysconf(_SC_PAGESIZE);
	if (ncpu < 1 || ncpu > MAX_CPUS)
		ncpu = ncpu < 1 ? 1 : MAX_CPUS;
	n->rings = calloc((size_t)ncpu, sizeof(*n->rings));
	if (!n->rings)
		return -ENOMEM;
	fill_attr(n, n->kernel);
	unsigned pages = RING_PAGES;
	int e = 0;
	for (long c = 0; c < ncpu; c++) {
		long fd = perf_open(&n->attr, pid, (int)c);
		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL) /* an offline or absent CPU */
				continue;
			e = errno;
			break;
		}
		struct ring *r = &n->rings[n->nrings];
		void *m = MAP_FAILED;
		/* an unprivileged user's locked memory is limited
		 * (perf_event_mlock_kb): smaller rings, down to MIN_RING_PAGES */
		while (pages >= MIN_RING_PAGES &&
		       (m = mmap(NULL, (size_t)(pages + 1) * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0)) ==
			       MAP_FAILED &&
		       (errno == EPERM || errno == ENOMEM))
			pages /= 2;
		if (m == MAP_FAILED) {
			e = errno;
			close((int)fd);
			break;
		}
		*r = (struct ring){ (int)fd, m, (size_t)(pages + 1) * (size_t)page, (size_t)pages * (size_t)page,
				    (unsigned)c };
		n->nrings++;
	}
	if (e || !n->nrings) {
		snprintf(why, whylen, "cannot sample the workload's native stacks: perf_event_open or its ring: %s",
			 strerror(e ? e : ENODEV));
		for (unsigned i = 0; i < n->nrings; i++) {
			munmap(n->rings[i].base, n->rings[i].map_len);
			close(n->rings[i].fd);
		}
		n->nrings = 0;
		return -(e ? e : ENODEV);
	}
	struct isc_native_sampler s = { ISC_NATIVE_EVENT_CPU_CLOCK, n->attr.sample_period, n->cfg.stack_bytes,
					ISC_NATIVE_ARCH_X86_64, ISC_NATIVE_X86_64_NREGS,
					n->kernel ? ISC_NATIVE_SAMPLER_KERNEL : 0, n->nrings };
	struct isc_buf b = { 0 };
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!isc_native_sampler_encode(&b, &s))
		pend_add(n, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, ISC_REC_NATIVE_SAMPLER, true, &b);
	isc_buf_free(&b);
	emit_pending(n, 0);
	return 0;
}

/* Copies the records of one ring out and frees their space. */
static void drain_ring(struct isc_native *n, struct ring *r)
{
	struct perf_event_mmap_page *pg = (void *)r->base;
	const uint8_t *data = r->base + (r->map_len - r->data_size);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		size_t at = (size_t)(tail % r->data_size);
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) % r->data_size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* the kernel's own record: not expected; drop the rest of this cycle */
		if (n->scratch_cap < h.size) {
			uint8_t *s = realloc(n->scratch, h.size);
			if (!s)
				break;
			n->scratch = s;
			n->scratch_cap = h.size;
		}
		size_t first = r->data_size - at < h.size ? r->data_size - at : h.size;
		memcpy(n->scratch, data + at, first);
		memcpy(n->scratch + first, data, h.size - first);
		take_record(n, n->scratch, h.size);
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

void isc_native_drain(struct isc_native *n)
{
	if (!n || !n->nrings)
		return;
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (unsigned i = 0; i < n->nrings; i++)
		drain_ring(n, &n->rings[i]);
	clock_gettime(CLOCK_MONOTONIC, &b);
	uint64_t now = (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
	for (unsigned i = 0; i < n->nexecs; i++)
		snapshot_maps(n, n->execs[i], now);
	n->nexecs = 0;
	emit_pending(n, now);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	n->cpu_ns += (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
}

void isc_native_finish(struct isc_native *n)
{
	if (!n || !n->nrings)
		return;
	for (unsigned i = 0; i < n->nrings; i++)
		ioctl(n->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	isc_native_drain(n);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t ts = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	struct isc_buf b = { 0 };
	const uint64_t v[] = { 0, 0, n->samples, n->lost, n->throttled, n->bytes, n->nkips, n->cpu_ns };
	int rc = 0;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		rc |= isc_buf_put_varint(&b, v[i]);
	if (!rc)
		pend_add(n, ts, ISC_REC_NATIVE_STATS, true, &b);
	isc_buf_free(&b);
	emit_pending(n, ts);
	flush_samples(n);
	for (unsigned i = 0; i < n->nrings; i++) {
		munmap(n->rings[i].base, n->rings[i].map_len);
		close(n->rings[i].fd);
	}
	n->nrings = 0;
}

void isc_native_free(struct isc_native *n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->nrings; i++) {
		munmap(n->rings[i].base, n->rings[i].map_len);
		close(n->rings[i].fd);
	}
	free(n->rings);
	free(n->scratch);
	isc_buf_free(&n->arena);
	isc_buf_free(&n->out_keep);
	isc_buf_free(&n->out_samples);
	free(n->pend);
	free(n->maps_seen);
	free(n->kips);
	free(n->ksyms);
	free(n->ktext);
	free(n);
}
