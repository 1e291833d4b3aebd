/*
 * proc_wait.c - what a blocked thread waits in, from /proc: the parsing and
 * classification half of the sampler's THREAD_WAIT record (formats/trace.md
 * §6.2), kept apart from the file reading so the unit tests can feed it
 * fixtures (tests/data/proc/).
 *
 *   /proc/PID/task/TID/syscall   "running"               -> ISC_WAIT_RUNNING
 *                                "-1 SP PC"              -> ISC_WAIT_NO_SYSCALL
 *                                "NR A0 A1 A2 A3 A4 A5 SP PC" -> family of NR
 *   readlink /proc/PID/fd/N      "pipe:[7]" "socket:[9]" "anon_inode:[eventfd]" "/path"
 *
 * System call numbers differ between architectures; the table is built
 * from <sys/syscall.h>, so it is the recording machine's, and the trace
 * carries the portable family beside the raw number.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "isc_format.h"
#include "sampler.h"

int isc_proc_syscall_parse(const char *text, struct isc_proc_syscall *out)
{
	memset(out, 0, sizeof(*out));
	out->nr = -1;
	if (!strncmp(text, "running", 7)) {
		out->call = ISC_WAIT_RUNNING;
		return 0;
	}
	char *end;
	long nr = strtol(text, &end, 10);
	if (end == text || (*end != ' ' && *end != '\n' && *end))
		return -EBADMSG;
	if (nr < 0) {
		out->call = ISC_WAIT_NO_SYSCALL;
		return 0;
	}
	/* six arguments follow (then sp and pc) in hex with a 0x prefix */
	const char *p = end;
	for (int i = 0; i < 6; i++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return -EBADMSG;
		out->arg[i] = strtoull(p, &end, 16);
		if (end == p)
			return -EBADMSG;
		p = end;
	}
	out->nr = nr;
	out->call = isc_wait_call_of(nr);
	/* poll or select on no descriptor at all is a sleep (select(0, ...) in old Pythons) */
	int which = out->call == ISC_WAIT_POLL ? isc_wait_fd_arg(nr, out->call) : ISC_FDARG_NONE;
	if ((which == ISC_FDARG_POLLFDS && out->arg[1] == 0) || (which == ISC_FDARG_NFDS && out->arg[0] == 0))
		out->call = ISC_WAIT_SLEEP;
	return 0;
}

#define C(sys, family) case sys: return family

uint8_t isc_wait_call_of(long nr)
{
	switch (nr) {
#ifdef SYS_read
	C(SYS_read, ISC_WAIT_READ);
#endif
#ifdef SYS_readv
	C(SYS_readv, ISC_WAIT_READ);
#endif
#ifdef SYS_pread64
	C(SYS_pread64, ISC_WAIT_READ);
#endif
#ifdef SYS_preadv
	C(SYS_preadv, ISC_WAIT_READ);
#endif
#ifdef SYS_preadv2
	C(SYS_preadv2, ISC_WAIT_READ);
#endif
#ifdef SYS_recvfrom
	C(SYS_recvfrom, ISC_WAIT_READ);
#endif
#ifdef SYS_recvmsg
	C(SYS_recvmsg, ISC_WAIT_READ);
#endif
#ifdef SYS_recvmmsg
	C(SYS_recvmmsg, ISC_WAIT_READ);
#endif
#ifdef SYS_write
	C(SYS_write, ISC_WAIT_WRITE);
#endif
#ifdef SYS_writev
	C(SYS_writev, ISC_WAIT_WRITE);
#endif
#ifdef SYS_pwrite64
	C(SYS_pwrite64, ISC_WAIT_WRITE);
#endif
#ifdef SYS_pwritev
	C(SYS_pwritev, ISC_WAIT_WRITE);
#endif
#ifdef SYS_pwritev2
	C(SYS_pwritev2, ISC_WAIT_WRITE);
#endif
#ifdef SYS_sendto
	C(SYS_sendto, ISC_WAIT_WRITE);
#endif
#ifdef SYS_sendmsg
	C(SYS_sendmsg, ISC_WAIT_WRITE);
#endif
#ifdef SYS_sendmmsg
	C(SYS_sendmmsg, ISC_WAIT_WRITE);
#endif
#ifdef SYS_sendfile
	C(SYS_sendfile, ISC_WAIT_WRITE);
#endif
#ifdef SYS_splice
	C(SYS_splice, ISC_WAIT_WRITE);
#endif
#ifdef SYS_poll
	C(SYS_poll, ISC_WAIT_POLL);
#endif
#ifdef SYS_ppoll
	C(SYS_ppoll, ISC_WAIT_POLL);
#endif
#ifdef SYS_select
	C(SYS_select, ISC_WAIT_POLL);
#endif
#ifdef SYS_pselect6
	C(SYS_pselect6, ISC_WAIT_POLL);
#endif
#ifdef SYS_epoll_wait
	C(SYS_epoll_wait, ISC_WAIT_POLL);
#endif
#ifdef SYS_epoll_pwait
	C(SYS_epoll_pwait, ISC_WAIT_POLL);
#endif
#ifdef SYS_epoll_pwait2
	C(SYS_epoll_pwait2, ISC_WAIT_POLL);
#endif
#ifdef SYS_futex
	C(SYS_futex, ISC_WAIT_FUTEX);
#endif
#ifdef SYS_futex_waitv
	C(SYS_futex_waitv, ISC_WAIT_FUTEX);
#endif
#ifdef SYS_nanosleep
	C(SYS_nanosleep, ISC_WAIT_SLEEP);
#endif
#ifdef SYS_clock_nanosleep
	C(SYS_clock_nanosleep, ISC_WAIT_SLEEP);
#endif
#ifdef SYS_pause
	C(SYS_pause, ISC_WAIT_SLEEP);
#endif
#ifdef SYS_accept
	C(SYS_accept, ISC_WAIT_CONNECT);
#endif
#ifdef SYS_accept4
	C(SYS_accept4, ISC_WAIT_CONNECT);
#endif
#ifdef SYS_connect
	C(SYS_connect, ISC_WAIT_CONNECT);
#endif
#ifdef SYS_wait4
	C(SYS_wait4, ISC_WAIT_CHILD);
#endif
#ifdef SYS_waitid
	C(SYS_waitid, ISC_WAIT_CHILD);
#endif
#ifdef SYS_open
	C(SYS_open, ISC_WAIT_FILE);
#endif
#ifdef SYS_openat
	C(SYS_openat, ISC_WAIT_FILE);
#endif
#ifdef SYS_fsync
	C(SYS_fsync, ISC_WAIT_FILE);
#endif
#ifdef SYS_fdatasync
	C(SYS_fdatasync, ISC_WAIT_FILE);
#endif
#ifdef SYS_sync_file_range
	C(SYS_sync_file_range, ISC_WAIT_FILE);
#endif
#ifdef SYS_fallocate
	C(SYS_fallocate, ISC_WAIT_FILE);
#endif
#ifdef SYS_msync
	C(SYS_msync, ISC_WAIT_FILE);
#endif
#ifdef SYS_io_getevents
	C(SYS_io_getevents, ISC_WAIT_FILE);
#endif
#ifdef SYS_io_pgetevents
	C(SYS_io_pgetevents, ISC_WAIT_FILE);
#endif
#ifdef SYS_io_uring_enter
	C(SYS_io_uring_enter, ISC_WAIT_FILE);
#endif
	default:
		return ISC_WAIT_OTHER;
	}
}

