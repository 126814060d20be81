# SPDX-License-Identifier: MIT
# Unit tests of the pure core: no Redis, no real time (tests/README.md
# says what each covers). The core's topics run on the fake transport,
# fake loop and virtual clock of tests/support/.
UNIT_CPPFLAGS = $(IN_TREE_CPPFLAGS) -I$(top_srcdir)/src $(SUPPORT_CPPFLAGS) $(HIREDIS_CFLAGS)
UNIT_LDADD = tests/support/libfake.la libredlease_core.la $(HIREDIS_LIBS)
CORE_UNIT_TESTS = %reldir%/test_primitives %reldir%/test_acquire %reldir%/test_renew \
	%reldir%/test_release %reldir%/test_reentrancy %reldir%/test_connection \
	%reldir%/test_close %reldir%/test_alloc %reldir%/test_replicas %reldir%/test_sentinel \
	%reldir%/test_cluster \
	%reldir%/test_quorum %reldir%/test_native %reldir%/test_queue %reldir%/test_semaphore \
	%reldir%/test_identity %reldir%/test_join %reldir%/test_inspect %reldir%/test_scriptless
# test_model: the randomized model check (tests/support/model.c), 5000
# seeds (REDLEASE_MODEL_SEEDS); test_token: where tokens come from;
# test_tables: key scheme, error classes, script digests, SHA-1.
UNIT_TESTS = $(CORE_UNIT_TESTS) %reldir%/test_model %reldir%/test_token %reldir%/test_tables
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

%canon_reldir%_test_primitives_SOURCES = %reldir%/test_primitives.c $(SUPPORT_H)
%canon_reldir%_test_acquire_SOURCES = %reldir%/test_acquire.c $(SUPPORT_H)
%canon_reldir%_test_renew_SOURCES = %reldir%/test_renew.c $(SUPPORT_H)
%canon_reldir%_test_release_SOURCES = %reldir%/test_release.c $(SUPPORT_H)
%canon_reldir%_test_reentrancy_SOURCES = %reldir%/test_reentrancy.c $(SUPPORT_H)
%canon_reldir%_test_connection_SOURCES = %reldir%/test_connection.c $(SUPPORT_H)
%canon_reldir%_test_close_SOURCES = %reldir%/test_close.c $(SUPPORT_H)
%canon_reldir%_test_alloc_SOURCES = %reldir%/test_alloc.c $(SUPPORT_H)
%canon_reldir%_test_replicas_SOURCES = %reldir%/test_replicas.c $(SUPPORT_H)
%canon_reldir%_test_sentinel_SOURCES = %reldir%/test_sentinel.c $(SUPPORT_H)
%canon_reldir%_test_cluster_SOURCES = %reldir%/test_cluster.c %reldir%/test_cluster.h \
	%reldir%/test_cluster_parsers.c %reldir%/test_cluster_routing.c %reldir%/test_cluster_queue.c \
	$(SUPPORT_H)
%canon_reldir%_test_quorum_SOURCES = %reldir%/test_quorum.c %reldir%/test_quorum.h \
	%reldir%/test_quorum_wait.c %reldir%/test_quorum_kinds.c %reldir%/test_quorum_restart.c $(SUPPORT_H)
%canon_reldir%_test_native_SOURCES = %reldir%/test_native.c $(SUPPORT_H)
%canon_reldir%_test_scriptless_SOURCES = %reldir%/test_scriptless.c %reldir%/test_quorum.h $(SUPPORT_H)
%canon_reldir%_test_queue_SOURCES = %reldir%/test_queue.c $(SUPPORT_H)
%canon_reldir%_test_semaphore_SOURCES = %reldir%/test_semaphore.c $(SUPPORT_H)
%canon_reldir%_test_identity_SOURCES = %reldir%/test_identity.c $(SUPPORT_H)
%canon_reldir%_test_join_SOURCES = %reldir%/test_join.c %reldir%/test_quorum.h $(SUPPORT_H)
%canon_reldir%_test_inspect_SOURCES = %reldir%/test_inspect.c %reldir%/test_inspect.h \
	%reldir%/test_inspect_topo.c %reldir%/test_cluster.h %reldir%/test_quorum.h $(SUPPORT_H)
%canon_reldir%_test_model_SOURCES = %reldir%/test_model.c $(MODEL_SOURCES) $(SUPPORT_H)
%canon_reldir%_test_token_SOURCES = %reldir%/test_token.c $(SUPPORT_H)
%canon_reldir%_test_tables_SOURCES = %reldir%/test_tables.c $(SUPPORT_H)
# automake has no per-folder defaults: each program names the shared flags.
%canon_reldir%_test_primitives_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_primitives_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_acquire_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_acquire_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_renew_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_renew_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_release_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_release_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_reentrancy_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_reentrancy_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_connection_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_connection_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_close_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_close_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_alloc_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_alloc_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_replicas_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_replicas_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_sentinel_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_sentinel_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_cluster_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_cluster_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_quorum_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_quorum_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_native_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_native_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_scriptless_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_scriptless_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_queue_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_queue_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_semaphore_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_semaphore_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_identity_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_identity_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_join_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_join_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_inspect_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_inspect_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_model_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_model_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_token_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_token_LDADD = $(UNIT_LDADD)
%canon_reldir%_test_tables_CPPFLAGS = $(UNIT_CPPFLAGS)
%canon_reldir%_test_tables_LDADD = $(UNIT_LDADD)
# The library's getrandom() and open() calls are wrapped (ld --wrap; open64
# where large-file support renames open) so the test can hand out known
# bytes or fail them.
%canon_reldir%_test_token_LDFLAGS = -Wl,--wrap=getrandom -Wl,--wrap=open -Wl,--wrap=open64
