/* SPDX-License-Identifier: MIT */
/* Unit tests of the quorum (src/quorum.c and its use by the locks) on the
 * fake: the members are the side link, then the peers (3 or 4 servers).
 * One token on every member, a majority to acquire and to renew, validity
 * from before the first send, the largest fence of the majority, the
 * clean-up of a failed acquire and of a lease a majority denies, deletes
 * owed to members that were away, NOSCRIPT per member, how failures
 * combine, a stale attempt left to the lock, and every allocation failing
 * in turn. */
#include "test_quorum.h"

static void test_quorum_options(void)
{
    redlease_client *c;
    redlease_client_options co;
    const char *bad[] = {"10.0.0.1:7001", "10.0.0.1:7001,10.0.0.1:7001", "10.0.0.1:7001,10.0.0.2:0",
                         "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9,j:10", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redlease_client_options_init(&co);
        co.topology = REDLEASE_TOPOLOGY_QUORUM;
        co.quorum_addrs = bad[i];
        CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
        CHECK(error_names(&co, "quorum_addrs"));
    }
    /* another topology's field is refused, and named, never ignored */
    redlease_client_options_init(&co);
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    co.quorum_addrs = addrs[3];
    co.cluster_addrs = "10.0.0.9:7009";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "cluster_addrs is for REDLEASE_TOPOLOGY_CLUSTER only");
    co.cluster_addrs = NULL;
    co.unix_path = "/tmp/x.sock";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    co.unix_path = NULL;
    co.host = "10.0.0.9";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co),
              "host, port and unix_path are for REDLEASE_TOPOLOGY_SERVER only");
    co.host = NULL;
    co.sentinel_master_name = "m";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "sentinel_* is for REDLEASE_TOPOLOGY_SENTINEL only");
    co.sentinel_master_name = NULL;
    co.quorum_addrs = "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9";
    CHECK(redlease_client_options_error(&co) == NULL);
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    redlease_client_free(c);
    /* the servers without the topology: refused, and named */
    redlease_client_options_init(&co);
    co.quorum_addrs = addrs[3];
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "quorum_addrs is for REDLEASE_TOPOLOGY_QUORUM only");
    co.quorum_addrs = NULL;
    co.quorum_restart_guard_ms = REDLEASE_RESTART_GUARD_OFF;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "quorum_restart_guard_ms is for REDLEASE_TOPOLOGY_QUORUM only");
    co.quorum_restart_guard_ms = 0;
    co.topology = 4;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
    CHECK_STR(redlease_client_options_error(&co), "topology: no such setting");
    /* the restart guard: off, or 1 ms to REDLEASE_MAX_TTL_MS */
    const int64_t guards[] = {-2, REDLEASE_MAX_TTL_MS + 1};
    for (size_t i = 0; i < 2; i++) {
        redlease_client_options_init(&co);
        co.topology = REDLEASE_TOPOLOGY_QUORUM;
        co.quorum_addrs = addrs[3];
        co.quorum_restart_guard_ms = guards[i];
        CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_EINVAL);
        CHECK_STR(redlease_client_options_error(&co), "quorum_restart_guard_ms: out of range");
    }
    /* whose replicas would acknowledge? */
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.replica_acks = 1;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_EINVAL);
    /* N queues hold no one order: FIFO waiting is refused, not turned into
     * something else; the default waits woken, in no order */
    o = opts(3000);
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_EINVAL);
    o.wait_mode = REDLEASE_WAIT_WAKE;
    rec w = {0};
    CHECK_EQ(start_lock(&f, &w, "job", &o), REDLEASE_OK);
    CHECK_EQ(release(&w), REDLEASE_OK);
    fake_run(&f);
    CHECK_STR(redlease_strerror(REDLEASE_EQUORUM), "too few of the quorum's servers said yes");
    end(&f);
}

/* The quorum waits for every member's first connection to be over, so a
 * lease at start goes to all the servers, not to the first majority to
 * connect (and never to the rest: renewals do not write the key back).
 * A member whose connect fails is not waited for. */
