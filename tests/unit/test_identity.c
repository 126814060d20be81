/* SPDX-License-Identifier: MIT */
/* Who holds (src/identity.h; man 3 redlease, HOLDERS): a label is cleaned
 * for display and bounded, the record is "PID AT HOST LABEL", and AT is the
 * server's clock (TIME, read in the handshake) at the attempt's send, or 0
 * when the server would not tell it, which never fails the link. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core_rig.h"
#include "fake.h"
#include "identity.h"
#include "testutil.h"

static const char *clean(const char *s, size_t max, int host)
{
    static char out[256];
    rdl_identity_clean(out, max, s, strlen(s), host);
    return out;
}

/* What a terminal would act on never reaches it; what it shows stays. */
static void test_label_cleaned_for_display(void)
{
    CHECK_STR(clean("billing worker #3", 64, 0), "billing worker #3");
    CHECK_STR(clean("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\x92", 64, 0),
              "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\x92"); /* UTF-8 kept */
    CHECK_STR(clean("a\x1b[31mb\tc\nd\x7f", 64, 0), "a?[31mb?c?d?");     /* C0, DEL */
    CHECK_STR(clean("x\xc2\x85y", 64, 0), "x?y");                         /* C1 NEL */
    CHECK_STR(clean("evil\xe2\x80\xaetxt.exe", 64, 0), "evil?txt.exe");   /* RLO */
    CHECK_STR(clean("\xe2\x81\xa6i\xe2\x81\xa9", 64, 0), "?i?");          /* isolates */
    CHECK_STR(clean("\xff\xfe", 64, 0), "??");                            /* no UTF-8 */
    CHECK_STR(clean("\xc0\xaf", 64, 0), "??");                            /* overlong */
    CHECK_STR(clean("\xed\xa0\x80", 64, 0), "???");                       /* surrogate */
    CHECK_STR(clean("\xe6\x97", 64, 0), "??");                            /* cut short */
    /* bounded, never half a sequence */
    CHECK_STR(clean("abcd\xc3\xa9", 5, 0), "abcd");
    CHECK_STR(clean("abcd\xc3\xa9", 6, 0), "abcd\xc3\xa9");
    /* a host is one word of the record */
    CHECK_STR(clean("db-1.example.org", 64, 1), "db-1.example.org");
    CHECK_STR(clean("my host\xc3\xa9!", 64, 1), "my?host???");
}

static void test_record_format(void)
{
    rdl_identity id = {.label = "nightly backup", .host = "db-1", .pid = 4242};
    rdl_identity_seal(&id);
    char rec[RDL_RECORD_MAX + 1], value[RDL_VALUE_MAX + 1];
    CHECK_EQ(rdl_identity_record(&id, 1700000000123LL, 0, rec),
             strlen("4242 1700000000123 0 db-1 nightly backup"));
    CHECK_STR(rec, "4242 1700000000123 0 db-1 nightly backup");
    rdl_identity_record(&id, -1, 77, rec); /* the time not known; a fence */
    CHECK_STR(rec, "4242 0 77 db-1 nightly backup");
    const char *tok = "0123456789abcdef0123456789abcdef";
    size_t n = rdl_identity_value(&id, tok, 5, 6, value);
    CHECK_STR(value, "0123456789abcdef0123456789abcdef 4242 5 6 db-1 nightly backup");
    CHECK_EQ(n, strlen(value));
    /* the longest fits: 19 digits for each int64, 20 for the fence */
    rdl_identity big = {.pid = INT64_MAX};
    memset(big.label, 'l', REDLEASE_MAX_LABEL);
    memset(big.host, 'h', RDL_HOST_MAX);
    rdl_identity_seal(&big);
    CHECK_EQ(rdl_identity_value(&big, tok, INT64_MAX, UINT64_MAX, value), (size_t)RDL_VALUE_MAX - 2);
    /* this process: its pid, its host, the program's name */
    rdl_identity me;
    rdl_identity_of_process(&me, NULL);
    CHECK_EQ(me.pid, (int64_t)getpid());
    CHECK_STR(me.label, "test_identity");
    CHECK(me.host[0] != '\0' && strchr(me.host, ' ') == NULL);
    rdl_identity_of_process(&me, "x\x1b");
    CHECK_STR(me.label, "x?");
}

