/* SPDX-License-Identifier: MIT */
/* Unit tests of the Cluster router (src/cluster.c and its use by the
 * locks) on the fake: the first seed is the fake's main link, the next
 * node the side link, then the peers. The CLUSTER SLOTS and redirect
 * parsers, nested replies through the hiredis conversion, routing by
 * slot, MOVED (the same request resent, the map asked again), ASK (ASKING
 * ahead, the map unchanged), held() across a redirected renewal, the
 * redirect limit, a new map moving a held lease, and every allocation
 * failing in turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "core_rig.h"
#include "fake.h"
#include "slot.h"
#include "testutil.h"
#include "transport_hiredis.h"

#define SEED_PORT 7001
#define OTHER_PORT 7002

/* ------------------------------------------------------------ parsers */

static void test_cluster_redirect_parser(void)
{
    int ask, port;
    unsigned slot;
    const char *host;
    size_t hlen;
    rdl_reply r = {.type = RDL_REPLY_ERROR, .str = "MOVED 3999 127.0.0.1:6381", .len = 25};
    CHECK_EQ(rdl_cluster_parse_redirect(&r, &ask, &slot, &host, &hlen, &port), 1);
    CHECK_EQ(ask, 0);
    CHECK_EQ(slot, 3999);
    CHECK(hlen == 9 && memcmp(host, "127.0.0.1", 9) == 0);
    CHECK_EQ(port, 6381);
    r.str = "ASK 16383 [::1]:7000";
    r.len = strlen(r.str);
    CHECK_EQ(rdl_cluster_parse_redirect(&r, &ask, &slot, &host, &hlen, &port), 1);
    CHECK_EQ(ask, 1);
    CHECK_EQ(slot, 16383);
    CHECK(hlen == 3 && memcmp(host, "::1", 3) == 0);
    const char *bad[] = {"MOVED",         "MOVED 1",          "MOVED x h:1", "MOVED 16384 h:1",
                         "MOVED 1 h",     "MOVED 1 h:0",      "MOVEDX 1 h:1", "ASK  1 h:1",
                         "ERR MOVED 1 h:1", "MOVED 1234567 h:1", "TRYAGAIN x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r.str = bad[i];
        r.len = strlen(bad[i]);
        CHECK_EQ(rdl_cluster_parse_redirect(&r, &ask, &slot, &host, &hlen, &port), 0);
    }
    /* ":port": the node that answered (unknown-endpoint) */
    r.str = "MOVED 7 :7002";
    r.len = strlen(r.str);
    CHECK_EQ(rdl_cluster_parse_redirect(&r, &ask, &slot, &host, &hlen, &port), 1);
    CHECK_EQ(hlen, 0);
    CHECK_EQ(port, 7002);
    rdl_reply status = {.type = RDL_REPLY_STATUS, .str = "MOVED 1 h:1", .len = 11};
    CHECK_EQ(rdl_cluster_parse_redirect(&status, &ask, &slot, &host, &hlen, &port), 0);
}

/* CLUSTER SLOTS as a server sends it: [[from, to, [host, port, id], ...]]. */
typedef struct range {
    int from, to;
    const char *host;
    int port;
} range;

typedef struct slots_reply {
    rdl_reply top, entry[4], field[4][3], node[4][3];
} slots_reply;

static const rdl_reply *build_slots(slots_reply *b, int n, const range *ranges)
{
    memset(b, 0, sizeof *b);
    for (int i = 0; i < n; i++) {
        b->node[i][0] = (rdl_reply){.type = RDL_REPLY_STRING, .str = ranges[i].host,
                                    .len = strlen(ranges[i].host)};
        b->node[i][1] = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = ranges[i].port};
        b->node[i][2] = (rdl_reply){.type = RDL_REPLY_STRING, .str = "0123abcd", .len = 8};
        b->field[i][0] = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = ranges[i].from};
        b->field[i][1] = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = ranges[i].to};
        b->field[i][2] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 3, .element = b->node[i]};
        b->entry[i] = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = 3, .element = b->field[i]};
    }
    b->top = (rdl_reply){.type = RDL_REPLY_ARRAY, .elements = (size_t)n, .element = b->entry};
    return &b->top;
}

typedef struct seen_ranges {
    int n;
    range r[4];
    char hosts[4][32];
} seen_ranges;

static int note_range(void *arg, unsigned from, unsigned to, const char *host, size_t hlen, int port)
{
    seen_ranges *s = arg;
    if (s->n == 4) return 9;
    snprintf(s->hosts[s->n], sizeof s->hosts[s->n], "%.*s", (int)hlen, host);
    s->r[s->n] = (range){(int)from, (int)to, s->hosts[s->n], port};
    s->n++;
    return 0;
}

