/* alloc_hooks.h - the Python agent's part of allocation sampling (alloc_hooks.c). */
#ifndef ISC_AGENT_ALLOC_HOOKS_H
#define ISC_AGENT_ALLOC_HOOKS_H

/*
 * Once per process, with the GIL, from inside Python code (the import of
 * _agent): when the allocation shim is loaded, hooks CPython's allocator
 * domains through it and gives it the Python stack of each sample.  Does
 * nothing without the shim; never raises.
 */
void isc_agent_alloc_start(void);

#endif
