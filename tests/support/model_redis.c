/* SPDX-License-Identifier: MIT */
/* The model check (model.c): the model's Redis. Its keys, each resource's
 * queue, semaphore and shared holders (the Lua of their scripts, written
 * again here), the commands the client sent as Redis runs them and their
 * replies as the client reads them, a reconnect, keys lost, and other
 * clients' waiters in the queues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lock_int.h" /* a lock's current request (note_delivery) */
#include "model_internal.h"
#include "scripts.h"

/* ------------------------------------------------------ the Redis model */

kv db[16];
long long fence_ctr;
int noscript_mode; /* EVALSHA answers NOSCRIPT */
int fast_server;   /* the server's clock runs fast: keys expire early */
int links;         /* connections made so far */
int native;        /* RDL_NATIVE_* the server of this link says it has */
int native_refused; /* ...and then answers them "unknown command" (a proxy
                              in between, a failover to an older server) */

kv *find(const char *k, int64_t now)
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

void put(const char *k, const char *v, int64_t exp)
{
    for (int i = 0; i < 16; i++)
        if (!db[i].used) {
            db[i].used = 1;
            db[i].handed = 0;
            snprintf(db[i].key, sizeof db[i].key, "%s", k);
            snprintf(db[i].val, sizeof db[i].val, "%s", v);
            db[i].exp = exp;
            return;
        }
    abort(); /* the model is sized for two resources */
}

/* SET k v PX: the key holds v until exp, whatever it held. */
static kv *set_key(const char *k, const char *v, int64_t exp)
{
    kv *e = find(k, F.now);
    if (!e) {
        put(k, v, exp);
        e = find(k, F.now);
    }
    snprintf(e->val, sizeof e->val, "%s", v);
    e->exp = exp;
    e->handed = 0;
    return e;
}

/* When a key given PX p now expires, by our clock. */
static int64_t expiry_ms(int64_t p) { return F.now + p - (fast_server ? contract_drift(p) : 0); }
static int64_t expiry(const char *px) { return expiry_ms(atoll(px)); }

/* A confirmation of token's lease, sent at sent_at, was executed. */
static void confirmed(const char *token, int64_t sent_at)
{
    lease *l = by_token(token);
    if (!l) return;
    int64_t until = contract_until(sent_at, l->ttl);
    if (until > l->exec_until) l->exec_until = until;
}

/* ---------------------------------------------------------- the queues */

queue Q[2];
int64_t srv_skew; /* the server's TIME minus our clock (a wall clock, stepped) */
int strangers;

static int64_t srv_now(void) { return F.now + srv_skew; }

static int res_of(const char *key)
{
    const char *p = strstr(key, "{r");
    if (!p || (p[2] != '0' && p[2] != '1') || p[3] != '}') abort();
    return p[2] - '0';
}

void qexpire(queue *q)
{
    if (q->nz && q->zexp >= 0 && q->zexp <= F.now) q->nz = 0;
    if (!q->nz) q->zexp = -1;
    if (q->nw && q->wexp >= 0 && q->wexp <= F.now) q->nw = 0;
    if (!q->nw) q->wexp = -1;
}

/* The index of tok among n elements of size bytes, each of which starts
 * with its token (qmember, qentry, sem_holder, sem_weight), or -1. */
static int tok_idx(const void *elems, int n, size_t size, const char *tok)
{
    for (int i = 0; i < n; i++)
        if (strcmp((const char *)elems + (size_t)i * size, tok) == 0) return i;
    return -1;
}

static int z_idx(const queue *q, const char *tok) { return tok_idx(q->z, q->nz, sizeof q->z[0], tok); }
static int w_idx(const queue *q, const char *tok) { return tok_idx(q->w, q->nw, sizeof q->w[0], tok); }

/* The channel an entry is told on (head() and tell_first() cut the mark). */
static const char *chan(const qentry *w) { return w->ch + marked_entry(w); }

/* ZREM and HDEL */
static void leave(queue *q, const char *tok)
{
    int i = z_idx(q, tok);
    if (i >= 0) memmove(&q->z[i], &q->z[i + 1], (size_t)(--q->nz - i) * sizeof q->z[0]);
    i = w_idx(q, tok);
    if (i >= 0) memmove(&q->w[i], &q->w[i + 1], (size_t)(--q->nw - i) * sizeof q->w[0]);
    if (!q->nz) q->zexp = -1;
    if (!q->nw) q->wexp = -1;
}

/* The first live waiter (its entry's index), the dead met on the way
 * dropped; -1 for none. */
static int head(queue *q)
{
    for (;;) {
        qexpire(q);
        if (!q->nz) return -1;
        int e = w_idx(q, q->z[0].tok);
        if (e >= 0 && q->w[e].deadline > srv_now()) return e;
        model_reached.entries_expired++;
        leave(q, q->z[0].tok);
    }
}

/* The k members from rank `from` on are told to check once i claims
 * ended (i from 1). */
static void tell_first(queue *q, int k, int64_t ms, int from)
{
    char text[128];
    for (int i = 0; i < k && from + i < q->nz; i++) {
        int e = w_idx(q, q->z[from + i].tok);
        if (e < 0) continue;
        snprintf(text, sizeof text, "c %s %lld", q->z[from + i].tok, (long long)(ms * (i + 1)));
        publish(chan(&q->w[e]), text);
    }
}

/* remind(): the waiter h told to check now, its entry cut to at most one
 * claim (a reminder never lengthens its life); the next one (three when
 * nobody heard h) told to check once one, two, three claims end. */
static void remind(queue *q, int h)
{
    qentry *w = &q->w[h];
    int64_t soon = srv_now() + w->claim;
    if (w->deadline > soon) w->deadline = soon;
    w->reminded = 1;
    char text[128];
    snprintf(text, sizeof text, "c %s 0", w->tok);
    int heard = publish(chan(w), text);
    tell_first(q, heard ? 1 : 3, w->claim, 1);
    if (shared_entry(w)) model_reached.shared_reminded++;
}

/* remind_head(): the live head reminded, or (shared_only) only a shared
 * one. 1 if a head was reminded. */
static int remind_head(queue *q, int shared_only)
{
    int h = head(q);
    if (h < 0 || (shared_only && !shared_entry(&q->w[h]))) return 0;
    remind(q, h);
    return 1;
}

/* A free key goes to the live head for its claim time; a shared or a
 * semaphore's head is reminded instead (no key to give: its own acquire
 * admits it). 1 if the key was handed. */
static int hand_over(queue *q, const char *key)
{
    int h = head(q);
    if (h < 0) return 0;
    if (marked_entry(&q->w[h])) {
        remind(q, h);
        return 0;
    }
    qentry he = q->w[h];
    set_key(key, he.tok, expiry_ms(he.claim))->handed = 1;
    leave(q, he.tok);
    char text[128];
    snprintf(text, sizeof text, "g %s", he.tok);
    int heard = publish(he.ch, text);
    tell_first(q, heard ? 1 : 3, he.claim, 0); /* one insurance word when the head heard */
    model_reached.handovers++;
    model_reached.handovers_heard += heard;
    return 1;
}

