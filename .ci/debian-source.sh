# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by .ci/hiredis-from-debian.sh and .ci/valkey-from-debian.sh:
#
#   debian_source PACKAGE SUITE
#
# unpacks Debian's source package of PACKAGE from SUITE (a newer suite than
# the machine's, reached through a deb-src entry on Debian's own mirror)
# into "$work/src", a fresh temporary folder removed when the script exits,
# and sets $work. The Debian-patched tree, as Debian builds it: the .dsc's
# checksums were checked by apt against the signed Sources index. Needs
# root (the deb-src entry, apt-get update).
debian_source() {
    local package=$1 suite=$2
    # One stanza per suite in one file, a blank line apart.
    local list=/etc/apt/sources.list.d/redlease-ci-deb-src.sources
    if ! grep -qsx "Suites: $suite" "$list"; then
        if [ -s "$list" ]; then echo >>"$list"; fi
        printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" "Suites: $suite" \
            "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >>"$list"
        env DEBIAN_FRONTEND=noninteractive apt-get update -q
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/redlease-$package.XXXXXX")
    trap 'rm -rf -- "$work"' EXIT
    chmod 755 "$work" # apt fetches as _apt where it can
    # A suite that moves on (sid) may have dropped the version an index
    # from an earlier run names: then the index is refreshed, once.
    if ! (cd "$work" && apt-get source -q --download-only "$package/$suite"); then
        env DEBIAN_FRONTEND=noninteractive apt-get update -q
        (cd "$work" && apt-get source -q --download-only "$package/$suite")
    fi
    (cd "$work" && dpkg-source --no-check -x "${package}"_*.dsc src >/dev/null)
}
