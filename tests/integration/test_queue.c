/* SPDX-License-Identifier: MIT */
/* Queued waiting (REDLEASE_WAIT_QUEUE, docs/design.md section 11) against
 * the harness's real redis-server: the lock handed over in FIFO order and
 * the next waiter woken; what happens when a waiter dies, a word is lost,
 * a holder expires without a release, a budget ends in the queue; a
 * second handle of the holding client, joining with re-entry or waiting.
 *
 * The waiters' fallbacks are made slow on purpose (a long TTL for the
 * holder, backoff of seconds), so a case that ends fast shows that a
 * word, not a timer, moved it. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include "rig.h"

#define FAR_MS 10000 /* a holder's TTL: a waiter's timer never fires in a case */

static redlease_lock_options qopts(int64_t ttl, int64_t wait, int fencing)
{
    redlease_lock_options o = lopts(ttl, wait, fencing);
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    o.wait_retry_base_ms = o.wait_retry_max_ms = 5000 * S; /* polling would be seen */
    return o;
}

static void key_of(const char *res, int kind, char *out, size_t size)
{
    size_t len;
    CHECK_EQ(redlease_key("lock:", res, strlen(res), kind, out, size, &len), REDLEASE_OK);
}

/* The place of token in the resource's queue (0 first), or -1. */
static long long queue_rank(const char *res, const char *token)
{
    char q[64];
    key_of(res, REDLEASE_KEY_QUEUE, q, sizeof q);
    redisReply *r = adm("ZRANK %s %s", q, token);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

/* Runs the loop until o waits in the queue at rank (or 2 s pass). */
static void wait_queued(obs *o, const char *res, long long rank)
{
    int64_t end = mono_ms() + 2000 * S;
    while (queue_rank(res, redlease_lock_token(o->lk)) != rank && mono_ms() < end)
        testloop_run_once(5);
    CHECK_EQ(queue_rank(res, redlease_lock_token(o->lk)), rank);
}

/* A holder and three queued waiters, each a client of its own: every
 * release hands the lock to the next in arrival order, which is told at
 * once (far sooner than any timer of its), and confirms with a command of
 * its own (its lease is then measured from that send). The first holder
 * met no queue: its release's probe finds one, and the whole release
 * follows (scripts.c). */
static void test_queue_hands_over_in_order(void)
{
    enum { N = 4 };
    obs o[N] = {{0}};
    redlease_client *c[N];
    const char *res = "q-order";
    for (int i = 0; i < N; i++) c[i] = real_client(&o[i], NULL);
    hold_real(c[0], &o[0], res, qopts(FAR_MS, 0, 0));
    for (int i = 1; i < N; i++) {
        acquire(c[i], &o[i], res, qopts(FAR_MS, 5000, 0));
        wait_queued(&o[i], res, i - 1);
    }
    for (int i = 1; i < N; i++) {
        int64_t t0 = mono_ms();
        release(&o[i - 1], NULL);
        run_until(&o[i].acq, 1000, NULL);
        int64_t took = mono_ms() - t0;
        printf("# waiter %d held %lld ms after the release\n", i, (long long)took);
        CHECK_EQ(o[i].acq_st, REDLEASE_OK);
        CHECK(took < 1000 * S); /* its timer was FAR_MS away */
        CHECK_EQ(redlease_lock_held(o[i].lk), 1);
        CHECK(redlease_lock_remaining_ms(o[i].lk) > FAR_MS * S - 1000 * S); /* confirmed, not the claim */
        for (int j = i + 1; j < N; j++) CHECK_EQ(o[j].acq, 0);
    }
    release(&o[N - 1], NULL);
    char q[64], w[64];
    key_of(res, REDLEASE_KEY_QUEUE, q, sizeof q);
    key_of(res, REDLEASE_KEY_WAITERS, w, sizeof w);
    CHECK_EQ(admin_int("EXISTS %s", q), 0); /* the queue's keys go with their last entry */
    CHECK_EQ(admin_int("EXISTS %s", w), 0);
    finish_all(c, o, N);
}

/* Fences are minted by each holder's own confirmation, so they rise in
 * the order the lock was held. */
static void test_queue_fences_rise_in_handover_order(void)
{
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)}, *ca = c[0], *cb = c[1];
    hold_real(ca, a, "q-fence", qopts(FAR_MS, 0, 1));
    acquire(cb, b, "q-fence", qopts(FAR_MS, 5000, 1));
    wait_queued(b, "q-fence", 0);
    uint64_t fa = redlease_lock_fence(a->lk);
    release(a, NULL);
    run_until(&b->acq, 1000, NULL);
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    CHECK(redlease_lock_fence(b->lk) > fa);
    release(b, NULL);
    finish_all(c, o, 2);
}

