#!/bin/bash
# SPDX-License-Identifier: MIT
# One command from a fresh checkout to a running example:
#   installs the Debian packages it needs (when run as root and any is
#   missing), builds the library and runs `make demo`: the double-booking
#   story played by real booking-server processes against a private
#   redis-server (unix socket in a temporary directory, no persistence;
#   stopped afterwards whatever happens). Exits non-zero if a scenario of
#   the demo did not come out as it should.
set -euo pipefail
cd "$(dirname "$0")/.."

need=(autoconf automake libtool pkg-config make gcc)
# libevent, libuv and GLib are optional: with them, make check also runs the
# integration suite and the examples on their adapters.
pkgs=(build-essential autoconf automake libtool pkg-config libhiredis-dev libev-dev
      libevent-dev libuv1-dev libglib2.0-dev redis-server)
missing=0  # something required
optional=0 # only a loop library
for t in "${need[@]}" redis-server; do command -v "$t" >/dev/null 2>&1 || missing=1; done
for h in hiredis/async.h ev.h; do [ -f "/usr/include/$h" ] || missing=1; done
for h in event2/event.h uv.h glib-2.0/glib.h; do [ -f "/usr/include/$h" ] || optional=1; done
if [ "$missing" = 1 ] || [ "$optional" = 1 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "==> installing: ${pkgs[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
    elif [ "$missing" = 1 ]; then
        echo "quickstart: missing tools; run: sudo apt-get install -y ${pkgs[*]}" >&2
        exit 1
    else
        echo "==> note: libevent, libuv or GLib missing; their adapters' tests are skipped" \
             "(sudo apt-get install -y libevent-dev libuv1-dev libglib2.0-dev)"
    fi
fi

if [ ! -x configure ]; then echo "==> ./bootstrap"; ./bootstrap >/dev/null; fi
if [ ! -f Makefile ]; then echo "==> ./configure"; ./configure -q; fi
echo "==> make"
make -s -j2 >/dev/null

echo "==> make demo"
exec make -s demo
