/* SPDX-License-Identifier: MIT */
/* Where lease tokens come from. A token is the only thing that tells our
 * lock from another holder's, so it must be unguessable: 16 bytes of
 * ChaCha20 keyed by the OS CSPRNG, getrandom(2), or /dev/urandom where the
 * kernel has no getrandom(), and no lease at all (REDLEASE_ESYS) when
 * neither answers; one seed serves many tokens, a child after fork() gets
 * a seed of its own.
 *
 * The test is linked with ld's --wrap for getrandom, open and open64, so the
 * library's calls to both come here first: each case decides whether they
 * pass through to the OS, hand out known bytes, or fail. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "fake.h"
#include "token.h"

/* ------------------------------------------------------- the OS, wrapped */

enum source { OS, KNOWN, SHORT_AND_EINTR, NO_GETRANDOM };
static enum source getrandom_mode = OS;
static int open_fails;        /* open("/dev/urandom") fails with EMFILE */
static int getrandom_calls, urandom_opens, urandom_cloexec;
static unsigned char next_byte; /* KNOWN: the bytes handed out count up */

ssize_t __real_getrandom(void *buf, size_t n, unsigned flags);
ssize_t __wrap_getrandom(void *buf, size_t n, unsigned flags);
ssize_t __wrap_getrandom(void *buf, size_t n, unsigned flags)
{
    getrandom_calls++;
    unsigned char *p = buf;
    switch (getrandom_mode) {
    case OS:
        return __real_getrandom(buf, n, flags);
    case KNOWN:
        for (size_t i = 0; i < n; i++) p[i] = next_byte++;
        return (ssize_t)n;
    case SHORT_AND_EINTR: /* every other call interrupted, the others 3 bytes */
        if (getrandom_calls % 2) {
            errno = EINTR;
            return -1;
        }
        if (n > 3) n = 3;
        for (size_t i = 0; i < n; i++) p[i] = next_byte++;
        return (ssize_t)n;
    case NO_GETRANDOM:
        break;
    }
    errno = ENOSYS;
    return -1;
}

/* open() is open64() where off_t is 64 bits on a 32-bit ABI (configure's
 * large-file support): both are wrapped, one body serves them. */
int __real_open(const char *path, int flags, ...);
int __real_open64(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...);

/* 1 if the call is ours to fail (errno set), 0 if it goes to the OS. */
static int open_seen(const char *path, int flags)
{
    if (strcmp(path, "/dev/urandom") != 0) return 0;
    urandom_opens++;
    if (flags & O_CLOEXEC) urandom_cloexec++;
    if (!open_fails) return 0;
    errno = EMFILE;
    return 1;
}

static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
}

/* One body for both wrappers. */
#define WRAP_OPEN(name)                                                                  \
    int __wrap_##name(const char *path, int flags, ...)                                  \
    {                                                                                    \
        va_list ap;                                                                      \
        va_start(ap, flags);                                                             \
        mode_t mode = open_mode(flags, ap);                                              \
        va_end(ap);                                                                      \
        return open_seen(path, flags) ? -1 : __real_##name(path, flags, mode);           \
    }
WRAP_OPEN(open)
WRAP_OPEN(open64)

static void reset_os(enum source mode)
{
    getrandom_mode = mode;
    open_fails = 0;
    getrandom_calls = urandom_opens = urandom_cloexec = 0;
    next_byte = 0;
    rdl_csprng_reseed(); /* the next token seeds from this source */
}

/* --------------------------------------------------------------- helpers */

static void on_acq(redlease_lock *lk, int st, void *arg) { (void)lk, (void)st, (void)arg; }

/* A lease's token on a fresh fake client (the client's jitter seed also
 * reads randomness: the case's mode is set after the client exists). */
static int acquire_token(fake *f, enum source mode, char *token, size_t size)
{
    fake_start(f, NULL);
    reset_os(mode);
    redlease_lock *lk = NULL;
    int rc = redlease_acquire(f->c, "tok", NULL, on_acq, NULL, NULL, &lk);
    if (rc == REDLEASE_OK) {
        snprintf(token, size, "%s", redlease_lock_token(lk));
        CHECK(redlease_release(lk, NULL, NULL) == REDLEASE_OK);
    } else {
        CHECK(lk == NULL);
    }
    reset_os(OS);
    fake_free(f);
    CHECK_EQ(fake_alloc_live(), 0);
    return rc;
}

/* ------------------------------------------------------------------ cases */

