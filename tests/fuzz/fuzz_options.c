/* SPDX-License-Identifier: MIT */
/* Fuzz target: arbitrary client and lock options and resource names.
 *
 * The input picks every field of redlease_client_options and
 * redlease_lock_options (boundary values, extremes, raw bytes; strings
 * NULL, empty, any bytes, or 64 KB long) and a resource name (NULL, empty,
 * any bytes, lengths around REDLEASE_MAX_RESOURCE), then runs
 * redlease_client_new, redlease_acquire, the acquire's reply, release and
 * free on the unit-test rig (tests/support/fake.h).
 *
 * Checked (abort, so libFuzzer reports the input):
 *  - client_new and acquire return REDLEASE_OK or REDLEASE_EINVAL only;
 *  - EINVAL for every value redlease.h / man 3 call invalid, OK for every
 *    value they call valid (values beyond the sane bounds below, which the
 *    docs do not rule on, may go either way);
 *  - the key is prefix + resource byte for byte, sent as a key argument
 *    (never inside a script), and the fence key is key + ":fence";
 *  - nothing is left allocated after the client is freed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "fuzz_input.h"
#include "scripts.h"

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_options: %s:%d: violated: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                              \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* The docs set no upper bound on times; up to a day is plainly valid. */
#define SANE_MS ((int64_t)24 * 3600 * 1000)
#define HUGE_LEN (64 * 1024)

/* ------------------------------------------------------------- values */

static int64_t take_i64(fuzz_input *in)
{
    static const int64_t table[] = {
        0, 1, -1, -2, 2, 9, 10, 11, 49, 50, 1000, 2000, 30000, SANE_MS, SANE_MS + 1,
        1000000000, 1000000001, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MAX - 1};
    uint8_t sel = take_u8(in);
    if (sel < sizeof table / sizeof table[0]) return table[sel];
    if (sel < 0x80) return (int64_t)(take_u16(in) % 4000) - 100; /* small, around 0 */
    return (int64_t)take_u64(in);
}

static int take_int(fuzz_input *in)
{
    static const int table[] = {0, 1, -1, 2, 6379, 65535, 65536, INT_MAX, INT_MIN, 15, 16};
    uint8_t sel = take_u8(in);
    if (sel < sizeof table / sizeof table[0]) return table[sel];
    if (sel < 0x80) return sel - 0x40;
    return (int)(int32_t)(uint32_t)take_u64(in);
}

/* A string kept in buf (HUGE_LEN + 1 bytes): NULL, "", up to 200 input
 * bytes (cut at a NUL, as C strings are), or HUGE_LEN bytes. */
