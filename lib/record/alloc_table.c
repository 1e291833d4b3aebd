/*
 * alloc_table.c - the recorder's side of allocation sampling
 * (libiscope-alloc.so, lib/isc_alloc.h): whether the workload's command
 * can be sampled at all (a static executable cannot: LD_PRELOAD does not
 * apply), and the live-site table a process's shim keeps in its
 * <pid>.alloc.shm, read once the process has died and written as
 * ALLOC_SITE records and one ALLOC_INFO (phase end), so that a SIGKILL
 * (the OOM killer) loses nothing of it.
 *
 * The table is untrusted like the rest of the file (record.c's top
 * comment): its header is copied and checked before any entry is read,
 * each entry is copied and checked before it is written, and a table that
 * does not check out is a stated gap (a WARNING, code 15), never a crash.
 * Runs under the drain's SIGBUS guard (shm_guard in drain.c).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isc_alloc.h"
#include "isc_log.h"
#include "recorder.h"

#define SITES_CHUNK (1u << 20)

/*
 * 1 when the command (argv[0], looked up in PATH like execvp) is an ELF
 * executable without a program interpreter (PT_INTERP): a static binary,
 * which LD_PRELOAD cannot enter.  0 otherwise (dynamic, a script, not
 * found, unreadable).
 */
int isc_alloc_static_exe(const char *cmd)
{
	char path[PATH_MAX];
	const char *found = isc_rec_find_command(cmd, path, sizeof(path));
	int fd = found ? open(found, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
	Elf64_Ehdr eh;
	int st = 0;
	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 4096) {
		st = 1;
		for (unsigned i = 0; i < eh.e_phnum && st; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != (ssize_t)sizeof(ph))
				st = 0; /* unreadable: say nothing */
			else if (ph.p_type == PT_INTERP)
				st = 0;
		}
	}
	close(fd);
	return st;
}

/* One WARNING (code 15) for pid's table: gap stated on stderr and in the trace. */
static void table_warning(struct recorder *r, struct rec_proc *p, uint64_t ts, const char *why)
{
	char msg[320];
	snprintf(msg, sizeof(msg), "the allocation site table of pid %d %s", (int)p->pid, why);
	isc_log(ISC_LOG_WARN, "%s", msg);
	r->res->warnings++;
	struct isc_buf b = { 0 }, rec = { 0 };
	uint64_t last = ts;
	int rc = isc_buf_put_varint(&b, (uint64_t)p->pid);
	rc |= isc_buf_put_varint(&b, ISC_WARN_ALLOC_TABLE);
	rc |= isc_buf_put(&b, msg, strlen(msg));
	rc |= isc_buf_put_record(&rec, ISC_REC_WARNING, ts, &last, b.data, b.len);
	if (!rc)
		isc_rec_emit(r, ISC_CHUNK_SAMPLES, 0, 0, ts, 0, rec.data, rec.len, true);
	isc_buf_free(&b);
	isc_buf_free(&rec);
}

/* Whether a copied entry holds numbers a shim could have written. */
static bool site_ok(const struct isc_alloc_site *s)
{
	if (s->depth > ISC_ALLOC_MAX_DEPTH || s->free_count > s->alloc_count || s->free_bytes > s->alloc_bytes ||
	    !(s->live_var >= 0 && s->live_var < 1e38))
		return false;
	for (uint32_t i = 0; i < s->depth; i++)
		if (s->frames[2 * i] >= ISC_STRING_ID_LIMIT)
			return false;
	return true;
}

static uint64_t age(uint64_t at, uint64_t ts)
{
	return ts && ts <= at ? at - ts : 0;
}

/*
 * The site table of an exited process p (its <pid>.alloc.shm), once:
 * ALLOC_SITE records for every entry in use, then ALLOC_INFO phase end
 * with the shim's counters, in ALLOC chunks (pid, tid 0) with the time
 * the recorder saw the process die.  Runs under shm_guard(): copies out
 * of the mapping, then encodes.
 */
