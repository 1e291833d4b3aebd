/*
 * test_wait.c - what a blocked thread waits in: the /proc/TID/syscall
 * parser, the system call families and the descriptor kinds of the
 * sampler's THREAD_WAIT (lib/record/proc_wait.c), on the fixtures of
 * tests/data/proc (argv[1]; README there says where each comes from); and
 * the analysis side (lib/analyze/analyze_wait.c): the reason of a blocked
 * sample, torch ops by module, pool names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "isc_findings.h"
#include "isc_format.h"
#include "sampler.h"
#include "analyze_wait.h"
#include "tap.h"

static char dir[512];

static int parse_fixture(const char *name, struct isc_proc_syscall *sc)
{
	char path[700], text[512];
	snprintf(path, sizeof(path), "%s/syscall/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f) {
		ok(false, "fixture %s opens", path);
		return -1;
	}
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return isc_proc_syscall_parse(text, sc);
}

struct want {
	const char *file;
	uint8_t call;
	long nr;     /* x86_64 number */
	int fd_arg;  /* isc_wait_fd_arg */
	uint64_t a0; /* first argument */
};

static void syscalls(void)
{
	static const struct want w[] = {
		{ "accept-socket", ISC_WAIT_CONNECT, 288, 0, 5 },
		{ "clock_nanosleep", ISC_WAIT_SLEEP, 230, ISC_FDARG_NONE, 1 },
		{ "epoll_wait", ISC_WAIT_POLL, 232, 0, 9 },
		{ "futex-lock", ISC_WAIT_FUTEX, 202, ISC_FDARG_NONE, 0x2b54c310 },
		{ "openat-fifo", ISC_WAIT_FILE, 257, ISC_FDARG_NONE, 0xffffff9c },
		{ "poll-pipe", ISC_WAIT_POLL, 7, ISC_FDARG_POLLFDS, 0x7f03291cc3a0 },
		{ "read-eventfd", ISC_WAIT_READ, 0, 0, 8 },
		{ "read-file", ISC_WAIT_READ, 0, 0, 3 },
		{ "read-pipe", ISC_WAIT_READ, 0, 0, 3 },
		{ "recvfrom-socket", ISC_WAIT_READ, 45, 0, 7 },
		{ "select-socket", ISC_WAIT_POLL, 270, ISC_FDARG_NFDS, 8 },
		{ "wait4-child", ISC_WAIT_CHILD, 61, ISC_FDARG_NONE, 0x26b2 },
		{ "write-socket", ISC_WAIT_WRITE, 1, 0, 5 },
		{ "fsync", ISC_WAIT_FILE, 74, 0, 6 },
		{ "poll-none", ISC_WAIT_SLEEP, 7, ISC_FDARG_NONE, 0 },
		{ "select-none", ISC_WAIT_SLEEP, 270, ISC_FDARG_NONE, 0 }, /* nfds 0, the sets' pointers not NULL */
	};
#if defined(__x86_64__)
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		struct isc_proc_syscall sc;
		int rc = parse_fixture(w[i].file, &sc);
		ok(rc == 0, "%s: parses", w[i].file);
		ok(sc.nr == w[i].nr, "%s: system call %ld (got %ld)", w[i].file, w[i].nr, sc.nr);
		ok(sc.call == w[i].call, "%s: family %u (got %u)", w[i].file, w[i].call, sc.call);
		ok(sc.arg[0] == w[i].a0, "%s: first argument %#llx", w[i].file, (unsigned long long)w[i].a0);
		if (sc.call != ISC_WAIT_SLEEP)
			ok(isc_wait_fd_arg(sc.nr, sc.call) == w[i].fd_arg, "%s: descriptor argument %d (got %d)",
			   w[i].file, w[i].fd_arg, isc_wait_fd_arg(sc.nr, sc.call));
	}
	struct isc_proc_syscall sc;
	ok(parse_fixture("poll-pipe", &sc) == 0 && sc.arg[1] == 1 && sc.arg[2] == 0xbb8,
	   "poll-pipe: nfds 1, timeout 3000 ms");
	ok(parse_fixture("futex-lock", &sc) == 0 && sc.arg[1] == 0x189, "futex-lock: op FUTEX_WAIT_BITSET_PRIVATE|CLOCK_REALTIME");
#else
	ok(true, "# SKIP system call numbers are x86_64's (%zu fixtures)", sizeof(w) / sizeof(w[0]));
