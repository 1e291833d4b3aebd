#!/usr/bin/env python3
"""isctrace.py - an independent decoder for InferScope traces (.isc) and
timelines (.istl), written from formats/trace.md and formats/timeline.md,
not from the C code, so that the two can check each other.

    isctrace.py [--count NAME]... [--max-errors N] FILE|-

Reads the whole file, checks every invariant the specs state, and prints a
JSON summary on stdout:

    {"format": "trace", "chunks": {...by type}, "records": {...by type},
     "events": N, "strings": N, "threads": [...], "errors": [...], ...}

Exit status: 0 when no invariant failed, 1 when one did (see "errors"),
2 for a usage error or an unreadable file.

Needs the `zstandard` module (Debian: python3-zstandard).  Frame boundaries
are found by parsing the zstd frame and block headers (RFC 8878) here;
each frame is then decoded and its checksum verified by zstandard.

Spec references in messages: T = formats/trace.md, L = formats/timeline.md.
The span checks assume one input per (pid, tid), see L §4.1.
"""
import argparse
import json
import sys

try:
    import zstandard
except ImportError:  # pragma: no cover - environment problem, not a test failure
    sys.stderr.write("isctrace.py: the zstandard module is missing (apt-get install python3-zstandard)\n")
    sys.exit(2)

U64_MAX = (1 << 64) - 1
ZSTD_MAGIC = 0xFD2FB528
ZSTD_MAGIC_BYTES = ZSTD_MAGIC.to_bytes(4, "little")
BLOCK_MAX = 128 * 1024
CHUNK_MAGIC = 0x4B435349  # "ISCK"
TRACE_MAGIC = 0x54435349  # "ISCT"
TIMELINE_MAGIC = 0x4C545349  # "ISTL"
HEADER_SIZE = 32
PAYLOAD_MAX = 16 << 20
STRING_ID_LIMIT = 1 << 26

CHUNK_NAMES = {1: "FILE_HEADER", 2: "EVENTS", 3: "STRINGS", 4: "SAMPLES", 5: "ROUND", 6: "END",
               9: "ALLOC", 16: "TL_STRINGS", 17: "TL_EVENTS"}

# Record layouts (T §4, §6, §7, §9; L §4).  Field codes: v varint, z zigzag
# varint, u8/u16/u32 fixed little-endian, rest = bytes to the end of the
# record, cnt = varint length + bytes, arr = varint n then n varints.
RECORDS = {
    0x01: ("PY_CALL", ["v:code_id"]),
    0x02: ("PY_RETURN", []),
    0x03: ("C_CALL", ["v:func_id"]),
    0x04: ("C_RETURN", []),
    0x06: ("SCOPE_BEGIN", ["v:name_id"]),
    0x07: ("SCOPE_END", []),
    0x08: ("MARK", ["v:name_id", "z:value"]),
    0x09: ("THREAD_BEGIN", ["rest:name"]),
    0x0A: ("THREAD_END", []),
    0x0B: ("DROPPED", ["v:count"]),
    0x0C: ("CALIBRATION", ["v:mechanism", "v:per_event_ps", "v:calls", "v:plain_ns", "v:hooked_ns", "v:events"]),
    0x0D: ("EXCEPTION", ["v:line", "cnt:type", "cnt:file", "cnt:function", "rest:message"]),
    0x0E: ("EXCEPTION_REF", ["v:line", "v:where_id", "v:type_id", "v:message_id"]),
    # allocation sampling (T §6.7; L §4.5: the timeline types, code ids global)
    0x10: ("ALLOC", ["v:tid", "v:address", "v:size", "v:weight", "v:domain", "v:flags", "v:site", "v:depth",
                     "pairs:frames", "arr:native"]),
    0x11: ("FREE", ["v:tid", "v:address", "v:size", "v:weight", "v:domain", "v:site"]),
    0x12: ("ALLOC_INFO", ["v:phase", "v:interval", "v:flags", "v:samples", "v:frees", "v:sites", "v:lost_sites",
                          "v:lost_ptrs", "v:bad_sites"]),
    0x13: ("ALLOC_SITE", ["v:site", "v:live", "v:live_err", "v:live_count", "v:alloc_bytes", "v:alloc_count",
                          "v:free_bytes", "v:free_count", "v:peak_live", "v:peak_age_ns", "v:growth_age_ns", "v:depth",
                          "pairs:frames"]),
    0x20: ("PROC_SAMPLE", ["v:pid", "v:utime_ns", "v:stime_ns", "v:rss_bytes", "v:minflt", "v:majflt",
                           "v:nthreads", "v:vcsw", "v:ivcsw"]),
    0x21: ("THREAD_SAMPLE", ["v:pid", "v:tid", "v:utime_ns", "v:stime_ns", "v:state", "v:last_cpu",
                             "v:vcsw", "v:ivcsw", "v:numa_node_plus_1"]),
    0x22: ("PRESSURE", ["v:resource", "v:some_total_us", "v:full_total_us", "v:some_avg10_x100"]),
    0x23: ("MEMINFO", ["v:mem_total", "v:mem_available", "v:swap_total", "v:swap_free"]),
    0x24: ("NUMA_MAPS", ["v:pid", "arr:pages"]),
    0x25: ("SMAPS", ["v:pid", "v:rss", "v:pss", "v:swap", "v:anon"]),
    0x26: ("CLOCK_PAIR", ["v:realtime_ns", "v:bracket_ns"]),
    0x27: ("PROC_INFO", ["v:pid", "v:ppid", "cnt:cmdline"]),
    0x28: ("PROC_EXIT", ["v:pid", "z:status", "v:how"]),
    0x29: ("THREAD_NAME", ["v:pid", "v:tid", "rest:name"]),
    0x2E: ("PY_SAMPLE", ["v:pid", "v:tid", "v:state", "v:flags", "v:depth", "pairs:frames", "callee:callee", "sched:sched"]),
    0x2F: ("PY_SAMPLER", ["v:hz", "v:ticks", "v:stacks", "v:reads", "v:failed", "v:cpu_ns"]),
    0x40: ("TL_CTX", ["v:pid", "v:tid"]),
    0x48: ("TL_ALLOC", None),  # the layouts of 0x10-0x13 (filled in below)
    0x49: ("TL_FREE", None),
    0x4A: ("TL_ALLOC_SITE", None),
    0x4B: ("TL_ALLOC_INFO", None),
    0x41: ("TL_SPAN_BEGIN", ["v:span_id", "v:parent_id", "v:depth", "v:kind", "v:name_id"]),
    0x42: ("TL_SPAN_END", ["v:span_id", "v:flags"]),
    0x81: ("STRING_DEF", ["v:id", "u8:kind", "v:line", "cnt:name", "cnt:file"]),
    0x90: ("HDR_FORMAT", ["u32:magic", "u16:major", "u16:minor"]),
    0x91: ("HDR_HOST", ["rest:host"]),
    0x92: ("HDR_CMDLINE", ["rest:cmdline"]),
    0x93: ("HDR_BOOT_ID", ["rest:boot_id"]),
    0x94: ("HDR_CLOCK", ["v:realtime_ns", "v:monotonic_ns", "v:bracket_ns"]),
    0x95: ("HDR_RECORDER", ["v:pid", "v:ncpu", "v:sample_hz", "rest:version"]),
    0xA0: ("END_STATS", ["v:events", "v:dropped", "v:lost_frames", "v:flags", "z:status"]),
    0xA2: ("META", ["cnt:key", "rest:value"]),
}

