/*
 * isc_format.h - byte-level constants of the InferScope container, trace
 * (.isc) and timeline (.istl) formats.  formats/trace.md and
 * formats/timeline.md are the normative description; this header mirrors
 * them.  Header-only and dependency-free so the Python agent (built outside
 * libiscope) can include it.
 *
 * Container: a sequence of independent zstd frames.  Each frame decodes to
 * one chunk = a 32-byte chunk header followed by payload_len bytes of
 * records.  Record = u8 type, varint size, size bytes of body.  Types below
 * 0x80 are "timed": their body starts with a varint delta (ns) from the
 * previous timed record of the same chunk (the first from base_ts).
 */
#ifndef ISC_FORMAT_H
#define ISC_FORMAT_H

#include <stdint.h>

/* Appends a LEB128 varint to buf; returns bytes written (at most 10).  The
 * one varint encoder: the library's buffers and both agents use it. */
static inline unsigned isc_put_varint(uint8_t *buf, uint64_t v)
{
	unsigned n = 0;
	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	return n;
}

#define ISC_CHUNK_MAGIC 0x4B435349u /* "ISCK" little-endian */
#define ISC_TRACE_MAGIC 0x54435349u /* "ISCT" */
#define ISC_TIMELINE_MAGIC 0x4C545349u /* "ISTL" */
#define ISC_FORMAT_VERSION_MAJOR 1
#define ISC_FORMAT_VERSION_MINOR 9 /* 1.1: native stack sampling; 1.2: EXCEPTION_REF; 1.3: allocation sampling;
				    1.4: PY_SAMPLE's C callee; 1.5: the CUDA agent's GPU_API site_id; 1.6: timeline
				    sources (TL_CTX source, SOURCE_INFO: a job merge's inputs, formats/timeline.md §11);
				    1.9: PY_SAMPLE's thread schedstat (run and run-queue wait times) */
#define ISC_CHUNK_HEADER_SIZE 32
#define ISC_CHUNK_MAX_PAYLOAD (16u << 20) /* readers refuse larger chunks */
/* A timeline time or GPU duration at or above this (2^62 ns, 146 years) is corrupt (formats/timeline.md §4). */
#define ISC_TL_TIME_LIMIT ((uint64_t)1 << 62)
/* Most inputs (sources) one timeline holds: a larger TL_CTX source is corrupt (formats/timeline.md §4.1). */
#define ISC_TL_MAX_SOURCES 65535u
#define ISC_STRING_ID_LIMIT (1u << 26)    /* string ids are 1 .. limit - 1 */

/* Chunk header, little-endian on disk (see formats/trace.md §3). */
struct isc_chunk_header {
	uint32_t magic;       /* ISC_CHUNK_MAGIC */
	uint16_t type;        /* enum isc_chunk_type */
	uint16_t flags;       /* reserved, must be zero */
	uint32_t pid;         /* stream owner process, 0 if none */
	uint32_t tid;         /* stream owner thread, 0 if none */
	uint64_t base_ts;     /* ns; first timed record's delta is from this */
	uint32_t seq;         /* chunk sequence number within its stream */
	uint32_t payload_len; /* bytes of records after this header */
};

enum isc_chunk_type {
	ISC_CHUNK_FILE_HEADER = 1, /* first chunk of every file */
	ISC_CHUNK_EVENTS = 2,      /* one thread's events (pid, tid) */
	ISC_CHUNK_STRINGS = 3,     /* string definitions of process pid */
	ISC_CHUNK_SAMPLES = 4,     /* sampler records; pid/tid 0 */
	ISC_CHUNK_ROUND = 5,       /* base_ts = watermark: no later event is older */
	ISC_CHUNK_END = 6,         /* last chunk: totals */
	ISC_CHUNK_GPU_EVENTS = 7,  /* records of a CUDA agent (<pid>.cuda.shm): pid, ring's tid */
	ISC_CHUNK_NATIVE = 8,      /* native stack sampler records (0x30-0x37); pid/tid 0 */
	ISC_CHUNK_ALLOC = 9,       /* allocation samples (<pid>.alloc.shm): pid, ring's tid; 0: the site table */
	ISC_CHUNK_TL_STRINGS = 16, /* timeline: global string table additions */
	ISC_CHUNK_TL_EVENTS = 17,  /* timeline: ordered events of all streams */
};

/* Record types.  < 0x80: timed (body starts with varint ts delta). */
enum isc_record_type {
	/* agent events (EVENTS chunks) */
	ISC_REC_PY_CALL = 0x01,     /* varint code_id */
	ISC_REC_PY_RETURN = 0x02,   /* (empty) also on exception unwinding */
	ISC_REC_C_CALL = 0x03,      /* varint func_id */
	ISC_REC_C_RETURN = 0x04,    /* (empty) also C_EXCEPTION */
	ISC_REC_SCOPE_BEGIN = 0x06, /* varint name_id */
	ISC_REC_SCOPE_END = 0x07,   /* (empty) */
	ISC_REC_MARK = 0x08,        /* varint name_id, zigzag varint value */
	ISC_REC_THREAD_BEGIN = 0x09,/* bytes name (rest of body) */
	ISC_REC_THREAD_END = 0x0A,  /* (empty) */
	ISC_REC_DROPPED = 0x0B,     /* varint count dropped since last DROPPED */
	ISC_REC_CALIBRATION = 0x0C, /* mechanism per_event_ps calls plain_ns hooked_ns events (agent) */
	ISC_REC_EXCEPTION = 0x0D,   /* varint line, counted type, counted file, counted function, rest message */
	ISC_REC_EXCEPTION_REF = 0x0E, /* varint line where_id type_id msg_id: strings whole (STRING_DEF) */

	/* allocation sampling (ALLOC chunks, formats/trace.md §6.7) */
	ISC_REC_ALLOC = 0x10,      /* tid address size weight domain flags site depth, depth x (code_id line),
				      nnative, nnative x address */
	ISC_REC_FREE = 0x11,       /* tid address size weight domain site */
	ISC_REC_ALLOC_INFO = 0x12, /* phase interval flags samples frees sites lost_sites lost_ptrs bad_sites */
	ISC_REC_ALLOC_SITE = 0x13, /* site live live_err live_count alloc_bytes alloc_count free_bytes
				      free_count peak_live peak_age_ns growth_age_ns depth, depth x (code_id line) */

	/* sampler / recorder records (SAMPLES chunks), all fields varints */
	ISC_REC_PROC_SAMPLE = 0x20,   /* pid utime_ns stime_ns rss_bytes minflt majflt nthreads vcsw ivcsw */
	ISC_REC_THREAD_SAMPLE = 0x21, /* pid tid utime_ns stime_ns state(char) last_cpu vcsw ivcsw numa_node+1 */
	ISC_REC_PRESSURE = 0x22,      /* resource(0 cpu,1 memory,2 io) some_total_us full_total_us some_avg10_x100 */
	ISC_REC_MEMINFO = 0x23,       /* mem_total mem_available swap_total swap_free (bytes) */
	ISC_REC_NUMA_MAPS = 0x24,     /* pid n then n x pages_on_node */
	ISC_REC_SMAPS = 0x25,         /* pid rss pss swap anon (bytes) */
	ISC_REC_CLOCK_PAIR = 0x26,    /* realtime_ns bracket_ns (ts = monotonic) */
	ISC_REC_PROC_INFO = 0x27,     /* pid ppid, varint len + cmdline bytes (NUL separated) */
	ISC_REC_PROC_EXIT = 0x28,     /* pid, zigzag status, how (0 exited,1 signaled,2 lost) */
	ISC_REC_THREAD_NAME = 0x29,   /* pid tid, rest = name bytes */
	ISC_REC_GPU_SAMPLE = 0x2A,    /* NVML: index util_gpu_pct util_mem_pct mem_used mem_total sm_mhz
					 mem_mhz power_mw temp_c clock_event_reasons pcie_tx_kBps pcie_rx_kBps */
	ISC_REC_GPU_INFO = 0x2B,      /* NVML: index pcie_gen pcie_width link_bw_bytes_per_s mem_total,
					 rest = uuid NUL name */
	ISC_REC_WARNING = 0x2C,       /* pid (0 = session) code (enum isc_warning), rest = message */
	ISC_REC_THREAD_WAIT = 0x2D,   /* pid tid call(enum isc_wait_call) nr+1 arg0 arg1 arg2 arg3 fd+1
					 fd_kind(enum isc_fd_kind), rest = wchan */
	ISC_REC_PY_SAMPLE = 0x2E,     /* pid tid state(char) flags depth, depth x (code_id line), innermost first,
					 then (flags & ISC_PY_SAMPLE_CALLEE, 1.4) callee_id callee,
					 then (flags & ISC_PY_SAMPLE_SCHED, 1.9) run_ns wait_ns */
	ISC_REC_PY_SAMPLER = 0x2F,    /* hz ticks stacks reads failed cpu_ns: the Python sampler's totals */

	/* native stack sampler (NATIVE chunks, formats/trace.md §6.6); every
	 * body starts with varint pid, varint tid (0 when the record has none) */
	ISC_REC_NATIVE_SAMPLER = 0x30, /* pid0 tid0 event period_ns stack_bytes arch nregs flags nrings */
	ISC_REC_NATIVE_SAMPLE = 0x31,  /* pid tid flags nkernel nkernel x ip nregs nregs x reg, rest = user stack */
	ISC_REC_NATIVE_MAP = 0x32,     /* pid tid0 start len pgoff prot source, counted build_id, rest = path */
	ISC_REC_NATIVE_TASK = 0x33,    /* pid tid what ppid ptid, rest = comm */
	ISC_REC_NATIVE_LOST = 0x34,    /* pid0 tid0 records: the kernel's ring was full (PERF_RECORD_LOST) */
	ISC_REC_NATIVE_KSYM = 0x35,    /* pid0 tid0 start, rest = name: a kernel symbol met in a call chain */
	ISC_REC_NATIVE_STATS = 0x36,   /* pid0 tid0 samples lost throttled bytes kernel_ips cpu_ns: totals at exit */

	/* timeline-only records (TL_EVENTS chunks) */
	ISC_REC_TL_CTX = 0x40,        /* varint pid, varint tid[, varint source]: context of following records */
	ISC_REC_TL_SPAN_BEGIN = 0x41, /* span_id parent_id depth kind name_id */
	ISC_REC_TL_SPAN_END = 0x42,   /* span_id flags(1 = closed by merge, not by a return) */
	/* allocation records in a timeline: the trace bodies, code ids global (formats/timeline.md §4.5) */
	ISC_REC_TL_ALLOC = 0x48,      /* ALLOC; context: pid, the allocating thread */
	ISC_REC_TL_FREE = 0x49,       /* FREE; context: pid, the releasing thread */
	ISC_REC_TL_ALLOC_SITE = 0x4A, /* ALLOC_SITE; context: pid, 0 */
	ISC_REC_TL_ALLOC_INFO = 0x4B, /* ALLOC_INFO; context: pid, 0 */

	/* GPU side (timeline; also trace records of the CUDA agent, in
	 * GPU_EVENTS chunks, where ts is the time the agent wrote the record
	 * and the body starts with zigzag start_offset (start - ts) and tid,
	 * then the timeline body below; see formats/trace.md §6.4).
	 * Complete operations: ts = start, with a duration. */
	ISC_REC_GPU_OP = 0x50,  /* device stream kind name_id dur_ns correlation bytes copy_kind
				   src_mem dst_mem flags [grid_x grid_y grid_z block_x block_y
				   block_z registers shared_mem_bytes] [api_tid launch_span_id
				   zigzag launch_gap_ns] [context] (bracketed: optional, see flags) */
	ISC_REC_GPU_API = 0x51, /* name_id dur_ns correlation api(1 runtime, 2 driver, 3 other)
				   cbid flags [span_id]; context = the calling host thread */
	ISC_REC_NVTX_RANGE = 0x52,  /* name_id dur_ns domain_id color category flags(1 instant);
				       context = the host thread */
	ISC_REC_GPU_MEMORY = 0x53,  /* device stream op(1 alloc, 2 free) mem_kind bytes address
				       correlation flags(1 async, 2 totals follow: timeline only)
				       [total_allocated total_reserved] */
	ISC_REC_GPU_DROPPED = 0x54, /* count: activity records CUPTI lost (its buffers were full) */
	ISC_REC_GPU_AGENT = 0x55,   /* cupti_version cupti_built lag_ms flush_ms, rest = agent
				       version: the CUDA agent of this process is recording */

	/* untimed */
	ISC_REC_STRING_DEF = 0x81, /* varint id, u8 kind, varint line, varint len+name, varint len+file */
	ISC_REC_HDR_FORMAT = 0x90, /* u32 file magic, u16 major, u16 minor */
	ISC_REC_HDR_HOST = 0x91,   /* bytes */
	ISC_REC_HDR_CMDLINE = 0x92,/* bytes, NUL separated argv */
	ISC_REC_HDR_BOOT_ID = 0x93,/* bytes */
	ISC_REC_HDR_CLOCK = 0x94,  /* varint realtime_ns monotonic_ns bracket_ns */
	ISC_REC_HDR_RECORDER = 0x95, /* varint pid, varint ncpu, varint sample_hz, bytes version */
	ISC_REC_END_STATS = 0xA0,  /* varint events dropped lost_frames flags (ISC_END_*) status */
	ISC_REC_DEVICE = 0xA1,     /* varint id, sm_count, memory_bytes, cc_major, cc_minor,
				      link_bw_bytes_per_s, bytes name */
	ISC_REC_META = 0xA2,       /* varint klen + key, rest value: free-form metadata
				      (distributedInfo, source format...) */
	ISC_REC_SOURCE_INFO = 0xA3, /* timeline: varint source kind zigzag offset_ns, varint uncertainty_ns
				       method collectives, rest name NUL host NUL boot_id: one input of a job merge */
};

/* SOURCE_INFO kind and method (formats/timeline.md §4.6, version 1.6) */
enum { ISC_SOURCE_TRACES = 1, ISC_SOURCE_KINETO = 2 };
enum { ISC_ALIGN_REFERENCE = 0, ISC_ALIGN_COLLECTIVES = 1, ISC_ALIGN_WALL_CLOCK = 2 };

/* END_STATS flags */
#define ISC_END_ABRUPT 1u   /* the recording did not end cleanly (timeline: an input had no END) */
#define ISC_END_SIGNALED 2u /* the workload was killed by a signal: status is 128 + its number */
#define ISC_END_WINDOW 4u   /* timeline: lost_frames are all frames a flight recorder evicted (no damage) */

enum isc_gpu_kind {
	ISC_GPU_KERNEL = 1,
	ISC_GPU_MEMCPY = 2,
	ISC_GPU_MEMSET = 3,
	ISC_GPU_SYNC = 4, /* cuda_sync: stream/event/context/device synchronization */
	ISC_GPU_OTHER = 5,
};

enum isc_copy_kind { ISC_COPY_NONE, ISC_COPY_HTOD, ISC_COPY_DTOH, ISC_COPY_DTOD, ISC_COPY_HTOH, ISC_COPY_PTOP };
enum isc_mem_kind { ISC_MEM_UNKNOWN, ISC_MEM_PAGEABLE, ISC_MEM_PINNED, ISC_MEM_DEVICE, ISC_MEM_MANAGED };
#define ISC_GPU_FLAG_GRAPH 1u /* launched as part of a CUDA graph */
#define ISC_GPU_FLAG_ANNOTATION 2u /* a range annotated on the stream (gpu_user_annotation), not device work */
#define ISC_GPU_FLAG_NO_STREAM 4u /* the source gave a negative stream (Kineto "stream": -1): none */
#define ISC_GPU_FLAG_LAUNCH 8u  /* GPU_OP: the launch configuration fields follow */
#define ISC_GPU_FLAG_LINK 16u   /* GPU_OP: the launch link fields follow (merge) */
#define ISC_GPU_FLAG_ASYNC 32u  /* GPU_OP memcpy/memset: issued by an asynchronous call */
#define ISC_GPU_FLAG_CONTEXT 64u /* GPU_OP: the CUDA context id follows (last) */
#define ISC_GPU_MEM_TOTALS 2u /* GPU_MEMORY flags: total_allocated, total_reserved follow (timeline, Kineto) */
#define ISC_GPU_API_FLAG_ERROR 1u /* GPU_API: the call returned an error */

/* GPU_OP kind SYNC: copy_kind holds the synchronization type, bytes the CUDA event id. */
enum isc_sync_kind { ISC_SYNC_UNKNOWN, ISC_SYNC_EVENT, ISC_SYNC_STREAM_WAIT_EVENT, ISC_SYNC_STREAM,
		     ISC_SYNC_CONTEXT };
#define ISC_GPU_NONE 0xFFFFFFFFu /* a device or stream field with no value (context sync) */

/* ALLOC and ALLOC_SITE: Python frames per record at most (innermost
 * first), native frames per ALLOC at most (none written before issue 26). */
#define ISC_ALLOC_MAX_DEPTH 32
#define ISC_ALLOC_MAX_NATIVE 64

/* Which allocator a sample came from (ALLOC, FREE `domain`). */
enum isc_alloc_domain {
	ISC_ALLOC_MALLOC = 1, /* malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
	ISC_ALLOC_MMAP = 2,   /* mmap of anonymous memory */
	ISC_ALLOC_PYRAW = 3,  /* CPython PYMEM_DOMAIN_RAW */
	ISC_ALLOC_PYMEM = 4,  /* CPython PYMEM_DOMAIN_MEM */
	ISC_ALLOC_PYOBJ = 5,  /* CPython PYMEM_DOMAIN_OBJ */
};

/* ALLOC flags */
#define ISC_ALLOC_F_UNTRACKED 1u /* the live-pointer table was full: its release will not be seen */
#define ISC_ALLOC_F_TRUNCATED 2u /* the Python stack was deeper than ISC_ALLOC_MAX_DEPTH (innermost kept) */

/* ALLOC_INFO flags (also the shim's header, isc_alloc.h) */
#define ISC_ALLOC_I_MALLOC 1u     /* the malloc family and anonymous mmap are intercepted */
#define ISC_ALLOC_I_OVERRIDDEN 2u /* another object defines malloc first: the malloc family is not seen */
#define ISC_ALLOC_I_PYMEM 4u      /* CPython's allocator domains are hooked */
#define ISC_ALLOC_I_PYSTACK 8u    /* samples carry the Python stack of their thread */

/* ALLOC_INFO phase */
enum isc_alloc_phase {
	ISC_ALLOC_PHASE_START = 0,  /* the shim started sampling this process */
	ISC_ALLOC_PHASE_PYTHON = 1, /* the Python agent hooked CPython's allocators */
	ISC_ALLOC_PHASE_END = 2,    /* the recorder read the site table at the process's death */
};

/* String ids of a CUDA agent start here, those of the Python agent below it,
 * so that both sets of one process share one id space (formats/trace.md §7). */
#define ISC_STRING_ID_CUDA_BASE (1u << 25)
/* ... and the recorder's Python stack sampler's from here (CUDA's stay below). */
#define ISC_STRING_ID_SAMPLER_BASE (3u << 24)
/* ... and the allocation shim's from here to the limit (the sampler's stay below). */
#define ISC_STRING_ID_ALLOC_BASE (7u << 23)

/* WARNING codes: why GPU collection (or part of it) is off. */
enum isc_warning {
	ISC_WARN_OTHER = 0,
	ISC_WARN_NO_DRIVER = 1,        /* libcuda.so.1 cannot be loaded */
	ISC_WARN_STUB_DRIVER = 2,      /* the toolkit's stub libcuda (CUDA_ERROR_STUB_LIBRARY) */
	ISC_WARN_INJECTION_TAKEN = 3,  /* CUDA_INJECTION64_PATH already set by another tool */
	ISC_WARN_NOT_BUILT = 4,        /* built without CUPTI: no libiscope-cuda.so */
	ISC_WARN_NO_NVML = 5,          /* libnvidia-ml.so.1 cannot be loaded: no GPU samples */
	ISC_WARN_CUPTI_VERSION = 6,    /* the loaded CUPTI does not match the one built against */
	ISC_WARN_CUPTI_PRIVILEGES = 7, /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES */
	ISC_WARN_CUPTI_SUBSCRIBER = 8, /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	ISC_WARN_CUPTI_ERROR = 9,      /* any other CUPTI failure at start */
	ISC_WARN_CUPTI_KINDS = 10,     /* some optional activity kinds are unavailable */
	ISC_WARN_PY_STACKS = 11,       /* the Python sampler cannot read a process's stacks */
	ISC_WARN_NO_PY_AGENT = 12,     /* a Python workload ran without the Python agent */
	ISC_WARN_OOM_KILL = 13,        /* the kernel's OOM killer killed this process (pid) */
	ISC_WARN_NATIVE = 14,          /* native stacks are not sampled (perf_event_open refused, ...) */
	ISC_WARN_ALLOC_TABLE = 15,     /* the allocation site table of pid is corrupt (not, or partly, written) */
	ISC_WARN_NO_ALLOC = 16,        /* allocations of pid cannot be sampled (static binary, malloc overridden) */
};

/* NATIVE_SAMPLER event, arch and flags; NATIVE_SAMPLE flags; NATIVE_MAP
 * prot and source; NATIVE_TASK what (formats/trace.md §6.6). */
#define ISC_NATIVE_EVENT_CPU_CLOCK 1   /* PERF_COUNT_SW_CPU_CLOCK: period in ns of the thread's CPU time */
#define ISC_NATIVE_ARCH_X86_64 62      /* EM_X86_64: 17 registers, DWARF numbers 0-16 (rax .. r15, rip) */
#define ISC_NATIVE_X86_64_NREGS 17
#define ISC_NATIVE_MAX_REGS 33         /* readers refuse more (aarch64 would need 33) */
#define ISC_NATIVE_MAX_KERNEL 256      /* readers refuse longer kernel chains */
#define ISC_NATIVE_SAMPLER_KERNEL 1u   /* samples in kernel mode are taken, with kernel call chains */
#define ISC_NATIVE_SAMPLE_KERNEL 1u    /* the sample interrupted kernel code (its chain is the kernel ips) */
#define ISC_NATIVE_SAMPLE_NO_USER 2u   /* no user registers or stack (a kernel thread) */
#define ISC_NATIVE_SAMPLE_STACK_END 4u /* the copy stopped before stack_bytes: the end of the stack was reached */
#define ISC_NATIVE_PROT_EXEC 1u
#define ISC_NATIVE_MAP_SNAPSHOT 0      /* NATIVE_MAP source: /proc/PID/maps */
#define ISC_NATIVE_MAP_MMAP 1          /* NATIVE_MAP source: the kernel's PERF_RECORD_MMAP2 */
enum isc_native_task_what {
	ISC_NATIVE_TASK_FORK = 1,  /* tid of pid was created by ptid of ppid (a thread: pid == ppid) */
	ISC_NATIVE_TASK_EXIT = 2,  /* tid of pid ended */
	ISC_NATIVE_TASK_COMM = 3,  /* the thread was named comm */
	ISC_NATIVE_TASK_EXEC = 4,  /* pid executed a new program (comm is its name): its maps start anew */
};

/* THREAD_WAIT call: what a blocked thread waits in, by system call family
 * (portable: the raw number is the recording machine's; formats/trace.md §6.2). */
enum isc_wait_call {
	ISC_WAIT_UNKNOWN = 0,    /* /proc/TID/syscall unreadable */
	ISC_WAIT_RUNNING = 1,    /* it ran again before the file was read */
	ISC_WAIT_NO_SYSCALL = 2, /* blocked outside a system call (page fault, ...) */
	ISC_WAIT_READ = 3,       /* read, readv, pread64, preadv(2), recvfrom, recvmsg, recvmmsg */
	ISC_WAIT_WRITE = 4,      /* write, writev, pwrite64, pwritev(2), sendto, sendmsg, sendmmsg, sendfile, splice */
	ISC_WAIT_POLL = 5,       /* poll, ppoll, select, pselect6, epoll_wait, epoll_pwait(2) */
	ISC_WAIT_FUTEX = 6,      /* futex, futex_waitv */
	ISC_WAIT_SLEEP = 7,      /* nanosleep, clock_nanosleep, pause */
	ISC_WAIT_CONNECT = 8,    /* accept, accept4, connect */
	ISC_WAIT_CHILD = 9,      /* wait4, waitid */
	ISC_WAIT_FILE = 10,      /* open, openat, fsync, fdatasync, sync_file_range, fallocate, msync,
				    io_getevents, io_uring_enter, ... : file-system work */
	ISC_WAIT_OTHER = 11,     /* any other system call */
};

/* THREAD_WAIT fd_kind: what the descriptor a blocked call uses refers to. */
enum isc_fd_kind {
	ISC_FD_NONE = 0,    /* the call has no descriptor, or it could not be read */
	ISC_FD_FILE = 1,    /* regular file */
	ISC_FD_DIR = 2,
	ISC_FD_PIPE = 3,    /* pipe or FIFO */
	ISC_FD_SOCKET = 4,
	ISC_FD_EVENTFD = 5,
	ISC_FD_EPOLL = 6,
	ISC_FD_ANON = 7,    /* another anonymous inode: timerfd, signalfd, inotify, ... */
	ISC_FD_CHARDEV = 8,
	ISC_FD_BLOCKDEV = 9,
	ISC_FD_OTHER = 10,
};

/* PY_SAMPLE flags (formats/trace.md §6.2) and its callee field (1.4). */
#define ISC_PY_SAMPLE_OPCLASS 3u    /* bits 0-1: the innermost instruction: 0 bytecode, 1 a call, 2 an operator */
#define ISC_PY_SAMPLE_TRUNCATED 4u
#define ISC_PY_SAMPLE_WAITING 8u
#define ISC_PY_SAMPLE_CALLEE 16u    /* callee_id and callee follow the frames */
#define ISC_PY_SAMPLE_SCHED 32u     /* 1.9: run_ns and wait_ns (the thread's schedstat) follow the callee */
#define ISC_PY_CALLEE_TORCH 8u      /* callee bit 3: the callee's type derives from one of torch's */

/* What the innermost frame runs in C (PY_SAMPLE callee bits 0-2). */
enum isc_py_callee_kind {
	ISC_PY_CALLEE_NONE = 0,     /* nothing: the interpreter's own work */
	ISC_PY_CALLEE_FUNCTION = 1, /* a builtin function: time.sleep, torch._C._nn.linear */
	ISC_PY_CALLEE_METHOD = 2,   /* a C method: Tensor.matmul, list.append */
	ISC_PY_CALLEE_SLOT = 3,     /* an operator's type slot on an extension's object: Tensor.__matmul__ */
	ISC_PY_CALLEE_OBJECT = 4,   /* an extension's class or callable object called: torch.Size */
	ISC_PY_CALLEE_UNKNOWN = 5,  /* a call or operator whose callee could not be read */
};

/* String kinds (STRING_DEF) and span kinds (TL_SPAN_BEGIN). */
enum isc_string_kind {
	ISC_STR_CODE = 0,   /* Python code object: qualname, file, first line */
	ISC_STR_CFUNC = 1,  /* C callable: qualified name, module in file, line 0 */
	ISC_STR_SCOPE = 2,  /* scope() name */
	ISC_STR_MARK = 3,   /* mark() name */
	ISC_STR_TEXT = 4,   /* other text of an agent record (an exception's type or message), file empty */
};

enum isc_span_kind {
	ISC_SPAN_PYTHON = 1,
	ISC_SPAN_OP = 2, /* a C call: torch ops, builtins */
	ISC_SPAN_SCOPE = 3,
};

#endif
