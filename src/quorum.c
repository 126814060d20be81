/* SPDX-License-Identifier: MIT */
/* The quorum: one lock request fanned out to N servers, their answers
 * combined into one (src/quorum.h says what each combination means).
 *
 * A fan-out (rdl_qop) holds a copy of the command, one part (a request of
 * its own) per member, and the tally. It outlives the lock's request: it
 * is freed once every part is back and no member is owed its
 * compare-and-delete. The parts never point at the lock, so a lock can be
 * gone while its stragglers are still on the wire.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "errors.h"
#include "lease_cmd.h"
#include "lease_math.h"
#include "node.h"
#include "quorum.h"
#include "scripts.h"


/* What a member said to its part. */
enum { SAID_NOTHING, SAID_UNSENT, SAID_YES, SAID_NO, SAID_ERROR, SAID_GONE };

typedef struct rdl_qpart {
    rdl_req req; /* first: the member's request, as its connection sees it */
    struct rdl_qop *op;
    uint8_t member, out, said;
} rdl_qpart;

typedef struct rdl_qop {
    rdl_list link;   /* q->owing, while owed */
    rdl_quorum *q;
    rdl_req *parent; /* the lock's request, until answered */
    int kind, script, argc;
    uint32_t owed;   /* members owed this compare-and-delete (bit per member) */
    int64_t until;   /* owed until then: the key has expired by itself after */
    int out;         /* parts in flight */
    int pinned;      /* answering the lock: not freed meanwhile (it may
                        submit again, and a sweep must not take this one) */
    int cleanup;     /* the quorum's own delete (clean_up): the lock may
                        send again behind it, so it is never owed for later */
    int yes, no, errors, definite, gone;
    int young;       /* an acquire's yes from members whose server started less
                        than the restart guard ago: not counted (yes holds
                        the rest) */
    uint64_t fence;  /* the largest counter a yes carried ... */
    uint8_t fence_member; /* ... and the rank of a member that minted it */
    int64_t left;    /* the queue's acquire: the least TTL a no said its
                        holder has left (ms), or -1 */
    char err[80];    /* the first error's text (a definite one's, once seen) */
    size_t errlen;
    int err_definite;
    uint8_t err_member; /* who said it */
    const char *argv[RDL_CMD_MAX_ARGS];
    size_t lens[RDL_CMD_MAX_ARGS];
    rdl_qpart part[]; /* q->n of them; the argument bytes follow */
} rdl_qop;

/* ------------------------------------------------------------ members */

static const rdl_node_via front_via; /* below */

int rdl_quorum_init(rdl_quorum *q, rdl_svc *svc, rdl_node *front, rdl_node **members, size_t n)
{
    q->svc = svc;
    q->front = front;
    q->n = n;
    q->need = (size_t)rdl_majority((int64_t)n);
    rdl_list_init(&q->owing);
    q->wake.idx = RDL_HEAP_OUT;
    q->wake.kind = RDL_WAKE_QUORUM;
    q->member = rdl_malloc(n * sizeof *q->member);
    q->owed_n = rdl_calloc(n, sizeof *q->owed_n);
    q->scripts = rdl_calloc(n, sizeof *q->scripts);
    q->scripts_epoch = rdl_calloc(n, sizeof *q->scripts_epoch);
    if (!q->member || !q->owed_n || !q->scripts || !q->scripts_epoch) return REDLEASE_ENOMEM;
    memcpy(q->member, members, n * sizeof *q->member);
    for (size_t i = 0; i < n; i++) { /* by host, then port: the same whatever the list's order */
        const rdl_conn *a = &members[i]->conn;
        for (size_t j = 0; j < n; j++) {
            const rdl_conn *b = &members[j]->conn;
            int c = strcmp(rdl_conn_host(b) ? rdl_conn_host(b) : "", rdl_conn_host(a) ? rdl_conn_host(a) : "");
            q->rank[i] += c < 0 || (c == 0 && rdl_conn_port(b) < rdl_conn_port(a));
        }
    }
    rdl_node_set_via(front, &front_via, q);
    return REDLEASE_OK;
}

