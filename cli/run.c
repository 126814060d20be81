/* SPDX-License-Identifier: MIT */
/* redlease run: acquire RESOURCE, run COMMAND while the library renews the
 * lease, release, exit with COMMAND's status. Or, when the environment
 * offers the lease already (inherit.h) and Redis confirms it, join it:
 * run COMMAND at once, check the lease at intervals, neither renew nor
 * release it (JOINED below).
 *
 *   WAITING --acquired--> RUNNING --COMMAND exited--> RELEASING --> FINISHED
 *      |                     | lost: SIGTERM, SIGKILL after --grace   ^
 *      +--busy, Redis unavailable, a signal: release the handle ------+
 *
 * Everything runs on libev's default loop (ev_child needs it): the
 * library's timer and sockets, COMMAND's exit (ev_child), the grace timer,
 * and the caught signals (signals.c). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <redlease.h>
#include <redlease/libev.h>

#include "args.h"
#include "child.h"
#include "commands.h"
#include "exit_status.h"
#include "inherit.h"
#include "msg.h"
#include "outage.h"
#include "server.h"
#include "signals.h"

/* --grace is the command's own; every other limit is the library's. */
#define MAX_GRACE_MS ((int64_t)24 * 3600 * 1000)

enum phase { WAITING, RUNNING, RELEASING, FINISHED };

typedef struct run {
    /* from the command line */
    cli_server server;
    const char *resource;
    char **command;
    int64_t wait_ms; /* REDLEASE_WAIT_FOREVER, or the budget */
    int64_t ttl_ms, max_hold_ms, grace_ms;
    int fencing;
    int64_t replica_acks, replica_timeout_ms; /* 0: none; 0: the library's default */
    int replica_scope;                        /* enum redlease_replica_scope */
    int64_t max_outage_ms;
    int64_t limit, weight; /* 0: a mutex; a semaphore of limit permits, weight of them ours */
    int shared;            /* a shared holder of a shared/exclusive resource (0: exclusive) */
    const char *label;     /* who holds, as status shows it (--label; NULL: COMMAND's name) */

    struct ev_loop *loop;
    redlease_client *client;
    redlease_lock *lock;
    int phase;
    int released;       /* redlease_release() called */
    int exit_status;
    int cancel_status;  /* why the wait was given up (0: it was not) */
    cli_outage outage;  /* Redis unusable while the lock is waited for */
    int renew_status;   /* the last renewal's failure (0: none since one was confirmed) */
    char renew_why[160];
    int held_to_end;    /* COMMAND ran and finished with the lease held */
    pid_t child;
    int own_group;    /* COMMAND leads its own process group (no terminal) */
    int died_of;      /* the signal that ended COMMAND, if one did */
    int start_status; /* nonzero: COMMAND never ran, and this is why */
    int lost;
    ev_child child_watcher;
    ev_timer grace_timer;
    /* a wait gives up when an outage has lasted --max-outage (outage.h) */
    ev_timer outage_timer;
    /* joined: COMMAND runs under the lease of the environment (outer),
     * checked by check_timer; it lasts at least until valid_until (ms of
     * the monotonic clock), as Redis last said */
    int no_inherit;
    int joined;
    cli_inherit outer;
    ev_timer check_timer;
    int64_t valid_until;
} run;

/* ------------------------------------------------------------ options */

enum { OPT_WAIT = 1, OPT_NO_WAIT, OPT_TTL, OPT_MAX_HOLD, OPT_GRACE, OPT_FENCE, OPT_MIN_REPLICAS,
       OPT_REPLICA_TIMEOUT, OPT_REPLICA_SCOPE, OPT_LIMIT, OPT_WEIGHT, OPT_SHARED, OPT_EXCLUSIVE,
       OPT_NO_INHERIT, OPT_LABEL, OPT_MAX_OUTAGE, OPT_QUIET, OPT_VERBOSE, OPT_HELP };

static const cli_opt run_opts[] = {
    {"wait", 'w', 1, OPT_WAIT},
    {"no-wait", 'n', 0, OPT_NO_WAIT},
    {"ttl", 't', 1, OPT_TTL},
    {"max-hold", 0, 1, OPT_MAX_HOLD},
    {"grace", 'g', 1, OPT_GRACE},
    {"fence", 'f', 0, OPT_FENCE},
    {"min-replicas", 0, 1, OPT_MIN_REPLICAS},
    {"replica-timeout", 0, 1, OPT_REPLICA_TIMEOUT},
    {"replica-scope", 0, 1, OPT_REPLICA_SCOPE},
    {"max-outage", 0, 1, OPT_MAX_OUTAGE},
    {"limit", 0, 1, OPT_LIMIT},
    {"weight", 0, 1, OPT_WEIGHT},
    /* flock(1)'s -s and -x are not ours: -s is --socket */
    {"shared", 0, 0, OPT_SHARED},
    {"exclusive", 0, 0, OPT_EXCLUSIVE},
    {"no-inherit", 0, 0, OPT_NO_INHERIT},
    {"label", 'l', 1, OPT_LABEL},
    {"quiet", 'q', 0, OPT_QUIET},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"help", 'h', 0, OPT_HELP},
    {NULL, 0, 0, 0},
};

