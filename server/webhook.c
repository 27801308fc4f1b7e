/* Webhook senders (webhook.h): a thread per target URL claims the oldest
 * due delivery from the store, POSTs it with a small HTTP/1.1 client over
 * a socket (a deadline on every step), and records how it went. */
#include "webhook.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../util/dynbuf.h"
#include "../util/sha256.h"

#define POLL_MS 250                 /* how often an idle sender looks for due deliveries */
#define LEASE_SPARE_MS 30000        /* a claim's lease: the attempt's timeout and this */
#define PRUNE_EVERY_MS 3600000      /* per-hour counts and old deliveries pruned hourly */
#define KEEP_DONE_MS (30 * 86400000ll) /* delivered and failed deliveries kept 30 days */

/* A target URL taken apart. */
typedef struct {
    char host[256], port[8], path[WEBHOOK_URL_MAX + 1];
} url_parts;

static bool url_split(const char *url, url_parts *u, char *why, size_t cap)
{
    memset(u, 0, sizeof *u);
    size_t len = strlen(url);
    if (strncmp(url, "https://", 8) == 0) {
        snprintf(why, cap, "%s: https is not supported (symd sends plain HTTP): put a "
                           "TLS-terminating proxy in front of the receiver", url);
        return false;
    }
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(why, cap, "%s: a webhook URL starts with http://", url);
        return false;
    }
    if (len > WEBHOOK_URL_MAX) {
        snprintf(why, cap, "a webhook URL is at most %d bytes", WEBHOOK_URL_MAX);
        return false;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
            snprintf(why, cap, "%s: a webhook URL holds no spaces or control characters", url);
            return false;
        }
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    if (memchr(h, '@', (size_t)(end - h))) {
        snprintf(why, cap, "%s: no user info in a webhook URL (sign with --webhook-secret)", url);
        return false;
    }
    const char *port = NULL, *hend = end;
    if (*h == '[') { /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb) {
            snprintf(why, cap, "%s: unclosed [ in the host", url);
            return false;
        }
        h++;
        hend = rb;
        if (rb + 1 < end && rb[1] == ':')
            port = rb + 2;
        else if (rb + 1 != end) {
            snprintf(why, cap, "%s: bad host", url);
            return false;
        }
    } else {
        const char *colon = memchr(h, ':', (size_t)(end - h));
        if (colon) {
            hend = colon;
            port = colon + 1;
        }
    }
    size_t hl = (size_t)(hend - h);
    if (!hl || hl >= sizeof u->host) {
        snprintf(why, cap, "%s: no host, or a host too long", url);
        return false;
    }
    memcpy(u->host, h, hl);
    if (port) {
        size_t pl = (size_t)(end - port);
        unsigned long v = 0;
        bool digits = pl > 0 && pl < 6;
        for (size_t i = 0; digits && i < pl; i++) {
            digits = port[i] >= '0' && port[i] <= '9';
            v = v * 10 + (unsigned long)(port[i] - '0');
        }
        if (!digits || v == 0 || v > 65535) {
            snprintf(why, cap, "%s: the port is a number from 1 to 65535", url);
            return false;
        }
        snprintf(u->port, sizeof u->port, "%lu", v);
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    if (*end == '/')
        snprintf(u->path, sizeof u->path, "%.*s", (int)strcspn(end, "#"), end);
    else if (*end == '?')
        snprintf(u->path, sizeof u->path, "/%.*s", (int)strcspn(end, "#"), end);
    else
        snprintf(u->path, sizeof u->path, "/");
    return true;
}

bool webhook_url_ok(const char *url, char *why, size_t cap)
{
    url_parts u;
    return url_split(url, &u, why, cap);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline (monotonic ms) passes;
 * false on timeout or error. */
static bool wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return false;
        struct pollfd pf = {fd, events, 0};
        int r = poll(&pf, 1, (int)(left > 1000000 ? 1000000 : left));
        if (r > 0)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
    }
}

/* One POST of body to u with headers (lines ending in \r\n), all of it
 * within timeout_ms; the status of the answer (its status line read, the
 * rest not waited for), or 0 with why set when there is none. */
