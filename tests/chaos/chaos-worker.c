/* SPDX-License-Identifier: MIT */
/* chaos-worker: one of the processes of the chaos run (chaos.sh). It loops
 * over the critical section of issue 5 on the shared resource "chaos":
 *
 *   acquire (wait budget, fencing) -> check held, read the store's counter
 *   -> check held -> sleep a random 1..CS ms on a timer (the loop keeps
 *   running: renewals and on_lost go on) -> write counter+1 with the fence
 *   -> check held -> release -> pause 0-10 ms -> again.
 *
 *   chaos-worker ID STORE      REDLEASE_SOCKET=/path/redis.sock
 *   chaos-worker --now         prints the clock (ms), for chaos.sh
 *   CHAOS_SENTINEL=HOST:PORT[,...] and CHAOS_MASTER=NAME instead of the
 *   socket: the primary through Sentinel; CHAOS_CLUSTER=HOST:PORT[,...]
 *   instead: some nodes of a Redis Cluster (the lease goes to the primary
 *   of its key's slot); CHAOS_QUORUM=HOST:PORT,HOST:PORT[,...] instead:
 *   independent masters, the lease held on a majority of them (the
 *   client option quorum_addrs; CHAOS_MIN_REPLICAS must then be 0);
 *   CHAOS_MIN_REPLICAS (default 0):
 *   the lock option replica_acks (and the acknowledged renewals with it);
 *   CHAOS_TTL_MS (default 100), CHAOS_WAIT_MS (default 4 x TTL),
 *   CHAOS_CS_MS (longest sleep in the critical section; default 1.5 TTL:
 *   longer ones need renewals, so a frozen server costs the lease),
 *   CHAOS_SEED (the worker's random delays; default 1),
 *   CHAOS_WAIT_MODE: queue (the lock option wait_mode
 *   REDLEASE_WAIT_QUEUE: waiters join the resource's FIFO queue in Redis
 *   and are handed the lock), poll (REDLEASE_WAIT_POLL), or unset or
 *   default (the library's default, as before this option),
 *   CHAOS_LIMIT, CHAOS_WEIGHT (default 0: a mutex): the lock options limit
 *   and weight, a counting semaphore of CHAOS_LIMIT permits of which this
 *   worker holds CHAOS_WEIGHT (0: 1); CHAOS_SHARED 1: the lock option
 *   shared; CHAOS_HOLDS: the weight its start line says (the checker's:
 *   chaos.sh gives an exclusive holder all of the capacity)
 *
 * Every line it prints starts with the CLOCK_MONOTONIC time in ms (with us)
 * and the worker id; the clock is the one the library and every other
 * process on the machine read, so chaos-check.awk can line up all logs:
 *   T W acquired fence=F send=S confirm=C     S: the confirming request's send
 *   T W start ttl=TTL wait=W mode=queue|poll|default limit=L weight=N shared=S
 *                                             the process began (L 0: a
 *                                             mutex; N: the weight it holds)
 *   T W acquiring                             a cycle's acquire was asked
 *                                             for: the worker waits from T
 *   T W waiting attempt=N                     the first "busy" of the cycle
 *                                             (attempt N): it waits (in
 *                                             queue mode: it is queued, or
 *                                             about to be)
 *   T W acquired ... attempts=N               N: the attempts it took
 *   T W act-begin                             held() was 1 at T; reads next
 *   T W act-end last_held=L confirmed=0|1     held() was 1 at L; confirmed=1:
 *                                             also after the write (L = T)
 *   T W read ok|refused fence=F value=V
 *   T W write accepted|refused fence=F value=V
 *   T W confirmed expiry=E   an acquire or renewal confirmed: E is the
 *                            earliest the key can expire on the server (send
 *                            time of the confirmed command, less a ms for
 *                            rtt_ms rounding, + TTL)
 *   T W tick due=E held=H open=O iter=I  the worker's own timer for E
 *                            fired, in loop iteration I (ev_iteration). H:
 *                            what held() said then (must be 0: E is past
 *                            the library's deadline). O=1: the lease E
 *                            belongs to is still ours and neither released
 *                            nor reported lost yet: its lost-event must come
 *                            in this same iteration
 *   T W lost-event reason=N iter=I  the library saw the loss (N: enum
 *                            redlease_lost_reason), in loop iteration I
 *   T W lost reason=N TEXT   on_lost ran (not at all if we released first)
 *   T W released status=S    T W acquire-failed status=S
 *   T W renew-failed status=S [detail=TEXT]   T W attempt-failed retry_in=MS
 *                            status=S [detail=TEXT]  (Redis's or the
 *                            connection's error text)
 * The holder interval is [act-begin, last_held]: both ends are moments at
 * which redlease_lock_held() said the lease was safe to use. A write made
 * after the lease was lost (confirmed=0: a pause hit the sleep) is the
 * fence's job: the store refuses it once the next holder has read. On a
 * semaphore several hold at once and the same rule orders them: of the
 * holders that read the counter, only one whose read no higher fence
 * followed may write it (the others' writes are refused), so the counter
 * stays exact, and every fence must differ.
 *
 * The tick is due at E, which is no earlier than the library's own timer
 * for the lease's deadline: a loss the library reports in a loop iteration
 * after the tick's was late while this process ran (a library bug); one
 * reported in the tick's iteration or before was as early as the process
 * let it be, and before E unless the process was not running in time.
 *
 * SIGTERM (or SIGINT) closes the client gracefully; the exit status is 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "store.h"

#define RESOURCE "chaos"

static struct ev_loop *loop;
static redlease_client *client;
static redlease_lock *lease;       /* the handle of the current cycle, or NULL */
static ev_timer sleep_timer;       /* the random sleep inside the critical section */
static ev_timer idle_timer;        /* the pause between two cycles */
static ev_timer expiry_tick;       /* due at the earliest server-side expiry */
static int64_t tick_due_us;        /* that expiry */
static ev_signal sigterm_watcher, sigint_watcher;
static int worker_id;
static const char *store_path;
static redlease_lock_options lock_options;
static uint32_t rng_state;
static int cs_max_ms;
static int stopping;
static int exit_status;
static int64_t acting_since = -1;  /* act-begin time while in the critical section, else -1 */
static int64_t last_held_us;       /* latest time held() said 1 in this critical section */
static uint64_t value_read;
static int64_t confirm_us, confirm_send_us; /* from the ACQUIRED event */
static unsigned long cycles;
static unsigned long cycle_id;   /* the acquire cycle under way */
static unsigned long tick_cycle; /* the cycle whose confirmation armed the tick */
static int cycle_told;           /* this cycle's loss was reported, or its release asked for */
static int cycle_attempts;       /* acquire attempts sent in this cycle */
static int cycle_waited;         /* this cycle was told "busy" */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void say(int64_t t_us, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int64_t t_us, const char *fmt, ...)
{
    va_list ap;
    printf("%" PRId64 ".%03d %d ", t_us / 1000, (int)(t_us % 1000), worker_id);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static uint32_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static double random_seconds(int min_ms, int max_ms)
{
    return (min_ms + (int)(rng_next() % (uint32_t)(max_ms - min_ms + 1))) / 1000.0;
}

/* held() now? The time is read before the call: if the answer is 1, the
 * lease was safe to use at that time. */
static int held_at(int64_t *t_us)
{
    *t_us = now_us();
    return redlease_lock_held(lease);
}

/* Leaves the critical section; confirmed: held() said 1 after the write. */
static void act_end(int confirmed)
{
    if (acting_since < 0) return;
    say(now_us(), "act-end last_held=%" PRId64 ".%03d confirmed=%d", last_held_us / 1000,
        (int)(last_held_us % 1000), confirmed);
    acting_since = -1;
    ev_timer_stop(loop, &sleep_timer);
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    say(now_us(), "released status=%s", redlease_strerror(status));
    lease = NULL;
    if (stopping) return;
    ev_timer_set(&idle_timer, random_seconds(0, 10), 0.);
    ev_timer_start(loop, &idle_timer);
}

static void end_cycle(void)
{
    if (lease) cycle_told = 1; /* released: on_lost is no longer owed */
    if (lease && redlease_release(lease, on_released, NULL) != REDLEASE_OK)
        say(now_us(), "release-refused"); /* already being released */
}

static void after_sleep(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)w, (void)revents;
    /* As the issue has it: the write goes out without a fresh check, so a
     * pause that hit the sleep produces a stale write for the fence. */
    uint64_t fence = redlease_lock_fence(lease);
    int rc = store_write(store_path, worker_id, fence, value_read + 1);
    say(now_us(), "write %s fence=%" PRIu64 " value=%" PRIu64,
        rc == STORE_OK ? "accepted" : rc == STORE_REFUSED ? "refused" : "error", fence, value_read + 1);
    if (rc == STORE_ERROR) exit_status = 1;
    int64_t t;
    int confirmed = held_at(&t);
    if (confirmed) last_held_us = t;
    act_end(confirmed);
    end_cycle();
}

