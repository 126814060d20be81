/* SPDX-License-Identifier: MIT */
/* Redis Cluster against real processes: three primaries, each with a
 * replica (redis-server --cluster-enabled yes, node timeout 1 s), formed
 * by the test itself (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE: no
 * redis-cli needed) for each case that changes them (servers.h).
 *  - Leases on many resources land on the primary of their key's slot
 *    (the slot the library computes is the one CLUSTER KEYSLOT says), with
 *    a connection to each primary it needs, from one seed.
 *  - A slot migrated while leases are held in it and an acquire waits on
 *    it: a key moved before the slot is (ASK: the command goes behind
 *    ASKING), a new key while it moves (ASK), then the slot handed over
 *    (MOVED): every lease stays held and is renewed on the new owner, and
 *    the waiter gets the lock.
 *  - The slot of held leases and a waited-for lock moved between two
 *    primaries 20 times: atomically where the server can (Valkey >= 9.0,
 *    CLUSTER MIGRATESLOTS: only MOVED answers), else as above.
 *  - A primary killed: its replica takes over; each lease on it is
 *    confirmed there or lost, held() is 0 in between, and with
 *    replica_acks = 1 none is lost.
 * Runs on the poll() loop through cluster.itest. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rig.h"
#include "servers.h"

/* 0-2 primaries, 3-5 their replicas, 6 a second replica of 2 (the one
 * killed: its shard keeps a replica to acknowledge writes after) */
#define NODES 7
#define NLEASES 24

static srv node[NODES];
static char seeds[64];
static redisContext *slots_ctx; /* keyslot()'s */

static void stop_all(void)
{
    for (int i = 0; i < NODES; i++) srv_kill(&node[i]);
    if (slots_ctx) redisFree(slots_ctx);
    slots_ctx = NULL;
}

static int ok_reply(redisReply *r)
{
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok;
}

/* The text a command answers, into buf ("" for anything else). */
static const char *text(const srv *s, char *buf, size_t size, const char *cmd)
{
    return srv_str(s, buf, size, cmd, NULL);
}

/* The node a cluster says serves slot (asked of node 0), or -1. */
static int owner_of(int slot)
{
    for (int k = 0; k < NODES; k++) {
        redisReply *r = srv_cmd(&node[k], "CLUSTER SLOTS");
        int port = -1;
        for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
            redisReply *e = r->element[i];
            if (e->element[0]->integer <= slot && slot <= e->element[1]->integer)
                port = (int)e->element[2]->element[1]->integer;
        }
        if (r) freeReplyObject(r);
        for (int j = 0; j < NODES; j++)
            if (node[j].port == port) return j;
    }
    return -1;
}

/* CLUSTER KEYSLOT, on one connection kept (names are searched by it). */
static int keyslot(const char *key)
{
    if (!slots_ctx) slots_ctx = redisConnect("127.0.0.1", node[0].port);
    redisReply *r = slots_ctx && !slots_ctx->err ? redisCommand(slots_ctx, "CLUSTER KEYSLOT %s", key) : NULL;
    int slot = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    if (r) freeReplyObject(r);
    return slot;
}

/* A resource "<stem>-N" whose key is in slot, into buf. */
static void name_in_slot(char *buf, size_t size, const char *stem, int slot)
{
    for (int i = 0;; i++) {
        char key[96];
        snprintf(buf, size, "%s-%d", stem, i);
        snprintf(key, sizeof key, "lock:{%s}", buf);
        if (keyslot(key) == slot) return;
    }
}

