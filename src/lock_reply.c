/* SPDX-License-Identifier: MIT */
/* A lock's replies (src/lock_int.h): the handler every request of a lock
 * carries (rdl_lock_req_ops), the fallbacks (NOSCRIPT -> EVAL, a refused
 * native command), what the lock notes when a router sends a request on
 * (a Cluster redirect, which the router follows) and the moves of a lock
 * between nodes its owner makes; then the state machine's. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "acks.h"
#include "alloc.h"
#include "errors.h"
#include "keys.h"
#include "lease_cmd.h"
#include "lease_math.h"
#include "lock_int.h"
#include "node.h"
#include "options.h"
#include "scripts.h"

void rdl_lock_move(struct redlease_lock *lk, rdl_node *n, int64_t now)
{
    /* What is out on the old node no longer counts (rdl_lock_from_elsewhere: the
     * move count it went out with is old): the op goes again from the new
     * node, now, the same attempt within the same deadline (an acquire's
     * as the reclaiming script: the old one may still set the key). */
    lk->moves++;
    lk->asking = 0; /* an ASK was about the old node's slot */
    if (lk->op && lk->req) {
        if (lk->op == RDL_REQ_ACQUIRE) lk->maybe_set = 1;
        lk->req = NULL;
    }
    rdl_lock_set_node(lk, n, now);
    if (lk->state == RDL_LOCK_HELD && !rdl_lock_joined(lk)) {
        /* Not held until confirmed there (the slot moved, or a replica
         * took over), which a renewal does at once. */
        lk->confirm_node = NULL;
        if (!lk->op) lk->next_action = now;
    }
    rdl_lock_pump(lk, now);
    rdl_lock_reschedule(lk);
}

/* The router follows a redirect of req to node to (src/cluster.c; ask:
 * req alone goes there): 1 while req is still wanted there (the op's
 * current request, or a drop); a stale one did nothing and nobody waits
 * for it (0). A renewal is not confirmed meanwhile (held() is 0), its
 * deadline unchanged; a MOVED moves the lock's commands to to. No failure,
 * so nothing for errstr (a later one names its own). */
static int on_follow(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    struct redlease_lock *lk = req->lk;
    if (lk->req != req && req->kind != RDL_REQ_DROP) return 0;
    if (req->kind == RDL_REQ_RENEW) lk->confirm_node = NULL;
    lk->asking = 0;
    if (!ask) rdl_lock_set_node(lk, to, now);
    return 1;
}

/* The router could not send req on to to at once (not ready yet, or the
 * send failed): the lock waits for to like for any connection, within
 * the op's deadline, and sends afresh from there (rdl_lock_send_req:
 * behind ASKING for an ASK, after which it goes by its target's routing
 * again); req is done with (1). A drop's ASK is not worth parking the lock
 * behind ASKING: its key expires anyway (0: the redirect is its reply). */
static int on_unsent(rdl_req *req, rdl_node *to, int ask, int64_t now)
{
    struct redlease_lock *lk = req->lk;
    int current = lk->req == req;
    if (!current && ask) return 0;
    lk->asking = ask;
    rdl_lock_set_node(lk, to, now);
    if (current)
        lk->req = NULL;
    else
        lk->drop_pending = 1;
    rdl_lock_pump(lk, now);
    rdl_lock_reschedule(lk);
    rdl_lock_unref(lk);
    rdl_free(req);
    return 1;
}

void rdl_lock_on_ready(struct redlease_lock *lk, int64_t now)
{
    /* Re-verify at once: until a renewal on this connection confirms it,
     * the lease is not "held" (the server may have lost it). */
    if (lk->state == RDL_LOCK_HELD && !rdl_lock_joined(lk) && !lk->op &&
        !rdl_lock_confirmed_on(lk, lk->node)) {
        lk->next_action = now;
        rdl_lock_reschedule(lk);
    }
}

/* 1 when req was sent again (NOSCRIPT -> EVAL, a refused conditional
 * command -> its script) and lives on. */
