/* SPDX-License-Identifier: MIT */
/* Fuzz target: arbitrary RESP bytes and arbitrary reply orders and timings
 * through the core's reply handling.
 *
 * The input is a program for the unit-test rig (tests/support/fake.h: a
 * scripted transport on a virtual clock). Each step's first byte picks an
 * action: move the clock, feed RESP bytes to a hiredis redisReader (each
 * reply it completes answers the oldest pending command, as hiredis would
 * deliver it), answer plausibly (WAIT and WAITAOF with enough replicas or
 * too few), break the connection, (a handle may be a mutex, a semaphore
 * holder or a shared one), finish a reconnect
 * (with or without the handshake answered, or failing), acquire or release
 * a handle, free the client. Callbacks and the event hook may release
 * handles or free the client, as the API allows.
 *
 * Checked (abort, so libFuzzer reports the input):
 *  - on_acquire exactly once and first; on_lost at most once, only after
 *    on_acquire(OK) and before on_release; on_release exactly once for a
 *    released handle and last; none inside the call that started it;
 *  - held() is 0 after on_lost (inside on_lost too) and after a failed
 *    acquire; remaining_ms() is 0 exactly when held() is 0;
 *  - the client can always be freed, and then nothing is left allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "fake.h"
#include "fuzz_input.h"
#include "scripts.h"

#define NL 4
#define MAX_STEPS 400 /* keeps each run short whatever the input */

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_replies: %s:%d: violated: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                              \
            abort();                                                                     \
        }                                                                                \
    } while (0)

enum reaction { REACT_NONE, REACT_RELEASE_ON_ACQUIRE, REACT_RELEASE_ON_LOST, REACT_FREE_ON_LOST };

typedef struct lease {
    redlease_lock *lk;
    int alive, acq, acq_ok, lost, rel, release_called, in_call, reaction;
} lease;

static fake F;
static lease L[NL];
static fuzz_input in;
static redisReader *reader;
static int hook_mode; /* 0 none; 1 the hook may release; 2 it may also free */
static uint64_t rng_state;
static int freeing; /* inside free_client() */
static redlease_client *zombie; /* freed, its teardown not yet run */
static int64_t command_timeout; /* the client's */

/* A client freed from inside the library is torn down when the library's
 * outermost call returns (inside its timer), or else by its timer, which it
 * must have asked for at once: fire it, as a loop would. */
static void finish_zombie(void)
{
    if (!zombie) return;
    if (!F.detached) {
        EXPECT(F.timer_at >= 0 && F.timer_at <= F.now);
        F.c = zombie;
        fake_run(&F);
    }
    EXPECT(F.detached == 1);
    F.c = NULL;
    zombie = NULL;
    fake_free(&F);
}

