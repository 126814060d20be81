/* SPDX-License-Identifier: MIT */
/* The integration suite (suite.c): leases on the harness's server, one
 * holder after another and racing, renewed past their TTLs, and what the
 * admin does to them: keys deleted or overwritten, a server frozen or
 * paused, connections killed, the script cache flushed; fencing tokens,
 * TCP, AUTH, a graceful close, the conditional commands. */
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ---------------------------------------------------------------- tests */

void test_sequential_holders(void)
{
    holder a = {.c = client()}, b = {.c = client()};
    acquire(&a, "seq", lopts(5000, 0));
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    CHECK(a.acted);
    CHECK(is_value_of(get(key_of("seq", REDLEASE_KEY_LOCK)), redlease_lock_token(a.lk)));
    long long t = pttl(key_of("seq", REDLEASE_KEY_LOCK));
    CHECK(t > 4000 && t <= 5000);
    acquire(&b, "seq", lopts(5000, 0));
    run_until(&b.acquired, 2000);
    CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
    release(&b);
    release(&a);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    CHECK_STR(get(key_of("seq", REDLEASE_KEY_LOCK)), "");
    holder c = {.c = b.c};
    acquire(&c, "seq", lopts(5000, 0));
    run_until(&c.acquired, 2000);
    CHECK_EQ(c.acq_status, REDLEASE_OK);
    release(&c);
    redlease_client_free(a.c);
    free_and_check_loop_empty(b.c);
}

void test_concurrent_race_one_winner(void)
{
    enum { N = 8 };
    holder h[N];
    memset(h, 0, sizeof h);
    for (int i = 0; i < N; i++) {
        h[i].c = client();
        CHECK(wait_connected(h[i].c));
    }
    for (int i = 0; i < N; i++) acquire(&h[i], "race", lopts(5000, 0));
    int64_t end = mono_ms() + 3000;
    int done = 0;
    while (done < N && mono_ms() < end) {
        run_for(5);
        done = 0;
        for (int i = 0; i < N; i++) done += h[i].acquired;
    }
    int winners = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        winners += h[i].acq_status == REDLEASE_OK;
        busy += h[i].acq_status == REDLEASE_EBUSY;
    }
    CHECK_EQ(done, N);
    CHECK_EQ(winners, 1);
    CHECK_EQ(busy, N - 1);
    for (int i = 0; i < N; i++) release(&h[i]);
    for (int i = 0; i < N - 1; i++) redlease_client_free(h[i].c);
    free_and_check_loop_empty(h[N - 1].c);
}

