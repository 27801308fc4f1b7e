/* What symd import needs to know of a Mach-O file before reading it: each
 * slice's (UUID, arch) from its header and load commands, and the byte
 * ranges the symbol and line indexes are built from (header and load
 * commands, the symbol and string tables, the function starts, __DWARF).
 * A file whose slices are all stored is then skipped having read only its
 * first bytes, and a new one is read in those ranges only: the code and
 * data, most of a library's bytes, are never read.
 *
 * Reads untrusted bytes: callers pass (buf, len) of what they read; every
 * offset and size from the file is checked against the bytes given and the
 * file's size before it is used. */
#ifndef SYMD_IMPORT_PEEK_H
#define SYMD_IMPORT_PEEK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../macho/macho.h"
#include "../util/err.h"

/* Bytes of a file's start that hold any fat header symd reads (64 slices of
 * 32 bytes, after 8), and the magic of a thin one. */
#define PEEK_HEAD 4096u
/* Load commands larger than this are refused (real ones are tens of KiB). */
#define PEEK_MAX_CMDS (16u << 20)
#define PEEK_MAX_RANGES 8

typedef struct {
    uint64_t off, size; /* relative to the slice */
} peek_range;

typedef struct {
    uint32_t cputype, cpusubtype; /* the fat header's (a thin file's own) */
    uint64_t offset, size;        /* of the slice in the file */
    /* set by peek_load_commands: */
    const char *arch;             /* macho_arch_name, NULL when unknown */
    bool has_uuid;
    uint8_t uuid[16];
    peek_range need[PEEK_MAX_RANGES]; /* what the indexes read, inside the slice */
    size_t nneed;
} peek_slice;

/* The slices of a file of file_size bytes from its first head_len bytes
 * (at least min(PEEK_HEAD, file_size) of them, or the file is taken as
 * truncated): a thin file is one slice. Each fat slice lies inside the file.
 * SYMD_E_NOT_MACHO when the magic is neither Mach-O nor fat (or is a Java
 * class file's), SYMD_E_UNSUPPORTED for big-endian Mach-O, SYMD_E_CORRUPT
 * for a fat header that does not hold together. */
symd_status peek_slices(const uint8_t *head, size_t head_len, uint64_t file_size,
                        peek_slice out[MACHO_MAX_SLICES], size_t *n, symd_err *err);

/* The bytes of a slice's header and load commands, from its first hdr_len
 * bytes (32 suffice): what to read next for peek_load_commands. */
symd_status peek_commands_size(const uint8_t *hdr, size_t hdr_len, const peek_slice *sl,
                               uint32_t *size, symd_err *err);

/* Reads a slice's header and load commands (cmds: its first len bytes, at
 * least peek_commands_size of them): its arch, LC_UUID and the ranges the
 * indexes need, each checked to lie inside the slice. */
symd_status peek_load_commands(const uint8_t *cmds, size_t len, peek_slice *sl,
                               symd_err *err);

#endif
