/* SPDX-License-Identifier: MIT */
/* Replication acknowledgement against real servers: the test starts a
 * primary and two replicas of its own (servers.h) for each case.
 *  - With replica_acks the lease is confirmed only once WAIT counted the
 *    replicas: both replicas hold the key when on_acquire(OK) runs, and
 *    renewals are acknowledged the same way.
 *  - Too few replicas (more asked than exist, or the replicas stopped):
 *    on_acquire(REDLEASE_EREPLICAS) and the key deleted from the primary.
 *  - The failover hole, counted: replicas stopped, the primary killed, a
 *    replica promoted. Without replica_acks the lease was granted and the
 *    new primary lacks it (1 lost, a second holder gets it); with
 *    replica_acks = 1 and one replica up, the promoted replica holds the
 *    key (0 lost); with none up, no lease was granted (0 lost).
 *  - A renewal no replica acknowledges never extends the lease: lost
 *    (EXPIRED) at the deadline of the last acknowledged one.
 *  - Refusals: an ACL user without WAIT (EPERM), WAITAOF on a server
 *    without it or without an AOF (EREDIS), each with the key deleted.
 * Runs on the poll() loop through replication.itest. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rig.h"
#include "servers.h"

static srv primary, replica[2];

static void stop_all(void)
{
    srv_kill(&primary);
    srv_kill(&replica[0]);
    srv_kill(&replica[1]);
}

/* 1 once n replicas acknowledge a write of ours (within ~10 s). Online is
 * not enough: a replica is sent writes only after its first REPLCONF ACK,
 * up to a second after its sync. */
static int wait_acks(int n)
{
    redisContext *a = redisConnect("127.0.0.1", primary.port);
    int ok = 0;
    for (int i = 0; !ok && a && !a->err && i < 100; i++) {
        redisReply *r = redisCommand(a, "SET ready 1");
        if (r) freeReplyObject(r);
        r = redisCommand(a, "WAIT %d 100", n);
        ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= n;
        if (r) freeReplyObject(r);
    }
    if (a) redisFree(a);
    return ok;
}

/* A primary and two replicas in sync; 0, or -1. */
static int start_all(void)
{
    stop_all();
    /* no 5 s wait for more replicas before a full sync (the default) */
    if (srv_start(&primary, "primary", "--port", "--repl-diskless-sync-delay 0")) {
        printf("# the primary did not start\n");
        return -1;
    }
    char of[64];
    snprintf(of, sizeof of, "--replicaof 127.0.0.1 %d", primary.port);
    for (int i = 0; i < 2; i++)
        if (srv_start(&replica[i], i ? "replica2" : "replica1", "--port", of)) {
            printf("# replica %d did not start\n", i + 1);
            return -1;
        }
    if (wait_acks(2)) return 0;
    printf("# the replicas did not come online\n");
    return -1;
}

#define NEED_SERVERS() NEED_STARTED(start_all, "a primary and two replicas started")

static redlease_client *client_to(const srv *s, obs *o)
{
    redlease_client_options co = copts_tcp(s->port);
    redlease_client *c = client_with(&co, o);
    wait_connected(c, 3000);
    return c;
}

static redlease_lock_options acked(int64_t ttl, int n, int64_t timeout)
{
    redlease_lock_options lo = lopts(ttl, 0, 0);
    lo.replica_acks = n;
    lo.replica_timeout_ms = timeout * S;
    return lo;
}

static const char *value_at(const srv *s, const char *key)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    return srv_str(s, buf[i], sizeof buf[i], "GET %s", key);
}

/* Promotes r to primary (the failover a Sentinel would do). */
static void promote(const srv *r)
{
    redisReply *x = srv_cmd(r, "REPLICAOF NO ONE");
    CHECK(x && x->type == REDIS_REPLY_STATUS);
    if (x) freeReplyObject(x);
}

static void test_repl_acknowledged_lease_is_on_every_replica(void)
{
    NEED_SERVERS();
    obs o = {0};
    redlease_client *c = client_to(&primary, &o);
    hold_real(c, &o, "repl-ok", acked(600, 2, 400));
    const char *tok = redlease_lock_token(o.lk);
    /* WAIT returned 2: both replicas have the key when we hear OK */
    CHECK(is_value_of(value_at(&replica[0], "lock:{repl-ok}"), tok));
    CHECK(is_value_of(value_at(&replica[1], "lock:{repl-ok}"), tok));
    run_for(900, NULL); /* renewals every 200 ms, each acknowledged */
    CHECK(o.events[REDLEASE_EV_RENEWED] >= 3);
    CHECK_EQ(o.events[REDLEASE_EV_RENEW_FAILED], 0);
    CHECK(redlease_lock_held(o.lk));
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish(c, &o);
}

