/* test_pyremote.c - the out-of-process CPython stack walker on fake memory. */
#include <stdlib.h>

#include "pymem_image.h"
#include "pylines_vectors.h"
#include "tap.h"

static uint8_t mem[IMG_SIZE];

/* Every offset of a table's vectors gives CPython's own answer. */
static void check_lines(const char *name, int format, const uint8_t *tab, size_t len, const int (*exp)[2],
			size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if (isc_py_addr2line(format, tab, len, 2, exp[i][0]) != (uint32_t)exp[i][1])
			bad++;
	ok(bad == 0 && n > 10, "%s: line of each of %zu instruction offsets as CPython says (%zu wrong)", name, n, bad);
}

#define LINES(v, fmt) check_lines(#v, fmt, v##_tab, sizeof(v##_tab), v##_exp, sizeof(v##_exp) / sizeof(v##_exp[0]))

static void test_lines(void)
{
	LINES(v39, ISC_PY_LINES_LNOTAB);
	LINES(v310, ISC_PY_LINES_310);
	LINES(v311, ISC_PY_LINES_311);
	LINES(v312, ISC_PY_LINES_311);
	LINES(v313, ISC_PY_LINES_311);
	ok(isc_py_addr2line(ISC_PY_LINES_311, v311_tab, sizeof(v311_tab), 2, -1) == 2,
	   "an offset before the first instruction is the first line");
	uint8_t junk[] = { 0x01, 0x02, 0x03 };
	ok(isc_py_addr2line(ISC_PY_LINES_311, junk, sizeof(junk), 2, 1) == 0,
	   "a 3.11 table not starting with an entry byte says nothing");
	ok(isc_py_addr2line(ISC_PY_LINES_310, v310_tab, sizeof(v310_tab), 2, 100000) == 0,
	   "an offset past a 3.10 table: no line");
}

static void test_walk(void)
{
	struct img im = { mem, IMG_SIZE, 0 };
	struct isc_pyremote r;
	struct isc_pystack st[4];
	unsigned n = 0;
	char buf[64];
	img_build(mem);
	img_remote(&r, &im);
	int rc = isc_pyremote_sample(&r, st, 4, &n);
	ok(rc == 0 && n == 2, "two thread states found (%u)", n);
	ok(st[0].tid == 101 && st[1].tid == 102, "native thread ids %u %u", st[0].tid, st[1].tid);
	ok(st[0].depth == 2 && !st[0].truncated, "thread 101: the shim frame skipped, 2 frames (%u)", st[0].depth);
	ok(st[0].frames[0].code == IMG_BASE + A_CODE1 && st[0].frames[1].code == IMG_BASE + A_CODE2,
	   "innermost frame first");
	ok(st[0].frames[0].line == 11, "f at unit 3: line 11 (%u)", st[0].frames[0].line);
	ok(st[0].frames[1].line == 20, "g at unit 0: line 20 (%u)", st[0].frames[1].line);
	ok(st[1].depth == 1 && st[1].frames[0].line == 22, "thread 102: g at unit 4, line 22 (%u)",
	   st[1].frames[0].line);
	ok(st[0].frames[0].opclass == ISC_PY_OP_CALL && st[1].frames[0].opclass == ISC_PY_OP_INTERP,
	   "opcode classes: call, interpreter");
	ok(isc_pyremote_str(&r, st[0].frames[0].name, buf, sizeof(buf)) == 1 && !strcmp(buf, "f"), "ascii name %s",
	   buf);
	ok(isc_pyremote_str(&r, st[0].frames[1].name, buf, sizeof(buf)) == 3 && !strcmp(buf, "g\xc3\xa9"),
	   "UCS-2 name as UTF-8");
	ok(isc_pyremote_str(&r, st[0].frames[0].file, buf, sizeof(buf)) > 0 && !strcmp(buf, "/src/model.py"),
	   "file name %s", buf);
	uint64_t before = r.reads;
	isc_pyremote_sample(&r, st, 4, &n);
	ok(r.reads - before < before, "line tables are cached: the second walk reads less (%llu vs %llu)",
	   (unsigned long long)(r.reads - before), (unsigned long long)before);
	/* the second walk, line tables cached: the interpreter's head, threads
	 * and next (3); thread 101: its state, the shim frame, f (frame, code,
	 * its instruction: the leaf) and g (frame, code) = 7; thread 102: its
	 * state and g as the leaf (frame, code, instruction) = 4 */
	ok(r.reads - before == 14, "only the leaf frame's instruction is read: 14 reads (%llu)",
	   (unsigned long long)(r.reads - before));
	isc_pyremote_fini(&r);
}

