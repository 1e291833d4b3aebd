/*
 * chain_lib.c - a known call chain for the native stack tests: the
 * exported chain_run(iterations) calls a -> b -> spin, which burns CPU.
 * Built five ways (tests/meson.build): with frame pointers, without,
 * with call frame information in .debug_frame only, without any (frame
 * pointers only), and stripped (a, b and spin are local symbols: only
 * chain_run stays named).
 */
#include <stdint.h>

__attribute__((noinline)) static uint64_t spin(uint64_t n)
{
	volatile uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) static uint64_t b(uint64_t n)
{
	uint64_t r = spin(n);
	__asm__ volatile(""); /* no tail call: b stays on the stack */
	return r + 1;
}

__attribute__((noinline)) static uint64_t a(uint64_t n)
{
	uint64_t r = b(n);
	__asm__ volatile("");
	return r + 1;
}

__attribute__((visibility("default"))) uint64_t chain_run(uint64_t n)
{
	uint64_t r = a(n);
	__asm__ volatile("");
	return r;
}
