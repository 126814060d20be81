/* SPDX-License-Identifier: MIT */
/* The model check of the core (model.c), with its choices injected: a
 * PRNG in test_model.c (randomized, one run per seed), the fuzzer's input
 * in tests/fuzz/fuzz_model.c (coverage-guided). */
#ifndef REDLEASE_MODEL_H
#define REDLEASE_MODEL_H
#include <stdint.h>

typedef struct model_driver {
    /* The next choice, in [0, n) (1 <= n <= 65536). */
    uint32_t (*choose)(void *ctx, uint32_t n);
    /* 32 bits for the library's backoff jitter (redlease_client_set_rng). */
    uint32_t (*bits)(void *ctx);
    /* 0 ends the steps early (the drain and the end checks still run);
     * NULL: the steps run to max_steps. */
    int (*more)(void *ctx);
    /* An invariant does not hold; what is a one-line description. The run
     * goes on after it returns. */
    void (*violated)(void *ctx, const char *what);
    void *ctx;
    int max_steps;
} model_driver;

/* Runs one program of at most d->max_steps steps, then releases every
 * lease, lets the client settle and frees it. The counting allocator
 * (fake_alloc_install) must be installed. Returns the number of
 * violations (each also reported through d->violated). */
int model_run(const model_driver *d);

/* What the runs reached, summed over every model_run() (test_model checks
 * that its seeds reach each of them, so the model cannot quietly stop
 * covering a path). */
typedef struct model_reach {
    long lost[5];         /* on_lost calls by reason (enum redlease_lost_reason) */
    long late_acquire_ok; /* acquire OKs delivered after the validity they could give */
    long late_renewal;    /* renewal confirmations delivered after the lease's deadline */
    long error_replies;   /* commands answered with an error instead of running */
    long acquire_eredis;  /* on_acquire(REDLEASE_EREDIS) */
    long renew_eredis;    /* renewals that failed with REDLEASE_EREDIS */
    long wipes;           /* keys lost: restarts and evictions */
    long held_on_wiped;   /* held() 1 while the key was gone after a wipe (exempted) */
    long closes;          /* close callbacks */
    long frees_live;      /* redlease_client_free() with live handles */
    long frees_closing;   /* redlease_client_free() during a graceful close */
    long native_commands; /* DELIFEQ and SET IFEQ run instead of the scripts */
    long native_refused;  /* ...answered "unknown command" by a server that had said it has them */
    /* the queue (docs/design.md, section 11) */
    long queue_takes;     /* queued acquires that took the lock */
    long handovers;       /* free locks handed to the live head (by a release or an acquire) */
    long handovers_heard; /* ... whose "g" a listener had (one "c" word follows, not three) */
    long unordered_wakes; /* unordered releases that told the live head to check ("c TOKEN 0") */
    long fast_releases;   /* queue releases with nobody queued: the plain compare-and-delete */
    long release_probes;  /* queue releases in the two-key form (a holder that met no queue) */
    long probes_refused;  /* ...that found a queue: -1, and the whole release followed */
    long entries_expired; /* dead entries dropped from a queue's head */
    long rejoined;        /* waiters placed in a queue again after their place was gone */
    long words_delivered; /* words the client's subscriber read */
    long words_found;     /* ...that found a waiting handle */
    long words_lost;      /* words for the client's channel nobody read: not subscribed, PUBLISH
                             refused, the link broken with them unread */
    long forged_words;    /* words the queue never published (strangers', finished handles',
                             garbage, false hints) */
    long subscribe_refused; /* SUBSCRIBEs an ACL refused */
    long quiet_served;    /* free locks taken with a handle waiting, in the quiet phase */
    long quiet_granted;   /* "g" read by a waiting handle in the quiet phase */
    long quiet_entered;   /* shared holders that entered, in the quiet phase, with the way open */
    /* the semaphore (docs/design.md, section 12) */
    long sem_admitted;    /* holders admitted (or admitted again: reclaimed) */
    long sem_reclaimed;   /* ...that found their own token: an earlier attempt was admitted */
    long sem_full;        /* acquires answered full */
    long sem_pruned;      /* holders dropped at their deadline by a script */
    long sem_released;    /* holders that gave their weight back */
    long sem_behind;      /* acquires not admitted for a live waiter ahead (strict order) */
    long sem_wakes;       /* queue heads woken by a release or an admission (docs 12.5) */
    long fences_checked;  /* fences of acquisitions checked for order (any kind) */
    long kind_refused[3]; /* acquires answered KIND: [0] a mutex's, [1] a semaphore's, [2] a
                             shared holder's */
    long sem_on_shared;   /* ...a semaphore's of them that found shared holders */
    long acquire_ekind;   /* on_acquire(REDLEASE_EKIND) */
    long sem_excused;     /* a semaphore's holder held with its count gone (a key lost, the
                             server's clock stepped forward): excused, as held_on_wiped */
    /* shared and exclusive holders (docs/design.md, 12.4) */
    long shared_admitted; /* shared holders admitted (or admitted again: reclaimed) */
    long shared_reclaimed; /* ...that found their own token: an earlier attempt was admitted */
    long shared_busy;     /* shared acquires not admitted beside an exclusive holder */
    long shared_behind;   /* shared acquires not admitted past a live exclusive waiter ahead */
    long shared_released; /* shared holders that left the set by their release */
    long excl_on_shared;  /* a mutex's acquires that found shared holders (busy, or waiting) */
    long shared_handed;   /* free locks handed to an exclusive head by a shared holder's script */
    long shared_reminded; /* shared heads reminded instead of handed a lock */
    long shared_excused;  /* a shared holder held with its set or kind gone: excused */
    /* re-entry (docs/design.md, section 13) */
    long joins;           /* acquires that joined a lease of another handle of the client */
    long joins_waited;    /* ...after attempts of their own (started while the lease was being
                             acquired, or busy) */
    long joins_raced;     /* ...by a handle started while the lease's first handle was acquiring */
    long joins_carried;   /* ...to a lease whose first handle its user had released */
    long joined_early[2]; /* releases with another handle of the lease holding it (nothing
                             deleted): [0] a joined handle's, [1] the first's (it carries on) */
    long joined_last[2];  /* releases of a joined lease's last handle, its key deleted: [0] a joined
                             handle's (the first deletes for it), [1] the first's */
    long joined_lost[5];  /* on_lost of joined handles by reason */
} model_reach;
extern model_reach model_reached;

/* How a choice is written as bytes (fuzz_model reads them, test_model can
 * record a seed's choices as a fuzz_model input): big-endian, as many
 * bytes as n needs; bits() takes MODEL_BITS_BYTES. */
static inline int model_choice_bytes(uint32_t n) { return n <= 1 ? 0 : n <= 256 ? 1 : 2; }
#define MODEL_BITS_BYTES 4

#endif
