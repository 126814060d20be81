#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made seeds of tests/fuzz/corpus/ (run from the source
tree's top; inputs the fuzzer found sit beside them under their SHA1 names).
Each seed is a program in the byte language the target's header describes.
fuzz_model's seeds are not written here: they are test_model's PRNG seeds
recorded in its byte language, from a build tree:
    tests/unit/test_model 8 1 SRCDIR/tests/fuzz/corpus/fuzz_model"""
import os

def u16(v): return bytes([v >> 8 & 255, v & 255])

# fuzz_replies steps (see step() in fuzz_replies.c)
def advance(ms): return bytes([0, ms])
def pause(ms): return bytes([1]) + u16(ms)
def feed(resp): return bytes([2, len(resp)]) + resp
BREAK, RUN1, FREE = bytes([3]), bytes([8]), bytes([9])
def reconnect(mode): return bytes([4, mode])  # 0 handshake ok, 1 raw, 2 fail
def release(slot): return bytes([6, slot])
def good(v=0): return bytes([7, v])
def acquire(slot, flags=1, ttl=1000, base=50, react=0, extra=b"", acks=None):
    # acks (None: none): (min_replicas, wait_fsync, renewal_acks), in react's high bits
    if acks:
        react |= 0x0c | acks[0] << 4 | acks[1] << 6 | acks[2] << 7
    return bytes([5, slot, flags]) + u16(ttl - 10) + extra + bytes([base, 16, react])

def header(hook=0, timeout_ms=110): return bytes([hook, (timeout_ms - 10) // 4])

FENCED = 0x41  # renew ttl/3, fencing
replies = {
    "happy-path": header() + acquire(0) + RUN1 + feed(b"+OK\r\n") + advance(255)
        + advance(255) + feed(b":1\r\n") + release(0) + RUN1 + feed(b":1\r\n") + FREE,
    "fenced": header() + acquire(0, FENCED) + RUN1 + feed(b":12345\r\n") + advance(200)
        + advance(200) + feed(b":1\r\n") + release(0) + RUN1 + feed(b":0\r\n") + FREE,
    "contended-nil": header() + acquire(0, 0x09, extra=u16(500)) + RUN1 + feed(b"$-1\r\n")
        + advance(100) + feed(b"$-1\r\n") + advance(255) + advance(255) + FREE,
    "noscript": header() + acquire(0, FENCED) + RUN1
        + feed(b"-NOSCRIPT No matching script. Please use EVAL.\r\n") + RUN1
        + feed(b":7\r\n") + release(0) + RUN1 + feed(b":1\r\n") + FREE,
    "errors": header() + acquire(0, 0x09, extra=u16(2000)) + RUN1
        + feed(b"-OOM command not allowed\r\n") + advance(100)
        + feed(b"-READONLY You can't write against a read only replica.\r\n") + advance(200)
        + feed(b"-LOADING Redis is loading\r\n") + advance(250)
        + feed(b"-WRONGTYPE Operation against a key\r\n") + FREE,
    "renew-not-ours": header() + acquire(0, 1, react=2) + RUN1 + feed(b"+OK\r\n")
        + advance(255) + advance(100) + feed(b":0\r\n") + RUN1 + FREE,
    "disconnect-held": header() + acquire(0) + RUN1 + feed(b"+OK\r\n") + BREAK + advance(100)
        + reconnect(1) + feed(b"$40\r\n" + b"a" * 40 + b"\r\n") + good() + good() + good()
        + advance(255) + advance(255) + good(0) + FREE,
    "timeout-expiry": header(0, 50) + acquire(0, 1, ttl=100) + RUN1 + feed(b"+OK\r\n")
        + advance(40) + advance(60) + pause(5000) + FREE,
    "garbage-peer": header() + acquire(0) + RUN1 + feed(b"HTTP/1.1 400 Bad Request\r\n")
        + reconnect(2) + advance(255) + FREE,
    "odd-replies": header() + acquire(0) + acquire(1, FENCED) + RUN1
        + feed(b"*2\r\n:1\r\n$1\r\nx\r\n") + feed(b"+QUEUED\r\n") + advance(255) + FREE,
    "hook-and-callbacks": header(2) + acquire(0, 1, react=3) + acquire(1, 1, react=1)
        + RUN1 + b"\x00\x01" + good() + good() + pause(3000) + b"\xff" + FREE,
    # a semaphore of 1 (react bits 2-3 = 2, limit 1): full (-n: its first
    # holder's deadline in n - 1 ms), admitted, renewed, released
    "semaphore": header() + acquire(0, 0x09, extra=u16(2000), react=0x18) + RUN1
        + feed(b":-1501\r\n") + advance(100) + feed(b":1\r\n") + advance(255) + advance(100)
        + feed(b":1\r\n") + release(0) + RUN1 + feed(b":1\r\n") + FREE,
    # a shared holder (limit 0) meets a semaphore: KIND, at once
    "shared-kind": header() + acquire(0, 0x09, extra=u16(2000), react=0x08) + RUN1
        + feed(b"-KIND a semaphore of 2 permits\r\n") + acquire(1, 1, react=0x08) + RUN1
        + feed(b":1\r\n") + advance(255) + advance(100) + feed(b":0\r\n") + FREE,
    "split-reply": header() + acquire(0) + RUN1 + feed(b"+O") + feed(b"K\r\n")
        + release(0) + RUN1 + feed(b":") + feed(b"1\r\n") + FREE,
    # WAIT 1: acknowledged (held, a renewal acknowledged too), then one short
    # (EREPLICAS, the key dropped); WAITAOF: [1, 1] then an integer (EPROTO)
    "replica-acks": header() + acquire(0, acks=(1, 0, 1)) + RUN1
        + feed(b"+OK\r\n") + feed(b":1\r\n") + advance(255) + advance(100)
        + feed(b":1\r\n") + feed(b":1\r\n") + acquire(1, 0x09, extra=u16(300), acks=(2, 0, 1))
        + RUN1 + feed(b"+OK\r\n") + feed(b":1\r\n") + advance(255) + feed(b":1\r\n")
        + acquire(2, 0x41, acks=(1, 1, 0)) + RUN1 + feed(b":9\r\n")
        + feed(b"*2\r\n:1\r\n:1\r\n") + release(2) + RUN1 + feed(b":1\r\n")
        + acquire(3, acks=(0, 1, 0)) + RUN1 + feed(b"+OK\r\n") + feed(b":1\r\n") + FREE,
}

# fuzz_options: see LLVMFuzzerTestOneInput() in fuzz_options.c
def s(b): return bytes([0x38 + len(b) - 1]) + b  # a string of input bytes (<= 200)
NULL, EMPTY, HUGE = bytes([0]), bytes([0x20]), bytes([0x30])
def i64(sel): return bytes([sel])  # an entry of take_i64's table
def integer(sel): return bytes([sel])
def client(host=s(b"127.0.0.1"), port=4, unix=NULL, user=NULL, pw=NULL, db=0,
           prefix=s(b"lock:"), timeouts=(11, 11, 9, 11)):
    return (b"\x01" + host + integer(port) + unix + user + pw + integer(db) + prefix
            + b"".join(i64(t) for t in timeouts))
def lock(ttl=12, renew=0, wait=0, base=9, mx=10, attempts=0, hold=0, fencing=0, jitter=0):
    return (b"\x01" + i64(ttl) + i64(renew) + i64(wait) + i64(base) + i64(mx)
            + integer(attempts) + i64(hold) + integer(fencing) + integer(jitter))
def resource(b): return b"\x40" + s(b)
def kind(limit=0, weight=0, shared=0): return b"\x01" + integer(limit) + integer(weight) + integer(shared)

options = {
    "defaults": b"\x00\x00" + resource(b"r"),
    "typical": client() + lock() + resource(b"table:12"),
    "fenced-binary-name": client() + lock(fencing=1) + resource(b"a\x01\xff b\"'"),
    "max-resource": client() + lock() + bytes([0x24, ord("x")]),
    "over-max-resource": client() + lock() + bytes([0x25, ord("x")]),
    "null-resource": client() + lock() + NULL,
    "unix-auth-db": client(unix=s(b"/tmp/r.s"), user=s(b"u"), pw=s(b"p"), db=9) + lock()
        + resource(b"r"),
    "user-no-password": client(user=s(b"u")),
    "bad-port": client(port=6),
    "renew-equals-ttl": client() + lock(ttl=12, renew=12) + resource(b"r"),
    "ttl-9": client() + lock(ttl=5) + resource(b"r"),
    "extremes": client(timeouts=(19, 20, 1, 21)) + lock(ttl=20, wait=3, hold=19, jitter=2)
        + resource(b"r"),
    "huge-strings": client(host=HUGE, prefix=HUGE, pw=HUGE) + lock() + resource(b"r"),
    # limit and weight: integer()'s table has 0, 1, -1, 2, 6379...
    "semaphore": client() + lock(fencing=1) + resource(b"r") + kind(limit=3, weight=1),
    "semaphore-weight-over": client() + lock() + resource(b"r") + kind(limit=3, weight=4),
    "shared": client() + lock() + resource(b"r") + kind(shared=1),
    "shared-with-limit": client() + lock() + resource(b"r") + kind(limit=1, shared=1),
}

for target, seeds in (("fuzz_replies", replies), ("fuzz_options", options)):
    d = os.path.join("tests", "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)
