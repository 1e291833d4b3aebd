/*
 * malloc_override.c - a program that defines the malloc family itself (a
 * bump allocator over a static arena), as some servers and games do: the
 * allocation shim preloaded by iscope-record then never sees a malloc
 * (tests/alloc/faults.bats).  It allocates 64 MiB through its own malloc
 * (and frees it, which its free ignores), maps 32 MiB of anonymous memory
 * with mmap (libc's, which the shim does see), prints "override: done"
 * and exits 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static _Alignas(16) unsigned char arena[96u << 20];
static size_t used;

void *malloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(arena) - used)
		return NULL;
	used += n;
	return arena + used - n;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n)
		return NULL;
	return malloc(k * n); /* the arena is zero and never reused */
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	if (p && q)
		memcpy(q, p, n); /* may read past the old block, within the arena */
	return q;
}

int main(void)
{
	for (int i = 0; i < 64; i++) {
		char *b = malloc(1u << 20);
		if (!b)
			return 1;
		memset(b, i, 1u << 20);
		free(b);
	}
	char *m = mmap(NULL, 32u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	memset(m, 1, 32u << 20);
	munmap(m, 32u << 20);
	printf("override: done\n");
	return 0;
}
