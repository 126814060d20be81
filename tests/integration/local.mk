# SPDX-License-Identifier: MIT
# The library on real loops, against the harness's redis-server or a fake
# one (tests/README.md). Each program runs through its NAME.itest, which
# run-integration.sh starts under the Redis harness.
INTEGRATION_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(SUPPORT_CPPFLAGS) $(HIREDIS_CFLAGS)
INTEGRATION_LDADD = libredlease_core.la $(HIREDIS_LIBS)

# The suite (suite.c, which runs the cases of suite_*.c) once per adapter:
# test_NAME links it with loop_NAME.c. libev and the poll() loop written in
# the test (the "your own loop" proof) always; the others when configure
# found their library.
SUITE_SOURCES = %reldir%/suite.c %reldir%/suite.h %reldir%/suite_leases.c \
	%reldir%/suite_adapter.c %reldir%/testloop.h %reldir%/scale.h tests/support/testutil.h
INTEGRATION_TESTS = %reldir%/libev.itest %reldir%/poll.itest
check_PROGRAMS += %reldir%/test_libev %reldir%/test_poll
if HAVE_LIBEVENT
check_PROGRAMS += %reldir%/test_libevent
INTEGRATION_TESTS += %reldir%/libevent.itest
endif
if HAVE_LIBUV
check_PROGRAMS += %reldir%/test_libuv
INTEGRATION_TESTS += %reldir%/libuv.itest
endif
if HAVE_GLIB
check_PROGRAMS += %reldir%/test_glib
INTEGRATION_TESTS += %reldir%/glib.itest
endif
%canon_reldir%_test_libev_SOURCES = $(SUITE_SOURCES) %reldir%/loop_libev.c
%canon_reldir%_test_libev_CPPFLAGS = $(INTEGRATION_CPPFLAGS) $(LIBEV_CFLAGS)
%canon_reldir%_test_libev_LDADD = $(INTEGRATION_LDADD) $(LIBEV_LIBS)
%canon_reldir%_test_poll_SOURCES = $(SUITE_SOURCES) %reldir%/loop_poll.c
%canon_reldir%_test_poll_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_poll_LDADD = $(INTEGRATION_LDADD)
%canon_reldir%_test_libevent_SOURCES = $(SUITE_SOURCES) %reldir%/loop_libevent.c
%canon_reldir%_test_libevent_CPPFLAGS = $(INTEGRATION_CPPFLAGS) $(LIBEVENT_CFLAGS)
%canon_reldir%_test_libevent_LDADD = $(INTEGRATION_LDADD) $(LIBEVENT_LIBS)
%canon_reldir%_test_libuv_SOURCES = $(SUITE_SOURCES) %reldir%/loop_libuv.c
%canon_reldir%_test_libuv_CPPFLAGS = $(INTEGRATION_CPPFLAGS) $(LIBUV_CFLAGS)
%canon_reldir%_test_libuv_LDADD = $(INTEGRATION_LDADD) $(LIBUV_LIBS)
%canon_reldir%_test_glib_SOURCES = $(SUITE_SOURCES) %reldir%/loop_glib.c
%canon_reldir%_test_glib_CPPFLAGS = $(INTEGRATION_CPPFLAGS) $(GLIB_CFLAGS)
%canon_reldir%_test_glib_LDADD = $(INTEGRATION_LDADD) $(GLIB_LIBS)

# test_hostile: the library on the poll() loop against an in-process fake
# Redis (fake_redis.c, a thread: -pthread) that answers errors, wrong reply
# types, half replies, non-RESP bytes. test_real: what a real Redis
# answers in the states production servers reach (a pause longer than the
# TTL, ACL, OOM, READONLY, LOADING, ...). Both use rig.h.
check_PROGRAMS += %reldir%/test_hostile %reldir%/test_real %reldir%/test_tls \
	%reldir%/test_replication %reldir%/test_sentinel %reldir%/test_cluster \
	%reldir%/test_quorum %reldir%/test_queue %reldir%/test_semaphore %reldir%/test_inspect \
	%reldir%/test_scriptless
INTEGRATION_TESTS += %reldir%/hostile.itest %reldir%/real.itest %reldir%/tls.itest \
	%reldir%/replication.itest %reldir%/sentinel.itest %reldir%/cluster.itest \
	%reldir%/quorum.itest %reldir%/queue.itest %reldir%/semaphore.itest %reldir%/inspect.itest \
	%reldir%/scriptless.itest
RIG_SOURCES = %reldir%/rig.h %reldir%/scale.h %reldir%/loop_poll.c %reldir%/testloop.h \
	tests/support/testutil.h
%canon_reldir%_test_hostile_SOURCES = %reldir%/test_hostile.c \
	%reldir%/fake_redis.c %reldir%/fake_redis.h $(RIG_SOURCES) \
	tests/support/sha1.c tests/support/sha1.h
