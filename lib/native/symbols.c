/*
 * symbols.c - files, build ids, load biases and names for the unwinder
 * (symbols.h).
 *
 *   NATIVE_MAP (path, build id, start, pgoff)
 *        |  open root+path (regular file, no blocking), ELF, build id ==
 *        v  recorded? else ISC_SYMS_CHANGED (never the wrong file's CFI)
 *   bias = start - (p_vaddr of the PT_LOAD holding pgoff + pgoff - p_offset)
 *        |  dwfl_report_elf(fd, bias): libdw keeps the CFI and symbol tables
 *        v
 *   name(pc) = cache[(build id, pc - bias)] or a binary search of the
 *              file's function symbols (sorted once per build id), demangled
 *
 * The name cache is keyed by build id, so the same library in several
 * processes (fork workers, other recordings) is named once.  Strings live
 * in a pool: frame names stay valid until isc_syms_free.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isc.h" /* isc_mix64 */
#include "symbols.h"

/* libstdc++'s demangler (the Itanium C++ ABI's __cxa_demangle) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define POOL_BUCKETS 16384
#define NAME_BUCKETS 65536

struct pooled {
	uint64_t h;
	struct pooled *next;
	char s[];
};

struct cached_name {
	uint64_t key;
	const char *name; /* NULL: the address has no symbol */
	struct cached_name *next;
};

/*
 * A file's function symbols sorted by address (in the file's own address
 * space), built once per build id: libdw's dwfl_module_addrinfo scans the
 * whole table for each address (91 % of the unwinder's time on torch,
 * whose libtorch_cpu has some 10^5 symbols), a binary search does not.
 */
struct sym {
	uint64_t addr, size;
	const char *name; /* in names */
	uint8_t bind;     /* STB_*: GLOBAL preferred to WEAK to LOCAL at one address */
};

struct symidx {
	uint64_t key; /* the file's build id (else path) hash */
	struct sym *syms;
	size_t n;
	char *names;
	struct symidx *next;
};

struct isc_syms {
	char root[1024];
	struct pooled *pool[POOL_BUCKETS];
	struct cached_name *names[NAME_BUCKETS];
	struct symidx *idx[256];
	int vdso_fd; /* our [vdso] image in a memfd; -1 not made, -2 unavailable */
};

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ULL;
	return h;
}

int isc_syms_new(struct isc_syms **out, const char *root)
{
	struct isc_syms *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	snprintf(s->root, sizeof(s->root), "%s", root ? root : "");
	s->vdso_fd = -1;
	elf_version(EV_CURRENT);
	*out = s;
	return 0;
}

void isc_syms_free(struct isc_syms *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < POOL_BUCKETS; i++)
		for (struct pooled *p = s->pool[i], *n; p; p = n) {
			n = p->next;
			free(p);
		}
	for (size_t i = 0; i < NAME_BUCKETS; i++)
		for (struct cached_name *c = s->names[i], *n; c; c = n) {
			n = c->next;
			free(c);
		}
	for (size_t i = 0; i < 256; i++)
		for (struct symidx *x = s->idx[i], *n; x; x = n) {
			n = x->next;
			free(x->syms);
			free(x->names);
			free(x);
		}
	if (s->vdso_fd >= 0)
		close(s->vdso_fd);
	free(s);
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
	int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;
	return rx - ry;
}

