/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "exit_status.h"
#include "msg.h"
#include "server.h"
#include "alloc.h"
#include "addr.h"          /* the library's parser of address lists */
#include "transport_tls.h" /* the library's TLS set-up: one place verifies names */

enum {
    OPT_HOST = 1000,
    OPT_PORT,
    OPT_SOCKET,
    OPT_DB,
    OPT_USER,
    OPT_PASSWORD_FILE,
    OPT_PASSWORD, /* refused: only here to say why */
    OPT_PREFIX,
    OPT_TIMEOUT,
    OPT_TLS,
    OPT_CACERT,
    OPT_CERT,
    OPT_KEY,
    OPT_SNI,
    OPT_INSECURE,
    OPT_SENTINEL,
    OPT_MASTER,
    OPT_CLUSTER,
    OPT_QUORUM,
    OPT_RESTART_GUARD
};

const cli_opt cli_server_opts[] = {
    {"host", 'H', 1, OPT_HOST},
    {"port", 'p', 1, OPT_PORT},
    {"socket", 's', 1, OPT_SOCKET},
    {"db", 0, 1, OPT_DB},
    {"user", 0, 1, OPT_USER},
    {"password-file", 0, 1, OPT_PASSWORD_FILE},
    {"password", 'a', 1, OPT_PASSWORD},
    {"prefix", 0, 1, OPT_PREFIX},
    {"timeout", 0, 1, OPT_TIMEOUT},
    {"tls", 0, 0, OPT_TLS},
    {"cacert", 0, 1, OPT_CACERT},
    {"cert", 0, 1, OPT_CERT},
    {"key", 0, 1, OPT_KEY},
    {"sni", 0, 1, OPT_SNI},
    {"insecure", 0, 0, OPT_INSECURE},
    {"sentinel", 0, 1, OPT_SENTINEL},
    {"master", 0, 1, OPT_MASTER},
    {"cluster", 0, 1, OPT_CLUSTER},
    {"quorum", 0, 1, OPT_QUORUM},
    {"restart-guard", 0, 1, OPT_RESTART_GUARD},
    {NULL, 0, 0, 0},
};

#define MAX_PASSWORD 4096

void cli_server_init(cli_server *s)
{
    redlease_client_options d;
    redlease_client_options_init(&d);
    memset(s, 0, sizeof *s);
    s->host = REDLEASE_DEFAULT_HOST;
    s->port = REDLEASE_DEFAULT_PORT;
    s->prefix = d.key_prefix;
    s->timeout_ms = d.command_timeout_ms;
}

/* A TLS file or name: any non-empty value. */
static int take_path(const cli_args *a, const char **to)
{
    if (!a->value[0]) return cli_usage_error("%s: empty value", a->name);
    *to = a->value;
    return 0;
}

/* --quorum: 2 to REDLEASE_MAX_QUORUM servers, each once (the library's
 * rule: one server listed twice would count twice toward the majority). */
