/* SPDX-License-Identifier: MIT */
#include "scripts.h"

/* Pieces more than one script is made of (docs/design.md, section 11). */

/* The server's clock in ms, read once and only when needed (a release
 * with nobody waiting never reads it): entries' deadlines are the
 * server's, one clock for every client of a queue, never a client's own. */
#define LUA_CLOCK \
    "local now\n" \
    "local function clock()\n" \
    "  if not now then\n" \
    "    local t = redis.call('TIME')\n" \
    "    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
    "  end\n" \
    "  return now\n" \
    "end\n"

/* A resource's fence: its counter (key k) incremented and kept for cttl
 * ms. A missing counter (first use, expired, or a restart without
 * persistence lost it) starts from the server clock in microseconds, so
 * a fence never goes backwards across that. */
#define LUA_MINT \
    "local function mint(k, cttl)\n" \
    "  if redis.call('EXISTS', k) == 0 then\n" \
    "    local t = redis.call('TIME')\n" \
    "    redis.call('SET', k, t[1] .. string.format('%06d', tonumber(t[2])))\n" \
    "  end\n" \
    "  local fence = redis.call('INCR', k)\n" \
    "  if fence < 1 then error('the fence counter holds no positive number') end\n" \
    "  redis.call('PEXPIRE', k, cttl)\n" \
    "  return fence\n" \
    "end\n"

/* The queue of a resource: QK orders the waiting tokens (a sorted set,
 * scores counting up), EK holds each one's entry (each script names where
 * they are among its KEYS; LUA_QUEUE: KEYS[2] and KEYS[3]), "deadline
 * claim channel": until when it is alive (server ms), how long it may
 * take to confirm a lock handed to it, and where it is told. head() is
 * the first live waiter (the dead met on the way are dropped), and what
 * it waits for: its channel is written with "{" in front for a shared
 * waiter, "}" for a semaphore's, nothing for an exclusive one (no channel
 * starts with a brace: a key prefix has none); enqueue()
 * puts a waiter at the tail, or keeps its place with a new deadline.
 * remind() tells a waiter to check now ("c TOKEN 0") and gives its entry
 * at most one claim to do it, never more (a dead head is reminded at every
 * check of the waiters behind it), and the next ones, as below, check once
 * claims end; remind_head() does so for the live head (only a shared one,
 * asked): a semaphore's or a shared waiter is admitted by its own acquire,
 * nothing is handed to it (design 12.4, 12.5). hand_over() reminds a
 * shared or a semaphore's head (the lock key is no permit: given to it,
 * it would read as a mutex's token, and turn every semaphore acquire
 * away as another kind); an exclusive one it gives a free lock for its claim time,
 * and tells it ("g TOKEN"),
 * and tells the next waiters to check once one, two, three such claims
 * end ("c TOKEN MS", tell_first()): the next three when nobody heard the
 * head's word (PUBLISH counts no listener: its client is gone, or, on a
 * Cluster, listens on another node), else only the next one (the head's
 * client is there; frozen, its link open, it may not confirm). A head
 * that never confirms costs the queue one claim; up to three gone in a
 * row one claim each, a frozen one and a dead one behind it the next
 * waiter's own timer. Each word wakes a process while the lock changes
 * hands, so three on every handoff slowed every handoff (make bench,
 * contended). Words are hints: one the user may not PUBLISH (an ACL) is
 * left out, never an error after the writes. */
