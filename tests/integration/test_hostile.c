/* Hostile servers: the library against a fake Redis (fake_redis.c) that
 * answers every error a lock can meet, replies of the wrong type, half
 * replies followed by silence or a close, and bytes that are not RESP; then
 * the errors that are cheap to cause for real on the harness's redis-server,
 * binary resource names, and what a real Redis answers in the states
 * production servers reach (a pause longer than the TTL, ACL NOPERM, OOM,
 * READONLY, a password set later, a missing database, BUSY, a flushed
 * script cache, a silent server, LOADING on a server of the test's own). Every scenario checks the exact status the
 * callback gets, that each callback runs exactly once, that nothing is
 * reported held wrongly, the stats, and (under ASan/valgrind) no leak.
 * Runs on the poll() loop of loop_poll.c; make check runs it through
 * hostile.itest (run-integration.sh starts the real redis-server). */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <redlease.h>

#include "fake_redis.h"
#include "testloop.h"
#include "testutil.h"

static const char *sock_path; /* the real redis-server */

/* Every duration below is a multiple of S: 1 for a plain build, more
 * where the code runs slower (sanitizers, valgrind), so no timeout a case
 * does not test can fire on a slow run. Set in main(). */
static int64_t S = 1;

static int64_t time_scale(void)
{
    const char *w = getenv("REDLEASE_TEST_WRAPPER");
    if (w && *w) return 5; /* valgrind */
#if defined(__SANITIZE_ADDRESS__)
    return 2;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 2;
#endif
#endif
    return 1;
}

static int64_t mono_ms(void)
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
    int events[16], last_status[16];
    int password_seen;          /* in an event's key, token or detail */
} obs;

static void o_acq(redlease_lock *lk, int st, void *arg)
{
    obs *o = arg;
    o->acq++;
    o->acq_st = st;
    if (st != REDLEASE_OK && redlease_lock_held(lk)) o->held_in_failed_acquire++;
}

static void o_lost(redlease_lock *lk, int reason, void *arg)
{
    obs *o = arg;
    o->lost++;
    o->lost_reason = reason;
    CHECK_EQ(redlease_lock_held(lk), 0);
}

static void o_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk;
    obs *o = arg;
    o->rel++;
    o->rel_st = st;
}

static int has_password(const char *s, size_t n)
{
    return s && memmem(s, n, PASSWORD, sizeof PASSWORD - 1) != NULL;
}

/* Events whose detail holds watch_text (a case sets it) are counted. */
static const char *watch_text;
static int watch_hits;

static void o_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c;
    obs *o = arg;
    if (watch_text && ev->detail && strstr(ev->detail, watch_text)) watch_hits++;
    if (ev->type > 0 && ev->type < 16) {
        o->events[ev->type]++;
        o->last_status[ev->type] = ev->status;
    }
    if (has_password(ev->key, ev->key_len) || (ev->token && has_password(ev->token, strlen(ev->token))) ||
        (ev->detail && has_password(ev->detail, strlen(ev->detail))))
        o->password_seen++;
}

/* ------------------------------------------------------------- the loop */

/* Runs the loop until *flag or ms pass. While a lock must not be held
 * (lk_never), every iteration checks that redlease_lock_held() says 0;
 * with release(), *flag is the on_release count, after which lk is freed. */
static int run_until(int *flag, int64_t ms, redlease_lock *lk_never)
{
    int64_t end = mono_ms() + ms * S;
    while (!*flag && mono_ms() < end) {
        testloop_run_once(5);
        /* once *flag is set by on_release, the handle is gone */
        if (lk_never && !*flag) CHECK_EQ(redlease_lock_held(lk_never), 0);
    }
    return *flag;
}

static void run_for(int64_t ms, redlease_lock *lk_never)
{
    int never = 0;
    run_until(&never, ms, lk_never);
}

/* The options every case starts from: short timeouts, so the cases run
 * fast; a case needing the defaults sets them back. */
static redlease_client_options copts(const char *path, const char *password, int db)
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

static redlease_client *client_with(const redlease_client_options *co, obs *o)
{
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, co), REDLEASE_OK);
    redlease_client_set_event_cb(c, o_event, o);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    return c;
}

static redlease_client *client_at(const char *path, obs *o, const char *password, int db)
{
    redlease_client_options co = copts(path, password, db);
    return client_with(&co, o);
}

static redlease_lock_options lopts(int64_t ttl, int64_t wait, int fencing)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = ttl * S;
    o.wait_ms = wait < 0 ? REDLEASE_WAIT_FOREVER : wait * S;
    o.retry_base_ms = 10 * S;
    o.retry_max_ms = 40 * S;
    o.fencing = fencing;
    return o;
}

static void acquire(redlease_client *c, obs *o, const char *res, redlease_lock_options lo)
{
    CHECK_EQ(redlease_acquire(c, res, &lo, o_acq, o_lost, o, &o->lk), REDLEASE_OK);
}

static void release(obs *o, redlease_lock *lk_never)
{
    CHECK_EQ(redlease_release(o->lk, o_rel, o), REDLEASE_OK);
    run_until(&o->rel, 2000, lk_never);
    CHECK_EQ(o->rel, 1);
}

/* Frees the client; the loop must then hold nothing of ours. */
static void finish(redlease_client *c, obs *o)
{
    redlease_client_free(c);
    int64_t end = mono_ms() + 2000 * S;
    while (testloop_pending() && mono_ms() < end) testloop_run_once(5);
    CHECK_EQ(testloop_pending(), 0);
    /* exactly once, whatever came after */
    CHECK(o->acq <= 1 && o->lost <= 1 && o->rel <= 1);
    CHECK_EQ(o->password_seen, 0);
}

/* ---------------------------------------------------------- the errors */

typedef struct named {
    const char *name, *bytes;
} named;

