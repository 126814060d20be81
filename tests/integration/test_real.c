/* SPDX-License-Identifier: MIT */
/* What a real Redis answers, on the harness's redis-server, in the states
 * production servers reach: binary resource names, a hash at the lock key
 * (WRONGTYPE), NOAUTH and a wrong password, OOM, READONLY, BUSY, a pause
 * longer than the TTL, ACL NOPERM, a password set later, a database that
 * does not exist, a flushed script cache, a silent server, endpoints that
 * never become a server, errors and events naming their server, and
 * LOADING (on
 * a second redis-server the test starts itself and stops by pid). Each
 * case checks the exact status, that each callback runs once, that nothing
 * is held wrongly, and restores the server. Runs on the poll() loop of
 * loop_poll.c through real.itest (run-integration.sh starts the server);
 * tests/integration/rig.h has the observer and the helpers. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rig.h"

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
        CHECK(is_lease_value(get_bin(key, klen), o.lk));
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
        CHECK(is_lease_value(get_bin("lock:{a}", 8), o2.lk));
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
 * and ends the wait at once with EKIND. A renewal or a release that meets
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
    CHECK_EQ(w.acq_st, REDLEASE_EKIND);
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
    CHECK_EQ(e.acq_st, REDLEASE_EKIND);
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
     * meets it again) until the release's deadline. What the last retry
     * met decides the status: READONLY, no connection yet, or a retry
     * still unanswered at the deadline (a reconnect's handshake was in
     * flight): never OK. */
    CHECK(held.rel_st == REDLEASE_EREDIS || held.rel_st == REDLEASE_ECONN ||
          held.rel_st == REDLEASE_ETIMEDOUT);
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
    CHECK(wait_busy(3000));
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
        int64_t t_pause = mono_ms(); /* the pause begins no earlier */
        ADM(pause);
        int64_t t0 = mono_ms();
        acquire(c, &o, res, lopts(1500, short_budget ? 1000 : 4000, 0));
        run_until(&o.acq, 6000, short_budget ? o.lk : NULL);
        int64_t done = mono_ms(), took = done - t0;
        if (!short_budget) {
            CHECK_EQ(o.acq_st, REDLEASE_OK);
            CHECK(done - t_pause >= 3500 * S - 1); /* not before the pause ended */
            CHECK_EQ(redlease_lock_held(o.lk), 1);
            CHECK(is_lease_value(get_bin(key, klen), o.lk));
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
    int64_t end = mono_ms() + 3000 * S; /* till the loop reads the close */
    while (redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
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
    CHECK(wait_busy(3000));
    CHECK_EQ(redlease_release(o.lk, o_rel, &o), REDLEASE_OK);
    int64_t end = mono_ms() + 3000 * S; /* till a try meets BUSY */
    while (!o.events[REDLEASE_EV_RELEASE_FAILED] && mono_ms() < end) testloop_run_once(5);
    CHECK(o.events[REDLEASE_EV_RELEASE_FAILED] >= 1);
    CHECK_EQ(o.rel, 0); /* and goes on trying */
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
    /* The releases are scripts too, unless the server has DELIFEQ or DELEX */
    redisReply *ci = adm("COMMAND INFO DELIFEQ DELEX");
    int native = ci && ci->type == REDIS_REPLY_ARRAY && ci->elements == 2 &&
                 (ci->element[0]->type == REDIS_REPLY_ARRAY || ci->element[1]->type == REDIS_REPLY_ARRAY);
    if (ci) freeReplyObject(ci);
    printf("# after SCRIPT FLUSH: %ld EVALSHA, %ld EVAL for 5 fenced acquire+release%s\n", evalsha,
           eval, native ? " (releases by DELIFEQ/DELEX)" : "");
    CHECK(evalsha >= (native ? 4 : 8));
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

/* The wait budget bounds an acquire against endpoints that never become a
 * server: a socket path nobody listens on (each connect fails at once, and
 * is retried with backoff), and a socket that listens but never accepts
 * (the kernel completes the connect; the handshake's PING is never read).
 * Default 2000 ms timeouts, a 600 ms budget: on_acquire by the budget,
 * with a connection status, and the handle never held. */
static void test_real_wait_bound_against_dead_endpoints(void)
{
    char dir[] = "/tmp/redlease-dead.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char missing[128], deaf[128];
    snprintf(missing, sizeof missing, "%s/missing.sock", dir);
    snprintf(deaf, sizeof deaf, "%s/deaf.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, deaf, strlen(deaf) + 1);
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(lfd, 16) == 0);
    const char *paths[2] = {missing, deaf};
    for (int i = 0; i < 2; i++) {
        obs o = {0};
        redlease_client_options co = copts(paths[i], NULL, 0);
        co.connect_timeout_ms = co.command_timeout_ms = 2000 * S;
        redlease_client *c = client_with(&co, &o);
        int64_t t0 = mono_ms();
        acquire(c, &o, "dead", lopts(1000, 600, 0));
        run_until(&o.acq, 3000, o.lk);
        int64_t took = mono_ms() - t0;
        printf("# %s: on_acquire %s after %lld ms of a 600 ms budget\n", i ? "never accepted" : "no listener",
               redlease_strerror(o.acq_st), (long long)took);
        CHECK_EQ(o.acq, 1);
        CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT);
        CHECK(took >= 600 * S - 5 && took <= 600 * S + 300 * S);
        release(&o, o.lk);
        finish(c, &o);
    }
    close(lfd);
    unlink(deaf);
    rmdir(dir);
}

/* What the connection events said last (their texts live only during
 * the hook): each one's node, and the DISCONNECTED's detail. */
static char named_connected[64], named_disconnected[64], disconnected_detail[256];

static void naming_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    if (ev->type == REDLEASE_EV_CONNECTED)
        snprintf(named_connected, sizeof named_connected, "%s", ev->node ? ev->node : "(null)");
    if (ev->type == REDLEASE_EV_DISCONNECTED) {
        snprintf(named_disconnected, sizeof named_disconnected, "%s", ev->node ? ev->node : "(null)");
        snprintf(disconnected_detail, sizeof disconnected_detail, "%s", ev->detail ? ev->detail : "");
    }
    o_event(c, ev, arg);
}