#endif
	struct isc_proc_syscall s2;
	ok(parse_fixture("running", &s2) == 0 && s2.call == ISC_WAIT_RUNNING && s2.nr == -1, "running: family running");
	ok(parse_fixture("no-syscall", &s2) == 0 && s2.call == ISC_WAIT_NO_SYSCALL && s2.nr == -1,
	   "no-syscall: blocked outside a system call");
	ok(parse_fixture("bad-short", &s2) == -EBADMSG, "bad-short: refused");
	ok(parse_fixture("bad-garbage", &s2) == -EBADMSG, "bad-garbage: refused");
	ok(isc_proc_syscall_parse("", &s2) == -EBADMSG, "empty text: refused");
	ok(isc_wait_call_of(99999) == ISC_WAIT_OTHER, "unknown number: family other");
}

static void fd_kinds(void)
{
	static const uint8_t want[] = { ISC_FD_PIPE, ISC_FD_SOCKET, ISC_FD_EVENTFD, ISC_FD_EPOLL, ISC_FD_ANON,
					ISC_FD_CHARDEV, ISC_FD_FILE, ISC_FD_FILE, ISC_FD_FILE, ISC_FD_OTHER };
	char path[700], line[300];
	snprintf(path, sizeof(path), "%s/fd-links", dir);
	FILE *f = fopen(path, "r");
	if (!ok(f != NULL, "fd-links opens"))
		return;
	size_t i = 0;
	while (fgets(line, sizeof(line), f) && i < sizeof(want)) {
		line[strcspn(line, "\n")] = '\0';
		uint8_t k = isc_fd_kind_of_link(line, 0);
		ok(k == want[i], "fd-links %s: kind %u (got %u)", line, want[i], k);
		i++;
	}
	fclose(f);
	ok(i == sizeof(want), "fd-links: %zu lines", i);
	/* a path: stat's type decides over the name */
	ok(isc_fd_kind_of_link("/tmp/fifo", S_IFIFO | 0644) == ISC_FD_PIPE, "a FIFO by path: pipe");
	ok(isc_fd_kind_of_link("/tmp/sock", S_IFSOCK | 0755) == ISC_FD_SOCKET, "a socket by path: socket");
	ok(isc_fd_kind_of_link("/dev/sda", S_IFBLK | 0660) == ISC_FD_BLOCKDEV, "/dev/sda: block device");
	ok(isc_fd_kind_of_link("/dev/null", S_IFCHR | 0666) == ISC_FD_CHARDEV, "/dev/null: character device");
	ok(isc_fd_kind_of_link("/data", S_IFDIR | 0755) == ISC_FD_DIR, "/data: directory");
	ok(isc_fd_kind_of_link("/data/x.bin", S_IFREG | 0644) == ISC_FD_FILE, "/data/x.bin: file");
}

