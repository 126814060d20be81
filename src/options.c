/* SPDX-License-Identifier: MIT */
/* Option defaults and validation (src/options.h). */
#include "options.h"

#include <string.h>

#include "addr.h"
#include "keys.h"
#include "lease_math.h"

static void client_defaults(redlease_client_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->key_prefix = "lock:";
    o->connect_timeout_ms = 2000;
    o->command_timeout_ms = 2000;
    o->reconnect_min_ms = 50;
    o->reconnect_max_ms = 2000;
}

static void lock_defaults(redlease_lock_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->ttl_ms = 30000;
    o->wait_retry_base_ms = 50;
    o->wait_retry_max_ms = 1000;
    o->wait_jitter = REDLEASE_JITTER_FULL;
    /* replica_scope REDLEASE_REPLICA_SCOPE_ALL (0): with replica_acks, a
     * renewal a failover could lose would let the local deadline outlive
     * the replica's key */
}

/* The caller's struct of size bytes gets the defaults this library knows
 * (all of it for an older header's smaller struct; a newer header's
 * larger one has the fields this library does not know zeroed). */
static void init_sized(void *o, size_t size, const void *defaults, size_t known)
{
    memcpy(o, defaults, size < known ? size : known);
    if (size > known) memset((char *)o + known, 0, size - known);
    memcpy(o, &size, sizeof size); /* struct_size, first in both structs */
}

void redlease_client_options_init_sized(redlease_client_options *o, size_t size)
{
    if (!o || size < sizeof o->struct_size) return;
    redlease_client_options d;
    client_defaults(&d);
    init_sized(o, size, &d, sizeof d);
}

void redlease_lock_options_init_sized(redlease_lock_options *o, size_t size)
{
    if (!o || size < sizeof o->struct_size) return;
    redlease_lock_options d;
    lock_defaults(&d);
    init_sized(o, size, &d, sizeof d);
}

/* The options as this library knows them, into out (its own size): the
 * defaults, then the caller's struct_size bytes. The first version with
 * struct_size (0.2.0) is the smallest a caller can have; bytes past what
 * this library knows must be zero (fields of a newer header, unset). */
#define RDL_CLIENT_OPTIONS_MIN sizeof(redlease_client_options) /* 0.2.0's: freeze when growing */
#define RDL_LOCK_OPTIONS_MIN sizeof(redlease_lock_options)     /* 0.2.0's: freeze when growing */

/* A newer header adds a few fields: a struct_size further past what this
 * library knows is garbage (options not made by their _init), and is not
 * read past. */
#define RDL_OPTIONS_GROWTH_MAX 4096

static int take(const void *o, void *out, size_t min, size_t known, const char **why)
{
    size_t size;
    memcpy(&size, o, sizeof size);
    if (size < min || (size > known && size - known > RDL_OPTIONS_GROWTH_MAX)) {
        *why = "struct_size: options not made by their _init()";
        return REDLEASE_EINVAL;
    }
    for (size_t i = known; i < size; i++)
        if (((const unsigned char *)o)[i]) {
            *why = "options of a newer redlease.h set a field this library does not know";
            return REDLEASE_ENOTSUP;
        }
    memcpy(out, o, size < known ? size : known);
    memcpy(out, &known, sizeof known);
    return REDLEASE_OK;
}

int rdl_client_options_take(const redlease_client_options *o, redlease_client_options *out,
                            const char **why)
{
    const char *ignored;
    client_defaults(out);
    return take(o, out, RDL_CLIENT_OPTIONS_MIN, sizeof *out, why ? why : &ignored);
}

int rdl_lock_options_take(const redlease_lock_options *o, redlease_lock_options *out)
{
    const char *ignored;
    lock_defaults(out);
    return take(o, out, RDL_LOCK_OPTIONS_MIN, sizeof *out, &ignored);
}

static int in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

