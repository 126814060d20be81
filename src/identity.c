/* SPDX-License-Identifier: MIT */
/* Holders' records (src/identity.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* program_invocation_short_name */
#endif
#include "identity.h"

#include "decimal.h"

#include <errno.h> /* program_invocation_short_name */
#include <string.h>
#include <unistd.h>

/* The length of the valid UTF-8 sequence at s (n bytes left) and its code
 * point, or 0: no valid sequence starts there (a stray continuation byte,
 * an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_at(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t len;
    uint32_t c, lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (b >= 0xc2 && b <= 0xdf) len = 2, c = b & 0x1f;
    else if (b >= 0xe0 && b <= 0xef) len = 3, c = b & 0x0f;
    else if (b >= 0xf0 && b <= 0xf4) len = 4, c = b & 0x07;
    else return 0;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    *cp = c;
    return len;
}

/* What a terminal would act on rather than show, or show in another
 * order than the bytes have: C1 controls and the bidirectional marks,
 * embeddings, overrides and isolates. */
static int hidden(uint32_t cp)
{
    return cp <= 0x9f || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static int host_char(unsigned char b)
{
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
           b == '.' || b == '-' || b == '_' || b == ':';
}

size_t rdl_identity_clean(char *out, size_t max, const char *s, size_t len, int host)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = u[i] < 0x80 ? 1 : host ? 0 : utf8_at(u + i, len - i, &cp);
        int keep = n == 1 ? (host ? host_char(u[i]) : u[i] >= 0x20 && u[i] != 0x7f)
                          : n > 1 && !hidden(cp);
        if (n == 0) n = 1; /* a byte of no character: one "?" each */
        if (o + (keep ? n : 1) > max) break;
        if (keep)
            memcpy(out + o, u + i, n), o += n;
        else
            out[o++] = '?';
        i += n;
    }
    out[o] = '\0';
    return o;
}

/* The name the program was started by, without its folder. */
static const char *program_name(void)
{
#if defined(__GLIBC__)
    return program_invocation_short_name;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    return getprogname();
#else
    return NULL;
#endif
}

void rdl_identity_of_process(rdl_identity *id, const char *label)
{
    if (!label) label = program_name();
    if (!label || !*label) label = "-";
    rdl_identity_clean(id->label, REDLEASE_MAX_LABEL, label, strlen(label), 0);
    char host[256];
    if (gethostname(host, sizeof host) != 0) strcpy(host, "-");
    host[sizeof host - 1] = '\0';
    if (!rdl_identity_clean(id->host, RDL_HOST_MAX, host, strlen(host), 1)) strcpy(id->host, "-");
    id->pid = (int64_t)getpid();
    rdl_identity_seal(id);
}

void rdl_identity_seal(rdl_identity *id)
{
    size_t n = rdl_decimal(id->head, id->pid);
    id->head[n++] = ' ';
    id->head_len = (uint8_t)n;
    size_t h = strlen(id->host), l = strlen(id->label);
    id->tail[0] = ' ';
    memcpy(id->tail + 1, id->host, h);
    id->tail[1 + h] = ' ';
    memcpy(id->tail + 2 + h, id->label, l);
    id->tail_len = (uint8_t)(2 + h + l);
}

/* Built by hand, not by snprintf(): a renewal by SET IFEQ rebuilds the
 * value, and snprintf() would cost it more than the rest of its command
 * (src/decimal.h). */
size_t rdl_identity_record(const rdl_identity *id, int64_t at_ms, uint64_t fence, char *out)
{
    size_t n = id->head_len;
    memcpy(out, id->head, n);
    n += rdl_decimal(out + n, at_ms < 0 ? 0 : at_ms);
    out[n++] = ' ';
    n += rdl_decimal_u(out + n, fence);
    memcpy(out + n, id->tail, id->tail_len);
    n += id->tail_len;
    out[n] = '\0';
    return n;
}

size_t rdl_identity_value(const rdl_identity *id, const char *token, int64_t at_ms, uint64_t fence,
                          char *out)
{
    memcpy(out, token, RDL_TOKEN_LEN);
    out[RDL_TOKEN_LEN] = ' ';
    return RDL_TOKEN_LEN + 1 + rdl_identity_record(id, at_ms, fence, out + RDL_TOKEN_LEN + 1);
}

/* The decimal at *s (at most 20 digits) up to the next space, which it
 * passes; -1 when there is none. */
static int word_number(const char **s, const char *end, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    int digits = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10)) return -1;
        v = v * 10 + d;
    }
    if (!digits || p == end || *p != ' ') return -1;
    *s = p + 1;
    *out = v;
    return 0;
}

int rdl_identity_parse(const char *s, size_t len, rdl_record *out)
{
    const char *end = s + len;
    uint64_t pid, at;
    if (word_number(&s, end, &pid) || word_number(&s, end, &at) || word_number(&s, end, &out->fence) ||
        pid > INT64_MAX || at > INT64_MAX)
        return -1;
    const char *sp = memchr(s, ' ', (size_t)(end - s));
    if (!sp || sp == s) return -1;
    out->pid = (int64_t)pid;
    out->at = (int64_t)at;
    rdl_identity_clean(out->host, RDL_HOST_MAX, s, (size_t)(sp - s), 1);
    rdl_identity_clean(out->label, REDLEASE_MAX_LABEL, sp + 1, (size_t)(end - sp - 1), 0);
    return 0;
}

int64_t rdl_identity_age(int64_t now, int64_t at)
{
    if (at <= 0 || now <= 0 || at > now + 1000 || now - at > (int64_t)366 * 24 * 3600 * 1000) return -1;
    return now > at ? now - at : 0;
}
