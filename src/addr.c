/* SPDX-License-Identifier: MIT */
/* Server addresses as users and servers write them (src/addr.h). */
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "alloc.h"

int rdl_addr_parse_port(const char *p, size_t n)
{
    if (n == 0 || n > 5) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= 65535 ? v : -1;
}

int rdl_addr_parse(const char *p, size_t n, const char **h, size_t *hn, int *port)
{
    const char *colon;
    if (n > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close || close + 1 >= p + n || close[1] != ':') return -1;
        *h = p + 1;
        *hn = (size_t)(close - p - 1);
        colon = close + 1;
    } else {
        colon = NULL;
        for (const char *q = p; q < p + n; q++)
            if (*q == ':') colon = q; /* the last one */
        if (!colon || memchr(p, ':', (size_t)(colon - p))) return -1; /* IPv6 needs [] */
        *h = p;
        *hn = (size_t)(colon - p);
    }
    if (*hn == 0 || *hn > 255) return -1;
    *port = rdl_addr_parse_port(colon + 1, (size_t)(p + n - colon - 1));
    return *port < 0 ? -1 : 0;
}

int rdl_addr_list_parse(const char *list, rdl_addr *out, int max)
{
    if (!list || !list[0]) return -1;
    int count = 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *h;
        size_t hn;
        int port;
        if (count == max || rdl_addr_parse(p, n, &h, &hn, &port) != 0) goto bad;
        if (out) {
            out[count].host = rdl_malloc(hn + 1);
            if (!out[count].host) {
                count = -count - 1; /* free what was copied, then say ENOMEM */
                goto bad;
            }
            memcpy(out[count].host, h, hn);
            out[count].host[hn] = '\0';
            out[count].port = port;
        }
        count++;
        if (!end) return count;
        p = end + 1;
    }
bad:
    if (out) rdl_addr_list_free(out, count < 0 ? -count - 1 : count);
    return count < 0 ? -2 : -1;
}

void rdl_addr_list_free(rdl_addr *a, int n)
{
    for (int i = 0; i < n; i++) {
        rdl_free(a[i].host);
        a[i].host = NULL;
    }
}

size_t rdl_addr_name(char *out, size_t size, const char *host, int port, const char *unix_path)
{
    int n;
    if (unix_path)
        n = snprintf(out, size, "%s", unix_path);
    else if (!host)
        n = snprintf(out, size, "%s", "");
    else if (strchr(host, ':'))
        n = snprintf(out, size, "[%s]:%d", host, port);
    else
        n = snprintf(out, size, "%s:%d", host, port);
    if (n < 0) n = 0, out[0] = '\0';
    return (size_t)n < size ? (size_t)n : size - 1;
}
