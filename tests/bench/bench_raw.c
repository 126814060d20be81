/* SPDX-License-Identifier: MIT */
/* The floor: what a C program gets from hiredis and libev with no library
 * at all. The same commands redlease sends (SET NX PX to acquire, the
 * compare-and-delete and compare-and-pexpire scripts by EVALSHA), written
 * by hand with argv calls, one connection, libev timers. No timeouts, no
 * reconnects, no local deadline: what it skips is what redlease adds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libev.h>

#include "bench.h"
#include "identity.h"
#include "scripts.h"

static struct {
    struct ev_loop *loop;
    redisAsyncContext *ac;
    int connected;
    char *release_sha, *renew_sha;
    double end_us;
    long cycles, failed;
    int active;
    /* " RECORD" after each token (src/identity.h), or "": the floor with
     * and without what redlease writes of who holds */
    char tail[RDL_RECORD_MAX + 2];
    size_t tail_len;
    int sliced; /* bench_raw_id_pairs: slices end by time, whatever BENCH_CYCLES */
} R;

static void on_connect(const redisAsyncContext *ac, int status)
{
    (void)ac;
    R.connected = status == REDIS_OK ? 1 : -1;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)ac, (void)status;
    R.ac = NULL;
}

static void raw_open(void)
{
    R.release_sha = bench_redis_script_load(rdl_script_src[RDL_SCRIPT_RELEASE]);
    R.renew_sha = bench_redis_script_load(rdl_script_src[RDL_SCRIPT_RENEW]);
    if (!R.release_sha || !R.renew_sha) bench_die("SCRIPT LOAD failed");
    R.loop = ev_loop_new(EVFLAG_AUTO);
    R.ac = redisAsyncConnect(bench_host, bench_port);
    if (!R.ac || R.ac->err || redisLibevAttach(R.loop, R.ac) != REDIS_OK) bench_die("raw connect");
    redisAsyncSetConnectCallback(R.ac, on_connect);
    redisAsyncSetDisconnectCallback(R.ac, on_disconnect);
    R.connected = 0;
    while (!R.connected) ev_run(R.loop, EVRUN_ONCE);
    if (R.connected < 0) bench_die("raw connect failed");
}

static void raw_close(void)
{
    if (R.ac) redisAsyncDisconnect(R.ac);
    ev_run(R.loop, 0); /* until hiredis has let go of the socket */
    ev_loop_destroy(R.loop);
    free(R.release_sha);
    free(R.renew_sha);
    memset(&R, 0, sizeof R);
}

/* ------------------------------------------------ acquire -> release */
typedef struct chain {
    char key[32];
    size_t keylen;
    char tok[33];
    char value[RDL_VALUE_MAX + 1]; /* the token, and the record when asked */
} chain;

static void chain_start(chain *ch);

static void on_released(redisAsyncContext *ac, void *reply, void *arg)
{
    (void)ac;
    if (!reply) return;
    R.cycles++;
    if (R.sliced ? bench_now_us() < R.end_us : bench_go_on(R.cycles, R.end_us)) {
        chain_start(arg);
    } else if (--R.active == 0) {
        ev_break(R.loop, EVBREAK_ALL);
    }
}

static void on_set(redisAsyncContext *ac, void *reply, void *arg)
{
    redisReply *r = reply;
    chain *ch = arg;
    if (!r) return;
    if (r->type != REDIS_REPLY_STATUS) R.failed++;
    const char *argv[5] = {"EVALSHA", R.release_sha, "1", ch->key, ch->tok};
    size_t len[5] = {7, 40, 1, ch->keylen, 32};
    redisAsyncCommandArgv(ac, on_released, ch, 5, argv, len);
}

static void chain_start(chain *ch)
{
    bench_token(ch->tok);
    memcpy(ch->value, ch->tok, 32);
    memcpy(ch->value + 32, R.tail, R.tail_len);
    const char *argv[6] = {"SET", ch->key, ch->value, "NX", "PX", "30000"};
    size_t len[6] = {3, ch->keylen, 32 + R.tail_len, 2, 2, 5};
    redisAsyncCommandArgv(R.ac, on_set, ch, 6, argv, len);
}

