/* SPDX-License-Identifier: MIT */
/* Unit tests of replication acknowledgement (lock options replica_acks,
 * replica_timeout_ms, replica_fsync, replica_scope): an acquire is a lease
 * only once WAIT (WAITAOF) counted enough replicas, on the connection the
 * write went out on; too few is REDLEASE_EREPLICAS, retried inside the
 * budget, and the key is deleted when the acquire ends without a lease; a
 * renewal extends the lease only once acknowledged; validity always counts
 * from the write's send. On the fake transport and virtual clock. */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

/* Lock options asking for n replicas within 300 ms. */
static redlease_lock_options acked(int64_t ttl, int n)
{
    redlease_lock_options o = opts(ttl);
    o.replica_acks = n;
    o.replica_timeout_ms = 300;
    return o;
}

/* The pending command is WAIT n timeout (or WAITAOF 1 n timeout). */
static int is_wait(fake *f, const char *n, const char *ms)
{
    fake_cmd *c = fake_peek(f);
    if (!c) return 0;
    if (c->argc == 3 && strcmp(c->argv[0], "WAIT") == 0)
        return strcmp(c->argv[1], n) == 0 && strcmp(c->argv[2], ms) == 0;
    if (c->argc == 4 && strcmp(c->argv[0], "WAITAOF") == 0)
        return strcmp(c->argv[1], "1") == 0 && strcmp(c->argv[2], n) == 0 &&
               strcmp(c->argv[3], ms) == 0;
    return 0;
}

/* The pending command deletes r's key if it holds r's token. */
static int is_drop(fake *f, const rec *r)
{
    fake_cmd *c = fake_peek(f);
    return c && cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)) && c->argc == 5 &&
           strcmp(c->argv[4], redlease_lock_token(r->lk)) == 0;
}

static void test_acquire_is_held_only_once_replicas_have_it(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    redlease_lock_options o = acked(3000, 2);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    CHECK(cmd_is(&f, "SET", NULL));
    fake_advance(&f, 3);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0); /* the key is set, the lease not yet confirmed */
    CHECK(!redlease_lock_held(r.lk));
    CHECK(is_wait(&f, "2", "300"));
    fake_advance(&f, 40);
    fake_reply_int(&f, 2);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));
    /* validity counts from the SET's send, not from the WAIT's answer */
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 3000 - 32 - f.now);
    const redlease_event *ev = last_event(REDLEASE_EV_ACQUIRED);
    CHECK(ev && ev->rtt_ms == 43);
    end(&f);
}

static void test_renewal_extends_only_once_acknowledged(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_status(&f, "OK");
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_advance(&f, 2);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(is_wait(&f, "1", "300"));
    /* not extended yet */
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 3000 - 32 - f.now);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 1000 + 3000 - 32 - f.now);
    /* too few on the next renewal: the lease runs on the last acknowledged one */
    fake_until(&f, t0 + 2000);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(is_wait(&f, "1", "300"));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 1000 + 3000 - 32 - f.now);
    CHECK_STR(redlease_client_errstr(f.c), "127.0.0.1:6379: WAIT: 0 of 1 replicas acknowledged in 300 ms");
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.renew_failed, 1);
    /* never acknowledged again: lost at the old deadline, not later */
    for (int i = 0; i < 400 && r.lost_calls == 0; i++) {
        fake_run(&f);
        if (cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)))
            fake_reply_int(&f, 1);
        else if (is_wait(&f, "1", "300"))
            fake_reply_int(&f, 0);
        else
            fake_until(&f, f.timer_at);
    }
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(r.lost_at, t0 + 1000 + 3000 - 32);
    end(&f);
}

static void test_replica_scope_acquire_confirms_renewals_at_once(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.replica_scope = REDLEASE_REPLICA_SCOPE_ACQUIRE;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_status(&f, "OK");
    CHECK(is_wait(&f, "1", "300")); /* the acquire still waits */
    fake_reply_int(&f, 1);
    fake_run(&f);
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 1000 + 3000 - 32 - f.now);
    end(&f);
}

