/* SPDX-License-Identifier: MIT */
/* make bench: redlease next to the raw floor, the same commands written by
 * hand on hiredis and libev, in one run against one private redis-server.
 * bench_main.c runs the scenarios and prints the table, bench_raw.c is the
 * floor, bench_lib.c the same work through redlease, bench_util.c what
 * both measure with; bench_contended.c has no floor (N processes on one
 * key). Results are JSON lines; nothing here asserts a speed. */
#ifndef REDLEASE_BENCH_H
#define REDLEASE_BENCH_H

#include <stdint.h>

/* The held window of d, for callgrind: run it with --collect-atstart=no and
 * only the seconds measured are counted. Nothing without valgrind's header. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_COLLECT() CALLGRIND_TOGGLE_COLLECT
#endif
#endif
#ifndef BENCH_COLLECT
#define BENCH_COLLECT() ((void)0)
#endif

struct ev_loop;

/* Where the private server listens (the harness's REDLEASE_TEST_PORT). */
extern const char *bench_host;
extern int bench_port;

/* Acquire -> release cycles: `chains` keys, each cycled on its own, all on
 * one connection, for `seconds`. redlease's with the lock option limit:
 * 0 a mutex, N a semaphore of N permits (weight 1), BENCH_SHARED a shared
 * holder (lock option shared). */
#define BENCH_SHARED (-1)
typedef struct bench_cycles {
    long cycles;
    double seconds;
    double redis_cpu_us; /* the server's CPU (INFO cpu) over the run */
} bench_cycles;
/* record: each SET carries a record of who holds after its token, as
 * redlease's does (src/identity.h): the floor with and without it. */
int bench_raw_cycles(int chains, double seconds, int record, bench_cycles *out);
/* The floor on one key and one connection, without the record (out[0]) and
 * with it (out[1]), alternated in slices of slice_s: `pairs` pairs, the
 * order turning each pair; ratio[i] is pair i's cycles/s with the record
 * over without. A slow moment of the machine falls on both sides of a pair. */
int bench_raw_id_pairs(int pairs, double slice_s, bench_cycles out[2], double *ratio);
/* The same with a semaphore of 4 written by hand at its least (bench_raw.c
 * says what it leaves out): the floor of any semaphore kept by scripts. */
int bench_raw_sem_cycles(int chains, double seconds, bench_cycles *out);
int bench_lib_cycles(int chains, int limit, double seconds, bench_cycles *out);

/* Held leases: `n` leases with a ttl and renewal interval, held for
 * `seconds` once all are taken. Run in a child process of its own, so RSS
 * is the lease holder's alone. */
typedef struct bench_held {
    long leases, renewals, lost;
    double rss_before, rss_held, rss_end; /* bytes */
    double heap_before, heap_held;        /* malloc's bytes in use (-1: unknown) */
    double cpu_us, seconds;               /* client CPU over the holding time */
    double late_p50_ms, late_p99_ms, late_max_ms; /* renewal confirmed after its due time */
    long disconnects, timeouts;           /* redlease's stats (lib only) */
} bench_held;
typedef struct bench_hold_spec {
    long n;
    int64_t ttl_ms, renew_ms;
    double seconds;
    int track_lateness;
} bench_hold_spec;
int bench_raw_hold(const bench_hold_spec *s, bench_held *out);
int bench_lib_hold(const bench_hold_spec *s, bench_held *out);

/* How late on_lost runs after the local deadline (µs), samples sorted. */
int bench_lib_lost_latency(int samples, double *lat_us);

/* contended: `workers` processes contend for one key, each with its own
 * loop and client, holding it hold_us per turn (bench_contended.c). Modes
 * are rows of lock options, a mutex's or a semaphore's; bench_contended_mode(i)
 * names the i-th, NULL past the last. */
typedef struct bench_contended_spec {
    int workers;
    double hold_us, seconds, warmup_s;
} bench_contended_spec;
typedef struct bench_contended {
    int permits; /* the mode's: 1 for a mutex, a semaphore's limit */
    long cs, give_ups, lost, errors; /* in the window; lost, errors: in all */
    long overlaps; /* in all: acquisitions while `permits` others held */
    double cs_per_s, hold_mean_us;
    double handoff_p50_us, handoff_p99_us; /* next holder's acquired - release call
                                            * (a semaphore: of the permit it took) */
    double self_reacquire, jain, wait_p99_ms;
    double cpu_percent;     /* the workers' user + sys, % of one core */
    double commands_per_cs; /* commands the clients sent, a script counting as one */
    double redis_calls_per_cs; /* the server's count: a script's own calls included */
} bench_contended;
const char *bench_contended_mode(int i);
int bench_contended_run(const char *mode, const bench_contended_spec *s, bench_contended *out);

/* bench_util.c */
double bench_now_us(void);
/* a and b's cycles go on: until end_us (0: stop now), or with BENCH_CYCLES
 * set, until that many have run (a fixed count makes callgrind's counts
 * of two builds comparable, whatever the machine's speed) */
int bench_go_on(long cycles, double end_us);
int64_t bench_clock_ms(void); /* the clock redlease is given in the bench */
double bench_rss_bytes(void);
double bench_heap_bytes(void);
double bench_cpu_us(void);
double bench_redis_cpu_us(void); /* the server's used_cpu_sys + used_cpu_user */
int bench_redis_flush(void);
char *bench_redis_script_load(const char *src); /* malloc'd SHA1, or NULL */
double bench_redis_commands(void); /* INFO stats total_commands_processed */
void bench_token(char out[33]);  /* a unique token, the floor's way */
int bench_cmp_double(const void *a, const void *b);
double bench_quantile(double *sorted, long n, double q);
void bench_die(const char *what);
/* fork() with a pipe from the child to the parent: 0 in the child, *fd
 * its writing end; the child's pid in the parent, *fd its reading end. */
int bench_fork(int *fd);

#endif
