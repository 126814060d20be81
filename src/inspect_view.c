/* SPDX-License-Identifier: MIT */
/* Reading an inspection (src/inspect_view.h): one server's answer to the
 * inspect script, the quorum's tally, and the public accessors. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "inspect_view.h"

/* ------------------------------------------------------------ reading */

static int is_str(const rdl_reply *r) { return r->type == RDL_REPLY_STRING; }

/* A whole number of ms or a count written as text (a score is a double's
 * text), or -1: none, negative, or past 9e18. */
static int64_t whole(const rdl_reply *r)
{
    char buf[48];
    if (!is_str(r) || r->len == 0 || r->len >= sizeof buf) return -1;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    char *end;
    double d = strtod(buf, &end);
    return *end || !(d >= 0 && d < 9e18) ? -1 : (int64_t)d;
}

/* The decimal at s (n bytes, digits only, at most 19), or -1. */
static int64_t digits(const char *s, size_t n)
{
    if (n == 0 || n > 19) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int is_token(const char *s, size_t n)
{
    if (n != RDL_TOKEN_LEN) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* A hash's fields (HGETALL's flat answer), sorted to be found by name. */
typedef struct field {
    const char *name;
    size_t len;
    const rdl_reply *value;
} field;

static int by_name(const void *a, const void *b)
{
    const field *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The string value of field name (n bytes, prefixed by "#" when hash is
 * set), or NULL. */
static const rdl_reply *find(const field *f, size_t nf, int hash, const char *name, size_t n)
{
    char key[RDL_INSPECT_TOKEN_MAX + 2];
    if (n + (size_t)hash > sizeof key) return NULL;
    key[0] = '#';
    memcpy(key + hash, name, n);
    field probe = {key, n + (size_t)hash, NULL};
    const field *hit = nf ? bsearch(&probe, f, nf, sizeof *f, by_name) : NULL;
    return hit && is_str(hit->value) ? hit->value : NULL;
}

/* The fields of hash h (an array of even length), sorted; 0 or ENOMEM. */
static int fields_of(const rdl_reply *h, field **out, size_t *n)
{
    *n = h->elements / 2;
    *out = rdl_malloc((*n ? *n : 1) * sizeof **out);
    if (!*out) return REDLEASE_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        const rdl_reply *name = &h->element[2 * i];
        if (is_str(name)) (*out)[k++] = (field){name->str, name->len, &h->element[2 * i + 1]};
    }
    *n = k;
    qsort(*out, k, sizeof **out, by_name);
    return 0;
}

/* The token a holder or waiter is shown by: ours as they are, another
 * writer's cleaned (as a host name: letters, digits, ".-_:") and cut. */
static void token_copy(char *out, const char *s, size_t n)
{
    if (is_token(s, n)) {
        memcpy(out, s, n);
        out[n] = '\0';
    } else if (!rdl_identity_clean(out, RDL_INSPECT_TOKEN_MAX, s, n, 1)) {
        strcpy(out, "?");
    }
}

/* The record rec (NULL: none) into the strings and fields of a holder or a
 * waiter; *at its time (0: not known). */
static void record_copy(const rdl_reply *rec, char *host, char *label, int64_t *pid,
                        uint64_t *fence, int64_t *at)
{
    rdl_record r;
    if (!rec || rdl_identity_parse(rec->str, rec->len, &r)) return;
    strcpy(host, r.host);
    strcpy(label, r.label);
    *pid = r.pid;
    if (fence) *fence = r.fence;
    *at = r.at;
}

static int64_t since(int64_t now, int64_t at) { return rdl_identity_age(now, at); }

/* Room for one more element of size bytes at the end of *v (n in use of
 * cap), zeroed; NULL when out of memory. */
static void *grow(void **v, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        size_t more = *cap ? 2 * *cap : 4;
        void *p = rdl_realloc(*v, more * size);
        if (!p) return NULL;
        *v = p;
        *cap = more;
    }
    void *e = (char *)*v + (*n)++ * size;
    memset(e, 0, size);
    return e;
}

static rdl_inspect_holder *add_holder(redlease_inspection *v)
{
    void *arr = v->holders;
    rdl_inspect_holder *h = grow(&arr, &v->nholders, &v->capholders, sizeof *h);
    v->holders = arr;
    if (!h) return NULL;
    h->pub.struct_size = sizeof h->pub;
    h->pub.held_ms = -1;
    h->pub.permits = 1;
    h->pub.servers = 1;
    return h;
}

