/* SPDX-License-Identifier: MIT */
/* Unit tests of queued waiting (REDLEASE_WAIT_QUEUE, docs/design.md
 * section 11) on the fake transport and virtual clock: what a queued
 * attempt sends, when a waiter told "busy" checks again (the holder's
 * TTL left, a third of its entry's life, a word), the client's wake-up
 * channel (joining the queue only while subscribed, every waiter checking
 * after a new subscription, words for strangers), and the scripts that
 * leave the queue and hand the lock over. The scripts themselves run
 * against a real server in tests/integration/test_queue.c. */
#include <stdio.h>
#include <string.h>

#include "core_rig.h"
#include "fake.h"
#include "testutil.h"

#define TTL 30000 /* a waiter's entry lives as long; it checks every 10000 ms */

static redlease_lock_options qopts(int64_t wait)
{
    redlease_lock_options o = opts(TTL);
    o.wait_ms = wait;
    o.wait_mode = REDLEASE_WAIT_QUEUE;
    return o;
}

/* The pending command is a queued attempt of r's handle, in order ("1")
 * or not ("0"); *channel gets the channel it asks to be told on ("" when
 * it does not join). */
static int is_attempt_of(fake *f, const rec *r, const char *order, const char **channel)
{
    fake_cmd *c = fake_peek(f);
    int ok = c && c->argc == 13 && cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_ACQUIRE)) &&
             strcmp(c->argv[11], order) == 0 && is_record_of(c->argv[12], r->lk) &&
             strcmp(c->argv[2], "3") == 0 && strcmp(c->argv[3], "lock:{job}") == 0 &&
             strcmp(c->argv[4], "lock:{job}:queue") == 0 && strcmp(c->argv[5], "lock:{job}:waiters") == 0 &&
             strcmp(c->argv[6], redlease_lock_token(r->lk)) == 0 && strcmp(c->argv[7], "30000") == 0 &&
             strcmp(c->argv[8], "30000") == 0 /* the entry's life */ &&
             strcmp(c->argv[9], "2000") == 0 /* the claim: the command timeout */;
    if (ok && channel) *channel = c->argv[10];
    return ok;
}

static int is_queued_attempt(fake *f, const rec *r, const char **channel)
{
    return is_attempt_of(f, r, "1", channel);
}

static int is_release_of(fake *f, const rec *r, const char *order)
{
    fake_cmd *c = fake_peek(f);
    return c && c->argc == 8 && cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_RELEASE)) &&
           strcmp(c->argv[7], order) == 0 &&
           strcmp(c->argv[2], "3") == 0 && strcmp(c->argv[3], "lock:{job}") == 0 &&
           strcmp(c->argv[4], "lock:{job}:queue") == 0 && strcmp(c->argv[5], "lock:{job}:waiters") == 0 &&
           strcmp(c->argv[6], redlease_lock_token(r->lk)) == 0;
}

static int is_queue_release(fake *f, const rec *r) { return is_release_of(f, r, "1"); }

/* The release's two-key form, from a holder that met no queue. */
static int is_release_probe(fake *f, const rec *r)
{
    fake_cmd *c = fake_peek(f);
    return c && c->argc == 6 && cmd_is(f, "EVALSHA", fake_sha(RDL_SCRIPT_QUEUE_RELEASE)) &&
           strcmp(c->argv[2], "2") == 0 && strcmp(c->argv[3], "lock:{job}") == 0 &&
           strcmp(c->argv[4], "lock:{job}:queue") == 0 &&
           strcmp(c->argv[5], redlease_lock_token(r->lk)) == 0;
}

/* The waker's link (the first beside the client's own) connects and
 * subscribes; returns its channel. */
static const char *subscribe(fake *f)
{
    fake_link_connect(f, &f->side);
    fake_cmd *sub = &f->side.cmds[f->side.ncmds - 1];
    CHECK(sub->subscribed && strcmp(sub->argv[0], "SUBSCRIBE") == 0);
    CHECK(strncmp(sub->argv[1], "lock:wake:", 10) == 0 && strlen(sub->argv[1]) == 10 + 32);
    fake_link_subscribed(&f->side);
    fake_run(f);
    return sub->argv[1];
}