void test_holder_that_never_releases_is_replaced(void)
{
    holder a = {.c = client()}, b = {.c = client()};
    redlease_lock_options o = lopts(400, 0);
    o.renew_interval_ms = REDLEASE_RENEW_OFF; /* a holder that stopped working */
    acquire(&a, "stale", o);
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    acquire(&b, "stale", lopts(400, 3000));
    run_until(&b.acquired, 4000);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    CHECK_EQ(a.lost, 1);
    CHECK_EQ(a.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK(a.t_lost <= b.t_acq); /* the old holder heard first */
    /* Not before the stale TTL: the key was set after a's call, and Redis
     * counts its 400 ms from when it ran the SET (by its clock of that
     * loop pass: a few ms early at most). a's own callback is no reference:
     * it comes later by however long its delivery took (over TLS, 10-50 ms
     * on a loaded machine made "b - a's callback >= 390" fail). */
    CHECK(b.t_acq - a.t_call >= 380);
    release(&a);
    CHECK_EQ(a.rel_status, REDLEASE_ENOTHELD);
    release(&b);
    redlease_client_free(a.c);
    free_and_check_loop_empty(b.c);
}

void test_renewal_keeps_lease_past_ttls(void)
{
    holder a = {.c = client()};
    /* 1000 ms: a renewal every 333 ms, so a machine that starves the loop
     * for less than about 600 ms does not end the lease (as it rightly
     * would be ended past its TTL) */
    acquire(&a, "long", lopts(1000, 0));
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    int64_t end = mono_ms() + 3000; /* three TTLs */
    int always = 1;
    while (mono_ms() < end) {
        run_for(20);
        always &= redlease_lock_held(a.lk);
    }
    CHECK(always);
    CHECK_EQ(a.lost, 0);
    CHECK(is_value_of(get(key_of("long", REDLEASE_KEY_LOCK)), redlease_lock_token(a.lk)));
    redlease_stats st;
    redlease_client_stats(a.c, &st);
    CHECK(st.renewed >= 6); /* 9 when every timer is on time */
    release(&a);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    free_and_check_loop_empty(a.c);
}

/* The other kinds on this loop: two semaphore holders of 2 (separate
 * clients) kept past three TTLs by their renewals while a third is busy;
 * then two shared holders beside which an exclusive (a mutex) is busy,
 * and which a semaphore may not join (EKIND). */
void test_semaphore_and_shared_on_this_loop(void)
{
    holder h[3] = {{.c = client()}, {.c = client()}, {.c = client()}};
    redlease_lock_options o = lopts(1000, 0);
    o.limit = 2;
    for (int i = 0; i < 3; i++) {
        acquire(&h[i], "kinds", o);
        run_until(&h[i].acquired, 2000);
    }
    CHECK_EQ(h[0].acq_status, REDLEASE_OK);
    CHECK_EQ(h[1].acq_status, REDLEASE_OK);
    CHECK_EQ(h[2].acq_status, REDLEASE_EBUSY);
    CHECK_STR(get(key_of("kinds", REDLEASE_KEY_LOCK)), "semaphore 2");
    run_for(3000); /* three TTLs: only renewals keep them */
    CHECK(h[0].lost + h[1].lost == 0);
    CHECK(redlease_lock_held(h[0].lk) && redlease_lock_held(h[1].lk));
    for (int i = 0; i < 3; i++) release(&h[i]);
    CHECK(h[0].rel_status == REDLEASE_OK && h[1].rel_status == REDLEASE_OK);
    CHECK_STR(get(key_of("kinds", REDLEASE_KEY_LOCK)), "");

    holder s[2] = {{.c = h[0].c}, {.c = h[1].c}}, x = {.c = h[2].c}, k = {.c = h[2].c};
    redlease_lock_options so = lopts(1000, 0);
    so.shared = 1;
    for (int i = 0; i < 2; i++) {
        acquire(&s[i], "kinds", so);
        run_until(&s[i].acquired, 2000);
        CHECK_EQ(s[i].acq_status, REDLEASE_OK);
    }
    acquire(&x, "kinds", lopts(1000, 0));
    run_until(&x.acquired, 2000);
    CHECK_EQ(x.acq_status, REDLEASE_EBUSY);
    acquire(&k, "kinds", o); /* a semaphore on a shared resource */
    run_until(&k.acquired, 2000);
    CHECK_EQ(k.acq_status, REDLEASE_EKIND);
    CHECK(redlease_lock_held(s[0].lk) && redlease_lock_held(s[1].lk));
    release(&x);
    release(&k);
    for (int i = 0; i < 2; i++) {
        release(&s[i]);
        CHECK_EQ(s[i].rel_status, REDLEASE_OK);
    }
    redlease_client_free(h[0].c);
    redlease_client_free(h[1].c);
    free_and_check_loop_empty(h[2].c);
}

void test_key_deleted_or_overwritten_is_not_owner(void)
{
    const char *how[] = {"DEL %s", "SET %s intruder"};
    for (int i = 0; i < 2; i++) {
        holder a = {.c = client()};
        acquire(&a, "victim", lopts(600, 0));
        run_until(&a.acquired, 2000);
        CHECK_EQ(a.acq_status, REDLEASE_OK);
        turns_watch();
        cmd_free(how[i], key_of("victim", REDLEASE_KEY_LOCK));
        run_until(&a.lost, 1000);
        CHECK_EQ(a.lost, 1);
        CHECK_EQ(a.lost_reason, REDLEASE_LOST_NOT_OWNER);
        /* at the first renewal (200 ms), not at expiry (600 ms) */
        CHECK(a.t_lost - a.t_acq < 450 + longest_turn);
        if (i == 1) CHECK_STR(get(key_of("victim", REDLEASE_KEY_LOCK)), "intruder"); /* never deleted */
        run_for(400);
        if (i == 0) CHECK_STR(get(key_of("victim", REDLEASE_KEY_LOCK)), ""); /* never re-created */
        release(&a);
        CHECK_EQ(a.rel_status, REDLEASE_ENOTHELD);
        cmd_free("DEL %s", key_of("victim", REDLEASE_KEY_LOCK));
        free_and_check_loop_empty(a.c);
    }
}

void test_frozen_server_expired_before_server_expiry(void)
{
    holder a = {.c = client()};
    acquire(&a, "frozen", lopts(600, 0));
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    int64_t t_ok = a.t_acq;
    turns_watch();
    send_nowait("DEBUG SLEEP 1.2");
    run_until(&a.lost, 2000);
    CHECK_EQ(a.lost, 1);
    CHECK_EQ(a.lost_reason, REDLEASE_LOST_EXPIRED);
    /* the last confirmed renewal was sent at most 600 - 200 ms before the
     * freeze; the loss must come before that renewal's TTL ran out, in the
     * first turn of the loop after the deadline (on_acquire's TTL, if no
     * renewal was confirmed, at t_ok + 600 - drift at the latest) */
    CHECK(a.t_lost - t_ok < 600 + longest_turn);
    CHECK(!redlease_lock_held(a.lk));
    run_for(1000); /* the server wakes up; the stale renewal changes nothing */
    CHECK_EQ(a.lost, 1);
    release(&a);
    free_and_check_loop_empty(a.c);
}

/* Seen from the event hook, when it happens (polling could miss a reconnect
 * that takes under a millisecond). */
static redlease_lock *watched;
static int disconnects, held_at_disconnect = -1, held_at_renewal = -1;
static int64_t t_reverified;
static void watch_events(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_DISCONNECTED && disconnects++ == 0)
        held_at_disconnect = redlease_lock_held(watched);
    if (ev->type == REDLEASE_EV_RENEWED && disconnects && held_at_renewal < 0) {
        held_at_renewal = redlease_lock_held(watched);
        t_reverified = mono_ms();
    }
}