/* 1 when every node says the cluster is ok and knows all NODES. */
static int formed(void)
{
    for (int i = 0; i < NODES; i++) {
        char info[2048];
        redisReply *r = srv_cmd(&node[i], "CLUSTER INFO");
        snprintf(info, sizeof info, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
        if (r) freeReplyObject(r);
        char known[40];
        snprintf(known, sizeof known, "cluster_known_nodes:%d\r", NODES);
        if (!strstr(info, "cluster_state:ok") || !strstr(info, known)) return 0;
    }
    for (int i = 3; i < NODES; i++) {
        redisReply *r = srv_cmd(&node[i], "ROLE");
        int up = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 4 &&
                 strcmp(r->element[0]->str, "slave") == 0 && strcmp(r->element[3]->str, "connected") == 0;
        if (r) freeReplyObject(r);
        if (!up) return 0;
    }
    return 1;
}

/* Six nodes formed into a cluster; 0, or -1. */
static int start_all(void)
{
    stop_all();
    static int formation; /* a folder of its own each time: no old nodes.conf */
    formation++;
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "cluster%d-node%d", formation, i + 1);
        if (srv_start(&node[i], name, "--port",
                      "--cluster-enabled yes --cluster-config-file nodes.conf "
                      "--cluster-node-timeout 1000 --repl-diskless-sync-delay 0"))
            return -1;
    }
    static const int range[3][2] = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    char id[3][64];
    for (int i = 0; i < 3; i++) {
        if (!ok_reply(srv_cmd(&node[i], "CLUSTER SET-CONFIG-EPOCH %d", i + 1))) return -1;
        if (!ok_reply(srv_cmd(&node[i], "CLUSTER ADDSLOTSRANGE %d %d", range[i][0], range[i][1])))
            return -1;
        text(&node[i], id[i], sizeof id[i], "CLUSTER MYID");
    }
    for (int i = 1; i < NODES; i++)
        if (!ok_reply(srv_cmd(&node[i], "CLUSTER MEET 127.0.0.1 %d", node[0].port))) return -1;
    /* a replica may only follow a primary it knows */
    for (int i = 3; i < NODES; i++) {
        int done = 0;
        for (int t = 0; t < 100 && !done; t++) {
            done = ok_reply(srv_cmd(&node[i], "CLUSTER REPLICATE %s", id[i < 6 ? i - 3 : 2]));
            if (!done) usleep(100000);
        }
        if (!done) return -1;
    }
    for (int t = 1; t <= 300; t++) {
        if (formed()) {
            snprintf(seeds, sizeof seeds, "127.0.0.1:%d", node[1].port);
            return 0;
        }
        /* a MEET whose handshake outlived the node timeout (a loaded
         * machine) is forgotten: meet again every 2 s */
        for (int i = 1; t % 20 == 0 && i < NODES; i++) {
            redisReply *r = srv_cmd(&node[i], "CLUSTER MEET 127.0.0.1 %d", node[0].port);
            if (r) freeReplyObject(r);
        }
        usleep(100000);
    }
    printf("# the cluster did not form\n");
    return -1;
}

#define NEED_CLUSTER() NEED_STARTED(start_all, "three primaries and four replicas formed a cluster")

static redlease_client_options cluster_opts(const char *list)
{
    redlease_client_options co = copts_tcp(0);
    co.host = NULL;
    co.cluster_addrs = list;
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
    return co;
}

static redlease_client *cluster_client(obs *o)
{
    redlease_client_options co = cluster_opts(seeds);
    return client_with(&co, o);
}

/* The value of key on node k ("" when none). */
static const char *value_on(int k, const char *key)
{
    static char v[512];
    return srv_str(&node[k], v, sizeof v, "GET %s", key);
}

static long long stat_of(int k, const char *section, const char *field)
{
    redisReply *r = srv_cmd(&node[k], "INFO %s", section);
    long long v = 0;
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, field) : NULL;
    if (p) v = atoll(p + strlen(field));
    if (r) freeReplyObject(r);
    return v;
}

static void test_cluster_options_checked(void)
{
    redlease_client *c = NULL;
    redlease_client_options co = cluster_opts("127.0.0.1:7000");
    co.db = 1; /* a Cluster has database 0 only */
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co = cluster_opts("127.0.0.1:7000");
    co.sentinel_addrs = "127.0.0.1:26379";
    co.sentinel_master_name = "m";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co = cluster_opts("127.0.0.1:7000");
    co.unix_path = "/tmp/x.sock";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    const char *bad[] = {"", "h", "h:0", "h:1,", "::1:7000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        co = cluster_opts(bad[i]);
        CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    }
    CHECK(c == NULL);
}

