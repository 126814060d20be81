/* SPDX-License-Identifier: MIT */
/* Unit tests of a server that refuses Lua scripts (an ACL without
 * @scripting, Valkey without its Lua engine, a server without EVAL): the
 * handshake's probe (EVAL of "return 1") finds it, the link says so once
 * (REDLEASE_EV_SCRIPTS_OFF), and a mutex's lease goes by the server's own
 * commands there: SET NX PX to acquire, every attempt of one acquire with
 * one value, SET IFEQ to renew, DELIFEQ or DELEX to release and to drop;
 * a contended acquire polls (the queue is scripts). What needs a script
 * (a fence, a semaphore's or a shared lease) and a server without the
 * conditional commands (no safe release) fail at once with
 * REDLEASE_ENOTSUP, nothing sent. A new link asks again; a script refused
 * after the handshake turns the link the same way, the request resent. */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "test_quorum.h"
#include "testutil.h"

#define NOPERM "NOPERM User app has no permissions to run the 'eval' command"

/* A client on a server that refuses scripts (refusal: the probe's answer;
 * NULL: it runs them) and has these conditional commands, its events
 * recorded. */
static void start_scriptless(fake *f, int native, const char *refusal)
{
    CHECK(attach_recording(f, NULL));
    f->native = native;
    f->scripts_refused = refusal;
    fake_connect(f);
    CHECK(redlease_client_connected(f->c));
}

/* No script was sent since the handshake: the commands still pending. */
static int no_script_pending(fake *f)
{
    for (int i = f->head; i < f->ncmds; i++)
        if (strncmp(f->cmds[i].argv[0], "EVAL", 4) == 0) return 0;
    return 1;
}

static int is_set_nx(fake *f, const char *key, const char *value)
{
    fake_cmd *c = fake_peek(f);
    return c && c->argc == 6 && strcmp(c->argv[0], "SET") == 0 && strcmp(c->argv[1], key) == 0 &&
           (!value || strcmp(c->argv[2], value) == 0) && strcmp(c->argv[3], "NX") == 0 &&
           strcmp(c->argv[4], "PX") == 0;
}

/* Starts an acquire of "job" that may wait 5 s in the default mode (the
 * queue's where scripts run), fenced or not, and lets the timer send its
 * first attempt. */
static void wait_for_job(fake *f, rec *r, int fencing)
{
    redlease_lock_options o = opts(3000);
    o.wait_mode = REDLEASE_WAIT_DEFAULT;
    o.wait_ms = 5000;
    o.fencing = fencing;
    CHECK_EQ(start_lock(f, r, "job", &o), REDLEASE_OK);
    fake_run(f);
}

/* Releases "job": the delete is the server's own command (DELIFEQ, or
 * DELEX ... IFEQ) of the lease's value; answered 1, on_release says OK. */
static void released_by(fake *f, rec *r, const char *command)
{
    CHECK_EQ(release(r), REDLEASE_OK);
    fake_run(f);
    fake_cmd *c = fake_peek(f);
    int at = strcmp(command, "DELEX") == 0 ? 3 : 2;
    CHECK(c && cmd_is(f, command, "lock:{job}") && c->argc > at && strcmp(c->argv[at], lease_value(r->lk)) == 0);
    fake_reply_int(f, 1);
    fake_run(f);
    CHECK_EQ(r->rel_status, REDLEASE_OK);
}

static void test_handshake_finds_scripts_refused(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 1);
    const redlease_event *ev = last_event(REDLEASE_EV_SCRIPTS_OFF);
    CHECK(ev && ev->status == REDLEASE_ENOTSUP);
    CHECK(strstr(redlease_client_errstr(f.c), "'eval'") != NULL);
    /* after CONNECTED: the link is up, only without scripts */
    CHECK_EQ(count_events(REDLEASE_EV_CONNECTED), 1);
    end(&f);

    /* Valkey without its Lua module, a server without EVAL: the same */
    const char *other[2] = {"ERR Could not find scripting engine 'lua'", "ERR unknown command 'EVAL'"};
    for (int i = 0; i < 2; i++) {
        start_scriptless(&f, RDL_NATIVE_DELEX, other[i]);
        CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 1);
        end(&f);
    }
    /* an answer that is no refusal (BUSY, a script error) is no verdict */
    start_scriptless(&f, RDL_NATIVE_DELEX, "BUSY Redis is busy running a script");
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 0);
    end(&f);
}

/* Acquired by SET NX PX, renewed by SET IFEQ, released by DELIFEQ: no
 * script, with the wait mode the default (the queue's where scripts run). */
