/* SPDX-License-Identifier: MIT */
/* What redlease status prints (man 1 redlease, STATUS): one server's lines
 * and the quorum's verdict, rendered from the library's reading of the
 * answers (src/inspect_view.h, through cli/view.h), the same view
 * status --json prints. What the view does not keep, status hands over as
 * Redis said it (status_raw): another writer's value of the lock key is
 * shown as it is, and held while the key lasts. */
#ifndef REDLEASE_CLI_STATUS_TEXT_H
#define REDLEASE_CLI_STATUS_TEXT_H

#include <stddef.h>

#include "inspect_view.h"

/* The lock key and the fence counter as a server answered. */
typedef struct status_raw {
    long long pttl;      /* the lock key's PTTL: -2 no key, -1 no expiry */
    const char *value;   /* its value (NULL: no string), value_len bytes */
    size_t value_len;
    const char *counter; /* the fence counter's text (NULL: none) */
} status_raw;

/* Whether one server's answer v says the resource is held: by a live
 * holder of a set (a semaphore's holding permits), else by the lock key,
 * whatever its value. */
int status_text_held(const redlease_inspection *v, const status_raw *raw);

/* Prints one server's lines, each started by "MEMBER: " (member: with
 * --quorum, else NULL) and "KEY: ": the lock's (free, held, or a set's
 * count and a line per holder), then, if waiters, the waiters'. */
void status_text_server(const char *member, const char *key, const redlease_inspection *v,
                        const status_raw *raw, int show_token, int waiters);

/* Prints the line of a holder of redlease 0.1.0's key (raw: its PTTL and
 * value, a token). */
void status_text_legacy(const char *key, const status_raw *raw, int show_token);

/* The quorum's verdict on a lease (mutex's, or another writer's value):
 * the token held by best of n servers (need a majority), ttl_ms by the
 * majority's (-1: no expiry). */
void status_text_quorum_held(const char *key, int best, int n, int need, long long ttl_ms,
                             const char *token, int show_token);
/* ... none held by a majority, and unreachable of the n do not answer. */
void status_text_quorum_free(const char *key, int best, int n, int unreachable, int need);
/* The holders of a set by a majority: the quorum's tally of the servers'
 * views (rdl_inspect_tally). */
void status_text_quorum_set(const char *key, const redlease_inspection *tally, int need, int show_token);
/* How many holders a view has that hold (a semaphore's: of some permits). */
size_t status_text_holding(const redlease_inspection *v);

#endif
