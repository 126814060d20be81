/* SPDX-License-Identifier: MIT */
/* redlease_inspect(): the reading of one server's answer (every kind, the
 * dead left out, forged and garbled values), and the call's lifetime on
 * the fake (never inside the call, exactly once, NOSCRIPT, errors,
 * timeouts, free and close, allocation failures). The Cluster's and the
 * quorum's cases are test_inspect_topo.c's. */
#include <stdio.h>
#include <string.h>

#include "test_inspect.h"

#define NOW INT64_C(1700000100000)

/* ------------------------------------------------------------ the view */

/* A mutex's key "TOKEN RECORD": one holder, its record read, its TTL the
 * key's PTTL; the fence counter. */
static void test_inspect_parse_mutex(void)
{
    answer a;
    answer_init(&a, NOW, 2500, TOK_A " 4242 1700000090000 17 web-1 booking api", "17");
    redlease_inspection v;
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_MUTEX);
    CHECK_EQ(redlease_inspection_fence_counter(&v), 17);
    CHECK_EQ(redlease_inspection_server_ms(&v), NOW);
    CHECK_EQ(redlease_inspection_holder_count(&v), 1);
    CHECK_EQ(redlease_inspection_waiter_count(&v), 0);
    const redlease_holder *h = redlease_inspection_holder(&v, 0);
    CHECK_STR(h->token, TOK_A);
    CHECK_EQ(h->pid, 4242);
    CHECK_STR(h->host, "web-1");
    CHECK_STR(h->label, "booking api");
    CHECK_EQ(h->acquired_at_ms, 1700000090000);
    CHECK_EQ(h->held_ms, 10000);
    CHECK_EQ(h->ttl_ms, 2500);
    CHECK_EQ(h->fence, 17);
    CHECK_EQ(h->permits, 1);
    CHECK_EQ(h->servers, 1);
    CHECK_EQ(h->struct_size, sizeof *h);
    CHECK(redlease_inspection_holder(&v, 1) == NULL);
    rdl_inspect_clear(&v);

    /* a bare token (the queue handing it over, or 0.1.0): no record; a
     * key without expiry */
    answer_init(&a, NOW, -1, TOK_B, NULL);
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    h = redlease_inspection_holder(&v, 0);
    CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_MUTEX);
    CHECK_STR(h->token, TOK_B);
    CHECK_STR(h->label, "");
    CHECK_EQ(h->pid, 0);
    CHECK_EQ(h->held_ms, -1);
    CHECK_EQ(h->ttl_ms, -1);
    CHECK_EQ(redlease_inspection_fence_counter(&v), 0);
    rdl_inspect_clear(&v);

    /* nothing there: free */
    answer_init(&a, NOW, -2, NULL, "9");
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_FREE);
    CHECK_EQ(redlease_inspection_holder_count(&v), 0);
    CHECK_EQ(redlease_inspection_fence_counter(&v), 9);
    rdl_inspect_clear(&v);
}

/* A semaphore: its live holders with their weights and records, soonest
 * first; one past its deadline is dead and left out; two holders with the
 * same pid, host and label are two holders. */
static void test_inspect_parse_semaphore(void)
{
    answer a;
    answer_init(&a, NOW, 4000, "semaphore 5", "31");
    answer_holder(&a, TOK_C, NOW - 1); /* dead */
    answer_holder(&a, TOK_A, NOW + 1000);
    answer_holder(&a, TOK_B, NOW + 3000);
    answer_weight(&a, "used", "5");
    answer_weight(&a, TOK_A, "2");
    answer_weight(&a, TOK_B, "3");
    answer_weight(&a, TOK_C, "1");
    answer_weight(&a, "#" TOK_A, "77 1700000099000 30 host-x worker");
    answer_weight(&a, "#" TOK_B, "77 1700000099500 31 host-x worker");
    redlease_inspection v;
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_SEMAPHORE);
    CHECK_EQ(redlease_inspection_limit(&v), 5);
    CHECK_EQ(redlease_inspection_holder_count(&v), 2);
    const redlease_holder *h0 = redlease_inspection_holder(&v, 0), *h1 = redlease_inspection_holder(&v, 1);
    CHECK_STR(h0->token, TOK_A);
    CHECK_STR(h1->token, TOK_B);
    CHECK_EQ(h0->permits, 2);
    CHECK_EQ(h1->permits, 3);
    CHECK_EQ(h0->ttl_ms, 1000);
    CHECK_EQ(h1->ttl_ms, 3000);
    CHECK_EQ(h0->pid, h1->pid);
    CHECK_STR(h0->label, "worker");
    CHECK_STR(h1->host, "host-x");
    CHECK_EQ(h0->fence, 30);
    CHECK_EQ(h1->fence, 31);
    CHECK_EQ(h0->held_ms, 1000);
    CHECK_EQ(h1->held_ms, 500);
    rdl_inspect_clear(&v);

    /* a holder whose weight is missing holds 0 permits (as the scripts
     * count it) and still shows */
    answer_init(&a, NOW, 4000, "semaphore 2", NULL);
    answer_holder(&a, TOK_D, NOW + 10);
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    CHECK_EQ(redlease_inspection_holder_count(&v), 1);
    CHECK_EQ(v.holders[0].pub.permits, 0);
    rdl_inspect_clear(&v);
}

