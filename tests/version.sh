#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: one version everywhere a user reads it, and the soname the
# ABI baseline names is the one configure.ac's version-info gives. One TAP
# case each:
#   header     REDLEASE_VERSION and its three numbers are configure's
#   man pages  each .TH says "redlease VERSION"
#   NEWS       its newest section names VERSION
#   soname     tests/abi/libredlease.abi names libredlease.so.(current - age)
srcdir=${REDLEASE_SRCDIR:-.}
builddir=${REDLEASE_BUILDDIR:-.}
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")
if [ -z "$version" ]; then
    echo "Bail out! no PACKAGE_VERSION in $builddir/config.h (run configure first)"
    exit 1
fi
echo "1..4"
n=0
check() { # NAME CMD...
    local name=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $name"; else echo "not ok $n - $name"; fi
}

h=$srcdir/include/redlease.h
IFS=. read -r major minor patch <<<"$version"
header_ok() {
    grep -q "^#define REDLEASE_VERSION \"$version\"$" "$h" &&
        grep -q "^#define REDLEASE_VERSION_MAJOR $major$" "$h" &&
        grep -q "^#define REDLEASE_VERSION_MINOR $minor$" "$h" &&
        grep -q "^#define REDLEASE_VERSION_PATCH $patch$" "$h"
}
check "redlease.h says $version" header_ok

man_ok() {
    local page rc=0
    for page in "$srcdir"/man/*.[0-9]; do
        grep -q "^\.TH .*\"redlease $version\"" "$page" ||
            { echo "# $page: .TH does not say \"redlease $version\""; rc=1; }
    done
    return $rc
}
check "every man page's .TH says redlease $version" man_ok

# The first line naming a version in NEWS is the newest section's title.
news_ok() {
    grep -m1 -E '[0-9]+\.[0-9]+\.[0-9]+' "$srcdir/NEWS" | grep -qF "$version"
}
check "NEWS's newest section is $version" news_ok

soname_ok() {
    local cur age want got
    cur=$(sed -n 's/^LT_CURRENT=\([0-9]*\)$/\1/p' "$srcdir/configure.ac")
    age=$(sed -n 's/^LT_AGE=\([0-9]*\)$/\1/p' "$srcdir/configure.ac")
    want=libredlease.so.$((cur - age))
    got=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$srcdir/tests/abi/libredlease.abi")
    [ "$got" = "$want" ] || { echo "# baseline soname '$got', configure.ac gives '$want'"; return 1; }
}
check "the ABI baseline's soname is configure.ac's" soname_ok
