#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench: starts a private redis-server (tests/support/redis-harness.sh)
# and runs tests/bench/bench against it (bench_main.c says what it
# measures and which variables tune it). Arguments go to the program.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
exec "$here/../support/redis-harness.sh" run "${REDLEASE_BUILDDIR:-.}/tests/bench/bench" "$@"
