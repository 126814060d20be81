/* SPDX-License-Identifier: MIT */
/* Keys of a resource:  prefix "{" name "}" [":fence" | ":queue" | ":waiters"
 *                                           | ":holders" | ":weights"]
 *
 * One hash slot: Redis hashes only the text between the first "{" and the
 * first "}" after it when that text is not empty. The prefix has no brace,
 * so the first "{" is ours, and everything up to the first "}" after it is
 * the same for every key of one resource. The tag is empty only if name
 * starts with "}": such a name gets a backslash in front.
 *
 * One-to-one: the lock key ends with "}", each other kind with its own
 * suffix (no suffix is the end of another), so kinds never meet; within
 * one kind, name is recovered by dropping the fixed text and, if name
 * then starts with a backslash, that backslash (which is why a name
 * starting with a backslash gets one more). */
#include <string.h>

#include "keys.h"
#include "redlease.h"

/* After the closing brace, by kind (REDLEASE_KEY_*). */
static const struct {
    const char *text;
    size_t len;
} suffix[] = {
    [REDLEASE_KEY_LOCK] = {"", 0},
    [REDLEASE_KEY_FENCE] = {":fence", 6},
    [REDLEASE_KEY_QUEUE] = {":queue", 6},
    [REDLEASE_KEY_WAITERS] = {":waiters", 8},
    [REDLEASE_KEY_HOLDERS] = {":holders", 8},
    [REDLEASE_KEY_WEIGHTS] = {":weights", 8},
};

static int kind_ok(int kind) { return kind >= REDLEASE_KEY_LOCK && kind <= REDLEASE_KEY_WEIGHTS; }

static int needs_escape(const char *resource, size_t len)
{
    return len > 0 && (resource[0] == '}' || resource[0] == '\\');
}

int rdl_key_prefix_ok(const char *prefix, size_t len)
{
    return len <= REDLEASE_MAX_PREFIX && !memchr(prefix, '{', len) && !memchr(prefix, '}', len);
}

size_t rdl_key_len(size_t prefix_len, const char *resource, size_t resource_len, int kind)
{
    return prefix_len + 1 + needs_escape(resource, resource_len) + resource_len + 1 + suffix[kind].len;
}

void rdl_key_write(char *out, const char *prefix, size_t prefix_len, const char *resource,
                   size_t resource_len, int kind)
{
    memcpy(out, prefix, prefix_len);
    out += prefix_len;
    *out++ = '{';
    if (needs_escape(resource, resource_len)) *out++ = '\\';
    memcpy(out, resource, resource_len);
    out += resource_len;
    *out++ = '}';
    memcpy(out, suffix[kind].text, suffix[kind].len);
}

size_t rdl_key_derived_len(size_t keylen, int kind) { return keylen + suffix[kind].len; }

void rdl_key_derive(char *out, const char *lock_key, size_t keylen, int kind)
{
    memcpy(out, lock_key, keylen);
    memcpy(out + keylen, suffix[kind].text, suffix[kind].len);
}

int redlease_key(const char *prefix, const char *resource, size_t resource_len, int kind,
                 char *buf, size_t size, size_t *len)
{
    if (len) *len = 0;
    if (!prefix) prefix = "";
    size_t plen = strnlen(prefix, REDLEASE_MAX_PREFIX + 1);
    if (!resource || resource_len == 0 || resource_len > REDLEASE_MAX_RESOURCE || !len ||
        !kind_ok(kind) || !rdl_key_prefix_ok(prefix, plen) ||
        (size && !buf))
        return REDLEASE_EINVAL;
    *len = rdl_key_len(plen, resource, resource_len, kind);
    if (size > *len) {
        rdl_key_write(buf, prefix, plen, resource, resource_len, kind);
        buf[*len] = '\0';
    }
    return REDLEASE_OK;
}