/* HSET the entry, ZADD at the tail if not placed, the keys' TTLs at least
 * the entry's life. */
static void join(queue *q, const char *tok, int64_t life, int64_t claim, const char *ch)
{
    qexpire(q);
    int e = w_idx(q, tok);
    if (e < 0) {
        if (q->nw == NQ) abort(); /* sized for NL leases and a few strangers */
        e = q->nw++;
        snprintf(q->w[e].tok, sizeof q->w[e].tok, "%s", tok);
    }
    q->w[e].deadline = srv_now() + life;
    q->w[e].claim = claim;
    q->w[e].reminded = 0;
    snprintf(q->w[e].ch, sizeof q->w[e].ch, "%s", ch);
    if (z_idx(q, tok) < 0) {
        if (q->nz == NQ) abort();
        qmember *m = &q->z[q->nz];
        m->score = q->nz ? q->z[q->nz - 1].score + 1 : 1;
        snprintf(m->tok, sizeof m->tok, "%s", tok);
        q->nz++;
        lease *l = by_token_any(tok);
        if (l && l->joined) model_reached.rejoined++; /* its place was gone */
        if (l) l->joined = 1;
    }
    if (q->zexp < 0 || q->zexp - F.now < life) q->zexp = expiry_ms(life);
    if (q->wexp < 0 || q->wexp - F.now < life) q->wexp = expiry_ms(life);
}

/* An entry that a hand-over could reach: placed, and alive. */
int live_entry(queue *q, const char *tok)
{
    qexpire(q);
    int e = w_idx(q, tok);
    return z_idx(q, tok) >= 0 && e >= 0 && q->w[e].deadline > srv_now();
}

/* The live head of res's queue, as head() would find it (nothing
 * dropped), or NULL. */
const qentry *live_head(int res)
{
    queue *q = &Q[res];
    qexpire(q);
    for (int i = 0; i < q->nz; i++) {
        int e = w_idx(q, q->z[i].tok);
        if (e >= 0 && q->w[e].deadline > srv_now()) return &q->w[e];
    }
    return NULL;
}

/* ---------------------------------- the semaphores and shared holders */

sem S[2];

/* The N of a kind "semaphore N", or 0 for any other value (a token). */
static int kind_limit(const char *val)
{
    const char *n = val + 10;
    if (strncmp(val, "semaphore ", 10) != 0 || !*n || strspn(n, "0123456789") != strlen(n)) return 0;
    return atoi(n);
}

/* The kind of shared and exclusive holders: no token equals it, so the
 * mutex's scripts find the resource taken (LUA_KIND's other_kind() is nil
 * for it), never their own. */
static int is_shared_kind(const char *val) { return strcmp(val, "shared") == 0; }

/* A value keep() writes: a set of holders' kind, not a mutex's token. */
static int is_kind(const char *val) { return kind_limit(val) || is_shared_kind(val); }

/* A deadline the scripts set, TIME + ttl: by the server's clock, so it
 * moves with the server's TIME steps, and on a server whose clock runs
 * fast it comes as early as a key's PX does (expiry_ms). */
static int64_t srv_deadline(const char *ttl) { return expiry(ttl) + srv_skew; }

/* The keys' TTLs, as qexpire() does for a queue's. */
static void sem_expire(sem *s)
{
    if (s->nh && s->hexp >= 0 && s->hexp <= F.now) s->nh = 0;
    if (!s->nh) s->hexp = -1;
    if ((s->nw || s->has_used) && s->wexp >= 0 && s->wexp <= F.now) s->nw = s->has_used = 0;
    if (!s->nw && !s->has_used) {
        s->wexp = -1;
        s->used = 0;
    }
}

static int holder_idx(const sem *s, const char *tok) { return tok_idx(s->h, s->nh, sizeof s->h[0], tok); }
static int weight_idx(const sem *s, const char *tok) { return tok_idx(s->w, s->nw, sizeof s->w[0], tok); }

/* HGET weights tok, a missing one 0 (the scripts' "or 0") */
static int weight_of(const sem *s, const char *tok)
{
    int i = weight_idx(s, tok);
    return i < 0 ? 0 : s->w[i].weight;
}

/* HDEL weights tok; the last field gone, the key goes with its TTL */
static void hdel(sem *s, const char *tok)
{
    int i = weight_idx(s, tok);
    if (i >= 0) memmove(&s->w[i], &s->w[i + 1], (size_t)(--s->nw - i) * sizeof s->w[0]);
    if (!s->nw && !s->has_used) s->wexp = -1;
}

/* HSET weights tok w: a missing hash is made, with no TTL */
static void hset(sem *s, const char *tok, int w)
{
    int i = weight_idx(s, tok);
    if (i < 0) {
        if (s->nw == NL) abort(); /* one field a lease */
        if (!s->nw && !s->has_used) s->wexp = -1;
        i = s->nw++;
        snprintf(s->w[i].tok, sizeof s->w[i].tok, "%s", tok);
    }
    s->w[i].weight = w;
}

/* HINCRBY weights used d: the same */
static void hincr_used(sem *s, long long d)
{
    if (!s->nw && !s->has_used) s->wexp = -1;
    s->has_used = 1;
    s->used += d;
}

/* ZADD holders deadline tok: a missing set is made, with no TTL */
static void zadd(sem *s, const char *tok, int64_t deadline)
{
    int i = holder_idx(s, tok);
    if (i < 0) {
        if (s->nh == NL) abort();
        if (!s->nh) s->hexp = -1;
        i = s->nh++;
        snprintf(s->h[i].tok, sizeof s->h[i].tok, "%s", tok);
    }
    s->h[i].deadline = deadline;
}

/* ZREM holders tok; the last member gone, the key goes with its TTL */
static void zrem(sem *s, const char *tok)
{
    int i = holder_idx(s, tok);
    if (i >= 0) memmove(&s->h[i], &s->h[i + 1], (size_t)(--s->nh - i) * sizeof s->h[0]);
    if (!s->nh) s->hexp = -1;
}

/* prune(): the holders whose deadline has come give their weight back. */
static void prune(sem *s)
{
    long long sum = 0;
    int live = 0, dead = 0;
    for (int i = 0; i < s->nh; i++) {
        if (s->h[i].deadline > srv_now()) {
            s->h[live++] = s->h[i];
            continue;
        }
        sum += weight_of(s, s->h[i].tok);
        hdel(s, s->h[i].tok);
        dead++;
    }
    if (!dead) return;
    if (sum) hincr_used(s, -sum); /* nothing to give back creates no hash */
    s->nh = live;
    if (!s->nh) s->hexp = -1;
    model_reached.sem_pruned += dead;
}

/* keep(kind): the three keys live as long as the last deadline, or go
 * with the last holder. The deadline has the fast server's drift in it
 * already: the life is not shortened again. */