/* A holder, and a waiter behind a ghost at the head of the queue (an
 * entry alive, told on channel, whose client never confirms): the holder
 * releases, the ghost is handed the lock for its claim (300 ms), and the
 * waiter gets it after. How long that took, in ms. */
static int64_t held_behind_a_ghost(const char *res, const char *channel)
{
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)}, *ca = c[0], *cb = c[1];
    hold_real(ca, a, res, qopts(FAR_MS, 0, 0));
    char q[64], w[64];
    key_of(res, REDLEASE_KEY_QUEUE, q, sizeof q);
    key_of(res, REDLEASE_KEY_WAITERS, w, sizeof w);
    const char *ghost = "0123456789abcdef0123456789abcdef";
    char entry[96];
    snprintf(entry, sizeof entry, "99999999999999 %lld %s", (long long)(300 * S), channel);
    ADM("ZADD %s 0 %s", q, ghost);
    ADM("HSET %s %s %s", w, ghost, entry);
    acquire(cb, b, res, qopts(FAR_MS, 5000, 0));
    wait_queued(b, res, 1);
    int64_t t0 = mono_ms();
    release(a, NULL);
    run_until(&b->acq, 2000, NULL);
    int64_t took = mono_ms() - t0;
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    release(b, NULL);
    finish_all(c, o, 2);
    return took;
}

/* A dead waiter at the head (a channel nobody listens on) is handed the
 * lock and never confirms: the waiter behind it is told to check when the
 * claim ends, and gets the lock then. */
static void test_queue_dead_head_costs_one_claim(void)
{
    int64_t took = held_behind_a_ghost("q-dead", "nobody-listens");
    printf("# behind a dead head: held after %lld ms (claim %lld)\n", (long long)took, (long long)(300 * S));
    CHECK(took >= 300 * S - 20); /* not before the claim ran out */
    CHECK(took < 1300 * S);
}

/* A frozen waiter at the head: its client is there (its channel has a
 * listener, so PUBLISH counts one, and the handoff tells only the next
 * waiter, not three) but it never confirms. The next waiter is still
 * told, and gets the lock after the claim, not at its own timer. */
static void test_queue_frozen_head_costs_one_claim(void)
{
    redisContext *listener = send_aside("SUBSCRIBE %s", "frozen-listener"); /* never read */
    long long n = 0;
    for (int64_t end = mono_ms() + 2000 * S; n != 1 && mono_ms() < end;) {
        redisReply *r = adm("PUBSUB NUMSUB %s", "frozen-listener");
        n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : -1;
        freeReplyObject(r);
    }
    CHECK_EQ(n, 1);
    int64_t took = held_behind_a_ghost("q-frozen", "frozen-listener");
    printf("# behind a frozen head: held after %lld ms (claim %lld)\n", (long long)took, (long long)(300 * S));
    CHECK(took >= 300 * S - 20);
    CHECK(took < 1300 * S);
    redisFree(listener);
}

/* A holder that neither renews nor releases: its key expires, and the
 * waiter's timer, set to the holder's remaining TTL, finds it free. */
