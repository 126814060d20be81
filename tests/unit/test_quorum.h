/* SPDX-License-Identifier: MIT */
/* What the files of test_quorum share: the fake quorum (the members are
 * the side link, then the peers) and the helpers that start it, hold a
 * lease on it and look at what each member was sent. Header-only, as
 * core_rig.h: each file has its own copy. */
#ifndef REDLEASE_TEST_QUORUM_H
#define REDLEASE_TEST_QUORUM_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "lease_math.h"
#include "testutil.h"

static inline fake_side *member(fake *f, int i) { return i == 0 ? &f->side : &f->peers[i - 1]; }

static const char *const addrs[] = {"", "", "", "10.0.0.1:7001,10.0.0.2:7002,10.0.0.3:7003",
                                    "10.0.0.1:7001,10.0.0.2:7002,10.0.0.3:7003,10.0.0.4:7004"};

/* As if every script had gone on every member's link already: EVALSHA
 * from the first send (a fresh link's first use of a script is EVAL:
 * test_quorum_first_use_of_a_script_is_eval). */
static inline void scripts_warm(fake *f)
{
    rdl_quorum *q = f->c->quorum;
    for (size_t i = 0; i < q->n; i++) {
        q->scripts_epoch[i] = rdl_node_epoch(q->member[i]);
        q->scripts[i] = ~0u;
    }
}

/* The options of a client over n members (3 or 4). */
static inline redlease_client_options quorum_options(int n)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.quorum_addrs = addrs[n];
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    return co;
}

/* A client over n members (3 or 4), every one connected, scripts warm;
 * events recorded. */
static inline void start_quorum(fake *f, int n)
{
    redlease_client_options co = quorum_options(n);
    co.reconnect_min_ms = co.reconnect_max_ms = 10;
    if (!attach_recording(f, &co)) return;
    CHECK_EQ(redlease_client_connected(f->c), 0);
    for (int i = 0; i < n; i++) fake_link_connect(f, member(f, i));
    CHECK_EQ(redlease_client_connected(f->c), 1);
    CHECK_EQ(f->connects, 0); /* the quorum's own node has no server */
    scripts_warm(f);
}


/* Member i's oldest command is a0 (a1) carrying r's token in argument k. */
static inline int sent_to(fake *f, int i, const char *a0, const char *a1, rec *r, int k)
{
    fake_cmd *c = fake_link_peek(member(f, i));
    /* SET NX PX sends the lease's value, the token and its record */
    const char *want = strcmp(a0, "SET") == 0 ? lease_value(r->lk) : redlease_lock_token(r->lk);
    return link_cmd_is(member(f, i), a0, a1) && c->argc > k && strcmp(c->argv[k], want) == 0;
}

/* Member i's oldest command is the quorum's own compare-and-delete of r's
 * key (EVAL from the start: see clean_up in src/quorum.c). */
static inline int cleaned_on(fake *f, int i, rec *r)
{
    return sent_to(f, i, "EVAL", rdl_script_src[RDL_SCRIPT_RELEASE], r, 4);
}

/* Member i's oldest command runs script sc (EVALSHA, or EVAL on a link
 * new to it) with r's token in argument k. */
static inline int ran(fake *f, int i, int sc, rec *r, int k)
{
    return sent_to(f, i, "EVALSHA", fake_sha(sc), r, k) || sent_to(f, i, "EVAL", rdl_script_src[sc], r, k);
}

static inline int idle(fake *f, int i) { return fake_link_peek(member(f, i)) == NULL; }

/* Runs the clock in steps of ms until member i's oldest command is the
 * lock's next attempt (script sc, by its SHA-1: sent there before), after
 * its backoff. */
static inline void await_attempt(fake *f, int i, int sc, int64_t ms)
{
    for (int k = 0; k < 300 && !link_cmd_is(member(f, i), "EVALSHA", fake_sha(sc)); k++) fake_advance(f, ms);
}

/* A client over n members and a lock on "job" with ttl 3000 ms, fencing
 * and wait_ms as given, its first attempt sent to every member. */
static inline void start_job(fake *f, rec *r, int n, int fencing, int64_t wait_ms)
{
    start_quorum(f, n);
    redlease_lock_options o = opts(3000);
    o.fencing = fencing;
    o.wait_ms = wait_ms;
    CHECK_EQ(start_lock(f, r, "job", &o), REDLEASE_OK);
    fake_run(f);
}


/* r holds res on members 0 and 1 of 3 (member 2 busy), acquired at the
 * returned time. */
static inline int64_t hold3(fake *f, rec *r, const char *res, redlease_lock_options o)
{
    CHECK_EQ(start_lock(f, r, res, &o), REDLEASE_OK);
    fake_run(f);
    int64_t t0 = f->now;
    for (int i = 0; i < 3; i++) CHECK(sent_to(f, i, "SET", NULL, r, 2));
    fake_link_reply_status(member(f, 0), "OK");
    fake_link_reply(member(f, 2), &(rdl_reply){.type = RDL_REPLY_NIL});
    fake_link_reply_status(member(f, 1), "OK");
    fake_run(f);
    CHECK_EQ(r->acq_status, REDLEASE_OK);
    return t0;
}

/* test_quorum_wait.c */
void test_quorum_waiters_are_woken(void);
void test_quorum_split_vote_backs_off_once(void);

/* test_quorum_restart.c */
void test_quorum_restarted_member_not_counted(void);
void test_quorum_restart_guard_off_or_unknown(void);
void test_quorum_restart_guard_option(void);
void test_quorum_restart_guard_named_in_the_failure(void);
void test_quorum_member_restarted_while_connected(void);

/* test_quorum_kinds.c */
void test_quorum_semaphore_capacity_rule(void);
void test_quorum_semaphore_capacity(void);
void test_quorum_semaphore_lease(void);
void test_quorum_shared_lease(void);
void test_quorum_fence_names_the_server_not_the_place(void);

#endif
