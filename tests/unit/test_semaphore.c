/* SPDX-License-Identifier: MIT */
/* Unit tests of a semaphore's lease (limit > 0) and a shared holder's
 * (shared): their options, the scripts each operation sends and their
 * arguments, how their answers move the state machine (admitted, full or
 * busy, another kind, lost), and that their attempts, renewals, release
 * and drop never take a mutex's path. On the fake transport and virtual clock (tests/support/fake.h);
 * the scripts themselves run on a real server in
 * tests/integration/test_semaphore.c. */
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

static redlease_lock_options sem_opts(int64_t ttl, int limit, int weight)
{
    redlease_lock_options o = opts(ttl);
    o.wait_mode = REDLEASE_WAIT_DEFAULT;
    o.limit = limit;
    o.weight = weight;
    return o;
}

/* The pending command is script s on resource "s"'s three keys. */
static int sem_cmd(fake *f, int s)
{
    fake_cmd *c = fake_peek(f);
    return cmd_is(f, "EVALSHA", fake_sha(s)) && c->argc >= 6 && strcmp(c->argv[3], "lock:{s}") == 0 &&
           strcmp(c->argv[4], "lock:{s}:holders") == 0 && strcmp(c->argv[5], "lock:{s}:weights") == 0;
}

/* Acquire "s" with o, admitted at once; returns the send time. */
static int64_t hold_sem(fake *f, rec *r, const redlease_lock_options *o)
{
    CHECK_EQ(start_lock(f, r, "s", o), REDLEASE_OK);
    fake_run(f);
    int64_t t0 = f->now;
    CHECK(sem_cmd(f, RDL_SCRIPT_SEM_ACQUIRE));
    fake_reply_int(f, 1);
    fake_run(f);
    CHECK_EQ(r->acq_status, REDLEASE_OK);
    return t0;
}

static void test_sem_options_checked(void)
{
    fake f;
    fake_start(&f, NULL);
    static const struct {
        int limit, weight, mode, rc;
    } rows[] = {
        {0, 1, REDLEASE_WAIT_DEFAULT, REDLEASE_EINVAL}, /* a weight is a semaphore's */
        {-1, 0, REDLEASE_WAIT_DEFAULT, REDLEASE_EINVAL},
        {4, 5, REDLEASE_WAIT_DEFAULT, REDLEASE_EINVAL}, /* more than there is */
        {4, -1, REDLEASE_WAIT_DEFAULT, REDLEASE_EINVAL},
        {REDLEASE_MAX_PERMITS + 1, 0, REDLEASE_WAIT_DEFAULT, REDLEASE_EINVAL},
        {4, 0, REDLEASE_WAIT_QUEUE, REDLEASE_OK},
        {4, 0, REDLEASE_WAIT_WAKE, REDLEASE_ENOTSUP}, /* a permit is no key to race for */
        {4, 4, REDLEASE_WAIT_POLL, REDLEASE_OK},
        {REDLEASE_MAX_PERMITS, REDLEASE_MAX_PERMITS, REDLEASE_WAIT_DEFAULT, REDLEASE_OK},
        {1, 0, REDLEASE_WAIT_DEFAULT, REDLEASE_OK},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rec r = {0};
        redlease_lock_options o = sem_opts(3000, rows[i].limit, rows[i].weight);
        o.wait_mode = rows[i].mode;
        CHECK_EQ(start_lock(&f, &r, "s", &o), rows[i].rc);
        if (rows[i].rc == REDLEASE_OK) {
            CHECK_EQ(release(&r), REDLEASE_OK);
            fake_run(&f);
        } else {
            CHECK(r.lk == NULL);
        }
    }
    end(&f);
}

/* The acquire is the script from the first attempt (it reclaims its own
 * token, so no plain SET ever goes): keys, token, weight, limit, TTL; the
 * renewal's: keys, token, limit, TTL. */
