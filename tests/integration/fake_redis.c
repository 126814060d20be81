/* SPDX-License-Identifier: MIT */
/* See fake_redis.h. One thread, poll(2) over the listening socket, a wake
 * pipe and up to FR_CONNS connections; counters are read by the main thread
 * under a mutex. Writes use MSG_NOSIGNAL: the client may be gone. */
#include "fake_redis.h"
#include "scripts.h"
#include "sha1.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define FR_CONNS 8

typedef struct fr_conn {
    int fd; /* -1: slot free */
    int silent;
    redisReader *reader;
} fr_conn;

struct fake_redis {
    const fr_script *script;
    char dir[64], path[96];
    int lfd, wake[2];
    pthread_t thread;
    pthread_mutex_t mu;
    int counts[FR_KINDS], evals, accepts;
    fr_conn conns[FR_CONNS];
};

static const char *default_reply(int kind)
{
    switch (kind) {
    case FR_PING: return "+PONG\r\n";
    case FR_SCRIPTS: return ":1\r\n";
    case FR_FENCED: return ":5\r\n";
    case FR_ACQUIRE: return ":1\r\n";
    case FR_RENEW:
    case FR_RELEASE: return ":1\r\n";
    case FR_OTHER: return "-ERR unknown command\r\n";
    default: return "+OK\r\n";
    }
}

static int arg_is(const redisReply *r, size_t i, const char *s)
{
    return i < r->elements && r->element[i]->type == REDIS_REPLY_STRING &&
           strcasecmp(r->element[i]->str, s) == 0;
}

static int classify(const redisReply *r, int *eval)
{
    *eval = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) return FR_OTHER;
    if (arg_is(r, 0, "AUTH")) return FR_AUTH;
    if (arg_is(r, 0, "SELECT")) return FR_SELECT;
    if (arg_is(r, 0, "PING")) return FR_PING;
    if (arg_is(r, 0, "SET")) return FR_SET;
    *eval = arg_is(r, 0, "EVAL");
    if (!*eval && !arg_is(r, 0, "EVALSHA")) return FR_OTHER;
    if (*eval && arg_is(r, 1, "return 1")) {
        *eval = 0; /* fr_evals() counts the lock's scripts sent as EVAL */
        return FR_SCRIPTS;
    }
    /* the queue's release, whole or its two-key probe: by script */
    char sha[41];
    const char *qr = rdl_script_src[RDL_SCRIPT_QUEUE_RELEASE];
    rdl_sha1_hex(qr, strlen(qr), sha);
    if (arg_is(r, 1, *eval ? qr : sha)) return FR_RELEASE;
    if (arg_is(r, 2, "2")) return FR_FENCED;
    /* the retry's acquire and the renewal have the same shape: by script */
    rdl_sha1_hex(rdl_script_src[RDL_SCRIPT_ACQUIRE], strlen(rdl_script_src[RDL_SCRIPT_ACQUIRE]), sha);
    if (arg_is(r, 1, *eval ? rdl_script_src[RDL_SCRIPT_ACQUIRE] : sha)) return FR_ACQUIRE;
    return r->elements == 6 ? FR_RENEW : FR_RELEASE; /* script sha 1 key token [ttl] */
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* the client is gone */
        p += w;
        n -= (size_t)w;
    }
}

static void conn_close(fr_conn *c)
{
    close(c->fd);
    c->fd = -1;
    redisReaderFree(c->reader);
    c->reader = NULL;
}

/* Writes bytes, then does what then says; 0 when the connection ended. */
static int act(fr_conn *c, const char *bytes, size_t len, int then)
{
    send_all(c->fd, bytes, len ? len : strlen(bytes));
    if (then == FR_CLOSE) {
        conn_close(c);
        return 0;
    }
    if (then == FR_SILENCE) c->silent = 1;
    return 1;
}

static int answer(fake_redis *f, fr_conn *c, const redisReply *req)
{
    int eval;
    int kind = classify(req, &eval);
    pthread_mutex_lock(&f->mu);
    int n = f->counts[kind]++;
    f->evals += eval;
    pthread_mutex_unlock(&f->mu);
    const fr_step *steps = f->script->steps[kind];
    int last = 0;
    while (last + 1 < FR_MAX_STEPS && steps[last + 1].bytes) last++;
    const fr_step *s = &steps[n < last ? n : last];
    if (!s->bytes) return act(c, default_reply(kind), 0, FR_GO_ON);
    return act(c, s->bytes, s->len, s->then);
}