static void test_cluster_leases_across_slots(void)
{
    NEED_CLUSTER();
    obs co = {0}, o[NLEASES];
    memset(o, 0, sizeof o);
    redlease_client *c = cluster_client(&co);
    int per_node[NODES] = {0};
    for (int i = 0; i < NLEASES; i++) {
        char res[32];
        snprintf(res, sizeof res, "cl-res-%d", i);
        hold_real(c, &o[i], res, lopts(5000, 3000, i % 2));
    }
    for (int i = 0; i < NLEASES; i++) {
        const char *key = redlease_lock_key(o[i].lk);
        int slot = keyslot(key);
        int k = owner_of(slot);
        CHECK(k >= 0 && k < 3);
        if (k < 0) continue;
        per_node[k]++;
        CHECK(is_value_of(value_on(k, key), redlease_lock_token(o[i].lk)));
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
        if (i % 2) CHECK(redlease_lock_fence(o[i].lk) > 0);
    }
    printf("# leases per primary: %d %d %d\n", per_node[0], per_node[1], per_node[2]);
    CHECK(per_node[0] && per_node[1] && per_node[2]);
    /* one connection per primary it needs, and the seed's */
    redlease_stats st;
    redlease_client_stats(c, &st);
    printf("# connections made: %llu\n", (unsigned long long)st.connects);
    CHECK_EQ(st.connects, 3);
    for (int i = 0; i < NLEASES; i++) {
        release(&o[i], NULL);
        CHECK_EQ(o[i].rel_st, REDLEASE_OK);
    }
    for (int k = 0; k < 3; k++) {
        redisReply *r = srv_cmd(&node[k], "DBSIZE");
        long long keys = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        if (r) freeReplyObject(r);
        /* only the fence counters are left, which expire by themselves */
        CHECK(keys >= 0 && keys <= NLEASES / 2);
    }
    finish(c, &co);
}

static void wait_ms(int64_t ms) { run_for(ms, NULL); }

/* The other kinds on a Cluster: semaphores of 2 on resources spread over
 * the primaries (each one's three keys in its slot), a third holder busy;
 * shared holders, and an exclusive waiter of another client handed the
 * resource by the last shared release through the slot's primary. */
static void test_cluster_semaphore_and_shared(void)
{
    NEED_CLUSTER();
    enum { NRES = 6 };
    obs oa = {0}, ob = {0}, o[NRES][3], x = {0}, sh = {0};
    memset(o, 0, sizeof o);
    redlease_client *ca = cluster_client(&oa), *cb = cluster_client(&ob);
    redlease_lock_options sem = lopts(5000, 0, 1);
    sem.limit = 2;
    int per_node[NODES] = {0};
    for (int i = 0; i < NRES; i++) {
        char res[32];
        snprintf(res, sizeof res, "cl-sem-%d", i);
        hold_real(ca, &o[i][0], res, sem);
        hold_real(cb, &o[i][1], res, sem);
        acquire(cb, &o[i][2], res, sem);
        run_until(&o[i][2].acq, 3000, o[i][2].lk);
        CHECK_EQ(o[i][2].acq_st, REDLEASE_EBUSY);
        CHECK(redlease_lock_fence(o[i][1].lk) > redlease_lock_fence(o[i][0].lk));
        char hk[64];
        size_t hl;
        redlease_key("lock:", res, strlen(res), REDLEASE_KEY_HOLDERS, hk, sizeof hk, &hl);
        int k = owner_of(keyslot(hk));
        CHECK(k >= 0 && k < 3);
        if (k < 0) continue;
        per_node[k]++;
        redisReply *r = srv_cmd(&node[k], "ZCARD %s", hk);
        CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 2);
        if (r) freeReplyObject(r);
    }
    printf("# semaphores per primary: %d %d %d\n", per_node[0], per_node[1], per_node[2]);
    for (int i = 0; i < NRES; i++)
        for (int j = 0; j < 3; j++) release(&o[i][j], NULL);
    redlease_lock_options so = lopts(10000, 0, 0);
    so.shared = 1;
    hold_real(ca, &sh, "cl-rw", so);
    redlease_lock_options xo = lopts(10000, 5000, 0);
    xo.wait_mode = REDLEASE_WAIT_QUEUE;
    xo.wait_retry_base_ms = xo.wait_retry_max_ms = 5000 * S;
    acquire(cb, &x, "cl-rw", xo);
    wait_ms(300); /* it waits in the queue (its retries are 5 s apart) */
    CHECK_EQ(x.acq, 0);
    int64_t t0 = mono_ms();
    release(&sh, NULL);
    run_until(&x.acq, 2000, NULL);
    printf("# exclusive waiter handed over after %lld ms\n", (long long)(mono_ms() - t0));
    CHECK_EQ(x.acq_st, REDLEASE_OK);
    release(&x, NULL);
    redlease_client_free(cb);
    finish(ca, &oa);
}