static void test_cluster_slots_parser(void)
{
    slots_reply b;
    range ok[3] = {{0, 100, "10.0.0.1", 7001}, {101, 16383, "", 7002}, {5, 5, "?", 7003}};
    seen_ranges s = {0};
    CHECK_EQ(rdl_cluster_parse_slots(build_slots(&b, 3, ok), note_range, &s), 0);
    CHECK_EQ(s.n, 2); /* "?": no address known, left out */
    CHECK_EQ(s.r[0].to, 100);
    CHECK_STR(s.r[0].host, "10.0.0.1");
    CHECK_STR(s.r[1].host, ""); /* empty: the node asked */
    CHECK_EQ(s.r[1].port, 7002);
    /* a NIL host is the node asked too (unknown-endpoint) */
    range nil[1] = {{0, 16383, "x", 7004}};
    const rdl_reply *rn = build_slots(&b, 1, nil);
    b.node[0][0] = (rdl_reply){.type = RDL_REPLY_NIL};
    s.n = 0;
    CHECK_EQ(rdl_cluster_parse_slots(rn, note_range, &s), 0);
    CHECK(s.n == 1 && s.r[0].host[0] == '\0' && s.r[0].port == 7004);
    /* shapes that are not a slot map */
    range one[1] = {{0, 16383, "h", 1}};
    const rdl_reply *r = build_slots(&b, 1, one);
    b.field[0][1].integer = 16384;
    CHECK_EQ(rdl_cluster_parse_slots(r, note_range, &s), -1);
    b.field[0][1].integer = -1;
    CHECK_EQ(rdl_cluster_parse_slots(r, note_range, &s), -1);
    b.field[0][1].integer = 10;
    b.node[0][1].type = RDL_REPLY_STRING;
    CHECK_EQ(rdl_cluster_parse_slots(r, note_range, &s), -1);
    b.node[0][1].type = RDL_REPLY_INTEGER;
    b.entry[0].elements = 2;
    CHECK_EQ(rdl_cluster_parse_slots(r, note_range, &s), -1);
    rdl_reply err = {.type = RDL_REPLY_ERROR, .str = "ERR This instance has cluster support disabled"};
    CHECK_EQ(rdl_cluster_parse_slots(&err, note_range, &s), -1);
    CHECK_EQ(rdl_cluster_parse_slots(NULL, note_range, &s), -1);
}

/* hiredis's reply tree, built by hand, through the library's conversion. */
static redisReply *mk(int type, long long integer, const char *str)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = type;
    r->integer = integer;
    if (str) {
        r->str = strdup(str);
        r->len = strlen(str);
    }
    return r;
}

static redisReply *arr(size_t n)
{
    redisReply *r = mk(REDIS_REPLY_ARRAY, 0, NULL);
    r->elements = n;
    r->element = calloc(n, sizeof *r->element);
    return r;
}

static void test_cluster_nested_replies_converted(void)
{
    /* the CLUSTER SLOTS shape, with Redis 7's metadata as a 4th level */
    redisReply *top = arr(1), *entry = arr(3), *node = arr(4), *meta = arr(2);
    top->element[0] = entry;
    entry->element[0] = mk(REDIS_REPLY_INTEGER, 0, NULL);
    entry->element[1] = mk(REDIS_REPLY_INTEGER, 16383, NULL);
    entry->element[2] = node;
    node->element[0] = mk(REDIS_REPLY_STRING, 0, "10.0.0.9");
    node->element[1] = mk(REDIS_REPLY_INTEGER, 7009, NULL);
    node->element[2] = mk(REDIS_REPLY_STRING, 0, "id");
    node->element[3] = meta;
    meta->element[0] = mk(REDIS_REPLY_STRING, 0, "hostname");
    meta->element[1] = arr(1); /* a 5th level: too deep, OTHER */
    meta->element[1]->element[0] = mk(REDIS_REPLY_INTEGER, 1, NULL);
    rdl_reply r;
    rdl_reply_buf buf;
    rdl_hiredis_convert_reply(top, &r, &buf);
    CHECK_EQ(r.type, RDL_REPLY_ARRAY);
    CHECK(buf.heap != NULL); /* 10 replies below the top: more than the 8 kept inline */
    const rdl_reply *n = &r.element[0].element[2];
    CHECK_EQ(n->type, RDL_REPLY_ARRAY);
    CHECK_EQ(n->elements, 4);
    CHECK(n->element[0].len == 8 && memcmp(n->element[0].str, "10.0.0.9", 8) == 0);
    CHECK_EQ(n->element[1].integer, 7009);
    CHECK_EQ(n->element[3].type, RDL_REPLY_ARRAY);
    CHECK_EQ(n->element[3].element[1].type, RDL_REPLY_OTHER);
    seen_ranges s = {0};
    CHECK_EQ(rdl_cluster_parse_slots(&r, note_range, &s), 0);
    CHECK_EQ(s.n, 1);
    CHECK_STR(s.r[0].host, "10.0.0.9");
    rdl_reply_buf_free(&buf);
    /* no memory for it: the reply is OTHER, not half a tree */
    fake_alloc_fail_at(1);
    rdl_hiredis_convert_reply(top, &r, &buf);
    fake_alloc_fail_at(0);
    CHECK_EQ(r.type, RDL_REPLY_OTHER);
    CHECK(buf.heap == NULL);
    freeReplyObject(top);
    CHECK_EQ(fake_alloc_live(), 0);
}