/* Memory that lies: every case must end, bounded, without a crash. */
static void test_lies(void)
{
	struct img im = { mem, IMG_SIZE, 0 };
	struct isc_pyremote r;
	struct isc_pystack *st = calloc(ISC_PY_MAX_THREADS, sizeof(*st));
	unsigned n = 0;
	char buf[ISC_PY_NAME_MAX + 8];

	img_build(mem);
	put64(mem, A_FR2, IMG_BASE + A_FR1); /* g's caller is f: a frame cycle */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(n == 2 && st[0].depth == ISC_PY_MAX_DEPTH && st[0].truncated, "a frame cycle: cut at %d frames, truncated",
	   ISC_PY_MAX_DEPTH);
	ok(r.reads < 10 * ISC_PY_MAX_DEPTH, "... after a bounded number of reads (%llu)", (unsigned long long)r.reads);
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_FR3, IMG_BASE + A_FR3); /* its own caller */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(n == 2 && st[1].depth == 1, "a frame that is its own caller counts once");
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_TS2, IMG_BASE + A_TS1); /* thread list cycle */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, ISC_PY_MAX_THREADS, &n);
	ok(n == ISC_PY_MAX_THREADS, "a thread-state cycle: cut at %u thread states (%u)", ISC_PY_MAX_THREADS, n);
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_TS2 + 8, IMG_BASE + A_TS1); /* claims another interpreter */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(n == 1, "a thread state of another interpreter ends the list (%u)", n);
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_CODE2 + 8, 0xdead0000); /* not a code object */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(st[0].depth == 1 && st[0].truncated, "a frame whose code has the wrong type ends the stack, truncated");
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_S_F + 16, (1ull << 40) - 1); /* huge length */
	img_remote(&r, &im);
	int len = isc_pyremote_str(&r, IMG_BASE + A_S_F, buf, sizeof(buf));
	ok(len == -EFAULT || (len >= 0 && len <= ISC_PY_NAME_MAX), "a str of 2^40 characters: read at most %d bytes (%d)",
	   ISC_PY_NAME_MAX, len);
	put64(mem, A_S_F + 16, 5000);
	for (unsigned i = 0; i < 5000; i++)
		mem[A_S_F + 40 + i] = 'x';
	len = isc_pyremote_str(&r, IMG_BASE + A_S_F, buf, sizeof(buf));
	ok(len == ISC_PY_NAME_MAX && strlen(buf) == ISC_PY_NAME_MAX, "a str of 5000 characters is cut at %d (%d)",
	   ISC_PY_NAME_MAX, len);
	put64(mem, A_S_F + 16, (uint64_t)-5);
	ok(isc_pyremote_str(&r, IMG_BASE + A_S_F, buf, sizeof(buf)) == -EBADMSG, "a negative length is refused");
	put32(mem, A_S_F + 32, 3u << 2 | 1u << 5);
	put64(mem, A_S_F + 16, 1);
	ok(isc_pyremote_str(&r, IMG_BASE + A_S_F, buf, sizeof(buf)) == -EBADMSG, "kind 3 is refused");
	put32(mem, A_S_F + 32, 1u << 2);
	ok(isc_pyremote_str(&r, IMG_BASE + A_S_F, buf, sizeof(buf)) == -EBADMSG, "a non-compact str is refused");
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_TAB + 16, 1ull << 62); /* line table of 2^62 bytes */
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(n == 2 && st[0].depth == 2 && st[0].frames[0].line == 0, "a line table of 2^62 bytes: no line, stack kept");
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_FR1 + 16, 0xffffffffffffff00ull); /* instruction pointer anywhere */
	put64(mem, A_RUNTIME + 16, IMG_BASE + A_INTERP);
	img_remote(&r, &im);
	isc_pyremote_sample(&r, st, 4, &n);
	ok(st[0].depth == 2 && st[0].frames[0].line == 10, "a wild instruction pointer: the first line (%u)",
	   st[0].frames[0].line);
	isc_pyremote_fini(&r);

	img_build(mem);
	im.fail_errno = ESRCH;
	img_remote(&r, &im);
	ok(isc_pyremote_sample(&r, st, 4, &n) == -ESRCH && n == 0, "a process gone mid-read: -ESRCH, no stacks");
	im.fail_errno = 0;
	isc_pyremote_fini(&r);

	img_build(mem);
	put64(mem, A_RUNTIME + 16, 0xfffffffffffff000ull);
	img_remote(&r, &im);
	ok(isc_pyremote_sample(&r, st, 4, &n) == 0 && n == 0, "an interpreter pointer out of the address space: none");
	isc_pyremote_fini(&r);
	free(st);
}

