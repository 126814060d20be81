/* SPDX-License-Identifier: MIT */
/* The rig the core's unit tests share (tests/unit/test_*.c on the fake
 * transport, fake loop and virtual clock of fake.h): a recorder of one
 * handle's callbacks, the helpers that start, hold and release a lease and
 * look at what was sent, and a recorder of the client's events.
 *
 * Header-only: each file that includes it has its own copy, the event
 * recorder's seen[] too, so events recorded by a client that one file's
 * helper started are read in that file. (testutil.h's CHECK counters are
 * one per program.) The functions are static inline: a program that uses
 * only some of them gets no unused-function warning for the others. */
#ifndef REDLEASE_CORE_RIG_H
#define REDLEASE_CORE_RIG_H
#include <stdint.h>
#include <string.h>

#include "identity.h"
#include "fake.h"
#include "testutil.h"

/* What a mutex's key holds for lk, "TOKEN RECORD" (src/identity.h), as its
 * last acquire attempt wrote it and with the fence it got: what SET NX PX,
 * SET IFEQ and DELIFEQ send. Valid until the next call. */
static inline const char *lease_value(const redlease_lock *lk)
{
    static char v[RDL_VALUE_MAX + 1];
    rdl_identity_value(&lk->set->identity, lk->token, lk->at, lk->fencing ? lk->opts->fence : 0, v);
    return v;
}

/* s is lk's record as its acquire sends it, last: "PID AT 0 HOST LABEL"
 * (a fenced acquire's script writes the fence it mints). */
static inline int is_record_of(const char *s, const redlease_lock *lk)
{
    char rec[RDL_RECORD_MAX + 1];
    rdl_identity_record(&lk->set->identity, lk->at, 0, rec);
    return strcmp(s, rec) == 0;
}

/* ------------------------------------------------------------- recorder */

typedef struct rec rec;
typedef void (*action_fn)(rec *r, redlease_lock *lk);

struct rec {
    fake *f;
    redlease_lock *lk;
    int acq_calls, acq_status, lost_calls, lost_reason, rel_calls, rel_status;
    int64_t acq_at, lost_at, rel_at;
    char order[16];
    int norder;
    action_fn on_acq_do, on_lost_do, on_rel_do;
    int depth; /* >0 while a library call of ours is running */
};

static inline void note(rec *r, char ch)
{
    if (r->norder < 15) r->order[r->norder++] = ch;
}

static inline void on_acq(redlease_lock *lk, int st, void *arg)
{
    rec *r = arg;
    CHECK_EQ(r->depth, 0); /* never inside the call that started it */
    r->acq_calls++;
    r->acq_status = st;
    r->acq_at = r->f ? r->f->now : 0;
    note(r, 'A');
    if (r->on_acq_do) r->on_acq_do(r, lk);
}

static inline void on_lost(redlease_lock *lk, int reason, void *arg)
{
    rec *r = arg;
    r->lost_calls++;
    r->lost_reason = reason;
    r->lost_at = r->f ? r->f->now : 0;
    note(r, 'L');
    if (r->on_lost_do) r->on_lost_do(r, lk);
}

static inline void on_rel(redlease_lock *lk, int st, void *arg)
{
    rec *r = arg;
    CHECK_EQ(r->depth, 0);
    r->rel_calls++;
    r->rel_status = st;
    r->rel_at = r->f ? r->f->now : 0;
    note(r, 'R');
    if (r->on_rel_do) r->on_rel_do(r, lk);
}

/* An action that frees the client from inside a callback (f->c is then
 * NULL: the client is gone once the outermost call returns). */
static inline void free_client_inside(rec *r, redlease_lock *lk)
{
    (void)lk;
    redlease_client_free(r->f->c);
    r->f->c = NULL;
}

static inline int start_lock(fake *f, rec *r, const char *res, const redlease_lock_options *o)
{
    r->f = f;
    r->depth++;
    int rc = redlease_acquire(f->c, res, o, on_acq, on_lost, r, &r->lk);
    r->depth--;
    return rc;
}

static inline int release(rec *r)
{
    r->depth++;
    int rc = redlease_release(r->lk, on_rel, r);
    r->depth--;
    return rc;
}

/* Options of the polling acquire, which most cases are about (queued
 * waiting has tests/unit/test_queue.c). */
static inline redlease_lock_options opts(int64_t ttl)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = ttl;
    o.wait_mode = REDLEASE_WAIT_POLL;
    return o;
}

static inline int cmd_is(fake *f, const char *a0, const char *a1)
{
    fake_cmd *c = fake_peek(f);
    if (!c) return 0;
    if (strcmp(c->argv[0], a0) != 0) return 0;
    return !a1 || (c->argc > 1 && strcmp(c->argv[1], a1) == 0);
}

/* The pending command is an acquire attempt: the first one's SET NX PX,
 * or the script of every later one. */
static inline int is_attempt(fake *f)
{
    return cmd_is(f, "SET", NULL) || cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE)) ||
           cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED));
}

/* Answers the pending attempt "held by someone else", in its own form. */
static inline void reply_busy(fake *f)
{
    if (cmd_is(f, "SET", NULL))
        fake_reply_nil(f);
    else
        fake_reply_int(f, 0);
}

/* Acquire res with o, reply OK to the SET; returns the send time t0. */
static inline int64_t hold(fake *f, rec *r, const char *res, redlease_lock_options o)
{
    CHECK_EQ(start_lock(f, r, res, &o), REDLEASE_OK);
    fake_run(f);
    int64_t t0 = f->now;
    CHECK(cmd_is(f, o.fencing ? "EVALSHA" : "SET", NULL));
    if (o.fencing)
        fake_reply_int(f, 7);
    else
        fake_reply_status(f, "OK");
    fake_run(f);
    CHECK_EQ(r->acq_calls, 1);
    CHECK_EQ(r->acq_status, REDLEASE_OK);
    return t0;
}