/* ------------------------------------------------------------ routing */

/* A resource whose lock key is in [from, to], into buf. */
static const char *resource_in(char *buf, size_t size, int from, int to)
{
    for (int i = 0;; i++) {
        char key[64];
        snprintf(buf, size, "r%d", i);
        snprintf(key, sizeof key, "lock:{%s}", buf);
        int s = (int)rdl_key_slot(key, strlen(key));
        if (s >= from && s <= to) return buf;
    }
}

static int slot_of(const char *res)
{
    char key[64];
    snprintf(key, sizeof key, "lock:{%s}", res);
    return (int)rdl_key_slot(key, strlen(key));
}

/* The oldest command on link s (NULL: the seed's, the main link) answered
 * "KIND slot host:port" for res's slot, the host the fake node at port
 * has; then the timer runs. */
static void redirect(fake *f, fake_side *s, const char *kind, const char *res, int port)
{
    char text[64];
    snprintf(text, sizeof text, "%s %d 10.0.0.%d:%d", kind, slot_of(res),
             port == SEED_PORT ? 1 : 2, port);
    if (s)
        fake_link_reply_err(s, text);
    else
        fake_reply_err(f, text);
    fake_run(f);
}

/* A Cluster client seeded with the main link's node (10.0.0.1:7001),
 * connected; it has asked for the map. */
static void start_cluster(fake *f)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster.addrs = "10.0.0.1:7001";
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    fake_attach(f, &co);
    if (!f->c) return;
    nseen = 0;
    redlease_client_set_event_cb(f->c, record_event, NULL);
    fake_connect(f);
}

/* The map: slots 0-8191 on the seed, 8192-16383 on 10.0.0.2:7002. */
static void answer_map(fake *f)
{
    slots_reply b;
    range halves[2] = {{0, 8191, "10.0.0.1", SEED_PORT}, {8192, 16383, "10.0.0.2", OTHER_PORT}};
    CHECK(cmd_is(f, "CLUSTER", "SLOTS"));
    fake_reply(f, build_slots(&b, 2, halves));
    fake_run(f);
}

/* A Cluster client with its map, and a resource a (16 bytes) on the seed. */
static void start_mapped(fake *f, char *a)
{
    start_cluster(f);
    answer_map(f);
    resource_in(a, 16, 0, 8191);
}

/* r starts acquiring a with a wait budget; its first attempt is out. */
static void attempt_on_seed(fake *f, rec *r, const char *a, int64_t wait)
{
    redlease_lock_options o = opts(3000);
    o.wait_ms = wait;
    CHECK_EQ(start_lock(f, r, a, &o), REDLEASE_OK);
    fake_run(f);
    CHECK(is_attempt(f));
}

/* r holds res, a resource the map puts on the other node, whose link
 * connects for it; that link, or NULL (a failed check). */
static fake_side *hold_on_other(fake *f, rec *r, const char *res)
{
    CHECK_EQ(start_lock(f, r, res, NULL), REDLEASE_OK);
    fake_run(f);
    fake_side *other = fake_link_at(f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) return NULL;
    fake_link_connect(f, other);
    CHECK(link_cmd_is(other, "SET", NULL));
    fake_link_reply_status(other, "OK");
    fake_run(f);
    CHECK_EQ(r->acq_status, REDLEASE_OK);
    return other;
}

static void test_cluster_routes_by_slot(void)
{
    fake f;
    start_cluster(&f);
    CHECK_EQ(redlease_client_connected(f.c), 0); /* no map yet */
    answer_map(&f);
    CHECK_EQ(redlease_client_connected(f.c), 1);
    char a[16], b[16];
    resource_in(a, sizeof a, 0, 8191);
    resource_in(b, sizeof b, 8192, 16383);
    rec ra = {0}, rb = {0};
    hold(&f, &ra, a, opts(3000)); /* on the seed, the main link */
    CHECK(fake_link_at(&f, OTHER_PORT) == NULL); /* no link yet to a node no lock needs */
    fake_side *other = hold_on_other(&f, &rb, b);
    if (!other) goto out;
    CHECK_EQ(other->connects, 1);
    CHECK_EQ(fake_pending(&f), 0); /* nothing of b's on the seed */
    CHECK_EQ(redlease_lock_held(rb.lk), 1);
    CHECK_EQ(redlease_lock_held(ra.lk), 1);
    /* the node's link goes: only its lease is unconfirmed */
    fake_link_break(other);
    CHECK_EQ(redlease_lock_held(rb.lk), 0);
    CHECK_EQ(redlease_lock_held(ra.lk), 1);
out:
    end(&f);
}

/* A renewal answered MOVED: the same request goes to the node named, held()
 * is 0 until it lands there, validity still counts from its first send. */
