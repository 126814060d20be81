/* SPDX-License-Identifier: MIT */
/* Integration tests: the library on a real event loop against a real
 * redis-server that tests/support/redis-harness.sh started (unix socket in
 * REDLEASE_TEST_SOCKET, TCP port in REDLEASE_TEST_PORT, no persistence,
 * DEBUG enabled). A second, synchronous hiredis connection plays the admin:
 * it looks at keys, deletes or overwrites them and injects faults.
 *
 * The same scenarios run once per adapter: the suite's files are linked
 * with one loop_<name>.c (testloop.h) into each tests/integration/test_<name>.
 * This file has the admin, the loop, the holder (suite.h declares them) and
 * the order the cases run in; the cases are in suite_leases.c (leases on
 * the server, and the faults it is given) and suite_adapter.c (the
 * adapter's own contract). */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <redlease.h>

#include "scale.h"
#include "suite.h"

const char *sock_path;
static int tcp_port;
/* tls-NAME.itest: the harness's server also speaks TLS there, and every
 * client of the suite but those of a case's own making goes over it. */
int tls_port;
static char tls_files[3][600]; /* CA, client certificate, its key */

int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- admin */

redisContext *admin(void)
{
    static redisContext *a;
    if (!a) a = redisConnectUnix(sock_path);
    return a;
}

redisReply *cmd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(admin(), fmt, ap);
    va_end(ap);
    return r;
}

void cmd_free(const char *fmt, const char *arg)
{
    redisReply *r = arg ? cmd(fmt, arg) : cmd(fmt);
    if (r) freeReplyObject(r);
}

/* The key of resource under the default prefix (redlease_key()); four
 * rotating buffers, so a few can be used in one expression. */
const char *key_of(const char *resource, int kind)
{
    static char bufs[4][256];
    static int next;
    char *b = bufs[next++ % 4];
    size_t len;
    if (redlease_key("lock:", resource, strlen(resource), kind, b, sizeof bufs[0], &len) != REDLEASE_OK)
        b[0] = '\0';
    return b;
}

/* The value of key, or "" if missing. */
const char *get(const char *key)
{
    static char buf[128];
    redisReply *r = cmd("GET %s", key);
    buf[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING) snprintf(buf, sizeof buf, "%s", r->str);
    if (r) freeReplyObject(r);
    return buf;
}

/* Is the server at least MAJOR.MINOR (REDLEASE_TEST_REDIS_VERSION, from
 * the harness)? Cases needing newer commands skip on older servers. */
int redis_at_least(int major, int minor)
{
    int ma = 0, mi = 0;
    const char *v = getenv("REDLEASE_TEST_REDIS_VERSION");
    if (!v || sscanf(v, "%d.%d", &ma, &mi) < 1) return 1; /* unknown: try */
    return ma > major || (ma == major && mi >= minor);
}

long long pttl(const char *key)
{
    redisReply *r = cmd("PTTL %s", key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;
    if (r) freeReplyObject(r);
    return v;
}

static redisContext *kept[16];
static int nkept;

/* Sends a command without waiting for its reply (DEBUG SLEEP, CLIENT PAUSE
 * take effect while our loop keeps running). */
void send_nowait(const char *c)
{
    redisContext *x = redisConnectUnix(sock_path);
    redisAppendCommand(x, c);
    int done = 0;
    while (!done && redisBufferWrite(x, &done) == REDIS_OK) {}
    /* freed at exit: closing now could be read before the command runs */
    if (nkept < 16)
        kept[nkept++] = x;
    else
        redisFree(x);
}

/* ------------------------------------------------------------- the loop */

int64_t longest_turn;
static int64_t last_turn;

void turns_watch(void)
{
    longest_turn = 0;
    last_turn = mono_ms();
}

int64_t slowness = 1;

static int run_loop(volatile int *flag, int64_t ms)
{
    int64_t end = mono_ms() + ms;
    while (!*flag && mono_ms() < end) turn(10);
    return *flag;
}

/* Runs the loop until *flag is nonzero or ms (times the slowness) pass;
 * returns *flag. */
int run_until(volatile int *flag, int64_t ms) { return run_loop(flag, ms * slowness); }

void turn(int ms)
{
    int64_t t0 = mono_ms();
    if (t0 - last_turn > longest_turn) longest_turn = t0 - last_turn; /* and the code between */
    testloop_run_once(ms);
    last_turn = t0;
    if (mono_ms() - t0 > longest_turn) longest_turn = mono_ms() - t0;
}

void run_for(int64_t ms)
{
    int never = 0;
    run_loop(&never, ms);
}

/* --------------------------------------------------------------- holder */

void h_acq(redlease_lock *lk, int st, void *arg)
{
    holder *h = arg;
    h->acquired++;
    h->acq_status = st;
    h->t_acq = mono_ms();
    h->fence = redlease_lock_fence(lk);
    if (st == REDLEASE_OK && redlease_lock_held(lk)) h->acted = 1;
}

void h_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk;
    holder *h = arg;
    h->lost++;
    h->lost_reason = reason;
    h->t_lost = mono_ms();
}

void h_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk;
    holder *h = arg;
    h->released++;
    h->rel_status = st;
    h->t_rel = mono_ms();
}

