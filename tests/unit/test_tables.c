/* SPDX-License-Identifier: MIT */
/* The pure tables of the core, no client needed: the key scheme
 * (src/keys.c: one-to-one, one hash slot per resource; src/slot.c), the error
 * classification (src/errors.c: the table man 3 redlease documents), the
 * address lists (src/addr.c), the +switch-master message (src/sentinel.c) and
 * the SHA-1 that names the scripts for EVALSHA (tests/support/sha1.c, and the
 * digests src/scripts.c writes out). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "errors.h"
#include "keys.h"
#include "redlease.h"
#include "alloc.h"
#include "scripts.h"
#include "sentinel.h"
#include "slot.h"
#include "sha1.h"

/* --------------------------------------------------------------- keys */

/* Redis Cluster's slot of a key (src/slot.c), against values published
 * by Redis: the Cluster specification and CLUSTER KEYSLOT's manual. The
 * Cluster integration test checks it against a real server too. */
static unsigned slot(const char *key, size_t n) { return rdl_key_slot(key, n); }

static void test_slot_function_matches_redis(void)
{
    CHECK_EQ(rdl_crc16("123456789", 9), 0x31C3);
    CHECK_EQ(slot("foo", 3), 12182);
    CHECK_EQ(slot("somekey", 7), 11058);
    CHECK_EQ(slot("foo{hash_tag}", 13), 2515);
    CHECK_EQ(slot("{user1000}.following", 20), slot("user1000", 8));
    CHECK_EQ(slot("foo{{bar}}zap", 13), slot("{bar", 4)); /* the first "{", the first "}" */
    CHECK_EQ(slot("foo{bar}{zap}", 13), slot("bar", 3));
    CHECK_EQ(slot("foo{}{bar}", 10), rdl_crc16("foo{}{bar}", 10) % 16384); /* empty tag: whole key */
    CHECK(slot("foo{}{bar}", 10) != slot("bar", 3));
    CHECK_EQ(slot("{a", 2), rdl_crc16("{a", 2) % 16384); /* never closed: whole key */
    CHECK_EQ(slot("", 0), 0);
}

typedef struct built {
    char key[64];
    size_t len;
} built;

static int build(const char *prefix, const char *res, size_t rlen, int kind, built *b)
{
    return redlease_key(prefix, res, rlen, kind, b->key, sizeof b->key, &b->len);
}

/* Names built to collide: with the suffixes, with braces that move the
 * hash tag or empty it, with the escape character itself. */
static const char *const names[] = {
    "a", "a:fence", "a}:fence", "a}", "}", "}a", "\\}a", "\\\\}a", "\\", "\\a", "{a}", "a{",
    "{", "{}", "}{", "x}y", "}:fence", "a:fence:fence", "\\}", ":fence", "a}:queue", "}:waiters",
    "a:queue", "a}:waiters:queue", "a}:fence}:queue", "a}:holders", "}:weights", "a:holders:weights",
};
#define NNAMES (sizeof names / sizeof names[0])
#define NKINDS REDLEASE_KEY_WEIGHTS /* kinds are 1..NKINDS */

static const char *kind_name(int k)
{
    static const char *const n[] = {"?", "lock", "fence", "queue", "waiters", "holders", "weights"};
    return n[k];
}

static void test_keys_are_one_to_one(void)
{
    static const char *const prefixes[] = {"lock:", "", "app:"};
    for (size_t p = 0; p < 3; p++) {
        built all[NKINDS * NNAMES];
        for (size_t i = 0; i < NNAMES; i++)
            for (int k = 0; k < NKINDS; k++)
                CHECK_EQ(build(prefixes[p], names[i], strlen(names[i]), k + 1, &all[NKINDS * i + k]),
                         REDLEASE_OK);
        for (size_t i = 0; i < NKINDS * NNAMES; i++)
            for (size_t j = i + 1; j < NKINDS * NNAMES; j++)
                if (all[i].len == all[j].len && memcmp(all[i].key, all[j].key, all[i].len) == 0)
                    printf("# collision: %s (%s) and %s (%s)\n", names[i / NKINDS],
                           kind_name((int)(i % NKINDS) + 1), names[j / NKINDS],
                           kind_name((int)(j % NKINDS) + 1)),
                        t_fails++;
    }
}

