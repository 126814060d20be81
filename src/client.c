/* SPDX-License-Identifier: MIT */
/* The client: its node (src/node.c: a connection and what waits on it),
 * one loop timer, delivery of callbacks, and the lifetime rules.
 *
 * Every deadline (the connections', a close's, and each lock's next
 * action) sits in one min-heap; the loop sees a single one-shot timer armed
 * for the earliest. redlease_client_on_timer() is the only place that runs
 * lock callbacks, so a user callback never runs inside hiredis.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "client.h"
#include "keys.h"
#include "lock.h"
#include "options.h"

/* ------------------------------------------------------------- creation */

static const rdl_svc_ops svc_ops;               /* below: the outermost entry left */
static const rdl_node_owner node_owner;         /* below: what the nodes tell us */
static const rdl_cluster_owner cluster_owner;   /* below: what the router tells us */
static const rdl_sentinel_owner sentinel_owner; /* below: what the Sentinels tell us */
static const rdl_waker_owner waker_owner;       /* below: what the wake-up channel tells us */
static const rdl_inspect_owner inspect_owner;   /* below: what inspections ask of us */

/* Where a lock's key goes (rdl_lock_target's route): the node its slot's
 * primary is, in a Cluster; else the embedded node (a quorum's front). */
static rdl_node *route_by_slot(void *arg, const char *key, size_t len)
{
    return rdl_cluster_route(((redlease_client *)arg)->cluster, key, len);
}

static rdl_node *route_home(void *arg, const char *key, size_t len)
{
    (void)key;
    (void)len;
    return &((redlease_client *)arg)->main;
}