/* The key is the 32 bytes the OS gave (00..1f here); a refill's first 32
 * bytes become the next key, the next 16 the token. The expected values are
 * ChaCha20's keystream for that key, nonce 0, counter 0, bytes 32-63, as
 * `openssl enc -chacha20` gives it (which matches RFC 8439's vectors). */
#define FIRST_TOKEN "2b23cce7a26023ab3f0eef693ac87f64"
#define SECOND_TOKEN "258235eab1f7a32dc22762a0485b410c"

static void test_token_is_chacha20_of_the_os_seed(void)
{
    fake f;
    char token[64] = "";
    CHECK_EQ(acquire_token(&f, KNOWN, token, sizeof token), REDLEASE_OK);
    CHECK_STR(token, FIRST_TOKEN);
    reset_os(KNOWN);
    char a[RDL_TOKEN_LEN + 1], b[RDL_TOKEN_LEN + 1];
    CHECK_EQ(rdl_token_new(a), 0);
    CHECK_EQ(rdl_token_new(b), 0);
    CHECK_STR(a, FIRST_TOKEN);
    CHECK_STR(b, SECOND_TOKEN);
    CHECK_EQ(getrandom_calls, 1); /* one seed, many tokens */
    reset_os(OS);
}

static void test_short_reads_and_eintr_still_fill_the_seed(void)
{
    fake f;
    char token[64] = "";
    CHECK_EQ(acquire_token(&f, SHORT_AND_EINTR, token, sizeof token), REDLEASE_OK);
    CHECK_STR(token, FIRST_TOKEN);
}

/* A new seed from the OS after RDL_RNG_RESEED bytes. */
static void test_reseeded_after_a_megabyte(void)
{
    reset_os(KNOWN);
    char t[RDL_TOKEN_LEN + 1];
    unsigned n = RDL_RNG_RESEED / RDL_TOKEN_BYTES;
    for (unsigned i = 0; i < n; i++) CHECK_EQ(rdl_token_new(t), 0);
    CHECK_EQ(getrandom_calls, 1);
    CHECK_EQ(rdl_token_new(t), 0);
    CHECK_EQ(getrandom_calls, 2);
    reset_os(OS);
}

/* A child after fork() seeds again: it never hands out the tokens its
 * parent hands out next (their states were one copy). */
/* The same for a child made without the atfork handlers (a raw fork
 * system call, as _Fork() or clone() make): its state page is zeroed. */
static void test_raw_fork_child_seeds_again(void)
{
    reset_os(OS);
    char t[RDL_TOKEN_LEN + 1], mine[RDL_TOKEN_LEN + 1], childs[RDL_TOKEN_LEN + 1] = "";
    CHECK_EQ(rdl_token_new(t), 0);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    fflush(stdout);
    long pid = syscall(SYS_fork);
    CHECK(pid >= 0);
    if (pid == 0) {
        char c[RDL_TOKEN_LEN + 1];
        int ok = rdl_token_new(c) == 0 && write(p[1], c, RDL_TOKEN_LEN) == RDL_TOKEN_LEN;
        syscall(SYS_exit_group, ok ? 0 : 1);
    }
    close(p[1]);
    CHECK_EQ(read(p[0], childs, RDL_TOKEN_LEN), RDL_TOKEN_LEN);
    close(p[0]);
    int st = -1;
    CHECK_EQ(waitpid((pid_t)pid, &st, 0), (pid_t)pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(rdl_token_new(mine), 0);
    CHECK(strcmp(mine, childs) != 0);
    reset_os(OS);
}

static void test_fork_child_seeds_again(void)
{
    reset_os(OS);
    char t[RDL_TOKEN_LEN + 1], mine[RDL_TOKEN_LEN + 1], childs[RDL_TOKEN_LEN + 1] = "";
    CHECK_EQ(rdl_token_new(t), 0); /* seeded before the fork */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char c[RDL_TOKEN_LEN + 1];
        int ok = rdl_token_new(c) == 0 && write(p[1], c, RDL_TOKEN_LEN) == RDL_TOKEN_LEN;
        _exit(ok && getrandom_calls == 2 ? 0 : 1); /* the parent's seed, and its own */
    }
    close(p[1]);
    CHECK_EQ(read(p[0], childs, RDL_TOKEN_LEN), RDL_TOKEN_LEN);
    close(p[0]);
    int st = -1;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(rdl_token_new(mine), 0);
    CHECK(strcmp(mine, childs) != 0);
    CHECK_EQ(getrandom_calls, 1); /* the parent's one seed */
    reset_os(OS);
}