/* Queued waiting on a Cluster: a waiter of another client, told by the
 * PUBLISH of the release script (which reaches every node, so the
 * waiter's channel may listen on any), gets the lock within a round trip
 * or so, far sooner than its timer (the holder's TTL). */
static void test_cluster_queue_hands_over(void)
{
    NEED_CLUSTER();
    obs oa = {0}, ob = {0};
    redlease_client *ca = cluster_client(&oa), *cb = cluster_client(&ob);
    hold_real(ca, &oa, "cl-queue", lopts(10000, 0, 0));
    acquire(cb, &ob, "cl-queue", lopts(10000, 5000, 0));
    char qkey[64];
    size_t qlen;
    redlease_key("lock:", "cl-queue", 8, REDLEASE_KEY_QUEUE, qkey, sizeof qkey, &qlen);
    int k = owner_of(keyslot(qkey));
    int64_t end = mono_ms() + 3000 * S;
    long long queued = 0;
    while (queued != 1 && mono_ms() < end) {
        testloop_run_once(5);
        redisReply *r = srv_cmd(&node[k], "ZCARD %s", qkey);
        queued = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        if (r) freeReplyObject(r);
    }
    CHECK_EQ(queued, 1);
    int64_t t0 = mono_ms();
    release(&oa, NULL);
    run_until(&ob.acq, 2000, NULL);
    printf("# handed over after %lld ms\n", (long long)(mono_ms() - t0));
    CHECK_EQ(ob.acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 1000 * S);
    CHECK(is_value_of(value_on(k, redlease_lock_key(ob.lk)), redlease_lock_token(ob.lk)));
    release(&ob, NULL);
    redlease_client_free(cb);
    finish(ca, &oa);
}

