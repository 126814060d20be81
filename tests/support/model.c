/* SPDX-License-Identifier: MIT */
/* The model check of the core. One program drives up to twelve leases on two
 * resources through steps that the driver chooses (model.h): acquires with
 * chosen options (each waiting by one of the three modes: the queue, its
 * unordered kind, polling), releases (also from inside the event hook),
 * the model's Redis executing the oldest command sent and, separately, the
 * oldest executed reply being delivered (time may pass between send,
 * execution and delivery), time passing, process pauses (the clock jumps
 * and the timer may not have run yet when the next reply is read), broken
 * connections and reconnects, NOSCRIPT phases, error replies (OOM,
 * LOADING, BUSY, READONLY, NOSCRIPT), a competitor writing the keys, keys
 * lost (a restart without persistence, an eviction of a lock key or of a
 * queue's key), and the client ended by redlease_client_close() or
 * redlease_client_free() with live handles (also from inside the event
 * hook).
 *
 * The model's Redis fixes a command's effect and reply when it executes
 * it; a key set or renewed with PX p at time e expires at e + p, or, when
 * the run's server clock runs fast, at e + p - (p/100 + 2): the most
 * drift the contract allows (man 3 redlease, TIMING: local validity is
 * t0 + ttl - drift).
 *
 * It keeps each resource's queue (docs/design.md, section 11; the Lua of
 * RDL_SCRIPT_QUEUE_ACQUIRE and _RELEASE in src/scripts.c, written again
 * here): a sorted set of waiting tokens and a hash of their entries
 * (deadline in the server's TIME, claim, channel), two keys with their
 * own TTLs that an eviction may take one at a time; the queued acquire
 * (take the key when it holds our token, or is free with nobody alive
 * ahead, leaving the queue, or in no order staying in it and joining;
 * hand a free key to a live head that is not us; else join or refresh
 * and answer -(pttl + 1)), the queued release (leave,
 * compare-and-delete, hand over to the live head for its claim with "g"
 * to it and "c TOKEN k*claim" to the next three, or the next one when a
 * listener had the "g" (PUBLISH counts it); unordered: "c TOKEN 0" to
 * the live head; nobody queued: the plain compare-and-delete), the fence
 * minted by the take. Strangers (another client's waiters, on a channel
 * of their own) join the queues and may take what is handed to them. The
 * server's TIME can be stepped (a wall clock). Words go to the client's
 * subscriber link (the fake's side link) only while the server has its
 * SUBSCRIBE on that link: the link connects (or fails to), the server runs
 * the SUBSCRIBE (or refuses it, an ACL), pushes wait in the socket in
 * order and are read later (one at a time, or a read of several as the
 * transport brackets it), the link breaks (what was unread is lost, as is
 * what is published meanwhile), PUBLISH may be refused (an ACL), and
 * words the queue never published (a stranger's token, a finished
 * handle's, garbage, a false hint to a waiter) are read too.
 *
 * Checked, after every step, inside every event, and at every moment a key
 * expires or an exemption ends while time passes:
 *   - held() implies the key holds our token now; except, after the key
 *     was wiped, until the local deadline that commands executed before
 *     the wipe could give (a single Redis cannot do better), only on
 *     the link those were confirmed on, and not once a renewal was
 *     answered 0 (the library has been told);
 *   - a handle told it holds the lock (its deadline ahead, not released,
 *     not lost, no renewal answered 0) never sees the key hold another
 *     token, link up or not (same wipe exemption);
 *   - held() implies the link is up;
 *   - held() implies now is before the deadline the library reported;
 *   - once the timer has run at or past that deadline, on_lost has run
 *     (unless the lease's release was asked for);
 *   - a confirmation comes in time: an acquire reports validity left, a
 *     renewal is confirmed before the deadline it extends;
 *   - losses are explained: EXPIRED not before the deadline, NOT_OWNER only
 *     after a renewal answered 0, CLOSED only when the client ends; an
 *     error answered to a renewal is no loss;
 *   - on_acquire once, before anything else, with a status explained by
 *     what Redis answered (EBUSY after contention, EREDIS after an error,
 *     ECANCELED after a release or the client's end); on_lost at most once
 *     and only after on_acquire(OK); on_release once and last; none of them
 *     inside the call that started it, nor after the client ended;
 *   - on_release(OK) of a held lease comes only after a compare-and-delete
 *     of its token deleted its key (a queue release's probe that found a
 *     queue deletes nothing);
 *   - a word for a token that waits for nothing (a finished handle's, a
 *     stranger's, one never issued, garbage) finds no waiter;
 *   - close and free: every live handle got on_acquire, every release
 *     its on_release, every held lease on_lost; the close callback runs
 *     once, also when a free cuts the close short (then inside the free);
 *     inside free a callback's acquire returns ECANCELED and its release
 *     OK, with on_release before free returns;
 * then, if the client still runs, a quiet phase (QUIET_MS: no faults, every
 * command run and read at once, every link made at once, every push read
 * at once, no new acquire; now and then a holder releases): a lock key is
 * never free, while the link is up, for longer than the longest sleep of
 * a handle waiting for it (a third of its entry's life in the queue, its
 * backoff's cap outside it) - the live head of a free lock is served, and
 * no waiter sleeps through a free lock waiting for a word; and a waiter
 * that read a "g" the queue published has taken the lock handed to it
 * once what it sent has run. While the client settles at the end, each
 * time all it sent has run: no key holds the token of a lease whose
 * acquire failed (unless Redis refused that delete, or the key was handed
 * to it by a queue and its drop never ran, the link having been down when
 * it failed or broken since: a drop is given up after the lease's TTL, an
 * entry lives max(ttl, 1 s)), and no queue holds a live entry of it (same
 * exemptions); and at the end (after releasing everything): every release
 * answered, no handle left, no allocation left.
 *
 * The liveness checks hold only in the quiet phase: while faults go on, a
 * waiter may rightly wait for ever (a holder that renews, words lost, a
 * link down). In the quiet phase every command is answered at the moment
 * it is sent, so a waiter's next attempt, due by its own timer or at once
 * on a word, runs when due; nothing else may delay it. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "scripts.h"

model_reach model_reached;


static const model_driver *drv;
static int R(int n) { return (int)drv->choose(drv->ctx, (uint32_t)n); }
static uint32_t rng_fn(void *arg)
{
    (void)arg;
    return drv->bits(drv->ctx);
}

static fake F;
static int bad;
enum { RUNNING, CLOSING, FREED };
static int ending; /* RUNNING, or how the client was ended */

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

/* The local validity of man 3 redlease, TIMING: a confirmation sent at
 * t0 is good until t0 + ttl - drift. Written here, not taken from
 * lease_math.h, so that a mistake there is found. */
static int64_t contract_drift(int64_t ttl) { return ttl / 100 + 2; }
static int64_t contract_until(int64_t t0, int64_t ttl) { return t0 + ttl - contract_drift(ttl); }

