/* SPDX-License-Identifier: MIT */
/* Unit tests of the server's own conditional commands: a connection asks
 * once it is ready which of DELIFEQ (Valkey >= 9.0) and DELEX (Redis >=
 * 8.4) the server has; renewals then go as SET key token IFEQ token PX
 * ttl and releases as DELIFEQ or DELEX ... IFEQ, with the scripts' meaning.
 * A server that refuses them (unknown command, ACL, syntax) gets the
 * script, resent at once, and scripts for the rest of that link; a
 * renewal refused for memory (SET is refused over maxmemory, the script
 * is not) goes as the script; a new link asks again; REDLEASE_COMMANDS_SCRIPTS never
 * asks. A native "not ours" is asked again of the script; a link that
 * breaks before the script answers (or refuses it, closing) leaves the
 * outcome unknown: a renewal failed, not a lease lost, a release resent
 * on the next link, both as the script from then on. */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

/* A client whose server has these conditional commands. */
static void start_native(fake *f, int native, const redlease_client_options *o)
{
    fake_attach(f, o);
    f->native = native;
    fake_connect(f);
}

static int is_native_renew(fake *f, rec *r)
{
    fake_cmd *c = fake_peek(f);
    return c && c->argc == 7 && strcmp(c->argv[0], "SET") == 0 && strcmp(c->argv[1], "lock:{job}") == 0 &&
           strcmp(c->argv[2], lease_value(r->lk)) == 0 && strcmp(c->argv[3], "IFEQ") == 0 &&
           strcmp(c->argv[4], lease_value(r->lk)) == 0 && strcmp(c->argv[5], "PX") == 0 &&
           strcmp(c->argv[6], "3000") == 0;
}

/* Holds "job" (TTL 3000) and runs to its first renewal; returns its send
 * time. */
static int64_t first_renewal(fake *f, rec *r)
{
    int64_t t0 = hold(f, r, "job", opts(3000));
    fake_until(f, t0 + 1000);
    return f->now;
}

/* Releases and lets the timer send the delete; the command is next. */
static void release_sent(fake *f, rec *r)
{
    CHECK_EQ(release(r), REDLEASE_OK);
    fake_run(f);
}

static void test_renew_and_release_with_delifeq(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    first_renewal(&f, &r);
    CHECK(is_native_renew(&f, &r));
    int64_t t1 = f.now;
    fake_advance(&f, 10);
    fake_reply_status(&f, "OK"); /* the script's 1 */
    fake_run(&f);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t1 + 3000 - 32 - f.now); /* from its send */
    release_sent(&f, &r);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && c->argc == 3 && cmd_is(&f, "DELIFEQ", "lock:{job}") &&
          strcmp(c->argv[2], lease_value(r.lk)) == 0);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* SET IFEQ answers nil when the key does not hold the value: gone, another
 * token, or our token with another record (src/identity.h). The script,
 * which compares the token, is asked at once; its 0 is the loss. */
static void test_native_not_ours_is_lost(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    first_renewal(&f, &r);
    CHECK(is_native_renew(&f, &r));
    fake_reply_nil(&f);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK(!redlease_lock_held(r.lk));
    release_sent(&f, &r);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

/* DELIFEQ's 0 (the key holds another value, or none), and then the
 * script's (another token): ENOTHELD. */
static void test_delifeq_zero_is_not_held(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    release_sent(&f, &r);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

/* A NOPERM about a key, not the command: the script would be refused the
 * same, so it is the release's answer, and the link keeps its commands. */
static void test_key_noperm_is_an_answer(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0}, s = {0};
    hold(&f, &r, "job", opts(3000));
    release_sent(&f, &r);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    fake_reply_err(&f, "NOPERM No permissions to access a key");
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_EPERM);
    hold(&f, &s, "job", opts(3000));
    release_sent(&f, &s);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    end(&f);
}

/* Some proxies close the connection on COMMAND: a link lost with the
 * question unanswered, PING answered before it, makes the connection ask
 * no more (scripts). */
