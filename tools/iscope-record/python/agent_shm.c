/*
 * agent_shm.c - the Python agent's shared memory and thread state: at
 * import, <INFERSCOPE_SESSION>/<pid>.shm created and mapped (layout from
 * the environment, lib/isc_shm.h); a slot claimed per recording thread at
 * its first event (named from threading, or its comm), ended at thread
 * exit; after fork() the child's own file, created at its first event;
 * at exit the process marked finished, and the file removed when the
 * recorder is gone.
 *
 *   import          agent_shm_attach: layout_init, shm_create
 *   first event     tls_get -> agent_tls_slow -> tls_claim: a slot,
 *                   THREAD_BEGIN (and CALIBRATION in slot 0)
 *   fork()          atfork_child: mapping dropped, slots stale (gen + 1);
 *                   the child's first event: agent_shm_attach_child
 *   thread exit     key_destructor -> thread_end: THREAD_END
 *   process exit    agent_shm_exit (exit_hook, or the destructor)
 */
#include "agent.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGENT_DEFAULT_SLOTS ISC_SHM_DEFAULT_SLOTS
#define AGENT_DEFAULT_RING_KB 1024
#define AGENT_DEFAULT_BIG ISC_SHM_BIG_RINGS /* slots with big rings when INFERSCOPE_BIG_RING_KB is set */
#define AGENT_DEFAULT_STR_KB 4096
#define AGENT_UNNAMED_EVENTS 256

__thread struct agent_tls agent_thread;
struct agent_state agent = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * Computes the layout from the environment (once per process tree): nslots
 * rings of INFERSCOPE_RING_KB, the first INFERSCOPE_BIG_RINGS of which
 * (default AGENT_DEFAULT_BIG, when INFERSCOPE_BIG_RING_KB is set) have
 * INFERSCOPE_BIG_RING_KB instead.  Sizes are rounded up to a power of two.
 */
static void layout_init(void)
{
	agent.nslots = isc_shm_env_u32("INFERSCOPE_SLOTS", AGENT_DEFAULT_SLOTS, 1, ISC_SHM_MAX_SLOTS);
	agent.ring_size = pow2_ceil(isc_shm_env_u32("INFERSCOPE_RING_KB", AGENT_DEFAULT_RING_KB, 4, 1u << 20)) * 1024u;
	uint32_t big_kb = isc_shm_env_u32("INFERSCOPE_BIG_RING_KB", 0, 0, 1u << 20);
	agent.big_ring_size = big_kb ? pow2_ceil(big_kb) * 1024u : 0;
	agent.nbig = 0;
	if (agent.big_ring_size > agent.ring_size)
		agent.nbig = isc_shm_env_u32("INFERSCOPE_BIG_RINGS", AGENT_DEFAULT_BIG, 0, agent.nslots);
	if (!agent.nbig)
		agent.big_ring_size = 0;
	agent.str_size = (uint64_t)isc_shm_env_u32("INFERSCOPE_STR_KB", AGENT_DEFAULT_STR_KB, 4, 1u << 20) * 1024u;
	agent.str_off = isc_shm_page_align(ISC_SHM_SLOTS_OFF + (uint64_t)agent.nslots * ISC_SHM_SLOT_SIZE);
	agent.ring_off = isc_shm_page_align(agent.str_off + agent.str_size);
	agent.file_size = agent.ring_off +
			  isc_shm_ring_offset(agent.nbig, agent.big_ring_size, agent.ring_size, agent.nslots);
}

/*
 * Creates and maps <session>/<pid>.shm and publishes its header.  On
 * failure writes the reason into err and leaves nothing behind.
 */
static int shm_create(pid_t ppid, char *err, size_t errlen)
{
	agent.pid = getpid();
	struct isc_shm_proc h = { .pid = (uint32_t)agent.pid, .ppid = (uint32_t)ppid, .file_size = agent.file_size,
				  .nslots = agent.nslots, .ring_size = agent.ring_size, .nbig = agent.nbig,
				  .big_ring_size = agent.big_ring_size, .str_off = agent.str_off, .str_size = agent.str_size,
				  .ring_off = agent.ring_off, .start_ts = now_ns() };
	void *base = isc_shm_create(agent.session, ".shm", &h, err, errlen);
	if (!base)
		return -1;
	struct isc_shm_proc *p = base;
	atomic_store_explicit(&p->state, ISC_PROC_RUNNING, memory_order_relaxed);
	__atomic_store_n(&p->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);

	agent.base = base;
	agent.proc = p;
	agent.str = (uint8_t *)base + agent.str_off;
	return 0;
}

