/* Jittered exponential backoff, shared by acquire retries and reconnects.
 * Randomness comes from an injected generator so tests can pin sequences. */
#ifndef REDLEASE_BACKOFF_H
#define REDLEASE_BACKOFF_H
#include <stdint.h>

typedef struct rl_rng {
    uint32_t (*fn)(void *arg);
    void *arg;
} rl_rng;

/* A uniform integer in [lo, hi] (hi >= lo). */
int64_t rl_rng_between(const rl_rng *r, int64_t lo, int64_t hi);

typedef struct rl_backoff {
    int jitter;    /* enum redlease_jitter */
    int64_t base;  /* > 0 */
    int64_t max;   /* >= base */
    unsigned step; /* delays handed out so far */
    int64_t prev;  /* previous delay (decorrelated jitter) */
} rl_backoff;

void rl_backoff_init(rl_backoff *b, int jitter, int64_t base, int64_t max);
/* The next delay in ms, in [0, max]. */
int64_t rl_backoff_next(rl_backoff *b, const rl_rng *r);

/* The default generator: xorshift64* seeded from the OS. */
typedef struct rl_xorshift {
    uint64_t s;
} rl_xorshift;
void rl_xorshift_seed(rl_xorshift *x);
uint32_t rl_xorshift_next(void *x);

#endif