static rdl_inspect_waiter *add_waiter(redlease_inspection *v)
{
    void *arr = v->waiters;
    rdl_inspect_waiter *w = grow(&arr, &v->nwaiters, &v->capwaiters, sizeof *w);
    v->waiters = arr;
    if (!w) return NULL;
    w->pub.struct_size = sizeof w->pub;
    w->pub.waiting_ms = -1;
    w->pub.permits = 1;
    w->pub.servers = 1;
    return w;
}

/* What the lock key's value says the resource is: its kind, a semaphore's
 * limit (man 3 redlease, KINDS). */
static int kind_of(const rdl_reply *value, int *limit)
{
    static const char sem[] = "semaphore ";
    size_t k = sizeof sem - 1;
    *limit = 0;
    if (value->type == RDL_REPLY_NIL) return REDLEASE_KIND_FREE;
    if (value->len == 6 && memcmp(value->str, "shared", 6) == 0) return REDLEASE_KIND_SHARED;
    if (value->len > k && memcmp(value->str, sem, k) == 0) {
        int64_t n = digits(value->str + k, value->len - k);
        if (n < 1 || n > REDLEASE_MAX_PERMITS) return REDLEASE_KIND_UNKNOWN;
        *limit = (int)n;
        return REDLEASE_KIND_SEMAPHORE;
    }
    /* a mutex's "TOKEN RECORD", or its bare token (handed over by the
     * queue, or written by 0.1.0) */
    if (is_token(value->str, value->len < RDL_TOKEN_LEN ? value->len : RDL_TOKEN_LEN) &&
        (value->len == RDL_TOKEN_LEN || value->str[RDL_TOKEN_LEN] == ' '))
        return REDLEASE_KIND_MUTEX;
    return REDLEASE_KIND_UNKNOWN;
}

/* The holders of a semaphore or of shared holders: the live ones of the
 * set (deadline past the server's now: dead, as the scripts count them),
 * each with its weight and record from the weights hash. */
static int read_set(redlease_inspection *v, const rdl_reply *set, const field *w, size_t nw)
{
    for (size_t i = 0; i + 1 < set->elements; i += 2) {
        const rdl_reply *tok = &set->element[i];
        int64_t deadline = whole(&set->element[i + 1]);
        if (!is_str(tok) || tok->len == 0 || deadline <= v->now) continue;
        rdl_inspect_holder *h = add_holder(v);
        if (!h) return REDLEASE_ENOMEM;
        token_copy(h->token, tok->str, tok->len);
        h->pub.ttl_ms = deadline - v->now;
        if (v->kind == REDLEASE_KIND_SEMAPHORE) {
            /* a missing weight counts 0, as the scripts count it */
            const rdl_reply *weight = find(w, nw, 0, tok->str, tok->len);
            int64_t n = weight ? whole(weight) : -1;
            h->pub.permits = n > 0 ? n : 0;
        }
        record_copy(find(w, nw, 1, tok->str, tok->len), h->host, h->label, &h->pub.pid,
                    &h->pub.fence, &h->pub.acquired_at_ms);
        h->pub.held_ms = since(v->now, h->pub.acquired_at_ms);
    }
    return 0;
}

/* The live waiters, in the queue's order: each token's entry in the
 * waiters hash is "deadline claim channel", dead past its deadline (or
 * without one), and its channel's first byte says what it waits to be. */
static int read_queue(redlease_inspection *v, const rdl_reply *queue, const field *e, size_t ne)
{
    for (size_t i = 0; i < queue->elements; i++) {
        const rdl_reply *tok = &queue->element[i];
        if (!is_str(tok) || tok->len == 0) continue;
        const rdl_reply *entry = find(e, ne, 0, tok->str, tok->len);
        const char *sp = entry ? memchr(entry->str, ' ', entry->len) : NULL;
        int64_t deadline = sp ? digits(entry->str, (size_t)(sp - entry->str)) : -1;
        if (deadline <= v->now) continue;
        const char *ch = memchr(sp + 1, ' ', entry->len - (size_t)(sp + 1 - entry->str));
        rdl_inspect_waiter *w = add_waiter(v);
        if (!w) return REDLEASE_ENOMEM;
        token_copy(w->token, tok->str, tok->len);
        char mark = ch && ch + 1 < entry->str + entry->len ? ch[1] : 0;
        w->pub.kind = mark == '{'   ? REDLEASE_KIND_SHARED
                      : mark == '}' ? REDLEASE_KIND_SEMAPHORE
                                    : REDLEASE_KIND_MUTEX;
        if (w->pub.kind == REDLEASE_KIND_SEMAPHORE) w->pub.permits = 0; /* not kept in Redis */
        record_copy(find(e, ne, 1, tok->str, tok->len), w->host, w->label, &w->pub.pid, NULL,
                    &w->pub.joined_at_ms);
        w->pub.waiting_ms = since(v->now, w->pub.joined_at_ms);
    }
    return 0;
}

