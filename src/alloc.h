/* SPDX-License-Identifier: MIT */
/* The library's allocator: libc unless redlease_set_allocator() replaced it.
 * Every allocation in the core goes through here, so the tests can fail the
 * Nth allocation and check that nothing leaks and every error is reported. */
#ifndef REDLEASE_ALLOC_H
#define REDLEASE_ALLOC_H
#include <stddef.h>

void *rdl_malloc(size_t n);
void *rdl_calloc(size_t n, size_t m);
void *rdl_realloc(void *p, size_t n);
void rdl_free(void *p);
/* A copy of s (NULL stays NULL); *ok is cleared when the copy failed. */
char *rdl_strdup(const char *s, int *ok);

#endif