/* 0, CLI_EXIT_USAGE, or -1 when --help was printed. */
static int parse(run *r, int argc, char **argv)
{
    static const cli_opt *const tables[] = {run_opts, cli_server_opts, NULL};
    cli_args a;
    cli_args_init(&a, argc, argv, tables);
    int wait_given = 0, no_wait = 0, quiet = 0, verbose = 0, exclusive = 0, scope_given = 0, id, rc_server;
    while ((id = cli_args_next(&a)) != CLI_ARG_DONE) {
        int rc = 0;
        switch (id) {
        case CLI_ARG_ERROR: return CLI_EXIT_USAGE;
        case CLI_ARG_POSITIONAL:
            if (r->resource) return cli_usage_error("'%s': expected '--' before COMMAND", a.value);
            r->resource = a.value;
            break;
        case CLI_ARG_DASHDASH:
            r->command = argv + a.i;
            a.i = argc; /* the rest is COMMAND's */
            break;
        case OPT_WAIT: rc = cli_args_number(&a, 0, REDLEASE_MAX_WAIT_MS, &r->wait_ms), wait_given = 1; break;
        case OPT_NO_WAIT: r->wait_ms = 0, no_wait = 1; break;
        case OPT_TTL: rc = cli_args_number(&a, REDLEASE_MIN_TTL_MS, REDLEASE_MAX_TTL_MS, &r->ttl_ms); break;
        case OPT_MAX_HOLD: rc = cli_args_number(&a, 1, REDLEASE_MAX_WAIT_MS, &r->max_hold_ms); break;
        case OPT_GRACE: rc = cli_args_number(&a, 0, MAX_GRACE_MS, &r->grace_ms); break;
        case OPT_FENCE: r->fencing = 1; break;
        case OPT_MIN_REPLICAS: rc = cli_args_number(&a, 1, REDLEASE_MAX_REPLICAS, &r->replica_acks); break;
        case OPT_REPLICA_TIMEOUT:
            rc = cli_args_number(&a, 1, REDLEASE_MAX_TIMEOUT_MS, &r->replica_timeout_ms);
            break;
        case OPT_REPLICA_SCOPE:
            scope_given = 1;
            if (strcmp(a.value, "all") == 0)
                r->replica_scope = REDLEASE_REPLICA_SCOPE_ALL;
            else if (strcmp(a.value, "acquire") == 0)
                r->replica_scope = REDLEASE_REPLICA_SCOPE_ACQUIRE;
            else
                rc = cli_usage_error("--replica-scope: 'all' or 'acquire', not '%s'", a.value);
            break;
        case OPT_MAX_OUTAGE: rc = cli_args_number(&a, 0, REDLEASE_MAX_WAIT_MS, &r->max_outage_ms); break;
        case OPT_LIMIT: rc = cli_args_number(&a, 1, REDLEASE_MAX_PERMITS, &r->limit); break;
        case OPT_WEIGHT: rc = cli_args_number(&a, 1, REDLEASE_MAX_PERMITS, &r->weight); break;
        case OPT_SHARED: r->shared = 1; break;
        case OPT_EXCLUSIVE: exclusive = 1; break;
        case OPT_NO_INHERIT: r->no_inherit = 1; break;
        case OPT_LABEL:
            r->label = a.value;
            if (!*a.value || strlen(a.value) > REDLEASE_MAX_LABEL)
                rc = cli_usage_error("--label: 1 to %d bytes", REDLEASE_MAX_LABEL);
            break;
        case OPT_QUIET: quiet = 1; break;
        case OPT_VERBOSE: verbose = 1; break;
        case OPT_HELP: cli_help(stdout); return -1;
        default: rc = cli_server_take(&r->server, &a, id); break;
        }
        if (rc) return CLI_EXIT_USAGE;
    }
    if (wait_given && no_wait) return cli_usage_error("--wait and --no-wait exclude each other");
    if (quiet && verbose) return cli_usage_error("--quiet and --verbose exclude each other");
    cli_verbosity = quiet ? CLI_QUIET : verbose ? CLI_VERBOSE : CLI_NORMAL;
    if (!r->resource) return cli_usage_error("run: missing RESOURCE");
    size_t len = strlen(r->resource);
    if (len == 0 || len > REDLEASE_MAX_RESOURCE)
        return cli_usage_error("RESOURCE must be 1 to %d bytes long", REDLEASE_MAX_RESOURCE);
    if (!r->command) return cli_usage_error("run: missing '--' before COMMAND");
    if (!r->command[0]) return cli_usage_error("run: missing COMMAND after '--'");
    if (r->replica_timeout_ms && !r->replica_acks)
        return cli_usage_error("--replica-timeout needs --min-replicas");
    if (scope_given && !r->replica_acks) return cli_usage_error("--replica-scope needs --min-replicas");
    if (r->shared && exclusive) return cli_usage_error("--shared and --exclusive exclude each other");
    /* a resource is one kind at a time (man 3, KINDS) */
    if ((r->shared || exclusive) && (r->limit || r->weight))
        return cli_usage_error("--%s and --%s exclude each other: a semaphore's holders are "
                               "neither shared nor exclusive",
                               r->shared ? "shared" : "exclusive", r->limit ? "limit" : "weight");
    if (r->weight && !r->limit)
        return cli_usage_error("--weight needs --limit (a mutex's holder holds it all)");
    if (r->weight > r->limit)
        return cli_usage_error("--weight %" PRId64 " is more than --limit %" PRId64 ": never admitted",
                               r->weight, r->limit);
    rc_server = cli_server_finish(&r->server);
    if (rc_server) return rc_server;
    /* the library's rule (EINVAL), said here with the reason */
    if (r->server.quorum && r->replica_acks)
        return cli_usage_error("--quorum and --min-replicas exclude each other: the quorum's "
                               "servers are independent masters, without replicas to wait for");
    /* each server admits less than --limit (man 3, KINDS) */
    int capacity = r->server.quorum && r->limit ? redlease_semaphore_capacity((int)r->limit, r->server.quorum_n) : 0;
    if (capacity > 0 && (r->weight ? r->weight : 1) > capacity)
        return cli_usage_error("--weight %" PRId64 " is more than each of the %d servers of --quorum admits "
                               "of --limit %" PRId64 " (%d, so that never more than --limit hold by a "
                               "majority): never admitted", r->weight, r->server.quorum_n, r->limit, capacity);
    /* a write may wait for one WAIT, then its own (man 3, REPLICATION) */
    if (2 * r->replica_timeout_ms >= r->server.timeout_ms)
        return cli_usage_error("--replica-timeout must be below half --timeout (%" PRId64 " ms)",
                               r->server.timeout_ms);
    return 0;
}

