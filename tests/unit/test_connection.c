/* SPDX-License-Identifier: MIT */
/* Unit tests of the connection: the AUTH/SELECT/PING handshake, the
 * connect timeout and reconnect backoff, a silent connection dropped, a
 * stalled loop given the chance to read first, leases re-verified after a
 * reconnect, replies that replace the connection (READONLY, NOAUTH), and
 * the connection's events (tests/support/fake.h). */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

/* A connection that stops answering (half-open TCP, a peer gone without a
 * reset) is dropped once it has been silent for twice the command timeout
 * since the first unanswered command was sent; the client reconnects and
 * re-verifies. A reply in time cancels the check
 * (test_failed_renewal_retried_sooner, in test_renew.c). */
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

/* The transport refuses commands while the connection still counts as
 * ready (hiredis out of memory, a context being torn down): each waiting
 * attempt is tried once and parked again, never retried in a loop; it goes
 * out once the transport takes commands again. */
static void test_transport_refusing_while_ready_does_not_spin(void)
{
    fake f;
    fake_attach(&f, NULL);
    rec r[2] = {{0}, {0}};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 10000;
    start_lock(&f, &r[0], "x", &o);
    start_lock(&f, &r[1], "y", &o);
    fake_run(&f);              /* both wait for the connection */
    fake_connect_raw(&f);
    fake_answer_handshake(&f);
    f.refuse = 1;
    fake_run(&f);              /* ready: each waiting attempt tried once */
    CHECK_EQ(f.refused, 2);
    CHECK_EQ(fake_pending(&f), 0);
    f.refuse = 0;
    for (int i = 0; i < 200 && (r[0].acq_calls == 0 || r[1].acq_calls == 0); i++) {
        fake_advance(&f, 50);
        while (fake_pending(&f)) { /* SET NX PX, or a later attempt's script: acquired */
            if (cmd_is(&f, "SET", NULL)) fake_reply_status(&f, "OK");
            else fake_reply_int(&f, 1);
        }
    }
    fake_run(&f);
    CHECK_EQ(r[0].acq_calls, 1);
    CHECK_EQ(r[0].acq_status, REDLEASE_OK);
    CHECK_EQ(r[1].acq_calls, 1);
    CHECK_EQ(r[1].acq_status, REDLEASE_OK);
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
    rdl_conn_on_connected(&f.c->main.conn, REDLEASE_OK, NULL);
    fake_cmd *cmd = fake_peek(&f);
    CHECK(cmd_is(&f, "AUTH", "app"));
    if (cmd) CHECK_STR(cmd->argv[2], "s3cret");
    CHECK_STR(f.cmds[f.head + 1].argv[0], "SELECT");
    CHECK_STR(f.cmds[f.head + 1].argv[1], "3");
    rec early = {0};
    start_lock(&f, &early, "y", &o); /* asked for during the handshake */
    fake_run(&f);
    /* AUTH, SELECT, PING, TIME, the probe of commands and scripts:
     * nothing jumps the handshake */
    CHECK_EQ(fake_pending(&f), 6);
    CHECK_STR(f.cmds[f.head + 2].argv[0], "PING");
    CHECK_STR(f.cmds[f.head + 3].argv[0], "TIME");
    CHECK_STR(f.cmds[f.head + 4].argv[0], "COMMAND");
    CHECK_STR(f.cmds[f.head + 5].argv[0], "EVAL");
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

/* Every connection event names its server (ev->node), and every failure's
 * text (errstr, the events' detail) says it once, first; a lock's events
 * name the server its request went to. */
static void test_events_and_errors_name_the_server(void)
{
    fake f;
    start_recording(&f);
    fake_break(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_DISCONNECTED);
    CHECK(names(ev, "127.0.0.1:6379"));
    CHECK(ev && ev->detail && strcmp(ev->detail, "127.0.0.1:6379: connection reset (fake)") == 0);
    CHECK_STR(redlease_client_errstr(f.c), "127.0.0.1:6379: connection reset (fake)");
    CHECK(names(last_event(REDLEASE_EV_RECONNECTING), "127.0.0.1:6379"));
    fake_advance(&f, 100);
    fake_connect_fail(&f);
    CHECK_STR(redlease_client_errstr(f.c), "127.0.0.1:6379: connection refused (fake)");
    CHECK_EQ(count_events(REDLEASE_EV_DISCONNECTED), 2);
    CHECK(names(last_event(REDLEASE_EV_DISCONNECTED), "127.0.0.1:6379"));
    fake_advance(&f, 100);
    fake_connect(&f);
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "127.0.0.1:6379"));
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    CHECK(names(last_event(REDLEASE_EV_ATTEMPT), "127.0.0.1:6379"));
    CHECK(names(last_event(REDLEASE_EV_ACQUIRED), "127.0.0.1:6379"));
    end(&f);
}

/* A unix socket is named by its path, an IPv6 address in brackets (its
 * port would not read otherwise). */
static void test_unix_socket_and_ipv6_names(void)
{
    static const char *const want[2] = {"/tmp/redlease-test.sock", "[::1]:6380"};
    for (int i = 0; i < 2; i++) {
        redlease_client_options co;
        redlease_client_options_init(&co);
        if (i == 0) {
            co.unix_path = want[0];
        } else {
            co.host = "::1";
            co.port = 6380;
        }
        fake f;
        if (!attach_recording(&f, &co)) {
            CHECK(0);
            continue;
        }
        fake_connect(&f);
        CHECK(names(last_event(REDLEASE_EV_CONNECTED), want[i]));
        fake_break(&f);
        CHECK(names(last_event(REDLEASE_EV_DISCONNECTED), want[i]));
        char text[64];
        snprintf(text, sizeof text, "%s: connection reset (fake)", want[i]);
        CHECK_STR(redlease_client_errstr(f.c), text);
        end(&f);
    }
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_silent_connection_dropped_and_reconnected),
        TEST_CASE(test_stall_check_after_a_pause_lets_the_loop_read_first),
        TEST_CASE(test_disconnect_mid_renewal_then_reverify),
        TEST_CASE(test_reconnect_idle_lease_reverified_at_once),
        TEST_CASE(test_no_reconnect_means_expired),
        TEST_CASE(test_ready_then_broken_before_flush_does_not_spin),
        TEST_CASE(test_transport_refusing_while_ready_does_not_spin),
        TEST_CASE(test_handshake_auth_select_then_commands),
        TEST_CASE(test_no_connection_wait_zero_is_econn),
        TEST_CASE(test_connect_timeout_and_backoff),
        TEST_CASE(test_zero_backoff_after_connect_timeout_still_reconnects),
        TEST_CASE(test_renew_off_reverify_does_not_loop),
        TEST_CASE(test_readonly_and_noauth_replace_the_connection),
        TEST_CASE(test_connected_event_has_no_stale_detail),
        TEST_CASE(test_events_and_errors_name_the_server),
        TEST_CASE(test_unix_socket_and_ipv6_names),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
