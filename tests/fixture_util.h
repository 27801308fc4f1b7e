/* Readers for the expected-output files under fixtures/expected. */
#ifndef SYMD_FIXTURE_UTIL_H
#define SYMD_FIXTURE_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t addr;
    char name[1024]; /* real Swift names run past 256 bytes */
} nm_sym;

/* Function symbols of an llvm-nm -m listing: (__TEXT,__text) entries, minus
 * __mh_execute_header, leading '_' removed. Returns count (-1 on error). */
int load_nm_functions(const char *rel, nm_sym *out, int max);
/* One 0x-hex value per line. */
int load_hex_lines(const char *rel, uint64_t *out, int max);

/* A row of a TSV under fixtures/expected, header skipped; fields split in
 * place. Returns rows (-1 on error). Caller frees *buf. */
typedef struct {
    char *f[12];
    int nf;
} tsv_row;
int load_tsv(const char *rel, tsv_row *rows, int max, char **buf);

/* What twin_row_matches checks of the outer frame beside its status, that
 * it is not inlined, and a symbolicated one's symbol and offset. */
#define TWIN_IMAGE 1u   /* its image is column 2 */
#define TWIN_ADDRESS 2u /* its address is column 1 */
/* Whether an answer's frames from *k on are row r of a twins TSV (0 frame,
 * 1 address, 2 image, 6 status, 7 symbol, 8 offset, 9 the inlined levels
 * "fn (file:line) | fn (file:line)", innermost first): every level's
 * symbol, file and line, then the outer frame. *k moves past the row's
 * frames, *outer is the outer frame (NULL when missing). */
bool twin_row_matches(json_t *frames, size_t *k, const tsv_row *r, unsigned flags,
                      json_t **outer);

/* The (UUID, arch) lines of an llvm-dwarfdump --uuid listing (a .uuid file):
 * "UUID: 4C4C4490-5555-3144-A17C-64A339EDE13A (arm64) bin/...". Returns count
 * (-1 on error). */
typedef struct {
    char uuid[37];
    char arch[16];
} fixture_slice;
int load_uuids(const char *rel, fixture_slice *out, int max);

#endif
