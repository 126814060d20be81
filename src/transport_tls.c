/* SPDX-License-Identifier: MIT */
/* TLS for the hiredis binding: see transport_tls.h. hiredis_ssl gives the
 * encrypted link (redisInitiateSSL); the SSL object is ours to set up, so
 * that the server's name is verified (hiredis only sends it as SNI) and a
 * failed handshake can be told apart from a dropped connection, with
 * OpenSSL's reason (hiredis's text for it is often "Success"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "transport_tls.h"

#ifdef RDL_HAVE_TLS

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>

struct rdl_tls {
    SSL_CTX *ctx;
    int verify;          /* !insecure */
    char *server_name;   /* copy, or NULL */
    SSL *ssl;            /* the current link's, owned by hiredis once started */
};

/* OpenSSL's reason for the last failure, after what we were doing. */
static void reason(const char *what, char *why, size_t size)
{
    unsigned long e = ERR_peek_last_error();
    char buf[200] = "unknown error";
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    snprintf(why, size, "TLS: %s: %s", what, buf);
    ERR_clear_error();
}

/* OpenSSL says "system lib" for a file it cannot read: say why. */
static int readable(const char *path, char *why, size_t size)
{
    if (!path || access(path, R_OK) == 0) return 1;
    snprintf(why, size, "TLS: %s: %s", path, strerror(errno));
    return 0;
}

static int tls_failure(SSL *ssl, char *why, size_t size);

static int load(rdl_tls *t, const rdl_tls_config *o, char *why, size_t size)
{
    if (!readable(o->ca_file, why, size) || !readable(o->cert_file, why, size) ||
        !readable(o->key_file, why, size))
        return REDLEASE_ETLS;
    if (o->ca_file || o->ca_dir) {
        if (SSL_CTX_load_verify_locations(t->ctx, o->ca_file, o->ca_dir) != 1) {
            reason(o->ca_file ? o->ca_file : o->ca_dir, why, size);
            return REDLEASE_ETLS;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        reason("the system's CA certificates", why, size);
        return REDLEASE_ETLS;
    }
    if (o->cert_file) {
        if (SSL_CTX_use_certificate_chain_file(t->ctx, o->cert_file) != 1) {
            reason(o->cert_file, why, size);
            return REDLEASE_ETLS;
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx) != 1) {
            reason(o->key_file, why, size);
            return REDLEASE_ETLS;
        }
    }
    return REDLEASE_OK;
}

int rdl_tls_new(rdl_tls **out, const rdl_tls_config *o, char *why, size_t size)
{
    *out = NULL;
    rdl_tls *t = rdl_calloc(1, sizeof *t);
    int ok = 1;
    if (t) t->server_name = rdl_strdup(o->server_name, &ok);
    if (!t || !ok) {
        rdl_tls_free(t);
        snprintf(why, size, "TLS: out of memory");
        return REDLEASE_ENOMEM;
    }
    t->verify = !o->insecure;
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        reason("SSL_CTX_new", why, size);
        rdl_tls_free(t);
        return REDLEASE_ETLS;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    int rc = load(t, o, why, size);
    if (rc) {
        rdl_tls_free(t);
        return rc;
    }
    *out = t;
    return REDLEASE_OK;
}

void rdl_tls_free(rdl_tls *t)
{
    if (!t) return;
    if (t->ctx) SSL_CTX_free(t->ctx);
    rdl_free(t->server_name);
    rdl_free(t);
}

static int is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* SNI, and the name (or address) the certificate must carry. */
static int name_ssl(rdl_tls *t, SSL *ssl, const char *host, int unix_socket)
{
    const char *name = t->server_name ? t->server_name : unix_socket ? NULL : host;
    if (!name) return 1;
    if (!is_ip(name) && SSL_set_tlsext_host_name(ssl, name) != 1) return 0;
    if (!t->verify) return 1;
    X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
    if (is_ip(name)) return X509_VERIFY_PARAM_set1_ip_asc(p, name) == 1;
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(p, name, 0) == 1;
}

int rdl_tls_start(rdl_tls *t, struct redisContext *c, const char *host, int unix_socket, char *why,
                  size_t size)
{
    t->ssl = NULL;
    ERR_clear_error();
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl || !name_ssl(t, ssl, host, unix_socket)) {
        reason("setting up the link", why, size);
        if (ssl) SSL_free(ssl);
        return REDLEASE_ETLS;
    }
    /* The handshake may end here already (a fast server on loopback). */
    if (redisInitiateSSL(c, ssl) != REDIS_OK) { /* the SSL stays ours then */
        if (!tls_failure(ssl, why, size))
            snprintf(why, size, "TLS: %s", c->errstr[0] ? c->errstr : "could not start");
        SSL_free(ssl);
        return REDLEASE_ETLS;
    }
    t->ssl = ssl;
    return REDLEASE_OK;
}

/* 1 and why if ssl failed in TLS: the server's certificate refused, or
 * an error OpenSSL queued (a protocol error, an alert from the server).
 * The queue is the thread's: an error a program's own OpenSSL calls left
 * in it would make a dropped link read as a TLS failure. */
static int tls_failure(SSL *ssl, char *why, size_t size)
{
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
        snprintf(why, size, "TLS: the server's certificate was refused: %s",
                 X509_verify_cert_error_string(v));
        ERR_clear_error();
        return 1;
    }
    if (ERR_peek_last_error() != 0) {
        reason(SSL_is_init_finished(ssl) ? "the link failed" : "the handshake failed", why, size);
        return 1;
    }
    return 0;
}

int rdl_tls_failed(const rdl_tls *t, char *why, size_t size)
{
    return t && t->ssl && tls_failure(t->ssl, why, size);
}

void rdl_tls_forget(rdl_tls *t)
{
    if (t) t->ssl = NULL;
}

#else /* !RDL_HAVE_TLS */

int rdl_tls_new(rdl_tls **out, const rdl_tls_config *o, char *why, size_t size)
{
    (void)o;
    *out = NULL;
    snprintf(why, size, "TLS: this build of redlease has no TLS support");
    return REDLEASE_ENOTSUP;
}

void rdl_tls_free(rdl_tls *t) { (void)t; }

int rdl_tls_start(rdl_tls *t, struct redisContext *c, const char *host, int unix_socket, char *why,
                  size_t size)
{
    (void)t, (void)c, (void)host, (void)unix_socket;
    snprintf(why, size, "TLS: this build of redlease has no TLS support");
    return REDLEASE_ENOTSUP;
}

int rdl_tls_failed(const rdl_tls *t, char *why, size_t size)
{
    (void)t, (void)why, (void)size;
    return 0;
}

void rdl_tls_forget(rdl_tls *t) { (void)t; }

#endif
