/* SPDX-License-Identifier: MIT */
/* The quorum (co.quorum_addrs, src/quorum.h) against real processes: five
 * independent redis-servers of its own (servers.h), started afresh for
 * each case that changes them, killed or paused by pid and by command.
 *  - One acquire puts one token on all five keys (read back by GET on
 *    each server), renewals reach all five, a release deletes everywhere.
 *  - Fences with counters primed apart: the next holder's fence is above
 *    the previous one's though its majority misses the member that gave
 *    it (every counter was raised to it).
 *  - A stopped master (SIGSTOP): its link is dropped by the stall rule
 *    though the lease, answered by the others, never waits for it.
 *  - One, then two masters killed with leases held and renewing: every
 *    lease stays held (held() never 0, no on_lost) over several renewal
 *    intervals, and new acquires succeed on the three left.
 *  - Three killed (no majority): held() drops at once, and on_lost
 *    (EXPIRED) runs before the first send + ttl, while the keys on the two
 *    survivors still live: given up before any key of it could expire.
 *  - Paused masters (CLIENT PAUSE ALL): two paused longer than the ttl,
 *    the lease stays; three, on_lost before the last confirmation + ttl.
 *  - Racing clients on one key: never two holders, every acquire in turn.
 *  - A waiter in the default mode (woken, no order) holds the lock at once
 *    after the holder's release, by a word from the first member, and
 *    from the next one once the first is killed.
 *  - A split vote (each racer gets two servers, a stranger the fifth): the
 *    failed partial acquires delete what they set, so a racer gets the
 *    lock as soon as the vote can be won, and the other right after its
 *    release, both far inside a 30 s ttl that a left-over key would cost.
 * Runs on the poll() loop through quorum.itest. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rig.h"
#include "servers.h"

#define N 5       /* masters */
#define NLEASES 6 /* leases held through the kills */

static srv m[N];
static char addrs[256];

static void stop_all(void)
{
    for (int i = 0; i < N; i++) srv_kill(&m[i]);
}

/* Five independent masters (no replication, no cluster); 0, or -1. */
static int64_t started_at; /* mono_ms() once the last start_all() had them all up */

static int start_all(void)
{
    stop_all();
    static int formation; /* a folder of its own each time */
    formation++;
    size_t len = 0;
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "quorum%d-m%d", formation, i + 1);
        if (srv_start(&m[i], name, "--port", NULL)) return -1;
        len += (size_t)snprintf(addrs + len, sizeof addrs - len, "%s127.0.0.1:%d", i ? "," : "",
                                m[i].port);
    }
    started_at = mono_ms(); /* each started before this */
    return 0;
}

#define NEED_QUORUM() NEED_STARTED(start_all, "five redis-servers started")

static redlease_client_options quorum_opts(void)
{
    redlease_client_options co = copts_tcp(0);
    co.host = NULL;
    co.port = 0;
    co.quorum_addrs = addrs;
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    /* Every case starts its servers afresh: the restart guard would keep
     * them out for a TTL (test_quorum_restarted_members_not_counted). */
    co.quorum_restart_guard_ms = REDLEASE_RESTART_GUARD_OFF;
    return co;
}

/* Waits until the client has a connection to every one of the masters
 * (connected() says a majority: every member's EV_CONNECTED is counted). */
static void wait_members(redlease_client *c, const obs *o, int want)
{
    int64_t end = mono_ms() + 5000 * S;
    while ((!redlease_client_connected(c) || o->events[REDLEASE_EV_CONNECTED] < want) &&
           mono_ms() < end)
        testloop_run_once(5);
    CHECK(o->events[REDLEASE_EV_CONNECTED] >= want);
}

static redlease_client *quorum_client(obs *o)
{
    redlease_client_options co = quorum_opts();
    redlease_client *c = client_with(&co, o);
    wait_members(c, o, N);
    return c;
}

/* GET key on master k into buf ("" when none, or the master is gone). */
static const char *value_on(int k, const char *key, char *buf, size_t size)
{
    buf[0] = '\0';
    if (m[k].pid <= 0) return buf;
    return srv_str(&m[k], buf, size, "GET %s", key);
}

static long long int_on(int k, const char *cmd, const char *key)
{
    redisReply *r = m[k].pid > 0 ? srv_cmd(&m[k], cmd, key) : NULL;
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
    if (r) freeReplyObject(r);
    return v;
}

/* How many masters hold token at key (a mutex's, with its record after
 * it), or the kind at key (a semaphore's or shared holders'). */
static int holding(const char *key, const char *token)
{
    int n = 0;
    for (int k = 0; k < N; k++) {
        char v[512];
        value_on(k, key, v, sizeof v);
        n += strcmp(v, token) == 0 || is_value_of(v, token);
    }
    return n;
}

/* Master k's rank among the masters sorted by address (all on one host:
 * by port), which a quorum's fence names (src/quorum.h). */
static int rank_of(int k)
{
    int r = 0;
    for (int j = 0; j < N; j++) r += m[j].port < m[k].port;
    return r;
}

/* How many live masters have key at all. */
static int having(const char *key)
{
    int n = 0;
    for (int k = 0; k < N; k++) n += int_on(k, "EXISTS %s", key) == 1;
    return n;
}

/* Runs the loop until no live master has key (a release's deletes to the
 * members that answered after the majority are still on the wire when
 * on_release runs); the number left. */
static int wait_gone(const char *key, int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    int left;
    while ((left = having(key)) && mono_ms() < end) run_for(20, NULL);
    return left;
}

/* Runs the loop until want masters hold token at key (a lock's request
 * is answered once a majority said yes: the other parts may still be on
 * the wire); the number holding it then. */
static int wait_holding(const char *key, const char *token, int want, int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    int n;
    while ((n = holding(key, token)) < want && mono_ms() < end) run_for(10, NULL);
    return n;
}

static int ok_reply(redisReply *r)
{
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok;
}

/* ------------------------------------------------------- timing hooks */

/* A lease observed with the times that bound it, on a client of its own
 * (the client's events are the lease's).
 *
 * A loss's timing has two parts: the library's, a local deadline before
 * any key of the lease can expire and EV_LOST at the first turn of the
 * loop after it; and the loop's, how late that turn comes on a starved
 * machine. The cases check the first part only, each end measured to
 * within the reads that saw it: the deadline from
 * redlease_lock_remaining_ms() on the last turn it was held, the keys'
 * earliest expiry from a PTTL read once the fault is in place (renewals
 * only move it later). */
typedef struct tobs {
    obs o;                /* first: o_event's */
    int64_t t_attempt;    /* the first attempt went out (EV_ATTEMPT) */
    int64_t t_confirm;    /* the send time of the last confirmation (event time - rtt) */
    int64_t t_lost_ev;    /* EV_LOST */
    int64_t t_lost_cb;    /* on_lost */
    int64_t deadline_lo, deadline_hi; /* the local deadline, between the two */
    int missed_turns;     /* turns begun after the deadline that did not end the lease */
    int survivors[N];     /* the masters whose PTTL is read at EV_LOST */
    int64_t expiry_lo[N]; /* the earliest a survivor's key can expire */
    long long pttl_at_lost[N];
    int64_t t_pttl_read;  /* when the PTTLs at EV_LOST were answered */
} tobs;

/* Notes the lease's local deadline, while it is held. */
static void note_deadline(tobs *t)
{
    int64_t before = mono_ms(), left = redlease_lock_remaining_ms(t->o.lk), after = mono_ms();
    if (left > 0) t->deadline_lo = before + left, t->deadline_hi = after + left;
}