int redlease_client_new(redlease_client **out, const redlease_client_options *given)
{
    redlease_client_options known; /* the caller's, as this library knows them */
    if (!out) return REDLEASE_EINVAL;
    *out = NULL;
    if (!given) redlease_client_options_init(&known);
    int rc = given ? rdl_client_options_take(given, &known, NULL) : REDLEASE_OK;
    if (rc) return rc;
    const redlease_client_options *o = &known;
    rc = rdl_client_options_check(o, NULL);
    if (rc) return rc;

    redlease_client *c = rdl_calloc(1, sizeof *c);
    if (!c) return REDLEASE_ENOMEM;
    rdl_svc_init(&c->svc, c, &svc_ops, c);
    rdl_heap_init(&c->svc.heap);
    rdl_inspects_init(&c->inspect, &c->svc, o->command_timeout_ms, &inspect_owner, c);
    /* What the locks' target offers: a quorum is N servers, each with its
     * own copy of a lease, so no one queue orders the waiters, no one
     * primary's replicas acknowledge, a release's probe would be one
     * member's word, votes can split, and each member counts a
     * semaphore's holders apart. */
    int several = o->topology == REDLEASE_TOPOLOGY_QUORUM;
    int sharded = o->topology == REDLEASE_TOPOLOGY_CLUSTER;
    rdl_lock_target target = {.route = sharded ? route_by_slot : route_home, .arg = c,
                              .ordered_queue = !several, .replicas = !several,
                              .release_probe = !several, .split_votes = several,
                              .moving_keys = sharded, .copies = 1, .need = 1};
    rdl_locks_init(&c->set, &c->svc, &target);
    rdl_identity_of_process(&c->set.identity, o->label);
    rdl_tls_config tls = {o->tls,          o->tls_ca_file,     o->tls_ca_dir,  o->tls_cert_file,
                          o->tls_key_file, o->tls_server_name, o->tls_insecure};
    rdl_conn_config cc = {.host = o->unix_path ? NULL : o->host ? o->host : REDLEASE_DEFAULT_HOST,
                          .unix_path = o->unix_path,
                          .port = o->port ? o->port : REDLEASE_DEFAULT_PORT, .db = o->db,
                          .username = o->username, .password = o->password,
                          .connect_timeout = o->connect_timeout_ms,
                          .command_timeout = o->command_timeout_ms,
                          .reconnect_min = o->reconnect_min_ms, .reconnect_max = o->reconnect_max_ms,
                          .tls = &tls, .probe = o->commands == REDLEASE_COMMANDS_AUTO};
    int ok = 1;
    rdl_addr seeds[REDLEASE_MAX_SEEDS];
    int nseeds = 0;
    if (o->topology == REDLEASE_TOPOLOGY_CLUSTER) {
        /* The first seed is the embedded node; the others are made below. */
        nseeds = rdl_addr_list_parse(o->cluster_addrs, seeds, REDLEASE_MAX_SEEDS);
        if (nseeds < 0) nseeds = 0, ok = 0;
        cc.unix_path = NULL;
        cc.host = nseeds ? seeds[0].host : NULL;
        cc.port = nseeds ? seeds[0].port : 0;
        c->cluster = rdl_calloc(1, sizeof *c->cluster);
        ok = ok && c->cluster;
    }
    rdl_addr members[REDLEASE_MAX_QUORUM];
    int nmembers = 0;
    if (o->topology == REDLEASE_TOPOLOGY_QUORUM) {
        /* The embedded node is the quorum's, with no server of its own;
         * the members are made below. */
        nmembers = rdl_addr_list_parse(o->quorum_addrs, members, REDLEASE_MAX_QUORUM);
        if (nmembers < 0) nmembers = 0, ok = 0;
        cc.host = cc.unix_path = NULL;
        /* the members are sent scripts: each handshake asks whether they
         * run (their conditional commands are not used) */
        cc.read_uptime = 1; /* the restart guard: when each member's server started */
        c->quorum = rdl_calloc(1, sizeof *c->quorum);
        ok = ok && c->quorum;
    }
    if (o->topology == REDLEASE_TOPOLOGY_SENTINEL) {
        /* No address until a Sentinel names the primary; ROLE checks it. */
        cc.host = cc.unix_path = NULL;
        cc.verify_primary = 1;
        rdl_sentinel_config sc = {o->sentinel_addrs, o->sentinel_master_name, o->sentinel_username,
                                  o->sentinel_password, o->sentinel_tls};
        c->sentinel = rdl_calloc(1, sizeof *c->sentinel);
        ok = c->sentinel && rdl_sentinel_init(c->sentinel, &sc, &cc, &sentinel_owner, c,
                                              &c->svc.clock, &c->svc.rng) == REDLEASE_OK;
    }
    cc.read_clock = 1; /* the lock nodes' handshakes read the clock (holders' records) */
    ok = rdl_node_init(&c->main, &c->svc, &node_owner, c, &cc) == REDLEASE_OK && ok;
    cc.read_clock = cc.read_uptime = 0; /* the waker's link needs neither */
    if (ok) { /* a quorum's listens on its first member (below) */
        const char *prefix = o->key_prefix ? o->key_prefix : "";
        c->waker = rdl_calloc(1, sizeof *c->waker);
        ok = c->waker && rdl_waker_init(c->waker, &cc, prefix, strlen(prefix), &waker_owner, c,
                                        &c->svc.clock, &c->svc.rng) == REDLEASE_OK;
    }
    ok = rdl_nodes_init(&c->nodes, &c->main, &c->svc, &node_owner, c) == REDLEASE_OK && ok;
    /* the router sees the replies of every node, the seeds' on */
    ok = ok && (!c->cluster || rdl_cluster_init(c->cluster, &c->nodes, &c->svc, o->command_timeout_ms,
                                                &cluster_owner, c) == REDLEASE_OK);
    for (int i = 1; i < nseeds && ok; i++)
        ok = rdl_nodes_at(&c->nodes, seeds[i].host, strlen(seeds[i].host), seeds[i].port) != NULL;
    rdl_addr_list_free(seeds, nseeds);
    if (c->quorum && ok) {
        rdl_node *m[REDLEASE_MAX_QUORUM];
        for (int i = 0; i < nmembers && ok; i++)
            ok = (m[i] = rdl_nodes_at(&c->nodes, members[i].host, strlen(members[i].host),
                                      members[i].port)) != NULL;
        ok = ok && rdl_quorum_init(c->quorum, &c->svc, &c->main, m, (size_t)nmembers) == REDLEASE_OK;
        if (ok) { /* each member keeps its own copy; a majority admits */
            c->quorum->restart_guard = o->quorum_restart_guard_ms;
            c->set.target.copies = (uint8_t)c->quorum->n;
            c->set.target.need = (uint8_t)c->quorum->need;
        }
        ok = ok && rdl_conn_set_address(&c->waker->conn, members[0].host, members[0].port) == REDLEASE_OK;
    }
    rdl_addr_list_free(members, nmembers);
    c->set.prefix = rdl_strdup(o->key_prefix ? o->key_prefix : "", &ok);
    c->close_wake.idx = RDL_HEAP_OUT;
    c->close_wake.kind = RDL_WAKE_CLOSE;
    if (!ok) {
        /* teardown() frees what was made; the loop never saw the client */
        redlease_client_free(c);
        return REDLEASE_ENOMEM;
    }
    c->set.prefix_len = strlen(c->set.prefix);
    c->set.command_timeout = o->command_timeout_ms;
    c->set.waker = c->waker;
    c->armed_at = -1;
    c->svc.transport_new = rdl_transport_hiredis_new;
    *out = c;
    return REDLEASE_OK;
}

int redlease_client_set_clock(redlease_client *c, redlease_clock_fn fn, void *arg)
{
    if (!c || !fn || c->svc.loop.ops) return REDLEASE_EINVAL;
    c->svc.clock.fn = fn;
    c->svc.clock.arg = arg;
    return REDLEASE_OK;
}

int redlease_client_set_rng(redlease_client *c, redlease_rng_fn fn, void *arg)
{
    if (!c || !fn) return REDLEASE_EINVAL;
    c->svc.rng.fn = fn;
    c->svc.rng.arg = arg;
    return REDLEASE_OK;
}

void redlease_client_set_event_cb(redlease_client *c, redlease_event_cb fn, void *arg)
{
    if (!c) return;
    c->svc.event_cb = fn;
    c->svc.event_arg = arg;
}

