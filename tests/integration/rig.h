/* SPDX-License-Identifier: MIT */
/* The rig of the integration tests that check one behaviour against a
 * server (test_hostile.c: a fake Redis; test_real.c: the harness's real
 * redis-server): an observer of one handle's callbacks and the client's
 * events, the loop runners, clients with short timeouts, and an admin
 * connection to the real server. Header-only, as testutil.h, whose CHECK
 * counters it shares with the test that includes it. */
#ifndef REDLEASE_TEST_RIG_H
#define REDLEASE_TEST_RIG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <redlease.h>

#include "scale.h"
#include "testloop.h"
#include "testutil.h"

static const char *sock_path; /* the real redis-server */

/* Every duration below is a multiple of S: 1 for a plain build, more
 * where the code runs slower (sanitizers, valgrind), so no timeout a case
 * does not test can fire on a slow run. Set by rig_start(). */
static int64_t S = 1;


static inline int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ observer */

#define PASSWORD "pw-S3cr3t-7f2e"

typedef struct obs {
    redlease_lock *lk;
    int acq, acq_st, lost, lost_reason, rel, rel_st;
    int held_in_failed_acquire; /* redlease_lock_held() said 1 in a failed on_acquire */
    int events[20], last_status[20];
    int64_t last_retry[20];     /* the last retry_in_ms of each type */
    int password_seen;          /* in an event's key, token or detail */
} obs;

static inline void o_acq(redlease_lock *lk, int st, void *arg)
{
    obs *o = arg;
    o->acq++;
    o->acq_st = st;
    if (st != REDLEASE_OK && redlease_lock_held(lk)) o->held_in_failed_acquire++;
}

static inline void o_lost(redlease_lock *lk, int reason, void *arg)
{
    obs *o = arg;
    o->lost++;
    o->lost_reason = reason;
    CHECK_EQ(redlease_lock_held(lk), 0);
}

static inline void o_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk;
    obs *o = arg;
    o->rel++;
    o->rel_st = st;
}

static inline int has_password(const char *s, size_t n)
{
    return s && memmem(s, n, PASSWORD, sizeof PASSWORD - 1) != NULL;
}

/* Events whose detail holds watch_text (a case sets it) are counted. */
static const char *watch_text;
static int watch_hits;

static inline void o_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c;
    obs *o = arg;
    if (watch_text && ev->detail && strstr(ev->detail, watch_text)) watch_hits++;
    if (ev->type > 0 && ev->type < 20) {
        o->events[ev->type]++;
        o->last_status[ev->type] = ev->status;
        o->last_retry[ev->type] = ev->retry_in_ms;
    }
    if (has_password(ev->key, ev->key_len) || (ev->token && has_password(ev->token, strlen(ev->token))) ||
        (ev->detail && has_password(ev->detail, strlen(ev->detail))))
        o->password_seen++;
}

/* Of n observed leases, how many read as held now and how many were
 * lost; *unheld is set when one not lost reads as not held (unconfirmed,
 * through a failover). */
static inline void count_leases(const obs *o, int n, int *held, int *lost, int *unheld)
{
    *held = *lost = 0;
    for (int i = 0; i < n; i++) {
        if (o[i].lost) {
            (*lost)++;
        } else if (redlease_lock_held(o[i].lk)) {
            (*held)++;
        } else {
            *unheld = 1;
        }
    }
}

/* ------------------------------------------------------------- the loop */

/* Runs the loop until *flag or ms pass. While a lock must not be held
 * (lk_never), every iteration checks that redlease_lock_held() says 0;
 * with release(), *flag is the on_release count, after which lk is freed. */
static inline int run_until(int *flag, int64_t ms, redlease_lock *lk_never)
{
    int64_t end = mono_ms() + ms * S;
    while (!*flag && mono_ms() < end) {
        testloop_run_once(5);
        /* once *flag is set by on_release, the handle is gone */
        if (lk_never && !*flag) CHECK_EQ(redlease_lock_held(lk_never), 0);
    }
    return *flag;
}

static inline void run_for(int64_t ms, redlease_lock *lk_never)
{
    int never = 0;
    run_until(&never, ms, lk_never);
}