/* CLIENT PAUSE WRITE holds our renewals (scripts write) but lets the admin
 * read. What the library owes is a local deadline before the server's
 * expiry, and on_lost at the first turn of the loop after it: then nobody
 * else can have taken the key. The case measures both ends, each to within
 * the reads that saw it, so a late turn of a starved loop cannot decide it:
 *  - the server's expiry, fixed once the pause holds every renewal: between
 *    PTTL's send + PTTL and its answer + PTTL;
 *  - the local deadline, as the lock showed it on the last turn it was
 *    held: between the reads around redlease_lock_remaining_ms().
 * And when on_lost's own PTTL read was answered before the earliest the
 * server's expiry can be, the key must still have been there. */
static long long pttl_at_loss = -100;
static int64_t t_pttl_answered;
static void lost_check_server(redlease_lock *lk, int reason, void *arg)
{
    h_lost(lk, reason, arg);
    pttl_at_loss = pttl(redlease_lock_key(lk));
    t_pttl_answered = mono_ms();
}

void test_paused_server_loss_heard_before_key_expires(void)
{
    if (!redis_at_least(6, 2)) SKIP_TEST("CLIENT PAUSE WRITE needs Redis 6.2");
    holder a = {.c = client()};
    a.t_call = mono_ms();
    CHECK_EQ(redlease_acquire(a.c, "paused", &(redlease_lock_options){0}, h_acq, lost_check_server, &a, &a.lk),
             REDLEASE_EINVAL); /* a zeroed options struct is refused: ttl 0 */
    redlease_lock_options o = lopts(3000, 0); /* drift 32 ms: room for slow (valgrind) runs */
    CHECK_EQ(redlease_acquire(a.c, "paused", &o, h_acq, lost_check_server, &a, &a.lk), REDLEASE_OK);
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    run_for(1100); /* one renewal confirmed */
    cmd_free("CLIENT PAUSE 5000 WRITE", NULL);
    int64_t sent = mono_ms();
    long long left_on_server = pttl(redlease_lock_key(a.lk));
    int64_t expiry_lo = sent + left_on_server, expiry_hi = mono_ms() + left_on_server;
    CHECK(left_on_server > 0);
    int64_t deadline_lo = 0, deadline_hi = 0, end = mono_ms() + 5000;
    while (!a.lost && mono_ms() < end) {
        int64_t before = mono_ms(), left = redlease_lock_remaining_ms(a.lk), after = mono_ms();
        if (left > 0) deadline_lo = before + left, deadline_hi = after + left;
        run_for(5);
    }
    CHECK_EQ(a.lost_reason, REDLEASE_LOST_EXPIRED);
    printf("# local deadline %lld ms before the server's expiry (to within %lld ms); "
           "on_lost's PTTL read answered %lld ms after the deadline: %lld ms\n",
           (long long)(expiry_lo - deadline_hi), (long long)(expiry_hi - expiry_lo + deadline_hi - deadline_lo),
           (long long)(t_pttl_answered - deadline_hi), pttl_at_loss);
    CHECK(deadline_lo > 0);
    /* our deadline came first, by the drift (32 ms) at least, less the
     * whole milliseconds of the reads */
    CHECK(expiry_hi - deadline_lo >= 30);
    if (t_pttl_answered < expiry_lo) CHECK(pttl_at_loss > 0); /* the server still had the key: we heard first */
    cmd_free("CLIENT UNPAUSE", NULL);
    release(&a);
    free_and_check_loop_empty(a.c);
}

