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
	snprintf(m->dir, sizeof(m->dir), "%s%s%sinferscope-%d", root, own, own[strlen(own) - 1] == '/' ? "" : "/",
		 (int)getpid());
	if (m->version == 2) { /* the parent must hand the memory controller down */
		char parent[4200];
		snprintf(parent, sizeof(parent), "%s%s", root, own);
		(void)write_str(parent, "cgroup.subtree_control", "+memory");
	}
	if (mkdir(m->dir, 0755) && errno != EEXIST) {
		rc = -errno;
		isc_err_push("Cannot limit memory: cannot create cgroup v%d %s: %s (run as root, or in a cgroup you may "
			     "write)", m->version, m->dir, strerror(-rc));
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
	rmdir(m->dir);
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
	m->version = 0;
}
