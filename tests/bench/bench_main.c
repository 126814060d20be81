/* SPDX-License-Identifier: MIT */
/* make bench: every scenario runs the floor (bench_raw.c) and redlease
 * (bench_lib.c) in the same run against the same private server, prints
 * one JSON line per measurement, then a table of ratios and goals;
 * contended has no floor (bench_contended.c: N processes on one key).
 * id runs the floor on one key with and without the record of who holds
 * that redlease's SET carries, alternated in short slices on one
 * connection: what knowing who holds costs a cycle.
 * a also runs redlease's semaphore (limit 4, weight 1) and a shared holder
 * in each round, their ratios to the mutex's cycles beside the floor's,
 * and a semaphore's own floor (hiredis and the least scripts: bench_raw.c)
 * with its ratio to the mutex's floor;
 * contended has a semaphore mode (limit 3).
 *
 *   bench [a] [b] [id] [d] [lost] [million] [contended]   (default: all of them)
 *
 * Environment (run-bench.sh passes the server's port):
 *   REDLEASE_TEST_PORT      the private redis-server, 127.0.0.1
 *   BENCH_ROUNDS   5        a, b: rounds, floor and redlease (and a's
 *                           semaphore and shared holder) in turn
 *   BENCH_SECONDS  2        a, b: seconds per implementation and round
 *   BENCH_CYCLES   (unset)  a, b: that many cycles per side and round
 *                           instead (under callgrind: the same work
 *                           counted for two builds, whatever the speed)
 *   BENCH_HELD     100000   d: leases held at once
 *   BENCH_HOLD_SECONDS 30   d: seconds held (renewed every 10 s)
 *   BENCH_LOST     1000     lost: samples
 *   BENCH_MILLION  1000000  million: leases held on one client
 *   BENCH_MILLION_SECONDS 45  million: seconds held (renewed every 20 s)
 *   BENCH_ONLY     (unset)  a, b, d: "raw" or "lib" runs that side alone (for
 *                           a profiler; no ratio; d runs it in this process);
 *                           "sem", "shared", "raw_sem" a's semaphore,
 *                           shared holder, semaphore floor alone
 *   BENCH_ID_PAIRS 500      id: pairs of slices (with, without the record)
 *   BENCH_ID_SLICE_MS 20    id: milliseconds per slice
 *   BENCH_VERBOSE  (unset)  d: each side says on stderr what its measured
 *                           window did (renewals, commands, timer wakeups);
 *                           a, b: loop iterations per cycle (both sides),
 *                           redlease's timer wakeups and commands per cycle
 *                           (a callback delivered a loop iteration late, or
 *                           commands written apart, would show there).
 *                           Under valgrind --tool=callgrind
 *                           --collect-atstart=no only that window counts.
 *   BENCH_WAIT_MODE queue   a, b: the mutex's wait_mode: queue (the default),
 *                           wake or poll (a's semaphore and shared holder
 *                           keep their defaults). Only a release in queue mode must also
 *                           look for waiters (docs/design.md, 11.2): poll
 *                           shows the engine against the floor without
 *                           that cost.
 *   BENCH_COMMANDS auto     scripts: redlease sends Lua scripts even to a server
 *                           with DELIFEQ/DELEX and SET IFEQ (the floor always
 *                           does); REDIS_SERVER=valkey-server compares them
 *   BENCH_CONTENDED_N 8     contended: worker processes on the one key
 *   BENCH_CS_US    1000     contended: µs each holds the lease (asleep)
 *   BENCH_CONTENDED_SECONDS 10  contended: seconds measured per mode
 *                           (after 0.5 s of warm-up)
 *   BENCH_CONTENDED_MODES (all)  contended: modes to run, comma-separated
 *                           (bench_contended.c's table: defaults,
 *                           wake, poll, poll-1-10ms, semaphore)
 * Ratios of a and b are medians of each round's ratio, so a slow moment
 * of the machine weighs on both sides. Nothing is asserted: the exit
 * status is nonzero only when a scenario could not run, lost a lease or,
 * in contended, had more holders at once than permits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static double env_num(const char *name, double dflt)
{
    const char *v = getenv(name);
    return v && *v ? atof(v) : dflt;
}

static int failures;

/* ------------------------------------------------ table rows */
#define MAX_ROWS 64
static struct row {
    char what[64], raw[24], lib[24], ratio[16], goal[24];
} rows[MAX_ROWS];
static int n_rows;

