#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the short chaos run (run-chaos-short.sh) with shared and
# exclusive holders of one resource (CHAOS_SHARED=1, docs/design.md 12.4):
# half the workers shared, half exclusive, all waiting in its queue; no one
# ever holds beside an exclusive holder outside restart windows.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
if [ -n "${REDLEASE_TEST_WRAPPER:-}" ]; then workers=${CHAOS_WORKERS:-4}; else workers=${CHAOS_WORKERS:-6}; fi
CHAOS_SHARED=1 CHAOS_WORKERS=$workers exec bash "$here/run-chaos-short.sh"