static void op_free(rdl_qop *op)
{
    rdl_list_remove(&op->link);
    rdl_free(op);
}

void rdl_quorum_free(rdl_quorum *q)
{
    if (!q->owing.next) return; /* never initialised (out of memory at creation) */
    /* The members' requests came back when their nodes were freed; what
     * is left is owed to servers we will not reach again. */
    while (!rdl_list_empty(&q->owing)) op_free(RDL_CONTAINER(q->owing.next, rdl_qop, link));
    rdl_free(q->member);
    rdl_free(q->owed_n);
    rdl_free(q->scripts);
    rdl_free(q->scripts_epoch);
}

static int member_ready(const rdl_quorum *q, size_t i) { return rdl_node_ready(q->member[i]); }

int rdl_quorum_ready(const rdl_quorum *q)
{
    size_t ready = 0;
    for (size_t i = 0; i < q->n; i++) ready += member_ready(q, i);
    int settled = q->settled == (1u << q->n) - 1 || ready == q->n;
    return ready >= q->need && settled && !q->svc->dead;
}

/* The slowest member's floor: an answer from a majority takes that long
 * at best when the fastest ones are the ones that fail. */
int64_t rdl_quorum_rtt_floor(const rdl_quorum *q)
{
    int64_t worst = 0;
    for (size_t i = 0; i < q->n; i++) {
        int64_t f = rdl_node_rtt_floor(q->member[i]);
        if (member_ready(q, i) && f > worst) worst = f;
    }
    return worst;
}

/* The servers' clock, as the first member that read it sees it: each
 * member has its own, and a record needs one (src/identity.h). */
int64_t rdl_quorum_server_ms(const rdl_quorum *q, int64_t now)
{
    for (size_t i = 0; i < q->n; i++) {
        int64_t t = rdl_node_server_ms(q->member[i], now);
        if (t >= 0) return t;
    }
    return -1;
}

/* Refused for good by more members than may fail: no majority is
 * possible until the user changes something. */
int rdl_quorum_refusal(const rdl_quorum *q)
{
    size_t refused = 0;
    int first = 0;
    for (size_t i = 0; i < q->n; i++) {
        int r = rdl_node_refusal(q->member[i]);
        if (r && !first) first = r;
        refused += r != 0;
    }
    return refused > q->n - q->need ? first : 0;
}

int rdl_quorum_status(const rdl_quorum *q)
{
    for (size_t i = 0; i < q->n; i++)
        if (!member_ready(q, i) && rdl_node_status(q->member[i])) return rdl_node_status(q->member[i]);
    return REDLEASE_ECONN;
}

void rdl_quorum_note_timeout(rdl_quorum *q, int64_t sent_at, int64_t now)
{
    /* Members that answer anything clear it at once (the stall rule). */
    for (size_t i = 0; i < q->n; i++)
        if (member_ready(q, i) && rdl_conn_in_flight(&q->member[i]->conn))
            rdl_node_note_timeout(q->member[i], sent_at, now);
}

/* ----------------------------------------------------------- sending */

static const rdl_req_ops part_ops; /* below */

static rdl_qop *op_new(rdl_quorum *q, int kind, int script, int argc, const char **argv,
                       const size_t *lens)
{
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += lens[i];
    rdl_qop *op = rdl_calloc(1, sizeof *op + q->n * sizeof op->part[0] + bytes);
    if (!op) return NULL;
    rdl_list_init(&op->link);
    op->q = q;
    op->kind = kind;
    op->script = script;
    op->argc = argc;
    op->left = -1;
    char *p = (char *)&op->part[q->n];
    for (int i = 0; i < argc; i++) {
        memcpy(p, argv[i], lens[i]);
        op->argv[i] = p;
        op->lens[i] = lens[i];
        p += lens[i];
    }
    for (size_t i = 0; i < q->n; i++) {
        rdl_qpart *pt = &op->part[i];
        pt->op = op;
        pt->member = (uint8_t)i;
        pt->req.ops = &part_ops;
        pt->req.kind = kind;
        pt->req.script = script;
        pt->req.node = q->member[i];
    }
    return op;
}

