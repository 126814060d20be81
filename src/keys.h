/* SPDX-License-Identifier: MIT */
/* The one map from (prefix, resource, purpose) to a Redis key; see
 * redlease_key() in include/redlease.h for the scheme and why it is
 * one-to-one and single-slot. */
#ifndef REDLEASE_KEYS_H
#define REDLEASE_KEYS_H

#include <stddef.h>

/* 1 if prefix can go in front of every key (no hash-tag braces, at most
 * REDLEASE_MAX_PREFIX bytes). */
int rdl_key_prefix_ok(const char *prefix, size_t len);

/* The length of the key of that kind (REDLEASE_KEY_*), without NUL. */
size_t rdl_key_len(size_t prefix_len, const char *resource, size_t resource_len, int kind);

/* Writes the key (rdl_key_len() bytes, no NUL) into out. */
void rdl_key_write(char *out, const char *prefix, size_t prefix_len, const char *resource,
                   size_t resource_len, int kind);

/* The key of that kind for the resource whose lock key is lock_key
 * (keylen bytes), written into out (rdl_key_derived_len() bytes, no NUL):
 * the lock key with the kind's suffix. */
size_t rdl_key_derived_len(size_t keylen, int kind);
void rdl_key_derive(char *out, const char *lock_key, size_t keylen, int kind);

#endif
