/* SPDX-License-Identifier: MIT */
/* Unit tests of the pure core: fake transport, fake loop, virtual clock.
 * Every timing rule of a lease is checked at the exact millisecond. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backoff.h"
#include "fake.h"
#include "heap.h"
#include "lease_math.h"

/* ------------------------------------------------------------ recorder */

typedef struct rec rec;
typedef void (*action_fn)(rec *r, redlease_lock *lk);

struct rec {
    fake *f;
    redlease_lock *lk;
    int acq_calls, acq_status, lost_calls, lost_reason, rel_calls, rel_status;
    int64_t acq_at, lost_at, rel_at;
    char order[16];
    int norder;
    action_fn on_acq_do, on_lost_do, on_rel_do;
    int depth; /* >0 while a library call of ours is running */
};

static void note(rec *r, char ch)
{
    if (r->norder < 15) r->order[r->norder++] = ch;
}

static void on_acq(redlease_lock *lk, int st, void *arg)
{
    rec *r = arg;
    CHECK_EQ(r->depth, 0); /* never inside the call that started it */
    r->acq_calls++;
    r->acq_status = st;
    r->acq_at = r->f ? r->f->now : 0;
    note(r, 'A');
    if (r->on_acq_do) r->on_acq_do(r, lk);
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    rec *r = arg;
    r->lost_calls++;
    r->lost_reason = reason;
    r->lost_at = r->f ? r->f->now : 0;
    note(r, 'L');
    if (r->on_lost_do) r->on_lost_do(r, lk);
}

static void on_rel(redlease_lock *lk, int st, void *arg)
{
    rec *r = arg;
    CHECK_EQ(r->depth, 0);
    r->rel_calls++;
    r->rel_status = st;
    r->rel_at = r->f ? r->f->now : 0;
    note(r, 'R');
    if (r->on_rel_do) r->on_rel_do(r, lk);
}

static int start_lock(fake *f, rec *r, const char *res, const redlease_lock_options *o)
{
    r->f = f;
    r->depth++;
    int rc = redlease_acquire(f->c, res, o, on_acq, on_lost, r, &r->lk);
    r->depth--;
    return rc;
}

static int release(rec *r)
{
    r->depth++;
    int rc = redlease_release(r->lk, on_rel, r);
    r->depth--;
    return rc;
}

static redlease_lock_options opts(int64_t ttl)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = ttl;
    return o;
}

static int cmd_is(fake *f, const char *a0, const char *a1)
{
    fake_cmd *c = fake_peek(f);
    if (!c) return 0;
    if (strcmp(c->argv[0], a0) != 0) return 0;
    return !a1 || (c->argc > 1 && strcmp(c->argv[1], a1) == 0);
}

/* The pending command is an acquire attempt: the first one's SET NX PX,
 * or the script of every later one. */
static int is_attempt(fake *f)
{
    return cmd_is(f, "SET", NULL) || cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)) ||
           cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED));
}

/* Answers the pending attempt "held by someone else", in its own form. */
static void reply_busy(fake *f)
{
    if (cmd_is(f, "SET", NULL))
        fake_reply_nil(f);
    else
        fake_reply_int(f, 0);
}

/* Acquire res with o, reply OK to the SET; returns the send time t0. */
static int64_t hold(fake *f, rec *r, const char *res, redlease_lock_options o)
{
    CHECK_EQ(start_lock(f, r, res, &o), REDLEASE_OK);
    fake_run(f);
    int64_t t0 = f->now;
    CHECK(cmd_is(f, o.fencing ? "EVALSHA" : "SET", NULL));
    if (o.fencing)
        fake_reply_int(f, 7);
    else
        fake_reply_status(f, "OK");
    fake_run(f);
    CHECK_EQ(r->acq_calls, 1);
    CHECK_EQ(r->acq_status, REDLEASE_OK);
    return t0;
}

static void end(fake *f)
{
    fake_free(f);
    CHECK_EQ(fake_alloc_live(), 0);
}

/* --------------------------------------------------------------- tests */

static void test_status_strings(void)
{
    int codes[] = {REDLEASE_OK, REDLEASE_EINVAL, REDLEASE_ENOMEM, REDLEASE_EBUSY,
                   REDLEASE_ETIMEDOUT, REDLEASE_ECANCELED, REDLEASE_ECONN, REDLEASE_EREDIS,
                   REDLEASE_EPROTO, REDLEASE_ENOTHELD, REDLEASE_ESYS};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CHECK(strcmp(redlease_strerror(codes[i]), "unknown status") != 0);
    CHECK_STR(redlease_strerror(12345), "unknown status");
    CHECK(strcmp(redlease_lost_reason_str(REDLEASE_LOST_EXPIRED), "unknown reason") != 0);
    CHECK_STR(redlease_version(), REDLEASE_VERSION);
}

static void test_heap_orders_deadlines(void)
{
    rdl_heap h;
    rdl_heap_node n[200];
    rdl_heap_init(&h);
    srand(7);
    for (int i = 0; i < 200; i++) CHECK_EQ(rdl_heap_insert(&h, &n[i], rand() % 1000), 0);
    for (int i = 0; i < 200; i += 3) rdl_heap_update(&h, &n[i], rand() % 1000);
    for (int i = 1; i < 200; i += 5) rdl_heap_remove(&h, &n[i]);
    int64_t last = -1;
    size_t popped = 0;
    while (rdl_heap_top(&h)) {
        rdl_heap_node *t = rdl_heap_top(&h);
        CHECK(t->at >= last);
        last = t->at;
        rdl_heap_remove(&h, t);
        popped++;
    }
    CHECK_EQ(popped, 200 - 40);
    rdl_heap_free(&h);
}

static uint32_t rng_max(void *arg)
{
    (void)arg;
    return 0xFFFFFFFFu;
}
static uint32_t rng_zero(void *arg)
{
    (void)arg;
    return 0;
}
/* x = 0x80000000_80000000: a draw in [lo, hi] lands just past the middle. */
static uint32_t rng_mid(void *arg)
{
    (void)arg;
    return 0x80000000u;
}

