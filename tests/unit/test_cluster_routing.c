/* SPDX-License-Identifier: MIT */
/* test_cluster: routing by slot on the fake Cluster of test_cluster.h:
 * MOVED (the same request resent, the map asked again), ASK (ASKING ahead,
 * the map unchanged), held() across a redirected renewal, the redirect
 * limit, a new map (or an empty one) and what it moves. */
#include "test_cluster.h"

/* ------------------------------------------------------------ routing */

void test_cluster_routes_by_slot(void)
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
void test_cluster_moved_renewal(void)
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
void test_cluster_ask_renewal(void)
{
    fake f;
    char a[16], b[16];
    start_halves(&f, a, b);
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
void test_cluster_redirect_limit(void)
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

/* A renewal sent back and forth by MOVED (two nodes each saying the slot
 * is the other's, as during an atomic slot migration's handoff) is
 * followed RDL_MAX_REDIRECTS times; then it has failed, transiently: the
 * lease is unconfirmed meanwhile (held() 0), not lost, and the next try,
 * answered, confirms it. */
void test_cluster_renewal_in_a_moved_ping_pong(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a); /* its events recorded */
    rec r = {0};
    int64_t t0 = hold(&f, &r, a, opts(3000));
    fake_until(&f, t0 + 1000);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) goto out;
    fake_link_connect(&f, other);
    int sends = 1;
    for (int i = 0; i < 20; i++) {
        if (link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))) {
            sends++;
            redirect(&f, other, "MOVED", a, SEED_PORT);
        } else if (cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))) {
            sends++;
            redirect(&f, NULL, "MOVED", a, OTHER_PORT);
        }
        if (cmd_is(&f, "CLUSTER", "SLOTS")) answer_map(&f); /* the map asked again: as it was */
        CHECK_EQ(redlease_lock_held(r.lk), 0);
    }
    CHECK_EQ(sends, 2 + RDL_MAX_REDIRECTS); /* the one that waited, then the limit */
    CHECK_EQ(count_events(REDLEASE_EV_RENEW_FAILED), 1);
    CHECK_EQ(r.lost_calls, 0);
    /* the next try, answered where it goes, confirms the lease */
    for (int i = 0; i < 100 && !redlease_lock_held(r.lk) && r.lost_calls == 0; i++) {
        fake_advance(&f, 10);
        if (link_cmd_is(other, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)))
            fake_link_reply_int(other, 1);
        else if (cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)))
            fake_reply_int(&f, 1);
        fake_run(&f);
    }
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    CHECK_EQ(r.lost_calls, 0);
out:
    end(&f);
}

/* A new map that moves a held lease's slot: it renews there at once and
 * is unconfirmed until then. */
