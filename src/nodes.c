/* SPDX-License-Identifier: MIT */
/* Every node of a client (src/nodes.h). */
#include "nodes.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"

int rdl_nodes_init(rdl_nodes *s, rdl_node *first, rdl_svc *svc, const rdl_node_owner *ops,
                   void *owner)
{
    s->svc = svc;
    s->ops = ops;
    s->owner = owner;
    s->router = NULL;
    s->router_arg = NULL;
    s->v = rdl_malloc(4 * sizeof *s->v);
    if (!s->v) return REDLEASE_ENOMEM;
    s->v[0] = first;
    first->index = 0;
    s->n = 1;
    s->cap = 4;
    return REDLEASE_OK;
}

rdl_node *rdl_nodes_at(rdl_nodes *s, const char *host, size_t hlen, int port)
{
    for (size_t i = 0; i < s->n; i++) {
        const rdl_conn *cn = &s->v[i]->conn;
        const char *h = rdl_conn_host(cn);
        if (h && rdl_conn_port(cn) == port && strlen(h) == hlen && memcmp(h, host, hlen) == 0)
            return s->v[i];
    }
    if (hlen > 255 || s->n >= UINT16_MAX - 1) return NULL; /* the router's slot map holds 16 bits */
    if (s->n == s->cap) {
        rdl_node **v = rdl_realloc(s->v, 2 * s->cap * sizeof *v);
        if (!v) return NULL;
        s->v = v;
        s->cap *= 2;
    }
    char h[256];
    memcpy(h, host, hlen);
    h[hlen] = '\0';
    rdl_conn_config cc;
    rdl_conn_settings(&s->v[0]->conn, &cc);
    cc.host = h;
    cc.port = port;
    rdl_node *n = rdl_calloc(1, sizeof *n);
    if (!n) return NULL;
    if (rdl_node_init(n, s->svc, s->ops, s->owner, &cc) != REDLEASE_OK ||
        (s->svc->loop.ops && rdl_node_attach(n) != REDLEASE_OK)) {
        rdl_node_free(n);
        rdl_free(n);
        return NULL;
    }
    n->index = s->n;
    rdl_node_set_router(n, s->router, s->router_arg);
    s->v[s->n++] = n;
    return n;
}

void rdl_nodes_set_router(rdl_nodes *s, const rdl_node_router *router, void *arg)
{
    s->router = router;
    s->router_arg = arg;
    for (size_t i = 0; i < s->n; i++) rdl_node_set_router(s->v[i], router, arg);
}

void rdl_nodes_free(rdl_nodes *s)
{
    for (size_t i = 1; i < s->n; i++) rdl_free(s->v[i]);
    rdl_free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
