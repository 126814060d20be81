/* SPDX-License-Identifier: MIT */
/* SHA-1, only to name the Lua scripts for EVALSHA without asking the
 * server (SCRIPT LOAD): the server caches a script under the same digest
 * the first time it runs it by EVAL. Not used for anything secret. */
#ifndef REDLEASE_SHA1_H
#define REDLEASE_SHA1_H

#include <stddef.h>

/* hex gets 40 lowercase hex digits and a NUL. */
void rdl_sha1_hex(const void *data, size_t len, char hex[41]);

#endif
