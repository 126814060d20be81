#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short quorum chaos run (run-chaos-quorum.sh: five
# independent persistent masters; members frozen, killed and restarted,
# paused) on a counting semaphore of 3 permits (CHAOS_LIMIT=3; every
# worker holds weight 1, and each member admits 2: docs/design.md 12.3).
# One TAP case per invariant: the weights held never past 3, no lost
# update (a quorum's fences are unique), every loss reported in time.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
CHAOS_LIMIT=${CHAOS_LIMIT:-3} CHAOS_DURATION_S=${CHAOS_DURATION_S:-20} exec bash "$here/run-chaos-quorum.sh"