static void test_queue_expired_holder_is_found_by_the_timer(void)
{
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)}, *ca = c[0], *cb = c[1];
    redlease_lock_options ho = qopts(400, 0, 0);
    ho.renew_interval_ms = REDLEASE_RENEW_OFF;
    hold_real(ca, a, "q-expire", ho);
    int64_t t0 = mono_ms();
    acquire(cb, b, "q-expire", qopts(FAR_MS, 5000, 0));
    run_until(&b->acq, 2000, NULL);
    int64_t took = mono_ms() - t0;
    printf("# after an expiry: held after %lld ms\n", (long long)took);
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    CHECK(took < 1000 * S); /* the holder's TTL, not the 5 s backoff */
    CHECK_EQ(a->lost, 1);
    release(b, NULL);
    release(a, NULL);
    finish_all(c, o, 2);
}

/* The wake-up channel's link is cut while a waiter waits, and the word of
 * the release is published to nobody: the new subscription has every
 * waiter check, and it finds the lock handed to it. */
static void test_queue_lost_word_is_made_up_on_resubscribe(void)
{
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)}, *ca = c[0], *cb = c[1];
    hold_real(ca, a, "q-lost", qopts(FAR_MS, 0, 0));
    acquire(cb, b, "q-lost", qopts(FAR_MS, 5000, 0));
    wait_queued(b, "q-lost", 0);
    ADM("CLIENT KILL TYPE pubsub");
    int64_t t0 = mono_ms();
    CHECK_EQ(redlease_release(a->lk, o_rel, a), REDLEASE_OK);
    run_until(&b->acq, 2000, NULL);
    printf("# word lost: held after %lld ms\n", (long long)(mono_ms() - t0));
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 1500 * S);
    run_until(&a->rel, 1000, NULL);
    release(b, NULL);
    finish_all(c, o, 2);
}

/* A waiter whose budget ends leaves the queue; one released (cancelled)
 * while waiting too, and a lock handed to it meanwhile goes on. */
static void test_queue_leaving_the_queue(void)
{
    const char *res = "q-leave";
    obs o[3] = {{0}}, *a = &o[0], *b = &o[1], *d = &o[2];
    redlease_client *c[3] = {real_client(a, NULL), real_client(b, NULL), real_client(d, NULL)};
    redlease_client *ca = c[0], *cb = c[1], *cd = c[2];
    hold_real(ca, a, res, qopts(FAR_MS, 0, 0));
    acquire(cb, b, res, qopts(FAR_MS, 300, 0));
    wait_queued(b, res, 0);
    char token[40];
    snprintf(token, sizeof token, "%s", redlease_lock_token(b->lk));
    run_until(&b->acq, 2000, NULL);
    CHECK_EQ(b->acq_st, REDLEASE_EBUSY);
    release(b, NULL);
    int64_t end = mono_ms() + 2000 * S; /* its leave is on the wire */
    while (queue_rank(res, token) != -1 && mono_ms() < end) run_for(10, NULL);
    CHECK_EQ(queue_rank(res, token), -1);
    /* d waits, is cancelled just as the lock is handed to it: the drop
     * behind its attempts deletes the key, and nobody is left holding */
    acquire(cd, d, res, qopts(FAR_MS, 5000, 0));
    wait_queued(d, res, 0);
    CHECK_EQ(redlease_release(a->lk, o_rel, a), REDLEASE_OK);
    CHECK_EQ(redlease_release(d->lk, o_rel, d), REDLEASE_OK);
    run_until(&a->rel, 1000, NULL);
    run_until(&d->rel, 1000, NULL);
    char k[64];
    key_of(res, REDLEASE_KEY_LOCK, k, sizeof k);
    end = mono_ms() + 2000 * S; /* the drop behind its attempts */
    while (admin_int("EXISTS %s", k) != 0 && mono_ms() < end) run_for(10, NULL);
    CHECK_EQ(admin_int("EXISTS %s", k), 0);
    finish_all(c, o, 3);
}