static const named redis_errors[] = {
    {"OOM", "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
    {"READONLY", "-READONLY You can't write against a read only replica.\r\n"},
    {"LOADING", "-LOADING Redis is loading the dataset in memory\r\n"},
    {"NOAUTH", "-NOAUTH Authentication required.\r\n"},
    {"MISCONF", "-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.\r\n"},
    {"NOSCRIPT", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
    {"BUSY", "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.\r\n"},
    {"WRONGTYPE", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
};
#define NERR (sizeof redis_errors / sizeof redis_errors[0])

/* Replies of the wrong type where a status or a 0/1 integer is expected. */
static char huge_bulk[1 << 20];
static const named wrong_types[] = {
    {"integer", ":1\r\n"},
    {"bulk OK", "$2\r\nOK\r\n"},
    {"array", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
    {"nested arrays", "*1\r\n*1\r\n*2\r\n:1\r\n*0\r\n"},
    {"negative integer", ":-1\r\n"},
    {"integer 2", ":2\r\n"},
    {"huge bulk", huge_bulk},
};
#define NWRONG (sizeof wrong_types / sizeof wrong_types[0])

static void make_huge_bulk(void)
{
    size_t n = sizeof huge_bulk - 64;
    int h = snprintf(huge_bulk, 32, "$%zu\r\n", n);
    memset(huge_bulk + h, 'x', n);
    memcpy(huge_bulk + h + n, "\r\n", 3);
}

static int failed_before;
static void scenario_begin(void) { failed_before = t_fails; }
static void scenario_end(const char *what, const char *name)
{
    if (t_fails > failed_before) printf("# ^ in scenario: %s, %s\n", what, name);
}

/* ------------------------------------------------------------- acquire */

/* One attempt (wait 0) whose reply is bytes: the callback gets want, the
 * lock is never held, the stats say one failed attempt, and release of the
 * failed handle reports OK. */
static void acquire_expect(const fr_script *s, int fencing, int want, const char *want_err)
{
    fake_redis *f = fr_start(s);
    CHECK(f != NULL);
    if (!f) return;
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    acquire(c, &o, "res", lopts(1000, 0, fencing));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq, 1);
    CHECK_EQ(o.acq_st, want);
    CHECK_EQ(o.held_in_failed_acquire, 0);
    if (want_err) CHECK(strstr(redlease_client_errstr(c), want_err) != NULL);
    redlease_stats st;
    redlease_client_stats(c, &st);
    CHECK_EQ(st.acquired, 0);
    CHECK_EQ(st.acquire_failed, 1);
    CHECK_EQ(st.held_now, 0);
    CHECK_EQ(o.events[REDLEASE_EV_ACQUIRE_FAILED], 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_ACQUIRE_FAILED], want);
    release(&o, o.lk);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    CHECK_EQ(o.lost, 0);
    run_for(30, NULL);
    finish(c, &o);
    fr_stop(f);
}

static void test_acquire_redis_errors(void)
{
    for (size_t i = 0; i < NERR; i++) {
        for (int fencing = 0; fencing <= 1; fencing++) {
            fr_script s = {0};
            s.steps[fencing ? FR_FENCED : FR_SET][0].bytes = redis_errors[i].bytes;
            scenario_begin();
            int noauth = strcmp(redis_errors[i].name, "NOAUTH") == 0;
            acquire_expect(&s, fencing, noauth ? REDLEASE_EAUTH : REDLEASE_EREDIS, redis_errors[i].name);
            scenario_end(fencing ? "fenced acquire" : "acquire", redis_errors[i].name);
        }
    }
}

static void test_acquire_fenced_noscript_resends_eval_once(void)
{
    fr_script s = {0};
    s.steps[FR_FENCED][0].bytes = redis_errors[5].bytes; /* NOSCRIPT, every time */
    fake_redis *f = fr_start(&s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    acquire(c, &o, "res", lopts(1000, 0, 1));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_EREDIS);
    CHECK_EQ(fr_count(f, FR_FENCED), 2); /* EVALSHA, then EVAL: no loop */
    CHECK_EQ(fr_evals(f), 1);
    release(&o, o.lk);
    finish(c, &o);
    fr_stop(f);
}

static void test_acquire_wrong_reply_types(void)
{
    for (size_t i = 0; i < NWRONG; i++) {
        fr_script s = {0};
        s.steps[FR_SET][0].bytes = wrong_types[i].bytes;
        scenario_begin();
        acquire_expect(&s, 0, REDLEASE_EPROTO, NULL);
        scenario_end("acquire", wrong_types[i].name);
        /* a positive integer is a fence: the right answer */
        if (strcmp(wrong_types[i].name, "integer") == 0 || strcmp(wrong_types[i].name, "integer 2") == 0)
            continue;
        memset(&s, 0, sizeof s);
        s.steps[FR_FENCED][0].bytes = wrong_types[i].bytes;
        scenario_begin();
        acquire_expect(&s, 1, REDLEASE_EPROTO, NULL);
        scenario_end("fenced acquire", wrong_types[i].name);
    }
    /* fenced: nil is no answer of the script */
    fr_script s = {0};
    s.steps[FR_FENCED][0].bytes = "$-1\r\n";
    acquire_expect(&s, 1, REDLEASE_EPROTO, NULL);
}

/* Half a bulk string, then silence: the command timeout ends the attempt
 * and the stall rule drops the connection. */
static void test_acquire_half_reply_then_silence(void)
{
    fr_script s = {0};
    s.steps[FR_SET][0] = (fr_step){"$10\r\nabc", 0, FR_SILENCE};
    fake_redis *f = fr_start(&s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    acquire(c, &o, "res", lopts(1000, 0, 0));
    int64_t t = mono_ms();
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_ETIMEDOUT);
    CHECK(mono_ms() - t >= 90 * S);
    int dropped = 0;
    int64_t end = mono_ms() + 2000 * S;
    while (mono_ms() < end && !dropped) {
        run_for(10, o.lk);
        dropped = fr_accepts(f) >= 2; /* dropped and reconnected */
    }
    CHECK(dropped);
    redlease_stats st;
    redlease_client_stats(c, &st);
    CHECK_EQ(st.timeouts, 1);
    CHECK(st.disconnects >= 1);
    CHECK_EQ(st.held_now, 0);
    release(&o, o.lk);
    finish(c, &o);
    fr_stop(f);
}

/* Half a reply, then the server closes: ECONN, nothing held. */
static void test_acquire_close_mid_reply(void)
{
    fr_script s = {0};
    s.steps[FR_SET][0] = (fr_step){"$10\r\nabc", 0, FR_CLOSE};
    acquire_expect(&s, 0, REDLEASE_ECONN, NULL);
    memset(&s, 0, sizeof s);
    s.steps[FR_SET][0] = (fr_step){"+O", 0, FR_CLOSE};
    acquire_expect(&s, 0, REDLEASE_ECONN, NULL);
}

/* A peer that is not Redis: the client never connects, reports ECONN,
 * keeps retrying, and does not crash. */
static void not_redis(const fr_script *s)
{
    fake_redis *f = fr_start(s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    acquire(c, &o, "res", lopts(1000, 300, 0));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_ECONN);
    CHECK_EQ(o.events[REDLEASE_EV_CONNECTED], 0);
    CHECK(o.events[REDLEASE_EV_DISCONNECTED] >= 1);
    CHECK(fr_accepts(f) >= 2); /* it kept trying */
    CHECK_EQ(fr_count(f, FR_SET), 0);
    release(&o, o.lk);
    finish(c, &o);
    fr_stop(f);
}

static void test_peer_not_redis(void)
{
    fr_script s = {0};
    s.banner = "\xff\xfe\x00\x01garbage\r\n";
    not_redis(&s);
    memset(&s, 0, sizeof s); /* an HTTP server answers the first request */
    s.steps[FR_PING][0] = (fr_step){"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", 0, FR_CLOSE};
    not_redis(&s);
    memset(&s, 0, sizeof s); /* a banner, then silence */
    s.banner = "SSH-2.0-OpenSSH_9.2\r\n";
    not_redis(&s);
}

/* ------------------------------------------------------------- renewal */

/* Acquired; the renewals get steps. keeps: the lease survives (a failed
 * renewal is retried); else it is lost with reason. */
static void renew_expect(const fr_script *s, int keeps, int reason, int fail_status)
{
    fake_redis *f = fr_start(s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    redlease_lock_options lo = lopts(400, 0, 0);
    lo.renew_interval_ms = 100 * S;
    acquire(c, &o, "res", lo);
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    if (keeps) {
        run_until(&o.events[REDLEASE_EV_RENEWED], 2000, NULL);
        CHECK(o.events[REDLEASE_EV_RENEWED] >= 1);
        CHECK_EQ(o.lost, 0);
        CHECK_EQ(redlease_lock_held(o.lk), 1);
        release(&o, NULL);
        CHECK_EQ(o.rel_st, REDLEASE_OK);
    } else {
        run_until(&o.lost, 3000, NULL);
        CHECK_EQ(o.lost, 1);
        CHECK_EQ(o.lost_reason, reason);
        CHECK_EQ(redlease_lock_held(o.lk), 0);
        release(&o, o.lk);
        CHECK_EQ(o.rel_st, REDLEASE_ENOTHELD);
    }
    if (fail_status) {
        CHECK(o.events[REDLEASE_EV_RENEW_FAILED] >= 1);
        CHECK_EQ(o.last_status[REDLEASE_EV_RENEW_FAILED], fail_status);
    }
    redlease_stats st;
    redlease_client_stats(c, &st);
    CHECK_EQ(st.held_now, 0);
    CHECK_EQ(st.renew_failed, (uint64_t)o.events[REDLEASE_EV_RENEW_FAILED]);
    finish(c, &o);
    fr_stop(f);
}

static void test_renewal_errors_are_retried_not_lost(void)
{
    for (size_t i = 0; i < NERR; i++) {
        int noscript = strcmp(redis_errors[i].name, "NOSCRIPT") == 0;
        fr_script s = {0};
        s.steps[FR_RENEW][0].bytes = redis_errors[i].bytes;
        s.steps[FR_RENEW][1].bytes = noscript ? redis_errors[i].bytes : ":1\r\n";
        s.steps[FR_RENEW][2].bytes = ":1\r\n";
        scenario_begin();
        /* NOSCRIPT: resent as EVAL at once; that EVAL fails too, then the retry is fine.
         * WRONGTYPE: the key holds another type, so not our token: lost.
         * NOAUTH: the connection is replaced, the renewal retried. */
        if (strcmp(redis_errors[i].name, "WRONGTYPE") == 0)
            renew_expect(&s, 0, REDLEASE_LOST_NOT_OWNER, 0);
        else
            renew_expect(&s, 1, 0, strcmp(redis_errors[i].name, "NOAUTH") == 0 ? REDLEASE_EAUTH : REDLEASE_EREDIS);
        scenario_end("renewal", redis_errors[i].name);
    }
}

static void test_renewal_errors_until_deadline_expire(void)
{
    fr_script s = {0};
    s.steps[FR_RENEW][0].bytes = redis_errors[0].bytes; /* OOM, every time */
    renew_expect(&s, 0, REDLEASE_LOST_EXPIRED, REDLEASE_EREDIS);
    memset(&s, 0, sizeof s);
    s.steps[FR_RENEW][0] = (fr_step){"$10\r\nabc", 0, FR_SILENCE};
    renew_expect(&s, 0, REDLEASE_LOST_EXPIRED, 0);
    memset(&s, 0, sizeof s);
    s.steps[FR_RENEW][0].bytes = ":0\r\n"; /* not ours: lost at once */
    renew_expect(&s, 0, REDLEASE_LOST_NOT_OWNER, 0);
}

static void test_renewal_wrong_reply_types(void)
{
    for (size_t i = 0; i < NWRONG; i++) {
        if (strcmp(wrong_types[i].name, "integer") == 0) continue; /* :1 is right */
        fr_script s = {0};
        s.steps[FR_RENEW][0].bytes = wrong_types[i].bytes;
        s.steps[FR_RENEW][1].bytes = ":1\r\n";
        scenario_begin();
        renew_expect(&s, 1, 0, REDLEASE_EPROTO);
        scenario_end("renewal", wrong_types[i].name);
    }
}

/* ------------------------------------------------------------- release */

static void release_expect(const fr_script *s, int want)
{
    fake_redis *f = fr_start(s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    acquire(c, &o, "res", lopts(1000, 0, 0));
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    release(&o, o.lk);
    CHECK_EQ(o.rel_st, want);
    CHECK_EQ(o.lost, 0);
    redlease_stats st;
    redlease_client_stats(c, &st);
    CHECK_EQ(st.released, 1);
    CHECK_EQ(st.held_now, 0);
    finish(c, &o);
    fr_stop(f);
}

static void test_release_errors(void)
{
    for (size_t i = 0; i < NERR; i++) {
        fr_script s = {0};
        s.steps[FR_RELEASE][0].bytes = redis_errors[i].bytes;
        s.steps[FR_RELEASE][1].bytes = ":1\r\n";
        scenario_begin();
        /* transient errors are retried within the release's deadline; the
         * definite ones end it: NOAUTH, and WRONGTYPE (not our token) */
        const char *n = redis_errors[i].name;
        release_expect(&s, strcmp(n, "NOAUTH") == 0       ? REDLEASE_EAUTH
                           : strcmp(n, "WRONGTYPE") == 0 ? REDLEASE_ENOTHELD
                                                         : REDLEASE_OK);
        scenario_end("release", redis_errors[i].name);
    }
    for (size_t i = 0; i < NWRONG; i++) {
        if (strcmp(wrong_types[i].name, "integer") == 0) continue;
        fr_script s = {0};
        s.steps[FR_RELEASE][0].bytes = wrong_types[i].bytes;
        scenario_begin();
        release_expect(&s, REDLEASE_EPROTO);
        scenario_end("release", wrong_types[i].name);
    }
    fr_script s = {0}; /* silence: the command timeout ends it */
    s.steps[FR_RELEASE][0] = (fr_step){"$10\r\nabc", 0, FR_SILENCE};
    release_expect(&s, REDLEASE_ETIMEDOUT);
    memset(&s, 0, sizeof s); /* a close mid-reply: sent again on the next connection */
    s.steps[FR_RELEASE][0] = (fr_step){":", 0, FR_CLOSE};
    s.steps[FR_RELEASE][1].bytes = ":1\r\n";
    release_expect(&s, REDLEASE_OK);
}

/* ----------------------------------------------------------- handshake */

/* The handshake fails every time: the client never connects; a waiting
 * acquire ends with the refusal's own status when retrying cannot cure it
 * (EAUTH, ECONFIG: at once), else with ECONN when its budget ends; the
 * server's error text is kept, the password never shows. */
static void handshake_expect_fail(const fr_script *s, int db, int hs_status, const char *want_err)
{
    fake_redis *f = fr_start(s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, PASSWORD, db);
    acquire(c, &o, "res", lopts(1000, 200, 0));
    int64_t t0 = mono_ms();
    run_until(&o.acq, 3000, o.lk);
    int definite = hs_status == REDLEASE_EAUTH || hs_status == REDLEASE_ECONFIG;
    CHECK_EQ(o.acq_st, definite ? hs_status : REDLEASE_ECONN);
    if (definite) CHECK(mono_ms() - t0 < 150 * S); /* not at the budget's end */
    CHECK_EQ(o.events[REDLEASE_EV_CONNECTED], 0);
    CHECK(o.events[REDLEASE_EV_DISCONNECTED] >= 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_DISCONNECTED], hs_status);
    CHECK_EQ(fr_count(f, FR_SET), 0);
    const char *e = redlease_client_errstr(c);
    if (want_err) CHECK(strstr(e, want_err) != NULL);
    CHECK(!has_password(e, strlen(e)));
    release(&o, o.lk);
    finish(c, &o);
    fr_stop(f);
}

static void test_handshake_errors(void)
{
    for (size_t i = 0; i < NERR; i++) {
        fr_script s = {0};
        s.steps[FR_AUTH][0].bytes = redis_errors[i].bytes;
        scenario_begin();
        /* src/errors.c: what is not transient, AUTH says of the credentials */
        const char *n = redis_errors[i].name;
        int transient = strcmp(n, "NOAUTH") != 0 && strcmp(n, "WRONGTYPE") != 0;
        handshake_expect_fail(&s, 0, transient ? REDLEASE_EREDIS : REDLEASE_EAUTH, n);
        scenario_end("AUTH", redis_errors[i].name);
    }
    fr_script s = {0};
    s.steps[FR_AUTH][0].bytes = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    handshake_expect_fail(&s, 0, REDLEASE_EAUTH, "WRONGPASS");
    memset(&s, 0, sizeof s);
    s.steps[FR_AUTH][0].bytes = ":1\r\n"; /* not a status */
    handshake_expect_fail(&s, 0, REDLEASE_EPROTO, NULL);
    memset(&s, 0, sizeof s);
    s.steps[FR_SELECT][0].bytes = "-ERR DB index is out of range\r\n";
    handshake_expect_fail(&s, 3, REDLEASE_ECONFIG, "out of range");
    memset(&s, 0, sizeof s);
    s.steps[FR_SELECT][0].bytes = redis_errors[2].bytes; /* LOADING */
    handshake_expect_fail(&s, 3, REDLEASE_EREDIS, "LOADING");
    memset(&s, 0, sizeof s);
    s.steps[FR_PING][0] = (fr_step){"$40\r\n0123", 0, FR_SILENCE};
    handshake_expect_fail(&s, 0, REDLEASE_ETIMEDOUT, "handshake timed out");
    memset(&s, 0, sizeof s);
    s.steps[FR_PING][0].bytes = "-NOAUTH Authentication required.\r\n"; /* a password is wanted */
    handshake_expect_fail(&s, 0, REDLEASE_EAUTH, "NOAUTH");
}

/* No SCRIPT LOAD: scripts go by EVALSHA under their SHA-1; a cold cache
 * (NOSCRIPT) gets the script's text by EVAL once, and EVALSHA after that. */
static void test_noscript_once_then_evalsha(void)
{
    fr_script s = {0};
    s.steps[FR_FENCED][0].bytes = "-NOSCRIPT No matching script. Please use EVAL.\r\n";
    s.steps[FR_FENCED][1].bytes = ":5\r\n";
    fake_redis *f = fr_start(&s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, NULL, 0);
    for (int i = 0; i < 2; i++) {
        obs a = {0};
        acquire(c, &a, "res", lopts(1000, 0, 1));
        run_until(&a.acq, 3000, NULL);
        CHECK_EQ(a.acq_st, REDLEASE_OK);
        CHECK_EQ(redlease_lock_fence(a.lk), 5);
        release(&a, NULL);
    }
    CHECK_EQ(fr_count(f, FR_FENCED), 3); /* EVALSHA, EVAL, EVALSHA */
    CHECK_EQ(fr_evals(f), 1);
    finish(c, &o);
    fr_stop(f);
}


/* ------------------------------------------------- the real redis-server */

static redisContext *admin_ctx;

static redisReply *adm(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(admin_ctx, fmt, ap);
    va_end(ap);
    return r;
}

/* Runs an admin command and drops its reply. */
#define ADM(...) freeReplyObject(adm(__VA_ARGS__))

/* The value at a binary key, or "" when there is none (static buffer). */
static const char *get_bin(const char *key, size_t len)
{
    static char v[128];
    redisReply *r = adm("GET %b", key, len);
    v[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING) snprintf(v, sizeof v, "%s", r->str);
    freeReplyObject(r);
    return v;
}

static redlease_client *real_client(obs *o, const char *password)
{
    redlease_client *c = client_at(sock_path, o, password, 0);
    int64_t end = mono_ms() + 3000 * S;
    while (!redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
    return c;
}

static void hold_real(redlease_client *c, obs *o, const char *res, redlease_lock_options lo)
{
    acquire(c, o, res, lo);
    run_until(&o->acq, 3000, NULL);
    CHECK_EQ(o->acq_st, REDLEASE_OK);
}

/* Binary resource names: the key in Redis is prefix "{" the bytes "}",
 * and the fence key beside it; a NUL does not cut the name short. */
static void test_binary_resource_names(void)
{
    static const char res[] = "a\0b\r\nc d'\"]]--%s{}\xff\xfe;redis.call('FLUSHALL')\n*1\r\n$4\r\nPING";
    size_t rlen = sizeof res - 1;
    char key[256];
    memcpy(key, "lock:{", 6);
    memcpy(key + 6, res, rlen);
    key[6 + rlen] = '}';
    size_t klen = 7 + rlen;
    for (int fencing = 0; fencing <= 1; fencing++) {
        obs o = {0};
        redlease_client *c = real_client(&o, NULL);
        redlease_lock_options lo = lopts(5000, 0, fencing);
        CHECK_EQ(redlease_acquire_len(c, res, rlen, &lo, o_acq, o_lost, &o, &o.lk), REDLEASE_OK);
        run_until(&o.acq, 3000, NULL);
        CHECK_EQ(o.acq_st, REDLEASE_OK);
        CHECK_EQ(redlease_lock_key_len(o.lk), klen);
        CHECK(memcmp(redlease_lock_key(o.lk), key, klen) == 0);
        CHECK_EQ(redlease_lock_key(o.lk)[klen], '\0');
        CHECK_STR(get_bin(key, klen), redlease_lock_token(o.lk));
        CHECK_STR(get_bin("lock:{a}", 8), ""); /* not cut at the NUL */
        if (fencing) {
            char fkey[300];
            memcpy(fkey, key, klen);
            memcpy(fkey + klen, ":fence", 6);
            CHECK(strlen(get_bin(fkey, klen + 6)) > 0);
            CHECK(redlease_lock_fence(o.lk) > 0);
            ADM("DEL %b", fkey, klen + 6);
        }
        /* the same bytes through redlease_acquire stop at the NUL: "a" */
        obs o2 = {0};
        hold_real(c, &o2, res, lopts(5000, 0, 0));
        CHECK_EQ(redlease_lock_key_len(o2.lk), 8);
        CHECK_STR(get_bin("lock:{a}", 8), redlease_lock_token(o2.lk));
        release(&o2, NULL);
        release(&o, NULL);
        CHECK_EQ(o.rel_st, REDLEASE_OK);
        redisReply *r = adm("EXISTS %b", key, klen);
        CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
        freeReplyObject(r);
        r = adm("DBSIZE");
        CHECK(r && r->integer == 0); /* the FLUSHALL in the name ran nowhere; nothing left */
        freeReplyObject(r);
        finish(c, &o);
    }
    /* acquire_len refuses what acquire refuses */
    obs o = {0};
    redlease_client *c = real_client(&o, NULL);
    redlease_lock *lk = NULL;
    static char big[REDLEASE_MAX_RESOURCE + 1];
    CHECK_EQ(redlease_acquire_len(c, res, 0, NULL, o_acq, NULL, &o, &lk), REDLEASE_EINVAL);
    CHECK_EQ(redlease_acquire_len(c, NULL, 3, NULL, o_acq, NULL, &o, &lk), REDLEASE_EINVAL);
    CHECK_EQ(redlease_acquire_len(c, big, sizeof big, NULL, o_acq, NULL, &o, &lk), REDLEASE_EINVAL);
    CHECK(lk == NULL);
    CHECK_EQ(redlease_acquire_len(c, big, sizeof big - 1, NULL, o_acq, NULL, &o, &lk), REDLEASE_OK);
    CHECK_EQ(redlease_release(lk, NULL, NULL), REDLEASE_OK);
    CHECK_EQ(redlease_lock_key_len(NULL), 0);
    run_for(20, NULL);
    finish(c, &o);
}

/* WRONGTYPE: a hash at the lock's key. The first attempt's SET NX does
 * not look at the type (EBUSY with wait 0); a later attempt's script does,
 * and ends the wait at once with EREDIS. A renewal or a release that meets
 * the hash knows the key is not ours: lost (NOT_OWNER), ENOTHELD. */
static void test_real_wrongtype(void)
{
    ADM("HSET lock:{wt} f v");
    obs a = {0};
    redlease_client *c = real_client(&a, NULL);
    acquire(c, &a, "wt", lopts(1000, 0, 0));
    run_until(&a.acq, 3000, a.lk);
    CHECK_EQ(a.acq_st, REDLEASE_EBUSY);
    release(&a, a.lk);
    obs w = {0};
    int64_t t0 = mono_ms();
    acquire(c, &w, "wt", lopts(1000, 2000, 0));
    run_until(&w.acq, 3000, w.lk);
    CHECK_EQ(w.acq_st, REDLEASE_EREDIS);
    CHECK(mono_ms() - t0 < 1000 * S); /* definite: not at the budget's end */
    CHECK(strstr(redlease_client_errstr(c), "WRONGTYPE") != NULL);
    release(&w, w.lk);

    obs b = {0};
    redlease_lock_options lo = lopts(400, 0, 0);
    lo.renew_interval_ms = 100 * S;
    hold_real(c, &b, "wt2", lo);
    ADM("DEL lock:{wt2}");
    ADM("HSET lock:{wt2} f v");
    run_until(&b.lost, 3000, NULL);
    CHECK_EQ(b.lost_reason, REDLEASE_LOST_NOT_OWNER);
    release(&b, b.lk);
    CHECK_EQ(b.rel_st, REDLEASE_ENOTHELD);

    obs d = {0};
    hold_real(c, &d, "wt3", lopts(5000, 0, 0));
    ADM("DEL lock:{wt3}");
    ADM("HSET lock:{wt3} f v");
    release(&d, d.lk);
    CHECK_EQ(d.rel_st, REDLEASE_ENOTHELD);

    /* a hash at the fence key: the fenced acquire fails whole, and leaves
     * no lock key behind that would block others for the TTL */
    ADM("HSET lock:{wt4}:fence f v");
    obs e = {0};
    acquire(c, &e, "wt4", lopts(5000, 0, 1));
    run_until(&e.acq, 3000, e.lk);
    CHECK_EQ(e.acq_st, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(c), "WRONGTYPE") != NULL);
    CHECK_STR(get_bin("lock:{wt4}", 10), "");
    release(&e, e.lk);
    finish(c, &a);
    ADM("FLUSHALL");
}

/* NOAUTH and a wrong password, on the real server; the password never
 * shows in an event or the error text. */
static void test_real_noauth_and_wrong_password(void)
{
    ADM("CONFIG SET requirepass %s", PASSWORD);
    obs a = {0}; /* no password: the handshake's PING gets NOAUTH */
    redlease_client *c = client_at(sock_path, &a, NULL, 0);
    acquire(c, &a, "na", lopts(1000, 0, 0));
    run_until(&a.acq, 3000, a.lk);
    CHECK_EQ(a.acq_st, REDLEASE_EAUTH);
    CHECK_EQ(redlease_client_connected(c), 0);
    CHECK(strstr(redlease_client_errstr(c), "NOAUTH") != NULL);
    release(&a, a.lk);
    finish(c, &a);

    obs b = {0}; /* wrong password: never connects */
    c = client_at(sock_path, &b, "wrong-" PASSWORD, 0);
    acquire(c, &b, "na", lopts(1000, 200, 0));
    run_until(&b.acq, 3000, b.lk);
    CHECK_EQ(b.acq_st, REDLEASE_EAUTH);
    CHECK(strstr(redlease_client_errstr(c), "WRONGPASS") != NULL);
    CHECK_EQ(b.last_status[REDLEASE_EV_DISCONNECTED], REDLEASE_EAUTH);
    CHECK(!has_password(redlease_client_errstr(c), strlen(redlease_client_errstr(c))));
    release(&b, b.lk);
    finish(c, &b); /* checks no event carried the password */

    obs d = {0}; /* the right one */
    c = real_client(&d, PASSWORD);
    hold_real(c, &d, "na", lopts(1000, 0, 0));
    release(&d, NULL);
    CHECK_EQ(d.rel_st, REDLEASE_OK);
    finish(c, &d);
    ADM("CONFIG SET requirepass %s", "");
}

/* OOM: maxmemory 1 with noeviction. What Redis 7 does: SET and the fenced
 * script's SET are refused (OOM), while a renewal (PEXPIRE) and a release
 * (DEL) of a lease already held still run. */
static void test_real_oom(void)
{
    obs held = {0};
    redlease_client *c = real_client(&held, NULL);
    redlease_lock_options lo = lopts(600, 0, 0);
    lo.renew_interval_ms = 100 * S;
    hold_real(c, &held, "oom-held", lo);
    ADM("CONFIG SET maxmemory-policy noeviction");
    ADM("CONFIG SET maxmemory 1");
    for (int fencing = 0; fencing <= 1; fencing++) {
        obs a = {0};
        acquire(c, &a, "oom", lopts(1000, 0, fencing));
        run_until(&a.acq, 3000, a.lk);
        CHECK_EQ(a.acq_st, REDLEASE_EREDIS);
        CHECK(strstr(redlease_client_errstr(c), "OOM") != NULL);
        release(&a, a.lk);
    }
    int renewed = held.events[REDLEASE_EV_RENEWED];
    run_for(300, NULL);
    CHECK(held.events[REDLEASE_EV_RENEWED] > renewed);
    CHECK_EQ(held.lost, 0);
    release(&held, NULL);
    CHECK_EQ(held.rel_st, REDLEASE_OK);
    ADM("CONFIG SET maxmemory 0");
    finish(c, &held);
}

/* READONLY: the server turned replica of a closed port. */
static void test_real_readonly(void)
{
    obs held = {0};
    redlease_client *c = real_client(&held, NULL);
    hold_real(c, &held, "ro-held", lopts(5000, 0, 0));
    ADM("REPLICAOF 127.0.0.1 1");
    obs a = {0};
    acquire(c, &a, "ro", lopts(1000, 0, 0));
    run_until(&a.acq, 3000, a.lk);
    CHECK_EQ(a.acq_st, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(c), "READONLY") != NULL);
    release(&a, a.lk);
    release(&held, NULL);
    /* READONLY is transient: retried (on new connections, each of which
     * meets it again) until the release's deadline */
    CHECK(held.rel_st == REDLEASE_EREDIS || held.rel_st == REDLEASE_ECONN);
    CHECK(held.events[REDLEASE_EV_RELEASE_FAILED] >= 2);
    ADM("REPLICAOF NO ONE");
    finish(c, &held);
    ADM("FLUSHALL");
}

/* BUSY: a script loops on another connection past busy-reply-threshold. */
static void test_real_busy(void)
{
    obs a = {0};
    redlease_client *c = real_client(&a, NULL);
    ADM("CONFIG SET busy-reply-threshold 20");
    redisContext *looper = redisConnectUnix(sock_path);
    redisAppendCommand(looper, "EVAL %s 0", "while true do end");
    int done = 0;
    while (!done && redisBufferWrite(looper, &done) == REDIS_OK) {}
    run_for(100, NULL);
    acquire(c, &a, "busy", lopts(1000, 0, 0));
    run_until(&a.acq, 3000, a.lk);
    CHECK_EQ(a.acq_st, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(c), "BUSY") != NULL);
    release(&a, a.lk);
    ADM("SCRIPT KILL");
    redisFree(looper);
    ADM("CONFIG SET busy-reply-threshold 5000");
    finish(c, &a);
}

/* ------------------------------------------ what a real Redis answers */

/* Waits until the client is connected (or ms pass). */
static void wait_connected(redlease_client *c, int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    while (!redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
}

static long long admin_int(const char *cmd, const char *key)
{
    redisReply *r = adm(cmd, key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
    freeReplyObject(r);
    return v;
}

/* A command from a connection of its own that does not wait for its
 * reply (it would block this thread): a looping script. */
static redisContext *send_aside(const char *fmt, const char *arg)
{
    redisContext *ctx = redisConnectUnix(sock_path);
    redisAppendCommand(ctx, fmt, arg);
    int done = 0;
    while (!done && redisBufferWrite(ctx, &done) == REDIS_OK) {}
    return ctx;
}

/* CLIENT PAUSE WRITE longer than the TTL while a handle acquires (issue
 * 11, item 1). The stalled SET runs when the pause ends, with our token,
 * for a whole TTL from then; the attempts behind it find our own token and
 * the acquire succeeds; the release deletes the key. With a budget that
 * ends during the pause, on_acquire comes by the budget and what the
 * stalled attempt sets is deleted behind it. Default timeouts (2000 ms). */
static void test_real_pause_longer_than_ttl(void)
{
    for (int short_budget = 0; short_budget <= 1; short_budget++) {
        obs o = {0};
        redlease_client_options co = copts(sock_path, NULL, 0);
        co.connect_timeout_ms = co.command_timeout_ms = 2000 * S;
        redlease_client *c = client_with(&co, &o);
        wait_connected(c, 3000);
        const char *res = short_budget ? "pause-b" : "pause-a";
        char key[32];
        size_t klen;
        redlease_key("lock:", res, strlen(res), REDLEASE_KEY_LOCK, key, sizeof key, &klen);
        char pause[64];
        snprintf(pause, sizeof pause, "CLIENT PAUSE %lld WRITE", (long long)(3500 * S));
        ADM(pause);
        int64_t t0 = mono_ms();
        acquire(c, &o, res, lopts(1500, short_budget ? 1000 : 4000, 0));
        run_until(&o.acq, 6000, short_budget ? o.lk : NULL);
        int64_t took = mono_ms() - t0;
        if (!short_budget) {
            CHECK_EQ(o.acq_st, REDLEASE_OK);
            CHECK(took >= 3500 * S - 50); /* not before the pause ended */
            CHECK_EQ(redlease_lock_held(o.lk), 1);
            CHECK_STR(get_bin(key, klen), redlease_lock_token(o.lk));
            release(&o, NULL);
            CHECK_EQ(o.rel_st, REDLEASE_OK);
            CHECK_EQ(admin_int("EXISTS %s", key), 0);
        } else {
            CHECK(o.acq_st == REDLEASE_ETIMEDOUT || o.acq_st == REDLEASE_ECONN);
            CHECK(took <= 1000 * S + 300 * S); /* by the budget, not the timeouts */
            release(&o, o.lk);
            /* the pause ends, the stalled SET runs, the delete behind it too */
            int64_t end = t0 + 3500 * S + 1000 * S;
            while (admin_int("EXISTS %s", key) != 0 && mono_ms() < end) testloop_run_once(10);
            CHECK_EQ(admin_int("EXISTS %s", key), 0);
        }
        finish(c, &o);
        ADM("CLIENT UNPAUSE");
    }
    ADM("FLUSHALL");
}

/* An ACL user without access to the key, waiting for ever: ends at once
 * with EPERM, and the failed attempt was an event with Redis's text. */
static void test_real_noperm_ends_a_wait_for_ever(void)
{
    ADM("ACL SETUSER limited on >limited-pw ~other:* +@all");
    obs o = {0};
    redlease_client_options co = copts(sock_path, "limited-pw", 0);
    co.username = "limited";
    redlease_client *c = client_with(&co, &o);
    watch_text = "NOPERM";
    watch_hits = 0;
    int64_t t0 = mono_ms();
    acquire(c, &o, "acl", lopts(1000, REDLEASE_WAIT_FOREVER, 0));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_EPERM);
    CHECK(mono_ms() - t0 < 1000 * S);
    CHECK_EQ(o.events[REDLEASE_EV_ATTEMPT_FAILED], 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_ATTEMPT_FAILED], REDLEASE_EPERM);
    CHECK(watch_hits >= 1);
    watch_text = NULL;
    release(&o, o.lk);
    finish(c, &o);
    ADM("ACL DELUSER limited");
}

/* OOM is transient: every attempt of the wait is an event with Redis's
 * text; it ends EREDIS by the budget, or succeeds once memory is back. */
static void test_real_oom_retried_within_the_budget(void)
{
    ADM("CONFIG SET maxmemory-policy noeviction");
    for (int freed = 0; freed <= 1; freed++) {
        obs o = {0};
        redlease_client *c = real_client(&o, NULL);
        ADM("CONFIG SET maxmemory 1");
        watch_text = "OOM";
        watch_hits = 0;
        acquire(c, &o, "oom-wait", lopts(1000, 800, freed));
        if (freed) {
            run_for(300, o.lk);
            ADM("CONFIG SET maxmemory 0");
        }
        run_until(&o.acq, 3000, freed ? NULL : o.lk);
        CHECK_EQ(o.acq_st, freed ? REDLEASE_OK : REDLEASE_EREDIS);
        CHECK(o.events[REDLEASE_EV_ATTEMPT_FAILED] >= 2);
        CHECK(watch_hits >= 2); /* each with Redis's text (the last may be cut by the budget) */
        watch_text = NULL;
        ADM("CONFIG SET maxmemory 0");
        release(&o, NULL);
        finish(c, &o);
    }
    ADM("FLUSHALL");
}

/* READONLY: the server became a replica. The client drops the connection
 * and reconnects; the attempts go on; once it is a primary again the
 * acquire succeeds within its budget. */
static void test_real_readonly_reconnects_and_retries(void)
{
    obs o = {0};
    redlease_client *c = real_client(&o, NULL);
    redlease_stats before;
    redlease_client_stats(c, &before);
    ADM("REPLICAOF 127.0.0.1 1");
    watch_text = "READONLY";
    watch_hits = 0;
    acquire(c, &o, "ro-wait", lopts(1000, 3000, 0));
    run_for(500, o.lk);
    ADM("REPLICAOF NO ONE");
    run_until(&o.acq, 4000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    redlease_stats after;
    redlease_client_stats(c, &after);
    CHECK(after.connects >= before.connects + 2); /* replaced, more than once */
    CHECK(o.events[REDLEASE_EV_ATTEMPT_FAILED] >= 1);
    CHECK(watch_hits >= 2); /* in the attempts' and the disconnects' details */
    watch_text = NULL;
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish(c, &o);
    ADM("FLUSHALL");
}

/* requirepass set while a client without a password is connected (Redis
 * keeps that connection logged in), then the connection drops: the new
 * one is refused (its PING gets NOAUTH), so the client is not connected
 * (it was, with every command answered NOAUTH), the acquire ends with
 * EAUTH at once, and the reconnects back off. */
static void test_real_password_set_after_connect(void)
{
    obs o = {0};
    redlease_client *c = real_client(&o, NULL);
    CHECK(redlease_client_connected(c));
    ADM("CONFIG SET requirepass %s", PASSWORD);
    ADM("CLIENT KILL TYPE normal SKIPME yes");
    run_for(100, NULL);
    CHECK_EQ(redlease_client_connected(c), 0);
    int64_t t0 = mono_ms();
    acquire(c, &o, "late-pw", lopts(1000, REDLEASE_WAIT_FOREVER, 0));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_EAUTH);
    CHECK(mono_ms() - t0 < 1000 * S);
    int reconnects = o.events[REDLEASE_EV_RECONNECTING];
    run_for(1000, NULL);
    CHECK_EQ(redlease_client_connected(c), 0);
    CHECK_EQ(o.last_status[REDLEASE_EV_DISCONNECTED], REDLEASE_EAUTH);
    /* the backoff is not reset by a refused handshake: U[0, 40 ms] once it
     * reached reconnect_max_ms, about 50 tries a second (a reset to
     * reconnect_min_ms, U[0, 10 ms], would make about 200); and it goes on */
    int tries = o.events[REDLEASE_EV_RECONNECTING] - reconnects;
    printf("# %d reconnects in 1 s while refused\n", tries);
    CHECK(tries >= 5 && tries <= 100 * S);
    release(&o, o.lk);
    finish(c, &o);
    ADM("CONFIG SET requirepass %s", "");
}

/* SELECT of a database that does not exist: ECONFIG at once. */
static void test_real_bad_database(void)
{
    obs o = {0};
    redlease_client *c = client_at(sock_path, &o, NULL, 9999);
    int64_t t0 = mono_ms();
    acquire(c, &o, "db", lopts(1000, REDLEASE_WAIT_FOREVER, 0));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq_st, REDLEASE_ECONFIG);
    CHECK(mono_ms() - t0 < 1000 * S);
    CHECK(strstr(redlease_client_errstr(c), "DB index") != NULL);
    release(&o, o.lk);
    finish(c, &o);
}