static int http_post(const url_parts *u, const char *headers, const char *body, size_t len,
                     int timeout_ms, char *why, size_t cap)
{
    int64_t deadline = mono_ms() + timeout_ms;
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(u->host, u->port, &hints, &ai);
    if (g != 0) {
        snprintf(why, cap, "cannot resolve %.100s: %s", u->host, gai_strerror(g));
        return 0;
    }
    int fd = -1;
    snprintf(why, cap, "cannot connect to %.100s:%s", u->host, u->port);
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        int r = connect(fd, a->ai_addr, a->ai_addrlen);
        int e = r == 0 ? 0 : errno == EINPROGRESS ? 0 : errno;
        socklen_t sl = sizeof e;
        if (r != 0 && !e && !wait_fd(fd, POLLOUT, deadline))
            e = ETIMEDOUT;
        else if (r != 0 && !e && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0)
            e = errno;
        if (e) {
            snprintf(why, cap, "cannot connect to %.100s:%s: %s", u->host, u->port, strerror(e));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return 0;
    char head[2048];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n%s\r\n",
                      u->path, strchr(u->host, ':') ? "[" : "", u->host,
                      strchr(u->host, ':') ? "]" : "", strcmp(u->port, "80") ? ":" : "",
                      strcmp(u->port, "80") ? u->port : "", len, headers);
    int status = 0;
    if (hl < 0 || (size_t)hl >= sizeof head) {
        snprintf(why, cap, "request head too long");
        close(fd);
        return 0;
    }
    const char *parts[2] = {head, body};
    size_t lens[2] = {(size_t)hl, len};
    for (int i = 0; i < 2; i++)
        for (size_t at = 0; at < lens[i];) {
            ssize_t n = send(fd, parts[i] + at, lens[i] - at, MSG_NOSIGNAL);
            if (n > 0) {
                at += (size_t)n;
            } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                if (!wait_fd(fd, POLLOUT, deadline)) {
                    snprintf(why, cap, "timed out sending after %d ms", timeout_ms);
                    close(fd);
                    return 0;
                }
            } else {
                snprintf(why, cap, "sending: %s", n < 0 ? strerror(errno) : "closed");
                close(fd);
                return 0;
            }
        }
    /* the status line: "HTTP/1.x NNN" */
    char resp[256];
    size_t got = 0;
    while (got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        ssize_t n = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_fd(fd, POLLIN, deadline)) {
                snprintf(why, cap, "no answer within %d ms", timeout_ms);
                close(fd);
                return 0;
            }
        } else {
            break;
        }
    }
    close(fd);
    resp[got] = 0;
    if (got >= 12 && strncmp(resp, "HTTP/1.", 7) == 0 && resp[8] == ' ' && resp[9] >= '1' &&
        resp[9] <= '5' && resp[10] >= '0' && resp[10] <= '9' && resp[11] >= '0' &&
        resp[11] <= '9')
        status = (resp[9] - '0') * 100 + (resp[10] - '0') * 10 + (resp[11] - '0');
    else
        snprintf(why, cap, got ? "the answer is no HTTP/1.x status line"
                               : "the connection closed without an answer");
    return status;
}

void webhook_signature(const char *secret, const char *body, size_t len, char out[72])
{
    uint8_t mac[32];
    hmac_sha256(secret, strlen(secret), body, len, mac);
    memcpy(out, "sha256=", 7);
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
}

int64_t webhook_backoff_ms(int attempts, int64_t max_ms)
{
    int64_t d = WEBHOOK_BACKOFF_FIRST_MS;
    for (int i = 1; i < attempts && d < max_ms; i++)
        d *= 2;
    return d < max_ms ? d : max_ms;
}

/* A field of obj's member sub (sub NULL: of obj), "" when absent or not a
 * string. */
