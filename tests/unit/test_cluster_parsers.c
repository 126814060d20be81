/* SPDX-License-Identifier: MIT */
/* test_cluster: the parsers of CLUSTER SLOTS and of the MOVED and ASK
 * redirects, and nested replies through the hiredis conversion. */
#include <hiredis/hiredis.h>

#include "test_cluster.h"
#include "transport_hiredis.h"

/* ------------------------------------------------------------ parsers */

void test_cluster_redirect_parser(void)
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

void test_cluster_slots_parser(void)
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

void test_cluster_nested_replies_converted(void)
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