/* ------------------------------------------------------------ endings */

static void on_closed(redlease_client *c, void *arg)
{
    (void)c;
    run *r = arg;
    r->client = NULL; /* freed by the library once this returns */
    ev_break(r->loop, EVBREAK_ALL);
}

static void on_released(redlease_lock *lk, int status, void *arg)
{
    run *r = arg;
    if (r->held_to_end && status == REDLEASE_ENOTHELD) {
        /* Taken or deleted under COMMAND between two renewals: it may have
         * run beside another holder, as with a lost lease. */
        cli_error("%s was no longer ours when COMMAND finished (expired or taken): "
                  "the lease was lost while COMMAND ran", redlease_lock_key(lk));
        if (!r->start_status) r->exit_status = CLI_EXIT_LOST;
    } else if (r->held_to_end && status != REDLEASE_OK) {
        /* COMMAND's status stands: it ran under the lease, and the key
         * only outlives it by its TTL. */
        cli_error("could not release %s (%s); it expires within %" PRId64 " ms",
                  redlease_lock_key(lk), redlease_strerror(status), r->ttl_ms);
    }
    r->lock = NULL;
    r->phase = FINISHED;
    /* What the library still has to send (the delete of a key a failed
     * acquire may have set: an unanswered attempt, too few replicas) goes
     * out before we exit, within the command timeout; without a
     * connection there is nothing to wait for. Both allowed from here. */
    if (redlease_client_connected(r->client)) {
        redlease_client_close(r->client, on_closed, r);
        return;
    }
    redlease_client_free(r->client);
    on_closed(NULL, r);
}

/* Ends the handle, in any state; on_released follows. */
static void release(run *r)
{
    if (r->released) return;
    r->released = 1;
    if (r->joined) { /* the lease is the outer run's to release */
        ev_timer_stop(r->loop, &r->check_timer);
        r->phase = FINISHED;
        ev_break(r->loop, EVBREAK_ALL);
        return;
    }
    if (r->phase != FINISHED) r->phase = RELEASING;
    redlease_release(r->lock, on_released, r);
}

/* Gives up waiting for the lock: on_acquired(ECANCELED) then on_released. */
static void cancel_wait(run *r, int status)
{
    if (r->phase != WAITING || r->cancel_status) return;
    r->cancel_status = status;
    release(r);
}

/* ------------------------------------------------------------ COMMAND */

static void joined_final_check(run *r);

/* To COMMAND's whole process group when it has its own (its children
 * too), else to COMMAND only: the rest of redlease's group is not ours. */
static void signal_command(run *r, int sig)
{
    kill(r->own_group ? -r->child : r->child, sig);
}

static const char *command_target(const run *r)
{
    return r->own_group ? "process group" : "pid";
}

static void on_grace_over(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    run *r = w->data;
    cli_notice("COMMAND (%s %ld) outlived the %" PRId64 " ms grace: SIGKILL", command_target(r),
               (long)r->child, r->grace_ms);
    signal_command(r, SIGKILL);
}

static void on_child_exit(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)revents;
    run *r = w->data;
    ev_child_stop(loop, w);
    ev_timer_stop(loop, &r->grace_timer);
    int status = cli_child_exit_status(w->rstatus);
    if (WIFSIGNALED(w->rstatus)) r->died_of = WTERMSIG(w->rstatus);
    if (!r->start_status) cli_verbose("COMMAND (pid %ld) exited with status %d", (long)r->child, status);
    r->child = 0;
    r->held_to_end = !r->lost;
    r->exit_status = r->start_status ? r->start_status : r->lost ? CLI_EXIT_LOST : status;
    if (r->joined && r->held_to_end && !r->start_status) joined_final_check(r);
    release(r);
}