/* Reads the earliest each survivor's key can expire (PTTL's send + PTTL). */
static void note_expiry(tobs *t, const char *key)
{
    for (int k = 0; k < N; k++) {
        if (!t->survivors[k]) continue;
        int64_t sent = mono_ms();
        long long left = int_on(k, "PTTL %s", key);
        CHECK(left > 0);
        t->expiry_lo[k] = sent + left;
    }
}

/* The library's part of a loss (above): a deadline no later than base
 * (the send that set it) + ttl - drift, EV_LOST not before it and at the
 * first turn begun after it, the survivors' keys alive at EV_LOST when
 * their PTTL was read before they could expire. */
static void check_loss_timing(const tobs *t, int64_t base, int64_t ttl, int64_t drift)
{
    printf("# deadline %lld ms after the base (ttl %lld - drift %lld = %lld); EV_LOST %lld ms "
           "after the deadline, on_lost %lld; %d turns missed\n",
           (long long)(t->deadline_hi - base), (long long)ttl, (long long)drift, (long long)(ttl - drift),
           (long long)(t->t_lost_ev - t->deadline_hi), (long long)(t->t_lost_cb - t->deadline_hi),
           t->missed_turns);
    CHECK(t->deadline_lo > 0);
    CHECK(t->deadline_lo <= base + ttl - drift + 1);
    CHECK(t->t_lost_ev > 0 && t->t_lost_ev >= t->deadline_lo - 1);
    CHECK(t->t_lost_cb >= t->t_lost_ev);
    CHECK_EQ(t->missed_turns, 0);
    for (int k = 0; k < N; k++)
        if (t->survivors[k] && t->t_pttl_read < t->expiry_lo[k]) CHECK(t->pttl_at_lost[k] > 0);
}

static void t_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    tobs *t = arg;
    o_event(c, ev, &t->o);
    int64_t now = mono_ms();
    switch (ev->type) {
    case REDLEASE_EV_ATTEMPT:
        if (!t->t_attempt) t->t_attempt = now;
        break;
    case REDLEASE_EV_ACQUIRED:
    case REDLEASE_EV_RENEWED:
        t->t_confirm = now - ev->rtt_ms;
        break;
    case REDLEASE_EV_LOST:
        /* the moment the lease is given up, before the lock sends its drop:
         * what the servers still hold */
        t->t_lost_ev = now;
        for (int k = 0; k < N; k++)
            t->pttl_at_lost[k] = t->survivors[k] ? int_on(k, "PTTL %s", ev->key) : -99;
        t->t_pttl_read = mono_ms();
        break;
    }
}

static void t_lost(redlease_lock *lk, int reason, void *arg)
{
    tobs *t = arg;
    t->t_lost_cb = mono_ms();
    o_lost(lk, reason, &t->o);
}

static redlease_client *timed_client(tobs *t)
{
    redlease_client_options co = quorum_opts();
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    redlease_client_set_event_cb(c, t_event, t);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    wait_members(c, &t->o, N);
    return c;
}

static void timed_hold(redlease_client *c, tobs *t, const char *res, redlease_lock_options lo)
{
    CHECK_EQ(redlease_acquire(c, res, &lo, o_acq, t_lost, t, &t->o.lk), REDLEASE_OK);
    run_until(&t->o.acq, 3000, NULL);
    CHECK_EQ(t->o.acq_st, REDLEASE_OK);
}

/* Runs the loop until on_lost; meanwhile held() may only say 1 while a key
 * of the lease must still be alive on every master that confirmed it: before
 * the last confirmation's send + ttl. The first time held() read 0 goes
 * to *t_unheld. Notes the deadline each turn, and counts the turns begun
 * after it (2 ms for the timer's whole milliseconds) without EV_LOST. */
static void run_until_lost(tobs *t, int64_t ttl, int64_t ms, int64_t *t_unheld)
{
    int64_t end = mono_ms() + ms * S;
    int late_held = 0;
    *t_unheld = 0;
    note_deadline(t);
    while (!t->o.lost && mono_ms() < end) {
        int64_t began = mono_ms();
        testloop_run_once(5);
        if (!t->t_lost_ev && t->deadline_hi && began > t->deadline_hi + 2) t->missed_turns++;
        if (t->o.lost) break;
        note_deadline(t);
        int64_t now = mono_ms();
        if (redlease_lock_held(t->o.lk)) {
            late_held += now >= t->t_confirm + ttl;
        } else if (!*t_unheld) {
            *t_unheld = now;
        }
    }
    CHECK_EQ(late_held, 0);
}

/* -------------------------------------------------------------- cases */

static void test_quorum_options_checked(void)
{
    NEED_QUORUM();
    redlease_client *c = NULL;
    redlease_client_options co = quorum_opts();
    co.sentinel_addrs = "127.0.0.1:26379";
    co.sentinel_master_name = "m";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co = quorum_opts();
    co.cluster_addrs = "127.0.0.1:7000";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co = quorum_opts();
    co.unix_path = "/tmp/x.sock";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    /* one server is no quorum; the same server twice would count twice;
     * more than REDLEASE_MAX_QUORUM */
    const char *bad[] = {"", "127.0.0.1:7000", "127.0.0.1:7000,127.0.0.1:7000",
                         "127.0.0.1:7000,127.0.0.1:7001,", "h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        co = quorum_opts();
        co.quorum_addrs = bad[i];
        CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    }
    CHECK(c == NULL);
    /* whose replicas would acknowledge? */
    obs o = {0};
    c = quorum_client(&o);
    redlease_lock_options lo = lopts(1000, 0, 0);
    lo.replica_acks = 1;
    redlease_lock *lk = NULL;
    CHECK_EQ(redlease_acquire(c, "q-opt", &lo, o_acq, o_lost, &o, &lk), REDLEASE_EINVAL);
    lo = lopts(1000, 0, 0);
    lo.replica_fsync = 1;
    CHECK_EQ(redlease_acquire(c, "q-opt", &lo, o_acq, o_lost, &o, &lk), REDLEASE_EINVAL);
    CHECK(lk == NULL);
    finish(c, &o);
}

