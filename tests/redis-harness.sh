#!/bin/bash
# SPDX-License-Identifier: MIT
# Transitional: the harness is tests/support/redis-harness.sh. This file
# only forwards to it, sourced or called, for examples/demo.sh, which still
# sources tests/redis-harness.sh (and make check runs the demo). Delete it,
# and its EXTRA_DIST line, once demo.sh names the new path.
_rh_shim_real=$(dirname "${BASH_SOURCE[0]}")/support/redis-harness.sh
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    exec bash "$_rh_shim_real" "$@"
fi
. "$_rh_shim_real"