static void test_cluster_slot_migration(void)
{
    NEED_CLUSTER();
    /* three resources in one slot (one hash tag is one slot: names that
     * only differ after a "}" inside the tag would be one resource, so
     * pick names that hash alike) */
    obs co = {0}, o[3], w = {0}, h = {0}, n = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = cluster_client(&co);
    char names[3][32], fresh[32], key[128];
    int slot = keyslot("lock:{mig-a}");
    snprintf(names[0], sizeof names[0], "mig-a");
    name_in_slot(names[1], sizeof names[1], "mig-b", slot);
    name_in_slot(names[2], sizeof names[2], "mig-c", slot);
    name_in_slot(fresh, sizeof fresh, "mig-new", slot); /* looked for now: the loop must run */
    int from = owner_of(slot), to = (from + 1) % 3;
    char from_id[64], to_id[64];
    text(&node[from], from_id, sizeof from_id, "CLUSTER MYID");
    text(&node[to], to_id, sizeof to_id, "CLUSTER MYID");
    /* leases held in the slot; another client holds names[2], ours waits */
    for (int i = 0; i < 2; i++) hold_real(c, &o[i], names[i], lopts(1500, 3000, 0));
    obs ho = {0};
    redlease_client_options hco = cluster_opts(seeds);
    redlease_client *c2 = client_with(&hco, &ho);
    hold_real(c2, &h, names[2], lopts(1500, 3000, 0));
    acquire(c, &w, names[2], lopts(1500, 20000, 0));
    wait_ms(100);
    long long asking0 = stat_of(to, "commandstats", "cmdstat_asking:calls=");
    long long moved0 = stat_of(from, "errorstats", "errorstat_MOVED:count=");
    /* the slot starts to move; names[0]'s key goes first */
    CHECK(ok_reply(srv_cmd(&node[to], "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id)));
    CHECK(ok_reply(srv_cmd(&node[from], "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id)));
    CHECK(ok_reply(srv_cmd(&node[from], "MIGRATE 127.0.0.1 %d lock:{%s} 0 5000", node[to].port,
                           names[0])));
    /* a new resource in the slot while it moves: not on the old owner, so
     * ASK sends it to the new one */
    hold_real(c, &n, fresh, lopts(1500, 3000, 0));
    wait_ms(1200); /* renewals (every 500 ms) meet ASK for names[0] */
    long long asking = stat_of(to, "commandstats", "cmdstat_asking:calls=") - asking0;
    CHECK(asking > 0);
    /* the rest of the keys, then the slot is the new owner's everywhere */
    for (int i = 1; i < 3; i++) {
        redisReply *r = srv_cmd(&node[from], "MIGRATE 127.0.0.1 %d lock:{%s} 0 5000", node[to].port,
                                names[i]);
        if (r) freeReplyObject(r);
    }
    for (int k = 0; k < NODES; k++) {
        redisReply *r = srv_cmd(&node[k], "CLUSTER SETSLOT %d NODE %s", slot, to_id);
        if (r) freeReplyObject(r);
    }
    wait_ms(1500); /* renewals meet MOVED, then go to the new owner */
    long long moved = stat_of(from, "errorstats", "errorstat_MOVED:count=") - moved0;
    CHECK(moved > 0);
    printf("# slot %d moved with leases held: %lld ASKING on the new owner, %lld MOVED from the old\n",
           slot, asking, moved);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(o[i].lost, 0);
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
        snprintf(key, sizeof key, "lock:{%s}", names[i]);
        CHECK(is_value_of(value_on(to, key), redlease_lock_token(o[i].lk)));
    }
    CHECK_EQ(n.lost, 0);
    CHECK_EQ(redlease_lock_held(n.lk), 1);
    /* the waiter gets the lock once its holder lets go */
    CHECK_EQ(w.acq, 0);
    release(&h, NULL);
    run_until(&w.acq, 5000, NULL);
    CHECK_EQ(w.acq_st, REDLEASE_OK);
    snprintf(key, sizeof key, "lock:{%s}", names[2]);
    CHECK(is_value_of(value_on(to, key), redlease_lock_token(w.lk)));
    release(&w, NULL);
    release(&n, NULL);
    for (int i = 0; i < 2; i++) release(&o[i], NULL);
    redlease_client_free(c2);
    finish(c, &co);
}

/* Moves slot from primary from to primary to: by CLUSTER MIGRATESLOTS
 * where the server has it (Valkey >= 9.0: keys and ownership handed over
 * atomically, the servers answering only MOVED, which can send a request
 * back and forth during the handoff), else as test_cluster_slot_migration
 * does, each key by MIGRATE (ASK while it moves), then the slot. 1 when
 * it went the atomic way. */
static int move_slot(int slot, int from, int to)
{
    char from_id[64], to_id[64];
    text(&node[from], from_id, sizeof from_id, "CLUSTER MYID");
    text(&node[to], to_id, sizeof to_id, "CLUSTER MYID");
    redisReply *r = srv_cmd(&node[from], "CLUSTER MIGRATESLOTS SLOTSRANGE %d %d NODE %s", slot, slot, to_id);
    int atomic = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    if (atomic) return 1;
    CHECK(ok_reply(srv_cmd(&node[to], "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id)));
    CHECK(ok_reply(srv_cmd(&node[from], "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id)));
    for (;;) {
        redisReply *keys = srv_cmd(&node[from], "CLUSTER GETKEYSINSLOT %d 100", slot);
        size_t n = keys && keys->type == REDIS_REPLY_ARRAY ? keys->elements : 0;
        for (size_t i = 0; i < n; i++) {
            redisReply *m = srv_cmd(&node[from], "MIGRATE 127.0.0.1 %d %s 0 5000", node[to].port,
                                    keys->element[i]->str);
            if (m) freeReplyObject(m);
        }
        if (keys) freeReplyObject(keys);
        if (n == 0) break;
    }
    for (int k = 0; k < NODES; k++) {
        redisReply *m = srv_cmd(&node[k], "CLUSTER SETSLOT %d NODE %s", slot, to_id);
        if (m) freeReplyObject(m);
    }
    return 0;
}

/* The slot of three held leases (renewed every 500 ms) and of a lock
 * another client holds and ours waits for moves between two primaries 20
 * times (issue 30); the holder lets go after the tenth move. Nothing is
 * lost, no renewal or attempt fails (a redirect not followed would), and
 * the waiter gets the lock, on whichever primary has the slot then. */
static void test_cluster_slot_moves_back_and_forth(void)
{
    NEED_CLUSTER();
    obs co = {0}, o[3], h = {0}, w = {0}, ho = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = cluster_client(&co);
    char names[4][32];
    int slot = keyslot("lock:{moving-a}");
    snprintf(names[0], sizeof names[0], "moving-a");
    name_in_slot(names[1], sizeof names[1], "moving-b", slot);
    name_in_slot(names[2], sizeof names[2], "moving-c", slot);
    name_in_slot(names[3], sizeof names[3], "moving-w", slot);
    for (int i = 0; i < 3; i++) hold_real(c, &o[i], names[i], lopts(1500, 3000, 0));
    redlease_client_options hco = cluster_opts(seeds);
    redlease_client *c2 = client_with(&hco, &ho);
    hold_real(c2, &h, names[3], lopts(1500, 3000, 0));
    acquire(c, &w, names[3], lopts(1500, 120000, 0));
    wait_ms(300);
    CHECK_EQ(w.acq, 0);
    int home = owner_of(slot), away = (home + 1) % 3, atomic = 0;
    long long moved0 = stat_of(home, "errorstats", "errorstat_MOVED:count=") +
                       stat_of(away, "errorstats", "errorstat_MOVED:count=");
    for (int m = 0; m < 20; m++) {
        int from = m % 2 ? away : home, to = m % 2 ? home : away;
        atomic += move_slot(slot, from, to);
        int64_t end = mono_ms() + 10000 * S;
        while (owner_of(slot) != to && mono_ms() < end) wait_ms(20);
        CHECK_EQ(owner_of(slot), to);
        wait_ms(200); /* renewals meet the move */
        if (m == 9) release(&h, NULL);
    }
    long long moved = stat_of(home, "errorstats", "errorstat_MOVED:count=") +
                      stat_of(away, "errorstats", "errorstat_MOVED:count=") - moved0;
    run_until(&w.acq, 5000, NULL);
    printf("# slot %d moved 20 times (%d atomically, CLUSTER MIGRATESLOTS): %lld MOVED answered; "
           "%d renewals and %d attempts failed; the waiter: %s\n",
           slot, atomic, moved, co.events[REDLEASE_EV_RENEW_FAILED], co.events[REDLEASE_EV_ATTEMPT_FAILED],
           redlease_strerror(w.acq_st));
    CHECK(moved > 0);
    CHECK_EQ(co.events[REDLEASE_EV_RENEW_FAILED], 0);
    CHECK_EQ(co.events[REDLEASE_EV_ATTEMPT_FAILED], 0);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(o[i].lost, 0);
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
    }
    CHECK_EQ(w.acq_st, REDLEASE_OK);
    CHECK_EQ(w.lost, 0);
    for (int i = 0; i < 3; i++) release(&o[i], NULL);
    release(&w, NULL);
    redlease_client_free(c2);
    finish(c, &co);
}

/* Leases on one primary (half with replica_acks = 1), a waiter; the
 * primary is killed and its replica takes over. */
static void test_cluster_primary_killed(void)
{
    NEED_CLUSTER();
    obs co = {0}, o[NLEASES], w = {0}, h = {0};
    memset(o, 0, sizeof o);
    redlease_client *c = cluster_client(&co);
    int victim = 2, held_there = 0;
    char busy[32], key[64];
    int busy_slot = 0;
    for (int i = 0; owner_of(busy_slot) != victim; i++) busy_slot = 1000 * i;
    name_in_slot(busy, sizeof busy, "cl-busy", busy_slot);
    snprintf(key, sizeof key, "lock:{%s}", busy);
    for (int i = 0; i < NLEASES; i++) {
        char res[32];
        snprintf(res, sizeof res, "cl-fail-%d", i);
        redlease_lock_options lo = lopts(15000, 3000, 0);
        lo.replica_acks = i % 2;
        lo.replica_timeout_ms = 400 * S;
        hold_real(c, &o[i], res, lo);
        held_there += owner_of(keyslot(redlease_lock_key(o[i].lk))) == victim;
    }
    CHECK(held_there > 0);
    obs ho = {0};
    redlease_client_options hco = cluster_opts(seeds);
    redlease_client *c2 = client_with(&hco, &ho);
    /* a resource on the victim, held by c2, waited for by c */
    hold_real(c2, &h, busy, lopts(15000, 3000, 0));
    acquire(c, &w, busy, lopts(5000, 30000, 0));
    srv_kill(&node[victim]);
    int64_t killed_at = mono_ms();
    int64_t end = killed_at + 30000 * S;
    int seen_unheld = 0, settled = 0;
    while (mono_ms() < end && !settled) {
        testloop_run_once(5);
        int confirmed, lost;
        count_leases(o, NLEASES, &confirmed, &lost, &seen_unheld);
        settled = confirmed + lost == NLEASES && seen_unheld && owner_of(busy_slot) != victim;
    }
    int lost_acked = 0, lost_plain = 0;
    for (int i = 0; i < NLEASES; i++)
        if (o[i].lost) {
            CHECK_EQ(o[i].lost_reason, REDLEASE_LOST_NOT_OWNER);
            *(i % 2 ? &lost_acked : &lost_plain) += 1;
        }
    printf("# primary killed: %d leases on it; lost %d of %d with replica_acks 1, %d of %d "
           "without; unconfirmed seen %d; all confirmed or lost %lld ms after the kill\n",
           held_there, lost_acked, NLEASES / 2, lost_plain, NLEASES / 2, seen_unheld,
           (long long)(mono_ms() - killed_at));
    CHECK(settled);
    CHECK_EQ(lost_acked, 0);
    CHECK_EQ(w.acq, 0);
    release(&h, NULL);
    run_until(&w.acq, 10000, NULL);
    CHECK_EQ(w.acq_st, REDLEASE_OK);
    release(&w, NULL);
    for (int i = 0; i < NLEASES; i++) release(&o[i], NULL);
    redlease_client_free(c2);
    finish(c, &co);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case cases[] = {
        TEST_CASE(test_cluster_options_checked),
        TEST_CASE(test_cluster_leases_across_slots),
        TEST_CASE(test_cluster_queue_hands_over),
        TEST_CASE(test_cluster_semaphore_and_shared),
        TEST_CASE(test_cluster_slot_migration),
        TEST_CASE(test_cluster_slot_moves_back_and_forth),
        TEST_CASE(test_cluster_primary_killed),
    };
    int rc = run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
    stop_all();
    rig_stop();
    return rc;
}