static int take_quorum(cli_server *s, const cli_args *a)
{
    rdl_addr addrs[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(a->value, addrs, REDLEASE_MAX_QUORUM);
    if (n == -2) return cli_usage_error("out of memory");
    int twice = -1;
    for (int i = 0; i < n && twice < 0; i++)
        for (int j = 0; j < i && twice < 0; j++)
            if (addrs[i].port == addrs[j].port && strcmp(addrs[i].host, addrs[j].host) == 0) twice = i;
    if (twice >= 0)
        cli_usage_error("%s: %s:%d is listed twice (each server counts once toward the majority)",
                        a->name, addrs[twice].host, addrs[twice].port);
    if (n > 0) rdl_addr_list_free(addrs, n);
    if (twice >= 0) return CLI_EXIT_USAGE;
    if (n < 2)
        return cli_usage_error("%s: expected HOST:PORT,HOST:PORT[,...] (2 to %d servers; IPv6 "
                               "as [ADDR]:PORT), got '%s'", a->name, REDLEASE_MAX_QUORUM, a->value);
    s->quorum = a->value;
    s->quorum_n = n;
    return 0;
}

int cli_server_take(cli_server *s, const cli_args *a, int id)
{
    int64_t n;
    size_t klen;
    switch (id) {
    case OPT_HOST:
        if (!a->value[0]) return cli_usage_error("%s: empty host name", a->name);
        s->host = a->value;
        s->host_given = 1;
        return 0;
    case OPT_PORT:
        if (cli_args_number(a, 1, 65535, &n)) return CLI_EXIT_USAGE;
        s->port = (int)n;
        s->port_given = 1;
        return 0;
    case OPT_SOCKET:
        if (!a->value[0]) return cli_usage_error("%s: empty path", a->name);
        s->socket = a->value;
        return 0;
    case OPT_DB:
        if (cli_args_number(a, 0, INT_MAX, &n)) return CLI_EXIT_USAGE;
        s->db = (int)n;
        return 0;
    case OPT_USER:
        if (!a->value[0]) return cli_usage_error("%s: empty user name", a->name);
        s->user = a->value;
        return 0;
    case OPT_PASSWORD_FILE:
        s->password_file = a->value;
        return 0;
    case OPT_PASSWORD:
        return cli_usage_error("%s: a password on the command line would show in ps; "
                               "use REDLEASE_PASSWORD or --password-file FILE", a->name);
    case OPT_PREFIX:
        /* "" is allowed: the key is {RESOURCE}. The library's own rule
         * decides (man 3 redlease, KEYS): braces would move the hash tag. */
        if (redlease_key(a->value, "x", 1, REDLEASE_KEY_LOCK, NULL, 0, &klen) != REDLEASE_OK)
            return cli_usage_error("%s: at most %d bytes and no '{' or '}'", a->name,
                                   REDLEASE_MAX_PREFIX);
        s->prefix = a->value;
        return 0;
    case OPT_TLS: s->tls.enable = 1; return 0;
    case OPT_INSECURE: s->tls.insecure = 1; return 0;
    case OPT_CACERT: return take_path(a, &s->tls.ca_file);
    case OPT_CERT: return take_path(a, &s->tls.cert_file);
    case OPT_KEY: return take_path(a, &s->tls.key_file);
    case OPT_SNI: return take_path(a, &s->tls.server_name);
    case OPT_TIMEOUT:
        if (cli_args_number(a, 1, REDLEASE_MAX_TIMEOUT_MS, &n)) return CLI_EXIT_USAGE;
        s->timeout_ms = n;
        return 0;
    case OPT_SENTINEL:
    case OPT_CLUSTER: {
        int max = id == OPT_SENTINEL ? REDLEASE_MAX_SENTINELS : REDLEASE_MAX_SEEDS;
        if (rdl_addr_list_parse(a->value, NULL, max) < 0)
            return cli_usage_error("%s: expected HOST:PORT[,HOST:PORT...] (at most %d; IPv6 as "
                                   "[ADDR]:PORT), got '%s'", a->name, max, a->value);
        *(id == OPT_SENTINEL ? &s->sentinels : &s->cluster) = a->value;
        return 0;
    }
    case OPT_QUORUM:
        return take_quorum(s, a);
    case OPT_RESTART_GUARD: /* the library's quorum_restart_guard_ms */
        s->restart_guard_given = 1;
        if (strcmp(a->value, "off") == 0) {
            s->restart_guard = REDLEASE_RESTART_GUARD_OFF;
            return 0;
        }
        return cli_args_number(a, 1, REDLEASE_MAX_TTL_MS, &s->restart_guard) ? CLI_EXIT_USAGE : 0;
    case OPT_MASTER:
        if (!a->value[0] || strlen(a->value) > 200)
            return cli_usage_error("%s: 1 to 200 bytes", a->name);
        s->master = a->value;
        return 0;
    default:
        return cli_usage_error("internal: unknown server option %d", id);
    }
}

/* The first line of path, without its line end. Refused when others may
 * read the file: a password there is no secret. Only a regular file: a
 * FIFO, which <(...) is, could hang (O_NONBLOCK keeps open() from waiting
 * for a writer) and cannot have its mode trusted. */
static int read_password_file(cli_server *s, const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return cli_usage_error("--password-file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cli_usage_error("--password-file %s: not a regular file (a pipe or <(...) is "
                               "refused)", path);
    }
    if (st.st_mode & S_IROTH) {
        close(fd);
        return cli_usage_error("--password-file %s: readable by others (chmod o-r it)", path);
    }
    char buf[MAX_PASSWORD + 2];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return cli_usage_error("--password-file %s: %s", path, strerror(e));
        }
        if (n == 0 || (len += (size_t)n) == sizeof buf - 1) break;
    }
    close(fd);
    buf[len] = '\0';
    len = strcspn(buf, "\n");
    if (len > 0 && buf[len - 1] == '\r') len--;
    buf[len] = '\0';
    int rc = 0;
    if (len == 0)
        rc = cli_usage_error("--password-file %s: the first line is empty", path);
    else if (len > MAX_PASSWORD)
        rc = cli_usage_error("--password-file %s: the password is longer than %d bytes", path,
                             MAX_PASSWORD);
    else if (!(s->password = strdup(buf)))
        rc = cli_usage_error("out of memory");
    memset(buf, 0, sizeof buf);
    return rc;
}

