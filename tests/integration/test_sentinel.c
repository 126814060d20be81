/* SPDX-License-Identifier: MIT */
/* Sentinel against real processes: a primary, two replicas and three
 * Sentinels (redis-server --sentinel, quorum 2, down after 1 s), started
 * by the test (servers.h) for each case that changes them.
 *  - The client finds the primary through the Sentinels, skipping one that
 *    is not there, and says so (REDLEASE_EV_PRIMARY).
 *  - A forced failover (SENTINEL FAILOVER) and a killed primary while
 *    leases are held and an acquire waits: the client follows the switch,
 *    redlease_lock_held() is 0 until a renewal on the new primary confirms
 *    each lease, and the count of leases lost is printed and checked: with
 *    replica_acks = 1 none is lost.
 *  - A lease the new primary lacks is lost (NOT_OWNER) at once, not at its
 *    deadline.
 *  - No Sentinel reachable, or none that knows the name: the acquire ends
 *    in its budget with the Sentinel's reason; credentials they refuse end
 *    it at once (EAUTH).
 *  - A Sentinel that names a replica: ROLE turns it down.
 * Runs on the poll() loop through sentinel.itest. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rig.h"
#include "servers.h"

#define MASTER "mymaster"
#define NLEASES 6

static srv primary, replica[2], sentinel[3];
static int moved_on_news; /* through_failover(): "moving to" disconnects seen */
static char sentinel_list[256];

static void stop_all(void)
{
    for (int i = 0; i < 3; i++) srv_kill(&sentinel[i]);
    srv_kill(&primary);
    srv_kill(&replica[0]);
    srv_kill(&replica[1]);
}

/* The field of SENTINEL MASTER's flat [name, value, ...] answer, or -1. */
static long long master_field(const srv *s, const char *field)
{
    redisReply *r = srv_cmd(s, "SENTINEL MASTER %s", MASTER);
    long long v = -1;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, field) == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            v = atoll(r->element[i + 1]->str);
    if (r) freeReplyObject(r);
    return v;
}

/* The primary, two replicas in sync, three Sentinels that know them and
 * each other; 0, or -1 (and why). */
static int start_all(void)
{
    stop_all();
    if (srv_start(&primary, "primary", "--port", "--repl-diskless-sync-delay 0")) return -1;
    char of[64];
    snprintf(of, sizeof of, "--replicaof 127.0.0.1 %d", primary.port);
    for (int i = 0; i < 2; i++)
        if (srv_start(&replica[i], i ? "replica2" : "replica1", "--port", of)) return -1;
    char conf[512];
    snprintf(conf, sizeof conf,
             "sentinel monitor " MASTER " 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds " MASTER " 1000\n"
             "sentinel failover-timeout " MASTER " 10000\n"
             "sentinel parallel-syncs " MASTER " 2\n",
             primary.port);
    int n = 0;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "sentinel%d", i + 1);
        if (srv_start_conf(&sentinel[i], name, conf, "--port", "--sentinel")) return -1;
        n += snprintf(sentinel_list + n, sizeof sentinel_list - n, "%s127.0.0.1:%d", i ? "," : "",
                      sentinel[i].port);
    }
    /* Ready to fail over: each Sentinel sees the two replicas and the two
     * other Sentinels (they meet through the primary, every 2 s). */
    for (int t = 0; t < 300; t++) {
        int ready = 1;
        for (int i = 0; i < 3 && ready; i++)
            ready = master_field(&sentinel[i], "num-slaves") == 2 &&
                    master_field(&sentinel[i], "num-other-sentinels") == 2;
        if (ready) return 0;
        usleep(100000);
    }
    printf("# the Sentinels did not find each other and the replicas\n");
    return -1;
}

#define NEED_SERVERS() NEED_STARTED(start_all, "a primary, two replicas and three Sentinels started")

static redlease_client_options sentinel_opts(const char *list, const char *name)
{
    redlease_client_options co = copts_tcp(0); /* the Sentinels say where */
    co.host = NULL;
    co.sentinel_addrs = list;
    co.topology = REDLEASE_TOPOLOGY_SENTINEL;
    co.sentinel_master_name = name;
    return co;
}