static void critical_section(void)
{
    int64_t t;
    if (!held_at(&t)) {
        say(now_us(), "not-held-after-acquire");
        end_cycle();
        return;
    }
    acting_since = last_held_us = t;
    say(t, "act-begin");
    uint64_t fence = redlease_lock_fence(lease);
    int rc = store_read(store_path, worker_id, fence, &value_read);
    say(now_us(), "read %s fence=%" PRIu64 " value=%" PRIu64,
        rc == STORE_OK ? "ok" : rc == STORE_REFUSED ? "refused" : "error", fence, value_read);
    if (rc == STORE_ERROR) exit_status = 1;
    if (rc != STORE_OK || !held_at(&t)) {
        act_end(0);
        end_cycle();
        return;
    }
    last_held_us = t;
    ev_timer_set(&sleep_timer, random_seconds(1, cs_max_ms), 0.);
    ev_timer_start(loop, &sleep_timer);
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)arg;
    say(now_us(), "lost reason=%d %s", reason, redlease_lost_reason_str(reason));
    if (reason == REDLEASE_LOST_CLOSED) return; /* our own close: it ends the handle */
    act_end(0); /* stop acting at once: another worker may hold it any moment */
    end_cycle();
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    if (status == REDLEASE_ECANCELED) return; /* our close */
    if (status != REDLEASE_OK) {
        say(now_us(), "acquire-failed status=%s", redlease_strerror(status));
        end_cycle();
        return;
    }
    cycles++;
    say(now_us(), "acquired fence=%" PRIu64 " send=%" PRId64 ".%03d confirm=%" PRId64 ".%03d attempts=%d",
        redlease_lock_fence(lk), confirm_send_us / 1000, (int)(confirm_send_us % 1000),
        confirm_us / 1000, (int)(confirm_us % 1000), cycle_attempts);
    critical_section();
}

