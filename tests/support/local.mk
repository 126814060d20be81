# SPDX-License-Identifier: MIT
# What unit tests, integration tests and fuzzers share (tests/README.md):
# the fake transport, fake loop and virtual clock (fake.c) and SHA-1
# (sha1.c: the tests name scripts by it, independently of the digests the
# library sends), built once into a check-only library; the model (model*.c), the TAP runner
# (testutil.h), the unit tests' recorder (core_rig.h) and the Redis
# harness (redis-harness.sh). The fuzz targets compile fake.c and the model
# themselves, with the fuzzer's instrumentation.
check_LTLIBRARIES += %reldir%/libfake.la
%canon_reldir%_libfake_la_SOURCES = %reldir%/fake.c %reldir%/fake.h %reldir%/sha1.c %reldir%/sha1.h
%canon_reldir%_libfake_la_CPPFLAGS = $(IN_TREE_CPPFLAGS) -I$(top_srcdir)/src $(HIREDIS_CFLAGS)
SUPPORT_CPPFLAGS = -I$(top_srcdir)/%reldir%
SUPPORT_H = %reldir%/testutil.h %reldir%/core_rig.h
MODEL_SOURCES = %reldir%/model.c %reldir%/model_redis.c %reldir%/model_pubsub.c \
	%reldir%/model.h %reldir%/model_internal.h
EXTRA_DIST += %reldir%/redis-harness.sh %reldir%/tls-certs.sh