static redlease_client *sentinel_client(obs *o, const char *list, const char *name)
{
    redlease_client_options co = sentinel_opts(list, name);
    return client_with(&co, o);
}

/* The port Sentinel 0 names as the primary now. */
static int primary_port_now(void)
{
    redisReply *r = srv_cmd(&sentinel[0], "SENTINEL get-master-addr-by-name %s", MASTER);
    int port = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? atoi(r->element[1]->str) : 0;
    if (r) freeReplyObject(r);
    return port;
}

static const srv *server_at(int port)
{
    if (primary.port == port) return &primary;
    for (int i = 0; i < 2; i++)
        if (replica[i].port == port) return &replica[i];
    return NULL;
}

/* 1 when an established TCP connection to 127.0.0.1:port has its
 * keep-alive timer running (/proc/net/tcp: timer 02). */
static int keepalive_to(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f) return -1;
    char line[512], want[32];
    snprintf(want, sizeof want, "0100007F:%04X", port);
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        char local[64], remote[64], st[8], queues[40], timer[32];
        if (sscanf(line, "%*s %63s %63s %7s %39s %31s", local, remote, st, queues, timer) != 5)
            continue;
        if (strcmp(remote, want) == 0 && strcmp(st, "01") == 0 && strncmp(timer, "02:", 3) == 0)
            found = 1;
    }
    fclose(f);
    return found;
}

static void test_sentinel_finds_the_primary(void)
{
    NEED_SERVERS();
    /* the first Sentinel listed is not there: the next one answers */
    char list[300];
    snprintf(list, sizeof list, "127.0.0.1:%d,%s", sentinel[2].port + 1, sentinel_list);
    obs o = {0};
    redlease_client *c = sentinel_client(&o, list, MASTER);
    hold_real(c, &o, "sent-find", lopts(2000, 3000, 0));
    CHECK_EQ(o.events[REDLEASE_EV_PRIMARY], 1);
    /* the subscribed Sentinel link, which sends nothing, keeps TCP
     * keep-alive: a Sentinel gone without a reset is noticed (the
     * primary's connections cannot be told from the replicas' here) */
    CHECK_EQ(keepalive_to(sentinel[0].port), 1);
    char v[512];
    CHECK(is_value_of(srv_str(&primary, v, sizeof v, "GET %s", "lock:{sent-find}"), redlease_lock_token(o.lk)));
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish(c, &o);
}

/* Leases held (half of them with replica_acks = 1; a quarter semaphore
 * holders, a quarter shared holders) and an acquire waiting
 * for a key another client holds, through a failover that fail() causes.
 * Every lease must either be confirmed on the new primary or lost; none
 * may read as held while unconfirmed. Returns the leases lost with
 * replica_acks = 1 (must be 0); prints both counts. */