static void test_backoff_full_jitter_sequence(void)
{
    rdl_rng top = {rng_max, NULL}, bottom = {rng_zero, NULL};
    rdl_backoff b;
    rdl_backoff_init(&b, REDLEASE_JITTER_FULL, 100, 1000);
    int64_t want[] = {100, 200, 400, 800, 1000, 1000};
    for (int i = 0; i < 6; i++) CHECK_EQ(rdl_backoff_next(&b, &top), want[i]);
    rdl_backoff_init(&b, REDLEASE_JITTER_FULL, 100, 1000);
    for (int i = 0; i < 6; i++) CHECK_EQ(rdl_backoff_next(&b, &bottom), 0);
    /* The cap stops at max before the draw: U[0, min(max, base * 2^n)].
     * Drawing under a cap that kept doubling and clamping the result would
     * give max itself more and more often (3 in 8 draws at 2^3 x max). */
    rdl_rng mid = {rng_mid, NULL};
    rdl_backoff_init(&b, REDLEASE_JITTER_FULL, 100, 1000);
    int64_t want_mid[] = {50, 100, 200, 400, 500, 500, 500};
    for (int i = 0; i < 7; i++) CHECK_EQ(rdl_backoff_next(&b, &mid), want_mid[i]);
}

static void test_backoff_decorrelated_bounds(void)
{
    rdl_xorshift x = {12345};
    rdl_rng r = {rdl_xorshift_next, &x};
    rdl_backoff b;
    rdl_backoff_init(&b, REDLEASE_JITTER_DECORRELATED, 50, 2000);
    int64_t prev = 50;
    for (int i = 0; i < 1000; i++) {
        int64_t d = rdl_backoff_next(&b, &r);
        int64_t hi = prev * 3 > 2000 ? 2000 : prev * 3;
        CHECK(d >= 50 && d <= hi);
        prev = d;
    }
}

static void test_lease_math(void)
{
    CHECK_EQ(rdl_drift(30000), 302);
    CHECK_EQ(rdl_valid_until(1000, 30000), 1000 + 30000 - 302);
    CHECK_EQ(rdl_drift(10), 2);
    /* retry of a failed renewal: interval/4, but never past half the time left */
    CHECK_EQ(rdl_renew_retry_at(0, 1000, 10000), 250);
    CHECK_EQ(rdl_renew_retry_at(0, 1000, 100), 50);
    CHECK_EQ(rdl_renew_retry_at(0, 1000, 1), 1);
}

