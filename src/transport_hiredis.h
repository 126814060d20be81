/* SPDX-License-Identifier: MIT */
/* The one piece of the hiredis binding other code shares: how a hiredis
 * reply becomes the core's rdl_reply. The unit-test rig and the fuzzers feed
 * replies through it too, so they test the mapping the library uses. */
#ifndef REDLEASE_TRANSPORT_HIREDIS_H
#define REDLEASE_TRANSPORT_HIREDIS_H

#include "transport.h"

struct redisReply;

/* Fills r from reply; r's text points into reply (valid while reply is),
 * an array's elements into elem. */
void rdl_hiredis_convert_reply(const struct redisReply *reply, rdl_reply *r,
                               rdl_reply elem[RDL_REPLY_MAX_ELEMENTS]);

#endif
