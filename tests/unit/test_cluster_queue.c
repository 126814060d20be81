/* SPDX-License-Identifier: MIT */
/* test_cluster: queued waiting (REDLEASE_WAIT_QUEUE) on the fake Cluster:
 * a slot being moved, the channel moving with the queue's node. */
#include "test_cluster.h"

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
void test_cluster_queue_tryagain_tries_one_key(void)
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
    CHECK_EQ(fake_peek(&f)->argc, 7); /* ..., token, ttl, record */
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
void test_cluster_channel_moves_to_the_next_node(void)
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
    CHECK(names(last_event(REDLEASE_EV_CHANNEL), "10.0.0.1:7001"));
    fake_link_break(w); /* the seed's node fails the channel */
    fake_run(&f);
    /* the loss names the node lost, not the next one the link goes to */
    const redlease_event *lost = last_event(REDLEASE_EV_CHANNEL);
    CHECK(lost && lost->status < 0 && names(lost, "10.0.0.1:7001"));
    fake_advance(&f, 20); /* the reconnect backoff (10 ms) */
    CHECK(w->connecting);
    CHECK_EQ(w->port, OTHER_PORT);
    CHECK_STR(w->host, "10.0.0.2");
    fake_link_connect(&f, w);
    fake_cmd *sub = &w->cmds[w->ncmds - 1];
    CHECK(sub->subscribed && strcmp(sub->argv[0], "SUBSCRIBE") == 0);
    fake_link_subscribed(w);
    fake_run(&f);
    CHECK(names(last_event(REDLEASE_EV_CHANNEL), "10.0.0.2:7002"));
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE))); /* every waiter checks */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
out:
    end(&f);
}
