/*
 * isc_native_codec.h - bodies of the native stack sampler's records
 * (formats/trace.md §6.6, types 0x30-0x36), encoded by the recorder
 * (lib/record/native.c) and decoded by every reader: the merge (which
 * checks each one and refuses damage), the dump and the unwinder
 * (lib/native).  Record bodies are untrusted input: every parse checks
 * every length and count and returns -EBADMSG on anything else.
 *
 *   NATIVE_SAMPLE body:
 *   +-----+-----+-------+---------+---------------+-------+--------------+-------------+
 *   | pid | tid | flags | nkernel | nkernel x ip  | nregs | nregs x reg  | user stack  |
 *   +-----+-----+-------+---------+---------------+-------+--------------+-------------+
 *     varints ...                                                          rest of body
 */
#ifndef ISC_NATIVE_CODEC_H
#define ISC_NATIVE_CODEC_H

#include "isc.h"

/* NATIVE_SAMPLE: one thread's registers and user stack at a sample. */
struct isc_native_sample {
	uint32_t pid, tid;
	uint32_t flags;                           /* ISC_NATIVE_SAMPLE_* */
	uint32_t nkernel;                         /* kernel call chain, innermost first */
	uint64_t kernel[ISC_NATIVE_MAX_KERNEL];
	uint32_t nregs;                           /* user registers in DWARF order (arch of NATIVE_SAMPLER) */
	uint64_t regs[ISC_NATIVE_MAX_REGS];
	const uint8_t *stack;                     /* user stack from the stack pointer up; points into the body */
	size_t stack_len;
};

/* NATIVE_MAP: one executable mapping of a process. */
struct isc_native_map {
	uint32_t pid;
	uint64_t start, len, pgoff;
	uint32_t prot;     /* ISC_NATIVE_PROT_* */
	uint32_t source;   /* ISC_NATIVE_MAP_SNAPSHOT or _MMAP */
	const uint8_t *build_id, *path; /* point into the body */
	size_t build_id_len, path_len;
};

/* NATIVE_TASK: a thread or process began, ended, was named or exec'd. */
struct isc_native_task {
	uint32_t pid, tid, what, ppid, ptid; /* what: enum isc_native_task_what */
	const uint8_t *comm;
	size_t comm_len;
};

/* NATIVE_SAMPLER: how the samples were taken (one per recording). */
struct isc_native_sampler {
	uint64_t event, period_ns, stack_bytes, arch, nregs, flags, nrings;
};

/* NATIVE_KSYM: the start and name of a kernel function. */
struct isc_native_ksym {
	uint64_t start;
	const uint8_t *name;
	size_t name_len;
};

/* Append a record body to b; 0 or -ENOMEM (-EINVAL for counts over the limits). */
int isc_native_sample_encode(struct isc_buf *b, const struct isc_native_sample *s);
int isc_native_map_encode(struct isc_buf *b, const struct isc_native_map *m);
int isc_native_task_encode(struct isc_buf *b, const struct isc_native_task *t);
int isc_native_sampler_encode(struct isc_buf *b, const struct isc_native_sampler *s);
int isc_native_ksym_encode(struct isc_buf *b, const struct isc_native_ksym *k);

/* Parse a record body (after the ts delta); 0 or -EBADMSG.  Pointers in
 * the result point into body.  A body with bytes after the last field it
 * defines is accepted (formats/trace.md §5) except where the last field is
 * "rest of body". */
int isc_native_sample_parse(const uint8_t *body, size_t len, struct isc_native_sample *s);
int isc_native_map_parse(const uint8_t *body, size_t len, struct isc_native_map *m);
int isc_native_task_parse(const uint8_t *body, size_t len, struct isc_native_task *t);
int isc_native_sampler_parse(const uint8_t *body, size_t len, struct isc_native_sampler *s);
int isc_native_ksym_parse(const uint8_t *body, size_t len, struct isc_native_ksym *k);

/* Whether a record of type (0x30-0x36) has a body that parses; what the
 * merge checks before carrying it into a timeline. */
bool isc_native_record_ok(uint8_t type, const uint8_t *body, size_t len);

#endif