static void test_cluster_moved_renewal(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    int64_t t0 = hold(&f, &r, a, opts(3000));
    /* OTHER_PORT's link exists from the map, connected on first use */
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    int64_t sent = f.now;
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    CHECK_EQ(redlease_lock_held(r.lk), 0); /* unconfirmed while it goes on */
    /* followed, so no failure: a later one's event must not name it */
    CHECK(strstr(redlease_client_errstr(f.c), "MOVED") == NULL);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) goto out;
    /* that node was not connected yet: the renewal waits for it, within
     * its deadline, and goes out afresh once it is ready */
    fake_advance(&f, 5);
    int64_t resent = f.now;
    fake_link_connect(&f, other);
    CHECK(link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_advance(&f, 3);
    fake_link_reply_int(other, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    CHECK_EQ(r.lost_calls, 0);
    /* valid from that send: t + TTL - drift (ttl/100 + 2) */
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), resent + 3000 - 32 - f.now);
    CHECK(resent > sent);
    /* the map is asked again (at most every RDL_CLUSTER_REFRESH_MS), of a
     * node that is ready; it now says the slot is the other node's */
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    int s = slot_of(a);
    slots_reply b;
    range now[3] = {{0, s - 1, "10.0.0.1", SEED_PORT}, {s, s, "10.0.0.2", OTHER_PORT},
                    {s + 1, 16383, "10.0.0.1", SEED_PORT}};
    const rdl_reply *map = build_slots(&b, 3, now);
    if (cmd_is(&f, "CLUSTER", "SLOTS"))
        fake_reply(&f, map);
    else if (link_cmd_is(other, "CLUSTER", "SLOTS"))
        fake_link_reply(other, map);
    else
        CHECK(!"the map asked again");
    fake_run(&f);
    /* the next renewal goes where MOVED said */
    fake_until(&f, resent + 1000);
    CHECK(link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK_EQ(fake_pending(&f), 0);
out:
    end(&f);
}

/* ASK: ASKING and the same request on the node named, the lock's node
 * unchanged; the lease is confirmed there. */
static void test_cluster_ask_renewal(void)
{
    fake f;
    start_cluster(&f);
    answer_map(&f);
    char a[16], b[16];
    resource_in(a, sizeof a, 0, 8191);
    resource_in(b, sizeof b, 8192, 16383);
    rec r = {0}, rb = {0};
    int64_t t0 = hold(&f, &r, a, opts(3000));
    fake_side *other = hold_on_other(&f, &rb, b); /* so its link is up */
    if (!other) goto out;
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    redirect(&f, NULL, "ASK", a, OTHER_PORT);
    CHECK(link_cmd_is(other, "ASKING", NULL));
    fake_link_reply_status(other, "OK");
    CHECK(link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    fake_advance(&f, 4);
    fake_link_reply_int(other, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    /* the same request went on: valid from its first send, on the seed */
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + 1000 + 3000 - 32 - f.now);
    /* the map is not changed by ASK: the next renewal goes to the seed */
    fake_until(&f, t0 + 2000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
out:
    end(&f);
}

/* Redirected for ever: after RDL_MAX_REDIRECTS the attempt has failed, a
 * transient failure retried with backoff (not a definite error). */
static void test_cluster_redirect_limit(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    attempt_on_seed(&f, &r, a, 1000);
    char to_other[64], to_seed[64];
    snprintf(to_other, sizeof to_other, "ASK %d 10.0.0.2:%d", slot_of(a), OTHER_PORT);
    snprintf(to_seed, sizeof to_seed, "ASK %d 10.0.0.1:%d", slot_of(a), SEED_PORT);
    /* the first ASK finds the other node unconnected: the attempt waits
     * for it, then goes there behind ASKING */
    CHECK(is_attempt(&f));
    fake_reply_err(&f, to_other);
    fake_run(&f);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) goto out;
    fake_link_connect(&f, other);
    int sends = 1;
    for (int i = 0; i < 10; i++) {
        if (is_attempt(&f)) {
            sends++;
            fake_reply_err(&f, to_other);
        } else if (link_cmd_is(other, "ASKING", NULL)) {
            fake_link_reply_status(other, "OK");
            sends++;
            fake_link_reply_err(other, to_seed);
        } else if (cmd_is(&f, "ASKING", NULL)) {
            fake_reply_status(&f, "OK");
        }
    }
    fake_run(&f);
    CHECK_EQ(sends, 2 + RDL_MAX_REDIRECTS); /* the one that waited, then the limit */
    CHECK_EQ(r.acq_calls, 0); /* not over: retried */
    CHECK_EQ(count_events(REDLEASE_EV_ATTEMPT_FAILED), 1);
    CHECK_EQ(last_event(REDLEASE_EV_ATTEMPT_FAILED)->status, REDLEASE_EREDIS);
    CHECK(last_event(REDLEASE_EV_ATTEMPT_FAILED)->retry_in_ms >= 0); /* retried */
    CHECK(strstr(redlease_client_errstr(f.c), "ASK ") != NULL);
out:
    end(&f);
}

/* A new map that moves a held lease's slot: it renews there at once and
 * is unconfirmed until then. */
static void test_cluster_new_map_moves_a_lease(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    hold(&f, &r, a, opts(3000));
    /* another lock meets MOVED for its own slot: the map is asked again */
    char b[16];
    snprintf(b, sizeof b, "%s", a);
    for (int i = 0; slot_of(b) == slot_of(a); i++) snprintf(b, sizeof b, "m%d", i);
    rec rb = {0};
    CHECK_EQ(start_lock(&f, &rb, b, NULL), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt(&f));
    redirect(&f, NULL, "MOVED", b, OTHER_PORT);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    slots_reply sb;
    range all[1] = {{0, 16383, "10.0.0.2", OTHER_PORT}};
    fake_reply(&f, build_slots(&sb, 1, all));
    fake_run(&f);
    /* r's slot is the other node's now: unconfirmed until renewed there */
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) goto out;
    fake_link_connect(&f, other);
    int renewed = 0;
    for (int i = 0; i < 2; i++) {
        if (link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))) {
            renewed++;
            fake_link_reply_int(other, 1);
        } else if (link_cmd_is(other, "SET", NULL)) {
            fake_link_reply_status(other, "OK");
        }
    }
    fake_run(&f);
    CHECK_EQ(renewed, 1);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    CHECK_EQ(rb.acq_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0); /* nothing of theirs on the seed any more */
