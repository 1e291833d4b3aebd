/*
 * test_procfs.c - the sampler's /proc text readers (lib/record/procfs.c)
 * on the fixture files of tests/data/proc/sampler (their README says where
 * each comes from).  The expected numbers are read off the fixtures by
 * hand (fields counted after the last ')', as proc(5) numbers them).
 *
 *   test_procfs DATA_DIR   (tests/data/proc/sampler)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "tap.h"

static const char *dir;

static char *load(const char *name)
{
	char path[4096];
	static char buf[8][8192];
	static int k;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	char *b = buf[k++ % 8];
	size_t n = f ? fread(b, 1, sizeof(buf[0]) - 1, f) : 0;
	b[n] = '\0';
	if (f)
		fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	unsigned long long f[40];
	char state = 0;
	dir = argc > 1 ? argv[1] : "tests/data/proc/sampler";

	/* "15209 (tok) (x 9 y) S 15085 15085 3204 0 -1 4194368 4 6577 0 0 0 0 4 0 20 0 2 0 461809 ..." */
	int n = isc_procfs_stat(load("thread-stat"), f, 38, &state);
	ok(n == 38, "thread stat: 38 fields taken (%d)", n);
	ok(state == 'S', "thread stat: state S after a name holding ') (' and digits");
	ok(f[1] == 15085 && f[2] == 15085 && f[3] == 3204, "thread stat: ppid, pgrp, session (fields 4-6)");
	ok(f[7] == 4 && f[8] == 6577, "thread stat: minflt 4, cminflt 6577 (fields 10, 11)");
	ok(f[11] == 0 && f[12] == 0 && f[17] == 2 && f[19] == 461809 && f[21] == 3450,
	   "thread stat: utime 0, stime 0, 2 threads, starttime 461809, rss 3450 pages (fields 14, 15, 20, 22, 24)");

	/* "15090 (python3) R 15085 15085 3204 0 -1 4194304 2918 ..." */
	n = isc_procfs_stat(load("process-stat"), f, 24, &state);
	ok(n == 24 && state == 'R', "process stat: 24 fields, state R");
	ok(f[7] == 2918 && f[11] == 3 && f[12] == 1 && f[21] == 3450,
	   "process stat: minflt 2918, utime 3, stime 1, rss 3450 pages");

	n = isc_procfs_stat(load("stat-cut-after-state"), f, 24, &state);
	ok(n == 1, "a stat line cut after the state gives the state only, which callers refuse (%d)", n);
	ok(isc_procfs_stat(load("stat-no-paren"), f, 24, &state) == -1, "a line without the name's parentheses is refused");

	const char *st = load("thread-status");
	ok(isc_procfs_field(st, "voluntary_ctxt_switches:") == 1, "status: 1 voluntary switch");
	ok(isc_procfs_field(st, "nonvoluntary_ctxt_switches:") == 3, "status: 3 involuntary switches");
	ok(isc_procfs_field(st, "NoSuchKey:") == 0, "status: an absent key is 0");

	const char *sm = load("smaps_rollup");
	ok(isc_procfs_field(sm, "\nRss:") == 13904 && isc_procfs_field(sm, "\nPss:") == 11542,
	   "smaps_rollup: Rss 13904 kB, Pss 11542 kB (not Pss_Dirty)");
	ok(isc_procfs_field(sm, "\nSwap:") == 0 && isc_procfs_field(sm, "\nAnonymous:") == 7088,
	   "smaps_rollup: Swap 0, Anonymous 7088 kB");

	const char *mi = load("meminfo");
	ok(isc_procfs_field(mi, "MemTotal:") == 24684084 && isc_procfs_field(mi, "MemAvailable:") == 23633924,
	   "meminfo: MemTotal, MemAvailable");
	ok(isc_procfs_field(mi, "SwapTotal:") == 0 && isc_procfs_field(mi, "SwapFree:") == 0, "meminfo: no swap");

	char *cpu = load("pressure-cpu");
	ok(isc_procfs_psi(cpu, "total=", 1) == 4189510552ull, "pressure cpu: some total 4189510552 us");
	ok(isc_procfs_psi(cpu, "avg10=", 100) == 9828, "pressure cpu: avg10 98.28 %% as 9828 hundredths");
	const char *full = strstr(load("pressure-memory"), "full");
	ok(full && isc_procfs_psi(full, "total=", 1) == 2830, "pressure memory: full total 2830 us");
	return tap_done();
}
