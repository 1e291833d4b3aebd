/*
 * test_native.c - the native stack pieces below the recorder: the record
 * codec (lib/format/native_codec.c), the build-id reader
 * (lib/record/buildid.c), the mappings model (lib/native/maps.c), the
 * mixed-stack rule (lib/native/mix.c), what a mixed stack's native frames
 * say (lib/native/classify.c: the torch op, the CPU class), C++ names
 * without parameters (symbols.c), and the unwinder on a stack saved
 * from this very process (lib/native/unwind.c): a known call chain
 * level1 -> level2 -> level3 -> capture copies its registers and stack,
 * returns, and the copy is unwound afterwards like a recorded sample.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native.h" /* lib/record: isc_build_id_of_path */
#include "isc_native_codec.h"
#include "maps.h"
#include "symbols.h" /* isc_syms_demangle */
#include "tap.h"
#include "unwind.h"

/* ---- codec --------------------------------------------------------------- */

static void test_codec(void)
{
	static struct isc_native_sample s, d;
	struct isc_buf b = { 0 };
	uint8_t stack[40];
	for (int i = 0; i < 40; i++)
		stack[i] = (uint8_t)(i * 7);
	s.pid = 1234;
	s.tid = 1240;
	s.flags = ISC_NATIVE_SAMPLE_KERNEL;
	s.nkernel = 2;
	s.kernel[0] = 0xffffffff81000000ull;
	s.kernel[1] = 0xffffffff81234567ull;
	s.nregs = 17;
	for (int i = 0; i < 17; i++)
		s.regs[i] = 0x7ffd00000000ull + (uint64_t)i * 8;
	s.stack = stack;
	s.stack_len = sizeof(stack);
	ok(isc_native_sample_encode(&b, &s) == 0, "sample encodes");
	ok(isc_native_sample_parse(b.data, b.len, &d) == 0, "sample parses");
	ok(d.pid == 1234 && d.tid == 1240 && d.flags == 1, "pid, tid, flags back");
	ok(d.nkernel == 2 && d.kernel[1] == 0xffffffff81234567ull, "kernel chain back");
	ok(d.nregs == 17 && d.regs[16] == 0x7ffd00000000ull + 128, "registers back");
	ok(d.stack_len == 40 && !memcmp(d.stack, stack, 40), "stack bytes back");
	/* every cut before the stack bytes is damage; a cut inside them is a shorter stack */
	size_t head = b.len - 40;
	int bad = 0;
	for (size_t cut = 0; cut < head; cut++)
		bad += isc_native_sample_parse(b.data, cut, &d) == -EBADMSG;
	ok(bad == (int)head, "every body cut before the stack is refused (%d of %zu)", bad, head);
	ok(isc_native_record_ok(ISC_REC_NATIVE_SAMPLE, b.data, b.len), "record_ok accepts it");
	/* a chain longer than the limit is refused before anything is filled */
	b.len = 0;
	isc_buf_put_varint(&b, 1);
	isc_buf_put_varint(&b, 1);
	isc_buf_put_varint(&b, 0);
	isc_buf_put_varint(&b, ISC_NATIVE_MAX_KERNEL + 1);
	ok(isc_native_sample_parse(b.data, b.len, &d) == -EBADMSG, "kernel chain over %d refused", ISC_NATIVE_MAX_KERNEL);
	b.len = 0;
	isc_buf_put_varint(&b, 1);
	isc_buf_put_varint(&b, (uint64_t)1 << 32); /* tid beyond 32 bits */
	isc_buf_put_varint(&b, 0);
	isc_buf_put_varint(&b, 0);
	isc_buf_put_varint(&b, 0);
	ok(isc_native_sample_parse(b.data, b.len, &d) == -EBADMSG, "a tid of 2^32 is refused");

	struct isc_native_map m = { 7, 0x400000, 0x1000, 0x2000, 1, 1, (const uint8_t *)"\x01\x02\x03", (const uint8_t *)"/lib/x.so", 3, 9 }, md;
	b.len = 0;
	ok(isc_native_map_encode(&b, &m) == 0 && isc_native_map_parse(b.data, b.len, &md) == 0, "map round trip");
	ok(md.pid == 7 && md.start == 0x400000 && md.len == 0x1000 && md.pgoff == 0x2000 && md.source == 1,
	   "map fields back");
	ok(md.build_id_len == 3 && !memcmp(md.build_id, "\x01\x02\x03", 3) && md.path_len == 9 &&
		   !memcmp(md.path, "/lib/x.so", 9), "map build id and path back");
	m.len = 0;
	b.len = 0;
	isc_native_map_encode(&b, &m);
	ok(isc_native_map_parse(b.data, b.len, &md) == -EBADMSG, "an empty mapping is refused");
	m.len = 0x1000;
	m.start = UINT64_MAX - 10;
	b.len = 0;
	isc_native_map_encode(&b, &m);
	ok(isc_native_map_parse(b.data, b.len, &md) == -EBADMSG, "a mapping past 2^64 is refused");
	isc_buf_free(&b);
}

