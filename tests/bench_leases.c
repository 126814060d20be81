/* SPDX-License-Identifier: MIT */
/* bench_leases: 100,000 leases on one client, against a real redis-server.
 * Measures in one run: the library's memory per held lease (counted through
 * redlease_set_allocator), and the wall time of acquiring, renewing and
 * releasing them all, next to raw hiredis doing the same SET NX PX commands
 * on the same loop and connection kind, so the ratio shows our overhead.
 * Run with `make bench` (starts a private redis-server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libev.h> /* the raw hiredis baseline */
#include <redlease.h>
#include <redlease/libev.h>

static struct ev_loop *loop;
static long live_bytes;
static int n_leases = 100000;
static int done_acq, done_rel, renewed;

typedef union hdr {
    size_t n;
    max_align_t a;
} hdr;
static void *cm(size_t n)
{
    hdr *h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->n = n;
    live_bytes += (long)n;
    return h + 1;
}
static void cf(void *p)
{
    if (!p) return;
    hdr *h = (hdr *)p - 1;
    live_bytes -= (long)h->n;
    free(h);
}
static void *cr(void *p, size_t n)
{
    if (!p) return cm(n);
    hdr *h = (hdr *)p - 1;
    long old = (long)h->n;
    h = realloc(h, sizeof *h + n);
    if (!h) return NULL;
    live_bytes += (long)n - old;
    h->n = n;
    return h + 1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_acq(redlease_lock *lk, int st, void *arg)
{
    (void)lk, (void)arg;
    if (st == REDLEASE_OK) done_acq++;
}
static void on_rel(redlease_lock *lk, int st, void *arg)
{
    (void)lk, (void)st, (void)arg;
    done_rel++;
}
static void on_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type == REDLEASE_EV_RENEWED) renewed++;
}

static void run_until(int *counter, int target)
{
    while (*counter < target) ev_run(loop, EVRUN_ONCE);
}

/* Raw hiredis baseline: the same SET NX PX commands, pipelined. */
static int raw_done;
static void raw_cb(redisAsyncContext *ac, void *r, void *p)
{
    (void)ac, (void)r, (void)p;
    raw_done++;
}

static double raw_round(const char *sock)
{
    redisAsyncContext *ac = redisAsyncConnectUnix(sock);
    redisLibevAttach(loop, ac);
    char key[32];
    double t = now_ms();
    for (int i = 0; i < n_leases; i++) {
        snprintf(key, sizeof key, "lock:raw:%d", i);
        redisAsyncCommand(ac, raw_cb, NULL, "SET %s 0123456789abcdef0123456789abcdef NX PX 30000", key);
    }
    run_until(&raw_done, n_leases);
    double ms = now_ms() - t;
    redisAsyncFree(ac);
    return ms;
}

int main(int argc, char **argv)
{
    const char *sock = getenv("REDLEASE_TEST_SOCKET");
    if (!sock) {
        fprintf(stderr, "run through make bench (needs REDLEASE_TEST_SOCKET)\n");
        return 1;
    }
    if (argc > 1) n_leases = atoi(argv[1]);
    loop = ev_default_loop(0);
    redlease_set_allocator(cm, cr, cf);

    redlease_client_options co;
    redlease_client_options_init(&co);
    co.unix_path = sock;
    co.command_timeout_ms = 30000;
    redlease_client *c;
    if (redlease_client_new(&c, &co) || redlease_libev_attach(c, loop)) return 1;
    redlease_client_set_event_cb(c, on_event, NULL);
    while (!redlease_client_connected(c)) ev_run(loop, EVRUN_ONCE);
    long base_bytes = live_bytes;

    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 60000;
    o.renew_interval_ms = 20000;
    redlease_lock **locks = calloc((size_t)n_leases, sizeof *locks);
    char name[32];
    double t = now_ms();
    for (int i = 0; i < n_leases; i++) {
        snprintf(name, sizeof name, "bench:%d", i);
        if (redlease_acquire(c, name, &o, on_acq, NULL, NULL, &locks[i])) return 1;
    }
    run_until(&done_acq, n_leases);
    double acq_ms = now_ms() - t;
    long held_bytes = live_bytes - base_bytes;

    double rel_t = now_ms();
    for (int i = 0; i < n_leases; i++) redlease_release(locks[i], on_rel, NULL);
    run_until(&done_rel, n_leases);
    double rel_ms = now_ms() - rel_t;

    /* Renewal round: a batch with a 1 s interval, timed from the first to the
     * last confirmation of the first round. */
    done_acq = done_rel = 0;
    o.ttl_ms = 3000;
    o.renew_interval_ms = 1000;
    for (int i = 0; i < n_leases; i++) {
        snprintf(name, sizeof name, "bench:r%d", i);
        redlease_acquire(c, name, &o, on_acq, NULL, NULL, &locks[i]);
    }
    run_until(&done_acq, n_leases);
    double r0 = now_ms();
    run_until(&renewed, n_leases);
    double renew_ms = now_ms() - r0 - 1000; /* minus the wait for the interval */
    if (renew_ms < 0) renew_ms = 0;
    redlease_stats st;
    redlease_client_stats(c, &st);
    for (int i = 0; i < n_leases; i++) redlease_release(locks[i], on_rel, NULL);
    run_until(&done_rel, n_leases);

    double raw_ms = raw_round(sock);
    redlease_client_free(c);
    free(locks);

    printf("leases:                 %d on one client, one connection, one timer\n", n_leases);
    printf("memory per held lease:  %.0f bytes (library allocations, key \"lock:bench:N\")\n",
           (double)held_bytes / n_leases);
    printf("acquire all:            %.0f ms (%.0f acquires/s)\n", acq_ms, n_leases / acq_ms * 1e3);
    printf("raw hiredis SET NX PX:  %.0f ms (%.0f commands/s)\n", raw_ms, n_leases / raw_ms * 1e3);
    printf("acquire / raw ratio:    %.2f\n", acq_ms / raw_ms);
    printf("renewal round:          %.0f ms for %d renewals (after the interval)\n", renew_ms, n_leases);
    printf("release all:            %.0f ms\n", rel_ms);
    printf("renewals confirmed:     %llu, commands sent: %llu\n", (unsigned long long)st.renewed,
           (unsigned long long)st.commands_sent);
    printf("library bytes left:     %ld\n", live_bytes);
    ev_loop_destroy(loop);
    return live_bytes == 0 ? 0 : 1;
}
