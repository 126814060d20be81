/* SPDX-License-Identifier: MIT */
#include "scripts.h"

const char *const rdl_script_src[RDL_SCRIPT_COUNT] = {
    /* Every attempt after an acquire's first (the first is a plain SET NX
     * PX). An earlier attempt of this handle may have set the key after all
     * (it timed out, its link broke, its answer came too late): the key then
     * holds our own token, and the lease is ours from this attempt's send,
     * its TTL restarted. GET, not EXISTS: a key of another type is an error
     * (WRONGTYPE), never mistaken for a holder. */
    [RDL_SCRIPT_ACQUIRE] =
        "local v = redis.call('GET', KEYS[1])\n"
        "if v == ARGV[1] then\n"
        "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "  return 1\n"
        "end\n"
        "if v then return 0 end\n"
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
        "return 1\n",
    /* Acquire with a fencing token; a key holding our own token is
     * reclaimed as above, with a new fence. The counter shares the key's
     * hash slot. If it is missing (first use, expired, or a restart without
     * persistence lost it), it starts from the server clock in
     * microseconds, so a fence never goes backwards across that; it is
     * kept for the lease's TTL plus RDL_FENCE_COUNTER_EXTRA_MS after each
     * acquire, so counters of names used once do not pile up. The counter
     * is minted before the lock key is written: a script error (a foreign
     * value at the counter: WRONGTYPE) must not leave a lock key nobody was
     * told about, since Redis does not undo a script's writes. */
    [RDL_SCRIPT_ACQUIRE_FENCED] =
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and v ~= ARGV[1] then return 0 end\n"
        "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
        "  local t = redis.call('TIME')\n"
        "  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))\n"
        "end\n"
        "local fence = redis.call('INCR', KEYS[2])\n"
        "redis.call('PEXPIRE', KEYS[2], ARGV[3])\n"
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
        "return fence\n",
    /* Strict compare-and-pexpire: never re-creates a missing key. */
    [RDL_SCRIPT_RENEW] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
        "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "end\n"
        "return 0\n",
    /* Compare-and-delete: a holder can never delete someone else's lock. */
    [RDL_SCRIPT_RELEASE] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
        "  return redis.call('DEL', KEYS[1])\n"
        "end\n"
        "return 0\n",
    /* A quorum's fence is the largest of a majority's counters; every
     * member's counter is raised to it, so the next holder's majority,
     * which shares a member with this one, mints above it. Never lowers a
     * counter, never touches a value that is not digits (INCR's kind). */
    [RDL_SCRIPT_FENCE_RAISE] =
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and (not string.match(v, '^%d+$') or tonumber(v) >= tonumber(ARGV[1])) then return 0 end\n"
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
        "return 1\n",
};

/* The digests are constants of the texts above, written out rather than
 * computed: nothing to fill at run time, so clients in different threads
 * share the table without a race. tests/unit/test_tables.c checks each
 * against tests/support/sha1.c (and shows the right one when a text changes). */
static const char rdl_script_sha1[RDL_SCRIPT_COUNT][41] = {
    [RDL_SCRIPT_ACQUIRE] = "16d1a6d8593804583971483283e5c6c1e35b557a",
    [RDL_SCRIPT_ACQUIRE_FENCED] = "b57ccfdb18fbcb68febe19d8cd4ed29623a2f475",
    [RDL_SCRIPT_RENEW] = "3a32323a05c08607e6bc7842cfeea9552d0b61f5",
    [RDL_SCRIPT_RELEASE] = "c89cee65b7ab260d98c281f3c3eb6fa7c992cdd2",
    [RDL_SCRIPT_FENCE_RAISE] = "7b42ebc29065295e28da03bdcc0f526c7f0d8562",
};

const char *rdl_script_sha(int i) { return rdl_script_sha1[i]; }
