/*
 * replay.c - runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * directories given on the command line, so the corpora are exercised by
 * the normal test run without libFuzzer.  Prints TAP, one line per file.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;
	if (!f) {
		printf("not ok %d - cannot open %s\n", ++n, path);
		return;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	printf("ok %d - %s\n", ++n, path);
	fflush(stdout);
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
			names = realloc(names, (k + 1) * sizeof(*names));
			names[k] = malloc(strlen(path) + strlen(e->d_name) + 2);
			sprintf(names[k++], "%s/%s", path, e->d_name);
		}
		if (d)
			closedir(d);
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
	for (int i = 1; i < argc; i++)
		run_path(argv[i]);
	printf("1..%d\n", n);
	return 0;
}