const char *redlease_client_errstr(const redlease_client *c) { return c ? c->svc.errstr : ""; }

int redlease_client_connected(const redlease_client *c)
{
    if (!c) return 0;
    if (!c->cluster) return rdl_node_ready(&c->main);
    /* a Cluster: its map is known and a node is ready to be asked */
    for (size_t i = 0; c->cluster->loaded && i < c->nodes.n; i++)
        if (rdl_node_ready(c->nodes.v[i])) return 1;
    return 0;
}

void redlease_client_stats(const redlease_client *c, redlease_stats *out)
{
    if (!out) return;
    if (!c) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = c->set.stats;
    for (size_t i = 0; i < c->nodes.n; i++) rdl_conn_stats(&c->nodes.v[i]->conn, out);
    if (c->waker) rdl_conn_stats(&c->waker->conn, out);
}

void rdl_client_set_transport_factory(redlease_client *c, rdl_transport_factory fn)
{
    c->svc.transport_new = fn;
}

/* ----------------------------------------------------------- the timer */

/* A link of the client's own (a Sentinel's, the wake-up channel's) has
 * run its timer work: its deadline goes in the heap, a past one as never
 * (due work is found by its _due(), not by the heap). */
static void link_ran(redlease_client *c, rdl_heap_node *wake, int64_t at, int64_t now)
{
    rdl_heap_update(&c->svc.heap, wake, at <= now ? RDL_NEVER : at);
}

static void sentinel_run(redlease_client *c, int64_t now)
{
    rdl_sentinel_run(c->sentinel, now);
    link_ran(c, &c->sentinel->wake, rdl_sentinel_deadline(c->sentinel), now);
}

static void waker_run(redlease_client *c, int64_t now)
{
    rdl_waker_run(c->waker, now);
    link_ran(c, &c->waker->wake, rdl_waker_deadline(c->waker), now);
}

static int sentinel_due(const redlease_client *c)
{
    return c->sentinel && rdl_sentinel_due(c->sentinel);
}

static int waker_due(const redlease_client *c) { return c->waker && rdl_waker_due(c->waker); }

static int nodes_due(const redlease_client *c)
{
    for (size_t i = 0; i < c->nodes.n; i++)
        if (rdl_node_due(c->nodes.v[i])) return 1;
    return 0;
}

/* c->armed_at while an immediate tick (after 0 ms) is asked for: earlier
 * than any deadline. */
#define ARMED_NOW INT64_MIN

/* Arms the loop timer for the earliest thing to do. Called when leaving the
 * library, so the adapter never sees a timer_set from inside itself.
 * A timer already armed for a deadline no later than that is left alone:
 * it fires early at worst, finds nothing due and is armed again from
 * redlease_client_on_timer(). Moving it later each time the earliest
 * deadline moves (every reply, when it is a command timeout) would read
 * the clock and call the loop on every reply. */
static void arm(redlease_client *c)
{
    if (!c->svc.loop.ops) return;
    if (!rdl_list_empty(&c->set.notify) || rdl_inspect_owed(&c->inspect) || nodes_due(c) ||
        sentinel_due(c) || waker_due(c) || c->svc.dead || c->close_check) {
        if (c->armed_at == ARMED_NOW) return;
        c->armed_at = ARMED_NOW; /* due now */
        c->svc.loop.ops->timer_set(c->svc.loop.data, 0);
        return;
    }
    rdl_heap_node *top = rdl_heap_top(&c->svc.heap);
    int64_t at = top ? top->at : RDL_NEVER;
    if (at == RDL_NEVER) {
        if (c->armed_at == -1) return;
        c->armed_at = -1;
        c->svc.loop.ops->timer_set(c->svc.loop.data, -1);
        return;
    }
    /* (An immediate tick asked for what is no longer due is replaced.) */
    if (c->armed_at != -1 && c->armed_at != ARMED_NOW && c->armed_at <= at) return;
    int64_t now = rdl_svc_now(&c->svc);
    int64_t after = at > now ? at - now : 0;
    c->armed_at = after ? at : ARMED_NOW;
    c->svc.loop.ops->timer_set(c->svc.loop.data, after);
}

/* The outermost entry into the library left. Freed from inside a
 * transport callback: hiredis must not be freed there, so arm()
 * (c->svc.dead) asks the loop for an immediate tick. */
static void on_idle(void *owner) { arm(owner); }

static const rdl_svc_ops svc_ops = {.idle = on_idle};

static void teardown(redlease_client *c);

/* ---------------------------------------------------------- connection */

