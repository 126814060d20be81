/* SPDX-License-Identifier: MIT */
/* The same work as bench_raw.c, through redlease on the same loop kind:
 * one client, its one connection, the libev adapter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "bench.h"

static struct {
    struct ev_loop *loop;
    redlease_client *c;
    double end_us;
    long cycles, failed;
    int active;
    int limit; /* the cycles' lock option limit: 0, a mutex; BENCH_SHARED */
} L;

static int64_t lib_clock(void *arg)
{
    (void)arg;
    return bench_clock_ms();
}

static void lib_open(int64_t command_timeout_ms)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.host = bench_host;
    co.port = bench_port;
    if (command_timeout_ms) co.command_timeout_ms = command_timeout_ms;
    const char *cm = getenv("BENCH_COMMANDS"); /* the client option commands */
    co.commands = cm && strcmp(cm, "scripts") == 0 ? REDLEASE_COMMANDS_SCRIPTS : REDLEASE_COMMANDS_AUTO;
    L.loop = ev_loop_new(EVFLAG_AUTO);
    if (redlease_client_new(&L.c, &co) != REDLEASE_OK) bench_die("redlease_client_new");
    redlease_client_set_clock(L.c, lib_clock, NULL);
    if (redlease_libev_attach(L.c, L.loop) != REDLEASE_OK) bench_die("redlease_libev_attach");
    while (!redlease_client_connected(L.c)) ev_run(L.loop, EVRUN_ONCE);
}

static void lib_close(void)
{
    redlease_client_free(L.c);
    ev_run(L.loop, 0);
    ev_loop_destroy(L.loop);
    memset(&L, 0, sizeof L);
}

/* ------------------------------------------------ acquire -> release */
typedef struct chain {
    char name[16];
} chain;

static void chain_start(chain *ch);

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk;
    if (status != REDLEASE_OK) L.failed++;
    L.cycles++;
    if (bench_go_on(L.cycles, L.end_us)) {
        chain_start(arg);
    } else if (--L.active == 0) {
        ev_break(L.loop, EVBREAK_ALL);
    }
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    if (status != REDLEASE_OK) L.failed++;
    redlease_release(lk, on_released, arg);
}

/* BENCH_WAIT_MODE: the lock option wait_mode of a and b's cycles. */
static int wait_mode(void)
{
    const char *m = getenv("BENCH_WAIT_MODE");
    if (!m || !*m || strcmp(m, "queue") == 0) return REDLEASE_WAIT_DEFAULT;
    if (strcmp(m, "poll") == 0) return REDLEASE_WAIT_POLL;
    if (strcmp(m, "wake") == 0) return REDLEASE_WAIT_WAKE;
    bench_die("BENCH_WAIT_MODE: queue, poll or wake");
    return 0;
}

static void chain_start(chain *ch)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    /* A semaphore and a shared holder wait in the queue, their default
     * (wake: ENOTSUP). */
    o.limit = L.limit > 0 ? L.limit : 0;
    o.shared = L.limit == BENCH_SHARED;
    o.wait_mode = L.limit ? REDLEASE_WAIT_DEFAULT : wait_mode();
    redlease_lock *lk;
    if (redlease_acquire(L.c, ch->name, &o, on_acquired, NULL, ch, &lk) != REDLEASE_OK)
        bench_die("redlease_acquire");
}

