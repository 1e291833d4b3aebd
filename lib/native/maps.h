/*
 * maps.h - the executable mappings of each recorded process as they were
 * at the time being read (lib/native/maps.c), built from the native
 * sampler's NATIVE_MAP and NATIVE_TASK records in time order: a mapping
 * replaces what it overlaps (as mmap does), a fork copies its parent's
 * mappings, an exec starts afresh.  Internal to lib/native (the unwinder
 * keeps its libdw state beside each mapping).
 */
#ifndef ISC_NATIVE_MAPS_H
#define ISC_NATIVE_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct isc_nmap {
	uint64_t start, end, pgoff;
	const char *path;       /* interned by the caller; "" for an anonymous mapping */
	uint8_t build_id[20];
	uint8_t build_id_len;
	/* the unwinder's: 0 not looked at, 1 reported to the process's Dwfl, 2 unusable */
	uint8_t state;
	uint64_t bias;          /* state 1: load bias (address = ELF vaddr + bias) */
};

struct isc_nproc {
	uint32_t pid;
	uint32_t gen;            /* grows at each change that invalidates what the unwinder built */
	struct isc_nmap *maps;   /* sorted by start, not overlapping */
	size_t n, cap;
	void *dwfl;              /* the unwinder's (Dwfl *), NULL when none */
	struct isc_nproc *next;  /* hash chain */
};

struct isc_nmaps;
int isc_nmaps_new(struct isc_nmaps **out);
/* Frees every process; drop is called on each non-NULL dwfl first. */
void isc_nmaps_free(struct isc_nmaps *m, void (*drop)(void *dwfl));

/* The process pid, created empty when create is set; NULL when absent (or out of memory). */
struct isc_nproc *isc_nmaps_proc(struct isc_nmaps *m, uint32_t pid, bool create);
/*
 * Adds a mapping of pid: what it overlaps is cut away (a mapping split in
 * two keeps both ends).  *invalidated is set when a mapping the unwinder
 * had reported (state 1) was cut: the caller must then drop the process's
 * Dwfl (isc_nmaps_reset).  0 or -ENOMEM.
 */
int isc_nmaps_add(struct isc_nmaps *m, uint32_t pid, const struct isc_nmap *map, bool *invalidated);
/* child gets a copy of parent's mappings (unwinder state cleared); 0 or -ENOMEM. */
int isc_nmaps_fork(struct isc_nmaps *m, uint32_t child, uint32_t parent);
/* pid exec'd: no mappings left.  Its Dwfl is returned through *dwfl to drop. */
void isc_nmaps_exec(struct isc_nmaps *m, uint32_t pid, void **dwfl);
/* Clears the unwinder state of p's mappings and hands back its Dwfl. */
void *isc_nmaps_reset(struct isc_nproc *p);
/* The mapping of p holding addr, or NULL. */
struct isc_nmap *isc_nmaps_find(const struct isc_nproc *p, uint64_t addr);

#endif
