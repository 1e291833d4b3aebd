/*
 * unwind.c - one native sample to a named stack (unwind.h), with libdw.
 *
 *   NATIVE_MAP/TASK --> maps.c: each process's mappings at this time
 *   NATIVE_KSYM -----> kernel symbols (sorted)
 *   NATIVE_SAMPLE:
 *     kernel ips ---------------------------------> kernel frames
 *     registers + stack copy
 *       1. every stack word that points into an executable mapping:
 *          report that file to the process's Dwfl (symbols.c), once
 *       2. dwfl_getthread_frames: libdw unwinds with the files' CFI,
 *          reading memory from the copy (memory_read below)
 *       3. each pc -> mapping -> name, or lib+0xOFF, or [jit]
 *
 * Step 1 is why a file is opened only when a sample can reach it: return
 * addresses are on the stack, so the files the unwinder will need are
 * among those the words point into (a few dozen of the hundreds a torch
 * process maps).  libdw keeps each file's CFI and symbol table for the
 * life of the process's Dwfl; a mapping that replaces a reported one, a
 * fork (new process) or an exec starts a new Dwfl.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"
#include "symbols.h"
#include "unwind.h"

struct ksym {
	uint64_t start;
	const char *name; /* pooled */
};

struct isc_unwinder {
	struct isc_nmaps *maps;
	struct isc_syms *syms;
	struct isc_native_sampler cfg;
	bool have_cfg;
	struct ksym *ksyms;
	size_t nksyms, capksyms;
	struct isc_unwind_stats st;
	Dwfl_Callbacks cb;
	Dwfl_Thread_Callbacks tcb;
	char *debuginfo_path;
	/* the sample being unwound, for the callbacks */
	const struct isc_native_sample *cur;
	bool beyond; /* the unwinder asked for memory past the end of the copy */
	Dwarf_Addr pcs[ISC_STACK_MAX];
	bool act[ISC_STACK_MAX];
	unsigned npcs;
};

/* ---- libdw callbacks ---------------------------------------------------- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	(void)dwfl;
	struct isc_unwinder *u = arg;
	if (*thread_arg)
		return 0;
	*thread_arg = u;
	return (pid_t)u->cur->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl;
	struct isc_unwinder *u = arg;
	*thread_arg = u;
	return (uint32_t)tid == u->cur->tid;
}

/* Stack memory comes from the sample's copy: [sp, sp + stack_len). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct isc_unwinder *u = arg;
	const struct isc_native_sample *s = u->cur;
	uint64_t sp = s->regs[7];
	if (addr >= sp && addr - sp <= s->stack_len && s->stack_len - (addr - sp) >= sizeof(*result)) {
		memcpy(result, s->stack + (addr - sp), sizeof(*result));
		return true;
	}
	/* past the end of a copy, within a stack's reach: the copy was too short */
	if (s->stack_len && addr >= sp && addr - sp >= s->stack_len && addr - sp < (64u << 20))
		u->beyond = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct isc_unwinder *u = arg;
	Dwarf_Word regs[ISC_NATIVE_MAX_REGS];
	for (uint32_t i = 0; i < u->cur->nregs; i++)
		regs[i] = u->cur->regs[i];
	if (!dwfl_thread_state_registers(thread, 0, u->cur->nregs, regs))
		return false;
	dwfl_thread_state_register_pc(thread, regs[16]);
	return true;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct isc_unwinder *u = arg;
	Dwarf_Addr pc;
	bool act;
	if (!dwfl_frame_pc(frame, &pc, &act) || pc == 0)
		return DWARF_CB_ABORT;
	u->pcs[u->npcs] = pc;
	u->act[u->npcs] = act;
	return ++u->npcs < ISC_STACK_MAX - 1 ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void drop_dwfl(void *d)
{
	dwfl_end(d);
}

/* ---- records ------------------------------------------------------------ */

int isc_unwinder_new(struct isc_unwinder **out, const char *root)
{
	struct isc_unwinder *u = calloc(1, sizeof(*u));
	if (!u || isc_nmaps_new(&u->maps) || isc_syms_new(&u->syms, root)) {
		isc_unwinder_free(u);
		return -ENOMEM;
	}
	/* separate debug files by build id only (/usr/lib/debug/.build-id):
	 * never a network look-up (debuginfod) */
	u->debuginfo_path = strdup("-:.debug:/usr/lib/debug");
	u->cb = (Dwfl_Callbacks){ .find_elf = NULL, .find_debuginfo = dwfl_build_id_find_debuginfo,
				  .section_address = dwfl_offline_section_address,
				  .debuginfo_path = &u->debuginfo_path };
	u->tcb = (Dwfl_Thread_Callbacks){ .next_thread = next_thread, .get_thread = get_thread,
					  .memory_read = memory_read, .set_initial_registers = set_initial_registers };
	*out = u;
	return 0;
}

