/* SPDX-License-Identifier: MIT */
/* Server addresses as users and servers write them (src/addr.c): the
 * lists of Sentinels and Cluster seeds in the client's options, and the
 * address in a Cluster redirect ("MOVED 3999 127.0.0.1:6381"). */
#ifndef REDLEASE_ADDR_H
#define REDLEASE_ADDR_H

#include <stddef.h>

typedef struct rdl_addr {
    char *host;
    int port;
} rdl_addr;

/* A port: 1 to 65535, digits only (n bytes); or -1. */
int rdl_addr_parse_port(const char *p, size_t n);
/* One "HOST:PORT" or "[ADDR]:PORT" of n bytes: 0 with the host in
 * [*h, *h + *hn) and *port, or -1. */
int rdl_addr_parse(const char *p, size_t n, const char **h, size_t *hn, int *port);
/* Splits "HOST:PORT[,HOST:PORT...]" (IPv6 as [ADDR]:PORT) into at most max
 * addresses; hosts are copies (out NULL: only checks). The count, or -1
 * for a list that cannot work, or -2 when out of memory (what was copied
 * is freed). */
int rdl_addr_list_parse(const char *list, rdl_addr *out, int max);
/* Frees the hosts of n addresses. */
void rdl_addr_list_free(rdl_addr *a, int n);

#endif
