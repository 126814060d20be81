#!/bin/bash
# make check: runs every example program (examples/*-basic, one per loop)
# against a private redis-server and reports each as a TAP case; an example
# exits 0 only when its story came out as it should. Examples whose loop
# configure did not find are reported as skipped. REDLEASE_TEST_WRAPPER
# (make check-valgrind) runs each under valgrind.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/redis-harness.sh" || exit 99

examples=(libev libevent libuv glib)
redis_harness_start_tap

echo "1..${#examples[@]}"
n=0
wrapper=${REDLEASE_TEST_WRAPPER:-}
for e in "${examples[@]}"; do
    n=$((n + 1))
    bin=${REDLEASE_BUILDDIR:-.}/examples/$e-basic
    if [ ! -x "$bin" ]; then
        echo "ok $n - $e-basic # SKIP not built (configure found no $e)"
        continue
    fi
    out=$(REDLEASE_SOCKET=$REDLEASE_TEST_SOCKET timeout 120 $wrapper "$bin" 2>&1)
    status=$?
    sed 's/^/# /' <<<"$out"
    if [ "$status" -eq 0 ]; then
        echo "ok $n - $e-basic"
    else
        echo "not ok $n - $e-basic (exit $status)"
    fi
done

redis_harness_stop
trap - EXIT INT TERM HUP
exit 0
