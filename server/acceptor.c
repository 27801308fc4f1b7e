/* Admission of connections (see acceptor.h): the listening socket, the
 * accepting thread, and the slot table it keeps with libmicrohttpd's
 * connection callbacks.
 *
 * State, all under mu:
 * - slots[fd]: one per admitted socket, from accept4 to acceptor_release.
 *   A slot is counted (in total and in its address's count) until it is
 *   released or evicted; an evicted one stays listed, uncounted, until
 *   libmicrohttpd closes it, so a late release finds it and is not counted
 *   twice (evicting says how many such there are).
 * - addresses: a hash table of the client addresses holding slots, each
 *   with its counted slots in accept order (oldest first).
 * The socket number keys a slot: it cannot be reused before
 * acceptor_release, which libmicrohttpd calls before it closes the socket.
 * Two paths close a socket without that call (MHD_add_connection failing at
 * once, or a worker refusing the connection later); the first is handled
 * where it happens, the second when accept4 hands out the same number again
 * or by the sweep of admitted sockets never started. */
#include "acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct addr_node {
    struct addr_node *next; /* hash chain */
    uint8_t key[16];        /* IPv6, or IPv4 as ::ffff:a.b.c.d */
    unsigned count;         /* counted slots */
    unsigned refs;          /* counted and evicted slots naming it */
    int head, tail;         /* counted slots, oldest first (fds; -1: none) */
} addr_node;

typedef struct {
    addr_node *addr;  /* NULL: free */
    void *ctx;        /* from acceptor_attach; NULL until then */
    int prev, next;   /* the address's list (fds; -1: end) */
    bool evicted;     /* shut down for a newcomer, no longer counted */
    uint16_t port;    /* the peer's port, to tell the socket from a reuse */
    int64_t since_us; /* accepted */
} slot;

struct acceptor {
    acceptor_config cfg;
    int lsock;
    int wake[2];      /* acceptor_stop writes to wake[1] */
    int spare_fd;     /* closed to take a connection off the backlog at EMFILE */
    struct MHD_Daemon *d;
    pthread_t thread;
    bool running;

    pthread_mutex_t mu;
    slot *slots;
    size_t nslots;
    addr_node **buckets;
    size_t nbuckets;  /* a power of two */
    unsigned total;   /* counted slots */
    unsigned evicting; /* evicted, not yet released */
    addr_node **order; /* scratch for the eviction, max_conns + spare + 1 */
};

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The address of a peer as 16 bytes and its port; false for a family other
 * than IPv4 and IPv6. */
static bool key_of(const struct sockaddr *sa, uint8_t key[16], uint16_t *port)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        memset(key, 0, 10);
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &in->sin_addr, 4);
        *port = ntohs(in->sin_port);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        memcpy(key, &in6->sin6_addr, 16);
        *port = ntohs(in6->sin6_port);
        return true;
    }
    return false;
}

static size_t hash_key(const acceptor *a, const uint8_t key[16])
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 32)) & (a->nbuckets - 1);
}

static addr_node *find_addr(const acceptor *a, const uint8_t key[16])
{
    for (addr_node *n = a->buckets[hash_key(a, key)]; n; n = n->next)
        if (memcmp(n->key, key, 16) == 0)
            return n;
    return NULL;
}

static addr_node *add_addr(acceptor *a, const uint8_t key[16])
{
    addr_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    memcpy(n->key, key, 16);
    n->head = n->tail = -1;
    size_t b = hash_key(a, key);
    n->next = a->buckets[b];
    a->buckets[b] = n;
    return n;
}

static void drop_addr(acceptor *a, addr_node *n)
{
    for (addr_node **p = &a->buckets[hash_key(a, n->key)]; *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            break;
        }
    free(n);
}

/* Takes fd's slot out of its address's list and the counts. */
static void uncount(acceptor *a, int fd)
{
    slot *s = &a->slots[fd];
    addr_node *n = s->addr;
    if (s->prev >= 0)
        a->slots[s->prev].next = s->next;
    else
        n->head = s->next;
    if (s->next >= 0)
        a->slots[s->next].prev = s->prev;
    else
        n->tail = s->prev;
    s->prev = s->next = -1;
    n->count--;
    a->total--;
}

/* Frees fd's slot, whatever its state; nothing when it is free. */
static void release_locked(acceptor *a, int fd)
{
    if (fd < 0 || (size_t)fd >= a->nslots || !a->slots[fd].addr)
        return;
    slot *s = &a->slots[fd];
    addr_node *n = s->addr;
    if (s->evicted)
        a->evicting--;
    else
        uncount(a, fd);
    if (--n->refs == 0)
        drop_addr(a, n);
    memset(s, 0, sizeof *s);
    s->prev = s->next = -1;
}

static int by_count_desc(const void *x, const void *y)
{
    unsigned cx = (*(addr_node *const *)x)->count, cy = (*(addr_node *const *)y)->count;
    return cx < cy ? 1 : cx > cy ? -1 : 0;
}

