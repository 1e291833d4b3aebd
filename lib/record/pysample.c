/*
 * pysample.c - samples the Python stacks of traced processes from outside.
 *
 * For each process: find the ELF file mapped in /proc/PID/maps that defines
 * _PyRuntime (the python binary or libpython), read its symbols and the
 * interpreter's version (Py_Version on 3.11+, else the file's name and its
 * PY_VERSION string), pick the build-time layout of that minor version
 * (pylayout.h; 3.13+ take the offsets the interpreter publishes), check it
 * against the process by one walk, and from then on read every thread's
 * stack with process_vm_readv at each tick (pyremote.c).  The workload is
 * never stopped or signalled: a sample costs it nothing but the memory
 * bandwidth of the reads, and can neither crash nor block it; stacks read
 * while the thread runs can be torn, which the type checks mostly catch.
 *
 * Each code object met becomes a STRING_DEF of kind CODE (qualname, file,
 * first line) with an id of the process from ISC_STRING_ID_SAMPLER_BASE up,
 * each C callee met (what the innermost frame's call or operator runs:
 * pyremote.c) one of kind CFUNC (its name as the profile hook names it,
 * its module) from the same ids; each thread stack a PY_SAMPLE record
 * (formats/trace.md §6.2) with its callee.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "isc_format.h"
#include "isc_util.h" /* isc_hindex, isc_grow */
#include "pysample.h"
#include "isc_shm.h"
#include "pyremote.h"

#define PROBE_TICKS_MAX 1000 /* give up on a process with no CPython after this many ticks */
#define VERIFY_TRIES 50      /* walks that may find no thread before the layout counts as wrong */
#define CODES_MAX (1u << 20)
#define ELF_STRTAB_MAX (64u << 20)
#define ELF_RODATA_MAX (64u << 20)

enum { P_PROBE, P_VERIFY, P_SAMPLE, P_OFF };

struct codeent {
	uint64_t code, name, qualname, file;
	uint32_t first, id;
};

/* A callee's identity (its source, slot, PyMethodDef or type) and what it was named. */
struct calleeent {
	uint64_t k0, ml, type;
	uint32_t id; /* 0: it could not be named */
	uint8_t kind;
	bool torch, used;
};

struct tfd {
	pid_t tid;
	int fd, fd_sched;
	unsigned gen;
	bool have_sched;
	uint64_t run_ns, wait_ns; /* schedstat at the previous sample */
};

struct pyproc {
	pid_t pid;
	int state;
	unsigned probes, tries, gen;
	bool seen;
	struct isc_pyremote r;
	struct codeent *codes;       /* the code objects named so far */
	size_t ncodes, capcodes;
	struct calleeent *callees; /* open addressing, capcallees a power of two */
	size_t ncallees, capcallees;
	struct isc_hindex code_index; /* code object address -> index in codes (an address is reused after a free) */
	uint32_t next_id;
	struct tfd *t;
	size_t nt, capt;
};

struct isc_pysampler {
	struct isc_pysampler_hooks h;
	struct pyproc *p;
	size_t np, capp;
	unsigned gen;
	uint64_t ticks, stacks, failed;
	struct isc_pystack *stacks_buf;
	struct isc_buf strings, body;
	bool warned;
	uint32_t pthread_tid_off;
};

/* ---- reading the other process ------------------------------------------ */

static int vm_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	pid_t pid = (pid_t)(intptr_t)ctx;
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EFAULT;
}

/* Where glibc keeps a thread's kernel tid inside its struct pthread (whose
 * address is the pthread_t that 3.9/3.10 store as thread_id): found once in
 * our own thread, which runs the same glibc as the workload. */
static uint32_t find_pthread_tid_off(void)
{
	const uint32_t *p = (const uint32_t *)(uintptr_t)pthread_self();
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < 1024 / 4; i++)
		if (p[i] == tid)
			return i * 4;
	return ISC_PY_NONE;
}

/* ---- ELF ---------------------------------------------------------------- */

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE, SYM_STR, SYM_BYTES, SYM_CFUNC, SYM_DESCR, SYM_MODULE, SYM_CAPSULE,
       SYM_TYPE, SYM_FUNCTION, SYM_METHOD, NSYM };