static void test_link_lost_on_the_question_stops_asking(void)
{
    fake f;
    fake_attach(&f, NULL);
    fake_connect_raw(&f);
    fake_reply_status(&f, "PONG");
    fake_reply_time(&f);
    CHECK(cmd_is(&f, "COMMAND", "INFO"));
    fake_break(&f); /* the proxy hung up */
    fake_advance(&f, 60);
    CHECK(f.connecting);
    fake_connect_raw(&f);
    CHECK(cmd_is(&f, "PING", NULL));
    fake_reply_status(&f, "PONG");
    fake_reply_time(&f);
    CHECK_EQ(fake_pending(&f), 0); /* not asked again */
    fake_run(&f);
    CHECK(redlease_client_connected(f.c));
    end(&f);

    /* A link lost before PING was answered (a restart, a failover) says
     * nothing of the question: the next one asks it. */
    fake_attach(&f, NULL);
    fake_connect_raw(&f);
    CHECK(cmd_is(&f, "PING", NULL));
    fake_break(&f);
    fake_advance(&f, 60);
    fake_connect_raw(&f);
    fake_reply_status(&f, "PONG");
    fake_reply_time(&f);
    CHECK(cmd_is(&f, "COMMAND", "INFO"));
    end(&f);
}

static void test_release_with_delex(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELEX, NULL);
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    release_sent(&f, &r);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && c->argc == 4 && cmd_is(&f, "DELEX", "lock:{job}") && strcmp(c->argv[2], "IFEQ") == 0 &&
          strcmp(c->argv[3], lease_value(r.lk)) == 0);
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* asked again by the token */
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

/* The server said it has them and then refuses one (a proxy in between,
 * an ACL): the same renewal goes again as the script at once, still
 * counted from its first send, and the link sends scripts from then on. */
static void refused_then_script(const char *refusal)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    int64_t t1 = first_renewal(&f, &r);
    CHECK(is_native_renew(&f, &r));
    fake_advance(&f, 5);
    fake_reply_err(&f, refusal);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_advance(&f, 5);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t1 + 3000 - 32 - f.now);
    release_sent(&f, &r);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

static void test_unknown_command_falls_back_to_the_script(void)
{
    refused_then_script("ERR unknown command 'SET', with args beginning with: ");
}

static void test_noperm_falls_back_to_the_script(void)
{
    refused_then_script("NOPERM User app has no permissions to run the 'delifeq' command");
}

static void test_syntax_error_falls_back_to_the_script(void)
{
    refused_then_script("ERR syntax error");
}

/* Over maxmemory the server refuses SET (OOM) but runs the renewal script,
 * which only sets a TTL: that renewal goes as the script, and the next one
 * as SET IFEQ again (the link keeps its conditional commands). */
static void test_oom_renewal_goes_as_the_script(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    int64_t t1 = first_renewal(&f, &r);
    CHECK(is_native_renew(&f, &r));
    fake_reply_err(&f, "OOM command not allowed when used memory > 'maxmemory'.");
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK(redlease_lock_held(r.lk));
    fake_until(&f, t1 + 1000);
    CHECK(is_native_renew(&f, &r));
    end(&f);
}

/* A failover to an older server: the new link asks again, and sends
 * scripts; back on a newer one, the conditional commands again. */
static void test_each_link_asks_again(void)
{
    fake f;
    start_native(&f, RDL_NATIVE_DELIFEQ, NULL);
    rec r = {0};
    int64_t t0 = hold(&f, &r, "job", opts(3000));
    fake_break(&f);
    f.native = 0;
    fake_advance(&f, 60);
    fake_connect(&f); /* the held lease renews at once on the new link */
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    fake_break(&f);
    f.native = RDL_NATIVE_DELIFEQ;
    fake_advance(&f, 60);
    fake_connect(&f);
    CHECK(is_native_renew(&f, &r));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK(redlease_lock_held(r.lk));
    CHECK(f.now < t0 + 1000);
    end(&f);
}

/* REDLEASE_COMMANDS_SCRIPTS: no question, scripts always. A probe answered with an
 * error (no COMMAND for this ACL user) means scripts, and the link stays. */