static void test_quorum_waits_for_every_first_connection(void)
{
    for (int fail = 0; fail <= 1; fail++) {
        fake f;
        redlease_client_options co = quorum_options(3);
        fake_attach(&f, &co);
        fake_link_connect(&f, member(&f, 1));
        fake_link_connect(&f, member(&f, 2));
        CHECK_EQ(redlease_client_connected(f.c), 0); /* member 0 still connecting */
        rec r = {0};
        redlease_lock_options o = opts(3000);
        CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
        fake_run(&f);
        CHECK(idle(&f, 1) && idle(&f, 2));
        if (fail) {
            fake_side_connect_fail(&f); /* member 0 is the side link */
            fake_run(&f);
            CHECK_EQ(redlease_client_connected(f.c), 1);
            CHECK(idle(&f, 0));
        } else {
            fake_link_connect(&f, member(&f, 0));
            CHECK(sent_to(&f, 0, "SET", NULL, &r, 2));
        }
        CHECK(sent_to(&f, 1, "SET", NULL, &r, 2) && sent_to(&f, 2, "SET", NULL, &r, 2));
        end(&f);
    }
}

/* A script goes as EVAL the first time on each link (which caches it),
 * EVALSHA after: a fresh server's NOSCRIPT, answered after the majority's
 * yes, would leave the slowest member without the lease. */
static void test_quorum_first_use_of_a_script_is_eval(void)
{
    fake f;
    start_quorum(&f, 3);
    memset(f.c->quorum->scripts, 0, 3 * sizeof *f.c->quorum->scripts); /* as connected */
    rec r = {0}, r2 = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "a", &o), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVAL", rdl_script_src[RDL_SCRIPT_ACQUIRE_FENCED], &r, 5));
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 5);
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1); /* the raises */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(start_lock(&f, &r2, "b", &o), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED), &r2, 5));
    end(&f);
}

/* One token on every member; a majority of yes is the lease, its validity
 * from before the first send (not from the answers). */
static void test_quorum_acquire_on_majority(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 0, 0);
    int64_t t0 = f.now;
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "SET", NULL, &r, 2));
    fake_advance(&f, 40);
    fake_link_reply_status(member(&f, 0), "OK");
    fake_link_reply(member(&f, 1), &(rdl_reply){.type = RDL_REPLY_NIL});
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0); /* 1 of 3: the last one decides */
    fake_advance(&f, 60);
    fake_link_reply_status(member(&f, 2), "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), rdl_valid_until(t0, 3000) - f.now);
    const redlease_event *ev = last_event(REDLEASE_EV_ACQUIRED);
    CHECK(ev && ev->rtt_ms == 100);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i)); /* nothing to clean up */
    end(&f);
}

/* Fenced: the largest counter of the yes answers that made the majority,
 * times 16, plus the member that minted it; the members' counters are
 * raised to the counter. */
static void test_quorum_fence_is_the_largest(void)
{
    fake f;
    start_quorum(&f, 4); /* a majority of 4 is 3 */
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 4; i++)
        CHECK(sent_to(&f, i, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED), &r, 5));
    fake_link_reply_int(member(&f, 0), 5);
    fake_link_reply_int(member(&f, 2), 12);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_link_reply_int(member(&f, 1), 9); /* the third yes; member 3 still silent */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 12 * 16 + 2); /* the counter, and member 2 that minted it */
    /* every member's counter goes up to it, so the next majority mints
     * above it (the member still silent too, behind its attempt) */
    for (int i = 0; i < 4; i++) {
        if (i == 3) fake_link_reply_int(member(&f, 3), 0); /* the straggler's attempt: busy */
        fake_cmd *c = fake_link_peek(member(&f, i));
        CHECK(c && strcmp(c->argv[0], "EVAL") == 0 &&
              strcmp(c->argv[1], rdl_script_src[RDL_SCRIPT_FENCE_RAISE]) == 0 && c->argc == 6 &&
              strcmp(c->argv[4], "12") == 0);
        fake_link_reply_int(member(&f, i), i != 2);
    }
    fake_run(&f);
    for (int i = 0; i < 4; i++) CHECK(idle(&f, i));
    end(&f);
}