int cli_server_finish(cli_server *s)
{
    int64_t n;
    /* The environment fills in only what the command line left open; a
     * --host or --port given there means TCP, whatever REDLEASE_SOCKET says. */
    int tcp_given = s->host_given || s->port_given;
    const char *env_socket = getenv("REDLEASE_SOCKET");
    const char *env_host = getenv("REDLEASE_HOST");
    const char *env_port = getenv("REDLEASE_PORT");
    if (s->socket && tcp_given)
        return cli_usage_error("--socket and --host/--port exclude each other");
    if (s->quorum && (s->socket || tcp_given || s->sentinels || s->cluster))
        return cli_usage_error("--quorum names its servers: no --socket, --host, --port, "
                               "--sentinel or --cluster");
    if (s->restart_guard_given && !s->quorum)
        return cli_usage_error("--restart-guard is about the servers of --quorum");
    if (!s->sentinels != !s->master) return cli_usage_error("--sentinel and --master go together");
    if (s->sentinels && (s->socket || tcp_given))
        return cli_usage_error("--sentinel finds the primary: no --socket, --host or --port");
    if (s->cluster && (s->socket || tcp_given || s->sentinels || s->db))
        return cli_usage_error("--cluster names the nodes: no --socket, --host, --port, "
                               "--sentinel or --db");
    if (!s->socket && !tcp_given && env_socket && env_socket[0]) s->socket = env_socket;
    /* REDLEASE_HOST and REDLEASE_PORT only matter for TCP: a bad one next
     * to a socket is not an error. */
    if (!s->socket && !s->host_given && env_host && env_host[0]) s->host = env_host;
    if (!s->socket && !s->port_given && env_port && env_port[0]) {
        if (cli_parse_number("REDLEASE_PORT", env_port, 1, 65535, &n)) return CLI_EXIT_USAGE;
        s->port = (int)n;
    }

    if (s->password_file) {
        if (read_password_file(s, s->password_file)) return CLI_EXIT_USAGE;
    } else {
        const char *env_password = getenv("REDLEASE_PASSWORD");
        if (env_password && env_password[0] && !(s->password = strdup(env_password)))
            return cli_usage_error("out of memory");
    }
    if (s->user && !s->password)
        return cli_usage_error("--user needs a password (REDLEASE_PASSWORD or --password-file)");
    /* As with redis-cli, the TLS settings mean nothing without --tls; here
     * they are refused rather than ignored, so nobody thinks they are used. */
    const rdl_tls_config *t = &s->tls;
    if (!t->enable && (t->ca_file || t->cert_file || t->key_file || t->server_name || t->insecure))
        return cli_usage_error("--cacert, --cert, --key, --sni and --insecure need --tls");
    if (!t->cert_file != !t->key_file) return cli_usage_error("--cert and --key go together");

    const char *env_sentinel_password = getenv("REDLEASE_SENTINEL_PASSWORD");
    if (s->sentinels && env_sentinel_password && env_sentinel_password[0] &&
        !(s->sentinel_password = strdup(env_sentinel_password)))
        return cli_usage_error("out of memory");

    if (s->quorum) {
        s->socket = NULL; /* REDLEASE_SOCKET does not say where the servers are */
        snprintf(s->where, sizeof s->where, "quorum %.250s", s->quorum);
    } else if (s->cluster) {
        s->socket = NULL; /* REDLEASE_SOCKET does not say where the nodes are */
        /* status starts at the first node listed (run asks them all) */
        const char *h;
        size_t hn;
        int port;
        const char *comma = strchr(s->cluster, ',');
        rdl_addr_parse(s->cluster, comma ? (size_t)(comma - s->cluster) : strlen(s->cluster), &h, &hn, &port);
        if (hn >= sizeof s->seed_host) return cli_usage_error("--cluster: host name too long");
        memcpy(s->seed_host, h, hn);
        s->seed_host[hn] = '\0';
        s->host = s->seed_host;
        s->port = port;
        snprintf(s->where, sizeof s->where, "Cluster %.250s", s->cluster);
    } else if (s->sentinels) {
        s->socket = NULL; /* REDLEASE_SOCKET does not say where the primary is */
        snprintf(s->where, sizeof s->where, "master '%s' (Sentinel %.200s)", s->master, s->sentinels);
    } else if (s->socket) {
        snprintf(s->where, sizeof s->where, "unix:%s", s->socket);
        rdl_addr_name(s->node, sizeof s->node, NULL, 0, s->socket);
    } else {
        rdl_addr_name(s->node, sizeof s->node, s->host, s->port, NULL); /* [ADDR]:PORT for IPv6 */
        snprintf(s->where, sizeof s->where, "%s", s->node);
    }
    return 0;
}

