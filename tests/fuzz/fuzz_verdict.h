/*
 * fuzz_verdict.h - what the reader said about the last input, for the
 * corpus replay (replay.c): each fuzz target sets fuzz_rejected to 1 when
 * its reader returned an error on the input, 0 when it accepted it.  -1
 * (the start value) means the target gave no verdict.  replay.c fails when
 * a file listed as bad for this reader (tests/data/must-reject.txt) was
 * accepted.  libFuzzer ignores the variable.
 */
#ifndef FUZZ_VERDICT_H
#define FUZZ_VERDICT_H

__attribute__((weak)) int fuzz_rejected = -1;

#endif