int redlease_client_attach_loop(redlease_client *c, const redlease_loop_ops *ops, void *loop_data)
{
    if (!c || !ops || !ops->watch || !ops->unwatch || !ops->timer_set || !ops->detach)
        return REDLEASE_EINVAL;
    if (c->svc.loop.ops || c->svc.dead || c->set.closing) return REDLEASE_EINVAL;
    c->svc.loop.ops = ops;
    c->svc.loop.data = loop_data;
    int rc = rdl_heap_insert(&c->svc.heap, &c->close_wake, RDL_NEVER);
    if (!rc && c->sentinel) rc = rdl_heap_insert(&c->svc.heap, &c->sentinel->wake, RDL_NEVER);
    if (!rc && c->waker) rc = rdl_heap_insert(&c->svc.heap, &c->waker->wake, RDL_NEVER);
    if (!rc && c->cluster) rc = rdl_heap_insert(&c->svc.heap, &c->cluster->wake, 0);
    if (!rc && c->quorum) {
        rdl_conn_config cc;
        rdl_conn_settings(&c->main.conn, &cc);
        int64_t settle = rdl_quorum_settle_time(cc.connect_timeout, c->set.command_timeout);
        rc = rdl_heap_insert(&c->svc.heap, &c->quorum->wake, rdl_svc_now(&c->svc) + settle);
    }
    for (size_t i = 0; i < c->nodes.n && !rc; i++) rc = rdl_node_attach(c->nodes.v[i]);
    if (!rc && c->sentinel) rc = rdl_sentinel_attach(c->sentinel, c->svc.transport_new, &c->svc.loop);
    if (!rc && c->waker) rc = rdl_waker_attach(c->waker, c->svc.transport_new, &c->svc.loop);
    if (rc) {
        /* a transport made is destroyed with the client (never connected) */
        rdl_heap_remove(&c->svc.heap, &c->close_wake);
        for (size_t i = 0; i < c->nodes.n; i++) rdl_heap_remove(&c->svc.heap, &c->nodes.v[i]->wake);
        if (c->sentinel) rdl_heap_remove(&c->svc.heap, &c->sentinel->wake);
        if (c->waker) rdl_heap_remove(&c->svc.heap, &c->waker->wake);
        if (c->cluster) rdl_heap_remove(&c->svc.heap, &c->cluster->wake);
        if (c->quorum) rdl_heap_remove(&c->svc.heap, &c->quorum->wake);
        c->svc.loop.ops = NULL;
        c->svc.loop.data = NULL;
        return rc;
    }
    rdl_svc_enter(&c->svc);
    int64_t now = rdl_svc_now(&c->svc);
    rdl_conn_connect(&c->main.conn, now); /* with Sentinel: waits for an address */
    for (size_t i = 1; i < c->nodes.n; i++) rdl_conn_connect(&c->nodes.v[i]->conn, now); /* seeds */
    if (c->sentinel) rdl_sentinel_start(c->sentinel, now);
    rdl_svc_leave(&c->svc);
    return REDLEASE_OK;
}

/* Done when every callback owed has run and nothing is left to send or to
 * hear back (or the deadline passed). O(1): close waits on counters. */
static int close_finished(redlease_client *c, int64_t now)
{
    if (!rdl_list_empty(&c->set.notify) || rdl_inspect_owed(&c->inspect)) return 0; /* owed callbacks first */
    if (now >= c->close_deadline) return 1;
    if (c->set.parked) return 0;
    /* (an inspection's answer is waited for by nobody now) */
    for (size_t i = 0; i < c->nodes.n; i++)
        if (rdl_conn_in_flight(&c->nodes.v[i]->conn) > rdl_inspect_out_on(&c->inspect, c->nodes.v[i]))
            return 0;
    return c->set.release_retries == 0;
}

/* Runs everything due now, then arms the timer for what comes next.
 * fired: the loop timer has fired (else it may still be armed). */
static void run_due(redlease_client *c, int fired)
{
    rdl_svc_enter(&c->svc);
    if (fired) c->armed_at = -1; /* the one-shot timer has fired */
    c->close_check = 0;
    int64_t now = rdl_svc_now(&c->svc);
    while (!c->svc.dead) {
        for (size_t i = 0; i < c->nodes.n; i++)
            if (rdl_node_due(c->nodes.v[i])) rdl_node_run(c->nodes.v[i], now);
        if (sentinel_due(c)) sentinel_run(c, now);
        if (waker_due(c)) waker_run(c, now);
        rdl_heap_node *top = rdl_heap_top(&c->svc.heap);
        if (top && top->at <= now) {
            switch (top->kind) {
            case RDL_WAKE_NODE: rdl_node_run(RDL_CONTAINER(top, rdl_node, wake), now); break;
            case RDL_WAKE_SENTINEL: sentinel_run(c, now); break;
            case RDL_WAKE_WAKER: waker_run(c, now); break;
            case RDL_WAKE_CLUSTER: rdl_cluster_run(c->cluster, now); break;
            case RDL_WAKE_QUORUM: rdl_quorum_run(c->quorum, now); break;
            case RDL_WAKE_INSPECT: rdl_inspect_expire(&c->inspect, top, now); break;
            case RDL_WAKE_CLOSE: /* judged below, once nothing else is due */
                rdl_heap_update(&c->svc.heap, top, RDL_NEVER);
                break;
            default: {
                /* The lock's memory is cold (its last turn was a renewal
                 * interval ago): start fetching the next one's while this
                 * one runs. */
                int64_t next_at;
                rdl_heap_node *next = rdl_heap_second(&c->svc.heap, &next_at);
                /* (not read: a node's or the close's would be a harmless guess) */
                if (next && next_at <= now) rdl_lock_prefetch(RDL_CONTAINER(next, struct redlease_lock, wake));
                /* the lock reads the time read above (no user code runs) */
                rdl_now_saved saved;
                rdl_svc_hint(&c->svc, now, &saved);
                rdl_lock_run(RDL_CONTAINER(top, struct redlease_lock, wake), now);
                rdl_svc_restore(&c->svc, &saved);
                break;
            }
            }
            continue;
        }
        if (!rdl_list_empty(&c->set.notify)) {
            struct redlease_lock *lk = RDL_CONTAINER(c->set.notify.next, struct redlease_lock, notify_link);
            rdl_lock_deliver(lk);
            now = rdl_svc_now(&c->svc); /* user code ran: deadlines are judged by the clock */
            continue;
        }
        if (rdl_inspect_owed(&c->inspect)) {
            rdl_inspect_deliver(&c->inspect);
            now = rdl_svc_now(&c->svc);
            continue;
        }
        if (c->set.closing && close_finished(c, now)) {
            redlease_close_cb done = c->close_cb;
            void *arg = c->close_arg;
            c->svc.dead = 1; /* no callbacks after done */
            if (done) done(c, arg);
            break;
        }
        break;
    }
    c->svc.depth--;
    if (c->svc.dead) {
        teardown(c);
        return;
    }
    arm(c);
}