static void word(fake *f, const char *channel, const char *kind, const rec *r, const char *ms)
{
    char text[80];
    snprintf(text, sizeof text, "%s %s%s%s", kind, redlease_lock_token(r->lk), ms ? " " : "", ms ? ms : "");
    fake_link_message(&f->side, channel, text);
    fake_run(f);
}

/* A waiter in the queue: its first attempt went before the channel was
 * subscribed (channel ""), the subscription had it check again at once,
 * now joining; that attempt is pending. Returns the channel. */
static const char *queued(fake *f, rec *r, int64_t wait)
{
    redlease_lock_options o = qopts(wait);
    CHECK_EQ(start_lock(f, r, "job", &o), REDLEASE_OK);
    fake_run(f);
    const char *ch = NULL;
    CHECK(is_queued_attempt(f, r, &ch) && ch && ch[0] == '\0');
    CHECK_EQ(f->side.connects, 0); /* no channel until a handle must wait */
    fake_reply_int(f, -20000);
    fake_run(f);
    CHECK_EQ(r->acq_calls, 0);
    CHECK_EQ(f->side.connects, 1); /* the first waiter opened the channel */
    const char *channel = subscribe(f);
    CHECK(is_queued_attempt(f, r, &ch) && ch && strcmp(ch, channel) == 0);
    return channel;
}

/* queued(), its joining attempt answered "busy": the waiter sleeps
 * (next check by the entry's life, 10000 ms). Returns the channel. */
static const char *waiting(fake *f, rec *r, int64_t wait)
{
    const char *channel = queued(f, r, wait);
    fake_reply_int(f, -20000);
    fake_run(f);
    return channel;
}

/* n handles of one client waiting on "job0".."job<n-1>", all joined
 * after the channel subscribed, all asleep. Returns the channel. */
static const char *many_waiting(fake *f, rec *r, int n)
{
    for (int i = 0; i < n; i++) {
        char res[16];
        snprintf(res, sizeof res, "job%d", i);
        redlease_lock_options o = qopts(REDLEASE_WAIT_FOREVER);
        CHECK_EQ(start_lock(f, &r[i], res, &o), REDLEASE_OK);
    }
    fake_run(f);
    for (int i = 0; i < n; i++) fake_reply_int(f, -20000);
    fake_run(f);
    const char *channel = subscribe(f); /* all check again, joining */
    CHECK_EQ(fake_pending(f), n);
    for (int i = 0; i < n; i++) fake_reply_int(f, -20000);
    fake_run(f);
    return channel;
}

static void test_word_parsing(void)
{
    char tok[RDL_TOKEN_LEN + 1];
    int64_t ms;
    const char *t = "0123456789abcdef0123456789abcdef";
    char buf[96];
    snprintf(buf, sizeof buf, "g %s", t);
    CHECK_EQ(rdl_waker_parse_word(buf, strlen(buf), tok, &ms), RDL_WORD_GRANTED);
    CHECK_STR(tok, t);
    CHECK_EQ(ms, 0);
    snprintf(buf, sizeof buf, "c %s 2000", t);
    CHECK_EQ(rdl_waker_parse_word(buf, strlen(buf), tok, &ms), RDL_WORD_CHECK);
    CHECK_EQ(ms, 2000);
    static const char *const bad[] = {
        "", "g", "g ", "x 0123456789abcdef0123456789abcdef", "g 0123456789abcdef0123456789abcde",
        "g 0123456789ABCDEF0123456789abcdef", "g 0123456789abcdef0123456789abcdef ",
        "c 0123456789abcdef0123456789abcdef", "c 0123456789abcdef0123456789abcdef ",
        "c 0123456789abcdef0123456789abcdef 1x", "c 0123456789abcdef0123456789abcdef 99999999999999999999",
        "g0123456789abcdef0123456789abcdef",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (rdl_waker_parse_word(bad[i], strlen(bad[i]), tok, &ms) != 0)
            printf("# accepted: \"%s\"\n", bad[i]), t_fails++;
}

/* A waiter checks again by the holder's TTL left (the key may expire
 * without a release) or a third of its entry's life, whichever is first;
 * never by the backoff of a poller. */
static void test_busy_waiter_checks_by_holder_ttl_or_entry_life(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    queued(&f, &r, REDLEASE_WAIT_FOREVER);
    fake_reply_int(&f, -700); /* the holder has 700 ms left (rounded up) */
    fake_run(&f);
    int64_t t = f.now;
    fake_advance(&f, 699);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, 1);
    CHECK(is_queued_attempt(&f, &r, NULL));
    CHECK_EQ(f.now, t + 700);
    fake_reply_int(&f, 0); /* a holder without a TTL: the entry's life decides */
    fake_run(&f);
    t = f.now;
    fake_advance(&f, TTL / 3 - 1);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, 1);
    CHECK(is_queued_attempt(&f, &r, NULL));
    fake_reply_int(&f, 1); /* ours */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* Once the client's channel listens, a waiting acquire joins the queue
 * with its first attempt: no attempt that only learns "busy" first. */