int redlease_semaphore_capacity(int limit, int servers)
{
    if (!in_range(limit, 1, REDLEASE_MAX_PERMITS) || !in_range(servers, 1, REDLEASE_MAX_QUORUM))
        return REDLEASE_EINVAL;
    return (int)rdl_quorum_capacity(limit, servers, rdl_majority(servers));
}

int redlease_tls_available(void)
{
#ifdef RDL_HAVE_TLS
    return 1;
#else
    return 0;
#endif
}

static int empty(const char *s) { return s && !s[0]; }

/* Each check answers 0, or a status with *why: a static text naming the
 * field (or the fields that conflict), for redlease_client_options_error(). */
#define REFUSE(text) (*why = (text), REDLEASE_EINVAL)

/* Off: nothing else is looked at. On: never a plaintext connection instead
 * (ENOTSUP without TLS support); a certificate needs its key. */
static int tls_options_check(const redlease_client_options *o, const char **why)
{
    if (!o->tls) {
        if (o->tls_ca_file || o->tls_ca_dir || o->tls_cert_file || o->tls_key_file ||
            o->tls_server_name || o->tls_insecure)
            return REFUSE("tls_* settings need tls");
        return REDLEASE_OK;
    }
    if (!redlease_tls_available()) {
        *why = "tls: this library was built without TLS";
        return REDLEASE_ENOTSUP;
    }
    if (empty(o->tls_ca_file) || empty(o->tls_ca_dir) || empty(o->tls_cert_file) ||
        empty(o->tls_key_file) || empty(o->tls_server_name))
        return REFUSE("tls_*: a file, folder or name is empty");
    if (!o->tls_cert_file != !o->tls_key_file)
        return REFUSE("tls_cert_file and tls_key_file go together");
    return REDLEASE_OK;
}

/* What every client is checked for, wherever its server comes from. */
static int common_check(const redlease_client_options *o, const char **why)
{
    if (o->db < 0) return REFUSE("db is negative");
    if (o->username && !o->password) return REFUSE("username needs a password");
    if (o->key_prefix && !rdl_key_prefix_ok(o->key_prefix, strnlen(o->key_prefix, REDLEASE_MAX_PREFIX + 1)))
        return REFUSE("key_prefix: longer than REDLEASE_MAX_PREFIX, or has \"{\" or \"}\"");
    if (!in_range(o->connect_timeout_ms, 1, REDLEASE_MAX_TIMEOUT_MS))
        return REFUSE("connect_timeout_ms: out of range");
    if (!in_range(o->command_timeout_ms, 1, REDLEASE_MAX_TIMEOUT_MS))
        return REFUSE("command_timeout_ms: out of range");
    if (!in_range(o->reconnect_min_ms, 1, REDLEASE_MAX_TIMEOUT_MS))
        return REFUSE("reconnect_min_ms: out of range");
    if (!in_range(o->reconnect_max_ms, o->reconnect_min_ms, REDLEASE_MAX_TIMEOUT_MS))
        return REFUSE("reconnect_max_ms: below reconnect_min_ms, or out of range");
    if (!in_range(o->commands, REDLEASE_COMMANDS_AUTO, REDLEASE_COMMANDS_SCRIPTS))
        return REFUSE("commands: no such setting");
    if (o->label && !in_range((int64_t)strnlen(o->label, REDLEASE_MAX_LABEL + 1), 1, REDLEASE_MAX_LABEL))
        return REFUSE("label: empty, or longer than REDLEASE_MAX_LABEL bytes");
    if (!in_range(o->quorum_restart_guard_ms, REDLEASE_RESTART_GUARD_OFF, REDLEASE_MAX_TTL_MS))
        return REFUSE("quorum_restart_guard_ms: out of range");
    return tls_options_check(o, why);
}

/* The fields of the topologies a client does not have must be unset:
 * nothing is silently ignored. */