/* Shared holders and the queue: waiters in its order, each with what it
 * waits to be ("{" shared, "}" a semaphore's, none exclusive), its record
 * and how long it has waited; one past its entry's deadline, and one
 * without an entry, are dead. */
static void test_inspect_parse_shared_and_waiters(void)
{
    answer a;
    answer_init(&a, NOW, 3000, "shared", NULL);
    answer_holder(&a, TOK_A, NOW + 2000);
    answer_holder(&a, TOK_B, NOW + 2500);
    answer_weight(&a, TOK_A, "1");
    answer_weight(&a, TOK_B, "1");
    answer_weight(&a, "#" TOK_A, "10 1700000095000 0 h1 reader");
    answer_queue(&a, TOK_C);
    answer_queue(&a, TOK_D);
    answer_queue(&a, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"); /* no entry: dead */
    answer_queue(&a, "ffffffffffffffffffffffffffffffff"); /* its entry expired */
    answer_queue(&a, "99999999999999999999999999999999");
    answer_waiter(&a, TOK_C, "1700000101000 2000 lock:wake:x");
    answer_waiter(&a, "#" TOK_C, "11 1700000098000 0 h2 writer");
    answer_waiter(&a, TOK_D, "1700000102000 2000 {lock:wake:y");
    answer_waiter(&a, "ffffffffffffffffffffffffffffffff", "1700000099999 2000 {lock:wake:z");
    answer_waiter(&a, "99999999999999999999999999999999", "1700000105000 2000 }lock:wake:z");
    redlease_inspection v;
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_SHARED);
    CHECK_EQ(redlease_inspection_holder_count(&v), 2);
    CHECK_EQ(v.holders[0].pub.permits, 1);
    CHECK_STR(v.holders[0].pub.label, "reader");
    CHECK_STR(v.holders[1].pub.label, "");
    CHECK_EQ(redlease_inspection_waiter_count(&v), 3);
    const redlease_waiter *w0 = redlease_inspection_waiter(&v, 0), *w1 = redlease_inspection_waiter(&v, 1),
                          *w2 = redlease_inspection_waiter(&v, 2);
    CHECK_STR(w0->token, TOK_C);
    CHECK_EQ(w0->kind, REDLEASE_KIND_MUTEX);
    CHECK_EQ(w0->permits, 1);
    CHECK_STR(w0->label, "writer");
    CHECK_EQ(w0->pid, 11);
    CHECK_EQ(w0->joined_at_ms, 1700000098000);
    CHECK_EQ(w0->waiting_ms, 2000);
    CHECK_STR(w1->token, TOK_D);
    CHECK_EQ(w1->kind, REDLEASE_KIND_SHARED);
    CHECK_EQ(w1->waiting_ms, -1); /* no record */
    CHECK_STR(w2->token, "99999999999999999999999999999999");
    CHECK_EQ(w2->kind, REDLEASE_KIND_SEMAPHORE);
    CHECK_EQ(w2->permits, 0); /* not kept in Redis */
    CHECK(redlease_inspection_waiter(&v, 3) == NULL);
    rdl_inspect_clear(&v);
}

