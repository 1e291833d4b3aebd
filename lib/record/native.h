/*
 * native.h - iscope-record's native stack sampler (native.c: perf events
 * on the workload, their rings read by the drain thread, maps and build
 * ids) and the ELF build-id reader it uses (buildid.c).  Private to
 * lib/record; the records it writes are formats/trace.md §6.6.
 */
#ifndef ISC_RECORD_NATIVE_H
#define ISC_RECORD_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads len bytes at off of an untrusted file or image; 0 or negative. */
typedef int (*isc_read_at_fn)(void *ctx, uint64_t off, void *buf, size_t len);
/* The GNU build id of the ELF file read through rd (file_size bytes) into
 * id (cap bytes); its length, 0 when there is none or the file is not a
 * 64-bit little-endian ELF file.  Never reads outside [0, file_size). */
int isc_build_id_read(isc_read_at_fn rd, void *ctx, uint64_t file_size, uint8_t *id, size_t cap);
/* The same for a path (a regular file only, opened without blocking). */
int isc_build_id_of_path(const char *path, uint8_t *id, size_t cap);

/* Where the sampler's chunks go: a NATIVE chunk of these records with this
 * base time; keep: a flight recorder never evicts it (maps, tasks, totals). */
typedef void (*isc_native_emit_fn)(void *ctx, const void *records, size_t len, uint64_t base_ts, bool keep);

struct isc_native_cfg {
	unsigned hz;          /* samples per second of a thread's CPU time */
	uint32_t stack_bytes; /* user stack copied per sample (multiple of 8, <= ISC_NATIVE_STACK_MAX) */
	unsigned flush_ms;    /* longest time a sample waits in the recorder before its chunk is written */
	isc_native_emit_fn emit;
	void *ctx;
};

/* The most perf_event_attr.sample_stack_user can hold with the rest of a
 * sample (the record size is 16 bits); the default is in native.c. */
#define ISC_NATIVE_STACK_MAX 65000u
#define ISC_NATIVE_STACK_DEFAULT 32768u

struct isc_native;
/*
 * Checks that this process may open the sampler's events (on itself, with
 * and then without kernel samples) and prepares the sampler.  0, or a
 * negative errno with a one-line reason in why (perf_event_open refused:
 * permissions, seccomp, a kernel without perf events; an architecture
 * other than x86-64).
 */
int isc_native_new(struct isc_native **out, const struct isc_native_cfg *cfg, char *why, size_t whylen);
/* Whether kernel-mode samples (and their call chains) are taken. */
bool isc_native_kernel(const struct isc_native *n);
/*
 * Opens the events on pid, one per online CPU, inherited by every thread
 * and child it creates, enabled when it calls exec (so call it between
 * fork and exec), and maps their rings.  Writes NATIVE_SAMPLER.  0 or a
 * negative errno with the reason in why.
 */
int isc_native_attach(struct isc_native *n, pid_t pid, char *why, size_t whylen);
/* Reads every ring (the drain thread, each cycle) and emits the records
 * (samples in big chunks: see isc_native_pending_base).  n may be NULL. */
void isc_native_drain(struct isc_native *n);
/* The time of the oldest sample not yet written (UINT64_MAX: none), which
 * the ROUND watermark must not pass. */
uint64_t isc_native_pending_base(const struct isc_native *n);
/* After the last drain: the kernel symbols met (NATIVE_KSYM) and the
 * totals (NATIVE_STATS); closes the events. */
void isc_native_finish(struct isc_native *n);
void isc_native_free(struct isc_native *n);

#endif
