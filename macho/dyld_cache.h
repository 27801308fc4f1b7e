/* dyld shared cache reader: Apple's system libraries of one OS build, packed
 * into one cache file, its subcaches (.1, .2 … or .01, .02 …) and its
 * .symbols file (the local symbols stripped from the cache).
 *
 * The layout follows Apple's published dyld_cache_format.h, from headers
 * without subcaches (fields past the header's mappingOffset are absent) to
 * the current ones. Everything here reads untrusted bytes: the caller passes
 * every file as (buf, len), nothing does I/O, and every table (header,
 * mappings, image and text tables, subcache entries, local-symbols info and
 * its entries, each image's load commands and symbol tables) is checked for
 * range, order and overlap against the bytes before it is used, counts
 * against the bytes left before anything is allocated for them.
 *
 * dyld_cache_open checks the whole cache, every symbol of every image
 * included, so a cache it accepts yields every image's symbols without a
 * further input error; one it refuses leaves nothing behind. */
#ifndef SYMD_DYLD_CACHE_H
#define SYMD_DYLD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macho.h"
#include "../util/err.h"

/* One file of a cache. files[0] of dyld_cache_open is the main cache. */
typedef struct {
    const char *name;   /* for messages: its file name */
    const char *suffix; /* after the main file's name: "" for the main cache,
                           ".1", ".01", ".symbols", ... */
    const uint8_t *buf;
    size_t len;
} dyld_cache_file;

typedef struct {
    uint64_t address, size, file_offset;
    uint32_t max_prot, init_prot;
    unsigned file; /* index into the files */
    unsigned index; /* in its file's mapping table */
} dyld_cache_mapping;

typedef struct {
    const char *path;   /* into the main cache, NUL-terminated (checked) */
    uint64_t address;   /* of its Mach-O header: where it loads, unslid */
    uint8_t uuid[16];   /* LC_UUID, equal to the text table's when present */
    const char *arch;   /* "arm64", "arm64e", "x86_64", "x86_64h" */
    uint32_t cputype, cpusubtype, filetype;
    uint64_t text_vmaddr, text_vmsize; /* its __TEXT segment */
    long alias_of;      /* another entry of the image table with the same
                           address (an older cache's symlink path), or -1 */

    /* Private to the reader. */
    unsigned hdr_file;
    uint64_t hdr_off;
    macho_section *sects;
    size_t nsects;
    uint64_t *fstarts; /* LC_FUNCTION_STARTS as addresses, ascending */
    size_t nfstarts;
    const uint8_t *linkedit; /* the bytes of its __LINKEDIT segment */
    uint64_t linkedit_size;
    uint32_t symoff, nsyms, stroff, strsize; /* relative to linkedit */
    bool has_locals;
    uint32_t local_start, local_count; /* into the local nlist table */
} dyld_cache_image;

typedef struct {
    const dyld_cache_file *files; /* the caller's array: must outlive this */
    size_t nfiles;
    char arch[16];        /* from the magic */
    uint8_t uuid[16];     /* of the main cache */
    uint32_t platform;    /* the header's platform (PLATFORM_* of <mach-o/loader.h>:
                             1 macOS, 2 iOS, 3 tvOS, 4 watchOS, 11 visionOS...);
                             0 when the header has no such field */
    uint32_t os_version;  /* the header's osVersion (0xMMMMmmpp), 0 when absent */
    uint32_t header_size; /* the main header's mappingOffset */
    uint64_t base;        /* address of the main cache's first mapping */
    dyld_cache_mapping *maps; /* of the main cache and its subcaches, by address */
    size_t nmaps;
    dyld_cache_image *images;
    size_t nimages;
    size_t nsubcaches;

    /* Local symbols (of the .symbols file, or of an older main cache). */
    bool has_locals;
    bool symbols_file_missing; /* the header names a .symbols file not given */
    const uint8_t *locals;     /* the local-symbols area */
    uint64_t locals_size;
    uint32_t lnlist_off, lnlist_count, lstr_off, lstr_size;
} dyld_cache;

/* True when buf starts like a dyld shared cache ("dyld"; a whole header
 * says "dyld_v1"): dyld_cache_open then says what is wrong with it. */
bool dyld_cache_is_cache(const uint8_t *buf, size_t len);

/* The suffixes of the files a main cache names (its subcaches in order,
 * then ".symbols" when it has one), for the caller to find them beside it.
 * Only the header and subcache table are read (and checked). The caller
 * frees *out. */
typedef struct {
    char s[33];
} dyld_cache_suffix;
symd_status dyld_cache_suffixes(const dyld_cache_file *main_file, dyld_cache_suffix **out,
                                size_t *n, symd_err *err);

/* Reads and checks a cache: files[0] the main cache, then any of its
 * subcaches and its .symbols file, each named by suffix. Errors:
 * SYMD_E_CORRUPT (naming the file and field), SYMD_E_NOT_MACHO (not a dyld
 * cache), SYMD_E_UNSUPPORTED (an architecture other than arm64, arm64e,
 * x86_64, x86_64h), SYMD_E_NOT_FOUND (a subcache the header lists is not
 * given), SYMD_E_INVALID (a file given is no part of this cache),
 * SYMD_E_NOMEM. A missing .symbols file is no error: images then have only
 * the symbols of their LC_SYMTAB (symbols_file_missing says so). On error c
 * holds nothing to free. */
symd_status dyld_cache_open(const dyld_cache_file *files, size_t nfiles, dyld_cache *c,
                            symd_err *err);
void dyld_cache_close(dyld_cache *c);

/* The function symbols of image i, as macho_function_symbols gives a thin
 * slice's: its LC_SYMTAB entries in the shared __LINKEDIT, then its local
 * symbols. Names point into the files. The caller frees *out. */
symd_status dyld_cache_image_symbols(const dyld_cache *c, size_t i, macho_symbol **out,
                                     size_t *n, symd_err *err);

/* The symbol index blob of image i (symindex_build_symbols over the above,
 * with its function starts), ready for store_put_image like an upload's. */
symd_status dyld_cache_image_symindex(const dyld_cache *c, size_t i, uint8_t **blob,
                                      size_t *len, uint32_t *nsyms, uint32_t *nstarts,
                                      symd_err *err);

#endif