static void test_quorum_one_token_everywhere(void)
{
    NEED_QUORUM();
    enum { LEASES = 4 };
    obs co = {0}, o[LEASES], oc = {0}, b = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = quorum_client(&co);
    char v[512], key[128];
    for (int i = 0; i < LEASES; i++) {
        char res[32];
        snprintf(res, sizeof res, "q-res-%d", i);
        hold_real(c, &o[i], res, lopts(3000, 3000, i % 2));
        const char *k = redlease_lock_key(o[i].lk), *tok = redlease_lock_token(o[i].lk);
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
        /* the same token on every master, with the lease's TTL */
        CHECK_EQ(wait_holding(k, tok, N, 1000), N);
        for (int s = 0; s < N; s++) {
            CHECK(is_value_of(value_on(s, k, v, sizeof v), tok));
            long long pttl = int_on(s, "PTTL %s", k);
            CHECK(pttl > 0 && pttl <= 3000 * S);
        }
        if (i % 2) {
            /* the fence's counter (fence / 16) is the largest one of a
             * majority's answers: at least three counters are at most
             * it, one equals it; the rest names a member that has it */
            uint64_t fence = redlease_lock_fence(o[i].lk), counter = fence / 16;
            size_t len;
            CHECK_EQ(redlease_key("lock:", res, strlen(res), REDLEASE_KEY_FENCE, key, sizeof key, &len),
                     REDLEASE_OK);
            int below = 0, equal = 0;
            for (int s = 0; s < N; s++) {
                unsigned long long f = strtoull(value_on(s, key, v, sizeof v), NULL, 10);
                below += f > 0 && f <= counter;
                equal += f == counter;
                if (rank_of(s) == (int)(fence % 16)) CHECK_EQ(f, counter);
            }
            printf("# fence %llu: counter %llu, %d counters at most it, %d equal\n",
                   (unsigned long long)fence, (unsigned long long)counter, below, equal);
            CHECK(fence > 0 && fence % 16 < N && below >= 3 && equal >= 1);
        }
    }
    /* another client is refused while they are held (a majority says busy) */
    redlease_client *c2 = quorum_client(&oc);
    acquire(c2, &b, "q-res-0", lopts(3000, 0, 0));
    run_until(&b.acq, 3000, b.lk);
    CHECK_EQ(b.acq_st, REDLEASE_EBUSY);
    release(&b, NULL);
    /* renewals (every 1000 ms) reach all five: after 2.5 renewal
     * intervals every key still has more than an interval left, where one
     * never renewed would have 500 ms */
    run_for(2500, NULL);
    for (int i = 0; i < LEASES; i++) {
        CHECK_EQ(o[i].lost, 0);
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
        for (int s = 0; s < N; s++) {
            long long pttl = int_on(s, "PTTL %s", redlease_lock_key(o[i].lk));
            if (pttl <= 1000 * S) printf("# lease %d on master %d: PTTL %lld\n", i, s, pttl);
            CHECK(pttl > 1000 * S);
        }
    }
    /* a release deletes on every master */
    for (int i = 0; i < LEASES; i++) {
        snprintf(key, sizeof key, "%s", redlease_lock_key(o[i].lk));
        release(&o[i], NULL);
        CHECK_EQ(o[i].rel_st, REDLEASE_OK);
        CHECK_EQ(wait_gone(key, 2000), 0);
    }
    redlease_client_free(c2);
    CHECK_EQ(oc.password_seen, 0);
    finish(c, &co);
}

/* The fence of a holder whose majority misses the member with the largest
 * counter is still above the previous holder's: every member's counter was
 * raised to that fence. Counters primed apart (as they start: each from
 * its own clock at first use); the first holder's majority is members 2-4
 * (0 and 1 paused), its fence member 4's; the next majority is without
 * member 4. */
static void pause_master(int k, int64_t ms);

static void test_quorum_fences_increase_across_holders(void)
{
    NEED_QUORUM();
    obs co = {0}, a = {0}, b = {0};
    redlease_client *c = quorum_client(&co);
    char fkey[128];
    size_t len;
    CHECK_EQ(redlease_key("lock:", "q-fence", 7, REDLEASE_KEY_FENCE, fkey, sizeof fkey, &len), REDLEASE_OK);
    for (int s = 0; s < N; s++) {
        redisReply *r = srv_cmd(&m[s], "SET %s %s", fkey, s == 4 ? "5000" : "1000");
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r) freeReplyObject(r);
    }
    pause_master(0, 1000);
    pause_master(1, 1000);
    hold_real(c, &a, "q-fence", lopts(3000, 3000, 1));
    uint64_t fa = redlease_lock_fence(a.lk);
    CHECK_EQ(fa, 5001 * 16 + (uint64_t)rank_of(4)); /* member 4's counter, and member 4 */
    release(&a, NULL);
    CHECK_EQ(a.rel_st, REDLEASE_OK);
    char v[64];
    int raised = 0; /* the raise runs before the release on each link; the last may be on its way */
    for (int64_t end = mono_ms() + 2000 * S; raised < N && mono_ms() < end; testloop_run_once(5)) {
        raised = 0;
        for (int s = 0; s < N; s++) raised += strcmp(value_on(s, fkey, v, sizeof v), "5001") == 0;
    }
    CHECK_EQ(raised, N);
    srv_kill(&m[4]);
    hold_real(c, &b, "q-fence", lopts(3000, 3000, 1));
    uint64_t fb = redlease_lock_fence(b.lk);
    printf("# fences: %llu, then %llu without the member that gave the first\n",
           (unsigned long long)fa, (unsigned long long)fb);
    CHECK(fb > fa); /* 1002 without the raise */
    release(&b, NULL);
    finish(c, &co);
}

/* Runs the loop for ms; every lease of o must read held at every turn. */
static void run_all_held(const obs *o, int n, int64_t ms)
{
    int64_t end = mono_ms() + ms * S;
    int unheld = 0, lost = 0;
    while (mono_ms() < end) {
        testloop_run_once(5);
        for (int i = 0; i < n; i++) {
            lost += o[i].lost;
            unheld += !redlease_lock_held(o[i].lk);
        }
    }
    CHECK_EQ(lost, 0);
    CHECK_EQ(unheld, 0);
}

/* An acquire of res by client c (not yet held anywhere) succeeds on the
 * masters still alive: the token on all of them. */
static void acquire_on_survivors(redlease_client *c, const char *res, int alive)
{
    obs o = {0};
    hold_real(c, &o, res, lopts(3000, 3000, 0));
    CHECK_EQ(redlease_lock_held(o.lk), 1);
    /* the acquire answers at a majority: the last parts may still be landing */
    CHECK_EQ(wait_holding(redlease_lock_key(o.lk), redlease_lock_token(o.lk), alive, 1000), alive);
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
}

static void test_quorum_survives_two_killed(void)
{
    NEED_QUORUM();
    obs co = {0}, o[NLEASES], oc = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = quorum_client(&co);
    redlease_client *c2 = quorum_client(&oc);
    for (int i = 0; i < NLEASES; i++) {
        char res[32];
        snprintf(res, sizeof res, "q-kill-%d", i);
        hold_real(c, &o[i], res, lopts(3000, 3000, i % 2)); /* renewed every 1000 ms */
    }
    redlease_stats st0, st1, st2;
    redlease_client_stats(c, &st0);
    /* one master gone, then a second: three renewal intervals each */
    srv_kill(&m[4]);
    run_all_held(o, NLEASES, 3500);
    redlease_client_stats(c, &st1);
    acquire_on_survivors(c2, "q-after-one", 4);
    srv_kill(&m[3]);
    run_all_held(o, NLEASES, 3500);
    redlease_client_stats(c, &st2);
    acquire_on_survivors(c2, "q-after-two", 3);
    printf("# renewals confirmed with one master down: %llu, with two: %llu (%d leases)\n",
           (unsigned long long)(st1.renewed - st0.renewed),
           (unsigned long long)(st2.renewed - st1.renewed), NLEASES);
    /* held because they were renewed on the three or four left (the ttl
     * is shorter than each window), not because nothing expired */
    CHECK(st1.renewed - st0.renewed >= 2 * NLEASES);
    CHECK(st2.renewed - st1.renewed >= 2 * NLEASES);
    CHECK_EQ(st2.lost, 0);
    for (int i = 0; i < NLEASES; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s", redlease_lock_key(o[i].lk));
        CHECK_EQ(holding(key, redlease_lock_token(o[i].lk)), 3);
        release(&o[i], NULL);
        CHECK_EQ(o[i].rel_st, REDLEASE_OK);
        CHECK_EQ(wait_gone(key, 2000), 0);
    }
    redlease_client_free(c2);
    finish(c, &co);
}

