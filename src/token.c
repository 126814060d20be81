/* SPDX-License-Identifier: MIT */
/* Lease tokens from a CSPRNG seeded by the OS.
 *
 * One getrandom() per token was most of the system-call time of a busy
 * client (73% in issue 15's profile). Tokens now come from ChaCha20 (RFC
 * 8439's block function) under a 256-bit key from the OS, with fast key
 * erasure: each refill makes RDL_RNG_BLOCKS blocks, the first 32 bytes
 * become the next key and the rest are handed out, each byte wiped as it
 * goes, so a later look at the state cannot recover earlier tokens.
 *
 * The state is per thread (clients in different threads never share it),
 * on a page of its own that a child process gets zeroed (MADV_WIPEONFORK:
 * whatever made the child, fork(), _Fork() or a raw clone, it seeds anew
 * and never holds its parent's future tokens) and that core dumps leave out
 * (MADV_DONTDUMP); it is reseeded from the OS after RDL_RNG_RESEED bytes.
 * On a kernel without MADV_WIPEONFORK (before 4.14) a pthread_atfork child
 * handler wipes the forking thread's state and counts forks, and the
 * process id is checked at each refill; if even that cannot be set up,
 * every token comes from the OS as before.
 */
#include "token.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

int rdl_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n) return 0;
    /* Kernels before 3.17 have no getrandom(). */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}

static void wipe(void *p, size_t n)
{
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory"); /* not optimised away */
}

/* ------------------------------------------------------------ ChaCha20 */

#define ROTL(v, n) ((uint32_t)((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                                             \
    (a += b, d ^= a, d = ROTL(d, 16), c += d, b ^= c, b = ROTL(b, 12), a += b, d ^= a,              \
     d = ROTL(d, 8), c += d, b ^= c, b = ROTL(b, 7))

static uint32_t load32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* One 64-byte block of ChaCha20 under key, with a zero nonce. */
static void chacha20_block(const unsigned char key[32], uint32_t counter, unsigned char out[64])
{
    uint32_t in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    for (int i = 0; i < 8; i++) in[4 + i] = load32(key + 4 * i);
    in[12] = counter; /* in[13..15]: the nonce, 0 (a key is used once) */
    uint32_t x[16];
    memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; i++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) store32(out + 4 * i, x[i] + in[i]);
    wipe(in, sizeof in); /* the key, and what leads back to it */
    wipe(x, sizeof x);
}

/* ------------------------------------------------------------ the state */

typedef struct rdl_rng_state {
    unsigned char key[32];
    unsigned char buf[RDL_RNG_BLOCKS * 64 - 32];
    size_t avail;        /* unread bytes at the end of buf */
    uint64_t since_seed; /* bytes handed out since the OS seeded the key */
    unsigned forks;      /* without MADV_WIPEONFORK: the fork count, and */
    pid_t pid;           /* the process, it was seeded under */
    int seeded;
} rdl_rng_state;

static __thread rdl_rng_state *rng; /* this thread's page, or NULL */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t page_key;      /* frees a thread's page when it ends */
static int wipe_on_fork = 1;        /* pages are zeroed in a child */
static int usable;                  /* setup done: the generator may be used */
static unsigned forks;              /* bumped in every child (its one thread) */

static void on_fork_child(void)
{
    forks++;
    if (rng) wipe(rng, sizeof *rng); /* the parent's future tokens: not ours */
}

static void free_page(void *p)
{
    wipe(p, sizeof(rdl_rng_state));
    munmap(p, sizeof(rdl_rng_state));
}

static void setup(void)
{
    usable = pthread_key_create(&page_key, free_page) == 0 &&
             pthread_atfork(NULL, NULL, on_fork_child) == 0;
}

/* This thread's state, on a page of its own; NULL: use the OS directly. */
static rdl_rng_state *state(void)
{
    if (rng) return rng;
    pthread_once(&setup_once, setup);
    if (!usable) return NULL;
    void *p = mmap(NULL, sizeof(rdl_rng_state), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_DONTDUMP
    (void)madvise(p, sizeof(rdl_rng_state), MADV_DONTDUMP);
#endif
#ifdef MADV_WIPEONFORK
    if (madvise(p, sizeof(rdl_rng_state), MADV_WIPEONFORK) != 0) wipe_on_fork = 0;
#else
    wipe_on_fork = 0;
#endif
    if (pthread_setspecific(page_key, p) != 0) {
        munmap(p, sizeof(rdl_rng_state));
        return NULL;
    }
    rng = p;
    return rng;
}

static int seed(rdl_rng_state *s)
{
    if (rdl_random_bytes(s->key, sizeof s->key) != 0) return -1;
    s->avail = 0;
    s->since_seed = 0;
    s->forks = forks;
    s->pid = wipe_on_fork ? 0 : getpid();
    s->seeded = 1;
    return 0;
}

/* A child of the process that seeded s, which MADV_WIPEONFORK did not
 * zero (an old kernel), made without the atfork handlers (raw clone). */
static int foreign(const rdl_rng_state *s) { return !wipe_on_fork && s->pid != getpid(); }

/* RDL_RNG_BLOCKS blocks: the first 32 bytes are the next key, the rest the
 * bytes to hand out; the old key is gone. */
static void refill(rdl_rng_state *s)
{
    unsigned char out[RDL_RNG_BLOCKS * 64];
    for (uint32_t i = 0; i < RDL_RNG_BLOCKS; i++) chacha20_block(s->key, i, out + 64 * i);
    memcpy(s->key, out, sizeof s->key);
    memcpy(s->buf, out + 32, sizeof s->buf);
    s->avail = sizeof s->buf;
    wipe(out, sizeof out);
}

int rdl_csprng_bytes(void *buf, size_t n)
{
    rdl_rng_state *s = state();
    if (!s) return rdl_random_bytes(buf, n); /* no safe place for a key */
    if (!s->seeded || s->forks != forks || s->since_seed >= RDL_RNG_RESEED || foreign(s)) {
        if (seed(s) != 0) return -1;
    }
    unsigned char *p = buf;
    while (n) {
        if (!s->avail) {
            if (foreign(s) && seed(s) != 0) return -1;
            refill(s);
        }
        size_t k = n < s->avail ? n : s->avail;
        unsigned char *from = s->buf + sizeof s->buf - s->avail;
        memcpy(p, from, k);
        wipe(from, k);
        s->avail -= k;
        s->since_seed += k;
        p += k;
        n -= k;
    }
    return 0;
}

void rdl_csprng_reseed(void)
{
    if (rng) rng->seeded = 0;
}

int rdl_token_new(char out[RDL_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[RDL_TOKEN_BYTES];
    if (rdl_csprng_bytes(b, sizeof b) != 0) return -1;
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[RDL_TOKEN_LEN] = '\0';
    wipe(b, sizeof b);
    return 0;
}