/* Starts COMMAND with env in its environment (NULL: as it is). */
static void start_command(run *r, const cli_child_env *env)
{
    r->own_group = !cli_in_terminal_foreground();
    pid_t pid = cli_child_spawn(r->command, env, r->own_group, &r->start_status);
    if (pid < 0) {
        cli_error("cannot start COMMAND: fork: %s", strerror(errno));
        r->exit_status = CLI_EXIT_FAILED;
        release(r);
        return;
    }
    /* Before returning to the loop: libev reaps children in a loop
     * callback, and would drop the status of one nobody watches yet. */
    r->child = pid;
    r->phase = RUNNING;
    ev_child_init(&r->child_watcher, on_child_exit, pid, 0);
    r->child_watcher.data = r;
    ev_child_start(r->loop, &r->child_watcher);
    if (!r->start_status)
        cli_verbose("started %s as pid %ld%s", r->command[0], (long)pid,
                    r->own_group ? ", in a process group of its own" : "");
}

/* ------------------------------------------------------------ the lease */

/* What an attempt that was not admitted found, after key: another holder
 * of a mutex (which shared holders are too), too few free permits of a
 * semaphore, or for a shared holder an exclusive holder or an exclusive
 * waiter queued ahead of it (the script says busy for both). */
static const char *busy_text(const run *r, char *buf, size_t size)
{
    if (r->shared) return "is held by an exclusive holder, or an exclusive waiter is queued ahead";
    if (!r->limit) return "is held by another holder";
    if (r->weight > 1)
        snprintf(buf, size, "has fewer than %" PRId64 " permits free (a semaphore of %" PRId64 ")",
                 r->weight, r->limit);
    else
        snprintf(buf, size, "has no permit free (a semaphore of %" PRId64 ")", r->limit);
    return buf;
}

/* A library text (redlease_client_errstr, an event's detail) for a message
 * that names the server already ("Redis at HOST:PORT: ..."): with one
 * server, without the "HOST:PORT: " it starts with, so the name is said
 * once. A text about one server of several keeps it: it says which. */
static const char *unnamed(const run *r, const char *text)
{
    size_t n = strlen(r->server.node);
    if (n && strncmp(text, r->server.node, n) == 0 && text[n] == ':' && text[n + 1] == ' ')
        return text + n + 2;
    return text;
}

/* The server an event is about, for a message: the one the user named, or
 * which of several ("HOST:PORT (Cluster ...)"), in buf. */
static const char *event_server(const run *r, const redlease_event *ev, char *buf, size_t size)
{
    if (!ev->node || r->server.node[0]) return r->server.where;
    snprintf(buf, size, "%s (%s)", ev->node, r->server.where);
    return buf;
}

static int status_for_acquire_error(run *r, int status)
{
    const char *key = redlease_lock_key(r->lock);
    const char *detail = unnamed(r, redlease_client_errstr(r->client));
    char text[96], tried[112] = "";
    if (r->outage.attempts || r->outage.links) {
        tried[0] = ' ', tried[1] = '(';
        size_t n = 2 + cli_outage_tried(&r->outage, tried + 2, sizeof tried - 3);
        tried[n] = ')', tried[n + 1] = '\0';
    }
    switch (status) {
    case REDLEASE_ECANCELED: return r->cancel_status ? r->cancel_status : CLI_EXIT_FAILED;
    case REDLEASE_EBUSY:
        cli_notice("%s %s", key, busy_text(r, text, sizeof text));
        return CLI_EXIT_BUSY;
    case REDLEASE_EKIND: /* the resource is another kind: waiting would never end */
        if (r->limit)
            snprintf(text, sizeof text, "a semaphore of %" PRId64 " permits", r->limit);
        cli_error("%s: not %s: %s", key, r->limit ? text : r->shared ? "shared/exclusive" : "a mutex",
                  detail[0] ? detail : redlease_strerror(status));
        return CLI_EXIT_UNAVAILABLE;
    case REDLEASE_ECONN:
    case REDLEASE_ETIMEDOUT:
    case REDLEASE_EREDIS:
    case REDLEASE_EPROTO:
    case REDLEASE_EREPLICAS: /* --min-replicas unmet within --wait */
    case REDLEASE_EQUORUM:   /* --quorum: too few servers said yes, not for another holder */
    case REDLEASE_EAUTH:     /* the refusals retrying cannot cure: at once */
    case REDLEASE_EPERM:
    case REDLEASE_ECONFIG:
    case REDLEASE_ETLS:
    case REDLEASE_ENOTSUP: /* the lease needs scripts the server refuses */
        cli_error("Redis at %s: %s%s%s%s", r->server.where, redlease_strerror(status),
                  detail[0] ? ": " : "", detail, tried);
        return CLI_EXIT_UNAVAILABLE;
    default:
        cli_error("acquire: %s", redlease_strerror(status));
        return CLI_EXIT_FAILED;
    }
}

