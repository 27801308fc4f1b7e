/* Memory meters: what the code reading one request's untrusted input
 * allocates, counted against a limit of the request's own and a pool that
 * every request shares (--max-inflight-mb).
 *
 * A meter is per thread: mem_meter_begin makes it the calling thread's
 * current meter, and every allocation through mem_malloc & co. (the modules
 * that read input include metered.h, which routes their malloc family here;
 * jansson's allocator is set to the same functions) is counted in it until
 * mem_meter_end. Sizes are malloc_usable_size's, so the count is what the
 * allocator really handed out. An allocation that would pass the request's
 * limit, or need more from the pool than the pool has left, fails (NULL)
 * and the meter records why (its first trip); callers see an ordinary
 * out-of-memory and the HTTP layer answers 413 or 503 from the trip.
 *
 * Without a current meter the functions are malloc & co. with one
 * thread-local test. Memory freed by other code (or on another thread) is
 * simply not subtracted: the count errs on the high side, never the low. */
#ifndef SYMD_MEMBUDGET_H
#define SYMD_MEMBUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes every request together may hold; held counts bodies, meters'
 * grants and answers being sent. */
typedef struct {
    _Atomic uint64_t held;
    uint64_t max;
    /* The meter that may pass max (see charge in membudget.c), or NULL. */
    _Atomic(const void *) overdraft;
} mem_pool;

typedef enum {
    MEM_TRIP_NONE = 0,
    MEM_TRIP_REQUEST, /* the request's own limit */
    MEM_TRIP_POOL,    /* the pool had no room left */
} mem_trip;

typedef struct {
    mem_pool *pool;   /* NULL: only the request's limit applies */
    uint64_t limit;   /* bytes this meter may count at once */
    uint64_t used;    /* counted now */
    uint64_t peak;    /* the most counted at once */
    uint64_t granted; /* taken from the pool (>= used), given back at end */
    uint64_t floor;   /* taken from the pool even past its max, so an
                         ordinary request is never refused for others' bodies */
    mem_trip trip;    /* the first refusal, or MEM_TRIP_NONE */
    uint64_t trip_want; /* what the refused allocation asked for */
} mem_meter;

/* Takes n bytes from pool when what it holds stays within cap (its max, or
 * less for a share of it); false otherwise. UINT64_MAX takes them even past
 * the max (counted all the same). */
bool mem_pool_take(mem_pool *pool, uint64_t n, uint64_t cap);
void mem_pool_give(mem_pool *pool, uint64_t n);

/* What every meter may take from the pool past its max (see floor): the
 * handlers that run at once are the server's threads, so the pool is
 * passed by at most threads times this. */
#define MEM_METER_FLOOR (4u << 20)

/* Starts m on this thread (m is the caller's; it must stay valid until
 * mem_meter_end). limit: bytes m may count; pool may be NULL. */
void mem_meter_begin(mem_meter *m, mem_pool *pool, uint64_t limit);
/* Stops counting on this thread and gives m's grant back to its pool. */
void mem_meter_end(mem_meter *m);
/* This thread's meter, or NULL. */
mem_meter *mem_meter_current(void);
/* Makes m (may be NULL) this thread's meter and returns the one before:
 * an error answer is written outside the meter that refused, then the
 * meter is put back. */
mem_meter *mem_meter_swap(mem_meter *m);
/* Sets the limit of the current meter (a request's parse is held to a
 * tighter limit than what follows it). */
void mem_meter_set_limit(mem_meter *m, uint64_t limit);
/* The request's input is read: what follows (symbolication, the answer)
 * is held to the pool only, no longer to the request's limit. No-op
 * without a meter or once it refused. */
void mem_input_read(void);
/* Moves n bytes of m's grant to the caller (e.g. to hold an answer being
 * sent past the meter's end); false when m's grant is smaller. */
bool mem_meter_transfer(mem_meter *m, uint64_t n);
/* Counts n more input bytes: a zip member inflated in memory is read like
 * the body, so it widens the limit by factor * n (saturating). */
void mem_meter_widen(mem_meter *m, uint64_t n);
/* factor for mem_meter_widen, set with the limit by the HTTP layer. */
extern unsigned mem_widen_factor;

/* What reading a body may allocate: a request may use factor * body +
 * allowance in all, its body included (saturating). */
uint64_t mem_request_limit(uint64_t body, unsigned factor, uint64_t allowance);

/* The malloc family, counted in this thread's meter. */
void *mem_malloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);

/* Routes jansson's allocations through mem_malloc/mem_free (once, before
 * any JSON is read; jansson's allocator is process-wide). */
void mem_use_for_json(void);

#endif
