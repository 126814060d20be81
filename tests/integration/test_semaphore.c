/* SPDX-License-Identifier: MIT */
/* The counting semaphore on a real server. First its scripts alone
 * (src/scripts.c, RDL_SCRIPT_SEM_*): admission within the limit, weights,
 * holders timed by the server's clock and pruned by every script, strict
 * renewal, release, fences, and a resource of another kind or limit
 * refused before anything is written. Each script goes by EVALSHA under
 * the library's own SHA-1 (EVAL once on NOSCRIPT), so a digest that does
 * not match its text fails here. Then the same through the API (limit,
 * weight): holders and waiters of separate clients, the kinds refused
 * both ways, a holder removed behind its back, fences; and shared holders
 * beside exclusive ones (shared): who waits for whom, the handover to an
 * exclusive waiter, kinds, loss and fences. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rig.h"
#include "scripts.h"

#define KIND "lock:{sem}"
#define HOLDERS "lock:{sem}:holders"
#define WEIGHTS "lock:{sem}:weights"
#define FENCE "lock:{sem}:fence"
#define QUEUE "lock:{sem}:queue"
#define WAITERS "lock:{sem}:waiters"

static const char *tok(int i)
{
    static char t[8][33];
    snprintf(t[i], sizeof t[i], "%032x", i + 1);
    return t[i];
}

/* Holder i's record (src/identity.h): an acquire's last argument. */
static const char *record(int i)
{
    static char r[8][64];
    snprintf(r[i], sizeof r[i], "4242 1700000000000 host-%d same label", i);
    return r[i];
}

/* Holder i's record as the weights hash keeps it ("" when none). */
static const char *kept_record(int i)
{
    static char v[64];
    redisReply *r = adm("HGET %s #%s", WEIGHTS, tok(i));
    v[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING) snprintf(v, sizeof v, "%s", r->str);
    freeReplyObject(r);
    return v;
}

/* Runs script s with the keys and arguments given (nkeys first); the
 * reply, which the caller frees. */
static redisReply *run(int s, int nkeys, int nargs, const char **words)
{
    const char *argv[20];
    size_t lens[20];
    char n[8];
    snprintf(n, sizeof n, "%d", nkeys);
    argv[0] = "EVALSHA";
    argv[1] = rdl_script_sha(s);
    argv[2] = n;
    for (int i = 0; i < nkeys + nargs; i++) argv[3 + i] = words[i];
    for (int i = 0; i < 3 + nkeys + nargs; i++) lens[i] = strlen(argv[i]);
    redisReply *r = redisCommandArgv(admin_ctx, 3 + nkeys + nargs, argv, lens);
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        argv[0] = "EVAL";
        argv[1] = rdl_script_src[s];
        lens[0] = 4;
        lens[1] = strlen(argv[1]);
        r = redisCommandArgv(admin_ctx, 3 + nkeys + nargs, argv, lens);
    }
    return r;
}

/* An acquire's answer as an integer; errors as -99999999 with the text
 * kept in err (when not NULL). The server admits up to cap of limit. */
static long long acquire_cap(int t, const char *weight, const char *limit, const char *cap, const char *ttl,
                             int fenced, char *err, size_t size)
{
    /* not queued (channel ""): the queue has its own cases through the API */
    const char *w[] = {KIND, HOLDERS, WEIGHTS, QUEUE, WAITERS, FENCE, tok(t), weight, limit, cap, ttl,
                       "1000", "100", "", "600000", record(t)};
    const char *nofence[] = {KIND, HOLDERS, WEIGHTS, QUEUE, WAITERS, tok(t), weight, limit, cap, ttl,
                             "1000", "100", "", record(t)};
    redisReply *r = fenced ? run(RDL_SCRIPT_SEM_ACQUIRE, 6, 10, w) : run(RDL_SCRIPT_SEM_ACQUIRE, 5, 9, nofence);
    long long v = -99999999;
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    if (r && r->type == REDIS_REPLY_ERROR && err) snprintf(err, size, "%s", r->str);
    freeReplyObject(r);
    return v;
}

static long long acquire_w(int t, const char *weight, const char *limit, const char *ttl, int fenced,
                           char *err, size_t size)
{
    return acquire_cap(t, weight, limit, limit, ttl, fenced, err, size);
}

static long long sem_renew(int t, const char *limit, const char *ttl)
{
    const char *w[] = {KIND, HOLDERS, WEIGHTS, tok(t), limit, ttl};
    redisReply *r = run(RDL_SCRIPT_SEM_RENEW, 3, 3, w);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99999999;
    freeReplyObject(r);
    return v;
}

static long long sem_release(int t)
{
    const char *w[] = {KIND, HOLDERS, WEIGHTS, QUEUE, WAITERS, tok(t)};
    redisReply *r = run(RDL_SCRIPT_SEM_RELEASE, 5, 1, w);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99999999;
    freeReplyObject(r);
    return v;
}

