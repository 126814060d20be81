/* SPDX-License-Identifier: MIT */
/* Unit tests of library calls from inside callbacks: a release from
 * on_acquire and on_lost; the client freed from on_acquire, on_lost,
 * on_release and the event hook (deferred when the hook runs inside a
 * transport callback); the callbacks a free runs; callbacks run right after
 * a read; a loop run from inside a callback that fires the library's timer.
 * Terminal callbacks still run exactly once and nothing leaks
 * (tests/support/fake.h). */
#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static void release_inside(rec *r, redlease_lock *lk)
{
    CHECK_EQ(redlease_release(lk, on_rel, r), REDLEASE_OK);
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

/* f's client is freed by its event hook when an event of type comes; the
 * client, for the test to tear down later. */
static redlease_client *free_on(fake *f, int type)
{
    free_on_event_type = type;
    redlease_client_set_event_cb(f->c, on_event_free, f);
    return f->c;
}

static void test_free_inside_event_hook_is_deferred(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    redlease_client *c = free_on(&f, REDLEASE_EV_ACQUIRED); /* inside a transport callback */
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
    redlease_client *c = free_on(&f, REDLEASE_EV_ACQUIRE_FAILED);
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

/* Three locks wait for the connection. When it is ready, the first one's
 * attempt cannot be sent (out of memory) and the event hook frees the
 * client; the second handle, released from its on_acquire(ECANCELED),
 * goes inside that free, the third is left to the user. Every handle
 * hears its end once, the sending of parked locks stops, and the deferred
 * teardown leaves nothing (ASan and valgrind watch the walk). */
static void test_free_in_hook_while_parked_locks_are_sent(void)
{
    fake_alloc_install();
    fake f;
    fake_attach(&f, NULL);
    redlease_client *c = free_on(&f, REDLEASE_EV_ATTEMPT_FAILED);
    rec r[3] = {{0}, {.on_acq_do = release_inside}, {0}};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 1000;
    const char *name[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; i++) start_lock(&f, &r[i], name[i], &o);
    fake_run(&f); /* both parked: no connection yet */
    CHECK_EQ(fake_pending(&f), 0);
    fake_connect_raw(&f);
    fake_answer_handshake(&f);
    fake_alloc_fail_at(1); /* the first parked attempt's request */
    fake_run(&f);
    fake_alloc_fail_at(0);
    CHECK(f.c == NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(r[i].acq_calls, 1);
        CHECK_EQ(r[i].acq_status, REDLEASE_ECANCELED);
        CHECK_EQ(r[i].rel_calls, i == 1);
    }
    f.c = c;
    fake_run(&f); /* the deferred teardown */
    CHECK_EQ(f.detached, 1);
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

/* After a read, the callbacks the replies made due run at once, without
 * the timer (redlease_client_on_io()); the timer is then armed for
 * what comes next, not left at 0 ms. */
static void test_callbacks_run_after_the_read(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r, "x", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_status(&f, "OK");
    CHECK_EQ(r.acq_calls, 0);          /* never inside the transport's callback */
    CHECK_EQ(f.timer_at, f.now);       /* an immediate tick asked for */
    fake_read_done(&f);
    CHECK_EQ(r.acq_calls, 1);          /* run after the read, no tick */
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(f.timer_at, t0 + 1000);   /* armed for the renewal */
    end(&f);
}

static int64_t hook_takes_ms;
static fake *hook_fake;
static void slow_hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    record_event(c, ev, arg);
    if (ev->type == REDLEASE_EV_ACQUIRED) hook_fake->now += hook_takes_ms; /* user code takes time */
}

/* The replies of one read are timed by one clock read (conn.h, rdl_clock):
 * every one had come by then. User code run meanwhile (an event hook)
 * takes time, so the next reply reads the clock again: its round trip
 * counts the hook's time. */
static void test_a_read_is_timed_once_and_again_after_user_code(void)
{
    fake f;
    fake_start(&f, NULL); /* no event hook: no user code in the read */
    rec r[3] = {{0}, {0}, {0}};
    redlease_lock_options o = opts(3000);
    for (int i = 0; i < 3; i++) CHECK_EQ(start_lock(&f, &r[i], i == 0 ? "a" : i == 1 ? "b" : "c", &o), 0);
    fake_run(&f);
    fake_advance(&f, 2);
    long reads = f.clock_reads;
    fake_read_begin(&f);
    for (int i = 0; i < 3; i++) fake_reply_status(&f, "OK");
    CHECK_EQ(f.clock_reads - reads, 1); /* one read, three replies */
    fake_read_end(&f);
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK_EQ(r[i].acq_status, REDLEASE_OK);
    for (int i = 0; i < 3; i++) CHECK_EQ(release(&r[i]), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) fake_reply_int(&f, 1);
    fake_run(&f);

    /* the same with a hook that takes 5 ms at each lease */
    nseen = 0;
    hook_takes_ms = 5;
    hook_fake = &f;
    redlease_client_set_event_cb(f.c, slow_hook, NULL);
    rec s[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) CHECK_EQ(start_lock(&f, &s[i], i == 0 ? "d" : "e", &o), 0);
    fake_run(&f);
    fake_advance(&f, 2);
    fake_read_begin(&f);
    for (int i = 0; i < 2; i++) fake_reply_status(&f, "OK");
    fake_read_end(&f);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_ACQUIRED), 2);
    int first = 0;
    while (seen[first].type != REDLEASE_EV_ACQUIRED) first++;
    CHECK_EQ(seen[first].rtt_ms, 2); /* the read's time */
    CHECK_EQ(last_event(REDLEASE_EV_ACQUIRED)->rtt_ms, 2 + 5); /* read after the first's hook */
    redlease_client_set_event_cb(f.c, NULL, NULL);
    end(&f);
}

