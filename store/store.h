/* The image and crash store: images and their index blobs, crash reports,
 * in a database reached through a backend (store/backend.h: SQLite, the
 * embedded default), and a size-bounded in-memory cache of loaded indexes
 * so a frame costs a binary search. */
#ifndef SYMD_STORE_H
#define SYMD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../util/err.h"
#include "../dsym/lineindex.h"
#include "../macho/symindex.h"
#include "../unwind/unwind.h"

/* PRAGMA user_version of a database this symd writes; store_open migrates
 * older ones in place (3: crashes gained kind and bug_type; 4: originals
 * compressed, the stored result dropped, group, day, dimension and
 * needed-image counters; 5: a crash's part of its original; 6: system
 * symbol sets; 7: crashes to file again under a new grouping rule; 8: the
 * grouping rule that filed each crash, the digest of the rules in force); 9: the
 * webhook outbox, its deliveries, per-hour group counters); 10: group
 * states, first and last app versions, state history, per-day counters of
 * versions, OS versions and devices); 11: chunks of uploads in parts); 12: a
 * crash's idempotency key and content key, each unique); 13: PostgreSQL's
 * crash post functions, symd_put_crash and symd_put_crashes).
 * Migrations: store/sqlite_schema.c, store/postgres_schema.c. */
#define STORE_SCHEMA_VERSION 13

typedef struct store store;

/* Opens (creating and migrating as needed) the database path names: a
 * postgresql:// (or postgres://) URI, a PostgreSQL database that several
 * symd processes may share, or else a SQLite file. pool is the number of
 * connections (one per serving thread is right); cache_bytes bounds the
 * index cache. With PostgreSQL, images other processes write reach this
 * one's cache and directory within a second (LISTEN/NOTIFY). A database
 * that does not answer (PostgreSQL down or restarting) fails calls with
 * SYMD_E_UNAVAILABLE; its connections are made again on next use. */
symd_status store_open(const char *path, int pool, size_t cache_bytes,
                       store **out, symd_err *err);
void store_close(store *s);

/* One stored (UUID, arch) slice, as the API describes it. */
typedef struct {
    int64_t id;
    uint8_t uuid[16];
    char arch[16];
    char name[256];
    char kind[16];
    uint64_t text_vmaddr, text_size;
    uint32_t symbols, functions;
    bool debug_info;
    int64_t created_at, updated_at; /* unix milliseconds */
    bool system; /* stored by symd import: one of Apple's system libraries (images.system) */
} store_image;

typedef enum { STORE_CREATED, STORE_EXISTS, STORE_UPDATED } store_put_result;

/* A blob stored beside an image's indexes under a kind of its own (e.g.
 * "breakpad_cfi": a Breakpad .sym's STACK CFI rows, breakpad/cfi.h). */
typedef struct {
    const char *kind; /* not "symbols" or "lines"; at most 63 bytes */
    const uint8_t *data;
    size_t len;
} store_blob;

/* A slice ready to store: its metadata (id and times are set by the store),
 * its symbol index blob, from DWARF (or a .sym) its line index blob, from a
 * binary's __unwind_info/__eh_frame its unwind table (unwind/unwind.h),
 * and extra blobs (nextra of them, each kind once), all borrowed; lines
 * NULL when the slice has no debug info, unwind NULL when it has no unwind
 * tables (a dSYM). */
typedef struct {
    store_image meta;
    const uint8_t *symidx;
    size_t symidx_len;
    const uint8_t *lines;
    size_t lines_len;
    const uint8_t *unwind;
    size_t unwind_len;
    const store_blob *extra;
    size_t nextra;
} store_put;

/* How a put merges into the row (UUID, arch) already stored, old (see
 * store_put_images): what both backends decide alike, and an upload
 * holding one slice twice (ingest.c). A Breakpad .sym's
 * slice (kind "breakpad") has module-relative indexes that read right at
 * any text_vmaddr, so a Mach-O's vmaddr (and kind and name) wins over it,
 * and it never moves a Mach-O's. */
typedef struct {
    bool put_syms;  /* replace the symbol index (and symbols, functions) */
    bool put_lines; /* add the line index */
    bool take_kind; /* take the put's kind (and its name, unless "unknown") */
    bool set_place; /* take the put's text_vmaddr and text_size */
} store_merge;

static inline store_merge store_merge_plan(const store_image *old, const store_put *p)
{
    store_merge m;
    bool old_bp = strcmp(old->kind, "breakpad") == 0, new_bp = strcmp(p->meta.kind, "breakpad") == 0;
    bool old_dsym = strcmp(old->kind, "dsym") == 0, new_dsym = strcmp(p->meta.kind, "dsym") == 0;
    /* Never fewer symbols: a line index may leave function names to the
     * symbol index it was built beside. */
    m.put_syms = p->meta.symbols >= old->symbols &&
                 (p->meta.symbols > old->symbols || p->meta.functions > old->functions);
    /* Between a .sym and a Mach-O, the Mach-O's symbol table wins unless it
     * names fewer functions than the .sym has FUNC records (a stripped
     * binary): a .sym's names are a dump_syms tool's ("<name omitted>"),
     * its PUBLIC records count data symbols too. */
    if (old_bp != new_bp)
        m.put_syms = new_bp ? p->meta.functions > old->symbols
                            : p->meta.symbols >= old->functions;
    m.put_lines = p->lines && !old->debug_info;
    m.take_kind = (old_bp && !new_bp) || (old_dsym && !new_dsym && !new_bp);
    m.set_place = !new_bp && (m.put_syms || old_bp);
    return m;
}