/* One part on member i's link as it stands (EVAL once it said NOSCRIPT). */
static int send_part(rdl_qop *op, size_t i)
{
    rdl_quorum *q = op->q;
    rdl_qpart *pt = &op->part[i];
    const char *argv[RDL_CMD_MAX_ARGS];
    size_t lens[RDL_CMD_MAX_ARGS];
    memcpy(argv, op->argv, op->argc * sizeof *argv);
    memcpy(lens, op->lens, op->argc * sizeof *lens);
    if (op->script >= 0 && !pt->req.sent_eval) {
        /* The first time a script goes on a link, it goes as EVAL, which
         * caches it: a NOSCRIPT answer to a part is only resent while the
         * fan-out is undecided, so on a fresh server the slowest member
         * would miss a lease (its part answered NOSCRIPT after the
         * majority's yes) without this. */
        uint64_t ep = rdl_node_epoch(q->member[i]);
        if (q->scripts_epoch[i] != ep) q->scripts_epoch[i] = ep, q->scripts[i] = 0;
        if (!(q->scripts[i] & (1u << op->script))) pt->req.sent_eval = 1;
    }
    if (pt->req.sent_eval) rdl_cmd_as_eval(argv, lens, op->script);
    pt->req.t0 = rdl_svc_now(q->svc);
    pt->req.epoch = rdl_node_epoch(q->member[i]);
    int rc = rdl_node_submit(q->member[i], &pt->req, op->argc, argv, lens);
    if (rc) return rc;
    if (op->script >= 0) q->scripts[i] |= 1u << op->script; /* cached once this runs */
    pt->out = 1;
    pt->said = SAID_NOTHING;
    op->out++;
    return REDLEASE_OK;
}

static void maybe_free(rdl_qop *op)
{
    if (!op->out && !op->owed && !op->parent && !op->pinned) op_free(op);
}

/* Member i is owed op's compare-and-delete (on), or no longer (off). The
 * per-member counts spare every send a walk of the list. */
static void set_owed(rdl_qop *op, size_t i, int on)
{
    uint32_t bit = 1u << i;
    if (!!(op->owed & bit) == on) return;
    op->owed ^= bit;
    if (on)
        op->q->owed_n[i]++;
    else
        op->q->owed_n[i]--;
}

static void forget_owed(rdl_qop *op)
{
    for (size_t i = 0; i < op->q->n; i++) set_owed(op, i, 0);
    rdl_list_remove(&op->link);
}

/* Member i is owed op's compare-and-delete: now, if its link is ready
 * and now is 1 (behind whatever went to it before), else first thing on
 * its next link or ahead of the next command for it. */
static void owe(rdl_qop *op, size_t i, int now_if_ready, int64_t t)
{
    if (t >= op->until) return; /* expired by itself by then */
    if (now_if_ready && member_ready(op->q, i) && !op->part[i].out && send_part(op, i) == REDLEASE_OK)
        return;
    set_owed(op, i, 1);
    if (!rdl_list_linked(&op->link)) rdl_list_push_back(&op->q->owing, &op->link);
}

/* What member i was owed goes out ahead of anything new for it. */
static void pay(rdl_quorum *q, size_t i, int64_t now)
{
    for (rdl_list *it = q->owing.next; it != &q->owing;) {
        rdl_qop *op = RDL_CONTAINER(it, rdl_qop, link);
        it = it->next;
        if (now >= op->until) {
            forget_owed(op); /* every such key has expired by itself */
        } else if ((op->owed & (1u << i)) && !op->part[i].out && send_part(op, i) == REDLEASE_OK) {
            set_owed(op, i, 0);
        }
        if (!op->owed) {
            rdl_list_remove(&op->link);
            maybe_free(op);
        }
    }
}

/* Forgets what is owed past its time, oldest first: a member that never
 * comes back must not keep a debt per release for ever. (Leases of
 * different TTLs make the order rough; a longer one ahead only delays
 * the ones behind it until its own time.) */