static const char *str_at(json_t *obj, const char *sub, const char *key)
{
    json_t *o = sub ? json_object_get(obj, sub) : obj;
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The one-line summary of a Slack-compatible body. */
static char *slack_text(const store_delivery *d, json_t *data)
{
    char *t = NULL;
    const char *sig = str_at(data, "group", "signature"), *kind = str_at(data, "group", "kind");
    long long crash = (long long)json_integer_value(
        json_object_get(json_object_get(data, "crash"), "id"));
    const char *ver = str_at(data, "crash", "app_version");
    const char *proc = str_at(data, "crash", "process");
    int r = -1;
    if (strcmp(d->type, "group.new") == 0)
        r = asprintf(&t, "New crash group (%s): %s - crash %lld, %s %s", kind, sig, crash, proc,
                     ver);
    else if (strcmp(d->type, "group.regressed") == 0)
        r = asprintf(&t, "Regressed crash group (%s): %s - back in %s (crash %lld)", kind, sig,
                     ver, crash);
    else if (strcmp(d->type, "group.spike") == 0)
        r = asprintf(&t, "Crash spike (%s): %s - %lld this hour, %.2f an hour the week before "
                         "(crash %lld)", kind, sig,
                     (long long)json_integer_value(json_object_get(data, "hour_count")),
                     json_number_value(json_object_get(data, "baseline_per_hour")), crash);
    else if (strcmp(d->type, "image.missing") == 0)
        r = asprintf(&t, "Missing image: %s %s (%s) is needed by crash %lld (%s %s): upload "
                         "its dSYM", str_at(data, "image", "name"), str_at(data, "image", "uuid"),
                     str_at(data, "image", "arch"), crash, proc, ver);
    else
        r = asprintf(&t, "symd event %s", d->type);
    return r < 0 ? NULL : t;
}

/* text with Slack's three control characters escaped (&amp; &lt; &gt;):
 * names from reports reach a channel as text, never as a link or a
 * mention they could spell with <...>. malloc'ed, NULL when out of memory. */
static char *slack_escape(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '&' ? 5 : *p == '<' || *p == '>' ? 4 : 1;
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = text; *p; p++) {
        const char *rep = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : NULL;
        if (rep) {
            memcpy(o, rep, strlen(rep));
            o += strlen(rep);
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
    return out;
}

char *webhook_body(const store_delivery *d, bool slack)
{
    json_error_t je;
    json_t *data = json_loads(d->data ? d->data : "{}", 0, &je);
    if (!data)
        data = json_object(); /* the store wrote it: cannot be, but never send invalid JSON */
    json_t *doc = json_object();
    if (slack) {
        char *t = slack_text(d, data);
        char tail[64];
        snprintf(tail, sizeof tail, " [event %lld]", (long long)d->event_id);
        char *full = NULL;
        if (t && asprintf(&full, "%s%s", t, tail) < 0)
            full = NULL;
        free(t);
        char *esc = slack_escape(full ? full : d->type);
        free(full);
        json_object_set_new(doc, "text", json_string(esc ? esc : d->type));
        free(esc);
        json_decref(data);
    } else {
        json_object_set_new(doc, "id", json_integer(d->event_id));
        json_object_set_new(doc, "type", json_string(d->type));
        json_object_set_new(doc, "created_at", json_integer(d->event_at));
        json_object_set_new(doc, "data", data);
    }
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}

/* ---- the senders ------------------------------------------------------------ */

typedef struct {
    struct webhook_sender *w;
    const char *url;
    url_parts u;
    bool slack;
    pthread_t thread;
    bool started;
} target;

struct webhook_sender {
    store *st;
    metrics *m; /* borrowed */
    webhook_config cfg;
    target *t;
    size_t nt;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop; /* under mu */
};

static bool stopping(struct webhook_sender *w)
{
    pthread_mutex_lock(&w->mu);
    bool s = w->stop;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* Sleeps ms or until stopped; false once stopped. */
static bool nap(struct webhook_sender *w, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
        ;
    bool go_on = !w->stop;
    pthread_mutex_unlock(&w->mu);
    return go_on;
}

/* A lease owner unique to this claim: two senders (threads, nodes, a
 * process after a restart) never share one. */
static int64_t new_owner(void)
{
    static _Atomic uint64_t seq;
    uint64_t r = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &r, sizeof r) != (ssize_t)sizeof r)
            r = 0;
        close(fd);
    }
    r ^= (uint64_t)getpid() << 32 ^ (uint64_t)mono_ms() ^ ++seq;
    return (int64_t)(r & INT64_MAX) | 1;
}

/* One attempt at d: sent, then recorded (the record retried until it
 * holds while the lease lasts, so a delivery the receiver took is marked
 * before anyone may send it again). */
static void attempt(target *t, store_delivery *d, int64_t owner, int64_t lease_until)
{
    struct webhook_sender *w = t->w;
    char *body = webhook_body(d, t->slack);
    char why[256] = "";
    int status = 0;
    if (!body) {
        snprintf(why, sizeof why, "out of memory");
    } else {
        char headers[1024], sig[72] = "";
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)d->event_id);
        if (w->cfg.secret)
            webhook_signature(w->cfg.secret, body, strlen(body), sig);
        snprintf(headers, sizeof headers,
                 "Content-Type: application/json\r\nUser-Agent: symd-webhook\r\n"
                 "X-Symd-Event: %s\r\nX-Symd-Event-Id: %s\r\nX-Symd-Delivery: %lld\r\n"
                 "X-Symd-Attempt: %d\r\n%s%s%s",
                 d->type, id, (long long)d->id, d->attempts + 1, sig[0] ? "X-Symd-Signature: " : "",
                 sig, sig[0] ? "\r\n" : "");
        status = http_post(&t->u, headers, body, strlen(body), (int)w->cfg.timeout_s * 1000, why,
                           sizeof why);
        free(body);
    }
    int64_t now = store_now_ms();
    int state = STORE_DELIVERY_PENDING;
    int64_t next_at = 0;
    if (status >= 200 && status < 300) {
        state = STORE_DELIVERY_DELIVERED;
        why[0] = 0;
    } else {
        if (status)
            snprintf(why, sizeof why, "answered %d", status);
        next_at = now + webhook_backoff_ms(d->attempts + 1, (int64_t)w->cfg.backoff_max_s * 1000);
        if (next_at - d->event_at > (int64_t)w->cfg.give_up_s * 1000)
            state = STORE_DELIVERY_FAILED;
    }
    for (;;) {
        bool kept = false;
        symd_err err = {0};
        if (store_hook_finish(w->st, d->id, owner, state, next_at, status, why, &kept, &err) ==
            SYMD_OK) {
            metrics_webhook_attempt(w->m, !kept ? HOOK_UNRECORDED
                                          : state == STORE_DELIVERY_DELIVERED ? HOOK_DELIVERED
                                          : state == STORE_DELIVERY_FAILED    ? HOOK_GAVE_UP
                                                                              : HOOK_RETRY);
            if (!kept)
                fprintf(stderr, "symd: webhook: delivery %lld to %s: the lease ran out before "
                                "its attempt was recorded\n", (long long)d->id, t->url);
            else if (state == STORE_DELIVERY_FAILED)
                fprintf(stderr, "symd: webhook: delivery %lld (event %lld) to %s failed for "
                                "good: %s\n", (long long)d->id, (long long)d->event_id, t->url,
                        why);
            return;
        }
        if (store_now_ms() >= lease_until) {
            metrics_webhook_attempt(w->m, HOOK_UNRECORDED);
            fprintf(stderr, "symd: webhook: delivery %lld: cannot record its attempt: %s\n",
                    (long long)d->id, err.msg);
            return;
        }
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL); /* the database is away (a restart): try again shortly */
    }
}