/* Stores n slices in one transaction: all or none. A (UUID, arch) already
 * present merges with the new slice, which is then reported UPDATED: the
 * symbol index is replaced when the new one carries no fewer symbols and
 * more symbols or function starts (a stripped binary or a dSYM first, the
 * full binary later; never by fewer symbols, which a line index may rely
 * on), the
 * line index is added when the image had none (the dSYM after its binary),
 * and so is the unwind table (the binary after its dSYM, or a binary stored
 * before symd kept unwind tables, uploaded again), and an extra blob when
 * the image has none of its kind; a dSYM never overrides a binary's kind or
 * name. A Breakpad .sym's slice (kind "breakpad", its indexes
 * module-relative) never overrides a Mach-O's kind, name or
 * text_vmaddr/text_size, while a Mach-O's (binary or dSYM) always overrides
 * a .sym's: its vmaddr is the image's real one; between the two, the
 * Mach-O's symbol index wins unless it is stripped (see store_merge_plan).
 * Nothing new: EXISTS. On success stored[i] holds the stored rows. */
symd_status store_put_images(store *s, store_put *puts, size_t n,
                             store_put_result *results, store_image *stored,
                             symd_err *err);

/* Deletes every slice of uuid; *deleted says how many (0 = unknown uuid). */
symd_status store_delete_image(store *s, const uint8_t uuid[16], size_t *deleted,
                               symd_err *err);

/* Slices of one UUID (at most max), ordered by arch. */
symd_status store_get_image(store *s, const uint8_t uuid[16], store_image *out,
                            size_t max, size_t *n, symd_err *err);

/* Newest first. query matches name (substring) or UUID hex prefix; arch
 * filters exactly; before_id > 0 continues a listing (cursor). *more is set
 * when another page follows. */
symd_status store_list_images(store *s, const char *query, const char *arch,
                              int64_t before_id, size_t limit, store_image *out,
                              size_t *n, bool *more, symd_err *err);

/* What a lookup needs of one stored slice. */
typedef struct {
    char arch[16];
    uint64_t text_vmaddr, text_size;
    bool debug_info;
    bool system; /* an imported system library (store_image.system) */
} store_slice;

/* The slices stored under uuid (at most max of them, by arch; *n 0 when
 * the UUID was never uploaded), from a directory the store keeps in
 * memory per UUID: a UUID asked for again, stored or not, costs no query
 * (so frames of images never uploaded cost a probe of memory), and every
 * write of the UUID refreshes it. Bounded: STORE_DIR_SLOTS UUIDs. */
#define STORE_DIR_SLOTS 16384
#define STORE_DIR_SLICES 8 /* slices a directory entry holds; a UUID with more is read each time */
symd_status store_slices(store *s, const uint8_t uuid[16], store_slice *out, size_t max,
                         size_t *n, symd_err *err);

/* A copy of the blob of kind (e.g. "breakpad_cfi") stored beside (uuid,
 * arch)'s indexes: *data malloc'ed, the caller's. SYMD_E_NOT_FOUND when the
 * image or the blob is not stored. Read each time (not cached). */
symd_status store_get_blob(store *s, const uint8_t uuid[16], const char *arch, const char *kind,
                           uint8_t **data, size_t *len, symd_err *err);

/* Row counts for tests and /metrics: image slices, their index blobs and
 * stored crash reports (crashes may be NULL). */
symd_status store_counts(store *s, int64_t *images, int64_t *blobs, int64_t *crashes,
                         symd_err *err);
/* SELECT 1 against the database. */
bool store_ping(store *s);
/* The backend's name: "sqlite" or "postgresql". */
const char *store_backend_name(const store *s);
/* Whether --db value where names a PostgreSQL database (a server reached
 * over a connection, whose every statement waits on a round trip). */
bool store_is_postgres(const char *where);

/* What store_migrate copied of one table. */
typedef struct {
    const char *table;
    int64_t rows;
    uint64_t bytes;    /* of blob and text values */
    uint64_t checksum; /* of every row (order-independent); equal on both sides */
} store_copy_table;

/* symd migrate: copies every row of the store at `from` (migrated to this
 * symd's schema first) into the empty store at `to` (any backends; ids,
 * times and counters as they are), in one transaction on the target, then
 * reads both again and compares row counts and checksums of every row, blobs
 * included. tables (STORE_COPY_TABLES of them) say what was copied.
 * SYMD_E_INVALID when the target holds data; SYMD_E_DB on a mismatch. */
#define STORE_COPY_TABLES 15
symd_status store_migrate(const char *from, const char *to, store_copy_table *tables,
                          symd_err *err);

/* A slice with its index loaded, shared through the cache. Indexes flagged
 * RELATIVE (a Breakpad .sym's) are opened with the image's text_vmaddr
 * added to their base, so lookups take vmaddrs as for any image. */
