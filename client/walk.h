/* symd upload --url: the files a CI job points at, found and recognised by
 * their bytes (Mach-O, fat, dSYM companions, Breakpad .sym, zips of them),
 * with the (UUID, arch, debug info) of each image they carry, which the
 * server's POST /v1/images/check is asked about.
 *
 * Every file read is untrusted: headers and load commands are read through
 * import/peek.h (bounds-checked, only the first bytes of a Mach-O read),
 * zip members by their first bytes and load commands only (libzip). */
#ifndef SYMD_CLIENT_WALK_H
#define SYMD_CLIENT_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One image a file carries: what the check request names. */
typedef struct {
    uint8_t uuid[16];
    char arch[16];   /* "arm64", …; "" when the file does not say one symd knows */
    bool debug_info; /* a dSYM companion's slice (DWARF), so lines are expected */
} up_item;

typedef enum {
    UP_MACHO,  /* thin or fat Mach-O (binary or dSYM companion) */
    UP_SYM,    /* Breakpad .sym */
    UP_ZIP,    /* a zip holding any of them: sent whole, the server reads its members */
    UP_REFUSED /* found but not sent: err says why (a failure of the run) */
} up_kind;

typedef struct {
    char *path;
    uint64_t size;
    up_kind kind;
    up_item *items;
    size_t nitems;
    char err[256]; /* UP_REFUSED: why */
} up_file;

typedef struct {
    up_file *files;
    size_t n, cap;
    size_t ignored; /* files inside folders that hold no symbols (Info.plist, …) */
} up_list;

/* Walks each of paths (files or folders: .xcarchive, .app, .framework,
 * .dSYM bundles, any folder) depth first, entries in name order, symbolic
 * links to folders not followed and a file reached twice (by links) listed
 * once. Files that are none of the kinds above are counted in ignored when
 * found inside a folder, and refused when named on the command line (so a
 * typo fails CI); a DeviceSupport folder (Xcode's copy of Apple's system
 * libraries) is refused with a pointer to `symd import`. */
void up_walk(const char *const *paths, size_t npaths, up_list *out);

/* Recognises one regular file by its bytes: fills f (kind, size, items;
 * f->path is the caller's). Returns false when the file holds no symbols
 * symd stores (f->err says what it is); a file symd would refuse (an object
 * file without LC_UUID, a corrupt header) is UP_REFUSED with true. */
bool up_recognise(const char *path, up_file *f);
/* The same of a file's bytes in buf (len bytes; a fuzzer's entry). */
bool up_recognise_buf(const uint8_t *buf, size_t len, up_file *f);

void up_list_free(up_list *l);

#endif
