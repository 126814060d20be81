#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the complete programs of the docs compile as users copy them:
# C99, -Wall -Wextra, not one warning. One TAP case per program:
#   README.md  the C block under "## A complete libev program"
#   redlease.3 the C program of EXAMPLES
srcdir=${REDLEASE_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
builddir=${REDLEASE_BUILDDIR:-.}
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlease-doc-examples.XXXXXX") || exit 99
trap 'rm -rf -- "$tmp"' EXIT

# The README's block: from the heading's ```c to the closing ```.
awk '/^## A complete libev program/ { h = 1 } h && /^```c/ { on = 1; next }
     on && /^```/ { exit } on' "$srcdir/README.md" >"$tmp/readme.c"
# The man page's: between .EX and .EE after .SH EXAMPLES, roff escapes undone.
awk '/^\.SH EXAMPLES/ { h = 1 } h && /^\.EX/ { on = 1; next } on && /^\.EE/ { exit } on' \
    "$srcdir/man/redlease.3" | sed 's/\\e/\\/g' >"$tmp/man3.c"

echo "1..2"
n=0
for name in readme man3; do
    n=$((n + 1))
    if [ ! -s "$tmp/$name.c" ]; then
        echo "not ok $n - $name: no program found"
        continue
    fi
    if out=$("$cc" -std=c99 -Wall -Wextra -Werror -I"$srcdir/include" \
        -I"$builddir/build-include" -c "$tmp/$name.c" -o "$tmp/$name.o" 2>&1); then
        echo "ok $n - $name: the example compiles without a warning"
    else
        echo "not ok $n - $name: the example does not compile cleanly"
        printf '%s\n' "$out" | sed 's/^/#   /'
    fi
done
