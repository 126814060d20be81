/* SPDX-License-Identifier: MIT */
/* The client's loop: src/loop.h says what it keeps. A client has a few
 * sockets (a node each, a Sentinel, the wake-up channel), so a report is
 * matched by a scan, as c-ares matches ares_process_fd()'s. */
#include "loop.h"

#include "alloc.h"

int rdl_io_open(rdl_io *io, rdl_loop *l, int fd, rdl_io_ready_fn ready, void *self)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        rdl_io **v = rdl_realloc(l->io, cap * sizeof *v);
        if (!v) return REDLEASE_ENOMEM;
        l->io = v;
        l->cap = cap;
    }
    l->io[l->n++] = io;
    *io = (rdl_io){.loop = l, .fd = fd, .ready = ready, .self = self};
    return REDLEASE_OK;
}

void rdl_io_want(rdl_io *io, int events, int on)
{
    rdl_loop *l = io->loop;
    if (!l) return;
    int want = on ? io->events | events : io->events & ~events;
    if (want == io->events && io->watched) return;
    if (!io->watched && want == 0) return; /* nothing to make a watcher for yet */
    if (l->ops->watch(l->data, io->fd, want, &io->slot) != 0) {
        /* only a first call may fail (redlease.h): no watcher exists */
        if (!io->watched) io->failed = 1;
        return;
    }
    io->watched = 1;
    io->events = want;
}

void rdl_io_close(rdl_io *io)
{
    rdl_loop *l = io->loop;
    if (!l) return;
    if (io->watched) l->ops->unwatch(l->data, io->fd, io->slot);
    for (size_t i = 0; i < l->n; i++)
        if (l->io[i] == io) {
            l->io[i] = l->io[--l->n];
            break;
        }
    *io = (rdl_io){.fd = -1};
}

void rdl_loop_ready(rdl_loop *l, int fd, int events)
{
    for (size_t i = 0; i < l->n; i++) {
        rdl_io *io = l->io[i];
        if (io->fd != fd) continue;
        events &= io->events;
        if (events) io->ready(io->self, events); /* may free l */
        return;
    }
}

void rdl_loop_free(rdl_loop *l)
{
    rdl_free(l->io);
    l->io = NULL;
    l->n = l->cap = 0;
}
