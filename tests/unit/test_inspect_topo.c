/* SPDX-License-Identifier: MIT */
/* redlease_inspect() on a Cluster (the node of the slot, redirects
 * followed) and under a quorum (every member asked, the tally of
 * redlease status: held by a majority, or cannot tell). */
#include <stdio.h>
#include <string.h>

#include "test_cluster.h"
#include "test_inspect.h"
#include "test_quorum.h"

/* MOVED to a node that is ready: the same read goes there at once, and
 * its answer is the inspection's. */
void test_inspect_cluster_moved(void)
{
    fake f;
    char a[16], b[16];
    start_halves(&f, a, b);
    rec r = {0};
    fake_side *other = hold_on_other(&f, &r, b); /* the other node's link is up */
    if (!other) return;
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, a), REDLEASE_OK);
    CHECK(is_inspect_cmd(fake_peek(&f), a, 0)); /* the seed serves a's slot */
    redirect(&f, NULL, "MOVED", a, OTHER_PORT);
    CHECK_EQ(s.calls, 0);
    CHECK(is_inspect_cmd(fake_link_peek(other), a, 0));
    answer ans;
    answer_init(&ans, server_now(&f), 1500, TOK_A, "3");
    fake_link_reply(other, answer_done(&ans));
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_MUTEX);
    CHECK_EQ(s.holder[0].ttl_ms, 1500);
    CHECK_EQ(s.holder[0].this_client, 0);
    /* b is read where the map puts it, and r's lease there is ours */
    seen_inspection t = {0};
    CHECK_EQ(inspect(&f, &t, b), REDLEASE_OK);
    CHECK(is_inspect_cmd(fake_link_peek(other), b, 0));
    char value[RDL_VALUE_MAX + 1];
    snprintf(value, sizeof value, "%s", lease_value(r.lk));
    answer_init(&ans, server_now(&f), 2000, value, NULL);
    fake_link_reply(other, answer_done(&ans));
    fake_run(&f);
    CHECK_EQ(t.status, REDLEASE_OK);
    CHECK_EQ(t.holder[0].this_client, 1);
    end(&f);
}

/* ASK to a node not connected yet: the read waits for it, then goes
 * there behind ASKING. */
void test_inspect_cluster_ask_to_a_new_node(void)
{
    fake f;
    char a[16];
    start_mapped(&f, a);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, a), REDLEASE_OK);
    redirect(&f, NULL, "ASK", a, OTHER_PORT);
    fake_side *other = fake_link_at(&f, OTHER_PORT);
    CHECK(other != NULL);
    if (!other) return;
    CHECK_EQ(s.calls, 0);
    fake_link_connect(&f, other);
    CHECK(link_cmd_is(other, "ASKING", NULL));
    fake_link_reply_status(other, "OK");
    CHECK(is_inspect_cmd(fake_link_peek(other), a, 0));
    answer ans;
    answer_init(&ans, server_now(&f), -2, NULL, NULL);
    fake_link_reply(other, answer_done(&ans));
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_FREE);
    end(&f);
}

/* Member i answers: the mutex's key holds token (NULL: free) with pttl. */
static void member_says(fake *f, int i, const char *token, long long pttl)
{
    answer ans;
    answer_init(&ans, server_now(f), token ? pttl : -2, token, NULL);
    fake_link_reply(member(f, i), answer_done(&ans));
}

/* Every member is asked directly, the script on each; a token a majority
 * holds is the holder, for the majority-th longest of their TTLs. */
void test_inspect_quorum_mutex(void)
{
    fake f;
    start_quorum(&f, 3);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    for (int i = 0; i < 3; i++) CHECK(is_inspect_cmd(fake_link_peek(member(&f, i)), "job", 0));
    member_says(&f, 0, TOK_A, 2000);
    member_says(&f, 1, TOK_B, 2900);
    fake_run(&f);
    CHECK_EQ(s.calls, 0); /* every member is waited for */
    member_says(&f, 2, TOK_A, 2500);
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_MUTEX);
    CHECK_EQ(s.holders, 1);
    CHECK_STR(s.token[0], TOK_A);
    CHECK_EQ(s.holder[0].servers, 2);
    CHECK_EQ(s.holder[0].ttl_ms, 2000);
    CHECK_EQ(s.servers, 3);
    CHECK_EQ(s.answered, 3);
    end(&f);
}

/* A member silent: when it could make a majority for a token, nobody can
 * tell (EQUORUM, with what the others said); when it could not, free. */
void test_inspect_quorum_cannot_tell(void)
{
    fake f;
    start_quorum(&f, 3);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    member_says(&f, 0, TOK_A, 2000);
    member_says(&f, 1, NULL, 0);
    fake_link_break(member(&f, 2));
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_EQUORUM);
    CHECK_EQ(s.answered, 2);
    CHECK_EQ(s.servers, 3);
    CHECK_EQ(s.holders, 0);

    /* both answering say free: the silent one cannot make a majority */
    seen_inspection t = {0};
    CHECK_EQ(inspect(&f, &t, "job"), REDLEASE_OK);
    member_says(&f, 0, NULL, 0);
    member_says(&f, 1, NULL, 0);
    fake_run(&f);
    CHECK_EQ(t.calls, 1);
    CHECK_EQ(t.status, REDLEASE_OK);
    CHECK_EQ(t.kind, REDLEASE_KIND_FREE);
    CHECK_EQ(t.answered, 2);
    end(&f);
}

