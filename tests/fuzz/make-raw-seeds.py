#!/usr/bin/env python3
"""Writes decoded-chunk seeds for fuzz_trace and fuzz_timeline
(see fuzz_frames.h): each input file's zstd frames decompressed and
concatenated, every chunk its 32-byte header and payload.

    make-raw-seeds.py IN OUT [IN OUT]...

Needs python3-zstandard.  Inputs larger than 64 KiB once decoded are cut
at a chunk boundary (run-fuzzers.sh uses -max_len=65536).
"""
import sys

import zstandard

MAX = 65536


def chunks(data):
    while data:
        d = zstandard.ZstdDecompressor().decompressobj()
        out = d.decompress(data)
        yield out
        data = d.unused_data


def main(args):
    if not args or len(args) % 2:
        sys.stderr.write(__doc__)
        return 2
    for src, dst in zip(args[::2], args[1::2]):
        out = b""
        for c in chunks(open(src, "rb").read()):
            if len(out) + len(c) > MAX:
                break
            out += c
        open(dst, "wb").write(out)
        print("%s: %d bytes" % (dst, len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
