/* Webhooks: background senders of the store's outbox (store.h, "webhooks")
 * to each --webhook URL, over plain HTTP, signed with HMAC-SHA256, retried
 * with exponential backoff until delivered or given up. Crash posts only
 * write rows; nothing here runs on a request's thread. */
#ifndef SYMD_WEBHOOK_H
#define SYMD_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../store/store.h"
#include "metrics.h"

#define WEBHOOK_URL_MAX 500   /* bytes of a target URL (store_delivery.url holds it) */
#define WEBHOOK_TARGETS_MAX 32 /* --webhook and --webhook-slack URLs, together */
#define WEBHOOK_BACKOFF_FIRST_MS 1000 /* the wait after a first failed attempt; doubles */

typedef struct {
    /* targets: a JSON event body to each of urls, a Slack-compatible body
     * ({"text": ...}) to each of slack_urls; no URL in both */
    const char *const *urls;
    size_t nurls;
    const char *const *slack_urls;
    size_t nslack;
    const char *secret;      /* signs every body (X-Symd-Signature); NULL: unsigned */
    double spike_factor;     /* group.spike threshold (store_hooks); 0: no spikes */
    int64_t spike_min;
    unsigned timeout_s;      /* one attempt: connect, send, the status line */
    unsigned backoff_max_s;  /* the longest wait between two attempts */
    unsigned give_up_s;      /* an event not delivered this long after it happened fails */
} webhook_config;

typedef struct webhook_sender webhook_sender;

/* Whether url is a target symd can send to: http://HOST[:PORT][/PATH], at
 * most WEBHOOK_URL_MAX bytes, no user info; https is refused (symd has no
 * TLS client: put a TLS-terminating proxy in front of an https receiver).
 * false with why set otherwise. */
bool webhook_url_ok(const char *url, char *why, size_t cap);

/* Tells the store what crash posts record, and starts a sender thread per
 * target, counting each attempt's end in m (borrowed, may be NULL; it must
 * outlive the senders). NULL with nothing started when cfg has no targets
 * (no error) or a thread cannot start (*err says so). */
webhook_sender *webhook_start(store *st, metrics *m, const webhook_config *cfg, symd_err *err);
/* Stops the senders: an attempt under way finishes (at most timeout_s) and
 * is recorded, so a delivery the receiver took is marked, not sent again.
 * NULL is fine. */
void webhook_stop(webhook_sender *w);

/* The body a delivery sends: the event as JSON ({"id", "type",
 * "created_at", "data"}), or for slack a {"text": ...} summary of it.
 * malloc'ed, NULL when out of memory. */
char *webhook_body(const store_delivery *d, bool slack);
/* "sha256=" and the hex HMAC-SHA256 of body under secret, into out[72]. */
void webhook_signature(const char *secret, const char *body, size_t len, char out[72]);
/* The wait before the attempt after attempts failed ones (1 s doubling,
 * at most max_ms). */
int64_t webhook_backoff_ms(int attempts, int64_t max_ms);

#endif