/* The analysis side: a blocked sample's reason, torch ops by module, pool names. */
static void reasons(void)
{
	static const struct {
		uint8_t call, kind;
		char state;
		const char *wchan;
		bool timed, in_python;
		unsigned want;
	} r[] = {
		{ ISC_WAIT_READ, ISC_FD_FILE, 'D', "", false, false, ISC_OFF_IO_FILE },
		{ ISC_WAIT_READ, ISC_FD_BLOCKDEV, 'D', "", false, false, ISC_OFF_IO_FILE },
		{ ISC_WAIT_READ, ISC_FD_CHARDEV, 'S', "", false, false, ISC_OFF_IO_FILE }, /* a tty, /dev/urandom */
		{ ISC_WAIT_READ, ISC_FD_DIR, 'D', "", false, false, ISC_OFF_IO_FILE },   /* getdents on a directory */
		{ ISC_WAIT_READ, ISC_FD_SOCKET, 'S', "", false, false, ISC_OFF_IO_NETWORK },
		{ ISC_WAIT_CONNECT, ISC_FD_SOCKET, 'S', "", false, false, ISC_OFF_IO_NETWORK },
		{ ISC_WAIT_POLL, ISC_FD_SOCKET, 'S', "", false, true, ISC_OFF_IO_NETWORK },
		{ ISC_WAIT_READ, ISC_FD_PIPE, 'S', "", false, false, ISC_OFF_IO_PIPE },
		{ ISC_WAIT_WRITE, ISC_FD_PIPE, 'S', "", false, false, ISC_OFF_IO_PIPE },
		{ ISC_WAIT_READ, ISC_FD_EVENTFD, 'S', "", false, false, ISC_OFF_THREAD_WAIT },
		{ ISC_WAIT_READ, ISC_FD_ANON, 'S', "", false, false, ISC_OFF_SLEEP },
		{ ISC_WAIT_POLL, ISC_FD_EPOLL, 'S', "", false, false, ISC_OFF_OTHER },
		{ ISC_WAIT_POLL, ISC_FD_NONE, 'S', "", false, false, ISC_OFF_OTHER },
		{ ISC_WAIT_FILE, ISC_FD_NONE, 'D', "", false, false, ISC_OFF_IO_FILE },
		{ ISC_WAIT_SLEEP, ISC_FD_NONE, 'S', "", false, false, ISC_OFF_SLEEP },
		{ ISC_WAIT_FUTEX, ISC_FD_NONE, 'S', "", false, false, ISC_OFF_THREAD_WAIT },
		{ ISC_WAIT_FUTEX, ISC_FD_NONE, 'S', "", true, true, ISC_OFF_GIL },
		{ ISC_WAIT_FUTEX, ISC_FD_NONE, 'S', "", false, true, ISC_OFF_THREAD_WAIT }, /* lock.acquire(): no timeout */
		{ ISC_WAIT_FUTEX, ISC_FD_NONE, 'S', "", true, false, ISC_OFF_THREAD_WAIT },  /* in a C call */
		{ ISC_WAIT_NO_SYSCALL, ISC_FD_NONE, 'D', "", false, true, ISC_OFF_PAGE_IN },
		{ ISC_WAIT_NO_SYSCALL, ISC_FD_NONE, 'S', "folio_wait_bit_common", false, true, ISC_OFF_PAGE_IN },
		{ ISC_WAIT_NO_SYSCALL, ISC_FD_NONE, 'S', "do_signal_stop", false, true, ISC_OFF_OTHER },
		{ ISC_WAIT_CHILD, ISC_FD_NONE, 'S', "", false, false, ISC_OFF_OTHER },
		{ ISC_WAIT_RUNNING, ISC_FD_NONE, 'D', "", false, false, ISC_OFF_OTHER },
		{ ISC_WAIT_UNKNOWN, ISC_FD_NONE, 'S', "", false, false, ISC_OFF_OTHER },
		{ 99, 99, 'S', "", false, false, ISC_OFF_OTHER },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		unsigned got = isc_off_reason_of(r[i].call, r[i].kind, r[i].state, r[i].wchan, strlen(r[i].wchan),
						 r[i].timed, r[i].in_python);
		ok(got == r[i].want, "call %u, fd kind %u, state %c%s%s %s: %s (got %s)", r[i].call, r[i].kind, r[i].state,
		   r[i].timed ? ", timed" : "", r[i].in_python ? ", in Python" : "", r[i].wchan,
		   isc_off_reason_name(r[i].want), isc_off_reason_name(got));
	}
	ok(isc_is_torch_op("torch.matmul", "torch") && isc_is_torch_op("Tensor.add", "torch._tensor") &&
	   isc_is_torch_op("linear", "torch._C._nn") && isc_is_torch_op("nms", "torchvision.ops") &&
	   isc_is_torch_op("aten::linear", ""), "torch ops: torch, torch.*, torchvision, Kineto's aten::");
	ok(!isc_is_torch_op("len", "builtins") && !isc_is_torch_op("list.append", "builtins") &&
	   !isc_is_torch_op("floor", "math") && !isc_is_torch_op("create_dynamic", "_imp") &&
	   !isc_is_torch_op("Random.random", "random") && !isc_is_torch_op("f", "") && !isc_is_torch_op("f", NULL),
	   "other C code: builtins, math, _imp, random, no module");
	static const char *const names[][2] = { { "pt_thread_3", "pt_thread" },     { "pt_thread_11", "pt_thread" },
						{ "python3", "python3" },           { "cuda-EvtHandlr", "cuda-EvtHandlr" },
						{ "ThreadPoolExecutor-0_1", "ThreadPoolExecutor" },
						{ "worker 12", "worker" },          { "42", "42" },
						{ "", "" } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char out[32];
		isc_pool_name(names[i][0], out, sizeof(out));
		ok(!strcmp(out, names[i][1]), "pool name of \"%s\": \"%s\" (got \"%s\")", names[i][0], names[i][1], out);
	}
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof(dir), "%s", argc > 1 ? argv[1] : "tests/data/proc");
	syscalls();
	fd_kinds();
	reasons();
	return tap_done();
}