static void sweep(rdl_quorum *q, int64_t now)
{
    while (!rdl_list_empty(&q->owing)) {
        rdl_qop *op = RDL_CONTAINER(q->owing.next, rdl_qop, link);
        if (now < op->until) break;
        forget_owed(op);
        maybe_free(op);
    }
}

/* The lease the lock's request is about (its key, token, TTL, fence key). */
static rdl_cmd_spec lease_of(const rdl_req *parent, int script)
{
    rdl_cmd_spec spec = {.script = script};
    parent->ops->lease(parent, &spec);
    return spec;
}

/* A compare-and-delete of the lock's key on the members in mask, made by
 * the quorum itself (a failed acquire's leftovers, a lost lease's). */
static void clean_up(rdl_quorum *q, const rdl_req *parent, uint32_t mask, int64_t now)
{
    if (!mask) return;
    rdl_cmd_spec spec = lease_of(parent, parent->script);
    spec.script = rdl_script_release_of(parent->script, spec.limit); /* the lease's kind's */
    spec.fence_key = NULL;
    rdl_cmd cmd;
    rdl_cmd_encode(&cmd, &spec);
    rdl_qop *op = op_new(q, RDL_REQ_DROP, spec.script, cmd.argc, cmd.argv, cmd.lens);
    if (!op) return; /* the keys expire by themselves */
    op->until = now + spec.ttl + rdl_drift(spec.ttl);
    op->cleanup = 1;
    /* EVAL from the start: a NOSCRIPT would send it again, behind the
     * lock's next attempt, whose key it would then delete. */
    for (size_t i = 0; i < q->n; i++) op->part[i].req.sent_eval = 1;
    for (size_t i = 0; i < q->n; i++)
        if (mask & (1u << i)) owe(op, i, 1, now);
    maybe_free(op);
}

/* Raises every member's fence counter to the fence the majority gave, as
 * EVAL, behind the acquire on each link (so before its release): the next
 * holder's majority shares a member with this one and mints above it,
 * unless that member's link broke before the raise ran there. */
static void raise_fences(rdl_quorum *q, const rdl_cmd_spec *lease, uint64_t fence, int64_t now)
{
    rdl_cmd_spec spec = {.script = RDL_SCRIPT_FENCE_RAISE, .fence_key = lease->fence_key,
                         .fence_keylen = lease->fence_keylen, .fence = fence, .ttl = lease->ttl};
    rdl_cmd cmd;
    rdl_cmd_encode(&cmd, &spec);
    rdl_qop *op = op_new(q, RDL_REQ_FENCE_RAISE, RDL_SCRIPT_FENCE_RAISE, cmd.argc, cmd.argv, cmd.lens);
    if (!op) return; /* the fence stays the majority's largest */
    for (size_t i = 0; i < q->n; i++) {
        op->part[i].req.sent_eval = 1;
        if (member_ready(q, i) && (!q->owed_n[i] || (pay(q, i, now), !q->owed_n[i]))) send_part(op, i);
    }
    maybe_free(op);
}

int rdl_quorum_submit(rdl_quorum *q, rdl_req *req, int argc, const char **argv, const size_t *lens)
{
    if (!rdl_quorum_ready(q)) return REDLEASE_ECONN;
    if (argc > RDL_CMD_MAX_ARGS) return REDLEASE_EINVAL;
    int64_t now = rdl_svc_now(q->svc);
    sweep(q, now);
    rdl_qop *op = op_new(q, req->kind, req->script, argc, argv, lens);
    if (!op) return REDLEASE_ENOMEM;
    op->parent = req;
    int deletes = req->kind == RDL_REQ_RELEASE || req->kind == RDL_REQ_DROP;
    if (deletes) {
        int64_t ttl = lease_of(req, req->script).ttl;
        op->until = now + ttl + rdl_drift(ttl);
    }
    int last = REDLEASE_ECONN;
    for (size_t i = 0; i < q->n; i++) {
        int rc = REDLEASE_ECONN;
        if (member_ready(q, i)) {
            if (q->owed_n[i]) pay(q, i, now); /* what it is owed goes first, */
            if (!q->owed_n[i]) rc = send_part(op, i); /* or nothing goes */
        }
        if (rc) {
            last = rc;
            op->part[i].said = SAID_UNSENT;
            op->gone++;
            /* A member we could not reach may hold the key all the same. */
            if (deletes) owe(op, i, 0, now);
        }
    }
    if (!op->out) {
        op->parent = NULL; /* not sent: the lock keeps it and tries again */
        maybe_free(op);
        return last;
    }
    return REDLEASE_OK;
}

