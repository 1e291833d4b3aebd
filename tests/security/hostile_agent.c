/*
 * hostile_agent.c - a traced process that attacks the recorder through its
 * session directory and shared-memory file (tests/security/hostile.bats).
 *
 *   hostile_agent MODE
 *
 * Run as (part of) the workload of iscope-record: it reads
 * INFERSCOPE_SESSION and INFERSCOPE_RING_KB like the real agent, creates
 * <session>/<pid>.shm with the layout of lib/isc_shm.h, and then, by MODE:
 *
 *   garbage      valid header; a ring full of random bytes (records that
 *                do not parse), head published past them
 *   lying-size   a ring record whose size byte runs past what is committed
 *   foreign      a well-framed record of a type agents never write (a
 *                sampler PROC_INFO whose cmdline length runs past its body),
 *                then a PY_CALL whose varint is cut by its size
 *   smaps-pid    an SMAPS record (which agents write before an
 *                out-of-memory EXCEPTION) naming pid 1, not its own
 *   head-ahead   head 2^40 bytes past tail
 *   huge         header claiming 1024 rings of 1 GiB and a 1 GiB string
 *                area in a small file
 *   strings      str_committed past the string area, then garbage strings
 *   strdef       a valid STRING_DEF (id 1, "hostile_ok") in the string
 *                area, then a well-framed STRING_DEF whose body does not
 *                parse (id 0), then a valid one again; its ring's calls
 *                name id 1
 *   strwindow    not an attack: a 6 MiB string area holding 5243 valid
 *                STRING_DEF records of 1000 bytes (ids 128 to 5370,
 *                names "wNNNNN" and 'x's), published at once, so one record
 *                straddles the recorder's 4 MiB read window; its ring's
 *                10 calls name the last one (w05370)
 *   slots        nslots_used 0xffffffff, slots with random tids
 *   truncate     valid records; once the recorder has mapped the file
 *                (its path shows in some /proc/PID/maps), truncate the
 *                file to 0 bytes: the recorder's next read faults (SIGBUS)
 *   scribble     valid header; a thread rewrites every byte of the file
 *                (slots, strings, rings) at random for 1 s while the
 *                recorder drains it
 *   symlink      <pid>.shm is a symbolic link to a well-formed file elsewhere
 *   fifo         <pid>.shm is a FIFO (opening it for reading could block)
 *   mode         a well-formed file with mode 0644
 *
 * and, as the allocation shim (<pid>.alloc.shm, lib/isc_alloc.h; it then
 * writes no <pid>.shm, and 10 valid ALLOC records into ring 0):
 *
 *   alloc-header   a site table whose header claims 2^20 entries lying
 *                  past the end of the file
 *   alloc-entries  8 entries in use: 3 valid (sites 1 to 3, depth 1,
 *                  live 1000, 2000, 3000 bytes), 5 corrupt (depth 1000,
 *                  more freed than allocated, a NaN variance, a string id
 *                  past 2^26, more bytes freed than allocated)
 *   alloc-random   the site table, its header included, random bytes
 *   alloc-record   an ALLOC record with 100 frames (at most 32) after the
 *                  valid ones
 *
 * It exits 0 in every mode; it prints "hostile: MODE done" on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isc_alloc.h"
#include "isc_format.h"
#include "isc_shm.h"

#define NSLOTS 4u

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(3);
}

struct shm {
	int fd;
	uint8_t *base;
	struct isc_shm_proc *p;
	uint64_t size;
	uint32_t ring;
	char path[4096];
};

static uint64_t str_size_want = 65536; /* the string area make_file lays out */
static uint64_t extra_want;            /* bytes after the rings (the shim's site table) */

/* Creates path (O_EXCL|O_NOFOLLOW, mode) with a well-formed header. */
static void make_file(struct shm *s, const char *path, mode_t mode)
{
	const char *kb = getenv("INFERSCOPE_RING_KB");
	s->ring = (kb ? (uint32_t)atoi(kb) : 64) * 1024u;
	if (s->ring < 4096)
		s->ring = 4096;
	uint64_t str_off = ISC_SHM_SLOTS_OFF + (uint64_t)NSLOTS * ISC_SHM_SLOT_SIZE;
	str_off = (str_off + 4095) & ~4095ull;
	uint64_t str_size = str_size_want, ring_off = str_off + str_size;
	s->size = ring_off + (uint64_t)NSLOTS * s->ring + extra_want;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (s->fd < 0)
		die(path);
	if (fchmod(s->fd, mode) || ftruncate(s->fd, (off_t)s->size))
		die("size");
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->base == MAP_FAILED)
		die("mmap");
	s->p = (struct isc_shm_proc *)s->base;
	s->p->version = ISC_SHM_VERSION;
	s->p->pid = (uint32_t)getpid();
	s->p->ppid = (uint32_t)getppid();
	s->p->file_size = s->size;
	s->p->nslots = NSLOTS;
	s->p->ring_size = s->ring;
	s->p->str_off = str_off;
	s->p->str_size = str_size;
	s->p->ring_off = ring_off;
	s->p->start_ts = now_ns();
	memcpy(s->p->cmdline, "hostile_agent", 14);
	s->p->cmdline_len = 14;
	atomic_store(&s->p->state, ISC_PROC_RUNNING);
	__atomic_store_n(&s->p->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);
}

