/* SPDX-License-Identifier: MIT */
/* A command in the protocol's own framing (RESP: "*N", then "$len" and the
 * bytes of each argument), written in one pass. hiredis's argv formatter
 * builds the same bytes through a growing string and a printf-like
 * routine per argument, a large share of a pipelined client's time
 * (make bench, scenario b). Pure: no hiredis here (transport_hiredis.c sends it). */
#ifndef REDLEASE_RESP_H
#define REDLEASE_RESP_H

#include <stddef.h>

/* Bytes rdl_resp_write() writes for these arguments. */
size_t rdl_resp_len(int argc, const size_t *lens);

/* Writes the command into out (rdl_resp_len() bytes, no NUL); returns its
 * length. */
size_t rdl_resp_write(char *out, int argc, const char **argv, const size_t *lens);

#endif
