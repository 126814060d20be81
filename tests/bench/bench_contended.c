/* SPDX-License-Identifier: MIT */
/* contended: N worker processes contend for one key through redlease, each
 * with its own libev loop and client, as N servers sharing a job would. A
 * worker acquires (wait_ms 2000 and its mode's options), holds the lease
 * for a critical section of hold_us spent asleep in its loop (an ev_timer:
 * a critical section waiting on I/O), releases, and acquires again as soon
 * as on_release runs. A failed acquire (the 2 s budget ran out) is a
 * give-up: counted, and the worker acquires again.
 *
 * Every turn is recorded on CLOCK_MONOTONIC in ns, which is system-wide,
 * so the parent can merge the workers' records by acquired time and see
 * what no single client can: the gap while the lease changes hands, how
 * often the releaser takes it straight back, how evenly the workers share
 * it. Two holders at once is counted too: that is a failure, not a speed.
 *
 * The semaphore mode holds one of limit 3 permits (weight 1) instead:
 * then up to 3 hold at once, and a handoff is a permit's: from a release
 * to the acquisition that takes the permit it freed, the oldest free one,
 * or the acquirer's own if still free (a self re-acquire). With one
 * permit that is the mutex's handoff, consecutive turns. A holder more
 * than the permits is the failure.
 *
 * Commands per CS counts what the clients sent, a script as one: each
 * worker's redlease_client_stats() commands_sent over the window. Redis
 * 7.0 cannot tell that: INFO stats' total_commands_processed and INFO
 * commandstats both count the commands a script calls (7.0.15: an EVAL
 * calling three moves the total by four, SET's calls by one), and SET is
 * sent by clients (an acquire's first attempt) as well as called by the
 * acquire script, so no difference of commandstats splits it. MONITOR
 * does (a script's calls come as "[db lua]" lines), and its count of the
 * other lines over this scenario's window equalled the clients' sum
 * exactly; but a monitored server is slower at every command (here the
 * handoff p50 rose by 10-40 us, with more self re-acquires, whether the
 * stream was read meanwhile or not), so the bench does not run one. The
 * server's own total is in the JSON too (redis_calls_per_cs: a script's
 * calls included). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "bench.h"

#define KEY "contended"
#define WAIT_MS 2000

/* ------------------------------------------------ modes */
/* A mode is one row: its lock options, filled after
 * redlease_lock_options_init() and wait_ms = WAIT_MS. */
typedef struct mode {
    const char *name;
    void (*options)(redlease_lock_options *o);
} mode;

static void library_defaults(redlease_lock_options *o) { (void)o; }

/* The behaviour of 0.1 and of every Redis lock library measured in issue
 * 16: retries after a jittered backoff, in no order. */
static void poll_defaults(redlease_lock_options *o) { o->wait_mode = REDLEASE_WAIT_POLL; }

static void poll_1_10ms(redlease_lock_options *o)
{
    o->wait_mode = REDLEASE_WAIT_POLL;
    o->wait_retry_base_ms = 1;
    o->wait_retry_max_ms = 10;
}

/* Wake-ups without order: the first waiters race the releaser. */
static void wake(redlease_lock_options *o) { o->wait_mode = REDLEASE_WAIT_WAKE; }

/* A counting semaphore (issue 27): its waiters wait in its queue, admitted
 * in order (the default mode). */
static void semaphore_3(redlease_lock_options *o) { o->limit = 3; }

static const mode modes[] = {
    {"defaults", library_defaults},
    {"wake", wake},
    {"poll", poll_defaults},
    {"poll-1-10ms", poll_1_10ms},
    {"semaphore", semaphore_3},
};
#define N_MODES ((int)(sizeof modes / sizeof modes[0]))

const char *bench_contended_mode(int i)
{
    return i >= 0 && i < N_MODES ? modes[i].name : NULL;
}

static const mode *find_mode(const char *name)
{
    for (int i = 0; i < N_MODES; i++)
        if (!strcmp(modes[i].name, name)) return &modes[i];
    return NULL;
}

static void mode_options(const mode *m, redlease_lock_options *o)
{
    redlease_lock_options_init(o);
    o->wait_ms = WAIT_MS;
    m->options(o);
}

/* ------------------------------------------------ what a worker records */
typedef struct turn {
    int64_t call_ns;     /* redlease_acquire() called */
    int64_t acquired_ns; /* on_acquire ran: OK, or the give-up */
    int64_t release_ns;  /* redlease_release() called after the hold */
    int32_t worker, gave_up;
} turn;

