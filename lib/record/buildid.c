/*
 * buildid.c - the GNU build id of an ELF file (the NT_GNU_BUILD_ID note),
 * read by the recorder for the mappings of /proc/PID/maps (the kernel
 * gives it for PERF_RECORD_MMAP2 itself).  The file is untrusted (a
 * workload may map anything): every offset and size is checked against
 * the file's size, at most 64 notes segments or sections are looked at,
 * and nothing is read but through the caller's read function.
 *
 *   ELF header -> program headers -> PT_NOTE segment -> notes:
 *     +--------+--------+------+----------+---------------+
 *     | namesz | descsz | type | "GNU\0"  | build id bytes|   (4-byte aligned)
 *     +--------+--------+------+----------+---------------+
 *   (no PT_NOTE with one: the section headers' SHT_NOTE sections)
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"

#define MAX_NOTES_BYTES (64u << 10)

/* The build id among the notes in buf; its length, or 0. */
static size_t find_note(const uint8_t *buf, size_t len, uint8_t *id, size_t cap)
{
	size_t off = 0;
	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		off += 12;
		size_t nal = ((size_t)namesz + 3) & ~(size_t)3, dal = ((size_t)descsz + 3) & ~(size_t)3;
		if (namesz > len - off || nal > len - off || descsz > len - off - nal)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + off, "GNU", 4) && descsz > 0 &&
		    descsz <= cap) {
			memcpy(id, buf + off + nal, descsz);
			return descsz;
		}
		if (dal > len - off - nal)
			return 0;
		off += nal + dal;
	}
	return 0;
}

int isc_build_id_read(isc_read_at_fn rd, void *ctx, uint64_t file_size, uint8_t *id, size_t cap)
{
	Elf64_Ehdr eh;
	uint8_t notes[MAX_NOTES_BYTES];
	if (file_size < sizeof(eh) || rd(ctx, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	/* program headers first: the notes the loader maps */
	if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phoff < file_size && eh.e_phnum <= 64 &&
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) <= file_size - eh.e_phoff) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (rd(ctx, eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph)))
				return 0;
			if (ph.p_type != PT_NOTE || ph.p_offset >= file_size || ph.p_filesz > file_size - ph.p_offset ||
			    ph.p_filesz > sizeof(notes) || rd(ctx, ph.p_offset, notes, ph.p_filesz))
				continue;
			size_t n = find_note(notes, ph.p_filesz, id, cap);
			if (n)
				return (int)n;
		}
	}
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff >= file_size || eh.e_shnum > 64 ||
	    (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > file_size - eh.e_shoff)
		return 0;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		if (rd(ctx, eh.e_shoff + (uint64_t)i * sizeof(sh), &sh, sizeof(sh)))
			return 0;
		if (sh.sh_type != SHT_NOTE || sh.sh_offset >= file_size || sh.sh_size > file_size - sh.sh_offset ||
		    sh.sh_size > sizeof(notes) || rd(ctx, sh.sh_offset, notes, sh.sh_size))
			continue;
		size_t n = find_note(notes, sh.sh_size, id, cap);
		if (n)
			return (int)n;
	}
	return 0;
}

static int pread_all(void *ctx, uint64_t off, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

int isc_build_id_of_path(const char *path, uint8_t *id, size_t cap)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO named by a mapping must not hang us */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	int n = 0;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		n = isc_build_id_read(pread_all, &fd, (uint64_t)st.st_size, id, cap);
	close(fd);
	return n;
}