static void on_acquired(redlease_lock *lk, int status, void *arg)
{
    run *r = arg;
    ev_timer_stop(r->loop, &r->outage_timer); /* the wait is over */
    if (status == REDLEASE_OK) {
        cli_child_env env = {redlease_lock_key(lk), redlease_lock_token(lk), r->fencing,
                             redlease_lock_fence(lk), r->limit, r->weight ? r->weight : 1, r->shared};
        start_command(r, &env);
        return;
    }
    r->exit_status = status_for_acquire_error(r, status);
    release(r);
}

/* The lease was lost while COMMAND runs (what: how, for the message):
 * SIGTERM, SIGKILL after the grace (at once without one); 124 once
 * COMMAND is gone. */
static void stop_command(run *r, const char *what)
{
    r->lost = 1;
    if (r->grace_ms == 0) {
        cli_notice("%s: stopping COMMAND (%s %ld) with SIGKILL", what, command_target(r), (long)r->child);
        signal_command(r, SIGKILL);
        return;
    }
    cli_notice("%s: stopping COMMAND (%s %ld) with SIGTERM, SIGKILL after %" PRId64 " ms", what,
               command_target(r), (long)r->child, r->grace_ms);
    signal_command(r, SIGTERM);
    ev_timer_set(&r->grace_timer, (ev_tstamp)r->grace_ms / 1000.0, 0.);
    ev_timer_start(r->loop, &r->grace_timer);
}

static void on_lost(redlease_lock *lk, int reason, void *arg)
{
    run *r = arg;
    if (r->phase != RUNNING) { /* COMMAND ended first: its status stands */
        cli_notice("the lease on %s was lost (%s) as COMMAND finished", redlease_lock_key(lk),
                   redlease_lost_reason_str(reason));
        return;
    }
    char what[REDLEASE_MAX_RESOURCE + REDLEASE_MAX_PREFIX + 300];
    int n = snprintf(what, sizeof what, "lost the lease on %s (%s)", redlease_lock_key(lk),
                     redlease_lost_reason_str(reason));
    /* why no renewal was confirmed, when the replicas are why */
    if (reason == REDLEASE_LOST_EXPIRED && r->renew_status == REDLEASE_EREPLICAS && n > 0 &&
        (size_t)n < sizeof what)
        snprintf(what + n, sizeof what - (size_t)n, ": the replicas did not acknowledge its renewals "
                 "(%s; see --replica-scope)", r->renew_why);
    stop_command(r, what);
}

/* ------------------------------------------------------------ joined */

/* The quickest that checks of a joined lease follow one another: when
 * little of it is left, the check after it expired comes this soon. */
#define MIN_CHECK_MS 10

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void check_in(run *r, int64_t ms)
{
    ev_now_update(r->loop); /* the check just made blocked the loop */
    ev_timer_set(&r->check_timer, (ev_tstamp)(ms < MIN_CHECK_MS ? MIN_CHECK_MS : ms) / 1000.0, 0.);
    ev_timer_start(r->loop, &r->check_timer);
}

/* Redis said, at a check sent at t0, that the outer lease has left ms
 * (-1: a key without expiry) left: it lasts at least until t0 + left,
 * and is checked again after a third of that, as a lease is renewed (a
 * key without expiry: at a third of --ttl). */
static void joined_confirmed(run *r, int64_t t0, int64_t left)
{
    r->valid_until = left < 0 ? INT64_MAX : t0 + left;
    check_in(r, (left < 0 ? r->ttl_ms : left) / 3);
}

/* Checks the outer lease while COMMAND runs: confirmed, it is checked
 * again later; gone, COMMAND is stopped (124); unconfirmed (Redis
 * unavailable), it is tried again while the time Redis last gave it lasts,
 * and counts as lost once that has passed. */
static void on_check(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    run *r = w->data;
    if (r->phase != RUNNING || r->lost) return;
    const char *key = r->outer.lock;
    char why[400], what[REDLEASE_MAX_RESOURCE + REDLEASE_MAX_PREFIX + 500];
    int64_t t0 = monotonic_ms(), left = 0;
    int held = cli_inherit_check(&r->outer, &r->server, &left, why, sizeof why);
    if (held == CLI_INHERIT_HOLDS) {
        cli_verbose("the joined lease on %s holds: %" PRId64 " ms left", key, left);
        joined_confirmed(r, t0, left);
        return;
    }
    int64_t now = monotonic_ms();
    if (held == CLI_INHERIT_UNSURE && now < r->valid_until) {
        cli_verbose("cannot check the joined lease on %s (Redis at %s: %s): %" PRId64
                    " ms of it left", key, r->server.where, why, r->valid_until - now);
        check_in(r, (r->valid_until - now) / 2);
        return;
    }
    if (held == CLI_INHERIT_GONE)
        snprintf(what, sizeof what, "the joined lease on %s was lost (its token no longer holds it)", key);
    else
        snprintf(what, sizeof what, "the joined lease on %s was lost (not confirmed in time: Redis at %s: %s)",
                 key, r->server.where, why);
    stop_command(r, what);
}