static const char *const sym_names[NSYM] = { "_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type",
					     "PyBytes_Type", "PyCFunction_Type", "PyMethodDescr_Type",
					     "PyModule_Type", "PyCapsule_Type", "PyType_Type", "PyFunction_Type",
					     "PyMethod_Type" };

struct elfinfo {
	uint64_t load_vaddr; /* lowest PT_LOAD p_vaddr, page aligned */
	uint64_t sym[NSYM];  /* st_value, 0 when absent */
	uint64_t rodata_off, rodata_size;
};

static int pread_all(int fd, void *dst, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, dst, len, (off_t)off);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Symbols of one SHT_SYMTAB/SHT_DYNSYM section (strings from its linked table). */
static void elf_symbols(int fd, const Elf64_Shdr *sh, const Elf64_Shdr *str, struct elfinfo *ei)
{
	if (sh->sh_entsize != sizeof(Elf64_Sym) || str->sh_size > ELF_STRTAB_MAX || !str->sh_size)
		return;
	char *strs = malloc(str->sh_size + 1);
	Elf64_Sym *syms = malloc(4096 * sizeof(Elf64_Sym));
	if (!strs || !syms || pread_all(fd, strs, str->sh_size, str->sh_offset))
		goto out;
	strs[str->sh_size] = '\0';
	uint64_t n = sh->sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 0; i < n && i < (1u << 24); i += 4096) {
		uint64_t k = n - i < 4096 ? n - i : 4096;
		if (pread_all(fd, syms, k * sizeof(Elf64_Sym), sh->sh_offset + i * sizeof(Elf64_Sym)))
			break;
		for (uint64_t j = 0; j < k; j++) {
			if (syms[j].st_name >= str->sh_size || !syms[j].st_value || syms[j].st_shndx == SHN_UNDEF)
				continue;
			const char *nm = strs + syms[j].st_name;
			for (int s = 0; s < NSYM; s++)
				if (!ei->sym[s] && !strcmp(nm, sym_names[s]))
					ei->sym[s] = syms[j].st_value;
		}
	}
out:
	free(strs);
	free(syms);
}

/* Reads what we need of an ELF file: symbols, load address, .rodata. */
static int elf_read(const char *path, struct elfinfo *ei)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	int rc = -ENOEXEC;
	memset(ei, 0, sizeof(*ei));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread_all(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_phnum > 512 ||
	    eh.e_shnum > 8192 || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	ei->load_vaddr = UINT64_MAX;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread_all(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)))
			goto out;
		if (ph.p_type == PT_LOAD && ph.p_vaddr < ei->load_vaddr)
			ei->load_vaddr = ph.p_vaddr & ~(uint64_t)4095;
	}
	if (ei->load_vaddr == UINT64_MAX || !(sh = calloc(eh.e_shnum, sizeof(*sh))) ||
	    pread_all(fd, sh, eh.e_shnum * sizeof(*sh), eh.e_shoff))
		goto out;
	const Elf64_Shdr *shs = &sh[eh.e_shstrndx];
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if ((sh[i].sh_type == SHT_DYNSYM || sh[i].sh_type == SHT_SYMTAB) && sh[i].sh_link < eh.e_shnum)
			elf_symbols(fd, &sh[i], &sh[sh[i].sh_link], ei);
		char nm[8] = { 0 };
		if (sh[i].sh_type == SHT_PROGBITS && sh[i].sh_name < shs->sh_size &&
		    !pread_all(fd, nm, 8, shs->sh_offset + sh[i].sh_name) && !memcmp(nm, ".rodata", 8)) {
			ei->rodata_off = sh[i].sh_offset;
			ei->rodata_size = sh[i].sh_size;
		}
	}
	rc = 0;
out:
	free(sh);
	close(fd);
	return rc;
}

/* Patch level of CPython 3.minor from its PY_VERSION string ("3.9.18",
 * NUL-terminated) in .rodata; -1 when not found. */
