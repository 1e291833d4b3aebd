#!/usr/bin/env python3
"""Regenerates the hand-made bad fixtures in this directory (see README.md).

Run from tests/: /usr/bin/python3 data/bad/make-fixtures.py
Needs python3-zstandard.  The fixtures derived from a real recording
(truncated.isc, flipped-byte.isc, truncated.istl) are cut from the seed
traces in fuzz/corpus/.
"""
import struct
import zstandard

D = 'data/bad'
src = open('fuzz/corpus/trace/small.isc', 'rb').read()
tl = open('fuzz/corpus/timeline/small.istl', 'rb').read()
cctx = zstandard.ZstdCompressor(write_checksum=True)


def varint(v):
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def chunk(typ, payload, pid=0, tid=0, base=0, seq=0, magic=0x4B435349, flags=0, plen=None):
    h = struct.pack('<IHHIIQII', magic, typ, flags, pid, tid, base, seq,
                    len(payload) if plen is None else plen)
    return cctx.compress(h + payload)


def rec(t, body, delta=0):
    if t < 0x80:
        body = varint(delta) + body
    return bytes([t]) + varint(len(body)) + body


def put(name, data):
    open(f'{D}/{name}', 'wb').write(data)


hdr = rec(0x90, struct.pack('<IHH', 0x54435349, 1, 0)) + \
    rec(0x94, varint(1700000000000000000) + varint(1000) + varint(10))

put('text.isc', b'this is a text file, not a trace\n')
put('empty.isc', b'')
put('truncated.isc', src[:len(src) * 3 // 5])
b = bytearray(src)
b[len(b) // 2] ^= 0x55
put('flipped-byte.isc', bytes(b))
put('truncated.istl', tl[:len(tl) // 2])
put('bad-chunk-magic.isc', chunk(1, hdr, magic=0xdeadbeef))
put('reserved-flags.isc', chunk(1, hdr, flags=1))
put('wrong-payload-len.isc', chunk(1, hdr, plen=len(hdr) + 5))
put('version-9.isc', chunk(1, rec(0x90, struct.pack('<IHH', 0x54435349, 9, 0))))
put('record-past-chunk.isc',
    chunk(1, hdr) + chunk(2, rec(0x01, varint(1), 5) + bytes([0x01, 0x7f, 0x00]), 1, 1))
put('clock-overflow.isc',
    chunk(1, hdr) + chunk(2, rec(0x01, varint(1), (1 << 64) - 2) + rec(0x01, varint(1), 10), 1, 1, 5))
put('overlong-varint.isc',
    chunk(1, hdr) + chunk(2, bytes([0x01, 0x0b]) + b'\xff' * 10 + b'\x01', 1, 1))
put('string-len-lies.isc',
    chunk(1, hdr) + chunk(3, rec(0x81, varint(1) + bytes([0]) + varint(3) + varint(200) + b'abc'), 1))
put('deep-unmatched.isc',
    chunk(1, hdr) + chunk(2, b''.join(rec(0x02, b'', 1) for _ in range(100)) +
                          b''.join(rec(0x01, varint(77), 1) for _ in range(10000)), 1, 1))
put('frame-too-large.isc',
    chunk(1, hdr) + zstandard.ZstdCompressor(write_checksum=True).compress(b'\0' * (20 << 20)))
tlh = rec(0x90, struct.pack('<IHH', 0x4C545349, 1, 0))
put('timeline-events-corrupt.istl',
    chunk(1, tlh) + chunk(17, rec(0x40, varint(1) + varint(2)) + rec(0x41, b'\x01\x00', 3)))

# findings JSON for iscope-report (and every other reader)
put('findings-deep.json', b'[' * 5000 + b']' * 5000)
put('findings-not-object.json', b'[{"summary": {"wall_ns": 1}}]\n')
put('findings-truncated.json', b'{"summary": {"wall_ns": 1, "events": 2')
# a findings document says what it is (iscope-report refuses other JSON)
OURS = '"schema_version": 2, "tool": {"name": "iscope-analyze", "version": "0.1.0"}, '
put('findings-not-ours.json', b'{"summary": {"wall_ns": 1}}\n')
put('findings-huge-numbers.json', (
    '{' + OURS + '"summary": {"wall_ns": 1e308, "events": -1e308, "dropped_events": 1.5, "exit_status": "x",'
    ' "abrupt": "yes", "end_reason": 5},'
    ' "iterations": {"name": "s", "count": 1e300, "latency_ns": {"p50": -5e-324, "p90": 1e308}},'
    ' "cpu": {"top_functions": [{"name": "a", "kind": "python", "self_pct": 1e308, "line": -1e20,'
    ' "calls": 1e300}]}, "memory": {"rss_peak_bytes": 1e308},'
    ' "findings": [{"title": "x", "evidence": {"a": 1e308, "b": [1, 2], "c": {"d": "e"}},'
    ' "estimated_saving_pct": 1e308}]}\n').encode())
put('findings-nul-bytes.json', ('{' + OURS + '"environment": {"host": "a\\u0000b", "cmdline": "\\u0000"}}\n').encode())

# found by fuzz_timeline: an empty TL_EVENTS chunk first (memcpy from NULL)
put('timeline-empty-events.istl', chunk(1, tlh) + chunk(17, b'') + chunk(17, rec(0x40, varint(1) + varint(2))))
# found by fuzz_timeline: a string id near the limit made the reader allocate
# a 2 GiB table (ids are 1, 2, 3 ... in a timeline)
put('timeline-string-id-huge.istl',
    chunk(1, tlh) + chunk(16, rec(0x81, varint((1 << 26) - 1) + bytes([0]) + varint(1) + varint(1) + b'f' + varint(0))) +
    chunk(17, rec(0x40, varint(1) + varint(2))))
# found by fuzz_timeline: GPU analysis subtracted times 2^63 apart (signed
# overflow); a time of 2^62 ns or more is now corrupt (formats/timeline.md §4)
put('timeline-time-huge.istl',
    chunk(1, tlh) + chunk(17, rec(0x40, varint(1) + varint(2)) + rec(0x42, varint(0) + varint(0), 5) +
                          rec(0x42, varint(0) + varint(0), 1 << 62)))
# a call 2^62 ns after the epoch: iscope-merge drops it with a warning (a
# timeline cannot hold it) and keeps the rest
put('time-beyond-limit.isc',
    chunk(1, hdr) + chunk(2, rec(0x01, varint(1), 2000) + rec(0x02, b'', 10) + rec(0x01, varint(1), 1 << 62), 1, 1, 0))
# 1.6 (a job merge): a TL_CTX source above 65535 is corrupt (formats/timeline.md §4.1)
put('timeline-source-huge.istl',
    chunk(1, tlh) + chunk(17, rec(0x40, varint(1) + varint(2) + varint(65536)) + rec(0x42, varint(0) + varint(0), 5)))
# ... and so is a SOURCE_INFO source above 65535 (§4.6)
put('timeline-source-info-huge.istl',
    chunk(1, tlh) + chunk(17, rec(0x40, varint(1) + varint(2)) +
                          rec(0xA3, varint(65536) + varint(2) + varint(0) + varint(0) + varint(1) + varint(0) +
                              b'rank0.json\0host\0boot') + rec(0x42, varint(0) + varint(0), 5)))
