/* SPDX-License-Identifier: MIT */
/* What a Redis error reply means for the operation that got it: the one
 * table (src/errors.c), documented in man 3 redlease, ERRORS FROM REDIS. */
#ifndef REDLEASE_ERRORS_H
#define REDLEASE_ERRORS_H

#include <stddef.h>

typedef struct rdl_error_class {
    int status;    /* the status code the operation reports */
    int transient; /* 1: retried (acquire within its budget, renew and
                      release until their deadline); 0: definite */
    int reconnect; /* 1: the connection is no use any more (a replica,
                      lost its authentication): drop it and reconnect */
    int wrongtype; /* 1: the key holds another type (WRONGTYPE), or the
                      resource is another kind (KIND, our scripts'): so
                      not our token */
    int noscript;  /* 1: NOSCRIPT, the script cache lacks it (resent by EVAL) */
    int oom;       /* 1: OOM, over maxmemory: a denyoom command (SET) is refused */
    int refused;   /* 1: the server refuses the command itself: unknown to it,
                      not allowed to this user (NOPERM to run it, not a key's),
                      or its syntax (an option it lacks) */
    int multikey;  /* 1: TRYAGAIN, a Cluster slot moving: a command of several
                      keys waits for the move to end, one of a single key
                      goes on (ASK) */
    int redirect;  /* 1: MOVED or ASK, a Cluster's redirect: the key is served
                      elsewhere (its status and class are an unknown code's:
                      whether it passes is for whoever routes the key) */
} rdl_error_class;

/* Classifies an error reply by its code (first word): text of n bytes. */
rdl_error_class rdl_error_classify(const char *text, size_t n);

/* 1 when the error refuses EVAL or EVALSHA itself (unknown to the server,
 * not allowed to this user, no Lua engine), not a command a script ran
 * ("... script: ..." carries a refusal of that command). */
int rdl_error_refuses_scripts(const char *text, size_t n);

#endif