static void test_invalid_arguments(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock *lk = (redlease_lock *)&r;
    redlease_lock_options o = opts(1000);
    CHECK_EQ(redlease_acquire(f.c, NULL, &o, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    CHECK(lk == NULL);
    CHECK_EQ(redlease_acquire(f.c, "", &o, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    CHECK_EQ(redlease_acquire(f.c, "x", &o, NULL, NULL, &r, &lk), REDLEASE_EINVAL);
    CHECK_EQ(redlease_acquire(NULL, "x", &o, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    CHECK_EQ(redlease_acquire(f.c, "x", &o, on_acq, NULL, &r, NULL), REDLEASE_EINVAL);
    char big[REDLEASE_MAX_RESOURCE + 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_EQ(redlease_acquire(f.c, big, &o, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    big[REDLEASE_MAX_RESOURCE] = '\0'; /* exactly the limit is fine */
    CHECK_EQ(redlease_acquire(f.c, big, &o, on_acq, NULL, &r, &lk), REDLEASE_OK);
    CHECK_EQ(redlease_release(lk, NULL, NULL), REDLEASE_OK);
    CHECK_EQ(redlease_release(lk, NULL, NULL), REDLEASE_EINVAL); /* twice */
    struct {
        int64_t ttl, renew, wait, base, max;
        int attempts, jitter;
    } bad[] = {
        {0, 0, 0, 50, 1000, 0, 0},     /* ttl 0 */
        {5, 0, 0, 50, 1000, 0, 0},     /* ttl below 10 */
        {1000, 1000, 0, 50, 1000, 0, 0}, /* renew not below ttl */
        {1000, -2, 0, 50, 1000, 0, 0}, /* renew negative, not OFF */
        {1000, 0, -2, 50, 1000, 0, 0}, /* wait negative, not FOREVER */
        {1000, 0, 0, 0, 1000, 0, 0},   /* base 0 */
        {1000, 0, 0, 50, 10, 0, 0},    /* max below base */
        {1000, 0, 0, 50, 1000, -1, 0}, /* attempts negative */
        {1000, 0, 0, 50, 1000, 0, 9},  /* unknown jitter */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = opts(bad[i].ttl);
        o.renew_interval_ms = bad[i].renew;
        o.wait_ms = bad[i].wait;
        o.retry_base_ms = bad[i].base;
        o.retry_max_ms = bad[i].max;
        o.max_attempts = bad[i].attempts;
        o.jitter = bad[i].jitter;
        CHECK_EQ(redlease_acquire(f.c, "x", &o, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    }
    o = opts(1000);
    o.renew_interval_ms = REDLEASE_RENEW_OFF;
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    CHECK_EQ(redlease_acquire(f.c, "x", &o, on_acq, NULL, &r, &lk), REDLEASE_OK);
    CHECK_EQ(redlease_release(NULL, NULL, NULL), REDLEASE_EINVAL);
    fake_run(&f);
    /* only the cancelled one called back; failed calls never do */
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.port = 0;
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    redlease_client_options_init(&co);
    co.command_timeout_ms = 0;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    redlease_client_options_init(&co);
    co.username = "u"; /* a user without a password */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK(c == NULL);
    CHECK_EQ(redlease_client_attach_loop(f.c, NULL, NULL), REDLEASE_EINVAL);
    end(&f);
}

static void test_acquire_is_one_set_nx_px(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r, "res", &o), REDLEASE_OK);
    CHECK_EQ(r.acq_calls, 0);
    CHECK_EQ(fake_pending(&f), 0); /* sent from the loop, not from the call */
    CHECK_EQ(f.last_after, 0);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd != NULL);
    if (!cmd) return;
    CHECK_EQ(cmd->argc, 6);
    CHECK_STR(cmd->argv[0], "SET");
    CHECK_STR(cmd->argv[1], "lock:{res}");
    CHECK_STR(cmd->argv[2], redlease_lock_token(r.lk));
    CHECK_EQ(strlen(cmd->argv[2]), 32);
    CHECK(strspn(cmd->argv[2], "0123456789abcdef") == 32);
    CHECK_STR(cmd->argv[3], "NX");
    CHECK_STR(cmd->argv[4], "PX");
    CHECK_STR(cmd->argv[5], "3000");
    CHECK_STR(redlease_lock_key(r.lk), "lock:{res}");
    CHECK(!redlease_lock_held(r.lk));
    fake_advance(&f, 7);
    fake_reply_status(&f, "OK");
    CHECK_EQ(r.acq_calls, 0); /* not from inside the transport callback */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));
    /* valid until t0 + ttl - drift, counted from the send time */
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 3000 - 32 - f.now);
    CHECK_EQ(redlease_lock_fence(r.lk), 0);
    /* the loop timer is armed for the renewal, to the millisecond */
    CHECK_EQ(f.last_after, t0 + 1000 - f.now);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_cmd *rel = fake_peek(&f);
    CHECK_STR(rel->argv[2], "1");
    CHECK_STR(rel->argv[3], "lock:{res}");
    CHECK_STR(rel->argv[4], redlease_lock_token(r.lk));
    fake_reply_int(&f, 1);
    CHECK_EQ(r.rel_calls, 0);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    CHECK_STR(r.order, "AR");
    end(&f);
}

static void test_tokens_unique_per_acquire(void)
{
    fake f;
    fake_start(&f, NULL);
    rec a = {0}, b = {0};
    redlease_lock_options o = opts(1000);
    start_lock(&f, &a, "same", &o);
    start_lock(&f, &b, "same", &o);
    CHECK(strcmp(redlease_lock_token(a.lk), redlease_lock_token(b.lk)) != 0);
    end(&f);
}

static void test_contention_backoff_times_and_budget(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL); /* every delay at its cap */
    rec r = {0};
    redlease_lock_options o = opts(1000);
    o.wait_ms = 2000;
    o.retry_base_ms = 100;
    o.retry_max_ms = 1000;
    start_lock(&f, &r, "busy", &o);
    int64_t start = f.now;
    /* The last is clamped to start a round trip (at least 1 ms) before
     * the budget's end, so its answer can come inside it. */
    int64_t want[] = {0, 100, 300, 700, 1500, 1999};
    for (int i = 0; i < 6; i++) {
        fake_until(&f, start + want[i]);
        CHECK(is_attempt(&f));
        CHECK(i == 0 ? cmd_is(&f, "SET", NULL) : cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
        if (!fake_peek(&f)) break;
        reply_busy(&f);
        fake_run(&f);
        if (i < 5) {
            CHECK_EQ(r.acq_calls, 0);
            fake_until(&f, start + want[i + 1] - 1);
            CHECK_EQ(fake_pending(&f), 0); /* not a millisecond early */
        }
    }
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    CHECK_EQ(r.acq_at, start + 1999); /* never past the budget */
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.attempts, 6);
    CHECK_EQ(st.contended, 6);
    CHECK_EQ(st.acquire_failed, 1);
    end(&f);
}

static void test_wait_zero_is_one_attempt(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1000);
    start_lock(&f, &r, "busy", &o);
    fake_run(&f);
    fake_reply_nil(&f);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    fake_advance(&f, 10000);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK); /* nothing was ever held */
    CHECK_EQ(fake_pending(&f), 0);      /* and nothing is deleted */
    end(&f);
}

static void test_max_attempts_caps_retries(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL); /* 0 ms delays become 1 ms */
    rec r = {0};
    redlease_lock_options o = opts(1000);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    o.max_attempts = 3;
    start_lock(&f, &r, "busy", &o);
    int64_t start = f.now;
    for (int i = 0; i < 3; i++) {
        fake_run(&f);
        CHECK(is_attempt(&f));
        reply_busy(&f);
        fake_advance(&f, 1);
    }
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    CHECK_EQ(r.acq_at, start + 2);
    end(&f);
}

static void test_errors_retried_last_error_reported(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1000);
    o.wait_ms = 150;
    o.retry_base_ms = 100;
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    fake_reply_err(&f, "LOADING Redis is loading the dataset in memory");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0); /* an error inside the budget is retried */
    fake_advance(&f, 100);
    CHECK(is_attempt(&f));
    reply_busy(&f);
    fake_advance(&f, 49);
    CHECK(is_attempt(&f)); /* the last attempt, a round trip before the budget's end */
    fake_reply_err(&f, "READONLY You can't write against a read only replica.");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EREDIS);
    CHECK(strstr(redlease_client_errstr(f.c), "READONLY") != NULL);
    end(&f);
}

static void test_unexpected_reply_is_eproto(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    fake_reply_int(&f, 5);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EPROTO);
    end(&f);
}

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

static void test_lost_fires_before_server_expiry_without_reply(void)
{
    fake f;
    fake_start(&f, NULL);
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

/* A client with a 300 ms command timeout (reconnecting after 10 ms) holding
 * "job" (TTL 3000 ms) whose first renewal, at t0 + 1000, is on the wire and
 * not yet answered. Returns t0, the send time of the acquire. */
static int64_t hold_with_renewal_in_flight(fake *f, rec *r)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 300;
    co.reconnect_min_ms = 10;
    co.reconnect_max_ms = 10;
    fake_start(f, &co);
    int64_t t0 = hold(f, r, "job", opts(3000));
    fake_until(f, t0 + 1000);
    CHECK_EQ(fake_pending(f), 1);
    return t0;
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

/* A connection that stops answering (half-open TCP, a peer gone without a
 * reset) is dropped once it has been silent for twice the command timeout
 * since the first unanswered command was sent; the client reconnects and
 * re-verifies. A reply in time cancels the check (the test above). */
static void test_silent_connection_dropped_and_reconnected(void)
{
    fake f;
    rec r = {0};
    int64_t t0 = hold_with_renewal_in_flight(&f, &r); /* never answered */
    fake_until(&f, t0 + 1599);
    CHECK_EQ(f.connects, 1);
    CHECK(f.connected);
    fake_until(&f, t0 + 1600); /* 2 x 300 ms after the renewal was sent */
    CHECK(!f.connected);
    CHECK(strstr(redlease_client_errstr(f.c), "no reply") != NULL);
    CHECK(!redlease_lock_held(r.lk)); /* unsafe while the link is down */
    CHECK_EQ(r.lost_calls, 0);
    fake_advance(&f, 10);
    CHECK_EQ(f.connects, 2);
    fake_connect(&f);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* re-verify at once */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.disconnects, 1);
    CHECK_EQ(st.timeouts, 1);
    end(&f);
}