static void test_mutex_lease_without_scripts(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    rec r = {0};
    wait_for_job(&f, &r, 0);
    CHECK(is_set_nx(&f, "lock:{job}", NULL));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    fake_advance(&f, 1000);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && c->argc == 7 && strcmp(c->argv[0], "SET") == 0 && strcmp(c->argv[3], "IFEQ") == 0 &&
          strcmp(c->argv[4], lease_value(r.lk)) == 0);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    released_by(&f, &r, "DELIFEQ");
    CHECK(no_script_pending(&f));
    end(&f);
}

/* A contended acquire polls: SET NX again after the backoff, never the
 * queue's script. */
static void test_wait_polls(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELEX, NOPERM);
    rec r = {0};
    wait_for_job(&f, &r, 0);
    for (int i = 0; i < 3; i++) {
        CHECK(is_set_nx(&f, "lock:{job}", NULL));
        fake_reply_nil(&f); /* held by another */
        fake_run(&f);
        CHECK_EQ(r.acq_calls, 0);
        CHECK_EQ(fake_pending(&f), 0);
        fake_advance(&f, 1000); /* within wait_retry_max_ms */
    }
    CHECK(is_set_nx(&f, "lock:{job}", NULL));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    released_by(&f, &r, "DELEX");
    end(&f);
}

/* Each lease that needs a script, refused at once: ENOTSUP through its
 * callback (never inside redlease_acquire), the text naming what is
 * missing and why, nothing sent. So is a wait that asked for the queue
 * (the default polls). */
static void test_what_needs_scripts_fails_at_once(void)
{
    const char *want[5] = {"fencing token", "semaphore", "shared lease", "safe release", "queued waiting"};
    for (int k = 0; k < 5; k++) {
        fake f;
        start_scriptless(&f, k == 3 ? 0 : RDL_NATIVE_DELIFEQ, NOPERM);
        rec r = {0};
        redlease_lock_options o = opts(3000);
        o.wait_ms = 5000;
        if (k == 0) o.fencing = 1;
        if (k == 1) o.limit = 3;
        if (k == 2) o.shared = 1;
        if (k == 4) o.wait_mode = REDLEASE_WAIT_QUEUE; /* asked for: its fairness is not dropped */
        CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
        CHECK_EQ(r.acq_calls, 0);
        fake_run(&f);
        CHECK_EQ(r.acq_calls, 1);
        CHECK_EQ(r.acq_status, REDLEASE_ENOTSUP);
        CHECK_EQ(fake_pending(&f), 0); /* never a SET it could not release */
        const char *e = redlease_client_errstr(f.c);
        printf("# %s\n", e);
        CHECK(strstr(e, want[k]) != NULL && strstr(e, "'eval'") != NULL);
        end(&f);
    }
}

/* The lease's "not ours" is the native command's own answer: no script to
 * ask again. */
static void test_renewal_not_ours_is_a_loss(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    fake_advance(&f, 1000);
    CHECK(cmd_is(&f, "SET", "lock:{job}"));
    fake_reply_nil(&f);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK(no_script_pending(&f));
    end(&f);
}

/* An attempt that went unanswered may have written the key: the next one
 * writes the same value (no script rewrites it), and the acquire that
 * ends without the lease deletes it by DELIFEQ of that value. */
static void test_attempts_write_one_value(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 4000;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_set_nx(&f, "lock:{job}", NULL));
    char first[160];
    snprintf(first, sizeof first, "%s", fake_peek(&f)->argv[2]);
    int64_t t0 = f.now;
    fake_advance(&f, 2100); /* the command timeout passes: unanswered, it may have set the key */
    fake_reply_nil(&f);     /* (its answer, too late, is nobody's) */
    while (r.acq_calls == 0 && f.now < t0 + 10000) {
        if (fake_pending(&f)) {
            CHECK(is_set_nx(&f, "lock:{job}", first));
            fake_reply_nil(&f); /* our own key, or another's: busy */
        }
        fake_advance(&f, 50);
    }
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    fake_run(&f);
    if (is_set_nx(&f, "lock:{job}", first)) fake_reply_nil(&f); /* an attempt out at the budget's end */
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && cmd_is(&f, "DELIFEQ", "lock:{job}") && strcmp(c->argv[2], first) == 0);
    end(&f);
}

/* A new link asks again: back on a server that runs scripts, the queue's
 * script serves once more. */
static void test_each_link_decides_again(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    fake_break(&f);
    f.scripts_refused = NULL;
    fake_advance(&f, 200);
    fake_connect(&f);
    CHECK(redlease_client_connected(f.c));
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 1); /* the first link's only */
    rec r = {0};
    wait_for_job(&f, &r, 1);
    CHECK(cmd_is(&f, "EVALSHA", NULL));
    end(&f);
}

/* Scripts refused after the handshake (an ACL changed): the link sends no
 * more, and the refused attempt goes again as SET NX at once. */