static void row(const char *what, const char *raw, const char *lib, const char *ratio,
                const char *goal)
{
    if (n_rows == MAX_ROWS) return;
    struct row *r = &rows[n_rows++];
    snprintf(r->what, sizeof r->what, "%s", what);
    snprintf(r->raw, sizeof r->raw, "%s", raw);
    snprintf(r->lib, sizeof r->lib, "%s", lib);
    snprintf(r->ratio, sizeof r->ratio, "%s", ratio);
    snprintf(r->goal, sizeof r->goal, "%s", goal);
}

static const char *fmt(char *buf, const char *f, double v)
{
    snprintf(buf, 24, f, v);
    return buf;
}

/* ------------------------------------------------ a, b */
/* The sides of a round: the floor, redlease's mutex and, in a, redlease's
 * other kinds: a semaphore of SEM_LIMIT permits held with weight 1 and a
 * shared holder (issue 27 compares their uncontended cycles with the
 * mutex's), and the floor of a semaphore (bench_raw.c: hiredis and the
 * least scripts a semaphore can be kept by), whose ratio to the mutex's
 * floor bounds what any script-kept semaphore reaches there. BENCH_ONLY
 * names one of them. */
enum { RAW, LIB, SEM, SHR, RSEM, N_SIDES };
static const char *const side_name[N_SIDES] = {"raw", "lib", "sem", "shared", "raw_sem"};
#define ID_GOAL 0.95 /* issue 28's: the cycle with who holds / without */
#define SEM_LIMIT 4
#define KIND_GOAL 0.80 /* the issue's: of the mutex's cycles/s */

static int run_side(int side, int chains, double secs, bench_cycles *out)
{
    if (side == RAW) return bench_raw_cycles(chains, secs, 0, out);
    if (side == RSEM) return bench_raw_sem_cycles(chains, secs, out);
    return bench_lib_cycles(chains, side == SEM ? SEM_LIMIT : side == SHR ? BENCH_SHARED : 0, secs, out);
}