out:
    end(&f);
}

/* A map query that could not be sent (no memory) is sent again soon, not
 * left until some other news. */
static void test_cluster_query_not_sent_is_retried(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster.addrs = "10.0.0.1:7001";
    fake_attach(&f, &co);
    fake_connect_raw(&f);
    fake_answer_handshake(&f);
    fake_alloc_fail_at(1); /* the query's request */
    fake_run(&f);
    fake_alloc_fail_at(0);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    answer_map(&f);
    CHECK_EQ(redlease_client_connected(f.c), 1);
    end(&f);
}

/* A redirect to ":port" goes to that port on the host that answered. */
static void test_cluster_redirect_to_the_answering_host(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    attempt_on_seed(&f, &r, a, 0);
    char moved[64];
    snprintf(moved, sizeof moved, "MOVED %d :7005", slot_of(a));
    fake_reply_err(&f, moved);
    fake_run(&f);
    fake_side *n = fake_link_at(&f, 7005);
    CHECK(n != NULL);
    if (n) {
        CHECK_STR(n->host, "10.0.0.1");
        fake_link_connect(&f, n);
        CHECK(link_cmd_is(n, "SET", NULL));
        fake_link_reply_status(n, "OK");
        fake_run(&f);
    }
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* A new map moves a lease while its renewal is out on the old node: the
 * renewal goes again, at once, to the new one, and what the old one
 * answers confirms nothing. */
static void test_cluster_move_with_renewal_out(void)
{
    fake f;
    start_cluster(&f); /* the first query went to the seed: the next goes to the other node */
    answer_map(&f);
    char a[16], b[16], c[16];
    resource_in(a, sizeof a, 0, 8191);
    resource_in(b, sizeof b, 8192, 16383);
    resource_in(c, sizeof c, slot_of(b) + 1, 16383); /* the other node too, another slot */
    rec ra = {0}, rb = {0}, rc = {0};
    int64_t t0 = hold(&f, &ra, a, opts(3000));
    fake_side *other = hold_on_other(&f, &rb, b);
    if (!other) goto out;
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* a's renewal, out */
    /* c meets MOVED (to the seed): the map is asked again, of the other node */
    CHECK_EQ(start_lock(&f, &rc, c, NULL), REDLEASE_OK);
    fake_run(&f);
    CHECK(link_cmd_is(other, "SET", NULL));
    char moved[64];
    snprintf(moved, sizeof moved, "MOVED %d 10.0.0.1:%d", slot_of(c), SEED_PORT);
    fake_link_reply_err(other, moved);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(link_cmd_is(other, "CLUSTER", "SLOTS"));
    slots_reply sb;
    range all[1] = {{0, 16383, "10.0.0.2", OTHER_PORT}};
    fake_link_reply(other, build_slots(&sb, 1, all));
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(ra.lk), 0);
    /* the old node confirms the old renewal: it counts for nothing */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(ra.lk), 0);
    CHECK_EQ(ra.lost_calls, 0);
    /* and the new one gets a's renewal now, not a renew interval later */
    int renewed = 0;
    for (int i = 0; i < 4 && fake_link_peek(other); i++) {
        if (link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))) {
            renewed++;
            fake_link_reply_int(other, 1);
        } else if (link_cmd_is(other, "SET", NULL) || link_cmd_is(other, "EVALSHA", NULL)) {
            fake_link_reply_status(other, "OK");
        }
    }
    fake_run(&f);
    CHECK_EQ(renewed, 1);
    CHECK_EQ(redlease_lock_held(ra.lk), 1);
out:
    end(&f);
}

/* An ASK to a node not connected yet: the attempt waits for it, behind
 * ASKING; if it times out first, ASKING goes with it, and the next
 * attempt goes by the map (never behind an ASKING nobody asked for). */