static void start_cycle(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)w, (void)revents;
    cycle_id++;
    cycle_told = 0;
    cycle_attempts = 0;
    cycle_waited = 0;
    say(now_us(), "acquiring");
    int rc = redlease_acquire(client, RESOURCE, &lock_options, on_acquired, on_lost, NULL, &lease);
    if (rc != REDLEASE_OK) {
        say(now_us(), "acquire-refused status=%s", redlease_strerror(rc));
        lease = NULL;
        exit_status = 1;
        stopping = 1;
        redlease_client_close(client, NULL, NULL);
    }
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)w, (void)revents;
    int ours = tick_cycle == cycle_id && lease;
    say(now_us(), "tick due=%" PRId64 ".%03d held=%d open=%d iter=%u", tick_due_us / 1000,
        (int)(tick_due_us % 1000), ours ? redlease_lock_held(lease) : 0, ours && !cycle_told,
        ev_iteration(l));
}

/* A confirmed acquire or renewal at t, rtt_ms after its send: logs the
 * earliest server-side expiry and arms the tick for it. The library's rtt
 * is the difference of two whole-ms clock reads, so the send was at least
 * (rtt_ms + 1) ms before t. */
static void confirmed(int64_t t, int64_t rtt_ms)
{
    tick_due_us = t - (rtt_ms + 1) * 1000 + lock_options.ttl_ms * 1000;
    tick_cycle = cycle_id;
    say(t, "confirmed expiry=%" PRId64 ".%03d", tick_due_us / 1000, (int)(tick_due_us % 1000));
    /* The clock is read before libev's: the tick may fire a few us after
     * E, never before it (at E, held() must already say 0). */
    int64_t after_us = tick_due_us - now_us();
    ev_now_update(loop);
    ev_timer_stop(loop, &expiry_tick);
    ev_timer_set(&expiry_tick, after_us > 0 ? after_us / 1e6 : 0., 0.);
    ev_timer_start(loop, &expiry_tick);
}

