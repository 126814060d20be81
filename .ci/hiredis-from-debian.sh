#!/bin/bash
# SPDX-License-Identifier: MIT
# .ci/run's hiredis1 leg: builds hiredis 1.x, with TLS (hiredis_ssl), from
# Debian's own source package of a newer suite, into a private prefix under
# the build folder. Debian 12 ships hiredis 0.14 only; the library must keep
# working on both. Nothing comes from outside Debian's mirror, and nothing
# of it goes into the repository.
#
#   .ci/hiredis-from-debian.sh PREFIX     (an absolute path)
#
# A PREFIX that already holds the built library is reused (the cache).
# HIREDIS_SUITE (default trixie) names the suite whose source is built.
# Needs root for the deb-src entry and apt-get update, as .ci/run does.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX}
case $prefix in /*) ;; *) echo "$0: PREFIX must be absolute" >&2; exit 2 ;; esac
suite=${HIREDIS_SUITE:-trixie}

if [ -f "$prefix/lib/pkgconfig/hiredis_ssl.pc" ]; then
    echo "hiredis: reusing $prefix ($(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/hiredis.pc"))"
    exit 0
fi

list=/etc/apt/sources.list.d/redlease-ci-deb-src.sources
if ! grep -qs "Suites: $suite" "$list"; then
    printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" "Suites: $suite" \
        "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$list"
    env DEBIAN_FRONTEND=noninteractive apt-get update -q
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/redlease-hiredis.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
chmod 755 "$work" # apt fetches as _apt where it can
cd "$work"
apt-get source -q --download-only "hiredis/$suite"
# The Debian-patched tree, as Debian builds it (the .dsc's checksums were
# checked by apt against the signed Sources index).
dpkg-source --no-check -x hiredis_*.dsc src >/dev/null
cd src
# LIBRARY_PATH: hiredis's Makefile takes it as the install's lib folder,
# and some machines export it for the linker (CUDA's stubs).
make -j2 USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib >/dev/null
make USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib install >/dev/null
echo "hiredis: built $(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/hiredis.pc") with TLS into $prefix"
