#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) on a counting
# semaphore (CHAOS_LIMIT=3: the lock option limit 3, the workers in even
# slots holding weight 2, the others 1, so that they want more permits
# than there are), under the single topology's faults; one TAP case per
# invariant: at no instant do the weights of the workers that held() add
# up past 3 outside restart windows (within-limit-outside-restarts), every
# fence differs and rises, every loss is reported before the server would
# drop the holder. 6 workers (3 under REDLEASE_TEST_WRAPPER: weights 1, 2
# and 1, still more than the limit).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
if [ -n "${REDLEASE_TEST_WRAPPER:-}" ]; then workers=${CHAOS_WORKERS:-3}; else workers=${CHAOS_WORKERS:-6}; fi
CHAOS_LIMIT=${CHAOS_LIMIT:-3} CHAOS_WORKERS=$workers exec bash "$here/run-chaos-short.sh"
