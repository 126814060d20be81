# SPDX-License-Identifier: MIT
# Mutual exclusion under faults. chaos.sh starts a private redis-server and
# N chaos-worker processes contending for one lease and one shared store
# file, injects a seeded random schedule of faults (SIGSTOP past the TTL,
# CLIENT KILL, Redis restarts, DEBUG SLEEP, CLIENT PAUSE, and network
# faults) and checks the invariants with chaos-check.awk. make check runs a
# short version (run-chaos-short.sh, one TAP case per invariant); make
# check-chaos the long one (CHAOS_SEED replays a run; CHAOS_DURATION_S,
# CHAOS_WORKERS); run-chaos-sentinel.sh the short one with failovers, on a
# primary, a replica and a Sentinel (CHAOS_TOPOLOGY=sentinel);
# run-chaos-cluster.sh the short one on a Redis Cluster of three primaries
# and three replicas, with failovers and slot migrations
# (CHAOS_TOPOLOGY=cluster); run-chaos-quorum.sh the short one on a quorum
# of five independent, persistent masters (the Redlock scheme), with
# members frozen, killed and restarted, and paused (CHAOS_TOPOLOGY=quorum);
# run-chaos-queue.sh the short one with the workers waiting in the queue
# (CHAOS_WAIT_MODE=queue) and waiters frozen, killed and cut off while
# queued: 0 overlaps and every live waiter served in time;
# run-chaos-semaphore.sh the short one on a counting semaphore of 3 permits
# (CHAOS_LIMIT=3, some workers holding weight 2): the holders' weights
# never past 3 outside restart windows. make check-chaos runs the long one
# on a semaphore too with CHAOS_LIMIT set; run-chaos-shared.sh the short
# one with shared and exclusive holders (CHAOS_SHARED=1): no one beside an
# exclusive holder outside restart windows; run-chaos-quorum-semaphore.sh
# and run-chaos-quorum-shared.sh the quorum's short run on both kinds.
#
# The network faults (delay, partition, partition then close) come from
# netfault-proxy, a unix-socket proxy between the workers and Redis, which
# works on any kernel; where tc netem works too (root and sch_netem), its
# delay and loss are added on the proxy's TCP hop to Redis. test-netfault.sh
# checks each fault of the proxy against a real redis-server.
check_PROGRAMS += %reldir%/chaos-worker %reldir%/netfault-proxy
%canon_reldir%_chaos_worker_SOURCES = %reldir%/chaos-worker.c %reldir%/store.c %reldir%/store.h
%canon_reldir%_chaos_worker_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(LIBEV_CFLAGS)
%canon_reldir%_chaos_worker_LDADD = libredlease.la $(HIREDIS_LIBS) $(LIBEV_LIBS)
# -no-install: a real executable, so valgrind checks the worker, not bash.
%canon_reldir%_chaos_worker_LDFLAGS = -no-install
%canon_reldir%_netfault_proxy_SOURCES = %reldir%/netfault-proxy.c
CHAOS_TESTS = %reldir%/run-chaos-short.sh %reldir%/run-chaos-sentinel.sh %reldir%/run-chaos-cluster.sh \
	%reldir%/run-chaos-quorum.sh %reldir%/run-chaos-queue.sh %reldir%/run-chaos-semaphore.sh \
	%reldir%/run-chaos-shared.sh %reldir%/run-chaos-quorum-semaphore.sh %reldir%/run-chaos-quorum-shared.sh \
	%reldir%/test-netfault.sh
TESTS += $(CHAOS_TESTS)
EXTRA_DIST += $(CHAOS_TESTS) %reldir%/chaos.sh %reldir%/chaos-check.awk
check-chaos: $(BUILT_SOURCES) %reldir%/chaos-worker$(EXEEXT) %reldir%/netfault-proxy$(EXEEXT)
	REDLEASE_BUILDDIR='$(abs_top_builddir)' REDLEASE_SRCDIR='$(abs_top_srcdir)' \
	REDLEASE_TEST_WRAPPER='$(REDLEASE_TEST_WRAPPER)' \
	CHAOS_DURATION_S="$${CHAOS_DURATION_S:-90}" CHAOS_WORKERS="$${CHAOS_WORKERS:-6}" \
	$(SHELL) $(top_srcdir)/%reldir%/chaos.sh
.PHONY: check-chaos