/* No majority possible: busy, and what the attempt may have set goes at
 * once, right behind it on each link (a member still silent included). */
static void test_quorum_failed_acquire_deletes_what_it_set(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 4, 0, 0);
    fake_link_reply_status(member(&f, 0), "OK");
    fake_link_reply(member(&f, 1), &(rdl_reply){.type = RDL_REPLY_NIL});
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 0);
    fake_link_reply(member(&f, 2), &(rdl_reply){.type = RDL_REPLY_NIL}); /* 3 needed, 2 at most */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    CHECK(cleaned_on(&f, 0, &r)); /* it said yes */
    CHECK(idle(&f, 1) && idle(&f, 2));            /* busy: not ours */
    CHECK(sent_to(&f, 3, "SET", NULL, &r, 2));    /* silent: behind its attempt */
    fake_link_reply_status(member(&f, 3), "OK");
    CHECK(cleaned_on(&f, 3, &r));
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 3), 1);
    fake_run(&f);
    CHECK(release(&r) == REDLEASE_OK);
    fake_run(&f);
    for (int i = 0; i < 4; i++) CHECK(idle(&f, i));
    end(&f);
}

/* A renewal counts when a majority extends the key; a majority saying
 * "not ours" is the lease lost at once, and what is left of it goes. */
static void test_quorum_renewal_needs_a_majority(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    int64_t t0 = hold3(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    int64_t t1 = f.now;
    const char *renew = fake_sha(RDL_SCRIPT_RENEW);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVALSHA", renew, &r, 4));
    fake_link_reply_int(member(&f, 2), 0); /* it never had it */
    fake_link_reply_int(member(&f, 0), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 0);
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), rdl_valid_until(t1, 3000) - f.now);
    fake_until(&f, t1 + 1000);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVALSHA", renew, &r, 4));
    fake_link_reply_int(member(&f, 0), 0);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    /* member 1 has not answered: it may still extend the key, so a delete
     * goes behind the renewal */
    fake_link_reply_int(member(&f, 1), 1);
    CHECK(cleaned_on(&f, 1, &r));
    CHECK(idle(&f, 0) && idle(&f, 2));
    end(&f);
}

/* One of three away: the lease stays on the other two. A majority away:
 * held() is 0 at once, and the lease is lost at its local deadline, before
 * any member's key can expire. */
static void test_quorum_majority_away_is_lost_in_time(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    int64_t t0 = hold3(&f, &r, "job", opts(3000));
    fake_link_break(member(&f, 2));
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    fake_until(&f, t0 + 1000);
    int64_t t1 = f.now;
    CHECK(!idle(&f, 0) && !idle(&f, 1) && idle(&f, 2));
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    fake_link_break(member(&f, 1));
    fake_run(&f);
    CHECK_EQ(redlease_client_connected(f.c), 0);
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    fake_until(&f, t1 + 5000);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(r.lost_at, rdl_valid_until(t1, 3000)); /* before t1 + 3000, the earliest expiry */
    end(&f);
}

/* A member back from a broken link may be a restarted server without our
 * key: held() is 0 until a renewal through it, which goes at once. */
static void test_quorum_member_back_renews_at_once(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    int64_t t0 = hold3(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 100);
    fake_link_break(member(&f, 2));
    fake_advance(&f, 20);
    fake_link_connect(&f, member(&f, 2));
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    const char *renew = fake_sha(RDL_SCRIPT_RENEW);
    for (int i = 0; i < 2; i++) CHECK(sent_to(&f, i, "EVALSHA", renew, &r, 4));
    CHECK(sent_to(&f, 2, "EVAL", rdl_script_src[RDL_SCRIPT_RENEW], &r, 4)); /* a new link: EVAL */
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    /* the next renewal keeps its interval */
    fake_advance(&f, 900);
    CHECK(idle(&f, 0));
    end(&f);
}

