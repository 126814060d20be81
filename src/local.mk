# SPDX-License-Identifier: MIT
# The library. The code lives in a convenience library so the unit tests
# (and the CLI, linked statically) can link the internal, hidden symbols;
# libredlease.la is that library plus hiredis, exporting only what
# include/redlease.h marks REDLEASE_EXTERN.
noinst_LTLIBRARIES += libredlease_core.la
libredlease_core_la_SOURCES = \
	%reldir%/acks.c %reldir%/acks.h \
	%reldir%/alloc.c %reldir%/alloc.h \
	%reldir%/clock.h %reldir%/svc.c %reldir%/svc.h %reldir%/loop.c %reldir%/loop.h \
	%reldir%/status.c \
	%reldir%/heap.c %reldir%/heap.h \
	%reldir%/backoff.c %reldir%/backoff.h \
	%reldir%/token.c %reldir%/token.h \
	%reldir%/identity.c %reldir%/identity.h \
	%reldir%/lease_math.h %reldir%/decimal.h \
	%reldir%/resp.c %reldir%/resp.h \
	%reldir%/scripts.c %reldir%/scripts.h \
	%reldir%/lease_cmd.c %reldir%/lease_cmd.h \
	%reldir%/addr.c %reldir%/addr.h \
	%reldir%/keys.c %reldir%/keys.h \
	%reldir%/slot.c %reldir%/slot.h \
	%reldir%/errors.c %reldir%/errors.h \
	%reldir%/options.c %reldir%/options.h \
	%reldir%/req.h \
	%reldir%/conn.c %reldir%/conn.h \
	%reldir%/node.c %reldir%/node.h %reldir%/nodes.c %reldir%/nodes.h \
	%reldir%/cluster.c %reldir%/cluster.h \
	%reldir%/quorum.c %reldir%/quorum.h \
	%reldir%/sentinel.c %reldir%/sentinel.h \
	%reldir%/waker.c %reldir%/waker.h \
	%reldir%/client.c %reldir%/client.h \
	%reldir%/inspect.c %reldir%/inspect.h %reldir%/inspect_view.c %reldir%/inspect_view.h \
	%reldir%/lock_fsm.c %reldir%/lock.h %reldir%/lock_int.h %reldir%/lock_handle.c \
	%reldir%/lock_send.c %reldir%/lock_join.c %reldir%/lock_reply.c %reldir%/lock_api.c \
	%reldir%/transport.h %reldir%/transport_hiredis.h %reldir%/transport_hiredis.c \
	%reldir%/transport_tls.h %reldir%/transport_tls.c \
	%reldir%/list.h
libredlease_core_la_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/%reldir% $(HIREDIS_CFLAGS) \
	$(TLS_CFLAGS)
libredlease_core_la_CFLAGS = $(AM_CFLAGS) $(VISIBILITY_CFLAGS)
libredlease_core_la_LIBADD = $(SIGMASK_LIBS) $(TLS_LIBS)

lib_LTLIBRARIES += libredlease.la
libredlease_la_SOURCES =
# Never compiled: only tells automake to link libredlease.la with the C linker.
nodist_EXTRA_libredlease_la_SOURCES = dummy.c
libredlease_la_LIBADD = libredlease_core.la $(HIREDIS_LIBS) $(TLS_LIBS)
libredlease_la_LDFLAGS = -no-undefined -version-info $(LT_CURRENT):$(LT_REVISION):$(LT_AGE)

pkgconfig_DATA = redlease.pc
