/* SPDX-License-Identifier: MIT */
/* test_quorum: waiting under a quorum (woken, in no order: docs/design.md,
 * section 11.5): every attempt joins every member's queue, the channel
 * listens on the first member, and a split vote backs off once. */
#include "test_quorum.h"

/* Member i's oldest command is r's queued attempt, in no order ("0"),
 * asking to be told on channel ch ("" : not joining). */
static int queued_attempt(fake *f, int i, rec *r, const char *ch)
{
    fake_cmd *c = fake_link_peek(member(f, i));
    return ran(f, i, RDL_SCRIPT_QUEUE_ACQUIRE, r, 6) && c->argc == 13 && strcmp(c->argv[10], ch) == 0 &&
           strcmp(c->argv[11], "0") == 0 && is_record_of(c->argv[12], r->lk);
}

/* Members 0, 1, 2 answer r's attempt a, b, c (busy, -(TTL left + 1)).
 * The majority said busy before the last answered: the quorum deletes
 * what that one may have set (quorum.c, clean_up), answered 0. */
static void busy_on_all(fake *f, rec *r, long long a, long long b, long long c)
{
    fake_link_reply_int(member(f, 0), a);
    fake_link_reply_int(member(f, 1), b);
    fake_link_reply_int(member(f, 2), c);
    fake_run(f);
    CHECK(cleaned_on(f, 2, r));
    fake_link_reply_int(member(f, 2), 0);
    fake_run(f);
}

/* The channel (side link w) tells r's lock to check ("c TOKEN 0"): its
 * attempt goes to every member at once. */
static void told_to_check(fake *f, fake_side *w, rec *r, const char *channel)
{
    char word[80];
    snprintf(word, sizeof word, "c %s 0", redlease_lock_token(r->lk));
    fake_link_message(w, channel, word);
    fake_run(f);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(f, i, r, channel));
}

/* r's lock (TTL 30 s, waiting for ever) finds "job" busy, its channel
 * opens on the first member (the fake's side link w), and its attempt
 * names it; channel gets its name. The first answer is a split vote. */
static fake_side *waiting_on_three(fake *f, rec *r, int64_t backoff_ms, char *channel, size_t size)
{
    redlease_lock_options o = opts(30000); /* entries live 30 s: checks every 10 s */
    o.wait_mode = REDLEASE_WAIT_DEFAULT;
    o.wait_ms = REDLEASE_WAIT_FOREVER;
    if (backoff_ms) o.wait_retry_base_ms = o.wait_retry_max_ms = backoff_ms;
    CHECK_EQ(start_lock(f, r, "job", &o), REDLEASE_OK);
    fake_run(f);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(f, i, r, ""));
    fake_link_reply_int(member(f, 0), -20001);
    fake_link_reply_int(member(f, 1), -15001);
    fake_link_reply_int(member(f, 2), 1); /* free there: a minority, deleted */
    fake_run(f);
    CHECK_EQ(r->acq_calls, 0);
    CHECK(cleaned_on(f, 2, r));
    fake_link_reply_int(member(f, 2), 1);
    fake_run(f);
    fake_side *w = &f->peers[2]; /* the channel: a link to the first member */
    CHECK(w->cn && w->connecting);
    CHECK_EQ(w->port, 7001);
    fake_link_connect(f, w);
    fake_cmd *sub = &w->cmds[w->ncmds - 1];
    CHECK(sub->subscribed && strcmp(sub->argv[0], "SUBSCRIBE") == 0);
    snprintf(channel, size, "%s", sub->argv[1]);
    fake_link_subscribed(w);
    fake_run(f);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(f, i, r, channel)); /* joining now */
    return w;
}

/* A quorum's waiters are woken, in no order (N servers' queues could hand
 * the lock to N different heads): an attempt joins every member's queue,
 * the channel listens on the first member, a word there has the waiter
 * check at once, and "busy" from a majority tells it the least TTL its
 * holders have left. The release is the queue's, whole (no probe). */
void test_quorum_waiters_are_woken(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    char channel[80];
    fake_side *w = waiting_on_three(&f, &r, 0, channel, sizeof channel);
    busy_on_all(&f, &r, -8001, -4001, -6001);
    /* it checks when the first holder's key may be gone (4 s), not at a
     * third of its entry's life (10 s) */
    fake_advance(&f, 3990);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    fake_advance(&f, 20);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(&f, i, &r, channel));
    busy_on_all(&f, &r, -15001, -15001, -15001);
    /* asleep until the least TTL left (15 s) or a third of the entry's
     * life (10 s): no command for 9 s */
    fake_advance(&f, 9000);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    told_to_check(&f, w, &r, channel);
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) {
        fake_cmd *c = fake_link_peek(member(&f, i));
        CHECK(ran(&f, i, RDL_SCRIPT_QUEUE_RELEASE, &r, 6) && c->argc == 8 && strcmp(c->argv[2], "3") == 0 &&
              strcmp(c->argv[7], "0") == 0);
        fake_link_reply_int(member(&f, i), 1);
    }
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* Member 1 says yes, 0 and 2 busy: a split vote (or a release under
 * way); the quorum deletes what member 1 set. */
static void split_on_three(fake *f, rec *r)
{
    fake_link_reply_int(member(f, 0), -8001);
    fake_link_reply_int(member(f, 1), 1);
    fake_link_reply_int(member(f, 2), -6001);
    fake_run(f);
    CHECK(cleaned_on(f, 1, r));
    fake_link_reply_int(member(f, 1), 1);
    fake_run(f);
    CHECK_EQ(r->acq_calls, 0);
}

/* A split vote learns of no holder whose release would tell the waiter:
 * it checks again after one backoff (100 ms here), not when the busy
 * members' keys end (6 s) or at a third of its entry's life (10 s). A
 * second split in a row waits in the queue (a member that lost its keys
 * says yes while a majority's holder lives: polling would last as long as
 * that holder); a plain busy answer makes the next split back off again. */
void test_quorum_split_vote_backs_off_once(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    char channel[80];
    fake_side *w = waiting_on_three(&f, &r, 100, channel, sizeof channel);
    split_on_three(&f, &r);
    fake_advance(&f, 101);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(&f, i, &r, channel));
    split_on_three(&f, &r);
    for (int k = 0; k < 10; k++) { /* an attempt would be seen before its command timeout */
        fake_advance(&f, 900);
        for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    }
    told_to_check(&f, w, &r, channel);
    busy_on_all(&f, &r, -15001, -15001, -15001);
    told_to_check(&f, w, &r, channel);
    split_on_three(&f, &r);
    fake_advance(&f, 101);
    for (int i = 0; i < 3; i++) CHECK(queued_attempt(&f, i, &r, channel));
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}