void redlease_client_on_timer(redlease_client *c)
{
    if (!c) return;
    if (c->svc.depth) {
        /* Never re-entered from inside the library: a loop run from a
         * callback fired the timer. It is armed no more: the outermost
         * entry arms it again as it leaves (arm() would otherwise take it
         * for armed, and a later deadline would never be waited for). */
        c->armed_at = -1;
        return;
    }
    c->set.stats.wakeups++;
    run_due(c, 1);
}

void redlease_client_on_io(redlease_client *c, int fd, int events)
{
    if (!c) return;
    rdl_loop_ready(&c->svc.loop, fd, events); /* may free c: nothing after */
}

/* After a read, the replies' callbacks run here rather than from the
 * immediate tick they armed: one loop iteration (an epoll_wait) less per
 * batch of replies. The tick stays armed until run_due() arms again. */
void rdl_client_drain(redlease_client *c)
{
    if (c->svc.depth || c->armed_at != ARMED_NOW) return;
    run_due(c, 0);
}

/* ---------------------------------------------------------- ending */

static void teardown(redlease_client *c)
{
    c->svc.dead = 1;
    c->svc.depth = 1; /* the NULL replies below must not re-arm the timer */
    /* every request and WAIT ticket comes back now, NULL */
    rdl_node_free(&c->main);
    for (size_t i = 1; i < c->nodes.n; i++) rdl_node_free(c->nodes.v[i]);
    if (c->sentinel) rdl_sentinel_free(c->sentinel);
    if (c->waker) rdl_waker_free(c->waker); /* its waiters leave it */
    if (c->svc.loop.ops) c->svc.loop.ops->detach(c->svc.loop.data);
    while (!rdl_list_empty(&c->set.locks))
        rdl_lock_destroy(RDL_CONTAINER(c->set.locks.next, struct redlease_lock, link));
    /* After the locks: taking each off the heap moves the other nodes,
     * the Sentinel's among them. */
    rdl_free(c->sentinel);
    rdl_free(c->waker);
    rdl_nodes_free(&c->nodes);
    rdl_inspects_free(&c->inspect); /* after the nodes: their requests came back */
    if (c->cluster) rdl_cluster_free(c->cluster);
    rdl_free(c->cluster);
    if (c->quorum) rdl_quorum_free(c->quorum); /* after its members: their requests came back */
    rdl_free(c->quorum);
    rdl_heap_free(&c->svc.heap);
    rdl_loop_free(&c->svc.loop); /* every socket was closed by teardown */
    rdl_free(c->set.prefix);
    rdl_free(c);
}

void redlease_client_free(redlease_client *c)
{
    if (!c || c->svc.dead) return;
    rdl_svc_enter(&c->svc);
    /* Every handle hears its end now; calls made from those callbacks see
     * c->svc.dead and return REDLEASE_ECANCELED. */
    c->svc.dead = 1;
    c->set.freeing = 1;
    for (rdl_list *n = c->set.locks.next; n != &c->set.locks; n = n->next)
        rdl_lock_end_by_client(RDL_CONTAINER(n, struct redlease_lock, link));
    /* Releases asked for from those callbacks, of handles ended earlier. */
    while (!rdl_list_empty(&c->set.notify))
        rdl_lock_deliver(RDL_CONTAINER(c->set.notify.next, struct redlease_lock, notify_link));
    c->set.freeing = 0;
    /* Inspections not answered yet hear ECANCELED, any decided their answer. */
    rdl_inspect_cancel_all(&c->inspect, 1);
    /* A graceful close under way ends here too: its done callback is owed
     * exactly once. It runs last, while c is still allocated (dead: any
     * call on it does nothing). */
    if (c->set.closing && c->close_cb) {
        redlease_close_cb done = c->close_cb;
        c->close_cb = NULL;
        done(c, c->close_arg);
    }
    c->svc.depth--;
    if (c->svc.depth == 0) teardown(c);
    /* else the outermost entry finishes it (see rdl_svc_leave / on_timer) */
}