static int rodata_patch(const char *path, const struct elfinfo *ei, unsigned minor)
{
	if (!ei->rodata_size || ei->rodata_size > ELF_RODATA_MAX)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC), patch = -1;
	char *d = malloc(ei->rodata_size + 1), pre[16];
	if (fd < 0 || !d || pread_all(fd, d, ei->rodata_size, ei->rodata_off))
		goto out;
	d[ei->rodata_size] = '\0';
	int pl = snprintf(pre, sizeof(pre), "3.%u.", minor);
	for (uint64_t i = 1; i + (uint64_t)pl < ei->rodata_size && patch < 0; i++) {
		/* the string may be the tail of another ("/versions/3.9.18"): linkers merge them */
		if (isdigit((unsigned char)d[i - 1]) || d[i - 1] == '.' || memcmp(d + i, pre, (size_t)pl))
			continue;
		const char *q = d + i + pl;
		size_t nd = strspn(q, "0123456789");
		if (nd && nd < 4 && q[nd] == '\0')
			patch = atoi(q);
	}
out:
	if (fd >= 0)
		close(fd);
	free(d);
	return patch;
}

/* ---- probing a process -------------------------------------------------- */

/* CPython's minor version from a file name: python3.N, libpython3.N.so. */
static int name_minor(const char *path)
{
	const char *b = strrchr(path, '/');
	const char *q = strstr(b ? b : path, "python3.");
	return q && isdigit((unsigned char)q[8]) ? atoi(q + 8) : -1;
}

static void say(struct isc_pysampler *s, struct pyproc *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct isc_pysampler *s, struct pyproc *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->state = P_OFF;
	if (s->h.warn)
		s->h.warn(s->h.ctx, p->pid, msg);
}

/* The table's minor versions, "3.9, 3.10, ..." for messages. */
static void known_versions(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < isc_npylayouts && o + 8 < cap; i++) {
		unsigned mi = isc_pylayouts[i].hexversion >> 16 & 255;
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			dup |= (isc_pylayouts[j].hexversion >> 16 & 255) == mi;
		if (dup)
			continue;
		o += (size_t)snprintf(out + o, cap - o, "%s3.%u", o ? ", " : "", mi);
	}
	if (!o)
		snprintf(out, cap, "none");
}

/* The lowest and highest address of path's mappings in the process (the
 * interpreter's image: its code and static types); 0, 0 when not found. */
static void image_range(pid_t pid, const char *path, uint64_t *lo, uint64_t *hi)
{
	char mp[64], line[4096];
	*lo = UINT64_MAX;
	*hi = 0;
	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(mp, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s%n", &a, &b, &pos) < 2)
			continue;
		char *q = line + pos;
		q += strspn(q, " ");
		q[strcspn(q, "\n")] = '\0';
		if (strcmp(q, path))
			continue;
		*lo = a < *lo ? a : *lo;
		*hi = b > *hi ? b : *hi;
	}
	if (f)
		fclose(f);
	if (*lo >= *hi)
		*lo = *hi = 0;
}

/*
 * Finds CPython in the process and sets up p->r.  Leaves p->state at
 * P_PROBE when there is no CPython yet (not exec'ed, or not Python at all),
 * P_VERIFY when set up, P_OFF (with a warning) when refused, or when the
 * process is gone (quietly).
 */