typedef struct {
    store_image meta;
    symindex sym;
    bool has_lines;
    lineindex lines; /* when has_lines */
    /* The unwind rows of the binary (unwind_table_find), when has_unwind.
     * Without them, a slice whose kind is "dsym" needs its binary uploaded
     * to be unwound (store_unwind_missing says so). */
    bool has_unwind;
    unw_table unwind;
    /* private */
    uint8_t *blob, *lines_blob, *unwind_blob;
    size_t blob_len, lines_len, unwind_len;
    int refs;
    uint64_t generation;
    int nslices;  /* slices stored under this UUID when loaded */
    void *lru_prev, *lru_next, *hash_next;
} store_loaded;

/* Finds (uuid, arch) and returns it loaded, from the cache when possible.
 * arch may be NULL when the UUID has exactly one slice; with several, the
 * result is SYMD_E_INVALID (arch needed). SYMD_E_NOT_FOUND when unknown.
 * Release with store_release. */
symd_status store_acquire(store *s, const uint8_t uuid[16], const char *arch,
                          store_loaded **out, symd_err *err);
void store_release(store *s, store_loaded *img);

/* Why img cannot be unwound with CFI, NULL when it can (has_unwind): "binary
 * needed for unwinding" when only its dSYM is stored (a dSYM holds no unwind
 * tables), "no unwind tables" for a binary without them. */
const char *store_unwind_missing(const store_loaded *img);

typedef struct {
    uint64_t hits, misses, bytes, entries;
    uint64_t dir_hits, dir_misses; /* the UUID directory (store_slices) */
} store_cache_stats;
void store_cache_stats_get(store *s, store_cache_stats *st);

int64_t store_now_ms(void);

/* ---- chunks of uploads in parts (POST /v1/chunks, /v1/images/assemble) ----
 * Content-addressed pieces of a file being uploaded, each stored under the
 * SHA-256 of its bytes (the caller checked it) with the time it was
 * stored: on PostgreSQL in the database, so every node sees a chunk any
 * node took; on SQLite as files beside the database (<db>.chunks/), their
 * sizes and times in it. Not copied by symd migrate: they are transient. */

typedef enum {
    STORE_CHUNK_STORED, /* new */
    STORE_CHUNK_HELD,   /* already stored (its time is renewed) */
    STORE_CHUNK_FULL,   /* storing it would pass the budget: nothing stored */
} store_chunk_result;

/* Stores len bytes of data under hash unless a chunk of that hash is held,
 * when the bytes of all chunks stay within budget bytes: the check and the
 * insert are one transaction (on PostgreSQL under a lock every node takes),
 * so racing uploads never pass the budget together. */
symd_status store_chunk_put(store *s, const uint8_t hash[32], const uint8_t *data, size_t len,
                            uint64_t budget, store_chunk_result *res, symd_err *err);
/* A temporary file to write a chunk's bytes into as they arrive (about
 * len bytes; hash the one its request names), opened for writing (*fd the
 * caller's to close), its name in tmp, when the backend keeps chunks as
 * files (SQLite's spool): no copy of the body is held in memory, and the
 * file becomes the chunk's by store_chunk_put_temp once its bytes are
 * checked. SYMD_E_UNSUPPORTED when chunks are not files (buffer the body
 * for store_chunk_put). */
symd_status store_chunk_temp(store *s, const uint8_t hash[32], uint64_t len, char *tmp,
                             size_t cap, int *fd, symd_err *err);
/* As store_chunk_put, the bytes being the len of the temporary file tmp
 * (store_chunk_temp's, closed, whose SHA-256 the caller checked is hash):
 * takes tmp, which becomes the chunk's file or is removed. */
symd_status store_chunk_put_temp(store *s, const uint8_t hash[32], const char *tmp,
                                 uint64_t len, uint64_t budget, store_chunk_result *res,
                                 symd_err *err);
/* Removes a temporary file of store_chunk_temp not to be stored (the body
 * refused). */
void store_chunk_temp_drop(store *s, const char *tmp);
/* missing[i] for each of the n hashes: whether no chunk of it is held. */
symd_status store_chunks_missing(store *s, const uint8_t (*hashes)[32], size_t n, bool *missing,
                                 symd_err *err);
/* A copy of the chunk's bytes (*data malloc'ed, the caller's; NULL when
 * empty); SYMD_E_NOT_FOUND when not held. */
symd_status store_chunk_get(store *s, const uint8_t hash[32], uint8_t **data, size_t *len,
                            symd_err *err);
/* The chunk's bytes as a file, opened for reading (*fd the caller's to
 * close, *len its size), when the backend keeps chunks as files (SQLite's
 * spool): SYMD_E_UNSUPPORTED when it does not (use store_chunk_get),
 * SYMD_E_NOT_FOUND when not held. */
symd_status store_chunk_open(store *s, const uint8_t hash[32], int *fd, uint64_t *len,
                             symd_err *err);
/* Deletes the chunks of the n hashes (those held). */
symd_status store_chunks_delete(store *s, const uint8_t (*hashes)[32], size_t n,
                                symd_err *err);