/* ---- build id ------------------------------------------------------------ */

static void test_build_id(void)
{
	uint8_t id[20];
	int n = isc_build_id_of_path("/proc/self/exe", id, sizeof(id));
	/* the reference: libelf's reading of the same file */
	elf_version(EV_CURRENT);
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *ref;
	ssize_t rn = e ? dwelf_elf_gnu_build_id(e, &ref) : -1;
	ok(rn > 0 && n == rn && !memcmp(id, ref, (size_t)n), "build id of this test = libdw's (%d bytes)", n);
	elf_end(e);
	close(fd);
	ok(isc_build_id_of_path("/dev/null", id, sizeof(id)) == 0, "not a regular file: no build id");
	ok(isc_build_id_of_path("/nonexistent", id, sizeof(id)) == 0, "a missing file: no build id");
}

/* ---- maps ---------------------------------------------------------------- */

static struct isc_nmap mk(uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	struct isc_nmap m = { .start = start, .end = end, .pgoff = pgoff, .path = path };
	return m;
}

static void test_maps(void)
{
	struct isc_nmaps *m;
	bool inval;
	isc_nmaps_new(&m);
	struct isc_nmap a = mk(0x1000, 0x5000, 0, "A"), b = mk(0x6000, 0x8000, 0, "B");
	isc_nmaps_add(m, 10, &a, &inval);
	isc_nmaps_add(m, 10, &b, &inval);
	struct isc_nproc *p = isc_nmaps_proc(m, 10, false);
	ok(p && p->n == 2, "two mappings");
	ok(isc_nmaps_find(p, 0x1000) && !strcmp(isc_nmaps_find(p, 0x1000)->path, "A"), "start of A is A");
	ok(isc_nmaps_find(p, 0x4fff) && !strcmp(isc_nmaps_find(p, 0x4fff)->path, "A"), "last byte of A is A");
	ok(!isc_nmaps_find(p, 0x5000) && !isc_nmaps_find(p, 0xfff) && !isc_nmaps_find(p, 0x8000), "gaps are in nothing");
	/* C over the middle of A: A split in two, the tail's file offset moved on */
	p->maps[0].state = 1;
	struct isc_nmap c = mk(0x2000, 0x3000, 0x100, "C");
	isc_nmaps_add(m, 10, &c, &inval);
	p = isc_nmaps_proc(m, 10, false);
	ok(inval, "cutting a reported mapping invalidates");
	ok(p->n == 4, "A split around C: 4 mappings (%zu)", p->n);
	struct isc_nmap *t = isc_nmaps_find(p, 0x3000);
	ok(t && !strcmp(t->path, "A") && t->start == 0x3000 && t->pgoff == 0x2000, "A's tail starts at 0x3000, offset 0x2000");
	ok(isc_nmaps_find(p, 0x2fff) && !strcmp(isc_nmaps_find(p, 0x2fff)->path, "C"), "C in the middle");
	ok(isc_nmaps_reset(p) == NULL && p->maps[2].state == 0, "reset (as the unwinder does): nothing reported");
	/* D over the end of A's tail and the start of B */
	struct isc_nmap d = mk(0x4000, 0x7000, 0, "D");
	isc_nmaps_add(m, 10, &d, &inval);
	p = isc_nmaps_proc(m, 10, false);
	ok(isc_nmaps_find(p, 0x3fff) && !strcmp(isc_nmaps_find(p, 0x3fff)->path, "A"), "A's tail kept up to D");
	t = isc_nmaps_find(p, 0x7000);
	ok(t && !strcmp(t->path, "B") && t->start == 0x7000 && t->pgoff == 0x1000, "B trimmed to start at D's end");
	ok(!inval, "no reported mapping cut after the reset");
	/* fork copies, exec clears */
	ok(isc_nmaps_fork(m, 11, 10) == 0, "fork");
	struct isc_nproc *q = isc_nmaps_proc(m, 11, false);
	ok(q && q->n == p->n && isc_nmaps_find(q, 0x2fff) && !strcmp(isc_nmaps_find(q, 0x2fff)->path, "C"),
	   "the child has the parent's mappings");
	void *dw;
	isc_nmaps_exec(m, 11, &dw);
	ok(isc_nmaps_proc(m, 11, false)->n == 0 && isc_nmaps_proc(m, 10, false)->n == p->n, "exec clears the child only");
	isc_nmaps_free(m, NULL);
}

