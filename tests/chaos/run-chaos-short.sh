#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: a short chaos run (tests/chaos/chaos.sh), one TAP case per
# invariant of its checker. ~10 s with 4 workers; under
# REDLEASE_TEST_WRAPPER (valgrind) 2 workers, a 400 ms TTL and 20 s, so it
# stays under a minute. CHAOS_SEED replays a failing run (its seed is in
# the log); CHAOS_TOPOLOGY picks chaos.sh's topology (run-chaos-sentinel.sh).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/../support/redis-harness.sh" || exit 99
redis_harness_require_tap

if [ -n "${REDLEASE_TEST_WRAPPER:-}" ]; then
    export CHAOS_DURATION_S=${CHAOS_DURATION_S:-20} CHAOS_WORKERS=${CHAOS_WORKERS:-2}
else
    export CHAOS_DURATION_S=${CHAOS_DURATION_S:-8} CHAOS_WORKERS=${CHAOS_WORKERS:-4}
fi
out=$(bash "$here/chaos.sh" 2>&1)
status=$?
printf '%s\n' "$out" | sed 's/^/# /'
cases=$(printf '%s\n' "$out" | grep '^invariant: ')
n=$(printf '%s\n' "$cases" | grep -c '^invariant: ')
if [ "$n" -eq 0 ]; then
    echo "1..1"
    echo "not ok 1 - chaos run produced no verdict (exit $status)"
    exit 0
fi
echo "1..$((n + 1))"
i=0
while read -r _ name verdict rest; do
    i=$((i + 1))
    if [ "$verdict" = ok ]; then echo "ok $i - $name $rest"; else echo "not ok $i - $name $rest"; fi
done <<<"$cases"
if [ "$status" -eq 0 ]; then echo "ok $((i + 1)) - chaos.sh exit 0"; else echo "not ok $((i + 1)) - chaos.sh exit $status"; fi