/* ---------------------------------------------------------- the leases */

#define NL 12
typedef struct lease {
    redlease_lock *lk;
    int alive, acq, acq_ok, lost, rel, release_called, in_call;
    int saw_busy, saw_acquire_error, saw_renew_zero; /* replies delivered to it */
    int delete_failed;    /* a compare-and-delete of its token was answered an error */
    int acq_done;         /* its acquire ended (ACQUIRED or ACQUIRE_FAILED): it waits no more */
    int failed_ev;        /* ACQUIRE_FAILED: its drop (if any) is behind its attempts */
    int drop_ran;         /* a compare-and-delete of its token ran after that */
    int deleted;          /* a compare-and-delete of its token ran and deleted its key */
    int fail_links;       /* links made when it failed */
    int fail_up;          /* ...and whether the link was up then */
    int lost_ev;          /* EV_LOST came */
    int joined;           /* its token has been placed in a queue */
    int64_t sleep_max;    /* the longest a waiting attempt of it sleeps (the quiet phase) */
    int64_t ttl;
    int64_t deadline;     /* the local deadline its events reported, or -1 */
    int64_t exec_until;   /* what its confirmations executed so far could give */
    int64_t exempt_until; /* its key was wiped: held() without it is excused until then, */
    int exempt_link;      /* on the link it was confirmed on (redlease.h: held() is 0 after a
                           * reconnect until a renewal confirms it again) */
    char token[40], key[64];
} lease;
static lease L[NL];

static lease *by_token(const char *token)
{
    for (int i = 0; i < NL; i++)
        if (L[i].alive && strcmp(L[i].token, token) == 0) return &L[i];
    return NULL;
}

/* Each slot is used once per run: a token names one lease, alive or not. */
static lease *by_token_any(const char *token)
{
    for (int i = 0; i < NL; i++)
        if (L[i].token[0] && strcmp(L[i].token, token) == 0) return &L[i];
    return NULL;
}

/* ------------------------------------------------------ the Redis model */

typedef struct kv {
    char key[64], val[64];
    int64_t exp;
    int used;
    int handed; /* set by a queue's hand-over, not by its holder's own command */
} kv;
static kv db[16];
static long long fence_ctr;
static int noscript_mode; /* EVALSHA answers NOSCRIPT */
static int fast_server;   /* the server's clock runs fast: keys expire early */
static int links;         /* connections made so far */
static int native;        /* RDL_NATIVE_* the server of this link says it has */
static int native_refused; /* ...and then answers them "unknown command" (a proxy
                              in between, a failover to an older server) */

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

/* ------------------------------------------- the subscriber link's socket */

/* What the server pushed on the client's subscriber link and the client
 * has not read yet, oldest first: the SUBSCRIBE's confirmation (or its
 * refusal) and the words published to its channel after it. They belong
 * to one link (its connect count): a broken link loses them. */
enum { PUSH_CONFIRM, PUSH_REFUSED, PUSH_WORD };
typedef struct push {
    int kind;
    int link;   /* F.side.connects when pushed */
    int forged; /* a word the queue never published */
    char ch[96], text[128];
} push;
#define NPUSH 64
static push fifo[NPUSH];
static int nfifo;
static int sub_on;   /* the server has the client's SUBSCRIBE, on link sub_link */
static int sub_link;
static int sub_idx;  /* index in F.side.cmds of the last SUBSCRIBE the server ran, or -1 */
static char sub_channel[96];
static int pub_refused; /* PUBLISH refused (an ACL): the scripts leave words out */

/* The link went (broken, or closed by the client): what it had unread and
 * the server's subscription go with it. */
static void waker_sync(void)
{
    int up = F.side.connected;
    if (sub_on && (!up || F.side.connects != sub_link)) sub_on = 0;
    int k = 0;
    for (int i = 0; i < nfifo; i++) {
        if (up && fifo[i].link == F.side.connects)
            fifo[k++] = fifo[i];
        else if (fifo[i].kind == PUSH_WORD)
            model_reached.words_lost++;
    }
    nfifo = k;
}

static void link_break(void)
{
    if (F.c && !F.detached && F.side.connected) fake_link_break(&F.side);
    waker_sync();
}

static void enqueue(int kind, const char *ch, const char *text, int forged)
{
    waker_sync();
    if (!F.side.connected) return;
    if (nfifo == NPUSH) { /* past the output buffer limit Redis cuts a subscriber */
        if (kind == PUSH_WORD) model_reached.words_lost++;
        link_break();
        return;
    }
    push *p = &fifo[nfifo++];
    p->kind = kind;
    p->link = F.side.connects;
    p->forged = forged;
    snprintf(p->ch, sizeof p->ch, "%s", ch);
    snprintf(p->text, sizeof p->text, "%s", text);
}

/* Strangers (another client's waiters) are told on channels of their own. */
static int stranger_channel(const char *ch) { return strncmp(ch, "stranger:", 9) == 0; }
static int stranger_token(const char *t) { return strncmp(t, "00000000000000000000", 20) == 0; }

/* PUBLISH ch text from a script (redis.pcall: a refusal is no error). */
/* PUBLISH: 1 if a listener has the word (PUBLISH's count), else 0. */
static int publish(const char *ch, const char *text)
{
    if (stranger_channel(ch)) return 1; /* another client's link, listening: not modelled */
    waker_sync();
    if (pub_refused || !sub_on || strcmp(ch, sub_channel) != 0) {
        model_reached.words_lost++; /* nobody listened, or it was not let out */
        return 0;
    }
    enqueue(PUSH_WORD, ch, text, 0);
    return 1;
}

/* ---------------------------------------------------------- the queues */

/* A resource's queue: the sorted set KEYS[2] (members in score order,
 * scores counting up) and the hash KEYS[3] (token -> deadline claim
 * channel), each a key of its own, gone when empty, with a TTL (expiry by
 * our clock, or -1) that the joins raise to the entry's life. */
#define NQ 24
typedef struct qmember {
    char tok[40];
    long long score;
} qmember;
typedef struct qentry {
    char tok[40];
    int64_t deadline, claim; /* deadline: the server's TIME */
    char ch[96];
} qentry;
typedef struct queue {
    qmember z[NQ];
    int nz;
    int64_t zexp;
    qentry w[NQ];
    int nw;
    int64_t wexp;
} queue;
static queue Q[2];
static int64_t srv_skew; /* the server's TIME minus our clock (a wall clock, stepped) */
static int strangers;

static int64_t srv_now(void) { return F.now + srv_skew; }

static int res_of(const char *key)
{
    const char *p = strstr(key, "{r");
    if (!p || (p[2] != '0' && p[2] != '1') || p[3] != '}') abort();
    return p[2] - '0';
}

static void qexpire(queue *q)
{
    if (q->nz && q->zexp >= 0 && q->zexp <= F.now) q->nz = 0;
    if (!q->nz) q->zexp = -1;
    if (q->nw && q->wexp >= 0 && q->wexp <= F.now) q->nw = 0;
    if (!q->nw) q->wexp = -1;
}