%canon_reldir%_test_hostile_CPPFLAGS = $(INTEGRATION_CPPFLAGS) -I$(top_srcdir)/src
%canon_reldir%_test_hostile_CFLAGS = $(AM_CFLAGS) -pthread
%canon_reldir%_test_hostile_LDADD = $(INTEGRATION_LDADD) -lpthread
# test_scriptless: a server that refuses scripts (an ACL without
# @scripting; Valkey >= 9.1 with its Lua module unloaded).
%canon_reldir%_test_scriptless_SOURCES = %reldir%/test_scriptless.c %reldir%/servers.h $(RIG_SOURCES)
%canon_reldir%_test_scriptless_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_scriptless_LDADD = $(INTEGRATION_LDADD)
# test_queue: queued waiting (REDLEASE_WAIT_QUEUE) on the harness's server:
# handover in order, a dead head, a lost word, an expired holder.
%canon_reldir%_test_queue_SOURCES = %reldir%/test_queue.c $(RIG_SOURCES)
%canon_reldir%_test_queue_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_queue_LDADD = $(INTEGRATION_LDADD)
# test_semaphore: the counting semaphore on the harness's server, its
# scripts by hand and then through the API.
%canon_reldir%_test_semaphore_SOURCES = %reldir%/test_semaphore.c $(RIG_SOURCES)
%canon_reldir%_test_semaphore_CPPFLAGS = $(INTEGRATION_CPPFLAGS) -I$(top_srcdir)/src
%canon_reldir%_test_semaphore_LDADD = $(INTEGRATION_LDADD)
# test_inspect: redlease_inspect() on the harness's server, every kind.
%canon_reldir%_test_inspect_SOURCES = %reldir%/test_inspect.c $(RIG_SOURCES)
%canon_reldir%_test_inspect_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_inspect_LDADD = $(INTEGRATION_LDADD)
%canon_reldir%_test_real_SOURCES = %reldir%/test_real.c $(RIG_SOURCES)
%canon_reldir%_test_real_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_real_LDADD = $(INTEGRATION_LDADD)
# test_tls: TLS on a redis-server of its own (tests/support/tls-certs.sh
# makes its PKI); in a build without TLS, that asking for it is ENOTSUP.
%canon_reldir%_test_tls_SOURCES = %reldir%/test_tls.c %reldir%/servers.h $(RIG_SOURCES)
%canon_reldir%_test_tls_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_tls_LDADD = $(INTEGRATION_LDADD)
# test_replication: a primary and two replicas of its own (servers.h) for
# each case: WAIT, too few replicas, a failover with and without it.
%canon_reldir%_test_replication_SOURCES = %reldir%/test_replication.c %reldir%/servers.h \
	$(RIG_SOURCES)
%canon_reldir%_test_replication_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_replication_LDADD = $(INTEGRATION_LDADD)
# test_sentinel: a primary, two replicas and three Sentinels of its own:
# finding the primary, a forced failover and a killed primary with leases
# held and an acquire waiting, a key the new primary lacks.
%canon_reldir%_test_sentinel_SOURCES = %reldir%/test_sentinel.c %reldir%/servers.h $(RIG_SOURCES)
%canon_reldir%_test_sentinel_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_sentinel_LDADD = $(INTEGRATION_LDADD)
# test_cluster: three primaries and three replicas of its own: leases
# across slots, a slot migrated (ASK, MOVED), a primary killed.
%canon_reldir%_test_cluster_SOURCES = %reldir%/test_cluster.c %reldir%/servers.h $(RIG_SOURCES)
%canon_reldir%_test_cluster_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_cluster_LDADD = $(INTEGRATION_LDADD)
# test_quorum: five independent masters of its own (servers.h) for a
# quorum (co.quorum.addrs): one token on all, masters killed and paused
# with leases held, clients racing, a split vote.
%canon_reldir%_test_quorum_SOURCES = %reldir%/test_quorum.c %reldir%/servers.h $(RIG_SOURCES)
%canon_reldir%_test_quorum_CPPFLAGS = $(INTEGRATION_CPPFLAGS)
%canon_reldir%_test_quorum_LDADD = $(INTEGRATION_LDADD)

# The suite once more per adapter over TLS (tls-NAME.itest), where the
# library has TLS.
if HAVE_TLS
INTEGRATION_TESTS += %reldir%/tls-libev.itest %reldir%/tls-poll.itest
if HAVE_LIBEVENT
INTEGRATION_TESTS += %reldir%/tls-libevent.itest
endif
if HAVE_LIBUV
INTEGRATION_TESTS += %reldir%/tls-libuv.itest
endif
if HAVE_GLIB
INTEGRATION_TESTS += %reldir%/tls-glib.itest
endif
endif

TESTS += $(INTEGRATION_TESTS)

# make check-integration: the integration suite alone (CI runs it against
# Valkey as well: REDIS_SERVER=valkey-server).
check-integration:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(INTEGRATION_TESTS)'
.PHONY: check-integration
# Every .itest, whichever loops this machine has.
EXTRA_DIST += %reldir%/run-integration.sh \
	%reldir%/libev.itest %reldir%/poll.itest %reldir%/libevent.itest \
	%reldir%/libuv.itest %reldir%/glib.itest %reldir%/hostile.itest %reldir%/real.itest \
	%reldir%/tls.itest %reldir%/replication.itest %reldir%/sentinel.itest %reldir%/cluster.itest \
	%reldir%/quorum.itest %reldir%/queue.itest %reldir%/semaphore.itest %reldir%/inspect.itest \
	%reldir%/scriptless.itest %reldir%/tls-libev.itest %reldir%/tls-poll.itest %reldir%/tls-libevent.itest \
	%reldir%/tls-libuv.itest %reldir%/tls-glib.itest