/* A read's replies are one batch: the timer is armed once, after the
 * last, and the callbacks run then, in order. */
static void test_a_read_is_one_batch(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r[3] = {{0}, {0}, {0}};
    redlease_lock_options o = opts(3000);
    for (int i = 0; i < 3; i++) CHECK_EQ(start_lock(&f, &r[i], i == 0 ? "a" : i == 1 ? "b" : "c", &o), 0);
    fake_run(&f);
    int64_t t0 = f.now;
    int sets = f.timer_sets;
    fake_read_begin(&f);
    for (int i = 0; i < 3; i++) fake_reply_status(&f, "OK");
    CHECK_EQ(f.timer_sets, sets); /* not per reply */
    CHECK_EQ(r[0].acq_calls + r[1].acq_calls + r[2].acq_calls, 0);
    fake_read_end(&f);
    for (int i = 0; i < 3; i++) CHECK_EQ(r[i].acq_status, REDLEASE_OK);
    CHECK_EQ(f.timer_at, t0 + 1000); /* armed for the renewals */
    CHECK(f.timer_sets - sets <= 2);
    end(&f);
}

/* The event hook frees the client in the middle of a read's batch: the
 * client ends as the read does, every handle told once. */
static void test_free_in_the_middle_of_a_read(void)
{
    fake f;
    fake_start(&f, NULL);
    (void)free_on(&f, REDLEASE_EV_ACQUIRED);
    rec a = {0}, b = {0}, d = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1; /* the handle's options part goes too */
    o.max_hold_ms = 10000;
    start_lock(&f, &a, "a", &o);
    start_lock(&f, &b, "b", &o);
    start_lock(&f, &d, "d", &o);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 3);
    fake_read_begin(&f);
    fake_reply_int(&f, 7); /* a is held; the hook frees the client (deferred) */
    CHECK(f.c == NULL);
    fake_reply_nil(&f);
    fake_reply_int(&f, 9);
    fake_read_end(&f); /* it ends here */
    CHECK_EQ(a.acq_calls, 1);
    CHECK_EQ(b.acq_calls, 1);
    CHECK_EQ(d.acq_calls, 1);
    CHECK_EQ(f.detached, 1);
    end(&f);
}

/* A loop run from inside the event hook fires the library's timer, which
 * does nothing there (never re-entered): it must be armed again as the
 * library leaves, or the next renewal is never sent and on_lost never
 * comes. */
static fake *nested_f;
static int nested_done;
static void nested_hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_RENEWED && !nested_done) {
        nested_done = 1;
        nested_f->now += 300; /* the nested iteration takes a while: the timer is due */
        fake_run(nested_f);   /* it fires inside the library */
    }
}

static void test_timer_fired_by_a_nested_loop_is_armed_again(void)
{
    fake f;
    nested_f = &f;
    nested_done = 0;
    rec r = {0};
    int64_t t1 = hold_with_renewal_in_flight(&f, &r) + 1000;
    CHECK_EQ(f.timer_at, t1 + 300); /* the renewal's command timeout */
    redlease_client_set_event_cb(f.c, nested_hook, NULL);
    fake_advance(&f, 5);
    fake_reply_int(&f, 1);
    CHECK_EQ(nested_done, 1);
    CHECK(f.timer_at >= 0);
    fake_until(&f, t1 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* the next renewal */
    end(&f);
}

/* The same inside a callback run after a read: closing with three leases,
 * on_lost of the first runs a loop iteration that reads the second drop's
 * answer and fires the tick; the third is never answered, and the close
 * must still end by its deadline. */
static int close_done;
static int nested_lost;
static void lost_nested(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)reason, (void)arg;
    if (nested_lost++) return;
    fake_reply_int(nested_f, 1);
    fake_run(nested_f);
}
static void on_closed(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    close_done++;
    nested_f->c = NULL; /* the client frees itself after this */
}
static void ignore_acq(redlease_lock *lk, int st, void *arg) { (void)lk, (void)st, (void)arg; }

static void test_close_ends_after_a_nested_loop_in_a_drained_callback(void)
{
    fake f;
    nested_f = &f;
    nested_lost = close_done = 0;
    fake_start(&f, NULL);
    redlease_lock *lk[3];
    const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(redlease_acquire(f.c, names[i], NULL, ignore_acq, lost_nested, NULL, &lk[i]), REDLEASE_OK);
        fake_run(&f);
        fake_reply_status(&f, "OK");
        fake_run(&f);
    }
    redlease_client_close(f.c, on_closed, NULL); /* the deletes go out */
    CHECK_EQ(fake_pending(&f), 3);
    fake_reply_int(&f, 1); /* a read brings the first answer */
    fake_read_done(&f);
    CHECK(f.timer_at >= 0);
    fake_until(&f, f.now + 60000); /* the third is never answered */
    CHECK_EQ(close_done, 1);
    end(&f); /* the client went with its close: nothing of it is left */
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
        TEST_CASE(test_free_in_hook_while_parked_locks_are_sent),
        TEST_CASE(test_calls_from_callbacks_during_free),
        TEST_CASE(test_callbacks_run_after_the_read),
        TEST_CASE(test_a_read_is_one_batch),
        TEST_CASE(test_free_in_the_middle_of_a_read),
        TEST_CASE(test_a_read_is_timed_once_and_again_after_user_code),
        TEST_CASE(test_timer_fired_by_a_nested_loop_is_armed_again),
        TEST_CASE(test_close_ends_after_a_nested_loop_in_a_drained_callback),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
