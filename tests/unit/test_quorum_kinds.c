/* SPDX-License-Identifier: MIT */
/* Unit tests of a semaphore and a shared holder over a quorum (design
 * 12.3): each member admits a semaphore up to its capacity, less than the
 * limit; both kinds poll (no one queue orders them); the fan-out reads
 * their answers as the queue's, raises their fences, and cleans up with
 * their own compare-and-delete. */
#include "test_quorum.h"

static redlease_lock_options kind_opts(int limit, int weight, int shared)
{
    redlease_lock_options o = opts(3000);
    o.wait_mode = REDLEASE_WAIT_DEFAULT;
    o.limit = limit;
    o.weight = weight;
    o.shared = shared;
    return o;
}

/* Member i's oldest command is the quorum's own compare-and-delete of
 * r's lease by script sc (EVAL from the start), token at argument k. */
static int cleaned_by(fake *f, int i, int sc, rec *r, int k)
{
    return sent_to(f, i, "EVAL", rdl_script_src[sc], r, k);
}

/* The capacity's rule, its bound checked for every majority: holders of
 * total weight W, each on a majority, need W * majority <= servers * c. */
void test_quorum_semaphore_capacity_rule(void)
{
    CHECK_EQ(redlease_semaphore_capacity(5, 1), 5); /* one server: the limit */
    CHECK_EQ(redlease_semaphore_capacity(1, 3), 1);
    CHECK_EQ(redlease_semaphore_capacity(2, 3), 1);
    CHECK_EQ(redlease_semaphore_capacity(3, 3), 2);
    CHECK_EQ(redlease_semaphore_capacity(4, 3), 3);
    CHECK_EQ(redlease_semaphore_capacity(2, 5), 1);
    CHECK_EQ(redlease_semaphore_capacity(10, 5), 6);
    CHECK_EQ(redlease_semaphore_capacity(REDLEASE_MAX_PERMITS, 2), REDLEASE_MAX_PERMITS); /* 2 of 2 */
    CHECK_EQ(redlease_semaphore_capacity(0, 3), REDLEASE_EINVAL);
    CHECK_EQ(redlease_semaphore_capacity(REDLEASE_MAX_PERMITS + 1, 3), REDLEASE_EINVAL);
    CHECK_EQ(redlease_semaphore_capacity(3, 0), REDLEASE_EINVAL);
    CHECK_EQ(redlease_semaphore_capacity(3, REDLEASE_MAX_QUORUM + 1), REDLEASE_EINVAL);
    for (int n = 1; n <= REDLEASE_MAX_QUORUM; n++) {
        int m = n / 2 + 1;
        for (int limit = 1; limit <= 60; limit++) {
            int c = redlease_semaphore_capacity(limit, n);
            CHECK(c >= 1 && c <= limit);
            CHECK(n * c / m <= limit);           /* never more than limit hold */
            CHECK(n * (c + 1) / m > limit);      /* and no more could be admitted */
        }
    }
}

/* What each member admits, and what may not be asked: a weight above it
 * (never admitted), the queue (no one order), a wake-up (no order). */
void test_quorum_semaphore_capacity(void)
{
    fake f;
    start_quorum(&f, 3); /* a majority of 2 */
    static const struct { int limit, weight, rc; const char *cap; } rows[] = {
        {1, 1, REDLEASE_OK, "1"},     {2, 1, REDLEASE_OK, "1"},     {2, 2, REDLEASE_EINVAL, NULL},
        {3, 2, REDLEASE_OK, "2"},     {3, 3, REDLEASE_EINVAL, NULL}, {4, 3, REDLEASE_OK, "3"},
        {10, 7, REDLEASE_OK, "7"},    {10, 8, REDLEASE_EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rec r = {0};
        redlease_lock_options o = kind_opts(rows[i].limit, rows[i].weight, 0);
        CHECK_EQ(start_lock(&f, &r, "s", &o), rows[i].rc);
        if (rows[i].rc) continue;
        fake_run(&f);
        for (int m = 0; m < 3; m++) {
            fake_cmd *c = fake_link_peek(member(&f, m));
            CHECK(ran(&f, m, RDL_SCRIPT_SEM_ACQUIRE, &r, 8));
            CHECK(c && c->argc == 17 && strcmp(c->argv[11], rows[i].cap) == 0 &&
                  strcmp(c->argv[15], "") == 0 && is_record_of(c->argv[16], r.lk)); /* polls: joins no queue */
            fake_link_reply_int(member(&f, m), 0);
        }
        fake_run(&f);
        CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
        /* decided at the second "no": the third may have admitted it */
        CHECK(cleaned_by(&f, 2, RDL_SCRIPT_SEM_RELEASE, &r, 8));
        fake_link_reply_int(member(&f, 2), 0);
        fake_run(&f);
        CHECK(idle(&f, 0) && idle(&f, 1) && idle(&f, 2));
    }
    rec r = {0};
    redlease_lock_options o = kind_opts(3, 0, 0);
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_EINVAL);
    o.wait_mode = REDLEASE_WAIT_WAKE;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_ENOTSUP);
    o = kind_opts(0, 0, 1);
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_EINVAL);
    end(&f);
}

/* Admitted by a majority: held, the largest fence raised on every member;
 * renewed and released by its own scripts on each. Not admitted by a
 * majority: busy after the poll's budget, and the member that admitted it
 * gives the permit back by the semaphore's release at once. */