static int z_idx(const queue *q, const char *tok)
{
    for (int i = 0; i < q->nz; i++)
        if (strcmp(q->z[i].tok, tok) == 0) return i;
    return -1;
}

static int w_idx(const queue *q, const char *tok)
{
    for (int i = 0; i < q->nw; i++)
        if (strcmp(q->w[i].tok, tok) == 0) return i;
    return -1;
}

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

/* The first k members are told to check once i claims ended. */
static void tell_first(queue *q, int k, int64_t ms)
{
    char text[128];
    for (int i = 0; i < k && i < q->nz; i++) {
        int e = w_idx(q, q->z[i].tok);
        if (e < 0) continue;
        snprintf(text, sizeof text, "c %s %lld", q->z[i].tok, (long long)(ms * (i + 1)));
        publish(q->w[e].ch, text);
    }
}

/* A free key goes to the live head for its claim time. */
static void hand_over(queue *q, const char *key)
{
    int h = head(q);
    if (h < 0) return;
    qentry he = q->w[h];
    set_key(key, he.tok, expiry_ms(he.claim))->handed = 1;
    leave(q, he.tok);
    char text[128];
    snprintf(text, sizeof text, "g %s", he.tok);
    int heard = publish(he.ch, text);
    tell_first(q, heard ? 1 : 3, he.claim); /* one insurance word when the head heard */
    model_reached.handovers++;
    model_reached.handovers_heard += heard;
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
static int live_entry(queue *q, const char *tok)
{
    qexpire(q);
    int e = w_idx(q, tok);
    return z_idx(q, tok) >= 0 && e >= 0 && q->w[e].deadline > srv_now();
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
static int xh;

static const char *const errors[] = {
    "OOM command not allowed when used memory > 'maxmemory'.",
    "LOADING Redis is loading the dataset in memory",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "READONLY You can't write against a read only replica.",
    "NOSCRIPT No matching script. Please use EVAL.", /* last: only for EVALSHA */
};
#define N_ERRORS ((int)(sizeof errors / sizeof errors[0]))
static int next_error; /* 1 + index in errors: the next command executed fails so */

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

static int pending_exec(void)
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
    const char *life, *claim, *ch, *order; /* the queue's (order also the release's) */
    int fenced;
    int probe; /* the release's two-key form: -1 when there is a queue */
} view;

static int arg_is(const fake_cmd *c, int i, const char *s)
{
    return i < c->argc && strcmp(c->argv[i], s) == 0;
}

/* The queue's scripts: EVALSHA sha numkeys key queue waiters [fence]
 * token ttl life claim channel order [counter_ttl]; the release: EVALSHA
 * sha 3 key queue waiters token order, or its probe: EVALSHA sha 2 key
 * queue token. */
static view queue_view(const fake_cmd *c, int s)
{
    int acq = s == RDL_SCRIPT_QUEUE_ACQUIRE;
    int nk = atoi(c->argv[2]);
    char qk[80], wk[80];
    snprintf(qk, sizeof qk, "%s:queue", c->argv[3]);
    snprintf(wk, sizeof wk, "%s:waiters", c->argv[3]);
    if (!acq && nk == 2 && c->argc == 6) {
        if (strcmp(c->argv[4], qk) != 0) abort();
        model_reached.release_probes++;
        return (view){.s = s, .key = c->argv[3], .token = c->argv[5], .probe = 1};
    }
    if (acq ? !((nk == 3 && c->argc == 12) || (nk == 4 && c->argc == 14)) : !(nk == 3 && c->argc == 8))
        abort(); /* not the layout this model knows */
    if (strcmp(c->argv[4], qk) != 0 || strcmp(c->argv[5], wk) != 0) abort();
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

static view view_of(const fake_cmd *c)
{
    if (arg_is(c, 0, "DELIFEQ") && c->argc == 3)
        return (view){.s = RDL_SCRIPT_RELEASE, .native = 1, .key = c->argv[1], .token = c->argv[2]};
    if (arg_is(c, 0, "DELEX") && c->argc == 4 && arg_is(c, 2, "IFEQ"))
        return (view){.s = RDL_SCRIPT_RELEASE, .native = 1, .key = c->argv[1], .token = c->argv[3]};
    if (arg_is(c, 0, "SET") && c->argc == 7 && arg_is(c, 3, "IFEQ") && arg_is(c, 5, "PX")) {
        /* compared with IFEQ's operand; the library never changes the value */
        if (strcmp(c->argv[2], c->argv[4]) != 0) abort();
        return (view){.s = RDL_SCRIPT_RENEW, .native = 1, .key = c->argv[1], .token = c->argv[4], .px = c->argv[6]};
    }
    int s = script_of(c);
    if (s < 0) {
        if (!(arg_is(c, 0, "SET") && c->argc == 6 && arg_is(c, 3, "NX") && arg_is(c, 4, "PX")))
            abort(); /* nothing else is sent after the handshake */
        return (view){.s = -1, .key = c->argv[1], .token = c->argv[2], .px = c->argv[5]};
    }
    if (s == RDL_SCRIPT_QUEUE_ACQUIRE || s == RDL_SCRIPT_QUEUE_RELEASE) return queue_view(c, s);
    return (view){.s = s, .key = c->argv[3], .token = token_of(c, s),
                  .px = s == RDL_SCRIPT_RELEASE ? NULL : c->argv[s == RDL_SCRIPT_ACQUIRE_FENCED ? 6 : 5]};
}

static int is_delete(int s) { return s == RDL_SCRIPT_RELEASE || s == RDL_SCRIPT_QUEUE_RELEASE; }

/* RDL_SCRIPT_QUEUE_ACQUIRE */
static void queue_acquire(const fake_cmd *c, const view *v, reply *r)
{
    queue *q = &Q[res_of(v->key)];
    const char *tok = v->token;
    kv *e = find(v->key, F.now);
    int take = 0;
    if (e && strcmp(e->val, tok) == 0) {
        take = 1;
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
        set_key(v->key, tok, expiry(v->px));
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
    int ours = e && strcmp(e->val, tok) == 0;
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
            publish(q->w[h].ch, text);
            model_reached.unordered_wakes++;
        }
    }
    *r = (reply){REP_INT, e ? 1 : 0, NULL};
}

/* Redis runs the oldest command not run yet, now. */
static void execute(void)
{
    if (!pending_exec()) return;
    const fake_cmd *c = &F.cmds[xh];
    reply *r = &rep[xh++];
    int sha = strcmp(c->argv[0], "EVALSHA") == 0;
    if (next_error) {
        int e = next_error - 1;
        next_error = 0;
        if (e == N_ERRORS - 1 && !sha) e = 0;
        *r = (reply){REP_ERR, 0, errors[e]};
        view v = view_of(c);
        if (is_delete(v.s)) /* a delete refused: the key (and an entry) may stay */
            for (int i = 0; i < NL; i++)
                if (strcmp(L[i].token, v.token) == 0) L[i].delete_failed = 1;
        model_reached.error_replies++;
        return;
    }
    view v = view_of(c);
    if (v.native && native_refused) { /* not run: the library sends the script */
        *r = (reply){REP_ERR, 0, "ERR unknown command 'DELIFEQ', with args beginning with: "};
        model_reached.native_refused++;
        return;
    }
    if (v.native) model_reached.native_commands++;
    if (v.s < 0) {
        if (find(c->argv[1], F.now)) {
            *r = (reply){REP_NIL, 0, NULL};
        } else {
            put(c->argv[1], c->argv[2], expiry(c->argv[5]));
            confirmed(c->argv[2], c->sent_at);
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
    if (s == RDL_SCRIPT_QUEUE_RELEASE) {
        queue_release(&v, r);
        lease *l = by_token_any(token);
        if (l && r->type == REP_INT && r->v == 1) l->deleted = 1;
        return;
    }
    kv *e = find(v.key, F.now);
    int ours = e && strcmp(e->val, token) == 0;
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
        if (l && ours) l->deleted = 1;
    } else if (e && !ours) { /* an acquire script, held by another */
        *r = (reply){REP_INT, 0, NULL};
    } else { /* an acquire script: the key was free, or ours from an earlier attempt */
        set_key(v.key, token, expiry(v.px));
        confirmed(token, c->sent_at);
        *r = (reply){REP_INT, s == RDL_SCRIPT_ACQUIRE_FENCED ? ++fence_ctr : 1, NULL};
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
    if (s < 0 || s == RDL_SCRIPT_ACQUIRE || s == RDL_SCRIPT_ACQUIRE_FENCED || s == RDL_SCRIPT_QUEUE_ACQUIRE) {
        if (r->type == REP_ERR) l->saw_acquire_error = 1;
        if (r->type == REP_NIL || (r->type == REP_INT && r->v <= 0)) l->saw_busy = 1;
        if (ok && F.now >= contract_until(c->sent_at, l->ttl)) model_reached.late_acquire_ok++;
    } else if (s == RDL_SCRIPT_RENEW) {
        if ((r->type == REP_INT && r->v == 0) || r->type == REP_NIL) {
            l->saw_renew_zero = 1;
            l->exempt_until = 0; /* told the key is not ours: no excuse left */
        }
        if (ok && l->deadline >= 0 && F.now >= l->deadline) model_reached.late_renewal++;
    }
}

/* The library reads the oldest executed reply. */
static void deliver(void)
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
static void execute_and_deliver(void)
{
    pending_exec();
    if (F.head == xh) execute();
    deliver();
}

/* The connect completes and Redis answers the handshake (PING) at once;
 * what the event hook sends meanwhile waits its turn. */
static void reconnect(void)
{
    fake_connect_raw(&F);
    links++;
    fake_cmd *c;
    /* Each link may reach another server: one with DELIFEQ and SET IFEQ
     * or not, one that says so and then refuses them. */
    native = (int[]){0, RDL_NATIVE_DELIFEQ, RDL_NATIVE_DELEX}[R(3)];
    native_refused = native && R(4) == 0;
    while ((c = fake_peek(&F)) && (strcmp(c->argv[0], "PING") == 0 || strcmp(c->argv[0], "COMMAND") == 0)) {
        if (strcmp(c->argv[0], "PING") == 0)
            fake_reply_status(&F, "PONG");
        else
            fake_reply_probe(&F, native);
    }
    fake_run(&F);
}

/* Keys lost: a restart without persistence (all keys, the script cache,
 * maybe the links) or the eviction of one key: a lock key, a queue's
 * order or its entries. A lease whose key goes may still be held until
 * what its confirmations executed before could give. */
static void wipe(void)
{
    int which = R(7); /* 0: restart; 1/2: lock:{r0}/{r1}; 3/4: their :queue; 5/6: their :waiters */
    if (which >= 3) {
        queue *q = &Q[(which - 3) % 2];
        if (which < 5)
            q->nz = 0;
        else
            q->nw = 0;
        qexpire(q);
        model_reached.wipes++;
        return;
    }
    char k[24];
    snprintf(k, sizeof k, "lock:{r%d}", which - 1);
    for (int i = 0; i < 16; i++)
        if (db[i].used && (which == 0 || strcmp(db[i].key, k) == 0)) db[i].used = 0;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && (which == 0 || strcmp(L[i].key, k) == 0) &&
            L[i].exec_until > L[i].exempt_until) {
            L[i].exempt_until = L[i].exec_until;
            L[i].exempt_link = links;
        }
    model_reached.wipes++;
    if (which == 0) {
        memset(Q, 0, sizeof Q);
        qexpire(&Q[0]);
        qexpire(&Q[1]);
        noscript_mode = 1;
        if (R(2)) link_break(); /* the restart also cut the subscriber */
        if (F.c && F.connected && R(2)) fake_break(&F); /* and the client's link */
    }
}

/* ------------------------------------------ the subscriber link's steps */

static int quieting;   /* the quiet phase: no faults, everything answered at once */
static int told_g[NL]; /* the quiet phase: read a "g" the queue published, while waiting */

/* The oldest SUBSCRIBE on the link the server has not run, or -1. */
static int sub_pending(void)
{
    if (!F.c || F.detached || !F.side.connected) return -1;
    for (int i = sub_idx + 1; i < F.side.ncmds; i++)
        if (F.side.cmds[i].subscribed && !F.side.cmds[i].answered) return i;
    return -1;
}

/* The server runs the client's SUBSCRIBE: from now on it has the words of
 * the channel; or (may_refuse) an ACL refuses it. */
static void srv_subscribe(int may_refuse)
{
    waker_sync();
    int i = sub_pending();
    if (i < 0) return;
    sub_idx = i;
    if (may_refuse && R(6) == 0) {
        enqueue(PUSH_REFUSED, F.side.cmds[i].argv[1], "", 0);
        model_reached.subscribe_refused++;
        return;
    }
    sub_on = 1;
    sub_link = F.side.connects;
    snprintf(sub_channel, sizeof sub_channel, "%s", F.side.cmds[i].argv[1]);
    enqueue(PUSH_CONFIRM, sub_channel, "", 0);
}

static fake_cmd *open_sub(void)
{
    for (int i = 0; i < F.side.ncmds; i++)
        if (F.side.cmds[i].subscribed && !F.side.cmds[i].answered) return &F.side.cmds[i];
    return NULL;
}

/* The client reads a word. One for a token that waits for nothing (not a
 * model lease still acquiring) must find no waiter. */
static void read_word(const push *p)
{
    char tok[RDL_TOKEN_LEN + 1];
    int64_t ms;
    int kind = rdl_waker_parse_word(p->text, strlen(p->text), tok, &ms);
    const lease *l = kind ? by_token(tok) : NULL;
    int waits = l && !l->acq_done;
    if (quieting && waits && kind == RDL_WORD_GRANTED && !p->forged && F.connected) {
        told_g[l - L] = 1;
        model_reached.quiet_granted++;
    }
    uint64_t before = F.c->waker->words;
    fake_link_message(&F.side, p->ch, p->text);
    model_reached.words_delivered++;
    uint64_t found = F.c->waker->words - before;
    model_reached.words_found += (long)found;
    if (found && !waits) violation("the word \"%s\" found a waiter, its token waits for nothing", p->text);
}

/* The client reads up to k pushes: one at a time (mode 0), each as a read
 * of its own that the client drains after (1), or all in one read (2). */
static void read_pushes(int k, int mode)
{
    waker_sync();
    if (!F.c || F.detached || !F.side.connected || !nfifo) return;
    rdl_conn *cn = F.side.cn;
    if (mode == 2) rdl_conn_read_begin(cn);
    for (; k > 0 && nfifo && F.side.connected; k--) {
        push p = fifo[0];
        memmove(&fifo[0], &fifo[1], (size_t)--nfifo * sizeof fifo[0]);
        if (p.kind == PUSH_CONFIRM) {
            fake_link_subscribed(&F.side);
        } else if (p.kind == PUSH_REFUSED) {
            static const char no[] = "NOPERM User has no permissions to access the channel";
            fake_cmd *s = open_sub();
            rdl_reply e = {.type = RDL_REPLY_ERROR, .str = no, .len = sizeof no - 1};
            if (s) rdl_conn_on_push(cn, s->req, &e);
        } else {
            read_word(&p);
        }
        if (mode == 1) {
            rdl_conn_on_read_done(cn); /* may end the client (the event hook) */
            if (F.detached) return;
        }
    }
    if (mode == 2) rdl_conn_read_end(cn);
}

/* The link's connect completes (its handshake answered at once): the
 * client sends its SUBSCRIBE. */
static void link_connect(void)
{
    waker_sync();
    if (F.c && !F.detached && F.side.connecting) fake_link_connect(&F, &F.side);
}

/* Words the queue never published, in the socket as if it had: a token
 * never issued, a finished lease's, a stranger's, garbage, or a false
 * hint to a lease that waits (words are hints: it may only check). */
static void forge_word(void)
{
    waker_sync();
    if (!sub_on) return;
    static const char never[] = "0bad0bad0bad0bad0bad0bad0bad0bad";
    const char *tok = never;
    int w = R(5);
    int i = R(NL);
    if (w == 1 && L[i].token[0] && L[i].acq_done) tok = L[i].token;
    if (w == 2 && strangers) {
        static char st[40];
        snprintf(st, sizeof st, "%032x", 1 + R(strangers));
        tok = st;
    }
    if (w == 3 && L[i].alive && !L[i].acq_done && L[i].token[0]) tok = L[i].token;
    char text[128];
    if (w == 4)
        snprintf(text, sizeof text, "%s", (const char *[]){"hello", "g 0bad", "c 0bad0bad0bad0bad0bad0bad0bad0bad x",
                                                          "g 0BAD0BAD0BAD0BAD0BAD0BAD0BAD0BAD"}[R(4)]);
    else if (R(2))
        snprintf(text, sizeof text, "g %s", tok);
    else
        snprintf(text, sizeof text, "c %s %d", tok, R(3000));
    enqueue(PUSH_WORD, sub_channel, text, 1);
    model_reached.forged_words++;
}

/* Another client's waiter joins a queue (told on its own channel). */
static void stranger_joins(void)
{
    queue *q = &Q[R(2)];
    qexpire(q);
    if (q->nz > NQ - NL - 2 || q->nw > NQ - NL - 2) return;
    char tok[40], ch[32];
    snprintf(tok, sizeof tok, "%032x", ++strangers);
    snprintf(ch, sizeof ch, "stranger:%d", strangers);
    join(q, tok, 500 + R(2500), 20 + R(400), ch);
}

/* A stranger handed a lock confirms it (its own take). */
static void stranger_takes(void)
{
    char k[16];
    snprintf(k, sizeof k, "lock:{r%d}", R(2));
    kv *e = find(k, F.now);
    if (e && stranger_token(e->val)) {
        e->exp = F.now + 300;
        e->handed = 0;
    }
}

/* ------------------------------------------------------------ the checks */

static void check_held(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive || !l->lk) continue;
        /* told held (its deadline ahead, nothing since that says it ended):
         * the key is ours or gone, never another's */
        if (l->deadline >= 0 && F.now < l->deadline && !l->release_called && !l->lost_ev &&
            !l->saw_renew_zero && ending == RUNNING) {
            kv *e = find(l->key, F.now);
            if (e && strcmp(e->val, l->token) != 0 && F.now >= l->exempt_until)
                violation("lease %d told held until %lld, but %s holds %s (t=%lld)", i,
                          (long long)l->deadline, l->key, e->val, (long long)F.now);
        }
        if (!redlease_lock_held(l->lk)) continue;
        if (!F.connected)
            violation("%s held with the link down (t=%lld)", l->key, (long long)F.now);
        if (l->deadline < 0 || F.now >= l->deadline)
            violation("%s held at t=%lld, its deadline %lld", l->key, (long long)F.now,
                      (long long)l->deadline);
        kv *e = find(l->key, F.now);
        if (e && strcmp(e->val, l->token) == 0) continue;
        if (F.now < l->exempt_until && l->exempt_link == links)
            model_reached.held_on_wiped++;
        else
            violation("held but %s is not ours (t=%lld)", l->key, (long long)F.now);
    }
}
/* The timer has run at this moment: a held lease past its deadline must
 * have heard on_lost by now (unless its release was asked for). */
