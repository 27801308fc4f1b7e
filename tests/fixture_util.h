/* Readers for the expected-output files under fixtures/expected. */
#ifndef SYMD_FIXTURE_UTIL_H
#define SYMD_FIXTURE_UTIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t addr;
    char name[256];
} nm_sym;

/* Function symbols of an llvm-nm -m listing: (__TEXT,__text) entries, minus
 * __mh_execute_header, leading '_' removed. Returns count (-1 on error). */
int load_nm_functions(const char *rel, nm_sym *out, int max);
/* One 0x-hex value per line. */
int load_hex_lines(const char *rel, uint64_t *out, int max);

/* A row of a TSV under fixtures/expected, header skipped; fields split in
 * place. Returns rows (-1 on error). Caller frees *buf. */
typedef struct {
    char *f[8];
    int nf;
} tsv_row;
int load_tsv(const char *rel, tsv_row *rows, int max, char **buf);

#endif
