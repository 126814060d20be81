/* SPDX-License-Identifier: MIT */
/* Unit tests of Sentinel (src/sentinel.c and its use by the client) on the
 * fake: the client's connection to Redis is the fake's main link, the
 * Sentinel connection its side link. Finding the primary, ROLE in the
 * handshake, +switch-master moving the connection (and held leases
 * confirmed again or lost at once), asking again when the primary's link
 * fails, going round the Sentinels, refusals, and every allocation failing
 * in turn. */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

/* The last REDLEASE_EV_PRIMARY's detail (the event's own pointer lives
 * only during the call). */
static char primary_seen[64];

static void record_primary(redlease_client *c, const redlease_event *ev, void *arg)
{
    if (ev->type == REDLEASE_EV_PRIMARY) snprintf(primary_seen, sizeof primary_seen, "%s", ev->detail);
    record_event(c, ev, arg);
}

/* Options asking Sentinels addrs for "mymaster", reconnecting after
 * [min, max] ms. */
static redlease_client_options sentinel_options(const char *addrs, int64_t min, int64_t max)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.sentinel_addrs = addrs;
    co.topology = REDLEASE_TOPOLOGY_SENTINEL;
    co.sentinel_master_name = "mymaster";
    co.reconnect_min_ms = min;
    co.reconnect_max_ms = max;
    return co;
}

/* Runs the timer until the side link connects again; the ms it took. */
static int64_t until_side_reconnects(fake *f)
{
    int64_t t = f->now;
    int before = f->side.connects;
    while (f->side.connects == before && f->timer_at >= 0) fake_until(f, f->timer_at);
    return f->now - t;
}

/* A client asking Sentinels "s1:1,s2:2" for "mymaster", attached; nothing
 * connected yet. Events are recorded. */
static void start_sentinel_client(fake *f, const char *password)
{
    redlease_client_options co = sentinel_options("s1:1,s2:2", 10, 10);
    co.sentinel_password = password;
    fake_attach(f, &co);
    nseen = 0;
    primary_seen[0] = '\0';
    if (f->c) redlease_client_set_event_cb(f->c, record_primary, NULL);
}

static int side_cmd_is(fake *f, const char *a0, const char *a1)
{
    fake_cmd *c = fake_side_peek(f);
    return c && strcmp(c->argv[0], a0) == 0 && (!a1 || (c->argc > 1 && strcmp(c->argv[1], a1) == 0));
}

/* The side link connected, asked, and answered with host:port; the main
 * link connected there (handshake with ROLE "master"). */
static void find_primary(fake *f, const char *host, const char *port)
{
    fake_side_connect(f);
    fake_side_reply_addr(f, host, port);
    fake_run(f);
    fake_connect(f);
}

static void test_sentinel_asks_then_connects_there(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    CHECK_EQ(f.connects, 0); /* no address yet */
    CHECK_EQ(f.side.connects, 1);
    CHECK_STR(f.side.host, "s1");
    CHECK_EQ(f.side.port, 1);
    fake_side_connect(&f);
    /* the question, and the subscription behind it */
    CHECK(side_cmd_is(&f, "SENTINEL", "get-master-addr-by-name"));
    fake_cmd *q = fake_side_peek(&f);
    CHECK(q && q->argc == 3 && strcmp(q->argv[2], "mymaster") == 0);
    CHECK_EQ(f.side.ncmds, 3); /* PING, the question, SUBSCRIBE */
    CHECK(f.side.cmds[2].subscribed && strcmp(f.side.cmds[2].argv[1], "+switch-master") == 0);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 1000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0); /* parked: no connection */
    fake_side_reply_addr(&f, "10.0.0.5", "6390");
    fake_run(&f);
    CHECK_EQ(f.connects, 1);
    CHECK_STR(f.host, "10.0.0.5");
    CHECK_EQ(f.port, 6390);
    CHECK_EQ(count_events(REDLEASE_EV_PRIMARY), 1);
    CHECK_STR(primary_seen, "10.0.0.5:6390");
    /* the handshake ends with ROLE; then the parked attempt goes */
    fake_connect_raw(&f);
    CHECK(cmd_is(&f, "PING", NULL));
    /* PING, TIME (the server's clock, for records), the probe, ROLE */
    CHECK_EQ(fake_pending(&f), 5);
    CHECK_STR(f.cmds[f.head + 1].argv[0], "TIME");
    CHECK_STR(f.cmds[f.head + 2].argv[0], "COMMAND");
    CHECK_STR(f.cmds[f.head + 3].argv[0], "EVAL");
    CHECK_STR(f.cmds[f.head + 4].argv[0], "ROLE");
    fake_answer_handshake(&f);
    fake_run(&f);
    CHECK(is_attempt(&f));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