/* A member back while a renewal is out: that renewal, confirmed, is from
 * before the member was asked, so another goes at once; held() is 0 in
 * between. */
static void test_quorum_member_back_during_a_renewal(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    int64_t t0 = hold3(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    const char *renew = fake_sha(RDL_SCRIPT_RENEW);
    CHECK(sent_to(&f, 2, "EVALSHA", renew, &r, 4));
    fake_link_break(member(&f, 2));
    fake_advance(&f, 20);
    fake_link_connect(&f, member(&f, 2));
    CHECK(idle(&f, 2)); /* the lock's renewal is still out */
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    for (int i = 0; i < 3; i++) CHECK(ran(&f, i, RDL_SCRIPT_RENEW, &r, 4));
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), 1);
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(r.lk), 1);
    end(&f);
}

/* A release answered by a majority is done; a silent member does not hold
 * it up (its delete is on its link, ahead of anything later). */
static void test_quorum_release_needs_no_straggler(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    hold3(&f, &r, "job", opts(3000));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    fake_link_reply_int(member(&f, 1), 1); /* late: the handle is gone, nothing breaks */
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
    end(&f);
}

/* A release goes everywhere; a member away then gets its compare-and-delete
 * first thing on its next link. */
static void test_quorum_release_everywhere(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    hold3(&f, &r, "job", opts(3000));
    fake_link_break(member(&f, 2));
    fake_run(&f);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    const char *rel = fake_sha(RDL_SCRIPT_RELEASE);
    CHECK(sent_to(&f, 0, "EVALSHA", rel, &r, 4));
    CHECK(sent_to(&f, 1, "EVALSHA", rel, &r, 4));
    fake_link_reply_int(member(&f, 0), 1);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 0); /* a majority answers first */
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    /* the handle is gone; member 2 still gets the delete */
    fake_advance(&f, 20); /* its reconnect delay */
    fake_link_connect(&f, member(&f, 2));
    fake_cmd *c = fake_link_peek(member(&f, 2));
    CHECK(c && strcmp(c->argv[0], "EVAL") == 0 && strcmp(c->argv[1], rdl_script_src[RDL_SCRIPT_RELEASE]) == 0);
    fake_link_reply_int(member(&f, 2), 1);
    fake_run(&f);
    end(&f);
}

/* A member whose script cache is cold gets EVAL; the others are not
 * asked again. */
static void test_quorum_noscript_per_member(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    int64_t t0 = hold3(&f, &r, "job", opts(3000));
    fake_until(&f, t0 + 1000);
    fake_link_reply_err(member(&f, 1), "NOSCRIPT No matching script.");
    fake_link_reply_int(member(&f, 0), 1);
    CHECK(link_cmd_is(member(&f, 1), "EVAL", NULL));
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK(idle(&f, 0) && idle(&f, 1) && idle(&f, 2));
    CHECK_EQ(r.lost_calls, 0);
    end(&f);
}

/* Failures combine: errors of several kinds are QUORUM (transient,
 * retried); a definite error from more members than may fail is passed on
 * as it is and ends the acquire. */