#define LUA_QUEUE_AT(q, e) \
    "local QK, EK = KEYS[" q "], KEYS[" e "]\n" \
    "local function leave(tok)\n" \
    "  redis.call('ZREM', QK, tok)\n" \
    "  redis.call('HDEL', EK, tok, '#' .. tok)\n" \
    "end\n" \
    "local function head()\n" \
    "  while true do\n" \
    "    local h = redis.call('ZRANGE', QK, 0, 0)[1]\n" \
    "    if not h then return nil end\n" \
    "    local e = redis.call('HGET', EK, h)\n" \
    "    if e then\n" \
    "      local d, c, ch = string.match(e, '^(%d+) (%d+) (.*)$')\n" \
    "      if d and tonumber(d) > clock() then\n" \
    "        local m = string.sub(ch, 1, 1)\n" \
    "        if m == '{' or m == '}' then ch = string.sub(ch, 2) else m = nil end\n" \
    "        return h, c, ch, m\n" \
    "      end\n" \
    "    end\n" \
    "    leave(h)\n" \
    "  end\n" \
    "end\n" \
    "local function tell_first(k, ms, from)\n" \
    "  from = from or 0\n" \
    "  for i, n in ipairs(redis.call('ZRANGE', QK, from, from + k - 1)) do\n" \
    "    local e = redis.call('HGET', EK, n)\n" \
    "    local ch = e and string.match(e, '^%d+ %d+ [{}]?(.*)$')\n" \
    "    if ch then redis.pcall('PUBLISH', ch, 'c ' .. n .. ' ' .. ms * i) end\n" \
    "  end\n" \
    "end\n" \
    "local function enqueue(tok, life, claim, ch)\n" \
    "  local placed = redis.call('ZSCORE', QK, tok)\n" \
    "  local e = string.format('%.0f %s %s', clock() + life, claim, ch)\n" \
    "  if placed then redis.call('HSET', EK, tok, e)\n" \
    "  else redis.call('HSET', EK, tok, e, '#' .. tok, ARGV[#ARGV]) end\n" \
    "  if not placed then\n" \
    "    local last = redis.call('ZRANGE', QK, -1, -1, 'WITHSCORES')\n" \
    "    redis.call('ZADD', QK, last[2] and last[2] + 1 or 1, tok)\n" \
    "  end\n" \
    "  for _, k in ipairs({QK, EK}) do\n" \
    "    if redis.call('PTTL', k) < life then redis.call('PEXPIRE', k, life) end\n" \
    "  end\n" \
    "end\n" \
    "local function remind(h, c, ch)\n" \
    "  local e = redis.call('HGET', EK, h)\n" \
    "  local soon = clock() + tonumber(c)\n" \
    "  if tonumber(string.match(e, '^%d+')) > soon then\n" \
    "    redis.call('HSET', EK, h, (string.gsub(e, '^%d+', string.format('%.0f', soon))))\n" \
    "  end\n" \
    "  local heard = redis.pcall('PUBLISH', ch, 'c ' .. h .. ' 0')\n" \
    "  tell_first(heard == 1 and 1 or 3, c, 1)\n" \
    "end\n" \
    "local function remind_head(shared_only)\n" \
    "  local h, c, ch, m = head()\n" \
    "  if h and (m == '{' or not shared_only) then remind(h, c, ch) end\n" \
    "end\n" \
    "local function hand_over()\n" \
    "  local h, c, ch, m = head()\n" \
    "  if not h then return end\n" \
    "  if m then return remind(h, c, ch) end\n" \
    "  redis.call('SET', KEYS[1], h, 'PX', c)\n" \
    "  leave(h)\n" \
    "  local heard = redis.pcall('PUBLISH', ch, 'g ' .. h)\n" \
    "  tell_first(heard == 1 and 1 or 3, c)\n" \
    "end\n"
#define LUA_QUEUE LUA_QUEUE_AT("2", "3")

/* A free resource given to the queue's head, by the shared holders'
 * scripts: handed over (hand_over()) when the queue is in order (ARGV[n]
 * "1"); in no order (a quorum's: N members' queues would hand it to N
 * different heads) the head is only told to check, as the queue's release
 * tells it. */
#define LUA_GIVE(n) \
    "local function give()\n" \
    "  if ARGV[" n "] == '1' then return hand_over() end\n" \
    "  local h, _, ch = head()\n" \
    "  if h then redis.pcall('PUBLISH', ch, 'c ' .. h .. ' 0') end\n" \
    "end\n"