static void test_quorum_majority_killed_lost_in_time(void)
{
    NEED_QUORUM();
    tobs t;
    memset(&t, 0, sizeof t);
    t.survivors[0] = t.survivors[1] = 1;
    redlease_client *c = timed_client(&t);
    /* The survivors are not renewed either (too few members for the
     * quorum to send anything), so their keys end at the acquire's arrival
     * + ttl: on_lost has the drift (ttl / 100 + 2) to spare, 62 ms here. */
    int64_t ttl = 6000 * S, drift = ttl / 100 + 2; /* renewed every 2000 ms */
    timed_hold(c, &t, "q-majority", lopts(6000, 3000, 0));
    char key[128];
    snprintf(key, sizeof key, "%s", redlease_lock_key(t.o.lk));
    CHECK_EQ(wait_holding(key, redlease_lock_token(t.o.lk), N, 1000), N);
    /* three of five gone before the first renewal: no renewal can be
     * confirmed again, and the validity counted from the acquire ends */
    note_deadline(&t);
    for (int k = 2; k < N; k++) srv_kill(&m[k]);
    int64_t t_killed = mono_ms(), t_unheld;
    note_expiry(&t, key);
    run_until_lost(&t, ttl, 2 * ttl / S, &t_unheld);
    printf("# majority killed %lld ms after the first send; held() 0 after %lld ms more; "
           "EV_LOST at +%lld, on_lost at +%lld (ttl %lld, drift %lld); PTTL on the survivors "
           "then: %lld %lld\n",
           (long long)(t_killed - t.t_attempt), (long long)(t_unheld - t_killed),
           (long long)(t.t_lost_ev - t.t_attempt), (long long)(t.t_lost_cb - t.t_attempt),
           (long long)ttl, (long long)drift, t.pttl_at_lost[0], t.pttl_at_lost[1]);
    CHECK_EQ(t.o.lost, 1);
    CHECK_EQ(t.o.lost_reason, REDLEASE_LOST_EXPIRED);
    /* not safe to act from the moment a majority is out of reach, well
     * before the deadline */
    CHECK(t_unheld > 0 && t_unheld < t.t_lost_ev);
    /* given up at a deadline before the first send + ttl, before any key
     * of it could expire; and not before it (first send + ttl - drift:
     * the survivors kept it valid that long) */
    check_loss_timing(&t, t.t_attempt, ttl, drift);
    CHECK(t.deadline_hi >= t.t_attempt + ttl - drift - 2);
    CHECK_EQ(redlease_lock_held(t.o.lk), 0);
    release(&t.o, NULL);
    CHECK_EQ(t.o.rel_st, REDLEASE_ENOTHELD);
    finish(c, &t.o);
}

/* CLIENT PAUSE ms ALL on master k: it takes connections and reads, and
 * runs nothing (nor expires keys) until the pause is over. */
static void pause_master(int k, int64_t ms)
{
    CHECK(ok_reply(srv_cmd(&m[k], "CLIENT PAUSE %lld ALL", (long long)ms)));
}

static void test_quorum_paused_masters(void)
{
    NEED_QUORUM();
    tobs t;
    memset(&t, 0, sizeof t);
    t.survivors[0] = t.survivors[1] = 1;
    redlease_client *c = timed_client(&t);
    int64_t ttl = 3000 * S, drift = ttl / 100 + 2; /* renewed every 1000 ms */
    timed_hold(c, &t, "q-pause", lopts(3000, 3000, 0));
    char key[128];
    snprintf(key, sizeof key, "%s", redlease_lock_key(t.o.lk));
    /* two paused for longer than the ttl: the three others keep it */
    redlease_stats st0, st1;
    redlease_client_stats(c, &st0);
    int drops0 = t.o.events[REDLEASE_EV_DISCONNECTED];
    int64_t pause = 4000 * S, t_pause = mono_ms(), longest = 0, since = 0;
    pause_master(3, pause);
    pause_master(4, pause);
    int64_t end = t_pause + pause + 1500 * S;
    while (mono_ms() < end && !t.o.lost) {
        testloop_run_once(5);
        int64_t now = mono_ms();
        if (redlease_lock_held(t.o.lk)) {
            since = 0;
        } else {
            /* a paused member that connects again makes the lease
             * renew at once, held() 0 until then: a short moment */
            if (!since) since = now;
            if (now - since > longest) longest = now - since;
        }
        if (now < t_pause + pause) redlease_client_stats(c, &st1);
    }
    /* the keys on the paused two expired meanwhile (a pause delays the
     * deletion, not the deadline), so their renewals after it say "not
     * ours": the lease goes on with the three */
    printf("# two masters paused %lld ms: %llu renewals confirmed meanwhile; %d links dropped; "
           "longest held() 0: %lld ms; token on %d masters after\n",
           (long long)pause, (unsigned long long)(st1.renewed - st0.renewed),
           t.o.events[REDLEASE_EV_DISCONNECTED] - drops0, (long long)longest,
           holding(key, redlease_lock_token(t.o.lk)));
    CHECK_EQ(t.o.lost, 0);
    CHECK_EQ(redlease_lock_held(t.o.lk), 1);
    CHECK(st1.renewed - st0.renewed >= 3);
    CHECK(longest < 1000 * S);
    CHECK(holding(key, redlease_lock_token(t.o.lk)) >= 3);
    /* three paused for twice the ttl: lost before a key could expire */
    int64_t t_unheld;
    note_deadline(&t);
    t_pause = mono_ms();
    for (int k = 2; k < N; k++) pause_master(k, 2 * ttl);
    note_expiry(&t, key);
    run_until_lost(&t, ttl, 2 * ttl / S, &t_unheld);
    printf("# three masters paused: last confirmation sent %lld ms before the pause; EV_LOST "
           "%lld ms after it, on_lost %lld ms after it (ttl %lld, drift %lld); PTTL on the "
           "others then: %lld %lld\n",
           (long long)(t_pause - t.t_confirm), (long long)(t.t_lost_ev - t.t_confirm),
           (long long)(t.t_lost_cb - t.t_confirm), (long long)ttl, (long long)drift,
           t.pttl_at_lost[0], t.pttl_at_lost[1]);
    CHECK_EQ(t.o.lost, 1);
    CHECK_EQ(t.o.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK(t.t_confirm <= t_pause); /* nothing was confirmed by the paused three */
    check_loss_timing(&t, t.t_confirm, ttl, drift);
    release(&t.o, NULL);
    CHECK_EQ(t.o.rel_st, REDLEASE_ENOTHELD);
    finish(c, &t.o);
}

/* A master stopped (SIGSTOP: its socket stays open and takes our bytes,
 * nothing answers, as a host gone without a reset). The lease goes on with
 * the four others; the stall rule (src/conn.c: a link silent for twice the
 * command timeout after a command is taken for dead and dropped) must
 * apply to that member's link too, else its requests pile up unanswered
 * for as long as it stays silent and it is never reconnected. */
static void test_quorum_silent_member_dropped(void)
{
    NEED_QUORUM();
    tobs t;
    memset(&t, 0, sizeof t);
    redlease_client *c = timed_client(&t);
    timed_hold(c, &t, "q-silent", lopts(1500, 3000, 0)); /* renewed every 500 ms */
    int drops0 = t.o.events[REDLEASE_EV_DISCONNECTED], connects0 = t.o.events[REDLEASE_EV_CONNECTED];
    CHECK_EQ(kill(m[4].pid, SIGSTOP), 0);
    int64_t t_stop = mono_ms(), window = 5000 * S; /* 5 command timeouts */
    int64_t t_drop = 0, end = t_stop + window;
    int unheld = 0;
    while (mono_ms() < end && !t.o.lost) {
        testloop_run_once(5);
        unheld += !redlease_lock_held(t.o.lk);
        if (!t_drop && t.o.events[REDLEASE_EV_DISCONNECTED] > drops0) t_drop = mono_ms();
    }
    kill(m[4].pid, SIGCONT);
    printf("# master stopped %lld ms: its link dropped %s%lld ms after the stop (command "
           "timeout %lld); lost %d; iterations unheld %d\n",
           (long long)window, t_drop ? "" : "never; ", (long long)(t_drop ? t_drop - t_stop : 0),
           (long long)(1000 * S), t.o.lost, unheld);
    CHECK_EQ(t.o.lost, 0);
    CHECK_EQ(unheld, 0);
    /* dropped after twice the command timeout from a command's send (and
     * the lock's own check), well inside the window */
    CHECK(t_drop > 0);
    /* once it answers again the link is made anew and the lease renewed */
    end = mono_ms() + 3000 * S;
    while (mono_ms() < end && t.o.events[REDLEASE_EV_CONNECTED] == connects0) testloop_run_once(5);
    for (end = mono_ms() + 2000 * S; !redlease_lock_held(t.o.lk) && mono_ms() < end;) testloop_run_once(5);
    CHECK_EQ(t.o.lost, 0);
    CHECK_EQ(redlease_lock_held(t.o.lk), 1);
    release(&t.o, NULL);
    CHECK_EQ(t.o.rel_st, REDLEASE_OK);
    finish(c, &t.o);
}

/* ---------------------------------------------------------- racing */

#define RACERS 3
#define ROUNDS 4

typedef struct racer {
    obs o;
    struct racer *all; /* RACERS of them */
    redlease_client *c;
    redlease_lock *lk; /* NULL between a release and the next acquire */
    int rounds, ok, failed, doubles;
    int64_t t_req, t_got, max_wait;
} racer;

static int64_t race_ttl;

static void r_start(racer *r);

/* At most one racer may read held, and the holder's token must be on a
 * majority of the masters. */
static void r_acq(redlease_lock *lk, int st, void *arg)
{
    racer *r = arg;
    if (st != REDLEASE_OK) {
        printf("# racer %d: %s\n", (int)(r - r->all), redlease_strerror(st));
        r->failed++;
        return;
    }
    r->ok++;
    r->t_got = mono_ms();
    if (r->t_got - r->t_req > r->max_wait) r->max_wait = r->t_got - r->t_req;
    for (int i = 0; i < RACERS; i++)
        if (&r->all[i] != r && r->all[i].lk && redlease_lock_held(r->all[i].lk)) r->doubles++;
    CHECK(holding(redlease_lock_key(lk), redlease_lock_token(lk)) >= 3);
}

static void r_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk;
    racer *r = arg;
    printf("# racer %d lost its lease: %s\n", (int)(r - r->all), redlease_lost_reason_str(reason));
    r->o.lost++;
}

