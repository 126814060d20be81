/* SPDX-License-Identifier: MIT */
/* redlease_inspect() on the harness's real redis-server: a mutex held, a
 * semaphore with two holders of one client (the same label, host and
 * pid: two holders), shared holders with an exclusive and a shared
 * waiter queued behind them, a free resource, and the script run again by
 * EVAL after the server's cache was flushed. What it reports is checked
 * against what the holders know of themselves (token, fence, pid). */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rig.h"

/* What one inspection said, copied out of its callback. */
typedef struct snap {
    int calls, status, kind, limit;
    uint64_t counter;
    size_t nh, nw;
    redlease_holder h[4];
    redlease_waiter w[4];
    char htoken[4][80], hlabel[4][80], hhost[4][80];
    char wtoken[4][80], wlabel[4][80];
} snap;

static void on_snap(const redlease_inspection *in, int status, void *arg)
{
    snap *s = arg;
    s->calls++;
    s->status = status;
    if (!in) return;
    s->kind = redlease_inspection_kind(in);
    s->limit = redlease_inspection_limit(in);
    s->counter = redlease_inspection_fence_counter(in);
    s->nh = redlease_inspection_holder_count(in);
    s->nw = redlease_inspection_waiter_count(in);
    for (size_t i = 0; i < s->nh && i < 4; i++) {
        s->h[i] = *redlease_inspection_holder(in, i);
        snprintf(s->htoken[i], sizeof s->htoken[i], "%s", s->h[i].token);
        snprintf(s->hlabel[i], sizeof s->hlabel[i], "%s", s->h[i].label);
        snprintf(s->hhost[i], sizeof s->hhost[i], "%s", s->h[i].host);
    }
    for (size_t i = 0; i < s->nw && i < 4; i++) {
        s->w[i] = *redlease_inspection_waiter(in, i);
        snprintf(s->wtoken[i], sizeof s->wtoken[i], "%s", s->w[i].token);
        snprintf(s->wlabel[i], sizeof s->wlabel[i], "%s", s->w[i].label);
    }
}

/* Inspects res from c and runs the loop until the answer. */
static snap look(redlease_client *c, const char *res)
{
    snap s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(redlease_inspect(c, res, strlen(res), on_snap, &s), REDLEASE_OK);
    CHECK_EQ(s.calls, 0); /* never inside the call */
    run_until(&s.calls, 3000, NULL);
    CHECK_EQ(s.calls, 1);
    return s;
}

/* A connected client of the harness's server, labelled. */
static redlease_client *labelled(obs *o, const char *label)
{
    redlease_client_options co = copts(sock_path, NULL, 0);
    co.command_timeout_ms = co.connect_timeout_ms = 1000 * S;
    co.label = label;
    redlease_client *c = client_with(&co, o);
    wait_connected(c, 3000);
    return c;
}

/* Index of the holder with token t in s, or -1. */
static int holder_of(const snap *s, const char *t)
{
    for (size_t i = 0; i < s->nh && i < 4; i++)
        if (strcmp(s->htoken[i], t) == 0) return (int)i;
    return -1;
}

/* A fenced mutex: its holder's token, record, TTL and fence; this_client
 * for the client holding it only; nothing queued. */
static void test_inspect_mutex(void)
{
    obs oa = {0}, ob = {0};
    redlease_client *a = labelled(&oa, "alpha"), *b = labelled(&ob, "beta");
    hold_real(a, &oa, "insp-mutex", lopts(5000, 0, 1));
    snap s = look(b, "insp-mutex");
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_MUTEX);
    CHECK_EQ(s.nh, 1);
    CHECK_EQ(s.nw, 0);
    CHECK_STR(s.htoken[0], redlease_lock_token(oa.lk));
    CHECK_STR(s.hlabel[0], "alpha");
    CHECK(s.hhost[0][0] != '\0');
    CHECK_EQ(s.h[0].pid, (int64_t)getpid());
    CHECK_EQ(s.h[0].fence, redlease_lock_fence(oa.lk));
    CHECK_EQ(s.counter, redlease_lock_fence(oa.lk));
    CHECK(s.h[0].ttl_ms > 0 && s.h[0].ttl_ms <= 5000 * S);
    CHECK(s.h[0].held_ms >= 0 && s.h[0].held_ms < 5000 * S);
    CHECK(s.h[0].acquired_at_ms > 0);
    CHECK_EQ(s.h[0].this_client, 0);
    CHECK_EQ(s.h[0].servers, 1);
    snap mine = look(a, "insp-mutex");
    CHECK_EQ(mine.h[0].this_client, 1);
    release(&oa, NULL);
    snap after = look(b, "insp-mutex");
    CHECK_EQ(after.status, REDLEASE_OK);
    CHECK_EQ(after.kind, REDLEASE_KIND_FREE);
    CHECK_EQ(after.nh, 0);
    redlease_client_free(b);
    finish(a, &oa);
}