/* Values nobody of this version wrote: a lock key of another kind or
 * version is UNKNOWN with no holders; forged and garbled records are
 * cleaned or ignored, never trusted; a token of another writer is shown
 * cleaned and cut. */
static void test_inspect_parse_forged_and_garbled(void)
{
    static const char *const unknown[] = {"semaphore x", "semaphore 0", "semaphore 1000000001",
                                          "sharedx", "SHARED", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                                          TOK_A "x", "v0.3:something", ""};
    answer a;
    redlease_inspection v;
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        answer_init(&a, NOW, 1000, unknown[i], NULL);
        answer_holder(&a, TOK_B, NOW + 1000); /* not read: no kind of ours */
        CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
        CHECK_EQ(redlease_inspection_kind(&v), REDLEASE_KIND_UNKNOWN);
        CHECK_EQ(redlease_inspection_holder_count(&v), 0);
        rdl_inspect_clear(&v);
    }
    /* a record with controls and a bad host: cleaned */
    answer_init(&a, NOW, 1000, TOK_A " 1 1700000099000 0 evil\x1b[2J host \x1b]0;x\x07\xff", "x12");
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    CHECK_EQ(redlease_inspection_fence_counter(&v), 0); /* no number */
    CHECK_STR(v.holders[0].pub.host, "evil??2J");
    CHECK_STR(v.holders[0].pub.label, "host ?]0;x??");
    rdl_inspect_clear(&v);
    /* records that are none: no fields taken */
    static const char *const bad[] = {"x 1 2 h l", "1 2 h l", "1 2 3  l", "-1 2 3 h l",
                                      "99999999999999999999 2 3 h l", "1 2 3 h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char value[128];
        snprintf(value, sizeof value, "%s %s", TOK_A, bad[i]);
        answer_init(&a, NOW, 1000, value, NULL);
        CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
        rdl_inspect_finish(&v);
        CHECK_EQ(v.nholders, 1);
        CHECK_EQ(v.holders[0].pub.pid, 0);
        CHECK_STR(v.holders[0].pub.label, "");
        rdl_inspect_clear(&v);
    }
    /* a forged member of the holders: shown cleaned and cut, a score that
     * is no number is dead */
    answer_init(&a, NOW, 1000, "shared", NULL);
    answer_holder(&a, "<script>alert(1)</script> and a lot more text to be cut somewhere past 64", NOW + 5);
    a.holders[a.nh++] = text_reply(TOK_C);
    a.holders[a.nh++] = text_reply("soon");
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), 0);
    rdl_inspect_finish(&v);
    CHECK_EQ(v.nholders, 1);
    CHECK_EQ(strlen(v.holders[0].pub.token), RDL_INSPECT_TOKEN_MAX);
    CHECK(strchr(v.holders[0].pub.token, '<') == NULL);
    rdl_inspect_clear(&v);
}

/* Answers of another shape are REDLEASE_EPROTO, and nothing is kept. */
static void test_inspect_parse_shapes(void)
{
    answer a;
    redlease_inspection v;
    rdl_reply err = {.type = RDL_REPLY_INTEGER, .integer = 1};
    CHECK_EQ(rdl_inspect_parse(&err, &v), REDLEASE_EPROTO);
    CHECK_EQ(rdl_inspect_parse(NULL, &v), REDLEASE_EPROTO);
    for (int which = 0; which < 8; which++) {
        answer_init(&a, NOW, 1000, TOK_A, NULL);
        answer_holder(&a, TOK_A, NOW + 5);
        const rdl_reply *r = answer_done(&a);
        a.part[which] = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = 5};
        if (which == 0) a.part[0] = (rdl_reply){.type = RDL_REPLY_NIL};
        CHECK_EQ(rdl_inspect_parse(r, &v), REDLEASE_EPROTO);
        rdl_inspect_clear(&v);
    }
    answer_init(&a, NOW, 1000, TOK_A, NULL);
    answer_done(&a);
    a.top.elements = 7;
    CHECK_EQ(rdl_inspect_parse(&a.top, &v), REDLEASE_EPROTO);
    answer_init(&a, NOW, 1000, TOK_A, NULL);
    a.holders[a.nh++] = text_reply(TOK_A); /* no score */
    CHECK_EQ(rdl_inspect_parse(answer_done(&a), &v), REDLEASE_EPROTO);
    answer_init(&a, NOW, 1000, TOK_A, NULL);
    answer_done(&a);
    a.time[1] = text_reply("-5");
    CHECK_EQ(rdl_inspect_parse(&a.top, &v), REDLEASE_EPROTO);
    rdl_inspect_clear(&v);
}