static void test_sem_acquire_renew_release_scripts(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 4, 3);
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_cmd *c = fake_peek(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    if (!c) return;
    CHECK_EQ(c->argc, 17);
    CHECK(is_record_of(c->argv[16], r.lk)); /* who holds, last */
    CHECK_STR(c->argv[2], "5");
    CHECK_STR(c->argv[6], "lock:{s}:queue");
    CHECK_STR(c->argv[7], "lock:{s}:waiters");
    CHECK_STR(c->argv[8], redlease_lock_token(r.lk));
    CHECK_STR(c->argv[9], "3");
    CHECK_STR(c->argv[10], "4");
    CHECK_STR(c->argv[11], "4");    /* one server admits the whole limit */
    CHECK_STR(c->argv[12], "3000");
    CHECK_STR(c->argv[13], "3000"); /* the entry's life: the TTL, at least 1 s */
    CHECK_STR(c->argv[14], "2000"); /* its claim: min(TTL, command timeout) */
    CHECK_STR(c->argv[15], "");     /* a single attempt does not queue */
    fake_advance(&f, 5);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));
    CHECK_EQ(redlease_lock_fence(r.lk), 0);
    /* the renewal, a third of the TTL after the send */
    fake_until(&f, t0 + 999);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 1000);
    c = fake_peek(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    if (!c) return;
    CHECK_EQ(c->argc, 9);
    CHECK_STR(c->argv[6], redlease_lock_token(r.lk));
    CHECK_STR(c->argv[7], "4"); /* a holder of a semaphore of its own limit */
    CHECK_STR(c->argv[8], "3000");
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    c = fake_peek(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RELEASE));
    if (!c) return;
    CHECK_EQ(c->argc, 9);
    CHECK_STR(c->argv[6], "lock:{s}:queue");
    CHECK_STR(c->argv[8], redlease_lock_token(r.lk));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* Fencing adds the counter key and its TTL; the fence is the answer. */
static void test_sem_fenced(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    if (!c) return;
    CHECK_EQ(c->argc, 19);
    CHECK(is_record_of(c->argv[18], r.lk));
    CHECK_STR(c->argv[2], "6");
    CHECK_STR(c->argv[8], "lock:{s}:fence");
    CHECK_STR(c->argv[10], "1"); /* weight 0 is 1 */
    CHECK_STR(c->argv[11], "2");
    CHECK_STR(c->argv[12], "2");
    CHECK_STR(c->argv[13], "3000");
    CHECK_STR(c->argv[17], "603000");
    fake_reply_int(&f, 1700000000000042LL);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 1700000000000042LL);
    end(&f);
}

/* Full: a negative answer is contention, retried by the poll's backoff
 * within the budget, and EBUSY at its end; an attempt admitted later is
 * the lease. */
static void test_sem_full_is_busy_and_polled(void)
{
    fake f;
    start_recording(&f);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    o.wait_mode = REDLEASE_WAIT_POLL;
    o.wait_ms = 1000;
    o.wait_retry_base_ms = o.wait_retry_max_ms = 100;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    fake_reply_int(&f, -2501); /* full; a holder's deadline in 2500 ms */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    CHECK_EQ(count_events(REDLEASE_EV_CONTENDED), 1);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 99);
    CHECK_EQ(fake_pending(&f), 0);
    fake_until(&f, t0 + 100); /* the backoff's most, with rng_max */
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));

    rec b = {0};
    o.wait_ms = 0;
    CHECK_EQ(start_lock(&f, &b, "s", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    fake_reply_int(&f, -1);
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
    end(&f);
}

/* Another kind: EKIND at once, whatever the budget, with the server's text;
 * nothing was written, so nothing is dropped. */
static void test_sem_other_kind_refused_at_once(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_err(&f, "KIND a semaphore of 3 permits");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EKIND);
    CHECK_STR(redlease_client_errstr(f.c), "127.0.0.1:6379: KIND a semaphore of 3 permits");
    CHECK_EQ(fake_pending(&f), 0);
    /* a mutex's script on a semaphore's key says the same */
    rec m = {0};
    redlease_lock_options mo = opts(3000);
    mo.fencing = 1;
    mo.wait_ms = REDLEASE_WAIT_FOREVER;
    CHECK_EQ(start_lock(&f, &m, "s", &mo), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED)));
    fake_reply_err(&f, "KIND a semaphore of 2 permits");
    fake_run(&f);
    CHECK_EQ(m.acq_status, REDLEASE_EKIND);
    CHECK_EQ(fake_pending(&f), 0);
    end(&f);
}