/* Frees a slot for a connection from newcomer (NULL: an address holding
 * none): shuts down the oldest connection doing nothing useful of the
 * address holding the most slots. Only an address holding at least two more
 * than newcomer's gives one up (any holding one, for a newcomer holding
 * none): each eviction then evens the counts out, so clients that reconnect
 * once evicted cannot keep evicting one another. false when there is none. */
static bool evict_one(acceptor *a, const addr_node *newcomer)
{
    if (a->evicting >= a->cfg.spare)
        return false; /* libmicrohttpd has no room for more until some close */
    unsigned held = newcomer ? newcomer->count : 0;
    unsigned least = held == 0 ? 1 : held + 2;
    size_t k = 0;
    for (size_t b = 0; b < a->nbuckets; b++)
        for (addr_node *n = a->buckets[b]; n; n = n->next)
            if (n->count >= least)
                a->order[k++] = n;
    qsort(a->order, k, sizeof a->order[0], by_count_desc);
    for (size_t i = 0; i < k; i++) {
        for (int fd = a->order[i]->head; fd >= 0; fd = a->slots[fd].next) {
            slot *s = &a->slots[fd];
            if (!s->ctx || !a->cfg.claim_idle(a->cfg.cls, s->ctx))
                continue;
            /* As the reaper does: the connection's own thread sees the end
             * of file and closes it the ordinary way. */
            shutdown(fd, SHUT_RDWR);
            uncount(a, fd);
            s->evicted = true;
            a->evicting++;
            metrics_evicted(a->cfg.m);
            return true;
        }
    }
    return false;
}

/* Makes sure slots[fd] exists. */
static bool grow(acceptor *a, int fd)
{
    if ((size_t)fd < a->nslots)
        return true;
    size_t n = a->nslots ? a->nslots : 1024;
    while (n <= (size_t)fd)
        n *= 2;
    slot *s = realloc(a->slots, n * sizeof *s);
    if (!s)
        return false;
    for (size_t i = a->nslots; i < n; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].prev = s[i].next = -1;
    }
    a->slots = s;
    a->nslots = n;
    return true;
}

/* Decides the fate of a connection just accepted: false when it must be
 * closed (counted as refused), true when it holds a slot now. */
static bool admit(acceptor *a, int fd, const struct sockaddr *peer)
{
    uint8_t key[16];
    uint16_t port = 0;
    bool ok = false;
    pthread_mutex_lock(&a->mu);
    if (!grow(a, fd) || !key_of(peer, key, &port)) {
        metrics_refused(a->cfg.m, REFUSED_FULL);
        goto out;
    }
    /* accept4 handed out a number a slot still names: libmicrohttpd
     * closed that socket without telling (see the head of the file). */
    release_locked(a, fd);
    addr_node *n = find_addr(a, key);
    if (a->cfg.max_per_ip && n && n->count >= a->cfg.max_per_ip) {
        metrics_refused(a->cfg.m, REFUSED_PER_IP);
        goto out;
    }
    if (a->total >= a->cfg.max_conns && !evict_one(a, n)) {
        metrics_refused(a->cfg.m, REFUSED_FULL);
        goto out;
    }
    if (!n && !(n = add_addr(a, key))) {
        metrics_refused(a->cfg.m, REFUSED_FULL);
        goto out;
    }
    slot *s = &a->slots[fd];
    s->addr = n;
    s->ctx = NULL;
    s->evicted = false;
    s->port = port;
    s->since_us = mono_us();
    s->next = -1;
    s->prev = n->tail;
    if (n->tail >= 0)
        a->slots[n->tail].next = fd;
    else
        n->head = fd;
    n->tail = fd;
    n->count++;
    n->refs++;
    a->total++;
    ok = true;
out:
    pthread_mutex_unlock(&a->mu);
    return ok;
}

/* Releases the slots of sockets admitted over 2 s ago that libmicrohttpd
 * never started and that no longer are the socket accepted (closed, or the
 * number reused for another peer). */
static void sweep(acceptor *a)
{
    int64_t old = mono_us() - 2000000;
    pthread_mutex_lock(&a->mu);
    for (size_t fd = 0; fd < a->nslots; fd++) {
        slot *s = &a->slots[fd];
        if (!s->addr || s->ctx || s->evicted || s->since_us > old)
            continue;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        uint8_t key[16];
        uint16_t port;
        if (getpeername((int)fd, (struct sockaddr *)&ss, &len) != 0) {
            if (errno == ENOTCONN)
                continue; /* still ours, its peer gone: libmicrohttpd will see */
        } else if (key_of((struct sockaddr *)&ss, key, &port) &&
                   memcmp(key, s->addr->key, 16) == 0 && port == s->port) {
            continue;
        }
        release_locked(a, (int)fd);
    }
    pthread_mutex_unlock(&a->mu);
}