/* The options every case starts from: short timeouts, so the cases run
 * fast; a case needing the defaults sets them back. */
static inline redlease_client_options copts(const char *path, const char *password, int db)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.unix_path = path;
    co.password = password;
    co.db = db;
    co.connect_timeout_ms = 100 * S;
    co.command_timeout_ms = 100 * S;
    co.reconnect_min_ms = 10 * S;
    co.reconnect_max_ms = 40 * S;
    return co;
}

/* The same over TCP to 127.0.0.1:port, with timeouts of 1000 ms (a
 * server of a test's own, servers.h). */
static inline redlease_client_options copts_tcp(int port)
{
    redlease_client_options co = copts(NULL, NULL, 0);
    co.unix_path = NULL;
    co.host = "127.0.0.1";
    co.port = port;
    co.connect_timeout_ms = co.command_timeout_ms = 1000 * S;
    return co;
}

static inline redlease_client *client_with(const redlease_client_options *co, obs *o)
{
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, co), REDLEASE_OK);
    redlease_client_set_event_cb(c, o_event, o);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    return c;
}

static inline redlease_client *client_at(const char *path, obs *o, const char *password, int db)
{
    redlease_client_options co = copts(path, password, db);
    return client_with(&co, o);
}

static inline redlease_lock_options lopts(int64_t ttl, int64_t wait, int fencing)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = ttl * S;
    o.wait_ms = wait < 0 ? REDLEASE_WAIT_FOREVER : wait * S;
    o.wait_retry_base_ms = 10 * S;
    o.wait_retry_max_ms = 40 * S;
    o.fencing = fencing;
    return o;
}

static inline void acquire(redlease_client *c, obs *o, const char *res, redlease_lock_options lo)
{
    CHECK_EQ(redlease_acquire(c, res, &lo, o_acq, o_lost, o, &o->lk), REDLEASE_OK);
}

static inline void release(obs *o, redlease_lock *lk_never)
{
    CHECK_EQ(redlease_release(o->lk, o_rel, o), REDLEASE_OK);
    run_until(&o->rel, 2000, lk_never);
    CHECK_EQ(o->rel, 1);
}


/* Frees the client; the loop must then hold nothing of ours. */
static inline void finish(redlease_client *c, obs *o)
{
    redlease_client_free(c);
    int64_t end = mono_ms() + 2000 * S;
    while (testloop_pending() && mono_ms() < end) testloop_run_once(5);
    CHECK_EQ(testloop_pending(), 0);
    /* exactly once, whatever came after */
    CHECK(o->acq <= 1 && o->lost <= 1 && o->rel <= 1);
    CHECK_EQ(o->password_seen, 0);
}

/* finish() for clients that share the loop: each but the first is freed,
 * then the first; the loop must then hold nothing of any. */
static inline void finish_all(redlease_client **c, obs *o, int n)
{
    for (int i = 1; i < n; i++) redlease_client_free(c[i]);
    finish(c[0], &o[0]);
    for (int i = 1; i < n; i++) CHECK(o[i].acq <= 1 && o[i].lost <= 1 && o[i].rel <= 1);
}

/* An acquire by a client of its own with co, waiting wait ms (scaled as
 * lopts'; REDLEASE_WAIT_FOREVER too), must end with status, the client's
 * error text holding text. Returns the REDLEASE_EV_DISCONNECTED seen. */
static inline int expect_acquire_fails(redlease_client_options co, int64_t wait, int status,
                                       const char *text)
{
    obs o = {0};
    redlease_client *c = client_with(&co, &o);
    int64_t t0 = mono_ms();
    acquire(c, &o, "fails", lopts(1000, wait, 0));
    run_until(&o.acq, 3000, o.lk);
    printf("# %s after %lld ms: %s\n", redlease_strerror(o.acq_st), (long long)(mono_ms() - t0),
           redlease_client_errstr(c));
    CHECK_EQ(o.acq, 1);
    CHECK_EQ(o.acq_st, status);
    CHECK(strstr(redlease_client_errstr(c), text) != NULL);
    int disconnects = o.events[REDLEASE_EV_DISCONNECTED];
    release(&o, o.lk);
    finish(c, &o);
    return disconnects;
}

