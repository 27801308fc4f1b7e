/* Memory meters (see membudget.h). */
#include "membudget.h"

#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* What a block costs beyond its usable size: glibc's chunk header (and the
 * rounding of small blocks), so the count follows resident memory. */
#define BLOCK_OVERHEAD 16

/* Grants are taken from the pool in steps of this much, so the shared
 * atomic is touched once a MiB, not once an allocation. */
#define GRANT_STEP (1u << 20)

static __thread mem_meter *tl_meter;
unsigned mem_widen_factor = 4;

bool mem_pool_take(mem_pool *pool, uint64_t n, uint64_t cap)
{
    uint64_t cur = atomic_load(&pool->held);
    do {
        if (cap != UINT64_MAX && (cur + n < cur || cur + n > cap))
            return false;
    } while (!atomic_compare_exchange_weak(&pool->held, &cur, cur + n));
    return true;
}

void mem_pool_give(mem_pool *pool, uint64_t n)
{
    atomic_fetch_sub(&pool->held, n);
}

uint64_t mem_request_limit(uint64_t body, unsigned factor, uint64_t allowance)
{
    uint64_t x;
    if (__builtin_mul_overflow(body, (uint64_t)factor, &x) ||
        __builtin_add_overflow(x, allowance, &x))
        return UINT64_MAX;
    return x - body; /* factor >= 1: no wrap */
}

void mem_meter_begin(mem_meter *m, mem_pool *pool, uint64_t limit)
{
    memset(m, 0, sizeof *m);
    m->pool = pool;
    m->limit = limit;
    m->floor = MEM_METER_FLOOR;
    tl_meter = m;
}

void mem_meter_end(mem_meter *m)
{
    if (tl_meter == m)
        tl_meter = NULL;
    const void *mine = m;
    if (m->pool)
        atomic_compare_exchange_strong(&m->pool->overdraft, &mine, NULL);
    if (m->pool && m->granted)
        mem_pool_give(m->pool, m->granted);
    m->granted = 0;
}

mem_meter *mem_meter_current(void) { return tl_meter; }

mem_meter *mem_meter_swap(mem_meter *m)
{
    mem_meter *old = tl_meter;
    tl_meter = m;
    return old;
}

void mem_meter_set_limit(mem_meter *m, uint64_t limit) { m->limit = limit; }

void mem_input_read(void)
{
    if (tl_meter && !tl_meter->trip)
        tl_meter->limit = UINT64_MAX;
}

bool mem_meter_transfer(mem_meter *m, uint64_t n)
{
    if (m->granted < n)
        return false;
    m->granted -= n;
    m->used = m->used > n ? m->used - n : 0;
    return true;
}

void mem_meter_widen(mem_meter *m, uint64_t n)
{
    if (!m)
        return;
    /* the inflated bytes are read like a body: factor times them, of which
     * they are one (their own buffer is counted as it is allocated) */
    uint64_t add;
    if (__builtin_mul_overflow(n, (uint64_t)mem_widen_factor, &add) ||
        __builtin_add_overflow(m->limit, add, &m->limit))
        m->limit = UINT64_MAX;
}

/* Requests that grow at once (large answers) would otherwise all be
 * refused together as the pool fills, none finishing. So the first meter
 * the pool refuses while no other holds the overdraft takes it: until it
 * ends it may take past the pool's max, as long as its own grant stays
 * within the max (what it could have had alone). The others are refused at
 * their next step and give back what they held. True when m holds the
 * overdraft and took want. */
static bool overdraw(mem_meter *m, uint64_t want)
{
    const void *none = NULL;
    if (atomic_load(&m->pool->overdraft) != m &&
        !atomic_compare_exchange_strong(&m->pool->overdraft, &none, m))
        return false;
    if (m->granted + want < m->granted || m->granted + want > m->pool->max)
        return false;
    return mem_pool_take(m->pool, want, UINT64_MAX);
}

/* Counts n more bytes in m; false (nothing counted, the trip recorded)
 * when they pass m's limit or the pool has no room for them. */
static bool charge(mem_meter *m, uint64_t n)
{
    uint64_t used = m->used + n;
    if (used < m->used || used > m->limit) {
        if (!m->trip) {
            m->trip = MEM_TRIP_REQUEST;
            m->trip_want = n;
        }
        return false;
    }
    if (m->pool && used > m->granted) {
        uint64_t want = used - m->granted;
        want = (want + GRANT_STEP - 1) / GRANT_STEP * GRANT_STEP;
        if (!mem_pool_take(m->pool, want,
                           m->granted + want <= m->floor ? UINT64_MAX : m->pool->max) &&
            !overdraw(m, want)) {
            if (!m->trip) {
                m->trip = MEM_TRIP_POOL;
                m->trip_want = n;
            }
            return false;
        }
        m->granted += want;
    }
    m->used = used;
    if (used > m->peak)
        m->peak = used;
    return true;
}

/* Counts n bytes that are already allocated (the allocator's slack past
 * what was asked): no refusal; the pool is asked at the next charge. */
static void charge_slack(mem_meter *m, uint64_t n)
{
    m->used += n;
    if (m->used > m->peak)
        m->peak = m->used;
}

static void uncharge(mem_meter *m, uint64_t n)
{
    m->used = m->used > n ? m->used - n : 0;
}

void *mem_malloc(size_t n)
{
    mem_meter *m = tl_meter;
    if (!m)
        return malloc(n);
    if (!charge(m, n))
        return NULL;
    void *p = malloc(n);
    if (!p) {
        uncharge(m, n);
        return NULL;
    }
    charge_slack(m, malloc_usable_size(p) + BLOCK_OVERHEAD - n);
    return p;
}

void *mem_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    mem_meter *m = tl_meter;
    if (!m)
        return calloc(n, size);
    void *p = mem_malloc(total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *mem_realloc(void *p, size_t n)
{
    mem_meter *m = tl_meter;
    if (!m)
        return realloc(p, n);
    if (!p)
        return mem_malloc(n);
    size_t old = malloc_usable_size(p) + BLOCK_OVERHEAD;
    /* The old and the new block may both be live while realloc copies:
     * count the new one in full first. */
    if (!charge(m, n))
        return NULL;
    void *q = realloc(p, n);
    if (!q) {
        uncharge(m, n);
        return NULL;
    }
    uncharge(m, old);
    charge_slack(m, malloc_usable_size(q) + BLOCK_OVERHEAD - n);
    return q;
}

void mem_free(void *p)
{
    mem_meter *m = tl_meter;
    if (m && p)
        uncharge(m, malloc_usable_size(p) + BLOCK_OVERHEAD);
    free(p);
}

char *mem_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mem_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *mem_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = mem_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

void mem_use_for_json(void)
{
    json_set_alloc_funcs(mem_malloc, mem_free);
}