static uint32_t rng_fn(void *arg)
{
    (void)arg;
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

/* ------------------------------------------------------------ actions */

static void free_client(void)
{
    if (!F.c) return;
    if (freeing) { /* from a callback that the free itself runs */
        redlease_client_free(F.c);
        return;
    }
    redlease_client *c = F.c;
    freeing = 1;
    redlease_client_free(c);
    freeing = 0;
    F.c = NULL;
    /* Freed from inside the library (the event hook): the teardown waits
     * for the end of the library's call, or for the timer, and the fake's
     * commands must wait with it (the teardown fails them). */
    if (!F.detached)
        zombie = c;
    else
        fake_free(&F); /* F.c is NULL: frees the commands only */
    for (int i = 0; i < NL; i++) {
        /* free ends every handle: released ones got on_release by now */
        EXPECT(!L[i].alive || !L[i].release_called);
        EXPECT(!L[i].alive || L[i].acq);
        L[i].alive = 0;
    }
}

static void cb_rel(redlease_lock *lk, int st, void *arg);

static void release_one(lease *l)
{
    if (!F.c || !l->alive || l->release_called) return;
    l->release_called = 1; /* first: callbacks may run inside the call */
    l->in_call++;
    int rc = redlease_release(l->lk, cb_rel, l);
    l->in_call--;
    if (freeing && rc == REDLEASE_ECANCELED) { /* as documented: free ends it */
        l->release_called = 0;
        return;
    }
    EXPECT(rc == REDLEASE_OK);
}

static void check_not_held(const lease *l)
{
    EXPECT(!redlease_lock_held(l->lk));
    EXPECT(redlease_lock_remaining_ms(l->lk) == 0);
}

static void cb_acq(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    /* Not inside the call that started it, unless the client is being
     * freed (free ends every handle before it returns, wherever it is). */
    EXPECT(l->lk == lk && (!l->in_call || freeing));
    EXPECT(l->alive && !l->acq && !l->rel);
    /* no TLS on the fake: ENOTSUP and ETLS cannot come; EREPLICAS can,
     * and EKIND (a WRONGTYPE reply) */
    EXPECT(((st <= 0 && st >= REDLEASE_ECONFIG) || st == REDLEASE_EREPLICAS || st == REDLEASE_EKIND) &&
           st != REDLEASE_EINVAL && st != REDLEASE_ESYS && st != REDLEASE_ENOTHELD);
    l->acq = 1;
    l->acq_ok = st == REDLEASE_OK;
    if (!l->acq_ok) check_not_held(l);
    if (l->reaction == REACT_RELEASE_ON_ACQUIRE) release_one(l);
}

static void cb_lost(redlease_lock *lk, int reason, void *arg)
{
    lease *l = arg;
    EXPECT(l->lk == lk);
    EXPECT(l->acq_ok && !l->lost && !l->rel);
    EXPECT(reason >= REDLEASE_LOST_EXPIRED && reason <= REDLEASE_LOST_CLOSED);
    l->lost = 1;
    check_not_held(l);
    if (l->reaction == REACT_RELEASE_ON_LOST) release_one(l);
    if (l->reaction == REACT_FREE_ON_LOST) free_client();
}

static void cb_rel(redlease_lock *lk, int st, void *arg)
{
    lease *l = arg;
    EXPECT(l->lk == lk && (!l->in_call || freeing));
    EXPECT(l->alive && l->acq && l->release_called && !l->rel);
    EXPECT(st <= 0 && st >= REDLEASE_ECONFIG && st != REDLEASE_EINVAL && st != REDLEASE_ESYS);
    l->rel = 1;
    l->alive = 0;
}

/* The event hook runs synchronously inside the library: a release or free
 * from here is a call from inside the core, as the API allows. */
static void hook(redlease_client *c, const redlease_event *ev, void *arg)
{
    (void)c, (void)ev, (void)arg;
    if (!hook_mode) return;
    uint8_t b = take_u8(&in);
    if (b < NL) release_one(&L[b]);
    if (b == 0xff && hook_mode == 2) free_client();
}

static void acquire_one(lease *l)
{
    if (!F.c || l->alive) return;
    uint8_t flags = take_u8(&in);
    redlease_lock_options o;
    redlease_lock_options_init(&o);
    o.ttl_ms = 10 + take_u16(&in) % 5000;
    switch (flags & 3) {
    case 0: o.renew_interval_ms = REDLEASE_RENEW_OFF; break;
    case 1: o.renew_interval_ms = 0; break;
    default: o.renew_interval_ms = 1 + take_u16(&in) % (o.ttl_ms - 1); break;
    }
    switch (flags >> 2 & 3) {
    case 0: o.wait_ms = 0; break;
    case 1: o.wait_ms = REDLEASE_WAIT_FOREVER; break;
    default: o.wait_ms = take_u16(&in); break;
    }
    o.wait_retry_base_ms = 1 + take_u8(&in);
    o.wait_retry_max_ms = o.wait_retry_base_ms + take_u8(&in) * 4;
    o.wait_max_attempts = flags & 0x10 ? take_u8(&in) % 5 : 0;
    o.max_hold_ms = flags & 0x20 ? take_u16(&in) : 0;
    o.fencing = flags >> 6 & 1;
    o.wait_jitter = flags >> 7;
    memset(l, 0, sizeof *l);
    /* The reaction byte's low bits; its high bits (0 in the older seeds:
     * neither) ask for replication acknowledgement, bits 2-3 both set: 4-5
     * replica_acks, 6 replica_fsync, 7 replica_scope; or for another kind,
     * bits 2-3 = 2: 4-5 the limit of a semaphore (0: a shared holder), 6
     * a weight of 2 where the limit allows. */
    uint8_t react = take_u8(&in);
    l->reaction = react % 4;
    if ((react >> 2 & 3) == 3) {
        o.replica_acks = react >> 4 & 3;
        o.replica_fsync = react >> 6 & 1;
        o.replica_scope = react >> 7; /* 1: REDLEASE_REPLICA_SCOPE_ACQUIRE */
        o.replica_timeout_ms = command_timeout / 4; /* below the command timeout */
    } else if ((react >> 2 & 3) == 2) {
        o.limit = react >> 4 & 3;
        o.shared = o.limit == 0;
        o.weight = react >> 6 & 1 && o.limit >= 2 ? 2 : 0;
    }
    l->alive = 1;
    l->in_call = 1;
    char res[8];
    snprintf(res, sizeof res, "r%d", (int)(l - L) % 2); /* two handles per resource */
    int rc = redlease_acquire(F.c, res, &o, cb_acq, cb_lost, l, &l->lk);
    l->in_call = 0;
    EXPECT(rc == REDLEASE_OK); /* the options are valid by construction */
}

static void reset_reader(void)
{
    if (reader) redisReaderFree(reader);
    reader = redisReaderCreate();
    EXPECT(reader != NULL);
}

/* Feed RESP bytes; every complete reply answers the oldest command (a reply
 * with nothing pending is dropped). A protocol error breaks the
 * connection, as hiredis does. */
static void feed(void)
{
    size_t len;
    const uint8_t *p = take_bytes(&in, take_u8(&in), &len);
    if (redisReaderFeed(reader, (const char *)p, len) != REDIS_OK) goto broken;
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(reader, &reply) != REDIS_OK) goto broken;
        if (!reply) break;
        if (F.c && fake_peek(&F)) fake_reply_raw(&F, reply);
        freeReplyObject(reply);
    }
    fake_run(&F);
    return;
