#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short quorum chaos run (run-chaos-quorum.sh) with shared
# and exclusive holders of one resource (CHAOS_SHARED=1): odd workers
# shared, even ones exclusive, all polling or woken (no one queue orders
# a quorum). One TAP case per invariant: no one ever beside an exclusive
# holder, no lost update, every loss reported in time.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
CHAOS_SHARED=1 CHAOS_DURATION_S=${CHAOS_DURATION_S:-20} exec bash "$here/run-chaos-quorum.sh"