void redlease_client_close(redlease_client *c, redlease_close_cb done, void *arg)
{
    if (!c || c->svc.dead || c->set.closing) return;
    c->set.closing = 1;
    c->close_cb = done;
    c->close_arg = arg;
    if (!c->svc.loop.ops) {
        /* No loop: nothing can be sent nor delivered later. Acts as free,
         * which owes done. */
        redlease_client_free(c);
        return;
    }
    rdl_svc_enter(&c->svc);
    int64_t now = rdl_svc_now(&c->svc);
    c->close_deadline = now + c->set.command_timeout;
    rdl_heap_update(&c->svc.heap, &c->close_wake, c->close_deadline);
    for (rdl_list *n = c->set.locks.next; n != &c->set.locks; n = n->next)
        rdl_lock_close(RDL_CONTAINER(n, struct redlease_lock, link), now);
    rdl_inspect_cancel_all(&c->inspect, 0); /* ECANCELED, from the loop */
    c->close_check = 1; /* maybe nothing is pending: done on the next tick */
    rdl_svc_leave(&c->svc);
}

/* ------------------------------------------------------------- locks */

int redlease_acquire(redlease_client *c, const char *resource, const redlease_lock_options *o,
                     redlease_acquire_cb on_acquire, redlease_lost_cb on_lost, void *arg,
                     redlease_lock **out)
{
    /* strnlen: an over-long name is refused without reading all of it. */
    size_t rlen = resource ? strnlen(resource, REDLEASE_MAX_RESOURCE + 1) : 0;
    return redlease_acquire_len(c, resource, rlen, o, on_acquire, on_lost, arg, out);
}

int redlease_acquire_len(redlease_client *c, const char *resource, size_t rlen,
                         const redlease_lock_options *o, redlease_acquire_cb on_acquire,
                         redlease_lost_cb on_lost, void *arg, redlease_lock **out)
{
    if (out) *out = NULL;
    if (!c) return REDLEASE_EINVAL;
    return rdl_lock_new(&c->set, resource, rlen, o, on_acquire, on_lost, arg, out);
}

/* ------------------------------------------------------- inspections */

int redlease_inspect(redlease_client *c, const char *resource, size_t rlen, redlease_inspect_cb cb,
                     void *arg)
{
    if (!c || !cb || !resource || rlen == 0 || rlen > REDLEASE_MAX_RESOURCE) return REDLEASE_EINVAL;
    if (c->svc.dead || c->set.closing) return REDLEASE_ECANCELED;
    /* Where the resource is read: every member of a quorum, each asked
     * directly (design 14.1); a Cluster's node of its slot; else ours. */
    rdl_node *nodes[REDLEASE_MAX_QUORUM];
    size_t n = 1;
    nodes[0] = &c->main;
    if (c->quorum) {
        n = c->quorum->n;
        memcpy(nodes, c->quorum->member, n * sizeof *nodes);
    } else if (c->cluster) {
        size_t klen = rdl_key_len(c->set.prefix_len, resource, rlen, REDLEASE_KEY_LOCK);
        char *key = rdl_malloc(klen);
        if (!key) return REDLEASE_ENOMEM;
        rdl_key_write(key, c->set.prefix, c->set.prefix_len, resource, rlen, REDLEASE_KEY_LOCK);
        nodes[0] = rdl_cluster_route(c->cluster, key, klen);
        rdl_free(key);
    }
    /* a quorum that is up asks the members that are; one that is not
     * (connecting) waits for them, as its locks do */
    int wait = !c->quorum || !rdl_quorum_ready(c->quorum);
    rdl_svc_enter(&c->svc);
    int rc = rdl_inspect_start(&c->inspect, c->set.prefix, c->set.prefix_len, resource, rlen, nodes,
                               n, wait, cb, arg);
    rdl_svc_leave(&c->svc); /* arms the timer: a callback owed already runs from it */
    return rc;
}

/* A holder or waiter an inspection found is one of our handles: its
 * token is theirs (a lease joined by several handles has one token). */
static int inspect_mine(void *owner, const char *token, int64_t *permits)
{
    redlease_client *c = owner;
    for (rdl_list *i = c->set.locks.next; i != &c->set.locks; i = i->next) {
        const struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        if (strcmp(redlease_lock_token(lk), token) != 0) continue;
        *permits = rdl_lock_limit(lk) ? lk->opts->weight : 1;
        return 1;
    }
    return 0;
}

static const rdl_inspect_owner inspect_owner = {.mine = inspect_mine};

/* ------------------------------------------------- what the servers say */