static void test_cluster_asking_ends_with_its_command(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    attempt_on_seed(&f, &r, a, 10000);
    redirect(&f, NULL, "ASK", a, OTHER_PORT);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other && other->connecting);
    if (!other) goto out;
    /* the other node never connects: the attempt's deadline passes */
    int attempts = count_events(REDLEASE_EV_ATTEMPT);
    while (count_events(REDLEASE_EV_ATTEMPT) == attempts && f.timer_at >= 0) fake_until(&f, f.timer_at);
    if (cmd_is(&f, "CLUSTER", "SLOTS")) answer_map(&f); /* the other node failed: asked again */
    CHECK(is_attempt(&f)); /* on the seed, as the map says */
    if (cmd_is(&f, "SET", NULL))
        fake_reply_status(&f, "OK");
    else
        fake_reply_int(&f, 1); /* a later attempt is the script */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    /* the other node connects at last: nothing of ours goes there */
    fake_link_connect(&f, other);
    CHECK(fake_link_peek(other) == NULL);
out:
    end(&f);
}

/* A node that answers no map (not a Cluster node, say) is asked again
 * less and less often, not ten times a second for ever. */
static void test_cluster_map_errors_back_off(void)
{
    fake f;
    start_cluster(&f);
    int64_t gaps[7], last = f.now;
    for (int i = 0; i < 7; i++) {
        while (!cmd_is(&f, "CLUSTER", "SLOTS") && f.timer_at >= 0) fake_until(&f, f.timer_at);
        gaps[i] = f.now - last;
        last = f.now;
        fake_reply_err(&f, "ERR This instance has cluster support disabled");
        fake_run(&f);
    }
    CHECK_EQ(gaps[0], 0);
    for (int i = 1; i < 7; i++) CHECK_EQ(gaps[i], RDL_CLUSTER_REFRESH_MS << (i < 5 ? i : 5));
    CHECK(strstr(redlease_client_errstr(f.c), "cluster support disabled") != NULL);
    CHECK_EQ(redlease_client_connected(f.c), 0);
    /* a map at last: the pace is back to the shortest */
    while (!cmd_is(&f, "CLUSTER", "SLOTS") && f.timer_at >= 0) fake_until(&f, f.timer_at);
    answer_map(&f);
    CHECK_EQ(redlease_client_connected(f.c), 1);
    end(&f);
}

/* A stale attempt (the acquire was cancelled) meeting MOVED is not
 * followed: it did nothing, and nobody waits for it. The drop behind it
 * (compare-and-delete of what it might have set) is. */
static void test_cluster_stale_redirect_ignored(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    attempt_on_seed(&f, &r, a, 0);
    CHECK_EQ(release(&r), REDLEASE_OK); /* the attempt goes stale; a drop follows it */
    fake_run(&f);
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    CHECK(fake_link_at(&f, OTHER_PORT) == NULL); /* not followed */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL); /* the drop is */
    if (other) {
        fake_link_connect(&f, other);
        CHECK(link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
        fake_link_reply_int(other, 0);
        fake_run(&f);
    }
    CHECK_EQ(r.rel_calls, 1);
    end(&f);
}

/* An attempt parked for an ASK to a node not connected yet; a
 * map read meanwhile (unchanged) moves it back to the seed: it must not go
 * there behind ASKING. */
static void test_cluster_map_ends_a_parked_ask(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    attempt_on_seed(&f, &r, a, 10000);
    redirect(&f, NULL, "ASK", a, OTHER_PORT);
    CHECK_EQ(fake_pending(&f), 0);
    /* another lock, routed to the seed by a MOVED: the map is asked again */
    char c[16];
    resource_in(c, sizeof c, slot_of(a) + 1, 8191);
    rec rc = {0};
    CHECK_EQ(start_lock(&f, &rc, c, NULL), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt(&f));
    redirect(&f, NULL, "MOVED", c, SEED_PORT);
    CHECK(is_attempt(&f));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    answer_map(&f); /* the same map */
    CHECK(!cmd_is(&f, "ASKING", NULL));
    end(&f);
}

/* A renewal ASKed to node B is out there when a new map moves
 * the lease to a third node C (not connected): B's late "1" must not make
 * the lease held before C confirms it. */