static void test_keys_of_a_resource_share_a_slot(void)
{
    for (size_t i = 0; i < NNAMES; i++) {
        built lock, other;
        build("lock:", names[i], strlen(names[i]), REDLEASE_KEY_LOCK, &lock);
        for (int k = REDLEASE_KEY_FENCE; k <= NKINDS; k++) {
            build("lock:", names[i], strlen(names[i]), k, &other);
            if (slot(lock.key, lock.len) != slot(other.key, other.len))
                printf("# %s: lock %s and %s %s in different slots\n", names[i], lock.key, kind_name(k),
                       other.key),
                    t_fails++;
        }
        /* the tag is never empty: the first "{" is ours, not followed by "}" */
        CHECK(lock.key[5] == '{' && lock.key[6] != '}');
    }
    /* binary names too */
    static const char bin[] = "}\0\r\n\xff{";
    built lock, other;
    build("lock:", bin, sizeof bin - 1, REDLEASE_KEY_LOCK, &lock);
    for (int k = REDLEASE_KEY_FENCE; k <= NKINDS; k++) {
        build("lock:", bin, sizeof bin - 1, k, &other);
        CHECK_EQ(slot(lock.key, lock.len), slot(other.key, other.len));
    }
}

static void test_key_scheme_as_documented(void)
{
    built b;
    CHECK_EQ(build("lock:", "job:42", 6, REDLEASE_KEY_LOCK, &b), REDLEASE_OK);
    CHECK_STR(b.key, "lock:{job:42}");
    CHECK_EQ(b.len, 13);
    CHECK_EQ(build("lock:", "job:42", 6, REDLEASE_KEY_FENCE, &b), REDLEASE_OK);
    CHECK_STR(b.key, "lock:{job:42}:fence");
    CHECK_EQ(build("lock:", "job:42", 6, REDLEASE_KEY_QUEUE, &b), REDLEASE_OK);
    CHECK_STR(b.key, "lock:{job:42}:queue");
    CHECK_EQ(build("lock:", "job:42", 6, REDLEASE_KEY_WAITERS, &b), REDLEASE_OK);
    CHECK_STR(b.key, "lock:{job:42}:waiters");
    CHECK_EQ(build("lock:", "}x", 2, REDLEASE_KEY_LOCK, &b), REDLEASE_OK);
    CHECK_STR(b.key, "lock:{\\}x}");
    CHECK_EQ(build(NULL, "a", 1, REDLEASE_KEY_LOCK, &b), REDLEASE_OK);
    CHECK_STR(b.key, "{a}");
    /* length query, and a buffer too small is left alone */
    size_t len = 0;
    CHECK_EQ(redlease_key("lock:", "abc", 3, REDLEASE_KEY_LOCK, NULL, 0, &len), REDLEASE_OK);
    CHECK_EQ(len, 10);
    char small[4] = "xyz";
    CHECK_EQ(redlease_key("lock:", "abc", 3, REDLEASE_KEY_LOCK, small, sizeof small, &len), REDLEASE_OK);
    CHECK_STR(small, "xyz");
    /* refused */
    CHECK_EQ(redlease_key("lo{ck:", "a", 1, REDLEASE_KEY_LOCK, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock}", "a", 1, REDLEASE_KEY_LOCK, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", "a", 0, REDLEASE_KEY_LOCK, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", NULL, 1, REDLEASE_KEY_LOCK, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", "a", 1, 0, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", "a", 1, NKINDS + 1, b.key, sizeof b.key, &len), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", "a", 1, REDLEASE_KEY_LOCK, b.key, sizeof b.key, NULL), REDLEASE_EINVAL);
    CHECK_EQ(redlease_key("lock:", "a", REDLEASE_MAX_RESOURCE + 1, REDLEASE_KEY_LOCK, NULL, 0, &len),
             REDLEASE_EINVAL);
    /* and a client with such a prefix is refused up front */
    redlease_client_options o;
    redlease_client_options_init(&o);
    o.key_prefix = "{app}:";
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_EINVAL);
    CHECK(c == NULL);
}

