/* SPDX-License-Identifier: MIT */
/* An in-process fake Redis for the hostile-server tests: a thread that
 * listens on a unix socket in a temp dir, parses each request with
 * hiredis's redisReader (requests are RESP arrays) and answers it from a
 * per-scenario script in real Redis wire format: errors, wrong reply types,
 * half replies followed by silence or a close, or bytes that are not RESP. */
#ifndef REDLEASE_FAKE_REDIS_H
#define REDLEASE_FAKE_REDIS_H
#include <stddef.h>

/* What the fake does after writing a step's bytes. */
enum fr_then {
    FR_GO_ON = 0, /* keep answering */
    FR_SILENCE,   /* read everything that comes, never answer again on this connection */
    FR_CLOSE      /* close the connection */
};

/* The commands redlease sends, told apart by name and shape. */
enum fr_kind {
    FR_AUTH, FR_SELECT, FR_PING, /* the handshake */
    FR_SCRIPTS,                  /* the handshake's probe: EVAL "return 1" 0 (default 1) */
    FR_SET,                      /* first acquire attempt: SET key token NX PX ttl */
    FR_ACQUIRE,                  /* later attempts: the acquire script (1 key) */
    FR_FENCED,                   /* fenced acquire script (2 keys) */
    FR_RENEW,                    /* renew script (1 key, token, ttl) */
    FR_RELEASE,                  /* release / drop script (1 key, token) */
    FR_OTHER,
    FR_KINDS
};

typedef struct fr_step {
    const char *bytes; /* NULL: a well-behaved Redis's answer */
    size_t len;        /* 0: strlen(bytes) */
    int then;          /* enum fr_then */
} fr_step;

#define FR_MAX_STEPS 4
typedef struct fr_script {
    /* Sent as soon as a connection is accepted (a peer that talks first),
     * then banner_then applies. NULL: nothing. */
    const char *banner;
    int banner_then;
    /* The nth command of a kind gets steps[kind][n]; past the last step
     * given, the last one repeats. */
    fr_step steps[FR_KINDS][FR_MAX_STEPS];
} fr_script;

typedef struct fake_redis fake_redis;

/* Starts serving s (copied by pointer: keep it alive); NULL on failure. */
fake_redis *fr_start(const fr_script *s);
const char *fr_path(const fake_redis *f);
/* Commands of a kind received so far (from the main thread). */
int fr_count(fake_redis *f, int kind);
/* Requests sent as EVAL (script text) rather than EVALSHA. */
int fr_evals(fake_redis *f);
/* Connections accepted so far. */
int fr_accepts(fake_redis *f);
/* Stops the thread, closes everything, removes the socket and dir. */
void fr_stop(fake_redis *f);

#endif