static void test_cluster_stale_ask_confirms_nothing_after_a_move(void)
{
    fake f;
    start_cluster(&f);
    answer_map(&f);
    char a[16], b[16], c[16], d[16];
    resource_in(a, sizeof a, 0, 8191);
    resource_in(b, sizeof b, 8192, 16383);
    resource_in(c, sizeof c, slot_of(a) + 1, 8191);
    snprintf(d, sizeof d, "zz");
    resource_in(d, sizeof d, slot_of(c) + 1, 8191);
    rec ra = {0}, rb = {0}, rc = {0}, rd = {0};
    int64_t t0 = hold(&f, &ra, a, opts(3000));
    fake_side *other = hold_on_other(&f, &rb, b);
    if (!other) {
        end(&f);
        return;
    }
    /* refresh 1 (goes to the other node, idle): same map */
    CHECK_EQ(start_lock(&f, &rc, c, NULL), REDLEASE_OK);
    fake_run(&f);
    redirect(&f, NULL, "MOVED", c, SEED_PORT);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(link_cmd_is(other, "CLUSTER", "SLOTS"));
    slots_reply sb;
    range halves[2] = {{0, 8191, "10.0.0.1", SEED_PORT}, {8192, 16383, "10.0.0.2", OTHER_PORT}};
    fake_link_reply(other, build_slots(&sb, 2, halves));
    fake_run(&f);
    /* a's renewal on the seed is ASKed to the other node, out there */
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    redirect(&f, NULL, "ASK", a, OTHER_PORT);
    CHECK(link_cmd_is(other, "ASKING", NULL));
    /* refresh 2 (the seed's turn): a's slot is on 10.0.0.3 now */
    CHECK_EQ(start_lock(&f, &rd, d, NULL), REDLEASE_OK);
    fake_run(&f);
    redirect(&f, NULL, "MOVED", d, SEED_PORT);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    int s = slot_of(a);
    range now3[4] = {{0, s - 1, "10.0.0.1", SEED_PORT}, {s, s, "10.0.0.3", 7003},
                     {s + 1, 8191, "10.0.0.1", SEED_PORT}, {8192, 16383, "10.0.0.2", OTHER_PORT}};
    fake_reply(&f, build_slots(&sb, 4, now3));
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(ra.lk), 0);
    /* B answers the ASKed renewal now */
    fake_link_reply_status(other, "OK");
    CHECK(link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_link_reply_int(other, 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(ra.lk), 0);
    end(&f);
}

/* max_attempts 1, the attempt out when a new map moves the lock: it goes
 * again from the new node as the same attempt, not a second one. */
static void test_cluster_move_keeps_the_attempt(void)
{
    fake f;
    char a[16], c[16];
    start_mapped(&f, a);
    resource_in(c, sizeof c, 8192, 16383);
    rec r = {0}, rc = {0};
    redlease_lock_options o = opts(3000);
    o.max_attempts = 1;
    o.wait_ms = 0;
    CHECK_EQ(start_lock(&f, &r, a, &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt(&f));
    /* c on the other node meets MOVED: the map is asked again, of the other */
    CHECK_EQ(start_lock(&f, &rc, c, NULL), REDLEASE_OK);
    fake_run(&f);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    if (!other) { CHECK(0); end(&f); return; }
    fake_link_connect(&f, other);
    CHECK(link_cmd_is(other, "SET", NULL));
    redirect(&f, other, "MOVED", c, OTHER_PORT);
    CHECK(link_cmd_is(other, "SET", NULL));
    fake_link_reply_status(other, "OK");
    fake_run(&f);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(link_cmd_is(other, "CLUSTER", "SLOTS"));
    slots_reply sb;
    range all[1] = {{0, 16383, "10.0.0.2", OTHER_PORT}};
    fake_link_reply(other, build_slots(&sb, 1, all));
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_ATTEMPT) - 1, 1);
    end(&f);
}

/* ------------------------------------------------------ queued waiting */

/* r waits in the queue of a (on the seed): its first attempt, the queue's
 * script, is out on the main link. */
static void queued_on_seed(fake *f, rec *r, const char *a)
{
    redlease_lock_options o = opts(3000);
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(start_lock(f, r, a, &o), REDLEASE_OK);
    fake_run(f);
    CHECK(cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)));
}

/* A slot being moved refuses the queue's script of three keys (TRYAGAIN)
 * until the move ends: the next attempt is the one-key kind, which an ASK
 * would serve, and the one after it the queue's script again. */
static void test_cluster_queue_tryagain_tries_one_key(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    queued_on_seed(&f, &r, a);
    fake_reply_err(&f, "TRYAGAIN Multiple keys request during rehashing of slot");
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0); /* a passing refusal: it waits on */
    while (!fake_pending(&f)) fake_advance(&f, 10);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE))); /* one key */
    CHECK_EQ(fake_peek(&f)->argc, 6);
    CHECK(strcmp(fake_peek(&f)->argv[2], "1") == 0);
    fake_reply_int(&f, 0); /* busy */
    fake_run(&f);
    while (!fake_pending(&f)) fake_advance(&f, 10);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE))); /* the queue again */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* The wake-up channel listens on one node (a script's PUBLISH crosses the
 * cluster bus): when that node's link fails, it moves on to the next node
 * the client knows, subscribes there, and every waiter checks. */
