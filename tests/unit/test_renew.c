/* SPDX-License-Identifier: MIT */
/* Unit tests of renewing: each renewal one interval after the last was
 * sent, a failed one retried sooner, the lease lost before its key can
 * expire on the server (no reply, not owner, max hold, renewals off, a
 * confirmation read after a stall), NOSCRIPT, thousands of leases on one
 * timer, and the facts a renewal's events carry. Every timing rule is
 * checked at the exact millisecond (tests/support/fake.h). */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static void test_renewal_at_interval_extends_from_send_time(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 999);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 1000);
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    if (!cmd) return;
    CHECK_STR(cmd->argv[2], "1");
    CHECK_STR(cmd->argv[3], "lock:{job}");
    CHECK_STR(cmd->argv[4], redlease_lock_token(r.lk));
    CHECK_STR(cmd->argv[5], "3000");
    int64_t t1 = f.now;
    fake_advance(&f, 40);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t1 + 3000 - 32 - f.now);
    /* the next renewal is one interval after the last one was sent */
    fake_until(&f, t1 + 999);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t1 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    /* many TTLs later, still held as long as renewals are confirmed */
    for (int i = 0; i < 10; i++) {
        fake_reply_int(&f, 1);
        fake_advance(&f, 1000);
    }
    CHECK(redlease_lock_held(r.lk));
    CHECK_EQ(r.lost_calls, 0);
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.renewed, 11);
    end(&f);
}

/* A confirmed renewal moves the earliest deadline later (its command
 * timeout, 300 ms, gives way to the next renewal): the loop timer is not
 * moved for that, on every reply. It fires at the old time, finds nothing
 * due, sends nothing, and is armed for the next renewal to the
 * millisecond. */
static void test_timer_not_moved_later_on_each_reply(void)
{
    fake f;
    rec r = {0};
    int64_t t1 = hold_with_renewal_in_flight(&f, &r) + 1000;
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK_EQ(f.timer_at, t1 + 300); /* the renewal's command timeout */
    int sets = f.timer_sets;
    fake_advance(&f, 5);
    fake_reply_int(&f, 1);
    CHECK_EQ(f.timer_sets, sets); /* left where it was */
    CHECK_EQ(f.timer_at, t1 + 300);
    fake_until(&f, t1 + 999);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(f.timer_at, t1 + 1000); /* fired early, armed for the renewal */
    fake_until(&f, t1 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK(redlease_lock_held(r.lk));
    end(&f);
}

static void test_lost_fires_before_server_expiry_without_reply(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000); /* renewal sent, never answered */
    CHECK_EQ(fake_pending(&f), 1);
    fake_until(&f, t0 + 2967);
    CHECK_EQ(r.lost_calls, 0);
    CHECK(redlease_lock_held(r.lk));
    fake_until(&f, t0 + 2968);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    /* the event says why in its own field, and what failed in status */
    const redlease_event *ev = last_event(REDLEASE_EV_LOST);
    CHECK(ev != NULL);
    if (ev) CHECK_EQ(ev->lost_reason, REDLEASE_LOST_EXPIRED);
    if (ev) CHECK_EQ(ev->status, REDLEASE_ETIMEDOUT);
    CHECK(r.lost_at < t0 + 3000); /* before the key can expire on the server */
    CHECK(!redlease_lock_held(r.lk));
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), 0);
    /* a token-checked delete follows the loss, best effort */
    CHECK_EQ(fake_pending(&f), 2); /* the unanswered renewal, then the delete */
    CHECK_STR(f.cmds[f.ncmds - 1].argv[1], fake_sha(RDL_SCRIPT_RELEASE));
    /* a late confirmation changes nothing */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(!redlease_lock_held(r.lk));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    CHECK_STR(r.order, "ALR");
    end(&f);
}

static void test_failed_renewal_retried_sooner(void)
{
    fake f;
    rec r = {0};
    int64_t t0 = hold_with_renewal_in_flight(&f, &r);
    fake_until(&f, t0 + 1300); /* renewal timed out: retried after interval/4 */
    fake_until(&f, t0 + 1549);
    CHECK_EQ(fake_pending(&f), 1);
    fake_until(&f, t0 + 1550);
    CHECK_EQ(fake_pending(&f), 2);
    fake_reply_err(&f, "BUSY Redis is busy running a script.");
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK(redlease_lock_held(r.lk)); /* at risk, still locally valid */
    fake_reply_int(&f, 1);           /* the retry is confirmed */
    fake_run(&f);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 1550 + 3000 - 32 - f.now);
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.renew_failed, 1);
    CHECK_EQ(st.timeouts, 1);
    end(&f);
}

