/* SPDX-License-Identifier: MIT */
#include "backoff.h"

#include "redlease.h"
#include "token.h"

int64_t rdl_rng_between(const rdl_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    /* 64 random bits, scaled (Lemire): no modulo bias worth speaking of for
     * delays of any realistic size. */
    uint64_t x = ((uint64_t)r->fn(r->arg) << 32) | r->fn(r->arg);
    unsigned __int128 m = (unsigned __int128)x * span;
    return lo + (int64_t)(m >> 64);
}

void rdl_backoff_init(rdl_backoff *b, int jitter, int64_t base, int64_t max)
{
    b->jitter = jitter;
    b->base = base;
    b->max = max;
    b->step = 0;
    b->prev = base;
}

int64_t rdl_backoff_next(rdl_backoff *b, const rdl_rng *r)
{
    int64_t d;
    if (b->jitter == REDLEASE_JITTER_DECORRELATED) {
        int64_t hi = b->prev > b->max / 3 ? b->max : b->prev * 3;
        d = rdl_rng_between(r, b->base, hi < b->base ? b->base : hi);
    } else {
        /* U[0, min(max, base * 2^n)]: the cap stops at max before the draw.
         * Clamping the draw instead would pile the delays up on max. */
        int64_t cap = b->base;
        for (unsigned i = 0; i < b->step && cap < b->max; i++) cap *= 2;
        d = rdl_rng_between(r, 0, cap < b->max ? cap : b->max);
    }
    b->prev = d;
    b->step++;
    return d;
}

void rdl_xorshift_seed(rdl_xorshift *x)
{
    unsigned char b[8];
    uint64_t s = 0;
    if (rdl_random_bytes(b, sizeof b) == 0)
        for (int i = 0; i < 8; i++) s = s << 8 | b[i];
    x->s = s ? s : 0x9E3779B97F4A7C15ull;
}

uint32_t rdl_xorshift_next(void *p)
{
    rdl_xorshift *x = p;
    x->s ^= x->s >> 12;
    x->s ^= x->s << 25;
    x->s ^= x->s >> 27;
    return (uint32_t)((x->s * 0x2545F4914F6CDD1Dull) >> 32);
}