/* A record read back is cleaned again, and what is no record is said so. */
static void test_record_parsed(void)
{
    rdl_record r;
    const char *good = "4242 1700000000123 18446744073709551615 db-1 nightly \x1b backup";
    CHECK_EQ(rdl_identity_parse(good, strlen(good), &r), 0);
    CHECK_EQ(r.pid, 4242);
    CHECK_EQ(r.at, 1700000000123LL);
    CHECK(r.fence == UINT64_MAX);
    CHECK_STR(r.host, "db-1");
    CHECK_STR(r.label, "nightly ? backup");
    const char *forged = "1 2 3 a\x1b]0;b c";
    CHECK_EQ(rdl_identity_parse(forged, strlen(forged), &r), 0);
    CHECK_STR(r.host, "a??0?b"); /* one word of safe bytes */
    static const char *bad[] = {"", "1 2 3", "1 2 3 host", "x 2 3 h l", "1 2 18446744073709551616 h l",
                                "1 9223372036854775808 3 h l", "1  2 3 h l", "1 2 3  l"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_EQ(rdl_identity_parse(bad[i], strlen(bad[i]), &r), -1);
}

/* How long ago a record's time was: a writer's estimate a little ahead of
 * the server's clock is 0, no time or no clock's is not known. */
static void test_record_age(void)
{
    int64_t now = 1700000000000LL;
    CHECK_EQ(rdl_identity_age(now, now - 2500), 2500);
    CHECK_EQ(rdl_identity_age(now, now), 0);
    CHECK_EQ(rdl_identity_age(now, now + 3), 0);     /* the estimate ran ahead */
    CHECK_EQ(rdl_identity_age(now, now + 1000), 0);
    CHECK_EQ(rdl_identity_age(now, now + 1001), -1); /* no estimate is that far off */
    CHECK_EQ(rdl_identity_age(now, 0), -1);          /* not known */
    CHECK_EQ(rdl_identity_age(now, 2), -1);          /* no clock of the server's */
    CHECK_EQ(rdl_identity_age(0, now), -1);
}

static void test_label_option_bounded(void)
{
    redlease_client_options o;
    redlease_client_options_init(&o);
    CHECK(o.label == NULL);
    char label[REDLEASE_MAX_LABEL + 2];
    memset(label, 'a', sizeof label);
    label[REDLEASE_MAX_LABEL] = '\0';
    o.label = label;
    CHECK(redlease_client_options_error(&o) == NULL);
    label[REDLEASE_MAX_LABEL] = 'a';
    label[REDLEASE_MAX_LABEL + 1] = '\0';
    CHECK(redlease_client_options_error(&o) != NULL && strstr(redlease_client_options_error(&o), "label"));
    redlease_client *c = NULL;
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_EINVAL);
    o.label = "";
    CHECK_EQ(redlease_client_new(&c, &o), REDLEASE_EINVAL);
    CHECK(c == NULL);
}

/* The acquire's SET carries the record: the client's label, cleaned, and
 * the server's clock at the send. */
static void test_record_rides_the_acquire(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.label = "api \xe2\x80\xae gateway";
    fake f;
    fake_start(&f, &co);
    fake_advance(&f, 250); /* the server's clock moves with ours */
    rec r = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    CHECK(cmd_is(&f, "SET", "lock:{job}"));
    char want[256];
    snprintf(want, sizeof want, "%s %lld %lld 0 %s api ? gateway", redlease_lock_token(r.lk), (long long)getpid(),
             (long long)(FAKE_SERVER_CLOCK_MS + f.now), f.c->set.identity.host);
    if (c) CHECK_STR(c->argv[2], want);
    end(&f);
}

/* A server that will not say its time (an ACL without TIME) still serves:
 * the record says 0. */
static void test_time_refused_is_no_failure(void)
{
    fake f;
    fake_attach(&f, NULL);
    fake_connect_raw(&f);
    CHECK(cmd_is(&f, "PING", NULL));
    fake_reply_status(&f, "PONG");
    CHECK(cmd_is(&f, "TIME", NULL));
    fake_reply_err(&f, "NOPERM User app has no permissions to run the 'time' command");
    fake_answer_handshake(&f); /* the probe */
    fake_run(&f);
    CHECK(redlease_client_connected(f.c));
    rec r = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    char want[128];
    snprintf(want, sizeof want, "%s %lld 0 0 ", redlease_lock_token(r.lk), (long long)getpid());
    CHECK(c && strncmp(c->argv[2], want, strlen(want)) == 0);
    end(&f);
}

/* A client on a server with DELIFEQ and SET IFEQ. */
static void start_native(fake *f)
{
    fake_attach(f, NULL);
    f->native = RDL_NATIVE_DELIFEQ;
    fake_connect(f);
}

/* A fenced lease's key holds the fence its script minted: the renewal and
 * the release by the server's own commands send that value whole. */