for _tl, _tr in ((0x48, 0x10), (0x49, 0x11), (0x4A, 0x13), (0x4B, 0x12)):
    RECORDS[_tl] = (RECORDS[_tl][0], RECORDS[_tr][1])

HEADER_TYPES = {0x90, 0x91, 0x92, 0x93, 0x94, 0x95}
ALLOC_TYPES = {0x10, 0x11, 0x12, 0x13, 0x0B}  # 0x0B: DROPPED, the recorder's (T §6.7)
AGENT_TYPES = {0x01, 0x02, 0x03, 0x04, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E}
SAMPLE_TYPES = set(range(0x20, 0x2A)) | {0x2E, 0x2F}
# Where each writer's string ids start in a trace (T §7): the Python agent,
# the CUDA agent, the recorder's Python sampler; each counts up from there.
STRING_ID_BASES = (1, 1 << 25, 3 << 24, 7 << 23)
# Which known record types each chunk type may hold (T §3, §5; L §1, §4).
ALLOWED = {
    # META (0xA2): the recorder's settings in SAMPLES chunks (T §6.2), kept in TL_EVENTS (L §4.4)
    "trace": {1: HEADER_TYPES, 2: AGENT_TYPES, 3: {0x81}, 4: SAMPLE_TYPES | {0xA2}, 5: set(), 6: {0xA0},
              9: ALLOC_TYPES},
    "timeline": {1: HEADER_TYPES, 16: {0x81}, 17: {0x40, 0x41, 0x42, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0xA2,
                                                0x48, 0x49, 0x4A, 0x4B} | SAMPLE_TYPES,
                 6: {0xA0}},
}
# String kind a reference must have (T §7; L §4.2).
REF_KIND = {0x01: 0, 0x03: 1, 0x06: 2, 0x08: 3}
SPAN_NAME_KIND = {1: 0, 2: 1, 3: 2}
SPAN_KIND_NAMES = {1: "python", 2: "op", 3: "scope"}


class Truncated(Exception):
    pass


class Corrupt(Exception):
    pass


class BadRecord(Exception):
    pass


def get_varint(b, p, end):
    """LEB128, at most 10 bytes, value < 2^64 (T §1.1)."""
    v = 0
    for i in range(10):
        if p >= end:
            raise BadRecord("varint runs past the end of its record")
        x = b[p]
        p += 1
        if i == 9 and x > 1:
            raise BadRecord("varint does not fit in 64 bits")
        v |= (x & 0x7F) << (7 * i)
        if not x & 0x80:
            return v, p
    raise BadRecord("varint longer than 10 bytes")


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def zstd_frame_end(buf, pos):
    """Parses the zstd frame (or skippable frame) at pos without decoding it.
    Returns (end, skippable, has_checksum, content_size or None)."""
    n = len(buf)

    def need(p):
        if p > n:
            raise Truncated()

    need(pos + 4)
    magic = int.from_bytes(buf[pos:pos + 4], "little")
    if magic & 0xFFFFFFF0 == 0x184D2A50:
        need(pos + 8)
        end = pos + 8 + int.from_bytes(buf[pos + 4:pos + 8], "little")
        need(end)
        return end, True, False, None
    if magic != ZSTD_MAGIC:
        raise Corrupt("no zstd frame magic")
    p = pos + 4
    need(p + 1)
    fhd = buf[p]
    p += 1
    fcs_flag, single, reserved, checksum, did = fhd >> 6, (fhd >> 5) & 1, (fhd >> 3) & 1, (fhd >> 2) & 1, fhd & 3
    if reserved:
        raise Corrupt("reserved bit set in the zstd frame header")
    if not single:
        p += 1  # Window_Descriptor
    p += (0, 1, 2, 4)[did]
    if did:
        need(p)
        if int.from_bytes(buf[p - (0, 1, 2, 4)[did]:p], "little"):
            raise Corrupt("frame needs a dictionary")
    fcs_len = (1 if single else 0, 2, 4, 8)[fcs_flag]
    need(p + fcs_len)
    size = None
    if fcs_len:
        size = int.from_bytes(buf[p:p + fcs_len], "little") + (256 if fcs_len == 2 else 0)
    p += fcs_len
    while True:
        need(p + 3)
        bh = int.from_bytes(buf[p:p + 3], "little")
        p += 3
        last, btype, bsize = bh & 1, (bh >> 1) & 3, bh >> 3
        if btype == 3:
            raise Corrupt("reserved zstd block type")
        if bsize > BLOCK_MAX:
            raise Corrupt("zstd block larger than 128 KiB")
        p += 1 if btype == 1 else bsize
        need(p)
        if last:
            break
    if checksum:
        p += 4
        need(p)
    return p, False, bool(checksum), size