static void on_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    int64_t t = now_us();
    switch (ev->type) {
    case REDLEASE_EV_ATTEMPT:
        cycle_attempts = ev->attempt;
        break;
    case REDLEASE_EV_CONTENDED: /* every check of a waiter: only the first is told */
        if (!cycle_waited) say(t, "waiting attempt=%d", ev->attempt);
        cycle_waited = 1;
        break;
    case REDLEASE_EV_ACQUIRED:
        confirm_us = t;
        confirm_send_us = t - ev->rtt_ms * 1000; /* ms precision: rtt is whole ms */
        confirmed(t, ev->rtt_ms);
        break;
    case REDLEASE_EV_RENEWED:
        confirmed(t, ev->rtt_ms);
        break;
    case REDLEASE_EV_LOST: /* the moment the library saw it; on_lost follows */
        cycle_told = 1;
        say(t, "lost-event reason=%d iter=%u", ev->lost_reason, ev_iteration(loop));
        break;
    case REDLEASE_EV_RENEW_FAILED:
        say(t, "renew-failed status=%s%s%s", redlease_strerror(ev->status), ev->detail ? " detail=" : "",
            ev->detail ? ev->detail : "");
        break;
    case REDLEASE_EV_ATTEMPT_FAILED: /* Redis's answer: a redirect given up, TRYAGAIN... */
        say(t, "attempt-failed retry_in=%" PRId64 " status=%s%s%s", ev->retry_in_ms,
            redlease_strerror(ev->status), ev->detail ? " detail=" : "", ev->detail ? ev->detail : "");
        break;
    case REDLEASE_EV_DISCONNECTED:
        say(t, "disconnected detail=%s", ev->detail ? ev->detail : redlease_strerror(ev->status));
        break;
    case REDLEASE_EV_CONNECTED:
        say(t, "connected");
        break;
    default:
        break;
    }
}

static void on_closed(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    client = NULL;
    ev_signal_stop(loop, &sigterm_watcher);
    ev_signal_stop(loop, &sigint_watcher);
}

static void on_signal(struct ev_loop *l, ev_signal *w, int revents)
{
    (void)l, (void)revents;
    if (stopping) return;
    stopping = 1;
    say(now_us(), "signal %d", w->signum);
    act_end(0);
    ev_timer_stop(loop, &idle_timer);
    ev_timer_stop(loop, &expiry_tick);
    redlease_client_close(client, on_closed, NULL); /* ends the lease handle too */
}