void isc_unwinder_free(struct isc_unwinder *u)
{
	if (!u)
		return;
	isc_nmaps_free(u->maps, drop_dwfl);
	isc_syms_free(u->syms);
	free(u->ksyms);
	free(u->debuginfo_path);
	free(u);
}

const struct isc_unwind_stats *isc_unwinder_stats(const struct isc_unwinder *u)
{
	return &u->st;
}

static int add_ksym(struct isc_unwinder *u, const struct isc_native_ksym *k)
{
	size_t lo = 0, hi = u->nksyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (u->ksyms[mid].start < k->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < u->nksyms && u->ksyms[lo].start == k->start)
		return 0;
	if (u->nksyms == u->capksyms) {
		size_t cap = u->capksyms ? u->capksyms * 2 : 256;
		struct ksym *n = realloc(u->ksyms, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		u->ksyms = n;
		u->capksyms = cap;
	}
	const char *name = isc_syms_intern(u->syms, (const char *)k->name, strnlen((const char *)k->name, k->name_len));
	if (!name)
		return -ENOMEM;
	memmove(&u->ksyms[lo + 1], &u->ksyms[lo], (u->nksyms - lo) * sizeof(*u->ksyms));
	u->ksyms[lo] = (struct ksym){ k->start, name };
	u->nksyms++;
	return 0;
}

int isc_unwinder_record(struct isc_unwinder *u, uint8_t type, const uint8_t *body, size_t len)
{
	struct isc_native_map m;
	struct isc_native_task t;
	struct isc_native_ksym k;
	bool inval;
	void *d;
	switch (type) {
	case ISC_REC_NATIVE_SAMPLER:
		if (isc_native_sampler_parse(body, len, &u->cfg))
			return -EBADMSG;
		u->have_cfg = true;
		return 0;
	case ISC_REC_NATIVE_MAP: {
		if (isc_native_map_parse(body, len, &m))
			return -EBADMSG;
		struct isc_nmap nm = { .start = m.start, .end = m.start + m.len, .pgoff = m.pgoff };
		nm.path = isc_syms_intern(u->syms, (const char *)m.path, strnlen((const char *)m.path, m.path_len));
		if (!nm.path)
			return -ENOMEM;
		nm.build_id_len = (uint8_t)(m.build_id_len <= sizeof(nm.build_id) ? m.build_id_len : 0);
		memcpy(nm.build_id, m.build_id, nm.build_id_len);
		if (isc_nmaps_add(u->maps, m.pid, &nm, &inval))
			return -ENOMEM;
		if (inval) {
			struct isc_nproc *p = isc_nmaps_proc(u->maps, m.pid, false);
			if (p && (d = isc_nmaps_reset(p)))
				dwfl_end(d);
		}
		return 0;
	}
	case ISC_REC_NATIVE_TASK:
		if (isc_native_task_parse(body, len, &t))
			return -EBADMSG;
		if (t.what == ISC_NATIVE_TASK_FORK && t.pid != t.ppid)
			return isc_nmaps_fork(u->maps, t.pid, t.ppid);
		if (t.what == ISC_NATIVE_TASK_EXEC) {
			isc_nmaps_exec(u->maps, t.pid, &d);
			if (d)
				dwfl_end(d);
		}
		return 0;
	case ISC_REC_NATIVE_KSYM:
		if (isc_native_ksym_parse(body, len, &k))
			return -EBADMSG;
		return add_ksym(u, &k);
	default:
		return 0;
	}
}

/* ---- unwinding ------------------------------------------------------------ */

/* The file part of a path. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Reports the file of the executable mapping holding addr, if not done. */
static void need(struct isc_unwinder *u, struct isc_nproc *p, uint64_t addr)
{
	struct isc_nmap *m = isc_nmaps_find(p, addr);
	if (!m || m->state)
		return;
	if ((m->path[0] != '/' && strcmp(m->path, "[vdso]")) || !strncmp(m->path, "//anon", 6)) {
		m->state = 2; /* [vsyscall], //anon, ...: no file */
		return;
	}
	if (!p->dwfl && !(p->dwfl = dwfl_begin(&u->cb)))
		return;
	int rc = isc_syms_report(u->syms, p->dwfl, m);
	if (rc == ISC_SYMS_MISSING)
		u->st.files_missing++;
	else if (rc == ISC_SYMS_CHANGED)
		u->st.files_changed++;
	if (rc == ISC_SYMS_OK && dwfl_pid(p->dwfl) < 0 && !dwfl_attach_state(p->dwfl, NULL, (pid_t)p->pid, &u->tcb, u)) {
		/* cannot unwind with this Dwfl (architecture unknown): its names still serve */
	}
}

static bool is_interp_name(const char *name)
{
	return !strncmp(name, "_PyEval_EvalFrame", 17) || !strcmp(name, "PyEval_EvalFrameEx") ||
	       !strncmp(name, "_PyEval_Vector", 14) || !strcmp(name, "PyEval_EvalCode") ||
	       !strcmp(name, "PyEval_EvalCodeEx") || !strcmp(name, "_PyEval_EvalCodeWithName");
}

static bool is_interp_lib(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

static int add_frame(struct isc_unwinder *u, struct isc_stack *out, const char *name, const char *lib, uint8_t kind)
{
	if (out->n >= ISC_STACK_MAX)
		return 0;
	if (!name)
		return -ENOMEM;
	struct isc_frame *f = &out->f[out->n++];
	*f = (struct isc_frame){ name, lib, 0, kind, false, false };
	u->st.frames++;
	u->st.unnamed += kind == ISC_FRAME_UNNAMED;
	u->st.jit += kind == ISC_FRAME_JIT;
	u->st.kernel += kind == ISC_FRAME_KERNEL;
	return 0;
}

/* The frame of user address pc (caller: a return address, named by pc - 1). */
static int user_frame(struct isc_unwinder *u, struct isc_nproc *p, struct isc_stack *out, uint64_t pc, bool caller)
{
	char buf[4200];
	uint64_t at = caller && pc ? pc - 1 : pc;
	struct isc_nmap *m = p ? isc_nmaps_find(p, at) : NULL;
	if (!m || !m->path[0] || !strncmp(m->path, "//anon", 6) || !strncmp(m->path, "[anon", 5))
		return add_frame(u, out, "[jit]", "[jit]", ISC_FRAME_JIT);
	if (m->state == 0)
		need(u, p, at);
	const char *name = NULL;
	if (m->state == 1) {
		Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, at);
		name = isc_syms_name(u->syms, mod, m, at);
	}
	if (name) {
		int rc = add_frame(u, out, name, m->path, ISC_FRAME_NATIVE);
		if (!rc && out->n) {
			out->f[out->n - 1].interp = is_interp_name(name);
			out->f[out->n - 1].interp_lib = is_interp_lib(m->path);
		}
		return rc;
	}
	uint64_t off = m->state == 1 ? at - m->bias : at - m->start + m->pgoff;
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(m->path), off);
	int rc = add_frame(u, out, isc_syms_intern(u->syms, buf, strlen(buf)), m->path, ISC_FRAME_UNNAMED);
	if (!rc && out->n)
		out->f[out->n - 1].interp_lib = is_interp_lib(m->path);
	return rc;
}

