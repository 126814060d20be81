/* SPDX-License-Identifier: MIT */
/* Hostile servers: the library against a fake Redis (fake_redis.c) that
 * answers every error a lock can meet, replies of the wrong type, half
 * replies followed by silence or a close, and bytes that are not RESP;
 * test_real.c causes the same errors on a real redis-server. Every scenario
 * checks the exact status the callback gets, that each callback runs
 * exactly once, that nothing is reported held wrongly, the stats, and
 * (under ASan/valgrind) no leak. Runs on the poll() loop of loop_poll.c;
 * make check runs it through hostile.itest. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <stdio.h>
#include <string.h>

#include "fake_redis.h"
#include "rig.h"

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
            int kind = strcmp(redis_errors[i].name, "WRONGTYPE") == 0;
            acquire_expect(&s, fencing, noauth ? REDLEASE_EAUTH : kind ? REDLEASE_EKIND : REDLEASE_EREDIS,
                           redis_errors[i].name);
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
 * (EAUTH, ECONFIG: at once), else when its budget ends: EREDIS when the
 * server answered with an error (BUSY, LOADING...), ECONN when it did not
 * answer as Redis; the server's error text is kept, the password never
 * shows. */
static void handshake_expect_fail(const fr_script *s, int db, int hs_status, const char *want_err)
{
    fake_redis *f = fr_start(s);
    obs o = {0};
    redlease_client *c = client_at(fr_path(f), &o, PASSWORD, db);
    /* a definite refusal gets a long budget, so that "at once" is told
     * from "at the budget's end" whatever the loop's pace */
    int definite = hs_status == REDLEASE_EAUTH || hs_status == REDLEASE_ECONFIG;
    int64_t budget = definite ? 4000 : 200;
    int64_t t0 = mono_ms();
    acquire(c, &o, "res", lopts(1000, budget, 0));
    run_until(&o.acq, 3000 + budget, o.lk);
    CHECK_EQ(o.acq_st, definite || hs_status == REDLEASE_EREDIS ? hs_status : REDLEASE_ECONN);
    if (definite) CHECK(mono_ms() - t0 < budget / 2); /* not at the budget's end */
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

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
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
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