static void test_fence_in_the_value_the_holder_sends(void)
{
    fake f;
    start_native(&f);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    o.fencing = 1;
    int64_t t0 = hold(&f, &r, "job", o); /* the script answered fence 7 */
    CHECK_EQ(redlease_lock_fence(r.lk), 7);
    char want[256];
    snprintf(want, sizeof want, "%s %lld %lld 7 %s %s", redlease_lock_token(r.lk), (long long)getpid(),
             (long long)(FAKE_SERVER_CLOCK_MS + t0), f.c->set.identity.host, f.c->set.identity.label);
    fake_until(&f, t0 + 1000);
    fake_cmd *c = fake_peek(&f);
    CHECK(c && c->argc == 7 && strcmp(c->argv[0], "SET") == 0 && strcmp(c->argv[3], "IFEQ") == 0);
    if (c) CHECK_STR(c->argv[4], want);
    fake_reply_status(&f, "OK");
    fake_run(&f);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    c = fake_peek(&f);
    CHECK(cmd_is(&f, "DELIFEQ", "lock:{job}"));
    if (c) CHECK_STR(c->argv[2], want);
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

/* An acquire that ended without the lease deletes what it may have
 * written by the script, on a server with DELIFEQ too: which value that
 * attempt wrote is not known, its token is. */
static void test_drop_goes_as_the_script(void)
{
    fake f;
    start_native(&f);
    rec r = {0};
    redlease_lock_options o = opts(3000);
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "SET", "lock:{job}"));
    CHECK_EQ(release(&r), REDLEASE_OK); /* given up with the SET unanswered */
    fake_run(&f);
    fake_reply_status(&f, "OK"); /* it took the key after all */
    fake_run(&f);
    fake_cmd *c = fake_peek(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE)));
    if (c) CHECK_STR(c->argv[4], redlease_lock_token(r.lk));
    fake_reply_int(&f, 1);
    fake_run(&f);
    end(&f);
}

/* A fenced acquire's first attempt times out and a second goes out; the
 * first's late fence is taken, and the second, on the wire behind it,
 * reclaims the key with a new fence: the key holds our token with another
 * record than the holder rebuilds. The renewal's SET IFEQ then says "not
 * ours", which the script (comparing the token) is asked again before it
 * means a loss; the lease then goes by the scripts. */
static void test_native_not_ours_asked_again_of_the_script(void)
{
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = 200;
    fake f;
    fake_attach(&f, &co);
    f.native = RDL_NATIVE_DELIFEQ;
    fake_connect(&f);
    redlease_client_set_rng(f.c, rng_max, NULL);
    rec r = {0};
    redlease_lock_options o = opts(5000);
    o.fencing = 1;
    o.wait_ms = 10000;
    o.wait_retry_base_ms = 50;
    CHECK_EQ(start_lock(&f, &r, "job", &o), REDLEASE_OK);
    fake_run(&f);
    fake_advance(&f, 200); /* the first attempt timed out */
    fake_advance(&f, 60);  /* the second is out */
    CHECK_EQ(fake_pending(&f), 2);
    fake_reply_int(&f, 7); /* the first's late fence: taken */
    fake_run(&f);
    CHECK_EQ(r.acq_status, REDLEASE_OK);
    CHECK_EQ(redlease_lock_fence(r.lk), 7);
    fake_reply_int(&f, 8); /* the second ran after it: the key's record says 8 */
    fake_run(&f);
    for (int i = 0; i < 500 && !fake_pending(&f); i++) fake_advance(&f, 10);
    CHECK(cmd_is(&f, "SET", "lock:{job}")); /* the renewal, native */
    fake_reply_nil(&f);                      /* not that value */
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* asked again by the token */
    CHECK_EQ(r.lost_calls, 0);
    fake_reply_int(&f, 1); /* ours */
    fake_run(&f);
    CHECK_EQ(r.lost_calls, 0);
    CHECK(redlease_lock_held(r.lk));
    for (int i = 0; i < 500 && !fake_pending(&f); i++) fake_advance(&f, 10);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RENEW))); /* the next renewal: the script */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(release(&r), REDLEASE_OK);
    fake_run(&f);
    CHECK(cmd_is(&f, "EVALSHA", fake_sha(RDL_SCRIPT_RELEASE))); /* and the release */
    fake_reply_int(&f, 1);
    fake_run(&f);
    CHECK_EQ(r.rel_status, REDLEASE_OK);
    end(&f);
}

int main(int argc, char **argv)
{
    static const test_case tests[] = {
        TEST_CASE(test_label_cleaned_for_display), TEST_CASE(test_record_format), TEST_CASE(test_record_parsed), TEST_CASE(test_record_age),
        TEST_CASE(test_label_option_bounded), TEST_CASE(test_record_rides_the_acquire),
        TEST_CASE(test_time_refused_is_no_failure), TEST_CASE(test_fence_in_the_value_the_holder_sends),
        TEST_CASE(test_drop_goes_as_the_script), TEST_CASE(test_native_not_ours_asked_again_of_the_script),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