/* Writes redlease's record of this process after each token from now on
 * (record 1), or none (0). */
static void raw_record(int record)
{
    R.tail_len = 0;
    if (record) { /* this process's, as redlease's client writes it */
        rdl_identity id;
        rdl_identity_of_process(&id, NULL);
        R.tail[0] = ' ';
        R.tail_len = 1 + rdl_identity_record(&id, (int64_t)time(NULL) * 1000, 0, R.tail + 1);
    }
}

/* Cycles the chains on the open connection until R.end_us (or
 * BENCH_CYCLES): their count, seconds and the server's CPU in *out. */
static void raw_run(chain *ch, int chains, double seconds, bench_cycles *out)
{
    double cpu0 = bench_redis_cpu_us(), t0 = bench_now_us();
    R.cycles = 0;
    R.end_us = t0 + seconds * 1e6;
    R.active = chains;
    for (int i = 0; i < chains; i++) chain_start(&ch[i]);
    unsigned iter0 = ev_iteration(R.loop);
    ev_run(R.loop, 0);
    out->seconds = (bench_now_us() - t0) / 1e6;
    out->redis_cpu_us = bench_redis_cpu_us() - cpu0;
    out->cycles = R.cycles;
    if (getenv("BENCH_VERBOSE") && !R.sliced)
        fprintf(stderr, "raw cycles: %ld cycles, %.4f loop iterations per cycle\n", R.cycles,
                (double)(ev_iteration(R.loop) - iter0) / (double)(R.cycles ? R.cycles : 1));
}

static chain *chains_new(int chains)
{
    chain *ch = calloc((size_t)chains, sizeof *ch);
    if (!ch) bench_die("out of memory");
    for (int i = 0; i < chains; i++) ch[i].keylen = (size_t)snprintf(ch[i].key, sizeof ch[i].key, "lock:{c%d}", i);
    return ch;
}

int bench_raw_cycles(int chains, double seconds, int record, bench_cycles *out)
{
    raw_open();
    raw_record(record);
    chain *ch = chains_new(chains);
    raw_run(ch, chains, seconds, out);
    long failed = R.failed;
    raw_close();
    free(ch);
    return failed ? -1 : 0;
}

int bench_raw_id_pairs(int pairs, double slice_s, bench_cycles out[2], double *ratio)
{
    raw_open();
    R.sliced = 1;
    chain *ch = chains_new(1);
    memset(out, 0, 2 * sizeof *out);
    for (int p = 0; p < pairs; p++) {
        bench_cycles c[2];
        /* ABBA: neither side always runs first in a pair */
        for (int i = 0; i < 2; i++) {
            int record = (p + i) % 2;
            raw_record(record);
            raw_run(ch, 1, slice_s, &c[record]);
            out[record].cycles += c[record].cycles;
            out[record].seconds += c[record].seconds;
            out[record].redis_cpu_us += c[record].redis_cpu_us;
        }
        ratio[p] = (c[1].cycles / c[1].seconds) / ((c[0].cycles ? c[0].cycles : 1) / c[0].seconds);
    }
    long failed = R.failed;
    raw_close();
    free(ch);
    return failed ? -1 : 0;
}

/* ------------------------------------------------ a semaphore's floor */
/* What a semaphore kept by scripts costs at the least: the holders in a
 * sorted set by the server's clock, the kind in the lock key, weight 1, no
 * queue, no fence, no weights. The acquire drops the dead (a write only
 * when there are some), counts, and writes the deadline, the kind and the
 * set's life; the release drops the holder, and the last one out deletes
 * both keys. What redlease's semaphore does beyond this (the queue's
 * order, weights, a renewal that refuses what the count lost) is its
 * distance from this floor; this floor's distance from the mutex's is what
 * no script-kept semaphore can close on that server. */