void test_client_kill_reconnects_and_keeps_lease(void)
{
    holder a = {.c = client()};
    redlease_client_set_event_cb(a.c, watch_events, NULL);
    acquire(&a, "killed", lopts(2000, 0));
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    watched = a.lk;
    int64_t t_kill = mono_ms();
    turns_watch();
    cmd_free("CLIENT KILL TYPE normal", NULL); /* the admin survives (SKIPME) */
    int64_t end = mono_ms() + 1500;
    while (mono_ms() < end && held_at_renewal < 0) run_for(5);
    CHECK_EQ(disconnects, 1);
    CHECK_EQ(held_at_disconnect, 0); /* not safe to act while the link is down */
    CHECK_EQ(held_at_renewal, 1);    /* re-verified at once on the new link */
    /* at once, not at the next scheduled renewal (666 ms after acquiring) */
    CHECK(t_reverified - t_kill < 400 + longest_turn);
    CHECK(redlease_lock_held(a.lk));
    CHECK_EQ(a.lost, 0);
    redlease_stats st;
    redlease_client_stats(a.c, &st);
    CHECK_EQ(st.connects, 2);
    release(&a);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    free_and_check_loop_empty(a.c);
}

void test_fencing_tokens_strictly_increase(void)
{
    redlease_client *c = client();
    redlease_lock_options o = lopts(5000, 0);
    o.fencing = 1;
    uint64_t last = 0;
    for (int i = 0; i < 4; i++) {
        if (i == 3) cmd_free("DEL %s", key_of("fenced", REDLEASE_KEY_FENCE)); /* a restart lost the counter */
        holder h = {.c = c};
        acquire(&h, "fenced", o);
        run_until(&h.acquired, 2000);
        CHECK_EQ(h.acq_status, REDLEASE_OK);
        CHECK(h.fence > last);
        if (i == 0) CHECK(h.fence > 1000000000000000ull); /* starts from server TIME in us */
        last = h.fence;
        release(&h);
    }
    free_and_check_loop_empty(c);
}