static int through_failover(const char *how, void (*fail)(void))
{
    obs o[NLEASES], w = {0}, h = {0};
    memset(o, 0, sizeof o);
    obs co = {0};
    redlease_client *c = sentinel_client(&co, sentinel_list, MASTER);
    for (int i = 0; i < NLEASES; i++) {
        char res[32];
        snprintf(res, sizeof res, "sent-lease-%d", i);
        redlease_lock_options lo = lopts(15000, 3000, 0);
        lo.replica_acks = i % 2; /* odd ones acknowledged */
        lo.replica_timeout_ms = 400 * S;
        /* the other kinds ride through it the same way: a semaphore
         * holder unacknowledged, a shared holder acknowledged */
        lo.limit = i % 4 == 2 ? 2 : 0;
        lo.shared = i % 4 == 3;
        hold_real(c, &o[i], res, lo);
    }
    /* another client holds "sent-busy"; ours waits for it */
    obs ho = {0};
    redlease_client *c2 = sentinel_client(&ho, sentinel_list, MASTER);
    hold_real(c2, &h, "sent-busy", lopts(15000, 3000, 0));
    acquire(c, &w, "sent-busy", lopts(5000, 30000, 0));
    int old = primary_port_now();
    watch_text = "moving to"; /* the client left the old primary on the news */
    watch_hits = 0;
    fail();
    /* until the switch: the leases never read as held while unconfirmed */
    int64_t end = mono_ms() + 30000 * S;
    int switched = 0, seen_unheld = 0;
    while (mono_ms() < end) {
        testloop_run_once(5);
        int confirmed, lost;
        count_leases(o, NLEASES, &confirmed, &lost, &seen_unheld);
        int now_port = primary_port_now();
        switched = switched || (now_port && now_port != old);
        if (switched && co.events[REDLEASE_EV_PRIMARY] >= 2 && confirmed + lost == NLEASES) break;
    }
    int lost_acked = 0, lost_plain = 0;
    for (int i = 0; i < NLEASES; i++) {
        if (o[i].lost) {
            CHECK_EQ(o[i].lost_reason, REDLEASE_LOST_NOT_OWNER); /* at once, not at the deadline */
            if (i % 2)
                lost_acked++;
            else
                lost_plain++;
        }
    }
    printf("# %s: switched %d; leases lost: %d of %d with replica_acks 1, %d of %d without; "
           "unconfirmed seen %d\n",
           how, switched, lost_acked, NLEASES / 2, lost_plain, NLEASES / 2, seen_unheld);
    printf("# left the old primary on the Sentinel's news: %d time(s)\n", watch_hits);
    moved_on_news = watch_hits;
    watch_text = NULL;
    CHECK(switched);
    /* found, then the switch (a Sentinel slow to learn of it may name the
     * old one once more in between: ROLE turns that down) */
    CHECK(co.events[REDLEASE_EV_PRIMARY] >= 2);
    CHECK(seen_unheld); /* held() said 0 between the switch and the renewal */
    /* the waiter gets the lock once its holder lets go, on the new primary */
    CHECK_EQ(w.acq, 0);
    release(&h, NULL);
    run_until(&w.acq, 5000, NULL);
    CHECK_EQ(w.acq_st, REDLEASE_OK);
    const srv *now = server_at(primary_port_now());
    char v[512];
    CHECK(now && is_value_of(srv_str(now, v, sizeof v, "GET %s", "lock:{sent-busy}"), redlease_lock_token(w.lk)));
    release(&w, NULL);
    for (int i = 0; i < NLEASES; i++) release(&o[i], NULL);
    redlease_client_free(c2);
    finish(c, &co);
    return lost_acked;
}

static void forced(void)
{
    redisReply *r = srv_cmd(&sentinel[1], "SENTINEL FAILOVER %s", MASTER);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r) freeReplyObject(r);
}

static void killed(void) { srv_kill(&primary); }

static void test_sentinel_forced_failover(void)
{
    NEED_SERVERS();
    CHECK_EQ(through_failover("forced failover", forced), 0);
    /* +switch-master came while the old primary still served us: we left
     * it on the news, before it dropped us */
    CHECK(moved_on_news >= 1);
}

static void test_sentinel_killed_primary(void)
{
    NEED_SERVERS();
    CHECK_EQ(through_failover("primary killed", killed), 0);
}

/* A key the new primary lacks: lost (NOT_OWNER) as soon as the client
 * renews on it, not at the lease's deadline. The replicas are stopped and
 * cut off while the lease is taken, the primary killed, then the replicas
 * let go: Sentinel promotes one that never had the key. */
