/* SPDX-License-Identifier: MIT */
/* A server that refuses Lua scripts to us (man 3 redlease, WITHOUT
 * SCRIPTS), on the harness's real server: an ACL user without @scripting,
 * and (Valkey 9.1 or later) the server with its Lua module unloaded. What
 * a case expects follows what the server has, asked by the admin: with
 * DELIFEQ or DELEX (Valkey >= 9.0, Redis >= 8.4) a mutex is acquired,
 * renewed, waited for and released without a script, and a fence or a
 * semaphore fails at once with REDLEASE_ENOTSUP; without them (Redis 7.0)
 * every lease fails so, and no key is ever written. Both run in CI: the
 * plain build's Redis 7.0, the valkey build's Valkey 9. */
#define _GNU_SOURCE /* memmem, in rig.h */
#include <string.h>

#include "rig.h"
#include "servers.h"

#define USER "noscripts"
#define PASSWORD_OF_USER "Kq7-no-scripts"

/* The server's conditional commands, as the admin sees them. */
static int server_has_native(void)
{
    redisReply *r = adm("COMMAND INFO DELIFEQ DELEX");
    int n = 0;
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++) n += r->element[i]->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    return n > 0;
}

/* A client logged in as the user without @scripting, connected. */
static redlease_client *scriptless_client(obs *o)
{
    ADM("ACL SETUSER %s reset on >%s ~* &* +@all -@scripting", USER, PASSWORD_OF_USER);
    redlease_client_options co = copts(sock_path, PASSWORD_OF_USER, 0);
    co.username = USER;
    co.command_timeout_ms = co.connect_timeout_ms = 1000 * S;
    redlease_client *c = client_with(&co, o);
    wait_connected(c, 3000);
    CHECK(redlease_client_connected(c));
    return c;
}

/* finish() (the loop empties, each callback once) and the user gone. */
static void finish_scriptless(redlease_client *c, obs *o)
{
    finish(c, o);
    ADM("ACL DELUSER %s", USER);
    ADM("FLUSHALL");
}

/* The link says so once; a mutex is held, renewed past its TTL and
 * released without a script, or (no conditional commands) refused before
 * anything is written. */
static void test_mutex_without_scripts(void)
{
    obs o = {0};
    redlease_client *c = scriptless_client(&o);
    CHECK_EQ(o.events[REDLEASE_EV_SCRIPTS_OFF], 1);
    CHECK_EQ(o.last_status[REDLEASE_EV_SCRIPTS_OFF], REDLEASE_ENOTSUP);
    int native = server_has_native();
    printf("# the server has %s\n", native ? "DELIFEQ or DELEX" : "neither DELIFEQ nor DELEX");
    acquire(c, &o, "plain", lopts(600, 0, 0));
    run_until(&o.acq, 3000, NULL);
    if (!native) {
        CHECK_EQ(o.acq_st, REDLEASE_ENOTSUP);
        printf("# %s\n", redlease_client_errstr(c));
        CHECK(strstr(redlease_client_errstr(c), "safe release") != NULL);
        CHECK_EQ(admin_int("EXISTS %s", "lock:{plain}"), 0); /* never a SET it could not release */
        release(&o, NULL);
        finish_scriptless(c, &o);
        return;
    }
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    CHECK(is_lease_value(get_bin("lock:{plain}", 12), o.lk));
    run_for(1500, NULL); /* 2.5 TTLs: renewed by SET IFEQ */
    CHECK_EQ(o.lost, 0);
    CHECK(redlease_lock_held(o.lk));
    CHECK(o.events[REDLEASE_EV_RENEWED] >= 3);
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    CHECK_EQ(admin_int("EXISTS %s", "lock:{plain}"), 0);
    finish_scriptless(c, &o);
}

/* A waiting acquire polls until the holder's key is gone (no queue's keys
 * written: the holder's is the only one); without the conditional
 * commands it is refused at once instead. */
static void test_wait_polls_without_scripts(void)
{
    obs o = {0};
    redlease_client *c = scriptless_client(&o);
    ADM("SET lock:{waited} someone-else PX 60000");
    redlease_lock_options lo = lopts(5000, 10000, 0); /* the default wait_mode: polls here */
    acquire(c, &o, "waited", lo);
    if (!server_has_native()) {
        run_until(&o.acq, 3000, NULL);
        CHECK_EQ(o.acq_st, REDLEASE_ENOTSUP);
        CHECK_EQ(o.events[REDLEASE_EV_ATTEMPT], 1);
        CHECK_EQ(admin_int("DBSIZE", NULL), 1);
        release(&o, NULL);
        finish_scriptless(c, &o);
        return;
    }
    int64_t end = mono_ms() + 3000 * S;
    while (o.events[REDLEASE_EV_CONTENDED] < 3 && mono_ms() < end) testloop_run_once(5);
    CHECK_EQ(o.acq, 0);
    CHECK(o.events[REDLEASE_EV_CONTENDED] >= 3); /* polled */
    CHECK_EQ(admin_int("DBSIZE", NULL), 1);      /* not queued */
    ADM("DEL lock:{waited}");
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish_scriptless(c, &o);
}