static void test_too_few_replicas_fails_and_deletes_the_key(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    redlease_lock_options o = acked(3000, 2);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EREPLICAS);
    CHECK(!redlease_lock_held(r.lk));
    CHECK(is_drop(&f, &r)); /* never a key nobody holds */
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(ev && ev->status == REDLEASE_EREPLICAS && ev->retry_in_ms == -1);
    CHECK(ev && ev->detail && strcmp(ev->detail, "127.0.0.1:6379: WAIT: 1 of 2 replicas acknowledged in 300 ms") == 0);
    CHECK_STR(redlease_strerror(REDLEASE_EREPLICAS), "too few replicas acknowledged the write in time");
    end(&f);
}

static void test_too_few_replicas_is_retried_inside_the_budget(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.wait_ms = 1000;
    o.wait_retry_base_ms = 100;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t start = f.now;
    fake_reply_status(&f, "OK");
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    CHECK_EQ(fake_pending(&f), 0); /* the key stays ours while we retry */
    fake_until(&f, start + 100);
    /* the retry reclaims our own key, then asks again */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    int64_t t1 = f.now;
    fake_reply_int(&f, 1);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t1 + 3000 - 32 - f.now);
    CHECK(release(&r) == REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, 1);
    fake_run(&f);

    /* every try short: EREPLICAS at the budget's end, and the key deleted */
    rec q = {0};
    CHECK_EQ(start_lock(&f, &q, "job2", &o), REDLEASE_OK);
    for (int i = 0; i < 50 && q.acq_calls == 0; i++) {
        fake_run(&f);
        if (cmd_is(&f, "SET", NULL))
            fake_reply_status(&f, "OK");
        else if (is_attempt(&f))
            fake_reply_int(&f, 1);
        else if (is_wait(&f, "1", "300"))
            fake_reply_int(&f, 0);
        else if (f.timer_at >= 0)
            fake_until(&f, f.timer_at);
    }
    CHECK_EQ(q.acq_calls, 1);
    CHECK_EQ(q.acq_status, REDLEASE_EREPLICAS);
    CHECK(is_drop(&f, &q));
    end(&f);
}

static void test_wait_refused_is_definite_and_deletes(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.wait_ms = 5000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_reply_err(&f, "NOPERM User u has no permissions to run the 'wait' command");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1); /* at once, whatever the budget */
    CHECK_EQ(r.acq_status, REDLEASE_EPERM);
    CHECK(is_drop(&f, &r));
    fake_reply_int(&f, 1);

    rec q = {0};
    o.replica_fsync = 1; /* a server before WAITAOF */
    CHECK_EQ(start_lock(&f, &q, "job2", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    CHECK(is_wait(&f, "1", "300"));
    fake_reply_err(&f, "ERR unknown command 'WAITAOF', with args beginning with: '1' '1' '300' ");
    fake_run(&f);
    CHECK_EQ(q.acq_status, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(f.c), "WAITAOF") != NULL);
    CHECK(is_drop(&f, &q));
    end(&f);
}

static void test_waitaof_needs_the_local_fsync_and_the_replicas(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0}, q = {0}, z = {0};
    redlease_lock_options o = acked(3000, 1);
    o.replica_fsync = 1;
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "a", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, 41); /* the fence */
    CHECK(cmd_is(&f, "WAITAOF", "1"));
    CHECK(is_wait(&f, "1", "300"));
    long long both[2] = {1, 1};
    fake_reply_ints(&f, 2, both);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 41);

    CHECK_EQ(start_lock(&f, &q, "b", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, 42);
    long long no_local[2] = {0, 1};
    fake_reply_ints(&f, 2, no_local);
    fake_run(&f);
    CHECK_EQ(q.acq_status, REDLEASE_EREPLICAS);
    CHECK_EQ(redlease_lock_fence(q.lk), 0);
    CHECK_STR(redlease_client_errstr(f.c), "127.0.0.1:6379: WAITAOF: not fsynced here, 1 of 1 replicas fsynced in 300 ms");
    fake_reply_int(&f, 1); /* the drop */

    /* the local fsync alone: WAITAOF 1 0; a plain integer is no answer to it */
    o.replica_acks = 0;
    CHECK_EQ(start_lock(&f, &z, "c", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, 43);
    CHECK(is_wait(&f, "0", "300"));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(z.acq_status, REDLEASE_EPROTO);
    end(&f);
}

static void test_ack_never_goes_out_on_another_connection(void)
{
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options plain = opts(3000), o = acked(3000, 1);
    CHECK_EQ(start_lock(&f, &a, "a", &plain), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &b, "b", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 2);
    /* a's answer says this server is a replica now: the link is no use */
    fake_reply_err(&f, "READONLY You can't write against a read only replica.");
    fake_reply_status(&f, "OK"); /* b's SET, answered before the link went */
    CHECK_EQ(fake_pending(&f), 0); /* no WAIT on a link that is going */
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_ECONN);
    CHECK(!redlease_lock_held(b.lk));
    end(&f);
}