int isc_unwinder_unwind(struct isc_unwinder *u, const struct isc_native_sample *s, struct isc_stack *out)
{
	char buf[64];
	int rc = 0;
	out->n = 0;
	out->truncated = false;
	u->st.samples++;
	for (uint32_t i = 0; i < s->nkernel && !rc; i++) {
		size_t lo = 0, hi = u->nksyms;
		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;
			if (u->ksyms[mid].start <= s->kernel[i])
				lo = mid;
			else
				hi = mid;
		}
		if (u->nksyms && u->ksyms[lo].start <= s->kernel[i]) {
			rc = add_frame(u, out, u->ksyms[lo].name, "[kernel]", ISC_FRAME_KERNEL);
		} else {
			snprintf(buf, sizeof(buf), "[kernel]+0x%" PRIx64, s->kernel[i]);
			rc = add_frame(u, out, isc_syms_intern(u->syms, buf, strlen(buf)), "[kernel]", ISC_FRAME_UNNAMED);
		}
	}
	if (rc || s->nregs < ISC_NATIVE_X86_64_NREGS || (u->have_cfg && u->cfg.arch != ISC_NATIVE_ARCH_X86_64)) {
		u->st.no_user += !rc;
		return rc;
	}
	struct isc_nproc *p = isc_nmaps_proc(u->maps, s->pid, false);
	u->npcs = 0;
	u->beyond = false;
	if (p && p->n) {
		/* 1. the files this sample can reach */
		uint64_t lo = p->maps[0].start, hi = p->maps[p->n - 1].end;
		need(u, p, s->regs[16]);
		for (size_t off = 0; off + 8 <= s->stack_len; off += 8) {
			uint64_t v;
			memcpy(&v, s->stack + off, 8);
			if (v >= lo && v < hi)
				need(u, p, v);
		}
		/* 2. unwind */
		if (p->dwfl && dwfl_pid(p->dwfl) >= 0) {
			u->cur = s;
			dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_cb, u);
			u->cur = NULL;
		}
	}
	if (!u->npcs) { /* nothing unwound: the leaf alone */
		u->pcs[0] = s->regs[16];
		u->act[0] = true;
		u->npcs = 1;
	}
	/* 3. names */
	for (unsigned i = 0; i < u->npcs && !rc; i++)
		rc = user_frame(u, p, out, u->pcs[i], !u->act[i]);
	if (!rc && u->beyond) {
		out->truncated = true;
		u->st.truncated++;
		rc = add_frame(u, out, "[truncated]", "", ISC_FRAME_TRUNCATED);
	}
	return rc;
}