static long long used(void)
{
    redisReply *r = adm("HGET %s used", WEIGHTS);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

static void clean(void) { ADM("DEL %s %s %s %s", KIND, HOLDERS, WEIGHTS, FENCE); }

/* Weights add up to the limit and no further; a release gives its weight
 * back; the last one out takes the keys with it. */
static void test_sem_limit_and_weights(void)
{
    clean();
    int64_t t0 = mono_ms();
    CHECK_EQ(acquire_w(0, "2", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_w(1, "1", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(used(), 3);
    CHECK_STR(kept_record(0), record(0)); /* who holds, beside the weight */
    CHECK_STR(kept_record(1), record(1));
    long long full = acquire_w(2, "1", "3", "5000", 0, NULL, 0);
    int64_t took = mono_ms() - t0; /* margins from what was measured */
    CHECK(full < 0 && -full - 1 <= 5000 && -full - 1 >= 5000 - took - 1); /* until the first deadline */
    CHECK_EQ(used(), 3);
    CHECK_STR(get_bin(KIND, strlen(KIND)), "semaphore 3");
    /* an attempt of a holder that was admitted after all counts once */
    CHECK_EQ(acquire_w(1, "1", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(used(), 3);
    CHECK_EQ(sem_release(0), 1);
    CHECK_EQ(sem_release(0), 0); /* once */
    CHECK_EQ(used(), 1);
    CHECK_STR(kept_record(0), ""); /* the record goes with the holder */
    CHECK_STR(kept_record(1), record(1));
    CHECK_EQ(acquire_w(2, "2", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_w(3, "1", "3", "5000", 0, NULL, 0) < 0, 1);
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(sem_release(2), 1);
    CHECK_EQ(admin_int("EXISTS %s", KIND) + admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", WEIGHTS), 0);
}

/* A quorum's member admits up to its capacity, not the limit (design
 * 12.3); the kind is the limit's all the same, and one asking with the
 * whole limit as its capacity shares the count. */
static void test_sem_capacity_below_the_limit(void)
{
    clean();
    CHECK_EQ(acquire_cap(0, "1", "3", "2", "5000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_cap(1, "1", "3", "2", "5000", 0, NULL, 0), 1);
    CHECK(acquire_cap(2, "1", "3", "2", "5000", 0, NULL, 0) < 0); /* 2 of its 2 */
    CHECK_EQ(used(), 2);
    CHECK_STR(get_bin(KIND, strlen(KIND)), "semaphore 3");
    CHECK_EQ(acquire_cap(2, "1", "3", "3", "5000", 0, NULL, 0), 1); /* the limit's 3 */
    CHECK_EQ(used(), 3);
    CHECK_EQ(sem_release(0), 1);
    CHECK(acquire_cap(3, "2", "3", "2", "5000", 0, NULL, 0) < 0); /* 2 used + 2 > 2 */
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(sem_release(2), 1);
    CHECK_EQ(acquire_cap(3, "2", "3", "2", "5000", 0, NULL, 0), 1);
    CHECK_EQ(sem_release(3), 1);
}

/* The keys live as long as the last holder's deadline, by the server's
 * clock; a renewal moves it. */
static void test_sem_keys_live_as_long_as_the_last_holder(void)
{
    clean();
    int64_t t0 = mono_ms();
    CHECK_EQ(acquire_w(0, "1", "2", "3000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_w(1, "1", "2", "8000", 0, NULL, 0), 1);
    long long p = admin_int("PTTL %s", KIND), ph = admin_int("PTTL %s", HOLDERS),
              pw = admin_int("PTTL %s", WEIGHTS);
    int64_t took = mono_ms() - t0; /* margins from what was measured */
    CHECK(p <= 8000 && p >= 8000 - took - 1);
    CHECK(ph <= 8000 && ph >= 8000 - took - 1 && pw <= 8000 && pw >= 8000 - took - 1);
    t0 = mono_ms();
    CHECK_EQ(sem_renew(0, "2", "20000"), 1);
    p = admin_int("PTTL %s", KIND);
    took = mono_ms() - t0;
    CHECK(p <= 20000 && p >= 20000 - took - 1);
    CHECK_EQ(sem_release(0), 1);
    p = admin_int("PTTL %s", KIND);
    CHECK(p <= 8000 && p > 0); /* back to the one left (8 s from its acquire) */
    CHECK_EQ(sem_release(1), 1);
}

/* A holder past its deadline (server time) is pruned by the next script
 * that reads the set: its weight comes back, and its renewal is refused,
 * never re-added. */
static void test_sem_dead_holders_pruned_and_never_renewed(void)
{
    clean();
    /* the holder's deadline (server time, on this machine's clock) lies
     * between the send + 300 and the answer + 300 */
    int64_t sent = mono_ms();
    CHECK_EQ(acquire_w(0, "2", "2", "300", 0, NULL, 0), 1);
    int64_t answered = mono_ms();
    long long early = acquire_w(1, "1", "2", "5000", 0, NULL, 0);
    if (mono_ms() - sent < 300) CHECK(early < 0); /* still held, as far as this run can tell */
    while (mono_ms() - answered < 310) usleep(10 * 1000); /* past its deadline by the server's clock */
    if (early < 0) CHECK_EQ(acquire_w(1, "1", "2", "5000", 0, NULL, 0), 1);
    CHECK_EQ(used(), 1);
    CHECK_STR(kept_record(0), ""); /* pruned with its weight */
    CHECK_STR(kept_record(1), record(1));
    CHECK_EQ(sem_renew(0, "2", "5000"), 0);
    CHECK_EQ(admin_int("ZSCORE %s " "00000000000000000000000000000001", HOLDERS), -99); /* nil */
    CHECK_EQ(used(), 1);
    CHECK_EQ(sem_release(0), 0);
    CHECK_EQ(sem_release(1), 1);
}

/* A holder whose weight is gone (the weights' key lost: all three keys
 * have a TTL, so a volatile-* maxmemory policy may evict that one alone)
 * is no holder: the count restarted without it. Its renewal is refused,
 * as a mutex's is once its key is lost, and an attempt of it is counted
 * as a newcomer's. Were it renewed, it would hold on uncounted, beside
 * holders admitted up to the limit, for as long as it renews. */
static void test_sem_holder_without_weight_is_no_holder(void)
{
    clean();
    CHECK_EQ(acquire_w(0, "2", "2", "5000", 0, NULL, 0), 1);
    ADM("DEL %s", WEIGHTS);
    CHECK_EQ(acquire_w(1, "2", "2", "5000", 0, NULL, 0), 1); /* the count restarted */
    CHECK_EQ(sem_renew(0, "2", "5000"), 0);
    CHECK(acquire_w(0, "2", "2", "5000", 0, NULL, 0) < 0); /* full, its weight counted now */
    CHECK_EQ(used(), 2);
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(acquire_w(0, "2", "2", "5000", 0, NULL, 0), 1);
    CHECK_EQ(used(), 2);
    CHECK_EQ(sem_release(0), 1);
    CHECK_EQ(admin_int("EXISTS %s", KIND) + admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", WEIGHTS), 0);
}

/* A holder holds a semaphore of its own limit. With the kind lost (the
 * lock key evicted alone), an acquire of another limit finds nothing to
 * refuse it by and makes the resource its own, counting the holders it
 * finds: their renewals are refused, as for a mutex's holder whose key was
 * lost. Were they renewed, a holder of one permit would hold beside
 * another, for as long as it renews. */
static void test_sem_holder_of_another_limit_is_no_holder(void)
{
    clean();
    CHECK_EQ(acquire_w(0, "1", "1", "5000", 0, NULL, 0), 1);
    ADM("DEL %s", KIND);
    CHECK_EQ(acquire_w(1, "1", "2", "5000", 0, NULL, 0), 1); /* holder 0 counted: 2 of 2 */
    CHECK_STR(get_bin(KIND, strlen(KIND)), "semaphore 2");
    CHECK_EQ(sem_renew(0, "1", "5000"), 0);
    CHECK_EQ(sem_renew(1, "2", "5000"), 1);
    CHECK_EQ(used(), 2);
    CHECK_EQ(sem_release(0), 1); /* its weight goes back */
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(admin_int("EXISTS %s", KIND) + admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", WEIGHTS), 0);
}

/* A fence that cannot be minted (a foreign value at the counter) fails
 * the acquire before anything of the holder is written: Redis does not
 * undo a script's writes, and a weight counted for a token that never
 * reached the holders' set would stay in "used" for good. */
static void test_sem_failed_fence_leaves_nothing(void)
{
    clean();
    char err[128] = "";
    ADM("SET %s not-a-number", FENCE);
    CHECK_EQ(acquire_w(0, "2", "2", "5000", 1, err, sizeof err), -99999999);
    printf("# %s\n", err);
    CHECK(err[0] != '\0');
    CHECK_EQ(admin_int("EXISTS %s", WEIGHTS) + admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", KIND), 0);
    ADM("DEL %s", FENCE);
    CHECK_EQ(acquire_w(1, "2", "2", "5000", 0, NULL, 0), 1); /* all of it free */
    CHECK_EQ(sem_release(1), 1);
    clean();
}

/* Fences come from the resource's counter, only for an admitted holder,
 * and increase. */
static void test_sem_fences_increase(void)
{
    clean();
    long long f1 = acquire_w(0, "1", "2", "5000", 1, NULL, 0);
    long long f2 = acquire_w(1, "1", "2", "5000", 1, NULL, 0);
    CHECK(f1 > 1 && f2 > f1);
    CHECK(acquire_w(2, "1", "2", "5000", 1, NULL, 0) < 0); /* full: nothing minted */
    CHECK_EQ(sem_release(0), 1);
    long long f3 = acquire_w(2, "1", "2", "5000", 1, NULL, 0);
    CHECK_EQ(f3, f2 + 1);
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(sem_release(2), 1);
}

/* A resource of another kind, or a semaphore of another limit, is refused
 * with what it is, and nothing is written. */
static void test_sem_other_kinds_refused(void)
{
    char err[200] = "";
    clean();
    CHECK_EQ(acquire_w(0, "1", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_w(1, "1", "4", "5000", 1, err, sizeof err), -99999999);
    CHECK_STR(err, "KIND a semaphore of 3 permits");
    CHECK_EQ(used(), 1);
    CHECK_EQ(admin_int("EXISTS %s", FENCE), 0);
    CHECK_EQ(sem_release(0), 1);
    /* a mutex's key */
    ADM("SET %s %s PX 5000", KIND, tok(5));
    CHECK_EQ(acquire_w(1, "1", "3", "5000", 0, err, sizeof err), -99999999);
    CHECK_STR(err, "KIND a mutex");
    CHECK_EQ(admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", WEIGHTS), 0);
    CHECK_STR(get_bin(KIND, strlen(KIND)), tok(5));
    /* the mutex's own scripts find the semaphore taken, never theirs */
    CHECK_EQ(sem_renew(5, "3", "5000"), 0);
    CHECK_EQ(sem_release(5), 0);
    /* not a string at all */
    clean();
    ADM("HSET %s f v", KIND);
    CHECK_EQ(acquire_w(1, "1", "3", "5000", 0, err, sizeof err), -99999999);
    CHECK(strstr(err, "WRONGTYPE") != NULL);
    clean();
}

/* ------------------------------------------------------ through the API */

static redlease_lock_options sopts(int limit, int weight, int64_t wait)
{
    redlease_lock_options lo = lopts(5000, wait, 0);
    lo.limit = limit;
    lo.weight = weight;
    return lo;
}

static long long sem_used(const char *res)
{
    char k[64];
    snprintf(k, sizeof k, "lock:{%s}:weights", res);
    redisReply *r = adm("HGET %s used", k);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* Three clients on a semaphore of 3: weights 2 and 1 fill it, a third
 * (weight 1) is refused at once without a wait and admitted within its
 * wait once a release frees the weight; the last out takes the keys. */
static void test_sem_api_limit_and_waiting(void)
{
    obs o[4] = {{0}};
    redlease_client *c[3];
    for (int i = 0; i < 3; i++) c[i] = real_client(&o[i], NULL);
    hold_real(c[0], &o[0], "api-sem", sopts(3, 2, 0));
    hold_real(c[1], &o[1], "api-sem", sopts(3, 1, 0));
    CHECK_EQ(sem_used("api-sem"), 3);
    CHECK_EQ(admin_int("ZCARD %s", "lock:{api-sem}:holders"), 2);
    CHECK_STR(get_bin("lock:{api-sem}", 14), "semaphore 3");
    acquire(c[2], &o[2], "api-sem", sopts(3, 1, 0));
    run_until(&o[2].acq, 2000, o[2].lk);
    CHECK_EQ(o[2].acq_st, REDLEASE_EBUSY);
    release(&o[2], NULL);
    acquire(c[2], &o[3], "api-sem", sopts(3, 1, 5000));
    run_for(100, o[3].lk); /* polls, full */
    CHECK_EQ(o[3].acq, 0);
    release(&o[0], NULL);
    run_until(&o[3].acq, 2000, NULL);
    CHECK_EQ(o[3].acq_st, REDLEASE_OK);
    CHECK_EQ(redlease_lock_held(o[3].lk), 1);
    CHECK_EQ(sem_used("api-sem"), 2);
    release(&o[1], NULL);
    release(&o[3], NULL);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{api-sem}") + admin_int("EXISTS %s", "lock:{api-sem}:holders") +
                 admin_int("EXISTS %s", "lock:{api-sem}:weights"),
             0);
    CHECK_EQ(o[0].rel_st, REDLEASE_OK);
    finish_all(c, o, 3);
}

/* An acquire that fails with EKIND, long before its wait would end, its
 * text naming what the resource is, after the server (the harness's
 * socket) that said so. */
static void expect_kind(redlease_client *c, const char *res, redlease_lock_options lo, const char *kind)
{
    char text[256];
    snprintf(text, sizeof text, "%s: %s", sock_path, kind);
    obs o = {0};
    int64_t t0 = mono_ms();
    acquire(c, &o, res, lo);
    run_until(&o.acq, 3000, o.lk);
    printf("# %s after %lld ms: %s\n", redlease_strerror(o.acq_st), (long long)(mono_ms() - t0),
           redlease_client_errstr(c));
    CHECK_EQ(o.acq_st, REDLEASE_EKIND);
    CHECK_STR(redlease_client_errstr(c), text);
    release(&o, NULL);
}

/* One resource, one kind: a semaphore on a mutex's resource, one of
 * another limit, and a mutex on a semaphore's (queued, and polling) are
 * refused with EKIND within a wait of 10 s, and the holder is undisturbed. */
static void test_sem_api_other_kinds_refused(void)
{
    obs o[2] = {{0}};
    redlease_client *c[2];
    for (int i = 0; i < 2; i++) c[i] = real_client(&o[i], NULL);
    hold_real(c[0], &o[0], "api-kind", lopts(5000, 0, 0));
    expect_kind(c[1], "api-kind", sopts(2, 0, 10000), "KIND a mutex");
    CHECK_EQ(redlease_lock_held(o[0].lk), 1);
    CHECK(is_lease_value(get_bin("lock:{api-kind}", 15), o[0].lk));
    release(&o[0], NULL);

    obs h = {0};
    hold_real(c[0], &h, "api-kind", sopts(2, 0, 0));
    expect_kind(c[1], "api-kind", sopts(3, 0, 10000), "KIND a semaphore of 2 permits");
    expect_kind(c[1], "api-kind", lopts(5000, 10000, 0), "KIND a semaphore of 2 permits");
    redlease_lock_options poll = lopts(5000, 10000, 0);
    poll.wait_mode = REDLEASE_WAIT_POLL; /* its first attempt is SET NX: the script of the next says */
    expect_kind(c[1], "api-kind", poll, "KIND a semaphore of 2 permits");
    poll.fencing = 1;
    expect_kind(c[1], "api-kind", poll, "KIND a semaphore of 2 permits");
    CHECK_EQ(redlease_lock_held(h.lk), 1);
    CHECK_EQ(sem_used("api-kind"), 1);
    release(&h, NULL);
    CHECK_EQ(h.rel_st, REDLEASE_OK);
    finish_all(c, o, 2);
}

/* A holder taken out of the set behind its back (an operator, or its
 * deadline passed on a paused client) is lost at its next renewal and
 * never put back; its release then says ENOTHELD. */
static void test_sem_api_removed_holder_is_lost(void)
{
    obs o = {0};
    redlease_client *c = real_client(&o, NULL);
    redlease_lock_options lo = sopts(2, 0, 0);
    lo.ttl_ms = 600 * S;
    hold_real(c, &o, "api-lost", lo);
    const char *t = redlease_lock_token(o.lk);
    CHECK_EQ(admin_int("ZREM lock:{api-lost}:holders %s", t), 1);
    run_until(&o.lost, 1000, NULL);
    CHECK_EQ(o.lost, 1);
    CHECK_EQ(o.lost_reason, REDLEASE_LOST_NOT_OWNER);
    redisReply *r = adm("ZSCORE lock:{api-lost}:holders %s", t);
    CHECK(r && r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_ENOTHELD);
    ADM("DEL lock:{api-lost} lock:{api-lost}:holders lock:{api-lost}:weights");
    finish(c, &o);
}

/* Fences strictly increase over the acquisitions of one semaphore, held
 * together or one after another. */
static void test_sem_api_fences_increase(void)
{
    obs o[3] = {{0}};
    redlease_client *c = real_client(&o[0], NULL);
    redlease_lock_options lo = sopts(2, 0, 0);
    lo.fencing = 1;
    hold_real(c, &o[0], "api-fence", lo);
    hold_real(c, &o[1], "api-fence", lo);
    uint64_t f0 = redlease_lock_fence(o[0].lk), f1 = redlease_lock_fence(o[1].lk);
    printf("# fences %llu %llu\n", (unsigned long long)f0, (unsigned long long)f1);
    CHECK(f0 > 0 && f1 > f0);
    release(&o[0], NULL);
    hold_real(c, &o[2], "api-fence", lo);
    CHECK(redlease_lock_fence(o[2].lk) > f1);
    release(&o[1], NULL);
    release(&o[2], NULL);
    ADM("DEL lock:{api-fence}:fence");
    finish(c, &o[0]);
}

/* A semaphore's waiter in the queue: waits until it is its turn (its rank
 * in the queue) or 2 s pass. */
static void wait_rank(obs *o, const char *res, long long rank)
{
    char q[64];
    snprintf(q, sizeof q, "lock:{%s}:queue", res);
    int64_t end = mono_ms() + 2000 * S;
    long long r = -1;
    while (r != rank && mono_ms() < end) {
        testloop_run_once(5);
        redisReply *x = adm("ZRANK %s %s", q, redlease_lock_token(o->lk));
        r = x && x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
        freeReplyObject(x);
    }
    CHECK_EQ(r, rank);
}

/* Waiting in the queue, in order (docs/design.md, 12.5): a heavy waiter at
 * the head (weight 2 of 2) is not overtaken by the light ones behind it
 * when one permit frees; the release that frees the second wakes it at
 * once; its release admits both light ones, one waking the next, at once
 * too (every waiter's own checks are seconds away). */
static void test_sem_queue_in_order(void)
{
    enum { N = 5 };
    obs o[N] = {{0}};
    redlease_client *c[N];
    for (int i = 0; i < N; i++) c[i] = real_client(&o[i], NULL);
    redlease_lock_options lo = sopts(2, 1, 10000);
    lo.ttl_ms = 10000 * S;
    lo.wait_mode = REDLEASE_WAIT_QUEUE;
    lo.wait_retry_base_ms = lo.wait_retry_max_ms = 5000 * S; /* polling would be seen */
    hold_real(c[0], &o[0], "api-q", lo);
    hold_real(c[1], &o[1], "api-q", lo);
    redlease_lock_options heavy = lo;
    heavy.weight = 2;
    acquire(c[2], &o[2], "api-q", heavy);
    wait_rank(&o[2], "api-q", 0);
    acquire(c[3], &o[3], "api-q", lo);
    wait_rank(&o[3], "api-q", 1);
    acquire(c[4], &o[4], "api-q", lo);
    wait_rank(&o[4], "api-q", 2);
    release(&o[0], NULL); /* one permit free: the head needs two */
    run_for(300, o[3].lk);
    CHECK_EQ(o[2].acq + o[3].acq + o[4].acq, 0);
    CHECK_EQ(sem_used("api-q"), 1);
    int64_t t0 = mono_ms();
    release(&o[1], NULL);
    run_until(&o[2].acq, 2000, NULL);
    printf("# the heavy head held %lld ms after the release\n", (long long)(mono_ms() - t0));
    CHECK_EQ(o[2].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    CHECK_EQ(o[3].acq + o[4].acq, 0);
    t0 = mono_ms();
    release(&o[2], NULL);
    run_until(&o[3].acq, 2000, NULL);
    run_until(&o[4].acq, 2000, NULL);
    printf("# both light waiters held %lld ms after the heavy one's release\n",
           (long long)(mono_ms() - t0));
    CHECK_EQ(o[3].acq_st, REDLEASE_OK);
    CHECK_EQ(o[4].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{api-q}:queue"), 0);
    release(&o[3], NULL);
    release(&o[4], NULL);
    finish_all(c, o, N);
}

/* A waiter whose wait ends leaves the queue (its drop), so the one behind
 * it is not held up by it. */
static void test_sem_queue_waiter_gives_up(void)
{
    obs o[3] = {{0}};
    redlease_client *c[3];
    for (int i = 0; i < 3; i++) c[i] = real_client(&o[i], NULL);
    redlease_lock_options lo = sopts(1, 1, 10000);
    lo.ttl_ms = 10000 * S;
    lo.wait_mode = REDLEASE_WAIT_QUEUE;
    lo.wait_retry_base_ms = lo.wait_retry_max_ms = 5000 * S;
    hold_real(c[0], &o[0], "api-q2", lo);
    redlease_lock_options brief = lo;
    brief.wait_ms = 300 * S;
    acquire(c[1], &o[1], "api-q2", brief);
    wait_rank(&o[1], "api-q2", 0);
    acquire(c[2], &o[2], "api-q2", lo);
    wait_rank(&o[2], "api-q2", 1);
    run_until(&o[1].acq, 2000, NULL);
    CHECK_EQ(o[1].acq_st, REDLEASE_EBUSY);
    wait_rank(&o[2], "api-q2", 0); /* the one that gave up left */
    int64_t t0 = mono_ms();
    release(&o[0], NULL);
    run_until(&o[2].acq, 2000, NULL);
    CHECK_EQ(o[2].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    release(&o[1], NULL);
    release(&o[2], NULL);
    finish_all(c, o, 3);
}

/* ------------------------------------------------- shared and exclusive */

static redlease_lock_options shopts(int64_t ttl, int64_t wait)
{
    redlease_lock_options lo = lopts(ttl, wait, 0);
    lo.shared = 1;
    return lo;
}

/* An exclusive holder queued behind the shared holders (a mutex handle,
 * REDLEASE_WAIT_QUEUE; its retry timer far away, so only a handover is
 * seen). */
static redlease_lock_options xopts(int64_t ttl, int64_t wait)
{
    redlease_lock_options lo = lopts(ttl, wait, 0);
    lo.wait_mode = REDLEASE_WAIT_QUEUE;
    lo.wait_retry_base_ms = lo.wait_retry_max_ms = 5000 * S;
    return lo;
}

/* Two shared holders at once; an exclusive acquire is busy beside them,
 * and once queued stops a new shared holder from entering; the last
 * shared release hands the resource to it at once (its own timers are
 * seconds away); shared holders wait while it holds, and enter after its
 * release. Nobody is ever held beside an exclusive holder. */
static void test_shared_and_exclusive(void)
{
    enum { N = 4 };
    obs o[N + 2] = {{0}};
    redlease_client *c[N];
    const char *res = "rw";
    for (int i = 0; i < N; i++) c[i] = real_client(&o[i], NULL);
    hold_real(c[0], &o[0], res, shopts(10000, 0));
    hold_real(c[1], &o[1], res, shopts(10000, 0));
    CHECK_STR(get_bin("lock:{rw}", 9), "shared");
    CHECK_EQ(admin_int("ZCARD %s", "lock:{rw}:holders"), 2);
    acquire(c[2], &o[2], res, xopts(10000, 0));
    run_until(&o[2].acq, 2000, o[2].lk);
    CHECK_EQ(o[2].acq_st, REDLEASE_EBUSY);
    release(&o[2], NULL);
    o[2] = (obs){0};
    acquire(c[2], &o[2], res, xopts(10000, 10000)); /* waits in the queue */
    int64_t end = mono_ms() + 2000 * S;
    while (admin_int("ZCARD %s", "lock:{rw}:queue") != 1 && mono_ms() < end) testloop_run_once(5);
    CHECK_EQ(admin_int("ZCARD %s", "lock:{rw}:queue"), 1);
    acquire(c[3], &o[3], res, shopts(10000, 0)); /* an exclusive waiter comes first */
    run_until(&o[3].acq, 2000, o[3].lk);
    CHECK_EQ(o[3].acq_st, REDLEASE_EBUSY);
    release(&o[3], NULL);
    release(&o[0], o[2].lk);
    CHECK_EQ(o[2].acq, 0);
    int64_t t0 = mono_ms();
    release(&o[1], NULL);
    run_until(&o[2].acq, 2000, NULL);
    printf("# the exclusive waiter held %lld ms after the last shared release\n",
           (long long)(mono_ms() - t0));
    CHECK_EQ(o[2].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S); /* handed over: its retry was 5 s away */
    CHECK(is_lease_value(get_bin("lock:{rw}", 9), o[2].lk));
    /* shared holders wait for the exclusive one, and enter after it */
    acquire(c[0], &o[N], res, shopts(10000, 10000));
    acquire(c[1], &o[N + 1], res, shopts(10000, 10000));
    run_for(100, o[N].lk);
    CHECK_EQ(o[N].acq + o[N + 1].acq, 0);
    CHECK_EQ(redlease_lock_held(o[N + 1].lk), 0);
    release(&o[2], NULL);
    run_until(&o[N].acq, 2000, NULL);
    run_until(&o[N + 1].acq, 2000, NULL);
    CHECK_EQ(o[N].acq_st, REDLEASE_OK);
    CHECK_EQ(o[N + 1].acq_st, REDLEASE_OK);
    release(&o[N], NULL);
    release(&o[N + 1], NULL);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{rw}") + admin_int("EXISTS %s", "lock:{rw}:holders"), 0);
    finish_all(c, o, N);
}

/* A stream of shared holders that never leaves the resource free (three
 * clients, each holding 300 ms and taking it again at once, staggered) and
 * an exclusive waiter queued meanwhile: no shared holder enters after it
 * joined, so it waits only for those in when it came (design 12.4: the
 * bound), far below the stream's length, and the stream goes on after it.
 * Without the gate it would wait for the stream to end (5 s). */
static void test_shared_stream_does_not_starve_exclusive(void)
{
    enum { R = 3, HOLD = 300, STREAM = 5000, TURNS = 64 };
    static obs so[R][TURNS];
    static char started[R][TURNS], asked[R][TURNS], called_after[R][TURNS];
    memset(so, 0, sizeof so);
    memset(called_after, 0, sizeof called_after);
    memset(started, 0, sizeof started);
    memset(asked, 0, sizeof asked);
    obs co[R + 1], xo = {0};
    memset(co, 0, sizeof co);
    redlease_client *c[R + 1];
    for (int i = 0; i <= R; i++) c[i] = real_client(&co[i], NULL);
    int turn[R] = {0};
    int64_t since[R] = {0}, t0 = mono_ms(), tx = -1, got = -1;
    int entered_after = 0;
    for (int i = 0; i < R; i++) { /* staggered: the resource is never free */
        acquire(c[i], &so[i][0], "rw-stream", shopts(5000, 10000));
        run_until(&so[i][0].acq, 2000, NULL);
        CHECK_EQ(so[i][0].acq_st, REDLEASE_OK);
        started[i][0] = 1;
        since[i] = mono_ms();
        if (i + 1 < R) run_for(HOLD / R, NULL);
    }
    while (mono_ms() - t0 < STREAM * S && got < 0) {
        testloop_run_once(5);
        for (int i = 0; i < R; i++) {
            int k = turn[i];
            obs *o = &so[i][k];
            if (o->acq && o->acq_st == REDLEASE_OK && !started[i][k]) { /* in: its hold starts */
                started[i][k] = 1;
                since[i] = mono_ms();
                if (called_after[i][k]) entered_after++;
            }
            if (started[i][k] && !asked[i][k] && mono_ms() - since[i] >= HOLD * S) {
                asked[i][k] = 1;
                CHECK_EQ(redlease_release(o->lk, o_rel, o), REDLEASE_OK);
            } else if (o->rel && k + 1 < TURNS) { /* and at once again */
                turn[i] = k + 1;
                called_after[i][k + 1] = tx >= 0; /* its attempts all meet the queued waiter */
                acquire(c[i], &so[i][k + 1], "rw-stream", shopts(5000, 10000));
            }
        }
        if (!xo.lk && mono_ms() - t0 >= 1000 * S) /* the stream runs: the exclusive one comes */
            acquire(c[R], &xo, "rw-stream", xopts(5000, 10000));
        if (xo.lk && tx < 0 && admin_int("ZCARD %s", "lock:{rw-stream}:queue") == 1)
            tx = mono_ms(); /* it waits in the queue from now */
        if (tx >= 0 && xo.acq) got = mono_ms();
    }
    printf("# the exclusive waiter held after %lld ms (shared holds of %d ms, %d of them at once); "
           "shared holders entered after it queued: %d\n",
           got >= 0 ? (long long)(got - tx) : -1LL, HOLD, R, entered_after);
    CHECK_EQ(xo.acq_st, REDLEASE_OK);
    CHECK(got >= 0 && got - tx < (STREAM - 1000) * S); /* before the stream ends */
    CHECK_EQ(entered_after, 0);
    release(&xo, NULL);
    for (int i = 0; i < R; i++) {
        int k = turn[i];
        if (!asked[i][k] && !so[i][k].rel) {
            CHECK_EQ(redlease_release(so[i][k].lk, o_rel, &so[i][k]), REDLEASE_OK);
        }
        run_until(&so[i][k].rel, 2000, NULL);
    }
    finish_all(c, co, R + 1);
}

/* Phase-fair, in the queue both kinds share (design 12.4): behind an
 * exclusive holder wait S1, S2, X2, S3. Its release lets S1 and S2 in
 * together (the first admitted reminds the next), not X2 nor S3; their
 * releases hand the resource to X2; its release lets S3 in. Each at once
 * (every waiter's own checks are seconds away), none past another. */
static void test_shared_phase_fair_queue(void)
{
    enum { N = 5 };
    obs o[N] = {{0}};
    redlease_client *c[N];
    for (int i = 0; i < N; i++) c[i] = real_client(&o[i], NULL);
    redlease_lock_options x = xopts(10000, 10000), sh = shopts(10000, 10000);
    sh.wait_mode = REDLEASE_WAIT_QUEUE;
    sh.wait_retry_base_ms = sh.wait_retry_max_ms = 5000 * S; /* polling would be seen */
    hold_real(c[0], &o[0], "rw-phase", x);
    static const int shared[N] = {0, 1, 1, 0, 1}; /* X1 holds; S1 S2 X2 S3 wait */
    for (int i = 1; i < N; i++) {
        acquire(c[i], &o[i], "rw-phase", shared[i] ? sh : x);
        wait_rank(&o[i], "rw-phase", i - 1);
    }
    int64_t t0 = mono_ms();
    release(&o[0], NULL);
    run_until(&o[1].acq, 2000, NULL);
    run_until(&o[2].acq, 2000, NULL);
    printf("# S1 and S2 in %lld ms after X1's release\n", (long long)(mono_ms() - t0));
    CHECK(o[1].acq_st == REDLEASE_OK && o[2].acq_st == REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    run_for(200, o[3].lk);
    CHECK_EQ(o[3].acq + o[4].acq, 0);
    release(&o[1], NULL);
    CHECK_EQ(o[3].acq, 0); /* S2 still holds */
    t0 = mono_ms();
    release(&o[2], NULL);
    run_until(&o[3].acq, 2000, NULL);
    printf("# X2 in %lld ms after the last shared release\n", (long long)(mono_ms() - t0));
    CHECK_EQ(o[3].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    CHECK_EQ(o[4].acq, 0);
    t0 = mono_ms();
    release(&o[3], NULL);
    run_until(&o[4].acq, 2000, NULL);
    printf("# S3 in %lld ms after X2's release\n", (long long)(mono_ms() - t0));
    CHECK_EQ(o[4].acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 2000 * S);
    release(&o[4], NULL);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{rw-phase}:queue"), 0);
    finish_all(c, o, N);
}

/* A shared waiter that joined and then died (its process frozen or gone,
 * its entry alive), reminded when the resource came free: reminders never
 * lengthen its entry past one claim, and an answer with nothing to wait
 * for says 0 (unknown), never "1 ms" (which made the waiter behind it
 * check every millisecond, each check reminding the dead head again: the
 * queue stuck for good). The live waiter behind it gets in once the dead
 * one's claim ends. */
static void test_shared_dead_head_does_not_block(void)
{
    obs o[2] = {{0}};
    redlease_client *c[2];
    for (int i = 0; i < 2; i++) c[i] = real_client(&o[i], NULL);
    hold_real(c[0], &o[0], "rw-dead", xopts(10000, 0));
    char life[16], claim[16];
    snprintf(life, sizeof life, "%lld", (long long)(20000 * S));
    snprintf(claim, sizeof claim, "%lld", (long long)(300 * S));
    const char *dead[] = {"lock:{rw-dead}", "lock:{rw-dead}:queue", "lock:{rw-dead}:waiters",
                          "lock:{rw-dead}:holders", "lock:{rw-dead}:weights", tok(7), "5000", life, claim,
                          "nobody-listens", "1"};
    redisReply *r = run(RDL_SCRIPT_SHARED_ACQUIRE, 5, 6, dead);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer < 0); /* queued behind the holder */
    freeReplyObject(r);
    redlease_lock_options sh = shopts(5000, 8000);
    sh.wait_mode = REDLEASE_WAIT_QUEUE;
    int64_t t0 = mono_ms();
    release(&o[0], NULL); /* reminds the dead head: one claim to come */
    /* the live one comes inside that claim: its checks remind the dead
     * head again, which must not buy it another claim each time */
    acquire(c[1], &o[1], "rw-dead", sh);
    run_until(&o[1].acq, 7000, NULL);
    printf("# the live shared waiter held %lld ms after the release (the dead head's claim %s ms)\n",
           (long long)(mono_ms() - t0), claim);
    CHECK_EQ(o[1].acq_st, REDLEASE_OK);
    redlease_stats st;
    redlease_client_stats(c[1], &st);
    printf("# its attempts: %llu\n", (unsigned long long)st.attempts);
    CHECK(st.attempts < 20); /* checks at its own pace, never a 1 ms loop */
    release(&o[1], NULL);
    finish_all(c, o, 2);
}

/* A free resource whose queue's head is a semaphore's waiter: a mutex's
 * queued acquire there (another kind, on a resource between holders)
 * reminds that head and waits behind it; it never hands the lock key to
 * it, which would read as a mutex's token and turn the semaphore's
 * acquires away as another kind. */
static void test_sem_head_is_never_handed_the_lock_key(void)
{
    clean();
    ADM("DEL %s %s", QUEUE, WAITERS);
    CHECK_EQ(acquire_w(0, "1", "1", "5000", 0, NULL, 0), 1);
    const char *waiter[] = {KIND, HOLDERS, WEIGHTS, QUEUE, WAITERS, tok(1), "1", "1", "1", "5000",
                            "5000", "1000", "sem-waiter-channel"};
    redisReply *r = run(RDL_SCRIPT_SEM_ACQUIRE, 5, 8, waiter);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer < 0); /* full: queued */
    freeReplyObject(r);
    CHECK_EQ(sem_release(0), 1); /* the last one out: the kind goes, the head is reminded */
    CHECK_EQ(admin_int("EXISTS %s", KIND), 0);
    const char *mutex[] = {KIND, QUEUE, WAITERS, tok(2), "5000", "5000", "1000", "mutex-channel", "1"};
    r = run(RDL_SCRIPT_QUEUE_ACQUIRE, 3, 6, mutex);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer <= 0); /* behind the head, not taken */
    freeReplyObject(r);
    CHECK_EQ(admin_int("EXISTS %s", KIND), 0); /* nothing handed to the semaphore's head */
    CHECK_EQ(acquire_w(1, "1", "1", "5000", 0, NULL, 0), 1); /* the head comes: admitted */
    CHECK_EQ(sem_release(1), 1);
    ADM("DEL %s %s", QUEUE, WAITERS);
}

/* Kinds: a semaphore on a shared resource and a shared holder on a
 * semaphore are refused at once, naming what it is; a shared holder taken
 * out of the set is lost; fences increase across shared and exclusive
 * holders of one resource. */
static void test_shared_kinds_loss_and_fences(void)
{
    obs o[4] = {{0}};
    redlease_client *c = real_client(&o[0], NULL);
    redlease_lock_options sh = shopts(600, 0);
    sh.fencing = 1;
    hold_real(c, &o[0], "rw2", sh);
    expect_kind(c, "rw2", sopts(2, 0, 10000), "KIND shared and exclusive holders");
    hold_real(c, &o[1], "rw2-sem", sopts(2, 0, 0));
    expect_kind(c, "rw2-sem", shopts(5000, 10000), "KIND a semaphore of 2 permits");
    release(&o[1], NULL);
    const char *t = redlease_lock_token(o[0].lk);
    uint64_t f0 = redlease_lock_fence(o[0].lk);
    CHECK_EQ(admin_int("ZREM lock:{rw2}:holders %s", t), 1);
    run_until(&o[0].lost, 1000, NULL);
    CHECK_EQ(o[0].lost_reason, REDLEASE_LOST_NOT_OWNER);
    release(&o[0], NULL);
    CHECK_EQ(o[0].rel_st, REDLEASE_ENOTHELD);
    redlease_lock_options x = lopts(5000, 3000, 1);
    hold_real(c, &o[2], "rw2", x); /* the set's marker outlives its holder: polled until it goes */
    uint64_t f1 = redlease_lock_fence(o[2].lk);
    release(&o[2], NULL);
    hold_real(c, &o[3], "rw2", sh);
    uint64_t f2 = redlease_lock_fence(o[3].lk);
    printf("# fences %llu %llu %llu\n", (unsigned long long)f0, (unsigned long long)f1,
           (unsigned long long)f2);
    CHECK(f0 > 0 && f1 > f0 && f2 > f1);
    release(&o[3], NULL);
    ADM("DEL lock:{rw2}:fence");
    finish(c, &o[0]);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_sem_limit_and_weights),
        TEST_CASE(test_sem_capacity_below_the_limit),
        TEST_CASE(test_sem_head_is_never_handed_the_lock_key),
        TEST_CASE(test_sem_keys_live_as_long_as_the_last_holder),
        TEST_CASE(test_sem_dead_holders_pruned_and_never_renewed),
        TEST_CASE(test_sem_holder_without_weight_is_no_holder),
        TEST_CASE(test_sem_holder_of_another_limit_is_no_holder),
        TEST_CASE(test_sem_fences_increase),
        TEST_CASE(test_sem_failed_fence_leaves_nothing),
        TEST_CASE(test_sem_other_kinds_refused),
        TEST_CASE(test_sem_api_limit_and_waiting),
        TEST_CASE(test_sem_api_other_kinds_refused),
        TEST_CASE(test_sem_api_removed_holder_is_lost),
        TEST_CASE(test_sem_api_fences_increase),
        TEST_CASE(test_sem_queue_in_order),
        TEST_CASE(test_sem_queue_waiter_gives_up),
        TEST_CASE(test_shared_and_exclusive),
        TEST_CASE(test_shared_stream_does_not_starve_exclusive),
        TEST_CASE(test_shared_phase_fair_queue),
        TEST_CASE(test_shared_dead_head_does_not_block),
        TEST_CASE(test_shared_kinds_loss_and_fences),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
