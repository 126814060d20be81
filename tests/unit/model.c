/* The model check of the core. One program drives up to six leases on two
 * resources through steps that the driver chooses (model.h): acquires with
 * chosen options, releases (also from inside the event hook), replies in
 * order, time passing, process pauses (the clock jumps), broken
 * connections and reconnects, NOSCRIPT phases and a competitor writing the
 * keys. A small model of Redis answers the commands (keys with TTLs, the
 * three scripts). After every step it checks:
 *   - held() implies the key exists in the model and holds our token;
 *   - on_acquire once, before anything else; on_lost at most once and only
 *     after on_acquire(OK); on_release once and last; none of them inside
 *     the call that started it;
 * and at the end (after releasing everything and letting the client
 * settle): every release answered, no handle left, no allocation left. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "scripts.h"

static const model_driver *drv;
static int R(int n) { return (int)drv->choose(drv->ctx, (uint32_t)n); }
static uint32_t rng_fn(void *arg)
{
    (void)arg;
    return drv->bits(drv->ctx);
}

/* ------------------------------------------------------ the Redis model */

typedef struct kv {
    char key[64], val[64];
    int64_t exp;
    int used;
} kv;
static kv db[16];
static long long fence_ctr;
static int noscript_mode; /* EVALSHA answers NOSCRIPT */

static kv *find(const char *k, int64_t now)
{
    for (int i = 0; i < 16; i++)
        if (db[i].used && strcmp(db[i].key, k) == 0) {
            if (db[i].exp <= now) {
                db[i].used = 0;
                return NULL;
            }
            return &db[i];
        }
    return NULL;
}

static void put(const char *k, const char *v, int64_t exp)
{
    for (int i = 0; i < 16; i++)
        if (!db[i].used) {
            db[i].used = 1;
            snprintf(db[i].key, sizeof db[i].key, "%s", k);
            snprintf(db[i].val, sizeof db[i].val, "%s", v);
            db[i].exp = exp;
            return;
        }
    abort(); /* the model is sized for two resources */
}

static fake F;

static void answer_one(void)
{
    fake_cmd *c = fake_peek(&F);
    int64_t now = F.now;
    if (strcmp(c->argv[0], "SET") == 0) {
        if (find(c->argv[1], now)) {
            fake_reply_nil(&F);
        } else {
            put(c->argv[1], c->argv[2], now + atoll(c->argv[5]));
            fake_reply_status(&F, "OK");
        }
        return;
    }
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    if (!sha && strcmp(c->argv[0], "EVAL") != 0) {
        fake_reply_status(&F, "OK");
        return;
    }
    if (sha && noscript_mode) {
        fake_reply_err(&F, "NOSCRIPT No matching script");
        return;
    }
    int s = -1;
    for (int i = 0; i < RL_SCRIPT_COUNT; i++)
        if (strcmp(c->argv[1], sha ? fake_sha(i) : rl_script_src[i]) == 0) s = i;
    kv *e = find(c->argv[3], now);
    int ours = e && strcmp(e->val, c->argv[4]) == 0;
    if (s == RL_SCRIPT_RENEW) {
        if (ours) e->exp = now + atoll(c->argv[5]);
        fake_reply_int(&F, ours);
    } else if (s == RL_SCRIPT_RELEASE) {
        if (ours) e->used = 0;
        fake_reply_int(&F, ours);
    } else if (e) { /* fenced acquire, held */
        fake_reply_int(&F, 0);
    } else {
        put(c->argv[3], c->argv[5], now + atoll(c->argv[6]));
        fake_reply_int(&F, ++fence_ctr);
    }
}

/* ---------------------------------------------------------- the leases */

#define NL 6
typedef struct lease {
    redlease_lock *lk;
    int alive, acq, acq_ok, lost, rel, release_called, in_call;
    char token[40], key[64];
} lease;
static lease L[NL];
static int bad;

/* Counts a violated invariant and tells the driver what it was. */
static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    bad++;
    drv->violated(drv->ctx, what);
}

static void cb_acq(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (l->in_call) violation("on_acquire inside the call");
    if (!l->alive || l->acq || l->rel) violation("on_acquire out of order");
    l->acq = 1;
    l->acq_ok = st == REDLEASE_OK;
}

static void cb_lost(redlease_lock *lk, int reason, void *arg)
{
    lease *l = arg;
    (void)lk, (void)reason;
    if (!l->acq_ok || l->lost || l->rel) violation("on_lost out of order");
    l->lost = 1;
}

static void cb_rel(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk, (void)st;
    if (l->in_call) violation("on_release inside the call");
    if (l->rel || !l->acq) violation("on_release out of order");
    l->rel = 1;
    l->alive = 0;
}