/* ------------------------------------------------------- the lifetime */

/* The script goes by EVALSHA with the resource's six keys; the callback
 * runs once, from the loop after the answer, never inside the call; our
 * own handle is marked. */
static void test_inspect_once_from_the_loop(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    hold(&f, &r, "job", opts(3000));
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    CHECK_EQ(s.calls, 0);
    CHECK(is_inspect_cmd(fake_peek(&f), "job", 0));
    answer a;
    char value[RDL_VALUE_MAX + 1];
    snprintf(value, sizeof value, "%s", lease_value(r.lk));
    answer_init(&a, server_now(&f), 2900, value, NULL);
    answer_queue(&a, TOK_B);
    answer_waiter(&a, TOK_B, keep(&a, "%lld 100 chan", (long long)server_now(&f) + 500));
    fake_reply(&f, answer_done(&a));
    CHECK_EQ(s.calls, 0); /* the read is not done yet */
    fake_read_done(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_MUTEX);
    CHECK_EQ(s.holders, 1);
    CHECK_STR(s.token[0], redlease_lock_token(r.lk));
    CHECK_EQ(s.holder[0].this_client, 1);
    CHECK_EQ(s.holder[0].pid, f.c->set.identity.pid);
    CHECK_EQ(s.waiters, 1);
    CHECK_EQ(s.waiter[0].this_client, 0);
    fake_advance(&f, 5000);
    CHECK_EQ(s.calls, 1);
    release(&r);
    fake_run(&f);
    end(&f);
}

/* NOSCRIPT: the same read goes again as EVAL; an error reply is its
 * status with Redis's text; a link that breaks is ECONN. */
static void test_inspect_noscript_and_errors(void)
{
    fake f;
    fake_start(&f, NULL);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    fake_reply_err(&f, "NOSCRIPT No matching script. Please use EVAL.");
    fake_run(&f);
    CHECK_EQ(s.calls, 0);
    CHECK(is_inspect_cmd(fake_peek(&f), "job", 1));
    reply_free(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(s.kind, REDLEASE_KIND_FREE);

    seen_inspection e = {0};
    CHECK_EQ(inspect(&f, &e, "job"), REDLEASE_OK);
    fake_reply_err(&f, "NOPERM this user has no permissions to run the 'evalsha' command");
    fake_run(&f);
    CHECK_EQ(e.calls, 1);
    CHECK_EQ(e.status, REDLEASE_EPERM);
    CHECK(strstr(redlease_client_errstr(f.c), "NOPERM") != NULL);

    seen_inspection w = {0};
    CHECK_EQ(inspect(&f, &w, "job"), REDLEASE_OK);
    fake_reply_err(&f, "WRONGTYPE Operation against a key holding the wrong kind of value");
    fake_run(&f);
    CHECK_EQ(w.status, REDLEASE_EKIND);

    seen_inspection p = {0};
    CHECK_EQ(inspect(&f, &p, "job"), REDLEASE_OK);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(p.status, REDLEASE_EPROTO);

    seen_inspection b = {0};
    CHECK_EQ(inspect(&f, &b, "job"), REDLEASE_OK);
    fake_break(&f);
    fake_run(&f);
    CHECK_EQ(b.calls, 1);
    CHECK_EQ(b.status, REDLEASE_ECONN);
    end(&f);
}

/* No answer within the command timeout: ETIMEDOUT at that millisecond;
 * the answer that comes later changes nothing. */
static void test_inspect_timeout(void)
{
    fake f;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 300;
    fake_start(&f, &co);
    seen_inspection s = {0};
    int64_t t0 = f.now;
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    fake_advance(&f, 299);
    CHECK_EQ(s.calls, 0);
    fake_advance(&f, 1);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_ETIMEDOUT);
    CHECK_EQ(f.now, t0 + 300);
    reply_free(&f);
    CHECK_EQ(s.calls, 1);
    end(&f);
}