/* When set, the bytes (NUL included) callee_case writes over time.sleep's ml_name. */
static const char *ml1_name;
static size_t ml1_len;

/* Thread 101's callee in case c, named: "src kind torch name module", or what failed. */
static void callee_case(enum img_callee_case c, char *out, size_t cap)
{
	struct img im = { mem, IMG_SIZE, 0 };
	struct isc_pyremote r;
	static struct isc_pystack st[4];
	unsigned n = 0;
	char name[200], module[200];
	uint8_t kind = 9;
	bool torch = false;
	img_build(mem);
	img_callee(mem, c);
	if (ml1_name)
		memcpy(mem + A_ML1 + 0x40, ml1_name, ml1_len);
	img_remote(&r, &im);
	img_callee_remote(&r);
	if (isc_pyremote_sample(&r, st, 4, &n) || n < 1 || st[0].depth < 1) {
		snprintf(out, cap, "no stack");
	} else if (st[0].callee.src == ISC_PY_SRC_NONE || st[0].callee.src == ISC_PY_SRC_UNKNOWN) {
		snprintf(out, cap, "%s", st[0].callee.src == ISC_PY_SRC_NONE ? "none" : "unknown");
	} else if (isc_pyremote_callee_name(&r, &st[0].callee, &kind, &torch, name, sizeof(name), module, sizeof(module))) {
		snprintf(out, cap, "src %u: unnamed", st[0].callee.src);
	} else {
		snprintf(out, cap, "src %u kind %u %s %s %s", st[0].callee.src, kind, torch ? "torch" : "-", name, module);
	}
	isc_pyremote_fini(&r);
}

/*
 * The callee of the innermost frame, from its value stack at the depth
 * pycode.c computes (the fixture's code objects: img_callee): names as the
 * profile hook gives them, the operand's slot for an operator, nothing
 * for a Python function or the interpreter's own types.
 */
static void test_callee(void)
{
	char got[512];
	callee_case(IMG_CALL_FUNCTION, got, sizeof(got));
	ok_str(got, "src 1 kind 1 - time.sleep time", "a builtin function of a module: time.sleep, a function, not torch's");
	callee_case(IMG_CALL_METHOD, got, sizeof(got));
	ok_str(got, "src 2 kind 2 torch Tensor.matmul torch",
	       "a method descriptor of torch._C._TensorBase called on a Tensor: Tensor.matmul (its type's __qualname__, "
	       "__module__ from its dict), torch's");
	/* a name read through a stale pointer (seen on a real run: "builtins.\xc3"): refused, not recorded */
	ml1_name = "\xc3", ml1_len = 2;
	callee_case(IMG_CALL_FUNCTION, got, sizeof(got));
	ok_str(got, "src 1: unnamed", "a C function name that is not UTF-8 (a lone 0xc3): no name");
	ml1_name = "sl\xc3\xa9" "ep", ml1_len = 7;
	callee_case(IMG_CALL_FUNCTION, got, sizeof(got));
	ok_str(got, "src 1 kind 1 - time.sl\xc3\xa9" "ep time", "a name in well-formed UTF-8 (an e acute): kept");
	ml1_name = NULL;
	callee_case(IMG_CALL_PYTHON, got, sizeof(got));
	ok_str(got, "none", "a call of a Python function: no C callee");
	callee_case(IMG_CALL_BOUND, got, sizeof(got));
	ok_str(got, "src 1 kind 1 - time.sleep time", "a bound method: its __func__, a builtin function");
	callee_case(IMG_OP_TENSORS, got, sizeof(got));
	ok_str(got, "src 3 kind 3 torch Tensor.__matmul__ torch", "t @ u on tensors: the Tensor's slot, torch's");
	callee_case(IMG_OP_INTS, got, sizeof(got));
	ok_str(got, "none", "1 + 2 on ints: the interpreter's own arithmetic, no C callee");
	callee_case(IMG_OP_REFLECTED, got, sizeof(got));
	ok_str(got, "src 3 kind 3 torch Tensor.__radd__ torch", "1 + t: the tensor's reflected slot");
	/* the old fixture's call: its code object has no size, so no depth: unknown */
	struct img im = { mem, IMG_SIZE, 0 };
	struct isc_pyremote r;
	static struct isc_pystack st[4];
	unsigned n = 0;
	img_build(mem);
	img_remote(&r, &im);
	img_callee_remote(&r);
	int rc = isc_pyremote_sample(&r, st, 4, &n);
	ok(!rc && n == 2 && st[0].callee.src == ISC_PY_SRC_UNKNOWN && st[1].callee.src == ISC_PY_SRC_NONE,
	   "a call in a code object that cannot be analysed: unknown; bytecode innermost: none (%u %u)", st[0].callee.src,
	   st[1].callee.src);
	isc_pyremote_fini(&r);
	/* a lying stack: the callable slot points at a type-less object */
	img_build(mem);
	img_callee(mem, IMG_CALL_FUNCTION);
	put64(mem, A_FR1 + 64, IMG_BASE + 0xF000);
	img_remote(&r, &im);
	img_callee_remote(&r);
	rc = isc_pyremote_sample(&r, st, 4, &n);
	ok(!rc && st[0].callee.src == ISC_PY_SRC_UNKNOWN, "a callable with no type: unknown (%u)", st[0].callee.src);
	isc_pyremote_fini(&r);
}