static void test_renewal_not_owner_is_lost_at_once(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 0);
    CHECK_EQ(r.lost_calls, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    const redlease_event *ev = last_event(REDLEASE_EV_LOST);
    CHECK(ev != NULL);
    if (ev) CHECK_EQ(ev->lost_reason, REDLEASE_LOST_NOT_OWNER);
    if (ev) CHECK_EQ(ev->status, REDLEASE_ENOTHELD);
    CHECK_EQ(r.lost_at, t0 + 1000);
    CHECK(!redlease_lock_held(r.lk));
    CHECK_EQ(fake_pending(&f), 0); /* not ours: nothing to delete */
    fake_advance(&f, 10000);
    CHECK_EQ(fake_pending(&f), 0); /* and renewals stopped */
    end(&f);
}

static void test_max_hold_caps_the_lease(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.max_hold_ms = 2500;
    int64_t t0 = hold(&f, &r, "job", o);
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 1);
    fake_until(&f, t0 + 2000);
    fake_reply_int(&f, 1);
    fake_until(&f, t0 + 2499);
    CHECK_EQ(r.lost_calls, 0);
    fake_until(&f, t0 + 2500);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_MAX_HOLD);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* and it is deleted */
    end(&f);
}

static void test_renew_off_expires_locally(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1000);
    o.renew_interval_ms = REDLEASE_RENEW_OFF;
    int64_t t0 = hold(&f, &r, "job", o);
    fake_until(&f, t0 + 987);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(r.lost_calls, 0);
    fake_until(&f, t0 + 988);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    end(&f);
}

/* The process was paused (SIGSTOP, a blocked loop) past the deadline: the
 * renewal's confirmation is read before the expiry timer gets to run. It is
 * too late to count: the lease is lost, not extended. */
static void test_confirmation_after_a_stall_is_too_late(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    f.now = t0 + 3500; /* no timer ran in between */
    CHECK(!redlease_lock_held(r.lk));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK(!redlease_lock_held(r.lk));
    end(&f);
}

static void test_noscript_falls_back_to_eval(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_reply_err(&f, "NOSCRIPT No matching script. Please use EVAL.");
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd_is(&f, "EVAL", NULL));
    if (cmd) CHECK_STR(cmd->argv[1], rdl_script_src[RDL_SCRIPT_RENEW]);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.renewed, 1);
    end(&f);
}

static void test_many_leases_one_timer_pipelined(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    enum { N = 2000 };
    static rec r[N];
    memset(r, 0, sizeof r);
    redlease_lock_options o = opts(30000);
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "r%d", i);
        CHECK_EQ(start_lock(&f, &r[i], name, &o), REDLEASE_OK);
    }
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), N); /* all attempts in one tick */
    int64_t t0 = f.now;
    for (int i = 0; i < N; i++) fake_reply_status(&f, "OK");
    fake_run(&f);
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.held_now, N);
    int sets = f.timer_sets;
    fake_until(&f, t0 + 10000);
    CHECK_EQ(fake_pending(&f), N); /* every renewal in one tick */
    CHECK(f.timer_sets - sets <= 2);
    CHECK(fake_alloc_live() < 4 * N + 50); /* lock + request each, a few shared */
    end(&f);
}

static void test_events_carry_lease_facts(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_advance(&f, 12);
    fake_reply_int(&f, 1);
    fake_run(&f);
    int types[] = {REDLEASE_EV_ATTEMPT, REDLEASE_EV_ACQUIRED, REDLEASE_EV_RENEWED};
    CHECK_EQ(nseen, 3);
    for (int i = 0; i < 3 && i < nseen; i++) {
        CHECK_EQ(seen[i].type, types[i]);
        CHECK_EQ(seen[i].ttl_ms, 3000);
    }
    CHECK_EQ(seen[2].rtt_ms, 12);
    CHECK_EQ(seen[2].remaining_ms, 3000 - 32 - 12);
    CHECK_EQ(seen[0].attempt, 1);
    CHECK_EQ(seen[1].attempt, 1); /* ACQUIRED: the attempt that took it */
    CHECK_EQ(seen[2].attempt, 0); /* on_acquire has run: none */
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_renewal_at_interval_extends_from_send_time),
        TEST_CASE(test_timer_not_moved_later_on_each_reply),
        TEST_CASE(test_lost_fires_before_server_expiry_without_reply),
        TEST_CASE(test_failed_renewal_retried_sooner),
        TEST_CASE(test_renewal_not_owner_is_lost_at_once),
        TEST_CASE(test_max_hold_caps_the_lease),
        TEST_CASE(test_renew_off_expires_locally),
        TEST_CASE(test_confirmation_after_a_stall_is_too_late),
        TEST_CASE(test_noscript_falls_back_to_eval),
        TEST_CASE(test_many_leases_one_timer_pipelined),
        TEST_CASE(test_events_carry_lease_facts),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