static void *sender_main(void *arg)
{
    target *t = arg;
    struct webhook_sender *w = t->w;
    int64_t next_prune = t == &w->t[0] ? mono_ms() : INT64_MAX;
    bool warned = false;
    while (!stopping(w)) {
        if (mono_ms() >= next_prune) {
            symd_err err = {0};
            int64_t now = store_now_ms();
            if (store_hook_prune(w->st, now / 3600000 - STORE_HOOK_HOURS, now - KEEP_DONE_MS,
                                 &err) != SYMD_OK)
                fprintf(stderr, "symd: webhook: %s\n", err.msg);
            next_prune = mono_ms() + PRUNE_EVERY_MS;
        }
        int64_t now = store_now_ms(), owner = new_owner();
        int64_t lease_until = now + (int64_t)w->cfg.timeout_s * 1000 + LEASE_SPARE_MS;
        store_delivery d;
        bool found = false;
        symd_err err = {0};
        if (store_hook_claim(w->st, t->url, now, lease_until, owner, &d, &found, &err) !=
            SYMD_OK) {
            if (!warned)
                fprintf(stderr, "symd: webhook: %s\n", err.msg);
            warned = true;
            nap(w, 1000);
            continue;
        }
        warned = false;
        if (!found) {
            nap(w, POLL_MS);
            continue;
        }
        attempt(t, &d, owner, lease_until);
        store_delivery_free(&d);
    }
    return NULL;
}

webhook_sender *webhook_start(store *st, metrics *m, const webhook_config *cfg, symd_err *err)
{
    size_t nt = cfg->nurls + cfg->nslack;
    if (!nt)
        return NULL;
    struct webhook_sender *w = calloc(1, sizeof *w);
    const char **all = calloc(nt, sizeof *all);
    if (!w || !all || !(w->t = calloc(nt, sizeof *w->t))) {
        free(w ? w->t : NULL);
        free(w);
        free(all);
        symd_fail(err, SYMD_E_NOMEM, "out of memory");
        return NULL;
    }
    w->st = st;
    w->m = m;
    w->cfg = *cfg;
    w->nt = nt;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (size_t i = 0; i < nt; i++) {
        target *t = &w->t[i];
        t->w = w;
        t->slack = i >= cfg->nurls;
        t->url = all[i] = t->slack ? cfg->slack_urls[i - cfg->nurls] : cfg->urls[i];
        char why[256];
        if (!url_split(t->url, &t->u, why, sizeof why)) {
            symd_fail(err, SYMD_E_INVALID, "%s", why);
            goto fail;
        }
    }
    store_hooks h = {all, nt, cfg->spike_factor, cfg->spike_min};
    if (store_set_hooks(st, &h, err) != SYMD_OK)
        goto fail;
    free(all);
    all = NULL;
    for (size_t i = 0; i < nt; i++) {
        if (pthread_create(&w->t[i].thread, NULL, sender_main, &w->t[i]) != 0) {
            symd_fail(err, SYMD_E_IO, "cannot start a webhook sender");
            webhook_stop(w);
            return NULL;
        }
        w->t[i].started = true;
    }
    return w;
fail:
    free(all);
    free(w->t);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return NULL;
}

void webhook_stop(webhook_sender *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < w->nt; i++)
        if (w->t[i].started)
            pthread_join(w->t[i].thread, NULL);
    symd_err err = {0};
    store_set_hooks(w->st, NULL, &err);
    free(w->t);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