static void test_later_waiters_join_at_their_first_attempt(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0}, s = {0};
    const char *channel = waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    redlease_lock_options o = qopts(REDLEASE_WAIT_FOREVER);
    CHECK_EQ(start_lock(&f, &s, "job", &o), REDLEASE_OK);
    fake_run(&f);
    const char *ch = NULL;
    CHECK(is_queued_attempt(&f, &s, &ch) && strcmp(ch, channel) == 0);
    fake_reply_int(&f, -20000);
    fake_run(&f);
    CHECK_EQ(s.acq_calls, 0);
    CHECK_EQ(fake_pending(&f), 0); /* asleep in the queue, not backing off */
    end(&f);
}

/* "g TOKEN": the lock was handed over; the waiter confirms at once with
 * its own command, and its lease counts from that command's send. */
static void test_granted_word_confirms_at_once(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    const char *channel = waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    fake_advance(&f, 50);
    CHECK_EQ(fake_pending(&f), 0);
    char text[80];
    snprintf(text, sizeof text, "g %s", redlease_lock_token(r.lk));
    fake_link_message(&f.side, channel, text);
    rdl_conn_on_read_done(f.side.cn); /* the read ends: no loop iteration more */
    CHECK(is_queued_attempt(&f, &r, NULL));
    int64_t t0 = f.now;
    fake_advance(&f, 3);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_remaining_ms(r.lk), t0 + TTL - 302 - f.now); /* drift: 1% + 2 ms */
    CHECK_EQ(f.c->waker->words, 1);
    end(&f);
}

/* A word that comes while an attempt is out may be newer than what that
 * attempt saw: a "busy" answer is checked again at once after a grant,
 * and by the word's time after a "check". */
static void test_word_during_an_attempt_is_kept_for_after_it(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    const char *channel = queued(&f, &r, REDLEASE_WAIT_FOREVER);
    word(&f, channel, "g", &r, NULL);
    CHECK_EQ(fake_pending(&f), 1); /* no second attempt beside the first */
    fake_reply_int(&f, -20000);
    fake_run(&f);
    CHECK(is_queued_attempt(&f, &r, NULL)); /* at once */
    word(&f, channel, "c", &r, "300");
    fake_reply_int(&f, -20000);
    fake_run(&f);
    int64_t t = f.now;
    fake_advance(&f, 299);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, 1);
    CHECK(is_queued_attempt(&f, &r, NULL));
    CHECK_EQ(f.now, t + 300);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* "c TOKEN MS": the waiter ahead was handed the lock and may never
 * confirm; check once its claim ends, not at the holder's TTL. Words for
 * another token, of another shape, or for a handle that holds, change
 * nothing. */
static void test_check_word_and_strangers(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    const char *channel = waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    fake_link_message(&f.side, channel, "g 0123456789abcdef0123456789abcdef");
    fake_link_message(&f.side, channel, "hello");
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(f.c->waker->words, 0);
    int64_t t = f.now;
    word(&f, channel, "c", &r, "2000");
    fake_advance(&f, 1999);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, 1);
    CHECK(is_queued_attempt(&f, &r, NULL));
    CHECK_EQ(f.now, t + 2000);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    word(&f, channel, "g", &r, NULL); /* held: it waits in no queue */
    CHECK_EQ(fake_pending(&f), 0);
    CHECK_EQ(f.c->waker->words, 1);
    end(&f);
}

/* The channel's link breaks while a waiter waits: words published
 * meanwhile are lost, so the new subscription has it check at once;
 * while unsubscribed its attempts do not join (channel ""). */