/* Connections the server has accepted so far. */
static long long total_connections(void)
{
    redisReply *r = adm("INFO stats");
    long long v = -1;
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "total_connections_received:") : NULL;
    if (p) v = atoll(p + strlen("total_connections_received:"));
    freeReplyObject(r);
    return v;
}

/* Backoff draws at their caps: delays that do not vary from run to run. */
static uint32_t rng_at_cap(void *arg)
{
    (void)arg;
    return 0xFFFFFFFFu;
}

/* An ACL user without channels (a new user's default in Redis 7): its
 * release still hands the lock over and succeeds (the word it may not
 * PUBLISH is left out, the waiter's timer covers it); waiting, its
 * refused SUBSCRIBE is asked again at the reconnect backoff's pace. */
static void test_queue_acl_without_channels(void)
{
    ADM("ACL SETUSER nochan on >nochan-pw ~* +@all resetchannels");
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client_options co = copts(sock_path, "nochan-pw", 0);
    co.username = "nochan";
    co.reconnect_min_ms = 50;
    co.reconnect_max_ms = 2000;
    redlease_client *c[2] = {client_with(&co, a), real_client(b, NULL)};
    /* Every reconnect delay at its cap (50 ms doubling to 2 s): the count
     * below is then the backoff's, not the draws' (the OS's counted 9-10
     * against the bound of 10 in 2 s). */
    CHECK_EQ(redlease_client_set_rng(c[0], rng_at_cap, NULL), REDLEASE_OK);
    wait_connected(c[0], 2000);
    redlease_lock_options ho = qopts(FAR_MS, 0, 0);
    hold_real(c[0], a, "q-acl", ho);
    acquire(c[1], b, "q-acl", qopts(FAR_MS, 5000, 0));
    wait_queued(b, "q-acl", 0);
    CHECK_EQ(redlease_release(a->lk, o_rel, a), REDLEASE_OK);
    run_until(&a->rel, 1000, NULL);
    CHECK_EQ(a->rel_st, REDLEASE_OK);
    run_until(&b->acq, 5000, NULL); /* its timer: a third of its entry's life */
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    obs a2 = {0};
    /* out of the queue it polls (qopts: every 5 s): a budget that its
     * next poll after the release falls well inside */
    acquire(c[0], &a2, "q-acl", qopts(FAR_MS, 12000, 0));
    long long n0 = total_connections();
    run_for(2000, NULL);
    long long n1 = total_connections();
    printf("# connections in 2 s while the user without channels waits: %lld\n", n1 - n0);
    CHECK(n1 - n0 < 5 * S + 5); /* without backoff: 165 in 2 s */
    release(b, NULL);
    run_until(&a2.acq, 8000, NULL);
    CHECK_EQ(a2.acq_st, REDLEASE_OK);
    release(&a2, NULL);
    finish_all(c, o, 2);
    ADM("ACL DELUSER nochan");
}

/* Two dead waiters ahead: each is handed the lock and never confirms;
 * the live one is told to check after one and after two claims, and gets
 * the lock within three. */
static void test_queue_two_dead_heads(void)
{
    const char *res = "q-dead2";
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)};
    hold_real(c[0], a, res, qopts(FAR_MS, 0, 0));
    char q[64], w[64], entry[96];
    key_of(res, REDLEASE_KEY_QUEUE, q, sizeof q);
    key_of(res, REDLEASE_KEY_WAITERS, w, sizeof w);
    snprintf(entry, sizeof entry, "99999999999999 %lld nobody-listens", (long long)(300 * S));
    ADM("ZADD %s 0 %s", q, "0123456789abcdef0123456789abcdef");
    ADM("HSET %s %s %s", w, "0123456789abcdef0123456789abcdef", entry);
    ADM("ZADD %s 0.5 %s", q, "1123456789abcdef0123456789abcdef");
    ADM("HSET %s %s %s", w, "1123456789abcdef0123456789abcdef", entry);
    acquire(c[1], b, res, qopts(FAR_MS, 20000, 0));
    wait_queued(b, res, 2);
    int64_t t0 = mono_ms();
    release(a, NULL);
    run_until(&b->acq, 5000, NULL);
    int64_t took = mono_ms() - t0;
    printf("# behind two dead heads: held after %lld ms (claim %lld)\n", (long long)took,
           (long long)(300 * S));
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    CHECK(took < 3 * 300 * S + 500 * S);
    release(b, NULL);
    finish_all(c, o, 2);
}