/* ------------------------------------------------------------- errors */

static void test_error_table(void)
{
    static const struct {
        const char *text;
        int status, transient, reconnect, wrongtype;
    } rows[] = {
        {"LOADING Redis is loading the dataset in memory", REDLEASE_EREDIS, 1, 0, 0},
        {"BUSY Redis is busy running a script.", REDLEASE_EREDIS, 1, 0, 0},
        {"MASTERDOWN Link with MASTER is down", REDLEASE_EREDIS, 1, 0, 0},
        {"TRYAGAIN Multiple keys request during rehashing of slot", REDLEASE_EREDIS, 1, 0, 0},
        {"CLUSTERDOWN The cluster is down", REDLEASE_EREDIS, 1, 0, 0},
        {"OOM command not allowed when used memory > 'maxmemory'.", REDLEASE_EREDIS, 1, 0, 0},
        {"MISCONF Redis is configured to save RDB snapshots", REDLEASE_EREDIS, 1, 0, 0},
        {"NOREPLICAS Not enough good replicas to write.", REDLEASE_EREDIS, 1, 0, 0},
        {"NOSCRIPT No matching script. Please use EVAL.", REDLEASE_EREDIS, 1, 0, 0},
        {"ERR max number of clients reached", REDLEASE_EREDIS, 1, 0, 0},
        {"READONLY You can't write against a read only replica.", REDLEASE_EREDIS, 1, 1, 0},
        {"NOAUTH Authentication required.", REDLEASE_EAUTH, 0, 1, 0},
        {"WRONGPASS invalid username-password pair or user is disabled.", REDLEASE_EAUTH, 0, 0, 0},
        {"ERR AUTH <password> called without any password configured", REDLEASE_EAUTH, 0, 0, 0},
        {"ERR invalid password", REDLEASE_EAUTH, 0, 0, 0},
        {"NOPERM User u has no permissions to run the 'set' command", REDLEASE_EPERM, 0, 0, 0},
        {"NOPERM No permissions to access a key", REDLEASE_EPERM, 0, 0, 0},
        {"ERR DB index is out of range", REDLEASE_ECONFIG, 0, 0, 0},
        {"WRONGTYPE Operation against a key holding the wrong kind of value", REDLEASE_EKIND, 0, 0, 1},
        {"KIND a semaphore of 4 permits", REDLEASE_EKIND, 0, 0, 1},
        {"ERR unknown command 'EVALSHA'", REDLEASE_EREDIS, 0, 0, 0},
        {"ERR Error running script (call to f_x): @user_script:1: oops", REDLEASE_EREDIS, 0, 0, 0},
        {"MOVED 3999 127.0.0.1:6381", REDLEASE_EREDIS, 0, 0, 0},
        {"SOMETHINGNEW nobody foresaw this", REDLEASE_EREDIS, 0, 0, 0},
        {"LOADINGX not LOADING", REDLEASE_EREDIS, 0, 0, 0}, /* codes match whole */
        {"", REDLEASE_EREDIS, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rdl_error_class e = rdl_error_classify(rows[i].text, strlen(rows[i].text));
        if (e.status != rows[i].status || e.transient != rows[i].transient ||
            e.reconnect != rows[i].reconnect || e.wrongtype != rows[i].wrongtype)
            printf("# \"%s\": status %d transient %d reconnect %d wrongtype %d\n", rows[i].text, e.status,
                   e.transient, e.reconnect, e.wrongtype),
                t_fails++;
    }
    rdl_error_class e = rdl_error_classify("LOADING", 4); /* "LOAD": not the code */
    CHECK_EQ(e.transient, 0);
    CHECK_EQ(rdl_error_classify(NULL, 0).status, REDLEASE_EREDIS);
}

/* What a conditional command's error says (src/lock.c): the command
 * refused (unknown, not this user's, an option the server lacks) and not a
 * key's error, OOM, NOSCRIPT. */
static void test_error_flags(void)
{
    static const struct {
        const char *text;
        int refused, oom, noscript;
    } rows[] = {
        {"ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'v' ", 1, 0, 0},
        {"ERR syntax error", 1, 0, 0},
        {"ERR wrong number of arguments for 'delex' command", 1, 0, 0},
        {"NOPERM User app has no permissions to run the 'delifeq' command", 1, 0, 0},
        {"NOPERM No permissions to access a key", 0, 0, 0},
        {"OOM command not allowed when used memory > 'maxmemory'.", 0, 1, 0},
        {"NOSCRIPT No matching script. Please use EVAL.", 0, 0, 1},
        {"NOSCRIPTS no such code", 0, 0, 0},
        {"WRONGTYPE Operation against a key holding the wrong kind of value", 0, 0, 0},
        {"ERR Error running script (call to f_x): @user_script:1: oops", 0, 0, 0},
        {"NOPERM", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rdl_error_class e = rdl_error_classify(rows[i].text, strlen(rows[i].text));
        if (e.refused != rows[i].refused || e.oom != rows[i].oom || e.noscript != rows[i].noscript)
            printf("# \"%s\": refused %d oom %d noscript %d\n", rows[i].text, e.refused, e.oom,
                   e.noscript),
                t_fails++;
    }
    /* a Cluster's redirects, by their code alone; their class is an
     * unknown code's (whoever routes the key decides) */
    static const struct {
        const char *text;
        int redirect;
    } codes[] = {
        {"MOVED 3999 127.0.0.1:6381", 1}, {"ASK 3999 127.0.0.1:6381", 1}, {"MOVED", 1},
        {"MOVEDX 1 h:1", 0}, {"ASKING", 0}, {"ERR MOVED 1 h:1", 0}, {"MOVE 1 h:1", 0},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        rdl_error_class e = rdl_error_classify(codes[i].text, strlen(codes[i].text));
        if (e.redirect != codes[i].redirect || e.transient || e.status != REDLEASE_EREDIS)
            printf("# \"%s\": redirect %d transient %d\n", codes[i].text, e.redirect, e.transient),
                t_fails++;
    }
}

static void test_new_status_strings(void)
{
    int codes[] = {REDLEASE_EAUTH, REDLEASE_EPERM, REDLEASE_ECONFIG, REDLEASE_ENOTSUP,
                   REDLEASE_ETLS, REDLEASE_EREPLICAS, REDLEASE_EQUORUM};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CHECK(strcmp(redlease_strerror(codes[i]), "unknown status") != 0);
    CHECK_EQ(REDLEASE_EAUTH, -11);
    CHECK_EQ(REDLEASE_EPERM, -12);
    CHECK_EQ(REDLEASE_ECONFIG, -13);
    CHECK_EQ(REDLEASE_ENOTSUP, -14);
    CHECK_EQ(REDLEASE_ETLS, -15);
    CHECK_EQ(REDLEASE_EREPLICAS, -16);
    CHECK_EQ(REDLEASE_EQUORUM, -17);
    rdl_error_class e = rdl_error_classify("QUORUM 1 of 3 servers said yes", 30);
    CHECK(e.status == REDLEASE_EQUORUM && e.transient);
}

/* ---------------------------------------------------- Sentinel, addresses */

/* src/addr.c: the lists of Sentinels (and Cluster seeds) */
static void test_address_list(void)
{
    rdl_addr a[REDLEASE_MAX_SENTINELS];
    CHECK_EQ(rdl_addr_list_parse("10.0.0.1:26379,[::1]:26380,sentinel-3.internal:1", a,
                                 REDLEASE_MAX_SENTINELS), 3);
    CHECK_STR(a[0].host, "10.0.0.1");
    CHECK_EQ(a[0].port, 26379);
    CHECK_STR(a[1].host, "::1");
    CHECK_EQ(a[1].port, 26380);
    CHECK_STR(a[2].host, "sentinel-3.internal");
    CHECK_EQ(a[2].port, 1);
    rdl_addr_list_free(a, 3);
    const char *bad[] = {NULL, "", "h", "h:", ":1", "h:0", "h:65536", "h:123456", "h:1,", ",h:1",
                         "h:1,,h:2", "::1:26379", "[::1]", "[::1]:", "[]:1", "h:1x", "h: 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(rdl_addr_list_parse(bad[i], NULL, REDLEASE_MAX_SENTINELS), -1);
    char many[512] = "";
    for (int i = 0; i <= REDLEASE_MAX_SENTINELS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sh:%d", i ? "," : "", i + 1);
    CHECK_EQ(rdl_addr_list_parse(many, NULL, REDLEASE_MAX_SENTINELS), -1); /* one too many */
    *strrchr(many, ',') = '\0';
    CHECK_EQ(rdl_addr_list_parse(many, NULL, REDLEASE_MAX_SENTINELS), REDLEASE_MAX_SENTINELS);
}

static void test_sentinel_switch_message(void)
{
    char host[64];
    int port = 0;
    const char *m = "mymaster 10.0.0.1 6379 10.0.0.2 6380";
    CHECK_EQ(rdl_sentinel_parse_switch(m, strlen(m), "mymaster", host, sizeof host, &port), 1);
    CHECK_STR(host, "10.0.0.2");
    CHECK_EQ(port, 6380);
    CHECK_EQ(rdl_sentinel_parse_switch(m, strlen(m), "other", host, sizeof host, &port), 0);
    CHECK_EQ(rdl_sentinel_parse_switch(m, strlen(m), "mymast", host, sizeof host, &port), 0);
    const char *bad[] = {"", "mymaster", "mymaster 10.0.0.1 6379 10.0.0.2",
                         "mymaster 10.0.0.1 6379 10.0.0.2 6380 extra", "mymaster a 1 b 0",
                         "mymaster a 1 b 70000", "mymaster a 1 b x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(rdl_sentinel_parse_switch(bad[i], strlen(bad[i]), "mymaster", host, sizeof host, &port), 0);
    CHECK_EQ(rdl_sentinel_parse_switch(m, strlen(m), "mymaster", host, 8, &port), 0); /* too long */
}

/* -------------------------------------------------------------- SHA-1 */

static void test_sha1(void)
{
    char hex[41];
    rdl_sha1_hex("", 0, hex);
    CHECK_STR(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    rdl_sha1_hex("abc", 3, hex);
    CHECK_STR(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
    rdl_sha1_hex(two, sizeof two - 1, hex);
    CHECK_STR(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    rdl_sha1_hex(million, sizeof million, hex);
    CHECK_STR(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    for (int i = 0; i < RDL_SCRIPT_COUNT; i++) { /* every script has its own name */
        char a[41], b[41];
        rdl_sha1_hex(rdl_script_src[i], strlen(rdl_script_src[i]), a);
        for (int j = i + 1; j < RDL_SCRIPT_COUNT; j++) {
            rdl_sha1_hex(rdl_script_src[j], strlen(rdl_script_src[j]), b);
            CHECK(strcmp(a, b) != 0);
        }
    }
}

/* The scripts' SHA-1s are constants in src/scripts.c: each must be the
 * digest of its text, or every EVALSHA would be answered NOSCRIPT. */
static void test_script_sha_constants(void)
{
    for (int i = 0; i < RDL_SCRIPT_COUNT; i++) {
        char hex[41];
        rdl_sha1_hex(rdl_script_src[i], strlen(rdl_script_src[i]), hex);
        CHECK_STR(rdl_script_sha(i), hex);
    }
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_slot_function_matches_redis),
        TEST_CASE(test_keys_are_one_to_one),
        TEST_CASE(test_keys_of_a_resource_share_a_slot),
        TEST_CASE(test_key_scheme_as_documented),
        TEST_CASE(test_error_table),
        TEST_CASE(test_error_flags),
        TEST_CASE(test_new_status_strings),
        TEST_CASE(test_address_list),
        TEST_CASE(test_sentinel_switch_message),
        TEST_CASE(test_sha1),
        TEST_CASE(test_script_sha_constants),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
