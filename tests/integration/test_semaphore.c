/* SPDX-License-Identifier: MIT */
/* The counting semaphore's scripts (src/scripts.c, RDL_SCRIPT_SEM_*) on a
 * real server, before the lock uses them (issue 27): admission within the
 * limit, weights, holders timed by the server's clock and pruned by every
 * script, strict renewal, release, fences, and a resource of another kind
 * or limit refused before anything is written. Each script goes by
 * EVALSHA under the library's own SHA-1 (EVAL once on NOSCRIPT), so a
 * digest that does not match its text fails here. */
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

static const char *tok(int i)
{
    static char t[8][33];
    snprintf(t[i], sizeof t[i], "%032x", i + 1);
    return t[i];
}

/* Runs script s with the keys and arguments given (nkeys first); the
 * reply, which the caller frees. */
static redisReply *run(int s, int nkeys, int nargs, const char **words)
{
    const char *argv[16];
    size_t lens[16];
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
 * kept in err (when not NULL). */
static long long acquire_w(int t, const char *weight, const char *limit, const char *ttl, int fenced,
                           char *err, size_t size)
{
    const char *w[] = {KIND, HOLDERS, WEIGHTS, FENCE, tok(t), weight, limit, ttl, "600000"};
    const char *nofence[] = {KIND, HOLDERS, WEIGHTS, tok(t), weight, limit, ttl};
    redisReply *r = fenced ? run(RDL_SCRIPT_SEM_ACQUIRE, 4, 5, w) : run(RDL_SCRIPT_SEM_ACQUIRE, 3, 4, nofence);
    long long v = -99999999;
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    if (r && r->type == REDIS_REPLY_ERROR && err) snprintf(err, size, "%s", r->str);
    freeReplyObject(r);
    return v;
}

static long long sem_renew(int t, const char *ttl)
{
    const char *w[] = {KIND, HOLDERS, WEIGHTS, tok(t), ttl};
    redisReply *r = run(RDL_SCRIPT_SEM_RENEW, 3, 2, w);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99999999;
    freeReplyObject(r);
    return v;
}

static long long sem_release(int t)
{
    const char *w[] = {KIND, HOLDERS, WEIGHTS, tok(t)};
    redisReply *r = run(RDL_SCRIPT_SEM_RELEASE, 3, 1, w);
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
    CHECK_EQ(acquire_w(2, "2", "3", "5000", 0, NULL, 0), 1);
    CHECK_EQ(acquire_w(3, "1", "3", "5000", 0, NULL, 0) < 0, 1);
    CHECK_EQ(sem_release(1), 1);
    CHECK_EQ(sem_release(2), 1);
    CHECK_EQ(admin_int("EXISTS %s", KIND) + admin_int("EXISTS %s", HOLDERS) + admin_int("EXISTS %s", WEIGHTS), 0);
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
    CHECK_EQ(sem_renew(0, "20000"), 1);
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
    int64_t t0 = mono_ms();
    CHECK_EQ(acquire_w(0, "2", "2", "300", 0, NULL, 0), 1);
    long long early = acquire_w(1, "1", "2", "5000", 0, NULL, 0);
    if (mono_ms() - t0 < 300) CHECK(early < 0); /* still held, as far as this run can tell */
    while (mono_ms() - t0 < 400) usleep(10 * 1000); /* past its deadline by the server's clock */
    if (early < 0) CHECK_EQ(acquire_w(1, "1", "2", "5000", 0, NULL, 0), 1);
    CHECK_EQ(used(), 1);
    CHECK_EQ(sem_renew(0, "5000"), 0);
    CHECK_EQ(admin_int("ZSCORE %s " "00000000000000000000000000000001", HOLDERS), -99); /* nil */
    CHECK_EQ(used(), 1);
    CHECK_EQ(sem_release(0), 0);
    CHECK_EQ(sem_release(1), 1);
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
    CHECK_EQ(sem_renew(5, "5000"), 0);
    CHECK_EQ(sem_release(5), 0);
    /* not a string at all */
    clean();
    ADM("HSET %s f v", KIND);
    CHECK_EQ(acquire_w(1, "1", "3", "5000", 0, err, sizeof err), -99999999);
    CHECK(strstr(err, "WRONGTYPE") != NULL);
    clean();
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_sem_limit_and_weights),
        TEST_CASE(test_sem_keys_live_as_long_as_the_last_holder),
        TEST_CASE(test_sem_dead_holders_pruned_and_never_renewed),
        TEST_CASE(test_sem_fences_increase),
        TEST_CASE(test_sem_other_kinds_refused),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