static void on_readable(fake_redis *f, fr_conn *c)
{
    char buf[16384];
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n <= 0) {
        if (n < 0 && errno == EINTR) return;
        conn_close(c);
        return;
    }
    if (c->silent) return;
    redisReaderFeed(c->reader, buf, (size_t)n);
    void *req;
    while (c->fd >= 0 && !c->silent && redisReaderGetReply(c->reader, &req) == REDIS_OK && req) {
        int alive = answer(f, c, req);
        freeReplyObject(req);
        if (!alive) return;
    }
}

static void on_accept(fake_redis *f)
{
    int fd = accept(f->lfd, NULL, NULL);
    if (fd < 0) return;
    pthread_mutex_lock(&f->mu);
    f->accepts++;
    pthread_mutex_unlock(&f->mu);
    for (int i = 0; i < FR_CONNS; i++) {
        fr_conn *c = &f->conns[i];
        if (c->fd >= 0) continue;
        c->fd = fd;
        c->silent = 0;
        c->reader = redisReaderCreate();
        if (f->script->banner) act(c, f->script->banner, 0, f->script->banner_then);
        return;
    }
    close(fd); /* full: the client sees a reset */
}

static void *serve(void *arg)
{
    fake_redis *f = arg;
    for (;;) {
        struct pollfd p[FR_CONNS + 2];
        int idx[FR_CONNS], n = 2;
        p[0] = (struct pollfd){f->wake[0], POLLIN, 0};
        p[1] = (struct pollfd){f->lfd, POLLIN, 0};
        for (int i = 0; i < FR_CONNS; i++) {
            if (f->conns[i].fd < 0) continue;
            idx[n - 2] = i;
            p[n++] = (struct pollfd){f->conns[i].fd, POLLIN, 0};
        }
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            break; /* never spin; the test sees the server gone */
        }
        if (p[0].revents) break;
        if (p[1].revents & POLLIN) on_accept(f);
        for (int k = 2; k < n; k++)
            if (p[k].revents && f->conns[idx[k - 2]].fd >= 0) on_readable(f, &f->conns[idx[k - 2]]);
    }
    return NULL;
}

fake_redis *fr_start(const fr_script *s)
{
    fake_redis *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->script = s;
    for (int i = 0; i < FR_CONNS; i++) f->conns[i].fd = -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/fakeredis.XXXXXX", tmp && strlen(tmp) < 30 ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) goto fail_free;
    snprintf(f->path, sizeof f->path, "%s/redis.sock", f->dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->lfd < 0) goto fail_dir;
    if (bind(f->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(f->lfd, 8) != 0) goto fail_sock;
    if (pipe(f->wake) != 0) goto fail_bound;
    pthread_mutex_init(&f->mu, NULL);
    if (pthread_create(&f->thread, NULL, serve, f) != 0) goto fail_pipe;
    return f;
fail_pipe:
    pthread_mutex_destroy(&f->mu);
    close(f->wake[0]);
    close(f->wake[1]);
fail_bound:
    unlink(f->path);
fail_sock:
    close(f->lfd);
fail_dir:
    rmdir(f->dir);
fail_free:
    free(f);
    return NULL;
}

/* A server that could not start leaves nothing to test: the case would
 * only crash on NULL, so say why. */
const char *fr_path(const fake_redis *f)
{
    if (!f) {
        printf("Bail out! the fake Redis could not start\n");
        fflush(stdout);
        exit(1);
    }
    return f->path;
}

static int read_locked(fake_redis *f, const int *v)
{
    pthread_mutex_lock(&f->mu);
    int x = *v;
    pthread_mutex_unlock(&f->mu);
    return x;
}

int fr_count(fake_redis *f, int kind) { return read_locked(f, &f->counts[kind]); }
int fr_evals(fake_redis *f) { return read_locked(f, &f->evals); }
int fr_accepts(fake_redis *f) { return read_locked(f, &f->accepts); }

void fr_stop(fake_redis *f)
{
    if (!f) return;
    char b = 1;
    while (write(f->wake[1], &b, 1) < 0 && errno == EINTR) {}
    pthread_join(f->thread, NULL);
    for (int i = 0; i < FR_CONNS; i++)
        if (f->conns[i].fd >= 0) conn_close(&f->conns[i]);
    close(f->wake[0]);
    close(f->wake[1]);
    close(f->lfd);
    unlink(f->path);
    rmdir(f->dir);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
