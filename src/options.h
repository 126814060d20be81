/* SPDX-License-Identifier: MIT */
/* The public options' defaults and checks (src/options.c). Arguments that
 * cannot work are refused with REDLEASE_EINVAL by the call that takes
 * them, never discovered later. Pure: it reads the option structs only. */
#ifndef REDLEASE_OPTIONS_H
#define REDLEASE_OPTIONS_H

#include <stdint.h>

#include "redlease.h"

/* The caller's options as this library knows them (src/options.c, and
 * include/redlease.h on struct_size): out gets the defaults, then what the
 * caller's struct_size covers. REDLEASE_OK; REDLEASE_EINVAL for options
 * not made by their _init(); REDLEASE_ENOTSUP for a field of a newer
 * header that is set. Every check and use reads out, never o. */
int rdl_client_options_take(const redlease_client_options *o, redlease_client_options *out,
                            const char **why);
int rdl_lock_options_take(const redlease_lock_options *o, redlease_lock_options *out);

/* REDLEASE_OK, or REDLEASE_EINVAL, REDLEASE_ENOTSUP (TLS asked of a build
 * without it) or REDLEASE_ENOMEM with *why (why may be NULL): a static
 * text naming the field, or the fields that conflict. */
int rdl_client_options_check(const redlease_client_options *o, const char **why);
int rdl_lock_options_check(const redlease_lock_options *o);
/* The WAIT timeout a lock with these (checked) options uses under a client
 * with this command timeout: 0 when it asks for no acknowledgement,
 * REDLEASE_EINVAL when it could not answer before the command times out. */
int64_t rdl_replica_timeout(const redlease_lock_options *o, int64_t command_timeout);

#endif
