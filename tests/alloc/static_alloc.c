/*
 * static_alloc.c - a statically linked program (no program interpreter:
 * LD_PRELOAD does not apply) that allocates 64 MiB in 1 MiB blocks, keeps
 * them, prints "static: done" and exits 0 (tests/alloc/faults.bats).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	for (int i = 0; i < 64; i++) {
		char *b = malloc(1u << 20);
		if (!b)
			return 1;
		memset(b, i, 1u << 20);
	}
	printf("static: done\n");
	return 0;
}
