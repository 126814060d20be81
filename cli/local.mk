# SPDX-License-Identifier: MIT
# redlease(1): a distributed flock(1) on the library and its libev adapter.
# Its man page is man/redlease.1; its tests are in tests/cli/.
bin_PROGRAMS += %reldir%/redlease
%canon_reldir%_redlease_SOURCES = \
	%reldir%/main.c %reldir%/commands.h %reldir%/help.c %reldir%/exit_status.h \
	%reldir%/msg.c %reldir%/msg.h %reldir%/args.c %reldir%/args.h \
	%reldir%/server.c %reldir%/server.h \
	%reldir%/run.c %reldir%/child.c %reldir%/child.h %reldir%/signals.c %reldir%/signals.h \
	%reldir%/status.c %reldir%/status_text.c %reldir%/status_text.h \
	%reldir%/direct.c %reldir%/direct.h %reldir%/view.c %reldir%/view.h \
	%reldir%/inherit.c %reldir%/inherit.h %reldir%/outage.c %reldir%/outage.h
%canon_reldir%_redlease_CPPFLAGS = $(IN_TREE_CPPFLAGS) -I$(top_srcdir)/src $(HIREDIS_CFLAGS) $(LIBEV_CFLAGS)
# Linked with the library statically (as redis-cli is with hiredis): the
# command works straight after make install, before any ldconfig.
%canon_reldir%_redlease_LDADD = libredlease_core.la $(HIREDIS_LIBS) $(LIBEV_LIBS)
