/* SPDX-License-Identifier: MIT */
/* Lease tokens: 128 bits from a CSPRNG (ChaCha20, fast key erasure) that
 * the OS seeds, as 32 hex digits (src/token.c says how and why). */
#ifndef REDLEASE_TOKEN_H
#define REDLEASE_TOKEN_H
#include <stddef.h>

#define RDL_TOKEN_BYTES 16
#define RDL_TOKEN_LEN (2 * RDL_TOKEN_BYTES)

/* ChaCha20 blocks per refill: 32 bytes of the first are the next key, the
 * other 224 bytes 14 tokens. */
#define RDL_RNG_BLOCKS 4
/* Bytes handed out before the key is seeded from the OS again. */
#define RDL_RNG_RESEED (1u << 20)

/* Fills buf from getrandom(), falling back to /dev/urandom; 0 or -1. */
int rdl_random_bytes(void *buf, size_t n);
/* Fills buf from this thread's CSPRNG (seeded from rdl_random_bytes()
 * first, after RDL_RNG_RESEED bytes, and in a child after fork()); 0, or
 * -1 when the OS gave no seed. */
int rdl_csprng_bytes(void *buf, size_t n);
/* Tests: the next bytes come from a fresh seed. */
void rdl_csprng_reseed(void);
/* Writes RDL_TOKEN_LEN hex digits and a NUL to out; 0 or -1. */
int rdl_token_new(char out[RDL_TOKEN_LEN + 1]);

#endif
