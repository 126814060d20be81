# SPDX-License-Identifier: MIT
# libFuzzer targets (fuzz_*.c; each says what it checks) and their seed
# corpora (corpus/<target>/): fuzz_replies (RESP bytes and reply orders),
# fuzz_options (option and name edge values), fuzz_model (test_model's
# model check, the fuzzer choosing every step; its seeds are PRNG seeds of
# test_model recorded).
#  - make check, any compiler: replay.sh runs each target once on every
#    file of its corpus (replay_main.c stands in for libFuzzer).
#  - ./configure CC=clang --enable-fuzzing; make check-fuzz: each target
#    fuzzes for FUZZ_SECONDS (default 60) from its corpus, new inputs kept
#    in fuzz-corpus/<target>/ in the build tree; fails on any crash, leak or
#    timeout (the input is then in fuzz-artifacts/).
FUZZ_TARGETS = fuzz_replies fuzz_options fuzz_model
FUZZ_CPPFLAGS = $(IN_TREE_CPPFLAGS) -I$(top_srcdir)/src $(SUPPORT_CPPFLAGS) $(HIREDIS_CFLAGS) $(TLS_CFLAGS)
FUZZ_REPLIES_SOURCES = %reldir%/fuzz_replies.c %reldir%/fuzz_input.h
FUZZ_OPTIONS_SOURCES = %reldir%/fuzz_options.c %reldir%/fuzz_input.h
FUZZ_MODEL_SOURCES = %reldir%/fuzz_model.c %reldir%/fuzz_input.h $(MODEL_SOURCES)
# The replays link the rig as the unit tests do; the fuzzers compile it
# (and the library) again with the fuzzer's instrumentation.
REPLAY_LDADD = tests/support/libfake.la libredlease_core.la $(HIREDIS_LIBS)
FUZZ_RIG_SOURCES = tests/support/fake.c tests/support/fake.h tests/support/sha1.c \
	tests/support/sha1.h $(libredlease_core_la_SOURCES)

# The replays, in make check.
check_PROGRAMS += %reldir%/replay_replies %reldir%/replay_options %reldir%/replay_model
%canon_reldir%_replay_replies_SOURCES = $(FUZZ_REPLIES_SOURCES) %reldir%/replay_main.c
%canon_reldir%_replay_replies_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_replay_replies_LDADD = $(REPLAY_LDADD)
%canon_reldir%_replay_options_SOURCES = $(FUZZ_OPTIONS_SOURCES) %reldir%/replay_main.c
%canon_reldir%_replay_options_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_replay_options_LDADD = $(REPLAY_LDADD)
%canon_reldir%_replay_model_SOURCES = $(FUZZ_MODEL_SOURCES) %reldir%/replay_main.c
%canon_reldir%_replay_model_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_replay_model_LDADD = $(REPLAY_LDADD)
TESTS += %reldir%/replay.sh
EXTRA_DIST += %reldir%/replay.sh %reldir%/run-fuzz.sh %reldir%/write-seeds.py \
	%reldir%/corpus %reldir%/crashes

# The fuzzers (libredlease_core.la and libfake.la have no coverage
# instrumentation).
if ENABLE_FUZZING
noinst_PROGRAMS += %reldir%/fuzz_replies %reldir%/fuzz_options %reldir%/fuzz_model
endif
%canon_reldir%_fuzz_replies_SOURCES = $(FUZZ_REPLIES_SOURCES) $(FUZZ_RIG_SOURCES)
%canon_reldir%_fuzz_replies_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_fuzz_replies_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_replies_LDFLAGS = $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_replies_LDADD = $(HIREDIS_LIBS) $(SIGMASK_LIBS) $(TLS_LIBS)
%canon_reldir%_fuzz_options_SOURCES = $(FUZZ_OPTIONS_SOURCES) $(FUZZ_RIG_SOURCES)
%canon_reldir%_fuzz_options_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_fuzz_options_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_options_LDFLAGS = $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_options_LDADD = $(HIREDIS_LIBS) $(SIGMASK_LIBS) $(TLS_LIBS)
%canon_reldir%_fuzz_model_SOURCES = $(FUZZ_MODEL_SOURCES) $(FUZZ_RIG_SOURCES)
%canon_reldir%_fuzz_model_CPPFLAGS = $(FUZZ_CPPFLAGS)
%canon_reldir%_fuzz_model_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_model_LDFLAGS = $(FUZZ_CFLAGS)
%canon_reldir%_fuzz_model_LDADD = $(HIREDIS_LIBS) $(SIGMASK_LIBS) $(TLS_LIBS)
FUZZ_SECONDS = 60
if ENABLE_FUZZING
check-fuzz: %reldir%/fuzz_replies$(EXEEXT) %reldir%/fuzz_options$(EXEEXT) \
	%reldir%/fuzz_model$(EXEEXT)
	$(SHELL) $(top_srcdir)/%reldir%/run-fuzz.sh '$(abs_top_builddir)' '$(abs_top_srcdir)' \
	  '$(FUZZ_SECONDS)' $(FUZZ_TARGETS)
else
check-fuzz:
	@echo "check-fuzz: configure with CC=clang --enable-fuzzing first" >&2; exit 1
endif
clean-local: clean-fuzz
clean-fuzz:
	-rm -rf fuzz-corpus fuzz-artifacts
	-rm -f %reldir%/replay_*.out
.PHONY: check-fuzz clean-fuzz
