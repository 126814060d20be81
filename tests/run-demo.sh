#!/bin/bash
# make check: runs examples/demo.sh (what `make demo` runs) and reports each
# of its five results as a TAP case, plus one for its exit status agreeing
# with them. REDLEASE_TEST_WRAPPER (make check-valgrind) runs every
# booking-server under valgrind: an error or a leak makes that server exit
# non-zero, which fails "clean shutdown". Leases then get twice the TTL, as
# valgrind slows the servers down.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/redis-harness.sh" || exit 99

# The demo starts its own redis-server; only the missing-server rule (SKIP,
# or a failure under CI) is taken from the harness.
redis_harness_require_tap

ttl=1000
[ -n "${REDLEASE_TEST_WRAPPER:-}" ] && ttl=2000
out=$(DEMO_TTL_MS=${DEMO_TTL_MS:-$ttl} DEMO_WRAPPER=${REDLEASE_TEST_WRAPPER:-} \
      timeout --kill-after=10 240 bash "$here/../examples/demo.sh" 2>&1)
status=$?
sed 's/^/# /' <<<"$out"

echo "1..6"
failed=0
n=0
for title in "without a lock" "with redlease" "holder SIGKILLed" "holder paused" "clean shutdown"; do
    n=$((n + 1))
    if grep -q "^$n\. $title *\[PASS\]" <<<"$out"; then
        echo "ok $n - $title"
    else
        echo "not ok $n - $title"
        failed=1
    fi
done
if [ "$status" -eq "$failed" ]; then
    echo "ok 6 - demo exit status $status agrees with the results"
else
    echo "not ok 6 - demo exit status $status, results say $failed"
fi
exit 0
