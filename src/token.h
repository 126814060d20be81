/* SPDX-License-Identifier: MIT */
/* Lease tokens: 128 bits from the OS CSPRNG, as 32 hex digits. */
#ifndef REDLEASE_TOKEN_H
#define REDLEASE_TOKEN_H
#include <stddef.h>

#define RDL_TOKEN_BYTES 16
#define RDL_TOKEN_LEN (2 * RDL_TOKEN_BYTES)

/* Fills buf from getrandom(), falling back to /dev/urandom; 0 or -1. */
int rdl_random_bytes(void *buf, size_t n);
/* Writes RDL_TOKEN_LEN hex digits and a NUL to out; 0 or -1. */
int rdl_token_new(char out[RDL_TOKEN_LEN + 1]);

#endif