static void probe(struct isc_pysampler *s, struct pyproc *p)
{
	char path[64], line[4096], file[4096] = "";
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	FILE *f = fopen(path, "re");
	struct elfinfo ei;
	uint64_t base = 0;
	bool found = false;
	if (!f) {
		p->state = P_OFF;
		return;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s%n", &lo, &hi, &off, &pos) < 3 || off != 0)
			continue;
		char *pth = line + pos;
		pth += strspn(pth, " ");
		pth[strcspn(pth, "\n")] = '\0';
		const char *b = strrchr(pth, '/');
		if (pth[0] != '/' || !b || !strstr(b, "python") || !strcmp(pth, file))
			continue;
		snprintf(file, sizeof(file), "%s", pth);
		if (!elf_read(file, &ei) && ei.sym[SYM_RUNTIME]) {
			found = true;
			base = lo - ei.load_vaddr;
		}
	}
	fclose(f);
	if (!found)
		return; /* not (yet) a CPython process */
	uint64_t at[NSYM] = { 0 };
	for (int i = 0; i < NSYM; i++)
		at[i] = ei.sym[i] ? base + ei.sym[i] : 0;
	unsigned minor = 0, patch = 0;
	char known[128];
	known_versions(known, sizeof(known));
	if (at[SYM_VERSION]) {
		uint32_t hex;
		int rc = vm_read((void *)(intptr_t)p->pid, at[SYM_VERSION], &hex, 4);
		if (rc) {
			if (rc != -ESRCH)
				say(s, p, "pid %d: cannot read the interpreter's memory (%s): Python stacks not sampled",
				    (int)p->pid, strerror(-rc));
			p->state = P_OFF;
			return;
		}
		if (hex >> 24 != 3) {
			say(s, p, "pid %d: %s: Py_Version 0x%08x is not CPython 3: Python stacks not sampled",
			    (int)p->pid, file, hex);
			return;
		}
		minor = hex >> 16 & 255;
		patch = hex >> 8 & 255;
	} else {
		int mi = name_minor(file), pa = mi >= 0 ? rodata_patch(file, &ei, (unsigned)mi) : -1;
		if (mi < 0 || pa < 0) {
			say(s, p, "pid %d: %s: cannot tell which CPython version this is: Python stacks not sampled",
			    (int)p->pid, file);
			return;
		}
		minor = (unsigned)mi;
		patch = (unsigned)pa;
	}
	const struct isc_pylayout *L = isc_pylayout_find(3, minor, patch);
	if (!L || minor < 9) {
		say(s, p,
		    "pid %d: CPython 3.%u.%u: this build has no verified layout for it (it has: %s): Python stacks "
		    "not sampled (--python=exact records them)",
		    (int)p->pid, minor, patch, known);
		return;
	}
	if (isc_pyremote_init(&p->r, L, vm_read, (void *)(intptr_t)p->pid, at[SYM_RUNTIME])) {
		p->state = P_OFF;
		return;
	}
	p->r.code_type = at[SYM_CODE];
	p->r.str_type = at[SYM_STR];
	p->r.bytes_type = at[SYM_BYTES];
	/* callees are read when the interpreter's type objects are all known */
	if (at[SYM_CFUNC] && at[SYM_DESCR] && at[SYM_MODULE] && at[SYM_CAPSULE] && at[SYM_TYPE] && at[SYM_FUNCTION] &&
	    at[SYM_METHOD]) {
		p->r.types = (struct isc_pytypes){ at[SYM_CFUNC], at[SYM_DESCR], at[SYM_MODULE], at[SYM_CAPSULE],
						   at[SYM_TYPE], at[SYM_FUNCTION], at[SYM_METHOD] };
		image_range(p->pid, file, &p->r.img_lo, &p->r.img_hi);
	}
	p->r.pthread_tid_off = s->pthread_tid_off;
	if (minor >= 13) {
		uint32_t hex = 0;
		int rc = isc_pyremote_debug_offsets(&p->r, &hex);
		if (rc) {
			say(s, p, "pid %d: CPython 3.%u.%u: _Py_DebugOffsets %s: Python stacks not sampled", (int)p->pid,
			    minor, patch, rc == -EPROTO ? "not as expected (cookie or version)" : "unreadable");
			return;
		}
	}
	p->state = P_VERIFY;
}

/* ---- per-thread state and interning ------------------------------------- */

/*
 * The state letter of /proc/PID/task/TID/stat, read now ('?' if unknown),
 * and *waiting: the thread is runnable (R) but spent more of the time since
 * its previous sample waiting for a CPU than on one (task/TID/schedstat:
 * run and run-queue wait times), so it was most likely not running.
 * *sched: the thread's entry holding those times as read now, NULL when
 * they could not be read.
 */
static char thread_state(struct pyproc *p, pid_t tid, bool *waiting, const struct tfd **sched)
{
	*waiting = false;
	*sched = NULL;
	struct tfd *t = NULL;
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i].tid == tid)
			t = &p->t[i];
	if (!t) {
		if (p->nt >= 65536 || isc_grow(&p->t, &p->capt, p->nt, sizeof(*p->t)))
			return '?';
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)p->pid, (int)tid);
		t = &p->t[p->nt++];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)p->pid, (int)tid);
		t->fd_sched = open(path, O_RDONLY | O_CLOEXEC);
	}
	t->gen = p->gen;
	char buf[512];
	ssize_t n = t->fd >= 0 ? pread(t->fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	char *q = strrchr(buf, ')');
	char state = q && q[1] == ' ' && q[2] ? q[2] : '?';
	unsigned long long run, wait;
	n = t->fd_sched >= 0 ? pread(t->fd_sched, buf, sizeof(buf) - 1, 0) : -1;
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%llu %llu", &run, &wait) == 2) {
			if (t->have_sched && run >= t->run_ns && wait >= t->wait_ns)
				*waiting = state == 'R' && wait - t->wait_ns > run - t->run_ns;
			t->have_sched = true;
			t->run_ns = run;
			t->wait_ns = wait;
			*sched = t;
		}
	}
	return state;
}