int bench_lib_cycles(int chains, int limit, double seconds, bench_cycles *out)
{
    lib_open(0);
    L.limit = limit;
    chain *ch = calloc((size_t)chains, sizeof *ch);
    for (int i = 0; i < chains; i++) snprintf(ch[i].name, sizeof ch[i].name, "c%d", i);
    double cpu0 = bench_redis_cpu_us(), t0 = bench_now_us();
    L.end_us = t0 + seconds * 1e6;
    L.active = chains;
    redlease_stats st0, st;
    redlease_client_stats(L.c, &st0);
    for (int i = 0; i < chains; i++) chain_start(&ch[i]);
    unsigned iter0 = ev_iteration(L.loop);
    ev_run(L.loop, 0);
    out->seconds = (bench_now_us() - t0) / 1e6;
    out->redis_cpu_us = bench_redis_cpu_us() - cpu0;
    out->cycles = L.cycles;
    if (getenv("BENCH_VERBOSE")) {
        double n = (double)(L.cycles ? L.cycles : 1);
        redlease_client_stats(L.c, &st);
        fprintf(stderr, "lib cycles (limit %d): %ld cycles, %.4f loop iterations, %.4f timer wakeups, "
                "%.3f commands per cycle\n", limit, L.cycles, (double)(ev_iteration(L.loop) - iter0) / n,
                (double)(st.wakeups - st0.wakeups) / n, (double)(st.commands_sent - st0.commands_sent) / n);
    }
    long failed = L.failed;
    lib_close();
    free(ch);
    return failed ? -1 : 0;
}

/* ------------------------------------------------ held leases */
static struct {
    const bench_hold_spec *s;
    redlease_lock **all;
    int64_t *confirmed; /* per lease: last confirmation (bench_clock_ms) */
    double *late;       /* renewal lateness samples, ms */
    long n_late, late_cap;
    long next, acquired, in_flight, lost;
} H;

#define IN_FLIGHT 10000

static void hold_next(void);

static void on_taken(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    H.in_flight--;
    if (status != REDLEASE_OK) bench_die("redlease: a held lease's acquire failed");
    H.acquired++;
    hold_next();
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)reason, (void)arg;
    H.lost++;
}

/* Lateness of each renewal: confirmed how long after the previous
 * confirmation plus the interval. The key names the lease: lock:{hN}. */
static void on_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type != REDLEASE_EV_ACQUIRED && ev->type != REDLEASE_EV_RENEWED) return;
    const char *brace = strchr(ev->key, '{');
    long i = brace ? strtol(brace + 2, NULL, 10) : -1;
    if (i < 0 || i >= H.s->n) return;
    int64_t now = bench_clock_ms();
    if (ev->type == REDLEASE_EV_RENEWED && H.n_late < H.late_cap)
        H.late[H.n_late++] = (double)(now - H.confirmed[i] - H.s->renew_ms);
    H.confirmed[i] = now;
}

static void hold_next(void)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = H.s->ttl_ms;
    o.renew_interval_ms = H.s->renew_ms;
    while (H.next < H.s->n && H.in_flight < IN_FLIGHT) {
        char name[24];
        snprintf(name, sizeof name, "h%ld", H.next);
        H.in_flight++;
        if (redlease_acquire(L.c, name, &o, on_taken, on_lost, NULL, &H.all[H.next++]) != REDLEASE_OK)
            bench_die("redlease_acquire");
    }
}

static void hold_stop(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)t, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

int bench_lib_hold(const bench_hold_spec *s, bench_held *out)
{
    memset(out, 0, sizeof *out);
    memset(&H, 0, sizeof H);
    H.s = s;
    H.all = malloc((size_t)s->n * sizeof *H.all);
    if (s->track_lateness) {
        H.confirmed = calloc((size_t)s->n, sizeof *H.confirmed);
        H.late_cap = s->n * (long)(s->seconds * 1000 / (double)s->renew_ms + 2);
        H.late = malloc((size_t)H.late_cap * sizeof *H.late);
    }
    lib_open(0);
    if (s->track_lateness) redlease_client_set_event_cb(L.c, on_event, NULL);
    out->rss_before = bench_rss_bytes();
    out->heap_before = bench_heap_bytes();
    hold_next();
    while (H.acquired < s->n) ev_run(L.loop, EVRUN_ONCE);
    out->rss_held = bench_rss_bytes();
    out->heap_held = bench_heap_bytes();
    redlease_stats st0;
    redlease_client_stats(L.c, &st0);
    double cpu0 = bench_cpu_us(), t0 = bench_now_us();
    ev_timer stop;
    ev_timer_init(&stop, hold_stop, s->seconds, 0);
    ev_timer_start(L.loop, &stop);
    BENCH_COLLECT();
    ev_run(L.loop, 0);
    BENCH_COLLECT();
    out->cpu_us = bench_cpu_us() - cpu0;
    out->seconds = (bench_now_us() - t0) / 1e6;
    out->rss_end = bench_rss_bytes();
    redlease_stats st;
    redlease_client_stats(L.c, &st);
    out->leases = (long)st.held_now;
    out->renewals = (long)st.renewed;
    out->disconnects = (long)st.disconnects;
    out->timeouts = (long)st.timeouts;
    out->lost = H.lost;
    if (getenv("BENCH_VERBOSE"))
        fprintf(stderr, "lib window: renewed %llu commands %llu wakeups %llu timeouts %llu\n",
                (unsigned long long)(st.renewed - st0.renewed),
                (unsigned long long)(st.commands_sent - st0.commands_sent),
                (unsigned long long)(st.wakeups - st0.wakeups),
                (unsigned long long)(st.timeouts - st0.timeouts));
    if (H.n_late) {
        qsort(H.late, (size_t)H.n_late, sizeof *H.late, bench_cmp_double);
        out->late_p50_ms = bench_quantile(H.late, H.n_late, 0.5);
        out->late_p99_ms = bench_quantile(H.late, H.n_late, 0.99);
        out->late_max_ms = H.late[H.n_late - 1];
    }
    lib_close(); /* ends the handles (on_lost CLOSED is not counted: past the window) */
    free(H.all);
    free(H.confirmed);
    free(H.late);
    return 0;
}