static void test_debug_offsets(void)
{
	struct img im = { mem, IMG_SIZE, 0 };
	struct isc_pyremote r;
	uint32_t hex = 0;
	uint64_t d[73] = { 0 };
	memcpy(d, "xdebugpy", 8);
	d[1] = 0x030D00F0;
	d[5] = 16;  /* interpreters_head */
	d[9] = 8;   /* threads_head */
	d[23] = 32; /* current_frame */
	d[3] = 300000; /* a size: may exceed 64 KiB */
	img_build(mem);
	memcpy(mem + A_RUNTIME + 0x800, d, sizeof(d));
	isc_pyremote_init(&r, &img_layout, img_read, &im, IMG_BASE + A_RUNTIME + 0x800);
	ok(isc_pyremote_debug_offsets(&r, &hex) == 0 && hex == 0x030D00F0 && r.L.rt_interp_head == 16 &&
		   r.L.is_threads_head == 8 && r.L.ts_frame == 32,
	   "3.13 _Py_DebugOffsets: cookie, version and offsets taken");
	d[1] = 0x030E00F0;
	memcpy(mem + A_RUNTIME + 0x800, d, sizeof(d));
	ok(isc_pyremote_debug_offsets(&r, &hex) == -EPROTO, "3.14 offsets (another struct) refused");
	d[1] = 0x030D00F0;
	d[2] = 1;
	memcpy(mem + A_RUNTIME + 0x800, d, sizeof(d));
	ok(isc_pyremote_debug_offsets(&r, &hex) == -EPROTO, "a free-threaded build refused");
	d[2] = 0;
	d[9] = 1u << 20;
	memcpy(mem + A_RUNTIME + 0x800, d, sizeof(d));
	ok(isc_pyremote_debug_offsets(&r, &hex) == -EPROTO, "an offset of 1 MiB refused");
	memcpy(mem + A_RUNTIME + 0x800, "xdebugpz", 8);
	ok(isc_pyremote_debug_offsets(&r, &hex) == -EPROTO, "a wrong cookie refused");
	isc_pyremote_fini(&r);
}

static void test_table(void)
{
	for (size_t i = 0; i < isc_npylayouts; i++) {
		const struct isc_pylayout *L = &isc_pylayouts[i];
		unsigned mi = L->hexversion >> 16 & 255;
		ok(isc_pylayout_find(3, mi, L->hexversion >> 8 & 255) == L && L->ts_frame != ISC_PY_NONE &&
			   L->str_kind_bit >= 0 && L->opclass[0] == 0,
		   "layout %s: found by its version, fields present", L->version);
	}
	ok(isc_pylayout_find(3, 99, 0) == NULL, "no layout for CPython 3.99");
}

int main(void)
{
	test_lines();
	test_walk();
	test_lies();
	test_callee();
	test_debug_offsets();
	test_table();
	return tap_done();
}
