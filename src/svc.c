/* SPDX-License-Identifier: MIT */
/* The client's services (src/svc.h). */
#include "svc.h"

#include <string.h>
#include <time.h>

static int64_t monotonic_ms(void *arg)
{
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rdl_svc_init(rdl_svc *s, struct redlease_client *client, const rdl_svc_ops *ops, void *owner)
{
    s->clock.fn = monotonic_ms;
    rdl_xorshift_seed(&s->xs);
    s->rng.fn = rdl_xorshift_next;
    s->rng.arg = &s->xs;
    s->client = client;
    s->ops = ops;
    s->owner = owner;
}

int64_t rdl_svc_now(const rdl_svc *s)
{
    return s->now_hinted ? s->now_hint : rdl_clock_now(&s->clock);
}

void rdl_svc_hint(rdl_svc *s, int64_t now, rdl_now_saved *saved)
{
    saved->now = s->now_hint;
    saved->hinted = s->now_hinted;
    s->now_hint = now;
    s->now_hinted = 1;
}

void rdl_svc_restore(rdl_svc *s, const rdl_now_saved *saved)
{
    if (!s->now_hinted) return; /* user code ran meanwhile: no hint holds */
    s->now_hint = saved->now;
    s->now_hinted = saved->hinted;
}

void rdl_svc_set_errstr(rdl_svc *s, const char *node, const char *text, size_t len)
{
    size_t at = 0;
    if (!text) text = "", len = 0;
    if (node && len) { /* (nothing to name with no text: that clears it) */
        at = strlen(node);
        if (at > sizeof s->errstr - 3) at = sizeof s->errstr - 3;
        memcpy(s->errstr, node, at);
        memcpy(s->errstr + at, ": ", 2);
        at += 2;
    }
    if (len >= sizeof s->errstr - at) len = sizeof s->errstr - at - 1;
    memcpy(s->errstr + at, text, len);
    s->errstr[at + len] = '\0';
}

void rdl_svc_emit(rdl_svc *s, const redlease_event *ev)
{
    if (s->event_cb && !s->dead) {
        /* user code takes time: the library reads the clock again after it */
        s->now_hinted = 0;
        rdl_clock_forget(&s->clock);
        s->event_cb(s->client, ev, s->event_arg);
    }
}

void rdl_svc_leave(rdl_svc *s)
{
    if (--s->depth > 0) return;
    s->ops->idle(s->owner);
}
