/* SPDX-License-Identifier: MIT */
/* A tiny TAP test runner: each test case prints "ok N - name" or
 * "not ok N - name", so automake's TAP driver counts every case. */
#ifndef REDLEASE_TESTUTIL_H
#define REDLEASE_TESTUTIL_H
#include <unistd.h>
#include <stdio.h>
#include <string.h>

/* One of each per program, however many files its cases are in: a CHECK
 * in any of them counts in the case that runs it, which run_tests() (in
 * the file of main) reads. Weak: every file that includes this defines
 * them, and the linker keeps one. */
__attribute__((weak)) int t_fails;
__attribute__((weak)) const char *t_skip; /* set by SKIP_TEST: the case reports "# SKIP why" */

/* Ends the current case as skipped, with the reason in the TAP line. */
#define SKIP_TEST(why)                                                                   \
    do {                                                                                 \
        t_skip = (why);                                                                  \
        return;                                                                          \
    } while (0)

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            t_fails++;                                                                   \
        }                                                                                \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        long long a_ = (long long)(a), b_ = (long long)(b);                              \
        if (a_ != b_) {                                                                  \
            printf("# %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a,  \
                   #b, a_, b_);                                                          \
            t_fails++;                                                                   \
        }                                                                                \
    } while (0)

#define CHECK_STR(a, b)                                                                  \
    do {                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                 \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                         \
            printf("# %s:%d: %s == \"%s\" failed: \"%s\"\n", __FILE__, __LINE__, #a,     \
                   b_ ? b_ : "(null)", a_ ? a_ : "(null)");                              \
            t_fails++;                                                                   \
        }                                                                                \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

#define TEST_CASE(fn) {#fn, fn}

/* Runs the cases (only those whose name contains argv[1], if given). */
static inline int run_tests(const test_case *t, size_t n, int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    size_t planned = 0;
    for (size_t i = 0; i < n; i++)
        if (!only || strstr(t[i].name, only)) planned++;
    printf("1..%zu\n", planned);
    int failed = 0, passed = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && !strstr(t[i].name, only)) continue;
        t_fails = 0;
        t_skip = NULL;
        t[i].fn();
        printf("%s %zu - %s%s%s\n", t_fails ? "not ok" : "ok", ++k, t[i].name,
               t_skip ? " # SKIP " : "", t_skip ? t_skip : "");
        fflush(stdout);
        if (t_fails)
            failed++;
        else
            passed++;
    }
    printf("# %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* v is what a mutex's key holds for the lease of token (32 hex digits):
 * the token, a space, then this process's record, "PID AT FENCE HOST
 * LABEL" (src/identity.h). */
static inline int is_value_of(const char *v, const char *token)
{
    long long pid, at;
    unsigned long long fence;
    int n = 0;
    return strncmp(v, token, 32) == 0 && v[32] == ' ' &&
           sscanf(v + 33, "%lld %lld %llu %n", &pid, &at, &fence, &n) == 3 &&
           n > 0 && pid == (long long)getpid() && strchr(v + 33 + n, ' ') != NULL;
}

#endif