static void test_commands_scripts_and_a_refused_probe(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    CHECK_EQ(co.commands, REDLEASE_COMMANDS_AUTO);
    redlease_client *bad = NULL;
    co.commands = REDLEASE_COMMANDS_SCRIPTS + 1; /* no such setting */
    CHECK_EQ(redlease_client_new(&bad, &co), REDLEASE_EINVAL);
    co.commands = -1;
    CHECK_EQ(redlease_client_new(&bad, &co), REDLEASE_EINVAL);
    CHECK(bad == NULL);
    co.commands = REDLEASE_COMMANDS_SCRIPTS;
    fake_attach(&f, &co);
    fake_connect_raw(&f);
    CHECK(cmd_is(&f, "PING", NULL));
    fake_reply_status(&f, "PONG");
    fake_reply_time(&f);
    CHECK_EQ(fake_pending(&f), 0); /* nothing asked */
    fake_run(&f);
    rec r = {0};
    first_renewal(&f, &r);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    end(&f);

    fake g;
    fake_attach(&g, NULL);
    fake_connect_raw(&g);
    fake_reply_status(&g, "PONG");
    fake_reply_time(&g);
    CHECK(cmd_is(&g, "COMMAND", "INFO"));
    fake_reply_err(&g, "NOPERM User app has no permissions to run the 'command|info' command");
    CHECK(cmd_is(&g, "EVAL", "return 1"));
    fake_reply_int(&g, 1);
    fake_run(&g);
    CHECK(redlease_client_connected(g.c));
    rec s = {0};
    first_renewal(&g, &s);
    CHECK(cmd_is(&g, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    end(&g);
}

/* ---------------------- the link breaks between "not ours" and the script */

/* The lease's events from now on, in seen[] (core_rig.h). */
static void record_events(fake *f)
{
    nseen = 0;
    redlease_client_set_event_cb(f->c, record_event, NULL);
}

/* The status of the last event of this type, or 1 when there was none. */
static int event_status(int type)
{
    const redlease_event *ev = last_event(type);
    return ev ? ev->status : 1;
}

/* The link comes back after start_quick_relink()'s 10 ms, its handshake
 * answered (the server still has its conditional commands). */
static void link_back(fake *f)
{
    int connects = f->connects;
    f->connect_rc = 0;
    fake_advance(f, 10);
    CHECK_EQ(f->connects, connects + 1);
    CHECK(f->connecting);
    fake_connect(f);
}

/* The link is lost, and comes back. */
static void relink(fake *f)
{
    fake_break(f);
    link_back(f);
}

/* A held "job" (TTL 3000) whose first renewal went as SET IFEQ, was
 * answered nil, and went again as the script, which is out now. Returns
 * t0, the acquire's send time. */
static int64_t renewal_asked_again(fake *f, rec *r)
{
    int64_t t0 = hold_native_with_renewal_in_flight(f, r, RDL_NATIVE_DELIFEQ);
    record_events(f);
    CHECK(is_native_renew(f, r));
    fake_reply_nil(f);
    CHECK(cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK_EQ(fake_pending(f), 1);
    CHECK_EQ(r->lost_calls, 0);
    return t0;
}

/* The renewal's outcome is unknown, not a loss: it failed (ECONN) and the
 * lease lives on to its local deadline. */
static void renewal_unknown(rec *r)
{
    CHECK_EQ(r->lost_calls, 0);
    CHECK_EQ(count_events(REDLEASE_EV_RENEW_FAILED), 1);
    CHECK_EQ(event_status(REDLEASE_EV_RENEW_FAILED), REDLEASE_ECONN);
    CHECK_EQ(count_events(REDLEASE_EV_LOST), 0);
}

/* The link breaks with the script out: the renewal unknown, and the
 * lease not held() (not confirmed on a link that is up). */
static void link_takes_the_script(fake *f, rec *r)
{
    fake_break(f);
    renewal_unknown(r);
    CHECK(!redlease_lock_held(r->lk));
}

/* On the new link the lease is verified at once, and by the script: the
 * value stays unsure (SET IFEQ would say nil again). Returns its send
 * time. */
static int64_t reverified_by_script(fake *f)
{
    CHECK(cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    CHECK_EQ(fake_pending(f), 1);
    return f->now;
}

/* The renewal script out answers 1: the lease is kept, and held. */
static void script_keeps_it(fake *f, rec *r)
{
    CHECK(cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    fake_reply_int(f, 1);
    fake_run(f);
    CHECK_EQ(r->lost_calls, 0);
    CHECK(redlease_lock_held(r->lk));
}

/* SET IFEQ said nil, the script goes out, the link breaks before it
 * answers. Whether the key is ours is unknown: the renewal failed, the
 * lease did not. After the reconnect the script asks at once, its 1 keeps
 * the lease (measured from its send), and the renewals after it are
 * scripts too. */
static void test_native_nil_then_link_lost_is_unknown(void)
{
    fake f;
    rec r = {0};
    renewal_asked_again(&f, &r);
    link_takes_the_script(&f, &r);
    link_back(&f);
    int64_t t2 = reverified_by_script(&f);
    fake_advance(&f, 4);
    script_keeps_it(&f, &r);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t2 + 3000 - 32 - f.now);
    CHECK_EQ(count_events(REDLEASE_EV_RENEWED), 1);
    fake_until(&f, t2 + 1000);
    script_keeps_it(&f, &r);
    end(&f);
}

/* The same, the link staying down: nothing is lost before the local
 * deadline (t0 + TTL - drift), on_lost(EXPIRED) at it, once (EV_LOST's
 * status ETIMEDOUT). What is owed when a link comes back is the drop, as
 * the script, which compares the token alone. */
static void test_native_nil_then_link_down_expires_once(void)
{
    fake f;
    rec r = {0};
    int64_t t0 = renewal_asked_again(&f, &r);
    f.connect_rc = REDLEASE_ECONN; /* no link for now */
    link_takes_the_script(&f, &r);
    int64_t deadline = t0 + 3000 - 32;
    fake_until(&f, deadline - 1);
    CHECK_EQ(r.lost_calls, 0);
    nseen = 0; /* the reconnects' events filled seen[] */
    fake_until(&f, deadline);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_EXPIRED);
    CHECK_EQ(r.lost_at, deadline);
    CHECK_EQ(count_events(REDLEASE_EV_LOST), 1);
    CHECK_EQ(event_status(REDLEASE_EV_LOST), REDLEASE_ETIMEDOUT);
    link_back(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* the drop */
    CHECK_EQ(fake_pending(&f), 1);
    fake_reply_int(&f, 1);
    fake_advance(&f, 5000);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(r.lost_calls, 1);
    release_sent(&f, &r);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

/* SET IFEQ's nil arrives while the link is already going (the transport
 * refuses new commands, as hiredis does once disconnecting): the script
 * cannot go out. That is a renewal the link took, not a loss; the new link
 * verifies the lease by the script. */
static void test_native_nil_on_a_closing_link_is_unknown(void)
{
    fake f;
    rec r = {0};
    hold_native_with_renewal_in_flight(&f, &r, RDL_NATIVE_DELIFEQ);
    record_events(&f);
    CHECK(is_native_renew(&f, &r));
    f.refuse = 1;
    fake_reply_nil(&f);
    CHECK_EQ(f.refused, 1); /* the script was tried */
    CHECK_EQ(fake_pending(&f), 0);
    renewal_unknown(&r);
    f.refuse = 0;
    relink(&f);
    reverified_by_script(&f);
    script_keeps_it(&f, &r);
    end(&f);
}

/* Truly not ours: SET IFEQ's nil, the link lost under the script, and on
 * the new link the script's 0. on_lost(NOT_OWNER) once, no drop (the key
 * is another's), and nothing more at the old deadline. */
static void test_native_nil_relink_then_script_zero_lost_once(void)
{
    fake f;
    rec r = {0};
    int64_t t0 = renewal_asked_again(&f, &r);
    relink(&f);
    reverified_by_script(&f);
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(r.lost_reason, REDLEASE_LOST_NOT_OWNER);
    CHECK(!redlease_lock_held(r.lk));
    fake_until(&f, t0 + 6000);
    CHECK_EQ(r.lost_calls, 1);
    CHECK_EQ(count_events(REDLEASE_EV_LOST), 1);
    CHECK_EQ(fake_pending(&f), 0);
    release_sent(&f, &r);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ENOTHELD);
    end(&f);
}

/* The compare-and-delete (DELIFEQ or DELEX) answered 0 goes again as the
 * script, and the link takes it: broken with the script out, or refusing
 * it (closing). Unknown whether released, so no on_release yet: the
 * compare-and-delete, safe to repeat, goes again on the next link as the
 * script, and its answer is on_release's, once; nothing after it. */
static void release_zero_then_link_lost(int native, int refuse_resend)
{
    fake f;
    rec r = {0};
    start_quick_relink(&f, native);
    hold(&f, &r, "job", opts(3000));
    record_events(&f);
    release_sent(&f, &r);
    CHECK(cmd_is(&f, native == RDL_NATIVE_DELEX ? "DELEX" : "DELIFEQ", "lock:{job}"));
    f.refuse = refuse_resend;
    fake_reply_int(&f, 0);
    if (refuse_resend) {
        CHECK(f.refused >= 1); /* the script was tried */
        CHECK_EQ(fake_pending(&f), 0);
        f.refuse = 0;
    } else {
        CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    }
    CHECK_EQ(r.rel_calls, 0);
    relink(&f);
    CHECK_EQ(r.rel_calls, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    CHECK_EQ(fake_pending(&f), 1);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    CHECK_EQ(count_events(REDLEASE_EV_RELEASED), 1);
    fake_advance(&f, 5000);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(fake_pending(&f), 0);
    end(&f);
}

static void test_delifeq_zero_then_link_lost(void) { release_zero_then_link_lost(RDL_NATIVE_DELIFEQ, 0); }
static void test_delex_zero_then_link_lost(void) { release_zero_then_link_lost(RDL_NATIVE_DELEX, 0); }
static void test_delifeq_zero_on_a_closing_link(void) { release_zero_then_link_lost(RDL_NATIVE_DELIFEQ, 1); }

/* The same with no link until the release's deadline (command_timeout_ms
 * from redlease_release()): on_release(ECONN) at it, once ("Redis was not
 * reached; the key expires by its TTL"), and nothing is sent for the
 * handle when a link comes back. */
static void test_delex_zero_then_link_down_is_econn(void)
{
    fake f;
    rec r = {0};
    start_quick_relink(&f, RDL_NATIVE_DELEX);
    hold(&f, &r, "job", opts(3000));
    record_events(&f);
    release_sent(&f, &r);
    int64_t t = f.now;
    CHECK(cmd_is(&f, "DELEX", "lock:{job}"));
    fake_reply_int(&f, 0);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    f.connect_rc = REDLEASE_ECONN;
    fake_break(&f);
    fake_until(&f, t + 299);
    CHECK_EQ(r.rel_calls, 0);
    nseen = 0; /* the reconnects' events filled seen[] */
    fake_until(&f, t + 300);
    CHECK_EQ(r.rel_calls, 1);
    CHECK_EQ(r.rel_status, REDLEASE_ECONN);
    CHECK_EQ(count_events(REDLEASE_EV_RELEASED), 1);
    link_back(&f);
    fake_advance(&f, 5000);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(r.rel_calls, 1);
    end(&f);
}

/* A server whose key holds our token with another record: SET IFEQ says
 * nil, DELIFEQ 0, the scripts 1 (ours). The link breaks under the first
 * script that answers a native "not ours" (once: the lease then goes by
 * the scripts), and comes back. */
static void answer_other_record(fake *f, int *breaks)
{
    int after_native = 0;
    while (fake_peek(f)) {
        fake_cmd *c = fake_peek(f);
        if (strcmp(c->argv[0], "SET") == 0 && c->argc == 7) {
            fake_reply_nil(f);
            after_native = 1;
        } else if (strcmp(c->argv[0], "DELIFEQ") == 0) {
            fake_reply_int(f, 0);
            after_native = 1;
        } else if (after_native && !*breaks && strcmp(c->argv[0], "EVALSHA") == 0) {
            ++*breaks;
            fake_break(f);
            return;
        } else if (strcmp(c->argv[0], "SET") == 0) {
            fake_reply_status(f, "OK");
        } else if (strcmp(c->argv[0], "EVALSHA") == 0 || strcmp(c->argv[0], "EVAL") == 0) {
            fake_reply_int(f, 1);
        } else {
            fake_answer_handshake(f);
        }
    }
}

/* A lease whose renewal (or, released before its first renewal, whose
 * release) goes through that window, each allocation failing in turn:
 * every callback once, nothing leaked; unfailed, the lease is kept and
 * released (OK). */
static void oom_not_ours_then_link_lost(int release_first, long fail_at, int *ok)
{
    fake f;
    fake_alloc_fail_at(fail_at);
    start_quick_relink(&f, RDL_NATIVE_DELIFEQ);
    if (!oom_started(&f)) return;
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.wait_ms = 500;
    int started = start_lock(&f, &r, "job", &o) == REDLEASE_OK, breaks = 0;
    for (int step = 0; step < 40; step++) {
        fake_advance(&f, 50);
        if (step == (release_first ? 5 : 30) && started) CHECK(release(&r) == REDLEASE_OK);
        answer_other_record(&f, &breaks);
        if (!f.connected && !f.connecting) fake_advance(&f, 10);
        if (f.connecting) fake_connect(&f);
    }
    if (started) {
        CHECK_EQ(r.acq_calls, 1);
        CHECK(r.lost_calls <= 1);
        CHECK_EQ(r.rel_calls, 1);
        if (r.acq_status == REDLEASE_OK && r.lost_calls == 0 && r.rel_status == REDLEASE_OK && breaks == 1)
            ++*ok;
    }
    fake_alloc_fail_at(0);
    end(&f);
}

static void oom_renewal_window(long fail_at, int *ok) { oom_not_ours_then_link_lost(0, fail_at, ok); }
static void oom_release_window(long fail_at, int *ok) { oom_not_ours_then_link_lost(1, fail_at, ok); }

static void test_not_ours_then_link_lost_out_of_memory(void)
{
    printf("# allocation sweep, renewal: %ld allocation points\n", alloc_sweep(oom_renewal_window));
    printf("# allocation sweep, release: %ld allocation points\n", alloc_sweep(oom_release_window));
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_renew_and_release_with_delifeq),
        TEST_CASE(test_native_not_ours_is_lost),
        TEST_CASE(test_delifeq_zero_is_not_held),
        TEST_CASE(test_key_noperm_is_an_answer),
        TEST_CASE(test_link_lost_on_the_question_stops_asking),
        TEST_CASE(test_release_with_delex),
        TEST_CASE(test_unknown_command_falls_back_to_the_script),
        TEST_CASE(test_noperm_falls_back_to_the_script),
        TEST_CASE(test_syntax_error_falls_back_to_the_script),
        TEST_CASE(test_oom_renewal_goes_as_the_script),
        TEST_CASE(test_each_link_asks_again),
        TEST_CASE(test_commands_scripts_and_a_refused_probe),
        TEST_CASE(test_native_nil_then_link_lost_is_unknown),
        TEST_CASE(test_native_nil_then_link_down_expires_once),
        TEST_CASE(test_native_nil_on_a_closing_link_is_unknown),
        TEST_CASE(test_native_nil_relink_then_script_zero_lost_once),
        TEST_CASE(test_delifeq_zero_then_link_lost),
        TEST_CASE(test_delex_zero_then_link_lost),
        TEST_CASE(test_delifeq_zero_on_a_closing_link),
        TEST_CASE(test_delex_zero_then_link_down_is_econn),
        TEST_CASE(test_not_ours_then_link_lost_out_of_memory),
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