/* A key of another type where the queue's keys go: the script stops
 * before it writes anything, so no lock key nobody was told about, and no
 * place in the order without an entry (and a TTL). */
static void test_queue_keys_of_another_type(void)
{
    const char *res = "q-type";
    char k[64], q[64], w[64];
    key_of(res, REDLEASE_KEY_LOCK, k, sizeof k);
    key_of(res, REDLEASE_KEY_QUEUE, q, sizeof q);
    key_of(res, REDLEASE_KEY_WAITERS, w, sizeof w);
    obs o[2] = {{0}}, *a = &o[0], *b = &o[1];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)};
    ADM("SET %s not-a-hash", w);
    /* a free lock: the take stops at the waiters' key */
    acquire(c[1], b, res, qopts(FAR_MS, 300, 0));
    run_until(&b->acq, 2000, NULL);
    CHECK_EQ(b->acq_st, REDLEASE_EKIND);
    CHECK(strstr(redlease_client_errstr(c[1]), "WRONGTYPE") != NULL);
    CHECK_EQ(admin_int("EXISTS %s", k), 0);
    release(b, NULL);
    /* a held lock: the join stops before its place in the order */
    hold_real(c[0], a, res, qopts(FAR_MS, 0, 0));
    memset(b, 0, sizeof *b);
    acquire(c[1], b, res, qopts(FAR_MS, 300, 0));
    run_until(&b->acq, 2000, NULL);
    CHECK(b->acq_st != REDLEASE_OK);
    CHECK_EQ(admin_int("EXISTS %s", q), 0);
    release(b, NULL);
    ADM("DEL %s", w);
    release(a, NULL);
    CHECK_EQ(admin_int("EXISTS %s", k), 0);
    finish_all(c, o, 2);
}

/* REDLEASE_WAIT_WAKE: a release wakes the waiter (far sooner than its
 * timer), but hands nothing over: a releaser that asks again at once (its
 * release and its new attempt on one link, in order) takes the lock back
 * before the woken waiter's check, which then waits again. */
static void test_queue_unordered_wakes_and_lets_the_releaser_back(void)
{
    const char *res = "q-wake";
    obs o[3] = {{0}}, *a = &o[0], *b = &o[1], *b2 = &o[2];
    redlease_client *c[2] = {real_client(a, NULL), real_client(b, NULL)};
    redlease_lock_options wo = qopts(FAR_MS, 5000, 0);
    wo.wait_mode = REDLEASE_WAIT_WAKE;
    redlease_lock_options once = wo;
    once.wait_ms = 0;
    hold_real(c[0], a, res, once);
    acquire(c[1], b, res, wo);
    wait_queued(b, res, 0);
    int64_t t0 = mono_ms();
    release(a, NULL);
    run_until(&b->acq, 2000, NULL);
    printf("# woken and held after %lld ms\n", (long long)(mono_ms() - t0));
    CHECK_EQ(b->acq_st, REDLEASE_OK);
    CHECK(mono_ms() - t0 < 1000 * S);
    CHECK_EQ(queue_rank(res, redlease_lock_token(b->lk)), 0); /* in no order a take stays queued */
    memset(a, 0, sizeof *a);
    acquire(c[0], a, res, wo);
    wait_queued(a, res, 1); /* behind the holder, whose release tells a */
    CHECK_EQ(redlease_release(b->lk, o_rel, b), REDLEASE_OK);
    acquire(c[1], b2, res, once); /* right behind the release, on b's link */
    run_until(&b2->acq, 2000, NULL);
    CHECK_EQ(b2->acq_st, REDLEASE_OK); /* the releaser's client took it back */
    run_for(200, NULL);
    CHECK_EQ(a->acq, 0); /* woken, found it taken, waits again */
    release(b2, NULL);
    run_until(&a->acq, 2000, NULL);
    CHECK_EQ(a->acq_st, REDLEASE_OK);
    release(a, NULL);
    redlease_client_free(c[1]);
    finish(c[0], a);
}