/* Starts TLS on ctx to host, when --tls was given. 0, or -1 and why. */
static int start_tls_to(const cli_server *s, redisContext *ctx, const char *host, int unix_socket,
                        char *why, size_t size)
{
    if (!s->tls.enable) return 0;
    rdl_tls *t = NULL;
    int rc = rdl_tls_new(&t, &s->tls, why, size);
    if (rc == REDLEASE_OK) rc = rdl_tls_start(t, ctx, host, unix_socket, why, size);
    rdl_tls_free(t); /* an SSL holds a reference to what it needs */
    return rc == REDLEASE_OK ? 0 : -1;
}

/* A blocking connection to Sentinel a, with TLS and its password when
 * asked; NULL and why. */
static redisContext *connect_sentinel(const cli_server *s, const rdl_addr *a, char *why,
                                      size_t size)
{
    struct timeval tv = {(time_t)(s->timeout_ms / 1000), (suseconds_t)(s->timeout_ms % 1000 * 1000)};
    redisContext *ctx = redisConnectWithTimeout(a->host, a->port, tv);
    if (!ctx || ctx->err) {
        snprintf(why, size, "%s", ctx ? ctx->errstr : "out of memory");
    } else if (redisSetTimeout(ctx, tv) != REDIS_OK) {
        snprintf(why, size, "cannot set the timeout");
    } else if (start_tls_to(s, ctx, a->host, 0, why, size) == 0) {
        if (!s->sentinel_password) return ctx;
        redisReply *r = redisCommand(ctx, "AUTH %s", s->sentinel_password);
        int ok = r && r->type != REDIS_REPLY_ERROR;
        snprintf(why, size, "AUTH: %s", r ? r->str : ctx->errstr);
        freeReplyObject(r);
        if (ok) return ctx;
    }
    if (ctx) redisFree(ctx);
    return NULL;
}

/* What SENTINEL get-master-addr-by-name answered: 0 and the primary in s,
 * or -1 and why. */
