/* SPDX-License-Identifier: MIT */
/* What the floor and redlease are measured with: clocks, RSS, CPU, the
 * server's own CPU and command count, and a synchronous connection for
 * set-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

#include <hiredis/hiredis.h>

#include "bench.h"

const char *bench_host = "127.0.0.1";
int bench_port;

void bench_die(const char *what)
{
    fprintf(stderr, "bench: %s\n", what);
    exit(1);
}

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int bench_go_on(long cycles, double end_us)
{
    static long max = -1;
    if (max < 0) {
        const char *v = getenv("BENCH_CYCLES");
        max = v && *v ? atol(v) : 0;
    }
    if (end_us <= 0) return 0;
    return max > 0 ? cycles < max : bench_now_us() < end_us;
}

int64_t bench_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double bench_rss_bytes(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* Bytes malloc has handed out and not had back (glibc's mallinfo2), or
 * -1 where it cannot say: RSS less this is what fragmentation and
 * libraries' own pools cost. */
double bench_heap_bytes(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
#else
    return -1;
#endif
}

double bench_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static redisContext *sync_connect(void)
{
    struct timeval tv = {5, 0};
    redisContext *rc = redisConnectWithTimeout(bench_host, bench_port, tv);
    if (!rc || rc->err) bench_die("cannot connect to the private redis-server");
    return rc;
}

static double info_field(const char *info, const char *name)
{
    const char *p = strstr(info, name);
    return p ? atof(p + strlen(name)) : 0;
}

double bench_redis_cpu_us(void)
{
    redisContext *rc = sync_connect();
    redisReply *r = redisCommand(rc, "INFO cpu");
    double us = 0;
    if (r && r->type == REDIS_REPLY_STRING)
        us = (info_field(r->str, "used_cpu_sys:") + info_field(r->str, "used_cpu_user:")) * 1e6;
    freeReplyObject(r);
    redisFree(rc);
    return us;
}

int bench_redis_flush(void)
{
    redisContext *rc = sync_connect();
    redisReply *r = redisCommand(rc, "FLUSHALL");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(rc);
    return ok ? 0 : -1;
}

char *bench_redis_script_load(const char *src)
{
    redisContext *rc = sync_connect();
    redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", src);
    char *sha = r && r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    redisFree(rc);
    return sha;
}

/* Every command the server ran, those a script calls included (Redis
 * 7.0 counts them; bench_contended.c says why that matters). */
double bench_redis_commands(void)
{
    redisContext *rc = sync_connect();
    redisReply *r = redisCommand(rc, "INFO stats");
    double n = 0;
    if (r && r->type == REDIS_REPLY_STRING) n = info_field(r->str, "total_commands_processed:");
    freeReplyObject(r);
    redisFree(rc);
    return n;
}

/* What careful hand-written code does for a token without a CSPRNG call
 * per lease: a random 64-bit prefix drawn once and a counter, in hex. */
void bench_token(char out[33])
{
    static uint64_t prefix, counter;
    static const char hex[] = "0123456789abcdef";
    if (!prefix) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&prefix, sizeof prefix, 1, f) != 1) bench_die("no /dev/urandom");
        fclose(f);
        prefix |= 1;
    }
    uint64_t v[2] = {prefix, ++counter};
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 16; i++) out[w * 16 + i] = hex[(v[w] >> (60 - 4 * i)) & 15];
    out[32] = '\0';
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_quantile(double *sorted, long n, double q)
{
    if (n <= 0) return 0;
    long i = (long)(q * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

int bench_fork(int *fd)
{
    int p[2];
    if (pipe(p)) bench_die("pipe");
    fflush(stdout); /* the child would print it again */
    pid_t pid = fork();
    if (pid < 0) bench_die("fork");
    close(p[pid == 0 ? 0 : 1]);
    *fd = p[pid == 0 ? 1 : 0];
    return (int)pid;
}