static void test_sentinel_key_missing_on_the_new_primary(void)
{
    NEED_SERVERS();
    obs o = {0};
    redlease_client *c = sentinel_client(&o, sentinel_list, MASTER);
    wait_connected(c, 3000);
    for (int i = 0; i < 2; i++) kill(replica[i].pid, SIGSTOP);
    redisReply *r = srv_cmd(&primary, "CLIENT KILL TYPE replica");
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    if (r) freeReplyObject(r);
    hold_real(c, &o, "sent-missing", lopts(20000, 3000, 0));
    int64_t t0 = mono_ms();
    srv_kill(&primary);
    for (int i = 0; i < 2; i++) kill(replica[i].pid, SIGCONT);
    run_until(&o.lost, 20000, NULL);
    printf("# lost %lld ms after the primary was killed (%s), of a 20000 ms lease\n",
           (long long)(mono_ms() - t0), redlease_lost_reason_str(o.lost_reason));
    CHECK_EQ(o.lost, 1);
    CHECK_EQ(o.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK(mono_ms() - t0 < 18000 * S); /* the deadline would be at ~19800 */
    release(&o, NULL);
    finish(c, &o);
}

static void test_sentinel_none_reachable_or_name_unknown(void)
{
    NEED_SERVERS();
    char dead[64];
    snprintf(dead, sizeof dead, "127.0.0.1:%d", sentinel[2].port + 1);
    expect_acquire_fails(sentinel_opts(dead, MASTER), 500, REDLEASE_ECONN, "Sentinel 127.0.0.1:");
    expect_acquire_fails(sentinel_opts(sentinel_list, "no-such-master"), 500, REDLEASE_ECONN,
                         "does not know master 'no-such-master'");
    /* credentials the Sentinels refuse: at once, whatever the budget */
    redlease_client_options co = sentinel_opts(sentinel_list, MASTER);
    co.sentinel_password = "not-the-password";
    expect_acquire_fails(co, REDLEASE_WAIT_FOREVER, REDLEASE_EAUTH, "Sentinel 127.0.0.1:");
}

/* A Sentinel that names a replica (its configuration is stale, or a
 * failover is under way): ROLE turns it down, never a connection used as
 * the primary. */
static void test_sentinel_named_a_replica(void)
{
    NEED_SERVERS();
    srv stale;
    char conf[256];
    snprintf(conf, sizeof conf, "sentinel monitor stale 127.0.0.1 %d 1\n", replica[0].port);
    if (srv_start_conf(&stale, "sentinel-stale", conf, "--port", "--sentinel")) {
        CHECK(!"a fourth Sentinel started");
        return;
    }
    char list[64];
    snprintf(list, sizeof list, "127.0.0.1:%d", stale.port);
    obs o = {0};
    redlease_client *c = sentinel_client(&o, list, "stale");
    acquire(c, &o, "sent-stale", lopts(2000, 600, 0));
    run_until(&o.acq, 3000, o.lk);
    printf("# %s: %s\n", redlease_strerror(o.acq_st), redlease_client_errstr(c));
    CHECK(o.acq_st == REDLEASE_ECONN || o.acq_st == REDLEASE_ETIMEDOUT);
    CHECK(o.events[REDLEASE_EV_PRIMARY] >= 1);
    CHECK_EQ(o.events[REDLEASE_EV_CONNECTED], 0);
    CHECK(strstr(redlease_client_errstr(c), "not the primary (ROLE: slave)") != NULL);
    release(&o, o.lk);
    finish(c, &o);
    srv_kill(&stale);
}

static void test_sentinel_options_checked(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.topology = REDLEASE_TOPOLOGY_SENTINEL;
    redlease_client *c = NULL;
    const char *bad[] = {"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":26379", "h:1,",
                         "::1:26379", "[::1]26379", "h:1,,h:2", "h:x"};
    co.sentinel_master_name = MASTER;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        co.sentinel_addrs = bad[i];
        CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
        const char *why = redlease_client_options_error(&co);
        CHECK(why && strstr(why, "sentinel_addrs"));
    }
    co.sentinel_addrs = "[::1]:26379,localhost:26380";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    redlease_client_free(c);
    co.sentinel_master_name = "";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co.sentinel_master_name = MASTER;
    co.unix_path = "/tmp/x.sock"; /* which would win? */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_sentinel_options_checked),
        TEST_CASE(test_sentinel_finds_the_primary),
        TEST_CASE(test_sentinel_none_reachable_or_name_unknown),
        TEST_CASE(test_sentinel_named_a_replica),
        TEST_CASE(test_sentinel_forced_failover),
        TEST_CASE(test_sentinel_killed_primary),
        TEST_CASE(test_sentinel_key_missing_on_the_new_primary),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    stop_all();
    rig_stop();
    return rc;
}