static void check_told_in_time(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        const lease *l = &L[i];
        if (l->alive && l->acq_ok && !l->lost && !l->release_called && l->deadline >= 0 &&
            F.now >= l->deadline)
            violation("%s past its deadline %lld at t=%lld without on_lost", l->key,
                      (long long)l->deadline, (long long)F.now);
    }
}

/* What the events say about a lease's deadline, checked as they happen. */
static void check_event(lease *l, const redlease_event *ev)
{
    long long now = (long long)F.now;
    switch (ev->type) {
    case REDLEASE_EV_ACQUIRED:
        if (ev->remaining_ms <= 0)
            violation("%s acquired with no validity left (t=%lld)", l->key, now);
        l->deadline = F.now + ev->remaining_ms;
        l->acq_done = 1;
        break;
    case REDLEASE_EV_ACQUIRE_FAILED: /* its drop, if it sends one, was queued first */
        l->acq_done = l->failed_ev = 1;
        l->drop_ran = 0;
        l->fail_links = links;
        l->fail_up = F.connected;
        break;
    case REDLEASE_EV_RENEWED:
        if (l->deadline < 0 || F.now >= l->deadline)
            violation("renewal of %s confirmed at t=%lld, after its deadline %lld", l->key, now,
                      (long long)l->deadline);
        l->deadline = F.now + ev->remaining_ms;
        break;
    case REDLEASE_EV_LOST:
        l->lost_ev = 1;
        if (ev->status == REDLEASE_LOST_EXPIRED && (l->deadline < 0 || F.now < l->deadline))
            violation("%s lost (expired) at t=%lld, before its deadline %lld", l->key, now,
                      (long long)l->deadline);
        break;
    case REDLEASE_EV_RENEW_FAILED:
        if (ev->status == REDLEASE_EREDIS) model_reached.renew_eredis++;
        break;
    default: break;
    }
}

