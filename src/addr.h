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

/* What texts and events call a server: "HOST:PORT", an IPv6 address as
 * "[ADDR]:PORT" (so the port stays readable), a unix socket by its path.
 * Room for the longest host a list or a redirect may name (255 bytes). */
#define RDL_ADDR_NAME_MAX 264
/* Writes the name of the server at host and port, or at unix_path when
 * set, into out (cut to fit, NUL-terminated); "" for neither. Its length. */
size_t rdl_addr_name(char *out, size_t size, const char *host, int port, const char *unix_path);

#endif