/* The sorted function symbols of mod's file (key), built on first use; NULL on ENOMEM. */
static struct symidx *symbols_of(struct isc_syms *s, Dwfl_Module *mod, uint64_t key, uint64_t bias)
{
	struct symidx **slot = &s->idx[isc_mix64(key) % 256];
	for (struct symidx *x = *slot; x; x = x->next)
		if (x->key == key)
			return x;
	struct symidx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->key = key;
	int n = dwfl_module_getsymtab(mod);
	size_t cap = n > 0 ? (size_t)n : 0, nlen = 0;
	x->syms = malloc((cap ? cap : 1) * sizeof(*x->syms));
	size_t *off = malloc((cap ? cap : 1) * sizeof(*off));
	for (int i = 0; x->syms && off && i < n; i++) { /* names' total length first */
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) ||
		    sym.st_shndx == SHN_UNDEF || addr < bias)
			continue;
		x->syms[x->n] = (struct sym){ addr - bias, sym.st_size, NULL, (uint8_t)GELF_ST_BIND(sym.st_info) };
		off[x->n++] = nlen;
		nlen += strlen(name) + 1;
	}
	x->names = malloc(nlen ? nlen : 1);
	if (!x->syms || !off || !x->names) {
		free(off);
		free(x->syms);
		free(x->names);
		free(x);
		return NULL;
	}
	/* second pass: copy the names (the module's strings go with its Dwfl) */
	size_t k = 0;
	for (int i = 0; i < n && k < x->n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) ||
		    sym.st_shndx == SHN_UNDEF || addr < bias)
			continue;
		memcpy(x->names + off[k], name, strlen(name) + 1);
		x->syms[k].name = x->names + off[k];
		k++;
	}
	x->n = k;
	free(off);
	qsort(x->syms, x->n, sizeof(*x->syms), sym_cmp);
	x->next = *slot;
	*slot = x;
	return x;
}

/* The symbol holding file address a: the last one at or below it that
 * contains it (or has no size), preferring global ones; NULL if none. */
static const char *lookup(const struct symidx *x, uint64_t a)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (x->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first symbol above a; look back over those at or below it */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < 32; seen++) {
		const struct sym *y = &x->syms[i];
		/* the first of several at one address is the preferred binding */
		while (i > 0 && x->syms[i - 1].addr == y->addr)
			y = &x->syms[--i];
		if (a < y->addr + y->size || (y->size == 0 && seen == 0))
			return y->name;
	}
	return NULL;
}