static void keep(sem *s, const char *key, const char *kind)
{
    if (!s->nh) {
        kv *e = find(key, F.now);
        if (e) e->used = 0;
        s->nw = s->has_used = 0;
        sem_expire(s);
        return;
    }
    int64_t last = s->h[0].deadline;
    for (int i = 1; i < s->nh; i++)
        if (s->h[i].deadline > last) last = s->h[i].deadline;
    int64_t life = last - srv_now() < 1 ? 1 : last - srv_now();
    char value[64];
    snprintf(value, sizeof value, "%s", kind); /* kind may be the key's own value */
    set_key(key, value, F.now + life);
    s->hexp = F.now + life;
    if (s->nw || s->has_used) s->wexp = F.now + life;
}

/* admit(): the holder's weight and the new sum, in one HSET (used is
 * what the script read of "used", 0 when missing). */
static void admit(sem *s, const char *tok, int weight, long long used)
{
    hset(s, tok, weight);
    s->has_used = 1;
    s->used = used + weight;
}

/* drop(tok, kind): a holder out, its weight given back (the scripts' "or
 * 0" for one gone), the three keys kept (gone with the last holder); 1 if
 * it was a holder. The Lua deletes the three keys at once when it was the
 * last one; keep() comes to the same. */
static int drop(sem *s, const char *key, const char *tok, const char *kind)
{
    int was = holder_idx(s, tok) >= 0;
    if (was) {
        zrem(s, tok);
        int w = weight_of(s, tok);
        hdel(s, tok);
        hincr_used(s, -w);
    }
    keep(s, key, kind);
    return was;
}

/* A lease that held on a semaphore's count (a key of it lost, the
 * server's clock stepped forward) may still be held until what its
 * confirmations executed before could give (a single Redis cannot do
 * better), on the link those were confirmed on. */
void excuse(lease *l)
{
    if (l->exec_until <= l->exempt_until) return;
    l->exempt_until = l->exec_until;
    l->exempt_link = links;
}

/* The model's server counts l now: the lock key is its kind, its token
 * a holder whose deadline has not come, and a semaphore's weight in the
 * hash. A shared holder's weight is left out: what keeps an exclusive
 * holder out is the kind, which keep() writes while the set has any
 * holder (a holder whose weight was lost is not renewed, and so is lost
 * within its TTL, but it excludes until then). */
int holder_counts(const lease *l)
{
    kv *e = find(l->key, F.now);
    sem *s = &S[l->res];
    sem_expire(s);
    int h = holder_idx(s, l->token);
    if (!e || h < 0 || s->h[h].deadline <= srv_now()) return 0;
    if (l->shared) return is_shared_kind(e->val);
    return kind_limit(e->val) == l->limit && weight_of(s, l->token) == l->weight;
}

/* tok holds a permit of resource res that the server has not let go. */
int sem_holder_live(int res, const char *tok)
{
    sem *s = &S[res];
    sem_expire(s);
    int h = holder_idx(s, tok);
    return h >= 0 && s->h[h].deadline > srv_now();
}

/* The server's TIME is stepped by d ms (a wall clock). The queues'
 * entries and the holders (a semaphore's, shared ones) are timed by it,
 * and so are their three keys, whose PX keep() set to the last holder's
 * deadline (on a server PX and TIME are one clock: the kind never goes
 * while a holder lives). The mutex's keys keep our clock, as they always
 * have here: the contract (man 3 redlease, TIMING) assumes a server clock
 * that is not stepped. Stepped forward, holders go early: what was
 * confirmed before the step is excused, as after a key lost. */
void step_server_clock(int64_t d)
{
    srv_skew += d;
    for (int r = 0; r < 2; r++) {
        char k[16];
        snprintf(k, sizeof k, "lock:{r%d}", r);
        kv *e = find(k, F.now);
        if (e && is_kind(e->val)) e->exp -= d;
        sem *s = &S[r];
        sem_expire(s);
        if (s->nh && s->hexp >= 0) s->hexp -= d;
        if ((s->nw || s->has_used) && s->wexp >= 0) s->wexp -= d;
    }
    for (int i = 0; d > 0 && i < NL; i++)
        if (lease_active(&L[i]) && in_holders(&L[i])) excuse(&L[i]);
}

/* The first moment after now, and before until, at which a key expires
 * or a holder (a semaphore's, a shared one) reaches its deadline: where
 * what held() says could first be wrong. */
int64_t next_change(int64_t until)
{
    int64_t next = until;
    for (int i = 0; i < 16; i++)
        if (db[i].used && db[i].exp > F.now && db[i].exp < next) next = db[i].exp;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < S[r].nh; i++) {
            int64_t at = S[r].h[i].deadline - srv_skew;
            if (at > F.now && at < next) next = at;
        }
    return next;
}

/* ------------------------------------------------------- commands run */

/* Replies fixed at execution, delivered later. Commands F.head..xh-1 of
 * the fake's queue are executed and not delivered; xh.. are not executed. */
enum { REP_OK, REP_NIL, REP_INT, REP_ERR };
typedef struct reply {
    int type;
    long long v;
    const char *err;
} reply;
static reply rep[FAKE_MAX_CMDS];
static char kind_text[FAKE_MAX_CMDS][48]; /* rep[i].err when it says what a resource is */
int xh;

const char *const errors[] = {
    "OOM command not allowed when used memory > 'maxmemory'.",
    "LOADING Redis is loading the dataset in memory",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "READONLY You can't write against a read only replica.",
    "NOSCRIPT No matching script. Please use EVAL.", /* last: only for EVALSHA */
};
int next_error; /* 1 + index in errors: the next command executed fails so */

/* fake_sha(i), computed once (it hashes the script's text each time). */
static const char *sha_of(int i)
{
    static char sha[RDL_SCRIPT_COUNT][41];
    if (!sha[i][0]) snprintf(sha[i], sizeof sha[i], "%s", fake_sha(i));
    return sha[i];
}

/* Which script a command runs (-1 for SET and anything else). */
static int script_of(const fake_cmd *c)
{
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    if (!sha && strcmp(c->argv[0], "EVAL") != 0) return -1;
    for (int i = 0; i < RDL_SCRIPT_COUNT; i++)
        if (strcmp(c->argv[1], sha ? sha_of(i) : rdl_script_src[i]) == 0) return i;
    abort(); /* the library only runs its own scripts */
}

static const char *token_of(const fake_cmd *c, int s)
{
    return s < 0 ? c->argv[2] : c->argv[s == RDL_SCRIPT_ACQUIRE_FENCED ? 5 : 4];
}

int pending_exec(void)
{
    if (xh < F.head) xh = F.head; /* a broken link answered them all */
    return xh < F.ncmds;
}

/* A command as Redis runs it: the script it is, or the conditional
 * command (DELIFEQ, SET IFEQ) doing that script's work, and its key,
 * token and TTL; for the queue's scripts also their other arguments. */
typedef struct view {
    int s;            /* RDL_SCRIPT_* or -1 (SET NX PX) */
    int native;
    const char *key, *token, *px;
    const char *value; /* what a mutex's acquire writes, a native command compares:
                          "TOKEN RECORD" (src/identity.h) */
    const char *life, *claim, *ch, *order; /* the queue's (order also the release's) */
    const char *weight, *limit, *capacity; /* a semaphore's acquire (limit also the holders'
                                              renewal: "0" a shared holder's) */
    int fenced;
    int probe; /* the release's two-key form: -1 when there is a queue */
} view;