static void report_attach_failure(const char *why)
{
	fprintf(stderr, "inferscope: cannot attach: %s\n", why);
}

/*
 * fork() child, still inside fork(): drop the parent's mapping and make
 * every thread-local slot stale.  The child creates its own file lazily at
 * its first event (with the GIL, outside fork), so fork+exec children
 * (subprocess) that never run Python code here leave no file behind.
 */
static void atfork_child(void)
{
	if (!agent.enabled)
		return;
	if (agent.base)
		munmap(agent.base, agent.file_size);
	agent.base = NULL;
	agent.proc = NULL;
	agent.str = NULL;
	agent.need_attach = 1;
	agent.exited = 0;
	pthread_mutex_init(&agent.lock, NULL);
	atomic_fetch_add_explicit(&agent.gen, 1, memory_order_relaxed);
}

/* First event in a fork child: create <pid>.shm.  Caller holds the GIL. */
void agent_shm_attach_child(void)
{
	char err[PATH_MAX + 128];
	pid_t parent = agent.pid;

	agent.need_attach = 0;
	if (shm_create(parent, err, sizeof(err)) < 0) {
		agent.enabled = 0;
		report_attach_failure(err);
		return;
	}
	agent_intern_reset();
}

/* ---- thread slots -------------------------------------------------- */

static void read_comm(struct agent_tls *t, pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, t->name, AGENT_NAME_MAX);
	close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && t->name[n - 1] == '\n')
		n--;
	t->name[n] = 0;
}

void agent_slot_set_name(struct isc_shm_slot *s, const char *name)
{
	size_t n = strnlen(name, sizeof(s->name) - 1);
	while (n > 0 && name[n] && ((uint8_t)name[n] & 0xC0) == 0x80) /* whole characters */
		n--;
	memset(s->name, 0, sizeof(s->name));
	memcpy(s->name, name, n);
}

/*
 * sys.monitoring mode: the name threading gave the calling thread, from
 * threading._active[get_ident()]._name (no Python code runs), into t.
 * 1 when found.  Caller holds the GIL.
 */
static int thread_name_from_threading(struct agent_tls *t)
{
	int found = 0;
	if (!agent_threading_active)
		return 0;
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *key = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
	PyObject *th = key ? PyDict_GetItem(agent_threading_active, key) : NULL; /* borrowed */
	PyObject *name = th ? agent_getattr_str(th, "_name") : NULL;
	if (name) {
		agent_tls_set_name(t, name);
		found = 1;
	}
	Py_DecRef(name);
	Py_DecRef(key);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return found;
}

/* Claims a fresh slot for the calling thread (attaching first in a fork
 * child); leaves t->slot NULL when recording is off or slots ran out. */
static void tls_claim(struct agent_tls *t)
{
	t->slot = NULL;
	t->lost = 0;
	t->skip_c = 0;
	if (agent.enabled && agent.need_attach)
		agent_shm_attach_child();
	t->gen = atomic_load_explicit(&agent.gen, memory_order_relaxed);
	if (!agent.base || agent.exited)
		return;
	/* sys.monitoring sees a thread from its first event, inside threading's
	 * bootstrap before the thread is registered under its name; the
	 * profile hook (threading.setprofile) only after.  Wait for the name,
	 * not recording, for a few events; a thread threading does not know
	 * (started from C) gets its comm then. */
	t->unnamed = 0;
	if (!t->name[0] && !thread_name_from_threading(t) && ++t->unnamed_events < AGENT_UNNAMED_EVENTS) {
		t->unnamed = 1;
		return;
	}

	struct isc_shm_proc *p = agent.proc;
	uint32_t idx = atomic_load_explicit(&p->nslots_used, memory_order_relaxed);
	do {
		if (idx >= agent.nslots) {
			t->lost = 1;
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&p->nslots_used, &idx, idx + 1,
							memory_order_relaxed, memory_order_relaxed));

	struct isc_shm_slot *s = isc_shm_slot_at(agent.base, idx);
	pid_t tid = gettid();
	if (!t->name[0])
		read_comm(t, tid);
	atomic_store_explicit(&s->tid, (uint32_t)tid, memory_order_relaxed);
	agent_slot_set_name(s, t->name);
	atomic_store_explicit(&s->state, ISC_SLOT_ACTIVE, memory_order_release);
	t->slot = s;
	t->ring = isc_shm_ring_at(agent.base, p, idx);
	t->ring_size = isc_shm_ring_len(agent.nbig, agent.big_ring_size, agent.ring_size, idx);
	t->idx = idx;
	pthread_setspecific(agent.key, (void *)1);
	emit(t, ISC_REC_THREAD_BEGIN, 0, 0, 0, t->name, (unsigned)strlen(t->name));
	if (idx == 0)
		agent_calib_emit(t);
}

