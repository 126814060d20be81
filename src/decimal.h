/* SPDX-License-Identifier: MIT */
/* A number in decimal, for command arguments on the hot path: every
 * renewal sends its TTL, and snprintf() cost more than the rest of
 * building the command. */
#ifndef REDLEASE_DECIMAL_H
#define REDLEASE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

#define RDL_DECIMAL_MAX 21 /* "-9223372036854775808" and a NUL */

/* Writes u and a NUL into out (at most RDL_DECIMAL_MAX bytes, 20 digits
 * and the NUL); returns the length without the NUL. */
static inline size_t rdl_decimal_u(char *out, uint64_t u)
{
    char tmp[RDL_DECIMAL_MAX];
    size_t n = 0, len = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n) out[len++] = tmp[--n];
    out[len] = '\0';
    return len;
}

/* Writes v and a NUL into out; returns the length without the NUL. */
static inline size_t rdl_decimal(char out[RDL_DECIMAL_MAX], int64_t v)
{
    if (v >= 0) return rdl_decimal_u(out, (uint64_t)v);
    out[0] = '-';
    return 1 + rdl_decimal_u(out + 1, 0 - (uint64_t)v);
}

#endif
