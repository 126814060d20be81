/* SPDX-License-Identifier: MIT */
/* Unit test of allocation failure: each allocation of a lease's whole
 * life, and of a plain and a fenced lease through a broken connection and
 * a graceful close, fails in turn (the counting allocator of
 * tests/support/fake.h); every callback still runs exactly once and
 * nothing leaks. */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "lock.h" /* the handle's parts */
#include "testutil.h"

/* Answers every pending command as a healthy Redis would. */
static void answer_all(fake *f)
{
    while (fake_peek(f)) {
        fake_cmd *c = fake_peek(f);
        if (strcmp(c->argv[0], "SET") == 0)
            fake_reply_status(f, "OK");
        else if (strcmp(c->argv[0], "SCRIPT") == 0)
            fake_reply_str(f, fake_sha(0));
        else if (strcmp(c->argv[0], "EVALSHA") == 0 || strcmp(c->argv[0], "EVAL") == 0)
            fake_reply_int(f, 1);
        else
            fake_reply_status(f, "OK");
    }
}

static void on_oom_closed(redlease_client *c, void *arg)
{
    (void)c;
    ++*(int *)arg;
}

/* Allocation failure at every allocation point of a whole lease life.
 * Variant 0: one lease acquired, renewed, released, the client freed.
 * Variant 1: a plain and a fenced lease, the connection broken and made
 * again while they are held, then a graceful client close. */
static void oom_run(int variant, long fail_at, int *ended_ok)
{
    fake f;
    if (!oom_start(&f, NULL, fail_at)) return;
    rec r[2] = {{0}, {0}};
    int nlocks = variant ? 2 : 1, started = 0;
    for (int i = 0; i < nlocks; i++) {
        redlease_lock_options o = opts(3000);
        o.wait_ms = 500;
        o.fencing = i == 1;
        int rc = start_lock(&f, &r[i], i ? "y" : "x", &o);
        CHECK(rc == REDLEASE_OK || rc == REDLEASE_ENOMEM);
        if (rc == REDLEASE_OK) started |= 1 << i;
    }
    for (int step = 0; step < 20; step++) {
        fake_advance(&f, 100);
        answer_all(&f);
        if (variant && step == 8 && f.connected) fake_break(&f);
        if (!f.connected && !f.connecting && step % 3 == 0) fake_connect(&f);
    }
    for (int i = 0; i < nlocks; i++) {
        if (!(started & 1 << i)) continue;
        CHECK_EQ(r[i].acq_calls, 1); /* exactly once, whatever failed */
        CHECK(r[i].lost_calls <= 1);
    }
    int closed = 0, all_ok = 1;
    if (variant) {
        redlease_client_close(f.c, on_oom_closed, &closed);
        for (int step = 0; step < 30 && !closed; step++) {
            fake_advance(&f, 100);
            answer_all(&f);
        }
        CHECK_EQ(closed, 1);
        f.c = NULL;
        for (int i = 0; i < nlocks; i++) {
            if (!(started & 1 << i)) continue;
            all_ok &= r[i].acq_status == REDLEASE_OK && r[i].lost_reason == REDLEASE_LOST_CLOSED;
        }
        if (started == 3 && all_ok) (*ended_ok)++;
    } else if (started) {
        release(&r[0]);
        fake_advance(&f, 100);
        while (fake_peek(&f)) fake_reply_int(&f, 1);
        fake_run(&f);
        CHECK_EQ(r[0].rel_calls, 1);
        if (r[0].acq_status == REDLEASE_OK && r[0].rel_status == REDLEASE_OK) (*ended_ok)++;
    }
    fake_alloc_fail_at(0);
    end(&f);
}

static void one_lease(long fail_at, int *ok) { oom_run(0, fail_at, ok); }
static void two_leases_and_close(long fail_at, int *ok) { oom_run(1, fail_at, ok); }

static void test_allocation_failure_everywhere(void)
{
    fake_alloc_install();
    printf("# allocation sweep, variant 0: %ld allocation points\n", alloc_sweep(one_lease));
    printf("# allocation sweep, variant 1: %ld allocation points\n",
           alloc_sweep(two_leases_and_close));
}

/* A held lease is one allocation: what only its acquire needs goes once
 * on_acquire has run, and only a handle with a rarely used option (here a
 * fence) has its options apart. (Live allocations are not counted: the
 * client's deadline runs are made as deadlines come.) */
static void test_held_lease_is_one_allocation(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0}, fenced = {0};
    CHECK_EQ(start_lock(&f, &r, "plain", NULL), REDLEASE_OK);
    CHECK(r.lk->acq != NULL && r.lk->opts == NULL); /* while acquiring */
    fake_run(&f);
    fake_reply_status(&f, "OK");
    CHECK(r.lk->acq != NULL); /* until on_acquire has run */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(r.lk->acq == NULL && r.lk->opts == NULL);
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    hold(&f, &fenced, "fenced", o);
    CHECK(fenced.lk->acq == NULL && fenced.lk->opts != NULL);
    CHECK_EQ(redlease_lock_fence(fenced.lk), 7);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_allocation_failure_everywhere),
        TEST_CASE(test_held_lease_is_one_allocation),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