/* COMMAND finished under the joined lease: still the outer's? A lease
 * deleted or taken since the last check makes it 124, as a release that
 * finds the key no longer ours does; Redis not answering leaves COMMAND's
 * status, as a failed release does. */
static void joined_final_check(run *r)
{
    char why[400];
    int64_t left = 0;
    int held = cli_inherit_check(&r->outer, &r->server, &left, why, sizeof why);
    if (held == CLI_INHERIT_GONE) {
        cli_error("%s was no longer held by the joined lease when COMMAND finished: the lease was "
                  "lost while COMMAND ran", r->outer.lock);
        r->exit_status = CLI_EXIT_LOST;
    } else if (held == CLI_INHERIT_UNSURE) {
        cli_error("could not check the joined lease on %s as COMMAND finished (Redis at %s: %s)",
                  r->outer.lock, r->server.where, why);
    }
}

/* The environment offers this resource's lease (--no-inherit aside):
 * when Redis confirms that its token holds it, COMMAND runs under it at
 * once (1); else nothing to join (0), or Redis could not tell (exit 69,
 * said). */
static int join(run *r, int *rc)
{
    cli_inherit_ask ask = {r->resource, r->limit, r->weight, r->shared, r->fencing};
    *rc = 0;
    if (r->no_inherit) return 0;
    int found = cli_inherit_find(&r->outer, &r->server, &ask);
    if (found != CLI_INHERIT_OFFERED) {
        if (found == CLI_INHERIT_FAILED) *rc = CLI_EXIT_FAILED;
        return found == CLI_INHERIT_FAILED;
    }
    const char *key = r->outer.lock;
    char why[400];
    int64_t t0 = monotonic_ms(), left = 0;
    int held = cli_inherit_check(&r->outer, &r->server, &left, why, sizeof why);
    if (held == CLI_INHERIT_UNSURE) {
        cli_error("Redis at %s: cannot check the lease on %s in the environment: %s", r->server.where,
                  key, why);
        *rc = CLI_EXIT_UNAVAILABLE;
        return 1;
    }
    if (held == CLI_INHERIT_GONE) {
        cli_verbose("not joining the lease on %s in the environment: its token no longer holds it", key);
        cli_inherit_free(&r->outer);
        return 0;
    }
    cli_verbose("joined the lease on %s that the environment's token holds (%" PRId64
                " ms left): not renewed or released by this run", key, left);
    r->joined = 1;
    start_command(r, NULL); /* the environment describes the lease already */
    if (r->phase != RUNNING) *rc = r->exit_status; /* no fork: said */
    else joined_confirmed(r, t0, left);
    return 1;
}

/* The lease the command line asks for. */
static void lock_options(const run *r, redlease_lock_options *lo)
{
    redlease_lock_options_init(lo);
    lo->ttl_ms = r->ttl_ms;
    lo->wait_ms = r->wait_ms;
    lo->max_hold_ms = r->max_hold_ms;
    lo->fencing = r->fencing;
    lo->replica_acks = (int)r->replica_acks;
    lo->replica_timeout_ms = r->replica_timeout_ms;
    lo->replica_scope = r->replica_scope; /* renewals too, unless --replica-scope acquire */
    /* a semaphore's wait_mode is left to the library: its queue (man 1, --wait) */
    lo->limit = (int)r->limit;
    lo->weight = (int)r->weight;
    /* a shared holder's wait_mode too: the queue, phase-fair (man 1, --wait) */
    lo->shared = r->shared;
}

/* What a failed redlease_client_new, acquire or attach means; why: the
 * options' error text, or NULL. */
static int status_for_start_error(int rc, const char *why)
{
    if (why)
        cli_error("%s: %s", redlease_strerror(rc), why);
    else
        cli_error("%s", redlease_strerror(rc));
    /* ENOTSUP: --tls, and this redlease has no TLS: unavailable */
    return rc == REDLEASE_EINVAL    ? CLI_EXIT_USAGE
           : rc == REDLEASE_ENOTSUP ? CLI_EXIT_UNAVAILABLE
                                    : CLI_EXIT_FAILED;
}

/* The outage lasted --max-outage (outage.h): give up, if Redis is still
 * failing; else the next failure decides. */
static void give_up_on_outage(run *r)
{
    char tried[112];
    cli_outage_tried(&r->outage, tried, sizeof tried);
    cli_error("Redis at %s: unusable for %" PRId64 " ms (--max-outage; %s): %s", r->server.where,
              r->max_outage_ms, tried, r->outage.last[0] ? r->outage.last : "no usable answer");
    cancel_wait(r, CLI_EXIT_UNAVAILABLE);
}

/* Fires when the outage reaches --max-outage, counted on monotonic_ms().
 * libev counts the timer from its loop's time, which lags that clock when
 * the callback that arms it runs late in an iteration (a busy machine,
 * valgrind; or only the ms cut off): the timer may fire a little early. */
static void arm_outage_timer(run *r, int64_t now)
{
    int64_t left = cli_outage_deadline(&r->outage) - now;
    ev_timer_set(&r->outage_timer, (ev_tstamp)(left > 1 ? left : 1) / 1000.0, 0.);
    ev_timer_start(r->loop, &r->outage_timer);
}