static void test_repl_more_than_exist_fails_and_deletes(void)
{
    NEED_SERVERS();
    obs o = {0};
    redlease_client *c = client_to(&primary, &o);
    int64_t t0 = mono_ms();
    acquire(c, &o, "repl-three", acked(2000, 3, 100));
    run_until(&o.acq, 3000, o.lk);
    printf("# %s after %lld ms: %s\n", redlease_strerror(o.acq_st), (long long)(mono_ms() - t0),
           redlease_client_errstr(c));
    CHECK_EQ(o.acq_st, REDLEASE_EREPLICAS);
    CHECK(mono_ms() - t0 >= 100);
    CHECK(strstr(redlease_client_errstr(c), "2 of 3 replicas") != NULL);
    /* the delete, then its replication; before the key's own TTL (2000 ms
     * from after t0) could make it look deleted */
    int64_t end = t0 + 1500 * S;
    while ((*value_at(&primary, "lock:{repl-three}") || *value_at(&replica[0], "lock:{repl-three}")) &&
           mono_ms() < end)
        run_for(10, o.lk);
    CHECK_STR(value_at(&primary, "lock:{repl-three}"), ""); /* deleted again */
    CHECK_STR(value_at(&replica[0], "lock:{repl-three}"), "");
    release(&o, o.lk);
    finish(c, &o);
}

/* Replicas stopped (SIGSTOP) and their links cut, so a write reaches no
 * replica but those left up (which are waited for to come back online), a
 * lease asked for, then the primary killed and replica 1 promoted. Returns
 * how many leases the failover lost: granted, and missing on the new
 * primary, where a second client then acquires the same resource. */
static int failover_loses(int replica_acks, int stop_both)
{
    if (start_all()) return -1;
    obs o = {0}, o2 = {0};
    kill(replica[1].pid, SIGSTOP);
    if (stop_both) kill(replica[0].pid, SIGSTOP);
    redisReply *x = srv_cmd(&primary, "CLIENT KILL TYPE replica");
    CHECK(x && x->type == REDIS_REPLY_INTEGER);
    if (x) freeReplyObject(x);
    if (!stop_both) CHECK(wait_acks(1)); /* replica 1 back, replica 2 still cut */
    redlease_client *c = client_to(&primary, &o);
    acquire(c, &o, "repl-failover", acked(5000, replica_acks, 200));
    run_until(&o.acq, 3000, NULL);
    int granted = o.acq_st == REDLEASE_OK;
    run_for(50, NULL); /* a failed acquire's delete lands too */
    srv_kill(&primary);
    kill(replica[0].pid, SIGCONT);
    kill(replica[1].pid, SIGCONT);
    promote(&replica[0]);
    int on_new = granted && strcmp(value_at(&replica[0], "lock:{repl-failover}"),
                                   redlease_lock_token(o.lk)) == 0;
    /* A client of the new primary: does it get what the first one holds? */
    redlease_client *c2 = client_to(&replica[0], &o2);
    acquire(c2, &o2, "repl-failover", lopts(5000, 0, 0));
    run_until(&o2.acq, 3000, NULL);
    int second = o2.acq_st == REDLEASE_OK;
    printf("# replica_acks %d, %s replica up: %s; on the new primary %d; a second client: %s\n",
           replica_acks, stop_both ? "no" : "one", redlease_strerror(o.acq_st), on_new,
           redlease_strerror(o2.acq_st));
    CHECK(!(granted && on_new && second)); /* a key on the new primary stops the second */
    release(&o2, NULL);
    release(&o, NULL);
    CHECK(o.acq == 1 && o.lost <= 1 && o.rel == 1);
    redlease_client_free(c); /* finish() wants the loop empty after the last */
    finish(c2, &o2);
    return granted && !on_new && second;
}

static void test_repl_failover_hole_without_acknowledgement(void)
{
    int lost = failover_loses(0, 1);
    CHECK(lost >= 0); /* the servers started */
    CHECK_EQ(lost, 1); /* the hole: granted, lost with the primary, taken by another */
}