/* Re-entry (lock option reentrant) on a real server: a second handle of
 * the holding client joins its lease without a command and without a
 * place in the queue; a third without re-entry waits in the queue, told
 * the lock is this client's own; releasing the first handle leaves the
 * lease to the joined one, whose release hands the lock to the waiter. */
static void test_queue_own_client_joins_or_waits_its_turn(void)
{
    obs o[3] = {{0}};
    const char *res = "q-own";
    char key[64];
    key_of(res, REDLEASE_KEY_LOCK, key, sizeof key);
    redlease_client *c = real_client(&o[0], NULL);
    redlease_lock_options lo = qopts(FAR_MS, 5000, 0);
    lo.reentrant = 1;
    hold_real(c, &o[0], res, lo);
    long long sent = 0;
    redlease_stats st;
    redlease_client_stats(c, &st);
    sent = (long long)st.commands_sent;
    hold_real(c, &o[1], res, lo);
    redlease_client_stats(c, &st);
    CHECK_EQ((long long)st.commands_sent, sent); /* joined: nothing sent */
    CHECK_EQ((long long)st.held_now, 1);
    CHECK_STR(redlease_lock_token(o[1].lk), redlease_lock_token(o[0].lk));
    CHECK(is_value_of(get_bin(key, strlen(key)), redlease_lock_token(o[0].lk)));
    watch_text = "held by this client";
    watch_hits = 0;
    acquire(c, &o[2], res, qopts(FAR_MS, 5000, 0)); /* without re-entry */
    wait_queued(&o[2], res, 0);
    CHECK(watch_hits >= 1);
    CHECK(strstr(redlease_client_errstr(c), "held by this client") != NULL);
    watch_text = NULL;
    release(&o[0], NULL); /* the joined handle still holds */
    CHECK_EQ(o[0].rel_st, REDLEASE_OK);
    run_for(200, NULL);
    CHECK_EQ(o[2].acq, 0);
    CHECK_EQ(redlease_lock_held(o[1].lk), 1);
    CHECK(is_value_of(get_bin(key, strlen(key)), redlease_lock_token(o[1].lk)));
    int64_t t0 = mono_ms();
    release(&o[1], NULL); /* the lease's release: handed to the waiter */
    CHECK_EQ(o[1].rel_st, REDLEASE_OK);
    run_until(&o[2].acq, 1000, NULL);
    CHECK(mono_ms() - t0 < 1000 * S);
    CHECK_EQ(o[2].acq_st, REDLEASE_OK);
    CHECK(is_value_of(get_bin(key, strlen(key)), redlease_lock_token(o[2].lk)));
    release(&o[2], NULL);
    finish(c, &o[0]);
    for (int i = 1; i < 3; i++) CHECK(o[i].acq == 1 && o[i].lost == 0 && o[i].rel == 1);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_queue_hands_over_in_order),
        TEST_CASE(test_queue_fences_rise_in_handover_order),
        TEST_CASE(test_queue_dead_head_costs_one_claim),
        TEST_CASE(test_queue_frozen_head_costs_one_claim),
        TEST_CASE(test_queue_expired_holder_is_found_by_the_timer),
        TEST_CASE(test_queue_lost_word_is_made_up_on_resubscribe),
        TEST_CASE(test_queue_leaving_the_queue),
        TEST_CASE(test_queue_acl_without_channels),
        TEST_CASE(test_queue_two_dead_heads),
        TEST_CASE(test_queue_keys_of_another_type),
        TEST_CASE(test_queue_unordered_wakes_and_lets_the_releaser_back),
        TEST_CASE(test_queue_own_client_joins_or_waits_its_turn),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
