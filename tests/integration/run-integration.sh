#!/bin/bash
# SPDX-License-Identifier: MIT
# make check driver for the integration suite: starts a private
# redis-server (tests/support/redis-harness.sh), runs one test program
# against it, always stops redis, and exits with the test's status (77 =
# SKIP when redis-server is missing, unless CI is set).
#
#   run-integration.sh tests/integration/NAME.itest [ARGS...]
# runs tests/integration/test_NAME (the suite on adapter NAME); make check
# calls it that way for each .itest file (ITEST_LOG_COMPILER). tls-NAME.itest
# runs the same program with REDLEASE_TEST_TLS=1: the harness's server then
# also listens with TLS, and the suite's clients use it. Without a
# .itest argument, REDLEASE_TEST_BIN names the program (make bench).
#
# The harness is found in ../support/ (in $(srcdir), also for VPATH
# builds); test programs in the build tree: $REDLEASE_BUILDDIR (exported by
# AM_TESTS_ENVIRONMENT), else the current directory (make check runs tests
# from $(top_builddir)). REDLEASE_TEST_TIMEOUT (seconds, default 300, 0 =
# none) bounds the runtime; REDLEASE_TEST_WRAPPER (e.g. valgrind ...) runs
# the program under a tool.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/../support/redis-harness.sh" || exit 99

bin=${REDLEASE_TEST_BIN:-}
case ${1:-} in
*.itest)
    name=$(basename "$1" .itest)
    shift
    case $name in tls-*) # the suite on that adapter, over TLS
        name=${name#tls-}
        export REDLEASE_TEST_TLS=1 ;;
    esac
    bin=${REDLEASE_BUILDDIR:-.}/tests/integration/test_$name
    ;;
esac
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "run-integration.sh: test program '${bin:-?}' not found (run from the build tree)" >&2
    exit 99
fi

redis_harness_start_tap

limit=${REDLEASE_TEST_TIMEOUT:-300}
wrapper=${REDLEASE_TEST_WRAPPER:-}
rc=0
if [ "$limit" != 0 ] && command -v timeout >/dev/null 2>&1; then
    redis_harness_exec timeout --kill-after=10 "$limit" $wrapper "$bin" "$@" || rc=$?
    [ "$rc" -eq 124 ] && echo "run-integration.sh: $bin timed out after ${limit}s" >&2
else
    redis_harness_exec $wrapper "$bin" "$@" || rc=$?
fi

redis_harness_stop
trap - EXIT INT TERM HUP
exit "$rc"
