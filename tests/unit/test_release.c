/* SPDX-License-Identifier: MIT */
/* Unit tests of releasing: what on_release reports for each answer to
 * the compare-and-delete, a release without a connection, retried across a
 * reconnect and after transient errors, and a renewal's reply that comes
 * after the release (tests/support/fake.h). */
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static void test_stale_renew_reply_after_release_ignored(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000); /* renewal in flight */
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 2);
    fake_reply_int(&f, 0); /* stale renew says "not ours": no loss after release */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    fake_advance(&f, 5000);
    CHECK_EQ(fake_pending(&f), 0); /* no renewal after release */
    end(&f);
}

static void test_release_outcomes(void)
{
    const struct {
        int kind; /* 0 int, 1 err, 2 timeout */
        long long v;
        int want;
    } cases[] = {{0, 1, REDLEASE_OK}, {0, 0, REDLEASE_ENOTHELD}, {1, 0, REDLEASE_EREDIS},
                 {0, 9, REDLEASE_EPROTO}, {2, 0, REDLEASE_ETIMEDOUT}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake f;
        fake_start(&f, NULL);
        rec r = {0};
        hold(&f, &r, "x", opts(30000));
        release(&r);
        fake_run(&f);
        if (cases[i].kind == 0)
            fake_reply_int(&f, cases[i].v);
        else if (cases[i].kind == 1)
            fake_reply_err(&f, "ERR something");
        else
            fake_advance(&f, 2000);
        fake_run(&f);
        CHECK_EQ(r.rel_calls, 1);
        CHECK_EQ(r.rel_status, cases[i].want);
        end(&f);
    }
}

static void test_release_without_connection_is_econn(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    hold(&f, &r, "x", opts(30000));
    f.connect_rc = REDLEASE_ECONN; /* it never comes back */
    fake_break(&f);
    release(&r);
    int64_t t = f.now;
    fake_until(&f, t + 1999);
    CHECK_EQ(r.rel_calls, 0); /* waits for the link, within command_timeout_ms */
    fake_until(&f, t + 2000);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ECONN);
    end(&f);
}

static void test_release_retried_across_reconnect(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL);
    rec r = {0};
    hold(&f, &r, "x", opts(30000));
    release(&r);
    fake_run(&f);
    fake_break(&f);
    fake_advance(&f, 1); /* reconnect */
    CHECK_EQ(f.connects, 2);
    fake_connect(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* A release that meets a transient error is retried until its deadline. */
static void test_release_retried_on_transient_error(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    hold(&f, &r, "rel", opts(30000));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_err(&f, "BUSY Redis is busy running a script.");
    fake_run(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_RELEASE_FAILED);
    CHECK(ev && ev->retry_in_ms == 50 && ev->detail && strstr(ev->detail, "BUSY"));
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 49);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 50);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);

    /* the same error every time: retried, at most halfway to the deadline,
     * then on_release gets it at the deadline (2000 ms after release()) */
    fake_start(&f, NULL);
    rec q = {0};
    hold(&f, &q, "rel2", opts(30000));
    CHECK_EQ(release(&q), REDLEASE_OK);
    t0 = f.now;
    int sent = 0;
    while (q.rel_calls == 0 && f.now < t0 + 5000) {
        fake_run(&f);
        if (fake_peek(&f)) {
            sent++;
            fake_reply_err(&f, "MISCONF Redis is configured to save RDB snapshots");
        }
        fake_advance(&f, 1);
    }
    CHECK_EQ(q.rel_status, REDLEASE_EREDIS);
    CHECK(q.rel_at <= t0 + 2000);
    CHECK(sent >= 30);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_stale_renew_reply_after_release_ignored),
        TEST_CASE(test_release_outcomes),
        TEST_CASE(test_release_without_connection_is_econn),
        TEST_CASE(test_release_retried_across_reconnect),
        TEST_CASE(test_release_retried_on_transient_error),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