/* A renewal that finds the holder gone (pruned, or released by someone
 * with its token) is a loss, never a re-add; the drop after an acquire
 * that timed out is the semaphore's release, never a mutex's. */
static void test_sem_lost_and_dropped(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    int64_t t0 = hold_sem(&f, &r, &o);
    fake_until(&f, t0 + 1000);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK_EQ(fake_pending(&f), 0); /* not ours: nothing to delete */

    rec b = {0};
    o.wait_ms = 0;
    CHECK_EQ(start_lock(&f, &b, "s", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_ACQUIRE));
    fake_advance(&f, 2000); /* command timeout: the attempt may yet admit it */
    CHECK_EQ(b.acq_status, REDLEASE_ETIMEDOUT);
    fake_cmd *c = fake_peek(&f);
    CHECK(c != NULL);
    if (!c) return;
    fake_reply_int(&f, 1); /* the stale attempt's answer */
    fake_run(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RELEASE)); /* the drop behind it */
    c = fake_peek(&f);
    if (c) CHECK_STR(c->argv[8], redlease_lock_token(b.lk));
    fake_reply_int(&f, 1);
    fake_run(&f);
    release(&r);
    release(&b);
    fake_run(&f);
    end(&f);
}

/* KIND to a renewal or a release (no script of ours answers them so, but
 * a server can be made to): not our token, as WRONGTYPE is: lost
 * NOT_OWNER, ENOTHELD; never another status on_release does not know
 * (the fuzzer found it answered EKIND). */
static void test_sem_kind_to_renewal_and_release(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0}, b = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    int64_t t0 = hold_sem(&f, &r, &o);
    fake_until(&f, t0 + 1000);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    fake_reply_err(&f, "KIND a mutex");
    fake_run(&f);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    hold_sem(&f, &b, &o);
    release(&b);
    fake_run(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RELEASE));
    fake_reply_err(&f, "KIND a mutex");
    fake_run(&f);
    CHECK_EQ(b.rel_status, REDLEASE_ENOTHELD);
    release(&r);
    fake_run(&f);
    end(&f);
}

/* A native conditional command is a mutex's: a semaphore's renewal and
 * release stay scripts on a server that has them. */
static void test_sem_never_native(void)
{
    fake f;
    fake_attach(&f, NULL);
    f.native = RDL_NATIVE_DELIFEQ;
    fake_connect(&f);
    CHECK_EQ(redlease_client_connected(f.c), 1);
    rec r = {0};
    redlease_lock_options o = sem_opts(3000, 2, 0);
    int64_t t0 = hold_sem(&f, &r, &o);
    fake_until(&f, t0 + 1000);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    fake_reply_int(&f, 1);
    fake_run(&f);
    release(&r);
    fake_run(&f);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RELEASE));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* ---------------------------------------------------------- shared */

static redlease_lock_options shared_opts(int64_t ttl)
{
    redlease_lock_options o = sem_opts(ttl, 0, 0);
    o.shared = 1;
    return o;
}

/* The pending command is script s on resource "s"'s keys: the lock key,
 * the queue's two (an exclusive waiter there comes first), the holders'. */
static int shared_cmd(fake *f, int s)
{
    static const char *const keys[] = {"lock:{s}", "lock:{s}:queue", "lock:{s}:waiters",
                                       "lock:{s}:holders", "lock:{s}:weights"};
    fake_cmd *c = fake_peek(f);
    if (!cmd_is(f, "EVALSHA", fake_sha(s)) || c->argc < 8) return 0;
    for (int i = 0; i < 5; i++)
        if (strcmp(c->argv[3 + i], keys[i]) != 0) return 0;
    return 1;
}