static int arg_is(const fake_cmd *c, int i, const char *s)
{
    return i < c->argc && strcmp(c->argv[i], s) == 0;
}

/* argv[i] is the key of that name beside the lock key argv[3]. */
static int beside(const fake_cmd *c, int i, const char *name)
{
    char k[80];
    snprintf(k, sizeof k, "%s:%s", c->argv[3], name);
    return i < c->argc && strcmp(c->argv[i], k) == 0;
}

/* The queue's scripts: EVALSHA sha numkeys key queue waiters [fence]
 * token ttl life claim channel order [counter_ttl]; the release: EVALSHA
 * sha 3 key queue waiters token order, or its probe: EVALSHA sha 2 key
 * queue token. */
static view queue_view(const fake_cmd *c, int s)
{
    int acq = s == RDL_SCRIPT_QUEUE_ACQUIRE;
    int nk = atoi(c->argv[2]);
    if (!acq && nk == 2 && c->argc == 6) {
        if (!beside(c, 4, "queue")) abort();
        model_reached.release_probes++;
        return (view){.s = s, .key = c->argv[3], .token = c->argv[5], .probe = 1};
    }
    if (acq ? !((nk == 3 && c->argc == 13) || (nk == 4 && c->argc == 15)) : !(nk == 3 && c->argc == 8))
        abort(); /* not the layout this model knows */
    if (!beside(c, 4, "queue") || !beside(c, 5, "waiters")) abort();
    view v = {.s = s, .key = c->argv[3], .token = c->argv[3 + nk], .fenced = nk == 4};
    if (acq) {
        v.px = c->argv[4 + nk];
        v.life = c->argv[5 + nk];
        v.claim = c->argv[6 + nk];
        v.ch = c->argv[7 + nk];
        v.order = c->argv[8 + nk];
    } else {
        v.order = c->argv[7];
    }
    if (strcmp(v.order, "1") != 0 && strcmp(v.order, "0") != 0) abort();
    return v;
}

/* A semaphore's scripts: EVALSHA sha numkeys kind holders weights, then
 * the queue's two keys but for the renewal [fence] token, then the
 * acquire's weight limit capacity ttl life claim channel [counter_ttl], the
 * renewal's limit ttl, nothing more for the release. */
static view sem_view(const fake_cmd *c, int s)
{
    int nk = atoi(c->argv[2]);
    int want = s == RDL_SCRIPT_SEM_RENEW ? 3 : 5;
    int fenced = s == RDL_SCRIPT_SEM_ACQUIRE && nk == 6;
    int nargs = s == RDL_SCRIPT_SEM_ACQUIRE ? 8 + fenced : s == RDL_SCRIPT_SEM_RENEW ? 2 : 0; /* + record */
    if (nk != want + fenced || c->argc != 4 + nk + nargs) abort(); /* not the layout this model knows */
    if (!beside(c, 4, "holders") || !beside(c, 5, "weights")) abort();
    if (want == 5 && (!beside(c, 6, "queue") || !beside(c, 7, "waiters"))) abort();
    if (fenced && !beside(c, 8, "fence")) abort();
    view v = {.s = s, .key = c->argv[3], .token = c->argv[3 + nk], .fenced = fenced};
    if (s == RDL_SCRIPT_SEM_ACQUIRE) {
        v.weight = c->argv[4 + nk];
        v.limit = c->argv[5 + nk];
        v.capacity = c->argv[6 + nk];
        v.px = c->argv[7 + nk];
        v.life = c->argv[8 + nk];
        v.claim = c->argv[9 + nk];
        v.ch = c->argv[10 + nk];
        if (atoi(v.weight) < 1 || atoi(v.weight) > atoi(v.capacity) || atoi(v.capacity) > atoi(v.limit)) abort();
    } else if (s == RDL_SCRIPT_SEM_RENEW) {
        v.limit = c->argv[4 + nk];
        v.px = c->argv[5 + nk];
    }
    return v;
}

/* A shared holder's acquire and release: EVALSHA sha numkeys kind queue
 * waiters holders weights [fence] token, then the acquire's ttl life claim
 * channel [counter_ttl], nothing more for the release. Its renewal is the
 * semaphore's, with limit "0" (sem_view). */
static view shared_view(const fake_cmd *c, int s)
{
    int nk = atoi(c->argv[2]);
    int acq = s == RDL_SCRIPT_SHARED_ACQUIRE;
    int fenced = acq && nk == 6;
    int nargs = acq ? 6 + fenced : 1; /* an acquire's record last */
    if (nk != 5 + fenced || c->argc != 4 + nk + nargs) abort(); /* not the layout this model knows */
    /* one server: its queue is in order, and a free resource is handed over */
    if (strcmp(c->argv[(acq ? 8 : 4) + nk], "1") != 0) abort();
    if (!beside(c, 4, "queue") || !beside(c, 5, "waiters") || !beside(c, 6, "holders") || !beside(c, 7, "weights"))
        abort();
    if (fenced && !beside(c, 8, "fence")) abort();
    view v = {.s = s, .key = c->argv[3], .token = c->argv[3 + nk], .fenced = fenced};
    if (acq) {
        v.px = c->argv[4 + nk];
        v.life = c->argv[5 + nk];
        v.claim = c->argv[6 + nk];
        v.ch = c->argv[7 + nk];
    }
    return v;
}

static int is_sem(int s)
{
    return s == RDL_SCRIPT_SEM_ACQUIRE || s == RDL_SCRIPT_SEM_RENEW || s == RDL_SCRIPT_SEM_RELEASE;
}

static int is_shared(int s) { return s == RDL_SCRIPT_SHARED_ACQUIRE || s == RDL_SCRIPT_SHARED_RELEASE; }

/* The kind of lease a command is for: 0 a mutex's, 1 a semaphore's, 2 a
 * shared holder's (the renewal says by its limit). */
static int kind_of(const view *v)
{
    if (v->s == RDL_SCRIPT_SEM_RENEW) return strcmp(v->limit, "0") == 0 ? 2 : 1;
    return is_shared(v->s) ? 2 : is_sem(v->s);
}

/* The token a lock value starts with (the commands that send the value
 * whole); one view at a time is read. */
static const char *token_in(const char *value)
{
    static char tok[RDL_TOKEN_LEN + 1];
    snprintf(tok, sizeof tok, "%s", value);
    return tok;
}

/* An acquire's record, its last argument: "PID AT 0 HOST LABEL", this
 * process's, from no later than the send by the fake server's clock, no
 * fence yet (every client the model runs has the same: two holders never
 * one for it). */
static void check_record(const fake_cmd *c, const char *rec)
{
    rdl_record r;
    if (rdl_identity_parse(rec, strlen(rec), &r) || r.pid != (int64_t)getpid() || r.at <= 0 ||
        r.at > FAKE_SERVER_CLOCK_MS + c->sent_at || r.fence != 0)
        violation("an acquire's record is not this process's, or not from its send: \"%s\" (t=%lld)", rec,
                  (long long)F.now);
}