static void threads_forget(struct pyproc *p)
{
	for (size_t i = 0; i < p->nt;) {
		if (p->t[i].gen != p->gen) {
			if (p->t[i].fd >= 0)
				close(p->t[i].fd);
			if (p->t[i].fd_sched >= 0)
				close(p->t[i].fd_sched);
			p->t[i] = p->t[--p->nt];
		} else {
			i++;
		}
	}
}

/* The string id of a frame's code object, defining it (into s->strings)
 * the first time; 0 when it cannot be named. */
static uint32_t code_id(struct isc_pysampler *s, struct pyproc *p, const struct isc_pyframe *f)
{
	if (p->ncodes >= CODES_MAX)
		return 0;
	size_t pos = 0;
	for (uint32_t i; (i = isc_hindex_next(&p->code_index, f->code, &pos)) != ISC_UMAP_NONE;) {
		const struct codeent *e = &p->codes[i];
		if (e->code == f->code && e->name == f->name && e->qualname == f->qualname && e->file == f->file &&
		    e->first == f->firstlineno)
			return e->id;
	}
	if (p->next_id >= ISC_STRING_ID_ALLOC_BASE) /* the allocation shim's ids start there */
		return 0;
	char name[ISC_PY_NAME_MAX + 4], file[ISC_PY_NAME_MAX + 4];
	if ((!f->qualname || isc_pyremote_str(&p->r, f->qualname, name, sizeof(name)) < 0) &&
	    isc_pyremote_str(&p->r, f->name, name, sizeof(name)) < 0)
		return 0;
	if (isc_pyremote_str(&p->r, f->file, file, sizeof(file)) < 0)
		snprintf(file, sizeof(file), "?");
	if (isc_grow(&p->codes, &p->capcodes, p->ncodes, sizeof(*p->codes)) ||
	    isc_hindex_add(&p->code_index, f->code, (uint32_t)p->ncodes))
		return 0;
	uint32_t id = p->next_id++;
	p->codes[p->ncodes++] = (struct codeent){ f->code, f->name, f->qualname, f->file, f->firstlineno, id };
	struct isc_buf *b = &s->body;
	b->len = 0;
	isc_buf_put_varint(b, id);
	isc_buf_put_u8(b, ISC_STR_CODE);
	isc_buf_put_varint(b, f->firstlineno);
	isc_buf_put_bytes(b, name, strlen(name));
	isc_buf_put_bytes(b, file, strlen(file));
	isc_buf_put_record(&s->strings, ISC_REC_STRING_DEF, 0, NULL, b->data, b->len);
	return id;
}

/*
 * The string id (kind CFUNC) and kind of the callee c, named and defined
 * (into s->strings) the first time it is met; id 0 when it cannot be named.
 */
