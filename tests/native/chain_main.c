/*
 * chain - runs chain_run(ITERATIONS) of the library LIB (dlopen'ed, so
 * the kernel reports its mapping while the program runs):
 *
 *   chain LIB ITERATIONS
 *
 * main -> chain_run -> a -> b -> spin is the stack the native stack
 * tests expect for nearly every sample.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: chain LIB ITERATIONS\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	uint64_t (*run)(uint64_t) = h ? (uint64_t (*)(uint64_t))dlsym(h, "chain_run") : NULL;
	if (!run) {
		fprintf(stderr, "chain: %s\n", dlerror());
		return 1;
	}
	uint64_t r = run(strtoull(argv[2], NULL, 10));
	__asm__ volatile("");
	return r == 0; /* never 0: keeps the call */
}