/* The value an acquire script writes to a mutex's key: its token and
 * record, with the fence it minted written in (0: none). */
static const char *value_of(const fake_cmd *c, const char *token, long long fence)
{
    static char value[RDL_VALUE_MAX + 1];
    const char *rec = c->argv[c->argc - 1];
    check_record(c, rec);
    const char *after = strchr(strchr(rec, ' ') + 1, ' '); /* " 0 HOST LABEL" */
    snprintf(value, sizeof value, "%s %.*s %lld%s", token, (int)(after - rec), rec, fence, after + 2);
    return value;
}

static view view_of(const fake_cmd *c)
{
    if (arg_is(c, 0, "DELIFEQ") && c->argc == 3)
        return (view){.s = RDL_SCRIPT_RELEASE, .native = 1, .key = c->argv[1], .token = token_in(c->argv[2]),
                      .value = c->argv[2]};
    if (arg_is(c, 0, "DELEX") && c->argc == 4 && arg_is(c, 2, "IFEQ"))
        return (view){.s = RDL_SCRIPT_RELEASE, .native = 1, .key = c->argv[1], .token = token_in(c->argv[3]),
                      .value = c->argv[3]};
    if (arg_is(c, 0, "SET") && c->argc == 7 && arg_is(c, 3, "IFEQ") && arg_is(c, 5, "PX")) {
        /* compared with IFEQ's operand; the library never changes the value */
        if (strcmp(c->argv[2], c->argv[4]) != 0) abort();
        return (view){.s = RDL_SCRIPT_RENEW, .native = 1, .key = c->argv[1], .token = token_in(c->argv[4]),
                      .value = c->argv[4], .px = c->argv[6]};
    }
    int s = script_of(c);
    if (s < 0) {
        if (!(arg_is(c, 0, "SET") && c->argc == 6 && arg_is(c, 3, "NX") && arg_is(c, 4, "PX")))
            abort(); /* nothing else is sent after the handshake */
        if (strlen(c->argv[2]) <= RDL_TOKEN_LEN + 1 || c->argv[2][RDL_TOKEN_LEN] != ' ') abort();
        check_record(c, c->argv[2] + RDL_TOKEN_LEN + 1);
        return (view){.s = -1, .key = c->argv[1], .token = token_in(c->argv[2]), .value = c->argv[2],
                      .px = c->argv[5]};
    }
    view v;
    if (s == RDL_SCRIPT_QUEUE_ACQUIRE || s == RDL_SCRIPT_QUEUE_RELEASE)
        v = queue_view(c, s);
    else if (is_sem(s))
        v = sem_view(c, s);
    else if (is_shared(s))
        v = shared_view(c, s);
    else
        v = (view){.s = s, .key = c->argv[3], .token = token_of(c, s),
                   .px = s == RDL_SCRIPT_RELEASE ? NULL : c->argv[s == RDL_SCRIPT_ACQUIRE_FENCED ? 6 : 5]};
    if (s == RDL_SCRIPT_ACQUIRE || s == RDL_SCRIPT_ACQUIRE_FENCED || s == RDL_SCRIPT_QUEUE_ACQUIRE ||
        s == RDL_SCRIPT_SEM_ACQUIRE || s == RDL_SCRIPT_SHARED_ACQUIRE)
        v.value = value_of(c, v.token, 0); /* a fenced one's is written where it mints */
    return v;
}

static int is_delete(int s)
{
    return s == RDL_SCRIPT_RELEASE || s == RDL_SCRIPT_QUEUE_RELEASE || s == RDL_SCRIPT_SEM_RELEASE ||
           s == RDL_SCRIPT_SHARED_RELEASE;
}

static int is_acquire(int s)
{
    return s < 0 || s == RDL_SCRIPT_ACQUIRE || s == RDL_SCRIPT_ACQUIRE_FENCED || s == RDL_SCRIPT_QUEUE_ACQUIRE ||
           s == RDL_SCRIPT_SEM_ACQUIRE || s == RDL_SCRIPT_SHARED_ACQUIRE;
}

/* The error an acquire answers when the lock key holds val, another kind
 * than it asks for: the mutex's scripts and a shared holder's (LUA_KIND)
 * name a semaphore, a semaphore's names what it found. */
static void kind_error(reply *r, const char *val)
{
    char *text = kind_text[r - rep];
    if (kind_limit(val))
        snprintf(text, sizeof kind_text[0], "KIND a semaphore of %d permits", kind_limit(val));
    else if (is_shared_kind(val))
        snprintf(text, sizeof kind_text[0], "KIND shared and exclusive holders");
    else
        snprintf(text, sizeof kind_text[0], "KIND a mutex");
    *r = (reply){REP_ERR, 0, text};
}

/* RDL_SCRIPT_QUEUE_ACQUIRE */
static void queue_acquire(const fake_cmd *c, const view *v, reply *r)
{
    queue *q = &Q[res_of(v->key)];
    const char *tok = v->token;
    kv *e = find(v->key, F.now);
    int take = 0;
    if (e && owns_val(e->val, tok)) {
        take = 1;
    } else if (e && kind_limit(e->val)) {
        kind_error(r, e->val);
        return;
    } else if (!e) {
        int h;
        if (strcmp(v->order, "1") != 0 || (h = head(q)) < 0 || strcmp(q->w[h].tok, tok) == 0)
            take = 1;
        else
            hand_over(q, v->key); /* a lock that expired without a release */
    }
    if (take) {
        qexpire(q);
        int placed = z_idx(q, tok) >= 0 || w_idx(q, tok) >= 0;
        long long fence = v->fenced ? ++fence_ctr : 1;
        set_key(v->key, v->fenced ? value_of(c, tok, fence) : v->value, expiry(v->px));
        if (strcmp(v->order, "1") != 0) { /* in no order the entry stays (or joins) */
            if (v->ch[0]) join(q, tok, atoll(v->life), atoll(v->claim), v->ch);
        } else if (placed) {
            leave(q, tok);
        }
        confirmed(tok, c->sent_at);
        model_reached.queue_takes++;
        *r = (reply){REP_INT, fence, NULL};
        return;
    }
    if (e && is_shared_kind(e->val)) model_reached.excl_on_shared++; /* other_kind() is nil: it waits */
    if (v->ch[0]) join(q, tok, atoll(v->life), atoll(v->claim), v->ch);
    kv *k = find(v->key, F.now);
    *r = (reply){REP_INT, k ? -(k->exp - F.now + 1) : 0, NULL};
}