static void test_resubscription_has_every_waiter_check(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    fake_link_break(&f.side);
    fake_run(&f);
    CHECK_EQ(fake_pending(&f), 0);
    fake_advance(&f, 2000); /* the reconnect backoff at most */
    CHECK(f.side.connecting);
    const char *channel = subscribe(&f);
    const char *ch = NULL;
    CHECK(is_queued_attempt(&f, &r, &ch) && strcmp(ch, channel) == 0);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    end(&f);
}

/* A waiter whose budget ends leaves the queue: the drop behind its
 * attempts is the queue's release script (which also hands over a lock
 * handed to it meanwhile). A held queued handle releases with it too,
 * never with the server's own DELIFEQ, which would hand nothing over: a
 * holder that met no queue sends its two-key probe first, and the whole
 * release only when the probe answers that there is a queue (-1); one
 * that found the lock busy on its way sends the whole release at once. */
static void test_leaving_and_releasing_go_through_the_queue(void)
{
    fake f;
    fake_attach(&f, NULL);
    f.native = RDL_NATIVE_DELIFEQ;
    fake_connect(&f);
    rec r = {0};
    waiting(&f, &r, 3000);
    fake_advance(&f, 3000);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    /* the last attempt, sent just before the budget's end, then the drop */
    CHECK(is_queued_attempt(&f, &r, NULL));
    fake_reply_int(&f, -20000);
    fake_run(&f);
    CHECK(is_queue_release(&f, &r));
    fake_reply_int(&f, 0);
    fake_run(&f);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK_EQ(r.rel_calls, 1);

    rec h = {0};
    redlease_lock_options o = qopts(0); /* one attempt: a plain SET NX, in no queue */
    CHECK_EQ(start_lock(&f, &h, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "SET", "lock:{job}"));
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(h.acq_status, REDLEASE_OK);
    CHECK_EQ(release(&h), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_release_probe(&f, &h));
    fake_reply_int(&f, -1); /* there is a queue: nothing done */
    fake_run(&f);
    CHECK_EQ(h.rel_calls, 0);
    CHECK(is_queue_release(&f, &h));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(h.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);

    rec p = {0}; /* no queue: the probe is the release */
    CHECK_EQ(start_lock(&f, &p, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(release(&p), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_release_probe(&f, &p));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(p.rel_status, REDLEASE_OK);
    CHECK_EQ(fake_pending(&f), 0);

    rec w = {0}; /* met the lock busy, then handed it: the whole release */
    o = qopts(REDLEASE_WAIT_FOREVER);
    CHECK_EQ(start_lock(&f, &w, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_queued_attempt(&f, &w, NULL));
    fake_reply_int(&f, -20000);
    fake_run(&f);
    while (!fake_pending(&f)) fake_advance(&f, 100);
    CHECK(is_queued_attempt(&f, &w, NULL));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(w.acq_status, REDLEASE_OK);
    CHECK_EQ(release(&w), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_queue_release(&f, &w));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(w.rel_status, REDLEASE_OK);
    end(&f);
}

/* One attempt (wait_ms 0, the library's default mode) is a plain SET NX,
 * and a client that never waited opens no channel. */
static void test_single_attempt_opens_no_channel(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "SET", "lock:{job}"));
    fake_reply_nil(&f);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_EBUSY);
    CHECK_EQ(f.side.connects, 0);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    end(&f);
}

/* Many waiters of one client share its channel; each word finds its own
 * (the table grows past its first buckets). */
static void test_many_waiters_share_one_channel(void)
{
    enum { N = 100 };
    fake f;
    fake_start(&f, NULL);
    static rec r[N];
    memset(r, 0, sizeof r);
    const char *channel = many_waiting(&f, r, N);
    CHECK_EQ(f.side.connects, 1);
    for (int i = N - 1; i >= 0; i--) word(&f, channel, "g", &r[i], NULL);
    CHECK_EQ(fake_pending(&f), N);
    CHECK_EQ(f.c->waker->words, N);
    for (int i = N - 1; i >= 0; i--) { /* the attempts went in the words' order */
        fake_cmd *c = fake_peek(&f);
        CHECK(c && strcmp(c->argv[6], redlease_lock_token(r[i].lk)) == 0);
        fake_reply_int(&f, 1);
    }
    fake_run(&f);
    for (int i = 0; i < N; i++) CHECK_EQ(r[i].acq_status, REDLEASE_OK);
    CHECK(f.c->waker->nbuckets > 16);
    end(&f);
}