/* ------------------------------------------------ lost-lease latency */
/* Leases that never renew, so each is lost at its local deadline, while
 * 16 acquire -> release chains keep the client and its connection busy.
 * The deadline is read from the lease itself (remaining ms on the clock
 * the client is given) and on_lost's time from the same clock in µs. */
static struct {
    double *lat;
    long done, want;
    int64_t *deadline;
} D;

static void on_expired(redlease_lock *lk, int reason, void *arg)
{
    long i = (long)(intptr_t)arg;
    double now = bench_now_us();
    if (reason == REDLEASE_LOST_EXPIRED && D.deadline[i] > 0)
        D.lat[D.done++] = now - (double)D.deadline[i] * 1e3;
    else
        bench_die("lost for another reason than the local deadline");
    redlease_release(lk, NULL, NULL);
    if (D.done == D.want) L.end_us = 0; /* the chains stop */
}

static void on_sample(redlease_lock *lk, int status, void *arg)
{
    long i = (long)(intptr_t)arg;
    if (status != REDLEASE_OK) bench_die("a sample lease was not acquired");
    for (;;) { /* the deadline on the client's ms clock, read within one tick */
        int64_t before = bench_clock_ms();
        int64_t left = redlease_lock_remaining_ms(lk);
        if (bench_clock_ms() == before) {
            D.deadline[i] = before + left;
            break;
        }
    }
}

int bench_lib_lost_latency(int samples, double *lat_us)
{
    lib_open(0);
    D.lat = lat_us;
    D.want = samples;
    D.done = 0;
    D.deadline = calloc((size_t)samples, sizeof *D.deadline);
    enum { CHAINS = 16 };
    chain ch[CHAINS];
    for (int i = 0; i < CHAINS; i++) snprintf(ch[i].name, sizeof ch[i].name, "bg%d", i);
    L.end_us = bench_now_us() + 3600e6;
    L.active = CHAINS;
    for (int i = 0; i < CHAINS; i++) chain_start(&ch[i]);
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.renew_interval_ms = REDLEASE_RENEW_OFF;
    for (long i = 0; i < samples; i++) {
        char name[24];
        redlease_lock *lk;
        snprintf(name, sizeof name, "lost%ld", i);
        o.ttl_ms = 50 + (i * 7919) % 500; /* deadlines spread over half a second */
        if (redlease_acquire(L.c, name, &o, on_sample, on_expired, (void *)(intptr_t)i, &lk))
            bench_die("redlease_acquire");
    }
    ev_run(L.loop, 0);
    free(D.deadline);
    lib_close();
    qsort(lat_us, (size_t)samples, sizeof *lat_us, bench_cmp_double);
    return D.done == samples ? 0 : -1;
}