static int handle_reply(rdl_req *req, const rdl_reply *r, int64_t now)
{
    struct redlease_lock *lk = req->lk;
    rdl_reply as_script;
    rdl_error_class e = {0};
    if (r && r->type == RDL_REPLY_ERROR) e = rdl_error_classify(r->str, r->len);
    /* SET is refused over maxmemory (OOM), where the renewal script, which
     * only reads and sets a TTL, runs: that renewal goes as the script.
     * A refused command (not the server's after all, an ACL, an option it
     * lacks) makes the link send scripts. */
    int oom = e.oom && req->script == RDL_SCRIPT_RENEW;
    /* The server's own command compares the whole value the handle would
     * have written; the key may hold our token with another record (an
     * attempt whose answer came late and one sent after it both wrote it,
     * each its own time and fence). Its "not ours" is asked again of the
     * script, which compares the token, before it means a loss; the lease
     * then goes by the scripts (src/identity.h). */
    int not_ours = r && req->native &&
                   (req->script == RDL_SCRIPT_RENEW ? r->type == RDL_REPLY_NIL
                                                    : r->type == RDL_REPLY_INTEGER && r->integer == 0);
    /* without scripts the value is known (every attempt wrote one): its
     * "not ours" is the answer */
    int scripts = !rdl_node_scripts_off(req->node);
    if (!req->native && req->script >= 0 && r && r->type == RDL_REPLY_ERROR &&
        rdl_error_refuses_scripts(r->str, r->len)) {
        /* Scripts refused since the link's probe (an ACL changed, Valkey's
         * Lua module unloaded): none go on it from now on (the event says
         * so, and its hook may end the client), and the request (or one
         * sent before that was known) goes without one where its lease can
         * (else its error ends it) */
        if (scripts) {
            rdl_node_scripts_refused(req->node, r->str, r->len);
            if (lk->set->svc->dead) return 0;
            scripts = !rdl_node_scripts_off(req->node);
        }
        if (!scripts && rdl_lock_req_scriptless(req) == 0) return 1;
    }
    if (not_ours && scripts) {
        lk->value_unsure = 1;
        req->no_native = 1;
        if (rdl_lock_req_submit(req) == 0) return 1;
        r = NULL;
    } else if (req->native && e.refused && !scripts) {
        /* refused, and no script to send instead: nothing more is sent
         * on this link that needs it (its next requests fail at once),
         * and this one's error ends it */
        rdl_conn_native_refused(&req->node->conn);
    } else if (req->native && (e.refused || oom) && scripts) {
        /* Resent as the script, it lands behind whatever the handle sent
         * since, harmless as after NOSCRIPT (below). */
        if (!oom) rdl_conn_native_refused(&req->node->conn);
        req->no_native = 1;
        if (rdl_lock_req_submit(req) == 0) return 1;
        r = NULL;
        e = (rdl_error_class){0};
    } else if (r && req->native && req->script == RDL_SCRIPT_RENEW && r->type != RDL_REPLY_ERROR) {
        /* SET IFEQ's OK is the script's 1; its nil (not ours), 0 */
        int ok = rdl_reply_is_ok(r);
        if (ok || r->type == RDL_REPLY_NIL) {
            as_script = (rdl_reply){.type = RDL_REPLY_INTEGER, .integer = ok};
            r = &as_script;
        }
    }
    if (e.noscript && req->script >= 0 && !req->sent_eval) {
        /* A cold or flushed script cache: EVAL this once, which fills it,
         * and EVALSHA goes on working. Resent, it lands behind whatever the
         * handle sent since, which is harmless: a late acquire OK is handled
         * as any stale one (dropped once the acquire is over), a renewal
         * never re-creates a key, compare-and-delete can repeat. */
        req->sent_eval = 1;
        if (rdl_lock_req_submit(req) == 0) return 1;
        r = NULL;
    }
    if (req->probe && r && r->type == RDL_REPLY_INTEGER && r->integer == -1) {
        /* The probe found a queue and changed nothing: the whole release,
         * which hands the lock over, goes now (behind what the handle sent
         * since, harmless as after NOSCRIPT). */
        req->probe = 0;
        lk->met_queue = 1;
        if (rdl_lock_req_submit(req) == 0) return 1;
        r = NULL;
    }
    int current = lk->req == req;
    if (current) lk->req = NULL;
    switch (req->kind) {
    case RDL_REQ_ACQUIRE: rdl_lock_acquire_reply(lk, req, r, current, now); break;
    case RDL_REQ_RENEW: rdl_lock_renew_reply(lk, req, r, current, now); break;
    case RDL_REQ_ACK: rdl_lock_ack_reply(lk, req, r, current, now); break;
    case RDL_REQ_RELEASE:
        if (current) rdl_lock_release_reply(lk, req, r, now);
        break;
    default: /* drops: nobody waits; one the link took goes out again */
        if (!r && now < lk->drop_until) {
            lk->drop_pending = 1;
            rdl_lock_pump(lk, now);
        }
        break;
    }
    rdl_lock_reschedule(lk);
    return 0;
}

/* One of the lock's requests came back (r NULL: the link took it): the
 * lock frees it, or sends it again (NOSCRIPT -> EVAL). The
 * lock owns its requests from rdl_lock_send_req() to here: each holds a
 * reference to it, and is freed once back (unless resent), also when the
 * client is ending and nothing is acted on. */
static void on_reply(rdl_req *req, const rdl_reply *r)
{
    struct redlease_lock *lk = req->lk;
    rdl_locks *ls = lk->set;
    if (!ls->svc->dead && handle_reply(req, r, rdl_svc_now(ls->svc))) return;
    rdl_lock_unref(lk);
    rdl_free(req);
}

/* Its reply comes soon: fetch the handle while the replies before it are
 * handled. */
static void on_prefetch(const rdl_req *req) { rdl_lock_prefetch(req->lk); }

/* The lease a request is about, for the quorum's own commands. */
static void on_lease(const rdl_req *req, rdl_cmd_spec *spec)
{
    const struct redlease_lock *lk = req->lk;
    spec->key = lk->key;
    spec->keylen = lk->keylen;
    spec->token = lk->token;
    spec->who = &lk->set->identity;
    spec->at = lk->at;
    spec->held_fence = lk->fencing ? lk->opts->fence : 0;
    spec->ttl = lk->ttl;
    spec->fence_key = lk->fencing ? rdl_lock_fence_key(lk) : NULL;
    spec->fence_keylen = lk->fencing ? lk->opts->fence_keylen : 0;
    spec->limit = rdl_lock_limit(lk); /* which kind's release (rdl_script_release_of) */
    spec->unordered = lk->unordered;  /* a shared holder's release gives in that order */
}

static int on_waited(const rdl_req *req) { return req->lk->req == req; }

const rdl_req_ops rdl_lock_req_ops = {
    .reply = on_reply,
    .prefetch = on_prefetch,
    .lease = on_lease,
    .waited = on_waited,
    .follow = on_follow,
    .resend = rdl_lock_req_submit,
    .unsent = on_unsent,
};