/* Deletes the chunks stored (or renewed) before before_ms; *deleted says
 * how many. */
symd_status store_chunks_expire(store *s, int64_t before_ms, size_t *deleted, symd_err *err);
/* How many chunks are held and their bytes. */
symd_status store_chunk_stats(store *s, int64_t *count, int64_t *bytes, symd_err *err);

/* ---- system symbol sets (symd import) ----
 * A set is one OS build's system libraries (a DeviceSupport folder, a dyld
 * shared cache), keyed by (os_name, os_build, arch); its images are stored
 * once however many sets hold them. images.system marks what an import
 * created: deleting the last set that holds such an image deletes it, while
 * an image a user uploaded (before or after the import) is never deleted
 * with a set. */

typedef struct {
    int64_t id;
    char os_name[64], os_version[64], os_build[64], arch[16], model[64];
    char source[512];               /* what it was imported from (a path, "upload") */
    int64_t created_at, updated_at; /* unix milliseconds */
    int64_t image_count;            /* images linked to it */
    uint64_t bytes;                 /* of those images' index blobs */
} store_symbol_set;

/* One stored slice named by its key. */
typedef struct {
    uint8_t uuid[16];
    char arch[16];
} store_image_key;

/* The set (want->os_name, os_build, arch), created when there is none
 * (created_at now); an existing one takes want's os_version, model and
 * source where they are not empty. os_name and os_build must not be empty
 * (SYMD_E_INVALID). *out is the stored row (counts 0: see
 * store_list_symbol_sets); *created (may be NULL) says which. */
symd_status store_symbol_set_open(store *s, const store_symbol_set *want, store_symbol_set *out,
                                  bool *created, symd_err *err);

/* Stores n slices into set_id in one transaction, all or none: a (UUID,
 * arch) not stored yet is created as a system image (results[i]
 * STORE_CREATED); one stored already (by an upload or another set) is only
 * linked to the set, its index left as it is (STORE_EXISTS). Then the nlinks
 * images of links, which the caller found stored, are linked too; *linked
 * (may be NULL) says how many of them were (one deleted meanwhile is not).
 * SYMD_E_NOT_FOUND when the set is gone. */
symd_status store_symbol_set_add(store *s, int64_t set_id, store_put *puts, size_t n,
                                 store_put_result *results, const store_image_key *links,
                                 size_t nlinks, size_t *linked, symd_err *err);

/* Every set, oldest first (at most max; *n read), with its image count and
 * the bytes of those images' index blobs. */
symd_status store_list_symbol_sets(store *s, store_symbol_set *out, size_t max, size_t *n,
                                   symd_err *err);

/* Deletes set id in one transaction, and with it the images it alone holds
 * that an import created (a user's upload stays, unlinked); *found false
 * when there is no such set, *images_deleted how many images went. */
symd_status store_delete_symbol_set(store *s, int64_t id, bool *found, size_t *images_deleted,
                                    symd_err *err);

/* ---- a group's workflow ----
 * Each group (kind, signature) has a state: unresolved (new groups, and
 * what reopens), resolved, ignored, or regressed (a resolved group a later
 * report reopened; only reports set it). A resolution says what reopens it:
 * any later report (resolved_in ""), a report from a version newer than the
 * newest one the group was reported in when it was resolved ("next"), or
 * newer than a given version ("version"); newer as store/appversion.h
 * orders versions (a report without a version, or an unparsable one, is
 * newer than no version). An ignore lasts forever, until ignore_reports
 * more reports came (the one that makes the count reopens it), or until
 * ignore_until (a time): then the group is unresolved again (never
 * regressed). Each change is recorded (store_group_history). The state
 * outlives the group's crashes: when retention or DELETE took them all, a
 * report of the group later still regresses a resolved one. */
typedef enum {
    STORE_STATE_UNRESOLVED,
    STORE_STATE_RESOLVED,
    STORE_STATE_IGNORED,
    STORE_STATE_REGRESSED,
    STORE_STATE_COUNT
} store_state;
/* "unresolved", "resolved", "ignored", "regressed". */
const char *store_state_name(store_state st);
/* The state named name (exactly); false when none is. */
bool store_state_parse(const char *name, size_t len, store_state *st);

/* What the store holds of a group's workflow. Versions are cut at a UTF-8
 * character's start when longer. */
typedef struct {
    store_state state;
    int64_t changed_at;        /* of the last change, unix ms; 0 never changed */
    char resolved_in[8];       /* resolved: "", "next", "version" */
    char resolved_version[128]; /* "next": the newest seen at resolution ("" none); "version": X */
    int64_t ignore_until;      /* ignored: unix ms, 0 none */
    int64_t ignore_reports;    /* ignored: reports that reopen it, 0 none */
    int64_t ignore_seen;       /* reports since the ignore */
    /* The oldest and newest app version (store/appversion.h) ever filed
     * under the group ("" none): neither retention nor DELETE narrows them,
     * so a group does not look new in a version again once its first
     * reports are gone. */
    char first_version[128], last_version[128];
    int64_t reports;           /* reports ever filed under the group */
} store_group_status;

/* ---- crash reports ---- */