static const char sem_floor_acquire[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[2] then return redis.error_reply('KIND') end\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
    "if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then\n"
    "  return 0\n"
    "end\n"
    "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])\n"
    "redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])\n"
    "redis.call('PEXPIRE', KEYS[2], ARGV[4])\n"
    "return 1\n";
static const char sem_floor_release[] =
    "if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end\n"
    "if redis.call('ZCARD', KEYS[2]) == 1 then\n"
    "  redis.call('DEL', KEYS[1], KEYS[2])\n"
    "else\n"
    "  redis.call('ZREM', KEYS[2], ARGV[1])\n"
    "end\n"
    "return 1\n";

static struct {
    char *acquire_sha, *release_sha;
} F;

typedef struct sem_chain {
    char key[32], holders[40];
    size_t keylen, holderslen;
    char tok[33];
} sem_chain;

static void sem_chain_start(sem_chain *ch);

static void on_sem_released(redisAsyncContext *ac, void *reply, void *arg)
{
    redisReply *r = reply;
    (void)ac;
    if (!r) return;
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) R.failed++;
    R.cycles++;
    if (bench_go_on(R.cycles, R.end_us)) {
        sem_chain_start(arg);
    } else if (--R.active == 0) {
        ev_break(R.loop, EVBREAK_ALL);
    }
}

static void on_sem_acquired(redisAsyncContext *ac, void *reply, void *arg)
{
    redisReply *r = reply;
    sem_chain *ch = arg;
    if (!r) return;
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) R.failed++;
    const char *argv[6] = {"EVALSHA", F.release_sha, "2", ch->key, ch->holders, ch->tok};
    size_t len[6] = {7, 40, 1, ch->keylen, ch->holderslen, 32};
    redisAsyncCommandArgv(ac, on_sem_released, ch, 6, argv, len);
}

static void sem_chain_start(sem_chain *ch)
{
    bench_token(ch->tok);
    const char *argv[9] = {"EVALSHA", F.acquire_sha, "2", ch->key, ch->holders, ch->tok,
                           "semaphore 4", "4", "30000"};
    size_t len[9] = {7, 40, 1, ch->keylen, ch->holderslen, 32, 11, 1, 5};
    redisAsyncCommandArgv(R.ac, on_sem_acquired, ch, 9, argv, len);
}

int bench_raw_sem_cycles(int chains, double seconds, bench_cycles *out)
{
    F.acquire_sha = bench_redis_script_load(sem_floor_acquire);
    F.release_sha = bench_redis_script_load(sem_floor_release);
    if (!F.acquire_sha || !F.release_sha) bench_die("SCRIPT LOAD failed");
    raw_open();
    sem_chain *ch = calloc((size_t)chains, sizeof *ch);
    for (int i = 0; i < chains; i++) {
        ch[i].keylen = (size_t)snprintf(ch[i].key, sizeof ch[i].key, "floor:{s%d}", i);
        ch[i].holderslen = (size_t)snprintf(ch[i].holders, sizeof ch[i].holders, "floor:{s%d}:holders", i);
    }
    double cpu0 = bench_redis_cpu_us(), t0 = bench_now_us();
    R.end_us = t0 + seconds * 1e6;
    R.active = chains;
    for (int i = 0; i < chains; i++) sem_chain_start(&ch[i]);
    ev_run(R.loop, 0);
    out->seconds = (bench_now_us() - t0) / 1e6;
    out->redis_cpu_us = bench_redis_cpu_us() - cpu0;
    out->cycles = R.cycles;
    long failed = R.failed;
    raw_close();
    free(ch);
    free(F.acquire_sha);
    free(F.release_sha);
    memset(&F, 0, sizeof F);
    return failed ? -1 : 0;
}

/* ------------------------------------------------ held leases */
typedef struct lease {
    ev_timer renew;
    char tok[33];
    uint8_t keylen;
    char key[];
} lease;

static struct {
    const bench_hold_spec *s;
    lease **all;
    long next, acquired, in_flight, renewals, lost, sent;
} H;

#define IN_FLIGHT 10000 /* acquires on the wire at once while taking them */