static const char *take_str(fuzz_input *in, char *buf)
{
    uint8_t sel = take_u8(in);
    if (sel < 0x20) return NULL;
    if (sel < 0x30) return "";
    if (sel < 0x38) {
        memset(buf, 'a' + sel % 8, HUGE_LEN);
        buf[HUGE_LEN] = '\0';
        return buf;
    }
    size_t n;
    const uint8_t *p = take_bytes(in, sel - 0x37u, &n); /* 1 to 200 bytes */
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* A resource: NULL, "", input bytes, or a run of one byte whose length is
 * around REDLEASE_MAX_RESOURCE. */
static const char *take_resource(fuzz_input *in, char *buf)
{
    uint8_t sel = take_u8(in);
    if (sel < 0x10) return NULL;
    if (sel < 0x20) return "";
    if (sel < 0x40) {
        static const size_t lens[] = {1, 2, 255, 1023, REDLEASE_MAX_RESOURCE,
                                      REDLEASE_MAX_RESOURCE + 1, 2048, HUGE_LEN};
        size_t n = lens[sel % 8];
        uint8_t fill = take_u8(in);
        memset(buf, fill ? fill : 'r', n);
        buf[n] = '\0';
        return buf;
    }
    return take_str(in, buf);
}

/* ------------------------------------------------------------- oracles */

enum verdict { VALID, INVALID, EITHER };

static int in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

/* What redlease.h and man 3 say of client options. */
static enum verdict client_verdict(const redlease_client_options *o)
{
    /* one server (the input sets no topology): a socket, or a host and a
     * port (NULL and 0: the defaults), never both */
    if (o->unix_path) {
        if (!o->unix_path[0] || o->host || o->port) return INVALID;
    } else if ((o->host && !o->host[0]) || !in_range(o->port, 0, 65535)) {
        return INVALID;
    }
    if (o->db < 0) return INVALID;
    if (o->username && !o->password) return INVALID; /* AUTH needs the password */
    if (o->key_prefix && (strlen(o->key_prefix) > 256 || strpbrk(o->key_prefix, "{}")))
        return INVALID; /* no hash-tag braces, at most 256 bytes (man 3 redlease, KEYS) */
    if (o->connect_timeout_ms <= 0 || o->command_timeout_ms <= 0 ||
        o->reconnect_min_ms <= 0 || o->reconnect_max_ms < o->reconnect_min_ms)
        return INVALID;
    if (o->connect_timeout_ms > SANE_MS || o->command_timeout_ms > SANE_MS ||
        o->reconnect_max_ms > SANE_MS || !o->key_prefix)
        return EITHER;
    return VALID;
}

/* What redlease.h and man 3 say of a resource and lock options. */
static enum verdict lock_verdict(const char *resource, const redlease_lock_options *o)
{
    if (!resource || !resource[0] || strlen(resource) > REDLEASE_MAX_RESOURCE) return INVALID;
    if (!o) return VALID;
    if (o->ttl_ms < 10) return INVALID;
    if (o->renew_interval_ms != REDLEASE_RENEW_OFF &&
        !in_range(o->renew_interval_ms, 0, o->ttl_ms - 1))
        return INVALID;
    if (o->wait_ms < 0 && o->wait_ms != REDLEASE_WAIT_FOREVER) return INVALID;
    if (o->wait_retry_base_ms <= 0 || o->wait_retry_max_ms < o->wait_retry_base_ms) return INVALID;
    if (o->wait_max_attempts < 0 || o->max_hold_ms < 0) return INVALID;
    if (o->wait_jitter != REDLEASE_JITTER_FULL && o->wait_jitter != REDLEASE_JITTER_DECORRELATED)
        return INVALID;
    if (!in_range(o->limit, 0, REDLEASE_MAX_PERMITS) || !in_range(o->weight, 0, o->limit) ||
        (o->shared && o->limit))
        return INVALID; /* one kind at a time; a weight is a semaphore's */
    if (o->ttl_ms > SANE_MS || o->wait_ms > SANE_MS || o->wait_retry_max_ms > SANE_MS ||
        o->max_hold_ms > SANE_MS)
        return EITHER;
    return VALID;
}

static void expect_verdict(int rc, enum verdict v)
{
    EXPECT(rc == REDLEASE_OK || rc == REDLEASE_EINVAL);
    if (v == VALID) EXPECT(rc == REDLEASE_OK);
    if (v == INVALID) EXPECT(rc == REDLEASE_EINVAL);
}

/* ---------------------------------------------------------- the run */

static fake F;
static int acquired, released;

static void cb_acq(redlease_lock *lk, int st, void *arg)
{
    (void)lk, (void)arg;
    acquired = st == REDLEASE_OK ? 1 : -1;
}

static void cb_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk, (void)arg, (void)st;
    released++;
}

/* key followed by suffix, byte for byte. */
static int key_with(const char *arg, const char *key, const char *suffix)
{
    size_t n = strlen(key);
    return strncmp(arg, key, n) == 0 && strcmp(arg + n, suffix) == 0;
}

/* The command that acquires must carry the key (and the fence key, and a
 * waiting acquire the queue's keys) as arguments, byte for byte, with the
 * script by its SHA1. */
static void check_acquire_command(const char *key, int fencing, int queued,
                                  const redlease_lock_options *o)
{
    fake_cmd *cmd = fake_peek(&F);
    EXPECT(cmd != NULL);
    if (o && (o->limit || o->shared)) { /* a semaphore's or a shared holder's script */
        /* a semaphore's holders, then the queue's; a shared holder's the
         * other way round; then the fence key */
        int k = 4 + (o->shared ? 2 : 0), q = o->shared ? 4 : 6;
        EXPECT(strcmp(cmd->argv[0], "EVALSHA") == 0);
        EXPECT(strcmp(cmd->argv[1], fake_sha(o->shared ? RDL_SCRIPT_SHARED_ACQUIRE
                                                       : RDL_SCRIPT_SEM_ACQUIRE)) == 0);
        EXPECT(strcmp(cmd->argv[3], key) == 0);
        EXPECT(key_with(cmd->argv[q], key, ":queue") && key_with(cmd->argv[q + 1], key, ":waiters"));
        EXPECT(key_with(cmd->argv[k], key, ":holders") && key_with(cmd->argv[k + 1], key, ":weights"));
        EXPECT(!fencing || key_with(cmd->argv[8], key, ":fence"));
        return;
    }
    if (queued) {
        EXPECT(strcmp(cmd->argv[0], "EVALSHA") == 0);
        EXPECT(strcmp(cmd->argv[1], fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)) == 0);
        EXPECT(strcmp(cmd->argv[3], key) == 0);
        EXPECT(key_with(cmd->argv[4], key, ":queue") && key_with(cmd->argv[5], key, ":waiters"));
        EXPECT(!fencing || key_with(cmd->argv[6], key, ":fence"));
        return;
    }
    if (!fencing) {
        EXPECT(strcmp(cmd->argv[0], "SET") == 0 && strcmp(cmd->argv[1], key) == 0);
        return;
    }
    EXPECT(strcmp(cmd->argv[0], "EVALSHA") == 0);
    EXPECT(strcmp(cmd->argv[1], fake_sha(RDL_SCRIPT_ACQUIRE_FENCED)) == 0);
    EXPECT(strcmp(cmd->argv[3], key) == 0);
    EXPECT(strncmp(cmd->argv[4], key, strlen(key)) == 0 &&
           strcmp(cmd->argv[4] + strlen(key), ":fence") == 0);
}

