/* SPDX-License-Identifier: MIT */
/* The model check (model.c): the model's Redis. Its keys, each resource's
 * queue (the Lua of the queue's scripts, written again here), the commands
 * the client sent as Redis runs them and their replies as the client reads
 * them, a reconnect, keys lost, and other clients' waiters in the queues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int live_entry(queue *q, const char *tok)
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
void execute(void)
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
void wipe(void)
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

/* Another client's waiter joins a queue (told on its own channel). */
void stranger_joins(void)
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