static void on_outage_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    run *r = w->data;
    if (r->phase != WAITING || r->released) return;
    int64_t now = monotonic_ms();
    if (cli_outage_expired(&r->outage, now))
        give_up_on_outage(r);
    else if (r->outage.failing && cli_outage_deadline(&r->outage) > now)
        /* Early (arm_outage_timer): armed again for the rest. Not doing so
         * left the give-up to the next failure, a reconnect up to 2 s on
         * (seen under valgrind: 69 some 2500 ms after a server died, with
         * --max-outage 1000). */
        arm_outage_timer(r, now);
}

/* While the lock is waited for: something retrying may cure failed (an
 * attempt, or a connection: attempt 0). The wait goes on, within
 * --max-outage. */
static void waiting_failed(run *r, int attempt, const char *what, const char *why, int64_t retry_in)
{
    int64_t now = monotonic_ms();
    int first = r->outage.since < 0;
    int over = cli_outage_failed(&r->outage, now, attempt, why);
    if (attempt && retry_in < 0) { /* the last: on_acquired says how the wait ended */
        cli_verbose("%s: %s", what, why);
        return;
    }
    if (first && !over)
        cli_notice("Redis at %s: %s: %s; retrying for up to %" PRId64 " ms (--max-outage)", r->server.where,
                   what, why, r->max_outage_ms);
    else if (retry_in >= 0)
        cli_verbose("%s: %s; next attempt in %" PRId64 " ms", what, why, retry_in);
    else
        cli_verbose("%s: %s", what, why);
    if (over) {
        give_up_on_outage(r);
        return;
    }
    if (!ev_is_active(&r->outage_timer)) arm_outage_timer(r, now);
}

/* An answer about the lock (held by another, or ours): Redis is usable. */
static void outage_over(run *r)
{
    ev_timer_stop(r->loop, &r->outage_timer);
    if (cli_outage_over(&r->outage)) cli_verbose("Redis at %s answers again", r->server.where);
}

/* Logs for --verbose; while the lock is waited for, counts what fails
 * toward --max-outage (outage.h). */
