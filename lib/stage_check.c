/*
 * stage_check.c - the program lib/meson.build links with one stage library
 * whole and only the stages below it: it builds when the stage takes
 * nothing from a stage above it (lib/README.md).  It is never run.
 */
int main(void)
{
	return 0;
}
