/* SPDX-License-Identifier: MIT */
/* How long Redis has been unusable while redlease run waits for the lock
 * (--max-outage; man 1, WAITING THROUGH FAILURES).
 *
 * The wait goes on through what retrying cures (a failed attempt, a lost
 * or refused connection, a failover): the library retries within --wait.
 * An outage starts at the first such failure and ends with an answer
 * about the lock (it is held, or ours). A wait gives up once an outage
 * has lasted max_ms while Redis is still failing: a server reached again
 * (connected) and not failing since keeps the wait going, for a queued
 * waiter may ask nothing for a while. Pure: the caller brings the time. */
#ifndef REDLEASE_CLI_OUTAGE_H
#define REDLEASE_CLI_OUTAGE_H

#include <stddef.h>
#include <stdint.h>

#define CLI_OUTAGE_DEFAULT_MS 60000

typedef struct cli_outage {
    int64_t max_ms;  /* --max-outage: 0 gives up at the first failure */
    int64_t since;   /* the outage's first failure (ms), or -1: none */
    int failing;     /* a failure since Redis was last reached */
    int attempts;    /* acquire attempts that failed, in all outages */
    int links;       /* connections lost or refused, in all outages */
    char last[160];  /* the last failure's text */
} cli_outage;

void cli_outage_init(cli_outage *o, int64_t max_ms);
/* A failed attempt (attempt nonzero) or a lost or refused connection at
 * now, text saying why. 1 when the wait should give up now: the outage
 * has lasted max_ms. */
int cli_outage_failed(cli_outage *o, int64_t now, int attempt, const char *text);
/* Redis was reached (a connection made): the outage's clock runs on, but
 * it ends no wait until something fails again. */
void cli_outage_reached(cli_outage *o);
/* An answer about the lock: the outage is over. 1 if there was one. */
int cli_outage_over(cli_outage *o);
/* When the outage ends the wait if Redis is still failing then (ms), or
 * -1 when none runs. */
int64_t cli_outage_deadline(const cli_outage *o);
/* At the deadline: 1 if the wait gives up (still failing). */
int cli_outage_expired(const cli_outage *o, int64_t now);
/* "N attempts failed, M connections lost or refused" (what was tried,
 * for the final message; the parts that are not 0) into buf; its length. */
size_t cli_outage_tried(const cli_outage *o, char *buf, size_t size);

#endif
