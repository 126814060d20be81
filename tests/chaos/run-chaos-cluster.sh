#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) on the cluster
# topology of chaos.sh: a Redis Cluster of three primaries and three
# replicas, the workers given one or two of its nodes with replica_acks 1,
# failovers and slot migrations of the lease's slot among the faults; one
# TAP case per invariant, 0 overlaps.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
CHAOS_TOPOLOGY=cluster exec bash "$here/run-chaos-short.sh"
