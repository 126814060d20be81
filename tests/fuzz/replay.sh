#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: every fuzz target's corpus (tests/fuzz/corpus/fuzz_NAME/)
# replayed once through tests/fuzz/replay_NAME (the target without
# libFuzzer), one TAP case per target. A target aborts on a violated
# invariant; ASan (sanitizer build) or valgrind (REDLEASE_TEST_WRAPPER,
# make check-valgrind) catch memory errors and leaks.
set -u
builddir=${REDLEASE_BUILDDIR:-.}
srcdir=${REDLEASE_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
wrapper=${REDLEASE_TEST_WRAPPER:-}
targets=(replies options model)

echo "1..${#targets[@]}"
n=0
for t in "${targets[@]}"; do
    n=$((n + 1))
    log=$builddir/tests/fuzz/replay_$t.out
    # shellcheck disable=SC2086 # the wrapper is a command line
    if timeout --kill-after=10 300 $wrapper "$builddir/tests/fuzz/replay_$t" "fuzz_$t" \
        "$srcdir/tests/fuzz/corpus/fuzz_$t" >"$log" 2>&1 &&
        grep -q "^ok 1 - " "$log"; then
        echo "ok $n - fuzz_$t: $(sed -n 's/^ok 1 - fuzz_[a-z]*: //p' "$log")"
    else
        sed 's/^/# /' "$log" | tail -n 40
        echo "not ok $n - fuzz_$t corpus replay"
    fi
done