/* ------------------------------------------------------- the client's end */

static int over;   /* the client has ended: no callback may come now */
static int close_cbs;
static int close_cut; /* a free came while the close was under way */
static int draining;
static lease stray; /* arg of an acquire that should have been refused */

/* The client ended (close callback, or free returned): every live handle
 * has had its last word. */
static void check_ended(const char *how)
{
    for (int i = 0; i < NL; i++) {
        lease *l = &L[i];
        if (!l->alive) continue;
        if (!l->acq) violation("%s: lease %d got no on_acquire", how, i);
        if (l->release_called && !l->rel) violation("%s: lease %d got no on_release", how, i);
        if (l->acq_ok && !l->lost && !l->release_called)
            violation("%s: held lease %d got no on_lost", how, i);
        l->alive = 0;
        l->lk = NULL;
    }
    over = 1;
}

static void cb_close(redlease_client *c, void *arg)
{
    (void)c, (void)arg;
    /* from the loop once the close is done, or inside a free that cut it */
    if (!(ending == CLOSING || (ending == FREED && close_cut)) || over || close_cbs++)
        violation("close callback out of order");
    model_reached.closes++;
    check_ended("close");
}

/* Closes or frees the client; a free may cut a close short, and then the
 * close callback runs inside it, once (redlease.h). */
