# SPDX-License-Identifier: MIT
# make bench: redlease next to the raw floor (hiredis and libev by hand) in
# one run against a private redis-server; JSON lines, then a table of
# ratios and goals (bench_main.c lists the scenarios). Built by make check
# so it keeps compiling, never run there: speed is measured, not asserted.
check_PROGRAMS += %reldir%/bench
%canon_reldir%_bench_SOURCES = %reldir%/bench.h %reldir%/bench_main.c %reldir%/bench_util.c \
	%reldir%/bench_raw.c %reldir%/bench_lib.c %reldir%/bench_contended.c
%canon_reldir%_bench_CPPFLAGS = $(IN_TREE_CPPFLAGS) -I$(top_srcdir)/src $(HIREDIS_CFLAGS) $(LIBEV_CFLAGS)
%canon_reldir%_bench_LDADD = libredlease_core.la $(HIREDIS_LIBS) $(LIBEV_LIBS)
EXTRA_DIST += %reldir%/run-bench.sh
bench: %reldir%/bench$(EXEEXT)
	REDLEASE_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/%reldir%/run-bench.sh $(BENCH_ARGS)
.PHONY: bench
