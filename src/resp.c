/* SPDX-License-Identifier: MIT */
/* src/resp.h says what this is for. */
#include <string.h>

#include "decimal.h"
#include "resp.h"

static size_t digits(size_t v)
{
    size_t n = 1;
    while (v >= 10) v /= 10, n++;
    return n;
}

size_t rdl_resp_len(int argc, const size_t *lens)
{
    size_t n = 1 + digits((size_t)argc) + 2; /* "*N\r\n" */
    for (int i = 0; i < argc; i++) n += 1 + digits(lens[i]) + 2 + lens[i] + 2;
    return n;
}

/* "<c><v>\r\n" */
static char *header(char *p, char c, size_t v)
{
    *p++ = c;
    p += rdl_decimal(p, (int64_t)v); /* its NUL is overwritten next */
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

size_t rdl_resp_write(char *out, int argc, const char **argv, const size_t *lens)
{
    char *p = header(out, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        p = header(p, '$', lens[i]);
        memcpy(p, argv[i], lens[i]);
        p += lens[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    return (size_t)(p - out);
}
