#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the license is stated where users and packagers look. One TAP
# case each:
#   COPYING    the MIT license text is there
#   redlease.pc carries "License: MIT"
#   SPDX       every source file of the tree (C, headers, scripts, build
#              files, man pages) has SPDX-License-Identifier: MIT in its
#              first three lines
srcdir=${REDLEASE_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
builddir=${REDLEASE_BUILDDIR:-.}
echo "1..3"
if grep -q "^MIT License" "$srcdir/COPYING" 2>/dev/null; then
    echo "ok 1 - COPYING holds the MIT license"
else
    echo "not ok 1 - COPYING holds the MIT license"
fi
if grep -qx "License: MIT" "$builddir/redlease.pc" 2>/dev/null; then
    echo "ok 2 - redlease.pc says License: MIT"
else
    echo "not ok 2 - redlease.pc says License: MIT"
fi
missing=$(cd "$srcdir" && find src include adapters cli examples tests man \
    -type f \( -name '*.[ch]' -o -name '*.sh' -o -name '*.awk' -o -name '*.py' \
    -o -name '*.itest' -o -name '*.[0-9]' \) -not -path 'tests/fuzz/corpus/*' \
    -not -path 'tests/fuzz/crashes/*' -print 2>/dev/null;
    printf '%s\n' Makefile.am configure.ac bootstrap redlease.pc.in .ci/run)
bad=
while IFS= read -r f; do
    [ -f "$srcdir/$f" ] || continue
    head -n 3 "$srcdir/$f" | grep -q 'SPDX-License-Identifier: MIT' || bad="$bad $f"
done <<<"$missing"
if [ -z "$bad" ]; then
    echo "ok 3 - every source file has SPDX-License-Identifier: MIT"
else
    echo "not ok 3 - files without SPDX-License-Identifier: MIT"
    printf '%s\n' $bad | sed 's/^/#   /'
fi