static void test_link_broken_before_the_ack(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    fake_start(&f, &co);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.wait_ms = 2000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    CHECK(is_wait(&f, "1", "300"));
    fake_break(&f);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_advance(&f, 10);
    fake_connect(&f);
    /* on the new link the next attempt reclaims our key and asks again */
    for (int i = 0; i < 20 && !is_attempt(&f); i++) fake_until(&f, f.timer_at);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    int64_t t1 = f.now;
    fake_reply_int(&f, 1);
    CHECK(is_wait(&f, "1", "300"));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t1 + 3000 - 32 - f.now);
    end(&f);
}

static void test_unanswered_or_late_ack(void)
{
    fake f;
    fake_start(&f, NULL); /* command timeout 2000 */
    rec r = {0}, q = {0};
    redlease_lock_options o = acked(3000, 1);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_advance(&f, 100);
    fake_reply_status(&f, "OK");
    int64_t wait_sent = f.now;
    fake_until(&f, wait_sent + 1999);
    CHECK_EQ(r.acq_calls, 0);
    fake_until(&f, wait_sent + 2000); /* the WAIT's own command timeout */
    CHECK_EQ(r.acq_status, REDLEASE_ETIMEDOUT);
    fake_reply_int(&f, 1); /* the stale answer changes nothing */
    fake_run(&f);
    CHECK(is_drop(&f, &r));
    CHECK(!redlease_lock_held(r.lk));
    fake_reply_int(&f, 1);

    /* answered, but after the lease's own validity (counted from the SET) */
    o = acked(100, 1);
    CHECK_EQ(start_lock(&f, &q, "short", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_status(&f, "OK");
    fake_until(&f, t0 + 100 - 3);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(q.acq_status, REDLEASE_ETIMEDOUT);
    CHECK(is_drop(&f, &q));
    end(&f);
}

static void test_late_ok_is_not_adopted_without_its_ack(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 500;
    fake_start(&f, &co);
    redlease_client_set_rng(f.c, rng_zero, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.replica_timeout_ms = 0; /* a quarter of the command timeout */
    o.wait_ms = 5000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_until(&f, f.now + 501); /* the SET timed out, the retry went 1 ms later */
    CHECK_EQ(fake_pending(&f), 2);
    fake_reply_status(&f, "OK");   /* the late OK: not a lease, no WAIT for it */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    fake_reply_int(&f, 1); /* the retry finds our token */
    CHECK(is_wait(&f, "1", "125"));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* One WAIT in flight on the connection: writes confirmed meanwhile wait
 * for its answer, then share the next one, which asks for the most
 * replicas any wants within the shortest timeout; each lock judges the
 * count by its own replica_acks. */
static void test_one_wait_in_flight_shared_by_the_writes_behind_it(void)
{
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0}, d = {0};
    redlease_lock_options oa = acked(3000, 1), ob = acked(3000, 2), od = acked(3000, 1);
    ob.replica_timeout_ms = 200;
    CHECK_EQ(start_lock(&f, &a, "a", &oa), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &b, "b", &ob), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &d, "d", &od), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 3);
    fake_reply_status(&f, "OK"); /* a's SET: its WAIT goes out behind d's SET */
    CHECK_EQ(fake_pending(&f), 3);
    fake_reply_status(&f, "OK"); /* b's: a WAIT is in flight, b waits */
    fake_reply_status(&f, "OK"); /* d's: the same */
    CHECK_EQ(fake_pending(&f), 1);
    CHECK(is_wait(&f, "1", "300"));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    CHECK_EQ(b.acq_calls + d.acq_calls, 0);
    CHECK_EQ(fake_pending(&f), 1); /* one WAIT for both: the most replicas, the shortest wait */
    CHECK(is_wait(&f, "2", "200"));
    fake_reply_int(&f, 1); /* enough for d, not for b */
    fake_run(&f);
    CHECK_EQ(d.acq_status, REDLEASE_OK);
    CHECK_EQ(b.acq_status, REDLEASE_EREPLICAS);
    CHECK(is_drop(&f, &b));
    end(&f);
}

/* The link breaks with a WAIT in flight: the writes it covered and those
 * waiting behind it hear it; none is answered on the next connection. */
static void test_waiting_writes_end_with_the_link(void)
{
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = acked(3000, 1);
    CHECK_EQ(start_lock(&f, &a, "a", &o), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &b, "b", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_reply_status(&f, "OK");
    CHECK_EQ(fake_pending(&f), 1);
    fake_break(&f);
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_ECONN);
    CHECK_EQ(b.acq_status, REDLEASE_ECONN);
    end(&f);
}

/* A write confirmed after the acquire's wait budget ended asks for no
 * WAIT: it would block the connection for a lease nobody will take. */
static void test_no_wait_after_the_budget(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = acked(3000, 1);
    o.wait_ms = 100;
    CHECK_EQ(start_lock(&f, &r, "a", &o), REDLEASE_OK);
    fake_run(&f);
    f.now += 100; /* the OK comes in the very millisecond the budget ends,
                     before the timer has run */
    fake_reply_status(&f, "OK");
    CHECK_EQ(fake_pending(&f), 1);
    CHECK(is_drop(&f, &r)); /* no WAIT: the key goes */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ETIMEDOUT);
    end(&f);
}

