/* SPDX-License-Identifier: MIT */
/* What redlease status prints (cli/status_text.h). */
#include "status_text.h"

#include <inttypes.h>
#include <stdio.h>

#include "view.h"

static int is_set(int kind) { return kind == REDLEASE_KIND_SEMAPHORE || kind == REDLEASE_KIND_SHARED; }

/* A holder of a set that counts: a semaphore's holds its permits (one
 * without a weight holds none, as the scripts count it). */
static int holds(const redlease_inspection *v, const redlease_holder *h)
{
    return redlease_inspection_kind(v) != REDLEASE_KIND_SEMAPHORE || h->permits > 0;
}

size_t status_text_holding(const redlease_inspection *v)
{
    size_t n = 0;
    for (size_t i = 0; i < redlease_inspection_holder_count(v); i++)
        n += holds(v, redlease_inspection_holder(v, i));
    return n;
}

/* Permits held (a semaphore's), or holders. */
static long long held_count(const redlease_inspection *v)
{
    if (redlease_inspection_kind(v) != REDLEASE_KIND_SEMAPHORE) return (long long)status_text_holding(v);
    long long permits = 0;
    for (size_t i = 0; i < redlease_inspection_holder_count(v); i++)
        permits += redlease_inspection_holder(v, i)->permits;
    return permits;
}

int status_text_held(const redlease_inspection *v, const status_raw *raw)
{
    return is_set(redlease_inspection_kind(v)) ? held_count(v) > 0 : raw->pttl != -2;
}

static void line_start(const char *member, const char *key)
{
    if (member) printf("%s: ", member);
    printf("%s: ", key);
}

/* Ends a line with who the holder's record says holds, "; by LABEL (pid
 * PID on HOST, for N ms, fence F)"; nothing without a record (it always
 * names a host). */
static void print_record(const redlease_holder *h)
{
    if (!*h->host) return;
    printf("; by %s (pid %" PRId64 " on %s", h->label, h->pid, h->host);
    if (h->held_ms >= 0) printf(", for %" PRId64 " ms", h->held_ms);
    if (h->fence) printf(", fence %" PRIu64, h->fence);
    printf(")");
}

static void print_counter(const status_raw *raw)
{
    if (raw->counter) printf(", fence counter %s", raw->counter);
}

/* A mutex's line, or that of a lock key of another writer's value (shown
 * as it is), or free. */
static void print_lock(const char *member, const char *key, const redlease_inspection *v,
                       const status_raw *raw, int show_token)
{
    const redlease_holder *h =
        redlease_inspection_kind(v) == REDLEASE_KIND_MUTEX ? redlease_inspection_holder(v, 0) : NULL;
    int held = raw->pttl != -2; /* -2: no such key; -1: a key without expiry */
    long long ttl = h ? h->ttl_ms : raw->pttl;
    line_start(member, key);
    if (!held)
        printf("free");
    else if (ttl < 0)
        printf("held, no expiry");
    else
        printf("held, %lld ms left", ttl);
    if (show_token && h)
        printf(", token %s", h->token);
    else if (show_token && raw->value)
        printf(", token %.*s", (int)raw->value_len, raw->value);
    print_counter(raw);
    if (held && h) print_record(h);
    printf("\n");
}

/* "holder: N permits, " (a semaphore's), or "holder: shared, ". */
static void print_holder(int semaphore, const redlease_holder *h)
{
    if (semaphore)
        printf("holder: %" PRId64 " permit%s, ", h->permits, h->permits == 1 ? "" : "s");
    else
        printf("holder: shared, ");
}

/* A set's line, its count, and a line per holder that holds. */
static void print_set(const char *member, const char *key, const redlease_inspection *v,
                      const status_raw *raw, int show_token)
{
    int semaphore = redlease_inspection_kind(v) == REDLEASE_KIND_SEMAPHORE;
    long long held = held_count(v);
    line_start(member, key);
    if (semaphore)
        printf("semaphore: %lld of %d permits held", held, redlease_inspection_limit(v));
    else
        printf("shared: %lld holder%s", held, held == 1 ? "" : "s");
    print_counter(raw);
    printf("\n");
    for (size_t i = 0; i < redlease_inspection_holder_count(v); i++) {
        const redlease_holder *h = redlease_inspection_holder(v, i);
        if (!holds(v, h)) continue;
        line_start(member, key);
        print_holder(semaphore, h);
        printf("%" PRId64 " ms left", h->ttl_ms);
        if (show_token) printf(", token %s", h->token);
        print_record(h);
        printf("\n");
    }
}

void status_text_server(const char *member, const char *key, const redlease_inspection *v,
                        const status_raw *raw, int show_token, int waiters)
{
    if (is_set(redlease_inspection_kind(v)))
        print_set(member, key, v, raw, show_token);
    else
        print_lock(member, key, v, raw, show_token);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s%s%.500s: ", member ? member : "", member ? ": " : "", key);
    if (waiters) cli_view_print_waiters(prefix, v, show_token);
    fflush(stdout);
}

void status_text_legacy(const char *key, const status_raw *raw, int show_token)
{
    if (raw->pttl == -1)
        printf("%s: held, no expiry", key);
    else
        printf("%s: held, %lld ms left", key, raw->pttl);
    if (show_token) printf(", token %.*s", (int)raw->value_len, raw->value);
    printf(" (the key of redlease 0.1.0: a holder of that version)\n");
    fflush(stdout);
}

void status_text_quorum_held(const char *key, int best, int n, int need, long long ttl_ms,
                             const char *token, int show_token)
{
    printf("%s: held by %d of %d servers (a majority is %d)", key, best, n, need);
    if (ttl_ms < 0)
        printf(", no expiry");
    else
        printf(", %lld ms left", ttl_ms);
    if (show_token) printf(", token %s", token);
    printf("\n");
    fflush(stdout);
}

void status_text_quorum_free(const char *key, int best, int n, int unreachable, int need)
{
    char also[64] = "";
    if (unreachable) snprintf(also, sizeof also, ", %d not answering", unreachable);
    printf("%s: free (held by %d of %d servers%s; a majority is %d)\n", key, best, n, also, need);
    fflush(stdout);
}

void status_text_quorum_set(const char *key, const redlease_inspection *tally, int need, int show_token)
{
    int n = redlease_inspection_servers(tally), limit = redlease_inspection_limit(tally);
    long long permits = held_count(tally), holders = (long long)status_text_holding(tally);
    if (redlease_inspection_kind(tally) == REDLEASE_KIND_SEMAPHORE) {
        int capacity = limit > 0 ? redlease_semaphore_capacity(limit, n) : REDLEASE_EINVAL;
        if (capacity > 0)
            printf("%s: semaphore: %lld of %d permits held by a majority (%d of %d servers; each "
                   "admits %d)\n", key, permits, limit, need, n, capacity);
        else
            printf("%s: semaphore: %lld permits held by a majority (%d of %d servers)\n", key, permits,
                   need, n);
    } else {
        printf("%s: shared: %lld holder%s by a majority (%d of %d servers)\n", key, holders,
               holders == 1 ? "" : "s", need, n);
    }
    for (size_t i = 0; i < redlease_inspection_holder_count(tally); i++) {
        const redlease_holder *h = redlease_inspection_holder(tally, i);
        if (!holds(tally, h)) continue;
        printf("%s: ", key);
        print_holder(redlease_inspection_kind(tally) == REDLEASE_KIND_SEMAPHORE, h);
        printf("on %d of %d servers, %" PRId64 " ms left", h->servers, n, h->ttl_ms);
        if (show_token) printf(", token %s", h->token);
        printf("\n");
    }
    fflush(stdout);
}
