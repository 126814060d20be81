/* SPDX-License-Identifier: MIT */
/* Unit tests of the server's own conditional commands: a connection asks
 * once it is ready which of DELIFEQ (Valkey >= 9.0) and DELEX (Redis >=
 * 8.4) the server has; renewals then go as SET key token IFEQ token PX
 * ttl and releases as DELIFEQ or DELEX ... IFEQ, with the scripts' meaning.
 * A server that refuses them (unknown command, ACL, syntax) gets the
 * script, resent at once, and scripts for the rest of that link; a
 * renewal refused for memory (SET is refused over maxmemory, the script
 * is not) goes as the script; a new link asks again; REDLEASE_COMMANDS_SCRIPTS never
 * asks. */
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
 * question unanswered makes the connection ask no more (scripts). */
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
    fake_run(&g);
    CHECK(redlease_client_connected(g.c));
    rec s = {0};
    first_renewal(&g, &s);
    CHECK(cmd_is(&g, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW)));
    end(&g);
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
    };
    fake_alloc_install();
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
