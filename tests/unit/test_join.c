/* SPDX-License-Identifier: MIT */
/* Unit tests of re-entry (lock option reentrant; docs/design.md, section
 * 13): a second acquire of a resource the client holds joins the lease at
 * once, from the loop, sending nothing; kinds that differ, or a first
 * handle that did not ask, do not join; releases in either order, the last
 * one the lease's compare-and-delete; a loss reaching every handle once;
 * the client freed or closed with joined handles; callbacks that end the
 * client; allocation failures; and what a second acquire without re-entry
 * is told (tests/support/fake.h). */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "lock.h" /* RDL_OWN_HOLDER_TEXT */
#include "test_quorum.h" /* a quorum on the fake's links */
#include "testutil.h"

static redlease_lock_options reentrant(int64_t ttl)
{
    redlease_lock_options o = opts(ttl);
    o.reentrant = 1;
    return o;
}

/* b joins a's lease on "x": on_acquire(OK) on the next tick, nothing sent. */
static void join(fake *f, rec *b, redlease_lock_options o)
{
    CHECK_EQ(start_lock(f, b, "x", &o), REDLEASE_OK);
    CHECK_EQ(b->acq_calls, 0);
    fake_run(f);
    CHECK_EQ(b->acq_calls, 1);
    CHECK_EQ(b->acq_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(f), 0);
}

/* A started client on f, its events recorded, where a holds "x" with
 * re-entry (TTL 3000 ms) and b has joined it; returns a's send time. */
static int64_t shared_lease(fake *f, rec *a, rec *b)
{
    fake_alloc_install();
    start_recording(f);
    int64_t t0 = hold(f, a, "x", reentrant(3000));
    join(f, b, reentrant(3000));
    return t0;
}

/* The pending command names token among its arguments. */
static int cmd_has(fake *f, const char *token)
{
    fake_cmd *c = fake_peek(f);
    for (int i = 0; c && i < c->argc; i++)
        if (strcmp(c->argv[i], token) == 0) return 1;
    return 0;
}

static redlease_stats stats_of(fake *f)
{
    redlease_stats st;
    redlease_client_stats(f->c, &st);
    return st;
}