static int others_unset(const redlease_client_options *o, const char **why)
{
    int t = o->topology;
    if (t != REDLEASE_TOPOLOGY_SERVER && (o->host || o->port || o->unix_path))
        return REFUSE("host, port and unix_path are for REDLEASE_TOPOLOGY_SERVER only");
    if (t != REDLEASE_TOPOLOGY_SENTINEL &&
        (o->sentinel_addrs || o->sentinel_master_name || o->sentinel_username ||
         o->sentinel_password || o->sentinel_tls))
        return REFUSE("sentinel_* is for REDLEASE_TOPOLOGY_SENTINEL only");
    if (t != REDLEASE_TOPOLOGY_CLUSTER && o->cluster_addrs)
        return REFUSE("cluster_addrs is for REDLEASE_TOPOLOGY_CLUSTER only");
    if (t != REDLEASE_TOPOLOGY_QUORUM && o->quorum_addrs)
        return REFUSE("quorum_addrs is for REDLEASE_TOPOLOGY_QUORUM only");
    if (t != REDLEASE_TOPOLOGY_QUORUM && o->quorum_restart_guard_ms)
        return REFUSE("quorum_restart_guard_ms is for REDLEASE_TOPOLOGY_QUORUM only");
    return REDLEASE_OK;
}

/* One server: a unix socket, or a host and port (NULL and 0: the defaults),
 * not both. */
static int server_check(const redlease_client_options *o, const char **why)
{
    if (o->unix_path && (o->host || o->port)) return REFUSE("unix_path and host/port exclude each other");
    if (empty(o->unix_path)) return REFUSE("unix_path is empty");
    if (empty(o->host)) return REFUSE("host is empty");
    if (!in_range(o->port, 0, 65535)) return REFUSE("port: out of range");
    return REDLEASE_OK;
}

/* A primary named by Sentinels: their addresses and the master name, a
 * password with a user, Sentinel TLS only with TLS settings. */
static int sentinel_check(const redlease_client_options *o, const char **why)
{
    if (rdl_addr_list_parse(o->sentinel_addrs, NULL, REDLEASE_MAX_SENTINELS) < 0)
        return REFUSE("sentinel_addrs: not a list of 1 to REDLEASE_MAX_SENTINELS HOST:PORT");
    const char *name = o->sentinel_master_name;
    if (!name || !name[0] || strlen(name) > 200)
        return REFUSE("sentinel_master_name: missing, empty or longer than 200 bytes");
    if (o->sentinel_username && !o->sentinel_password)
        return REFUSE("sentinel_username needs sentinel_password");
    if (o->sentinel_tls && !o->tls) return REFUSE("sentinel_tls needs tls");
    return REDLEASE_OK;
}

/* Cluster nodes named by seeds: one database (0) is all a Cluster has. */
static int cluster_check(const redlease_client_options *o, const char **why)
{
    if (rdl_addr_list_parse(o->cluster_addrs, NULL, REDLEASE_MAX_SEEDS) < 0)
        return REFUSE("cluster_addrs: not a list of 1 to REDLEASE_MAX_SEEDS HOST:PORT");
    if (o->db != 0) return REFUSE("db: a Cluster has database 0 only");
    return REDLEASE_OK;
}

/* Independent servers, each once (two of the same would count one server
 * twice toward the majority). */
