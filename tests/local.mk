# SPDX-License-Identifier: MIT
# How make check runs tests (tests/README.md is the home of testing), and
# the checks of the tree as a whole. Each folder under tests/ lists its own
# programs in its local.mk.

# Every test program and script prints TAP: each case is one result in the
# .trs files. .itest files run a program under the Redis harness.
TEST_EXTENSIONS = .itest .sh
ITEST_LOG_COMPILER = $(SHELL) $(top_srcdir)/%reldir%/integration/run-integration.sh
SH_LOG_COMPILER = $(SHELL)
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
ITEST_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_DRIVER = $(LOG_DRIVER)
AM_TESTS_ENVIRONMENT = \
	REDIS_SERVER="$${REDIS_SERVER:-redis-server}"; export REDIS_SERVER; \
	REDIS_CLI="$${REDIS_CLI:-redis-cli}"; export REDIS_CLI; \
	REDLEASE_BUILDDIR='$(abs_top_builddir)'; export REDLEASE_BUILDDIR; \
	REDLEASE_SRCDIR='$(abs_top_srcdir)'; export REDLEASE_SRCDIR; \
	REDLEASE_TEST_WRAPPER='$(REDLEASE_TEST_WRAPPER)'; export REDLEASE_TEST_WRAPPER;

# make check-valgrind: the same suite with every test program under
# valgrind memcheck; any error or leaked block fails the case. Left out:
# the chaos runs, whose workers are CPU-bound under memcheck for minutes,
# and test-cli-ride.sh, whose runs wait through real failovers (a
# Sentinel's, a Cluster's, a quorum's) for as long: make check under the
# sanitizers runs both, and their code is the library's and the CLI's,
# which the other cases run under memcheck (test-cli.sh's waits too).
VALGRIND_CMD = valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99
VALGRIND_LEFT_OUT = $(CHAOS_TESTS) %reldir%/cli/test-cli-ride.sh
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check LOG_COMPILER='$(VALGRIND_CMD)' \
	  REDLEASE_TEST_WRAPPER='$(VALGRIND_CMD)' TESTS='$(filter-out $(VALGRIND_LEFT_OUT),$(TESTS))'
.PHONY: check-valgrind

# make check-no-chaos: the suite but the chaos runs (CI's build against
# hiredis 1.x: the chaos runs' code is the library's, which the plain and
# sanitizer builds run them on).
check-no-chaos:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(filter-out $(CHAOS_TESTS),$(TESTS))'
.PHONY: check-no-chaos

# The tree as a whole:
#  run-examples.sh  every example program, against a private redis-server
#  run-demo.sh      make demo's story, and the booking server's bad clients
#  man-lint.sh      groff renders man/*, and redlease.3 names every export
#  symbols.sh       no global symbol of the static library outside
#                   redlease_ and rdl_
#  doc-examples.sh  the docs' complete programs compile, C99, no warning
#  license.sh       COPYING, redlease.pc, an SPDX line in every source file
#  version.sh       one version in configure, header, man pages, NEWS, and
#                   the ABI baseline's soname
TREE_TESTS = %reldir%/run-examples.sh %reldir%/run-demo.sh %reldir%/man-lint.sh \
	%reldir%/symbols.sh %reldir%/doc-examples.sh %reldir%/license.sh \
	%reldir%/version.sh
TESTS += $(TREE_TESTS)
EXTRA_DIST += $(TREE_TESTS) %reldir%/README.md

# make check-quick: the unit programs, the tree's checks and one case of
# each harness (integration, CLI, chaos): what CI's make distcheck runs
# ('TESTS=$(QUICK_TESTS)'). The tarball's contents are checked apart (CI:
# every tracked file is in it), the whole suite runs in the other builds.
QUICK_TESTS = $(UNIT_TESTS) $(TREE_TESTS) %reldir%/integration/real.itest \
	%reldir%/cli/test-help.sh %reldir%/chaos/test-netfault.sh
check-quick:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(QUICK_TESTS)'
.PHONY: check-quick