static uint32_t callee_id(struct isc_pysampler *s, struct pyproc *p, const struct isc_pycallee *c, uint8_t *kind,
			  bool *torch)
{
	uint64_t k0 = (uint64_t)c->src | (uint64_t)c->slot << 8 | (uint64_t)c->reflected << 16;
	*kind = ISC_PY_CALLEE_UNKNOWN;
	*torch = c->torch;
	if (p->ncallees * 2 >= p->capcallees) {
		size_t cap = p->capcallees ? p->capcallees * 2 : 256;
		if (p->ncallees >= CODES_MAX)
			return 0;
		struct calleeent *n = calloc(cap, sizeof(*n));
		if (!n)
			return 0;
		for (size_t i = 0; i < p->capcallees; i++) {
			if (!p->callees[i].used)
				continue;
			size_t j = isc_mix64(p->callees[i].ml ^ p->callees[i].type ^ p->callees[i].k0) & (cap - 1);
			while (n[j].used)
				j = (j + 1) & (cap - 1);
			n[j] = p->callees[i];
		}
		free(p->callees);
		p->callees = n;
		p->capcallees = cap;
	}
	size_t j = isc_mix64(c->ml ^ c->type ^ k0) & (p->capcallees - 1);
	for (; p->callees[j].used; j = (j + 1) & (p->capcallees - 1)) {
		struct calleeent *e = &p->callees[j];
		if (e->k0 == k0 && e->ml == c->ml && e->type == c->type) {
			*kind = e->kind;
			*torch = e->torch;
			return e->id;
		}
	}
	char name[ISC_PY_NAME_MAX + 8], module[ISC_PY_NAME_MAX + 8];
	struct calleeent *e = &p->callees[j];
	*e = (struct calleeent){ k0, c->ml, c->type, 0, ISC_PY_CALLEE_UNKNOWN, c->torch, true };
	p->ncallees++;
	if (p->next_id >= ISC_STRING_ID_ALLOC_BASE || /* the allocation shim's ids start there */
	    isc_pyremote_callee_name(&p->r, c, &e->kind, &e->torch, name, sizeof(name), module, sizeof(module))) {
		e->kind = ISC_PY_CALLEE_UNKNOWN; /* kept as unnamed: not read again */
		return 0;
	}
	e->id = p->next_id++;
	*kind = e->kind;
	*torch = e->torch;
	struct isc_buf *b = &s->body;
	b->len = 0;
	isc_buf_put_varint(b, e->id);
	isc_buf_put_u8(b, ISC_STR_CFUNC);
	isc_buf_put_varint(b, 0);
	isc_buf_put_bytes(b, name, strlen(name));
	isc_buf_put_bytes(b, module, strlen(module));
	isc_buf_put_record(&s->strings, ISC_REC_STRING_DEF, 0, NULL, b->data, b->len);
	return e->id;
}

/* ---- the tick ------------------------------------------------------------ */

int isc_pysampler_new(struct isc_pysampler **sp, const struct isc_pysampler_hooks *h)
{
	struct isc_pysampler *s = calloc(1, sizeof(*s));
	if (!s || !(s->stacks_buf = calloc(ISC_PY_MAX_THREADS, sizeof(*s->stacks_buf)))) {
		free(s);
		return -ENOMEM;
	}
	s->h = *h;
	s->pthread_tid_off = find_pthread_tid_off();
	*sp = s;
	return 0;
}

static void proc_close(struct pyproc *p)
{
	isc_pyremote_fini(&p->r);
	free(p->codes);
	p->codes = NULL;
	p->ncodes = p->capcodes = 0;
	free(p->callees);
	p->callees = NULL;
	p->ncallees = p->capcallees = 0;
	isc_hindex_free(&p->code_index);
	p->code_index = (struct isc_hindex){ 0 };
	p->gen++;
	threads_forget(p);
	free(p->t);
	p->t = NULL;
	p->capt = 0;
}