static int quorum_check(const redlease_client_options *o, const char **why)
{
    rdl_addr a[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(o->quorum_addrs, a, REDLEASE_MAX_QUORUM);
    if (n == -2) {
        *why = "out of memory";
        return REDLEASE_ENOMEM;
    }
    int rc = n < 2 ? REFUSE("quorum_addrs: not a list of 2 to REDLEASE_MAX_QUORUM HOST:PORT") : 0;
    for (int i = 0; i < n && !rc; i++)
        for (int j = 0; j < i && !rc; j++)
            if (a[i].port == a[j].port && strcmp(a[i].host, a[j].host) == 0)
                rc = REFUSE("quorum_addrs: a server named twice");
    if (n > 0) rdl_addr_list_free(a, n);
    return rc;
}

int rdl_client_options_check(const redlease_client_options *o, const char **why)
{
    const char *ignored;
    if (!why) why = &ignored;
    *why = NULL;
    int rc;
    switch (o->topology) {
    case REDLEASE_TOPOLOGY_SERVER: rc = server_check(o, why); break;
    case REDLEASE_TOPOLOGY_SENTINEL: rc = sentinel_check(o, why); break;
    case REDLEASE_TOPOLOGY_CLUSTER: rc = cluster_check(o, why); break;
    case REDLEASE_TOPOLOGY_QUORUM: rc = quorum_check(o, why); break;
    default: return REFUSE("topology: no such setting");
    }
    if (!rc) rc = others_unset(o, why);
    return rc ? rc : common_check(o, why);
}

const char *redlease_client_options_error(const redlease_client_options *o)
{
    const char *why = NULL;
    redlease_client_options known;
    if (o && rdl_client_options_take(o, &known, &why) == REDLEASE_OK)
        rdl_client_options_check(&known, &why);
    return why;
}

int rdl_lock_options_check(const redlease_lock_options *o)
{
    if (!in_range(o->ttl_ms, REDLEASE_MIN_TTL_MS, REDLEASE_MAX_TTL_MS)) return REDLEASE_EINVAL;
    if (o->renew_interval_ms != REDLEASE_RENEW_OFF && !in_range(o->renew_interval_ms, 0, o->ttl_ms - 1))
        return REDLEASE_EINVAL;
    if (o->wait_ms != REDLEASE_WAIT_FOREVER && !in_range(o->wait_ms, 0, REDLEASE_MAX_WAIT_MS))
        return REDLEASE_EINVAL;
    if (!in_range(o->wait_retry_base_ms, 1, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->wait_retry_max_ms, o->wait_retry_base_ms, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (o->wait_max_attempts < 0) return REDLEASE_EINVAL;
    if (!in_range(o->max_hold_ms, 0, REDLEASE_MAX_WAIT_MS)) return REDLEASE_EINVAL;
    if (o->wait_jitter != REDLEASE_JITTER_FULL && o->wait_jitter != REDLEASE_JITTER_DECORRELATED)
        return REDLEASE_EINVAL;
    if (!in_range(o->wait_mode, REDLEASE_WAIT_DEFAULT, REDLEASE_WAIT_WAKE)) return REDLEASE_EINVAL;
    if (!in_range(o->replica_acks, 0, REDLEASE_MAX_REPLICAS)) return REDLEASE_EINVAL;
    if (!in_range(o->replica_timeout_ms, 0, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->replica_scope, REDLEASE_REPLICA_SCOPE_ALL, REDLEASE_REPLICA_SCOPE_ACQUIRE))
        return REDLEASE_EINVAL;
    /* a weight is a semaphore's: a mutex's holder holds it all */
    if (!in_range(o->limit, 0, REDLEASE_MAX_PERMITS)) return REDLEASE_EINVAL;
    if (!in_range(o->weight, 0, o->limit)) return REDLEASE_EINVAL;
    if (o->shared && o->limit) return REDLEASE_EINVAL; /* one kind at a time */
    return REDLEASE_OK;
}

int64_t rdl_replica_timeout(const redlease_lock_options *o, int64_t command_timeout)
{
    if (!o->replica_acks && !o->replica_fsync) return 0;
    if (o->replica_timeout_ms == 0) return command_timeout / 4 > 0 ? command_timeout / 4 : 1;
    /* A write waits for the WAIT in flight and then its own (src/acks.h):
     * both must answer before the command times out locally. */
    return 2 * o->replica_timeout_ms < command_timeout ? o->replica_timeout_ms : REDLEASE_EINVAL;
}
