/* SPDX-License-Identifier: MIT */
/* What the files of test_cluster share: the CLUSTER SLOTS replies they
 * build, and the fake Cluster of the routing cases (the first seed is the
 * fake's main link, the next node the side link). Header-only, as
 * core_rig.h: each file has its own copy of these helpers and of the event
 * recorder they start, so a case reads the events its own file recorded. */
#ifndef REDLEASE_TEST_CLUSTER_H
#define REDLEASE_TEST_CLUSTER_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "core_rig.h"
#include "fake.h"
#include "slot.h"
#include "testutil.h"

#define SEED_PORT 7001
#define OTHER_PORT 7002

/* CLUSTER SLOTS as a server sends it: [[from, to, [host, port, id], ...]]. */
typedef struct range {
    int from, to;
    const char *host;
    int port;
} range;

typedef struct slots_reply {
    rdl_reply top, entry[4], field[4][3], node[4][3];
} slots_reply;

static inline const rdl_reply *build_slots(slots_reply *b, int n, const range *ranges)
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

/* ------------------------------------------------------------ routing */

/* A resource whose lock key is in [from, to], into buf. */
static inline const char *resource_in(char *buf, size_t size, int from, int to)
{
    for (int i = 0;; i++) {
        char key[64];
        snprintf(buf, size, "r%d", i);
        snprintf(key, sizeof key, "lock:{%s}", buf);
        int s = (int)rdl_key_slot(key, strlen(key));
        if (s >= from && s <= to) return buf;
    }
}

static inline int slot_of(const char *res)
{
    char key[64];
    snprintf(key, sizeof key, "lock:{%s}", res);
    return (int)rdl_key_slot(key, strlen(key));
}

/* The oldest command on link s (NULL: the seed's, the main link) answered
 * "KIND slot host:port" for res's slot, the host the fake node at port
 * has; then the timer runs. */
static inline void redirect(fake *f, fake_side *s, const char *kind, const char *res, int port)
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
static inline void start_cluster(fake *f)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster_addrs = "10.0.0.1:7001";
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    if (!attach_recording(f, &co)) return;
    fake_connect(f);
}

/* The map: slots 0-8191 on the seed, 8192-16383 on 10.0.0.2:7002. */
static inline void answer_map(fake *f)
{
    slots_reply b;
    range halves[2] = {{0, 8191, "10.0.0.1", SEED_PORT}, {8192, 16383, "10.0.0.2", OTHER_PORT}};
    CHECK(cmd_is(f, "CLUSTER", "SLOTS"));
    fake_reply(f, build_slots(&b, 2, halves));
    fake_run(f);
}

/* A Cluster client with its map, and a resource a (16 bytes) on the seed. */
static inline void start_mapped(fake *f, char *a)
{
    start_cluster(f);
    answer_map(f);
    resource_in(a, 16, 0, 8191);
}

/* A Cluster client with its map, a resource a (16 bytes) on the seed and
 * b (16 bytes) on the other node. */
static inline void start_halves(fake *f, char *a, char *b)
{
    start_mapped(f, a);
    resource_in(b, 16, 8192, 16383);
}

/* r starts acquiring a with a wait budget; its first attempt is out. */
static inline void attempt_on_seed(fake *f, rec *r, const char *a, int64_t wait)
{
    redlease_lock_options o = opts(3000);
    o.wait_ms = wait;
    CHECK_EQ(start_lock(f, r, a, &o), REDLEASE_OK);
    fake_run(f);
    CHECK(is_attempt(f));
}

/* r holds res, a resource the map puts on the other node, whose link
 * connects for it; that link, or NULL (a failed check). */
static inline fake_side *hold_on_other(fake *f, rec *r, const char *res)
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

/* The cases of the other files, in the order test_cluster.c runs them. */
void test_cluster_redirect_parser(void);
void test_cluster_slots_parser(void);
void test_cluster_nested_replies_converted(void);
void test_cluster_routes_by_slot(void);
void test_cluster_moved_renewal(void);
void test_cluster_ask_renewal(void);
void test_cluster_redirect_limit(void);
void test_cluster_renewal_in_a_moved_ping_pong(void);
void test_cluster_new_map_moves_a_lease(void);
void test_cluster_map_errors_back_off(void);
void test_cluster_query_not_sent_is_retried(void);
void test_cluster_redirect_to_the_answering_host(void);
void test_cluster_move_with_renewal_out(void);
void test_cluster_asking_ends_with_its_command(void);
void test_cluster_stale_redirect_ignored(void);
void test_cluster_map_ends_a_parked_ask(void);
void test_cluster_stale_ask_confirms_nothing_after_a_move(void);
void test_cluster_move_keeps_the_attempt(void);
void test_cluster_empty_map_is_no_map(void);
void test_cluster_queue_tryagain_tries_one_key(void);
void test_cluster_channel_moves_to_the_next_node(void);
void test_cluster_router_follows_redirects(void);
void test_cluster_events_name_the_node(void);
void test_cluster_map_asked_again_while_a_lost_node_serves(void);

#endif