void isc_alloc_sites_write(struct recorder *r, struct rec_proc *p)
{
	const struct isc_alloc_hdr *sh = (const void *)(p->map + ISC_ALLOC_HDR_OFF);
	struct isc_alloc_hdr h;
	/* when it died; a process that was not seen dying (it was not our
	 * child and ended as the recording did): its last record's time */
	uint64_t ts = p->exit_ts;
	for (uint32_t i = 0; !ts && p->streams && i < p->nslots; i++)
		if (p->streams[i].ts > ts)
			ts = p->streams[i].ts;
	if (!ts)
		ts = isc_now_ns();
	p->sites_done = true;
	memcpy(&h, sh, sizeof(h));
	uint64_t rings_end = p->ring_off + (uint64_t)p->nslots * p->ring_size;
	const char *bad = NULL;
	if (h.magic != ISC_ALLOC_MAGIC || h.version != ISC_ALLOC_VERSION)
		bad = "has a wrong magic or version";
	else if (h.site_size != sizeof(struct isc_alloc_site) || h.depth_max != ISC_ALLOC_MAX_DEPTH)
		bad = "has entries of another size";
	else if (h.sites_cap < 2 || h.sites_cap > ISC_ALLOC_MAX_SITES || (h.sites_cap & (h.sites_cap - 1)))
		bad = "claims an impossible number of entries";
	else if (h.sites_off < rings_end || h.sites_off > p->map_len ||
		 (uint64_t)h.sites_cap * sizeof(struct isc_alloc_site) > p->map_len - h.sites_off)
		bad = "lies outside its file";
	if (bad) {
		char why[160];
		snprintf(why, sizeof(why), "is corrupt (it %s): not written, its allocation sites are unknown", bad);
		table_warning(r, p, ts, why);
		return;
	}
	struct isc_buf *out = &r->tmp;
	uint64_t last = ts, written = 0, refused = 0;
	uint32_t seq = 0;
	out->len = 0;
	const struct isc_alloc_site *tab = (const void *)(p->map + h.sites_off);
	for (uint32_t i = 0; i < h.sites_cap; i++) {
		struct isc_alloc_site s;
		memcpy(&s, &tab[i], sizeof(s));
		if (!s.key)
			continue;
		if (!site_ok(&s)) {
			refused++;
			continue;
		}
		uint8_t body[16 * 10 + 2 * ISC_ALLOC_MAX_DEPTH * 10];
		unsigned n = 0;
		uint64_t f[12] = { i, s.alloc_bytes - s.free_bytes, (uint64_t)llround(sqrt(s.live_var)),
				   s.alloc_count - s.free_count, s.alloc_bytes, s.alloc_count, s.free_bytes,
				   s.free_count, s.peak_live, age(ts, s.peak_ts), age(ts, s.growth_ts), s.depth };
		for (int k = 0; k < 12; k++)
			n += isc_put_varint(body + n, f[k]);
		for (uint32_t k = 0; k < 2 * s.depth; k++)
			n += isc_put_varint(body + n, s.frames[k]);
		if (isc_buf_put_record(out, ISC_REC_ALLOC_SITE, ts, &last, body, n))
			return;
		written++;
		if (out->len >= SITES_CHUNK) { /* chunks stay far below ISC_CHUNK_MAX_PAYLOAD */
			isc_rec_emit(r, ISC_CHUNK_ALLOC, (uint32_t)p->pid, 0, ts, seq++, out->data, out->len, true);
			out->len = 0;
			last = ts;
		}
	}
	uint64_t info[9] = { ISC_ALLOC_PHASE_END, h.interval, atomic_load(&sh->flags), h.samples, h.frees, written,
			     h.lost_sites, h.lost_ptrs, refused };
	uint8_t body[9 * 10];
	unsigned n = 0;
	for (int k = 0; k < 9; k++)
		n += isc_put_varint(body + n, info[k]);
	if (isc_buf_put_record(out, ISC_REC_ALLOC_INFO, ts, &last, body, n))
		return;
	isc_rec_emit(r, ISC_CHUNK_ALLOC, (uint32_t)p->pid, 0, ts, seq, out->data, out->len, true);
	if (refused) {
		char why[160];
		snprintf(why, sizeof(why), "had %llu corrupt entries: those sites are not written",
			 (unsigned long long)refused);
		table_warning(r, p, ts, why);
	}
}