/* Sorts v and returns its median. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return bench_quantile(v, n, 0.5);
}

static void cycles(const char *name, int chains, const char *label, double goal, int with_kinds)
{
    int rounds = (int)env_num("BENCH_ROUNDS", 5), sides = with_kinds ? N_SIDES : SEM;
    double secs = env_num("BENCH_SECONDS", 2);
    double ratio[64], kind_ratio[N_SIDES][64], rate[N_SIDES][64], cpu[N_SIDES][64], floor_ratio[64],
        to_floor[64];
    const char *only = getenv("BENCH_ONLY");
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; r++) {
        bench_cycles c[N_SIDES];
        int rc = 0;
        memset(c, 0, sizeof c);
        for (int i = 0; i < N_SIDES; i++) c[i].cycles = 1, c[i].seconds = 1;
        /* the order turns, so no side always runs first or last */
        for (int i = 0; i < sides; i++) {
            int side = (r + i) % sides;
            if (!only || !*only || !strcmp(only, side_name[side]))
                rc |= run_side(side, chains, secs, &c[side]);
        }
        if (rc) failures++;
        for (int i = 0; i < N_SIDES; i++) {
            rate[i][r] = c[i].cycles / c[i].seconds;
            cpu[i][r] = c[i].redis_cpu_us / c[i].cycles;
        }
        ratio[r] = rate[LIB][r] / rate[RAW][r];
        for (int k = SEM; k <= SHR; k++) kind_ratio[k][r] = rate[k][r] / rate[LIB][r];
        floor_ratio[r] = rate[RSEM][r] / rate[RAW][r]; /* the semaphore's floor / the mutex's */
        to_floor[r] = rate[SEM][r] / rate[RSEM][r];    /* redlease's semaphore / its floor */
        printf("{\"scenario\":\"%s\",\"round\":%d,\"chains\":%d,\"raw_cycles_per_s\":%.0f,"
               "\"lib_cycles_per_s\":%.0f,\"ratio\":%.3f,\"raw_redis_cpu_us_per_cycle\":%.2f,"
               "\"lib_redis_cpu_us_per_cycle\":%.2f,",
               name, r + 1, chains, rate[RAW][r], rate[LIB][r], ratio[r], cpu[RAW][r], cpu[LIB][r]);
        if (with_kinds) {
            printf("\"sem_limit\":%d,", SEM_LIMIT);
            for (int k = SEM; k <= SHR; k++)
                printf("\"%s_cycles_per_s\":%.0f,\"%s_to_mutex\":%.3f,\"%s_redis_cpu_us_per_cycle\":%.2f,",
                       side_name[k], rate[k][r], side_name[k], kind_ratio[k][r], side_name[k], cpu[k][r]);
            printf("\"raw_sem_cycles_per_s\":%.0f,\"raw_sem_to_raw\":%.3f,\"sem_to_raw_sem\":%.3f,"
                   "\"raw_sem_redis_cpu_us_per_cycle\":%.2f,",
                   rate[RSEM][r], floor_ratio[r], to_floor[r], cpu[RSEM][r]);
        }
        printf("\"failed\":%d}\n", rc != 0);
        fflush(stdout);
    }
    double m = median(ratio, rounds);
    double raw_m = median(rate[RAW], rounds), lib_m = median(rate[LIB], rounds);
    printf("{\"scenario\":\"%s\",\"summary\":true,\"raw_cycles_per_s\":%.0f,\"lib_cycles_per_s\":%.0f,"
           "\"median_ratio\":%.3f,\"min_ratio\":%.3f,\"max_ratio\":%.3f,\"goal\":%.2f",
           name, raw_m, lib_m, m, ratio[0], ratio[rounds - 1], goal);
    double kind_m[N_SIDES] = {0}, kind_rate[N_SIDES] = {0};
    for (int k = SEM; with_kinds && k <= SHR; k++) {
        kind_m[k] = median(kind_ratio[k], rounds), kind_rate[k] = median(rate[k], rounds);
        printf(",\"%s_cycles_per_s\":%.0f,\"median_%s_to_mutex\":%.3f,\"min_%s_to_mutex\":%.3f,"
               "\"max_%s_to_mutex\":%.3f",
               side_name[k], kind_rate[k], side_name[k], kind_m[k], side_name[k], kind_ratio[k][0],
               side_name[k], kind_ratio[k][rounds - 1]);
    }
    double floor_m = 0, to_floor_m = 0, floor_rate = 0;
    if (with_kinds) {
        floor_m = median(floor_ratio, rounds), to_floor_m = median(to_floor, rounds);
        floor_rate = median(rate[RSEM], rounds);
        printf(",\"kind_goal\":%.2f,\"raw_sem_cycles_per_s\":%.0f,\"median_raw_sem_to_raw\":%.3f,"
               "\"min_raw_sem_to_raw\":%.3f,\"max_raw_sem_to_raw\":%.3f,\"median_sem_to_raw_sem\":%.3f",
               KIND_GOAL, floor_rate, floor_m, floor_ratio[0], floor_ratio[rounds - 1], to_floor_m);
    }
    printf("}\n");
    char b1[24], b2[24], b3[24], b4[24], what[64];
    snprintf(what, sizeof what, "%s (cycles/s)", label);
    snprintf(b4, sizeof b4, ">= %.2f", goal);
    row(what, fmt(b1, "%.0f", raw_m), fmt(b2, "%.0f", lib_m), fmt(b3, "%.2f", m), b4);
    snprintf(what, sizeof what, "%s: Redis CPU us/cycle", name);
    double rc_ = median(cpu[RAW], rounds), lc = median(cpu[LIB], rounds);
    row(what, fmt(b1, "%.2f", rc_), fmt(b2, "%.2f", lc), fmt(b3, "%.2f", lc / rc_), "-");
    /* The other kinds' rows: their ratio is to the mutex, not the floor. */
    for (int k = SEM; with_kinds && k <= SHR; k++) {
        if (k == SEM)
            snprintf(what, sizeof what, "%s. semaphore of %d (cycles/s, ratio / mutex)", name, SEM_LIMIT);
        else
            snprintf(what, sizeof what, "%s. shared holder (cycles/s, ratio / mutex)", name);
        snprintf(b4, sizeof b4, ">= %.2f", KIND_GOAL);
        row(what, "-", fmt(b2, "%.0f", kind_rate[k]), fmt(b3, "%.2f", kind_m[k]), b4);
        snprintf(what, sizeof what, "%s: %s Redis CPU us/cycle (/ mutex)", name,
                 k == SEM ? "semaphore" : "shared");
        double kc = median(cpu[k], rounds);
        row(what, "-", fmt(b2, "%.2f", kc), fmt(b3, "%.2f", kc / lc), "-");
    }
    /* The semaphore's floor beside the mutex's: the most a semaphore kept
     * by scripts reaches on this server; and redlease's semaphore beside
     * its floor: what its queue, weights and strict renewal cost. */
    if (with_kinds) {
        snprintf(what, sizeof what, "%s. semaphore floor (cycles/s, / mutex floor)", name);
        row(what, fmt(b1, "%.0f", floor_rate), "-", fmt(b3, "%.2f", floor_m), "-");
        snprintf(what, sizeof what, "%s. semaphore (redlease / its floor)", name);
        row(what, "-", "-", fmt(b3, "%.2f", to_floor_m), "-");
    }
}