/* A failed connect names the server it went to, in its event (node, and
 * detail after it) and in redlease_client_errstr(): a port on 127.0.0.1
 * nobody listens on (bound, then closed: refused at once); a connect to
 * the harness's server names it too. */
static void test_real_failed_connect_names_the_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
          getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    int port = ntohs(sa.sin_port);
    close(fd);
    char want[64], text[80];
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    snprintf(text, sizeof text, "%s: ", want);
    obs o = {0};
    named_disconnected[0] = disconnected_detail[0] = '\0';
    redlease_client_options co = copts_tcp(port);
    redlease_client *c = client_with(&co, &o);
    redlease_client_set_event_cb(c, naming_event, &o);
    acquire(c, &o, "nowhere", lopts(1000, 300, 0));
    run_until(&o.acq, 3000, o.lk);
    CHECK_EQ(o.acq, 1);
    CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT);
    CHECK(o.events[REDLEASE_EV_DISCONNECTED] >= 1);
    printf("# DISCONNECTED: node %s, detail \"%s\"; errstr \"%s\"\n", named_disconnected,
           disconnected_detail, redlease_client_errstr(c));
    CHECK_STR(named_disconnected, want);
    CHECK(strncmp(disconnected_detail, text, strlen(text)) == 0 && disconnected_detail[strlen(text)]);
    CHECK(strncmp(redlease_client_errstr(c), text, strlen(text)) == 0);
    release(&o, o.lk);
    finish(c, &o);

    const char *harness = getenv("REDLEASE_TEST_PORT");
    if (!harness) return;
    snprintf(want, sizeof want, "127.0.0.1:%s", harness);
    obs h = {0};
    named_connected[0] = '\0';
    co = copts_tcp(atoi(harness));
    c = client_with(&co, &h);
    redlease_client_set_event_cb(c, naming_event, &h);
    int64_t end = mono_ms() + 3000 * S;
    while (!redlease_client_connected(c) && mono_ms() < end) testloop_run_once(5);
    CHECK_STR(named_connected, want);
    finish(c, &h);
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

/* The loop cannot watch a new connection's socket (the adapter's first
 * watch fails, as a loop out of memory would): that connect fails with
 * ECONN, the text says why, nothing is left watched, and the next connect
 * goes through. */
extern int loop_poll_refuse_watches; /* loop_poll.c */
static void test_real_adapter_refuses_a_socket(void)
{
    obs o = {0};
    loop_poll_refuse_watches = 1;
    redlease_client *c = real_client(&o, NULL);
    CHECK_EQ(loop_poll_refuse_watches, 0);
    CHECK_EQ(redlease_client_connected(c), 1);
    CHECK(o.events[REDLEASE_EV_DISCONNECTED] >= 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_DISCONNECTED], REDLEASE_ECONN);
    CHECK_EQ(o.events[REDLEASE_EV_CONNECTED], 1);
    hold_real(c, &o, "refused-socket", lopts(5000, 0, 0));
    release(&o, o.lk);
    finish(c, &o); /* nothing left on the loop */
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
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
        TEST_CASE(test_real_wait_bound_against_dead_endpoints),
        TEST_CASE(test_real_failed_connect_names_the_server),
        TEST_CASE(test_real_loading_is_retried),
        TEST_CASE(test_real_adapter_refuses_a_socket),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