static void test_join_at_once_without_a_command(void)
{
    fake_alloc_install();
    fake f;
    start_recording(&f);
    rec a = {0}, b = {0};
    hold(&f, &a, "x", reentrant(3000));
    long attempts = (long)stats_of(&f).attempts;
    join(&f, &b, reentrant(3000));
    CHECK_EQ((long)stats_of(&f).attempts, attempts);
    CHECK_STR(redlease_lock_token(b.lk), redlease_lock_token(a.lk));
    CHECK_EQ(redlease_lock_held(b.lk), 1);
    CHECK_EQ(redlease_lock_remaining_ms(b.lk), redlease_lock_remaining_ms(a.lk));
    const redlease_event *ev = last_event(REDLEASE_EV_ACQUIRED);
    CHECK(ev && ev->rtt_ms == -1 && strcmp(ev->token, redlease_lock_token(a.lk)) == 0);
    redlease_stats st = stats_of(&f);
    CHECK_EQ((long)st.locks_now, 2);
    CHECK_EQ((long)st.held_now, 1); /* one lease */
    CHECK_EQ((long)st.acquired, 2);
    /* renewals are the lease's, one each interval */
    fake_advance(&f, 1000);
    CHECK_EQ(fake_pending(&f), 1);
    CHECK(cmd_has(&f, redlease_lock_token(a.lk)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    end(&f);
}

static void test_join_of_a_fenced_lease_reports_its_fence(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = reentrant(3000);
    o.fencing = 1;
    hold(&f, &a, "x", o); /* fence 7 */
    join(&f, &b, o);
    CHECK_EQ((long)redlease_lock_fence(b.lk), 7);
    end(&f);
}

/* What differs in kind or fencing, or a first handle without re-entry,
 * is not joined: the second acquire goes to Redis and is told whose the
 * lock is. */
static void test_no_join_across_kinds_or_without_both_asking(void)
{
    for (int v = 0; v < 3; v++) {
        fake_alloc_install();
        fake f;
        fake_start(&f, NULL);
        rec a = {0}, b = {0};
        redlease_lock_options oa = reentrant(3000), ob = reentrant(3000);
        if (v == 0) oa.reentrant = 0; /* the first did not ask */
        if (v == 1) ob.fencing = 1;   /* a fence the lease has not */
        if (v == 2) oa.fencing = 1;   /* the lease's fence the joiner did not ask for */
        hold(&f, &a, "x", oa);
        CHECK_EQ(start_lock(&f, &b, "x", &ob), REDLEASE_OK);
        fake_run(&f);
        CHECK(is_attempt(&f));
        reply_busy(&f);
        fake_run(&f);
        CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
        CHECK_STR(redlease_client_errstr(f.c), RDL_OWN_HOLDER_TEXT);
        CHECK_EQ((long)stats_of(&f).held_now, 1);
        end(&f);
    }
}

/* Without re-entry a second acquire waits in its turn; its contention
 * says the holder is this client, never another holder. */
static void test_second_acquire_without_reentry_says_held_by_this_client(void)
{
    fake_alloc_install();
    fake f;
    start_recording(&f);
    rec a = {0}, b = {0}, c = {0};
    hold(&f, &a, "x", opts(3000));
    redlease_lock_options o = opts(3000);
    o.wait_ms = 5000;
    CHECK_EQ(start_lock(&f, &b, "x", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt(&f));
    reply_busy(&f);
    fake_run(&f);
    CHECK_EQ(b.acq_calls, 0); /* waits its turn */
    const redlease_event *ev = last_event(REDLEASE_EV_CONTENDED);
    CHECK(ev && ev->detail && strcmp(ev->detail, RDL_OWN_HOLDER_TEXT) == 0);
    CHECK_STR(redlease_client_errstr(f.c), RDL_OWN_HOLDER_TEXT);
    CHECK(strstr(redlease_strerror(REDLEASE_EBUSY), "another holder") == NULL);
    /* the holder released: the waiter gets it */
    release(&a);
    fake_run(&f);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    for (int i = 0; i < 200 && !b.acq_calls; i++) { /* its next poll */
        fake_advance(&f, 10);
        if (fake_peek(&f)) {
            CHECK(is_attempt(&f));
            fake_reply_int(&f, 1);
            fake_run(&f);
        }
    }
    CHECK_EQ(b.acq_calls, 1);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    /* contention with another client is not said to be ours */
    CHECK_EQ(start_lock(&f, &c, "y", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt(&f));
    reply_busy(&f);
    fake_run(&f);
    ev = last_event(REDLEASE_EV_CONTENDED);
    CHECK(ev && ev->detail == NULL);
    end(&f);
}

static void test_release_joined_first_then_the_first(void)
{
    fake f;
    rec a = {0}, b = {0};
    int64_t t0 = shared_lease(&f, &a, &b);
    CHECK_EQ(release(&b), REDLEASE_OK);
    CHECK_EQ(b.rel_calls, 0); /* from the loop */
    fake_run(&f);
    CHECK_EQ(b.rel_calls, 1);
    CHECK_EQ(b.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0); /* Redis untouched */
    CHECK_EQ(redlease_lock_held(a.lk), 1);
    fake_until(&f, t0 + 1000); /* the renewal goes on */
    CHECK_EQ(fake_pending(&f), 1);
    fake_reply_int(&f, 1);
    release(&a);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    CHECK_EQ((long)stats_of(&f).locks_now, 0);
    CHECK_EQ((long)stats_of(&f).held_now, 0);
    end(&f);
}

/* The first handle released first: it hears on_release(OK) at once, the
 * lease goes on renewed for the joined one, whose release is the lease's
 * and reports its real outcome. */
static void test_release_first_then_joined(void)
{
    fake f;
    rec a = {0}, b = {0};
    int64_t t0 = shared_lease(&f, &a, &b);
    char token[64];
    snprintf(token, sizeof token, "%s", redlease_lock_token(a.lk));
    release(&a);
    fake_run(&f);
    CHECK_EQ(a.rel_calls, 1);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);
    for (int i = 1; i <= 4; i++) { /* renewed past its first TTL */
        fake_until(&f, t0 + 1000 * i);
        CHECK_EQ(fake_pending(&f), 1);
        CHECK(cmd_has(&f, token));
        fake_reply_int(&f, 1);
        fake_run(&f);
    }
    CHECK_EQ(redlease_lock_held(b.lk), 1);
    CHECK_STR(redlease_lock_token(b.lk), token);
    redlease_stats st = stats_of(&f);
    CHECK_EQ((long)st.held_now, 1);
    CHECK_EQ((long)st.locks_now, 2); /* the first handle carries the lease */
    CHECK_EQ(a.lost_calls + a.rel_calls, 1);
    release(&b);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    CHECK(cmd_has(&f, token));
    CHECK_EQ(b.rel_calls, 0); /* waits for the real outcome */
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(b.rel_calls, 1);
    CHECK_EQ(b.rel_status, REDLEASE_ENOTHELD);
    CHECK_EQ(a.rel_calls, 1);
    CHECK_EQ((long)stats_of(&f).locks_now, 0);
    CHECK_EQ((long)stats_of(&f).held_now, 0);
    end(&f);
}

/* A loss (not owner; expired, after the first was released) reaches every
 * handle's on_lost once, and the lease's first handle that its user
 * released hears nothing more. */
static void test_loss_reaches_every_handle_once(void)
{
    for (int carried = 0; carried < 2; carried++) {
        fake f;
        rec a = {0}, b = {0}, c = {0};
        int64_t t0 = shared_lease(&f, &a, &b);
        join(&f, &c, reentrant(3000));
        if (carried) {
            release(&a);
            fake_run(&f);
            CHECK_EQ(a.rel_status, REDLEASE_OK);
        }
        fake_until(&f, t0 + 1000);
        fake_reply_int(&f, 0); /* not ours */
        fake_run(&f);
        CHECK_EQ(b.lost_calls, 1);
        CHECK_EQ(c.lost_calls, 1);
        CHECK_EQ(b.lost_reason, REDLEASE_LOST_NOT_OWNER);
        CHECK_EQ(a.lost_calls, carried ? 0 : 1);
        CHECK_EQ(count_events(REDLEASE_EV_LOST), carried ? 2 : 3);
        CHECK_EQ(redlease_lock_held(b.lk), 0);
        CHECK_EQ((long)stats_of(&f).held_now, 0);
        fake_advance(&f, 5000);
        CHECK_EQ(fake_pending(&f), 0);
        CHECK_EQ(b.lost_calls + c.lost_calls, 2);
        if (!carried) release(&a);
        release(&b);
        release(&c);
        fake_run(&f);
        CHECK_EQ(b.rel_status, REDLEASE_ENOTHELD);
        CHECK_EQ(c.rel_status, REDLEASE_ENOTHELD);
        CHECK_EQ(a.rel_calls, 1);
        CHECK_EQ((long)stats_of(&f).locks_now, 0);
        end(&f);
    }
    /* expired, its first handle released */
    fake f;
    rec a = {0}, b = {0};
    int64_t t0 = shared_lease(&f, &a, &b);
    release(&a);
    fake_run(&f);
    f.connect_rc = REDLEASE_ECONN; /* it never comes back */
    fake_break(&f);
    fake_until(&f, t0 + 3000);
    CHECK_EQ(b.lost_calls, 1);
    CHECK_EQ(b.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(a.lost_calls, 0);
    release(&b);
    fake_run(&f);
    CHECK_EQ(b.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

static void test_client_free_ends_joined_handles(void)
{
    for (int v = 0; v < 3; v++) {
        fake f;
        rec a = {0}, b = {0};
        shared_lease(&f, &a, &b);
        if (v >= 1) { /* the first released: it carries the lease */
            release(&a);
            fake_run(&f);
        }
        if (v == 2) { /* the last handle's release under way */
            release(&b);
            fake_run(&f);
            CHECK_EQ(fake_pending(&f), 1);
        }
        redlease_client_free(f.c);
        f.c = NULL;
        CHECK_EQ(a.acq_calls, 1);
        CHECK_EQ(a.lost_calls, v ? 0 : 1); /* released: nothing after on_release */
        CHECK_EQ(a.rel_calls, v ? 1 : 0);
        CHECK_EQ(b.lost_calls, v == 2 ? 0 : 1);
        if (v == 2) CHECK_EQ(b.rel_status, REDLEASE_ECANCELED);
        else CHECK_EQ(b.lost_reason, REDLEASE_LOST_CLOSED);
        end(&f);
    }
}

static void on_close_done(redlease_client *c, void *arg)
{
    (void)c;
    (*(int *)arg)++;
}

static void test_client_close_ends_joined_handles(void)
{
    fake f;
    rec a = {0}, b = {0}, c = {0};
    shared_lease(&f, &a, &b);
    join(&f, &c, reentrant(3000));
    release(&a);
    fake_run(&f);
    int done = 0;
    redlease_client_close(f.c, on_close_done, &done);
    fake_run(&f);
    CHECK_EQ(b.lost_calls, 1);
    CHECK_EQ(c.lost_calls, 1);
    CHECK_EQ(c.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK_EQ(a.lost_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* the lease is deleted */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(done, 1);
    f.c = NULL;
    end(&f);
}

/* The joined handle was made before the lease's first handle (it waited
 * while another client held the lock): a close still ends each once. */
static void test_close_when_the_joined_handle_came_first(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = reentrant(3000);
    o.wait_ms = 5000;
    CHECK_EQ(start_lock(&f, &b, "x", &o), REDLEASE_OK);
    fake_run(&f);
    reply_busy(&f); /* another client's */
    fake_run(&f);
    CHECK_EQ(start_lock(&f, &a, "x", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    int done = 0;
    redlease_client_close(f.c, on_close_done, &done);
    fake_run(&f);
    CHECK_EQ(a.lost_calls, 1);
    CHECK_EQ(b.lost_calls, 1);
    CHECK_EQ(b.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK(cmd_has(&f, redlease_lock_token(a.lk)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(done, 1);
    f.c = NULL;
    end(&f);
}

/* A handle waiting in its turn with re-entry joins as soon as the lease
 * it waited for is delivered to this client's other handle. */
static void test_waiting_handle_joins_when_the_lease_is_delivered(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = reentrant(3000);
    o.wait_ms = 2000;
    CHECK_EQ(start_lock(&f, &a, "x", &o), REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &b, "x", &o), REDLEASE_OK);
    fake_run(&f); /* both attempts out: neither holds yet */
    CHECK_EQ(fake_pending(&f), 2);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    reply_busy(&f);
    fake_run(&f);
    CHECK_EQ(b.acq_calls, 1);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_STR(redlease_lock_token(b.lk), redlease_lock_token(a.lk));
    end(&f);
}

static rec *release_on_join;

/* The event hook releases the handle that joins, before its on_acquire. */
static void release_when_joined(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_ACQUIRED && ev->rtt_ms == -1 && release_on_join) {
        release(release_on_join);
        release_on_join = NULL;
    }
}

/* In the queue: a waiter that joins leaves the queue by a drop of its
 * own token, never the lease's (which would delete the lease's key). */
static void test_queued_waiter_joins_and_leaves_by_its_own_token(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = reentrant(3000);
    o.wait_ms = 20000;
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(start_lock(&f, &b, "x", &o), REDLEASE_OK);
    char own[64];
    snprintf(own, sizeof own, "%s", redlease_lock_token(b.lk));
    fake_run(&f);
    fake_reply_int(&f, -3000); /* another client holds it */
    fake_run(&f);
    fake_link_connect(&f, &f.side); /* the channel the first waiter opened */
    fake_link_subscribed(&f.side);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)));
    fake_reply_int(&f, -3000); /* now in the queue */
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(start_lock(&f, &a, "x", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, 1); /* a acquires (the other's lease expired) */
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    CHECK_EQ(b.acq_status, REDLEASE_OK); /* b joined at once */
    CHECK_STR(redlease_lock_token(b.lk), redlease_lock_token(a.lk));
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_RELEASE)));
    CHECK(cmd_has(&f, own));
    CHECK(!cmd_has(&f, redlease_lock_token(a.lk)));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    release(&b);
    fake_run(&f);
    CHECK_EQ(b.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);
    release(&a);
    fake_run(&f);
    CHECK(cmd_has(&f, redlease_lock_token(a.lk)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    end(&f);
}

/* Released before its on_acquire: cancelled, the lease is the others'. */
static void test_joined_released_before_told_is_cancelled(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    hold(&f, &a, "x", reentrant(3000));
    redlease_client_set_event_cb(f.c, release_when_joined, NULL);
    release_on_join = &b;
    redlease_lock_options o = reentrant(3000);
    start_lock(&f, &b, "x", &o);
    fake_run(&f);
    CHECK(release_on_join == NULL);
    CHECK_STR(b.order, "AR");
    CHECK_EQ(b.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(b.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(redlease_lock_held(a.lk), 1);
    end(&f);
}

/* The client freed from the first on_lost of a lost lease: every other
 * handle still hears of its end once. */
static void test_free_inside_on_lost_of_a_shared_lease(void)
{
    fake f;
    rec a = {.on_lost_do = free_client_inside}, b = {0}, c = {0};
    int64_t t0 = shared_lease(&f, &a, &b);
    join(&f, &c, reentrant(3000));
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK(f.c == NULL);
    CHECK_EQ(a.lost_calls, 1);
    CHECK_EQ(b.lost_calls, 1);
    CHECK_EQ(c.lost_calls, 1);
    CHECK_EQ(c.lost_reason, REDLEASE_LOST_NOT_OWNER);
    end(&f);
}

/* A semaphore's holders of the same weight join; another weight does not. */
static void test_semaphore_holders_join_by_weight(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0}, c = {0};
    redlease_lock_options o = reentrant(3000);
    o.limit = 3;
    CHECK_EQ(start_lock(&f, &a, "x", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_SEM_ACQUIRE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    join(&f, &b, o);
    o.weight = 2;
    CHECK_EQ(start_lock(&f, &c, "x", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_SEM_ACQUIRE)));
    end(&f);
}

/* Under a quorum too: joining sends nothing to any member, and the last
 * release is the quorum's. */
static void test_join_under_a_quorum(void)
{
    fake_alloc_install();
    fake f;
    start_quorum(&f, 3);
    rec a = {0}, b = {0};
    hold3(&f, &a, "job", reentrant(3000));
    redlease_lock_options o = reentrant(3000);
    CHECK_EQ(start_lock(&f, &b, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    CHECK_EQ(redlease_lock_held(b.lk), 1);
    release(&b);
    fake_run(&f);
    CHECK_EQ(b.rel_status, REDLEASE_OK);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    release(&a);
    fake_run(&f);
    for (int i = 0; i < 3; i++) {
        CHECK(ran(&f, i, RDL_SCRIPT_RELEASE, &a, 4));
        fake_link_reply_int(member(&f, i), i < 2);
    }
    fake_run(&f);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    end(&f);
}

/* ------------------------------------------------- allocation failures */

static void answer_all(fake *f)
{
    while (fake_peek(f)) {
        if (cmd_is(f, "SET", NULL))
            fake_reply_status(f, "OK");
        else
            fake_reply_int(f, 1);
    }
}

/* Two handles share a lease, the first released first, renewals, the
 * last one's release; every callback exactly once whatever fails. */
static void shared_life(long fail_at, int *ok)
{
    fake f;
    if (!oom_start(&f, NULL, fail_at)) return;
    rec a = {0}, b = {0};
    redlease_lock_options o = reentrant(3000);
    o.wait_ms = 500;
    int ra = start_lock(&f, &a, "x", &o);
    for (int step = 0; step < 3; step++) {
        fake_advance(&f, 100);
        answer_all(&f);
    }
    int rb = start_lock(&f, &b, "x", &o);
    CHECK(ra == REDLEASE_OK || ra == REDLEASE_ENOMEM);
    CHECK(rb == REDLEASE_OK || rb == REDLEASE_ENOMEM);
    for (int step = 0; step < 6; step++) {
        fake_advance(&f, 100);
        answer_all(&f);
    }
    if (ra == REDLEASE_OK) release(&a);
    for (int step = 0; step < 20; step++) {
        fake_advance(&f, 100);
        answer_all(&f);
    }
    if (rb == REDLEASE_OK) release(&b);
    for (int step = 0; step < 5; step++) {
        fake_advance(&f, 100);
        answer_all(&f);
    }
    if (ra == REDLEASE_OK) CHECK_EQ(a.acq_calls + a.rel_calls, 2);
    if (rb == REDLEASE_OK) CHECK_EQ(b.acq_calls + b.rel_calls, 2);
    CHECK(a.lost_calls <= 1 && b.lost_calls <= 1);
    if (ra == REDLEASE_OK && rb == REDLEASE_OK && a.acq_status == REDLEASE_OK && b.acq_status == REDLEASE_OK &&
        a.rel_status == REDLEASE_OK && b.rel_status == REDLEASE_OK && !a.lost_calls && !b.lost_calls)
        (*ok)++;
    fake_alloc_fail_at(0);
    end(&f);
}

static void test_allocation_failure_in_a_shared_lease(void)
{
    fake_alloc_install();
    printf("# allocation sweep: %ld allocation points\n", alloc_sweep(shared_life));
}

int main(int argc, char **argv)
{
    test_case tests[] = {
        TEST_CASE(test_join_at_once_without_a_command),
        TEST_CASE(test_join_of_a_fenced_lease_reports_its_fence),
        TEST_CASE(test_no_join_across_kinds_or_without_both_asking),
        TEST_CASE(test_second_acquire_without_reentry_says_held_by_this_client),
        TEST_CASE(test_release_joined_first_then_the_first),
        TEST_CASE(test_release_first_then_joined),
        TEST_CASE(test_loss_reaches_every_handle_once),
        TEST_CASE(test_client_free_ends_joined_handles),
        TEST_CASE(test_client_close_ends_joined_handles),
        TEST_CASE(test_close_when_the_joined_handle_came_first),
        TEST_CASE(test_waiting_handle_joins_when_the_lease_is_delivered),
        TEST_CASE(test_queued_waiter_joins_and_leaves_by_its_own_token),
        TEST_CASE(test_joined_released_before_told_is_cancelled),
        TEST_CASE(test_free_inside_on_lost_of_a_shared_lease),
        TEST_CASE(test_semaphore_holders_join_by_weight),
        TEST_CASE(test_join_under_a_quorum),
        TEST_CASE(test_allocation_failure_in_a_shared_lease),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
