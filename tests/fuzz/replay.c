/*
 * replay.c - runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * directories given on the command line, so the corpora are exercised by
 * the normal test run without libFuzzer.  Prints TAP, one line per file.
 *
 *   replay_X [--reader NAME --reject LIST] PATH...
 *
 * A file fails the run when replaying it
 *   - crashes or trips a sanitizer: the process dies (the sanitizers are
 *     told to abort on their first report, below); the "# PATH" line
 *     printed before each file names the culprit;
 *   - is listed in LIST for reader NAME ("NAME FILE" lines, FILE the base
 *     name; tests/data/must-reject.txt) but the reader accepted it: the
 *     target sets fuzz_rejected (fuzz_verdict.h).
 * A LIST entry for NAME that names no replayed file fails the run too.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int fuzz_rejected = -1; /* the target's (fuzz_verdict.h), if it has one */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

/* A sanitizer report ends the replay with an error, whatever the environment says. */
const char *__asan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:detect_leaks=1";
}

const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}

static int n, failed;
static const char *reader;
static char **reject; /* base names this reader must reject */
static int *seen;
static size_t nreject;

static void tap(int ok, const char *path, const char *what)
{
	printf("%sok %d - %s%s\n", ok ? "" : "not ", ++n, path, what);
	fflush(stdout);
	if (!ok)
		failed++;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return p;
}

/* Reads LIST: "READER FILE" lines, '#' comments; keeps the FILEs of our reader. */
static void load_list(const char *list)
{
	FILE *f = fopen(list, "r");
	char line[512], r[64], file[256];
	if (!f) {
		printf("Bail out! cannot open %s\n", list);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || sscanf(line, "%63s %255s", r, file) != 2 || strcmp(r, reader))
			continue;
		reject = xrealloc(reject, (nreject + 1) * sizeof(*reject));
		seen = xrealloc(seen, (nreject + 1) * sizeof(*seen));
		reject[nreject] = strdup(file);
		seen[nreject++] = 0;
	}
	fclose(f);
}

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	long listed = -1;
	if (!f) {
		tap(0, path, ": cannot open");
		return;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = xrealloc(buf, cap);
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	fclose(f);
	for (size_t i = 0; i < nreject; i++)
		if (!strcmp(reject[i], base))
			listed = (long)i;
	printf("# %s\n", path);
	fflush(stdout);
	fuzz_rejected = -1;
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	if (listed < 0) {
		tap(1, path, fuzz_rejected == 1 ? " (rejected)" : fuzz_rejected == 0 ? " (accepted)" : "");
		return;
	}
	seen[listed] = 1;
	if (fuzz_rejected == 1)
		tap(1, path, " (rejected, as listed)");
	else
		tap(0, path, fuzz_rejected == 0 ? ": accepted, but listed as bad input for this reader"
					       : ": the target gave no verdict on a file listed as bad input");
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		char **names = NULL;
		size_t k = 0;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
				continue;
			names = xrealloc(names, (k + 1) * sizeof(*names));
			names[k] = xrealloc(NULL, strlen(path) + strlen(e->d_name) + 2);
			sprintf(names[k++], "%s/%s", path, e->d_name);
		}
		if (d)
			closedir(d);
		else
			tap(0, path, ": cannot open the directory");
		if (k)
			qsort(names, k, sizeof(*names), cmp);
		for (size_t i = 0; i < k; i++) {
			run_path(names[i]);
			free(names[i]);
		}
		free(names);
	} else {
		run_file(path);
	}
}

int main(int argc, char **argv)
{
	int i = 1;
	const char *list = NULL;
	for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		if (!strcmp(argv[i], "--reader"))
			reader = argv[i + 1];
		else if (!strcmp(argv[i], "--reject"))
			list = argv[i + 1];
		else
			break;
	}
	if (!reader != !list || i >= argc) {
		fprintf(stderr, "usage: %s [--reader NAME --reject LIST] PATH...\n", argv[0]);
		return 2;
	}
	if (list)
		load_list(list);
	for (; i < argc; i++)
		run_path(argv[i]);
	for (size_t k = 0; k < nreject; k++) {
		if (!seen[k])
			tap(0, reject[k], ": listed as bad input but not among the replayed files");
		free(reject[k]);
	}
	free(reject);
	free(seen);
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
