/* SPDX-License-Identifier: MIT */
/* Unit tests of the graceful close (redlease_client_close): held leases
 * released and told LOST_CLOSED, unannounced ones cancelled, done called
 * once, promptly when nothing is pending, and also when a free cuts the
 * close short (tests/support/fake.h). */
#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static void on_close_done(redlease_client *c, void *arg)
{
    (void)c;
    (*(int *)arg)++;
}

static void test_close_cancels_unannounced_lease(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(30000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    int done = 0;
    fake_reply_status(&f, "OK"); /* acquired; on_acquire(OK) only queued */
    redlease_client_close(f.c, on_close_done, &done);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED); /* never handed out */
    CHECK_EQ(r.lost_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* and deleted */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(done, 1);
    f.c = NULL;
    end(&f);
}

static void test_graceful_close_releases_held(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec held = {0}, pending = {0};
    hold(&f, &held, "a", opts(30000));
    redlease_lock_options o = opts(30000);
    start_lock(&f, &pending, "b", &o);
    fake_run(&f); /* b's SET in flight */
    int done = 0;
    redlease_client_close(f.c, on_close_done, &done);
    CHECK_EQ(held.lost_calls, 0);
    fake_run(&f);
    CHECK_EQ(pending.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(held.lost_calls, 1);
    CHECK_EQ(held.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK_EQ(done, 0);
    fake_reply_nil(&f); /* b's SET: busy */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1); /* a deleted */
    /* b's SET was unanswered when cancelled: a compare-and-delete follows it */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_cmd *cmd = fake_peek(&f);
    if (cmd) CHECK_STR(cmd->argv[3], "lock:{b}");
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(done, 1);
    CHECK_EQ(f.detached, 1);
    f.c = NULL;
    end(&f);
}

/* done of a close that a free cut short: counts, and every call on the
 * dead client from inside it does nothing (no use after free either). */
static int close_done_calls;
static void on_close_done_calls_back(redlease_client *c, void *arg)
{
    (void)arg;
    close_done_calls++;
    redlease_lock *lk = NULL;
    CHECK_EQ(redlease_acquire(c, "again", NULL, on_acq, on_lost, NULL, &lk), REDLEASE_ECANCELED);
    CHECK(lk == NULL);
    redlease_client_close(c, on_close_done_calls_back, NULL); /* no second close */
    redlease_client_free(c);
}

static void test_free_during_close_still_calls_done(void)
{
    fake_alloc_install();
    fake f;
    /* freed from outside while the close waits for the release's reply */
    fake_start(&f, NULL);
    rec held = {0};
    hold(&f, &held, "a", opts(30000));
    close_done_calls = 0;
    redlease_client_close(f.c, on_close_done_calls_back, NULL);
    fake_run(&f);
    CHECK_EQ(held.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    CHECK_EQ(close_done_calls, 0);
    redlease_client_free(f.c);
    CHECK_EQ(close_done_calls, 1); /* once, before free returned */
    f.c = NULL;
    end(&f);

    /* freed from inside on_lost(CLOSED), which the close delivers */
    fake_start(&f, NULL);
    rec h2 = {.on_lost_do = free_client_inside};
    hold(&f, &h2, "a", opts(30000));
    close_done_calls = 0;
    redlease_client_close(f.c, on_close_done_calls_back, NULL);
    fake_run(&f);
    CHECK_EQ(h2.lost_calls, 1);
    CHECK_EQ(close_done_calls, 1);
    fake_run(&f);
    fake_advance(&f, 60000); /* nothing more, ever */
    CHECK_EQ(close_done_calls, 1);
    end(&f);

    /* closed without a loop: acts as free, done once, and free inside done
     * is safe */
    redlease_client *c;
    CHECK_EQ(redlease_client_new(&c, NULL), REDLEASE_OK);
    close_done_calls = 0;
    redlease_client_close(c, on_close_done_calls_back, NULL);
    CHECK_EQ(close_done_calls, 1);
    CHECK_EQ(fake_alloc_live(), 0);
}

static void test_close_with_nothing_pending_is_prompt(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    int done = 0;
    redlease_client_close(f.c, on_close_done, &done);
    CHECK_EQ(done, 0); /* from the loop, not inside the call */
    fake_run(&f);
    CHECK_EQ(done, 1); /* at once, not after command_timeout_ms */
    CHECK_EQ(f.detached, 1);
    f.c = NULL;
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_close_cancels_unannounced_lease),
        TEST_CASE(test_graceful_close_releases_held),
        TEST_CASE(test_free_during_close_still_calls_done),
        TEST_CASE(test_close_with_nothing_pending_is_prompt),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