/* After the process (or its loop) was blocked longer than twice the
 * command timeout, the reply may be sitting unread: the stall check is then
 * due a command timeout later, after the loop has polled, not at once. */
static void test_stall_check_after_a_pause_lets_the_loop_read_first(void)
{
    fake f;
    rec r = {0};
    int64_t t0 = hold_with_renewal_in_flight(&f, &r);
    f.now = t0 + 1700; /* blocked for 700 ms: the timeout is seen only now */
    fake_run(&f);
    CHECK(f.connected);
    fake_reply_int(&f, 1); /* the reply that was waiting in the socket */
    fake_run(&f);
    fake_until(&f, t0 + 2100);
    CHECK(f.connected);
    CHECK(redlease_lock_held(r.lk));
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.disconnects, 0);
    end(&f);
}

static void test_renewal_not_owner_is_lost_at_once(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_reply_int(&f, 0);
    CHECK_EQ(r.lost_calls, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
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

static void test_cancel_with_acquire_in_flight_releases_late_ok(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(5000);
    start_lock(&f, &r, "table", &o);
    fake_run(&f); /* SET in flight */
    CHECK_EQ(release(&r), REDLEASE_OK);
    CHECK_EQ(r.acq_calls, 0);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    CHECK_STR(r.order, "AR");
    char token[40];
    strcpy(token, f.cmds[f.head].argv[2]);
    fake_reply_status(&f, "OK"); /* the late OK: the key is ours, nobody wants it */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    if (fake_peek(&f)) CHECK_STR(fake_peek(&f)->argv[4], token);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.lost_calls, 0);
    end(&f);
}

static void test_late_ok_after_timeout_is_adopted(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 200;
    fake f;
    fake_start(&f, &co);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = opts(5000);
    o.wait_ms = 10000;
    o.retry_base_ms = 1000;
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_advance(&f, 200); /* attempt timed out; next attempt in 1000 ms */
    CHECK_EQ(r.acq_calls, 0);
    fake_advance(&f, 100);
    fake_reply_status(&f, "OK"); /* late, still locally valid: it is ours */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 5000 - 52 - f.now);
    fake_advance(&f, 1000);
    CHECK(!cmd_is(&f, "SET", NULL)); /* no further attempt */
    end(&f);
}

static void test_ok_too_late_to_use_is_not_reported(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(100); /* valid for 97 ms after sending */
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    fake_advance(&f, 97);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_ETIMEDOUT); /* never report a lease already gone */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    end(&f);
}

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

/* What a handle tells in each state: only a held, locally valid lease on
 * the connection that confirmed it reads as held; its identity (key,
 * token, fence, client) stays readable until the handle ends. */
static void check_identity(rec *r, redlease_client *c, uint64_t fence)
{
    CHECK_STR(redlease_lock_key(r->lk), "lock:{x}");
    CHECK_EQ(redlease_lock_key_len(r->lk), 8);
    CHECK_EQ(strlen(redlease_lock_token(r->lk)), 32);
    CHECK_EQ(redlease_lock_fence(r->lk), fence);
    CHECK(redlease_lock_client(r->lk) == c);
}

static void on_rel_check_identity(rec *r, redlease_lock *lk)
{
    (void)lk;
    check_identity(r, r->f->c, 7); /* inside on_release, the last callback */
    CHECK_EQ(redlease_lock_held(r->lk), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r->lk), 0);
}

static void test_accessors_in_every_state(void)
{
    fake_alloc_install();
    CHECK_EQ(redlease_lock_held(NULL), 0);
    CHECK_EQ(redlease_lock_remaining_ms(NULL), 0);
    CHECK(redlease_lock_key(NULL) == NULL);
    CHECK_EQ(redlease_lock_key_len(NULL), 0);
    CHECK(redlease_lock_token(NULL) == NULL);
    CHECK_EQ(redlease_lock_fence(NULL), 0);
    CHECK(redlease_lock_client(NULL) == NULL);

    fake f;
    fake_start(&f, NULL);
    rec r = {.on_rel_do = on_rel_check_identity};
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    start_lock(&f, &r, "x", &o); /* acquiring */
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), 0);
    check_identity(&r, f.c, 0);
    fake_run(&f);
    fake_reply_int(&f, 7);
    CHECK_EQ(redlease_lock_held(r.lk), 1); /* confirmed: held before on_acquire runs */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), 3000 - 32); /* drift margin */
    check_identity(&r, f.c, 7);
    fake_advance(&f, 1000); /* renewal in flight: still held */
    CHECK(cmd_is(&f, "EVALSHA", NULL));
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    fake_break(&f); /* the link that confirmed it is gone: not held, so no time left to use */
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), 0);
    fake_advance(&f, 60);
    fake_connect(&f); /* reconnected: held only once a renewal confirms */
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    CHECK(cmd_is(&f, "EVALSHA", NULL));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    fake_until(&f, f.now + 5000); /* no more answers: lost at its deadline */
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), 0);
    check_identity(&r, f.c, 7); /* lost, not ended: still readable */
    release(&r);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);

    end(&f);

    fake_start(&f, NULL);
    rec r2 = {.on_rel_do = on_rel_check_identity};
    hold(&f, &r2, "x", o);
    release(&r2); /* releasing: no longer safe to act, still readable */
    CHECK_EQ(redlease_lock_held(r2.lk), 0);
    CHECK_EQ(redlease_lock_remaining_ms(r2.lk), 0);
    check_identity(&r2, f.c, 7);
    fake_run(&f);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r2.rel_calls, 1);
    CHECK_EQ(r2.rel_status, REDLEASE_OK);
    end(&f);
}

static void on_close_done(redlease_client *c, void *arg);

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

static int held_seen = -1, held_checks;
static void held_when_told(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c;
    if (ev->type != REDLEASE_EV_RENEW_FAILED && ev->type != REDLEASE_EV_DISCONNECTED) return;
    held_checks++;
    held_seen = held_seen > 0 ? 1 : redlease_lock_held(arg);
}

