/*
 * symbols.h - lib/native's files and names (symbols.c): opening a mapped
 * file for libdw after checking its build id, its load bias, the names
 * of addresses cached per build id, demangling, and the string pool every
 * frame name lives in.  Internal to lib/native.
 */
#ifndef ISC_NATIVE_SYMBOLS_H
#define ISC_NATIVE_SYMBOLS_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>

#include "maps.h"

struct isc_syms;
int isc_syms_new(struct isc_syms **out, const char *root);
void isc_syms_free(struct isc_syms *s);

/* The pooled copy of the first len bytes of str (NUL-terminated); NULL on ENOMEM. */
const char *isc_syms_intern(struct isc_syms *s, const char *str, size_t len);

/* Why a mapping's file cannot serve (isc_syms_report's result). */
enum { ISC_SYMS_OK = 0, ISC_SYMS_MISSING = 1, ISC_SYMS_CHANGED = 2 };
/*
 * Reports map's file to dwfl at its load bias (map->bias, map->state = 1),
 * after checking that its build id is the recorded one.  [vdso] is ours
 * (the same kernel).  Returns ISC_SYMS_OK, _MISSING (no such readable ELF
 * file) or _CHANGED (another build id): map->state is then 2.
 */
int isc_syms_report(struct isc_syms *s, Dwfl *dwfl, struct isc_nmap *map);
/*
 * The name of address pc (already a call site, not a return address) in
 * the module of map: the demangled symbol, or NULL when it has none.
 * Cached per (build id, address in the file).
 */
const char *isc_syms_name(struct isc_syms *s, Dwfl_Module *mod, const struct isc_nmap *map, uint64_t pc);
/* Demangles an Itanium C++ ABI name into buf without its parameter list
 * ("at::_ops::mm::call"); the name itself when it is not one. */
const char *isc_syms_demangle(const char *name, char *buf, size_t cap);

#endif
