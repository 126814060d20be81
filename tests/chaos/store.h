/* SPDX-License-Identifier: MIT */
/* store: the shared resource the chaos workers protect. One file holds
 * "COUNTER HIGHEST_FENCE"; every operation takes flock(2) on it, so the
 * operations of all processes are serialized, and appends one line to the
 * log file (PATH.log) under that same lock, so the log's order is the order
 * in which the store applied them.
 *
 * Both operations carry the caller's fencing token. The store refuses a
 * token lower than the highest it has seen (by a read or a write), which is
 * what makes a holder that lost its lease without knowing harmless: once the
 * next holder has read, the old holder's write is refused. */
#ifndef CHAOS_STORE_H
#define CHAOS_STORE_H

#include <stdint.h>

enum { STORE_OK = 0, STORE_REFUSED = 1, STORE_ERROR = -1 };

/* Reads the counter into *counter. STORE_REFUSED if fence is stale. */
int store_read(const char *path, int worker, uint64_t fence, uint64_t *counter);
/* Sets the counter to value. STORE_REFUSED if fence is stale. */
int store_write(const char *path, int worker, uint64_t fence, uint64_t value);

#endif
