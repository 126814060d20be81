#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the static library defines no global symbol outside the
# public redlease_ names and the internal rdl_ prefix, so a program can link
# libredlease.a next to any other library (GNU readline owns rl_). One TAP
# case per archive found in the build tree, plus the list of offenders.
builddir=${REDLEASE_BUILDDIR:-.}
archives=()
for a in "$builddir/.libs/libredlease.a" "$builddir/.libs/libredlease_core.a"; do
    [ -f "$a" ] && archives+=("$a")
done
if [ "${#archives[@]}" -eq 0 ]; then
    echo "Bail out! no libredlease archive under $builddir/.libs (run make first)"
    exit 1
fi
echo "1..${#archives[@]}"
n=0
for a in "${archives[@]}"; do
    n=$((n + 1))
    # Defined (not U), global (upper-case type letter), not weak (W/V: those
    # come from the compiler's own inline helpers in some builds).
    bad=$(nm -g --defined-only "$a" 2>/dev/null |
        awk 'NF == 3 && $2 ~ /^[A-Z]$/ && $2 != "W" && $2 != "V" { print $3 }' |
        grep -vE '^(redlease_|rdl_)' |
        grep -vE '^__(odr_asan|asan|ubsan|sancov|llvm)' || true) # a sanitizer build's own
    if [ -z "$bad" ]; then
        echo "ok $n - $(basename "$a"): every global symbol is redlease_* or rdl_*"
    else
        echo "not ok $n - $(basename "$a"): global symbols outside redlease_/rdl_:"
        printf '%s\n' "$bad" | sed 's/^/#   /'
    fi
done