/* ------------------------------------------------ id */
/* Who holds (issue 28): the floor's cycle on one key with the record of who
 * holds that redlease's SET carries, and without it (redlease always writes
 * it, so the floor is where the two can be told apart). The sides take
 * turns every few milliseconds on one connection: whole rounds seconds
 * apart differ by more than the record's cost on a shared machine, a pair
 * of slices hardly. Every pair's ratio is printed; the row is their
 * median, with the quartiles and the ratio of the totals beside it. */
static void id_cost(void)
{
    int pairs = (int)env_num("BENCH_ID_PAIRS", 500);
    double slice = env_num("BENCH_ID_SLICE_MS", 20) / 1e3;
    if (pairs < 1 || slice <= 0) bench_die("BENCH_ID_PAIRS and BENCH_ID_SLICE_MS must be positive");
    double *ratio = calloc((size_t)pairs, sizeof *ratio);
    bench_cycles c[2];
    if (!ratio) bench_die("out of memory");
    if (bench_raw_id_pairs(pairs, slice, c, ratio)) failures++;
    printf("{\"scenario\":\"id\",\"pairs\":%d,\"slice_ms\":%.0f,\"ratios\":[", pairs, slice * 1e3);
    for (int i = 0; i < pairs; i++) printf("%s%.3f", i ? "," : "", ratio[i]);
    printf("]}\n");
    double rate[2], cpu[2];
    for (int i = 0; i < 2; i++) {
        rate[i] = c[i].cycles / c[i].seconds;
        cpu[i] = c[i].redis_cpu_us / (double)(c[i].cycles ? c[i].cycles : 1);
    }
    double m = median(ratio, pairs), q1 = bench_quantile(ratio, pairs, 0.25),
           q3 = bench_quantile(ratio, pairs, 0.75), total = rate[1] / rate[0];
    printf("{\"scenario\":\"id\",\"summary\":true,\"raw_cycles_per_s\":%.0f,"
           "\"raw_id_cycles_per_s\":%.0f,\"median_ratio\":%.3f,\"q1_ratio\":%.3f,\"q3_ratio\":%.3f,"
           "\"min_ratio\":%.3f,\"max_ratio\":%.3f,\"total_ratio\":%.3f,"
           "\"raw_redis_cpu_us_per_cycle\":%.2f,\"raw_id_redis_cpu_us_per_cycle\":%.2f,\"goal\":%.2f}\n",
           rate[0], rate[1], m, q1, q3, ratio[0], ratio[pairs - 1], total, cpu[0], cpu[1], ID_GOAL);
    char b1[24], b2[24], b3[24], b4[24], what[64];
    snprintf(b4, sizeof b4, ">= %.2f", ID_GOAL);
    row("id. floor without / with the record (cycles/s)", fmt(b1, "%.0f", rate[0]),
        fmt(b2, "%.0f", rate[1]), fmt(b3, "%.3f", m), b4);
    snprintf(what, sizeof what, "id. pair ratios q1 / q3, totals' ratio");
    snprintf(b1, sizeof b1, "%.3f / %.3f", q1, q3);
    row(what, b1, "-", fmt(b3, "%.3f", total), "-");
    row("id: Redis CPU us/cycle", fmt(b1, "%.2f", cpu[0]), fmt(b2, "%.2f", cpu[1]),
        fmt(b3, "%.2f", cpu[1] / cpu[0]), "-");
    free(ratio);
}

/* ------------------------------------------------ held leases, in children */
typedef int (*hold_fn)(const bench_hold_spec *, bench_held *);

static pid_t hold_child(hold_fn fn, const bench_hold_spec *s, int *rfd)
{
    int fd;
    pid_t pid = bench_fork(&fd);
    if (pid == 0) {
        bench_held h;
        int rc = fn(s, &h);
        if (write(fd, &h, sizeof h) != (ssize_t)sizeof h) _exit(1);
        _exit(rc ? 1 : 0);
    }
    *rfd = fd;
    return pid;
}

