/* SPDX-License-Identifier: MIT */
/* What status shows of who holds and who waits, read by the library's own
 * reader (src/inspect_view.h) from the replies status got with hiredis
 * (cli/direct.h): the waiters' lines, and status --json (man 1, STATUS AS
 * JSON). */
#ifndef REDLEASE_CLI_VIEW_H
#define REDLEASE_CLI_VIEW_H

#include <stdio.h>

#include <hiredis/hiredis.h>

#include "inspect_view.h"

/* The replies view_read() reads, in this order: what RDL_SCRIPT_INSPECT
 * returns, here from a MULTI/EXEC of the same reads. */
enum { CLI_VIEW_PTTL, CLI_VIEW_VALUE, CLI_VIEW_FENCE, CLI_VIEW_TIME, CLI_VIEW_HOLDERS, CLI_VIEW_WEIGHTS,
       CLI_VIEW_QUEUE, CLI_VIEW_WAITERS, CLI_VIEW_READS };

/* Reads the CLI_VIEW_READS replies into v (rdl_inspect_parse); 0, or
 * REDLEASE_EPROTO or REDLEASE_ENOMEM (v still to be cleared). A key of
 * another type (an error reply, WRONGTYPE) is read as none: bit i of
 * *mended says reply i was one. */
int cli_view_read(redisReply *const got[CLI_VIEW_READS], redlease_inspection *v, unsigned *mended);

/* Prints v's waiters, in queue order, a line each after prefix (the
 * server and key status starts its lines with): "waiter: exclusive,
 * waiting N ms; by LABEL (pid P on HOST)". */
void cli_view_print_waiters(const char *prefix, const redlease_inspection *v, int show_token);

/* Prints v as one JSON object and a newline (man 1, STATUS AS JSON): held
 * 1, 0, or -1 (cannot tell). */
void cli_view_print_json(FILE *out, const char *resource, const char *key, const redlease_inspection *v,
                         int held, int show_token);

#endif