/* ---- mix ----------------------------------------------------------------- */

static struct isc_frame nf(const char *name, const char *lib, bool interp, bool interp_lib)
{
	struct isc_frame f = { name, lib, 0, ISC_FRAME_NATIVE, interp, interp_lib };
	return f;
}

static void test_mix(void)
{
	static struct isc_stack n, out;
	unsigned elided;
	struct isc_frame py[2] = { { "forward", "model.py", 12, ISC_FRAME_PYTHON, false, false },
				   { "<module>", "run.py", 3, ISC_FRAME_PYTHON, false, false } };
	n.n = 0;
	n.truncated = false;
	n.f[n.n++] = nf("sgemm_kernel", "libopenblas.so", false, false);
	n.f[n.n++] = nf("at::native::addmm", "libtorch_cpu.so", false, false);
	n.f[n.n++] = nf("cfunction_call", "python3.11", false, true);
	n.f[n.n++] = nf("_PyEval_EvalFrameDefault", "python3.11", true, true);
	n.f[n.n++] = nf("slot_tp_call", "python3.11", false, true);
	n.f[n.n++] = nf("torch::hook", "libtorch_python.so", false, false); /* C between two loops */
	n.f[n.n++] = nf("_PyEval_EvalFrameDefault", "python3.11", true, true);
	n.f[n.n++] = nf("Py_BytesMain", "python3.11", false, true);
	n.f[n.n++] = nf("__libc_start_main", "libc.so.6", false, false);
	isc_mix_stacks(&n, py, 2, &out, &elided);
	/* by the rule: sgemm, addmm stay; cfunction_call goes with the
	 * innermost loop; everything outside it becomes forward, <module> */
	ok(out.n == 4, "mixed stack has 4 frames (%u)", out.n);
	ok(out.n == 4 && !strcmp(out.f[0].name, "sgemm_kernel") && !strcmp(out.f[1].name, "at::native::addmm") &&
		   !strcmp(out.f[2].name, "forward") && !strcmp(out.f[3].name, "<module>"),
	   "sgemm_kernel < at::native::addmm < forward < <module>");
	ok(elided == 1, "one C frame between two evaluation loops elided (%u)", elided);
	ok(!out.truncated, "not truncated");
	isc_mix_stacks(&n, py, 0, &out, &elided);
	ok(out.n == n.n && !strcmp(out.f[3].name, "_PyEval_EvalFrameDefault"), "no Python sample: the native stack as it is");
	/* a pool thread: no evaluation loop, complete */
	n.n = 0;
	n.f[n.n++] = nf("sgemm_kernel", "libopenblas.so", false, false);
	n.f[n.n++] = nf("start_thread", "libc.so.6", false, false);
	isc_mix_stacks(&n, py, 2, &out, &elided);
	ok(out.n == 2 && !strcmp(out.f[1].name, "start_thread"), "a thread without an evaluation loop keeps its stack");
	/* cut before any loop: Python frames above the [truncated] marker */
	n.n = 0;
	n.truncated = true;
	n.f[n.n++] = nf("spin", "libchain.so", false, false);
	n.f[n.n++] = (struct isc_frame){ "[truncated]", "", 0, ISC_FRAME_TRUNCATED, false, false };
	isc_mix_stacks(&n, py, 2, &out, &elided);
	ok(out.n == 4 && !strcmp(out.f[1].name, "[truncated]") && !strcmp(out.f[2].name, "forward"),
	   "spin < [truncated] < forward < <module>");
	/* isc_mix_pick: nearest within the gap, ties to the earlier */
	ok(isc_mix_pick(100, 96, false, 110, false, 5) == -1, "4 before beats 10 after");
	ok(isc_mix_pick(100, 90, false, 103, false, 5) == 1, "3 after beats 10 before");
	ok(isc_mix_pick(100, 97, false, 103, false, 5) == -1, "a tie goes to the earlier");
	ok(isc_mix_pick(100, 90, false, 110, false, 5) == 0, "both beyond the gap: none");
	ok(isc_mix_pick(100, 0, false, 0, false, 5) == 0, "no sample: none");
	/* the one taken on CPU, when only one of the two was */
	ok(isc_mix_pick(100, 99, true, 104, false, 5) == 1, "on CPU 4 after beats off CPU 1 before (woke between)");
	ok(isc_mix_pick(100, 96, false, 101, true, 5) == -1, "on CPU 4 before beats off CPU 1 after (went to wait)");
	ok(isc_mix_pick(100, 99, true, 101, true, 5) == -1, "both off CPU: the nearer, ties to the earlier");
	ok(isc_mix_pick(100, 98, true, 101, true, 5) == 1, "both off CPU: the nearer");
	ok(isc_mix_pick(100, 99, true, 110, false, 5) == -1, "on CPU beyond the gap: the off-CPU one within it");
	ok(isc_mix_pick(100, 90, false, 101, true, 5) == 1, "on CPU beyond the gap before: the off-CPU one after");
	/* isc_mix_py_off: blocked, or woken and not yet run since a blocked sample */
	struct isc_mix_pystate ps = { 0 };
	ok(!isc_mix_py_off(&ps, 'R', true, 1000), "R, first sample: on CPU");
	ok(isc_mix_py_off(&ps, 'S', true, 1500), "S: off CPU");
	ok(isc_mix_py_off(&ps, 'R', true, 1500), "R, not run since the S sample (1500 ns both): off CPU");
	ok(isc_mix_py_off(&ps, 'R', true, 1500), "still not run: off CPU");
	ok(!isc_mix_py_off(&ps, 'R', true, 1600), "R, ran since: on CPU");
	ok(!isc_mix_py_off(&ps, 'R', true, 1600), "R, not run since an on-CPU sample (preempted): on CPU");
	ok(isc_mix_py_off(&ps, 'D', false, 0), "D: off CPU");
	ok(!isc_mix_py_off(&ps, 'R', false, 0), "R without a schedstat (before 1.9): on CPU");
	ok(!isc_mix_py_off(&ps, '?', true, 1700), "? (state unreadable): on CPU");
}

