# SPDX-License-Identifier: MIT
# The public header, installed as $(includedir)/redlease.h.
include_HEADERS = %reldir%/redlease.h
