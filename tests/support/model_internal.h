/* SPDX-License-Identifier: MIT */
/* What the files of the model check (model.h) share: model.c (the
 * driver's choices, the leases, the checks, the steps), model_redis.c (the
 * model's Redis: its keys, queues, semaphores, shared holders and the
 * commands it runs) and model_pubsub.c (the client's subscriber link).
 * Each name is said at its definition. They keep the short names they had
 * when the model was one file: only the model's own programs (test_model,
 * replay_model, fuzz_model) link them, and none is a library's (rdl_,
 * redlease_). */
#ifndef REDLEASE_MODEL_INTERNAL_H
#define REDLEASE_MODEL_INTERNAL_H
#include <stdint.h>
#include <string.h>

#include "fake.h"
#include "identity.h"
#include "model.h"

/* ------------------------------------------------------------ model.c */

#define NL 12
typedef struct lease {
    redlease_lock *lk;
    int alive, acq, acq_ok, lost, rel, release_called, in_call;
    int saw_busy, saw_acquire_error, saw_renew_zero; /* replies delivered to it */
    int delete_failed;    /* a compare-and-delete of its token was answered an error */
    int release_kindless; /* a semaphore's or shared holder's release of it ran with the kind key
                           * gone (lost): the script answers 0 before it looks, its holder stays
                           * to its deadline */
    int acq_done;         /* its acquire ended (ACQUIRED or ACQUIRE_FAILED): it waits no more */
    int failed_ev;        /* ACQUIRE_FAILED, or it joined a lease: its drop (if any) is behind its
                           * attempts */
    int drop_ran;         /* a compare-and-delete of its token ran after that */
    int deleted;          /* a compare-and-delete of its token ran and deleted its key */
    int fail_links;       /* links made when it failed */
    int fail_up;          /* ...and whether the link was up then */
    int lost_ev;          /* EV_LOST came */
    int joined;           /* its token has been placed in a queue */
    int limit, weight;    /* a semaphore's permits and its share of them; limit 0: a mutex */
    int shared;           /* a shared holder (limit 0, weight 1); a mutex of a shared
                           * resource is its exclusive holder */
    int fenced;           /* it asked for a fence */
    int saw_kind;         /* an acquire of it was answered KIND (the resource is another kind) */
    int kind_ends;        /* ...to its live attempt: definite, the acquire ends EKIND */
    int64_t attempt_at;   /* its latest attempt started (EV_ATTEMPT), and is timed from */
    int attempt_failed;   /* ...and has failed (EV_ATTEMPT_FAILED) */
    int res;              /* its resource: lock:{r0} or lock:{r1} */
    int64_t sleep_max;    /* the longest a waiting attempt of it sleeps (the quiet phase) */
    int64_t ttl;
    int64_t deadline;     /* the local deadline its events reported, or -1 */
    int64_t exec_until;   /* what its confirmations executed so far could give */
    int64_t exempt_until; /* its key was wiped: held() without it is excused until then, */
    int exempt_link;      /* on the link it was confirmed on (redlease.h: held() is 0 after a
                           * reconnect until a renewal confirms it again) */
    /* re-entry (docs/design.md, section 13) */
    int reentrant;        /* it asked for it */
    int wopt;             /* the weight it asked for (0: 1), which a handle taking its terms asks for */
    int attempts;         /* EV_ATTEMPTs of its own (before it joined, if it did) */
    struct lease *of;     /* it joined this lease (its first handle's slot): its token, deadline,
                           * confirmations, exemption and losses are that one's; its own token
                           * (token) stays that of its own attempts and their drop */
    const struct lease *beside; /* it took the terms of this handle, still acquiring then */
    int had_joiners;      /* a first handle: some handle joined its lease */
    uint64_t fence;       /* the fence its on_acquire(OK) reported */
    int others_held;      /* when its release was asked for, another handle of its lease held it:
                           * on_release(OK) with nothing deleted */
    char token[40], key[64];
} lease;

/* The lease a handle holds by: the one it joined, or its own. */
static inline lease *lease_of(const lease *l) { return l->of ? l->of : (lease *)l; }

/* A semaphore's or a shared holder: it holds in a set of holders, not
 * the lock key. */
static inline int in_holders(const lease *l) { return l->limit || l->shared; }

int R(int n);
extern fake F;
extern int64_t command_timeout;
/* A mutex's key value val is tok's: the token alone (handed over) or
 * with a record after it, as the scripts' owns() decides. */
static inline int owns_val(const char *val, const char *tok)
{
    size_t n = strlen(tok);
    return strncmp(val, tok, n) == 0 && (val[n] == '\0' || val[n] == ' ');
}
void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t contract_drift(int64_t ttl);
int64_t contract_until(int64_t t0, int64_t ttl);
extern lease L[NL];
lease *by_token(const char *token);
lease *by_token_any(const char *token);
int lease_active(const lease *l);
void note_deleted(lease *l);

