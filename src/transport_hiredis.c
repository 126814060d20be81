/* The hiredis async binding of the transport seam (see transport.h).
 *
 * This is the only file of the project that includes hiredis. It works on
 * hiredis 0.14.1 and 1.x (design-anchors.md section 2):
 *  - connect/disconnect callbacks use the const-pointer variant (row 3);
 *  - nothing frees or disconnects a context from inside onConnect or
 *    onDisconnect (row 4), and redisAsyncFree never gets NULL (row 8);
 *  - the loop adapter is attached before the connect callback is set
 *    (row 15);
 *  - we forget a context ourselves when hiredis is about to free it
 *    (onConnect with an error, onDisconnect) or when we free it (row 13);
 *  - replies are copied into rl_reply and never freed here (rows 16, 20).
 *
 * Ownership: self->ac is the live context (NULL when closed). ac->data points
 * at self, so every hiredis callback finds the core through it. close() frees
 * the context synchronously (the core calls it only outside hiredis
 * callbacks), which delivers r == NULL for every pending req while
 * self->closing_ac == ac; the onDisconnect that follows is ignored because
 * the context is no longer self->ac.
 *
 * Defensive paths for a core that breaks the contract (close() or destroy()
 * from inside one of our callbacks into the core): they stay memory safe.
 * The context is cut off from self (ac->data = NULL, so its later callbacks
 * are dropped: pending reqs then never get their NULL) and freed by hiredis
 * once it is safe, or kept as a zombie and freed at the next entry from
 * outside callbacks; destroy() is deferred until our callback frame unwinds.
 */
#include <stddef.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "redlease.h"
#include "transport.h"
#include "alloc.h"

typedef struct rl_hiredis {
    struct redlease_client *client;
    const struct redlease_loop_ops *loop;
    void *loop_data;
    redisAsyncContext *ac;         /* live context, or NULL */
    redisAsyncContext *closing_ac; /* context being freed by close() */
    redisAsyncContext *zombie;     /* cut off inside a callback, not yet freed */
    int connected;                 /* onConnect(REDIS_OK) seen for ac */
    int depth;                     /* nesting of our frames that touch self afterwards */
    int dead;                      /* destroy() requested while depth > 0 */
    int destroying;                /* inside destroy(): no new connection */
} rl_hiredis;

/* ------------------------------------------------------------- helpers */

static const char *hr_errtext(const redisAsyncContext *ac, const char *dflt) {
    if (ac->errstr != NULL && ac->errstr[0] != '\0')
        return ac->errstr;
    if (ac->c.err != 0 && ac->c.errstr[0] != '\0')
        return ac->c.errstr;
    return dflt;
}

static void hr_enter(rl_hiredis *t) {
    t->depth++;
}

/* Leaves a frame; frees t if destroy() was deferred. Returns 1 if freed. */
static int hr_leave(rl_hiredis *t) {
    if (--t->depth == 0 && t->dead) {
        if (t->zombie != NULL)
            t->zombie->data = NULL; /* leaked, but never reaches freed memory */
        rl_free(t);
        return 1;
    }
    return 0;
}

/* Frees a zombie context, only ever from outside hiredis callbacks. */
static void hr_reap(rl_hiredis *t) {
    if (t->zombie != NULL && t->depth == 0) {
        redisAsyncContext *z = t->zombie;
        t->zombie = NULL;
        z->data = NULL; /* its NULL replies and onDisconnect are dropped */
        redisAsyncFree(z);
    }
}

