/* SPDX-License-Identifier: MIT */
/* How much slower the code runs here than in a plain build: the factor
 * of the integration tests' durations, so that no timeout a case does not
 * test can fire on a slow run (tests/README.md). */
#ifndef REDLEASE_TEST_SCALE_H
#define REDLEASE_TEST_SCALE_H

#include <stdint.h>
#include <stdlib.h>

static inline int64_t time_scale(void)
{
    const char *w = getenv("REDLEASE_TEST_WRAPPER");
    if (w && *w) return 5; /* valgrind */
#if defined(__SANITIZE_ADDRESS__)
    return 2;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 2;
#endif
#endif
    return 1;
}

#endif
