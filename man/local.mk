# SPDX-License-Identifier: MIT
# The manual pages: redlease(1), the command; redlease(3), the library.
# tests/man-lint.sh checks them in make check.
dist_man1_MANS = %reldir%/redlease.1
dist_man3_MANS = %reldir%/redlease.3