/* ------------------------------------------------------ model_redis.c */

typedef struct kv {
    char key[64], val[RDL_VALUE_MAX + 1]; /* a mutex's: "TOKEN RECORD" (src/identity.h) */
    int64_t exp;
    int used;
    int handed; /* set by a queue's hand-over, not by its holder's own command */
} kv;

/* A resource's queue: the sorted set KEYS[2] (members in score order,
 * scores counting up) and the hash KEYS[3] (token -> deadline claim
 * channel), each a key of its own, gone when empty, with a TTL (expiry by
 * our clock, or -1) that the joins raise to the entry's life. A shared
 * waiter's channel is written with "{" in front, as the Lua writes it.
 * Its elements, as a semaphore's, start with their token: tok_idx() in
 * model_redis.c finds them by it. */
#define NQ 24
typedef struct qmember {
    char tok[40];
    long long score;
} qmember;
typedef struct qentry {
    char tok[40];
    int64_t deadline, claim; /* deadline: the server's TIME */
    char ch[96];
    int reminded; /* not the server's: a reminder cut it to a claim, and no join since
                   * (the quiet phase counts a reminded marked head as served) */
} qentry;

/* A shared waiter's entry: its channel written with "{" in front; a
 * semaphore waiter's: "}". Either is admitted by its own acquire, never
 * handed the key (marked_entry). */
static inline int shared_entry(const qentry *w) { return w->ch[0] == '{'; }
static inline int marked_entry(const qentry *w) { return w->ch[0] == '{' || w->ch[0] == '}'; }

typedef struct queue {
    qmember z[NQ];
    int nz;
    int64_t zexp;
    qentry w[NQ];
    int nw;
    int64_t wexp;
} queue;

extern const char *const errors[5]; /* the error replies the model answers */
#define N_ERRORS ((int)(sizeof errors / sizeof errors[0]))
extern kv db[16];
extern long long fence_ctr;
extern int noscript_mode;
extern int fast_server;
extern int links;
extern int native;
extern int native_refused;
kv *find(const char *k, int64_t now);
void put(const char *k, const char *v, int64_t exp);
extern queue Q[2];
extern int64_t srv_skew;
extern int strangers;
void qexpire(queue *q);
int live_entry(queue *q, const char *tok);
const qentry *live_head(int res);
/* A resource's semaphore or shared holders (docs/design.md, section 12):
 * its kind is the lock key's value ("semaphore N" or "shared", in db);
 * beside it the sorted set of holders (token -> deadline, the server's
 * TIME) and the hash of their weights (token -> weight, a shared holder's
 * 1, and "used"), each a key of its own with a TTL (expiry by our clock,
 * or -1 for none), gone when empty. */
typedef struct sem_holder {
    char tok[40];
    int64_t deadline;
} sem_holder;
typedef struct sem_weight {
    char tok[40];
    int weight;
} sem_weight;
typedef struct sem {
    sem_holder h[NL];
    int nh;
    int64_t hexp;
    sem_weight w[NL];
    int nw;
    int has_used; /* the hash has its "used" field */
    long long used;
    int64_t wexp;
} sem;
extern sem S[2];
void excuse(lease *l);
int holder_counts(const lease *l);
int sem_holder_live(int res, const char *tok);
void step_server_clock(int64_t d);
int64_t next_change(int64_t until);
extern int xh;
extern int next_error;
int pending_exec(void);
void execute(void);
void deliver(void);
void execute_and_deliver(void);
void reconnect(void);
void wipe(void);
void stranger_joins(void);
void stranger_takes(void);

/* ----------------------------------------------------- model_pubsub.c */

/* What the server pushed on the client's subscriber link and the client
 * has not read yet, oldest first: the SUBSCRIBE's confirmation (or its
 * refusal) and the words published to its channel after it. They belong
 * to one link (its connect count): a broken link loses them. */
enum { PUSH_CONFIRM, PUSH_REFUSED, PUSH_WORD };
typedef struct push {
    int kind;
    int link;   /* F.side.connects when pushed */
    int forged; /* a word the queue never published */
    char ch[96], text[128];
} push;
#define NPUSH 64

extern push fifo[NPUSH];
extern int nfifo;
extern int sub_on;
extern int sub_link;
extern int sub_idx;
extern int pub_refused;
void waker_sync(void);
void link_break(void);
int stranger_token(const char *t);
int publish(const char *ch, const char *text);
extern int quieting;
extern int told_g[NL];
int sub_pending(void);
void srv_subscribe(int may_refuse);
void read_pushes(int k, int mode);
void link_connect(void);
void forge_word(void);

#endif