static void test_quorum_failures_combine(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 0, 5000);
    fake_link_reply_err(member(&f, 0), "LOADING Redis is loading the dataset in memory");
    fake_link_reply_status(member(&f, 1), "OK");
    fake_link_reply_err(member(&f, 2), "OOM command not allowed");
    fake_run(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(ev && ev->status == REDLEASE_EQUORUM && ev->retry_in_ms >= 0);
    /* the first error quoted after its member's name; no one member's failure */
    const char *want = "QUORUM 1 of 3 servers said yes, 2 needed (0 no, 2 failed: 10.0.0.1:7001: LOADING Redis";
    CHECK(strncmp(redlease_client_errstr(f.c), want, strlen(want)) == 0);
    CHECK(names(ev, NULL));
    CHECK(cleaned_on(&f, 1, &r)); /* member 1 said yes */
    fake_link_reply_int(member(&f, 1), 1);
    CHECK_EQ(r.acq_calls, 0);
    const char *acq = fake_sha(RDL_SCRIPT_ACQUIRE);
    await_attempt(&f, 0, RDL_SCRIPT_ACQUIRE, 10);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVALSHA", acq, &r, 4));
    fake_link_reply_err(member(&f, 0), "NOPERM this user has no permissions to access one of the keys");
    fake_link_reply_err(member(&f, 2), "NOPERM this user has no permissions to access one of the keys");
    /* passed on as the member's own: its events and text name it */
    ev = last_event(REDLEASE_EV_ACQUIRE_FAILED);
    CHECK(ev && ev->status == REDLEASE_EPERM && names(ev, "10.0.0.1:7001"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.1:7001: NOPERM this user has no permissions to access one of the keys");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EPERM);
    end(&f);
}

/* A member's connection events name that member, and so does the text of
 * its failure; the quorum's own node has no server to name. */
static void test_quorum_member_events_name_the_member(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 0, 1000);
    CHECK_EQ(count_events(REDLEASE_EV_CONNECTED), 3);
    CHECK(names(last_event(REDLEASE_EV_CONNECTED), "10.0.0.3:7003"));
    /* a lock event of the quorum's own is about no one member */
    fake_link_reply_status(member(&f, 0), "OK");
    fake_link_reply_status(member(&f, 2), "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK(names(last_event(REDLEASE_EV_ACQUIRED), NULL));
    fake_link_break(member(&f, 1));
    fake_run(&f);
    CHECK(names(last_event(REDLEASE_EV_DISCONNECTED), "10.0.0.2:7002"));
    CHECK_STR(redlease_client_errstr(f.c), "10.0.0.2:7002: connection reset (fake link)");
    CHECK(names(last_event(REDLEASE_EV_RECONNECTING), "10.0.0.2:7002"));
    end(&f);
}

/* An attempt the lock stopped waiting for is not cleaned up by the quorum:
 * the next attempt is already on the links behind it, and a delete now
 * would run after that one and take the key it set. */
static void test_quorum_stale_attempt_left_to_the_lock(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 0, 10000);
    fake_link_reply_status(member(&f, 0), "OK");
    fake_run(&f);
    fake_advance(&f, 2000); /* the command timeout: the attempt goes stale */
    const char *acq = fake_sha(RDL_SCRIPT_ACQUIRE);
    await_attempt(&f, 0, RDL_SCRIPT_ACQUIRE, 10);
    CHECK(sent_to(&f, 0, "EVALSHA", acq, &r, 4)); /* attempt 2, reclaiming */
    fake_link_reply(member(&f, 1), &(rdl_reply){.type = RDL_REPLY_NIL}); /* attempt 1 ends: */
    fake_link_reply(member(&f, 2), &(rdl_reply){.type = RDL_REPLY_NIL}); /* no majority */
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK(sent_to(&f, i, "EVALSHA", acq, &r, 4));
    fake_link_reply_int(member(&f, 0), 1); /* its own key from attempt 1, taken back */
    fake_link_reply_int(member(&f, 1), 1);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i)); /* no delete behind attempt 2 */
    end(&f);
}

/* The clean-up after a failed attempt goes as EVAL: were it EVALSHA, a
 * cold script cache would send it again behind the next attempt, whose
 * key it would then delete from a member the lease counts on. */