void test_quorum_semaphore_lease(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    redlease_lock_options o = kind_opts(3, 0, 0);
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    fake_link_reply_int(member(&f, 0), 7);
    fake_link_reply_int(member(&f, 1), -1201); /* full there: 1200 ms to its first deadline */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_link_reply_int(member(&f, 2), 9);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 9 * 16 + 2);
    for (int i = 0; i < 3; i++) {
        fake_cmd *c = fake_link_peek(member(&f, i));
        CHECK(c && strcmp(c->argv[1], rdl_script_src[RDL_SCRIPT_FENCE_RAISE]) == 0 && strcmp(c->argv[4], "9") == 0);
        fake_link_reply_int(member(&f, i), i == 1);
    }
    fake_run(&f);
    fake_until(&f, t0 + 1000);
    for (int i = 0; i < 3; i++) CHECK(ran(&f, i, RDL_SCRIPT_SEM_RENEW, &r, 6));
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), 0); /* it never admitted it */
    fake_link_reply_int(member(&f, 2), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) {
        CHECK(ran(&f, i, RDL_SCRIPT_SEM_RELEASE, &r, 8));
        fake_link_reply_int(member(&f, i), i != 1);
    }
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);

    rec b = {0};
    o = kind_opts(3, 0, 0);
    CHECK_EQ(start_lock(&f, &b, "s", &o), REDLEASE_OK); /* one attempt */
    fake_run(&f);
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), -1201);
    fake_link_reply_int(member(&f, 2), -501);
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
    CHECK(cleaned_by(&f, 0, RDL_SCRIPT_SEM_RELEASE, &b, 8)); /* its permit there, given back */
    CHECK(idle(&f, 1) && idle(&f, 2));
    fake_link_reply_int(member(&f, 0), 1);
    fake_run(&f);
    end(&f);
}

/* A shared holder: admitted by a majority; its renewal is the holders'
 * (limit 0); a majority saying "not ours" is the lease lost, and what is
 * left of it goes by the shared release. An exclusive holder on a
 * majority (the lock key holds its token: the holders' script waits) is
 * busy for it. */
void test_quorum_shared_lease(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    redlease_lock_options o = kind_opts(0, 0, 1);
    CHECK_EQ(start_lock(&f, &r, "s", &o), REDLEASE_OK);
    fake_run(&f);
    int64_t t0 = f.now;
    for (int i = 0; i < 3; i++) {
        fake_cmd *c = fake_link_peek(member(&f, i));
        CHECK(ran(&f, i, RDL_SCRIPT_SHARED_ACQUIRE, &r, 8));
        /* polls; a free resource is not handed over (no one order) */
        CHECK(c && c->argc == 15 && strcmp(c->argv[12], "") == 0 && strcmp(c->argv[13], "0") == 0 &&
              is_record_of(c->argv[14], r.lk));
    }
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    fake_link_reply_int(member(&f, 2), -2001); /* an exclusive holder there */
    fake_run(&f);
    fake_until(&f, t0 + 1000);
    for (int i = 0; i < 3; i++) {
        fake_cmd *c = fake_link_peek(member(&f, i));
        CHECK(ran(&f, i, RDL_SCRIPT_SEM_RENEW, &r, 6) && strcmp(c->argv[7], "0") == 0);
    }
    fake_link_reply_int(member(&f, 0), 0);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    fake_link_reply_int(member(&f, 1), 1);
    CHECK(cleaned_by(&f, 1, RDL_SCRIPT_SHARED_RELEASE, &r, 8));
    fake_cmd *cc = fake_link_peek(member(&f, 1)); /* in no order, as its lock's own */
    CHECK(cc && cc->argc == 10 && strcmp(cc->argv[9], "0") == 0);
    CHECK(idle(&f, 0) && idle(&f, 2));
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);

    rec b = {0};
    CHECK_EQ(start_lock(&f, &b, "s", &o), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), i == 0 ? 1 : -2001);
    fake_run(&f);
    CHECK_EQ(b.acq_status, REDLEASE_EBUSY);
    CHECK(cleaned_by(&f, 0, RDL_SCRIPT_SHARED_RELEASE, &b, 8));
    fake_link_reply_int(member(&f, 0), 1);
    fake_run(&f);
    end(&f);
}

/* A quorum's fence names the member that minted its counter by the
 * member's rank among the servers sorted by address, not by its place in
 * quorum_addrs: two clients listing the same servers in other orders mark
 * each server alike, so their holders at once never share a fence. */
void test_quorum_fence_names_the_server_not_the_place(void)
{
    static const char *const lists[] = {"10.0.0.1:7001,10.0.0.2:7002,10.0.0.3:7003",
                                        "10.0.0.3:7003,10.0.0.1:7001,10.0.0.2:7002",
                                        "10.0.0.2:7002,10.0.0.3:7003,10.0.0.1:7001"};
    for (int l = 0; l < 3; l++) {
        fake f;
        redlease_client_options co;
        redlease_client_options_init(&co);
        co.quorum_addrs = lists[l];
        co.topology = REDLEASE_TOPOLOGY_QUORUM;
        if (!attach_recording(&f, &co)) return;
        for (int i = 0; i < 3; i++) fake_link_connect(&f, member(&f, i));
        scripts_warm(&f);
        rec r = {0};
        redlease_lock_options o = opts(3000);
        o.fencing = 1;
        CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
        fake_run(&f);
        /* the largest counter from the list's second server, whichever it is */
        for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), i == 1 ? 50 : 40);
        fake_run(&f);
        CHECK_EQ(r.acq_status, REDLEASE_OK);
        int rank = l == 0 ? 1 : l == 1 ? 0 : 2; /* 10.0.0.2, 10.0.0.1, 10.0.0.3 */
        CHECK_EQ(redlease_lock_fence(r.lk), (uint64_t)(50 * 16 + rank));
        for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1); /* the raises */
        fake_run(&f);
        end(&f);
    }
}