/* RDL_SCRIPT_QUEUE_RELEASE */
static void queue_release(const view *v, reply *r)
{
    queue *q = &Q[res_of(v->key)];
    const char *tok = v->token;
    kv *e = find(v->key, F.now);
    int ours = e && owns_val(e->val, tok);
    qexpire(q);
    if (!q->nz) { /* nobody queued: the plain compare-and-delete */
        if (ours) e->used = 0;
        model_reached.fast_releases++;
        *r = (reply){REP_INT, ours, NULL};
        return;
    }
    if (v->probe) { /* a queue: nothing changed, the whole release follows */
        model_reached.probes_refused++;
        *r = (reply){REP_INT, -1, NULL};
        return;
    }
    leave(q, tok);
    if (e && is_shared_kind(e->val)) remind_head(q, 1); /* a shared waiter may enter beside the holders */
    if (e && !ours) {
        *r = (reply){REP_INT, 0, NULL};
        return;
    }
    if (e) e->used = 0;
    if (strcmp(v->order, "1") == 0) {
        hand_over(q, v->key);
    } else {
        int h = head(q);
        if (h >= 0) {
            char text[128];
            snprintf(text, sizeof text, "c %s 0", q->w[h].tok);
            publish(chan(&q->w[h]), text);
            model_reached.unordered_wakes++;
        }
    }
    *r = (reply){REP_INT, e ? 1 : 0, NULL};
}

/* RDL_SCRIPT_SEM_ACQUIRE: the kind first, before anything is written;
 * then admitted while the weights held, its own counted once (a token
 * of its own with no weight is a newcomer), stay within the limit; full:
 * -(ms until the first holder's deadline + 1). */
static void sem_acquire(const fake_cmd *c, const view *v, reply *r)
{
    sem *s = &S[res_of(v->key)];
    const char *tok = v->token;
    char kind[32];
    snprintf(kind, sizeof kind, "semaphore %s", v->limit);
    kv *e = find(v->key, F.now);
    if (e && strcmp(e->val, kind) != 0) {
        kind_error(r, e->val);
        return;
    }
    sem_expire(s);
    prune(s);
    int weight = atoi(v->weight);
    if (holder_idx(s, tok) < 0 || weight_idx(s, tok) < 0) {
        long long used = s->has_used ? s->used : 0;
        queue *q = &Q[res_of(v->key)];
        int h = head(q); /* strictly in order: nobody past a live waiter ahead */
        int ahead = h >= 0 && strcmp(q->w[h].tok, tok) != 0;
        if (ahead || used + weight > atoi(v->capacity)) {
            if (v->ch[0]) { /* a semaphore's entry: its channel marked "}" */
                char ch[100];
                snprintf(ch, sizeof ch, "}%s", v->ch);
                join(q, tok, atoll(v->life), atoll(v->claim), ch);
            }
            if (ahead) model_reached.sem_behind++;
            int64_t first = 0;
            for (int i = 0; i < s->nh; i++)
                if (i == 0 || s->h[i].deadline < first) first = s->h[i].deadline;
            int64_t left = first - srv_now() > 0 ? first - srv_now() : 0;
            model_reached.sem_full++;
            *r = (reply){REP_INT, s->nh ? -(left + 1) : 0, NULL}; /* 0: no holder, nothing known */
            return;
        }
        admit(s, tok, weight, used);
        if (h >= 0) { /* it was the head */
            leave(q, tok);
            if (used + weight < atoi(v->capacity)) model_reached.sem_wakes += remind_head(q, 0);
        }
    } else {
        model_reached.sem_reclaimed++; /* an earlier attempt of it was admitted */
    }
    long long fence = v->fenced ? ++fence_ctr : 1;
    zadd(s, tok, srv_deadline(v->px));
    keep(s, v->key, kind);
    confirmed(tok, c->sent_at);
    model_reached.sem_admitted++;
    *r = (reply){REP_INT, fence, NULL};
}

/* RDL_SCRIPT_SEM_RENEW, strict: a token that is no holder any more, has
 * no weight, or holds another kind now (a semaphore of another limit, or
 * not shared: limit "0" is a shared holder's renewal), is never put
 * back. */
static void sem_renew(const fake_cmd *c, const view *v, reply *r)
{
    sem *s = &S[res_of(v->key)];
    kv *e = find(v->key, F.now);
    char kind[32] = "shared";
    if (strcmp(v->limit, "0") != 0) snprintf(kind, sizeof kind, "semaphore %s", v->limit);
    *r = (reply){REP_INT, 0, NULL};
    if (!e || strcmp(e->val, kind) != 0) return;
    sem_expire(s);
    prune(s);
    if (holder_idx(s, v->token) < 0 || weight_idx(s, v->token) < 0) return;
    zadd(s, v->token, srv_deadline(v->px)); /* XX: it is there */
    keep(s, v->key, kind);
    confirmed(v->token, c->sent_at);
    r->v = 1;
}

/* RDL_SCRIPT_SEM_RELEASE: out of the queue, the holder's weight given
 * back, the queue's head woken. */
static void sem_release(const view *v, reply *r)
{
    sem *s = &S[res_of(v->key)];
    queue *q = &Q[res_of(v->key)];
    qexpire(q);
    int queued = q->nz > 0; /* EXISTS of the queue's order */
    if (queued) leave(q, v->token);
    kv *e = find(v->key, F.now);
    *r = (reply){REP_INT, 0, NULL};
    if (!e || !kind_limit(e->val)) {
        lease *l = by_token_any(v->token);
        if (l) l->release_kindless = 1;
    } else {
        sem_expire(s);
        prune(s);
        r->v = drop(s, v->key, v->token, e->val);
        model_reached.sem_released += r->v;
    }
    if (queued) model_reached.sem_wakes += remind_head(q, 0);
}

/* A shared acquire that may not enter: it joins the queue as a shared
 * waiter (a channel of "" does not), hands a free resource (free) to the
 * head, and learns the lock key's TTL. */
static void shared_wait(const view *v, reply *r, int free)
{
    queue *q = &Q[res_of(v->key)];
    if (v->ch[0]) {
        char ch[100];
        snprintf(ch, sizeof ch, "{%s", v->ch);
        join(q, v->token, atoll(v->life), atoll(v->claim), ch);
    }
    /* a free resource goes to the head after this one joined (a shared
     * head reminded that never comes then tells it) */
    if (free && hand_over(q, v->key)) model_reached.shared_handed++;
    kv *k = find(v->key, F.now);
    *r = (reply){REP_INT, k ? -(k->exp - F.now + 1) : 0, NULL};
}

/* RDL_SCRIPT_SHARED_ACQUIRE: a semaphore refused (KIND), an exclusive
 * holder waited for; beside other shared holders, admitted strictly in
 * the queue's order: a newcomer waits behind a live waiter ahead (handing
 * a resource nobody holds to it), and one admitted from the head reminds
 * the next when that one is shared too. Its own token is ours, whatever
 * its weight (the newcomer's test is the set's alone), its deadline
 * restarted. */