static void test_disconnect_mid_renewal_then_reverify(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(30000));
    fake_until(&f, t0 + 10000); /* renewal in flight */
    redlease_client_set_event_cb(f.c, held_when_told, r.lk);
    fake_break(&f);
    redlease_client_set_event_cb(f.c, NULL, NULL);
    CHECK_EQ(held_seen, 0); /* already 0 when the failure is reported */
    CHECK_EQ(held_checks, 2); /* renewal failed, disconnected */
    CHECK(!redlease_lock_held(r.lk)); /* the confirming connection is down */
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    fake_advance(&f, 50); /* reconnect after the first backoff (50 ms cap) */
    CHECK_EQ(f.connects, 2);
    fake_connect(&f);
    CHECK(!redlease_lock_held(r.lk)); /* reconnected, not yet re-verified */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* re-verified at once */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    CHECK_EQ(r.lost_calls, 0);
    end(&f);
}

static void test_reconnect_idle_lease_reverified_at_once(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(30000));
    fake_until(&f, t0 + 100);
    fake_break(&f);
    fake_advance(&f, 50);
    fake_connect(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* long before t0 + 10000 */
    fake_reply_int(&f, 0); /* the server restarted and lost it */
    fake_run(&f);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    end(&f);
}

/* A connection that becomes ready and breaks before the timer has sent
 * what waited for it: the timer must sleep until the reconnect, not fire
 * "now" again and again (found by fuzz_replies: a busy loop until the
 * next connect). */
static void test_ready_then_broken_before_flush_does_not_spin(void)
{
    fake_alloc_install();
    fake f;
    fake_attach(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);               /* the attempt waits for the connection */
    fake_connect_raw(&f);
    fake_answer_handshake(&f); /* ready: the waiting attempt is due */
    fake_break(&f);             /* and gone before the timer ran */
    CHECK(f.timer_at > f.now);  /* asleep until the reconnect */
    if (f.timer_at <= f.now) {  /* fake_run would spin for ever */
        f.timer_at = -1;
        end(&f);
        return;
    }
    fake_advance(&f, 60);       /* reconnect_min_ms 50: connecting again */
    CHECK(f.connecting);
    fake_connect(&f);           /* the attempt goes out on the next link */
    CHECK(cmd_is(&f, "SET", NULL));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

static void test_no_reconnect_means_expired(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    f.connect_rc = REDLEASE_ECONN; /* every reconnect fails */
    fake_until(&f, t0 + 500);
    fake_break(&f);
    fake_until(&f, t0 + 2967);
    CHECK_EQ(r.lost_calls, 0);
    fake_until(&f, t0 + 2968);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK(f.connects > 2);
    end(&f);
}

/* A lease whose SET was on the wire when the link broke (it may or may not
 * have run), after the reconnect: the next attempt is about to go out. */
static void uncertain_then_reconnect(fake *f, rec *r)
{
    fake_start(f, NULL);
    redlease_client_set_rng(f->c, rng_zero, NULL);
    redlease_lock_options o = opts(5000);
    o.wait_ms = 5000;
    start_lock(f, r, "x", &o);
    fake_run(f);
    fake_break(f);
    fake_advance(f, 1);
    fake_connect(f);
    fake_advance(f, 1);
}

/* The attempt whose link broke may have set our key: the next attempt is
 * the script that takes a key holding our own token as ours (nothing is
 * deleted first), and the lease runs from that attempt's send. */
static void test_uncertain_acquire_reclaimed_by_retry(void)
{
    fake f;
    rec r = {0};
    uncertain_then_reconnect(&f, &r);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    fake_cmd *cmd = fake_peek(&f);
    if (cmd) CHECK_STR(cmd->argv[3], "lock:{x}");
    int64_t t0 = cmd ? cmd->sent_at : 0;
    fake_reply_int(&f, 1); /* found our token: PEXPIREd, ours */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 5000 - 52 - f.now);
    CHECK_EQ(fake_pending(&f), 0); /* no drop ever */
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

static void test_fencing_acquire_script(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    start_lock(&f, &r, "acct", &o);
    fake_run(&f);
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED)));
    if (!cmd) return;
    CHECK_STR(cmd->argv[2], "2");
    CHECK_STR(cmd->argv[3], "lock:{acct}");
    CHECK_STR(cmd->argv[4], "lock:{acct}:fence");
    CHECK_STR(cmd->argv[5], redlease_lock_token(r.lk));
    CHECK_STR(cmd->argv[6], "3000");
    fake_reply_int(&f, 1700000000123457LL);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 1700000000123457LL);
    rec b = {0};
    start_lock(&f, &b, "acct", &o);
    fake_run(&f);
    fake_reply_int(&f, 0); /* held: the script answers 0 */
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
    end(&f);
}

static void test_handshake_auth_select_then_commands(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.username = "app";
    co.password = "s3cret";
    co.db = 3;
    fake f;
    fake_attach(&f, &co);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0); /* nothing before the connection is ready */
    f.connected = 1;
    rdl_core_on_connected(f.c, REDLEASE_OK, NULL);
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd_is(&f, "AUTH", "app"));
    if (cmd) CHECK_STR(cmd->argv[2], "s3cret");
    CHECK_STR(f.cmds[f.head + 1].argv[0], "SELECT");
    CHECK_STR(f.cmds[f.head + 1].argv[1], "3");
    rec early = {0};
    start_lock(&f, &early, "y", &o); /* asked for during the handshake */
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 3); /* AUTH, SELECT, PING: nothing jumps the handshake */
    CHECK_STR(f.cmds[f.head + 2].argv[0], "PING");
    fake_reply_err(&f, "WRONGPASS invalid username-password pair");
    while (fake_peek(&f)) fake_reply_err(&f, "NOAUTH Authentication required.");
    fake_run(&f);
    CHECK(strstr(redlease_client_errstr(f.c), "WRONGPASS") != NULL);
    CHECK(strstr(redlease_client_errstr(f.c), "s3cret") == NULL);
    CHECK(!redlease_client_connected(f.c));
    CHECK_EQ(fake_pending(&f), 0); /* no lock command went out */
    /* Credentials retrying cannot fix: the waiting acquires end at once. */
    CHECK_EQ(r.acq_status, REDLEASE_EAUTH);
    CHECK_EQ(early.acq_status, REDLEASE_EAUTH);
    rec later = {0};
    start_lock(&f, &later, "z", &o); /* asked for while refused: the same */
    fake_run(&f);
    CHECK_EQ(later.acq_status, REDLEASE_EAUTH);
    fake_advance(&f, 100);
    CHECK_EQ(f.connects, 2); /* it reconnects all the same (the password may be fixed) */
    fake_connect(&f);
    CHECK(redlease_client_connected(f.c));
    rec ok = {0};
    start_lock(&f, &ok, "x", &o);
    fake_run(&f);
    CHECK(cmd_is(&f, "SET", "lock:{x}"));
    end(&f);
}

