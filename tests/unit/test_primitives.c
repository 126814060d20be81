/* SPDX-License-Identifier: MIT */
/* Unit tests of the pieces under the lease logic and of the API at its
 * edges: status strings, the deadline heap, backoff draws, lease
 * arithmetic, invalid arguments, and what a handle's accessors tell in
 * each state (on the fake transport and clock of tests/support/fake.h). */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "backoff.h"
#include "core_rig.h"
#include "decimal.h"
#include "fake.h"
#include "heap.h"
#include "lease_math.h"
#include "resp.h"
#include "testutil.h"

static void test_status_strings(void)
{
    int codes[] = {REDLEASE_OK, REDLEASE_EINVAL, REDLEASE_ENOMEM, REDLEASE_EBUSY,
                   REDLEASE_ETIMEDOUT, REDLEASE_ECANCELED, REDLEASE_ECONN, REDLEASE_EREDIS,
                   REDLEASE_EPROTO, REDLEASE_ENOTHELD, REDLEASE_ESYS, REDLEASE_EAUTH,
                   REDLEASE_EPERM, REDLEASE_ECONFIG, REDLEASE_ENOTSUP, REDLEASE_ETLS,
                   REDLEASE_EREPLICAS, REDLEASE_EQUORUM, REDLEASE_EKIND};
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

/* An allocator that refuses while asked to (the heap's tests install it,
 * then the counting one again, with nothing of theirs left). */
static int refusing;
static void *refusing_malloc(size_t n) { return refusing ? NULL : malloc(n); }
static void *refusing_realloc(void *p, size_t n) { return refusing ? NULL : realloc(p, n); }

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The deadlines against a plain list of them: whatever order they come
 * in (streams of fixed delays, which fill the runs, random ones, never),
 * the top is the earliest, and moving one never fails, also while no
 * allocation succeeds (what no run can take goes to the heap, which keeps
 * room for every node). */
static void test_heap_runs_against_a_model(void)
{
    enum { N = 400 };
    static rdl_heap_node n[N];
    int in[N] = {0};
    rdl_heap h;
    rdl_heap_init(&h);
    redlease_set_allocator(refusing_malloc, refusing_realloc, free);
    uint64_t x = 88172645463325252ull;
    int64_t t = 0;
    long checked = 0;
    for (long step = 0; step < 300000; step++) {
        uint64_t r = xorshift(&x);
        int i = (int)(r % N), kind = (int)((r >> 20) % 5);
        int64_t at = kind == 0   ? t + 2000
                     : kind == 1 ? t + 10000
                     : kind == 2 ? t + (int64_t)((r >> 32) % 20000)
                     : kind == 3 ? t + 5
                                 : RDL_NEVER;
        refusing = step >= 150000 && step < 220000;
        if (!in[i]) {
            int rc = rdl_heap_insert(&h, &n[i], at);
            if (rc == 0) in[i] = 1;
            CHECK(rc == 0 || (refusing && rc == REDLEASE_ENOMEM));
        } else if ((r >> 40) % 8 == 0) {
            rdl_heap_remove(&h, &n[i]);
            in[i] = 0;
            CHECK_EQ(n[i].idx, RDL_HEAP_OUT);
        } else {
            rdl_heap_update(&h, &n[i], at);
            CHECK_EQ(n[i].at, at);
        }
        if (step % 3 == 0) t += (int64_t)((r >> 48) % 40);
        if (step % 61 == 0) {
            int64_t min = RDL_NEVER;
            int any = 0;
            for (int k = 0; k < N; k++)
                if (in[k]) {
                    any = 1;
                    if (n[k].at < min) min = n[k].at;
                }
            rdl_heap_node *top = rdl_heap_top(&h);
            CHECK_EQ(top != NULL, any);
            if (top) CHECK_EQ(top->at, min);
            checked++;
        }
        if (step % 5000 == 0) { /* what is due runs: the next deadline comes later */
            rdl_heap_node *top;
            while ((top = rdl_heap_top(&h)) && top->at <= t)
                rdl_heap_update(&h, top, t + 1 + (int64_t)(xorshift(&x) % 15000));
        }
    }
    refusing = 0;
    CHECK(checked > 4000);
    int64_t last = INT64_MIN;
    int popped = 0, want = 0;
    for (int k = 0; k < N; k++) want += in[k];
    for (rdl_heap_node *top; (top = rdl_heap_top(&h)) != NULL; popped++) {
        CHECK(top->at >= last);
        last = top->at;
        rdl_heap_remove(&h, top);
    }
    CHECK_EQ(popped, want);
    rdl_heap_free(&h);
    fake_alloc_install();
}

/* A node that moves within a run leaves its slot behind: a run whose
 * oldest stays put while others come and go is made over in place, not
 * grown, however often they do. */
static void test_heap_run_reuses_slots_left_behind(void)
{
    rdl_heap h;
    rdl_heap_node old, a, b;
    rdl_heap_init(&h);
    redlease_set_allocator(refusing_malloc, refusing_realloc, free);
    CHECK_EQ(rdl_heap_insert(&h, &old, 1000), 0);
    CHECK_EQ(rdl_heap_insert(&h, &a, 1001), 0);
    CHECK_EQ(rdl_heap_insert(&h, &b, 1002), 0);
    for (int64_t at = 1003; at < 200000; at += 2) {
        rdl_heap_update(&h, &a, at);
        rdl_heap_update(&h, &b, at + 1);
    }
    CHECK_EQ(rdl_heap_top(&h), &old);
    uint32_t most = 0;
    for (int r = 0; r < RDL_HEAP_RUNS; r++)
        if (h.run[r].cap > most) most = h.run[r].cap;
    CHECK(most > 0 && most <= 64);
    rdl_heap_free(&h);
    fake_alloc_install();
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

/* Command arguments in decimal, as snprintf("%lld") writes them. */
static void test_decimal(void)
{
    const int64_t v[] = {0, 7, 10, 30000, 1000600000, -1, -10, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char want[32], got[RDL_DECIMAL_MAX + 8];
        memset(got, 'x', sizeof got);
        snprintf(want, sizeof want, "%lld", (long long)v[i]);
        CHECK_EQ(rdl_decimal(got, v[i]), strlen(want));
        CHECK_STR(got, want);
        CHECK_EQ(got[RDL_DECIMAL_MAX], 'x'); /* never past its room */
    }
}

/* A command framed by rdl_resp_write() is byte for byte hiredis's own:
 * lengths of each digit count, empty and binary arguments, ten and more
 * arguments (two-digit count), and one past the transport's stack room. */
static void test_resp_matches_hiredis(void)
{
    static char big[70000];
    memset(big, 'b', sizeof big);
    const size_t sizes[] = {0, 1, 9, 10, 99, 100, 511, 512, 999, 1000, 9999, 10000, 65536, 69999};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int argc = 1; argc <= 12; argc++) {
            const char *argv[12];
            size_t lens[12];
            for (int i = 0; i < argc; i++) {
                argv[i] = i % 3 == 1 ? "a\0\r\n$*" : big;
                lens[i] = i % 3 == 1 ? 6 : sizes[(k + (size_t)i) % (sizeof sizes / sizeof sizes[0])];
            }
            char *want = NULL;
            long long wn = redisFormatCommandArgv(&want, argc, argv, lens);
            CHECK(wn > 0);
            size_t n = rdl_resp_len(argc, lens);
            CHECK_EQ(n, (size_t)wn);
            char *got = malloc(n + 1);
            got[n] = 'x';
            CHECK_EQ(rdl_resp_write(got, argc, argv, lens), n);
            CHECK(memcmp(got, want, n) == 0);
            CHECK_EQ(got[n], 'x'); /* never past its length */
            free(got);
            redisFreeCommand(want);
        }
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
        o.wait_retry_base_ms = bad[i].base;
        o.wait_retry_max_ms = bad[i].max;
        o.wait_max_attempts = bad[i].attempts;
        o.wait_jitter = bad[i].jitter;
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
    co.port = 65536;
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "port: out of range");
    /* a socket and an address: which would win? neither, refused */
    redlease_client_options_init(&co);
    co.unix_path = "/tmp/redis.sock";
    co.host = "10.0.0.1";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "unix_path and host/port exclude each other");
    /* options must come from their _init: struct_size says how big the
     * caller's header made them */
    memset(&co, 0, sizeof co);
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "struct_size: options not made by their _init()");
    co.struct_size = (size_t)1 << 40; /* garbage: refused, nothing read past the struct */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    /* a newer header's larger struct: what this library does not know must
     * be unset (zero), else refused, never ignored */
    struct {
        redlease_client_options known;
        int64_t future; /* a field of a later version */
    } newer;
    redlease_client_options_init_sized(&newer.known, sizeof newer);
    CHECK_EQ(newer.known.struct_size, sizeof newer);
    CHECK_EQ(newer.future, 0);
    CHECK_EQ(newer.known.command_timeout_ms, 2000); /* the defaults it knows */
    CHECK(redlease_client_options_error(&newer.known) == NULL);
    CHECK_EQ(redlease_client_new(&c, &newer.known), REDLEASE_OK);
    redlease_client_free(c);
    c = NULL;
    newer.future = 1;
    CHECK_EQ(redlease_client_new(&c, &newer.known), REDLEASE_ENOTSUP);
    CHECK(error_names(&newer.known, "newer"));
    CHECK(c == NULL);
    redlease_lock_options lo_bad;
    memset(&lo_bad, 0, sizeof lo_bad);
    CHECK_EQ(redlease_acquire(f.c, "x", &lo_bad, on_acq, NULL, &r, &lk), REDLEASE_EINVAL);
    redlease_client_options_init(&co);
    CHECK_EQ(co.struct_size, sizeof co);
    CHECK(co.host == NULL && co.port == 0); /* REDLEASE_DEFAULT_HOST, _PORT */
    CHECK(redlease_client_options_error(&co) == NULL);
    CHECK(redlease_client_options_error(NULL) == NULL);
    redlease_client_options_init(&co);
    co.command_timeout_ms = 0;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    redlease_client_options_init(&co);
    co.username = "u"; /* a user without a password */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK(c == NULL);
    /* TLS: never plaintext instead (ENOTSUP without TLS support); with it,
     * a certificate needs its key, and no name may be empty */
    int no_tls = redlease_tls_available() ? REDLEASE_EINVAL : REDLEASE_ENOTSUP;
    redlease_client_options_init(&co);
    co.tls = 1;
    co.tls_cert_file = "client.crt";
    CHECK_EQ(redlease_client_new(&c, &co), no_tls);
    co.tls_cert_file = NULL;
    co.tls_ca_file = "";
    CHECK_EQ(redlease_client_new(&c, &co), no_tls);
    CHECK(c == NULL);
    co.tls = 0; /* off: a tls_* setting would be ignored, so it is refused */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "tls_* settings need tls");
    co.tls_ca_file = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    redlease_client_free(c);
    c = NULL;
    CHECK_EQ(redlease_client_attach_loop(f.c, NULL, NULL), REDLEASE_EINVAL);
    end(&f);
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

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_status_strings),
        TEST_CASE(test_heap_orders_deadlines),
        TEST_CASE(test_heap_runs_against_a_model),
        TEST_CASE(test_heap_run_reuses_slots_left_behind),
        TEST_CASE(test_backoff_full_jitter_sequence),
        TEST_CASE(test_backoff_decorrelated_bounds),
        TEST_CASE(test_decimal),
        TEST_CASE(test_resp_matches_hiredis),
        TEST_CASE(test_lease_math),
        TEST_CASE(test_invalid_arguments),
        TEST_CASE(test_accessors_in_every_state),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
