/* SPDX-License-Identifier: MIT */
/* The client's loop (src/loop.c): the adapter's operations
 * (redlease_loop_ops), and the sockets it watches for the transports,
 * each found again by its descriptor when the adapter reports it ready
 * (redlease_client_on_io). A service of the client (src/svc.h holds it);
 * it knows nothing of what a socket carries: a transport opens an rdl_io
 * with the function that handles its readiness. */
#ifndef REDLEASE_LOOP_H
#define REDLEASE_LOOP_H

#include <stddef.h>

#include "redlease.h"

struct rdl_loop;

typedef void (*rdl_io_ready_fn)(void *self, int events);

/* One socket on the loop. Owned (embedded) by its transport, which opens
 * it when it has a socket and closes it before that socket is closed. */
typedef struct rdl_io {
    struct rdl_loop *loop; /* NULL: not open */
    int fd;
    int events;  /* REDLEASE_IO_READ | REDLEASE_IO_WRITE asked of the adapter */
    int watched; /* the adapter made its watcher (a first watch succeeded) */
    int failed;  /* the adapter could not watch it: the transport fails it */
    void *slot;  /* the adapter's own, for this socket */
    rdl_io_ready_fn ready;
    void *self;
} rdl_io;

typedef struct rdl_loop {
    const redlease_loop_ops *ops; /* NULL until a loop is attached */
    void *data;
    rdl_io **io; /* the open sockets, in no order */
    size_t n, cap;
} rdl_loop;

/* Opens io for fd on l, watched for nothing yet: 0, or REDLEASE_ENOMEM. */
int rdl_io_open(rdl_io *io, rdl_loop *l, int fd, rdl_io_ready_fn ready, void *self);
/* Starts (on) or stops watching for events; asks the adapter only when
 * what is watched changes. An adapter that cannot make the watcher sets
 * io->failed. */
void rdl_io_want(rdl_io *io, int events, int on);
/* The adapter lets go of the socket (unwatch) and l forgets it; a closed
 * io is a no-op. */
void rdl_io_close(rdl_io *io);

/* The adapter reports fd ready for events: runs its io's ready with the
 * events it is watched for (none: nothing; a descriptor l does not know,
 * a report that came after its close: nothing). ready may free the
 * client, l with it: touch nothing after. */
void rdl_loop_ready(rdl_loop *l, int fd, int events);

/* Frees the table (every io closed before). */
void rdl_loop_free(rdl_loop *l);

#endif