static void test_no_connection_wait_zero_is_econn(void)
{
    fake f;
    fake_attach(&f, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    start_lock(&f, &r, "x", &o);
    int64_t start = f.now;
    fake_advance(&f, 1999);
    CHECK_EQ(r.acq_calls, 0);
    f.connecting = 0;
    fake_advance(&f, 1); /* connect timed out too; the attempt gives up */
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECONN);
    CHECK_EQ(r.acq_at, start + 2000);
    end(&f);
}

static void test_connect_timeout_and_backoff(void)
{
    fake f;
    fake_attach(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    CHECK_EQ(f.connects, 1);
    fake_advance(&f, 2000); /* connect_timeout_ms */
    fake_advance(&f, 49);
    CHECK_EQ(f.connects, 1);
    fake_advance(&f, 1); /* first reconnect delay: 50 ms cap */
    CHECK_EQ(f.connects, 2);
    end(&f);
}

static void on_close_done(redlease_client *c, void *arg)
{
    (void)c;
    (*(int *)arg)++;
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

static void free_client_from_callback(rec *r, redlease_lock *lk)
{
    (void)lk;
    redlease_client_free(r->f->c);
    r->f->c = NULL;
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
    rec h2 = {.on_lost_do = free_client_from_callback};
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

static void test_events_carry_lease_facts(void);

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
static void oom_scenario(int variant, long fail_at, int *ended_ok)
{
    fake f;
    fake_alloc_fail_at(fail_at);
    fake_start(&f, NULL);
    if (!f.c) {
        fake_alloc_fail_at(0);
        return;
    }
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

static void test_allocation_failure_everywhere(void)
{
    fake_alloc_install();
    for (int variant = 0; variant < 2; variant++) {
        long before = fake_alloc_count();
        int ok = 0;
        oom_scenario(variant, 0, &ok); /* count the allocations of a whole run */
        long total = fake_alloc_count() - before;
        CHECK(total > 5);
        CHECK_EQ(ok, 1);
        printf("# allocation sweep, variant %d: %ld allocation points\n", variant, total);
        for (long n = 1; n <= total + 2; n++) oom_scenario(variant, n, &ok);
        CHECK_EQ(fake_alloc_live(), 0);
    }
}

static redlease_event seen[64];
static int nseen;
static void record_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (nseen < 64) seen[nseen++] = *ev;
}

/* A connected client on the fake whose events are recorded in seen[]. */
static void start_recording(fake *f)
{
    fake_start(f, NULL);
    nseen = 0;
    redlease_client_set_event_cb(f->c, record_event, NULL);
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
    end(&f);
}

/* ------------------------------------------------- what Redis answers */

static int count_events(int type)
{
    int n = 0;
    for (int i = 0; i < nseen; i++) n += seen[i].type == type;
    return n;
}

static const redlease_event *last_event(int type)
{
    for (int i = nseen - 1; i >= 0; i--)
        if (seen[i].type == type) return &seen[i];
    return NULL;
}

/* CLIENT PAUSE longer than the TTL: the first attempt times out, the pause
 * ends and Redis runs it (our token, a whole TTL from then), the retry
 * behind it finds our own token: that is the lease, from the retry's send. */
static void test_own_key_from_a_stalled_attempt_is_ours(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1500);
    o.wait_ms = 4000;
    start_lock(&f, &r, "p", &o);
    fake_run(&f);
    int64_t t0 = f.now;
    CHECK(cmd_is(&f, "SET", "lock:{p}"));
    fake_until(&f, t0 + 2000); /* command timeout: the SET goes stale */
    fake_advance(&f, 1);       /* the retry, behind it on the wire */
    CHECK_EQ(fake_pending(&f), 2);
    fake_cmd *retry = &f.cmds[f.head + 1];
    CHECK_STR(retry->argv[0], "EVALSHA");
    CHECK_STR(retry->argv[1], fake_sha(RDL_SCRIPT_ACQUIRE));
    int64_t t1 = retry->sent_at;
    fake_until(&f, t0 + 3500);    /* the pause ends */
    fake_reply_status(&f, "OK"); /* the stale SET: set, too late to use */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_reply_int(&f, 1); /* the retry ran after the pause too: ours, but its */
    fake_run(&f);          /* answer comes after its own validity (t1 + 1483) */
    CHECK_EQ(r.acq_calls, 0);
    (void)t1;
    fake_advance(&f, 1); /* the next attempt reclaims the key at once */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    int64_t t2 = fake_peek(&f) ? fake_peek(&f)->sent_at : 0;
    fake_advance(&f, 2);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t2 + 1500 - 17 - f.now); /* from its own send */
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* wait_ms is an upper bound: the attempt still out at the budget's end is
 * abandoned, on_acquire comes then, and a compare-and-delete goes behind
 * the attempt so that what it may still set does not block others. */
static void test_budget_end_abandons_attempt_and_deletes_behind_it(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    redlease_lock_options o = opts(1500);
    o.wait_ms = 1000; /* below the 2000 ms command timeout */
    start_lock(&f, &r, "b", &o);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_until(&f, t0 + 999);
    CHECK_EQ(r.acq_calls, 0);
    fake_until(&f, t0 + 1000);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ETIMEDOUT);
    CHECK_EQ(r.acq_at, t0 + 1000);
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(ev && ev->status == REDLEASE_ETIMEDOUT && ev->retry_in_ms == -1);
    CHECK_EQ(fake_pending(&f), 2);
    fake_cmd *drop = &f.cmds[f.head + 1];
    CHECK_STR(drop->argv[1], fake_sha(RDL_SCRIPT_RELEASE));
    CHECK_STR(drop->argv[3], "lock:{b}");
    CHECK_STR(drop->argv[4], redlease_lock_token(r.lk));
    fake_reply_status(&f, "OK"); /* it did land */
    fake_reply_int(&f, 1);       /* and was deleted */
    fake_run(&f);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* No connection at all: the budget, not the connect timeout, decides. */
static void test_budget_end_without_a_connection(void)
{
    fake f;
    fake_attach(&f, NULL); /* connecting for ever */
    rec r = {0};
    redlease_lock_options o = opts(1500);
    o.wait_ms = 700;
    start_lock(&f, &r, "n", &o);
    int64_t t0 = f.now;
    fake_until(&f, t0 + 700);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECONN);
    CHECK_EQ(r.acq_at, t0 + 700);
    end(&f);
}

/* A definite error ends even a wait for ever, at once, and says why. */
static void test_definite_error_ends_wait_forever(void)
{
    fake f;
    start_recording(&f);
    rec r = {0};
    redlease_lock_options o = opts(1500);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    start_lock(&f, &r, "acl", &o);
    fake_run(&f);
    fake_reply_err(&f, "NOPERM No permissions to access a key");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EPERM);
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(ev != NULL);
    if (ev) {
        CHECK_EQ(ev->status, REDLEASE_EPERM);
        CHECK_EQ(ev->retry_in_ms, -1);
        CHECK(ev->detail && strstr(ev->detail, "NOPERM"));
    }
    CHECK_EQ(fake_pending(&f), 0); /* nothing set: nothing to delete */
    end(&f);
}

