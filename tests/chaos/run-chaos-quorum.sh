#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) on the quorum
# topology of chaos.sh: five independent masters with appendonly yes and
# appendfsync always, the workers given all of them (the client option
# quorum_addrs, no replica_acks); members frozen (a minority, and at least
# once a majority), killed and restarted from their append-only files,
# restarted empty after a minority was frozen (member-wipe: the workers'
# restart guard keeps them out of new majorities for a TTL), and
# paused among the faults; one TAP case per invariant, 0 overlaps. A
# 25 s schedule (the members start in ~2 s and need no settling, unlike the
# Cluster): ~27 s in all, with a dozen member faults of each kind.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
CHAOS_TOPOLOGY=quorum CHAOS_DURATION_S=${CHAOS_DURATION_S:-25} exec bash "$here/run-chaos-short.sh"