/* Takes one connection off the backlog when out of file descriptors, and
 * closes it: better refused than left to wait. */
static void shed(acceptor *a)
{
    if (a->spare_fd >= 0) {
        close(a->spare_fd);
        a->spare_fd = -1;
    }
    int fd = accept4(a->lsock, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        metrics_refused(a->cfg.m, REFUSED_FULL);
    }
    a->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void *accept_loop(void *arg)
{
    acceptor *a = arg;
    int64_t next_sweep = mono_us() + 1000000;
    for (;;) {
        struct pollfd p[2] = {{.fd = a->lsock, .events = POLLIN},
                              {.fd = a->wake[0], .events = POLLIN}};
        int r = poll(p, 2, 1000);
        if (r < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        /* A bounded batch, so a flood cannot starve the stop or the sweep. */
        for (int i = 0; r > 0 && (p[0].revents & POLLIN) && i < 256; i++) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof ss;
            int fd = accept4(a->lsock, (struct sockaddr *)&ss, &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE)
                    shed(a);
                else if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                    continue;
                break; /* EAGAIN: the backlog is empty */
            }
            if (!admit(a, fd, (struct sockaddr *)&ss)) {
                close(fd);
                continue;
            }
            if (MHD_add_connection(a->d, fd, (struct sockaddr *)&ss, len) != MHD_YES) {
                /* libmicrohttpd closed it and will say nothing more. */
                pthread_mutex_lock(&a->mu);
                release_locked(a, fd);
                pthread_mutex_unlock(&a->mu);
                metrics_refused(a->cfg.m, REFUSED_FULL);
            }
        }
        if (mono_us() >= next_sweep) {
            sweep(a);
            next_sweep = mono_us() + 1000000;
        }
    }
    return NULL;
}

acceptor *acceptor_listen(const struct sockaddr *addr, socklen_t addrlen,
                          const acceptor_config *cfg, unsigned *port)
{
    acceptor *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cfg = *cfg;
    if (a->cfg.max_conns == 0)
        a->cfg.max_conns = 1;
    a->lsock = a->wake[0] = a->wake[1] = a->spare_fd = -1;
    pthread_mutex_init(&a->mu, NULL);
    size_t cap = (size_t)a->cfg.max_conns + a->cfg.spare + 1;
    a->nbuckets = 64;
    while (a->nbuckets < 2 * cap)
        a->nbuckets *= 2;
    a->buckets = calloc(a->nbuckets, sizeof *a->buckets);
    a->order = calloc(cap, sizeof *a->order);
    int one = 1, saved;
    if (!a->buckets || !a->order)
        goto fail_errno;
    a->lsock = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (a->lsock < 0)
        goto fail_errno;
    /* SO_REUSEADDR: a restart takes the port at once. Never SO_REUSEPORT: a
     * second symd would share the port, each taking a random part. */
    setsockopt(a->lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6)
        setsockopt(a->lsock, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(a->lsock, addr, addrlen) != 0 || listen(a->lsock, SOMAXCONN) != 0 ||
        pipe2(a->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail_errno;
    a->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *port = 0;
    if (getsockname(a->lsock, (struct sockaddr *)&ss, &len) == 0)
        *port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return a;
fail_errno:
    saved = errno ? errno : ENOMEM;
    acceptor_free(a);
    errno = saved;
    return NULL;
}

bool acceptor_start(acceptor *a, struct MHD_Daemon *d)
{
    a->d = d;
    a->running = pthread_create(&a->thread, NULL, accept_loop, a) == 0;
    return a->running;
}

void acceptor_attach(acceptor *a, int fd, void *ctx)
{
    pthread_mutex_lock(&a->mu);
    if (fd >= 0 && (size_t)fd < a->nslots && a->slots[fd].addr && !a->slots[fd].evicted)
        a->slots[fd].ctx = ctx;
    pthread_mutex_unlock(&a->mu);
}

void acceptor_release(acceptor *a, int fd)
{
    pthread_mutex_lock(&a->mu);
    release_locked(a, fd);
    pthread_mutex_unlock(&a->mu);
}

void acceptor_stop(acceptor *a)
{
    if (!a)
        return;
    if (a->running) {
        ssize_t w = write(a->wake[1], "x", 1);
        (void)w;
        pthread_join(a->thread, NULL);
        a->running = false;
    }
    if (a->lsock >= 0) {
        close(a->lsock);
        a->lsock = -1;
    }
}

void acceptor_free(acceptor *a)
{
    if (!a)
        return;
    acceptor_stop(a);
    for (int i = 0; i < 2; i++)
        if (a->wake[i] >= 0)
            close(a->wake[i]);
    if (a->spare_fd >= 0)
        close(a->spare_fd);
    for (size_t b = 0; a->buckets && b < a->nbuckets; b++)
        for (addr_node *n = a->buckets[b], *next; n; n = next) {
            next = n->next;
            free(n);
        }
    free(a->buckets);
    free(a->order);
    free(a->slots);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