const char *isc_syms_intern(struct isc_syms *s, const char *str, size_t len)
{
	uint64_t h = hash_bytes(str, len, 1469598103934665603ULL);
	struct pooled **slot = &s->pool[isc_mix64(h) % POOL_BUCKETS];
	for (struct pooled *p = *slot; p; p = p->next)
		if (p->h == h && !strncmp(p->s, str, len) && p->s[len] == '\0')
			return p->s;
	struct pooled *p = malloc(sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	p->h = h;
	memcpy(p->s, str, len);
	p->s[len] = '\0';
	p->next = *slot;
	*slot = p;
	return p->s;
}

/*
 * Cuts a demangled function name before its parameter list, as perf
 * report shows names: the last "(...)" and what may follow it (" const",
 * " &&", " [clone .cold]").  "X::operator()(int)" keeps "X::operator()";
 * a name whose end is not a parameter list (a template, "vtable for X")
 * stays whole.
 */
static void cut_params(char *s)
{
	size_t n = strlen(s);
	while (n && s[n - 1] != ')') {
		if (s[n - 1] == '>' || s[n - 1] == ':')
			return;
		n--;
	}
	int depth = 0;
	for (size_t i = n; i-- > 0;) {
		if (s[i] == ')') {
			depth++;
		} else if (s[i] == '(' && --depth == 0) {
			if (i > 0)
				s[i] = '\0';
			return;
		}
	}
}

const char *isc_syms_demangle(const char *name, char *buf, size_t cap)
{
	int st = -1;
	if (strncmp(name, "_Z", 2))
		return name;
	char *d = __cxa_demangle(name, NULL, NULL, &st);
	if (st || !d) {
		free(d);
		return name;
	}
	snprintf(buf, cap, "%s", d);
	free(d);
	cut_params(buf);
	return buf;
}

/* Our own [vdso] (every process of this kernel has the same) in a memfd. */
static int vdso_fd(struct isc_syms *s)
{
	if (s->vdso_fd != -1)
		return s->vdso_fd;
	s->vdso_fd = -2;
	unsigned long v = getauxval(AT_SYSINFO_EHDR);
	if (!v)
		return -2;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)v;
	size_t len = (size_t)(eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize);
	int fd = len && len <= (1u << 16) ? memfd_create("vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return -2;
	if (write(fd, (const void *)v, len) != (ssize_t)len) {
		close(fd);
		return -2;
	}
	return s->vdso_fd = fd;
}

/* The load bias of the mapping of elf that starts at file offset pgoff at
 * address start; false when no loadable segment holds that offset. */
static bool find_bias(Elf *elf, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	size_t n;
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t off0 = ph.p_offset & ~(uint64_t)0xfff; /* the kernel maps from the page */
		if (pgoff < off0 || pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		uint64_t vaddr_at = ph.p_vaddr - (ph.p_offset - pgoff);
		*bias = eh.e_type == ET_EXEC ? 0 : start - vaddr_at;
		return true;
	}
	return false;
}

int isc_syms_report(struct isc_syms *s, Dwfl *dwfl, struct isc_nmap *map)
{
	char path[4096 + 1024];
	int fd;
	bool vdso = !strcmp(map->path, "[vdso]");
	map->state = 2;
	if (vdso) {
		int v = vdso_fd(s);
		fd = v >= 0 ? dup(v) : -1;
	} else {
		/* a recorded path is untrusted: never a kernel file (/proc/kcore,
		 * /proc/self/mem are "regular files") nor a device */
		if (map->path[0] != '/' || !strncmp(map->path, "/proc/", 6) || !strncmp(map->path, "/sys/", 5) ||
		    !strncmp(map->path, "/dev/", 5) ||
		    (size_t)snprintf(path, sizeof(path), "%s%s", s->root, map->path) >= sizeof(path))
			return ISC_SYMS_MISSING;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return ISC_SYMS_MISSING;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int rc = ISC_SYMS_MISSING;
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto fail;
	const void *id;
	ssize_t idl = dwelf_elf_gnu_build_id(elf, &id);
	if (map->build_id_len && (idl != map->build_id_len || memcmp(id, map->build_id, (size_t)idl))) {
		rc = ISC_SYMS_CHANGED;
		goto fail;
	}
	if (!find_bias(elf, map->start, map->pgoff, &map->bias))
		goto fail;
	elf_end(elf);
	elf = NULL;
	dwfl_report_begin_add(dwfl);
	Dwfl_Module *mod = dwfl_report_elf(dwfl, vdso ? "[vdso]" : map->path, vdso ? "[vdso]" : path, fd, map->bias, true);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod)
		goto fail;
	map->state = 1;
	return ISC_SYMS_OK;
fail:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

const char *isc_syms_name(struct isc_syms *s, Dwfl_Module *mod, const struct isc_nmap *map, uint64_t pc)
{
	uint64_t fk = map->build_id_len ? hash_bytes(map->build_id, map->build_id_len, 7)
					: hash_bytes(map->path, strlen(map->path), 11);
	uint64_t key = isc_mix64(fk ^ isc_mix64(pc - map->bias));
	struct cached_name **slot = &s->names[key % NAME_BUCKETS];
	for (struct cached_name *c = *slot; c; c = c->next)
		if (c->key == key)
			return c->name;
	struct symidx *x = mod ? symbols_of(s, mod, fk, map->bias) : NULL;
	const char *raw = x ? lookup(x, pc - map->bias) : NULL;
	const char *name = NULL;
	if (raw) {
		char buf[4096];
		const char *d = isc_syms_demangle(raw, buf, sizeof(buf));
		name = isc_syms_intern(s, d, strlen(d));
	}
	struct cached_name *c = malloc(sizeof(*c));
	if (c) {
		*c = (struct cached_name){ key, name, *slot };
		*slot = c;
	}
	return name;
}