/* A release that meets BUSY (a script runs long) is retried within its
 * deadline and deletes the key once the script is killed. */
static void test_real_release_retried_while_busy(void)
{
    obs o = {0};
    redlease_client_options co = copts(sock_path, NULL, 0);
    co.command_timeout_ms = 2000 * S;
    redlease_client *c = client_with(&co, &o);
    wait_connected(c, 3000);
    hold_real(c, &o, "rel-busy", lopts(5000, 0, 0));
    ADM("CONFIG SET busy-reply-threshold 20");
    redisContext *looper = send_aside("EVAL %s 0", "while true do end");
    run_for(100, NULL);
    CHECK_EQ(redlease_release(o.lk, o_rel, &o), REDLEASE_OK);
    run_for(300, NULL);
    CHECK_EQ(o.rel, 0);
    CHECK(o.events[REDLEASE_EV_RELEASE_FAILED] >= 1);
    ADM("SCRIPT KILL");
    run_until(&o.rel, 2000, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{rel-busy}"), 0);
    redisFree(looper);
    ADM("CONFIG SET busy-reply-threshold 5000");
    finish(c, &o);
}

/* After SCRIPT FLUSH, one NOSCRIPT per script is resent by EVAL, which
 * fills the cache: the library goes back to EVALSHA. */
static void test_real_script_flush_then_evalsha(void)
{
    obs o = {0};
    redlease_client *c = real_client(&o, NULL);
    hold_real(c, &o, "sf", lopts(5000, 0, 1));
    release(&o, NULL);
    ADM("SCRIPT FLUSH");
    ADM("CONFIG RESETSTAT");
    for (int i = 0; i < 5; i++) {
        obs a = {0};
        hold_real(c, &a, "sf", lopts(5000, 0, 1));
        release(&a, NULL);
        CHECK_EQ(a.rel_st, REDLEASE_OK);
    }
    redisReply *r = adm("INFO commandstats");
    const char *info = r && r->type == REDIS_REPLY_STRING ? r->str : "";
    long evalsha = 0, eval = 0;
    const char *p = strstr(info, "cmdstat_evalsha:calls=");
    if (p) evalsha = atol(p + strlen("cmdstat_evalsha:calls="));
    p = strstr(info, "cmdstat_eval:calls=");
    if (p) eval = atol(p + strlen("cmdstat_eval:calls="));
    printf("# after SCRIPT FLUSH: %ld EVALSHA, %ld EVAL for 5 fenced acquire+release\n", evalsha, eval);
    CHECK(evalsha >= 8);
    CHECK(eval <= 2);
    freeReplyObject(r);
    finish(c, &o);
    ADM("FLUSHALL");
}

/* wait_ms is an upper bound, whatever the connect timeout: a server that
 * accepts and never answers (a paused one), default 2000 ms timeouts. */
static void test_real_wait_is_an_upper_bound(void)
{
    obs o = {0};
    redlease_client_options co = copts(sock_path, NULL, 0);
    co.connect_timeout_ms = co.command_timeout_ms = 2000 * S;
    redlease_client *c = client_with(&co, &o);
    char pause[64];
    snprintf(pause, sizeof pause, "CLIENT PAUSE %lld ALL", (long long)(3000 * S));
    ADM(pause);
    int64_t t0 = mono_ms();
    acquire(c, &o, "bound", lopts(1000, 1000, 0));
    run_until(&o.acq, 3000, o.lk);
    int64_t took = mono_ms() - t0;
    printf("# on_acquire after %lld ms of a 1000 ms budget\n", (long long)took);
    CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT);
    CHECK(took >= 1000 * S - 5 && took <= 1000 * S + 300 * S);
    ADM("CLIENT UNPAUSE");
    release(&o, o.lk);
    finish(c, &o);
}