static void test_sentinel_role_not_master_asks_again(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    fake_side_connect(&f);
    fake_side_reply_addr(&f, "10.0.0.5", "6390");
    fake_run(&f);
    f.role = "slave"; /* a stale answer */
    fake_connect(&f);
    CHECK(!redlease_client_connected(f.c));
    CHECK_EQ(count_events(REDLEASE_EV_CONNECTED), 0);
    const redlease_event *ev = last_event(REDLEASE_EV_DISCONNECTED);
    CHECK(ev && ev->status == REDLEASE_ECONN);
    CHECK(strstr(redlease_client_errstr(f.c), "not the primary (ROLE: slave)") != NULL);
    /* the Sentinel link is dropped to ask again: the same Sentinel, which
     * announced nothing (the one we listen to) */
    fake_until(&f, f.now + 20);
    CHECK_EQ(f.side.connects, 2);
    CHECK_STR(f.side.host, "s1");
    fake_side_connect(&f);
    fake_side_reply_addr(&f, "10.0.0.6", "6391");
    fake_run(&f);
    f.role = NULL;
    fake_until(&f, f.now + 20);
    CHECK_STR(f.host, "10.0.0.6");
    fake_connect(&f);
    CHECK(redlease_client_connected(f.c));
    end(&f);
}

static void test_sentinel_switch_moves_and_reconfirms(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    find_primary(&f, "10.0.0.5", "6390");
    rec a = {0}, b = {0};
    int64_t t0 = hold(&f, &a, "a", opts(3000));
    hold(&f, &b, "b", opts(3000));
    CHECK(redlease_lock_held(a.lk) && redlease_lock_held(b.lk));
    /* another master's switch changes nothing */
    fake_side_push(&f, "+switch-master", "other 10.0.0.5 6390 10.0.0.9 6399");
    fake_run(&f);
    CHECK(redlease_client_connected(f.c));
    fake_side_push(&f, "+switch-master", "mymaster 10.0.0.5 6390 10.0.0.6 6391");
    /* at once: nothing reads as held on the old primary */
    CHECK(!redlease_lock_held(a.lk));
    fake_until(&f, f.now + 20);
    CHECK_STR(f.host, "10.0.0.6");
    CHECK_EQ(f.port, 6391);
    CHECK(strstr(redlease_client_errstr(f.c), "moving to 10.0.0.6:6391") != NULL);
    /* the wake-up channel listens where the locks are from now on */
    CHECK(rdl_conn_host(&f.c->waker->conn) && strcmp(rdl_conn_host(&f.c->waker->conn), "10.0.0.6") == 0);
    CHECK_EQ(rdl_conn_port(&f.c->waker->conn), 6391);
    fake_connect(&f);
    /* both renewed at once on the new primary; held() 0 until confirmed */
    CHECK_EQ(fake_pending(&f), 2);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK(!redlease_lock_held(a.lk));
    fake_reply_int(&f, 1); /* a's key is there */
    fake_reply_int(&f, 0); /* b's is not */
    fake_run(&f);
    CHECK(redlease_lock_held(a.lk));
    CHECK_EQ(a.lost_calls, 0);
    CHECK_EQ(b.lost_calls, 1);
    CHECK_EQ(b.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK(b.lost_at < t0 + 3000 - 32); /* at once, not at the deadline */
    end(&f);
}

static void test_sentinel_asked_again_when_the_primary_fails(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    find_primary(&f, "10.0.0.5", "6390");
    int side_before = f.side.connects;
    fake_break(&f); /* the primary is gone */
    fake_run(&f);
    /* the subscribed Sentinel link is replaced to ask again (same one) */
    fake_until(&f, f.now + 20);
    CHECK_EQ(f.side.connects, side_before + 1);
    CHECK_STR(f.side.host, "s1");
    fake_side_connect(&f);
    CHECK(side_cmd_is(&f, "SENTINEL", NULL));
    /* while a question is out, another failure does not ask again */
    fake_connect_fail(&f);
    fake_run(&f);
    fake_until(&f, f.now + 20);
    CHECK_EQ(f.side.connects, side_before + 1);
    fake_side_reply_addr(&f, "10.0.0.6", "6391");
    fake_until(&f, f.now + 20);
    CHECK_STR(f.host, "10.0.0.6");
    end(&f);
}

static void test_sentinel_round_robin_and_reasons(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    fake_side_connect_fail(&f);
    fake_run(&f);
    CHECK(strstr(redlease_client_errstr(f.c), "Sentinel s1:1: connection refused") != NULL);
    fake_until(&f, f.now + 20);
    CHECK_STR(f.side.host, "s2");
    fake_side_connect(&f);
    fake_side_reply_nil(&f); /* does not know the name */
    fake_run(&f);
    CHECK(strstr(redlease_client_errstr(f.c), "Sentinel s2:2: does not know master 'mymaster'") !=
          NULL);
    fake_until(&f, f.now + 20);
    CHECK_STR(f.side.host, "s1"); /* round again */
    fake_side_connect(&f);
    fake_side_reply_err(&f, "ERR unknown command 'SENTINEL'");
    fake_run(&f);
    CHECK(strstr(redlease_client_errstr(f.c), "Sentinel s1:1: ERR unknown command") != NULL);
    fake_until(&f, f.now + 20);
    CHECK_STR(f.side.host, "s2");
    CHECK_EQ(f.connects, 0); /* never an address: never a connect */
    /* an acquire meanwhile ends at its budget with the connection's status */
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 200;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_advance(&f, 300);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECONN);
    end(&f);
}

