/* SPDX-License-Identifier: MIT */
/* Unit tests of the Cluster router (src/cluster.c and its use by the
 * locks) on the fake: the first seed is the fake's main link, the next
 * node the side link, then the peers. The CLUSTER SLOTS and redirect
 * parsers, nested replies through the hiredis conversion, routing by
 * slot, MOVED (the same request resent, the map asked again), ASK (ASKING
 * ahead, the map unchanged), held() across a redirected renewal, the
 * redirect limit, a new map moving a held lease, and every allocation
 * failing in turn.
 *
 * One program, one file per topic: test_cluster_parsers.c,
 * test_cluster_routing.c, test_cluster_queue.c (queued waiting), and here
 * the allocation failures and the order the cases run in; test_cluster.h
 * is what they share. */
#include "test_cluster.h"

/* ------------------------------------------------- allocation failures */

static void oom_scenario_cluster(long fail_at, int *ok)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster_addrs = "10.0.0.1:7001,10.0.0.3:7003";
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
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
        TEST_CASE(test_cluster_renewal_in_a_moved_ping_pong),
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
        TEST_CASE(test_cluster_router_follows_redirects),
        TEST_CASE(test_cluster_events_name_the_node),
        TEST_CASE(test_cluster_map_asked_again_while_a_lost_node_serves),
        TEST_CASE(test_cluster_allocation_failures),
    };
    return run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
}
