# SPDX-License-Identifier: MIT
# make demo: the double-booking story, live (%reldir%/README.md).
# demo.sh starts a private redis-server and several booking-server
# processes sharing one store file; tests/run-demo.sh runs it in make check.
noinst_PROGRAMS += %reldir%/booking-server
%canon_reldir%_booking_server_SOURCES = %reldir%/server.c \
	%reldir%/store.c %reldir%/store.h examples/example-env.h
%canon_reldir%_booking_server_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(LIBEV_CFLAGS)
%canon_reldir%_booking_server_LDADD = libredlease.la $(HIREDIS_LIBS) $(LIBEV_LIBS)
# -no-install: a real executable, not a libtool wrapper script, so that
# REDLEASE_TEST_WRAPPER (valgrind) checks the server itself, not bash.
%canon_reldir%_booking_server_LDFLAGS = -no-install
EXTRA_DIST += %reldir%/demo.sh %reldir%/README.md
# $(BUILT_SOURCES): the in-tree <redlease/libev.h> the server includes (only
# `make all` builds it otherwise). bash: demo.sh needs it, $(SHELL) is sh.
demo: $(BUILT_SOURCES) %reldir%/booking-server$(EXEEXT)
	REDLEASE_BUILDDIR='$(abs_top_builddir)' bash $(top_srcdir)/%reldir%/demo.sh
.PHONY: demo