/* The holders of a semaphore or of a shared lease (docs/design.md, section
 * 12). KEYS[1] holds the resource's kind, "semaphore N" or "shared"
 * (tokens are 32 hex digits: no token equals it, so a mutex's SET NX, GET
 * or SET IFEQ finds it taken, never its own); HK orders the holders'
 * tokens by their deadline, the server's clock in ms; WK holds each
 * holder's weight (a shared holder's is 1), and "used", their sum; each
 * script names where HK and WK are among its KEYS. prune() drops the
 * holders whose deadline has passed (every script that reads the set
 * does, first: a holder that died gives its weight back at its deadline,
 * by the server's clock, never a client's); keep() gives the three keys
 * the last deadline's life, or deletes them when nobody holds (the kind
 * goes with the last holder). admit() writes a holder's weight and the new
 * sum in one HSET; drop() takes a holder out and keeps the rest, and the
 * last one out deletes the three keys at once. Writes cost a script far
 * more than reads (each is propagated), so the uncontended cycle writes
 * as little as it can (docs/design.md, 12.1). prune() works in slices:
 * Lua's unpack() has a bound. */
#define LUA_HOLDERS(h, w) \
    "local HK, WK = KEYS[" h "], KEYS[" w "]\n" \
    "local function prune()\n" \
    "  while true do\n" \
    "    local dead = redis.call('ZRANGEBYSCORE', HK, '-inf', clock(), 'LIMIT', 0, 500)\n" \
    "    if #dead == 0 then return end\n" \
    "    local sum, gone = 0, {}\n" \
    "    for i, w in ipairs(redis.call('HMGET', WK, unpack(dead))) do\n" \
    "      sum = sum + (tonumber(w) or 0)\n" \
    "      gone[2 * i - 1], gone[2 * i] = dead[i], '#' .. dead[i]\n" \
    "    end\n" \
    "    redis.call('HDEL', WK, unpack(gone))\n" \
    "    if sum ~= 0 then redis.call('HINCRBY', WK, 'used', -sum) end\n" \
    "    redis.call('ZREM', HK, unpack(dead))\n" \
    "  end\n" \
    "end\n" \
    "local function keep(kind)\n" \
    "  local last = redis.call('ZRANGE', HK, -1, -1, 'WITHSCORES')[2]\n" \
    "  if not last then\n" \
    "    redis.call('DEL', KEYS[1], HK, WK)\n" \
    "    return\n" \
    "  end\n" \
    "  local life = tonumber(last) - clock()\n" \
    "  if life < 1 then life = 1 end\n" \
    "  redis.call('SET', KEYS[1], kind, 'PX', life)\n" \
    "  redis.call('PEXPIRE', HK, life)\n" \
    "  redis.call('PEXPIRE', WK, life)\n" \
    "end\n" \
    "local function admit(tok, weight, used, rec)\n" \
    "  redis.call('HSET', WK, tok, weight, '#' .. tok, rec, 'used', used + weight)\n" \
    "end\n" \
    "local function drop(tok, kind)\n" \
    "  if not redis.call('ZSCORE', HK, tok) then\n" \
    "    keep(kind)\n" \
    "    return false\n" \
    "  end\n" \
    "  if redis.call('ZCARD', HK) == 1 then\n" \
    "    redis.call('DEL', KEYS[1], HK, WK)\n" \
    "    return true\n" \
    "  end\n" \
    "  redis.call('ZREM', HK, tok)\n" \
    "  local w = tonumber(redis.call('HGET', WK, tok)) or 0\n" \
    "  redis.call('HDEL', WK, tok, '#' .. tok)\n" \
    "  redis.call('HINCRBY', WK, 'used', -w)\n" \
    "  keep(kind)\n" \
    "  return true\n" \
    "end\n"

/* An acquire's record, its last argument, "PID AT FENCE HOST LABEL"
 * (src/identity.h), with the fence it minted written in (fence nil: none,
 * as the client sent it). */