/* A stored crash report: what the listings show and, on request, its
 * original bytes (stored compressed). The symbolication is not stored: a
 * read symbolicates the original again, so later uploads show at once.
 * Strings are owned. kind is a crash_kind_name; bug_type is the .ips
 * header's, 0 when the report has none. The app's image, when the report
 * names one its frames use: listings say whether it is stored under the
 * arch the crash needs (app_stored), so a crash that needs an upload can say
 * which. */
typedef struct {
    int64_t id, created_at;
    char *format, *kind, *process, *bundle_id, *app_version, *os_version, *hardware_model,
        *incident_id, *exception_type, *signature;
    char *grouping_rule; /* the text of the grouping rule that made its signature (the
                            rules file's, server/grouping.h); NULL: the default rule */
    int bug_type;
    int part;          /* which report of the original (a MetricKit / App Store Connect
                          diagnostic: crash_parse_part), 0 for every other format */
    uint8_t *original;
    size_t original_len;
    bool has_app, app_stored;
    uint8_t app_uuid[16];
    char app_arch[16], app_name[256];
    /* What makes a post of it again a duplicate (store_put_crash_ev), each
     * unique among stored crashes, NULL for none; written, never read back:
     * idem_key, the post's Idempotency-Key (store_idem_key); content_key,
     * the report's identity (store_content_key). */
    char *idem_key, *content_key;
} store_crash;
void store_crash_free(store_crash *c);

/* The longest Idempotency-Key header a post may send (bytes). */
#define STORE_IDEM_KEY_MAX 255
/* Room for a content key or a crash's idempotency key and its NUL. */
#define STORE_KEY_SIZE 1024
/* Whether header[0..len) is an Idempotency-Key a post may send: 1 to
 * STORE_IDEM_KEY_MAX printable ASCII characters (a UUID, a hash). */
bool store_idem_key_valid(const char *header, size_t len);
/* The idempotency key of one crash of a post into out[STORE_KEY_SIZE]:
 * header itself for a post of one report; with member (a zip's log) or
 * part (a report of several in one input) "header#part" or
 * "header#member#part", so each report of one post has a key of its own.
 * false when it does not fit (a member name past the room). */
bool store_idem_key(const char *header, const char *member, int part, bool several,
                    char out[STORE_KEY_SIZE]);
/* The identity of a report into out[STORE_KEY_SIZE]: "inc:FORMAT:PART:ID"
 * when it has an incident identifier (1 to 128 bytes; an incident id names
 * the incident whatever bytes carry it), else "sha256:HEX:PART" of its
 * original bytes (c->original, raw). */
void store_content_key(const store_crash *c, char out[STORE_KEY_SIZE]);

/* An image a crash needs (one of its frames lies in it), for the missing
 * list; app: the app's own image; system: the report (or an import) says it
 * is the OS's (crash_classify_images), counted so in crash_image_refs.system
 * once any crash says so. */
typedef struct {
    uint8_t uuid[16];
    const char *arch, *name; /* "" when unknown */
    bool app;
    bool system;
} store_crash_image;

/* Stores a crash (c->id and created_at are set by the store; c's app fields
 * are ignored: imgs says which image is the app's) and the images it needs,
 * and counts it in its group, the group's day, its version, OS and device,
 * all in one transaction; *id is the new crash's. The original is stored
 * compressed. */
symd_status store_put_crash(store *s, const store_crash *c, const store_crash_image *imgs,
                            size_t nimgs, int64_t *id, symd_err *err);
/* What filing a new report did to its group, for the caller of the post
 * (webhooks: group.new, group.regressed). */
typedef struct {
    bool new_group; /* the first report ever filed under its group */
    bool regressed; /* it reopened the resolved group as regressed */
    bool reopened;  /* it reopened an ignored group (its count reached or date passed) */
    store_state state; /* the group's state after it */
    char resolved_version[128]; /* regressed: what the group was resolved in ("" any report) */
    /* A crash with its idem_key or content_key was stored already: nothing
     * was stored or counted, *id is that first copy's (and the rest of the
     * event is empty). */
    bool duplicate;
} store_group_event;
/* store_put_crash, and what filing it did to its group in *ev: the state
 * changes a report makes (a regression, an ignore's end) are decided in
 * the same transaction, by conditional updates under the group's row lock,
 * so two nodes filing reports of one group at once decide them once. A
 * crash whose c->idem_key or c->content_key a stored crash has is not
 * stored: ev->duplicate, *id the stored one's; the check is the insert's
 * own (unique indexes), so two posts of one report at once, on one node
 * or several, store it once. */
symd_status store_put_crash_ev(store *s, const store_crash *c, const store_crash_image *imgs,
                               size_t nimgs, int64_t *id, store_group_event *ev, symd_err *err);

/* A state a user sets (store_set_group_state). */
typedef struct {
    store_state state;          /* UNRESOLVED, RESOLVED or IGNORED */
    const char *resolved_in;    /* RESOLVED: NULL or "", "next", "version" */
    const char *version;        /* resolved_in "version": X (not empty) */
    int64_t ignore_until;       /* IGNORED: unix ms (0 none) */
    int64_t ignore_reports;     /* IGNORED: more reports (0 none) */
    const char *by;             /* the role whose token asked ("report"), recorded */
    const char *note;           /* recorded (NULL none) */
} store_state_change;
/* Sets group (kind, signature)'s state as ch says and records the change;
 * *found false (nothing done) when no crash is filed under the group.
 * *out is the group's workflow after it. SYMD_E_INVALID for a change that
 * is none of the above (regressed, "version" without one). */