/* Every client has a channel: a Cluster client's on its first seed, a
 * quorum client's on its first member. */
static void test_channel_of_each_topology(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.topology = REDLEASE_TOPOLOGY_CLUSTER;
    co.cluster_addrs = "127.0.0.1:7000";
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    CHECK(c && c->waker && rdl_conn_port(&c->waker->conn) == 7000);
    redlease_client_free(c);
    redlease_client_options_init(&co);
    co.topology = REDLEASE_TOPOLOGY_QUORUM;
    co.quorum_addrs = "127.0.0.1:7005,127.0.0.1:7001,127.0.0.1:7002";
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    CHECK(c && c->waker && rdl_conn_port(&c->waker->conn) == 7005);
    redlease_client_free(c);
    redlease_client_options_init(&co);
    CHECK_EQ(redlease_client_new(&c, &co), REDLEASE_OK);
    CHECK(c && c->waker != NULL);
    redlease_client_free(c);
}

/* REDLEASE_WAIT_WAKE: the same queue, asked for no order: its attempts
 * take a free lock whoever waits, its release tells the first waiters to
 * check and hands nothing over; words reach it as any waiter. */
static void test_unordered_waiting(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = qopts(REDLEASE_WAIT_FOREVER);
    o.wait_mode = REDLEASE_WAIT_WAKE;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_attempt_of(&f, &r, "0", NULL));
    fake_reply_int(&f, -20000);
    fake_run(&f);
    const char *channel = subscribe(&f);
    const char *ch = NULL;
    CHECK(is_attempt_of(&f, &r, "0", &ch) && strcmp(ch, channel) == 0);
    fake_reply_int(&f, -20000);
    fake_run(&f);
    word(&f, channel, "c", &r, "0"); /* a release woke it: check now */
    CHECK(is_attempt_of(&f, &r, "0", NULL));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK(is_release_of(&f, &r, "0"));
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

static void test_wait_mode_is_checked(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    redlease_lock_options o = qopts(100);
    o.wait_mode = 4;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_EINVAL);
    o.wait_mode = -1;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_EINVAL);
    redlease_lock_options d;
    redlease_lock_options_init(&d);
    CHECK_EQ(d.wait_mode, REDLEASE_WAIT_DEFAULT);
    end(&f);
}

/* A queued attempt out when the acquire is cancelled, answered NOSCRIPT
 * after on_acquire ran (its acquire part freed): it is resent as EVAL,
 * stale, asking to join nothing. */
static void test_noscript_resend_after_the_acquire_ended(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    const char *channel = queued(&f, &r, REDLEASE_WAIT_FOREVER);
    (void)channel;
    CHECK_EQ(release(&r), REDLEASE_OK); /* cancelled while its attempt is out */
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    CHECK_EQ(r.rel_calls, 1);
    fake_reply_err(&f, "NOSCRIPT No matching script. Please use EVAL.");
    fake_run(&f);
    CHECK(is_queue_release(&f, &r)); /* the drop behind the attempt */
    fake_reply_int(&f, 0);
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && strcmp(c->argv[0], "EVAL") == 0 && c->argc == 13 && c->argv[10][0] == '\0');
    fake_reply_int(&f, 1); /* a stale take: dropped again */
    fake_run(&f);
    CHECK(is_queue_release(&f, &r));
    fake_reply_int(&f, 1);
    fake_run(&f);
    end(&f);
}

/* A server that refuses the SUBSCRIBE (an ACL without channels) is asked
 * again at the pace of the reconnect backoff, not after every handshake;
 * the waiter goes on by its timers. */