/* ---- pairing over a timeline ------------------------------------------------ */

static char got[16][64];
static unsigned ngot;

static void got_one(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *m, bool paired,
		    unsigned elided, uint64_t tag)
{
	(void)ctx;
	(void)pid;
	(void)elided;
	if (ngot < 16)
		snprintf(got[ngot++], 64, "%u@%llu:%s<%s%s#%llu", tid, (unsigned long long)ts, m->f[0].name,
			 m->n > 1 ? m->f[m->n - 1].name : "-", paired ? "" : " (unpaired)", (unsigned long long)tag);
}

static void test_mixq(void)
{
	struct isc_mixq *q;
	static struct isc_stack n;
	n.n = 2;
	n.f[0] = nf("leaf", "lib.so", false, false);
	n.f[1] = nf("_PyEval_EvalFrameDefault", "python3.11", true, true);
	struct isc_frame pa = { "A", "a.py", 1, ISC_FRAME_PYTHON, false, false };
	struct isc_frame pb = { "B", "b.py", 2, ISC_FRAME_PYTHON, false, false };
	isc_mixq_new(&q, 10, got_one, NULL);
	/* thread 1: Python samples at 100 (A) and 110 (B); natives at 103
	 * (nearer A), 108 (nearer B), 125 (B is 15 away: beyond 10, none) */
	isc_mixq_python(q, 1, 1, 100, false, &pa, 1);
	isc_mixq_native(q, 1, 1, 103, &n, 3);
	isc_mixq_native(q, 1, 1, 108, &n, 8);
	isc_mixq_advance(q, 109);
	ok(ngot == 0, "nothing handed out before the next Python sample or the gap");
	isc_mixq_python(q, 1, 1, 110, false, &pb, 1);
	isc_mixq_native(q, 1, 1, 125, &n, 25);
	/* thread 2 never has a Python sample: its stack waits out the gap */
	isc_mixq_native(q, 1, 2, 105, &n, 5);
	isc_mixq_advance(q, 116);
	isc_mixq_free(q);
	ok(ngot == 4, "4 stacks handed out (%u)", ngot);
	ok(ngot == 4 && !strcmp(got[0], "1@103:leaf<A#3") && !strcmp(got[1], "1@108:leaf<B#8"),
	   "103 gets A, 108 gets B, each with its tag (%s, %s)", got[0], got[1]);
	ok(ngot == 4 && !strcmp(got[2], "2@105:leaf<_PyEval_EvalFrameDefault (unpaired)#5"),
	   "a thread without Python samples keeps its native stack (%s)", got[2]);
	ok(ngot == 4 && !strcmp(got[3], "1@125:leaf<_PyEval_EvalFrameDefault (unpaired)#25"),
	   "15 ns after the last sample, beyond the 10 ns gap: unpaired (%s)", got[3]);
	/* a worker waits in W (off CPU) at 100, wakes, is sampled running B at
	 * 110 and waits in W again at 120: a native sample at 102 (nearer the
	 * wait) and one at 118 (nearer the next wait) are B's */
	struct isc_frame pw = { "W", "w.py", 3, ISC_FRAME_PYTHON, false, false };
	ngot = 0;
	isc_mixq_new(&q, 10, got_one, NULL);
	isc_mixq_python(q, 1, 1, 100, true, &pw, 1);
	isc_mixq_native(q, 1, 1, 102, &n, 2);
	isc_mixq_python(q, 1, 1, 110, false, &pb, 1);
	isc_mixq_native(q, 1, 1, 118, &n, 18);
	isc_mixq_python(q, 1, 1, 120, true, &pw, 1);
	isc_mixq_free(q);
	ok(ngot == 2 && !strcmp(got[0], "1@102:leaf<B#2") && !strcmp(got[1], "1@118:leaf<B#18"),
	   "on CPU between two waits: both get the running B (%s, %s)", got[0], ngot == 2 ? got[1] : "-");
}

