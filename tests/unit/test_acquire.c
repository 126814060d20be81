/* SPDX-License-Identifier: MIT */
/* Unit tests of acquiring: the first attempt's SET NX PX and the script
 * of later ones, tokens, fencing, contention within the wait budget and at
 * its end, Redis errors, and late, too-late or uncertain replies. Every
 * timing rule is checked at the exact millisecond on the fake transport,
 * fake loop and virtual clock of tests/support/fake.h. */
#include <string.h>
#include <unistd.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

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
    /* the token, then the record: who holds, from when by the server's clock */
    CHECK_STR(cmd->argv[2], lease_value(r.lk));
    CHECK(strncmp(cmd->argv[2], redlease_lock_token(r.lk), 32) == 0);
    CHECK(strspn(cmd->argv[2], "0123456789abcdef") == 32);
    char want[128];
    snprintf(want, sizeof want, " %lld %lld 0 ", (long long)getpid(), (long long)(FAKE_SERVER_CLOCK_MS + t0));
    CHECK(strncmp(cmd->argv[2] + 32, want, strlen(want)) == 0);
    CHECK(strcmp(cmd->argv[2] + strlen(cmd->argv[2]) - strlen(" test_acquire"), " test_acquire") == 0);
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
    o.wait_retry_base_ms = 100;
    o.wait_retry_max_ms = 1000;
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
    o.wait_max_attempts = 3;
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
    o.wait_retry_base_ms = 100;
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
    memcpy(token, f.cmds[f.head].argv[2], 32); /* SET's value: the token, then the record */
    token[32] = '\0';
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
    o.wait_retry_base_ms = 1000;
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
    /* no connect error to quote yet: the text says so, naming the server */
    CHECK(strstr(redlease_client_errstr(f.c), ": not connected yet: the connect is under way") != NULL);
    CHECK(strstr(redlease_client_errstr(f.c), "6379") != NULL);
    end(&f);
}

/* A handshake answered LOADING or MISCONF (a server starting, or one
 * that cannot save): EREDIS, as man 3's table says, with Redis's text
 * naming the server; retried, never a refusal. */
static void test_handshake_loading_is_eredis(void)
{
    static const char *const errs[] = {"LOADING Redis is loading the dataset in memory",
                                       "MISCONF Redis is configured to save RDB snapshots"};
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        fake f;
        if (!attach_recording(&f, NULL)) return;
        rec r = {0};
        redlease_lock_options o = opts(1500);
        o.wait_ms = 700;
        start_lock(&f, &r, "h", &o);
        int64_t t0 = f.now;
        f.connected = 1;
        rdl_conn_on_connected(&f.c->main.conn, REDLEASE_OK, NULL);
        CHECK(cmd_is(&f, "PING", NULL));
        fake_reply_err(&f, errs[i]);
        while (fake_peek(&f)) fake_reply_err(&f, errs[i]);
        fake_run(&f);
        const redlease_event *ev = last_event(REDLEASE_EV_DISCONNECTED);
        CHECK(ev != NULL);
        if (ev) CHECK_EQ(ev->status, REDLEASE_EREDIS);
        CHECK(strstr(redlease_client_errstr(f.c), errs[i]) != NULL);
        CHECK_EQ(r.acq_calls, 0); /* retried: the server may be ready soon */
        fake_until(&f, t0 + 700);
        CHECK_EQ(r.acq_calls, 1);
        CHECK_EQ(r.acq_status, REDLEASE_EREDIS); /* the connection's, not a bare ECONN */
        CHECK(strstr(redlease_client_errstr(f.c), errs[i]) != NULL);
        end(&f);
    }
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
    o.wait_retry_base_ms = 10;
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
              strncmp(ev->detail, "127.0.0.1:6379: ", 16) == 0 && strncmp(ev->detail + 16, errs[i], 4) == 0);
        CHECK(names(ev, "127.0.0.1:6379"));
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

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_acquire_is_one_set_nx_px),
        TEST_CASE(test_tokens_unique_per_acquire),
        TEST_CASE(test_contention_backoff_times_and_budget),
        TEST_CASE(test_wait_zero_is_one_attempt),
        TEST_CASE(test_max_attempts_caps_retries),
        TEST_CASE(test_errors_retried_last_error_reported),
        TEST_CASE(test_unexpected_reply_is_eproto),
        TEST_CASE(test_cancel_with_acquire_in_flight_releases_late_ok),
        TEST_CASE(test_late_ok_after_timeout_is_adopted),
        TEST_CASE(test_ok_too_late_to_use_is_not_reported),
        TEST_CASE(test_uncertain_acquire_reclaimed_by_retry),
        TEST_CASE(test_fencing_acquire_script),
        TEST_CASE(test_econn_final_attempt_drop_never_sent),
        TEST_CASE(test_noscript_resent_by_eval_then_evalsha_again),
        TEST_CASE(test_own_key_from_a_stalled_attempt_is_ours),
        TEST_CASE(test_budget_end_abandons_attempt_and_deletes_behind_it),
        TEST_CASE(test_budget_end_without_a_connection),
        TEST_CASE(test_handshake_loading_is_eredis),
        TEST_CASE(test_definite_error_ends_wait_forever),
        TEST_CASE(test_transient_errors_are_events_and_retried),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