/* The answer's parts, in the script's order. */
enum { A_PTTL, A_VALUE, A_FENCE, A_TIME, A_HOLDERS, A_WEIGHTS, A_QUEUE, A_WAITERS, A_COUNT };

static int shaped(const rdl_reply *r)
{
    if (!r || r->type != RDL_REPLY_ARRAY || r->elements != A_COUNT) return 0;
    const rdl_reply *a = r->element, *t = &a[A_TIME];
    return a[A_PTTL].type == RDL_REPLY_INTEGER &&
           (is_str(&a[A_VALUE]) || a[A_VALUE].type == RDL_REPLY_NIL) &&
           (is_str(&a[A_FENCE]) || a[A_FENCE].type == RDL_REPLY_NIL) && t->type == RDL_REPLY_ARRAY &&
           t->elements == 2 && whole(&t->element[0]) >= 0 && whole(&t->element[1]) >= 0 &&
           a[A_HOLDERS].type == RDL_REPLY_ARRAY && a[A_HOLDERS].elements % 2 == 0 &&
           a[A_WEIGHTS].type == RDL_REPLY_ARRAY && a[A_WEIGHTS].elements % 2 == 0 &&
           a[A_QUEUE].type == RDL_REPLY_ARRAY && a[A_WAITERS].type == RDL_REPLY_ARRAY &&
           a[A_WAITERS].elements % 2 == 0;
}

int rdl_inspect_parse(const rdl_reply *r, redlease_inspection *v)
{
    memset(v, 0, sizeof *v);
    v->servers = v->answered = 1;
    if (!shaped(r)) return REDLEASE_EPROTO;
    const rdl_reply *a = r->element;
    /* ms, as the scripts' clock() reads TIME */
    v->now = whole(&a[A_TIME].element[0]) * 1000 + whole(&a[A_TIME].element[1]) / 1000;
    int64_t counter = is_str(&a[A_FENCE]) ? digits(a[A_FENCE].str, a[A_FENCE].len) : -1;
    v->fence_counter = counter > 0 ? (uint64_t)counter : 0;
    const rdl_reply *value = &a[A_VALUE];
    v->kind = kind_of(value, &v->limit);
    field *w = NULL, *e = NULL;
    size_t nw = 0, ne = 0;
    int rc = fields_of(&a[A_WEIGHTS], &w, &nw);
    if (!rc) rc = fields_of(&a[A_WAITERS], &e, &ne);
    if (!rc && v->kind == REDLEASE_KIND_MUTEX) {
        rdl_inspect_holder *h = add_holder(v);
        if (!h) {
            rc = REDLEASE_ENOMEM;
        } else {
            token_copy(h->token, value->str, RDL_TOKEN_LEN);
            long long pttl = a[A_PTTL].integer;
            h->pub.ttl_ms = pttl >= 0 ? pttl : -1;
            if (value->len > RDL_TOKEN_LEN + 1) {
                rdl_reply rec = {.type = RDL_REPLY_STRING, .str = value->str + RDL_TOKEN_LEN + 1,
                                 .len = value->len - RDL_TOKEN_LEN - 1};
                record_copy(&rec, h->host, h->label, &h->pub.pid, &h->pub.fence,
                            &h->pub.acquired_at_ms);
            }
            h->pub.held_ms = since(v->now, h->pub.acquired_at_ms);
        }
    } else if (!rc && (v->kind == REDLEASE_KIND_SEMAPHORE || v->kind == REDLEASE_KIND_SHARED)) {
        rc = read_set(v, &a[A_HOLDERS], w, nw);
    }
    if (!rc) rc = read_queue(v, &a[A_QUEUE], e, ne);
    rdl_free(w);
    rdl_free(e);
    return rc;
}