static void test_shared_options_checked(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = shared_opts(3000);
    o.limit = 2; /* one kind at a time */
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_EINVAL);
    o = shared_opts(3000);
    o.wait_mode = REDLEASE_WAIT_WAKE; /* in no order is no order for a shared holder */
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_ENOTSUP);
    static const int fine[] = {REDLEASE_WAIT_DEFAULT, REDLEASE_WAIT_QUEUE, REDLEASE_WAIT_POLL};
    for (int i = 0; i < 3; i++) {
        o.wait_mode = fine[i];
        CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
        release(&r);
        fake_run(&f);
    }
    end(&f); /* under a quorum: tests/unit/test_quorum_kinds.c */
}

/* Acquire (5 keys, token, TTL), renewal (the holders' script, 3 keys),
 * release (5 keys: the last one out hands the resource to the queue's
 * head); with fencing, the counter key and its TTL. */
static void test_shared_scripts(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = shared_opts(3000);
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_cmd *c = fake_peek(&f);
    CHECK(shared_cmd(&f, RDL_SCRIPT_SHARED_ACQUIRE));
    if (!c) return;
    CHECK_EQ(c->argc, 17);
    CHECK(is_record_of(c->argv[16], r.lk));
    CHECK_STR(c->argv[2], "6");
    CHECK_STR(c->argv[8], "lock:{s}:fence");
    CHECK_STR(c->argv[9], redlease_lock_token(r.lk));
    CHECK_STR(c->argv[10], "3000");
    CHECK_STR(c->argv[11], "3000"); /* the entry's life */
    CHECK_STR(c->argv[12], "2000"); /* its claim */
    CHECK_STR(c->argv[13], "");     /* a single attempt does not queue */
    CHECK_STR(c->argv[14], "1");    /* one server's queue: in order */
    CHECK_STR(c->argv[15], "603000");
    fake_reply_int(&f, 99);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 99);
    fake_until(&f, t0 + 1000);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    c = fake_peek(&f);
    if (c) {
        CHECK_EQ(c->argc, 9);
        CHECK_STR(c->argv[7], "0"); /* a shared holder's kind */
    }
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    release(&r);
    fake_run(&f);
    CHECK(shared_cmd(&f, RDL_SCRIPT_SHARED_RELEASE));
    c = fake_peek(&f);
    if (c) {
        CHECK_EQ(c->argc, 10);
        CHECK_STR(c->argv[8], redlease_lock_token(r.lk));
        CHECK_STR(c->argv[9], "1");
    }
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* Busy (an exclusive holder, or waiter) is polled within the budget; a
 * semaphore is EKIND at once; a renewal that finds us gone is a loss. */
static void test_shared_busy_kind_and_loss(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = shared_opts(3000);
    o.wait_ms = 1000;
    o.wait_retry_base_ms = o.wait_retry_max_ms = 100;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_reply_int(&f, -1201);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_until(&f, t0 + 100);
    CHECK(shared_cmd(&f, RDL_SCRIPT_SHARED_ACQUIRE));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    int64_t t1 = f.now;
    fake_until(&f, t1 + 1000);
    CHECK(sem_cmd(&f, RDL_SCRIPT_SEM_RENEW));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);

    rec k = {0};
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    CHECK_EQ(start_lock(&f, &k, "s", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_err(&f, "KIND a semaphore of 2 permits");
    fake_run(&f);
    CHECK_EQ(k.acq_status, REDLEASE_EKIND);
    CHECK_EQ(fake_pending(&f), 0);
    release(&r);
    release(&k);
    fake_run(&f);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_sem_options_checked),
        TEST_CASE(test_sem_acquire_renew_release_scripts),
        TEST_CASE(test_sem_fenced),
        TEST_CASE(test_sem_full_is_busy_and_polled),
        TEST_CASE(test_sem_other_kind_refused_at_once),
        TEST_CASE(test_sem_lost_and_dropped),
        TEST_CASE(test_sem_kind_to_renewal_and_release),
        TEST_CASE(test_sem_never_native),
        TEST_CASE(test_shared_options_checked),
        TEST_CASE(test_shared_scripts),
        TEST_CASE(test_shared_busy_kind_and_loss),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