static void r_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk;
    racer *r = arg;
    CHECK_EQ(st, REDLEASE_OK);
    r->lk = NULL;
    if (++r->rounds < ROUNDS) r_start(r);
}

static void r_start(racer *r)
{
    redlease_lock_options lo = lopts(30000, 20000, 0);
    race_ttl = lo.ttl_ms;
    r->t_req = mono_ms();
    r->t_got = 0;
    CHECK_EQ(redlease_acquire(r->c, "q-race", &lo, r_acq, r_lost, r, &r->lk), REDLEASE_OK);
}

static void test_quorum_racing_clients(void)
{
    NEED_QUORUM();
    racer r[RACERS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < RACERS; i++) {
        r[i].all = r;
        r[i].c = quorum_client(&r[i].o);
    }
    for (int i = 0; i < RACERS; i++) r_start(&r[i]);
    int64_t end = mono_ms() + 60000 * S;
    int done = 0, doubles = 0;
    while (!done && mono_ms() < end) {
        testloop_run_once(5);
        int held = 0;
        done = 1;
        for (int i = 0; i < RACERS; i++) {
            held += r[i].lk && redlease_lock_held(r[i].lk);
            done = done && r[i].rounds == ROUNDS;
            /* each holds for 30 ms, then lets the next one have it */
            if (r[i].lk && r[i].t_got && mono_ms() - r[i].t_got >= 30 * S) {
                r[i].t_got = 0;
                CHECK_EQ(redlease_release(r[i].lk, r_rel, &r[i]), REDLEASE_OK);
            }
        }
        doubles += held > 1;
    }
    int64_t max_wait = 0;
    for (int i = 0; i < RACERS; i++) {
        printf("# racer %d: %d acquired, %d failed, longest wait %lld ms, %d attempts, %d "
               "contended\n",
               i, r[i].ok, r[i].failed, (long long)r[i].max_wait, r[i].o.events[REDLEASE_EV_ATTEMPT],
               r[i].o.events[REDLEASE_EV_CONTENDED]);
        CHECK_EQ(r[i].ok, ROUNDS);
        CHECK_EQ(r[i].failed, 0);
        CHECK_EQ(r[i].o.lost, 0);
        CHECK_EQ(r[i].doubles, 0);
        if (r[i].max_wait > max_wait) max_wait = r[i].max_wait;
    }
    CHECK(done);
    CHECK_EQ(doubles, 0);
    /* each turn came from a release, never from a key left to expire */
    CHECK(max_wait < race_ttl / 3);
    CHECK_EQ(having("lock:{q-race}"), 0);
    for (int i = 0; i < RACERS - 1; i++) redlease_client_free(r[i].c);
    finish(r[RACERS - 1].c, &r[RACERS - 1].o); /* the loop must hold nothing of any */
}

/* ------------------------------------------------------- lease kinds */

/* lopts for a semaphore of limit permits (weight 1) or a shared holder
 * (limit 0), fenced. */
static redlease_lock_options kind_lopts(int limit, int64_t ttl, int64_t wait)
{
    redlease_lock_options lo = lopts(ttl, wait, 1);
    lo.limit = limit;
    lo.shared = !limit;
    return lo;
}

/* How many live masters admit token among key's holders. */
static int admitting(const char *key, const char *token)
{
    char holders[160];
    snprintf(holders, sizeof holders, "%s:holders", key);
    int n = 0;
    for (int k = 0; k < N; k++) {
        redisReply *r = m[k].pid > 0 ? srv_cmd(&m[k], "ZSCORE %s %s", holders, token) : NULL;
        n += r && r->type == REDIS_REPLY_STRING;
        if (r) freeReplyObject(r);
    }
    return n;
}

/* A semaphore of 3 over five masters: each admits 2 (design 12.3), so two
 * hold and a third is busy; the two stay held, renewed on the three
 * masters left, through two kills; a release lets a waiter in, its fence
 * above both. */
static void test_quorum_semaphore(void)
{
    NEED_QUORUM();
    obs co = {0}, o[3], busy = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = quorum_client(&co);
    CHECK_EQ(redlease_semaphore_capacity(3, N), 2);
    hold_real(c, &o[0], "q-sem", kind_lopts(3, 3000, 0));
    hold_real(c, &o[1], "q-sem", kind_lopts(3, 3000, 0));
    char key[128], weights[160];
    snprintf(key, sizeof key, "%s", redlease_lock_key(o[0].lk));
    snprintf(weights, sizeof weights, "%s:weights", key);
    CHECK_EQ(wait_holding(key, "semaphore 3", N, 1000), N); /* the kind is the limit's */
    for (int i = 0; i < 2; i++) {
        int64_t end = mono_ms() + 1000 * S;
        while (admitting(key, redlease_lock_token(o[i].lk)) < N && mono_ms() < end) run_for(10, NULL);
        CHECK_EQ(admitting(key, redlease_lock_token(o[i].lk)), N);
    }
    acquire(c, &busy, "q-sem", kind_lopts(3, 3000, 0)); /* one attempt */
    run_until(&busy.acq, 3000, NULL);
    CHECK_EQ(busy.acq_st, REDLEASE_EBUSY);
    release(&busy, NULL);
    for (int k = 0; k < N; k++) {
        char used[32];
        CHECK_STR(srv_str(&m[k], used, sizeof used, "HGET %s used", weights), "2");
    }
    srv_kill(&m[4]);
    srv_kill(&m[3]);
    run_all_held(o, 2, 3500); /* three renewal intervals */
    acquire(c, &o[2], "q-sem", kind_lopts(3, 3000, 10000)); /* polls */
    run_for(300, NULL);
    CHECK_EQ(o[2].acq, 0);
    uint64_t f0 = redlease_lock_fence(o[0].lk), f1 = redlease_lock_fence(o[1].lk);
    release(&o[0], NULL);
    CHECK_EQ(o[0].rel_st, REDLEASE_OK);
    run_until(&o[2].acq, 3000, NULL);
    CHECK_EQ(o[2].acq_st, REDLEASE_OK);
    CHECK(f1 > f0);
    CHECK(redlease_lock_fence(o[2].lk) > f1);
    CHECK_EQ(admitting(key, redlease_lock_token(o[2].lk)), 3);
    release(&o[1], NULL);
    release(&o[2], NULL);
    CHECK_EQ(wait_gone(key, 2000), 0);
    finish(c, &co);
}