#define LUA_RECORD \
    "local function record(fence)\n" \
    "  local r = ARGV[#ARGV]\n" \
    "  if fence then\n" \
    "    r = string.gsub(r, '^(%d+ %d+ )%d+', '%1' .. string.format('%.0f', fence), 1)\n" \
    "  end\n" \
    "  return r\n" \
    "end\n"

/* A mutex's key is ours when it holds our token, alone (handed to us by
 * the queue, or written by an older client) or with our record after it
 * (src/identity.h): the token owns the lease, the record never decides.
 * Compared in place (a plain find anchored by its answer, a space after
 * it), not by cutting and joining strings: every release and renewal by
 * script asks this, and each new string is one more for Lua to intern. */
#define LUA_OWNS \
    "local function owns(v, tok)\n" \
    "  return v == tok or (v and string.byte(v, #tok + 1) == 32 and string.find(v, tok, 1, true) == 1)\n" \
    "end\n"

/* What a mutex's acquire writes to its key: the token and our record. */
#define LUA_MINE \
    LUA_RECORD \
    "local function mine(tok, fence) return tok .. ' ' .. record(fence) end\n"

/* What a mutex's or a shared holder's acquire says when the lock key is
 * a semaphore's kind (LUA_HOLDERS): refused, naming it, before anything
 * is written; nil for a holder's token or "shared". */
#define LUA_KIND \
    "local function other_kind(v)\n" \
    "  local n = string.match(v, '^semaphore (%d+)$')\n" \
    "  if n then return redis.error_reply('KIND a semaphore of ' .. n .. ' permits') end\n" \
    "end\n"