/* Loading a dataset at startup: commands (and the handshake's PING) get
 * LOADING, which is transient; the acquire succeeds once the data is in.
 * A second redis-server of the test's own, started on a copy of a dump
 * the harness's server saves, slowed with key-load-delay, stopped by pid. */
static void test_real_loading_is_retried(void)
{
    const char *server = getenv("REDIS_SERVER");
    const char *dir = getenv("REDLEASE_TEST_DIR");
    if (!server || !dir) SKIP_TEST("REDIS_SERVER or REDLEASE_TEST_DIR not set");
    ADM("DEBUG POPULATE 3000 loadkey 10");
    ADM("SAVE");
    char cmd[4096], sub[512], sock[600], pidfile[600];
    snprintf(sub, sizeof sub, "%s/loading", dir);
    snprintf(sock, sizeof sock, "%s/loading/redis.sock", dir);
    snprintf(pidfile, sizeof pidfile, "%s/loading/redis.pid", dir);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && cp '%s/dump.rdb' '%s/dump.rdb' && '%s' --port 0 --unixsocket '%s' "
             "--dir '%s' --save '' --appendonly no --key-load-delay %d --daemonize yes "
             "--loading-process-events-interval-bytes 1024 "
             "--pidfile '%s' --logfile '%s/redis.log'",
             sub, dir, sub, server, sock, sub, (int)(500 * S), pidfile, sub);
    CHECK_EQ(system(cmd), 0);
    ADM("FLUSHALL");
    /* 3000 keys x 0.5 ms: about 1.5 s of loading */
    obs o = {0};
    watch_text = "LOADING";
    watch_hits = 0;
    int64_t start = mono_ms();
    while (access(sock, F_OK) != 0 && mono_ms() < start + 2000) testloop_run_once(1);
    redlease_client *c = client_at(sock, &o, NULL, 0);
    acquire(c, &o, "loaded", lopts(1000, 10000, 0));
    run_until(&o.acq, 12000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    CHECK(watch_hits >= 1); /* LOADING was seen, and retried */
    printf("# acquired after %lld ms; %d events said LOADING\n", (long long)(mono_ms() - start),
           watch_hits);
    watch_text = NULL;
    release(&o, NULL);
    finish(c, &o);
    FILE *pf = fopen(pidfile, "r");
    int pid = 0;
    if (pf) {
        if (fscanf(pf, "%d", &pid) != 1) pid = 0;
        fclose(pf);
    }
    CHECK(pid > 0);
    if (pid > 0) kill(pid, SIGKILL);
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
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
    make_huge_bulk();
    static const test_case tests[] = {
        TEST_CASE(test_acquire_redis_errors),
        TEST_CASE(test_acquire_fenced_noscript_resends_eval_once),
        TEST_CASE(test_acquire_wrong_reply_types),
        TEST_CASE(test_acquire_half_reply_then_silence),
        TEST_CASE(test_acquire_close_mid_reply),
        TEST_CASE(test_peer_not_redis),
        TEST_CASE(test_renewal_errors_are_retried_not_lost),
        TEST_CASE(test_renewal_errors_until_deadline_expire),
        TEST_CASE(test_renewal_wrong_reply_types),
        TEST_CASE(test_release_errors),
        TEST_CASE(test_handshake_errors),
        TEST_CASE(test_noscript_once_then_evalsha),
        TEST_CASE(test_binary_resource_names),
        TEST_CASE(test_real_wrongtype),
        TEST_CASE(test_real_noauth_and_wrong_password),
        TEST_CASE(test_real_oom),
        TEST_CASE(test_real_readonly),
        TEST_CASE(test_real_busy),
        TEST_CASE(test_real_pause_longer_than_ttl),
        TEST_CASE(test_real_noperm_ends_a_wait_for_ever),
        TEST_CASE(test_real_oom_retried_within_the_budget),
        TEST_CASE(test_real_readonly_reconnects_and_retries),
        TEST_CASE(test_real_password_set_after_connect),
        TEST_CASE(test_real_bad_database),
        TEST_CASE(test_real_release_retried_while_busy),
        TEST_CASE(test_real_script_flush_then_evalsha),
        TEST_CASE(test_real_wait_is_an_upper_bound),
        TEST_CASE(test_real_loading_is_retried),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    testloop_destroy();
    redisFree(admin_ctx);
    return rc;
}