/* ---- classify ---------------------------------------------------------------- */

static const struct isc_frame PYF = { "forward", "model.py", 12, ISC_FRAME_PYTHON, false, false };

/* A stack of the given native frames (innermost first) under one Python frame (py) or none. */
static void stack_of(struct isc_stack *s, const struct isc_frame *f, unsigned n, bool py)
{
	s->n = 0;
	s->truncated = false;
	for (unsigned i = 0; i < n; i++)
		s->f[s->n++] = f[i];
	if (py)
		s->f[s->n++] = PYF;
}

static void test_classify(void)
{
	static struct isc_stack s;
	char op[64];
	/* THPVariable_matmul > at::_ops::matmul::call > at::_ops::mm::call > sgemm */
	struct isc_frame mm[] = { nf("sgemm_kernel_ZEN", "/usr/lib/libopenblasp-r0.3.21.so", false, false),
				  nf("at::_ops::mm::call", "/usr/lib/libtorch_cpu.so.1.13", false, false),
				  nf("at::_ops::matmul::call", "/usr/lib/libtorch_cpu.so.1.13", false, false),
				  nf("THPVariable_matmul", "/usr/lib/libtorch_python.so", false, false) };
	stack_of(&s, mm, 4, true);
	ok(isc_native_op(&s, true, op, sizeof(op)) && !strcmp(op, "aten::matmul"), "outermost op: aten::matmul (%s)", op);
	ok(isc_native_op(&s, false, op, sizeof(op)) && !strcmp(op, "aten::mm"), "innermost op: aten::mm (%s)", op);
	ok(isc_native_class(&s) == ISC_CPU_TORCH, "a torch library's frame inside the Python frame: torch");
	/* the op's overload and redispatch; not a call */
	struct isc_frame rd[] = { nf("at::_ops::add__Tensor::redispatch", "/x/libtorch_cpu.so", false, false),
				  nf("at::_ops::foo::other", "/x/libtorch_cpu.so", false, false) };
	stack_of(&s, rd, 1, true);
	ok(isc_native_op(&s, true, op, sizeof(op)) && !strcmp(op, "aten::add__Tensor"), "::redispatch names the op (%s)", op);
	stack_of(&s, rd + 1, 1, true);
	ok(!isc_native_op(&s, true, op, sizeof(op)), "at::_ops::foo::other is no op entry");
	/* bytecode: no native frame inside the Python one */
	stack_of(&s, NULL, 0, true);
	ok(isc_native_class(&s) == ISC_CPU_INTERP, "only Python frames: interpreter");
	/* the interpreter calls the C library itself; the kernel on its behalf */
	struct isc_frame lc[] = { { "clear_page_erms", "[kernel]", 0, ISC_FRAME_KERNEL, false, false },
				  nf("__memmove_avx_unaligned_erms", "/lib/x86_64-linux-gnu/libc.so.6", false, false) };
	stack_of(&s, lc, 2, true);
	ok(isc_native_class(&s) == ISC_CPU_INTERP, "libc called by the interpreter (a page fault inside): interpreter");
	stack_of(&s, lc, 1, true);
	ok(isc_native_class(&s) == ISC_CPU_INTERP, "only kernel frames under Python: interpreter");
	/* ctypes into libm; the loader */
	struct isc_frame ct[] = { nf("cos", "/lib/x86_64-linux-gnu/libm.so.6", false, false),
				  nf("ffi_call", "/lib/x86_64-linux-gnu/libffi.so.8", false, false) };
	stack_of(&s, ct, 2, true);
	ok(isc_native_class(&s) == ISC_CPU_OTHER, "ctypes (libffi) into libm: other C code");
	struct isc_frame ld[] = { nf("do_lookup_x", "/lib64/ld-linux-x86-64.so.2", false, false),
				  nf("dlopen", "/lib/x86_64-linux-gnu/libc.so.6", false, false) };
	stack_of(&s, ld, 2, true);
	ok(isc_native_class(&s) == ISC_CPU_OTHER, "dlopen's loader under libc: other C code, not the interpreter");
	/* unpaired: the evaluation loop stands for the Python frames, its call machinery inside it left out */
	struct isc_frame up[] = { nf("leaf", "/x/libext.so", false, false), nf("PyObject_Call", "/usr/bin/python3.11", false, true),
				  nf("_PyEval_EvalFrameDefault", "/usr/bin/python3.11", true, true),
				  nf("main", "/usr/bin/python3.11", false, true) };
	stack_of(&s, up, 4, false);
	ok(isc_native_class(&s) == ISC_CPU_OTHER, "unpaired: the frame inside the loop's call machinery decides");
	stack_of(&s, up + 1, 3, false);
	ok(isc_native_class(&s) == ISC_CPU_INTERP, "unpaired, nothing inside the loop: interpreter");
	/* no Python frame and no loop: a worker's own stack */
	struct isc_frame wk[] = { nf("sgemm_kernel_ZEN", "/usr/lib/libopenblasp-r0.3.21.so", false, false),
				  nf("start_thread", "/lib/x86_64-linux-gnu/libc.so.6", false, false) };
	stack_of(&s, wk, 2, false);
	ok(isc_native_class(&s) == ISC_CPU_NONE, "a worker's own stack is no Python code's");
	ok(!isc_native_op(&s, true, op, sizeof(op)), "and runs no op");
	/* a dispatched worker stack: the op frame the analysis put there, "[worker threads]" is none */
	struct isc_frame dw[] = { nf("sgemm_kernel_ZEN", "/usr/lib/libopenblasp-r0.3.21.so", false, false),
				  { "aten::addmm", NULL, 0, ISC_FRAME_OP, false, false } };
	stack_of(&s, dw, 2, true);
	ok(isc_native_op(&s, true, op, sizeof(op)) && !strcmp(op, "aten::addmm"), "an op frame names the op");
	ok(isc_native_class(&s) == ISC_CPU_TORCH, "and counts as torch");
	dw[1].name = "[worker threads]";
	stack_of(&s, dw, 2, true);
	ok(!isc_native_op(&s, true, op, sizeof(op)), "[worker threads] is no op");
	ok(isc_native_torch_lib("/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so") &&
		   isc_native_torch_lib("/usr/lib/x86_64-linux-gnu/libc10.so.1.13") && !isc_native_torch_lib("/lib/libm.so.6"),
	   "torch libraries: under torch/, libc10, not libm");
}