/* ------------------------------------------------------------ the tally */

static int64_t forever(int64_t ttl) { return ttl < 0 ? INT64_MAX : ttl; }

static int longest_first(const void *a, const void *b)
{
    int64_t x = forever(*(const int64_t *)a), y = forever(*(const int64_t *)b);
    return (x < y) - (x > y);
}

/* The time a holder has by a majority: the need-th longest of its
 * servers' (-1: no expiry). */
static int64_t majority_ttl(int64_t *left, int servers, int need)
{
    qsort(left, (size_t)servers, sizeof *left, longest_first);
    return left[need - 1];
}

int rdl_inspect_most_held(const char *const *tokens, const int64_t *ttls, int n, int *first,
                          int64_t *ttl)
{
    int need = n / 2 + 1, best = 0, k = 0;
    int64_t left[REDLEASE_MAX_QUORUM];
    *first = -1;
    *ttl = -1;
    for (int i = 0; i < n; i++) {
        if (!tokens[i]) continue;
        int same = 0;
        for (int j = 0; j < n; j++) same += tokens[j] && strcmp(tokens[j], tokens[i]) == 0;
        if (same > best) best = same, *first = i;
    }
    if (best < need) return best;
    for (int j = 0; j < n && k < REDLEASE_MAX_QUORUM; j++)
        if (tokens[j] && strcmp(tokens[j], tokens[*first]) == 0) left[k++] = ttls[j];
    *ttl = majority_ttl(left, k, need);
    return best;
}

static rdl_inspect_holder *holder_named(redlease_inspection *v, const char *token)
{
    for (size_t i = 0; i < v->nholders; i++)
        if (strcmp(v->holders[i].token, token) == 0) return &v->holders[i];
    return NULL;
}

/* Every server's holders of a set of that kind, each once, with the ttl
 * each server gives it. */
static int tally_set(redlease_inspection *out, redlease_inspection *const *views, int n, int kind)
{
    for (int i = 0; i < n; i++) {
        const redlease_inspection *v = views[i];
        if (!v || v->kind != kind) continue;
        if (kind == REDLEASE_KIND_SEMAPHORE && !out->limit) out->limit = v->limit;
        for (size_t k = 0; k < v->nholders; k++) {
            const rdl_inspect_holder *h = &v->holders[k];
            rdl_inspect_holder *t = holder_named(out, h->token);
            if (t) {
                if (t->pub.servers < REDLEASE_MAX_QUORUM) t->left[t->pub.servers++] = h->pub.ttl_ms;
                continue;
            }
            if (!(t = add_holder(out))) return REDLEASE_ENOMEM;
            *t = *h;
            t->pub.servers = 1;
            t->left[0] = h->pub.ttl_ms;
        }
    }
    return 0;
}