static inline void end(fake *f)
{
    fake_free(f);
    CHECK_EQ(fake_alloc_live(), 0);
}

/* ------------------------------------------------- allocation failures */

/* A scenario run with the fail_at-th allocation failing (0: none); it adds
 * 1 to *ok when it went all the way as without failures. */
typedef void (*oom_scenario)(long fail_at, int *ok);

/* After a start with an allocation set to fail: 0 (failures off again)
 * when the client itself could not be made (nothing left to run). */
static inline int oom_started(fake *f)
{
    if (f->c) return 1;
    fake_alloc_fail_at(0);
    return 0;
}

/* A started client on the fake (o may be NULL) with the fail_at-th
 * allocation from now failing; 0 when the client itself could not be made. */
static inline int oom_start(fake *f, const redlease_client_options *o, long fail_at)
{
    fake_alloc_fail_at(fail_at);
    fake_start(f, o);
    return oom_started(f);
}

/* Runs the scenario once to count its allocations (that run must go all
 * the way), then once with each of them failing in turn; nothing may be
 * left allocated. Returns the count. */
static inline long alloc_sweep(oom_scenario run)
{
    long before = fake_alloc_count();
    int ok = 0;
    run(0, &ok);
    long total = fake_alloc_count() - before;
    CHECK(total > 5);
    CHECK_EQ(ok, 1);
    for (long n = 1; n <= total + 2; n++) run(n, &ok);
    CHECK_EQ(fake_alloc_live(), 0);
    return total;
}

/* ------------------------------------------------------ options' texts */

/* redlease_client_options_error() refuses o and names field. */
static inline int error_names(const redlease_client_options *o, const char *field)
{
    const char *why = redlease_client_options_error(o);
    return why && strstr(why, field);
}

/* -------------------------------------------------------- backoff draws */

static inline uint32_t rng_max(void *arg)
{
    (void)arg;
    return 0xFFFFFFFFu;
}
static inline uint32_t rng_zero(void *arg)
{
    (void)arg;
    return 0;
}

/* ---------------------------------------------------- renewal in flight */

/* A connected client with a 300 ms command timeout, reconnecting after
 * 10 ms, its server having these conditional commands (RDL_NATIVE_* bits,
 * 0: none, scripts). */
static inline void start_quick_relink(fake *f, int native)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 300;
    co.reconnect_min_ms = 10;
    co.reconnect_max_ms = 10;
    fake_attach(f, &co);
    f->native = native;
    if (f->c) fake_connect(f);
}

/* start_quick_relink()'s client holding "job" (TTL 3000 ms) whose first
 * renewal, at t0 + 1000, is on the wire and not yet answered (SET IFEQ
 * where native, else the script). Returns t0, the send time of the
 * acquire. */
static inline int64_t hold_native_with_renewal_in_flight(fake *f, rec *r, int native)
{
    start_quick_relink(f, native);
    int64_t t0 = hold(f, r, "job", opts(3000));
    fake_until(f, t0 + 1000);
    CHECK_EQ(fake_pending(f), 1);
    return t0;
}

static inline int64_t hold_with_renewal_in_flight(fake *f, rec *r)
{
    return hold_native_with_renewal_in_flight(f, r, 0);
}

/* The oldest unanswered command on link s (a side or peer link) is a0
 * (with first argument a1, unless NULL). */
static inline int link_cmd_is(fake_side *s, const char *a0, const char *a1)
{
    fake_cmd *c = s ? fake_link_peek(s) : NULL;
    return c && strcmp(c->argv[0], a0) == 0 && (!a1 || (c->argc > 1 && strcmp(c->argv[1], a1) == 0));
}

/* ------------------------------------------------------- event recorder */

static redlease_event seen[64];
static char seen_node[64][64]; /* the names, as they were: ev->node's own
                                  lives only during the call */
static int nseen;
static inline void record_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (nseen >= 64) return;
    seen[nseen] = *ev;
    if (ev->node) {
        snprintf(seen_node[nseen], sizeof seen_node[nseen], "%s", ev->node);
        seen[nseen].node = seen_node[nseen];
    }
    nseen++;
}

/* ev names node (NULL: names none). */
static inline int names(const redlease_event *ev, const char *node)
{
    if (!ev) return 0;
    if (!node || !ev->node) return ev->node == node;
    return strcmp(ev->node, node) == 0;
}

/* A connected client on the fake whose events are recorded in seen[]. */
static inline void start_recording(fake *f)
{
    fake_start(f, NULL);
    nseen = 0;
    redlease_client_set_event_cb(f->c, record_event, NULL);
}

/* fake_attach(f, co), its events recorded in seen[] from then on; 0 when
 * no client could be made. */
static inline int attach_recording(fake *f, const redlease_client_options *co)
{
    fake_attach(f, co);
    if (!f->c) return 0;
    nseen = 0;
    redlease_client_set_event_cb(f->c, record_event, NULL);
    return 1;
}

static inline int count_events(int type)
{
    int n = 0;
    for (int i = 0; i < nseen; i++) n += seen[i].type == type;
    return n;
}

static inline const redlease_event *last_event(int type)
{
    for (int i = nseen - 1; i >= 0; i--)
        if (seen[i].type == type) return &seen[i];
    return NULL;
}

#endif