static void test_demangle(void)
{
	char buf[256];
	ok(!strcmp(isc_syms_demangle("_ZN2at4_ops2mm4callERKNS_6TensorES4_", buf, sizeof(buf)), "at::_ops::mm::call"),
	   "parameters cut (%s)", buf);
	ok(!strcmp(isc_syms_demangle("_ZNK1XclEi", buf, sizeof(buf)), "X::operator()"), "operator() kept (%s)", buf);
	ok(!strcmp(isc_syms_demangle("_Z3fooi.cold", buf, sizeof(buf)), "foo"), "a [clone .cold] part too (%s)", buf);
	ok(!strcmp(isc_syms_demangle("_ZTV1X", buf, sizeof(buf)), "vtable for X"), "no parameter list: whole (%s)", buf);
	ok(!strcmp(isc_syms_demangle("sgemm_kernel_ZEN", buf, sizeof(buf)), "sgemm_kernel_ZEN"), "a C name as it is");
}

/* ---- the unwinder on a saved stack ---------------------------------------- */

static uint8_t saved_stack[65528]; /* the most the kernel copies (PERF_SAMPLE_STACK_USER): ASan frames and a large environment above main need more than 16 KiB */
static struct isc_native_sample saved;
static uint64_t stack_top; /* end of the [stack] mapping: the copy stops there, as the kernel's does */

