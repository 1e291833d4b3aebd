/*
 * memcg.c - iscope-record --memory-limit: the workload runs in a memory
 * cgroup of its own, a child of the recorder's, so the kernel's OOM
 * killer stops it at the limit as it would in a container; and, with or
 * without it, whether a SIGKILL death was the OOM killer's.
 *
 *   v2: <mount>/<own path>/inferscope-<pid>/  memory.max, memory.swap.max,
 *       memory.events "oom_kill N"
 *   v1: <memory mount>/<own path>/inferscope-<pid>/  memory.limit_in_bytes,
 *       memory.memsw.limit_in_bytes, memory.oom_control "oom_kill N"
 *
 * The child joins by writing its pid to cgroup.procs between fork and
 * exec (record.c); procs_fd is opened here, before the fork, so that a
 * refusal is reported before the workload starts.
 *
 * v2's "no internal processes" rule: a cgroup other than the root can
 * hand a controller to its children (+memory in cgroup.subtree_control)
 * only while it has no processes of its own, and the recorder is one.
 * When the write fails with EBUSY and the recorder is the only process of
 * its cgroup (systemd-run --scope, a delegated cgroup, a container's),
 * the recorder moves itself into a leaf child, inferscope-PID-recorder,
 * and writes +memory again:
 *
 *   own/                         subtree_control +memory (by us)
 *     inferscope-PID-recorder/   the recorder
 *     inferscope-PID/            the workload, memory.max
 *
 * destroy undoes it in reverse.  With other processes in its cgroup (a
 * login session's scope) the recorder cannot, and says so.  Not run on a
 * v2 machine (ours have v1): the v2 path follows the kernel's
 * Documentation/admin-guide/cgroup-v2.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isc.h"
#include "memcg.h"

#define V2_ROOT "/sys/fs/cgroup"
#define V1_ROOT "/sys/fs/cgroup/memory"

/* The first line of path into buf (newline dropped); false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The value of "key N" in a key-value file (memory.events, oom_control, vmstat). */
static bool read_key(const char *path, const char *key, uint64_t *v)
{
	char line[256];
	size_t kl = strlen(key);
	bool found = false;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ' ')
			found = sscanf(line + kl + 1, "%llu", (unsigned long long *)v) == 1;
	fclose(f);
	return found;
}

static int write_str(const char *dir, const char *file, const char *s)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n < 0 ? errno : 0;
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -(e ? e : EIO);
}

/* Whether the space-separated list of path's first line holds word. */
static bool has_word(const char *path, const char *word)
{
	char line[1024];
	size_t n = strlen(word);
	if (!read_line(path, line, sizeof(line)))
		return false;
	for (char *p = line; (p = strstr(p, word)); p += n)
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

/* Whether the cgroup.procs of dir lists this process and no other; false when unreadable. */
static bool only_me(const char *dir)
{
	char path[4200];
	long pid;
	bool me = false, other = false;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fscanf(f, "%ld", &pid) == 1)
		*(pid == (long)getpid() ? &me : &other) = true;
	fclose(f);
	return me && !other;
}

/* Moves this process into the cgroup dir.  0 or a negative errno. */
static int move_me(const char *dir)
{
	char num[32];
	snprintf(num, sizeof(num), "%d", (int)getpid());
	return write_str(dir, "cgroup.procs", num);
}

/*
 * v2: makes own (the recorder's cgroup directory) hand the memory
 * controller to its children, moving the recorder into a leaf when it is
 * own's only process.  0, or a negative errno with the reason pushed.
 */