/* ---------------------------------------------------------- answering */

static void note_error(rdl_qop *op, const rdl_qpart *pt, const rdl_reply *r, int definite)
{
    op->errors++;
    op->definite += definite;
    if (op->errlen && (op->err_definite || !definite)) return; /* keep the first (definite) one */
    size_t n = r->len < sizeof op->err ? r->len : sizeof op->err - 1;
    memcpy(op->err, r->str, n);
    op->errlen = n;
    op->err_definite = definite;
    op->err_member = pt->member;
}

/* Whether member i's server started less than the restart guard ago: the
 * lease's TTL, or the client's quorum_restart_guard_ms. A server restarted
 * without its data forgot the holders an older majority counted on it,
 * and one of them may believe it holds until its TTL ends: that member's
 * yes makes no majority until then (docs/design.md, 10). */
static int young(const rdl_qop *op, size_t i)
{
    rdl_quorum *q = op->q;
    if (q->restart_guard < 0 || !op->parent) return 0; /* (decided: nothing to count for) */
    int64_t started = rdl_node_started_at(q->member[i]);
    if (started == RDL_UNKNOWN_START) return 0;
    int64_t guard = q->restart_guard ? q->restart_guard : lease_of(op->parent, op->script).ttl;
    return rdl_svc_now(q->svc) < started + guard;
}

/* Tallies member i's answer r (NULL: its link took the part). */
static void tally(rdl_qop *op, rdl_qpart *pt, const rdl_reply *r)
{
    int said = SAID_ERROR;
    if (!r) {
        said = SAID_GONE;
        op->gone++;
    } else if (r->type == RDL_REPLY_ERROR) {
        rdl_error_class e = rdl_error_classify(r->str, r->len);
        if (e.wrongtype && op->kind != RDL_REQ_ACQUIRE) {
            said = SAID_NO; /* the key holds another type: not ours */
            op->no++;
        } else {
            note_error(op, pt, r, !e.transient);
        }
    } else if (op->kind == RDL_REQ_ACQUIRE && op->script < 0) { /* SET NX PX */
        if (rdl_reply_is_ok(r) && young(op, pt->member))
            said = SAID_YES, op->young++; /* it holds the key all the same */
        else if (rdl_reply_is_ok(r))
            said = SAID_YES, op->yes++;
        else if (r->type == RDL_REPLY_NIL)
            said = SAID_NO, op->no++;
    } else if (rdl_script_waits(op->script) && r->type == RDL_REPLY_INTEGER && r->integer < 0) {
        /* waiting: -(the holder's TTL left + 1) */
        said = SAID_NO, op->no++;
        int64_t left = -r->integer - 1;
        if (op->left < 0 || left < op->left) op->left = left;
    } else if (r->type == RDL_REPLY_INTEGER && r->integer >= 0) {
        /* scripts: 0 is no; an acquire's yes is 1 or its fence, the
         * others' yes is 1 */
        if (r->integer == 0) {
            said = SAID_NO, op->no++;
        } else if (op->kind == RDL_REQ_ACQUIRE && r->integer > RDL_QUORUM_COUNTER_MAX) {
            static const rdl_reply big = {.type = RDL_REPLY_ERROR,
                                          .str = "ERR the fence counter is too large for a quorum's fence",
                                          .len = 55};
            note_error(op, pt, &big, 1);
            pt->said = SAID_GONE; /* it holds the key there: cleaned up as a silent member's */
            return;
        } else if (op->kind == RDL_REQ_ACQUIRE && young(op, pt->member)) {
            said = SAID_YES, op->young++; /* it holds the key all the same: may_hold() */
        } else if (op->kind == RDL_REQ_ACQUIRE || r->integer == 1) {
            said = SAID_YES, op->yes++;
            if ((uint64_t)r->integer > op->fence)
                op->fence = (uint64_t)r->integer, op->fence_member = op->q->rank[pt->member];
        }
    }
    if (said == SAID_ERROR && r && r->type != RDL_REPLY_ERROR) {
        static const rdl_reply odd = {.type = RDL_REPLY_ERROR, .str = "ERR a reply of an unexpected type", .len = 33};
        note_error(op, pt, &odd, 1);
    }
    pt->said = (uint8_t)said;
}