static void end_client(redlease_client *c, int graceful)
{
    if (graceful && ending == RUNNING) {
        ending = CLOSING;
        redlease_client_close(c, cb_close, NULL);
        return;
    }
    for (int i = 0; i < NL; i++)
        if (L[i].alive) {
            model_reached.frees_live++;
            break;
        }
    close_cut = ending == CLOSING;
    if (close_cut) model_reached.frees_closing++;
    ending = FREED;
    redlease_client_free(c);
    if (close_cut && close_cbs != 1) violation("free during close: close callback ran %d times", close_cbs);
    check_ended("free");
}

static void cb_acq(redlease_lock *lk, int st, void *arg);

static void cb_rel(redlease_lock *lk, int st, void *arg);

/* Inside free, a callback may still release its handle (on_release then
 * runs before free returns, as after a close: check_ended sees to it); a
 * new acquire is refused (redlease.h). */
static void call_from_freeing(lease *l)
{
    if (!l->release_called) {
        l->release_called = 1;
        int rc = redlease_release(l->lk, cb_rel, l);
        if (rc != REDLEASE_OK) violation("release inside free returned %d", rc);
    }
    int rc;
    redlease_lock *lk; /* were it accepted, cb_acq would find stray out of order */
    rc = redlease_acquire(redlease_lock_client(l->lk), "r0", NULL, cb_acq, NULL, &stray, &lk);
    if (rc != REDLEASE_ECANCELED) violation("acquire inside free returned %d", rc);
}

/* ------------------------------------------------------- the callbacks */

static int acquire_explained(const lease *l, int st)
{
    switch (st) {
    case REDLEASE_OK:
    case REDLEASE_ETIMEDOUT:
    case REDLEASE_ECONN: return 1;
    case REDLEASE_EBUSY: return l->saw_busy;
    case REDLEASE_EREDIS: return l->saw_acquire_error;
    case REDLEASE_ECANCELED: return l->release_called || ending;
    default: return 0; /* the model's Redis never answers a wrong type */
    }
}

static void cb_acq(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_acquire after the client ended");
    if (l->in_call && ending != FREED) violation("on_acquire inside the call");
    if (!l->alive || l->acq || l->rel) violation("on_acquire out of order");
    if (!acquire_explained(l, st)) violation("on_acquire(%d) unexplained", st);
    if (st == REDLEASE_EREDIS) model_reached.acquire_eredis++;
    l->acq = 1;
    l->acq_ok = st == REDLEASE_OK;
    if (ending == FREED) call_from_freeing(l);
}

static void cb_lost(redlease_lock *lk, int reason, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_lost after the client ended");
    if (!l->acq_ok || l->lost || l->rel) violation("on_lost out of order");
    if (reason == REDLEASE_LOST_CLOSED ? !ending
                                       : reason == REDLEASE_LOST_NOT_OWNER && !l->saw_renew_zero)
        violation("on_lost(%d) unexplained", reason);
    if (reason >= 1 && reason <= 4) model_reached.lost[reason]++;
    l->lost = 1;
    if (ending == FREED) call_from_freeing(l);
}

static void cb_rel(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    (void)lk;
    if (over) violation("on_release after the client ended");
    if (l->in_call && ending != FREED) violation("on_release inside the call");
    if (l->rel || !l->acq) violation("on_release out of order");
    if (st == REDLEASE_EPROTO || (st == REDLEASE_ECANCELED && !ending))
        violation("on_release(%d) unexplained", st);
    /* a held lease's release said OK: a compare-and-delete of its own
     * deleted its key (not, say, a probe that found a queue) */
    if (st == REDLEASE_OK && l->acq_ok && !l->lost && !ending && !l->deleted)
        violation("on_release(OK) with its key never deleted");
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

static int calm; /* a run with no fault steps (see step()) */
static int hook_acts;
static void hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)arg;
    lease *l = ev->token ? by_token(ev->token) : NULL;
    if (l) check_event(l, ev);
    check_held();
    if (!hook_acts || draining || quieting || R(calm ? 64 : 8)) return;
    int a = R(NL + 1);
    if (a < NL) {
        if (L[a].alive && !L[a].release_called && L[a].lk) release_one(&L[a]);
    } else if (ending != FREED && !over && R(8) == 0) {
        end_client(c, ending == RUNNING ? R(2) : 0);
    }
}