static struct isc_shm_slot *slot(struct shm *s, uint32_t i)
{
	return isc_shm_slot_at(s->base, i);
}

static uint8_t *ring(struct shm *s, uint32_t i)
{
	return isc_shm_ring_at(s->base, s->p, i);
}

/* Claims slot i for a thread id and pushes n valid PY_CALL records. */
static void valid_records(struct shm *s, uint32_t i, unsigned n)
{
	struct isc_shm_slot *sl = slot(s, i);
	atomic_store(&sl->tid, (uint32_t)getpid() + i);
	atomic_store(&sl->state, ISC_SLOT_ACTIVE);
	if (atomic_load(&s->p->nslots_used) <= i)
		atomic_store(&s->p->nslots_used, i + 1);
	for (unsigned k = 0; k < n; k++) {
		uint8_t rec[8] = { ISC_REC_PY_CALL, 2, 1, 1 }; /* type, size, ts delta 1, code id 1 */
		isc_ring_push(sl, ring(s, i), s->ring, rec, 4);
	}
}

/* Some process has the file mapped: its path is in /proc/PID/maps. */
static int mapped_elsewhere(const char *path)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char maps[300], line[4608];
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
			continue;
		snprintf(maps, sizeof(maps), "/proc/%s/maps", e->d_name);
		FILE *f = fopen(maps, "re");
		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, path) != NULL;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static volatile int stop;

static void *scribbler(void *arg)
{
	struct shm *s = arg;
	uint64_t r = 12345;
	while (!stop) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		/* everything after the header's validated fields, the header's
		 * atomics included */
		uint64_t off = 96 + r % (s->size - 96 - 8);
		memcpy(s->base + off, &r, 8);
	}
	return NULL;
}

#define ALLOC_SITES 16u

/* The shim's header and table (isc_alloc.h) after the rings of s. */
static struct isc_alloc_site *alloc_table(struct shm *s)
{
	struct isc_alloc_hdr *h = (struct isc_alloc_hdr *)(s->base + ISC_ALLOC_HDR_OFF);
	h->version = ISC_ALLOC_VERSION;
	h->interval = 524288;
	h->sites_off = s->p->ring_off + (uint64_t)NSLOTS * s->ring;
	h->sites_cap = ALLOC_SITES;
	h->site_size = sizeof(struct isc_alloc_site);
	h->depth_max = ISC_ALLOC_MAX_DEPTH;
	h->magic = ISC_ALLOC_MAGIC;
	return (struct isc_alloc_site *)(s->base + h->sites_off);
}

/* One valid entry: depth 1 (string id 0: unnamed), live bytes. */
static void alloc_site(struct isc_alloc_site *e, uint32_t line, uint64_t live)
{
	e->key = 1000 + line;
	e->alloc_count = 2;
	e->alloc_bytes = live + 500;
	e->free_count = 1;
	e->free_bytes = 500;
	e->depth = 1;
	e->frames[0] = 0;
	e->frames[1] = line;
}

/* n valid ALLOC records (depth 0) into ring 0 of the shim's file. */
static void alloc_records(struct shm *s, unsigned n)
{
	struct isc_shm_slot *sl = slot(s, 0);
	atomic_store(&sl->tid, (uint32_t)getpid());
	atomic_store(&sl->state, ISC_SLOT_ACTIVE);
	atomic_store(&s->p->nslots_used, NSLOTS);
	for (unsigned k = 0; k < n; k++) {
		/* delta 1, tid 7, address 4096 + k, size 100, weight 524338, domain 1, flags 0, site 0, depth 0, nnative 0 */
		uint8_t rec[32] = { ISC_REC_ALLOC, 0, 1, 7, 0x80, 0x20 + (uint8_t)k, 100, 0xB2, 0x80, 0x20, 1, 0, 0, 0, 0 };
		rec[1] = 13;
		isc_ring_push(sl, ring(s, 0), s->ring, rec, 15);
	}
}

