#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-fuzz: run each libFuzzer target for a bounded time.
# usage: run-fuzz.sh BUILDDIR SRCDIR SECONDS TARGET...
# Each target starts from its checked-in seeds (SRCDIR/tests/fuzz/corpus/T)
# and writes what it finds to BUILDDIR/fuzz-corpus/T (copy small, new
# inputs worth keeping into the seed corpus by hand). A crash, leak or
# timeout leaves its input in BUILDDIR/fuzz-artifacts/ and fails the run.
# Prints the executions run and the coverage reached per target, and
# leaves BUILDDIR/fuzz-artifacts/TARGET.trs with its PASS or FAIL.
set -u
builddir=$1 srcdir=$2 seconds=$3
shift 3
mkdir -p "$builddir/fuzz-artifacts" || exit 1
failed=0
for t in "$@"; do
    scratch=$builddir/fuzz-corpus/$t
    log=$builddir/fuzz-artifacts/$t.log
    mkdir -p "$scratch" || exit 1
    echo "check-fuzz: $t for ${seconds}s"
    # -timeout: one input may take at most 10 s; -rss_limit_mb: 2 GB;
    # leaks are detected (ASan's leak check, libFuzzer's -detect_leaks=1).
    "$builddir/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$builddir/fuzz-artifacts/$t-" \
        "$scratch" "$srcdir/tests/fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -E '^#[0-9]+[[:space:]].*(cov|ft): ' "$log" | tail -n 1 |
          grep -oE '(cov|ft|corp): [^ ]+' | tr '\n' ' ')
    if [ "$rc" -eq 0 ]; then
        echo "check-fuzz: $t ok: ${execs:-?} executions, ${cov:-no coverage line}"
        result=PASS
    else
        tail -n 40 "$log"
        echo "check-fuzz: $t FAILED (exit $rc) after ${execs:-?} executions; see $log"
        failed=1 result=FAIL
    fi
    # One result per target in automake's .trs format, so whoever counts
    # the suite's results (.ci/run) counts the fuzz runs too.
    printf ':test-result: %s\n' "$result" >"$builddir/fuzz-artifacts/$t.trs"
done
exit "$failed"