static uint64_t find_stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4200];
	unsigned long long s, e, top = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &s, &e) == 2)
			top = e;
	if (f)
		fclose(f);
	return top;
}

/* Copies stack bytes as the kernel does: without looking at AddressSanitizer's
 * shadow (the live stack holds other frames' poisoned redzones). */
__attribute__((no_sanitize("address"), noinline)) static void copy_stack(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ((const volatile uint8_t *)src)[i];
}

/* Copies this thread's registers and the top of its stack, as the kernel does for a sample. */
__attribute__((noinline)) static void capture(void)
{
	uint64_t r[8];
	__asm__ volatile("leaq 0(%%rip), %%rax\n\t"
			 "movq %%rax, %0\n\t"
			 "movq %%rsp, %1\n\t"
			 "movq %%rbp, %2\n\t"
			 "movq %%rbx, %3\n\t"
			 "movq %%r12, %4\n\t"
			 "movq %%r13, %5\n\t"
			 "movq %%r14, %6\n\t"
			 "movq %%r15, %7\n\t"
			 : "=m"(r[0]), "=m"(r[1]), "=m"(r[2]), "=m"(r[3]), "=m"(r[4]), "=m"(r[5]), "=m"(r[6]), "=m"(r[7])
			 :
			 : "rax");
	memset(&saved, 0, sizeof(saved));
	saved.pid = (uint32_t)getpid();
	saved.tid = (uint32_t)gettid();
	saved.nregs = 17;
	saved.regs[16] = r[0]; /* rip */
	saved.regs[7] = r[1];  /* rsp */
	saved.regs[6] = r[2];  /* rbp */
	saved.regs[3] = r[3];  /* rbx */
	saved.regs[12] = r[4];
	saved.regs[13] = r[5];
	saved.regs[14] = r[6];
	saved.regs[15] = r[7];
	size_t len = stack_top - r[1] < sizeof(saved_stack) ? stack_top - r[1] : sizeof(saved_stack);
	copy_stack(saved_stack, (const uint8_t *)r[1], len);
	saved.stack = saved_stack;
	saved.stack_len = len;
}

