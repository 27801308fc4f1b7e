/* Grouping rules (--grouping-rules FILE): lines that match a report on its
 * function, image, exception type, message or kind and set its group's
 * fingerprint (merge) or add to the default one (split). The format, its
 * limits and the order rules apply in are in the README ("Grouping
 * rules"); this is the parser (bytes in, no I/O), the matcher and the
 * process's active rule set. */
#ifndef SYMD_GROUPING_H
#define SYMD_GROUPING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Limits of a rules file: past one, the file is refused (at the line that
 * passed it). */
#define GROUPING_FILE_MAX (1u << 20) /* bytes of a rules file */
#define GROUPING_LINE_MAX 4096       /* bytes of one line */
#define GROUPING_RULES_MAX 1000      /* rules in a file */
#define GROUPING_MATCHERS_MAX 8      /* matchers of one rule */
#define GROUPING_VALUES_MAX 8        /* fingerprint values of one rule */
/* Glob steps one report's matching may take against a whole rule set; past
 * it, the rules left do not match (no real rule set comes near: 1,000
 * rules of `function:*Name*` against 64 frames of 100-byte names take about
 * 10^7). */
#define GROUPING_MATCH_STEPS 100000000ull
/* Frames of each thread the signature reads (its exception backtraces and
 * the crashed thread) that the function and image matchers read. */
#define GROUPING_FRAMES 64
/* Bytes of a fingerprint value after its variables are filled in, and of
 * the signature a rule makes (PostgreSQL indexes keys of about 2,700). */
#define GROUPING_VALUE_MAX 1024
#define GROUPING_SIGNATURE_MAX 2048
/* Bytes of a {{ message }}: its first line. */
#define GROUPING_MESSAGE_LINE_MAX 200

typedef struct grouping_rules grouping_rules;

/* Parses a rules file's bytes (buf, len: any bytes). On success *out holds
 * the rules (possibly none: a file of comments); otherwise *out is NULL,
 * *line is the 1-based line that broke it (0: the file as a whole, e.g.
 * larger than GROUPING_FILE_MAX) and err says why (SYMD_E_CORRUPT,
 * SYMD_E_TOO_LARGE for a limit, SYMD_E_NOMEM). */
symd_status grouping_parse(const char *buf, size_t len, grouping_rules **out, size_t *line,
                           symd_err *err);

/* Frees a rule set nobody holds (grouping_parse's; NULL: no-op). */
void grouping_free(grouping_rules *g);

/* How many rules g has (NULL: 0). */
size_t grouping_count(const grouping_rules *g);

/* What the rules mean, as 32 hex digits ("" for no rules): equal for two
 * files that differ only in comments, blank lines and blanks around lines,
 * so stored crashes are refiled only when a rule changed. */
const char *grouping_digest(const grouping_rules *g);

/* The report as the matchers read it. Strings may be NULL (matched as "").
 * functions: the function names of the app frames and the top frame of
 * the threads the signature reads (exception backtraces, then the crashed
 * thread; GROUPING_FRAMES of each); images: the images of their frames. */
typedef struct {
    const char *kind;    /* "crash", "hang", ... */
    const char *type;    /* the exception type as signatures write it */
    const char *message; /* what the report says of the crash (may span lines) */
    const char *const *functions;
    size_t nfunctions;
    const char *const *images;
    size_t nimages;
    const char *top_function; /* {{ function }} by default: the top app frame's */
    const char *top_image;    /* {{ image }} by default: the top frame's */
} grouping_facts;

/* The first rule of g that matches f: *sig is the signature it makes
 * (malloc'ed; from its fingerprint with def for {{ default }}) and *rule
 * its text (borrowed from g); both NULL when no rule matches (or g is
 * NULL). SYMD_E_NOMEM only. */
symd_status grouping_apply(const grouping_rules *g, const grouping_facts *f, const char *def,
                           char **sig, const char **rule, symd_err *err);

/* Whether glob pattern p (p_len bytes; '*' any run, '?' any one byte,
 * ASCII case ignored) matches all of s, within *steps (counted down;
 * false once it runs out). */
bool grouping_glob(const char *p, size_t p_len, const char *s, size_t s_len, uint64_t *steps);

/* ---- the process's active rules ----
 * One rule set is active at a time; a reload swaps it while requests still
 * use the old one, which is freed when the last of them lets go. */

/* Makes g (from grouping_parse; NULL: none) the active set. */
void grouping_activate(grouping_rules *g);

/* The active set, held until grouping_release (NULL when none). */
grouping_rules *grouping_acquire(void);
void grouping_release(grouping_rules *g);

#endif
