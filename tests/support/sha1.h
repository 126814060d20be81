/* SPDX-License-Identifier: MIT */
/* SHA-1, only for the names of the Lua scripts: EVALSHA names a script by
 * the digest the server caches it under the first time it runs it by EVAL,
 * so nothing asks the server (SCRIPT LOAD). The library sends the digests
 * src/scripts.c writes out; this is what the tests check them against and
 * what the fake servers name scripts by. Not used for anything secret. */
#ifndef REDLEASE_SHA1_H
#define REDLEASE_SHA1_H

#include <stddef.h>

/* hex gets 40 lowercase hex digits and a NUL. */
void rdl_sha1_hex(const void *data, size_t len, char hex[41]);

#endif
