/* SPDX-License-Identifier: MIT */
/* Option defaults and validation (src/options.h). */
#include "options.h"

#include <string.h>

#include "addr.h"
#include "keys.h"

void redlease_client_options_init(redlease_client_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 6379;
    o->key_prefix = "lock:";
    o->connect_timeout_ms = 2000;
    o->command_timeout_ms = 2000;
    o->reconnect_min_ms = 50;
    o->reconnect_max_ms = 2000;
}

void redlease_lock_options_init(redlease_lock_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->ttl_ms = 30000;
    o->retry_base_ms = 50;
    o->retry_max_ms = 1000;
    o->jitter = REDLEASE_JITTER_FULL;
    o->renewal_acks = 1; /* with min_replicas: a renewal a failover could lose
                            would let the local deadline outlive the replica's key */
}

static int in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

int redlease_tls_available(void)
{
#ifdef RDL_HAVE_TLS
    return 1;
#else
    return 0;
#endif
}

static int empty(const char *s) { return s && !s[0]; }

/* Off: nothing else is looked at. On: never a plaintext connection instead
 * (ENOTSUP without TLS support); a certificate needs its key. */
static int tls_options_check(const redlease_tls_options *t)
{
    if (!t->enable) return REDLEASE_OK;
    if (!redlease_tls_available()) return REDLEASE_ENOTSUP;
    if (empty(t->ca_file) || empty(t->ca_dir) || empty(t->cert_file) || empty(t->key_file) ||
        empty(t->server_name))
        return REDLEASE_EINVAL;
    if (!t->cert_file != !t->key_file) return REDLEASE_EINVAL;
    return REDLEASE_OK;
}

/* What every client is checked for, wherever its server comes from. */
static int common_check(const redlease_client_options *o)
{
    if (o->db < 0) return REDLEASE_EINVAL;
    if (o->username && !o->password) return REDLEASE_EINVAL;
    if (o->key_prefix && !rdl_key_prefix_ok(o->key_prefix, strnlen(o->key_prefix, REDLEASE_MAX_PREFIX + 1)))
        return REDLEASE_EINVAL;
    if (!in_range(o->connect_timeout_ms, 1, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->command_timeout_ms, 1, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->reconnect_min_ms, 1, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->reconnect_max_ms, o->reconnect_min_ms, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->commands, REDLEASE_COMMANDS_AUTO, REDLEASE_COMMANDS_SCRIPTS)) return REDLEASE_EINVAL;
    return tls_options_check(&o->tls);
}

/* A server named by the options: a unix socket, or a host and port. */
static int address_check(const redlease_client_options *o)
{
    if (o->unix_path) return o->unix_path[0] ? REDLEASE_OK : REDLEASE_EINVAL;
    return o->host && o->host[0] && in_range(o->port, 1, 65535) ? REDLEASE_OK : REDLEASE_EINVAL;
}

/* A primary named by Sentinels: their addresses and the master name, a
 * password with a user; not a unix socket too (which would win?), and
 * Sentinel TLS only with TLS settings. */
static int sentinel_check(const redlease_client_options *o)
{
    const redlease_sentinel_options *s = &o->sentinel;
    if (rdl_addr_list_parse(s->addrs, NULL, REDLEASE_MAX_SENTINELS) < 0) return REDLEASE_EINVAL;
    if (!s->master_name || !s->master_name[0] || strlen(s->master_name) > 200) return REDLEASE_EINVAL;
    if (s->username && !s->password) return REDLEASE_EINVAL;
    if (o->unix_path) return REDLEASE_EINVAL;
    if (s->tls && !o->tls.enable) return REDLEASE_EINVAL;
    return REDLEASE_OK;
}

/* Cluster nodes named by seeds: one database (0) is all a Cluster has;
 * neither Sentinel nor a unix socket besides (which would win?). */
static int cluster_check(const redlease_client_options *o)
{
    if (rdl_addr_list_parse(o->cluster.addrs, NULL, REDLEASE_MAX_SEEDS) < 0) return REDLEASE_EINVAL;
    if (o->db != 0 || o->sentinel.addrs || o->unix_path) return REDLEASE_EINVAL;
    return REDLEASE_OK;
}

/* Independent servers, each once (two of the same would count one server
 * twice toward the majority); no Sentinel, Cluster or unix socket besides. */
static int quorum_check(const redlease_client_options *o)
{
    rdl_addr a[REDLEASE_MAX_QUORUM];
    int n = rdl_addr_list_parse(o->quorum.addrs, a, REDLEASE_MAX_QUORUM);
    if (n == -2) return REDLEASE_ENOMEM;
    int rc = n < 2 || o->sentinel.addrs || o->cluster.addrs || o->unix_path ? REDLEASE_EINVAL : 0;
    for (int i = 0; i < n && !rc; i++)
        for (int j = 0; j < i && !rc; j++)
            if (a[i].port == a[j].port && strcmp(a[i].host, a[j].host) == 0) rc = REDLEASE_EINVAL;
    if (n > 0) rdl_addr_list_free(a, n);
    return rc;
}

int rdl_client_options_check(const redlease_client_options *o)
{
    int rc = o->quorum.addrs     ? quorum_check(o)
             : o->cluster.addrs  ? cluster_check(o)
             : o->sentinel.addrs ? sentinel_check(o)
                                 : address_check(o);
    return rc ? rc : common_check(o);
}

int rdl_lock_options_check(const redlease_lock_options *o)
{
    if (!in_range(o->ttl_ms, REDLEASE_MIN_TTL_MS, REDLEASE_MAX_TTL_MS)) return REDLEASE_EINVAL;
    if (o->renew_interval_ms != REDLEASE_RENEW_OFF && !in_range(o->renew_interval_ms, 0, o->ttl_ms - 1))
        return REDLEASE_EINVAL;
    if (o->wait_ms != REDLEASE_WAIT_FOREVER && !in_range(o->wait_ms, 0, REDLEASE_MAX_WAIT_MS))
        return REDLEASE_EINVAL;
    if (!in_range(o->retry_base_ms, 1, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (!in_range(o->retry_max_ms, o->retry_base_ms, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (o->max_attempts < 0) return REDLEASE_EINVAL;
    if (!in_range(o->max_hold_ms, 0, REDLEASE_MAX_WAIT_MS)) return REDLEASE_EINVAL;
    if (o->jitter != REDLEASE_JITTER_FULL && o->jitter != REDLEASE_JITTER_DECORRELATED)
        return REDLEASE_EINVAL;
    if (!in_range(o->wait_mode, REDLEASE_WAIT_DEFAULT, REDLEASE_WAIT_WAKE)) return REDLEASE_EINVAL;
    if (!in_range(o->min_replicas, 0, REDLEASE_MAX_REPLICAS)) return REDLEASE_EINVAL;
    if (!in_range(o->replica_timeout_ms, 0, REDLEASE_MAX_TIMEOUT_MS)) return REDLEASE_EINVAL;
    if (o->renewal_acks != 0 && o->renewal_acks != 1) return REDLEASE_EINVAL;
    return REDLEASE_OK;
}

int64_t rdl_replica_timeout(const redlease_lock_options *o, int64_t command_timeout)
{
    if (!o->min_replicas && !o->wait_fsync) return 0;
    if (o->replica_timeout_ms == 0) return command_timeout / 4 > 0 ? command_timeout / 4 : 1;
    /* A write waits for the WAIT in flight and then its own (src/acks.h):
     * both must answer before the command times out locally. */
    return 2 * o->replica_timeout_ms < command_timeout ? o->replica_timeout_ms : REDLEASE_EINVAL;
}