struct agent_tls *agent_tls_slow(struct agent_tls *t)
{
	if (t->gen != atomic_load_explicit(&agent.gen, memory_order_relaxed) || t->unnamed)
		tls_claim(t);
	if (t->slot)
		return t;
	if (t->lost && agent.proc)
		atomic_fetch_add_explicit(&agent.proc->slot_dropped, 1, memory_order_relaxed);
	return NULL;
}

/* Ends the thread's slot.  Runs without the GIL from the key destructor:
 * touches only the shared file. */
static void thread_end(struct agent_tls *t)
{
	if (!t->slot || t->gen != atomic_load_explicit(&agent.gen, memory_order_relaxed) || !agent.base)
		return;
	emit(t, ISC_REC_THREAD_END, 0, 0, 0, NULL, 0);
	atomic_store_explicit(&t->slot->state, ISC_SLOT_EXITED, memory_order_release);
	t->slot = NULL;
}

static void key_destructor(void *unused)
{
	(void)unused;
	thread_end(&agent_thread);
}

void agent_tls_set_name(struct agent_tls *t, PyObject *name)
{
	PyObject *b = agent_utf8_of(name);
	const char *p;
	size_t n;
	agent_bytes_view(b, &p, &n);
	if (n > AGENT_NAME_MAX) {
		n = AGENT_NAME_MAX;
		while (n > 0 && ((uint8_t)p[n] & 0xC0) == 0x80) /* whole characters */
			n--;
	}
	memcpy(t->name, p, n);
	t->name[n] = 0;
	Py_DecRef(b);
}

/* ---- attach at import, finish at exit ------------------------------ */

/* Attaches when INFERSCOPE_SESSION names a directory and INFERSCOPE_ENABLE
 * is not "0"; any failure leaves the module importable and disabled. */
void agent_shm_attach(void)
{
	const char *session = getenv("INFERSCOPE_SESSION");
	const char *enable = getenv("INFERSCOPE_ENABLE");
	char err[PATH_MAX + 128];
	struct stat st;

	if (!session || !*session || (enable && strcmp(enable, "0") == 0))
		return;
	if (strlen(session) >= sizeof(agent.session)) {
		report_attach_failure("INFERSCOPE_SESSION is too long");
		return;
	}
	if (lstat(session, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, sizeof(err), "%s: not a directory", session);
		report_attach_failure(err);
		return;
	}
	/* our file goes in there: only into a directory nobody else can write */
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, sizeof(err), "%s: not a private directory (owner %u, mode %04o; want ours, 0700)",
			 session, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		report_attach_failure(err);
		return;
	}
	strcpy(agent.session, session);
	const char *mode = getenv("INFERSCOPE_PYTHON_MODE");
	agent.python_sample = mode && !strcmp(mode, "sample");
	layout_init();
	if (pthread_key_create(&agent.key, key_destructor) != 0 ||
	    pthread_atfork(NULL, NULL, atfork_child) != 0) {
		report_attach_failure("cannot register thread and fork handlers");
		return;
	}
	if (shm_create(getppid(), err, sizeof(err)) < 0) {
		report_attach_failure(err);
		return;
	}
	agent.next_id = 1;
	agent.enabled = 1;
	atomic_store_explicit(&agent.gen, 1, memory_order_relaxed);
}

/* At exit: our file goes when the recorder is gone (isc_shm.h). */
static void remove_if_orphaned(void)
{
	char name[32];
	snprintf(name, sizeof(name), "%d.shm", (int)agent.pid);
	isc_shm_remove_if_orphaned(agent.session, name);
}

/* Marks the process finished (Python atexit, runs late in finalization):
 * ends the calling thread's slot and stops recording it. */
void agent_shm_exit(void)
{
	if (!agent.base || agent.exited || agent.pid != getpid())
		return;
	agent.exited = 1;
	thread_end(&agent_thread);
	atomic_store_explicit(&agent.proc->state, ISC_PROC_EXITED, memory_order_release);
	remove_if_orphaned();
}

/* Fallback when Python's atexit did not run (fatal error paths). */
__attribute__((destructor)) static void agent_fini(void)
{
	agent_shm_exit();
}
