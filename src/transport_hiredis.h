/* SPDX-License-Identifier: MIT */
/* The one piece of the hiredis binding other code shares: how a hiredis
 * reply becomes the core's rdl_reply. The unit-test rig and the fuzzers feed
 * replies through it too, so they test the mapping the library uses. */
#ifndef REDLEASE_TRANSPORT_HIREDIS_H
#define REDLEASE_TRANSPORT_HIREDIS_H

#include "transport.h"

struct redisReply;

/* Where a converted array's elements live: a short flat one's in elem, a
 * longer or nested one's in an allocation (rdl_reply_buf_free). */
typedef struct rdl_reply_buf {
    rdl_reply elem[RDL_REPLY_MAX_ELEMENTS];
    rdl_reply *heap;
} rdl_reply_buf;

/* Fills r from reply; r's text points into reply (valid while reply is),
 * an array's elements into buf. An array that needs memory when there is
 * none is OTHER. */
void rdl_hiredis_convert_reply(const struct redisReply *reply, rdl_reply *r, rdl_reply_buf *buf);
void rdl_reply_buf_free(rdl_reply_buf *buf);

#endif
