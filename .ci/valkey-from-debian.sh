#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds Valkey 9.x (valkey-server, valkey-cli), with TLS, from Debian's own
# source package of a newer suite, into a private prefix under the build
# folder, for the tests to run against (REDIS_SERVER, REDIS_CLI). Debian 12
# ships no Valkey, and trixie's is 8.1. Nothing comes from outside Debian's
# mirror, and nothing of it goes into the repository.
#
#   .ci/valkey-from-debian.sh PREFIX     (an absolute path)
#
# Installs PREFIX/bin/valkey-server and valkey-cli only, with redis-server
# and redis-cli beside them as links to those (the names the test harness
# knows a server of its own by). Valkey's vendored jemalloc, Lua and
# libvalkey are built; of Debian 12 it needs build-essential, pkg-config,
# libssl-dev and dpkg-dev only (.ci/run installs them). No systemd support.
#
# A PREFIX that already holds the built server is reused (the cache).
# VALKEY_SUITE (default sid) names the suite whose source is built.
# Needs root for the deb-src entry and apt-get update, as .ci/run does.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX}
case $prefix in /*) ;; *) echo "$0: PREFIX must be absolute" >&2; exit 2 ;; esac
suite=${VALKEY_SUITE:-sid}

version() { "$prefix/bin/valkey-server" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p'; }

if [ -x "$prefix/bin/valkey-server" ] && [ -x "$prefix/bin/valkey-cli" ]; then
    echo "valkey: reusing $prefix ($(version))"
    exit 0
fi

# shellcheck source=.ci/debian-source.sh
. "$(dirname "$0")/debian-source.sh"
debian_source valkey "$suite" # sets $work
cd "$work/src"
# Valkey's Makefile prints its progress on stderr: all of it goes to a log,
# shown (its end) only when the build fails. Its own test suite is not built.
opts=(BUILD_TLS=yes USE_SYSTEMD=no)
if ! make -C src -j2 "${opts[@]}" valkey-server valkey-cli >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    echo "$0: building valkey failed" >&2
    exit 1
fi
mkdir -p "$prefix/bin"
# The server last: it is what marks the prefix as done.
install -m 755 src/valkey-cli "$prefix/bin/"
ln -sf valkey-cli "$prefix/bin/redis-cli"
ln -sf valkey-server "$prefix/bin/redis-server"
install -m 755 src/valkey-server "$prefix/bin/"
echo "valkey: built $(version) with TLS into $prefix"