void test_script_flush_falls_back_to_eval(void)
{
    holder a = {.c = client()};
    acquire(&a, "flushed", lopts(300, 0));
    run_until(&a.acquired, 2000);
    cmd_free("SCRIPT FLUSH", NULL);
    run_for(700);
    CHECK_EQ(a.lost, 0);
    CHECK(redlease_lock_held(a.lk));
    release(&a);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    free_and_check_loop_empty(a.c);
}

void test_tcp_and_cancel_in_flight(void)
{
    holder a = {.c = client_tcp(1)};
    CHECK(wait_connected(a.c));
    acquire(&a, "tcp", lopts(5000, 0));
    CHECK_EQ(redlease_release(a.lk, h_rel, &a), REDLEASE_OK); /* cancel at once */
    run_until(&a.released, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(a.rel_status, REDLEASE_OK);
    holder b = {.c = a.c};
    acquire(&b, "tcp", lopts(5000, 0));
    run_until(&b.acquired, 2000);
    CHECK_EQ(b.acq_status, REDLEASE_OK);
    /* cancel with the SET in flight: a late OK must not leave a held key */
    holder d = {.c = a.c};
    acquire(&d, "tcp2", lopts(5000, 0));
    run_for(1);
    redlease_release(d.lk, h_rel, &d);
    run_until(&d.released, 2000);
    run_for(100);
    CHECK_STR(get(key_of("tcp2", REDLEASE_KEY_LOCK)), "");
    release(&b);
    free_and_check_loop_empty(a.c);
}

void test_auth_and_wrong_password(void)
{
    cmd_free("CONFIG SET requirepass %s", "hunter2");
    redlease_client_options o;
    redlease_client_options_init(&o);
    o.unix_path = sock_path;
    o.password = "hunter2";
    o.db = 2;
    redlease_client *c;
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_OK);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    holder a = {.c = c};
    acquire(&a, "authed", lopts(5000, 0));
    run_until(&a.acquired, 2000);
    CHECK_EQ(a.acq_status, REDLEASE_OK);
    cmd_free("SELECT 2", NULL);
    CHECK(is_value_of(get(key_of("authed", REDLEASE_KEY_LOCK)), redlease_lock_token(a.lk)));
    cmd_free("SELECT 0", NULL);
    release(&a);
    free_and_check_loop_empty(c);

    o.password = "Zx9-not-the-password";
    o.db = 0;
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_OK);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    holder b = {.c = c};
    acquire(&b, "authed", lopts(5000, 0));
    run_until(&b.acquired, 3000);
    CHECK_EQ(b.acq_status, REDLEASE_EAUTH); /* refused for good: at once, not ECONN */
    CHECK(strstr(redlease_client_errstr(c), "WRONGPASS") != NULL);
    CHECK(strstr(redlease_client_errstr(c), "Zx9") == NULL); /* never the password */
    release(&b);
    free_and_check_loop_empty(c);
    cmd_free("CONFIG SET requirepass %s", "");
}

static int closed;
static void on_closed(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    closed++;
}

void test_graceful_close_deletes_keys(void)
{
    redlease_client *c = client();
    holder a = {.c = c};
    acquire(&a, "closing", lopts(30000, 0));
    run_until(&a.acquired, 2000);
    CHECK(is_value_of(get(key_of("closing", REDLEASE_KEY_LOCK)), redlease_lock_token(a.lk)));
    redlease_client_close(c, on_closed, NULL);
    run_until(&closed, 2000);
    CHECK_EQ(closed, 1);
    CHECK_EQ(a.lost_reason, REDLEASE_LOST_CLOSED);
    CHECK_STR(get(key_of("closing", REDLEASE_KEY_LOCK)), "");
    CHECK(loop_empties());
}