static void start_one(lease *l)
{
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    static const int modes[] = {REDLEASE_WAIT_DEFAULT, REDLEASE_WAIT_QUEUE, REDLEASE_WAIT_POLL,
                                REDLEASE_WAIT_WAKE};
    o.wait_mode = modes[R(4)];
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
    /* The longest a waiting handle sleeps between attempts (lock.c does
     * not say it; docs/design.md, 11.4 and 4.2 do): in a queue a third
     * of its entry's life (max(ttl, 1 s)), else its backoff's cap; the
     * holder's TTL left only makes it shorter. */
    int64_t backoff_cap = o.retry_max_ms > o.retry_base_ms ? o.retry_max_ms : o.retry_base_ms;
    int64_t life = o.ttl_ms > 1000 ? o.ttl_ms : 1000;
    l->sleep_max = backoff_cap;
    if (o.wait_mode != REDLEASE_WAIT_POLL && life / 3 > backoff_cap) l->sleep_max = life / 3;
    l->alive = 1;
    l->in_call = 1;
    l->ttl = o.ttl_ms;
    l->deadline = -1;
    char res[8];
    snprintf(res, sizeof res, "r%d", calm && R(4) ? 0 : R(2)); /* calm: contended */
    int rc = redlease_acquire(F.c, res, &o, cb_acq, cb_lost, l, &l->lk);
    l->in_call = 0;
    if (rc) {
        if (rc != REDLEASE_ECANCELED || !ending) violation("acquire returned %d", rc);
        l->alive = 0;
        l->lk = NULL;
        return;
    }
    if (ending) violation("acquire after the client's end returned 0");
    snprintf(l->token, sizeof l->token, "%s", redlease_lock_token(l->lk));
    snprintf(l->key, sizeof l->key, "%s", redlease_lock_key(l->lk));
}

/* ------------------------------------------------------------ the steps */

/* The client is gone once the loop adapter was detached. */
static void settle(void)
{
    if (F.c && F.detached) F.c = NULL;
}

/* Time passes to now + ms: the timer fires at each deadline on the way,
 * and held() is checked at every moment a key expires or an exemption
 * ends (where it could first be wrong), before any timer due then. */
static void advance(int64_t ms)
{
    int64_t end = F.now + ms;
    fake_run(&F);
    while (F.now < end) {
        int64_t next = end;
        if (F.c && F.timer_at >= 0 && F.timer_at < next) next = F.timer_at;
        for (int i = 0; i < 16; i++)
            if (db[i].used && db[i].exp > F.now && db[i].exp < next) next = db[i].exp;
        for (int i = 0; i < NL; i++)
            if (L[i].alive && L[i].exempt_until > F.now && L[i].exempt_until < next)
                next = L[i].exempt_until;
        if (next > F.now) F.now = next;
        check_held();
        fake_run(&F);
        settle();
        check_told_in_time();
    }
}

/* Forgets the commands every one of which is answered (the fake keeps
 * FAKE_MAX_CMDS, FAKE_SIDE_CMDS), so a long run never fills it. */
static void compact(void)
{
    pending_exec();
    if (F.head == F.ncmds && xh == F.ncmds) {
        for (int i = 0; i < F.ncmds; i++) fake_cmd_free(&F.cmds[i]);
        F.ncmds = F.head = xh = 0;
    }
    for (int i = 0; i < F.side.ncmds; i++)
        if (!F.side.cmds[i].answered) return;
    for (int i = 0; i < F.side.ncmds; i++) fake_cmd_free(&F.side.cmds[i]);
    F.side.ncmds = F.side.head = 0;
    sub_idx = -1;
}

/* The client's link, the subscriber's, the server's side of both: what
 * is pending happens now, until nothing is (the quiet phase, the drain). */
static void heal(void)
{
    for (int round = 0; round < 100 && F.c; round++) {
        int did = 0;
        if (!F.connected && F.connecting) {
            reconnect();
            did = 1;
        }
        settle();
        if (F.c && F.side.connecting) {
            link_connect();
            did = 1;
            settle();
        }
        if (sub_pending() >= 0) {
            srv_subscribe(0);
            did = 1;
        }
        waker_sync();
        if (F.c && nfifo) {
            read_pushes(nfifo, R(3));
            did = 1;
            settle();
        }
        while (fake_peek(&F)) {
            execute_and_deliver();
            did = 1;
        }
        fake_run(&F);
        settle();
        compact();
        if (!did) break;
    }
}

/* Steps that break something: in a calm run they are time passing
 * instead, so that waiters stay long enough in a subscribed queue. */
static int is_fault(int a)
{
    return (a >= 68 && a < 76) || (a >= 81 && a < 90) || (a >= 110 && a < 111) || (a >= 130 && a < 132) ||
           (a >= 136 && a < 137);
}

static void step(void)
{
    int a = R(140);
    if (calm && is_fault(a)) a = 52 + R(16); /* advance() */
    if (a < 12) {
        lease *l = &L[R(NL)];
        if (F.c && !l->alive && !l->acq) start_one(l);
    } else if (a < 20) {
        lease *l = &L[R(NL)];
        if (l->alive && !l->release_called) release_one(l);
    } else if (a < 32) { /* Redis runs commands; the replies wait in the socket */
        for (int k = 1 + R(4); k > 0; k--) execute();
    } else if (a < 44) { /* the library reads replies run earlier */
        for (int k = 1 + R(4); k > 0 && F.head < xh; k--) deliver();
        fake_run(&F);
    } else if (a < 52) { /* a quiet link: each runs and is read at once */
        for (int k = R(4); k > 0 && fake_peek(&F); k--) execute_and_deliver();
        fake_run(&F);
    } else if (a < 68) {
        advance(R(60));
    } else if (a < 72) { /* the process was paused: its timer may not have run yet */
        F.now += R(3000);
        if (R(2)) fake_run(&F);
    } else if (a < 76) {
        if (F.connected) fake_break(&F);
    } else if (a < 81) {
        if (!F.connected && F.connecting) reconnect();
    } else if (a < 83) {
        noscript_mode = !noscript_mode;
    } else if (a < 85) { /* another client takes a free key */
        char k[16];
        snprintf(k, sizeof k, "lock:{r%d}", R(2));
        if (!find(k, F.now)) put(k, "other", F.now + 500);
    } else if (a < 87) {
        wipe();
    } else if (a < 89) {
        next_error = 1 + R(N_ERRORS);
    } else if (a < 90) {
        if (F.c && ending != FREED && !over && R(4) == 0) end_client(F.c, ending == RUNNING ? R(2) : 0);
    } else if (a < 100) {
        advance(1);
    } else if (a < 110) { /* the subscriber's connect completes; maybe the server runs its
                           * SUBSCRIBE and the client reads the answer at once */
        link_connect();
        if (R(2)) {
            srv_subscribe(1);
            if (R(2)) read_pushes(1, R(3));
        }
    } else if (a < 111) {
        waker_sync();
        if (F.c && !F.detached && F.side.connecting) fake_side_connect_fail(&F);
    } else if (a < 118) { /* the server runs the SUBSCRIBE (an ACL may refuse it) */
        srv_subscribe(1);
    } else if (a < 130) { /* the client reads what its subscriber was pushed */
        read_pushes(1 + R(4), R(3));
        fake_run(&F);
    } else if (a < 132) {
        link_break();
    } else if (a < 133) {
        stranger_joins();
    } else if (a < 134) {
        forge_word();
    } else if (a < 135) {
        advance(1);
    } else if (a < 136) { /* the server's wall clock is stepped */
        srv_skew += R(2001) - 1000;
    } else if (a < 137) {
        pub_refused = !pub_refused && R(2);
    } else {
        stranger_takes();
    }
    settle();
    if (calm && F.c) { /* the subscriber comes up at once; words still wait to be read */
        link_connect();
        settle();
        srv_subscribe(0);
        if (nfifo && fifo[0].kind == PUSH_CONFIRM) read_pushes(1, R(3));
        settle();
    }
    compact();
}