/* Bad arguments are refused at once (no callback); an inspection asked
 * while the client is not connected waits for it, within its deadline. */
static void test_inspect_arguments_and_waiting(void)
{
    fake f;
    fake_attach(&f, NULL);
    seen_inspection s = {0};
    CHECK_EQ(redlease_inspect(NULL, "job", 3, on_inspect, &s), REDLEASE_EINVAL);
    CHECK_EQ(redlease_inspect(f.c, "job", 3, NULL, &s), REDLEASE_EINVAL);
    CHECK_EQ(redlease_inspect(f.c, NULL, 3, on_inspect, &s), REDLEASE_EINVAL);
    CHECK_EQ(redlease_inspect(f.c, "job", 0, on_inspect, &s), REDLEASE_EINVAL);
    CHECK_EQ(redlease_inspect(f.c, "job", REDLEASE_MAX_RESOURCE + 1, on_inspect, &s), REDLEASE_EINVAL);
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    fake_connect(&f);
    CHECK(is_inspect_cmd(fake_peek(&f), "job", 0));
    reply_free(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK_EQ(redlease_inspection_kind(NULL), REDLEASE_KIND_FREE);
    CHECK_EQ(redlease_inspection_holder_count(NULL), 0);
    CHECK(redlease_inspection_waiter(NULL, 0) == NULL);
    end(&f);
}

/* Two inspections on a started client, s and t, both out. */
static void two_out(fake *f, seen_inspection *s, seen_inspection *t)
{
    fake_start(f, NULL);
    CHECK_EQ(inspect(f, s, "job"), REDLEASE_OK);
    CHECK_EQ(inspect(f, t, "job"), REDLEASE_OK);
}

/* Freeing the client cancels every pending inspection: ECANCELED before
 * free returns, once; redlease_inspect() from there is ECANCELED. */
static void test_inspect_cancelled_by_free(void)
{
    fake f;
    seen_inspection s = {0}, t = {0};
    t.inspect_again = 1;
    two_out(&f, &s, &t);
    redlease_client_free(f.c);
    f.c = NULL;
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_ECANCELED);
    CHECK_EQ(t.calls, 1);
    CHECK_EQ(t.status, REDLEASE_ECANCELED);
    CHECK_EQ(t.again, REDLEASE_ECANCELED);
    end(&f);
}

/* The client freed from inside the callback: the other inspection hears
 * ECANCELED then; nothing leaks, nothing runs after. */
static void test_inspect_client_freed_in_callback(void)
{
    fake f;
    seen_inspection s = {0}, t = {0};
    s.free_client = 1;
    two_out(&f, &s, &t);
    reply_free(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_OK);
    CHECK(f.c == NULL);
    CHECK_EQ(t.calls, 1);
    CHECK_EQ(t.status, REDLEASE_ECANCELED);
    end(&f);
}

static void on_closed(redlease_client *c, void *arg)
{
    (void)c;
    ++*(int *)arg;
}

/* A graceful close cancels pending inspections from the loop, and does
 * not wait for their answers. */
static void test_inspect_cancelled_by_close(void)
{
    fake f;
    fake_start(&f, NULL);
    seen_inspection s = {0};
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_OK);
    int done = 0;
    s.inside++;
    redlease_client_close(f.c, on_closed, &done);
    CHECK_EQ(inspect(&f, &s, "job"), REDLEASE_ECANCELED);
    s.inside--;
    CHECK_EQ(s.calls, 0);
    fake_run(&f);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.status, REDLEASE_ECANCELED);
    CHECK_EQ(done, 1); /* closed without the answer */
    CHECK_EQ(f.detached, 1);
    f.c = NULL;
    end(&f);
}

/* ---------------------------------------------------- out of memory */