void rdl_client_refused(redlease_client *c, const rdl_node *node, int status, int64_t now)
{
    for (rdl_list *i = c->set.locks.next; i != &c->set.locks;) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        i = i->next; /* nothing is freed here: callbacks only get queued */
        if (!c->svc.dead && (!node || lk->node == node)) rdl_lock_on_refused(lk, status, now);
    }
}

/* ------------------------------------------------- what the nodes tell the client */

static void on_node_ready(void *owner, rdl_node *n)
{
    redlease_client *c = owner;
    if (c->cluster) rdl_cluster_node_ready(c->cluster);
    if (c->quorum) rdl_quorum_member_ready(c->quorum, n);
}

static void on_node_refused(void *owner, rdl_node *n, int status, int64_t now)
{
    redlease_client *c = owner;
    rdl_client_refused(c, n, status, now);
    /* a quorum member: the quorum's locks, once too many are refused */
    int q = c->quorum ? rdl_quorum_refusal(c->quorum) : 0;
    if (q) rdl_client_refused(c, &c->main, q, now);
}

static void on_node_lost(void *owner, rdl_node *n)
{
    redlease_client *c = owner;
    /* The primary failed us (gone, a replica now, READONLY): it may have
     * moved while we missed the news. Not when we left it on the news. */
    if (c->sentinel) {
        if (n->moving)
            n->moving = 0;
        else
            rdl_sentinel_refresh(c->sentinel);
    }
    /* A quorum member failed: the quorum waits for it no longer. */
    if (c->quorum && n != &c->main) rdl_quorum_member_failed(c->quorum, n);
    /* A Cluster node that serves slots (or any, before a map) failed: a
     * failover may have moved its slots. */
    if (c->cluster && (!c->cluster->loaded || n->serves))
        rdl_cluster_want_refresh(c->cluster, rdl_svc_now(&c->svc));
}

static void on_node_replied(void *owner)
{
    redlease_client *c = owner;
    if (c->set.closing) c->close_check = 1; /* maybe the last reply it waited for */
}

static void on_node_drain(void *owner) { rdl_client_drain(owner); }

/* Sends what waited for node n, and re-verifies the leases held on it at
 * once: the server may have restarted and lost them. */
static void on_node_flush(void *owner, rdl_node *n, int64_t now)
{
    redlease_client *c = owner;
    for (rdl_list *i = c->set.locks.next; i != &c->set.locks; i = i->next) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        if (lk->node == n) rdl_lock_on_ready(lk, now);
    }
    /* Each lock parked here gets one try. One the transport refuses though
     * the connection counts as ready (hiredis out of memory, a context
     * being torn down) is parked again and left to its op deadline:
     * trying until none is parked would never end. A send that fails runs
     * the event hook, which may free the client: its locks go, the next
     * one of the walk among them, so the walk stops there (c itself lives
     * until the outermost entry leaves). Nothing else frees a lock here:
     * callbacks are owed, not run. */
    for (rdl_list *i = c->set.locks.next; i != &c->set.locks && !c->svc.dead && c->set.parked && rdl_node_ready(n);) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        i = i->next;
        if (lk->parked && lk->node == n) rdl_lock_send_waiting(lk, now);
    }
    if (!c->svc.dead) rdl_inspect_node_ready(&c->inspect, n, now);
}

/* ------------------------------------------------ what the router tells the client */

/* A new map: every lock goes where it says; one whose node changed sends
 * from there (a held lease is confirmed there before it counts again). */
static void on_cluster_remap(void *owner, int64_t now)
{
    redlease_client *c = owner;
    for (rdl_list *i = c->set.locks.next; i != &c->set.locks; i = i->next) {
        struct redlease_lock *lk = RDL_CONTAINER(i, struct redlease_lock, link);
        rdl_node *n = rdl_cluster_route(c->cluster, lk->key, lk->keylen);
        if (n != lk->node) rdl_lock_move(lk, n, now);
    }
}

static const rdl_cluster_owner cluster_owner = {.remap = on_cluster_remap};

static const rdl_node_owner node_owner = {
    .ready = on_node_ready,
    .refused = on_node_refused,
    .lost = on_node_lost,
    .replied = on_node_replied,
    .drain = on_node_drain,
    .flush = on_node_flush,
};

/* ------------------------------------------ what the Sentinels tell the client */

/* A Sentinel named the primary: the connection goes there (at once, if it
 * was elsewhere), and the user hears of a change. Held leases are then
 * confirmed again on the new primary before they count (rdl_lock_on_ready). */
static void on_sentinel_primary(void *owner, const char *host, int port)
{
    redlease_client *c = owner;
    int64_t now = rdl_svc_now(&c->svc);
    /* the wake-up channel listens where the locks are (an idle one waits
     * for its first waiter; no memory: its link goes on, timers cover it) */
    if (c->waker) rdl_conn_set_endpoint(&c->waker->conn, host, port, now);
    int moved = rdl_conn_set_endpoint(&c->main.conn, host, port, now);
    if (moved <= 0) return; /* the same, or no memory: the next answer tries again */
    c->main.moving = moved == 2; /* the disconnect that follows is ours */
    char where[RDL_ADDR_NAME_MAX]; /* (the link's name is the old one's until it ends) */
    rdl_addr_name(where, sizeof where, host, port, NULL);
    redlease_event ev = {.type = REDLEASE_EV_PRIMARY, .rtt_ms = -1, .remaining_ms = -1,
                         .retry_in_ms = -1, .detail = where, .node = where};
    rdl_svc_emit(&c->svc, &ev);
}