redlease_client *client_tcp(int tcp)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    if (tcp) {
        o.host = "127.0.0.1";
        o.port = tcp_port;
    } else if (tls_port) {
        o.host = "127.0.0.1";
        o.port = tls_port;
        o.tls = 1;
        o.tls_ca_file = tls_files[0];
        o.tls_cert_file = tls_files[1];
        o.tls_key_file = tls_files[2];
    } else {
        o.unix_path = sock_path;
    }
    o.command_timeout_ms = 500 * slowness;
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 200;
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_OK);
    CHECK_EQ(testloop_attach(c), REDLEASE_OK);
    return c;
}

redlease_client *client(void) { return client_tcp(0); }

int wait_connected(redlease_client *c)
{
    int64_t end = mono_ms() + 3000;
    while (!redlease_client_connected(c) && mono_ms() < end) run_for(5);
    return redlease_client_connected(c);
}

void acquire(holder *h, const char *res, redlease_lock_options o)
{
    h->t_call = mono_ms();
    CHECK_EQ(redlease_acquire(h->c, res, &o, h_acq, h_lost, h, &h->lk), REDLEASE_OK);
}

void release(holder *h)
{
    CHECK_EQ(redlease_release(h->lk, h_rel, h), REDLEASE_OK);
    run_until(&h->released, 2000);
    CHECK_EQ(h->released, 1);
}

redlease_lock_options lopts(int64_t ttl, int64_t wait)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    o.wait_retry_base_ms = 10;
    o.wait_retry_max_ms = 100;
    return o;
}

/* Nothing of redlease's is left on the loop: it empties within 2 s (hiredis
 * and libuv may need an iteration or two to close handles), and then the
 * loop's own run returns by itself. */
int loop_empties(void)
{
    int64_t end = mono_ms() + 2000;
    while (testloop_pending() && mono_ms() < end) testloop_run_once(10);
    if (testloop_pending()) return 0;
    int64_t t = mono_ms();
    testloop_run_to_end();
    return mono_ms() - t < 1000;
}

/* After the last client is freed, the loop must hold nothing of ours. */
void free_and_check_loop_empty(redlease_client *c)
{
    redlease_client_free(c);
    CHECK(loop_empties());
}

int main(int argc, char **argv)
{
    slowness = time_scale();
    sock_path = getenv("REDLEASE_TEST_SOCKET");
    const char *port = getenv("REDLEASE_TEST_PORT");
    if (!sock_path || !port) {
        printf("Bail out! REDLEASE_TEST_SOCKET/PORT not set: run through run-integration.sh\n");
        return 1;
    }
    tcp_port = atoi(port);
    const char *tls = getenv("REDLEASE_TEST_TLS_PORT"), *pki = getenv("REDLEASE_TEST_PKI");
    if (tls && pki) {
        if (!redlease_tls_available()) {
            printf("Bail out! the suite over TLS, in a library built without TLS\n");
            return 1;
        }
        tls_port = atoi(tls);
        const char *names[3] = {"ca.crt", "client.crt", "client.key"};
        for (int i = 0; i < 3; i++) snprintf(tls_files[i], sizeof tls_files[i], "%s/%s", pki, names[i]);
    }
    testloop_init();
    printf("# adapter: %s%s\n", testloop_name, tls_port ? ", over TLS" : "");
    if (!admin() || admin()->err) {
        printf("Bail out! cannot reach redis at %s\n", sock_path);
        return 1;
    }
    static const test_case tests[] = {
        TEST_CASE(test_sequential_holders),
        TEST_CASE(test_concurrent_race_one_winner),
        TEST_CASE(test_holder_that_never_releases_is_replaced),
        TEST_CASE(test_renewal_keeps_lease_past_ttls),
        TEST_CASE(test_semaphore_and_shared_on_this_loop),
        TEST_CASE(test_key_deleted_or_overwritten_is_not_owner),
        TEST_CASE(test_frozen_server_expired_before_server_expiry),
        TEST_CASE(test_paused_server_loss_heard_before_key_expires),
        TEST_CASE(test_client_kill_reconnects_and_keeps_lease),
        TEST_CASE(test_fencing_tokens_strictly_increase),
        TEST_CASE(test_script_flush_falls_back_to_eval),
        TEST_CASE(test_tcp_and_cancel_in_flight),
        TEST_CASE(test_auth_and_wrong_password),
        TEST_CASE(test_graceful_close_deletes_keys),
        TEST_CASE(test_conditional_commands_where_the_server_has_them),
        TEST_CASE(test_timer_precision_and_rearm),
        TEST_CASE(test_callbacks_run_from_the_read),
        TEST_CASE(test_adapter_timer_contract),
        TEST_CASE(test_free_inside_callbacks),
        TEST_CASE(test_reset_by_peer_noticed_at_once),
        TEST_CASE(test_peer_gone_before_write_does_not_kill),
        TEST_CASE(test_peer_stops_reading_after_handshake_does_not_kill),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    redisFree(admin());
    for (int i = 0; i < nkept; i++) redisFree(kept[i]);
    testloop_destroy();
    return rc;
}