static void oom_inspect(long fail_at, int *ok)
{
    fake f;
    if (!oom_start(&f, NULL, fail_at)) return;
    seen_inspection s = {0};
    int rc = inspect(&f, &s, "job");
    if (rc == REDLEASE_OK) {
        answer a;
        answer_init(&a, server_now(&f), 3000, "semaphore 3", "4");
        answer_holder(&a, TOK_A, server_now(&f) + 100);
        answer_holder(&a, TOK_B, server_now(&f) + 200);
        answer_weight(&a, TOK_A, "1");
        answer_weight(&a, "#" TOK_A, "1 2 3 h l");
        answer_queue(&a, TOK_C);
        answer_waiter(&a, TOK_C, keep(&a, "%lld 1 }c", (long long)server_now(&f) + 500));
        if (is_inspect_cmd(fake_peek(&f), "job", 0)) fake_reply(&f, answer_done(&a));
        fake_run(&f);
        fake_advance(&f, 2000); /* a failure that kept it from going: its deadline */
        CHECK_EQ(s.calls, 1);
        if (s.status == REDLEASE_OK && s.holders == 2 && s.waiters == 1) ++*ok;
        else CHECK(s.status == REDLEASE_ENOMEM || s.status == REDLEASE_ECONN || s.status == REDLEASE_ETIMEDOUT);
    } else {
        CHECK_EQ(rc, REDLEASE_ENOMEM);
        CHECK_EQ(s.calls, 0);
    }
    fake_alloc_fail_at(0);
    end(&f);
}

static void test_inspect_out_of_memory(void) { CHECK(alloc_sweep(oom_inspect) > 5); }

/* The token most servers hold (pure): split, a majority with its
 * majority-th longest ttl (no expiry the longest), none. */
static void test_inspect_most_held(void)
{
    const char *t[5] = {"aa", NULL, "bb", "aa", "aa"};
    const int64_t ttl[5] = {300, 0, 900, -1, 100};
    int first = 7;
    int64_t left = 7;
    CHECK_EQ(rdl_inspect_most_held(t, ttl, 5, &first, &left), 3);
    CHECK_EQ(first, 0);
    CHECK_EQ(left, 100); /* of -1 (none), 300, 100: the third longest */
    const char *two[3] = {"aa", NULL, "aa"};
    CHECK_EQ(rdl_inspect_most_held(two, ttl, 3, &first, &left), 2);
    CHECK_EQ(first, 0);
    CHECK_EQ(left, 300); /* of 300 and 900: the second longest */
    const int64_t forever[5] = {-1, 0, -1, -1, 7};
    CHECK_EQ(rdl_inspect_most_held(t, forever, 5, &first, &left), 3);
    CHECK_EQ(left, 7);
    CHECK_EQ(rdl_inspect_most_held(two, forever, 3, &first, &left), 2);
    CHECK_EQ(left, -1); /* two with no expiry of a majority of two */
    /* split one and one of three: no majority */
    const char *split[3] = {"bb", "aa", NULL};
    CHECK_EQ(rdl_inspect_most_held(split, ttl, 3, &first, &left), 1);
    CHECK_EQ(first, 0);
    CHECK_EQ(left, -1);
    const char *none[3] = {NULL, NULL, NULL};
    CHECK_EQ(rdl_inspect_most_held(none, ttl, 3, &first, &left), 0);
    CHECK_EQ(first, -1);
    CHECK_EQ(left, -1);
}

int main(int argc, char **argv)
{
    fake_alloc_install();
    static const test_case tests[] = {
        TEST_CASE(test_inspect_parse_mutex),
        TEST_CASE(test_inspect_parse_semaphore),
        TEST_CASE(test_inspect_parse_shared_and_waiters),
        TEST_CASE(test_inspect_parse_forged_and_garbled),
        TEST_CASE(test_inspect_parse_shapes),
        TEST_CASE(test_inspect_once_from_the_loop),
        TEST_CASE(test_inspect_noscript_and_errors),
        TEST_CASE(test_inspect_timeout),
        TEST_CASE(test_inspect_arguments_and_waiting),
        TEST_CASE(test_inspect_cancelled_by_free),
        TEST_CASE(test_inspect_client_freed_in_callback),
        TEST_CASE(test_inspect_cancelled_by_close),
        TEST_CASE(test_inspect_out_of_memory),
        TEST_CASE(test_inspect_tally_rules),
        TEST_CASE(test_inspect_most_held),
        TEST_CASE(test_inspect_cluster_moved),
        TEST_CASE(test_inspect_cluster_ask_to_a_new_node),
        TEST_CASE(test_inspect_quorum_mutex),
        TEST_CASE(test_inspect_quorum_cannot_tell),
        TEST_CASE(test_inspect_quorum_semaphore),
        TEST_CASE(test_inspect_quorum_none_answers),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