static void test_sentinel_credentials_refused(void)
{
    fake f;
    start_sentinel_client(&f, "wrong");
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    f.side.connecting = 0;
    f.side.connected = 1;
    rdl_conn_on_connected(f.side.cn, REDLEASE_OK, NULL);
    CHECK(side_cmd_is(&f, "AUTH", "wrong"));
    fake_side_reply_err(&f, "WRONGPASS invalid username-password pair or user is disabled.");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0); /* one Sentinel may be misconfigured: the next is asked */
    fake_until(&f, f.now + 20);
    CHECK_STR(f.side.host, "s2");
    f.side.connecting = 0;
    f.side.connected = 1;
    rdl_conn_on_connected(f.side.cn, REDLEASE_OK, NULL);
    fake_side_reply_err(&f, "WRONGPASS invalid username-password pair or user is disabled.");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1); /* all of them refuse: at once, though it would wait for ever */
    CHECK_EQ(r.acq_status, REDLEASE_EAUTH);
    end(&f);
}

/* A Sentinel that connects and then never answers is left after the
 * command timeout (2000 ms by default), for the next one. */
static void test_sentinel_unanswered_question(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    fake_side_connect(&f);
    CHECK(side_cmd_is(&f, "SENTINEL", NULL));
    int64_t asked = f.now;
    fake_until(&f, asked + 1999);
    CHECK_EQ(f.side.connects, 1);
    fake_until(&f, asked + 2000 + 20);
    CHECK_EQ(f.side.connects, 2);
    CHECK_STR(f.side.host, "s2");
    CHECK(strstr(redlease_client_errstr(f.c), "Sentinel s1:1: no answer in time") != NULL);
    end(&f);
}

/* A Sentinel that answers nothing usable: the reconnect delays grow (a
 * ready link alone does not reset them), and start again after an answer. */
static void test_sentinel_useless_answers_back_off(void)
{
    fake f;
    redlease_client_options co = sentinel_options("s1:1", 10, 1000);
    fake_attach(&f, &co);
    redlease_client_set_rng(f.c, rng_max, NULL); /* each delay at its cap */
    int64_t gaps[5];
    for (int i = 0; i < 5; i++) {
        fake_side_connect(&f);
        fake_side_reply_nil(&f);
        gaps[i] = until_side_reconnects(&f);
    }
    CHECK(gaps[0] <= 11 && gaps[4] >= 150); /* 10, 20, 40, 80, 160 */
    for (int i = 1; i < 5; i++) CHECK(gaps[i] > gaps[i - 1]);
    fake_side_connect(&f);
    fake_side_reply_addr(&f, "10.0.0.5", "6390");
    fake_side_break(&f);
    CHECK(until_side_reconnects(&f) <= 11); /* proved useful: back to the first delay */
    end(&f);
}

/* The primary's events name it: the one a Sentinel found, and across a
 * switch the old one's link as it goes ("moving to" the new), then the
 * new one. */
static void test_sentinel_events_name_the_primary(void)
{
    fake f;
    start_sentinel_client(&f, NULL);
    find_primary(&f, "10.0.0.5", "6390");
    CHECK(names(last_event(REDLEASE_EV_PRIMARY), "10.0.0.5:6390"));
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "10.0.0.5:6390"));
    fake_side_push(&f, "+switch-master", "mymaster 10.0.0.5 6390 10.0.0.6 6391");
    CHECK(names(last_event(REDLEASE_EV_PRIMARY), "10.0.0.6:6391"));
    CHECK_STR(primary_seen, "10.0.0.6:6391");
    CHECK_EQ(count_events(REDLEASE_EV_DISCONNECTED), 0);
    fake_run(&f); /* the old link is dropped */
    const redlease_event *ev = last_event(REDLEASE_EV_DISCONNECTED);
    CHECK(names(ev, "10.0.0.5:6390"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.5:6390: moving to 10.0.0.6:6391");
    CHECK(names(last_event(REDLEASE_EV_RECONNECTING), "10.0.0.6:6391"));
    fake_until(&f, f.now + 20);
    CHECK_STR(f.host, "10.0.0.6");
    fake_connect(&f);
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "10.0.0.6:6391"));
    end(&f);
}