symd_status store_set_group_state(store *s, const char *kind, const char *signature,
                                  const store_state_change *ch, store_group_status *out,
                                  bool *found, symd_err *err);

/* One recorded state change. */
typedef struct {
    int64_t id, at;             /* at: unix ms */
    store_state from, to;
    char by[16];                /* the role ("report"), or "system" for a report's or a date's doing */
    char reason[32];            /* "api", "regression", "ignore_reports_reached", "ignore_until_passed" */
    int64_t crash_id;           /* the report that made it (0 none) */
    char resolved_in[8], version[128]; /* a resolution's; a regression's: the report's version */
    int64_t ignore_until, ignore_reports;
    char note[256];
} store_group_change;
/* A group's changes, newest first, at most limit; before_id > 0
 * continues. *more when another page follows. */
symd_status store_group_history(store *s, const char *kind, const char *signature,
                                int64_t before_id, size_t limit, store_group_change *out,
                                size_t *n, bool *more, symd_err *err);
/* Ignores whose date is past (at or before now_ms) end: their groups are
 * unresolved again, recorded at the date. Cheap when none is due (one
 * indexed probe); *ended (may be NULL) says how many ended. Readers call it
 * before they show states, so a passed date always shows. */
symd_status store_end_ignores(store *s, int64_t now_ms, size_t *ended, symd_err *err);

/* Loads crash id (with its original bytes when with_bytes). SYMD_E_NOT_FOUND
 * when unknown. Free with store_crash_free. */
symd_status store_get_crash(store *s, int64_t id, bool with_bytes, store_crash *c,
                            symd_err *err);
/* Files a crash under what it reads as now (a report read again after an
 * upload, or by a parser that learned more, or under other grouping rules;
 * rule: the grouping rule's text, NULL for the default one): its counters
 * move from the old group to the new one in the same transaction. */
symd_status store_update_crash(store *s, int64_t id, const char *signature, const char *kind,
                               int bug_type, const char *rule, symd_err *err);
/* The grouping rules in force are those of digest (grouping_digest: "" for
 * none): when the database last saw others, it notes these and lists every
 * stored crash to file again (store_regroup_next), in one transaction, and
 * *changed says so. Several servers sharing a database and starting with
 * the same rules list the crashes once. */
symd_status store_grouping_rules_changed(store *s, const char *digest, bool *changed,
                                         symd_err *err);
/* Crashes to file again (server/regroup.c): a list the store keeps of
 * crashes whose signature may have changed since they were filed, filled
 * with every stored crash by the migration that brings in a new grouping
 * rule, and by store_regroup_queue_prefix. The list may name crashes
 * deleted since. store_regroup_next reads up to max ids of it (the newest
 * first) without taking them off; store_regroup_done takes ids off. */
symd_status store_regroup_next(store *s, int64_t *ids, size_t max, size_t *n, symd_err *err);
symd_status store_regroup_done(store *s, const int64_t *ids, size_t n, symd_err *err);
/* Adds to the list every crash of the groups (any kind) whose signature
 * starts with prefix (not empty): the groups keyed "Image + 0x1a2b" once
 * Image is uploaded. *queued says how many were added (not on it yet).
 * Costs a scan of the groups, not of the crashes. */
symd_status store_regroup_queue_prefix(store *s, const char *prefix, size_t *queued,
                                       symd_err *err);
/* The names stored crashes give the image uuid (at most max, each cut at
 * 255 bytes), which an upload of it may not share. */
symd_status store_crash_image_names(store *s, const uint8_t uuid[16], char (*names)[256],
                                    size_t max, size_t *n, symd_err *err);
/* Deletes crash id and takes it out of every counter, in one transaction;
 * *deleted false when there was no such crash. */
symd_status store_delete_crash(store *s, int64_t id, bool *deleted, symd_err *err);
/* Retention: deletes, oldest first and at most batch of them, the crashes
 * created before before_ms (0: no age limit) and those beyond the newest
 * max_crashes (0: no count limit), each counted out of its group; *deleted
 * says how many (fewer than batch: nothing older is left to prune). On a
 * database several processes share, one prunes at a time: the others
 * prune nothing (*deleted 0) while it does. */
symd_status store_prune_crashes(store *s, int64_t before_ms, int64_t max_crashes, size_t batch,
                                size_t *deleted, symd_err *err);

/* What a crash listing keeps; NULL (or "") fields do not filter. query
 * matches process, bundle id, signature, exception, version or incident id
 * (substring, any case; for groups: signature or process); the others are
 * exact (format: the report's source format, "ips", "kscrash", ...).
 * Groups only: states keeps the groups in one of the states whose bits
 * (1 << store_state) it sets (0: any), new_in those first reported in that
 * app version (compared as versions: "1.2" is "1.2.0"). */
