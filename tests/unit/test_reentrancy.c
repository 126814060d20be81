/* SPDX-License-Identifier: MIT */
/* Unit tests of library calls from inside callbacks: a release from
 * on_acquire and on_lost; the client freed from on_acquire, on_lost,
 * on_release and the event hook (deferred when the hook runs inside a
 * transport callback); the callbacks a free runs. Terminal callbacks still
 * run exactly once and nothing leaks (tests/support/fake.h). */
#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static void release_inside(rec *r, redlease_lock *lk)
{
    CHECK_EQ(redlease_release(lk, on_rel, r), REDLEASE_OK);
}

static void free_client_inside(rec *r, redlease_lock *lk)
{
    (void)lk;
    redlease_client_free(r->f->c);
    r->f->c = NULL;
}

static void test_release_inside_on_acquire(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {.on_acq_do = release_inside};
    hold(&f, &r, "x", opts(30000));
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_STR(r.order, "AR");
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

static void test_release_inside_on_lost(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {.on_lost_do = release_inside};
    int64_t t0 = hold(&f, &r, "x", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_STR(r.order, "ALR");
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

static void test_free_inside_on_acquire_cancels_others(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec a = {.on_acq_do = free_client_inside}, b = {0}, c = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &a, "a", &o);
    start_lock(&f, &b, "b", &o);
    fake_run(&f);
    fake_reply_status(&f, "OK"); /* a gets it; b's SET still in flight */
    (void)c;
    fake_run(&f); /* a's on_acquire frees the client */
    CHECK(f.c == NULL);
    CHECK_EQ(a.acq_calls, 1);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    CHECK_EQ(a.lost_calls, 1); /* a was held: told it is no longer protected */
    CHECK_EQ(a.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK_EQ(b.acq_calls, 1);
    CHECK_EQ(b.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(f.detached, 1);
    CHECK_EQ(f.timer_at, -1);
    end(&f);
}

static void test_free_inside_on_lost(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec r = {.on_lost_do = free_client_inside};
    int64_t t0 = hold(&f, &r, "x", opts(3000));
    fake_until(&f, t0 + 2968); /* renewal never answered: expired */
    CHECK(f.c == NULL);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(r.rel_calls, 0);
    CHECK_EQ(f.detached, 1);
    end(&f);
}

static void test_free_inside_on_release(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec r = {.on_rel_do = free_client_inside};
    hold(&f, &r, "x", opts(3000));
    release(&r);
    fake_run(&f);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(f.c == NULL);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(f.detached, 1);
    end(&f);
}

/* The event hook frees the client when this event comes. */
static int free_on_event_type;
static void on_event_free(redlease_client *c, const redlease_event *ev, void *arg)
{
    fake *f = arg;
    if (ev->type == free_on_event_type) {
        redlease_client_free(c);
        f->c = NULL;
    }
}

static void test_free_inside_event_hook_is_deferred(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    free_on_event_type = REDLEASE_EV_ACQUIRED; /* inside a transport callback */
    redlease_client_set_event_cb(f.c, on_event_free, &f);
    redlease_client *c = f.c;
    rec r = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    CHECK(f.c == NULL);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED); /* never told OK, so cancelled */
    CHECK_EQ(f.detached, 0);                   /* not torn down inside the reply */
    CHECK_EQ(f.timer_at, f.now);              /* but asked for at once */
    f.c = c;
    fake_run(&f);
    CHECK_EQ(f.detached, 1);
    f.c = NULL;
    end(&f);
}

/* redlease_release() of a handle still acquiring reports the acquire
 * cancelled (an event); an event hook that frees the client right there
 * must still get on_release exactly once (found by fuzz_replies). */
static void test_free_in_hook_during_release_of_acquiring(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    free_on_event_type = REDLEASE_EV_ACQUIRE_FAILED;
    redlease_client_set_event_cb(f.c, on_event_free, &f);
    redlease_client *c = f.c;
    rec r = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f); /* the attempt is out */
    /* Called directly: the callbacks run inside it, from the free the hook
     * makes, not from the release itself. */
    CHECK_EQ(redlease_release(r.lk, on_rel, &r), REDLEASE_OK);
    CHECK(f.c == NULL);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK); /* nothing was held: as on any finished handle */
    CHECK_STR(r.order, "AR");
    f.c = c;
    fake_run(&f); /* the deferred teardown */
    CHECK_EQ(f.detached, 1);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.rel_calls, 1);
    f.c = NULL;
    end(&f);
}

static void test_calls_from_callbacks_during_free(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec r = {.on_acq_do = release_inside};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    r.on_acq_do = NULL;
    redlease_client_free(f.c); /* on_acquire(ECANCELED) runs inside free */
    f.c = NULL;
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(r.rel_calls, 0);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_release_inside_on_acquire),
        TEST_CASE(test_release_inside_on_lost),
        TEST_CASE(test_free_inside_on_acquire_cancels_others),
        TEST_CASE(test_free_inside_on_lost),
        TEST_CASE(test_free_inside_on_release),
        TEST_CASE(test_free_inside_event_hook_is_deferred),
        TEST_CASE(test_free_in_hook_during_release_of_acquiring),
        TEST_CASE(test_calls_from_callbacks_during_free),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