/* Leaving the old primary on the news does not ask the Sentinels again
 * (the one we listen to just told us), and goes at once even after the
 * reconnect delays to the old one had grown. */
static void test_sentinel_move_goes_now_and_alone(void)
{
    fake f;
    redlease_client_options co = sentinel_options("s1:1,s2:2", 100, 1000);
    fake_attach(&f, &co);
    redlease_client_set_rng(f.c, rng_max, NULL);
    fake_side_connect(&f);
    fake_side_reply_addr(&f, "10.0.0.5", "6390");
    fake_run(&f);
    /* the old primary refuses a few times (delays 100, 200, 400), and the
     * Sentinel, asked again each time, still names it */
    for (int i = 0; i < 3; i++) {
        CHECK(f.connecting);
        fake_connect_fail(&f);
        fake_run(&f);
        while (!f.connecting && f.timer_at >= 0) {
            fake_until(&f, f.timer_at);
            if (f.side.connecting) {
                fake_side_connect(&f);
                fake_side_reply_addr(&f, "10.0.0.5", "6390");
            }
        }
    }
    int side = f.side.connects;
    fake_connect_raw(&f); /* connected, mid-handshake, when the switch comes */
    fake_side_push(&f, "+switch-master", "mymaster 10.0.0.5 6390 10.0.0.6 6391");
    int64_t t = f.now;
    while (f.connects < 5 && f.timer_at >= 0 && f.timer_at <= t + 5) fake_until(&f, f.timer_at);
    CHECK_EQ(f.connects, 5);
    CHECK_STR(f.host, "10.0.0.6");
    CHECK(f.now - t <= 1);
    fake_advance(&f, 1500);
    CHECK_EQ(f.side.connects, side); /* the Sentinels were not asked again */
    end(&f);
}

/* Every allocation of a Sentinel client's life fails in turn: found,
 * a lease held, a switch, the lease confirmed on the new primary,
 * released, freed. Callbacks run once; nothing leaks. */
static void sentinel_oom(long fail_at, int *ok)
{
    fake f;
    fake_alloc_fail_at(fail_at);
    start_sentinel_client(&f, NULL);
    if (!f.c) {
        fake_alloc_fail_at(0);
        return;
    }
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 2000;
    int started = start_lock(&f, &r, "job", &o) == REDLEASE_OK;
    for (int step = 0; step < 30; step++) {
        fake_advance(&f, 20);
        if (f.side.connecting) fake_side_connect(&f);
        if (fake_side_peek(&f)) fake_side_reply_addr(&f, step < 15 ? "10.0.0.5" : "10.0.0.6", "6390");
        if (step == 12) fake_side_push(&f, "+switch-master", "mymaster 10.0.0.5 6390 10.0.0.6 6390");
        if (f.connecting) fake_connect(&f);
        while (fake_peek(&f)) {
            if (cmd_is(&f, "SET", NULL))
                fake_reply_status(&f, "OK");
            else
                fake_reply_int(&f, 1);
        }
    }
    if (started) {
        CHECK_EQ(r.acq_calls, 1);
        CHECK(release(&r) == REDLEASE_OK);
        fake_advance(&f, 50);
        while (fake_peek(&f)) fake_reply_int(&f, 1);
        fake_run(&f);
        CHECK_EQ(r.rel_calls, 1);
        if (r.acq_status == REDLEASE_OK && r.lost_calls == 0 && r.rel_status == REDLEASE_OK) (*ok)++;
    }
    fake_alloc_fail_at(0);
    end(&f);
}

static void test_sentinel_allocation_failure_everywhere(void)
{
    printf("# allocation sweep: %ld allocation points\n", alloc_sweep(sentinel_oom));
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_sentinel_asks_then_connects_there),
        TEST_CASE(test_sentinel_role_not_master_asks_again),
        TEST_CASE(test_sentinel_switch_moves_and_reconfirms),
        TEST_CASE(test_sentinel_asked_again_when_the_primary_fails),
        TEST_CASE(test_sentinel_round_robin_and_reasons),
        TEST_CASE(test_sentinel_credentials_refused),
        TEST_CASE(test_sentinel_unanswered_question),
        TEST_CASE(test_sentinel_useless_answers_back_off),
        TEST_CASE(test_sentinel_move_goes_now_and_alone),
        TEST_CASE(test_sentinel_events_name_the_primary),
        TEST_CASE(test_sentinel_allocation_failure_everywhere),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