static void test_quorum_cleanup_never_lands_after_the_next_attempt(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 1, 10000);
    const char *acq = fake_sha(RDL_SCRIPT_ACQUIRE_FENCED);
    fake_link_reply_err(member(&f, 0), "NOSCRIPT No matching script."); /* restarted: cold */
    CHECK(link_cmd_is(member(&f, 0), "EVAL", NULL));
    fake_link_reply_int(member(&f, 1), 0);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f); /* attempt 1 failed: a clean-up behind member 0's EVAL */
    fake_link_reply_int(member(&f, 0), 5); /* the EVAL set our key */
    await_attempt(&f, 1, RDL_SCRIPT_ACQUIRE_FENCED, 1);
    CHECK(sent_to(&f, 1, "EVALSHA", acq, &r, 5)); /* attempt 2, before the clean-up's answer */
    /* the clean-up, answered as the cold server would */
    if (link_cmd_is(member(&f, 0), "EVALSHA", NULL))
        fake_link_reply_err(member(&f, 0), "NOSCRIPT No matching script.");
    else
        fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 0), 6); /* attempt 2: a majority with member 1 */
    fake_link_reply_int(member(&f, 1), 7);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    fake_cmd *c = fake_link_peek(member(&f, 0)); /* no delete behind attempt 2: the raise */
    CHECK(c && strcmp(c->argv[1], rdl_script_src[RDL_SCRIPT_FENCE_RAISE]) == 0);
    fake_link_reply_int(member(&f, 0), 1);
    CHECK(idle(&f, 0)); /* and nothing after it */
    end(&f);
}

/* A clean-up a member could not run (BUSY) is not owed for later: the
 * lock's next attempt may be behind it on that link already (here it took
 * the key back), and a delete later would take it from the lease. */
static void test_quorum_failed_cleanup_not_owed(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 1, 10000);
    const char *acq = fake_sha(RDL_SCRIPT_ACQUIRE_FENCED);
    fake_link_reply_int(member(&f, 0), 5);
    fake_link_reply_int(member(&f, 1), 0);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK(cleaned_on(&f, 0, &r));
    await_attempt(&f, 1, RDL_SCRIPT_ACQUIRE_FENCED, 1);
    fake_link_reply_err(member(&f, 0), "BUSY Redis is busy running a script.");
    CHECK(sent_to(&f, 0, "EVALSHA", acq, &r, 5)); /* attempt 2, behind the clean-up */
    fake_link_reply_int(member(&f, 0), 6); /* its own key, taken back */
    fake_link_reply_int(member(&f, 1), 7);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    for (int i = 0; i < 3; i++) {
        fake_cmd *c = fake_link_peek(member(&f, i));
        if (i == 2) fake_link_reply_int(member(&f, 2), 0); /* attempt 2 there */
        c = fake_link_peek(member(&f, i));
        CHECK(c && strcmp(c->argv[1], rdl_script_src[RDL_SCRIPT_FENCE_RAISE]) == 0);
        fake_link_reply_int(member(&f, i), 1);
    }
    fake_run(&f);
    for (int i = 0; i < 3; i++) CHECK(idle(&f, i)); /* no delete of the lease's key */
    end(&f);
}

/* A member still silent when the lock has its answer is dropped by the
 * stall rule (the lock's own timeout, which would arm it, never comes),
 * and connects again. */
static void test_quorum_silent_member_dropped(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0};
    redlease_lock_options o = opts(30000); /* no renewal in this test's time */
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_link_reply_status(member(&f, 0), "OK");
    fake_link_reply_status(member(&f, 1), "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    int before = count_events(REDLEASE_EV_DISCONNECTED);
    fake_advance(&f, 2 * 2000 - 10);
    CHECK_EQ(count_events(REDLEASE_EV_DISCONNECTED), before);
    fake_advance(&f, 20); /* twice the command timeout since its send */
    CHECK_EQ(count_events(REDLEASE_EV_DISCONNECTED), before + 1);
    CHECK_EQ(member(&f, 2)->connected, 0);
    CHECK_EQ(redlease_lock_held(r.lk), 1); /* two of three still */
    end(&f);
}

/* A member that never finishes connecting (a server that accepts and
 * never answers) is waited for only for the settling time: an acquire
 * with no wait budget still goes, to the others, within its timeout. */