#undef C

int isc_wait_fd_arg(long nr, uint8_t call)
{
	switch (call) {
	case ISC_WAIT_READ:
	case ISC_WAIT_WRITE:
	case ISC_WAIT_CONNECT:
		break;
	case ISC_WAIT_POLL:
#ifdef SYS_poll
		if (nr == SYS_poll)
			return ISC_FDARG_POLLFDS;
#endif
#ifdef SYS_ppoll
		if (nr == SYS_ppoll)
			return ISC_FDARG_POLLFDS;
#endif
#ifdef SYS_select
		if (nr == SYS_select)
			return ISC_FDARG_NFDS;
#endif
#ifdef SYS_pselect6
		if (nr == SYS_pselect6)
			return ISC_FDARG_NFDS;
#endif
		return 0; /* epoll_wait(epfd, ...) */
	case ISC_WAIT_FILE:
#ifdef SYS_open
		if (nr == SYS_open)
			return ISC_FDARG_NONE;
#endif
#ifdef SYS_openat
		if (nr == SYS_openat)
			return ISC_FDARG_NONE; /* a directory fd, not what it opens */
#endif
#ifdef SYS_msync
		if (nr == SYS_msync)
			return ISC_FDARG_NONE;
#endif
		break;
	default:
		return ISC_FDARG_NONE;
	}
#ifdef SYS_sendfile
	if (nr == SYS_sendfile)
		return 1; /* sendfile(out, in, ...): the input is where it waits, mostly */
#endif
	return 0;
}

uint8_t isc_fd_kind_of_link(const char *target, unsigned mode)
{
	if (!strncmp(target, "pipe:", 5))
		return ISC_FD_PIPE;
	if (!strncmp(target, "socket:", 7))
		return ISC_FD_SOCKET;
	if (!strncmp(target, "anon_inode:", 11)) {
		const char *k = target + 11;
		if (!strcmp(k, "[eventfd]") || !strcmp(k, "eventfd"))
			return ISC_FD_EVENTFD;
		if (!strcmp(k, "[eventpoll]") || !strcmp(k, "eventpoll"))
			return ISC_FD_EPOLL;
		return ISC_FD_ANON;
	}
	if (target[0] != '/')
		return ISC_FD_OTHER; /* "net:[...]", "mnt:[...]", ... */
	switch (mode & S_IFMT) {
	case S_IFREG: return ISC_FD_FILE;
	case S_IFDIR: return ISC_FD_DIR;
	case S_IFIFO: return ISC_FD_PIPE;
	case S_IFSOCK: return ISC_FD_SOCKET;
	case S_IFCHR: return ISC_FD_CHARDEV;
	case S_IFBLK: return ISC_FD_BLOCKDEV;
	case 0: /* no stat: judge by the path */
		if (!strncmp(target, "/dev/", 5) && strncmp(target, "/dev/shm/", 9))
			return ISC_FD_CHARDEV;
		return ISC_FD_FILE;
	default:
		return ISC_FD_OTHER;
	}
}