/* Shared holders over five masters: two hold together; an exclusive
 * acquire is busy, one that waits holds once both left, and a shared
 * acquire then waits (polls) until it leaves; never an exclusive holder
 * beside a shared one. */
static void test_quorum_shared_and_exclusive(void)
{
    NEED_QUORUM();
    obs co = {0}, s[3], x[2];
    memset(s, 0, sizeof s);
    memset(x, 0, sizeof x);
    redlease_client *c = quorum_client(&co);
    hold_real(c, &s[0], "q-rw", kind_lopts(0, 3000, 0));
    hold_real(c, &s[1], "q-rw", kind_lopts(0, 3000, 0));
    char key[128];
    snprintf(key, sizeof key, "%s", redlease_lock_key(s[0].lk));
    CHECK_EQ(wait_holding(key, "shared", N, 1000), N);
    acquire(c, &x[0], "q-rw", lopts(3000, 0, 1));
    run_until(&x[0].acq, 3000, NULL);
    CHECK_EQ(x[0].acq_st, REDLEASE_EBUSY);
    release(&x[0], NULL);
    acquire(c, &x[1], "q-rw", lopts(3000, 10000, 1)); /* waits (woken, under a quorum) */
    int overlaps = 0;
    int64_t end = mono_ms() + 300 * S;
    while (mono_ms() < end) {
        testloop_run_once(5);
        overlaps += x[1].acq && redlease_lock_held(x[1].lk);
    }
    CHECK_EQ(x[1].acq, 0);
    uint64_t fs = redlease_lock_fence(s[1].lk);
    release(&s[0], NULL);
    release(&s[1], NULL);
    run_until(&x[1].acq, 5000, NULL);
    CHECK_EQ(x[1].acq_st, REDLEASE_OK);
    CHECK(redlease_lock_fence(x[1].lk) > fs);
    acquire(c, &s[2], "q-rw", kind_lopts(0, 3000, 10000));
    end = mono_ms() + 300 * S;
    while (mono_ms() < end) {
        testloop_run_once(5);
        overlaps += s[2].acq && s[2].acq_st == REDLEASE_OK;
    }
    CHECK_EQ(s[2].acq, 0);
    uint64_t fx = redlease_lock_fence(x[1].lk);
    release(&x[1], NULL);
    run_until(&s[2].acq, 5000, NULL);
    CHECK_EQ(s[2].acq_st, REDLEASE_OK);
    CHECK(redlease_lock_fence(s[2].lk) > fx);
    CHECK_EQ(overlaps, 0);
    release(&s[2], NULL);
    CHECK_EQ(wait_gone(key, 2000), 0);
    finish(c, &co);
}

/* Under a quorum the members' queues hold no one order: the last shared
 * holder's release must not hand the free resource to each member's own
 * head (five different exclusive waiters here, one per member), which
 * would leave every member holding a different token for a claim and no
 * one a majority; it tells each head to check, and the resource is free. */
static void test_quorum_shared_release_hands_nothing(void)
{
    NEED_QUORUM();
    obs co = {0}, s = {0}, x = {0};
    redlease_client *c = quorum_client(&co);
    hold_real(c, &s, "q-give", kind_lopts(0, 3000, 0));
    for (int k = 0; k < N; k++) { /* member k's head: a stranger of its own */
        redisReply *t = srv_cmd(&m[k], "TIME");
        long long ms = t && t->type == REDIS_REPLY_ARRAY ? atoll(t->element[0]->str) * 1000 : 0;
        if (t) freeReplyObject(t);
        char tk[40], entry[64];
        snprintf(tk, sizeof tk, "%032x", 0xabc00 + k);
        snprintf(entry, sizeof entry, "%lld 5000 stranger-%d", ms + 20000, k);
        redisReply *r = srv_cmd(&m[k], "ZADD lock:{q-give}:queue 1 %s", tk);
        if (r) freeReplyObject(r);
        r = srv_cmd(&m[k], "HSET lock:{q-give}:waiters %s %s", tk, entry);
        CHECK(r && r->type == REDIS_REPLY_INTEGER);
        if (r) freeReplyObject(r);
    }
    release(&s, NULL);
    CHECK_EQ(s.rel_st, REDLEASE_OK);
    /* gone from every member (the last ones' releases may still be on
     * their way): none handed it to its head, which holds it 5 s */
    CHECK_EQ(wait_gone("lock:{q-give}", 2000), 0);
    hold_real(c, &x, "q-give", lopts(3000, 0, 0)); /* free: a plain SET NX on each */
    release(&x, NULL);
    for (int k = 0; k < N; k++) {
        redisReply *r = srv_cmd(&m[k], "DEL lock:{q-give}:queue lock:{q-give}:waiters");
        if (r) freeReplyObject(r);
    }
    finish(c, &co);
}

/* ------------------------------------------------------------ wake-ups */

/* A waiter (default mode: woken, in no order, under a quorum) joins the
 * queue on every member and listens on the first; the holder's release
 * tells it to check there, so it holds the lock at once, though its own
 * timers are seconds away (the holder's TTL, a backoff of 5 s). With the
 * first member killed, the channel moves to the next one and words come
 * from there. */