typedef struct {
    const char *query, *kind, *signature, *app_version, *os_version, *hardware_model, *format;
    unsigned states;
    const char *new_in;
} store_crash_filter;

/* Newest first; before_id > 0 continues. *more when another page follows. */
symd_status store_list_crashes(store *s, const store_crash_filter *f, int64_t before_id,
                               size_t limit, store_crash *out, size_t *n, bool *more,
                               symd_err *err);

typedef struct {
    char *kind, *signature, *app_version, *process; /* owned; version and process are the newest crash's */
    int64_t count, first_seen, last_seen, example_id;
    store_group_status status;
} store_crash_group;
/* Groups (kind, signature), most frequent first, newest on ties. Read from
 * the counters the store keeps as crashes come and go, so a listing costs
 * what it shows, however many crashes are stored; with an app version, OS
 * version or device filter, from that dimension's counters (count then
 * says how many of the group's crashes have that value); with several of
 * them or a format, from the matching crashes themselves. */
symd_status store_crash_groups(store *s, const store_crash_filter *f, size_t limit,
                               store_crash_group *out, size_t *n, symd_err *err);
void store_crash_group_free(store_crash_group *g);

/* Crashes per UTC day: days[i] for day from_day + i (days since 1970-01-01),
 * i < ndays; of one group (kind and signature), one kind (signature NULL),
 * or all (both NULL). */
symd_status store_crash_trend(store *s, const char *kind, const char *signature,
                              int64_t from_day, size_t ndays, int64_t *days, symd_err *err);

/* store_crash_trend of the crashes f keeps: of kind and signature (a group),
 * of one app version, OS version or device (from the counters of each
 * group's values per day), of groups in some states or new in a version
 * (those groups' day counters), as the group listing filters; with several
 * of version, OS version and device, or a format, from the matching
 * crashes of the days asked for. f->query is not read. */
symd_status store_crash_trend_filtered(store *s, const store_crash_filter *f, int64_t from_day,
                                       size_t ndays, int64_t *days, symd_err *err);

/* A group's crashes by app version, OS version or device model, the most
 * frequent first. */
typedef enum { STORE_DIM_APP_VERSION, STORE_DIM_OS_VERSION, STORE_DIM_HARDWARE_MODEL } store_dim;
typedef struct {
    char *value; /* owned */
    int64_t count;
} store_dim_count;
symd_status store_group_spread(store *s, const char *kind, const char *signature, store_dim dim,
                               size_t limit, store_dim_count *out, size_t *n, symd_err *err);
/* Where a page of values ends: the last row's count and value. */
typedef struct {
    int64_t count;
    const char *value;
} store_dim_after;
/* A page of a group's spread (kind and signature), or of every stored
 * crash's values of dim (signature NULL; of kind, NULL: every kind), the
 * most frequent first then by value (bytewise), from the dimension
 * counters: after (NULL: the first page) continues after the previous
 * page's last row; *more when another page follows. The values of the
 * dashboard's filter menus, and a spread past its first 50. */
symd_status store_dim_values(store *s, const char *kind, const char *signature, store_dim dim,
                             const store_dim_after *after, size_t limit, store_dim_count *out,
                             size_t *n, bool *more, symd_err *err);

typedef struct {
    uint8_t uuid[16];
    char arch[16], name[256]; /* as the crashes name it; "" when they do not */
    int64_t crashes, last_crash_id;
    /* The UUID is stored, but under other archs than the crashes need
     * (other_archs: those archs, comma-separated, as many whole names as
     * fit); false when never uploaded. */
    bool found_other_arch;
    char other_archs[128];
    /* The reports say it is the OS's (crash_image_refs.system). */
    bool system;
    /* Of the newest crash needing it (last_crash_id): it is that crash's
     * app image (app), and its app and OS versions ("" when it names none;
     * cut at a UTF-8 character's start when longer). */
    bool app;
    char app_version[64], os_version[128];
} store_missing;
/* Which images a missing-images listing holds. */
typedef enum {
    STORE_MISSING_ALL,
    STORE_MISSING_APP,    /* the app's: system false (dSYMs to upload) */
    STORE_MISSING_SYSTEM, /* the OS's (to import: symd import) */
} store_missing_which;
/* Images stored crashes need that were never uploaded for the arch they
 * need (those of which), the most needed first (then the one a later crash
 * needs; then by UUID and arch): the list CI should upload next. Read from
 * the counters of needed images, so it costs the images, not the crashes. */
symd_status store_missing_images(store *s, store_missing_which which, size_t limit,
                                 store_missing *out, size_t *n, symd_err *err);

/* Missing system images counted by OS build and arch: the build is what
 * the os_version of the newest crash needing each image names in its last
 * parentheses ("iPhone OS 17.1.2 (21B101)" and "iOS 17.1.2 (21B101)" are
 * one build), os_version the newest crash's wording of it ("" when none;
 * cut as in store_missing), arch the one the crashes need ("" when unknown). */
