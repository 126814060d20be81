/* SPDX-License-Identifier: MIT */
/* The quorum's restart guard (src/quorum.c, young()): a member whose
 * server started less than the guard ago (INFO server's uptime, read in
 * its handshake) does not count toward an acquire's majority; its yes is
 * cleaned up with the rest. The guard is the lease's TTL by default, the
 * client's quorum_restart_guard_ms when set, and nothing when off; a member
 * whose INFO is refused counts as ever. */
#include "test_quorum.h"

/* A client over 3 members, the restart guard as given, member 2's server
 * up for up_s seconds (0: a day; < 0: INFO refused), every one connected. */
static void start_guarded(fake *f, int64_t guard, long up_s)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.quorum_addrs = addrs[3];
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    co.quorum_restart_guard_ms = guard;
    if (!attach_recording(f, &co)) return;
    member(f, 2)->uptime_s = up_s;
    for (int i = 0; i < 3; i++) fake_link_connect(f, member(f, i));
    CHECK_EQ(redlease_client_connected(f->c), 1);
    scripts_warm(f);
}

/* One attempt of a lock on "job" (ttl 3000, wait 0, fencing as given):
 * member 0 busy, members 1 and 2 yes (fence answers 1000 + i). */
static void one_attempt(fake *f, rec *r, int fencing)
{
    redlease_lock_options o = opts(3000);
    o.fencing = fencing;
    CHECK_EQ(start_lock(f, r, "job", &o), REDLEASE_OK);
    fake_run(f);
    if (fencing) {
        fake_link_reply_int(member(f, 0), 0);
        for (int i = 1; i < 3; i++) fake_link_reply_int(member(f, i), 1000 + i);
    } else {
        fake_link_reply(member(f, 0), &(rdl_reply){.type = RDL_REPLY_NIL});
        for (int i = 1; i < 3; i++) fake_link_reply_status(member(f, i), "OK");
    }
    fake_run(f);
}

/* An attempt at t - 1 is busy (the young member's yes not counted, and
 * deleted with the other's: both clean-ups answered), one at t holds: into
 * held. */
static void young_until(fake *f, int64_t t, int fencing, rec *held)
{
    fake_until(f, t - 1);
    rec r = {0};
    one_attempt(f, &r, fencing);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY); /* a member said busy */
    CHECK_EQ(redlease_lock_held(r.lk), 0);
    for (int i = 1; i < 3; i++) CHECK(cleaned_on(f, i, &r));
    for (int i = 1; i < 3; i++) fake_link_reply_int(member(f, i), 1);
    CHECK(idle(f, 0));
    fake_run(f);
    CHECK(release(&r) == REDLEASE_OK);
    fake_until(f, t);
    one_attempt(f, held, fencing);
    CHECK_EQ(held->acq_status, REDLEASE_OK);
}

/* Member 2 up 1 s, the guard the TTL (3000): its yes makes no majority
 * until 2000 ms after the connect; then the same votes acquire, the fence
 * now its own when it is the largest. */
void test_quorum_restarted_member_not_counted(void)
{
    for (int fencing = 0; fencing <= 1; fencing++) {
        fake f;
        start_guarded(&f, 0, 1);
        rec r = {0};
        young_until(&f, f.now + 2000, fencing, &r);
        if (fencing) CHECK(redlease_lock_fence(r.lk) / RDL_QUORUM_FENCE_SPREAD == 1002);
        end(&f);
    }
}

/* Off: counted at once. INFO refused: the start is unknown, counted. */
void test_quorum_restart_guard_off_or_unknown(void)
{
    for (int k = 0; k < 2; k++) {
        fake f;
        start_guarded(&f, k == 0 ? REDLEASE_RESTART_GUARD_OFF : 0, k == 0 ? 1 : -1);
        rec r = {0};
        one_attempt(&f, &r, 0);
        CHECK_EQ(r.acq_status, REDLEASE_OK);
        end(&f);
    }
}

/* quorum_restart_guard_ms longer than the lease's TTL: it is the guard. */
void test_quorum_restart_guard_option(void)
{
    fake f;
    start_guarded(&f, 10000, 1); /* young until 9000 ms after the connect */
    rec r = {0};
    young_until(&f, f.now + 9000, 0, &r);
    end(&f);
}

/* With no member busy, the shortfall is the quorum's, and its text says
 * the young member's yes was not counted; a retry inside the budget. */
void test_quorum_restart_guard_named_in_the_failure(void)
{
    fake f;
    start_guarded(&f, 0, 1);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 5000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_link_reply_err(member(&f, 0), "LOADING Redis is loading the dataset in memory");
    fake_link_reply_status(member(&f, 1), "OK");
    fake_link_reply_status(member(&f, 2), "OK");
    fake_run(&f);
    const redlease_event *ev = last_event(REDLEASE_EV_ATTEMPT_FAILED);
    CHECK(ev && ev->status == REDLEASE_EQUORUM && ev->retry_in_ms >= 0);
    const char *want = "QUORUM 1 of 3 servers said yes, 2 needed (0 no, 1 restarted less than the "
                       "restart guard ago, 1 failed: 10.0.0.1:7001: LOADING";
    CHECK(strncmp(redlease_client_errstr(f.c), want, strlen(want)) == 0);
    CHECK_EQ(r.acq_calls, 0);
    end(&f);
}

/* A member that comes back restarted (its new link's INFO: up 1 s) stops
 * counting for acquires from then, though it counted before. Renewals
 * are not guarded: only this holder's token can be there. */
void test_quorum_member_restarted_while_connected(void)
{
    fake f;
    start_guarded(&f, 0, 0);
    rec held = {0};
    int64_t t0 = hold3(&f, &held, "held", opts(3000)); /* members 0 and 1 */
    fake_until(&f, t0 + 100);
    fake_link_break(member(&f, 2));
    member(&f, 2)->uptime_s = 1;
    fake_advance(&f, 20);
    fake_link_connect(&f, member(&f, 2));
    for (int i = 0; i < 3; i++) fake_link_reply_int(member(&f, i), i < 2); /* the renewal at once */
    fake_run(&f);
    CHECK_EQ(redlease_lock_held(held.lk), 1);
    rec r = {0};
    one_attempt(&f, &r, 0);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    end(&f);
}