broken:
    reset_reader();
    if (F.c && F.connected) fake_break(&F);
}

/* A plausible answer to the oldest command: the happy path, so the fuzzer
 * reaches the held and renewing states quickly. */
static void answer_good(void)
{
    fake_cmd *cmd = fake_peek(&F);
    if (!F.c || !cmd) return;
    if (strcmp(cmd->argv[0], "SET") == 0) {
        fake_reply_status(&F, "OK");
    } else if (strcmp(cmd->argv[0], "SCRIPT") == 0) {
        int i = 0;
        while (i < RDL_SCRIPT_COUNT - 1 && strcmp(cmd->argv[2], rdl_script_src[i]) != 0) i++;
        fake_reply_str(&F, fake_sha(i));
    } else if (strcmp(cmd->argv[0], "EVALSHA") == 0 || strcmp(cmd->argv[0], "EVAL") == 0) {
        fake_reply_int(&F, 1 + take_u8(&in) % 3);
    } else if (strcmp(cmd->argv[0], "WAIT") == 0) {
        fake_reply_int(&F, take_u8(&in) % 4); /* enough replicas, or too few */
    } else if (strcmp(cmd->argv[0], "WAITAOF") == 0) {
        long long counts[2] = {take_u8(&in) % 2, take_u8(&in) % 4};
        fake_reply_ints(&F, 2, counts);
    } else {
        fake_reply_status(&F, "OK");
    }
    fake_run(&F);
}

static void reconnect(void)
{
    if (!F.c || !F.connecting) return;
    reset_reader(); /* a new connection starts a new stream */
    switch (take_u8(&in) % 3) {
    case 0: fake_connect(&F); break;
    case 1: fake_connect_raw(&F); break;
    default: fake_connect_fail(&F); break;
    }
    fake_run(&F);
}

static void check_held(void)
{
    for (int i = 0; F.c && i < NL; i++) {
        const lease *l = &L[i];
        if (!l->alive) continue;
        int held = redlease_lock_held(l->lk);
        EXPECT(held == 0 || held == 1);
        if (l->lost || (l->acq && !l->acq_ok)) check_not_held(l);
        if (held) EXPECT(redlease_lock_remaining_ms(l->lk) > 0);
    }
}

static void step(void)
{
    switch (take_u8(&in) % 10) {
    case 0: fake_advance(&F, take_u8(&in)); break;
    case 1: /* the process was paused: the clock jumps */
        F.now += take_u16(&in);
        fake_run(&F);
        break;
    case 2: feed(); break;
    case 3:
        if (F.connected) fake_break(&F);
        reset_reader();
        fake_run(&F);
        break;
    case 4: reconnect(); break;
    case 5: acquire_one(&L[take_u8(&in) % NL]); break;
    case 6: release_one(&L[take_u8(&in) % NL]); break;
    case 7: answer_good(); break;
    case 8: fake_advance(&F, 1); break;
    default: free_client(); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int installed;
    if (!installed) {
        fake_alloc_install();
        installed = 1;
    }
    in.p = data;
    in.n = size;
    memset(L, 0, sizeof L);
    rng_state = 0x9e3779b97f4a7c15u;
    hook_mode = take_u8(&in) % 3;
    redlease_client_options co;
    redlease_client_options_init(&co);
    co.command_timeout_ms = command_timeout = 10 + take_u8(&in) * 4;
    fake_start(&F, &co);
    EXPECT(F.c != NULL);
    redlease_client_set_rng(F.c, rng_fn, NULL);
    redlease_client_set_event_cb(F.c, hook, NULL);
    reset_reader();
    for (int s = 0; s < MAX_STEPS && F.c && fuzz_left(&in); s++) {
        step();
        finish_zombie();
        check_held();
    }
    free_client();
    finish_zombie();
    redisReaderFree(reader);
    reader = NULL;
    EXPECT(fake_alloc_live() == 0);
    return 0;
}