static int64_t env_ms(const char *name, int64_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0) {
        fprintf(stderr, "chaos-worker: bad %s=%s\n", name, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--now") == 0) {
        /* The shell's clock: the fault log lines up with the workers'. */
        int64_t t = now_us();
        printf("%" PRId64 ".%03d\n", t / 1000, (int)(t % 1000));
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s ID STORE\n", argv[0]);
        return 2;
    }
    worker_id = atoi(argv[1]);
    store_path = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines, even if we are killed */
    rng_state = (uint32_t)(env_ms("CHAOS_SEED", 1) * 2654435761u + (uint32_t)worker_id * 40503u) | 1;

    redlease_lock_options_init(&lock_options);
    lock_options.ttl_ms = env_ms("CHAOS_TTL_MS", 100);
    lock_options.wait_ms = env_ms("CHAOS_WAIT_MS", 4 * lock_options.ttl_ms);
    lock_options.wait_retry_base_ms = 10;
    lock_options.wait_retry_max_ms = 100;
    lock_options.fencing = 1;
    lock_options.replica_acks = (int)env_ms("CHAOS_MIN_REPLICAS", 0);
    lock_options.limit = (int)env_ms("CHAOS_LIMIT", 0);
    lock_options.weight = (int)env_ms("CHAOS_WEIGHT", 0);
    lock_options.shared = (int)env_ms("CHAOS_SHARED", 0);
    /* the weight its start line says it holds, for the checker: a shared or
     * exclusive holder's is the script's choice (CHAOS_HOLDS) */
    int holds = (int)env_ms("CHAOS_HOLDS", 0);
    if (!holds) holds = lock_options.weight ? lock_options.weight : 1;
    const char *mode = getenv("CHAOS_WAIT_MODE");
    if (!mode || !*mode || strcmp(mode, "default") == 0) {
        mode = "default";
    } else if (strcmp(mode, "queue") == 0) {
        lock_options.wait_mode = REDLEASE_WAIT_QUEUE;
    } else if (strcmp(mode, "poll") == 0) {
        lock_options.wait_mode = REDLEASE_WAIT_POLL;
    } else {
        fprintf(stderr, "chaos-worker: bad CHAOS_WAIT_MODE=%s (queue, poll or default)\n", mode);
        return 2;
    }
    cs_max_ms = (int)env_ms("CHAOS_CS_MS", lock_options.ttl_ms * 3 / 2);
    if (cs_max_ms < 1) cs_max_ms = 1;

    redlease_client_options co;
    redlease_client_options_init(&co);
    if (getenv("CHAOS_SENTINEL")) {
        co.topology = REDLEASE_TOPOLOGY_SENTINEL;
        co.sentinel_addrs = getenv("CHAOS_SENTINEL");
        co.sentinel_master_name = getenv("CHAOS_MASTER");
    } else if (getenv("CHAOS_CLUSTER")) {
        co.topology = REDLEASE_TOPOLOGY_CLUSTER;
        co.cluster_addrs = getenv("CHAOS_CLUSTER");
    } else if (getenv("CHAOS_QUORUM")) {
        co.topology = REDLEASE_TOPOLOGY_QUORUM;
        co.quorum_addrs = getenv("CHAOS_QUORUM");
    } else {
        co.unix_path = getenv("REDLEASE_SOCKET");
    }
    /* Commands must time out within a lease, or a frozen server keeps a
     * cycle waiting long after its lease is gone. */
    co.command_timeout_ms = lock_options.ttl_ms;
    co.connect_timeout_ms = lock_options.ttl_ms;
    co.reconnect_max_ms = 200;

    loop = EV_DEFAULT;
    int rc = redlease_client_new(&client, &co);
    if (rc == REDLEASE_OK) rc = redlease_libev_attach(client, loop);
    if (rc != REDLEASE_OK) {
        fprintf(stderr, "chaos-worker: %s\n", redlease_strerror(rc));
        redlease_client_free(client);
        return 1;
    }
    redlease_client_set_event_cb(client, on_event, NULL);
    ev_timer_init(&sleep_timer, after_sleep, 0., 0.);
    ev_timer_init(&idle_timer, start_cycle, 0., 0.);
    ev_timer_init(&expiry_tick, on_tick, 0., 0.);
    ev_signal_init(&sigterm_watcher, on_signal, SIGTERM);
    ev_signal_init(&sigint_watcher, on_signal, SIGINT);
    ev_signal_start(loop, &sigterm_watcher);
    ev_signal_start(loop, &sigint_watcher);
    ev_timer_start(loop, &idle_timer);
    say(now_us(), "start ttl=%" PRId64 " wait=%" PRId64 " mode=%s limit=%d weight=%d shared=%d", lock_options.ttl_ms,
        lock_options.wait_ms, mode, lock_options.limit, holds, lock_options.shared);

    ev_run(loop, 0); /* returns once the client is closed and the watchers stopped */

    say(now_us(), "exit status=%d cycles=%lu", exit_status, cycles);
    ev_loop_destroy(loop);
    return exit_status;
}