/* ------------------------------------------------- the real redis-server */

static redisContext *admin_ctx;

static inline redisReply *adm(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(admin_ctx, fmt, ap);
    va_end(ap);
    return r;
}

/* Runs an admin command and drops its reply. */
#define ADM(...) freeReplyObject(adm(__VA_ARGS__))

/* Waits (up to ms, times S) until the server answers BUSY: a script sent
 * on another connection has run past busy-reply-threshold. 1 if it did. */
static inline int wait_busy(int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    for (;;) {
        redisReply *r = adm("PING");
        int busy = r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSY", 4) == 0;
        freeReplyObject(r);
        if (busy) return 1;
        if (mono_ms() >= end) return 0;
        usleep(5 * 1000);
    }
}

/* The value at a binary key, or "" when there is none (static buffer). */
static inline const char *get_bin(const char *key, size_t len)
{
    static char v[512];
    redisReply *r = adm("GET %b", key, len);
    v[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING) snprintf(v, sizeof v, "%s", r->str);
    freeReplyObject(r);
    return v;
}

/* The server's clock now, ms (TIME). */
static inline long long server_ms(void)
{
    redisReply *r = adm("TIME");
    long long ms = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* v is what lk's mutex key holds: its token, then its record "PID AT
 * FENCE HOST LABEL" (src/identity.h), this process's, its time the
 * server's clock. That time is the client's estimate (its clock and the
 * offset its handshake read, off by up to half that round trip, which a
 * loaded machine can stretch): within a minute of the server's now, which
 * no other clock in the record would be by chance (0, a monotonic clock);
 * the unit tests check it to the millisecond on the virtual clock. */
static inline int is_lease_value(const char *v, const redlease_lock *lk)
{
    long long at = is_value_of(v, redlease_lock_token(lk)) ? atoll(strchr(v + 33, ' ') + 1) : 0;
    long long now = server_ms();
    return at > now - 60000 && at < now + 60000;
}

static inline redlease_client *real_client(obs *o, const char *password)
{
    redlease_client *c = client_at(sock_path, o, password, 0);
    int64_t end = mono_ms() + 3000 * S;
    while (!redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
    return c;
}

static inline void hold_real(redlease_client *c, obs *o, const char *res, redlease_lock_options lo)
{
    acquire(c, o, res, lo);
    run_until(&o->acq, 3000, NULL);
    CHECK_EQ(o->acq_st, REDLEASE_OK);
}

/* Waits until the client is connected (or ms pass). */
static inline void wait_connected(redlease_client *c, int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    while (!redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
}

static inline long long admin_int(const char *cmd, const char *key)
{
    redisReply *r = adm(cmd, key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
    freeReplyObject(r);
    return v;
}

/* A command from a connection of its own that does not wait for its
 * reply (it would block this thread): a looping script. */
static inline redisContext *send_aside(const char *fmt, const char *arg)
{
    redisContext *ctx = redisConnectUnix(sock_path);
    redisAppendCommand(ctx, fmt, arg);
    int done = 0;
    while (!done && redisBufferWrite(ctx, &done) == REDIS_OK) {}
    return ctx;
}

/* Connects the admin connection and the loop; 0, or 1 after a Bail out. */
static inline int rig_start(void)
{
    sock_path = getenv("REDLEASE_TEST_SOCKET");
    if (!sock_path) {
        printf("Bail out! REDLEASE_TEST_SOCKET not set: run through run-integration.sh\n");
        return 1;
    }
    admin_ctx = redisConnectUnix(sock_path);
    if (!admin_ctx || admin_ctx->err) {
        printf("Bail out! cannot reach redis at %s\n", sock_path);
        return 1;
    }
    S = time_scale();
    printf("# durations scaled by %lld\n", (long long)S);
    testloop_init();
    return 0;
}

static inline void rig_stop(void)
{
    testloop_destroy();
    redisFree(admin_ctx);
}

#endif
