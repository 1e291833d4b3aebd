/*
 * analyze_wait.c - why a thread was off-CPU, and thread pools by name
 * (analyze_wait.h).
 *
 *   call family (THREAD_WAIT)      descriptor kind            reason
 *   read/write/poll/connect/file   file, dir, devices         io_file
 *                                  socket                     io_network
 *                                  pipe or FIFO               io_pipe
 *                                  eventfd                    thread_wait
 *                                  timerfd, signalfd, ...     sleep
 *   file (fsync, openat, aio)      -                          io_file
 *   sleep (nanosleep, poll on none) -                         sleep
 *   futex with a timeout           in Python code             gil
 *                                  on the GIL's word (analyze.c gil_word)  gil
 *   other futex waits, or in a C call                         thread_wait
 *   no system call, state D or a fault in wchan               page_in
 *   anything else, unknown, running again, child              other
 */
#include <string.h>

#include "isc_format.h"
#include "analyze_wait.h"

const char *isc_off_reason_name(unsigned r)
{
	static const char *const names[ISC_OFF_N] = { "io_file",     "io_network", "io_pipe", "sleep",
						      "thread_wait", "gil",        "page_in", "other" };
	return r < ISC_OFF_N ? names[r] : "other";
}

/* wchan of a thread stopped in a page fault: filemap_fault, do_read_fault, folio_wait_bit_common, ... */
static bool faulting(const char *wchan, size_t n)
{
	static const char *const words[] = { "fault", "folio", "page", "swap", "readahead" };
	char w[64];
	if (n >= sizeof(w))
		n = sizeof(w) - 1;
	memcpy(w, wchan, n);
	w[n] = '\0';
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(w, words[i]))
			return true;
	return false;
}

static unsigned by_descriptor(uint64_t kind)
{
	switch (kind) {
	case ISC_FD_FILE:
	case ISC_FD_DIR:
	case ISC_FD_CHARDEV:
	case ISC_FD_BLOCKDEV: return ISC_OFF_IO_FILE;
	case ISC_FD_SOCKET: return ISC_OFF_IO_NETWORK;
	case ISC_FD_PIPE: return ISC_OFF_IO_PIPE;
	case ISC_FD_EVENTFD: return ISC_OFF_THREAD_WAIT;
	case ISC_FD_ANON: return ISC_OFF_SLEEP; /* timerfd mostly */
	default: return ISC_OFF_OTHER;           /* epoll (what it watches is unknown), none */
	}
}

unsigned isc_off_reason_of(uint64_t call, uint64_t fd_kind, char state, const char *wchan, size_t nwchan,
			   bool timed, bool in_python)
{
	switch (call) {
	case ISC_WAIT_READ:
	case ISC_WAIT_WRITE:
	case ISC_WAIT_POLL:
	case ISC_WAIT_CONNECT: return by_descriptor(fd_kind);
	case ISC_WAIT_FILE: return ISC_OFF_IO_FILE;
	case ISC_WAIT_SLEEP: return ISC_OFF_SLEEP;
	case ISC_WAIT_FUTEX: return in_python && timed ? ISC_OFF_GIL : ISC_OFF_THREAD_WAIT;
	case ISC_WAIT_NO_SYSCALL:
		return state == 'D' || faulting(wchan, nwchan) ? ISC_OFF_PAGE_IN : ISC_OFF_OTHER;
	default: return ISC_OFF_OTHER;
	}
}

static bool separator(char c)
{
	return c == '-' || c == '_' || c == ':' || c == '#' || c == ' ' || c == '.' || c == '/';
}

void isc_pool_name(const char *name, char *out, size_t cap)
{
	if (!cap)
		return;
	size_t n = strlen(name);
	for (;;) {
		size_t d = n;
		while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
			d--;
		if (d == n || d == 0 || !separator(name[d - 1]) || d == 1)
			break;
		n = d - 1;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, name, n);
	out[n] = '\0';
}