class Decoder:
    def __init__(self, counts, max_errors):
        self.counts = set(counts)
        self.max_errors = max_errors
        self.errors = []
        self.nerrors = 0
        self.format = None
        self.minor = 0
        self.header = {}
        self.frames = self.skippable = self.empty = self.damaged = 0
        self.chunks = {}
        self.records = {}
        self.unknown_records = 0
        self.events = 0
        self.dropped_records = 0
        self.threads = {}  # (pid, tid) -> name
        self.calls = {name: 0 for name in self.counts}
        self.nchunks = 0
        self.end = None
        self.after_end = False
        # trace state
        self.strings = {}  # trace: (pid, id) -> (kind, name); timeline: id -> (kind, name)
        self.max_string_id = {}
        self.py_samples = 0
        self.py_callees = 0
        self.py_sched = 0   # PY_SAMPLEs with the thread's schedstat (1.9)
        self.sched = {}     # (pid, tid) -> the last (run_ns, wait_ns) read
        self.contents = set()
        self.unnamed_refs = 0
        self.undefined = set()
        self.undefined_refs = 0
        self.streams = {}  # (pid, tid) -> [next seq, last ts, ended]
        self.string_seq = {}
        self.watermark = 0
        self.rounds = 0
        self.late = 0
        self.sample_seq = 0
        # timeline state
        self.tl_seq = 0
        self.pending_strings_seq = None
        self.last_ts = 0
        self.order_violations = 0
        self.span_ids = set()
        self.stacks = {}  # (pid, tid) -> ([calls], [scopes]) of (span_id, depth)
        self.span_kind = {}  # open span_id -> kind
        self.spans = 0
        self.closed_by_merge = 0

    def error(self, msg):
        self.nerrors += 1
        if len(self.errors) < self.max_errors:
            self.errors.append(msg)

    # ---- container (T §2) ----------------------------------------------

    def run(self, buf):
        pos = 0
        n = len(buf)
        while pos < n:
            try:
                end, skippable, has_checksum, size = zstd_frame_end(buf, pos)
            except Truncated:
                self.damaged += 1
                self.error("T §2: truncated frame at byte %d" % pos)
                break
            except Corrupt as e:
                self.damaged += 1
                self.error("T §2: damaged frame at byte %d: %s" % (pos, e))
                pos = self.resync(buf, pos)
                continue
            if skippable:
                self.skippable += 1
                pos = end
                continue
            if size is not None and size > HEADER_SIZE + PAYLOAD_MAX:
                self.error("T §3: frame at byte %d holds %d bytes, more than a 16 MiB chunk" % (pos, size))
            try:
                d = zstandard.ZstdDecompressor().decompressobj()
                content = d.decompress(buf[pos:end])
                if not d.eof or d.unused_data:
                    raise Corrupt("frame does not end where its blocks end")
            except (zstandard.ZstdError, Corrupt) as e:
                self.damaged += 1
                self.error("T §2: damaged frame at byte %d: %s" % (pos, e))
                pos = self.resync(buf, pos)
                continue
            self.frames += 1
            if not has_checksum:
                self.error("T §2: frame at byte %d has no content checksum" % pos)
            if size is not None and size != len(content):
                self.error("T §2: frame at byte %d: content size %d, decoded %d" % (pos, size, len(content)))
            start = pos
            pos = end
            if not content:
                self.empty += 1
                continue
            self.chunk(content, start)
        self.finish()

    def resync(self, buf, pos):
        nxt = buf.find(ZSTD_MAGIC_BYTES, pos + 1)
        return len(buf) if nxt < 0 else nxt

    # ---- chunks (T §3) ---------------------------------------------------

    def chunk(self, c, off):
        if len(c) < HEADER_SIZE:
            self.damaged += 1
            self.error("T §3: frame at byte %d decodes to %d bytes, less than a chunk header" % (off, len(c)))
            return
        magic = int.from_bytes(c[0:4], "little")
        ctype = int.from_bytes(c[4:6], "little")
        flags = int.from_bytes(c[6:8], "little")
        pid = int.from_bytes(c[8:12], "little")
        tid = int.from_bytes(c[12:16], "little")
        base = int.from_bytes(c[16:24], "little")
        seq = int.from_bytes(c[24:28], "little")
        plen = int.from_bytes(c[28:32], "little")
        where = "chunk %d (byte %d)" % (self.nchunks, off)
        if magic != CHUNK_MAGIC or flags != 0 or plen != len(c) - HEADER_SIZE:
            self.damaged += 1
            self.error("T §3: %s: bad chunk header (magic %#x, flags %#x, payload_len %d of %d)"
                       % (where, magic, flags, plen, len(c) - HEADER_SIZE))
            return
        if plen > PAYLOAD_MAX:
            self.error("T §3: %s: payload of %d bytes exceeds 16 MiB" % (where, plen))
        name = CHUNK_NAMES.get(ctype, "TYPE_%d" % ctype)
        self.chunks[name] = self.chunks.get(name, 0) + 1
        self.nchunks += 1
        if self.after_end:
            self.error("T §9: %s (%s) follows the END chunk" % (where, name))
        if self.nchunks == 1:
            if ctype != 1:
                self.error("T §4: the first chunk is %s, not FILE_HEADER" % name)
                return
            self.file_header(c[HEADER_SIZE:], pid, tid, base, seq)
            return
        if self.format is None:
            return  # no usable header: nothing else can be checked
        if ctype == 1:
            self.error("T §3: %s: a second FILE_HEADER" % where)
            return
        allowed = ALLOWED[self.format]
        if ctype not in CHUNK_NAMES:
            return  # unknown chunk types are skipped (T §3)
        if ctype not in allowed:
            self.error("%s: %s chunk in a %s" % (where, name, self.format))
            return
        payload = c[HEADER_SIZE:]
        if self.format == "trace":
            self.trace_chunk(ctype, where, pid, tid, base, seq, payload)
        else:
            self.timeline_chunk(ctype, where, pid, tid, base, seq, payload)

    def records_of(self, ctype, where, base, payload, count=True):
        """Yields (type, name, ts, fields, timed) for each record (T §5);
        reports and stops at the first record that does not parse."""
        allowed = ALLOWED[self.format][ctype]
        p, end, ts = 0, len(payload), base
        while p < end:
            rtype = payload[p]
            try:
                size, q = get_varint(payload, p + 1, end)
                if size > end - q:
                    raise BadRecord("record of %d bytes runs past the payload" % size)
                body_end = q + size
                timed = rtype < 0x80
                if timed:
                    delta, q = get_varint(payload, q, body_end)
                    if ts + delta > U64_MAX:
                        raise BadRecord("timestamp beyond 2^64-1")
                    ts += delta
                    first_delta = delta if p == 0 else None
                else:
                    first_delta = None
                spec = RECORDS.get(rtype)
                if spec is None:
                    self.unknown_records += count
                    p = body_end
                    if timed:
                        yield rtype, None, ts, {"_first_delta": first_delta}, True
                    continue
                rname, layout = spec
                if rtype not in allowed:
                    raise BadRecord("%s record in a %s chunk" % (rname, CHUNK_NAMES[ctype]))
                fields = self.parse_fields(payload, q, body_end, layout)
            except BadRecord as e:
                if not count:
                    return
                self.damaged += 1
                self.error("T §5: %s, record at payload offset %d (type %#04x): %s" % (where, p, rtype, e))
                return
            fields["_first_delta"] = first_delta
            fields["_delta"] = delta if timed else None
            if count:
                self.records[rname] = self.records.get(rname, 0) + 1
            p = body_end
            yield rtype, rname, ts, fields, timed

    def parse_fields(self, b, q, end, layout):
        f = {}
        for item in layout:
            code, name = item.split(":")
            if code == "v":
                f[name], q = get_varint(b, q, end)
            elif code == "z":
                v, q = get_varint(b, q, end)
                f[name] = unzigzag(v)
            elif code in ("u8", "u16", "u32"):
                w = {"u8": 1, "u16": 2, "u32": 4}[code]
                if q + w > end:
                    raise BadRecord("record too short for field %s" % name)
                f[name] = int.from_bytes(b[q:q + w], "little")
                q += w
            elif code == "rest":
                f[name] = bytes(b[q:end])
                q = end
            elif code == "cnt":
                n, q = get_varint(b, q, end)
                if n > end - q:
                    raise BadRecord("field %s of %d bytes runs past the record" % (name, n))
                f[name] = bytes(b[q:q + n])
                q += n
            elif code == "pairs":  # PY_SAMPLE frames: f["depth"] (code id, line) pairs
                vals = []
                for _ in range(f.get("depth", 0)):
                    cid, q = get_varint(b, q, end)
                    line, q = get_varint(b, q, end)
                    vals.append((cid, line))
                f[name] = vals
            elif code == "callee":  # PY_SAMPLE 1.4: callee_id, callee when flags bit 4 (T §6.2)
                if self.minor >= 4 and f.get("flags", 0) & 16:
                    f["callee_id"], q = get_varint(b, q, end)
                    f["callee"], q = get_varint(b, q, end)
            elif code == "sched":  # PY_SAMPLE 1.9: run_ns, wait_ns when flags bit 5 (T §6.2)
                if self.minor >= 9 and f.get("flags", 0) & 32:
                    f["run_ns"], q = get_varint(b, q, end)
                    f["wait_ns"], q = get_varint(b, q, end)
            elif code == "arr":
                n, q = get_varint(b, q, end)
                vals = []
                for _ in range(n):
                    v, q = get_varint(b, q, end)
                    vals.append(v)
                f[name] = vals
        if q != end and self.minor == 0:
            raise BadRecord("%d extra bytes after the last field (none in a 1.0 file)" % (end - q))
        return f

    # ---- file header (T §4, L §2) ----------------------------------------

    def file_header(self, payload, pid, tid, base, seq):
        if pid or tid or base or seq:
            self.error("T §3: FILE_HEADER with pid/tid/base_ts/seq not zero")
        self.format = "trace"  # provisional: lets records_of look up ALLOWED
        fmt = None
        h = {}
        # first the version (leniently: a later minor may extend records),
        # then every record, checked against that minor
        self.minor = 0xFFFF
        for rtype, rname, ts, f, timed in self.records_of(1, "file header", 0, payload, count=False):
            if rtype == 0x90:
                self.minor = f["minor"]
                break
        else:
            self.minor = 0
        for rtype, rname, ts, f, timed in self.records_of(1, "file header", 0, payload):
            if rname is None:
                continue
            if rtype == 0x90:
                fmt = f
            elif rtype in (0x91, 0x93):
                h[rname[4:].lower()] = f[list(f)[0]].decode("utf-8", "replace")
            elif rtype == 0x92:
                h["cmdline"] = [a.decode("utf-8", "replace") for a in f["cmdline"].split(b"\0")]
            elif rtype == 0x94:
                h["epoch_realtime_ns"] = f["realtime_ns"]
                h["epoch_monotonic_ns"] = f["monotonic_ns"]
                h["bracket_ns"] = f["bracket_ns"]
            elif rtype == 0x95:
                h["recorder_pid"] = f["pid"]
                h["ncpu"] = f["ncpu"]
                h["sample_hz"] = f["sample_hz"]
                h["writer_version"] = f["version"].decode("utf-8", "replace")
        self.format = None
        if fmt is None:
            self.error("T §4: the file header has no HDR_FORMAT record")
            return
        if fmt["major"] != 1:
            self.error("T §4: format version %d.%d is not 1.x" % (fmt["major"], fmt["minor"]))
            return
        if fmt["magic"] == TRACE_MAGIC:
            self.format = "trace"
        elif fmt["magic"] == TIMELINE_MAGIC:
            self.format = "timeline"
        else:
            self.error("T §4: unknown file magic %#x" % fmt["magic"])
            return
        h["version"] = "%d.%d" % (fmt["major"], fmt["minor"])
        self.header = h
        if "epoch_monotonic_ns" not in h:
            self.error("T §4: no HDR_CLOCK record")
        elif self.format == "trace" and not h["epoch_monotonic_ns"] and not h["epoch_realtime_ns"]:
            self.error("T §4: HDR_CLOCK holds no clock information")
        elif self.format == "timeline" and h["epoch_monotonic_ns"] != 0:
            self.error("L §2: HDR_CLOCK monotonic_ns is %d, not 0" % h["epoch_monotonic_ns"])

    # ---- traces ---------------------------------------------------------------

    def trace_chunk(self, ctype, where, pid, tid, base, seq, payload):
        if ctype == 2:
            self.events_chunk(where, pid, tid, base, seq, payload)
        elif ctype == 3:
            if tid or base or not pid:
                self.error("T §3: %s: STRINGS chunk with pid %d, tid %d, base_ts %d" % (where, pid, tid, base))
            want = self.string_seq.get(pid, 0)
            if seq != want:
                self.error("T §3: %s: STRINGS seq %d of pid %d, expected %d" % (where, seq, pid, want))
            self.string_seq[pid] = seq + 1
            for rtype, rname, ts, f, timed in self.records_of(ctype, where, base, payload):
                if rname:
                    self.string_def(f, pid, where)
        elif ctype == 4:
            if pid or tid:
                self.error("T §3: %s: SAMPLES chunk with pid %d, tid %d" % (where, pid, tid))
            first = True
            for rtype, rname, ts, f, timed in self.records_of(ctype, where, base, payload):
                if first and f.get("_first_delta"):
                    self.error("T §3: %s: first SAMPLES record is %d ns after base_ts" % (where, f["_first_delta"]))
                first = False
                self.check_watermark(ts, where, rname)
                if rtype == 0x29:
                    self.threads.setdefault((f["pid"], f["tid"]), f["name"].decode("utf-8", "replace"))
                elif rtype == 0x2E:
                    self.py_sample(f["pid"], f, where, rname)
        elif ctype == 5:
            if pid or tid or seq or payload:
                self.error("T §3: %s: ROUND with pid, tid, seq or payload" % where)
            if self.rounds and base <= self.watermark:
                self.error("T §8: %s: ROUND watermark %d does not grow (previous %d)" % (where, base, self.watermark))
            self.rounds += 1
            self.watermark = max(self.watermark, base)
        elif ctype == 6:
            self.end_chunk(where, pid, tid, base, seq, payload, ctype)
        elif ctype == 9:
            self.alloc_chunk(where, pid, tid, base, payload)

    def alloc_chunk(self, where, pid, tid, base, payload):
        """T §6.7: the shim's ring records (tid: a ring's, counted in END
        events), or the recorder's site table of a dead process (tid 0)."""
        if not pid:
            self.error("T §3: %s: ALLOC chunk without a pid" % where)
        for rtype, rname, ts, f, timed in self.records_of(9, where, base, payload):
            if not timed:
                continue
            self.check_watermark(ts, where, rname)
            if tid:
                self.events += 1
                self.dropped_records += rtype == 0x0B
            elif rtype in (0x10, 0x11, 0x0B):
                self.error("T §6.7: %s: %s in the site table's chunk (tid 0)" % (where, rname))
            if tid and rtype == 0x13:
                self.error("T §6.7: %s: ALLOC_SITE in a ring's chunk (the recorder writes them, tid 0)" % where)
            if rtype in (0x10, 0x13):
                self.alloc_frames(pid, f, where, rname)

    def alloc_frames(self, pid, f, where, rname):
        if f["depth"] > 32:
            self.error("T §6.7: %s: %s with %d frames (at most 32)" % (where, rname, f["depth"]))
        for cid, line in f["frames"]:
            if cid:
                self.resolve(pid, cid, 0, where, rname)
        if len(f.get("native", [])) > 64:
            self.error("T §6.7: %s: %s with more than 64 native frames" % (where, rname))

    def check_watermark(self, ts, where, rname):
        if ts < self.watermark:
            self.late += 1
            if self.late <= 3:
                self.error("T §8: %s: %s at %d is older than the ROUND watermark %d"
                           % (where, rname or "record", ts, self.watermark))

    def string_def(self, f, pid, where):
        sid, kind = f["id"], f["kind"]
        key = (pid, sid) if self.format == "trace" else sid
        if not 1 <= sid < STRING_ID_LIMIT:
            self.error("T §7: %s: string id %d out of range" % (where, sid))
            return
        if kind > 3:
            self.error("T §7: %s: string %d has kind %d (0-3 in 1.0 files)" % (where, sid, kind))
        if key in self.strings:
            self.error("T §7: %s: string id %d defined twice" % (where, sid))
            return
        base = max(b for b in STRING_ID_BASES if b <= sid) if self.format == "trace" else 1
        rkey = (pid, base) if self.format == "trace" else 0
        last = self.max_string_id.get(rkey, base - 1)
        if sid != last + 1:
            self.error("%s: %s: string id %d follows id %d (ids are %d, %d, %d ...)"
                       % ("T §7" if self.format == "trace" else "L §3", where, sid, last, base, base + 1, base + 2))
        self.max_string_id[rkey] = max(last, sid)
        name = f["name"].decode("utf-8", "replace")
        self.strings[key] = (kind, name)
        if self.format == "timeline":
            content = (kind, f["line"], f["name"], f["file"])
            if content in self.contents:
                self.error("L §3: %s: string %d repeats the content of another id" % (where, sid))
            self.contents.add(content)
            if b"\0" in f["name"] or b"\0" in f["file"]:
                self.error("L §3: %s: string %d holds a NUL byte" % (where, sid))

    def resolve(self, pid, sid, want_kind, where, rname):
        """Checks a string reference; returns the name or None."""
        if self.format == "trace" and sid == 0:
            self.unnamed_refs += 1
            return None
        key = (pid, sid) if self.format == "trace" else sid
        s = self.strings.get(key)
        if s is None:
            self.undefined_refs += 1
            if key not in self.undefined:  # one message per id
                self.undefined.add(key)
                self.error("%s: %s: %s refers to string %d%s before any definition"
                           % ("T §7" if self.format == "trace" else "L §3", where, rname, sid,
                              " of pid %d" % pid if self.format == "trace" else ""))
            return None
        if s[0] != want_kind:
            self.error("%s: %s refers to string %d of kind %d, expected %d" % (where, rname, sid, s[0], want_kind))
        return s[1]

    def events_chunk(self, where, pid, tid, base, seq, payload):
        if not pid or not tid:
            self.error("T §3: %s: EVENTS chunk with pid %d, tid %d" % (where, pid, tid))
        st = self.streams.get((pid, tid))
        if st is None:
            st = self.streams[(pid, tid)] = {"seq": seq, "ts": None, "ended": False, "gap": seq != 0}
            if seq == 0 and base != 0:
                self.error("T §3: %s: first chunk of stream %d/%d has base_ts %d, not 0" % (where, pid, tid, base))
        else:
            if seq != st["seq"]:
                st["gap"] = True
            elif st["ts"] is not None and base != st["ts"]:
                self.error("T §3: %s: base_ts %d of stream %d/%d, previous chunk ended at %d"
                           % (where, base, pid, tid, st["ts"]))
        first = seq == 0
        st["seq"] = seq + 1
        st["ts"] = base
        for rtype, rname, ts, f, timed in self.records_of(2, where, base, payload):
            if not timed:
                continue  # unknown untimed records are skipped
            st["ts"] = ts
            self.events += 1
            self.check_watermark(ts, where, rname)
            if st["ended"]:
                self.error("T §6.1: %s: %s after THREAD_END in stream %d/%d" % (where, rname or "record", pid, tid))
            if first:
                if rtype != 0x09:
                    self.error("T §6.1: %s: stream %d/%d does not start with THREAD_BEGIN" % (where, pid, tid))
                first = False
            if rtype == 0x09:
                self.threads[(pid, tid)] = f["name"].decode("utf-8", "replace")
            elif rtype == 0x0A:
                st["ended"] = True
            elif rtype == 0x0B:
                self.dropped_records += 1
                if f["_delta"]:
                    self.error("T §6.1: %s: DROPPED %d ns after the record before it (the recorder writes delta 0)"
                               % (where, f["_delta"]))
            elif rtype in REF_KIND:
                key = "code_id" if rtype == 0x01 else "func_id" if rtype == 0x03 else "name_id"
                name = self.resolve(pid, f[key], REF_KIND[rtype], where, rname)
                if name is not None and name in self.counts and rtype in (0x01, 0x03, 0x06):
                    self.calls[name] += 1
            elif rtype == 0x0E:  # T §6.1: where (CODE), type and message (TEXT)
                for key, kind in (("where_id", 0), ("type_id", 4), ("message_id", 4)):
                    self.resolve(pid, f[key], kind, where, rname)
        self.threads.setdefault((pid, tid), None)

    def end_chunk(self, where, pid, tid, base, seq, payload, ctype):
        if pid or tid or base or seq:
            self.error("T §9: %s: END chunk with pid/tid/base_ts/seq not zero" % where)
        stats = [f for rtype, rname, ts, f, timed in self.records_of(ctype, where, base, payload) if rname]
        if len(stats) != 1:
            self.error("T §9: %s: END holds %d END_STATS records, not 1" % (where, len(stats)))
        if stats:
            self.end = {k: v for k, v in stats[0].items() if not k.startswith("_")}
            # bit 2 (window: lost frames all evicted by a flight recorder) is a timeline's only (L §8)
            if self.end["flags"] & ~(7 if self.format == "timeline" else 3):
                self.error("T §9: %s: reserved END flags %#x" % (where, self.end["flags"]))
        self.after_end = True

    # ---- timelines ------------------------------------------------------------

    def timeline_chunk(self, ctype, where, pid, tid, base, seq, payload):
        if pid or tid:
            self.error("L §1: %s: pid %d, tid %d, not 0" % (where, pid, tid))
        if self.pending_strings_seq is not None:
            want = self.pending_strings_seq
            self.pending_strings_seq = None
            if ctype == 17 and seq != want:
                self.error("L §1: %s: TL_STRINGS seq %d, the TL_EVENTS that follows has %d" % (where, want, seq))
            elif ctype == 6 and want != self.tl_seq:
                self.error("L §1: TL_STRINGS seq %d before END, expected %d" % (want, self.tl_seq))
            elif ctype == 16:
                self.error("L §1: %s: two TL_STRINGS chunks in a row" % where)
        if ctype == 16:
            if base:
                self.error("L §1: %s: TL_STRINGS base_ts %d" % (where, base))
            self.pending_strings_seq = seq
            for rtype, rname, ts, f, timed in self.records_of(ctype, where, base, payload):
                if rname:
                    self.string_def(f, 0, where)
        elif ctype == 17:
            if seq != self.tl_seq:
                self.error("L §1: %s: TL_EVENTS seq %d, expected %d" % (where, seq, self.tl_seq))
            self.tl_seq = seq + 1
            self.tl_events(where, base, payload)
        elif ctype == 6:
            self.end_chunk(where, pid, tid, base, seq, payload, ctype)

    def tl_events(self, where, base, payload):
        ctx = None
        after_ctx = False
        first = True
        for rtype, rname, ts, f, timed in self.records_of(17, where, base, payload):
            if first:
                if rtype != 0x40:
                    self.error("L §4.1: %s does not start with TL_CTX" % where)
                if f.get("_first_delta"):
                    self.error("L §1: %s: base_ts is not the time of its first record" % where)
                first = False
            if not timed:
                if rtype == 0xA2:  # META (L §4.4): an event of the timeline, at the time before it
                    self.events += 1
                    continue
                self.error("L §4: %s: untimed record %#04x in TL_EVENTS" % (where, rtype))
                continue
            if ts < self.last_ts:
                self.order_violations += 1
                if self.order_violations <= 3:
                    self.error("L §6: %s: %s at %d is older than the record before it (%d)"
                               % (where, rname or "record", ts, self.last_ts))
            else:
                self.last_ts = ts
            if rtype == 0x40:
                new = (f["pid"], f["tid"])
                if ctx == new:
                    self.error("L §4.1: %s: TL_CTX repeats the current context %d/%d" % (where, new[0], new[1]))
                if after_ctx:
                    self.error("L §4.1: %s: two TL_CTX records in a row" % where)
                ctx = new
                ctx_ts = ts
                after_ctx = True
                continue
            if ctx is None:
                continue  # already reported
            if after_ctx and ts != ctx_ts:
                self.error("L §4.1: %s: TL_CTX time %d is not the time of the next record (%d)" % (where, ctx_ts, ts))
            after_ctx = False
            self.events += 1
            if ctx[1]:
                self.threads.setdefault(ctx, None)
            if rtype == 0x41:
                self.span_begin(ctx, f, where)
            elif rtype == 0x42:
                self.span_end(ctx, f, where)
            elif rtype == 0x08:
                self.resolve(0, f["name_id"], 3, where, rname)
            elif rtype == 0x2E:
                self.py_sample(0, f, where, rname)
            elif rtype in (0x48, 0x4A):
                self.alloc_frames(0, f, where, rname)
            elif rtype == 0x09:
                self.threads[ctx] = f["name"].decode("utf-8", "replace")
            elif rtype == 0x0A:
                stacks = self.stacks.get(ctx)
                if stacks and (stacks[0] or stacks[1]):
                    self.error("L §5: %s: THREAD_END of %d/%d with %d spans still open"
                               % (where, ctx[0], ctx[1], len(stacks[0]) + len(stacks[1])))
            elif rtype == 0x0B:
                self.dropped_records += 1
        if after_ctx:
            self.error("L §4.1: %s ends with a TL_CTX" % where)

    def py_sample(self, pid, f, where, rname):
        """A sampled Python stack (T §6.2, §6.5): its frames name code objects of its process."""
        self.py_samples += 1
        if f["flags"] >> (6 if self.minor >= 9 else 5 if self.minor >= 4 else 4):
            self.error("T §6.2: %s: PY_SAMPLE flags %#x use reserved bits" % (where, f["flags"]))
        if "callee" in f:  # 1.4: the innermost frame's C callee
            self.py_callees += f["callee"] & 7 in (1, 2, 3, 4)
            if f["callee"] >> 4 or f["callee"] & 7 > 5:
                self.error("T §6.2: %s: PY_SAMPLE callee %#x is not a kind or uses reserved bits" % (where, f["callee"]))
            elif f["callee"] & 7 in (0, 5) and f["callee_id"]:
                self.error("T §6.2: %s: PY_SAMPLE callee of kind %d names string %d" % (where, f["callee"] & 7, f["callee_id"]))
            elif f["callee_id"]:
                self.resolve(pid, f["callee_id"], 1, where, rname)
        elif self.minor >= 4 and f["depth"]:
            self.error("T §6.2: %s: PY_SAMPLE of a 1.4 file with frames and no callee (flags bit 4)" % where)
        if f["state"] >= 128:
            self.error("T §6.2: %s: PY_SAMPLE state %d is not an ASCII letter" % (where, f["state"]))
        if "wait_ns" in f:  # 1.9: the thread's schedstat, which only grows
            key = (f["pid"], f["tid"])
            last = self.sched.get(key)
            if last and (f["run_ns"] < last[0] or f["wait_ns"] < last[1]):
                self.error("T §6.2: %s: PY_SAMPLE schedstat of thread %d went back (%d, %d after %d, %d)"
                           % (where, f["tid"], f["run_ns"], f["wait_ns"], last[0], last[1]))
            self.sched[key] = (f["run_ns"], f["wait_ns"])
            self.py_sched += 1
        for cid, _line in f["frames"]:
            if cid:  # 0: the recorder could not read the name
                self.resolve(pid, cid, 0, where, rname)

    def span_begin(self, ctx, f, where):
        sid, kind = f["span_id"], f["kind"]
        self.spans += 1
        if sid == 0 or sid in self.span_ids:
            self.error("L §4.2: %s: span id %d is 0 or not unique" % (where, sid))
        self.span_ids.add(sid)
        if kind not in SPAN_KIND_NAMES:
            self.error("L §4.2: %s: span %d has kind %d" % (where, sid, kind))
            return
        name = self.resolve(0, f["name_id"], SPAN_NAME_KIND[kind], where, "SPAN_BEGIN")
        if name is not None and name in self.counts:
            self.calls[name] += 1
        stack = self.stacks.setdefault(ctx, ([], []))[1 if kind == 3 else 0]
        parent = stack[-1] if stack else 0
        if f["parent_id"] != parent or f["depth"] != len(stack):
            self.error("L §4.2: %s: span %d has parent %d depth %d, its stack says parent %d depth %d"
                       % (where, sid, f["parent_id"], f["depth"], parent, len(stack)))
        stack.append(sid)
        self.span_kind[sid] = kind

    def span_end(self, ctx, f, where):
        sid = f["span_id"]
        if f["flags"] & ~1:
            self.error("L §4.2: %s: span %d ends with reserved flags %#x" % (where, sid, f["flags"]))
        if f["flags"] & 1:
            self.closed_by_merge += 1
        calls, scopes = self.stacks.setdefault(ctx, ([], []))
        if calls and calls[-1] == sid:
            calls.pop()
        elif scopes and scopes[-1] == sid:
            scopes.pop()
        else:
            self.error("L §4.2: %s: SPAN_END %d is not the innermost open span of %d/%d" % (where, sid, ctx[0], ctx[1]))
            return
        self.span_kind.pop(sid, None)

    # ---- end of file ------------------------------------------------------------

    def finish(self):
        if self.format is None:
            if not self.errors:
                self.error("T §4: no file header")
            return
        if self.end is None:
            self.error("T §11: no END chunk: the file was cut short")
        if self.undefined_refs:
            self.error("%d references to %d string ids before their definition"
                       % (self.undefined_refs, len(self.undefined)))
        if self.format == "trace":
            self.finish_trace()
        else:
            self.finish_timeline()

    def finish_trace(self):
        if self.late:
            self.error("T §8: %d records are older than a ROUND watermark written before them" % self.late)
        if self.end is None:
            return
        lost, ev = self.end["lost_frames"], self.end["events"]
        gaps = [k for k, s in self.streams.items() if s["gap"]]
        if gaps and not lost and not self.damaged:
            self.error("T §3: EVENTS seq gaps in %d streams with no lost frames" % len(gaps))
        agent = self.events - self.dropped_records  # DROPPED records are the recorder's
        if not lost and not self.damaged and ev != agent:
            self.error("T §9: END says %d events, the EVENTS chunks hold %d (and %d DROPPED records)"
                       % (ev, agent, self.dropped_records))
        elif agent > ev:
            self.error("T §9: END says %d events, fewer than the %d the file holds" % (ev, agent))

    def finish_timeline(self):
        if self.order_violations:
            self.error("L §6: %d records are older than the record before them" % self.order_violations)
        open_spans = sum(len(a) + len(b) for a, b in self.stacks.values())
        if open_spans:
            self.error("L §4.2: %d spans never end" % open_spans)
        if self.end is not None and self.end["events"] != self.events:
            self.error("L §8: END says %d events, the TL_EVENTS chunks hold %d" % (self.end["events"], self.events))

    def summary(self):
        s = {
            "format": self.format,
            "header": self.header,
            "frames": self.frames,
            "skippable_frames": self.skippable,
            "empty_frames": self.empty,
            "damaged": self.damaged,
            "chunks": self.chunks,
            "records": self.records,
            "unknown_records": self.unknown_records,
            "py_samples": self.py_samples,
            "py_callees": self.py_callees,
            "py_sched": self.py_sched,
            "events": self.events,
            "dropped_records": self.dropped_records,
            "strings": len(self.strings),
            "undefined_refs": self.undefined_refs,
            "threads": [{"pid": p, "tid": t, "name": n} for (p, t), n in sorted(self.threads.items())],
            "end": self.end,
        }
        if self.format == "trace":
            s.update({"rounds": self.rounds, "watermark_violations": self.late, "unnamed_refs": self.unnamed_refs,
                      "streams": len(self.streams)})
        elif self.format == "timeline":
            s.update({"spans": self.spans, "closed_by_merge": self.closed_by_merge,
                      "order_violations": self.order_violations})
        if self.counts:
            s["calls"] = self.calls
        if self.nerrors > len(self.errors):
            self.errors.append("... and %d more" % (self.nerrors - len(self.errors)))
        s["errors"] = self.errors
        return s


def main(argv):
    ap = argparse.ArgumentParser(description="Decode and check an InferScope trace (.isc) or timeline (.istl).")
    ap.add_argument("file", help="the file, or - for stdin")
    ap.add_argument("--count", action="append", default=[], metavar="NAME",
                    help="count calls (PY_CALL/C_CALL/SCOPE_BEGIN, or SPAN_BEGIN) of NAME; repeatable")
    ap.add_argument("--max-errors", type=int, default=100, help="messages kept in \"errors\" (default 100)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        if args.file == "-":
            buf = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as fh:
                buf = fh.read()
    except OSError as e:
        sys.stderr.write("isctrace.py: %s: %s\n" % (args.file, e.strerror))
        return 2
    d = Decoder(args.count, max(1, args.max_errors))
    d.run(buf)
    s = d.summary()
    s["file"] = args.file
    json.dump(s, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 1 if d.nerrors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