const char *const rdl_script_src[RDL_SCRIPT_COUNT] = {
    /* Every attempt after an acquire's first (the first is a plain SET NX
     * PX). An earlier attempt of this handle may have set the key after all
     * (it timed out, its link broke, its answer came too late): the key then
     * holds our own token, and the lease is ours from this attempt's send,
     * its TTL restarted and its record this attempt's. GET, not EXISTS: a key of another type is an error
     * (WRONGTYPE), never mistaken for a holder, and a semaphore's kind is
     * refused (KIND). */
    [RDL_SCRIPT_ACQUIRE] =
        LUA_OWNS LUA_MINE LUA_KIND
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and not owns(v, ARGV[1]) then return other_kind(v) or 0 end\n"
        "redis.call('SET', KEYS[1], mine(ARGV[1]), 'PX', ARGV[2])\n"
        "return 1\n",
    /* Acquire with a fencing token; a key holding our own token is
     * reclaimed as above, with a new fence. The counter shares the key's
     * hash slot; it is kept for the lease's TTL plus
     * RDL_FENCE_COUNTER_EXTRA_MS after each acquire, so counters of names
     * used once do not pile up. The counter
     * is minted before the lock key is written: a script error (a foreign
     * value at the counter: WRONGTYPE) must not leave a lock key nobody was
     * told about, since Redis does not undo a script's writes. */
    [RDL_SCRIPT_ACQUIRE_FENCED] =
        LUA_MINT LUA_OWNS LUA_MINE LUA_KIND
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and not owns(v, ARGV[1]) then return other_kind(v) or 0 end\n"
        "local fence = mint(KEYS[2], ARGV[3])\n"
        "redis.call('SET', KEYS[1], mine(ARGV[1], fence), 'PX', ARGV[2])\n"
        "return fence\n",
    /* Strict compare-and-pexpire: never re-creates a missing key. */
    [RDL_SCRIPT_RENEW] =
        LUA_OWNS
        "if owns(redis.call('GET', KEYS[1]), ARGV[1]) then\n"
        "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "end\n"
        "return 0\n",
    /* Compare-and-delete: a holder can never delete someone else's lock. */
    [RDL_SCRIPT_RELEASE] =
        LUA_OWNS
        "if owns(redis.call('GET', KEYS[1]), ARGV[1]) then\n"
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
    /* A waiting acquire (docs/design.md, section 11). Ours when the key
     * holds our token (handed to us, or set by an earlier attempt: the
     * fence is minted now, by the holder's own command), or when it is
     * free and nobody alive is ahead of us; a free lock with a live head
     * that is not us goes to that head (it may sleep on a timer). Else we
     * join the tail (a channel of "" does not: no wake-up could reach
     * us), or keep our place with a new deadline, and learn the holder's
     * remaining TTL. In no order a take joins (or stays) too: it may be
     * one member's vote of a quorum that lost, and the waiter must stay
     * where its channel's words come from; its release or drop takes the
     * entry out, and a holder's entry is what no word needs (a release
     * tells the next one). The queue's keys live as long as their last entry.
     * A key of another type stops the script before anything is left
     * behind: the queue's keys are read (which fails on another type)
     * before the lock is written, and a new entry's hash goes before its
     * place in the order (the order would have no TTL). The lock (or the
     * fence) is the first write, so over maxmemory the server refuses the
     * take as it refuses a SET: a script that has written is let finish. */
    [RDL_SCRIPT_QUEUE_ACQUIRE] =
        LUA_CLOCK LUA_MINT LUA_QUEUE LUA_OWNS LUA_MINE LUA_KIND
        "local tok = ARGV[1]\n"
        "local function join()\n"
        "  if ARGV[5] ~= '' then enqueue(tok, tonumber(ARGV[3]), ARGV[4], ARGV[5]) end\n"
        "end\n"
        "local function take()\n"
        "  local placed = redis.call('ZSCORE', KEYS[2], tok)\n"
        "  local entry = redis.call('HEXISTS', KEYS[3], tok)\n"
        "  local fence = 1\n"
        "  if KEYS[4] then fence = mint(KEYS[4], ARGV[7]) end\n"
        "  redis.call('SET', KEYS[1], mine(tok, KEYS[4] and fence), 'PX', ARGV[2])\n"
        "  if ARGV[6] ~= '1' then join()\n"
        "  elseif placed or entry == 1 then leave(tok) end\n"
        "  return fence\n"
        "end\n"
        "local v = redis.call('GET', KEYS[1])\n"
        "if owns(v, tok) then return take() end\n"
        "local k = v and other_kind(v)\n"
        "if k then return k end\n"
        "if not v then\n"
        "  if ARGV[6] ~= '1' then return take() end\n"
        "  local h = head()\n"
        "  if not h or h == tok then return take() end\n"
        "  hand_over()\n"
        "end\n"
        "join()\n"
        "local p = redis.call('PTTL', KEYS[1])\n"
        "if p >= 0 then return -(p + 1) end\n"
        "return 0\n",
    /* Compare-and-delete for a handle in queue mode, which also takes its
     * entry out of the queue (a release, a drop, an acquire given up). A
     * lock left free goes to the live head of the queue: a lock that
     * expired without a release is handed over here too. With nobody
     * queued (no queue key) it is the plain compare-and-delete, at one
     * command more: what an uncontended release costs. A holder that met
     * no queue sends it with two keys and the token only (the probe: each
     * key and argument costs the server as much as a command), which
     * answers -1, changing nothing, when there is a queue: the holder
     * then sends it whole. */
    [RDL_SCRIPT_QUEUE_RELEASE] =
        LUA_OWNS
        "local v = redis.call('GET', KEYS[1])\n"
        "local ours = owns(v, ARGV[1])\n"
        "if redis.call('EXISTS', KEYS[2]) == 0 then\n"
        "  if ours then return redis.call('DEL', KEYS[1]) end\n"
        "  return 0\n"
        "end\n"
        "if not KEYS[3] then return -1 end\n"
        LUA_CLOCK LUA_QUEUE
        "leave(ARGV[1])\n"
        "if v == 'shared' then remind_head(true) end\n"
        "if v and not ours then return 0 end\n"
        "if v then redis.call('DEL', KEYS[1]) end\n"
        "if ARGV[2] == '1' then\n"
        "  hand_over()\n"
        "else\n"
        "  local h, _, ch = head()\n"
        "  if h then redis.pcall('PUBLISH', ch, 'c ' .. h .. ' 0') end\n"
        "end\n"
        "if v then return 1 end\n"
        "return 0\n",
    /* A semaphore's acquire: admitted while the weights held, this one's
     * included, stay within the limit, and strictly in the order of the
     * queue (docs/design.md, 12.5): nobody is admitted past a live waiter
     * ahead, so a heavy head is never overtaken by light ones. One that
     * is not admitted joins the queue (a channel of "": it does not).
     * Admitted with room left, it wakes the next waiter: one release may
     * admit several, one after another. The resource must be a semaphore
     * of this limit, or nothing: anything else is refused (KIND, and what
     * it is) before anything is written. A holder's own token (an earlier
     * attempt of it was admitted after all) is ours, its deadline
     * restarted, its weight counted once; with its weight gone (the
     * weights' key lost) the count restarted without it, and it is
     * counted as a newcomer. Admitted up to the capacity, the limit on
     * one server, less on each of a quorum's (12.3). Not admitted: how long until the first
     * holder's deadline, the soonest a permit frees without a release, or
     * 0 with no holder (nothing known: the waiter goes by its checks). */
    [RDL_SCRIPT_SEM_ACQUIRE] =
        LUA_CLOCK LUA_MINT LUA_RECORD LUA_KIND LUA_QUEUE_AT("4", "5") LUA_HOLDERS("2", "3")
        "local tok = ARGV[1]\n"
        "local kind = 'semaphore ' .. ARGV[3]\n"
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and v ~= kind then\n"
        "  if v == 'shared' then return redis.error_reply('KIND shared and exclusive holders') end\n"
        "  return other_kind(v) or redis.error_reply('KIND a mutex')\n"
        "end\n"
        "local weight, cap = tonumber(ARGV[2]), tonumber(ARGV[4])\n"
        "prune()\n"
        "local newcomer = not redis.call('ZSCORE', HK, tok) or redis.call('HEXISTS', WK, tok) == 0\n"
        "local h, used\n"
        "if newcomer then\n"
        "  h = head()\n"
        "  used = tonumber(redis.call('HGET', WK, 'used')) or 0\n"
        "  if (h and h ~= tok) or used + weight > cap then\n"
        "    if ARGV[8] ~= '' then enqueue(tok, tonumber(ARGV[6]), ARGV[7], '}' .. ARGV[8]) end\n"
        "    local first = redis.call('ZRANGE', HK, 0, 0, 'WITHSCORES')[2]\n"
        "    if not first then return 0 end\n"
        "    return -(math.max(tonumber(first) - clock(), 0) + 1)\n"
        "  end\n"
        "end\n"
        "local fence = 1\n"
        "if KEYS[6] then fence = mint(KEYS[6], ARGV[9]) end\n"
        "if newcomer then\n"
        "  admit(tok, weight, used, record(KEYS[6] and fence))\n"
        "  if h then\n"
        "    leave(tok)\n"
        "    if used + weight < cap then remind_head() end\n"
        "  end\n"
        "elseif KEYS[6] then\n"
        "  redis.call('HSET', WK, '#' .. tok, record(fence))\n"
        "end\n"
        "redis.call('ZADD', HK, clock() + tonumber(ARGV[5]), tok)\n"
        "keep(kind)\n"
        "return fence\n",
    /* A semaphore holder's or a shared holder's renewal, strict: a token
     * no longer in the set, or past its deadline, is not ours, and is
     * never put back; nor is one whose weight is gone (the weights' key
     * lost): the count restarted without it, and holders may have been
     * admitted up to the limit since. A holder holds the kind it asked
     * for (limit 0: shared): with the kind lost, an acquire of another
     * limit finds nothing to refuse it by and makes the resource its own,
     * and the holders it counted are then no longer ours. */
    [RDL_SCRIPT_SEM_RENEW] =
        LUA_CLOCK LUA_HOLDERS("2", "3")
        "local kind = ARGV[2] == '0' and 'shared' or 'semaphore ' .. ARGV[2]\n"
        "if redis.call('GET', KEYS[1]) ~= kind then return 0 end\n"
        "prune()\n"
        "if not redis.call('ZSCORE', HK, ARGV[1]) or redis.call('HEXISTS', WK, ARGV[1]) == 0 then\n"
        "  return 0\n"
        "end\n"
        "redis.call('ZADD', HK, 'XX', clock() + tonumber(ARGV[3]), ARGV[1])\n"
        "keep(kind)\n"
        "return 1\n",
    /* A semaphore holder's release, or a waiter's drop: out of the queue,
     * its weight given back, and the queue's head woken; 0 when it was no
     * longer a holder. With nobody queued it costs one EXISTS more than
     * without a queue. */
    [RDL_SCRIPT_SEM_RELEASE] =
        LUA_CLOCK LUA_QUEUE_AT("4", "5") LUA_HOLDERS("2", "3")
        "local v = redis.call('GET', KEYS[1])\n"
        "local queued = redis.call('EXISTS', QK) == 1\n"
        "if queued then leave(ARGV[1]) end\n"
        "local mine = false\n"
        "if v and string.match(v, '^semaphore %d+$') then\n"
        "  prune()\n"
        "  mine = drop(ARGV[1], v)\n"
        "end\n"
        "if queued then remind_head() end\n"
        "if mine then return 1 end\n"
        "return 0\n",
    /* A shared holder's acquire (docs/design.md, 12.4): admitted beside
     * other shared holders, never beside an exclusive one (a mutex's
     * token), and strictly in the order of the resource's queue, which
     * both kinds share: nobody is admitted past a live waiter ahead, so
     * an exclusive waiter keeps later shared ones out (a stream of shared
     * holders cannot starve it), and the shared waiters queued behind an
     * exclusive one enter after it, together: each admitted from the head
     * reminds the next when that one is shared too. One that may not
     * enter joins the queue as a shared waiter (a channel of "": it does
     * not). A resource left free with an exclusive waiter at the head is
     * handed to it, as the queue's acquire does, and a shared head is
     * reminded, after this one joined: a head that never comes then tells
     * it when its claim ends. A semaphore is refused
     * (KIND). Our own token is ours, its deadline restarted; with its
     * weight gone (the weights' key lost) it is counted as a newcomer, as
     * a semaphore's is: its renewal would find no weight. */
    [RDL_SCRIPT_SHARED_ACQUIRE] =
        LUA_CLOCK LUA_MINT LUA_RECORD LUA_QUEUE LUA_GIVE("6") LUA_KIND LUA_HOLDERS("4", "5")
        "local tok = ARGV[1]\n"
        "local function wait(free)\n"
        "  if ARGV[5] ~= '' then enqueue(tok, tonumber(ARGV[3]), ARGV[4], '{' .. ARGV[5]) end\n"
        "  if free then give() end\n"
        "  local p = redis.call('PTTL', KEYS[1])\n"
        "  if p >= 0 then return -(p + 1) end\n"
        "  return 0\n"
        "end\n"
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and v ~= 'shared' then return other_kind(v) or wait() end\n"
        "prune()\n"
        "local newcomer = not redis.call('ZSCORE', HK, tok) or redis.call('HEXISTS', WK, tok) == 0\n"
        "local h\n"
        "if newcomer then\n"
        "  h = head()\n"
        "  if h and h ~= tok then return wait(redis.call('ZCARD', HK) == 0) end\n"
        "end\n"
        "local fence = 1\n"
        "if KEYS[6] then fence = mint(KEYS[6], ARGV[7]) end\n"
        "if newcomer then\n"
        "  admit(tok, 1, tonumber(redis.call('HGET', WK, 'used')) or 0, record(KEYS[6] and fence))\n"
        "  if h then\n"
        "    leave(tok)\n"
        "    remind_head(true)\n"
        "  end\n"
        "elseif KEYS[6] then\n"
        "  redis.call('HSET', WK, '#' .. tok, record(fence))\n"
        "end\n"
        "redis.call('ZADD', HK, clock() + tonumber(ARGV[2]), tok)\n"
        "keep('shared')\n"
        "return fence\n",
    /* A shared holder's release, or a shared waiter's drop: out of the
     * queue, out of the holders; 0 when it was no longer a holder. The
     * last one out (or the release that finds the others gone) gives the
     * resource to the head of the queue (give()). */
    [RDL_SCRIPT_SHARED_RELEASE] =
        LUA_CLOCK LUA_QUEUE LUA_GIVE("2") LUA_HOLDERS("4", "5")
        "local v = redis.call('GET', KEYS[1])\n"
        "if redis.call('EXISTS', QK) == 1 then leave(ARGV[1]) end\n"
        "local mine = false\n"
        "if v == 'shared' then\n"
        "  prune()\n"
        "  mine = drop(ARGV[1], 'shared')\n"
        "end\n"
        "if redis.call('EXISTS', KEYS[1]) == 0 then give() end\n"
        "if mine then return 1 end\n"
        "return 0\n",
    /* Who holds and who waits (src/inspect.c): a read of every key, the
     * server's clock with them; what is dead is left for the reader to
     * skip (it writes nothing, so it runs wherever reads may) */
    [RDL_SCRIPT_INSPECT] =
        "return {redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1]),\n"
        "  redis.call('GET', KEYS[2]), redis.call('TIME'),\n"
        "  redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES'), redis.call('HGETALL', KEYS[4]),\n"
        "  redis.call('ZRANGE', KEYS[5], 0, -1), redis.call('HGETALL', KEYS[6])}\n",
};