/* Sent ahead of the turns. */
typedef struct report {
    double cpu_us, commands; /* user + sys, and commands sent, over the window */
    long turns, lost, errors;
} report;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------ one worker (a child) */
static struct {
    struct ev_loop *loop;
    redlease_client *c;
    redlease_lock *lk;
    redlease_lock_options o;
    ev_timer hold, open, close;
    enum { ACQUIRING, HOLDING, RELEASING } phase;
    int id, stopping;
    double hold_s, cpu0, sent0;
    turn cur, *turns;
    long cap;
    report rep;
} W;

static void acquire(void);

static void keep(const turn *t)
{
    if (W.rep.turns == W.cap) {
        W.cap = W.cap ? 2 * W.cap : 4096;
        W.turns = realloc(W.turns, (size_t)W.cap * sizeof *W.turns);
        if (!W.turns) bench_die("out of memory");
    }
    W.turns[W.rep.turns++] = *t;
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    (void)lk, (void)arg;
    if (status != REDLEASE_OK) W.rep.errors++;
    if (W.stopping)
        ev_break(W.loop, EVBREAK_ALL);
    else
        acquire();
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    (void)lk, (void)reason, (void)arg;
    W.rep.lost++;
}

static void hold_done(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop, (void)t, (void)revents;
    W.cur.release_ns = now_ns();
    keep(&W.cur);
    W.phase = RELEASING;
    if (redlease_release(W.lk, on_released, NULL) != REDLEASE_OK) bench_die("redlease_release");
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    (void)arg;
    W.cur.acquired_ns = now_ns();
    if (W.phase == RELEASING) return; /* cancelled by the window's end */
    if (status == REDLEASE_OK) {
        W.phase = HOLDING;
        /* from now: libev counts from the time it read before the reply */
        ev_now_update(W.loop);
        ev_timer_set(&W.hold, W.hold_s, 0);
        ev_timer_start(W.loop, &W.hold);
        return;
    }
    if (status == REDLEASE_EBUSY || status == REDLEASE_ETIMEDOUT) {
        W.cur.gave_up = 1;
        keep(&W.cur);
    } else {
        W.rep.errors++; /* not contention: the run is broken */
    }
    W.phase = RELEASING; /* a failed handle is ended by a release too */
    if (redlease_release(lk, on_released, NULL) != REDLEASE_OK) bench_die("redlease_release");
}

static void acquire(void)
{
    W.cur = (turn){.worker = W.id, .call_ns = now_ns()};
    W.phase = ACQUIRING;
    if (redlease_acquire(W.c, KEY, &W.o, on_acquired, on_lost, NULL, &W.lk) != REDLEASE_OK)
        bench_die("redlease_acquire");
}

static double commands_sent(void)
{
    redlease_stats st;
    redlease_client_stats(W.c, &st);
    return (double)st.commands_sent;
}

static void window_open(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop, (void)t, (void)revents;
    W.cpu0 = bench_cpu_us();
    W.sent0 = commands_sent();
}

/* The end: a pending acquire is cancelled, a held lease released after
 * its hold; the loop ends at that on_release. */
static void window_close(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop, (void)t, (void)revents;
    W.rep.cpu_us = bench_cpu_us() - W.cpu0;
    W.rep.commands = commands_sent() - W.sent0;
    W.stopping = 1;
    if (W.phase != ACQUIRING) return;
    W.phase = RELEASING;
    if (redlease_release(W.lk, on_released, NULL) != REDLEASE_OK) bench_die("redlease_release");
}

static void arm_at(ev_timer *t, int64_t at_ns)
{
    ev_now_update(W.loop);
    double after = (double)(at_ns - now_ns()) / 1e9;
    ev_timer_set(t, after > 0 ? after : 0, 0);
    ev_timer_start(W.loop, t);
}

static void worker_open(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.host = bench_host;
    co.port = bench_port;
    W.loop = ev_loop_new(EVFLAG_AUTO);
    if (redlease_client_new(&W.c, &co) != REDLEASE_OK) bench_die("redlease_client_new");
    if (redlease_libev_attach(W.c, W.loop) != REDLEASE_OK) bench_die("redlease_libev_attach");
    while (!redlease_client_connected(W.c)) ev_run(W.loop, EVRUN_ONCE);
}

static int write_all(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n;) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Contends from now on (the warm-up includes connecting) and stops at
 * t1; CPU and commands are read at the window's edges. Writes its report
 * and turns. */
