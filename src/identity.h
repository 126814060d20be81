/* SPDX-License-Identifier: MIT */
/* Who holds a lease (src/identity.c; man 3 redlease, HOLDERS; docs/design.md,
 * section 14): the record each holder and each queued waiter leaves beside
 * its token in Redis, "PID AT FENCE HOST LABEL". PID is the holding
 * process's, AT when the attempt that wrote it was sent, in ms by the
 * server's clock as the connection read it (0: not known), FENCE the
 * fence its acquire minted there (0: none; the script writes it), HOST
 * the machine's name and
 * LABEL the client's (the label option, or the program's name), each
 * cleaned for display: a record is shown to operators, never parsed for
 * ownership (the token alone owns a lease), and never used as a key or
 * spliced into a script (it is a script's argument). A mutex's lock key
 * holds "TOKEN RECORD"; a semaphore's or a shared holder's record is the
 * field "#TOKEN" of its weights hash, a waiter's that of the queue's
 * entries. */
#ifndef REDLEASE_IDENTITY_H
#define REDLEASE_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "decimal.h"
#include "redlease.h"
#include "token.h"

#define RDL_HOST_MAX 64 /* bytes of the host name kept */
/* The longest record: three 20-digit numbers, the host, the label, spaces. */
#define RDL_RECORD_MAX (3 * (20 + 1) + RDL_HOST_MAX + 1 + REDLEASE_MAX_LABEL)
/* The longest lock value: the token, a space, the record. */
#define RDL_VALUE_MAX (RDL_TOKEN_LEN + 1 + RDL_RECORD_MAX)

typedef struct rdl_identity {
    char label[REDLEASE_MAX_LABEL + 1];
    char host[RDL_HOST_MAX + 1];
    int64_t pid;
    /* The record's words that never change, "PID " and " HOST LABEL",
     * written once by rdl_identity_seal(): every acquire writes a record,
     * and only its AT and FENCE are its own. */
    char head[RDL_DECIMAL_MAX + 1];
    char tail[1 + RDL_HOST_MAX + 1 + REDLEASE_MAX_LABEL + 1];
    uint8_t head_len, tail_len;
} rdl_identity;

/* Copies the len bytes of s to out, cleaned for display, at most max bytes
 * of them (never part of a UTF-8 sequence), and a NUL; returns the length.
 * A label keeps valid UTF-8 and spaces; control characters (C0, DEL, C1),
 * the bidirectional controls that reorder what a terminal shows, and bytes
 * that are no valid UTF-8 become "?". A host (host nonzero) keeps letters,
 * digits and ".-_:" only: it is one word of the record. */
size_t rdl_identity_clean(char *out, size_t max, const char *s, size_t len, int host);
/* This process's identity: label (NULL: the program's name), the host name,
 * the pid; sealed. */
void rdl_identity_of_process(rdl_identity *id, const char *label);
/* Writes the record's fixed words from id's label, host and pid (cleaned
 * already): once they are set, before the first record. */
void rdl_identity_seal(rdl_identity *id);
/* Writes "PID AT FENCE HOST LABEL" and a NUL to out (RDL_RECORD_MAX + 1
 * bytes) for a sealed id; at_ms below 0 is written 0 (not known). Returns
 * the length. */
size_t rdl_identity_record(const rdl_identity *id, int64_t at_ms, uint64_t fence, char *out);
/* Writes "TOKEN RECORD" and a NUL to out (RDL_VALUE_MAX + 1 bytes): what a
 * mutex's key holds. Returns the length. */
size_t rdl_identity_value(const rdl_identity *id, const char *token, int64_t at_ms, uint64_t fence,
                          char *out);

/* How long ago a record's AT was, at the server's clock now, in ms; -1
 * when not known: no time (0), or one no estimate of the server's clock
 * gives (more than a second ahead of now: the record's AT is its writer's
 * estimate, which can run a little ahead; or more than a year behind).
 * A little ahead is 0. */
int64_t rdl_identity_age(int64_t now, int64_t at);

/* A record read back (from Redis: anyone may have written it). */
typedef struct rdl_record {
    int64_t pid, at;
    uint64_t fence;
    char host[RDL_HOST_MAX + 1];         /* cleaned */
    char label[REDLEASE_MAX_LABEL + 1];  /* cleaned */
} rdl_record;
/* Reads the len bytes at s as a record, cleaning its words for display
 * again; 0, or -1 when they are none. */
int rdl_identity_parse(const char *s, size_t len, rdl_record *out);

#endif
