/* Admission: symd's own listening socket and the thread that accepts every
 * connection and decides at once what becomes of it.
 *
 * - An address already holding --max-per-ip slots: the connection is closed
 *   at once.
 * - All --max-connections slots taken: a connection that does nothing
 *   useful — still sending its first request's headers, or kept alive
 *   between requests — is shut down, the oldest of the address holding the
 *   most slots, and the newcomer takes its slot. Only an address holding at
 *   least two slots more than the newcomer's gives one up (at least one
 *   when the newcomer's holds none), so evictions even the addresses out
 *   and end. Without such a connection the newcomer is closed at once.
 * - Otherwise the connection takes a slot and goes to libmicrohttpd
 *   (MHD_add_connection on a daemon started with MHD_USE_NO_LISTEN_SOCKET).
 *
 * Nothing waits in the kernel's backlog: the listening socket is drained
 * as fast as connections arrive. A slot is held from the accept to
 * acceptor_release (or to its eviction). Slots are known by socket number. */
#ifndef SYMD_ACCEPTOR_H
#define SYMD_ACCEPTOR_H

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "metrics.h"

typedef struct acceptor acceptor;

/* A good acceptor_config.spare: evicted connections close within a poll
 * round of their worker, and past this many waiting to close, an eviction
 * waits (the newcomer is refused). */
#define ACCEPTOR_EVICT_SPARE 64u

typedef struct {
    unsigned max_conns;  /* slots, all clients together (at least 1) */
    unsigned max_per_ip; /* slots of one address; 0: no limit */
    unsigned spare;      /* evicted connections libmicrohttpd has not closed
                            yet, at most (it needs this many connections of
                            slack over max_conns) */
    /* Takes the slot of the connection that acceptor_attach named ctx when it
     * does nothing useful (between requests, or already being cut off):
     * marks it so and returns true, and the acceptor shuts its socket down.
     * Called with the acceptor's lock held: it must not call into the
     * acceptor. */
    bool (*claim_idle)(void *cls, void *ctx);
    void *cls;
    metrics *m; /* refused and evicted connections are counted here; may be NULL */
} acceptor_config;

/* Binds addr (SO_REUSEADDR, never SO_REUSEPORT, so a second server on the
 * port fails; an IPv6 address is IPv6 only) and listens. NULL with errno set
 * when it cannot (or out of memory). *port: the port bound (port 0 picks
 * one). cfg is copied. */
acceptor *acceptor_listen(const struct sockaddr *addr, socklen_t addrlen,
                          const acceptor_config *cfg, unsigned *port);

/* Starts the accepting thread, which hands admitted connections to d (a
 * daemon started with MHD_USE_NO_LISTEN_SOCKET and MHD_USE_ITC whose
 * connection limit leaves cfg->spare slack over cfg->max_conns). false if
 * the thread cannot start. */
bool acceptor_start(acceptor *a, struct MHD_Daemon *d);

/* libmicrohttpd started serving the connection on fd (its
 * MHD_CONNECTION_NOTIFY_STARTED): ctx is what claim_idle will be given. A
 * connection is never evicted before this. */
void acceptor_attach(acceptor *a, int fd, void *ctx);

/* The connection on fd is about to be closed (MHD_CONNECTION_NOTIFY_CLOSED,
 * before libmicrohttpd closes the socket): its slot is free. After this
 * returns the acceptor no longer touches fd or the ctx attached to it. */
void acceptor_release(acceptor *a, int fd);

/* Stops accepting: joins the thread and closes the listening socket, so new
 * clients (and any left in the backlog) are refused at once. Admitted
 * connections stay; attach and release still work. */
void acceptor_stop(acceptor *a);

/* Frees a (stopped or never started) acceptor; call it after
 * MHD_stop_daemon, once no attach or release can come. NULL is fine. */
void acceptor_free(acceptor *a);

#endif
