/* SPDX-License-Identifier: MIT */
/* TLS for the hiredis binding (src/transport_tls.c): hiredis's TLS layer
 * (hiredis_ssl) runs the encrypted link; OpenSSL is used directly for what
 * hiredis leaves out, verifying the server's name and telling why a
 * handshake failed. Built without TLS, rdl_tls_new() says REDLEASE_ENOTSUP
 * (options.c refuses such a client first). */
#ifndef REDLEASE_TRANSPORT_TLS_H
#define REDLEASE_TRANSPORT_TLS_H

#include <stddef.h>

#include "redlease.h"
#include "transport.h"

struct redisContext;
typedef struct rdl_tls rdl_tls;

/* The settings of one connection's links (trusted CAs, client certificate),
 * loaded from o's files. REDLEASE_OK, or REDLEASE_ETLS (why says which
 * file and what OpenSSL found), REDLEASE_ENOMEM, REDLEASE_ENOTSUP. */
int rdl_tls_new(rdl_tls **out, const rdl_tls_config *o, char *why, size_t size);
void rdl_tls_free(rdl_tls *t);

/* Starts TLS on a context whose connect is under way: SNI, and unless
 * insecure, verification of the chain and of the name (server_name, else
 * host; an IP address is checked as one; a unix socket without
 * server_name checks the chain only). REDLEASE_OK or REDLEASE_ETLS. */
int rdl_tls_start(rdl_tls *t, struct redisContext *c, const char *host, int unix_socket, char *why,
                  size_t size);

/* 1 (and why) if the current link failed in TLS (its handshake, the
 * server's certificate or name, a protocol error), 0 for a plain
 * connection failure. Only while hiredis still holds the link (inside its
 * connect or disconnect callback). */
int rdl_tls_failed(const rdl_tls *t, char *why, size_t size);
/* The current link is gone (hiredis frees its SSL with the context). */
void rdl_tls_forget(rdl_tls *t);

#endif