static void test_repl_failover_keeps_an_acknowledged_lease(void)
{
    int lost = failover_loses(1, 0);
    CHECK(lost >= 0); /* the servers started */
    CHECK_EQ(lost, 0);
}

static void test_repl_failover_with_no_replica_up_grants_nothing(void)
{
    int lost = failover_loses(1, 1);
    CHECK(lost >= 0); /* the servers started */
    CHECK_EQ(lost, 0);
}

static void test_repl_unacknowledged_renewal_never_extends(void)
{
    NEED_SERVERS();
    obs o = {0};
    redlease_client *c = client_to(&primary, &o);
    int64_t t_call = mono_ms(); /* before the acquire's send */
    hold_real(c, &o, "repl-renew", acked(600, 2, 50));
    kill(replica[1].pid, SIGSTOP); /* from now on 1 of 2 */
    run_until(&o.lost, 2000, NULL);
    int64_t after = mono_ms() - t_call;
    printf("# lost %lld ms after the acquire was asked for; %d renewals failed\n", (long long)after,
           o.events[REDLEASE_EV_RENEW_FAILED]);
    CHECK_EQ(o.lost, 1);
    CHECK_EQ(o.lost_reason, REDLEASE_LOST_EXPIRED);
    /* By the acquire's own deadline (592 ms after its send): never extended.
     * A renewal, sent 200 ms in at the earliest, would have moved it past
     * 792 ms; what lies between is the loop's lateness on a busy machine. */
    CHECK(after < 790 * S);
    CHECK(o.events[REDLEASE_EV_RENEW_FAILED] >= 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_RENEW_FAILED], REDLEASE_EREPLICAS);
    kill(replica[1].pid, SIGCONT);
    release(&o, NULL);
    finish(c, &o);
}

static void test_repl_wait_refused(void)
{
    NEED_SERVERS();
    redisReply *r = srv_cmd(&primary, "ACL SETUSER nowait on >pw ~* &* +@all -wait -waitaof");
    if (r && r->type == REDIS_REPLY_ERROR) { /* no WAITAOF in this server's command table */
        freeReplyObject(r);
        r = srv_cmd(&primary, "ACL SETUSER nowait on >pw ~* &* +@all -wait");
    }
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r) freeReplyObject(r);
    obs o = {0};
    redlease_client_options co = copts_tcp(primary.port);
    co.username = "nowait";
    co.password = "pw";
    redlease_client *c = client_with(&co, &o);
    redlease_lock_options lo = acked(2000, 1, 200);
    lo.wait_ms = 2000 * S; /* definite: at once, whatever the budget */
    int64_t t0 = mono_ms();
    acquire(c, &o, "repl-acl", lo);
    run_until(&o.acq, 3000, o.lk);
    printf("# %s after %lld ms: %s\n", redlease_strerror(o.acq_st), (long long)(mono_ms() - t0),
           redlease_client_errstr(c));
    CHECK_EQ(o.acq_st, REDLEASE_EPERM);
    CHECK(mono_ms() - t0 < 1000 * S);
    run_for(100, o.lk);
    CHECK_STR(value_at(&primary, "lock:{repl-acl}"), "");
    release(&o, o.lk);
    finish(c, &o);

    /* WAITAOF: unknown before 7.2; after, refused without an AOF here */
    obs q = {0};
    c = client_to(&primary, &q);
    lo = acked(2000, 1, 200);
    lo.replica_fsync = 1;
    acquire(c, &q, "repl-aof", lo);
    run_until(&q.acq, 3000, q.lk);
    printf("# WAITAOF: %s: %s\n", redlease_strerror(q.acq_st), redlease_client_errstr(c));
    CHECK_EQ(q.acq_st, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(c), "WAITAOF") != NULL);
    run_for(100, q.lk);
    CHECK_STR(value_at(&primary, "lock:{repl-aof}"), "");
    release(&q, q.lk);
    finish(c, &q);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_repl_acknowledged_lease_is_on_every_replica),
        TEST_CASE(test_repl_more_than_exist_fails_and_deletes),
        TEST_CASE(test_repl_failover_hole_without_acknowledgement),
        TEST_CASE(test_repl_failover_keeps_an_acknowledged_lease),
        TEST_CASE(test_repl_failover_with_no_replica_up_grants_nothing),
        TEST_CASE(test_repl_unacknowledged_renewal_never_extends),
        TEST_CASE(test_repl_wait_refused),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    stop_all();
    rig_stop();
    return rc;
}