typedef struct {
    char os_version[128], arch[16];
    int64_t images;        /* missing system images of that build and arch */
    int64_t last_crash_id; /* the newest crash needing one of them */
} store_missing_os;
/* Groups of missing system images, the largest first (then the one a later
 * crash needs; then by OS version and arch), at most limit (counted by
 * os_version before builds worded two ways are made one). From the same
 * counters as store_missing_images: it costs the missing images, not the
 * crashes. */
symd_status store_missing_system(store *s, size_t limit, store_missing_os *out, size_t *n,
                                 symd_err *err);

/* ---- webhooks: an outbox of events -------------------------------------
 *
 * An event (group.new, group.spike, image.missing, group.regressed) is
 * written in the transaction of the write that caused it, with one
 * delivery row per configured target URL: a crash post that commits has
 * its events, one that rolls back has none, and a restart loses none. A
 * sender (server/webhook.c) claims due deliveries under a lease, so two
 * nodes on one PostgreSQL database never send one delivery at once, and
 * marks each delivered, retried later, or failed. */

/* What crash posts record events for. None without targets. */
typedef struct {
    const char *const *urls; /* a delivery per event for each */
    size_t nurls;
    /* group.spike: a group's count in the current UTC hour over
     * spike_factor times its hourly mean of the 168 hours before, once it
     * is at least spike_min; spike_factor 0: no spike events (and no
     * per-hour counting) */
    double spike_factor;
    int64_t spike_min;
} store_hooks;
/* Sets what crash posts from now on record (copied; nurls 0: nothing). */
symd_status store_set_hooks(store *s, const store_hooks *h, symd_err *err);

#define STORE_HOOK_HOURS 192 /* hours of per-hour group counts kept (8 days) */

typedef enum {
    STORE_DELIVERY_PENDING = 0,   /* to send (now or at next_at) */
    STORE_DELIVERY_DELIVERED = 1, /* the receiver answered 2xx */
    STORE_DELIVERY_FAILED = 2,    /* given up on */
} store_delivery_state;

/* One delivery of an event to a URL. */
typedef struct {
    int64_t id, event_id;
    int64_t event_at;   /* when the event happened (unix ms) */
    int64_t next_at;    /* the next attempt (pending) */
    int64_t done_at;    /* delivered or given up (0: pending) */
    int64_t updated_at; /* the last attempt, 0 before any */
    int state;          /* store_delivery_state */
    int attempts;       /* made so far */
    int last_status;    /* the last answer's HTTP status, 0: none */
    char type[32];
    char url[512];
    char last_error[200];
    char *data; /* the event's data (a JSON object), malloc'ed; NULL when not asked for */
} store_delivery;

/* Records event type with data (a JSON object's text) in its own
 * transaction, a delivery for each target: for events that no other write
 * causes (and tests). *event_id (may be NULL) is the event's, 0 when there
 * are no targets. */
symd_status store_hook_emit(store *s, const char *type, const char *data, int64_t *event_id,
                            symd_err *err);
/* Claims the oldest due delivery to url (pending, next_at <= now, no lease
 * held) under a lease until lease_until for owner; *found false when none
 * is due. out->data is the event's data (free with store_delivery_free). */
symd_status store_hook_claim(store *s, const char *url, int64_t now, int64_t lease_until,
                             int64_t owner, store_delivery *out, bool *found, symd_err *err);
/* Ends a claimed attempt: state DELIVERED or FAILED (done), or PENDING
 * again to be tried at next_at; status and error (may be NULL) say how it
 * went. *kept false when owner no longer held the lease (nothing written). */
symd_status store_hook_finish(store *s, int64_t id, int64_t owner, int state, int64_t next_at,
                              int status, const char *error, bool *kept, symd_err *err);
/* Deliveries, newest first, below before_id (0: from the newest); *more
 * when there are more. Each out[i].data is set (free each with
 * store_delivery_free). */
symd_status store_hook_list(store *s, int64_t before_id, size_t limit, store_delivery *out,
                            size_t *n, bool *more, symd_err *err);
void store_delivery_free(store_delivery *d);
/* Drops per-hour group counts of hours before before_hour (hours since
 * 1970), and deliveries done (delivered or failed) before done_before
 * (unix ms) with the events left without any. */
symd_status store_hook_prune(store *s, int64_t before_hour, int64_t done_before, symd_err *err);

/* The data of a group.regressed event (a JSON object, malloc'ed; NULL when
 * out of memory): {"group": {kind, signature}, "crash": {id, app_version},
 * "resolved_in", "count"}: the group, the crash that reopened it and the
 * app version it came back in, the version it was marked resolved in, its
 * count. */
char *store_hook_data_group_regressed(const char *kind, const char *signature, int64_t crash_id,
                                      const char *app_version, const char *resolved_in,
                                      int64_t count);
/* Records a group.regressed event (store_hook_emit of the data above) in
 * its own transaction. The group-state code that finds a regression inside
 * a crash post records it in that post's transaction instead: each
 * backend's hook_emit_in_tx (store/sqlite.c, store/postgres.c) with this
 * data, as crash_events_in_tx does for the other events. */
symd_status store_hook_emit_group_regressed(store *s, const char *kind, const char *signature,
                                            int64_t crash_id, const char *app_version,
                                            const char *resolved_in, int64_t count,
                                            int64_t *event_id, symd_err *err);

#endif