int main(int argc, char **argv)
{
	const char *session = getenv("INFERSCOPE_SESSION");
	char path[4096];
	struct shm s;
	if (argc != 2 || !session) {
		fprintf(stderr, "usage: INFERSCOPE_SESSION=DIR hostile_agent MODE\n");
		return 2;
	}
	const char *mode = argv[1];
	rng ^= (uint64_t)getpid();
	snprintf(path, sizeof(path), "%s/%d.shm", session, (int)getpid());
	if (!strncmp(mode, "alloc-", 6)) {
		snprintf(path, sizeof(path), "%s/%d%s", session, (int)getpid(), ISC_ALLOC_SUFFIX);
		extra_want = ALLOC_SITES * sizeof(struct isc_alloc_site);
		make_file(&s, path, 0600);
		alloc_records(&s, 10);
		struct isc_alloc_site *t = alloc_table(&s);
		struct isc_alloc_hdr *h = (struct isc_alloc_hdr *)(s.base + ISC_ALLOC_HDR_OFF);
		if (!strcmp(mode, "alloc-header")) {
			alloc_site(&t[1], 1, 1000);
			h->sites_cap = 1u << 20;
		} else if (!strcmp(mode, "alloc-entries")) {
			for (uint32_t i = 1; i <= 8; i++)
				alloc_site(&t[i], i, 1000 * i);
			t[4].depth = 1000;
			t[5].free_count = 9;
			t[6].live_var = 0.0 / 0.0;
			t[7].frames[0] = 1u << 26;
			t[8].free_bytes = t[8].alloc_bytes + 1;
		} else if (!strcmp(mode, "alloc-random")) {
			for (uint64_t k = 0; k < ALLOC_SITES * sizeof(struct isc_alloc_site); k++)
				((uint8_t *)t)[k] = (uint8_t)rnd();
			for (size_t k = 8; k < sizeof(*h); k++) /* the magic and version stay */
				((uint8_t *)h)[k] = (uint8_t)rnd();
		} else if (!strcmp(mode, "alloc-record")) {
			/* delta 1, tid 7, address 1, size 1, weight 1, domain 1, flags 0, site 0, depth 100 */
			uint8_t rec[16] = { ISC_REC_ALLOC, 10, 1, 7, 1, 1, 1, 1, 0, 0, 100, 0 };
			isc_ring_push(slot(&s, 0), ring(&s, 0), s.ring, rec, 12);
		} else {
			fprintf(stderr, "hostile: unknown mode %s\n", mode);
			return 2;
		}
		fprintf(stderr, "hostile: %s done\n", mode);
		return 0;
	}

	if (!strcmp(mode, "symlink")) {
		char target[4096];
		snprintf(target, sizeof(target), "%s.target", getenv("HOSTILE_TMP") ? getenv("HOSTILE_TMP") : "/tmp/hostile");
		unlink(target);
		make_file(&s, target, 0600);
		valid_records(&s, 0, 100);
		if (symlink(target, path))
			die("symlink");
	} else if (!strcmp(mode, "fifo")) {
		if (mkfifo(path, 0600))
			die("mkfifo");
	} else if (!strcmp(mode, "mode")) {
		make_file(&s, path, 0644);
		valid_records(&s, 0, 100);
	} else {
		if (!strcmp(mode, "strwindow"))
			str_size_want = 6u << 20;
		make_file(&s, path, 0600);
		if (!strcmp(mode, "garbage")) {
			struct isc_shm_slot *sl = slot(&s, 0);
			valid_records(&s, 0, 10);
			uint64_t head = atomic_load(&sl->head);
			for (uint32_t k = 0; k < s.ring / 2; k++)
				ring(&s, 0)[(head + k) & (s.ring - 1)] = (uint8_t)rnd();
			atomic_store(&sl->head, head + s.ring / 2);
		} else if (!strcmp(mode, "lying-size")) {
			struct isc_shm_slot *sl = slot(&s, 0);
			valid_records(&s, 0, 10);
			uint8_t rec[4] = { ISC_REC_PY_CALL, 200, 1, 1 }; /* 200-byte body, 2 bytes present */
			isc_ring_push(sl, ring(&s, 0), s.ring, rec, 4);
		} else if (!strcmp(mode, "foreign")) {
			struct isc_shm_slot *sl = slot(&s, 0);
			valid_records(&s, 0, 10);
			uint8_t info[7] = { ISC_REC_PROC_INFO, 5, 0, 1, 1, 100, 'x' };
			uint8_t cut[4] = { ISC_REC_PY_CALL, 2, 0, 0x80 };
			isc_ring_push(sl, ring(&s, 0), s.ring, info, sizeof(info));
			isc_ring_push(sl, ring(&s, 0), s.ring, cut, sizeof(cut));
		} else if (!strcmp(mode, "smaps-pid")) {
			struct isc_shm_slot *sl = slot(&s, 0);
			valid_records(&s, 0, 10);
			/* delta 0, pid 1, rss 100, pss 100, swap 0, anon 100 */
			uint8_t sm[8] = { ISC_REC_SMAPS, 6, 0, 1, 100, 100, 0, 100 };
			isc_ring_push(sl, ring(&s, 0), s.ring, sm, sizeof(sm));
		} else if (!strcmp(mode, "head-ahead")) {
			valid_records(&s, 0, 10);
			atomic_store(&slot(&s, 0)->head, atomic_load(&slot(&s, 0)->tail) + (1ull << 40));
		} else if (!strcmp(mode, "huge")) {
			s.p->nslots = ISC_SHM_MAX_SLOTS;
			s.p->ring_size = 1u << 30;
			s.p->str_size = 1ull << 30;
			s.p->ring_off = s.p->str_off + s.p->str_size;
		} else if (!strcmp(mode, "strings")) {
			valid_records(&s, 0, 10);
			for (uint64_t k = 0; k < s.p->str_size; k++)
				s.base[s.p->str_off + k] = (uint8_t)rnd();
			atomic_store(&s.p->str_committed, s.p->str_size + 12345);
		} else if (!strcmp(mode, "strdef")) {
			/* type, body size, then id, kind, line, name length, name, file length */
			static const uint8_t defs[] = {
				ISC_REC_STRING_DEF, 15, 1, ISC_STR_CODE, 0, 10, 'h', 'o', 's', 't', 'i', 'l', 'e', '_', 'o', 'k', 0,
				ISC_REC_STRING_DEF, 6, 0, ISC_STR_CODE, 0, 1, 'x', 0,
				ISC_REC_STRING_DEF, 15, 2, ISC_STR_CODE, 0, 10, 'h', 'o', 's', 't', 'i', 'l', 'e', '_', 'n', 'o', 0,
			};
			/* names before the records that use them, as an agent publishes */
			memcpy(s.base + s.p->str_off, defs, sizeof(defs));
			atomic_store(&s.p->str_committed, sizeof(defs));
			valid_records(&s, 0, 10);
		} else if (!strcmp(mode, "strwindow")) {
			uint8_t *p = s.base + s.p->str_off;
			uint32_t id;
			for (id = 128; id <= 5370; id++) { /* two-byte ids: 1000-byte records */
				*p++ = ISC_REC_STRING_DEF;
				p += isc_put_varint(p, 997); /* body: id 2, kind 1, line 1, length 2, name 990, file 1 */
				p += isc_put_varint(p, id);
				*p++ = ISC_STR_CODE;
				*p++ = 0;
				p += isc_put_varint(p, 990);
				int n = snprintf((char *)p, 8, "w%05u", (unsigned)id);
				memset(p + n, 'x', (size_t)(990 - n));
				p += 990;
				*p++ = 0;
			}
			atomic_store(&s.p->str_committed, (uint64_t)(p - (s.base + s.p->str_off)));
			struct isc_shm_slot *sl = slot(&s, 0);
			atomic_store(&sl->tid, (uint32_t)getpid());
			atomic_store(&sl->state, ISC_SLOT_ACTIVE);
			atomic_store(&s.p->nslots_used, 1);
			id = 5370;
			uint8_t call[5] = { ISC_REC_PY_CALL, 3, 1, (uint8_t)(id & 0x7f) | 0x80, (uint8_t)(id >> 7) };
			uint8_t ret[3] = { ISC_REC_PY_RETURN, 1, 1 };
			for (int k = 0; k < 10; k++) {
				isc_ring_push(sl, ring(&s, 0), s.ring, call, sizeof(call));
				isc_ring_push(sl, ring(&s, 0), s.ring, ret, sizeof(ret));
			}
		} else if (!strcmp(mode, "slots")) {
			for (uint32_t i = 0; i < NSLOTS; i++)
				atomic_store(&slot(&s, i)->tid, (uint32_t)rnd());
			valid_records(&s, 1, 10);
			atomic_store(&s.p->nslots_used, 0xffffffffu);
			atomic_store(&slot(&s, 2)->dropped, UINT64_MAX);
		} else if (!strcmp(mode, "truncate")) {
			valid_records(&s, 0, 100);
			for (int tries = 0; tries < 1000 && !mapped_elsewhere(path); tries++)
				usleep(10000);
			if (ftruncate(s.fd, 0))
				die("ftruncate");
			/* our own view is gone too: touch nothing after this */
			fprintf(stderr, "hostile: truncated %s\n", path);
		} else if (!strcmp(mode, "scribble")) {
			pthread_t th;
			valid_records(&s, 0, 100);
			pthread_create(&th, NULL, scribbler, &s);
			usleep(1000000);
			stop = 1;
			pthread_join(th, NULL);
		} else {
			fprintf(stderr, "hostile: unknown mode %s\n", mode);
			return 2;
		}
	}
	fprintf(stderr, "hostile: %s done\n", mode);
	return 0;
}