/* Released while its WAIT is out, and while it waits behind another's:
 * on_acquire(ECANCELED) then on_release(OK) at once, the key dropped
 * behind the WAIT; the WAIT's late answer changes nothing. The client
 * freed with a write still waiting for a WAIT: every callback, no leak. */
static void test_cancel_or_free_while_waiting_for_replicas(void)
{
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = acked(3000, 1);
    CHECK_EQ(start_lock(&f, &a, "a", &o), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &b, "b", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_reply_status(&f, "OK"); /* b waits behind a's WAIT */
    CHECK(is_wait(&f, "1", "300"));
    CHECK_EQ(release(&a), REDLEASE_OK);
    CHECK_EQ(release(&b), REDLEASE_OK);
    fake_run(&f);
    CHECK_STR(a.order, "AR");
    CHECK_EQ(a.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(b.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 3); /* the WAIT, then both keys dropped behind it */
    fake_reply_int(&f, 1);         /* the WAIT: nobody wants it now */
    fake_run(&f);
    CHECK_EQ(a.acq_calls, 1);
    CHECK(is_drop(&f, &a));
    fake_reply_int(&f, 1);
    fake_reply_int(&f, 1);

    rec c = {0}, d = {0};
    CHECK_EQ(start_lock(&f, &c, "c", &o), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &d, "d", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_reply_status(&f, "OK"); /* d queued behind c's WAIT */
    fake_free(&f);
    CHECK_EQ(c.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(d.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(fake_alloc_live(), 0);
}

/* Every allocation of two acknowledged leases' lives (one by WAIT, one by
 * WAITAOF: held, renewed, released) fails in turn: callbacks once,
 * nothing leaks. */
static void acks_oom(long fail_at, int *ok)
{
    fake f;
    if (!oom_start(&f, NULL, fail_at)) return;
    rec r[2] = {{0}, {0}};
    int started = 0;
    for (int i = 0; i < 2; i++) {
        redlease_lock_options o = acked(3000, 1);
        o.wait_ms = 500;
        o.replica_fsync = i; /* one WAIT, one WAITAOF */
        if (start_lock(&f, &r[i], i ? "b" : "a", &o) == REDLEASE_OK) started |= 1 << i;
    }
    long long counts[2] = {1, 1};
    for (int step = 0; step < 30; step++) {
        fake_advance(&f, 100);
        while (fake_peek(&f)) {
            if (cmd_is(&f, "SET", NULL))
                fake_reply_status(&f, "OK");
            else if (cmd_is(&f, "WAITAOF", NULL))
                fake_reply_ints(&f, 2, counts);
            else
                fake_reply_int(&f, 1);
        }
    }
    int good = 1;
    for (int i = 0; i < 2; i++) {
        if (!(started & 1 << i)) continue;
        CHECK_EQ(r[i].acq_calls, 1);
        CHECK(release(&r[i]) == REDLEASE_OK);
    }
    fake_advance(&f, 100);
    while (fake_peek(&f)) fake_reply_int(&f, 1);
    fake_run(&f);
    for (int i = 0; i < 2; i++) {
        if (!(started & 1 << i)) continue;
        CHECK_EQ(r[i].rel_calls, 1);
        good &= r[i].acq_status == REDLEASE_OK && r[i].lost_calls == 0;
    }
    if (started == 3 && good) (*ok)++;
    fake_alloc_fail_at(0);
    end(&f);
}

static void test_acks_allocation_failure_everywhere(void)
{
    printf("# allocation sweep: %ld allocation points\n", alloc_sweep(acks_oom));
}

static void test_replica_options_checked(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 500;
    fake_start(&f, &co);
    rec r = {0};
    redlease_lock_options o = acked(3000, -1);
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_EINVAL);
    o = acked(3000, REDLEASE_MAX_REPLICAS + 1);
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_EINVAL);
    o = acked(3000, 1);
    /* a write may wait for the WAIT in flight, then its own: both inside
     * the command timeout */
    o.replica_timeout_ms = 250;
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_EINVAL);
    o.replica_timeout_ms = -1;
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_EINVAL);
    o.replica_timeout_ms = 249;
    o.replica_scope = 2;
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_EINVAL);
    o.replica_scope = REDLEASE_REPLICA_SCOPE_ACQUIRE;
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_OK);
    /* without acknowledgement the timeout is not looked at against the client */
    rec q = {0};
    o = opts(3000);
    o.replica_timeout_ms = 100000;
    CHECK_EQ(start_lock(&f, &q, "y", &o), REDLEASE_OK);
    redlease_lock_options d;
    redlease_lock_options_init(&d);
    CHECK_EQ(d.replica_acks, 0);
    CHECK_EQ(d.replica_scope, REDLEASE_REPLICA_SCOPE_ALL);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_acquire_is_held_only_once_replicas_have_it),
        TEST_CASE(test_renewal_extends_only_once_acknowledged),
        TEST_CASE(test_replica_scope_acquire_confirms_renewals_at_once),
        TEST_CASE(test_too_few_replicas_fails_and_deletes_the_key),
        TEST_CASE(test_too_few_replicas_is_retried_inside_the_budget),
        TEST_CASE(test_wait_refused_is_definite_and_deletes),
        TEST_CASE(test_waitaof_needs_the_local_fsync_and_the_replicas),
        TEST_CASE(test_ack_never_goes_out_on_another_connection),
        TEST_CASE(test_link_broken_before_the_ack),
        TEST_CASE(test_unanswered_or_late_ack),
        TEST_CASE(test_late_ok_is_not_adopted_without_its_ack),
        TEST_CASE(test_one_wait_in_flight_shared_by_the_writes_behind_it),
        TEST_CASE(test_waiting_writes_end_with_the_link),
        TEST_CASE(test_no_wait_after_the_budget),
        TEST_CASE(test_cancel_or_free_while_waiting_for_replicas),
        TEST_CASE(test_acks_allocation_failure_everywhere),
        TEST_CASE(test_replica_options_checked),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
