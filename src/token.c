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
 * The state is per thread (clients in different threads never share it)
 * and reseeded from the OS after RDL_RNG_RESEED bytes, and in a child
 * after fork() (pthread_atfork counts forks: a parent and its child must
 * never hand out the same tokens).
 */
#include "token.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
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
}

/* ------------------------------------------------------------ the state */

typedef struct rdl_rng_state {
    unsigned char key[32];
    unsigned char buf[RDL_RNG_BLOCKS * 64 - 32];
    size_t avail;        /* unread bytes at the end of buf */
    uint64_t since_seed; /* bytes handed out since the OS seeded the key */
    unsigned forks;      /* the fork count it was seeded under */
    int seeded;
} rdl_rng_state;

static __thread rdl_rng_state rng;
static unsigned forks; /* bumped in every child (only its one thread runs) */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void) { forks++; }
static void watch_forks(void) { pthread_atfork(NULL, NULL, on_fork_child); }

static void wipe(void *p, size_t n)
{
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory"); /* not optimised away */
}

static int seed(rdl_rng_state *s)
{
    pthread_once(&atfork_once, watch_forks);
    if (rdl_random_bytes(s->key, sizeof s->key) != 0) return -1;
    s->avail = 0;
    s->since_seed = 0;
    s->forks = forks;
    s->seeded = 1;
    return 0;
}

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
    rdl_rng_state *s = &rng;
    if (!s->seeded || s->forks != forks || s->since_seed >= RDL_RNG_RESEED) {
        if (seed(s) != 0) return -1;
    }
    unsigned char *p = buf;
    while (n) {
        if (!s->avail) refill(s);
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

void rdl_csprng_reseed(void) { rng.seeded = 0; }

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