static void test_quorum_settling_ends(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.quorum_addrs = addrs[3];
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    fake_attach(&f, &co);
    fake_link_connect(&f, member(&f, 1));
    fake_link_connect(&f, member(&f, 2));
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 0;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_advance(&f, RDL_QUORUM_SETTLE_MS - 1);
    CHECK(idle(&f, 1));
    fake_advance(&f, 1);
    CHECK(sent_to(&f, 1, "SET", NULL, &r, 2) && sent_to(&f, 2, "SET", NULL, &r, 2));
    fake_link_reply_status(member(&f, 1), "OK");
    fake_link_reply_status(member(&f, 2), "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* An attempt still out on a member when the acquire failed, answered
 * NOSCRIPT there, is not sent again: it did nothing, and sent again it
 * would set the key behind the clean-up, for a whole TTL, unknown. */
static void test_quorum_decided_attempt_not_sent_again(void)
{
    fake f;
    rec r = {0};
    start_job(&f, &r, 3, 1, 0);
    fake_link_reply_int(member(&f, 1), 0);
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    fake_link_reply_err(member(&f, 0), "NOSCRIPT No matching script.");
    CHECK(cleaned_on(&f, 0, &r));
    fake_link_reply_int(member(&f, 0), 0);
    fake_run(&f);
    CHECK(idle(&f, 0));
    end(&f);
}

/* A release a member could not run now (LOADING) is owed to it: it goes
 * ahead of the next command for that member. */
static void test_quorum_release_error_is_owed(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r = {0}, r2 = {0};
    hold3(&f, &r, "job", opts(3000));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    char token[64];
    snprintf(token, sizeof token, "%s", redlease_lock_token(r.lk));
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_err(member(&f, 1), "LOADING Redis is loading the dataset in memory");
    fake_link_reply_int(member(&f, 2), 0);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    CHECK(idle(&f, 1)); /* not again at once: it could spin */
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r2, "other", &o), REDLEASE_OK);
    fake_run(&f);
    fake_cmd *c = fake_link_peek(member(&f, 1));
    CHECK(c && strcmp(c->argv[0], "EVALSHA") == 0 && strcmp(c->argv[1], fake_sha(RDL_SCRIPT_RELEASE)) == 0 &&
          strcmp(c->argv[4], token) == 0);
    fake_link_reply_int(member(&f, 1), 1);
    CHECK(sent_to(&f, 1, "SET", NULL, &r2, 2));
    end(&f);
}

/* The event hook releases another lock while the quorum answers a release
 * whose owed delete has expired: the submit inside sweeps the owing list,
 * and must not free the fan-out being answered (ASan would see it). */
static rec *hook_other;
static void hook_release_other(redlease_client *c, const redlease_event *ev, void *arg)
{
    record_event(c, ev, arg);
    if (ev->type == REDLEASE_EV_RELEASED && hook_other) {
        rec *o = hook_other;
        hook_other = NULL;
        CHECK_EQ(release(o), REDLEASE_OK);
    }
}

static void test_quorum_submit_from_an_answer(void)
{
    fake f;
    start_quorum(&f, 3);
    rec r1 = {0}, r2 = {0};
    redlease_lock_options o1 = opts(100), o2 = opts(3000);
    o1.renew_interval_ms = o2.renew_interval_ms = REDLEASE_RENEW_OFF;
    hold3(&f, &r1, "a", o1);
    hold3(&f, &r2, "b", o2);
    fake_link_break(member(&f, 2));
    fake_run(&f);
    CHECK_EQ(release(&r1), REDLEASE_OK);
    fake_run(&f);
    fake_advance(&f, 150); /* past what member 2 is owed for */
    hook_other = &r2;
    redlease_client_set_event_cb(f.c, hook_release_other, NULL);
    fake_link_reply_int(member(&f, 0), 1);
    fake_link_reply_int(member(&f, 1), 1);
    fake_run(&f);
    CHECK_EQ(r1.rel_calls, 1);
    CHECK(hook_other == NULL);
    CHECK(sent_to(&f, 0, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE), &r2, 4));
    end(&f);
}

/* ------------------------------------------------- allocation failures */