static void test_refused_subscription_backs_off(void)
{
    fake f;
    fake_start(&f, NULL);
    /* Every reconnect delay at its cap (50, 100, ... 2000 ms): about ten
     * connects in 10 s. With the OS's draws the count varied (14-20 in
     * five runs), and a run of low draws crossed the bound below. */
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = qopts(REDLEASE_WAIT_FOREVER);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_reply_int(&f, -20000);
    fake_run(&f);
    int64_t t0 = f.now;
    while (f.now < t0 + 10000) {
        if (f.side.connecting) {
            fake_link_connect(&f, &f.side);
            fake_cmd *sub = &f.side.cmds[f.side.ncmds - 1];
            CHECK(sub->subscribed && !sub->answered);
            rdl_reply e = {.type = RDL_REPLY_ERROR, .str = "NOPERM no channel", .len = 17};
            rdl_conn_on_push(f.side.cn, sub->req, &e);
            fake_run(&f);
        }
        while (fake_pending(&f)) {
            fake_reply_int(&f, -20000);
            fake_run(&f);
        }
        fake_advance(&f, 1);
    }
    printf("# connects in 10 s with the subscription refused: %d\n", f.side.connects);
    CHECK(f.side.connects >= 3 && f.side.connects < 20); /* reconnect_max 2000 ms */
    CHECK_EQ(r.acq_calls, 0);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    end(&f);
}

/* REDLEASE_EV_CHANNEL's statuses and the last one's detail (its pointer
 * lives only as long as the hook runs). */
static int channel_status[8], nchannel;
static char channel_detail[64];
static void channel_hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)arg;
    if (ev->type != REDLEASE_EV_CHANNEL) return;
    if (nchannel < 8) channel_status[nchannel++] = ev->status;
    snprintf(channel_detail, sizeof channel_detail, "%s", ev->detail ? ev->detail : "");
}

/* The user hears when the wake-up channel is subscribed, when its link
 * goes (once, not at every failed reconnect) and when a server refuses
 * it, with the server's text. */
static void test_channel_events(void)
{
    fake f;
    fake_start(&f, NULL);
    nchannel = 0;
    redlease_client_set_event_cb(f.c, channel_hook, NULL);
    rec r = {0};
    waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    CHECK_EQ(nchannel, 1);
    CHECK_EQ(channel_status[0], REDLEASE_OK);
    CHECK_STR(channel_detail, "");
    fake_link_break(&f.side);
    fake_run(&f);
    CHECK_EQ(nchannel, 2);
    CHECK(channel_status[1] < 0);
    for (int i = 0; i < 3; i++) { /* connects that fail: nothing more said */
        fake_advance(&f, 2000);
        if (f.side.connecting) fake_side_connect_fail(&f);
        fake_run(&f);
    }
    CHECK_EQ(nchannel, 2);
    fake_advance(&f, 2000);
    CHECK(f.side.connecting);
    fake_link_connect(&f, &f.side);
    fake_cmd *sub = &f.side.cmds[f.side.ncmds - 1];
    rdl_reply e = {.type = RDL_REPLY_ERROR, .str = "NOPERM no channel", .len = 17};
    rdl_conn_on_push(f.side.cn, sub->req, &e);
    fake_run(&f);
    CHECK_EQ(nchannel, 3);
    CHECK_EQ(channel_status[2], REDLEASE_EREDIS);
    CHECK_STR(channel_detail, "127.0.0.1:6379: NOPERM no channel");
    while (fake_pending(&f)) {
        fake_reply_int(&f, -20000);
        fake_run(&f);
    }
    fake_advance(&f, 2000);
    CHECK(f.side.connecting);
    subscribe(&f);
    CHECK_EQ(nchannel, 4);
    CHECK_EQ(channel_status[3], REDLEASE_OK);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    redlease_client_set_event_cb(f.c, NULL, NULL);
    end(&f);
}

/* The client freed from inside a waiter's on_acquire while others of it
 * wait on its channel: they are told ECANCELED, nothing leaks. */
static void test_free_from_a_callback_with_waiters(void)
{
    fake f;
    fake_start(&f, NULL);
    static rec r[3];
    memset(r, 0, sizeof r);
    const char *channel = many_waiting(&f, r, 3);
    word(&f, channel, "g", &r[1], NULL);
    r[1].on_acq_do = free_client_inside;
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r[1].acq_calls, 1);
    CHECK_EQ(r[1].acq_status, REDLEASE_OK);
    for (int i = 0; i < 3; i += 2) {
        CHECK_EQ(r[i].acq_calls, 1);
        CHECK_EQ(r[i].acq_status, REDLEASE_ECANCELED);
    }
    end(&f);
}

/* A graceful close with a waiter queued: its acquire ends (ECANCELED) and
 * the drop takes it out of the queue before the client goes. */