/* A semaphore's holders: each held while a majority admits it; one that
 * too few admit is left out, and with one held, that is the answer. */
void test_inspect_quorum_semaphore(void)
{
    fake f;
    start_quorum(&f, 3);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    for (int i = 0; i < 2; i++) {
        answer ans;
        answer_init(&ans, server_now(&f), 3000, "semaphore 3", i ? "20" : "21");
        answer_holder(&ans, TOK_A, server_now(&f) + 1000 + 100 * i);
        if (i == 0) answer_holder(&ans, TOK_B, server_now(&f) + 2000);
        answer_weight(&ans, TOK_A, "2");
        answer_weight(&ans, TOK_B, "1");
        fake_link_reply(member(&f, i), answer_done(&ans));
    }
    fake_link_reply_err(member(&f, 2), "LOADING Redis is loading the dataset in memory");
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_SEMAPHORE);
    CHECK_EQ(s.limit, 3);
    CHECK_EQ(s.holders, 1);
    CHECK_STR(s.token[0], TOK_A);
    CHECK_EQ(s.holder[0].permits, 2);
    CHECK_EQ(s.holder[0].servers, 2);
    CHECK_EQ(s.holder[0].ttl_ms, 1000);
    end(&f);
}

/* No member answers at all: the first one's failure, no view. */
void test_inspect_quorum_none_answers(void)
{
    fake f;
    start_quorum(&f, 3);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    for (int i = 0; i < 3; i++) fake_link_break(member(&f, i));
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_ECONN);
    CHECK_EQ(s.answered, 0); /* no view given */
    /* and while none is connected, the deadline ends it */
    seen_inspection t = {0};
    CHECK_EQ(inspect(&f, &t, "job"), REDLEASE_OK);
    fake_advance(&f, 2000);
    CHECK_EQ(t.calls, 1);
    CHECK_EQ(t.status, REDLEASE_ECONN);
    end(&f);
}

/* The tally alone (pure): shared holders by a majority, the waiters of
 * every server once each in the first lister's order, the largest fence
 * counter, a kind this version does not read. */
void test_inspect_tally_rules(void)
{
    answer a[3];
    redlease_inspection v[3], out;
    const int64_t now = INT64_C(1700000000000);
    for (int i = 0; i < 3; i++) {
        answer_init(&a[i], now, 3000, "shared", i == 1 ? "40" : "39");
        answer_holder(&a[i], TOK_A, now + 1000 * (i + 1));
        if (i == 2) answer_holder(&a[i], TOK_B, now + 500);
        answer_queue(&a[i], i == 0 ? TOK_C : TOK_D);
        answer_queue(&a[i], i == 0 ? TOK_D : TOK_C);
        answer_waiter(&a[i], TOK_C, "1700000009000 1 ch");
        answer_waiter(&a[i], TOK_D, "1700000009000 1 {ch");
        CHECK_EQ(rdl_inspect_parse(answer_done(&a[i]), &v[i]), 0);
    }
    redlease_inspection *views[3] = {&v[0], &v[1], &v[2]};
    int cannot = -1;
    CHECK_EQ(rdl_inspect_tally(&out, views, 3, &cannot), 0);
    rdl_inspect_finish(&out);
    CHECK_EQ(cannot, 0);
    CHECK_EQ(out.kind, REDLEASE_KIND_SHARED);
    CHECK_EQ(out.nholders, 1);
    CHECK_EQ(out.holders[0].pub.servers, 3);
    CHECK_EQ(out.holders[0].pub.ttl_ms, 2000);
    CHECK_EQ(out.fence_counter, 40);
    CHECK_EQ(out.nwaiters, 2);
    CHECK_STR(out.waiters[0].pub.token, TOK_C);
    CHECK_EQ(out.waiters[0].pub.servers, 3);
    rdl_inspect_clear(&out);
    /* one server: its view as it is */
    CHECK_EQ(rdl_inspect_tally(&out, views + 2, 1, &cannot), 0);
    CHECK_EQ(out.nholders, 2);
    CHECK_EQ(out.holders[0].pub.ttl_ms, 3000);
    CHECK_EQ(out.holders[1].pub.ttl_ms, 500);
    CHECK_EQ(cannot, 0);
    rdl_inspect_clear(&out);
    /* two silent of three: nothing by a majority, cannot tell */
    redlease_inspection *one[3] = {&v[0], NULL, NULL};
    CHECK_EQ(rdl_inspect_tally(&out, one, 3, &cannot), 0);
    CHECK_EQ(cannot, 1);
    CHECK_EQ(out.nholders, 0);
    rdl_inspect_clear(&out);
    for (int i = 0; i < 3; i++) rdl_inspect_clear(&v[i]);
    /* a value of another version on the one server: unknown */
    answer_init(&a[0], now, 100, "v9 lease", NULL);
    CHECK_EQ(rdl_inspect_parse(answer_done(&a[0]), &v[0]), 0);
    redlease_inspection *u[1] = {&v[0]};
    CHECK_EQ(rdl_inspect_tally(&out, u, 1, &cannot), 0);
    CHECK_EQ(out.kind, REDLEASE_KIND_UNKNOWN);
    CHECK_EQ(cannot, 0);
    rdl_inspect_clear(&out);
    rdl_inspect_clear(&v[0]);
}