/* The quiet phase (see the top): a free lock, while the link is up and a
 * handle waits for it, is taken within the longest sleep of its waiters,
 * plus the phase's granularity. */
#define QUIET_MS 1500
#define QUIET_TICK 10
static int64_t free_since[2];

static void check_served(void)
{
    for (int r = 0; r < 2; r++) {
        char k[16];
        snprintf(k, sizeof k, "lock:{r%d}", r);
        int64_t bound = -1;
        int who = -1;
        for (int i = 0; i < NL; i++) {
            const lease *l = &L[i];
            if (l->alive && l->lk && !l->acq_done && !l->release_called && strcmp(l->key, k) == 0 &&
                l->sleep_max > bound)
                bound = l->sleep_max, who = i;
        }
        if (who < 0 || !F.connected || find(k, F.now)) {
            if (free_since[r] >= 0 && who >= 0) model_reached.quiet_served++;
            free_since[r] = -1;
            continue;
        }
        if (free_since[r] < 0) free_since[r] = F.now;
        if (F.now - free_since[r] > bound + QUIET_TICK + 2) {
            violation("%s free since t=%lld while lease %d waits for it (t=%lld, it sleeps %lld ms at most)",
                      k, (long long)free_since[r], who, (long long)F.now, (long long)bound);
            free_since[r] = -1;
        }
    }
}

/* The quiet phase, after everything pending happened: a waiting lease
 * that read a "g" the queue published has taken the lock handed to it:
 * the key no longer holds its token as handed (its own attempt set it, or
 * its claim ended while the link was down). A forged "g", or a key its
 * own attempt set (an OK read too late), it learns at its next attempt. */
static void check_granted(void)
{
    for (int i = 0; i < NL && F.connected; i++) {
        const lease *l = &L[i];
        if (!told_g[i]) continue;
        told_g[i] = 0;
        if (!l->alive || l->acq_done || l->release_called) continue;
        kv *e = find(l->key, F.now);
        if (e && e->handed && strcmp(e->val, l->token) == 0)
            violation("lease %d read that %s was handed to it and has not taken it (t=%lld)", i, l->key,
                      (long long)F.now);
    }
}

static void quiet(void)
{
    quieting = 1;
    noscript_mode = next_error = pub_refused = 0;
    free_since[0] = free_since[1] = -1;
    memset(told_g, 0, sizeof told_g);
    int64_t end = F.now + QUIET_MS;
    while (F.c && F.now < end) {
        heal();
        if (!F.c) break;
        check_granted();
        check_served();
        if (R(20) == 0) { /* a holder lets go: waiters are served through the queue */
            lease *l = &L[R(NL)];
            if (l->alive && l->lk && l->acq_ok && !l->lost_ev && !l->release_called) release_one(l);
            heal();
            if (!F.c) break;
            check_granted();
            check_served();
        }
        int64_t dt = QUIET_TICK;
        if (F.timer_at > F.now && F.timer_at - F.now < dt) dt = F.timer_at - F.now;
        advance(dt);
        settle();
        check_held();
    }
    quieting = 0;
}

/* An acquire that ended without a lease deleted whatever its attempts set
 * and left the queue (its drop, behind them on the wire): once all it sent
 * has run, no key holds its token and no queue a live entry of it, unless
 * Redis refused that delete; or the queue handed the key to it, or kept
 * its entry, while its drop never ran and could have been lost: the link
 * was down when the acquire ended or broke since (the library gives a drop
 * up after the lease's TTL, and an entry can live longer, max(ttl, 1 s):
 * its hand-over then costs the queue one claim, docs/design.md, 11.4). */
static void check_no_orphan_keys(void)
{
    for (int i = 0; i < NL; i++) {
        const lease *l = &L[i];
        if (!l->acq || l->acq_ok || l->delete_failed || !l->token[0]) continue;
        int excused = l->failed_ev && !l->drop_ran && (!l->fail_up || links != l->fail_links);
        for (int k = 0; k < 16; k++)
            if (db[k].used && db[k].exp > F.now && strcmp(db[k].val, l->token) == 0 &&
                !(db[k].handed && excused)) {
                violation("lease %d: its acquire failed and left %s holding its token", i, db[k].key);
                return;
            }
        for (int r = 0; r < 2; r++)
            if (live_entry(&Q[r], l->token) && !excused) {
                violation("lease %d: its acquire failed and left a live entry in lock:{r%d}:queue", i, r);
                return;
            }
    }
}

static void reset(void)
{
    bad = 0;
    memset(db, 0, sizeof db);
    memset(L, 0, sizeof L);
    memset(Q, 0, sizeof Q);
    qexpire(&Q[0]);
    qexpire(&Q[1]);
    srv_skew = 0;
    strangers = 0;
    nfifo = sub_on = sub_link = pub_refused = 0;
    sub_idx = -1;
    noscript_mode = 0;
    native = native_refused = 0;
    next_error = 0;
    fence_ctr = 100;
    xh = 0;
    links = 1; /* fake_start connects */
    ending = RUNNING;
    over = close_cbs = draining = quieting = close_cut = 0;
}

int model_run(const model_driver *d)
{
    drv = d;
    reset();
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 50 + R(300);
    fast_server = R(2);
    fake_start(&F, &co);
    redlease_client_set_rng(F.c, rng_fn, NULL);
    hook_acts = R(2);
    calm = R(4) == 0;
    redlease_client_set_event_cb(F.c, hook, NULL);
    for (int st = 0; st < d->max_steps && F.c && (!d->more || d->more(d->ctx)); st++) {
        step();
        check_held();
    }
    if (F.c && ending == RUNNING) quiet();
    /* Drain: release everything and let the client settle (or finish
     * closing). */
    draining = 1;
    for (int i = 0; i < NL; i++)
        if (L[i].alive && !L[i].release_called) release_one(&L[i]);
    noscript_mode = 0;
    next_error = 0;
    for (int k = 0; k < 200 && F.c; k++) {
        heal();
        if (F.c && F.connected) check_no_orphan_keys();
        advance(50);
        check_held();
    }
    if (ending == CLOSING && close_cbs != 1) violation("close callback ran %d times", close_cbs);
    for (int i = 0; i < NL; i++)
        if (L[i].release_called && !L[i].rel) violation("no on_release for lease %d", i);
    if (F.c) {
        redlease_stats s;
        redlease_client_stats(F.c, &s);
        if (s.locks_now) violation("%llu handles left at the end", (unsigned long long)s.locks_now);
        ending = FREED;
    }
    fake_free(&F);
    waker_sync();
    if (fake_alloc_live()) violation("%ld allocations left", fake_alloc_live());
    return bad;
}