static int v2_delegate(struct isc_memcg *m)
{
	char path[4200];
	int rc;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", m->own);
	if (!has_word(path, "memory")) {
		isc_err_push("Cannot limit memory: cgroup v2 %s has no memory controller (its parent does not hand it "
			     "down: %s)", m->own, path);
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", m->own);
	if (has_word(path, "memory"))
		return 0; /* already handed down (then own has no process: the root) */
	rc = write_str(m->own, "cgroup.subtree_control", "+memory");
	if (rc == -EBUSY && only_me(m->own)) {
		snprintf(m->leaf, sizeof(m->leaf), "%s/inferscope-%d-recorder", m->own, (int)getpid());
		if (mkdir(m->leaf, 0755) && errno != EEXIST) {
			rc = -errno;
			m->leaf[0] = '\0';
		} else if ((rc = move_me(m->leaf))) {
			rmdir(m->leaf);
			m->leaf[0] = '\0';
		} else {
			rc = write_str(m->own, "cgroup.subtree_control", "+memory");
		}
	}
	if (rc) {
		isc_err_push("Cannot limit memory: cgroup v2 %s cannot hand the memory controller to a child (+memory "
			     "in its cgroup.subtree_control: %s)%s", m->own, strerror(-rc),
			     rc == -EBUSY ? ": it holds other processes than this recorder; start iscope-record in a "
					    "cgroup of its own (systemd-run --scope -p Delegate=yes iscope-record ...)"
					  : "");
		return rc;
	}
	m->enabled = true;
	return 0;
}

/* v2: gives own back as it was before v2_delegate (best effort). */
static void v2_undo(struct isc_memcg *m)
{
	if (m->enabled)
		(void)write_str(m->own, "cgroup.subtree_control", "-memory");
	m->enabled = false;
	if (m->leaf[0] && !move_me(m->own))
		rmdir(m->leaf);
	m->leaf[0] = '\0';
}

/* Our own cgroup path in hierarchy v (2: "0::", 1: the line naming memory) from /proc/self/cgroup. */
static bool own_path(int v, char *buf, size_t len)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1;
		bool mine = v == 2 ? !strcmp(line, "0") && !*ctl : strstr(ctl, "memory") != NULL;
		if (mine && strlen(c2 + 1) < len) {
			snprintf(buf, len, "%s", c2 + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int isc_memcg_create(struct isc_memcg *m, uint64_t limit)
{
	char ctl[512] = "", own[2048], num[32];
	int rc;
	memset(m, 0, sizeof(*m));
	m->procs_fd = -1;
	m->limit = limit;
	if (read_line(V2_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) && strstr(ctl, "memory") &&
	    own_path(2, own, sizeof(own)))
		m->version = 2;
	else if (!access(V1_ROOT "/memory.limit_in_bytes", F_OK) && own_path(1, own, sizeof(own)))
		m->version = 1;
	if (!m->version) {
		isc_err_push("Cannot limit memory: no memory cgroup controller (neither cgroup v2 with memory at " V2_ROOT
			     " nor v1 at " V1_ROOT ")");
		return -ENOTSUP;
	}
	const char *root = m->version == 2 ? V2_ROOT : V1_ROOT;
	size_t ol = strlen(own);
	if (ol && own[ol - 1] == '/')
		own[--ol] = '\0';
	snprintf(m->own, sizeof(m->own), "%s%s", root, own);
	snprintf(m->dir, sizeof(m->dir), "%s/inferscope-%d", m->own, (int)getpid());
	if (m->version == 2 && (rc = v2_delegate(m))) {
		m->version = 0;
		return rc;
	}
	if (mkdir(m->dir, 0755) && errno != EEXIST) {
		rc = -errno;
		isc_err_push("Cannot limit memory: cannot create cgroup v%d %s: %s (run as root, or in a cgroup you may "
			     "write)", m->version, m->dir, strerror(-rc));
		v2_undo(m);
		m->version = 0;
		return rc;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)limit);
	rc = write_str(m->dir, m->version == 2 ? "memory.max" : "memory.limit_in_bytes", num);
	if (rc) {
		isc_err_push("Cannot limit memory: cannot set the limit of cgroup v%d %s: %s", m->version, m->dir,
			     strerror(-rc));
		goto fail;
	}
	/* no escape into swap; kernels without swap accounting lack the file */
	(void)write_str(m->dir, m->version == 2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes",
			m->version == 2 ? "0" : num);
	char procs[4200];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", m->dir);
	if ((m->procs_fd = open(procs, O_WRONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		isc_err_push("Cannot limit memory: cannot open %s: %s", procs, strerror(-rc));
		goto fail;
	}
	isc_memcg_baseline(m);
	return 0;
fail:
	if (m->procs_fd >= 0)
		close(m->procs_fd);
	m->procs_fd = -1;
	rmdir(m->dir);
	v2_undo(m);
	m->version = 0;
	return rc;
}

/* The cgroup's oom_kill count. */
static bool cg_kills(const struct isc_memcg *m, uint64_t *v)
{
	char path[4200];
	if (!m->version)
		return false;
	snprintf(path, sizeof(path), "%s/%s", m->dir, m->version == 2 ? "memory.events" : "memory.oom_control");
	return read_key(path, "oom_kill", v);
}

void isc_memcg_baseline(struct isc_memcg *m)
{
	uint64_t v;
	if (cg_kills(m, &v))
		m->cg_kills = v;
	m->have_vm = read_key("/proc/vmstat", "oom_kill", &m->vm_kills);
}

bool isc_memcg_oom_killed(struct isc_memcg *m, char *why, size_t len)
{
	uint64_t cg, vm;
	bool have_cg = cg_kills(m, &cg), have_vm = read_key("/proc/vmstat", "oom_kill", &vm);
	bool hit = false;
	if (have_cg && cg > m->cg_kills) {
		snprintf(why, len, "killed by the kernel's OOM killer: its memory cgroup (v%d, limit %llu bytes) counted "
			 "oom_kill %llu -> %llu", m->version, (unsigned long long)m->limit,
			 (unsigned long long)m->cg_kills, (unsigned long long)cg);
		hit = true;
	} else if (!have_cg && have_vm && m->have_vm && vm > m->vm_kills) {
		snprintf(why, len, "killed by SIGKILL while the kernel's OOM killer counted a kill (/proc/vmstat "
			 "oom_kill %llu -> %llu, a machine-wide count)", (unsigned long long)m->vm_kills,
			 (unsigned long long)vm);
		hit = true;
	}
	if (have_cg)
		m->cg_kills = cg;
	if (have_vm) {
		m->vm_kills = vm;
		m->have_vm = true;
	}
	return hit;
}

void isc_memcg_destroy(struct isc_memcg *m)
{
	if (m->procs_fd >= 0)
		close(m->procs_fd);
	m->procs_fd = -1;
	if (m->version)
		rmdir(m->dir);
	v2_undo(m);
	m->version = 0;
}