static int inspected = 0, inspect_status = 1;
static void on_inspected(const redlease_inspection *in, int status, void *arg)
{
    (void)in, (void)arg;
    inspected++;
    inspect_status = status;
}

/* A fence, a semaphore, a wait that asked for the queue and an
 * inspection need scripts: ENOTSUP at once, naming it. */
static void test_what_needs_scripts_fails(void)
{
    obs o = {0};
    redlease_client *c = scriptless_client(&o);
    acquire(c, &o, "fenced", lopts(5000, 5000, 1));
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_ENOTSUP);
    CHECK(strstr(redlease_client_errstr(c), "fencing token") != NULL);
    CHECK(strstr(redlease_client_errstr(c), "NOPERM") != NULL);
    release(&o, NULL);
    obs s = {0};
    redlease_lock_options lo = lopts(5000, 5000, 0);
    lo.limit = 2;
    CHECK_EQ(redlease_acquire(c, "sem", &lo, o_acq, o_lost, &s, &s.lk), REDLEASE_OK);
    run_until(&s.acq, 3000, NULL);
    CHECK_EQ(s.acq_st, REDLEASE_ENOTSUP);
    release(&s, NULL);
    obs q = {0};
    lo = lopts(5000, 5000, 0);
    lo.wait_mode = REDLEASE_WAIT_QUEUE;
    CHECK_EQ(redlease_acquire(c, "queued", &lo, o_acq, o_lost, &q, &q.lk), REDLEASE_OK);
    run_until(&q.acq, 3000, NULL);
    CHECK_EQ(q.acq_st, REDLEASE_ENOTSUP);
    CHECK(strstr(redlease_client_errstr(c), "queued waiting") != NULL);
    release(&q, NULL);
    CHECK_EQ(admin_int("DBSIZE", NULL), 0);
    CHECK_EQ(redlease_inspect(c, "sem", 3, on_inspected, NULL), REDLEASE_OK);
    CHECK_EQ(inspected, 0); /* never inside the call */
    run_until(&inspected, 3000, NULL);
    CHECK_EQ(inspect_status, REDLEASE_ENOTSUP);
    CHECK(strstr(redlease_client_errstr(c), "inspection needs Lua scripts") != NULL);
    CHECK(s.acq == 1 && s.rel <= 1);
    finish_scriptless(c, &o);
}

/* Valkey 9.1 moved Lua into a module: unloaded, EVAL answers "Could not
 * find scripting engine". A server of our own, started with MODULE
 * allowed (the harness's is not). */
static void test_valkey_without_its_lua_engine(void)
{
    redisReply *r = adm("MODULE LIST");
    int lua = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    freeReplyObject(r);
    if (!lua) {
        /* no Lua module to unload (older than Valkey 9.1): a server that
         * runs scripts is not taken for one that does not */
        obs o = {0};
        redlease_client *c = real_client(&o, NULL);
        CHECK(redlease_client_connected(c));
        CHECK_EQ(o.events[REDLEASE_EV_SCRIPTS_OFF], 0);
        finish(c, &o);
        return;
    }
    srv v;
    CHECK_EQ(srv_start(&v, "nolua", "--port", "--enable-module-command yes"), 0);
    redisReply *u = srv_cmd(&v, "MODULE UNLOAD lua");
    CHECK(u && u->type == REDIS_REPLY_STATUS);
    if (u) freeReplyObject(u);
    obs o = {0};
    redlease_client_options co = copts_tcp(v.port);
    redlease_client *c = client_with(&co, &o);
    wait_connected(c, 3000);
    CHECK_EQ(o.events[REDLEASE_EV_SCRIPTS_OFF], 1);
    acquire(c, &o, "nolua", lopts(600, 0, 0));
    run_until(&o.acq, 3000, NULL);
    CHECK_EQ(o.acq_st, REDLEASE_OK);
    run_for(1000, NULL);
    CHECK(redlease_lock_held(o.lk));
    release(&o, NULL);
    CHECK_EQ(o.rel_st, REDLEASE_OK);
    finish(c, &o);
    srv_kill(&v);
}

int main(int argc, char **argv)
{
    if (rig_start()) return 1;
    static const test_case tests[] = {
        TEST_CASE(test_mutex_without_scripts),
        TEST_CASE(test_wait_polls_without_scripts),
        TEST_CASE(test_what_needs_scripts_fails),
        TEST_CASE(test_valkey_without_its_lua_engine),
    };
    int rc = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    rig_stop();
    return rc;
}