static void on_sentinel_deadline(void *owner, int64_t at)
{
    redlease_client *c = owner;
    if (c->sentinel->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&c->svc.heap, &c->sentinel->wake, at);
}

/* A Sentinel's trouble is the user's only while we have no primary: it
 * must not hide the text of a failure of the primary's link or a reply.
 * (Its text names the Sentinel already: "Sentinel HOST:PORT: ...".) */
static void on_sentinel_error(void *owner, const char *text, size_t len)
{
    redlease_client *c = owner;
    if (!rdl_node_ready(&c->main)) rdl_svc_set_errstr(&c->svc, NULL, text, len);
}

/* A word read on the channel makes a waiter's attempt due now: it goes
 * out right after the read, not one loop iteration later. */
static void on_link_drain(void *owner) { rdl_client_drain(owner); }
static void on_link_enter(void *owner) { rdl_svc_enter(&((redlease_client *)owner)->svc); }
static void on_link_leave(void *owner) { rdl_svc_leave(&((redlease_client *)owner)->svc); }
static int on_link_ending(void *owner) { return ((redlease_client *)owner)->svc.dead; }

static void on_sentinel_refused(void *owner, int status, int64_t now)
{
    rdl_client_refused(owner, NULL, status, now);
}

static const rdl_sentinel_owner sentinel_owner = {
    .relay = {on_link_enter, on_link_leave, on_link_ending, on_link_drain},
    .primary = on_sentinel_primary,
    .error = on_sentinel_error,
    .refused = on_sentinel_refused,
    .deadline = on_sentinel_deadline,
};

/* ------------------------------------- what the wake-up channel tells the client */

static void on_waker_word(void *owner, rdl_waiter *w, int64_t ms)
{
    redlease_client *c = owner;
    rdl_lock_word(w, ms, rdl_svc_now(&c->svc));
}

/* Under a Cluster the channel may listen on any node (a script's PUBLISH
 * reaches every node): a lost link goes on to the next node the client
 * knows, so a dead node does not silence it. Under a quorum it listens on
 * one member, whose releases tell its waiters (design 11.5): a lost link
 * goes on to the next member likewise. */
static void on_waker_link_lost(void *owner)
{
    redlease_client *c = owner;
    if (!c->cluster && !c->quorum) return;
    const rdl_conn *wc = &c->waker->conn;
    size_t at = 0;
    for (size_t i = 0; i < c->nodes.n; i++) {
        const rdl_conn *nc = &c->nodes.v[i]->conn;
        if (rdl_conn_host(nc) && rdl_conn_host(wc) && strcmp(rdl_conn_host(nc), rdl_conn_host(wc)) == 0 &&
            rdl_conn_port(nc) == rdl_conn_port(wc))
            at = i;
    }
    for (size_t k = 1; k <= c->nodes.n; k++) {
        const rdl_conn *nc = &c->nodes.v[(at + k) % c->nodes.n]->conn;
        if (rdl_conn_host(nc)) {
            rdl_conn_set_address(&c->waker->conn, rdl_conn_host(nc), rdl_conn_port(nc));
            return; /* no memory: the same node again */
        }
    }
}

static void on_waker_deadline(void *owner, int64_t at)
{
    redlease_client *c = owner;
    if (c->waker->wake.idx != RDL_HEAP_OUT) rdl_heap_update(&c->svc.heap, &c->waker->wake, at);
}

/* The user learns that queued waiting lost its wake-ups (an ACL without
 * channels, a dead link) and got them back: REDLEASE_EV_CHANNEL, naming
 * the server the channel listens on (the one lost, for a lost link). */
static void on_waker_channel(void *owner, int status, const char *text, size_t len)
{
    redlease_client *c = owner;
    const char *node = rdl_conn_name(&c->waker->conn);
    char detail[RDL_ADDR_NAME_MAX + 256];
    int n = snprintf(detail, sizeof detail, "%s%s%.*s", node ? node : "", node ? ": " : "",
                     (int)(len < 255 ? len : 255), len ? text : "");
    redlease_event ev = {.type = REDLEASE_EV_CHANNEL, .status = status, .rtt_ms = -1,
                         .remaining_ms = -1, .retry_in_ms = -1, .detail = len && n > 0 ? detail : NULL,
                         .node = node};
    rdl_svc_emit(&c->svc, &ev);
}

static const rdl_waker_owner waker_owner = {
    .relay = {on_link_enter, on_link_leave, on_link_ending, on_link_drain},
    .word = on_waker_word,
    .link_lost = on_waker_link_lost,
    .deadline = on_waker_deadline,
    .channel = on_waker_channel,
};