__attribute__((noinline)) static void level3(void)
{
	capture();
	__asm__ volatile(""); /* no tail call: this frame stays on the stack */
}

__attribute__((noinline)) static void level2(void)
{
	level3();
	__asm__ volatile("");
}

__attribute__((noinline)) static void level1(void)
{
	level2();
	__asm__ volatile("");
}

/* NATIVE_MAP records of this process's executable mappings, from /proc. */
static int feed_maps(struct isc_unwinder *u)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4200];
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &pos) < 4 || perms[2] != 'x')
			continue;
		char *path = line + pos;
		path[strcspn(path, "\n")] = '\0';
		uint8_t id[20];
		int idl = path[0] == '/' ? isc_build_id_of_path(path, id, sizeof(id)) : 0;
		struct isc_native_map m = { saved.pid, s, e - s, off, 1, 0, id, (const uint8_t *)path, (size_t)idl, strlen(path) };
		struct isc_buf b = { 0 };
		isc_native_map_encode(&b, &m);
		n += isc_unwinder_record(u, ISC_REC_NATIVE_MAP, b.data, b.len) == 0;
		isc_buf_free(&b);
	}
	if (f)
		fclose(f);
	return n;
}

static void test_unwind(void)
{
	static struct isc_stack st;
	struct isc_unwinder *u;
	stack_top = find_stack_top();
	level1();
	ok(isc_unwinder_new(&u, NULL) == 0, "unwinder");
	ok(feed_maps(u) > 3, "this process's executable mappings taken");
	ok(isc_unwinder_unwind(u, &saved, &st) == 0, "unwind");
	const char *want[] = { "capture", "level3", "level2", "level1", "test_unwind", "main" };
	unsigned k = 0;
	for (; k < 6 && k < st.n; k++)
		if (strcmp(st.f[k].name, want[k]))
			break;
	ok(k == 6, "capture < level3 < level2 < level1 < test_unwind < main (first %u match; frame %u is %s)", k, k,
	   k < st.n ? st.f[k].name : "(none)");
	ok(st.n > 6 && !strcmp(st.f[st.n - 1].name, "_start"), "the outermost frame is _start (%s)",
	   st.n ? st.f[st.n - 1].name : "(none)");
	ok(!st.truncated, "a copy up to the stack's top: not truncated");
	ok(st.f[0].kind == ISC_FRAME_NATIVE && st.f[0].lib && strstr(st.f[0].lib, "test_native"), "capture is in this program");
	/* the same stack cut to 64 bytes: capture's frame only, then [truncated] */
	struct isc_native_sample cut = saved;
	cut.stack_len = 64;
	isc_unwinder_unwind(u, &cut, &st);
	ok(st.truncated && st.n >= 2 && !strcmp(st.f[st.n - 1].name, "[truncated]") && !strcmp(st.f[0].name, "capture"),
	   "a 64-byte copy: capture ... [truncated] (%u frames, last %s)", st.n, st.n ? st.f[st.n - 1].name : "-");
	/* an instruction pointer in no mapping: [jit] */
	struct isc_native_sample jit = saved;
	jit.regs[16] = 0x10;
	jit.stack_len = 0;
	isc_unwinder_unwind(u, &jit, &st);
	ok(st.n >= 1 && st.f[0].kind == ISC_FRAME_JIT && !strcmp(st.f[0].name, "[jit]"), "no mapping: [jit]");
	const struct isc_unwind_stats *x = isc_unwinder_stats(u);
	ok(x->samples == 3 && x->jit >= 1 && x->truncated == 1, "stats: 3 samples, a jit frame, 1 truncated");
	isc_unwinder_free(u);
}

int main(void)
{
	test_codec();
	test_build_id();
	test_maps();
	test_mix();
	test_mixq();
	test_classify();
	test_demangle();
	test_unwind();
	return tap_done();
}