static void on_event(redlease_client *c, const redlease_event *ev, void *arg)
{
    run *r = arg;
    const char *key = ev->key ? ev->key : "";
    const char *detail = ev->detail ? unnamed(r, ev->detail) : redlease_strerror(ev->status);
    int waiting = r->phase == WAITING && !r->released;
    char what[64], where[sizeof r->server.where + RDL_ADDR_NAME_MAX + 3];
    switch (ev->type) {
    case REDLEASE_EV_ATTEMPT:
        cli_verbose("acquiring %s (attempt %d)", key, ev->attempt);
        break;
    case REDLEASE_EV_ATTEMPT_FAILED:
        snprintf(what, sizeof what, "attempt %d failed", ev->attempt);
        if (waiting) waiting_failed(r, 1, what, detail, ev->retry_in_ms);
        break;
    case REDLEASE_EV_CONTENDED: {
        char text[96], next[48] = ""; /* none after the last attempt: on_acquired tells */
        outage_over(r);
        if (ev->retry_in_ms >= 0)
            snprintf(next, sizeof next, "; next attempt in %" PRId64 " ms", ev->retry_in_ms);
        cli_verbose("%s %s%s", key, busy_text(r, text, sizeof text), next);
        break;
    }
    case REDLEASE_EV_ACQUIRED:
        outage_over(r);
        cli_verbose("acquired %s (round trip %" PRId64 " ms, ttl %" PRId64 " ms)", key, ev->rtt_ms,
                    ev->ttl_ms);
        break;
    case REDLEASE_EV_RENEWED:
        r->renew_status = 0;
        cli_verbose("renewed %s: %" PRId64 " ms of validity left", key, ev->remaining_ms);
        break;
    case REDLEASE_EV_RENEW_FAILED:
        r->renew_status = ev->status;
        snprintf(r->renew_why, sizeof r->renew_why, "%s", detail);
        cli_verbose("renewing %s failed (%s): %" PRId64 " ms of validity left, next try in %" PRId64
                    " ms", key, detail, ev->remaining_ms, ev->retry_in_ms);
        break;
    case REDLEASE_EV_LOST:
        cli_verbose("lost %s: %s", key, redlease_lost_reason_str(ev->lost_reason));
        break;
    case REDLEASE_EV_RELEASED:
        cli_verbose("released %s: %s", key, redlease_strerror(ev->status));
        break;
    case REDLEASE_EV_CONNECTED:
        cli_verbose("connected to %s", event_server(r, ev, where, sizeof where));
        if (redlease_client_connected(c)) cli_outage_reached(&r->outage); /* a quorum: a majority */
        break;
    case REDLEASE_EV_PRIMARY:
        cli_verbose("Sentinel: the primary of '%s' is at %s", r->server.master, detail);
        break;
    case REDLEASE_EV_CHANNEL:
        if (ev->status == REDLEASE_OK)
            cli_verbose("wake-up channel subscribed: waiting in the queue");
        else
            cli_verbose("wake-up channel down (%s): waiting checks by timers", detail);
        break;
    case REDLEASE_EV_SCRIPTS_OFF:
        cli_verbose("%s runs no Lua scripts for us (%s): a mutex without them, waiting by polling",
                    event_server(r, ev, where, sizeof where), detail);
        break;
    case REDLEASE_EV_DISCONNECTED:
        /* a quorum's server: an outage only once no majority is left */
        if (waiting && !(r->server.quorum && redlease_client_connected(c)))
            waiting_failed(r, 0, r->server.quorum ? "no majority of the servers connected" : "connection",
                           detail, -1);
        else
            cli_verbose("connection to %s%s: %s", r->server.quorum ? "a server of the " : "",
                        r->server.where, detail);
        break;
    case REDLEASE_EV_RECONNECTING:
        cli_verbose("reconnecting to %s in %" PRId64 " ms", event_server(r, ev, where, sizeof where),
                    ev->retry_in_ms);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ signals */

static void on_signal(int sig, int origin, void *arg)
{
    run *r = arg;
    const char *name = cli_signal_name(sig);
    if (r->phase == WAITING && cli_signal_cancels_wait(sig)) {
        cli_notice("%s while waiting for the lock: giving up", name);
        cancel_wait(r, CLI_EXIT_SIGNAL_BASE + sig);
    } else if (r->phase == WAITING) {
        cli_verbose("%s not passed on: COMMAND is not running yet", name);
    } else if (r->phase == RUNNING && (r->own_group || (origin & CLI_SIG_FROM_PROCESS))) {
        cli_verbose("passing %s on to COMMAND (%s %ld)", name, command_target(r), (long)r->child);
        signal_command(r, sig);
    } else if (r->phase == RUNNING) {
        /* In the terminal's foreground group, which the kernel signals whole. */
        cli_verbose("%s came from the terminal: COMMAND got it too", name);
    } else {
        cli_verbose("%s ignored while releasing", name);
    }
}

/* ------------------------------------------------------------ main */

static int start(run *r)
{
    redlease_client_options co;
    cli_server_client_options(&r->server, &co);
    /* who holds, as status shows it: by default what runs, not redlease */
    const char *name = strrchr(r->command[0], '/');
    co.label = r->label ? r->label : name && name[1] ? name + 1 : r->command[0];
    if (strlen(co.label) > REDLEASE_MAX_LABEL) co.label = NULL; /* a long COMMAND name: the program's */
    redlease_lock_options lo;
    lock_options(r, &lo);

    int rc = redlease_client_new(&r->client, &co);
    if (rc != REDLEASE_OK) return status_for_start_error(rc, redlease_client_options_error(&co));
    if (rc == REDLEASE_OK) {
        redlease_client_set_event_cb(r->client, on_event, r);
        /* Acquire first, attach second: a connect that fails at once is
         * reported by the event hook, and then finds a handle to end. */
        rc = redlease_acquire(r->client, r->resource, &lo, on_acquired, on_lost, r, &r->lock);
    }
    if (rc == REDLEASE_OK) rc = redlease_libev_attach(r->client, r->loop);
    return rc == REDLEASE_OK ? 0 : status_for_start_error(rc, NULL);
}

int cli_run(int argc, char **argv)
{
    run r;
    memset(&r, 0, sizeof r);
    cli_server_init(&r.server);
    r.wait_ms = REDLEASE_WAIT_FOREVER;
    r.ttl_ms = 30000;
    r.grace_ms = 1000;
    r.max_outage_ms = CLI_OUTAGE_DEFAULT_MS;
    int rc = parse(&r, argc, argv);
    if (rc) {
        cli_server_free(&r.server);
        return rc < 0 ? 0 : rc;
    }

    cli_signals_init();
    r.loop = ev_default_loop(0);
    if (!r.loop) {
        cli_error("cannot start libev");
        cli_server_free(&r.server);
        return CLI_EXIT_FAILED;
    }
    ev_timer_init(&r.grace_timer, on_grace_over, 0., 0.);
    r.grace_timer.data = &r;
    cli_outage_init(&r.outage, r.max_outage_ms);
    ev_timer_init(&r.outage_timer, on_outage_timer, 0., 0.);
    r.outage_timer.data = &r;
    ev_timer_init(&r.check_timer, on_check, 0., 0.);
    r.check_timer.data = &r;
    if (cli_signals_start(r.loop, on_signal, &r) != 0) {
        cli_error("cannot catch signals: %s", strerror(errno));
        rc = CLI_EXIT_FAILED;
    } else if (!join(&r, &rc)) {
        rc = start(&r);
    }
    if (rc == 0) {
        ev_run(r.loop, 0);
        rc = r.exit_status;
    }
    redlease_client_free(r.client); /* NULL unless start() failed half way */
    cli_inherit_free(&r.outer);
    cli_signals_stop();
    ev_loop_destroy(r.loop);
    cli_server_free(&r.server);
    /* COMMAND's death by ^C (and the like) is passed on as a death, which
     * the calling shell acts on: bash ends a loop only then. */
    if (r.died_of && rc == CLI_EXIT_SIGNAL_BASE + r.died_of && cli_signal_is_passed_on_death(r.died_of))
        cli_signals_die_of(r.died_of);
    return rc;
}
