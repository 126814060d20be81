#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) on the sentinel
# topology of chaos.sh: a primary, a replica and a Sentinel, the workers
# through the Sentinel with replica_acks 1, failovers among the faults;
# one TAP case per invariant, 0 overlaps.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
CHAOS_TOPOLOGY=sentinel exec bash "$here/run-chaos-short.sh"