/* Members that may hold the lock's key by this fan-out: said yes, have
 * not answered, or lost the link before they did. */
static uint32_t may_hold(const rdl_qop *op)
{
    uint32_t mask = 0;
    for (size_t i = 0; i < op->q->n; i++) {
        const rdl_qpart *pt = &op->part[i];
        if (pt->out || pt->said == SAID_YES || pt->said == SAID_GONE) mask |= 1u << i;
    }
    return mask;
}

/* Gives the lock its one reply. A member still silent then is watched by
 * the stall rule from here: the lock has its answer, so its own timeout
 * (which would arm that rule) never comes, and a stopped server would keep
 * its link, and every fan-out waiting on it, for ever. */
static void answer(rdl_qop *op, const rdl_reply *r)
{
    int64_t now = rdl_svc_now(op->q->svc);
    for (size_t i = 0; i < op->q->n && !op->q->svc->dead; i++)
        if (op->part[i].out) rdl_node_note_timeout(op->q->member[i], op->part[i].req.t0, now);
    rdl_req *parent = op->parent;
    op->parent = NULL;
    parent->ops->reply(parent, r);
}

/* Passes on the error member i gave as it is: the lock hears it as that
 * member's (the front's name is the member's meanwhile), so its text and
 * events name the member. */
static void answer_as(rdl_qop *op, size_t i, const rdl_reply *r)
{
    rdl_quorum *q = op->q;
    const rdl_node *was = q->speaker; /* (the lock may hear another inside) */
    q->speaker = q->member[i];
    answer(op, r);
    q->speaker = was;
}

/* The fan-out failed: a definite error more members gave than may fail,
 * busy, nothing at all, or QUORUM with the counts. */
static void answer_failure(rdl_qop *op)
{
    rdl_quorum *q = op->q;
    rdl_reply r = {.type = RDL_REPLY_ERROR};
    char text[200 + RDL_ADDR_NAME_MAX];
    if (op->definite > (int)(q->n - q->need) && op->err_definite) {
        r.str = op->err;
        r.len = op->errlen;
        answer_as(op, op->err_member, &r);
        return;
    }
    if (op->kind == RDL_REQ_ACQUIRE && op->no) {
        if (op->script < 0) {
            r.type = RDL_REPLY_NIL;
        } else {
            /* The queue's acquire learns when the lock may be free first;
             * not when a member said yes (a split vote, or a release under
             * way): no holder's release may come to tell it (0, unknown). */
            r.type = RDL_REPLY_INTEGER;
            r.integer = rdl_script_waits(op->script) && op->left >= 0 && !op->yes ? -(op->left + 1) : 0;
        }
    } else if (!op->yes && !op->young && !op->no && !op->errors) {
        answer(op, NULL); /* no member answered at all: as a lost link */
        return;
    } else {
        const char *who = op->errlen ? rdl_node_name(q->member[op->err_member]) : NULL;
        char young_text[80] = "";
        if (op->young)
            snprintf(young_text, sizeof young_text, ", %d restarted less than the restart guard ago",
                     op->young);
        int n = snprintf(text, sizeof text, "QUORUM %d of %zu servers said yes, %zu needed (%d no%s, %d failed%s%s%s%.*s)",
                         op->yes, q->n, q->need, op->no, young_text, op->errors + op->gone,
                         op->errlen ? ": " : "", who ? who : "", who ? ": " : "", (int)op->errlen, op->err);
        r.str = text;
        r.len = n < (int)sizeof text ? (size_t)n : sizeof text - 1;
    }
    answer(op, &r);
}

