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

# shellcheck source=.ci/debian-source.sh
. "$(dirname "$0")/debian-source.sh"
debian_source hiredis "$suite" # sets $work
cd "$work/src"
# LIBRARY_PATH: hiredis's Makefile takes it as the install's lib folder,
# and some machines export it for the linker (CUDA's stubs).
make -j2 USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib >/dev/null
make USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib install >/dev/null
echo "hiredis: built $(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/hiredis.pc") with TLS into $prefix"