static void test_close_with_a_waiter_queued(void)
{
    fake f;
    fake_start(&f, NULL);
    rec r = {0};
    waiting(&f, &r, REDLEASE_WAIT_FOREVER);
    redlease_client_close(f.c, NULL, NULL);
    fake_run(&f);
    CHECK_EQ(r.acq_calls, 1);
    CHECK_EQ(r.acq_status, REDLEASE_ECANCELED);
    CHECK(is_queue_release(&f, &r));
    fake_reply_int(&f, 0);
    fake_run(&f);
    f.c = NULL; /* the close ended it */
    end(&f);
}

/* A queued lease's life with each allocation failing in turn: the waiter
 * table, the SUBSCRIBE, the attempts and the drop. Never a crash or a
 * leak, and the run that fails nothing goes all the way. */
static void queued_life(long fail_at, int *ok)
{
    fake f;
    if (!oom_start(&f, NULL, fail_at)) return;
    rec r = {0};
    redlease_lock_options o = qopts(REDLEASE_WAIT_FOREVER);
    if (start_lock(&f, &r, "job", &o) != REDLEASE_OK) {
        fake_alloc_fail_at(0);
        end(&f);
        return;
    }
    fake_run(&f);
    while (fake_pending(&f)) {
        fake_reply_int(&f, -20000);
        fake_run(&f);
    }
    if (f.side.connecting) {
        fake_link_connect(&f, &f.side);
        if (f.side.ncmds && f.side.cmds[f.side.ncmds - 1].subscribed) fake_link_subscribed(&f.side);
        fake_run(&f);
    }
    while (fake_pending(&f)) {
        fake_reply_int(&f, -20000);
        fake_run(&f);
    }
    if (f.side.ncmds && f.side.cmds[f.side.ncmds - 1].subscribed) {
        char text[80];
        snprintf(text, sizeof text, "g %s", redlease_lock_token(r.lk));
        fake_link_message(&f.side, f.side.cmds[f.side.ncmds - 1].argv[1], text);
        fake_run(&f);
    }
    for (int i = 0; i < 40 && r.acq_calls == 0; i++) {
        while (fake_pending(&f)) {
            fake_reply_int(&f, 1);
            fake_run(&f);
        }
        fake_advance(&f, 500);
    }
    if (r.acq_calls == 1 && r.acq_status == REDLEASE_OK) {
        release(&r);
        fake_run(&f);
        while (fake_pending(&f)) {
            fake_reply_int(&f, 1);
            fake_run(&f);
        }
        if (r.rel_calls == 1 && r.rel_status == REDLEASE_OK && f.side.connects == 1) (*ok)++;
    } else if (r.acq_calls == 0) {
        release(&r);
        fake_run(&f);
        while (fake_pending(&f)) {
            fake_reply_int(&f, 0);
            fake_run(&f);
        }
    }
    fake_alloc_fail_at(0);
    end(&f);
}

static void test_every_allocation_failing_in_a_queued_life(void)
{
    fake_alloc_install();
    long n = alloc_sweep(queued_life);
    printf("# %ld allocations, each failed in turn\n", n);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_word_parsing),
        TEST_CASE(test_busy_waiter_checks_by_holder_ttl_or_entry_life),
        TEST_CASE(test_later_waiters_join_at_their_first_attempt),
        TEST_CASE(test_granted_word_confirms_at_once),
        TEST_CASE(test_word_during_an_attempt_is_kept_for_after_it),
        TEST_CASE(test_check_word_and_strangers),
        TEST_CASE(test_resubscription_has_every_waiter_check),
        TEST_CASE(test_leaving_and_releasing_go_through_the_queue),
        TEST_CASE(test_single_attempt_opens_no_channel),
        TEST_CASE(test_many_waiters_share_one_channel),
        TEST_CASE(test_channel_of_each_topology),
        TEST_CASE(test_unordered_waiting),
        TEST_CASE(test_wait_mode_is_checked),
        TEST_CASE(test_noscript_resend_after_the_acquire_ended),
        TEST_CASE(test_refused_subscription_backs_off),
        TEST_CASE(test_channel_events),
        TEST_CASE(test_free_from_a_callback_with_waiters),
        TEST_CASE(test_close_with_a_waiter_queued),
        TEST_CASE(test_every_allocation_failing_in_a_queued_life),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