static int hold_wait(pid_t pid, int fd, bench_held *h)
{
    int st = 0;
    ssize_t n = read(fd, h, sizeof *h);
    close(fd);
    waitpid(pid, &st, 0);
    return n == (ssize_t)sizeof *h && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static double per_lease(const bench_held *h)
{
    double top = h->rss_end > h->rss_held ? h->rss_end : h->rss_held;
    return (top - h->rss_before) / (double)h->leases;
}

/* malloc's bytes in use per lease once all are held (-1: unknown) */
static double heap_per_lease(const bench_held *h)
{
    if (h->heap_before < 0 || h->heap_held < 0 || !h->leases) return -1;
    return (h->heap_held - h->heap_before) / (double)h->leases;
}

static void held_json(const char *name, const char *impl, const bench_held *h)
{
    printf("{\"scenario\":\"%s\",\"impl\":\"%s\",\"leases\":%ld,\"seconds\":%.1f,\"renewals\":%ld,"
           "\"lost\":%ld,\"rss_per_lease\":%.0f,\"cpu_percent\":%.3f,\"late_p50_ms\":%.0f,"
           "\"late_p99_ms\":%.0f,\"late_max_ms\":%.0f,\"disconnects\":%ld,\"timeouts\":%ld,"
           "\"heap_per_lease\":%.0f}\n",
           name, impl, h->leases, h->seconds, h->renewals, h->lost, per_lease(h),
           100 * h->cpu_us / (h->seconds * 1e6), h->late_p50_ms, h->late_p99_ms, h->late_max_ms,
           h->disconnects, h->timeouts, heap_per_lease(h));
    fflush(stdout);
}

static void held(void)
{
    bench_hold_spec s = {.n = (long)env_num("BENCH_HELD", 100000), .ttl_ms = 30000,
                         .renew_ms = 10000, .seconds = env_num("BENCH_HOLD_SECONDS", 30)};
    bench_held raw, lib;
    if (bench_redis_flush()) bench_die("FLUSHALL");
    const char *only = getenv("BENCH_ONLY");
    if (only && *only) { /* one side alone, in this process (for a profiler) */
        int raw_only = strcmp(only, "raw") == 0;
        const bench_held *h = raw_only ? &raw : &lib;
        int one_rc = raw_only ? bench_raw_hold(&s, &raw) : bench_lib_hold(&s, &lib);
        if (one_rc || h->lost || h->leases != s.n) failures++;
        held_json("d", raw_only ? "raw" : "lib", h);
        return;
    }
    /* side by side: both see the same machine over the same seconds */
    int rfd, lfd;
    pid_t rp = hold_child(bench_raw_hold, &s, &rfd);
    pid_t lp = hold_child(bench_lib_hold, &s, &lfd);
    int rc = hold_wait(rp, rfd, &raw) | hold_wait(lp, lfd, &lib);
    if (rc || raw.lost || lib.lost || lib.leases != s.n) failures++;
    held_json("d", "raw", &raw);
    held_json("d", "lib", &lib);
    char b1[24], b2[24], b3[24], what[64];
    double rm = per_lease(&raw), lm = per_lease(&lib);
    double rc_ = 100 * raw.cpu_us / (raw.seconds * 1e6), lc = 100 * lib.cpu_us / (lib.seconds * 1e6);
    snprintf(what, sizeof what, "d. %ld held: RSS per lease (B)", s.n);
    row(what, fmt(b1, "%.0f", rm), fmt(b2, "%.0f", lm), fmt(b3, "%.2f", lm / rm), "<= 1.25");
    snprintf(what, sizeof what, "d. %ld held: client CPU (%%)", s.n);
    row(what, fmt(b1, "%.2f", rc_), fmt(b2, "%.2f", lc), fmt(b3, "%.2f", lc / rc_), "<= 1.30");
}

static void million(void)
{
    bench_hold_spec s = {.n = (long)env_num("BENCH_MILLION", 1000000), .ttl_ms = 60000,
                         .renew_ms = 20000, .seconds = env_num("BENCH_MILLION_SECONDS", 45),
                         .track_lateness = 1};
    bench_held lib;
    if (bench_redis_flush()) bench_die("FLUSHALL");
    int fd;
    pid_t pid = hold_child(bench_lib_hold, &s, &fd);
    if (hold_wait(pid, fd, &lib) || lib.lost || lib.leases != s.n) failures++;
    held_json("million", "lib", &lib);
    char b1[24], b2[24], what[64];
    snprintf(what, sizeof what, "%ld held: leases kept / lost", s.n);
    snprintf(b1, sizeof b1, "%ld / %ld", lib.leases, lib.lost);
    row(what, "-", b1, "-", "all / 0");
    snprintf(what, sizeof what, "%ld held: renewal late p99/max (ms)", s.n);
    snprintf(b1, sizeof b1, "%.0f / %.0f", lib.late_p99_ms, lib.late_max_ms);
    row(what, "-", b1, "-", "-");
    snprintf(what, sizeof what, "%ld held: RSS per lease (B)", s.n);
    row(what, "-", fmt(b2, "%.0f", per_lease(&lib)), "-", "-");
    if (bench_redis_flush()) bench_die("FLUSHALL");
}

static void lost(void)
{
    int n = (int)env_num("BENCH_LOST", 1000);
    double *lat = calloc((size_t)n, sizeof *lat);
    if (bench_lib_lost_latency(n, lat)) failures++;
    double p50 = bench_quantile(lat, n, 0.5), p99 = bench_quantile(lat, n, 0.99), mx = lat[n - 1];
    printf("{\"scenario\":\"lost\",\"samples\":%d,\"after_deadline_us_p50\":%.0f,"
           "\"after_deadline_us_p99\":%.0f,\"after_deadline_us_max\":%.0f,\"min_us\":%.0f}\n",
           n, p50, p99, mx, lat[0]);
    char b[24];
    snprintf(b, sizeof b, "%.0f / %.0f / %.0f", p50, p99, mx);
    row("on_lost after deadline p50/p99/max (us)", "-", b, "-", "<= 1000");
    free(lat);
}

/* ------------------------------------------------ contended */
/* The goals for N workers holding h on P permits (a mutex: 1): each turn
 * of a permit costs h plus a handoff of at most 0.15 ms, so the ideal is
 * P / (h + 0.15 ms) CS/s (the ratio column: CS/s over it); the permits go
 * round the workers in turn (so a waiter waits for N - P others, P at a
 * time, plus 2 ms of slack, and a releaser takes back its own permit no
 * more often than the N - P + 1 who want it share it), nobody gives up,
 * and a turn takes at most 3 commands. */
static void contended_rows(const char *mode, const bench_contended_spec *s,
                           const bench_contended *c)
{
    int p = c->permits, rivals = s->workers > p ? s->workers - p : 0;
    double h_ms = s->hold_us / 1e3, turn_ms = h_ms + 0.15, ideal = p / turn_ms * 1e3;
    char what[64], label[48], b1[24], b2[24], b3[24];
#define WHAT(label) (snprintf(what, sizeof what, "contended %s: %s", mode, label), what)
    if (p == 1)
        snprintf(label, sizeof label, "CS/s (%d x %g ms)", s->workers, h_ms);
    else
        snprintf(label, sizeof label, "CS/s (%d x %g ms, limit %d)", s->workers, h_ms, p);
    snprintf(b2, sizeof b2, ">= %.0f", 0.9 * ideal);
    row(WHAT(label), "-", fmt(b1, "%.0f", c->cs_per_s), fmt(b3, "%.2f", c->cs_per_s / ideal), b2);
    snprintf(b1, sizeof b1, "%.0f / %.0f", c->handoff_p50_us, c->handoff_p99_us);
    row(WHAT("handoff p50/p99 (us)"), "-", b1, "-", "p50 <= 150");
    snprintf(b2, sizeof b2, "<= %.3f", 1.0 / (rivals + 1));
    row(WHAT("self re-acquire"), "-", fmt(b1, "%.3f", c->self_reacquire), "-", b2);
    row(WHAT("Jain fairness"), "-", fmt(b1, "%.3f", c->jain), "-", ">= 0.99");
    snprintf(b2, sizeof b2, "<= %.2f", (double)rivals / p * turn_ms + 2);
    row(WHAT("wait p99 (ms)"), "-", fmt(b1, "%.2f", c->wait_p99_ms), "-", b2);
    snprintf(b1, sizeof b1, "%ld / %ld", c->give_ups, c->overlaps);
    row(WHAT("give-ups / overlaps"), "-", b1, "-", "0 / 0");
    row(WHAT("Redis cmds per CS"), "-", fmt(b1, "%.2f", c->commands_per_cs), "-", "<= 3");
    row(WHAT("client CPU (%)"), "-", fmt(b1, "%.1f", c->cpu_percent), "-", "-");
#undef WHAT
}

static void contended_mode(const char *mode, const bench_contended_spec *s)
{
    bench_contended c;
    if (bench_redis_flush()) bench_die("FLUSHALL");
    if (bench_contended_run(mode, s, &c) || c.overlaps || c.lost) failures++;
    printf("{\"scenario\":\"contended\",\"mode\":\"%s\",\"permits\":%d,\"workers\":%d,\"hold_us\":%.0f,"
           "\"seconds\":%.1f,\"cs\":%ld,\"cs_per_s\":%.1f,\"hold_mean_us\":%.0f,"
           "\"handoff_p50_us\":%.0f,\"handoff_p99_us\":%.0f,\"self_reacquire\":%.4f,"
           "\"jain\":%.4f,\"wait_p99_ms\":%.2f,\"give_ups\":%ld,\"client_cpu_percent\":%.2f,"
           "\"redis_commands_per_cs\":%.3f,\"redis_calls_per_cs\":%.3f,\"overlaps\":%ld,\"lost\":%ld,"
           "\"errors\":%ld}\n",
           mode, c.permits, s->workers, s->hold_us, s->seconds, c.cs, c.cs_per_s, c.hold_mean_us,
           c.handoff_p50_us, c.handoff_p99_us, c.self_reacquire, c.jain, c.wait_p99_ms,
           c.give_ups, c.cpu_percent, c.commands_per_cs, c.redis_calls_per_cs, c.overlaps, c.lost,
           c.errors);
    if (c.overlaps)
        fprintf(stderr, "bench: contended %s: %ld acquisitions while all %d permits were held\n", mode,
                c.overlaps, c.permits);
    contended_rows(mode, s, &c);
}

static void contended(void)
{
    bench_contended_spec s = {.workers = (int)env_num("BENCH_CONTENDED_N", 8),
                              .hold_us = env_num("BENCH_CS_US", 1000),
                              .seconds = env_num("BENCH_CONTENDED_SECONDS", 10), .warmup_s = 0.5};
    if (s.workers < 1) bench_die("BENCH_CONTENDED_N must be at least 1");
    const char *pick = getenv("BENCH_CONTENDED_MODES");
    if (!pick || !*pick) {
        for (int i = 0; bench_contended_mode(i); i++) contended_mode(bench_contended_mode(i), &s);
        return;
    }
    char *list = strdup(pick), *save = NULL;
    for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save))
        contended_mode(m, &s);
    free(list);
}