static void hold_next(void);

static void on_renewed(redisAsyncContext *ac, void *reply, void *arg)
{
    redisReply *r = reply;
    (void)ac, (void)arg;
    if (!r) return;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        H.renewals++;
    } else {
        H.lost++;
    }
}

static void renew_due(struct ev_loop *loop, ev_timer *t, int revents)
{
    lease *l = (lease *)t;
    char ttl[24];
    (void)loop, (void)revents;
    H.sent++;
    int n = snprintf(ttl, sizeof ttl, "%lld", (long long)H.s->ttl_ms);
    const char *argv[6] = {"EVALSHA", R.renew_sha, "1", l->key, l->tok, ttl};
    size_t len[6] = {7, 40, 1, l->keylen, 32, (size_t)n};
    redisAsyncCommandArgv(R.ac, on_renewed, l, 6, argv, len);
}

static void on_taken(redisAsyncContext *ac, void *reply, void *arg)
{
    redisReply *r = reply;
    lease *l = arg;
    (void)ac;
    if (!r) return;
    H.in_flight--;
    if (r->type != REDIS_REPLY_STATUS) bench_die("raw: a held lease's SET NX failed");
    H.acquired++;
    double every = (double)H.s->renew_ms / 1e3;
    ev_timer_init(&l->renew, renew_due, every, every);
    ev_timer_start(R.loop, &l->renew);
    hold_next();
}

static void hold_next(void)
{
    char ttl[24];
    int n = snprintf(ttl, sizeof ttl, "%lld", (long long)H.s->ttl_ms);
    while (H.next < H.s->n && H.in_flight < IN_FLIGHT) {
        char key[40];
        int kl = snprintf(key, sizeof key, "lock:{r%ld}", H.next);
        lease *l = malloc(sizeof *l + (size_t)kl + 1);
        if (!l) bench_die("out of memory");
        memcpy(l->key, key, (size_t)kl + 1);
        l->keylen = (uint8_t)kl;
        bench_token(l->tok);
        H.all[H.next++] = l;
        H.in_flight++;
        const char *argv[6] = {"SET", l->key, l->tok, "NX", "PX", ttl};
        size_t len[6] = {3, (size_t)kl, 32, 2, 2, (size_t)n};
        redisAsyncCommandArgv(R.ac, on_taken, l, 6, argv, len);
    }
}

static void hold_stop(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)t, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

int bench_raw_hold(const bench_hold_spec *s, bench_held *out)
{
    memset(out, 0, sizeof *out);
    raw_open();
    memset(&H, 0, sizeof H);
    H.s = s;
    H.all = malloc((size_t)s->n * sizeof *H.all);
    out->rss_before = bench_rss_bytes();
    out->heap_before = bench_heap_bytes();
    hold_next();
    while (H.acquired < s->n) ev_run(R.loop, EVRUN_ONCE);
    out->rss_held = bench_rss_bytes();
    out->heap_held = bench_heap_bytes();
    double cpu0 = bench_cpu_us(), t0 = bench_now_us();
    ev_timer stop;
    ev_timer_init(&stop, hold_stop, s->seconds, 0);
    ev_timer_start(R.loop, &stop);
    BENCH_COLLECT();
    long sent0 = H.sent, renewed0 = H.renewals;
    ev_run(R.loop, 0);
    BENCH_COLLECT();
    if (getenv("BENCH_VERBOSE"))
        fprintf(stderr, "raw window: renewed %ld commands %ld\n", H.renewals - renewed0, H.sent - sent0);
    out->cpu_us = bench_cpu_us() - cpu0;
    out->seconds = (bench_now_us() - t0) / 1e6;
    out->rss_end = bench_rss_bytes();
    out->leases = H.acquired;
    out->renewals = H.renewals;
    out->lost = H.lost;
    for (long i = 0; i < s->n; i++) {
        ev_timer_stop(R.loop, &H.all[i]->renew);
        free(H.all[i]);
    }
    free(H.all);
    raw_close();
    return 0;
}