/* A transient error is retried, and every failed attempt is an event
 * carrying Redis's text; the connection stays. */
static void test_transient_errors_are_events_and_retried(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_max, NULL);
    nseen = 0;
    redlease_client_set_event_cb(f.c, record_event, NULL);
    rec r = {0};
    redlease_lock_options o = opts(1500);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    o.retry_base_ms = 10;
    start_lock(&f, &r, "t", &o);
    static const char *const errs[] = {"LOADING Redis is loading the dataset in memory",
                                       "OOM command not allowed when used memory > 'maxmemory'.",
                                       "MISCONF Redis is configured to save RDB snapshots"};
    for (int i = 0; i < 3; i++) {
        fake_run(&f);
        CHECK(is_attempt(&f));
        fake_reply_err(&f, errs[i]);
        fake_run(&f);
        const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
        CHECK(ev && ev->status == REDLEASE_EREDIS && ev->retry_in_ms >= 1 && ev->detail &&
              strncmp(ev->detail, errs[i], 4) == 0);
        fake_advance(&f, ev ? ev->retry_in_ms : 1);
    }
    CHECK_EQ(count_events(REDLEASE_EV_ATTEMPT_FAILED), 3);
    CHECK_EQ(r.acq_calls, 0);
    CHECK(redlease_client_connected(f.c));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* READONLY: the server is a replica now. The connection is dropped (from
 * the timer) and a new one made; the attempt is retried on it. NOAUTH: the
 * same, and the acquire ends with EAUTH. */
static void test_readonly_and_noauth_replace_the_connection(void)
{
    for (int noauth = 0; noauth <= 1; noauth++) {
        fake f;
        fake_start(&f, NULL);
        redlease_client_set_rng(f.c, rng_zero, NULL);
        rec r = {0};
        redlease_lock_options o = opts(1500);
        o.wait_ms = 5000;
        start_lock(&f, &r, "ro", &o);
        fake_run(&f);
        CHECK_EQ(f.connects, 1);
        fake_reply_err(&f, noauth ? "NOAUTH Authentication required."
                                  : "READONLY You can't write against a read only replica.");
        CHECK_EQ(redlease_client_connected(f.c), 0); /* at once, before anyone looks */
        fake_run(&f);
        CHECK_EQ(f.connected, 0); /* closed */
        fake_advance(&f, 1);
        CHECK_EQ(f.connects, 2); /* and replaced */
        if (noauth) {
            CHECK_EQ(r.acq_status, REDLEASE_EAUTH);
        } else {
            CHECK_EQ(r.acq_calls, 0);
            fake_connect(&f);
            fake_advance(&f, 1);
            CHECK(is_attempt(&f));
            fake_reply_int(&f, 1);
            fake_run(&f);
            CHECK_EQ(r.acq_status, REDLEASE_OK);
        }
        end(&f);
    }
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

/* EV_CONNECTED says nothing of the connection before it. */
static void test_connected_event_has_no_stale_detail(void)
{
    fake f;
    start_recording(&f);
    fake_break(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_DISCONNECTED);
    CHECK(ev && ev->detail && strstr(ev->detail, "reset"));
    fake_advance(&f, 100);
    fake_connect(&f);
    ev = last_event(REDLEASE_EV_CONNECTED);
    CHECK(ev != NULL);
    if (ev) CHECK(ev->detail == NULL);
    end(&f);
}

static void test_econn_final_attempt_drop_never_sent(void)
{
    fake_alloc_install();
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL);
    rec r = {0};
    redlease_lock_options o = opts(5000); /* wait_ms 0: one attempt */
    start_lock(&f, &r, "x", &o);
    fake_run(&f);
    CHECK(cmd_is(&f, "SET", "lock:{x}"));
    fake_break(&f); /* the SET may have run */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_ECONN);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    fake_advance(&f, 1);
    fake_connect(&f);
    fake_advance(&f, 1);
    /* the possible key with our token is deleted once the link is back */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    while (fake_peek(&f)) fake_reply_int(&f, 1);
    fake_run(&f);
    redlease_stats st;
    redlease_client_stats(f.c, &st);
    CHECK_EQ(st.locks_now, 0); /* the handle is gone after on_release */
    end(&f);
}

/* A cold script cache: the reclaiming attempt is answered NOSCRIPT, resent
 * once by EVAL (which fills the cache), and the next script command goes
 * by EVALSHA again. Nothing of the handle ever deletes the key it holds. */
static void test_noscript_resent_by_eval_then_evalsha_again(void)
{
    fake f;
    rec r = {0};
    uncertain_then_reconnect(&f, &r);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)));
    fake_reply_err(&f, "NOSCRIPT No matching script. Please use EVAL.");
    CHECK(cmd_is(&f, "EVAL", rdl_script_src[RDL_SCRIPT_ACQUIRE]));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(redlease_lock_held(r.lk));
    fake_advance(&f, 5000 / 3); /* the renewal */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    int deletes = 0;
    for (int i = 0; i < f.ncmds; i++)
        if (f.cmds[i].argc >= 2 && (strcmp(f.cmds[i].argv[1], fake_sha(RDL_SCRIPT_RELEASE)) == 0 ||
                                    strcmp(f.cmds[i].argv[1], rdl_script_src[RDL_SCRIPT_RELEASE]) == 0))
            deletes++;
    CHECK_EQ(deletes, 0);
    end(&f);
}