static void oom_scenario_quorum(long fail_at, int *ok)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.quorum_addrs = addrs[3];
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    fake_alloc_fail_at(fail_at);
    fake_attach(&f, &co);
    int good = 0;
    rec r = {0}; /* until fake_free: a release cut short by a failure ends there */
    if (f.c) {
        for (int i = 0; i < 3; i++)
            if (member(&f, i)->cn) fake_link_connect(&f, member(&f, i));
        redlease_lock_options o = opts(3000);
        o.wait_ms = 0;
        if (start_lock(&f, &r, "job", &o) == REDLEASE_OK) {
            fake_run(&f);
            for (int i = 0; i < 3; i++)
                if (link_cmd_is(member(&f, i), "SET", NULL)) fake_link_reply_status(member(&f, i), "OK");
            fake_run(&f);
            if (r.acq_status == REDLEASE_OK && release(&r) == REDLEASE_OK) {
                fake_run(&f);
                for (int i = 0; i < 3; i++) /* EVAL: the release script's first use here */
                    if (link_cmd_is(member(&f, i), "EVAL", NULL)) fake_link_reply_int(member(&f, i), 1);
                fake_run(&f);
                good = r.rel_calls == 1 && r.rel_status == REDLEASE_OK;
            }
        }
    }
    fake_alloc_fail_at(0);
    fake_free(&f);
    CHECK_EQ(fake_alloc_live(), 0);
    if (good && fail_at == 0) (*ok)++;
}

static void test_quorum_allocation_failures(void)
{
    long n = alloc_sweep(oom_scenario_quorum);
    printf("# %ld allocations, each failed in turn\n", n);
}

int main(int argc, char **argv)
{
    fake_alloc_install();
    static const test_case cases[] = {
        TEST_CASE(test_quorum_options),
        TEST_CASE(test_quorum_waits_for_every_first_connection),
        TEST_CASE(test_quorum_first_use_of_a_script_is_eval),
        TEST_CASE(test_quorum_acquire_on_majority),
        TEST_CASE(test_quorum_fence_is_the_largest),
        TEST_CASE(test_quorum_failed_acquire_deletes_what_it_set),
        TEST_CASE(test_quorum_renewal_needs_a_majority),
        TEST_CASE(test_quorum_majority_away_is_lost_in_time),
        TEST_CASE(test_quorum_member_back_renews_at_once),
        TEST_CASE(test_quorum_member_back_during_a_renewal),
        TEST_CASE(test_quorum_release_everywhere),
        TEST_CASE(test_quorum_release_needs_no_straggler),
        TEST_CASE(test_quorum_noscript_per_member),
        TEST_CASE(test_quorum_failures_combine),
        TEST_CASE(test_quorum_member_events_name_the_member),
        TEST_CASE(test_quorum_stale_attempt_left_to_the_lock),
        TEST_CASE(test_quorum_cleanup_never_lands_after_the_next_attempt),
        TEST_CASE(test_quorum_decided_attempt_not_sent_again),
        TEST_CASE(test_quorum_failed_cleanup_not_owed),
        TEST_CASE(test_quorum_silent_member_dropped),
        TEST_CASE(test_quorum_settling_ends),
        TEST_CASE(test_quorum_release_error_is_owed),
        TEST_CASE(test_quorum_submit_from_an_answer),
        TEST_CASE(test_quorum_allocation_failures),
        TEST_CASE(test_quorum_restarted_member_not_counted),
        TEST_CASE(test_quorum_restart_guard_off_or_unknown),
        TEST_CASE(test_quorum_restart_guard_option),
        TEST_CASE(test_quorum_restart_guard_named_in_the_failure),
        TEST_CASE(test_quorum_member_restarted_while_connected),
        TEST_CASE(test_quorum_waiters_are_woken),
        TEST_CASE(test_quorum_split_vote_backs_off_once),
        TEST_CASE(test_quorum_semaphore_capacity_rule),
        TEST_CASE(test_quorum_semaphore_capacity),
        TEST_CASE(test_quorum_semaphore_lease),
        TEST_CASE(test_quorum_shared_lease),
        TEST_CASE(test_quorum_fence_names_the_server_not_the_place),
    };
    return run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
}