static void run_lock(fuzz_input *in, const redlease_client_options *co)
{
    static char res_buf[HUGE_LEN + 1];
    redlease_lock_options lo, *o = NULL;
    if (take_u8(in) & 1) {
        o = &lo;
        redlease_lock_options_init(o);
        lo.ttl_ms = take_i64(in);
        lo.renew_interval_ms = take_i64(in);
        lo.wait_ms = take_i64(in);
        lo.wait_retry_base_ms = take_i64(in);
        lo.wait_retry_max_ms = take_i64(in);
        lo.wait_max_attempts = take_int(in);
        lo.max_hold_ms = take_i64(in);
        lo.fencing = take_int(in);
        lo.wait_jitter = take_int(in);
    }
    const char *resource = take_resource(in, res_buf);
    if (o && take_u8(in) & 1) { /* another kind, after the name: older seeds stay mutexes */
        lo.limit = take_int(in);
        lo.weight = take_int(in);
        lo.shared = take_int(in);
    }
    enum verdict v = lock_verdict(resource, o);

    fake_start(&F, co);
    EXPECT(F.c != NULL);
    redlease_lock *lk = NULL;
    acquired = released = 0;
    int rc = redlease_acquire(F.c, resource, o, cb_acq, NULL, NULL, &lk);
    expect_verdict(rc, v);
    if (rc != REDLEASE_OK) {
        EXPECT(lk == NULL);
    } else {
        const char *prefix = co && co->key_prefix ? co->key_prefix : co ? "" : "lock:";
        const char *key = redlease_lock_key(lk);
        static char want[HUGE_LEN + 64];
        size_t want_len;
        EXPECT(redlease_key(prefix, resource, strlen(resource), REDLEASE_KEY_LOCK, want, sizeof want,
                            &want_len) == REDLEASE_OK);
        EXPECT(redlease_lock_key_len(lk) == want_len && memcmp(key, want, want_len) == 0);
        EXPECT(strncmp(key, prefix, strlen(prefix)) == 0 && key[strlen(prefix)] == '{');
        fake_run(&F);
        /* a waiting acquire in the default mode waits in the queue */
        int queued = o && o->wait_ms != 0;
        check_acquire_command(key, o && o->fencing, queued, o);
        if (o && o->fencing)
            fake_reply_int(&F, 7);
        else if (queued || (o && (o->limit || o->shared)))
            fake_reply_int(&F, 1);
        else
            fake_reply_status(&F, "OK");
        fake_run(&F);
        EXPECT(acquired == 1);
        EXPECT(redlease_release(lk, cb_rel, NULL) == REDLEASE_OK);
        fake_run(&F);
        if (fake_peek(&F)) fake_reply_int(&F, 1);
        fake_run(&F);
        EXPECT(released == 1);
    }
    fake_free(&F);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int installed;
    static char host[HUGE_LEN + 1], path[HUGE_LEN + 1], user[HUGE_LEN + 1],
        pass[HUGE_LEN + 1], prefix[HUGE_LEN + 1];
    if (!installed) {
        fake_alloc_install();
        installed = 1;
    }
    fuzz_input in = {data, size};
    redlease_client_options co, *o = NULL;
    if (take_u8(&in) & 1) {
        o = &co;
        redlease_client_options_init(o);
        co.host = take_str(&in, host);
        co.port = take_int(&in);
        co.unix_path = take_str(&in, path);
        co.username = take_str(&in, user);
        co.password = take_str(&in, pass);
        co.db = take_int(&in);
        co.key_prefix = take_str(&in, prefix);
        co.connect_timeout_ms = take_i64(&in);
        co.command_timeout_ms = take_i64(&in);
        co.reconnect_min_ms = take_i64(&in);
        co.reconnect_max_ms = take_i64(&in);
    }
    redlease_client *c = NULL;
    int rc = redlease_client_new(&c, o);
    expect_verdict(rc, o ? client_verdict(o) : VALID);
    EXPECT((rc == REDLEASE_OK) == (c != NULL));
    redlease_client_free(c);
    if (rc == REDLEASE_OK) run_lock(&in, o);
    EXPECT(fake_alloc_live() == 0);
    return 0;
}