static void hr_convert(const redisReply *reply, rl_reply *r) {
    memset(r, 0, sizeof(*r));
    switch (reply->type) {
    case REDIS_REPLY_STATUS: r->type = RL_REPLY_STATUS; break;
    case REDIS_REPLY_ERROR: r->type = RL_REPLY_ERROR; break;
    case REDIS_REPLY_STRING: r->type = RL_REPLY_STRING; break;
    case REDIS_REPLY_INTEGER:
        r->type = RL_REPLY_INTEGER;
        r->integer = reply->integer;
        return;
    case REDIS_REPLY_NIL: r->type = RL_REPLY_NIL; return;
#ifdef REDIS_REPLY_BOOL
    case REDIS_REPLY_BOOL: /* RESP3 only; we never ask for it */
        r->type = RL_REPLY_INTEGER;
        r->integer = reply->integer != 0 ? 1 : 0;
        return;
#endif
    default: r->type = RL_REPLY_OTHER; return;
    }
    /* STATUS, ERROR and STRING carry text. */
    r->str = reply->str;
    r->len = reply->str != NULL ? (size_t)reply->len : 0;
}

/* ----------------------------------------------------- hiredis callbacks */

static void hr_on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
    rl_hiredis *t = (rl_hiredis *)ac->data;
    rl_reply r;

    if (t == NULL || ac == t->zombie || t->dead)
        return; /* cut off context, or the core is gone */
    if (ac != t->ac && ac != t->closing_ac)
        return; /* not ours any more (cannot happen while the contract holds) */

    hr_enter(t);
    if (reply != NULL) {
        hr_convert((const redisReply *)reply, &r);
        rl_core_on_reply(t->client, privdata, &r);
    } else {
        rl_core_on_reply(t->client, privdata, NULL);
    }
    hr_leave(t);
}

static void hr_on_connect(const redisAsyncContext *ac, int status) {
    rl_hiredis *t = (rl_hiredis *)ac->data;
    struct redlease_client *c;

    if (t == NULL || t->dead || ac != t->ac)
        return;
    c = t->client;
    if (status == REDIS_OK) {
        t->connected = 1;
        hr_enter(t);
        rl_core_on_connected(c, REDLEASE_OK, NULL);
        hr_leave(t);
    } else {
        /* hiredis frees ac right after this returns: forget it first, and
         * do not touch t after the core call (the transport is closed now). */
        t->ac = NULL;
        t->connected = 0;
        rl_core_on_connected(c, REDLEASE_ECONN, hr_errtext(ac, "connect failed"));
    }
}

static void hr_on_disconnect(const redisAsyncContext *ac, int status) {
    rl_hiredis *t = (rl_hiredis *)ac->data;
    struct redlease_client *c;

    (void)status;
    if (t == NULL)
        return; /* cut off */
    if (ac == t->zombie) {
        t->zombie = NULL; /* hiredis frees it right after this returns */
        return;
    }
    if (t->dead || ac != t->ac)
        return; /* freed by close(): not reported */
    c = t->client;
    t->ac = NULL;
    t->connected = 0;
    /* Closed now; hiredis frees ac right after this returns. */
    rl_core_on_disconnected(c, REDLEASE_ECONN, hr_errtext(ac, "connection closed"));
}

/* ------------------------------------------------------------ the ops */

static int hr_connect(void *self, const rl_endpoint *ep) {
    rl_hiredis *t = (rl_hiredis *)self;
    redisAsyncContext *ac;

    if (t == NULL || ep == NULL || t->dead || t->destroying)
        return REDLEASE_EINVAL;
    if (t->ac != NULL)
        return REDLEASE_EINVAL; /* close() first */
    hr_reap(t);

    if (ep->unix_path != NULL && ep->unix_path[0] != '\0')
        ac = redisAsyncConnectUnix(ep->unix_path);
    else if (ep->host != NULL)
        ac = redisAsyncConnect(ep->host, ep->port);
    else
        return REDLEASE_EINVAL;
    if (ac == NULL)
        return REDLEASE_ECONN; /* hiredis out of memory */
    if (ac->err != 0) {
        rl_core_note_error(t->client, hr_errtext(ac, "connect failed"));
        redisAsyncFree(ac); /* not attached, no callbacks set */
        return REDLEASE_ECONN;
    }

    ac->data = t;
    if (t->loop->attach(t->loop_data, ac) != 0) {
        redisAsyncFree(ac);
        return REDLEASE_ECONN;
    }
    /* After attach (row 15); neither can fail on a fresh context. */
    if (redisAsyncSetConnectCallback(ac, hr_on_connect) != REDIS_OK ||
        redisAsyncSetDisconnectCallback(ac, hr_on_disconnect) != REDIS_OK) {
        ac->data = NULL;
        redisAsyncFree(ac); /* not connected: no onDisconnect */
        return REDLEASE_ECONN;
    }
    t->ac = ac;
    t->connected = 0;
    return REDLEASE_OK;
}

