/* SPDX-License-Identifier: MIT */
/* The client's wake-up channel: a subscriber connection and the waiting
 * handles it finds by token (src/waker.h says what it tells its owner;
 * docs/design.md, section 11, why). */
#include <string.h>

#include "alloc.h"
#include "waker.h"

#define WAKER_FIRST_BUCKETS 16

/* ------------------------------------------------------------ words */

static int hex_digit(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

int rdl_waker_parse_word(const char *msg, size_t len, char token[RDL_TOKEN_LEN + 1], int64_t *ms)
{
    *ms = 0;
    if (len < 2 + RDL_TOKEN_LEN || msg[1] != ' ') return 0;
    int kind = msg[0];
    if (kind != RDL_WORD_GRANTED && kind != RDL_WORD_CHECK) return 0;
    for (size_t i = 0; i < RDL_TOKEN_LEN; i++)
        if (!hex_digit(msg[2 + i])) return 0;
    memcpy(token, msg + 2, RDL_TOKEN_LEN);
    token[RDL_TOKEN_LEN] = '\0';
    size_t i = 2 + RDL_TOKEN_LEN;
    if (kind == RDL_WORD_GRANTED) return i == len ? kind : 0;
    if (i + 1 >= len || msg[i] != ' ') return 0;
    int64_t v = 0;
    for (i++; i < len; i++) {
        if (msg[i] < '0' || msg[i] > '9' || v > (INT64_MAX - 9) / 10) return 0;
        v = v * 10 + (msg[i] - '0');
    }
    *ms = v < REDLEASE_MAX_TTL_MS ? v : REDLEASE_MAX_TTL_MS; /* a claim is a TTL */
    return kind;
}

/* ------------------------------------------------------------ the table */

/* Tokens are random: their first 16 digits spread them evenly. */
static uint64_t token_hash(const char *token)
{
    uint64_t h = 0;
    for (int i = 0; i < 16; i++) {
        char ch = token[i];
        h = h << 4 | (uint64_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
    }
    return h;
}

static rdl_list *bucket(const rdl_waker *k, const char *token)
{
    return &k->buckets[token_hash(token) & (k->nbuckets - 1)];
}

static rdl_waiter *find(const rdl_waker *k, const char *token)
{
    if (!k->buckets) return NULL;
    rdl_list *b = bucket(k, token);
    for (rdl_list *p = b->next; p != b; p = p->next) {
        rdl_waiter *w = RDL_CONTAINER(p, rdl_waiter, link);
        if (memcmp(w->token, token, RDL_TOKEN_LEN) == 0) return w;
    }
    return NULL;
}

/* Twice the buckets once they hold two waiters each on average; a table
 * that cannot grow stays as it is, only slower. */
static void grow(rdl_waker *k)
{
    size_t n = k->nbuckets * 2;
    rdl_list *nb = rdl_malloc(n * sizeof *nb);
    if (!nb) return;
    for (size_t i = 0; i < n; i++) rdl_list_init(&nb[i]);
    rdl_list *old = k->buckets;
    size_t oldn = k->nbuckets;
    k->buckets = nb;
    k->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        while (!rdl_list_empty(&old[i])) {
            rdl_list *p = old[i].next;
            rdl_list_remove(p);
            rdl_list_push_back(bucket(k, RDL_CONTAINER(p, rdl_waiter, link)->token), p);
        }
    }
    rdl_free(old);
}

/* Waiters leave by unlinking themselves, so the count is only a hint for
 * growing: recounted when it says the table is full. */
static size_t recount(rdl_waker *k)
{
    size_t n = 0;
    for (size_t i = 0; i < k->nbuckets; i++)
        for (rdl_list *p = k->buckets[i].next; p != &k->buckets[i]; p = p->next) n++;
    return k->count = n;
}

int rdl_waker_add(rdl_waker *k, rdl_waiter *w, int64_t now)
{
    if (rdl_waker_has(w)) return REDLEASE_OK;
    if (!k->buckets) {
        k->buckets = rdl_malloc(WAKER_FIRST_BUCKETS * sizeof *k->buckets);
        if (!k->buckets) return REDLEASE_ENOMEM;
        k->nbuckets = WAKER_FIRST_BUCKETS;
        for (size_t i = 0; i < k->nbuckets; i++) rdl_list_init(&k->buckets[i]);
    }
    if (++k->count > 2 * k->nbuckets && recount(k) >= 2 * k->nbuckets) grow(k);
    rdl_list_push_back(bucket(k, w->token), &w->link);
    if (rdl_conn_idle(&k->conn)) rdl_conn_connect(&k->conn, now);
    return REDLEASE_OK;
}

/* ------------------------------------------------ the subscription */

static void tell_deadline(rdl_waker *k) { k->ops->deadline(k->relay.owner, rdl_waker_deadline(k)); }

static void subscribe(rdl_waker *k)
{
    rdl_req *sub = rdl_calloc(1, sizeof *sub);
    const char *argv[2] = {"SUBSCRIBE", k->channel};
    size_t lens[2] = {9, k->channel_len};
    if (sub) {
        sub->kind = RDL_REQ_WAKE_SUB;
        sub->script = -1;
        sub->t0 = rdl_clock_now(k->conn.clock);
        sub->epoch = rdl_conn_epoch(&k->conn);
    }
    if (sub && rdl_conn_subscribe(&k->conn, sub, 2, argv, lens) == 0) {
        k->sub = sub;
        return;
    }
    int status = sub ? REDLEASE_ECONN : REDLEASE_ENOMEM;
    rdl_free(sub);
    /* waiters go on by their timers; the next link tries again */
    rdl_conn_restart(&k->conn, status, "could not subscribe");
}

static int is_string(const rdl_reply *r, const char *s)
{
    size_t n = strlen(s);
    return r->type == RDL_REPLY_STRING && r->len == n && memcmp(r->str, s, n) == 0;
}

/* Words published while nobody listened are lost: every waiter checks. A
 * word only schedules (it never ends a waiter), so the table holds still. */
static void check_all(rdl_waker *k)
{
    for (size_t i = 0; i < k->nbuckets; i++)
        for (rdl_list *p = k->buckets[i].next; p != &k->buckets[i]; p = p->next)
            k->ops->word(k->relay.owner, RDL_CONTAINER(p, rdl_waiter, link), 0);
}

/* ["subscribe", channel, n], then ["message", channel, word] for ever. */
static void on_push(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_waker *k = owner;
    if (req != k->sub) return;
    if (r->type == RDL_REPLY_ERROR) {
        /* refused (an ACL on channels): waiters go by their timers, and
         * the next link, after the reconnect backoff, asks again */
        rdl_conn_restart(&k->conn, REDLEASE_EREDIS, NULL);
        k->ops->channel(k->relay.owner, REDLEASE_EREDIS, r->str, r->len);
        return;
    }
    if (r->type != RDL_REPLY_ARRAY || r->elements != 3) return;
    if (is_string(&r->element[0], "subscribe")) {
        k->subscribed = 1;
        rdl_conn_backoff_reset(&k->conn); /* this link proved useful */
        check_all(k);
        k->told_up = 1;
        k->ops->channel(k->relay.owner, REDLEASE_OK, NULL, 0);
        return;
    }
    const rdl_reply *msg = &r->element[2];
    if (!is_string(&r->element[0], "message") || msg->type != RDL_REPLY_STRING) return;
    char token[RDL_TOKEN_LEN + 1];
    int64_t ms;
    int kind = rdl_waker_parse_word(msg->str, msg->len, token, &ms);
    rdl_waiter *w = kind ? find(k, token) : NULL;
    if (!w) return; /* a handle that stopped waiting, or a stranger's word */
    k->words++;
    k->ops->word(k->relay.owner, w, ms);
}

/* ------------------------------------------------- the connection's reports */

static void on_ready(void *owner) { subscribe(owner); }

static void on_refused(void *owner, int status, int64_t now)
{
    (void)owner, (void)status, (void)now; /* waiters go on by their timers */
}

static void on_reply(void *owner, rdl_req *req, const rdl_reply *r)
{
    rdl_waker *k = owner;
    (void)r;
    if (!req) return; /* the handshake's */
    if (req == k->sub) { /* its end: the link is gone */
        k->sub = NULL;
        k->subscribed = 0;
    }
    rdl_free(req);
}

static void on_event(void *owner, int type, int status, int64_t retry_in)
{
    rdl_waker *k = owner;
    (void)retry_in;
    if (type != REDLEASE_EV_DISCONNECTED) return;
    if (k->told_up) { /* once per subscription lost, not per failed reconnect */
        k->told_up = 0;
        /* before link_lost points the link elsewhere: it names the server lost */
        k->ops->channel(k->relay.owner, status ? status : REDLEASE_ECONN, NULL, 0);
    }
    if (!k->relay.ops->ending(k->relay.owner)) k->ops->link_lost(k->relay.owner);
}

static void on_error(void *owner, const char *text, size_t len)
{
    (void)owner, (void)text, (void)len;
}

static void on_deadline(void *owner, int64_t at)
{
    (void)at;
    tell_deadline(owner);
}

static const rdl_conn_owner conn_owner = {
    .enter = rdl_relay_enter,
    .leave = rdl_relay_leave,
    .ending = rdl_relay_ending,
    .drain = rdl_relay_drain,
    .ready = on_ready,
    .refused = on_refused,
    .reply = on_reply,
    .push = on_push,
    .event = on_event,
    .error = on_error,
    .deadline = on_deadline,
};

/* ------------------------------------------------------------ life */

int rdl_waker_init(rdl_waker *k, const rdl_conn_config *base, const char *prefix, size_t prefix_len,
                   const rdl_waker_owner *ops, void *owner, rdl_clock *clock,
                   const rdl_rng *rng)
{
    static const char mid[] = "wake:";
    memset(k, 0, sizeof *k);
    k->wake.idx = RDL_HEAP_OUT;
    k->wake.kind = RDL_WAKE_WAKER;
    k->ops = ops;
    k->relay = (rdl_relay){&ops->relay, owner};
    k->channel_len = prefix_len + sizeof mid - 1 + RDL_TOKEN_LEN;
    k->channel = rdl_malloc(k->channel_len + 1);
    rdl_conn_config cc = *base;
    cc.verify_primary = 0; /* it only listens; the client's link checks the primary */
    cc.probe = 0;
    /* useful once subscribed, not once ready: a server that refuses the
     * SUBSCRIBE (an ACL without channels) is asked again at the pace of
     * the reconnect backoff, not at once after every handshake */
    cc.hold_backoff = 1;
    int rc = rdl_conn_init(&k->conn, &cc, &conn_owner, k, clock, rng);
    if (!k->channel) return REDLEASE_ENOMEM;
    memcpy(k->channel, prefix, prefix_len);
    memcpy(k->channel + prefix_len, mid, sizeof mid - 1);
    /* a token's randomness names the channel: no two clients share one */
    if (rdl_token_new(k->channel + prefix_len + sizeof mid - 1) != 0) return REDLEASE_ESYS;
    return rc;
}

void rdl_waker_free(rdl_waker *k)
{
    rdl_conn_free(&k->conn); /* the subscription comes back, NULL */
    /* waiters still linked leave now: their handles may outlive the table */
    for (size_t i = 0; i < k->nbuckets; i++)
        while (!rdl_list_empty(&k->buckets[i])) rdl_list_remove(k->buckets[i].next);
    rdl_free(k->channel);
    rdl_free(k->buckets);
    k->channel = NULL;
    k->buckets = NULL;
}

int rdl_waker_attach(rdl_waker *k, rdl_transport_factory make, struct rdl_loop *loop)
{
    return rdl_conn_attach(&k->conn, make, loop);
}

void rdl_waker_run(rdl_waker *k, int64_t now)
{
    rdl_conn_run(&k->conn, now);
    tell_deadline(k);
}