/* A reconnect delay drawn as 0 inside the timer (connect timeout, failed
 * handshake, a connect failing at once) must still lead to a reconnect. */

static void test_zero_backoff_after_connect_timeout_still_reconnects(void)
{
    fake f;
    fake_attach(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL); /* every delay draws 0 */
    CHECK_EQ(f.connects, 1);
    fake_advance(&f, 2000); /* connect_timeout_ms: dropped, reconnect in 0 ms */
    fake_advance(&f, 100);
    CHECK(f.connects >= 2);
    CHECK(f.timer_at >= 0); /* something is still scheduled */
    end(&f);
}


/* With REDLEASE_RENEW_OFF the re-verification after a reconnect is one
 * renewal, not the start of back-to-back renewals. */

static void test_renew_off_reverify_does_not_loop(void)
{
    fake f;
    fake_start(&f, NULL);
    redlease_client_set_rng(f.c, rng_zero, NULL);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.renew_interval_ms = REDLEASE_RENEW_OFF;
    int64_t t0 = hold(&f, &r, "job", o);
    fake_until(&f, t0 + 100);
    fake_break(&f);
    fake_advance(&f, 1);
    fake_connect(&f); /* re-verification goes out */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    int renewals = 0;
    for (int i = 0; i < 50 && fake_peek(&f); i++) {
        renewals++;
        fake_reply_int(&f, 1);
        fake_run(&f);
    }
    CHECK_EQ(renewals, 0); /* renewals are off: nothing more is sent */
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_status_strings),
        TEST_CASE(test_heap_orders_deadlines),
        TEST_CASE(test_backoff_full_jitter_sequence),
        TEST_CASE(test_backoff_decorrelated_bounds),
        TEST_CASE(test_lease_math),
        TEST_CASE(test_invalid_arguments),
        TEST_CASE(test_acquire_is_one_set_nx_px),
        TEST_CASE(test_tokens_unique_per_acquire),
        TEST_CASE(test_contention_backoff_times_and_budget),
        TEST_CASE(test_wait_zero_is_one_attempt),
        TEST_CASE(test_max_attempts_caps_retries),
        TEST_CASE(test_errors_retried_last_error_reported),
        TEST_CASE(test_unexpected_reply_is_eproto),
        TEST_CASE(test_renewal_at_interval_extends_from_send_time),
        TEST_CASE(test_lost_fires_before_server_expiry_without_reply),
        TEST_CASE(test_failed_renewal_retried_sooner),
        TEST_CASE(test_renewal_not_owner_is_lost_at_once),
        TEST_CASE(test_max_hold_caps_the_lease),
        TEST_CASE(test_renew_off_expires_locally),
        TEST_CASE(test_cancel_with_acquire_in_flight_releases_late_ok),
        TEST_CASE(test_late_ok_after_timeout_is_adopted),
        TEST_CASE(test_silent_connection_dropped_and_reconnected),
        TEST_CASE(test_stall_check_after_a_pause_lets_the_loop_read_first),
        TEST_CASE(test_ok_too_late_to_use_is_not_reported),
        TEST_CASE(test_stale_renew_reply_after_release_ignored),
        TEST_CASE(test_release_outcomes),
        TEST_CASE(test_accessors_in_every_state),
        TEST_CASE(test_release_without_connection_is_econn),
        TEST_CASE(test_close_cancels_unannounced_lease),
        TEST_CASE(test_release_retried_across_reconnect),
        TEST_CASE(test_release_inside_on_acquire),
        TEST_CASE(test_release_inside_on_lost),
        TEST_CASE(test_free_inside_on_acquire_cancels_others),
        TEST_CASE(test_free_inside_on_lost),
        TEST_CASE(test_free_inside_on_release),
        TEST_CASE(test_free_inside_event_hook_is_deferred),
        TEST_CASE(test_free_in_hook_during_release_of_acquiring),
        TEST_CASE(test_calls_from_callbacks_during_free),
        TEST_CASE(test_disconnect_mid_renewal_then_reverify),
        TEST_CASE(test_reconnect_idle_lease_reverified_at_once),
        TEST_CASE(test_no_reconnect_means_expired),
        TEST_CASE(test_ready_then_broken_before_flush_does_not_spin),
        TEST_CASE(test_uncertain_acquire_reclaimed_by_retry),
        TEST_CASE(test_confirmation_after_a_stall_is_too_late),
        TEST_CASE(test_noscript_falls_back_to_eval),
        TEST_CASE(test_fencing_acquire_script),
        TEST_CASE(test_handshake_auth_select_then_commands),
        TEST_CASE(test_no_connection_wait_zero_is_econn),
        TEST_CASE(test_connect_timeout_and_backoff),
        TEST_CASE(test_graceful_close_releases_held),
        TEST_CASE(test_free_during_close_still_calls_done),
        TEST_CASE(test_close_with_nothing_pending_is_prompt),
        TEST_CASE(test_many_leases_one_timer_pipelined),
        TEST_CASE(test_events_carry_lease_facts),
        TEST_CASE(test_allocation_failure_everywhere),
        TEST_CASE(test_econn_final_attempt_drop_never_sent),
        TEST_CASE(test_noscript_resent_by_eval_then_evalsha_again),
        TEST_CASE(test_zero_backoff_after_connect_timeout_still_reconnects),
        TEST_CASE(test_renew_off_reverify_does_not_loop),
        TEST_CASE(test_own_key_from_a_stalled_attempt_is_ours),
        TEST_CASE(test_budget_end_abandons_attempt_and_deletes_behind_it),
        TEST_CASE(test_budget_end_without_a_connection),
        TEST_CASE(test_definite_error_ends_wait_forever),
        TEST_CASE(test_transient_errors_are_events_and_retried),
        TEST_CASE(test_readonly_and_noauth_replace_the_connection),
        TEST_CASE(test_release_retried_on_transient_error),
        TEST_CASE(test_connected_event_has_no_stale_detail),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