int main(int argc, char **argv)
{
    bench_port = (int)env_num("REDLEASE_TEST_PORT", 0);
    if (!bench_port) bench_die("run through make bench (REDLEASE_TEST_PORT names the server)");
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* As a server does: the floor has no SIGPIPE guard of its own. */
    signal(SIGPIPE, SIG_IGN);
    const char *all[] = {"a", "b", "id", "d", "lost", "million", "contended"};
    const char **which = argc > 1 ? (const char **)argv + 1 : all;
    int n = argc > 1 ? argc - 1 : (int)(sizeof all / sizeof *all);
    for (int i = 0; i < n; i++) {
        if (!strcmp(which[i], "a"))
            cycles("a", 1, "a. one key, acquire -> release", 0.95, 1);
        else if (!strcmp(which[i], "b"))
            cycles("b", 64, "b. 64 keys in flight", 0.90, 0);
        else if (!strcmp(which[i], "id"))
            id_cost();
        else if (!strcmp(which[i], "d"))
            held();
        else if (!strcmp(which[i], "lost"))
            lost();
        else if (!strcmp(which[i], "million"))
            million();
        else if (!strcmp(which[i], "contended"))
            contended();
        else
            bench_die("unknown scenario (a, b, id, d, lost, million, contended)");
    }
    printf("\n%-46s %14s %16s %7s %10s\n", "scenario", "raw floor", "redlease", "ratio", "goal");
    for (int i = 0; i < n_rows; i++)
        printf("%-46s %14s %16s %7s %10s\n", rows[i].what, rows[i].raw, rows[i].lib, rows[i].ratio,
               rows[i].goal);
    return failures ? 1 : 0;
}
