#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) with the workers
# waiting in the queue (CHAOS_WAIT_MODE=queue: REDLEASE_WAIT_QUEUE, issue
# 16) and faults aimed at waiters while they are queued: SIGSTOPped
# (shorter than the TTL, longer, and past their entry's life), SIGKILLed
# (and replaced by a new process), their wake-up links killed (CLIENT KILL
# TYPE pubsub), their connections alone partitioned or cut by the proxy;
# beside them a holder SIGSTOPped, every command connection killed and
# Redis restarted (the queue emptied). One TAP case per invariant: 0
# overlaps, and every live waiter served within its bound
# (live-waiters-served; chaos-check.awk says which bound and why).
#
# The waiter faults are named twice in the schedule, so they are drawn
# twice as often (chaos.sh draws from the list as given): a fault of
# everyone's (kill, restart) resets every waiter's count in the checker,
# and too many of them would leave no stretch long enough to catch a
# waiter that is never served. Under REDLEASE_TEST_WRAPPER (valgrind) 3
# workers, so that a waiter still has someone ahead of it, with
# run-chaos-short.sh's 400 ms TTL and 20 s.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
[ -z "${REDLEASE_TEST_WRAPPER:-}" ] || export CHAOS_WORKERS=${CHAOS_WORKERS:-3}
waiter="waiter-stop waiter-kill pubsub-kill waiter-net-drop waiter-net-cut"
CHAOS_WAIT_MODE=queue CHAOS_KINDS=${CHAOS_KINDS:-"$waiter $waiter stop kill restart"} \
    exec bash "$here/run-chaos-short.sh"