/* Walks one process and writes its stacks; returns false when it is gone. */
static bool sample_proc(struct isc_pysampler *s, struct pyproc *p, uint64_t now, struct isc_buf *out,
			uint64_t *last)
{
	unsigned n = 0;
	int rc = isc_pyremote_sample(&p->r, s->stacks_buf, ISC_PY_MAX_THREADS, &n);
	if (rc == -ESRCH)
		return false;
	if (rc) {
		s->failed++;
		return true;
	}
	if (p->state == P_VERIFY) {
		/* the layout fits when a thread state points back to its interpreter
		 * (the walk checks that) and names a live thread of the process */
		bool ok = false;
		for (unsigned i = 0; i < n && !ok; i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/task/%u", (int)p->pid, s->stacks_buf[i].tid);
			ok = s->stacks_buf[i].tid && !access(path, F_OK);
		}
		if (!ok) {
			if (++p->tries >= VERIFY_TRIES)
				say(s, p, "pid %d: CPython %s: its thread states do not match this build's layout: Python "
					  "stacks not sampled (--python=exact records them)",
				    (int)p->pid, p->r.L.version);
			return true;
		}
		p->state = P_SAMPLE;
		p->next_id = ISC_STRING_ID_SAMPLER_BASE;
	}
	p->gen++;
	s->strings.len = 0;
	struct isc_buf recs = { 0 };
	for (unsigned i = 0; i < n; i++) {
		const struct isc_pystack *st = &s->stacks_buf[i];
		if (!st->tid)
			continue;
		uint8_t body[64 + ISC_PY_MAX_DEPTH * 20];
		unsigned bl = isc_put_varint(body, (uint64_t)p->pid);
		bl += isc_put_varint(body + bl, st->tid);
		bool waiting;
		const struct tfd *sched;
		bl += isc_put_varint(body + bl, (uint8_t)thread_state(p, (pid_t)st->tid, &waiting, &sched));
		bl += isc_put_varint(body + bl, (st->depth ? (st->frames[0].opclass & ISC_PY_SAMPLE_OPCLASS) | ISC_PY_SAMPLE_CALLEE : 0) |
							(st->truncated ? ISC_PY_SAMPLE_TRUNCATED : 0) |
							(waiting ? ISC_PY_SAMPLE_WAITING : 0) | (sched ? ISC_PY_SAMPLE_SCHED : 0));
		bl += isc_put_varint(body + bl, st->depth);
		for (uint32_t k = 0; k < st->depth; k++) {
			bl += isc_put_varint(body + bl, code_id(s, p, &st->frames[k]));
			bl += isc_put_varint(body + bl, st->frames[k].line);
		}
		if (st->depth) { /* what the innermost frame runs in C (1.4) */
			uint8_t kind = st->callee.src == ISC_PY_SRC_NONE ? ISC_PY_CALLEE_NONE : ISC_PY_CALLEE_UNKNOWN;
			bool torch = false;
			uint32_t id = 0;
			if (st->callee.src != ISC_PY_SRC_NONE && st->callee.src != ISC_PY_SRC_UNKNOWN)
				id = callee_id(s, p, &st->callee, &kind, &torch);
			bl += isc_put_varint(body + bl, id);
			bl += isc_put_varint(body + bl, kind | (torch ? ISC_PY_CALLEE_TORCH : 0));
		}
		if (sched) { /* 1.9: the thread's time on a CPU and waiting for one, so far */
			bl += isc_put_varint(body + bl, sched->run_ns);
			bl += isc_put_varint(body + bl, sched->wait_ns);
		}
		isc_buf_put_record(&recs, ISC_REC_PY_SAMPLE, now, last, body, bl);
		s->stacks++;
	}
	threads_forget(p);
	if (s->strings.len && s->h.strings)
		s->h.strings(s->h.ctx, p->pid, s->strings.data, s->strings.len);
	isc_buf_put(out, recs.data, recs.len);
	isc_buf_free(&recs);
	return true;
}

void isc_pysampler_tick(struct isc_pysampler *s, const pid_t *pids, size_t n, uint64_t now,
			struct isc_buf *b, uint64_t *last_ts)
{
	s->ticks++;
	for (size_t k = 0; k < n; k++) {
		struct pyproc *p = NULL;
		for (size_t i = 0; i < s->np && !p; i++)
			if (s->p[i].pid == pids[k])
				p = &s->p[i];
		if (!p) {
			if (isc_grow(&s->p, &s->capp, s->np, sizeof(*s->p)))
				return;
			p = &s->p[s->np++];
			memset(p, 0, sizeof(*p));
			p->pid = pids[k];
			p->state = P_PROBE;
		}
		if (p->state == P_PROBE) {
			if (++p->probes > PROBE_TICKS_MAX) {
				p->state = P_OFF;
				continue;
			}
			probe(s, p);
		}
		if ((p->state == P_VERIFY || p->state == P_SAMPLE) && !sample_proc(s, p, now, b, last_ts)) {
			p->state = P_OFF; /* gone */
			proc_close(p);
		}
	}
}

void isc_pysampler_stats(const struct isc_pysampler *s, uint64_t v[4])
{
	uint64_t reads = 0;
	for (size_t i = 0; i < s->np; i++)
		reads += s->p[i].r.reads;
	v[0] = s->ticks;
	v[1] = s->stacks;
	v[2] = reads;
	v[3] = s->failed;
}

void isc_pysampler_free(struct isc_pysampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->np; i++)
		proc_close(&s->p[i]);
	free(s->p);
	free(s->stacks_buf);
	isc_buf_free(&s->strings);
	isc_buf_free(&s->body);
	free(s);
}