static void test_quorum_waiter_is_woken_by_the_release(void)
{
    NEED_QUORUM();
    obs o[2] = {{0}};
    redlease_client *c[2] = {quorum_client(&o[0]), quorum_client(&o[1])};
    int channels = 0; /* the waiter's channel events before this round */
    for (int round = 0; round < 2; round++) {
        redlease_lock_options lo = lopts(10000, 0, 0);
        for (int i = 0; i < 2; i++) o[i].acq = o[i].rel = o[i].lost = 0;
        acquire(c[0], &o[0], "q-wake", lo);
        run_until(&o[0].acq, 2000, NULL);
        CHECK_EQ(o[0].acq_st, REDLEASE_OK);
        lo.wait_ms = 8000 * S;
        lo.wait_retry_base_ms = lo.wait_retry_max_ms = 5000 * S; /* polling would be seen */
        acquire(c[1], &o[1], "q-wake", lo);
        /* busy once, the channel opens (on the next member once its own
         * is killed), and the waiter checks again, joining: awaited, not
         * slept on (under valgrind the move took seconds) */
        int64_t end = mono_ms() + 10000 * S;
        while (!(o[1].events[REDLEASE_EV_CHANNEL] > channels && o[1].last_status[REDLEASE_EV_CHANNEL] == 0) &&
               mono_ms() < end)
            testloop_run_once(5);
        CHECK(o[1].events[REDLEASE_EV_CHANNEL] > channels);
        int contended = o[1].events[REDLEASE_EV_CONTENDED];
        while (o[1].events[REDLEASE_EV_CONTENDED] == contended && mono_ms() < end) testloop_run_once(5);
        run_for(100, NULL);
        CHECK_EQ(o[1].acq, 0);
        contended = o[1].events[REDLEASE_EV_CONTENDED];
        int64_t t0 = mono_ms();
        release(&o[0], NULL);
        run_until(&o[1].acq, 8000, NULL);
        int64_t took = mono_ms() - t0;
        /* Woken, its check can meet the release still under way on some
         * member (a split vote, on a loaded machine): that check is then
         * made again after one backoff, as a poller's (design 11.5). Not
         * woken, it would check at its holder's TTL's end: 10 s. */
        int64_t split = o[1].events[REDLEASE_EV_CONTENDED] > contended ? o[1].last_retry[REDLEASE_EV_CONTENDED] : 0;
        printf("# round %d: the waiter held %lld ms after the release (a split vote's backoff: %lld ms)\n", round,
               (long long)took, (long long)split);
        CHECK_EQ(o[1].acq_st, REDLEASE_OK);
        CHECK(took < 1000 * S + split);
        release(&o[1], NULL);
        channels = o[1].events[REDLEASE_EV_CHANNEL];
        if (round == 0) srv_kill(&m[0]); /* the channel's member */
    }
    CHECK_EQ(o[0].lost + o[1].lost, 0);
    redlease_client_free(c[1]);
    finish(c[0], &o[0]);
}

/* The restart guard (quorum_restart_guard_ms; here 5 s) against real
 * restarts. Once the members are older than the guard, a lease is taken
 * on them; then three of the five are killed and started again empty on
 * their ports, while an older holder's key lives on the other two (its
 * majority counted the three). A client that counts every yes takes the
 * lock on the three: the double holder Redlock's "delayed restart" is
 * about. The guarded client is told busy: their yes is not counted, and
 * what it set there is deleted. */
static void test_quorum_restarted_members_not_counted(void)
{
    NEED_QUORUM();
    const int64_t guard = 5000 * S;
    obs og = {0}, oo = {0}, ofirst = {0};
    redlease_client_options co = quorum_opts();
    co.quorum_restart_guard_ms = guard;
    co.reconnect_min_ms = 10;
    co.reconnect_max_ms = 100; /* back on the restarted members at once */
    redlease_client *g = client_with(&co, &og);
    wait_members(g, &og, N);
    redlease_client *off = quorum_client(&oo); /* counts every yes */
    /* Each started before started_at; the client places a start later than
     * it was, by up to a second (INFO's uptime is whole seconds) and by the
     * time the answer waited to be read (a busy machine). */
    while (mono_ms() < started_at + guard + 1000 + 1000 * S) testloop_run_once(50);
    acquire(g, &ofirst, "q-old-enough", lopts(10000, 0, 0));
    run_until(&ofirst.acq, 2000, NULL);
    CHECK_EQ(ofirst.acq_st, REDLEASE_OK); /* members past the guard count */
    release(&ofirst, NULL);

    int64_t restarted = mono_ms();
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "restarted-m%d", i + 1);
        CHECK_EQ(srv_restart_empty(&m[i], name, NULL), 0);
    }
    const char *key = "lock:{q-restart}";
    for (int i = 3; i < N; i++) {
        redisReply *r = srv_cmd(&m[i], "SET %s %s PX %d", key, "0123456789abcdef0123456789abcdef", 60000);
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r) freeReplyObject(r);
    }
    int64_t end = mono_ms() + 3000 * S; /* both clients back on the three */
    while ((og.events[REDLEASE_EV_CONNECTED] < N + 3 || oo.events[REDLEASE_EV_CONNECTED] < N + 3) &&
           mono_ms() < end)
        testloop_run_once(5);
    CHECK_EQ(og.events[REDLEASE_EV_CONNECTED], N + 3);
    acquire(g, &og, "q-restart", lopts(10000, 0, 0));
    run_until(&og.acq, 2000, NULL);
    int64_t answered = mono_ms();
    printf("# the guarded attempt answered %lld ms after the first restart (guard %lld ms)\n",
           (long long)(answered - restarted), (long long)guard);
    CHECK(answered - restarted < guard); /* so the three were young: each started after restarted */
    /* busy, or the quorum's shortfall when the three young yes came first */
    CHECK(og.acq_st == REDLEASE_EBUSY || og.acq_st == REDLEASE_EQUORUM);
    for (int i = 0; i < 3; i++) { /* what it set on the young ones went */
        char buf[64];
        int64_t gone_by = mono_ms() + 2000 * S;
        while (*value_on(i, key, buf, sizeof buf) && mono_ms() < gone_by) testloop_run_once(5);
        CHECK_STR(value_on(i, key, buf, sizeof buf), "");
    }
    CHECK_EQ(redlease_release(og.lk, NULL, NULL), REDLEASE_OK);
    og.lk = NULL;
    /* without the guard: held on three, beside the older holder */
    acquire(off, &oo, "q-restart", lopts(10000, 0, 0));
    run_until(&oo.acq, 2000, NULL);
    CHECK_EQ(oo.acq_st, REDLEASE_OK);
    release(&oo, NULL);
    redlease_client_free(off);
    finish(g, &og);
}

/* A waiter's attempt took the key on the channel's member, where the
 * holder has none (a member that lost it: restarted without persistence),
 * and lost the vote there: one member's yes is not the lock. Its entry
 * there stays (or is made), so the holder's release, which finds no key
 * of its own on that member, still tells it; a waiter whose entry that
 * take had dropped checked only at a third of its entry's life. */
static void test_quorum_waiter_whose_vote_lost_is_woken(void)
{
    NEED_QUORUM();
    obs o[2] = {{0}};
    redlease_client *c[2] = {quorum_client(&o[0]), quorum_client(&o[1])};
    redlease_lock_options lo = lopts(10000, 0, 0); /* entries live 10 s: checks every 3.3 s */
    acquire(c[0], &o[0], "q-vote", lo);
    run_until(&o[0].acq, 2000, NULL);
    CHECK_EQ(o[0].acq_st, REDLEASE_OK);
    CHECK_EQ(wait_holding("lock:{q-vote}", redlease_lock_token(o[0].lk), N, 2000), N);
    CHECK_EQ(int_on(0, "DEL %s", "lock:{q-vote}"), 1);
    lo.wait_ms = 8000 * S;
    lo.wait_retry_base_ms = lo.wait_retry_max_ms = 5000 * S; /* polling would be seen */
    acquire(c[1], &o[1], "q-vote", lo);
    /* busy once, the channel opens, it checks again: free on member 0
     * (taken there, then deleted by the quorum's clean-up), busy on the
     * other four */
    run_for(1000, NULL);
    CHECK_EQ(o[1].acq, 0);
    CHECK(o[1].events[REDLEASE_EV_CONTENDED] >= 2);
    long long queued = int_on(0, "ZCARD %s", "lock:{q-vote}:queue");
    int64_t t0 = mono_ms();
    release(&o[0], NULL);
    run_until(&o[1].acq, 5000, NULL);
    int64_t took = mono_ms() - t0;
    printf("# %d attempts of the waiter, %lld in member 0's queue; it held %lld ms after the release\n",
           o[1].events[REDLEASE_EV_ATTEMPT], queued, (long long)took);
    CHECK_EQ(queued, 1);
    CHECK_EQ(o[1].acq_st, REDLEASE_OK);
    CHECK(took < 1000 * S);
    release(&o[1], NULL);
    CHECK_EQ(o[1].rel_st, REDLEASE_OK);
    CHECK_EQ(wait_gone("lock:{q-vote}:queue", 2000), 0); /* the release took its entries out */
    CHECK_EQ(o[0].lost + o[1].lost, 0);
    redlease_client_free(c[1]);
    finish(c[0], &o[0]);
}

