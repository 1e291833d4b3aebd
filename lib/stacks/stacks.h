/*
 * stacks.h - sampled stacks aggregated into a tree per thread (stacktree.c)
 * and written in the flame-graph formats people already use: Brendan
 * Gregg's folded stacks (folded.c) and speedscope's JSON file format
 * (speedscope.c).  Depends on nothing but libc: the analysis builds a
 * tree from mixed stacks (lib/native), the findings carry it, the report
 * rebuilds it from there and writes it (issue 26, phase 2).
 *
 *   thread 7 ─ root ─┬─ <module> (run.py:3) ─ forward (m.py:12) ─┬─ sgemm   self 40
 *                    │                                           └─ relu    self 5
 *                    └─ _start ─ main                                       self 1
 *
 * Every node counts the samples whose stack ends there (self) and those
 * that pass through it (total).  Frames are shared by all threads
 * (speedscope's "shared frames"), compared by kind, name, file and line.
 */
#ifndef ISC_STACKS_H
#define ISC_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A frame as the caller sees it; kind is lib/native's enum isc_frame_kind
 * (1 native, 2 unnamed lib+offset, 3 jit, 4 kernel, 5 truncated, 6 python,
 * 7 a torch op, 8 small stacks merged: "[other]"). */
struct isc_sframe {
	const char *name;
	const char *file; /* a Python frame's file, a native frame's library; may be NULL */
	uint32_t line;    /* Python frames; 0 otherwise */
	uint8_t kind;
};

struct isc_snode {
	uint32_t frame;  /* index into the frame table; UINT32_MAX for a thread's root */
	uint32_t parent; /* node index; UINT32_MAX for a root */
	uint64_t self, total;
};

struct isc_sthread {
	uint32_t pid, tid;
	const char *name; /* label ("python3 7731", "MainThread"), owned by the tree */
	uint32_t root;    /* node index */
};

struct isc_stree;
int isc_stree_new(struct isc_stree **out);
void isc_stree_free(struct isc_stree *t);
/* Labels thread (pid, tid) (created if new); 0 or -ENOMEM. */
int isc_stree_name_thread(struct isc_stree *t, uint32_t pid, uint32_t tid, const char *name);
/*
 * Adds count samples of the stack frames[0..n) (innermost first) of
 * thread (pid, tid).  An empty stack counts on the thread's root.
 * 0 or -ENOMEM (the tree is unchanged then... up to the frames added).
 */
int isc_stree_add(struct isc_stree *t, uint32_t pid, uint32_t tid, const struct isc_sframe *frames, unsigned n,
		  uint64_t count);
/* The same, and *leaf = the node the stack ends at (its frames are the
 * parents up to the thread's root). */
int isc_stree_add_at(struct isc_stree *t, uint32_t pid, uint32_t tid, const struct isc_sframe *frames, unsigned n,
		     uint64_t count, uint32_t *leaf);
/* The index of frame f in the frame table, added (strings copied) when
 * new, without counting anything; 0 or -ENOMEM. */
int isc_stree_intern(struct isc_stree *t, const struct isc_sframe *f, uint32_t *idx);
/* Thread i's index for (pid, tid), created with its root when new; 0 or -ENOMEM. */
int isc_stree_thread_index(struct isc_stree *t, uint32_t pid, uint32_t tid, uint32_t *idx);

/* Read access: counts, and element i (valid until the next add or free). */
uint32_t isc_stree_nframes(const struct isc_stree *t);
const struct isc_sframe *isc_stree_frame(const struct isc_stree *t, uint32_t i);
uint32_t isc_stree_nnodes(const struct isc_stree *t);
const struct isc_snode *isc_stree_node(const struct isc_stree *t, uint32_t i);
uint32_t isc_stree_nthreads(const struct isc_stree *t);
const struct isc_sthread *isc_stree_thread(const struct isc_stree *t, uint32_t i);

/* A frame as one line of text: "name (file:line)" for Python frames,
 * "name_[k]" for kernel functions (flamegraph.pl colours them), the
 * name otherwise (a torch op, "[other]"); ';' becomes ':', control
 * characters spaces. */
void isc_stree_frame_text(const struct isc_sframe *f, char *buf, size_t cap);

/*
 * Folded stacks: one line per distinct stack, "frame;frame;...;frame
 * COUNT", root first, in a fixed order (threads by pid then tid, children
 * by their text).  With threads set, each line starts with the thread's
 * label.  0 or -EIO.
 */
int isc_stree_write_folded(const struct isc_stree *t, FILE *out, bool threads);
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * shared frames, one "sampled" profile per thread, each distinct stack
 * once with its weight: samples x period_ns in nanoseconds, or the sample
 * count (unit "none") when period_ns is 0.  name: the profile group's
 * name.  0 or -EIO.
 */
int isc_stree_write_speedscope(const struct isc_stree *t, FILE *out, const char *name, uint64_t period_ns);

#endif