static void test_cluster_channel_moves_to_the_next_node(void)
{
    fake f;
    char a[16], b[16];
    start_mapped(&f, a);
    resource_in(b, sizeof b, 8192, 16383);
    rec rb = {0}, r = {0};
    fake_side *other = hold_on_other(&f, &rb, b); /* the client knows both nodes */
    if (!other) goto out;
    queued_on_seed(&f, &r, a);
    fake_reply_int(&f, -20000); /* busy: the channel opens, on the seed */
    fake_run(&f);
    fake_side *w = f.side.cn && f.side.connecting ? &f.side : NULL;
    for (int i = 0; i < FAKE_PEERS; i++)
        if (f.peers[i].cn && f.peers[i].connecting) w = &f.peers[i];
    CHECK(w != NULL);
    if (!w) goto out;
    CHECK_EQ(w->port, SEED_PORT);
    fake_link_connect(&f, w);
    fake_link_subscribed(w);
    fake_run(&f);
    while (fake_pending(&f)) { /* the subscription has the waiter check, joining */
        fake_reply_int(&f, -20000);
        fake_run(&f);
    }
    fake_link_break(w); /* the seed's node fails the channel */
    fake_run(&f);
    fake_advance(&f, 20); /* the reconnect backoff (10 ms) */
    CHECK(w->connecting);
    CHECK_EQ(w->port, OTHER_PORT);
    CHECK_STR(w->host, "10.0.0.2");
    fake_link_connect(&f, w);
    fake_cmd *sub = &w->cmds[w->ncmds - 1];
    CHECK(sub->subscribed && strcmp(sub->argv[0], "SUBSCRIBE") == 0);
    fake_link_subscribed(w);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE))); /* every waiter checks */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
out:
    end(&f);
}

/* A node not in a cluster yet answers CLUSTER SLOTS with an empty map:
 * that is no map, the one we have stays, and the map is asked again. */
static void test_cluster_empty_map_is_no_map(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    rec r = {0};
    hold(&f, &r, a, opts(3000));
    char b[16];
    resource_in(b, sizeof b, slot_of(a) + 1, 8191);
    rec rb = {0};
    attempt_on_seed(&f, &rb, b, 0);
    redirect(&f, NULL, "MOVED", b, SEED_PORT);
    fake_reply_status(&f, "OK");
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    slots_reply sb;
    fake_reply(&f, build_slots(&sb, 0, NULL));
    fake_run(&f);
    CHECK(strstr(redlease_client_errstr(f.c), "no slot with a usable address") != NULL);
    CHECK_EQ(redlease_lock_held(r.lk), 1); /* nothing moved */
    fake_advance(&f, 2 * RDL_CLUSTER_REFRESH_MS);
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS")); /* asked again */
    end(&f);
}

/* ------------------------------------------------- allocation failures */

static void oom_scenario_cluster(long fail_at, int *ok)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster.addrs = "10.0.0.1:7001,10.0.0.3:7003";
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    if (!oom_start(&f, &co, fail_at)) return;
    int good = 0;
    rec r = {0}; /* lives until the client is freed: its callbacks run then */
    if (cmd_is(&f, "CLUSTER", "SLOTS")) {
        answer_map(&f);
        char b[16];
        resource_in(b, sizeof b, 8192, 16383);
        if (start_lock(&f, &r, b, NULL) == REDLEASE_OK) {
            fake_run(&f);
            fake_side *other = fake_link_at(&f, OTHER_PORT);
            if (other) {
                fake_link_connect(&f, other);
                if (link_cmd_is(other, "SET", NULL)) {
                    char moved[64];
                    snprintf(moved, sizeof moved, "MOVED %d 10.0.0.1:%d", slot_of(b), SEED_PORT);
                    fake_link_reply_err(other, moved);
                    fake_run(&f);
                    if (is_attempt(&f)) {
                        fake_reply_status(&f, "OK");
                        fake_run(&f);
                        good = r.acq_status == REDLEASE_OK && redlease_lock_held(r.lk);
                    }
                }
            }
        }
    }
    fake_alloc_fail_at(0);
    fake_free(&f);
    CHECK_EQ(fake_alloc_live(), 0);
    if (good && fail_at == 0) (*ok)++;
}

static void test_cluster_allocation_failures(void)
{
    long n = alloc_sweep(oom_scenario_cluster);
    printf("# %ld allocations, each failed in turn\n", n);
}

int main(int argc, char **argv)
{
    fake_alloc_install();
    static const test_case cases[] = {
        TEST_CASE(test_cluster_redirect_parser),
        TEST_CASE(test_cluster_slots_parser),
        TEST_CASE(test_cluster_nested_replies_converted),
        TEST_CASE(test_cluster_routes_by_slot),
        TEST_CASE(test_cluster_moved_renewal),
        TEST_CASE(test_cluster_ask_renewal),
        TEST_CASE(test_cluster_redirect_limit),
        TEST_CASE(test_cluster_new_map_moves_a_lease),
        TEST_CASE(test_cluster_map_errors_back_off),
        TEST_CASE(test_cluster_query_not_sent_is_retried),
        TEST_CASE(test_cluster_redirect_to_the_answering_host),
        TEST_CASE(test_cluster_move_with_renewal_out),
        TEST_CASE(test_cluster_asking_ends_with_its_command),
        TEST_CASE(test_cluster_stale_redirect_ignored),
        TEST_CASE(test_cluster_map_ends_a_parked_ask),
        TEST_CASE(test_cluster_stale_ask_confirms_nothing_after_a_move),
        TEST_CASE(test_cluster_move_keeps_the_attempt),
        TEST_CASE(test_cluster_empty_map_is_no_map),
        TEST_CASE(test_cluster_queue_tryagain_tries_one_key),
        TEST_CASE(test_cluster_channel_moves_to_the_next_node),
        TEST_CASE(test_cluster_allocation_failures),
    };
    return run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
}