/* A semaphore of 3 permits with two holders of one client, weights 1 and
 * 2: two holders, though their pid, host and label are one. */
static void test_inspect_semaphore_two_holders(void)
{
    obs o1 = {0}, o2 = {0}, ob = {0};
    redlease_client *a = labelled(&o1, "pool"), *b = labelled(&ob, "admin");
    redlease_lock_options lo = lopts(5000, 0, 0);
    lo.limit = 3;
    hold_real(a, &o1, "insp-sem", lo);
    lo.weight = 2;
    hold_real(a, &o2, "insp-sem", lo);
    snap s = look(b, "insp-sem");
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_SEMAPHORE);
    CHECK_EQ(s.limit, 3);
    CHECK_EQ(s.nh, 2);
    int i1 = holder_of(&s, redlease_lock_token(o1.lk)), i2 = holder_of(&s, redlease_lock_token(o2.lk));
    CHECK(i1 >= 0 && i2 >= 0 && i1 != i2);
    if (i1 >= 0 && i2 >= 0) {
        CHECK_EQ(s.h[i1].permits, 1);
        CHECK_EQ(s.h[i2].permits, 2);
        CHECK_STR(s.hlabel[i1], "pool");
        CHECK_STR(s.hlabel[i2], "pool");
        CHECK_STR(s.hhost[i1], s.hhost[i2]);
        CHECK_EQ(s.h[i1].pid, s.h[i2].pid);
        CHECK(s.h[i1].ttl_ms > 0 && s.h[i1].ttl_ms <= 5000 * S);
    }
    release(&o2, NULL);
    release(&o1, NULL);
    redlease_client_free(b);
    finish(a, &o1);
}

/* Shared holders, an exclusive waiter and a shared one behind it (phase
 * fair: the shared one waits for the exclusive one), in queue order with
 * what each waits to be; then the script's cache flushed: EVAL. */
static void test_inspect_shared_with_waiters(void)
{
    obs oh = {0}, ox = {0}, os = {0}, oa = {0};
    redlease_client *h = labelled(&oh, "reader"), *x = labelled(&ox, "writer"),
                    *r = labelled(&os, "late-reader"), *adm_c = labelled(&oa, "admin");
    redlease_lock_options lo = lopts(5000, 0, 0);
    lo.shared = 1;
    hold_real(h, &oh, "insp-shared", lo);
    redlease_lock_options wx = lopts(5000, 10000, 0); /* queued by default */
    acquire(x, &ox, "insp-shared", wx);
    snap s;
    int64_t end = mono_ms() + 3000 * S;
    do { /* the exclusive waiter first in the queue, before the shared one asks */
        run_for(20, NULL);
        s = look(adm_c, "insp-shared");
    } while (s.nw < 1 && mono_ms() < end);
    redlease_lock_options ws = lopts(5000, 10000, 0);
    ws.shared = 1;
    acquire(r, &os, "insp-shared", ws);
    end = mono_ms() + 3000 * S;
    do { /* each joins the queue once its client's wake-up channel listens */
        run_for(20, NULL);
        s = look(adm_c, "insp-shared");
    } while (s.nw < 2 && mono_ms() < end);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_SHARED);
    CHECK_EQ(s.nh, 1);
    CHECK_STR(s.hlabel[0], "reader");
    CHECK_EQ(s.nw, 2);
    CHECK_STR(s.wtoken[0], redlease_lock_token(ox.lk));
    CHECK_EQ(s.w[0].kind, REDLEASE_KIND_MUTEX);
    CHECK_STR(s.wlabel[0], "writer");
    CHECK(s.w[0].waiting_ms >= 0);
    CHECK_STR(s.wtoken[1], redlease_lock_token(os.lk));
    CHECK_EQ(s.w[1].kind, REDLEASE_KIND_SHARED);
    CHECK_STR(s.wlabel[1], "late-reader");
    CHECK_EQ(ox.acq + os.acq, 0);
    /* the waiter's own client knows it */
    snap own = look(x, "insp-shared");
    CHECK_EQ(own.nw, 2);
    CHECK_EQ(own.w[0].this_client, 1);
    CHECK_EQ(own.w[1].this_client, 0);
    /* a cold script cache: NOSCRIPT, then EVAL */
    ADM("SCRIPT FLUSH");
    snap cold = look(adm_c, "insp-shared");
    CHECK_EQ(cold.status, REDLEASE_OK);
    CHECK_EQ(cold.nh, 1);
    release(&os, NULL);
    release(&ox, NULL);
    release(&oh, NULL);
    redlease_client_free(x);
    redlease_client_free(r);
    redlease_client_free(adm_c);
    finish(h, &oh);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_inspect_mutex),
        TEST_CASE(test_inspect_semaphore_two_holders),
        TEST_CASE(test_inspect_shared_with_waiters),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