/* The server's own conditional commands where it has them (Valkey 9,
 * Redis 8.4: CI runs this suite against Valkey 9 too), the scripts where
 * not: counted by the server itself (INFO commandstats). */
static long long calls_of(const char *command)
{
    redisReply *r = cmd("INFO commandstats");
    long long n = 0;
    char field[64];
    snprintf(field, sizeof field, "cmdstat_%s:calls=", command);
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, field) : NULL;
    if (p) n = atoll(p + strlen(field));
    if (r) freeReplyObject(r);
    return n;
}

static int server_has(const char *command)
{
    redisReply *r = cmd("COMMAND INFO %s", command);
    int has = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
              r->element[0]->type == REDIS_REPLY_ARRAY;
    if (r) freeReplyObject(r);
    return has;
}

void test_conditional_commands_where_the_server_has_them(void)
{
    int delifeq = server_has("DELIFEQ"), delex = server_has("DELEX");
    const char *version = getenv("REDLEASE_TEST_REDIS_VERSION");
    printf("# server %s: DELIFEQ %s, DELEX %s\n", version ? version : "?",
           delifeq ? "yes" : "no", delex ? "yes" : "no");
    redlease_client *c = client();
    CHECK(wait_connected(c));
    run_for(100); /* the connection's question is answered */
    /* A polling handle releases by the conditional delete; one in the
     * default (queue) mode by the queue's script, which hands the lock
     * over. Both renew by SET IFEQ. */
    for (int poll = 1; poll >= 0; poll--) {
        long long del0 = calls_of(delifeq ? "delifeq" : "delex"), sha0 = calls_of("evalsha");
        long long set0 = calls_of("set");
        holder a = {.c = c};
        redlease_lock_options o = lopts(300, 0);
        o.renew_interval_ms = 100;
        if (poll) o.wait_mode = REDLEASE_WAIT_POLL;
        acquire(&a, "conditional", o);
        run_until(&a.acquired, 2000);
        CHECK_EQ(a.acq_status, REDLEASE_OK);
        /* three renewals, past the TTL: 350 ms, or longer on a busy
         * machine where the timers run late (a renewal is a SET when the
         * server has the commands, else a script) */
        int64_t past_ttl = mono_ms() + 350, give_up = mono_ms() + 5000;
        while (mono_ms() < give_up &&
               (mono_ms() < past_ttl ||
                ((delifeq || delex) ? calls_of("set") - set0 - 1 : calls_of("evalsha") - sha0) < 3))
            run_for(10);
        CHECK(redlease_lock_held(a.lk));
        CHECK(is_value_of(get(key_of("conditional", REDLEASE_KEY_LOCK)), redlease_lock_token(a.lk)));
        release(&a);
        CHECK_EQ(a.rel_status, REDLEASE_OK);
        CHECK_STR(get(key_of("conditional", REDLEASE_KEY_LOCK)), "");
        long long dels = calls_of(delifeq ? "delifeq" : "delex") - del0;
        long long shas = calls_of("evalsha") - sha0, sets = calls_of("set") - set0;
        printf("# %s: %lld conditional deletes, %lld SETs, %lld EVALSHAs\n", poll ? "poll" : "queue", dels,
               sets, shas);
        if (delifeq || delex) {
            CHECK_EQ(dels, poll ? 1 : 0);
            CHECK(sets >= 4); /* the acquire and every renewal */
            CHECK_EQ(shas, poll ? 0 : 1);
        } else {
            CHECK(shas >= 4); /* every renewal and the release */
        }
    }
    free_and_check_loop_empty(c);
}