/* The digests are constants of the texts above, written out rather than
 * computed: nothing to fill at run time, so clients in different threads
 * share the table without a race. tests/unit/test_tables.c checks each
 * against tests/support/sha1.c (and shows the right one when a text changes). */
static const char rdl_script_sha1[RDL_SCRIPT_COUNT][41] = {
    [RDL_SCRIPT_ACQUIRE] = "0bd17b6d54195ae54bf7f2e45188989a3cacfec3",
    [RDL_SCRIPT_ACQUIRE_FENCED] = "4356142c837709c718b6eee2aaf0203c456fd0b4",
    [RDL_SCRIPT_RENEW] = "e339b22c740efac15e5266a32a238fea6f679eb6",
    [RDL_SCRIPT_RELEASE] = "ca9d850bcaef8c636bf5c8dbde916d32201195cf",
    [RDL_SCRIPT_FENCE_RAISE] = "7b42ebc29065295e28da03bdcc0f526c7f0d8562",
    [RDL_SCRIPT_QUEUE_ACQUIRE] = "223b32f0d8b809644425563a9045b57878071e6b",
    [RDL_SCRIPT_QUEUE_RELEASE] = "85da8ae19b284f444c2a2fe4a320614d9c559d50",
    [RDL_SCRIPT_SEM_ACQUIRE] = "0e0bd62707ee80f016899a67ecd40eff723129b6",
    [RDL_SCRIPT_SEM_RENEW] = "0d141efcdea1384f090b1a9c630937075bccc818",
    [RDL_SCRIPT_SEM_RELEASE] = "dc5b84c81cc9747f67024b72cfac524f98573240",
    [RDL_SCRIPT_SHARED_ACQUIRE] = "b0733d98960a9d03c02d3cd8ac59fcf07c2fb04a",
    [RDL_SCRIPT_SHARED_RELEASE] = "c0bf5f526dde22691090050033a69f37d7753b31",
    [RDL_SCRIPT_INSPECT] = "778db638fc34ffc8839fe23b813252a3b35e6e53",
};

const char *rdl_script_sha(int i) { return rdl_script_sha1[i]; }