/* Answers the lock once the outcome is certain. */
static void decide(rdl_qop *op, int64_t now)
{
    rdl_quorum *q = op->q;
    int need = (int)q->need, may_fail = (int)(q->n - q->need);
    rdl_reply r = {.type = RDL_REPLY_INTEGER, .integer = 1};
    switch (op->kind) {
    case RDL_REQ_ACQUIRE:
        if (op->yes >= need) {
            if (op->script < 0) {
                r.type = RDL_REPLY_STATUS;
                r.str = "OK";
                r.len = 2;
            } else {
                /* a fenced acquire's answer is the fence, every other's 1 */
                rdl_cmd_spec lease = lease_of(op->parent, op->script);
                int fenced = op->script == RDL_SCRIPT_ACQUIRE_FENCED ||
                             (rdl_script_waits(op->script) && lease.fence_key);
                r.integer = fenced ? (long long)(op->fence * RDL_QUORUM_FENCE_SPREAD + op->fence_member) : 1;
                if (fenced) raise_fences(q, &lease, op->fence, now); /* the counter */
            }
            answer(op, &r);
        } else if (op->yes + op->out < need) {
            /* Delete what it set (a young member's yes too), unless the lock stopped waiting for it:
             * then its next attempt may be on the links already, and that
             * attempt (or the lock's drop) covers these keys. */
            if (op->parent->ops->waited(op->parent)) clean_up(q, op->parent, may_hold(op), now);
            answer_failure(op);
        }
        break;
    case RDL_REQ_RENEW:
        if (op->yes >= need) {
            answer(op, &r);
        } else if (op->no > may_fail) {
            /* Not ours on a majority: lost, and what is left of it goes. */
            clean_up(q, op->parent, may_hold(op), now);
            r.integer = 0;
            answer(op, &r);
        } else if (op->yes + op->out < need) {
            answer_failure(op);
        }
        break;
    default: /* release, drop: compare-and-delete */
        if (op->out && op->yes + op->no < need) break; /* a majority answers first */
        if (op->yes || op->no >= need || op->kind == RDL_REQ_DROP) {
            r.integer = op->yes > 0;
            answer(op, &r);
        } else if (!op->out) {
            answer_failure(op);
        }
        break;
    }
}

/* A member's part came back (r NULL: the link took it). */
static void on_part_reply(rdl_req *req, const rdl_reply *r)
{
    rdl_qpart *pt = (rdl_qpart *)req;
    rdl_qop *op = pt->op;
    rdl_quorum *q = op->q;
    size_t i = pt->member;
    rdl_svc *svc = q->svc;
    pt->out = 0;
    op->out--;
    if (svc->dead) {
        /* ending: nothing is sent or decided; the lock frees its request */
        if (op->parent) answer(op, NULL);
        forget_owed(op);
        maybe_free(op);
        return;
    }
    int64_t now = rdl_svc_now(svc);
    int deletes = op->kind == RDL_REQ_RELEASE || op->kind == RDL_REQ_DROP;
    int noscript = r && r->type == RDL_REPLY_ERROR && rdl_error_classify(r->str, r->len).noscript;
    if (noscript && op->script >= 0 && !pt->req.sent_eval && (op->parent || deletes)) {
        /* This member's script cache is cold: EVAL once fills it. Not for
         * a decided acquire or renewal: it did nothing, and sent again it
         * would land behind the clean-up (or the lock's next attempt). */
        pt->req.sent_eval = 1;
        if (send_part(op, i) == REDLEASE_OK) return;
        r = NULL;
    }
    tally(op, pt, r);
    /* A delete the link took is owed: on the new link, ahead of anything
     * the lock sends there. One the server could not run now (LOADING,
     * BUSY...) is owed ahead of the next command for that member (not at
     * once: that could spin), unless it is a clean-up: the lock's next
     * attempt may be on that link behind it already, and that attempt
     * takes the key back or its lock deletes it. */
    if (deletes && !r) owe(op, i, 1, now);
    if (deletes && r && r->type == RDL_REPLY_ERROR && pt->said == SAID_ERROR && !op->cleanup &&
        rdl_error_classify(r->str, r->len).transient)
        owe(op, i, 0, now);
    op->pinned = 1;
    if (op->parent) decide(op, now);
    op->pinned = 0;
    maybe_free(op);
}