static int take_answer(cli_server *s, const redisContext *ctx, const redisReply *r, char *why,
                       size_t size)
{
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
        free(s->found_host);
        s->found_host = strdup(r->element[0]->str);
        s->port = atoi(r->element[1]->str);
        if (!s->found_host || s->port < 1 || s->port > 65535) {
            snprintf(why, size, "%s", s->found_host ? "a port out of range" : "out of memory");
            return -1;
        }
        s->host = s->found_host;
        return 0;
    }
    if (r && r->type == REDIS_REPLY_NIL)
        snprintf(why, size, "does not know master '%s'", s->master);
    else
        snprintf(why, size, "%s", !r ? ctx->errstr : r->type == REDIS_REPLY_ERROR ? r->str
                                                                               : "unexpected answer");
    return -1;
}

/* One Sentinel's answer: 0 and the primary in s, or -1 and why. */
static int ask_sentinel(cli_server *s, const rdl_addr *a, char *why, size_t size)
{
    char err[256];
    int rc = -1;
    redisContext *ctx = connect_sentinel(s, a, err, sizeof err);
    if (ctx) {
        redisReply *r = redisCommand(ctx, "SENTINEL get-master-addr-by-name %s", s->master);
        rc = take_answer(s, ctx, r, err, sizeof err);
        freeReplyObject(r);
        redisFree(ctx);
    }
    if (rc) snprintf(why, size, "Sentinel %s:%d: %s", a->host, a->port, err);
    return rc;
}

int cli_server_find_primary(cli_server *s, char *why, size_t size)
{
    if (!s->sentinels) return 0;
    rdl_addr addrs[REDLEASE_MAX_SENTINELS];
    int n = rdl_addr_list_parse(s->sentinels, addrs, REDLEASE_MAX_SENTINELS);
    if (n < 0) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    int rc = -1;
    for (int i = 0; i < n && rc; i++) rc = ask_sentinel(s, &addrs[i], why, size);
    rdl_addr_list_free(addrs, n > 0 ? n : 0);
    return rc;
}

void cli_server_client_options(const cli_server *s, redlease_client_options *o)
{
    redlease_client_options_init(o);
    if (s->quorum) {
        o->topology = REDLEASE_TOPOLOGY_QUORUM;
        o->quorum_addrs = s->quorum;
        o->quorum_restart_guard_ms = s->restart_guard; /* 0: the lease's TTL */
    } else if (s->cluster) {
        o->topology = REDLEASE_TOPOLOGY_CLUSTER;
        o->cluster_addrs = s->cluster;
    } else if (s->sentinels) {
        o->topology = REDLEASE_TOPOLOGY_SENTINEL;
        o->sentinel_addrs = s->sentinels;
        o->sentinel_master_name = s->master;
        o->sentinel_password = s->sentinel_password;
        o->sentinel_tls = s->tls.enable;
    } else if (s->socket) {
        o->unix_path = s->socket;
    } else {
        o->host = s->host;
        o->port = s->port;
    }
    o->username = s->user;
    o->password = s->password;
    o->db = s->db;
    o->key_prefix = s->prefix;
    o->connect_timeout_ms = s->timeout_ms;
    o->command_timeout_ms = s->timeout_ms;
    o->tls = s->tls.enable;
    if (s->tls.enable) { /* else the tls_* must stay unset */
        o->tls_ca_file = s->tls.ca_file;
        o->tls_ca_dir = s->tls.ca_dir;
        o->tls_cert_file = s->tls.cert_file;
        o->tls_key_file = s->tls.key_file;
        o->tls_server_name = s->tls.server_name;
        o->tls_insecure = s->tls.insecure;
    }
}

int cli_server_start_tls(const cli_server *s, struct redisContext *ctx, char *why, size_t size)
{
    return start_tls_to(s, ctx, s->host, s->socket != NULL, why, size);
}

/* Wipes and frees a secret. */
static void forget(char **secret)
{
    if (!*secret) return;
    volatile char *p = *secret;
    while (*p) *p++ = '\0';
    free(*secret);
    *secret = NULL;
}

void cli_server_free(cli_server *s)
{
    forget(&s->password);
    forget(&s->sentinel_password);
    free(s->found_host);
    s->found_host = NULL;
}