static void test_script_refused_later_turns_the_link(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NULL); /* scripts run, to begin with */
    rec r = {0};
    wait_for_job(&f, &r, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)));
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'evalsha' command");
    fake_run(&f);
    CHECK(is_set_nx(&f, "lock:{job}", NULL));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    released_by(&f, &r, "DELIFEQ");
    CHECK_EQ(count_events(REDLEASE_EV_ATTEMPT_FAILED), 0); /* resent, not failed */
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 1);      /* and said once */
    end(&f);
}

/* A refused script that nobody waits for any more (its acquire ended by
 * its timeout: on_acquire ran) turns the link all the same, and is sent
 * nowhere again. */
static void test_stale_refusal_is_not_resent(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NULL); /* scripts run, to begin with */
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1; /* a script from the first attempt */
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_ACQUIRE_FENCED)));
    fake_advance(&f, 2100); /* the command timeout: on_acquire ran */
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ETIMEDOUT);
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'evalsha' command");
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 1);
    /* its drop (it may have set the key), sent as the script before the
     * refusal came, is refused too and goes again by DELIFEQ; no attempt */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'evalsha' command");
    fake_run(&f);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(r.acq_calls, 1);
    end(&f);
}

/* A script refused for a command it ran (an ACL without a data type the
 * script touches) is not a server that refuses scripts. */
static void test_refusal_inside_a_script_is_not_scripts_off(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NULL); /* scripts run, to begin with */
    rec r = {0};
    wait_for_job(&f, &r, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)));
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'zadd' command script: 4a1b, on @user_script:12.");
    fake_run(&f);
    CHECK_EQ(count_events(REDLEASE_EV_SCRIPTS_OFF), 0);
    CHECK_EQ(r.acq_status, REDLEASE_EPERM);
    end(&f);
}

/* The server refuses its own conditional command on a link without
 * scripts: that release fails, and the next acquire there fails at once
 * (no safe release left), nothing sent. */
static void test_native_refused_without_scripts(void)
{
    fake f;
    start_scriptless(&f, RDL_NATIVE_DELIFEQ, NOPERM);
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'delifeq' command");
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_EPERM);
    rec s = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &s, "other", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(s.acq_status, REDLEASE_ENOTSUP);
    CHECK_EQ(fake_pending(&f), 0);
    end(&f);
}

/* A quorum's leases need scripts on a majority of its members: two of
 * three refusing them, an acquire fails at once (nothing sent to any);
 * one of three, it goes on (that member's refusals count against it as
 * a down member's would). */
static void test_quorum_needs_a_majority_with_scripts(void)
{
    for (int refusing = 1; refusing <= 2; refusing++) {
        fake f;
        redlease_client_options co = quorum_options(3);
        co.quorum_restart_guard_ms = REDLEASE_RESTART_GUARD_OFF;
        CHECK(attach_recording(&f, &co));
        for (int i = 0; i < 3; i++) {
            member(&f, i)->scripts_refused = i < refusing ? NOPERM : NULL;
            fake_link_connect(&f, member(&f, i));
        }
        rec r = {0};
        redlease_lock_options o = opts(3000);
        CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
        fake_run(&f);
        if (refusing == 2) {
            CHECK_EQ(r.acq_status, REDLEASE_ENOTSUP);
            for (int i = 0; i < 3; i++) CHECK(idle(&f, i));
            printf("# %s\n", redlease_client_errstr(f.c));
            CHECK(strstr(redlease_client_errstr(f.c), "quorum") != NULL);
        } else {
            CHECK_EQ(r.acq_calls, 0);
            for (int i = 0; i < 3; i++) CHECK(link_cmd_is(member(&f, i), "SET", "lock:{job}"));
        }
        end(&f);
    }
}

int main(int argc, char **argv)
{
    static const test_case cases[] = {
        TEST_CASE(test_handshake_finds_scripts_refused),
        TEST_CASE(test_mutex_lease_without_scripts),
        TEST_CASE(test_wait_polls),
        TEST_CASE(test_what_needs_scripts_fails_at_once),
        TEST_CASE(test_renewal_not_ours_is_a_loss),
        TEST_CASE(test_attempts_write_one_value),
        TEST_CASE(test_each_link_decides_again),
        TEST_CASE(test_script_refused_later_turns_the_link),
        TEST_CASE(test_quorum_needs_a_majority_with_scripts),
        TEST_CASE(test_stale_refusal_is_not_resent),
        TEST_CASE(test_refusal_inside_a_script_is_not_scripts_off),
        TEST_CASE(test_native_refused_without_scripts),
    };
    return run_tests(cases, sizeof cases / sizeof cases[0], argc, argv);
}