/* ---------------------------------------------------------- split vote */

static int acl_all(const char *cmd)
{
    int ok = 1;
    for (int k = 0; k < N; k++) ok = ok_reply(srv_cmd(&m[k], cmd)) && ok;
    return ok;
}

/* A client as ACL user name (one of the two made by the case). */
static redlease_client *user_client(obs *o, const char *name, const char *password)
{
    redlease_client_options co = quorum_opts();
    co.username = name;
    co.password = password;
    redlease_client *c = client_with(&co, o);
    wait_members(c, o, N);
    return c;
}

/* User name refused on masters from..to: off, its connections cut. */
static void refuse(const char *name, int from, int to, int on)
{
    for (int k = from; k <= to; k++) {
        CHECK(ok_reply(srv_cmd(&m[k], "ACL SETUSER %s %s", name, on ? "on" : "off")));
        if (!on) {
            redisReply *r = srv_cmd(&m[k], "CLIENT KILL USER %s", name);
            CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
            if (r) freeReplyObject(r);
        }
    }
}

static void test_quorum_split_vote_resolved(void)
{
    NEED_QUORUM();
    /* A reaches masters 2-4 only, B 0, 1 and 4 (the other ones refuse
     * its user), and a stranger holds master 4: every attempt of both
     * ends two to two, neither with a majority, so both fail, delete what
     * they set, and try again. Without that clean-up the first round would
     * leave A's key on 2 and 3, B's on 0 and 1, and nobody could reach
     * three before those keys expire (30 s). */
    CHECK(acl_all("ACL SETUSER qa on >pw-qa ~* +@all"));
    CHECK(acl_all("ACL SETUSER qb on >pw-qb ~* +@all"));
    obs a = {0}, b = {0};
    redlease_client *ca = user_client(&a, "qa", "pw-qa");
    redlease_client *cb = user_client(&b, "qb", "pw-qb");
    const char *key = "lock:{q-split}";
    CHECK(ok_reply(srv_cmd(&m[4], "SET %s stranger PX 60000", key)));
    refuse("qa", 0, 1, 0);
    refuse("qb", 2, 3, 0);
    run_for(200, NULL); /* both see those links go */
    redlease_lock_options lo = lopts(30000, 20000, 0);
    acquire(ca, &a, "q-split", lo);
    acquire(cb, &b, "q-split", lo);
    /* the split repeats while the users are refused; between attempts no
     * master but the stranger's has the key */
    int64_t end = mono_ms() + 3000 * S;
    int clean = 0;
    while (mono_ms() < end && !(clean && a.events[REDLEASE_EV_CONTENDED] >= 3 &&
                                b.events[REDLEASE_EV_CONTENDED] >= 3)) {
        run_for(10, NULL);
        int left = 0;
        for (int k = 0; k < 4; k++) left += int_on(k, "EXISTS %s", key) == 1;
        clean += left == 0;
    }
    printf("# split votes: A %d attempts (%d contended), B %d (%d); %d samples with no key "
           "left on masters 0-3\n",
           a.events[REDLEASE_EV_ATTEMPT], a.events[REDLEASE_EV_CONTENDED],
           b.events[REDLEASE_EV_ATTEMPT], b.events[REDLEASE_EV_CONTENDED], clean);
    CHECK_EQ(a.acq + b.acq, 0);
    CHECK(a.events[REDLEASE_EV_CONTENDED] >= 3 && b.events[REDLEASE_EV_CONTENDED] >= 3);
    CHECK(clean > 0);
    /* every master takes both users again: the next attempt to reach all
     * five wins with four */
    refuse("qa", 0, 1, 1);
    refuse("qb", 2, 3, 1);
    int64_t t_on = mono_ms();
    end = t_on + 10000 * S;
    while (a.acq + b.acq == 0 && mono_ms() < end) testloop_run_once(5);
    int64_t t_first = mono_ms();
    CHECK_EQ(a.acq + b.acq, 1);
    obs *w = a.acq ? &a : &b, *l = a.acq ? &b : &a;
    CHECK_EQ(w->acq_st, REDLEASE_OK);
    /* held, once every master that came back meanwhile confirmed it (a
     * member whose link returns makes held() 0 until the renewal it
     * triggers is answered: man 3 redlease, QUORUM) */
    for (int64_t e = mono_ms() + 2000 * S; !redlease_lock_held(w->lk) && mono_ms() < e;)
        testloop_run_once(5);
    CHECK_EQ(redlease_lock_held(w->lk), 1);
    /* on four, or three when the attempt that won went out before all of
     * its links were back, or met a key of the other's not yet deleted */
    CHECK(wait_holding(key, redlease_lock_token(w->lk), 4, 1000) >= 3);
    /* the other one waits, then gets it right after the release: it is
     * woken when the keys go (design 11.5), so it may hold the lock before
     * the release's own answer has come back; the holder let go first */
    run_for(200, l->lk);
    CHECK_EQ(l->acq, 0);
    int64_t t_rel = mono_ms();
    CHECK_EQ(redlease_release(w->lk, o_rel, w), REDLEASE_OK);
    CHECK_EQ(redlease_lock_held(w->lk), 0);
    run_until(&w->rel, 2000, NULL);
    CHECK_EQ(w->rel_st, REDLEASE_OK);
    run_until(&l->acq, 10000, NULL);
    int64_t t_second = mono_ms();
    printf("# split resolved: first holder %lld ms after the users came back, the other %lld ms "
           "after its release (ttl %lld)\n",
           (long long)(t_first - t_on), (long long)(t_second - t_rel), (long long)lo.ttl_ms);
    CHECK_EQ(l->acq_st, REDLEASE_OK);
    CHECK(t_first - t_on < lo.ttl_ms / 10);
    CHECK(t_second - t_rel < lo.ttl_ms / 10);
    CHECK(wait_holding(key, redlease_lock_token(l->lk), 4, 1000) >= 3);
    release(l, NULL);
    CHECK_EQ(l->rel_st, REDLEASE_OK);
    redlease_client_free(cb);
    CHECK_EQ(b.password_seen, 0);
    finish(ca, &a);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case cases[] = {
        TEST_CASE(test_quorum_options_checked),
        TEST_CASE(test_quorum_one_token_everywhere),
        TEST_CASE(test_quorum_fences_increase_across_holders),
        TEST_CASE(test_quorum_survives_two_killed),
        TEST_CASE(test_quorum_majority_killed_lost_in_time),
        TEST_CASE(test_quorum_paused_masters),
        TEST_CASE(test_quorum_silent_member_dropped),
        TEST_CASE(test_quorum_racing_clients),
        TEST_CASE(test_quorum_semaphore),
        TEST_CASE(test_quorum_shared_and_exclusive),
        TEST_CASE(test_quorum_shared_release_hands_nothing),
        TEST_CASE(test_quorum_waiter_is_woken_by_the_release),
        TEST_CASE(test_quorum_waiter_whose_vote_lost_is_woken),
        TEST_CASE(test_quorum_split_vote_resolved),
        TEST_CASE(test_quorum_restarted_members_not_counted),
    };
    int rc = run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
    stop_all();
    rig_stop();
    return rc;
}