static void shared_acquire(const fake_cmd *c, const view *v, reply *r)
{
    sem *s = &S[res_of(v->key)];
    queue *q = &Q[res_of(v->key)];
    const char *tok = v->token;
    kv *e = find(v->key, F.now);
    if (e && !is_shared_kind(e->val)) {
        if (kind_limit(e->val)) {
            kind_error(r, e->val);
            return;
        }
        model_reached.shared_busy++; /* an exclusive holder's token (ours, a stranger's, another's) */
        shared_wait(v, r, 0);
        return;
    }
    sem_expire(s);
    prune(s);
    int newcomer = holder_idx(s, tok) < 0 || weight_idx(s, tok) < 0; /* its weight gone: a newcomer */
    int h = -1;
    if (newcomer) {
        h = head(q);
        if (h >= 0 && strcmp(q->w[h].tok, tok) != 0) {
            if (!shared_entry(&q->w[h])) model_reached.shared_behind++;
            shared_wait(v, r, !s->nh);
            return;
        }
    } else {
        model_reached.shared_reclaimed++; /* an earlier attempt of it was admitted */
    }
    long long fence = v->fenced ? ++fence_ctr : 1;
    if (newcomer) {
        admit(s, tok, 1, s->has_used ? s->used : 0);
        if (h >= 0) { /* it was the head */
            leave(q, tok);
            remind_head(q, 1);
        }
    }
    zadd(s, tok, srv_deadline(v->px));
    keep(s, v->key, "shared");
    confirmed(tok, c->sent_at);
    model_reached.shared_admitted++;
    *r = (reply){REP_INT, fence, NULL};
}

/* RDL_SCRIPT_SHARED_RELEASE: out of the queue, out of the holders (while
 * the kind is shared); a resource left free, by this release or before
 * it, goes to the queue's head (a shared head is reminded). */
static void shared_release(const view *v, reply *r)
{
    sem *s = &S[res_of(v->key)];
    queue *q = &Q[res_of(v->key)];
    kv *e = find(v->key, F.now);
    qexpire(q);
    if (q->nz) leave(q, v->token); /* EXISTS of the queue's order */
    *r = (reply){REP_INT, 0, NULL};
    if (e && is_shared_kind(e->val)) {
        sem_expire(s);
        prune(s);
        r->v = drop(s, v->key, v->token, "shared");
        model_reached.shared_released += r->v;
    } else {
        lease *l = by_token_any(v->token);
        if (l) l->release_kindless = 1;
    }
    if (!find(v->key, F.now) && hand_over(q, v->key)) model_reached.shared_handed++;
}

/* Redis runs the oldest command not run yet, now. */
void execute(void)
{
    if (!pending_exec()) return;
    const fake_cmd *c = &F.cmds[xh];
    reply *r = &rep[xh++];
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    view v = view_of(c);
    const lease *sender = by_token_any(v.token);
    if (sender && kind_of(&v) != (sender->shared ? 2 : sender->limit != 0))
        violation("lease %s (limit %d, shared %d) sent a command of another kind", sender->token, sender->limit,
                  sender->shared);
    else if (sender && v.limit && atoi(v.limit) != sender->limit)
        violation("lease %s (limit %d) sent a command for limit %s", sender->token, sender->limit, v.limit);
    if (next_error) {
        int e = next_error - 1;
        next_error = 0;
        if (e == N_ERRORS - 1 && !sha) e = 0;
        *r = (reply){REP_ERR, 0, errors[e]};
        if (is_delete(v.s)) /* a delete refused: the key (and an entry) may stay */
            for (int i = 0; i < NL; i++)
                if (strcmp(L[i].token, v.token) == 0) L[i].delete_failed = 1;
        model_reached.error_replies++;
        return;
    }
    if (v.native && native_refused) { /* not run: the library sends the script */
        *r = (reply){REP_ERR, 0, "ERR unknown command 'DELIFEQ', with args beginning with: "};
        model_reached.native_refused++;
        return;
    }
    if (v.native) model_reached.native_commands++;
    if (v.s < 0) {
        kv *e = find(c->argv[1], F.now);
        if (e) {
            if (is_shared_kind(e->val)) model_reached.excl_on_shared++;
            *r = (reply){REP_NIL, 0, NULL};
        } else {
            put(c->argv[1], v.value, expiry(c->argv[5]));
            confirmed(v.token, c->sent_at);
            *r = (reply){REP_OK, 0, NULL};
        }
        return;
    }
    if (sha && noscript_mode) {
        *r = (reply){REP_ERR, 0, errors[N_ERRORS - 1]};
        return;
    }
    int s = v.s;
    const char *token = v.token;
    if (is_delete(s)) {
        lease *l = by_token_any(token);
        if (l && l->failed_ev) l->drop_ran = 1;
    }
    if (s == RDL_SCRIPT_QUEUE_ACQUIRE) {
        queue_acquire(c, &v, r);
        return;
    }
    if (s == RDL_SCRIPT_SEM_ACQUIRE) {
        sem_acquire(c, &v, r);
        return;
    }
    if (s == RDL_SCRIPT_SEM_RENEW) {
        sem_renew(c, &v, r);
        return;
    }
    if (s == RDL_SCRIPT_SHARED_ACQUIRE) {
        shared_acquire(c, &v, r);
        return;
    }
    if (s == RDL_SCRIPT_QUEUE_RELEASE || s == RDL_SCRIPT_SEM_RELEASE || s == RDL_SCRIPT_SHARED_RELEASE) {
        if (s == RDL_SCRIPT_QUEUE_RELEASE)
            queue_release(&v, r);
        else if (s == RDL_SCRIPT_SEM_RELEASE)
            sem_release(&v, r);
        else
            shared_release(&v, r);
        lease *l = by_token_any(token);
        if (l && r->type == REP_INT && r->v == 1) note_deleted(l);
        return;
    }
    kv *e = find(v.key, F.now);
    /* the scripts go by the token, the server's own commands by the whole value */
    int ours = e && (v.native ? strcmp(e->val, v.value) == 0 : owns_val(e->val, token));
    if (s == RDL_SCRIPT_RENEW) {
        if (ours) {
            e->exp = expiry(v.px);
            confirmed(token, c->sent_at);
        }
        if (v.native)
            *r = (reply){ours ? REP_OK : REP_NIL, 0, NULL}; /* SET IFEQ */
        else
            *r = (reply){REP_INT, ours, NULL};
    } else if (s == RDL_SCRIPT_RELEASE) {
        if (ours) e->used = 0;
        *r = (reply){REP_INT, ours, NULL};
        lease *l = by_token_any(token);
        if (l && ours) note_deleted(l);
    } else if (e && kind_limit(e->val)) { /* an acquire script, on a semaphore (LUA_KIND) */
        kind_error(r, e->val);
    } else if (e && !ours) { /* an acquire script, held by another (shared holders: other_kind() is nil) */
        if (is_shared_kind(e->val)) model_reached.excl_on_shared++;
        *r = (reply){REP_INT, 0, NULL};
    } else { /* an acquire script: the key was free, or ours from an earlier attempt */
        long long fence = s == RDL_SCRIPT_ACQUIRE_FENCED ? ++fence_ctr : 1;
        set_key(v.key, s == RDL_SCRIPT_ACQUIRE_FENCED ? value_of(c, token, fence) : v.value, expiry(v.px));
        confirmed(token, c->sent_at);
        *r = (reply){REP_INT, fence, NULL};
    }
}

