/*
 * pycode_tool.c - lib/record/pycode.c on code objects given by a Python
 * script (tests/unit/check-pycode.py), one command a line on stdin:
 *
 *   E MINOR                      the stack-effect table of CPython 3.MINOR:
 *                                "op jump e(0) e(1) ... e(599) e(65535)" for every opcode it has
 *   D MINOR STACKSIZE CODE EXC   depths of a code object (CODE and EXC in hex, EXC "-" for none):
 *                                "unit:depth" for every instruction start, or "error N"
 *
 * The layout is the build's table for 3.MINOR (isc_pylayout_find).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pycode.h"

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (; s[0] && s[1] && n < cap; s += 2) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
	}
	return n;
}

int main(void)
{
	static char line[1 << 22];
	static uint8_t code[1 << 20], exc[1 << 18];
	static struct isc_py_unit units[ISC_PY_CODE_UNITS_MAX];
	while (fgets(line, sizeof(line), stdin)) {
		unsigned minor, stacksize;
		char *codehex = NULL, *exchex = NULL;
		if (sscanf(line, "E %u", &minor) == 1) {
			const struct isc_pylayout *L = isc_pylayout_find(3, minor, 255);
			if (!L) {
				printf("no layout\n");
				continue;
			}
			for (unsigned op = 0; op < 256; op++)
				for (int j = 0; j < 2; j++) {
					if (L->deopt[op] != op || isc_py_stack_effect(L, op, 0, j) == INT32_MIN)
						continue;
					printf("%u %d", op, j);
					for (uint32_t a = 0; a < 600; a++)
						printf(" %d", isc_py_stack_effect(L, op, a, j));
					printf(" %d\n", isc_py_stack_effect(L, op, 65535, j));
				}
			printf("end\n");
		} else if (sscanf(line, "D %u %u %ms %ms", &minor, &stacksize, &codehex, &exchex) == 4) {
			const struct isc_pylayout *L = isc_pylayout_find(3, minor, 255);
			size_t n = unhex(codehex, code, sizeof(code)), ne = strcmp(exchex, "-") ? unhex(exchex, exc, sizeof(exc)) : 0;
			int rc = L ? isc_py_depths(L, code, n / 2, ne ? exc : NULL, ne, stacksize, units) : -ENOENT;
			if (rc) {
				printf("error %d\n", rc);
			} else {
				for (size_t i = 0; i < n / 2; i++)
					if (units[i].depth >= 0)
						printf("%zu:%d ", i, units[i].depth);
				printf("\n");
			}
		} else {
			printf("bad command\n");
		}
		free(codehex);
		free(exchex);
		fflush(stdout);
	}
	return 0;
}