static const rdl_req_ops part_ops = {.reply = on_part_reply};

int64_t rdl_quorum_settle_time(int64_t connect_timeout, int64_t command_timeout)
{
    int64_t t = RDL_QUORUM_SETTLE_MS;
    if (command_timeout / 4 < t) t = command_timeout / 4;
    return connect_timeout < t ? connect_timeout : t;
}

/* A member still connecting after the settling time (a server that
 * accepts and never answers, a route that drops) is waited for no longer:
 * acquires with a short budget must not fail for it. */
void rdl_quorum_run(rdl_quorum *q, int64_t now)
{
    (void)now;
    q->settled = (1u << q->n) - 1;
    rdl_heap_update(&q->svc->heap, &q->wake, RDL_NEVER);
    if (rdl_quorum_ready(q)) rdl_node_flush_soon(q->front);
}

/* Member m's first connection is over: once all are, the quorum may be
 * ready, and what waited for it goes. */
static void settle(rdl_quorum *q, rdl_node *m)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->member[i] == m) q->settled |= 1u << i;
    if (rdl_quorum_ready(q)) rdl_node_flush_soon(q->front);
}

void rdl_quorum_member_ready(rdl_quorum *q, rdl_node *m)
{
    q->epoch++; /* held leases are confirmed again, with this member asked */
    for (size_t i = 0; i < q->n; i++)
        if (q->member[i] == m && q->owed_n[i]) pay(q, i, rdl_svc_now(q->svc));
    settle(q, m);
}

void rdl_quorum_member_failed(rdl_quorum *q, rdl_node *m) { settle(q, m); }

/* ------------------------------------------------ the front node's calls */

static int via_submit(void *q, rdl_req *req, int argc, const char **argv, const size_t *lens)
{
    return rdl_quorum_submit(q, req, argc, argv, lens);
}
static int via_ready(const void *q) { return rdl_quorum_ready(q); }
static uint64_t via_epoch(const void *q) { return ((const rdl_quorum *)q)->epoch; }
static int64_t via_rtt_floor(const void *q) { return rdl_quorum_rtt_floor(q); }
static int64_t via_server_ms(const void *q, int64_t now) { return rdl_quorum_server_ms(q, now); }
static int via_refusal(const void *q) { return rdl_quorum_refusal(q); }
static int via_status(const void *q) { return rdl_quorum_status(q); }
static void via_note_timeout(void *q, int64_t sent_at, int64_t now)
{
    rdl_quorum_note_timeout(q, sent_at, now);
}
static const char *via_name(const void *q)
{
    const rdl_node *m = ((const rdl_quorum *)q)->speaker;
    return m ? rdl_node_name(m) : NULL;
}

/* No majority of the members runs scripts for us (each one's handshake
 * asked): every lease of the quorum needs them (its clean-up, its
 * scripts after the first attempt), so none can be had. */
static int via_scripts_off(const void *arg)
{
    const rdl_quorum *q = arg;
    size_t off = 0;
    for (size_t i = 0; i < q->n; i++) off += rdl_node_scripts_off(q->member[i]) != 0;
    return off > q->n - q->need;
}
static const char *via_scripts_why(const void *arg)
{
    const rdl_quorum *q = arg;
    for (size_t i = 0; i < q->n; i++)
        if (rdl_node_scripts_off(q->member[i])) return rdl_node_scripts_why(q->member[i]);
    return "";
}

static const rdl_node_via front_via = {
    .submit = via_submit,
    .ready = via_ready,
    .epoch = via_epoch,
    .rtt_floor = via_rtt_floor,
    .server_ms = via_server_ms,
    .refusal = via_refusal,
    .status = via_status,
    .note_timeout = via_note_timeout,
    .name = via_name,
    .scripts_off = via_scripts_off,
    .scripts_why = via_scripts_why,
};