/* Notes what a reply tells its lease, before the library reads it. */
static void note_delivery(const fake_cmd *c, const reply *r)
{
    view v = view_of(c);
    int s = v.s;
    lease *l = by_token(v.token);
    if (!l) return;
    int ok = r->type == REP_OK || (r->type == REP_INT && r->v > 0);
    if (is_acquire(s)) {
        if (r->type == REP_ERR && strncmp(r->err, "KIND", 4) == 0) {
            l->saw_kind = 1;
            /* to its latest attempt, not failed, not timed out (timed from
             * the attempt's start); an EVAL is left out: the NOSCRIPT
             * re-send of whichever request, an old attempt's too. Which
             * request the attempt waits for is the lock's own (lk->req),
             * not told by the times: an attempt parked with the link down
             * and timed out during a pause is written on the reconnect,
             * in the same ms as the next attempt, and then goes stale. */
            if (!l->acq_done && !l->attempt_failed && strcmp(c->argv[0], "EVAL") != 0 && l->lk &&
                l->lk->req == c->req && F.now < l->attempt_at + command_timeout)
                l->kind_ends = 1;
            model_reached.kind_refused[l->shared ? 2 : l->limit != 0]++;
            if (l->limit && strstr(r->err, "shared")) model_reached.sem_on_shared++;
        } else if (r->type == REP_ERR) {
            l->saw_acquire_error = 1;
        }
        if (r->type == REP_NIL || (r->type == REP_INT && r->v <= 0)) l->saw_busy = 1;
        if (ok && F.now >= contract_until(c->sent_at, l->ttl)) model_reached.late_acquire_ok++;
    } else if (s == RDL_SCRIPT_RENEW || s == RDL_SCRIPT_SEM_RENEW) {
        /* SET IFEQ's nil compares the whole value: the library asks the
         * script (the token) again before it takes it for "not ours" */
        if (!v.native && ((r->type == REP_INT && r->v == 0) || r->type == REP_NIL)) {
            l->saw_renew_zero = 1;
            l->exempt_until = 0; /* told the key is not ours: no excuse left */
        }
        if (ok && l->deadline >= 0 && F.now >= l->deadline) model_reached.late_renewal++;
    }
}

/* The library reads the oldest executed reply. */
void deliver(void)
{
    const fake_cmd *c = fake_peek(&F);
    if (!c || F.head >= xh) return;
    const reply *r = &rep[F.head];
    note_delivery(c, r);
    switch (r->type) {
    case REP_OK: fake_reply_status(&F, "OK"); break;
    case REP_NIL: fake_reply_nil(&F); break;
    case REP_INT: fake_reply_int(&F, r->v); break;
    default: fake_reply_err(&F, r->err); break;
    }
}

/* The oldest command sent is answered at once (run first if need be). */
void execute_and_deliver(void)
{
    pending_exec();
    if (F.head == xh) execute();
    deliver();
}

/* The connect completes and Redis answers the handshake (PING) at once;
 * what the event hook sends meanwhile waits its turn. */
void reconnect(void)
{
    fake_connect_raw(&F);
    links++;
    fake_cmd *c;
    /* Each link may reach another server: one with DELIFEQ and SET IFEQ
     * or not, one that says so and then refuses them. */
    native = (int[]){0, RDL_NATIVE_DELIFEQ, RDL_NATIVE_DELEX}[R(3)];
    native_refused = native && R(4) == 0;
    while ((c = fake_peek(&F)) && (strcmp(c->argv[0], "PING") == 0 || strcmp(c->argv[0], "COMMAND") == 0 ||
                                   strcmp(c->argv[0], "TIME") == 0 || strcmp(c->argv[0], "EVAL") == 0)) {
        if (strcmp(c->argv[0], "PING") == 0)
            fake_reply_status(&F, "PONG");
        else if (strcmp(c->argv[0], "TIME") == 0)
            fake_reply_time(&F);
        else if (strcmp(c->argv[0], "EVAL") == 0)
            fake_reply_int(&F, 1); /* the handshake's: scripts run */
        else
            fake_reply_probe(&F, native);
    }
    fake_run(&F);
}

/* Keys lost: a restart without persistence (all keys, the script cache,
 * maybe the links) or the eviction of one key: a lock key (a mutex's, or
 * the kind of a semaphore or of shared holders), a queue's order or its
 * entries, a set of holders or their weights. A lease whose key or count
 * goes may still be held until what its confirmations executed before
 * could give. */
void wipe(void)
{
    /* 0: restart; 1/2: lock:{r0}/{r1}; 3/4: their :queue; 5/6: their :waiters;
     * 7/8: their :holders; 9/10: their :weights */
    int which = R(11);
    int res = (which - 1) % 2;
    model_reached.wipes++;
    if (which >= 3 && which < 7) {
        queue *q = &Q[res];
        if (which < 5)
            q->nz = 0;
        else
            q->nw = 0;
        qexpire(q);
        return;
    }
    if (which >= 7) {
        sem *s = &S[res];
        sem_expire(s);
        if (which < 9 ? !s->nh : !s->nw && !s->has_used) return;
        if (which < 9)
            s->nh = 0;
        else
            s->nw = s->has_used = 0;
        sem_expire(s);
    } else {
        for (int i = 0; i < 16; i++)
            if (db[i].used && (which == 0 || res_of(db[i].key) == res)) db[i].used = 0;
    }
    for (int i = 0; i < NL; i++)
        if (lease_active(&L[i]) && (which == 0 || L[i].res == res)) excuse(&L[i]);
    if (which == 0) {
        memset(Q, 0, sizeof Q);
        qexpire(&Q[0]);
        qexpire(&Q[1]);
        memset(S, 0, sizeof S);
        noscript_mode = 1;
        if (R(2)) link_break(); /* the restart also cut the subscriber */
        if (F.c && F.connected && R(2)) fake_break(&F); /* and the client's link */
    }
}

/* Another client's waiter joins a queue (told on its own channel), now
 * and then a shared one or a semaphore's. None of them ever enters as a
 * holder of a set: such a head reminded that never comes loses its place
 * after a claim. */
void stranger_joins(void)
{
    queue *q = &Q[R(2)];
    qexpire(q);
    if (q->nz > NQ - NL - 2 || q->nw > NQ - NL - 2) return;
    char tok[40], ch[32];
    snprintf(tok, sizeof tok, "%032x", ++strangers);
    int mark = R(8); /* 0 to 5 exclusive, 6 shared, 7 a semaphore's */
    snprintf(ch, sizeof ch, "%sstranger:%d", mark < 6 ? "" : mark == 6 ? "{" : "}", strangers);
    join(q, tok, 500 + R(2500), 20 + R(400), ch);
}

/* A stranger handed a lock confirms it (its own take). */
void stranger_takes(void)
{
    char k[16];
    snprintf(k, sizeof k, "lock:{r%d}", R(2));
    kv *e = find(k, F.now);
    if (e && stranger_token(e->val)) {
        e->exp = F.now + 300;
        e->handed = 0;
    }
}