static int worker(int id, const mode *m, const bench_contended_spec *s, int64_t t0, int64_t t1,
                  int fd)
{
    W.id = id;
    W.hold_s = s->hold_us / 1e6;
    mode_options(m, &W.o);
    worker_open();
    ev_init(&W.hold, hold_done);
    ev_init(&W.open, window_open);
    ev_init(&W.close, window_close);
    arm_at(&W.open, t0);
    arm_at(&W.close, t1);
    acquire();
    ev_run(W.loop, 0);
    redlease_client_free(W.c);
    ev_run(W.loop, 0);
    ev_loop_destroy(W.loop);
    if (write_all(fd, &W.rep, sizeof W.rep) ||
        write_all(fd, W.turns, (size_t)W.rep.turns * sizeof *W.turns))
        return 1;
    return 0;
}

/* ------------------------------------------------ the parent */
static pid_t spawn(int id, const mode *m, const bench_contended_spec *s, int64_t t0, int64_t t1,
                   int *rfd)
{
    int fd;
    pid_t pid = bench_fork(&fd);
    if (pid == 0) _exit(worker(id, m, s, t0, t1, fd));
    *rfd = fd;
    return pid;
}

static int read_all(int fd, void *buf, size_t n)
{
    for (char *p = buf; n;) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

/* One worker's report and turns, appended to *all. Read in turn: a worker
 * blocked on a full pipe waits for its turn, and needs nothing else. */
static int gather(pid_t pid, int fd, report *rep, turn **all, long *n)
{
    int st = 0, rc = read_all(fd, rep, sizeof *rep);
    if (!rc) {
        *all = realloc(*all, (size_t)(*n + rep->turns) * sizeof **all);
        if (!*all) bench_die("out of memory");
        rc = read_all(fd, *all + *n, (size_t)rep->turns * sizeof **all);
        if (!rc) *n += rep->turns;
    }
    close(fd);
    waitpid(pid, &st, 0);
    return !rc && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void sleep_until(int64_t at_ns)
{
    struct timespec ts = {.tv_sec = at_ns / 1000000000, .tv_nsec = at_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* ------------------------------------------------ figures */
static int by_acquired(const void *a, const void *b)
{
    int64_t x = ((const turn *)a)->acquired_ns, y = ((const turn *)b)->acquired_ns;
    return x < y ? -1 : x > y;
}

/* More holders than permits: a turn acquired while `permits` earlier ones
 * had not made their release call. Over every turn (sorted), warm-up and
 * the stop included. */
static long overlaps(const turn *t, long n, int permits)
{
    long bad = 0, holding = 0;
    int64_t *until = malloc((size_t)(n ? n : 1) * sizeof *until); /* the holders' releases */
    for (long i = 0; i < n; i++) {
        if (t[i].gave_up) continue;
        long kept = 0;
        for (long h = 0; h < holding; h++)
            if (until[h] > t[i].acquired_ns) until[kept++] = until[h];
        holding = kept;
        bad += holding >= permits;
        until[holding++] = t[i].release_ns;
    }
    free(until);
    return bad;
}

/* The held turns acquired in [t0, t1), in order, into cs; give-ups there
 * counted. Returns how many held. */
static long window(const turn *t, long n, int64_t t0, int64_t t1, turn *cs, long *give_ups)
{
    long m = 0;
    *give_ups = 0;
    for (long i = 0; i < n; i++) {
        if (t[i].acquired_ns < t0 || t[i].acquired_ns >= t1) continue;
        if (t[i].gave_up)
            ++*give_ups;
        else
            cs[m++] = t[i];
    }
    return m;
}

/* A release or an acquisition of a held turn, for handoffs(). */
typedef struct event {
    int64_t ns;
    int32_t worker, acquire; /* acquire 0: a release, sorted first at a tie */
} event;

static int by_time(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->ns != y->ns) return x->ns < y->ns ? -1 : 1;
    return (x->acquire > y->acquire) - (x->acquire < y->acquire);
}

/* Each acquisition takes a permit some release freed (one with none
 * known, its permit freed before the window, counts for neither): the
 * acquirer's own if still free, a self re-acquire, else the oldest free
 * one, a handoff, whose gap (µs) is from that release. With one permit:
 * consecutive turns, the gap when the lease changes hands and the share
 * of pairs where it did not. */
static void handoffs(const turn *cs, long n, bench_contended *out)
{
    size_t cap = (size_t)(n ? n : 1);
    double *gap = malloc(cap * sizeof *gap);
    event *ev = malloc(2 * cap * sizeof *ev), *freed = malloc(cap * sizeof *freed);
    long gaps = 0, self = 0, n_free = 0; /* freed[]: the free permits, oldest first */
    for (long i = 0; i < n; i++) {
        ev[2 * i] = (event){.ns = cs[i].acquired_ns, .worker = cs[i].worker, .acquire = 1};
        ev[2 * i + 1] = (event){.ns = cs[i].release_ns, .worker = cs[i].worker};
    }
    qsort(ev, (size_t)(2 * n), sizeof *ev, by_time);
    for (long i = 0; i < 2 * n; i++) {
        if (!ev[i].acquire) {
            freed[n_free++] = ev[i];
            continue;
        }
        if (!n_free) continue;
        long k = 0;
        while (k < n_free && freed[k].worker != ev[i].worker) k++;
        if (k < n_free) {
            self++;
        } else {
            k = 0;
            gap[gaps++] = (double)(ev[i].ns - freed[0].ns) / 1e3;
        }
        memmove(freed + k, freed + k + 1, (size_t)(n_free - k - 1) * sizeof *freed);
        n_free--;
    }
    qsort(gap, (size_t)gaps, sizeof *gap, bench_cmp_double);
    out->handoff_p50_us = bench_quantile(gap, gaps, 0.5);
    out->handoff_p99_us = bench_quantile(gap, gaps, 0.99);
    out->self_reacquire = self + gaps ? (double)self / (double)(self + gaps) : 0;
    free(freed);
    free(ev);
    free(gap);
}

/* Jain's index over the workers' turn counts: 1 when all got as many,
 * 1/N when one got them all. */
static double jain(const turn *cs, long n, int workers)
{
    double *x = calloc((size_t)workers, sizeof *x), sum = 0, sq = 0;
    for (long i = 0; i < n; i++) x[cs[i].worker]++;
    for (int w = 0; w < workers; w++) sum += x[w], sq += x[w] * x[w];
    free(x);
    return sq > 0 ? sum * sum / (workers * sq) : 0;
}

/* Acquire call -> acquired, ms; and the mean hold, µs (the timer's real
 * length, for reading CS/s). */
static void waits(const turn *cs, long n, bench_contended *out)
{
    double *w = malloc((size_t)(n ? n : 1) * sizeof *w), held = 0;
    for (long i = 0; i < n; i++) {
        w[i] = (double)(cs[i].acquired_ns - cs[i].call_ns) / 1e6;
        held += (double)(cs[i].release_ns - cs[i].acquired_ns) / 1e3;
    }
    qsort(w, (size_t)n, sizeof *w, bench_cmp_double);
    out->wait_p99_ms = bench_quantile(w, n, 0.99);
    out->hold_mean_us = n ? held / (double)n : 0;
    free(w);
}

static void figures(turn *all, long n, int64_t t0, int64_t t1, const bench_contended_spec *s,
                    bench_contended *out)
{
    qsort(all, (size_t)n, sizeof *all, by_acquired);
    out->overlaps = overlaps(all, n, out->permits);
    turn *cs = malloc((size_t)(n ? n : 1) * sizeof *cs);
    out->cs = window(all, n, t0, t1, cs, &out->give_ups);
    out->cs_per_s = (double)out->cs / s->seconds;
    handoffs(cs, out->cs, out);
    out->jain = jain(cs, out->cs, s->workers);
    waits(cs, out->cs, out);
    free(cs);
}

int bench_contended_run(const char *name, const bench_contended_spec *s, bench_contended *out)
{
    const mode *m = find_mode(name);
    if (!m) bench_die("unknown mode in BENCH_CONTENDED_MODES");
    memset(out, 0, sizeof *out);
    redlease_lock_options o;
    mode_options(m, &o);
    out->permits = o.limit ? o.limit : 1;
    int64_t t0 = now_ns() + (int64_t)(s->warmup_s * 1e9);
    int64_t t1 = t0 + (int64_t)(s->seconds * 1e9);
    pid_t *pid = calloc((size_t)s->workers, sizeof *pid);
    int *fd = calloc((size_t)s->workers, sizeof *fd);
    for (int i = 0; i < s->workers; i++) pid[i] = spawn(i, m, s, t0, t1, &fd[i]);
    sleep_until(t0);
    double calls = bench_redis_commands();
    sleep_until(t1);
    calls = bench_redis_commands() - calls - 1; /* not the first INFO */
    turn *all = NULL;
    long n = 0;
    double cpu_us = 0, commands = 0;
    int rc = 0;
    for (int i = 0; i < s->workers; i++) {
        report rep = {0};
        rc |= gather(pid[i], fd[i], &rep, &all, &n);
        cpu_us += rep.cpu_us;
        commands += rep.commands;
        out->lost += rep.lost;
        out->errors += rep.errors;
    }
    figures(all, n, t0, t1, s, out);
    out->cpu_percent = 100 * cpu_us / (s->seconds * 1e6);
    out->commands_per_cs = out->cs ? commands / (double)out->cs : 0;
    out->redis_calls_per_cs = out->cs ? calls / (double)out->cs : 0;
    free(all);
    free(pid);
    free(fd);
    return rc || out->errors ? -1 : 0;
}