int rdl_inspect_tally(redlease_inspection *out, redlease_inspection *const *views, int n,
                      int *cannot_tell)
{
    memset(out, 0, sizeof *out);
    *cannot_tell = 0;
    int need = n / 2 + 1, best_i = -1, unknown = 0, set_kind = 0;
    const char *tokens[REDLEASE_MAX_QUORUM] = {NULL}; /* a mutex's holder on each server */
    int64_t ttls[REDLEASE_MAX_QUORUM] = {0}, ttl;
    out->servers = n;
    for (int i = 0; i < n; i++) {
        const redlease_inspection *v = views[i];
        int mutex = v && v->kind == REDLEASE_KIND_MUTEX;
        tokens[i] = mutex ? v->holders[0].token : NULL;
        ttls[i] = mutex ? v->holders[0].pub.ttl_ms : -1;
        if (!v) continue;
        if (!out->answered++) out->now = v->now;
        if (v->fence_counter > out->fence_counter) out->fence_counter = v->fence_counter;
        unknown |= v->kind == REDLEASE_KIND_UNKNOWN;
        if (v->kind == REDLEASE_KIND_SEMAPHORE) set_kind = REDLEASE_KIND_SEMAPHORE;
        if (v->kind == REDLEASE_KIND_SHARED && !set_kind) set_kind = REDLEASE_KIND_SHARED;
    }
    /* the token most servers hold */
    int best = rdl_inspect_most_held(tokens, ttls, n, &best_i, &ttl);
    int unanswered = n - out->answered, could = 0;
    if (best >= need) {
        out->kind = REDLEASE_KIND_MUTEX;
        rdl_inspect_holder *h = add_holder(out);
        if (!h) return REDLEASE_ENOMEM;
        *h = views[best_i]->holders[0];
        h->pub.servers = 0;
        for (int j = 0; j < n; j++)
            if (tokens[j] && strcmp(tokens[j], h->token) == 0) h->left[h->pub.servers++] = ttls[j];
        qsort(h->left, (size_t)h->pub.servers, sizeof h->left[0], longest_first);
        h->pub.ttl_ms = ttl;
    } else if (set_kind) {
        /* a semaphore's holders, or shared ones: each holds while a
         * majority admits it (man 3 redlease, KINDS) */
        out->kind = set_kind;
        if (tally_set(out, views, n, set_kind)) return REDLEASE_ENOMEM;
        size_t kept = 0;
        for (size_t i = 0; i < out->nholders; i++) {
            rdl_inspect_holder *h = &out->holders[i];
            if (h->pub.servers < need) {
                could |= h->pub.servers + unanswered >= need;
                continue;
            }
            h->pub.ttl_ms = majority_ttl(h->left, h->pub.servers, need);
            if (kept != i) out->holders[kept] = *h;
            kept++;
        }
        out->nholders = kept;
    } else {
        out->kind = unknown ? REDLEASE_KIND_UNKNOWN : REDLEASE_KIND_FREE;
    }
    /* none holds by those that answered: free only if those that did not
     * could make no majority for anyone (a holder seen on too few, a
     * mutex's token, or one unseen) */
    *cannot_tell = !out->nholders && (could || best + unanswered >= need);
    for (int i = 0; i < n; i++) {
        const redlease_inspection *v = views[i];
        for (size_t k = 0; v && k < v->nwaiters; k++) {
            const rdl_inspect_waiter *w = &v->waiters[k];
            rdl_inspect_waiter *t = NULL;
            for (size_t j = 0; j < out->nwaiters && !t; j++)
                if (strcmp(out->waiters[j].token, w->token) == 0) t = &out->waiters[j];
            if (t) {
                t->pub.servers++;
                continue;
            }
            if (!(t = add_waiter(out))) return REDLEASE_ENOMEM;
            *t = *w;
            t->pub.servers = 1;
        }
    }
    return 0;
}

void rdl_inspect_finish(redlease_inspection *v)
{
    for (size_t i = 0; i < v->nholders; i++) {
        rdl_inspect_holder *h = &v->holders[i];
        h->pub.token = h->token;
        h->pub.host = h->host;
        h->pub.label = h->label;
    }
    for (size_t i = 0; i < v->nwaiters; i++) {
        rdl_inspect_waiter *w = &v->waiters[i];
        w->pub.token = w->token;
        w->pub.host = w->host;
        w->pub.label = w->label;
    }
}

void rdl_inspect_clear(redlease_inspection *v)
{
    rdl_free(v->holders);
    rdl_free(v->waiters);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------- the accessors */

int redlease_inspection_kind(const redlease_inspection *in) { return in ? in->kind : REDLEASE_KIND_FREE; }
int redlease_inspection_limit(const redlease_inspection *in) { return in ? in->limit : 0; }
uint64_t redlease_inspection_fence_counter(const redlease_inspection *in)
{
    return in ? in->fence_counter : 0;
}
int64_t redlease_inspection_server_ms(const redlease_inspection *in) { return in ? in->now : 0; }
int redlease_inspection_servers(const redlease_inspection *in) { return in ? in->servers : 0; }
int redlease_inspection_answered(const redlease_inspection *in) { return in ? in->answered : 0; }
size_t redlease_inspection_holder_count(const redlease_inspection *in) { return in ? in->nholders : 0; }
const redlease_holder *redlease_inspection_holder(const redlease_inspection *in, size_t i)
{
    return in && i < in->nholders ? &in->holders[i].pub : NULL;
}
size_t redlease_inspection_waiter_count(const redlease_inspection *in) { return in ? in->nwaiters : 0; }
const redlease_waiter *redlease_inspection_waiter(const redlease_inspection *in, size_t i)
{
    return in && i < in->nwaiters ? &in->waiters[i].pub : NULL;
}