static void test_without_getrandom_reads_dev_urandom(void)
{
    fake f;
    char token[64] = "";
    CHECK_EQ(acquire_token(&f, NO_GETRANDOM, token, sizeof token), REDLEASE_OK);
    CHECK_EQ(strlen(token), 32);
    CHECK_EQ(strspn(token, "0123456789abcdef"), 32);
    fake_start(&f, NULL);
    reset_os(NO_GETRANDOM);
    redlease_lock *lk;
    CHECK_EQ(redlease_acquire(f.c, "tok", NULL, on_acq, NULL, NULL, &lk), REDLEASE_OK);
    CHECK_EQ(urandom_opens, 1);
    CHECK_EQ(urandom_cloexec, 1); /* never leaked into a child */
    reset_os(OS);
    fake_free(&f);
    CHECK_EQ(fake_alloc_live(), 0);
}

static void test_no_randomness_no_lease(void)
{
    fake f;
    fake_start(&f, NULL);
    reset_os(NO_GETRANDOM);
    open_fails = 1;
    redlease_lock *lk = (redlease_lock *)&f; /* must be reset to NULL */
    CHECK_EQ(redlease_acquire(f.c, "tok", NULL, on_acq, NULL, NULL, &lk), REDLEASE_ESYS);
    CHECK(lk == NULL);
    CHECK_EQ(fake_pending(&f), 0); /* nothing was sent */
    redlease_stats s;
    redlease_client_stats(f.c, &s);
    CHECK_EQ(s.locks_now, 0);
    reset_os(OS);
    fake_free(&f);
    CHECK_EQ(fake_alloc_live(), 0);
}

/* The real CSPRNG: 20,000 tokens, all distinct, and every one of the 128
 * bits set in 45-55% of them (a constant, a counter or a stuck bit fails;
 * for fair bits 55% is 14 standard deviations away). */
static int cmp_token(const void *a, const void *b) { return memcmp(a, b, 32); }

static void test_os_tokens_distinct_and_balanced(void)
{
    enum { N = 20000 };
    static char tokens[N][33];
    static int ones[128];
    fake f;
    fake_start(&f, NULL);
    reset_os(OS);
    for (int i = 0; i < N; i++) {
        redlease_lock *lk;
        if (redlease_acquire(f.c, "tok", NULL, on_acq, NULL, NULL, &lk) != REDLEASE_OK) {
            CHECK(!"acquire failed");
            break;
        }
        memcpy(tokens[i], redlease_lock_token(lk), 33);
        redlease_release(lk, NULL, NULL);
        for (int bit = 0; bit < 128; bit++) {
            char h = tokens[i][bit / 4];
            int v = h <= '9' ? h - '0' : h - 'a' + 10;
            ones[bit] += v >> (3 - bit % 4) & 1;
        }
    }
    CHECK(getrandom_calls <= 2); /* 320 KB: the seed of the client's jitter, and one */
    fake_free(&f);
    qsort(tokens, N, sizeof tokens[0], cmp_token);
    int dups = 0;
    for (int i = 1; i < N; i++) dups += memcmp(tokens[i - 1], tokens[i], 32) == 0;
    CHECK_EQ(dups, 0);
    int lo = N, hi = 0;
    for (int bit = 0; bit < 128; bit++) {
        if (ones[bit] < lo) lo = ones[bit];
        if (ones[bit] > hi) hi = ones[bit];
    }
    printf("# %d tokens, 0 duplicates expected, %d found; bits set in %d-%d of them\n", N, dups, lo, hi);
    CHECK(lo >= N * 45 / 100 && hi <= N * 55 / 100);
}

int main(int argc, char **argv)
{
    fake_alloc_install();
    static const test_case tests[] = {
        TEST_CASE(test_token_is_chacha20_of_the_os_seed),
        TEST_CASE(test_short_reads_and_eintr_still_fill_the_seed),
        TEST_CASE(test_reseeded_after_a_megabyte),
        TEST_CASE(test_fork_child_seeds_again),
        TEST_CASE(test_raw_fork_child_seeds_again),
        TEST_CASE(test_without_getrandom_reads_dev_urandom),
        TEST_CASE(test_no_randomness_no_lease),
        TEST_CASE(test_os_tokens_distinct_and_balanced),
    };
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