static void release_one(lease *l)
{
    l->release_called = 1; /* first: the event hook may run inside the call */
    l->in_call = 1;
    int rc = redlease_release(l->lk, cb_rel, l);
    l->in_call = 0;
    if (rc) violation("release returned %d", rc);
}

static int hook_releases;
static void hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)ev, (void)arg;
    if (!hook_releases || R(8)) return;
    lease *l = &L[R(NL)];
    if (l->alive && !l->release_called && l->lk) release_one(l);
}

static void start_one(lease *l)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 100 + R(2000);
    int rr = R(4);
    o.renew_interval_ms = rr == 0 ? REDLEASE_RENEW_OFF : rr == 1 ? 0 : R((int)o.ttl_ms - 1) + 1;
    int w = R(3);
    o.wait_ms = w == 0 ? 0 : w == 1 ? REDLEASE_WAIT_FOREVER : R(3000);
    o.retry_base_ms = 1 + R(50);
    o.retry_max_ms = o.retry_base_ms + R(300);
    o.max_hold_ms = R(4) ? 0 : R(5000);
    o.fencing = R(2);
    o.max_attempts = R(3) ? 0 : R(5);
    memset(l, 0, sizeof *l);
    l->alive = 1;
    l->in_call = 1;
    char res[8];
    snprintf(res, sizeof res, "r%d", R(2));
    int rc = redlease_acquire(F.c, res, &o, cb_acq, cb_lost, l, &l->lk);
    l->in_call = 0;
    if (rc) {
        violation("acquire returned %d", rc);
        l->alive = 0;
        l->lk = NULL;
        return;
    }
    snprintf(l->token, sizeof l->token, "%s", redlease_lock_token(l->lk));
    snprintf(l->key, sizeof l->key, "%s", redlease_lock_key(l->lk));
}

static void check_held(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        if (!L[i].alive || !L[i].lk || !redlease_lock_held(L[i].lk)) continue;
        kv *e = find(L[i].key, F.now);
        if (!e || strcmp(e->val, L[i].token) != 0)
            violation("held but %s is not ours (t=%lld)", L[i].key, (long long)F.now);
    }
}

static void step(void)
{
    int a = R(100);
    if (a < 12) {
        lease *l = &L[R(NL)];
        if (!l->alive && !l->acq) start_one(l);
    } else if (a < 20) {
        lease *l = &L[R(NL)];
        if (l->alive && !l->release_called) release_one(l);
    } else if (a < 55) {
        for (int k = R(4); k > 0 && fake_peek(&F); k--) answer_one();
        fake_run(&F);
    } else if (a < 75) {
        fake_advance(&F, R(60));
    } else if (a < 79) {
        F.now += R(3000); /* the process was paused */
        fake_run(&F);
    } else if (a < 83) {
        if (F.connected) fake_break(&F);
    } else if (a < 88) {
        if (!F.connected && F.connecting) fake_connect(&F);
    } else if (a < 90) {
        noscript_mode = !noscript_mode;
    } else if (a < 92) { /* another client takes a free key */
        char k[16];
        snprintf(k, sizeof k, "lock:r%d", R(2));
        if (!find(k, F.now)) put(k, "other", F.now + 500);
    } else {
        fake_advance(&F, 1);
    }
}

int model_run(const model_driver *d)
{
    drv = d;
    bad = 0;
    memset(db, 0, sizeof db);
    memset(L, 0, sizeof L);
    noscript_mode = 0;
    fence_ctr = 100;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 50 + R(300);
    fake_start(&F, &co);
    redlease_client_set_rng(F.c, rng_fn, NULL);
    hook_releases = R(2);
    redlease_client_set_event_cb(F.c, hook, NULL);
    for (int st = 0; st < d->max_steps && F.c && (!d->more || d->more(d->ctx)); st++) {
        step();
        check_held();
    }
    /* Drain: release everything and let the client settle. */
    for (int i = 0; i < NL; i++)
        if (L[i].alive && !L[i].release_called) release_one(&L[i]);
    noscript_mode = 0;
    for (int k = 0; k < 200 && F.c; k++) {
        if (!F.connected && F.connecting) fake_connect(&F);
        while (fake_peek(&F)) answer_one();
        fake_advance(&F, 50);
        check_held();
    }
    redlease_stats s;
    redlease_client_stats(F.c, &s);
    for (int i = 0; i < NL; i++)
        if (L[i].release_called && !L[i].rel) violation("no on_release for lease %d", i);
    if (s.locks_now) violation("%llu handles left at the end", (unsigned long long)s.locks_now);
    fake_free(&F);
    if (fake_alloc_live()) violation("%ld allocations left", fake_alloc_live());
    return bad;
}