static int hr_submit(void *self, int argc, const char **argv, const size_t *lens, void *req) {
    rl_hiredis *t = (rl_hiredis *)self;
    redisAsyncContext *ac;

    if (t == NULL || argc <= 0 || argv == NULL || lens == NULL)
        return REDLEASE_EINVAL;
    ac = t->ac;
    if (ac == NULL || t->dead || !t->connected || !(ac->c.flags & REDIS_CONNECTED) ||
        (ac->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING)))
        return REDLEASE_ECONN;
    if (redisAsyncCommandArgv(ac, hr_on_reply, req, argc, argv, lens) != REDIS_OK)
        return REDLEASE_ECONN;
    return REDLEASE_OK;
}

static void hr_close(void *self) {
    rl_hiredis *t = (rl_hiredis *)self;
    redisAsyncContext *ac;

    if (t == NULL)
        return;
    hr_reap(t);
    ac = t->ac;
    if (ac == NULL)
        return;
    t->ac = NULL;
    t->connected = 0;

    if (t->depth > 0) {
        /* Contract breach: called from inside one of our callbacks into the
         * core. Freeing now is unsafe on 0.14 (row 4), so cut the context
         * off; hiredis finishes a free requested inside a callback it flags
         * (reply callbacks, and on 1.x connect callbacks), else we keep it as
         * a zombie for the next call from outside. */
        if (ac->c.flags & REDIS_IN_CALLBACK) {
            ac->data = NULL;
            redisAsyncFree(ac); /* hiredis frees it when the callback returns */
        } else if (t->zombie == NULL) {
            t->zombie = ac; /* ac->data stays t: onDisconnect clears zombie */
        } else {
            ac->data = NULL; /* leak one context rather than risk a use-after-free */
        }
        return;
    }

    /* Outside hiredis callbacks: this frees ac now, runs every pending
     * reply callback with NULL (delivered to the core through closing_ac),
     * then onDisconnect if it had connected (ignored: ac != t->ac). */
    t->closing_ac = ac;
    hr_enter(t);
    redisAsyncFree(ac);
    t->closing_ac = NULL;
    hr_leave(t); /* may free t if the core destroyed us meanwhile */
}

static void hr_destroy(void *self) {
    rl_hiredis *t = (rl_hiredis *)self;

    if (t == NULL || t->dead || t->destroying)
        return;
    if (t->depth > 0) {
        /* Inside our own frame (close() or a callback): cut off, free later. */
        if (t->ac != NULL)
            hr_close(t);
        t->dead = 1;
        return;
    }
    hr_reap(t);
    /* Destroying while still open breaks the contract but is tolerated:
     * pending reqs still get their NULL. While destroying is set, a nested
     * destroy() or connect() from those callbacks is refused, so t stays
     * ours until here. */
    t->destroying = 1;
    hr_close(t);
    rl_free(t);
}

static const rl_transport_ops hr_ops = {
    hr_connect,
    hr_submit,
    hr_close,
    hr_destroy,
};

int rl_transport_hiredis_new(rl_transport *out, struct redlease_client *c,
                             const struct redlease_loop_ops *loop, void *loop_data) {
    rl_hiredis *t;

    if (out == NULL || c == NULL || loop == NULL || loop->attach == NULL)
        return REDLEASE_EINVAL;
    t = (rl_hiredis *)rl_calloc(1, sizeof(*t));
    if (t == NULL)
        return REDLEASE_ENOMEM;
    t->client = c;
    t->loop = loop;
    t->loop_data = loop_data;
    out->ops = &hr_ops;
    out->self = t;
    return REDLEASE_OK;
}
