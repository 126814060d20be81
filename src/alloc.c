/* SPDX-License-Identifier: MIT */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "redlease.h"

static void *(*malloc_fn)(size_t) = malloc;
static void *(*realloc_fn)(void *, size_t) = realloc;
static void (*free_fn)(void *) = free;

void redlease_set_allocator(void *(*m)(size_t), void *(*r)(void *, size_t), void (*f)(void *))
{
    malloc_fn = m ? m : malloc;
    realloc_fn = r ? r : realloc;
    free_fn = f ? f : free;
}

void *rdl_malloc(size_t n) { return malloc_fn(n ? n : 1); }

void *rdl_calloc(size_t n, size_t m)
{
    if (m && n > (size_t)-1 / m) return NULL;
    void *p = rdl_malloc(n * m);
    if (p) memset(p, 0, n * m);
    return p;
}

void *rdl_realloc(void *p, size_t n) { return realloc_fn(p, n ? n : 1); }

void rdl_free(void *p)
{
    if (p) free_fn(p);
}

char *rdl_strdup(const char *s, int *ok)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = rdl_malloc(n);
    if (!d) {
        *ok = 0;
        return NULL;
    }
    return memcpy(d, s, n);
}