void test_cluster_new_map_moves_a_lease(void)
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
void test_cluster_query_not_sent_is_retried(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster_addrs = "10.0.0.1:7001";
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
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
void test_cluster_redirect_to_the_answering_host(void)
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
void test_cluster_move_with_renewal_out(void)
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
void test_cluster_asking_ends_with_its_command(void)
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
void test_cluster_map_errors_back_off(void)
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
    CHECK_STR(redlease_client_errstr(f.c),
              "10.0.0.1:7001: CLUSTER SLOTS: ERR This instance has cluster support disabled");
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
void test_cluster_stale_redirect_ignored(void)
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
void test_cluster_map_ends_a_parked_ask(void)
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
void test_cluster_stale_ask_confirms_nothing_after_a_move(void)
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
void test_cluster_move_keeps_the_attempt(void)
{
    fake f;
    char a[16], c[16];
    start_mapped(&f, a);
    resource_in(c, sizeof c, 8192, 16383);
    rec r = {0}, rc = {0};
    redlease_lock_options o = opts(3000);
    o.wait_max_attempts = 1;
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


/* A node not in a cluster yet answers CLUSTER SLOTS with an empty map:
 * that is no map, the one we have stays, and the map is asked again. */
void test_cluster_empty_map_is_no_map(void)
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

/* ------------------------------------------------- the router's seam */

/* A request of a maker that is no lock, sent through the router: what
 * its handler is asked and told (rdl_req_ops' follow, resend, unsent,
 * reply), so the router is seen to follow redirects by itself. */
typedef struct seam_req {
    rdl_req req; /* first */
    char key[32];
    int wanted;  /* what follow() answers */
    int follows, resends, unsents, replies;
    int asked_ask;
    rdl_node *asked_to;
    int reply_type;
    long long reply_int;
    char reply_text[64];
} seam_req;

static int seam_follow(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    seam_req *s = (seam_req *)req;
    (void)now;
    s->follows++;
    s->asked_to = to;
    s->asked_ask = ask;
    return s->wanted;
}

static int seam_send(rdl_req *req)
{
    seam_req *s = (seam_req *)req;
    const char *argv[2] = {"GET", s->key};
    const size_t lens[2] = {3, strlen(s->key)};
    return rdl_node_submit(req->node, req, 2, argv, lens);
}

static int seam_resend(rdl_req *req)
{
    ((seam_req *)req)->resends++;
    return seam_send(req);
}

static int seam_unsent(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    (void)to, (void)ask, (void)now;
    ((seam_req *)req)->unsents++;
    return 0;
}

static void seam_reply(rdl_req *req, const rdl_reply *r)
{
    seam_req *s = (seam_req *)req;
    if (!r) return; /* the client ending */
    s->replies++;
    s->reply_type = r->type;
    s->reply_int = r->integer;
    snprintf(s->reply_text, sizeof s->reply_text, "%.*s", (int)r->len, r->str ? r->str : "");
}

static const rdl_req_ops seam_ops = {.reply = seam_reply, .follow = seam_follow,
                                     .resend = seam_resend, .unsent = seam_unsent};
static const rdl_req_ops plain_ops = {.reply = seam_reply}; /* cannot go elsewhere */

/* s goes out on node n for resource a's key. */
static void seam_send_on(seam_req *s, rdl_node *n, const rdl_req_ops *ops, const char *a, int wanted)
{
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "lock:{%s}", a);
    s->wanted = wanted;
    s->req.ops = ops;
    s->req.kind = RDL_REQ_ACQUIRE;
    s->req.script = -1;
    s->req.node = n;
    s->req.epoch = rdl_node_epoch(n);
    CHECK_EQ(seam_send(&s->req), 0);
}

/* s goes out on the seed (the main link) for resource a's key. */
static void seam_send_on_seed(fake *f, seam_req *s, const rdl_req_ops *ops, const char *a, int wanted)
{
    seam_send_on(s, &f->c->main, ops, a, wanted);
    CHECK(cmd_is(f, "GET", s->key));
}

/* MOVED and ASK of a request that can go elsewhere are the router's: it
 * asks the handler, sends the same request on (ASKING ahead for an ASK),
 * corrects the map for MOVED only, and the handler's reply() hears only
 * the final answer. One whose handler cannot send it again, or no longer
 * wants it, gets the redirect itself, as its reply. */
void test_cluster_router_follows_redirects(void)
{
    fake f;
    char a[16], b[16];
    start_halves(&f, a, b);
    rec rb = {0};
    fake_side *other = hold_on_other(&f, &rb, b); /* so the other node is ready */
    if (!other) goto out;
    rdl_node *seed = &f.c->main, *to_other = rdl_cluster_route(f.c->cluster, rb.lk->key, rb.lk->keylen);
    CHECK(to_other != seed);
    char key[32];
    snprintf(key, sizeof key, "lock:{%s}", a);
    static seam_req s; /* static: a late NULL reply at the end finds it */

    /* MOVED: followed, the map corrected for that slot */
    seam_send_on_seed(&f, &s, &seam_ops, a, 1);
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    CHECK_EQ(s.follows, 1);
    CHECK(s.asked_to == to_other);
    CHECK_EQ(s.asked_ask, 0);
    CHECK_EQ(s.resends, 1);
    CHECK_EQ(s.unsents, 0);
    CHECK_EQ(s.replies, 0); /* the redirect is not the handler's */
    CHECK(s.req.node == to_other);
    CHECK_EQ(s.req.redirects, 1);
    CHECK_EQ(s.req.asking, 0);
    CHECK(rdl_cluster_route(f.c->cluster, key, strlen(key)) == to_other);
    CHECK(link_cmd_is(other, "GET", key));
    fake_link_reply_int(other, 7);
    fake_run(&f);
    CHECK_EQ(s.replies, 1);
    CHECK_EQ(s.reply_type, RDL_REPLY_INTEGER);
    CHECK_EQ(s.reply_int, 7);

    /* ASK (back to the seed): ASKING, then the same request; the map
     * unchanged */
    seam_req *t = &s;
    seam_send_on(t, to_other, &seam_ops, a, 1);
    CHECK(link_cmd_is(other, "GET", key));
    redirect(&f, other, "ASK", a, SEED_PORT);
    CHECK_EQ(t->follows, 1);
    CHECK(t->asked_to == seed);
    CHECK_EQ(t->asked_ask, 1);
    CHECK_EQ(t->resends, 1);
    CHECK_EQ(t->req.asking, 1);
    CHECK(cmd_is(&f, "ASKING", NULL));
    fake_reply_status(&f, "OK");
    CHECK(cmd_is(&f, "GET", key));
    CHECK(rdl_cluster_route(f.c->cluster, key, strlen(key)) == to_other); /* ASK moves nothing */
    fake_reply_int(&f, 8);
    fake_run(&f);
    CHECK_EQ(t->replies, 1);
    CHECK_EQ(t->reply_int, 8);

    /* a handler that no longer wants it: the redirect is its reply */
    seam_send_on_seed(&f, &s, &seam_ops, b, 0);
    redirect(&f, NULL, "MOVED", b, OTHER_PORT);
    CHECK_EQ(s.follows, 1);
    CHECK_EQ(s.resends, 0);
    CHECK_EQ(s.replies, 1);
    CHECK_EQ(s.reply_type, RDL_REPLY_ERROR);
    CHECK(strncmp(s.reply_text, "MOVED ", 6) == 0);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK(link_cmd_is(other, "GET", NULL) == 0);

    /* a request whose handler cannot send it again: its own reply too */
    seam_send_on_seed(&f, &s, &plain_ops, b, 1);
    redirect(&f, NULL, "ASK", b, OTHER_PORT);
    CHECK_EQ(s.follows, 0);
    CHECK_EQ(s.replies, 1);
    CHECK(strncmp(s.reply_text, "ASK ", 4) == 0);
    CHECK(link_cmd_is(other, "ASKING", NULL) == 0);
out:
    end(&f);
}

/* A Cluster node's events and failures name that node, not the seeds: its
 * connection's, and a lock's whose key it serves. */
void test_cluster_events_name_the_node(void)
{
    fake f;
    char a[16], b[16];
    start_halves(&f, a, b);
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "10.0.0.1:7001"));
    rec r = {0};
    fake_side *other = hold_on_other(&f, &r, b);
    if (!other) {
        end(&f);
        return;
    }
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "10.0.0.2:7002"));
    CHECK(names(last_event(REDLEASE_EV_ACQUIRED), "10.0.0.2:7002"));
    rec s = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 1000;
    CHECK_EQ(start_lock(&f, &s, b, &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(link_cmd_is(other, "SET", NULL));
    fake_link_reply_err(other, "CLUSTERDOWN The cluster is down");
    fake_run(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(names(ev, "10.0.0.2:7002"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.2:7002: CLUSTERDOWN The cluster is down");
    fake_link_break(other);
    fake_run(&f);
    ev = last_event(REDLEASE_EV_DISCONNECTED);
    CHECK(names(ev, "10.0.0.2:7002"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.2:7002: connection reset (fake link)");
    fake_break(&f);
    CHECK(names(last_event(REDLEASE_EV_DISCONNECTED), "10.0.0.1:7001"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.1:7001: connection reset (fake)");
    end(&f);
}

/* CLUSTER SLOTS among the main link's unanswered commands. */
static int map_queries_pending(const fake *f)
{
    int n = 0;
    for (int i = f->head; i < f->ncmds; i++)
        n += strcmp(f->cmds[i].argv[0], "CLUSTER") == 0 && strcmp(f->cmds[i].argv[1], "SLOTS") == 0;
    return n;
}

/* A failover under way: the node serving b's slots is lost, and the map
 * asked then still names it (its replica not promoted yet). The map is
 * asked again 100 ms on, then 200, 400 ms..., not only at the lost node's
 * next failed reconnect (5 s on here); a map that names only live nodes
 * ends it. */
void test_cluster_map_asked_again_while_a_lost_node_serves(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.cluster_addrs = "10.0.0.1:7001";
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
    co.reconnect_min_ms = co.reconnect_max_ms = 5000;
    fake f;
    if (!attach_recording(&f, &co)) return;
    fake_connect(&f);
    answer_map(&f);
    char b[16];
    resource_in(b, 16, 8192, 16383);
    rec r = {0};
    fake_side *other = hold_on_other(&f, &r, b);
    if (!other) {
        end(&f);
        return;
    }
    fake_link_break(other);
    fake_advance(&f, RDL_CLUSTER_REFRESH_MS); /* the loss asks for a map */
    answer_map(&f); /* the same: the lost node still serves */
    /* 100, 200, 400, 800 ms: within the held lease's first renewal's
     * deadline, which asks for a map of its own when it fails */
    for (int k = 0; k < RDL_CLUSTER_STALE_DOUBLINGS; k++) {
        int64_t pause = (int64_t)RDL_CLUSTER_REFRESH_MS << k;
        fake_advance(&f, pause - 1);
        CHECK_EQ(map_queries_pending(&f), 0);
        fake_advance(&f, 1);
        CHECK_EQ(map_queries_pending(&f), 1); /* asked again, the lost node's reconnect far off */
        while (fake_peek(&f) && !cmd_is(&f, "CLUSTER", "SLOTS")) fake_reply_status(&f, "OK");
        answer_map(&f);
    }
    /* promoted: every slot on the seed now */
    fake_advance(&f, (int64_t)RDL_CLUSTER_REFRESH_MS << RDL_CLUSTER_STALE_DOUBLINGS);
    while (fake_peek(&f) && !cmd_is(&f, "CLUSTER", "SLOTS")) fake_reply_status(&f, "OK");
    slots_reply sb;
    range all = {0, 16383, "10.0.0.1", SEED_PORT};
    CHECK(cmd_is(&f, "CLUSTER", "SLOTS"));
    fake_reply(&f, build_slots(&sb, 1, &all));
    fake_run(&f);
    fake_advance(&f, 4000); /* before the lost node's reconnect */
    CHECK_EQ(map_queries_pending(&f), 0);
    end(&f);
}
