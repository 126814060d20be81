#!/bin/bash
# SPDX-License-Identifier: MIT
# The public ABI against its baseline (make check-abi; CI runs it on the
# plain build). abidw and abidiff are Debian's abigail-tools.
#   check-abi.sh check  LIB BASELINE HEADERS_DIR   abidiff; any change fails
#   check-abi.sh update LIB BASELINE HEADERS_DIR   rewrites the baseline
# Only what include/ declares counts: the exported functions and the types
# they reach (private types and undefined symbols are dropped), written
# without paths, so the baseline is the same from any build directory.
# CONTRIBUTING.md ("The ABI") says what goes with a change of it.
set -euo pipefail
mode=$1 lib=$2 baseline=$3 headers=$4
for tool in abidw abidiff; do
    command -v "$tool" >/dev/null ||
        { echo "check-abi: $tool not found (apt-get install abigail-tools)" >&2; exit 2; }
done
[ -f "$lib" ] || { echo "check-abi: $lib not found (run make first)" >&2; exit 2; }

dump() {
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --type-id-style hash \
        --headers-dir "$headers" --drop-private-types --drop-undefined-syms "$lib"
}

case $mode in
update)
    dump >"$baseline.tmp"
    mv "$baseline.tmp" "$baseline"
    echo "check-abi: wrote $baseline from $lib"
    ;;
check)
    [ -f "$baseline" ] || { echo "check-abi: no baseline $baseline" >&2; exit 2; }
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    dump >"$tmp"
    rc=0
    # abidiff: 0 same; bit 4 (4) a change, bit 8 (8) an incompatible one;
    # bits 1 and 2 are its own errors. Added functions are a change too:
    # they need the baseline (and a NEWS line) as much as a removal does.
    abidiff "$baseline" "$tmp" >"$tmp.report" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "check-abi: $(basename "$lib") matches $(basename "$baseline")"
        rm -f "$tmp.report"
        exit 0
    fi
    cat "$tmp.report"
    rm -f "$tmp.report"
    if [ $((rc & 3)) -ne 0 ]; then
        echo "check-abi: abidiff failed (exit $rc)" >&2
        exit 2
    fi
    cat >&2 <<'MSG'
check-abi: the public ABI differs from the baseline (report above).
If the change is deliberate, in the same commit: bump the libtool
version-info in configure.ac by its rules (CONTRIBUTING.md, "The ABI"),
run `make abi-baseline`, and say what changed in NEWS.
MSG
    exit 1
    ;;
*)
    echo "usage: check-abi.sh check|update LIB BASELINE HEADERS_DIR" >&2
    exit 2
    ;;
esac
