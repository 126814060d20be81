# SPDX-License-Identifier: MIT
# One small program per adapter (those whose loop configure found), and
# worker, a long job kept by renewal that stops on on_lost. Every one is
# run against Redis by tests/run-examples.sh; the booking demo has its own
# folder (examples/booking/local.mk).
noinst_PROGRAMS += %reldir%/libev-basic %reldir%/worker
if HAVE_LIBEVENT
noinst_PROGRAMS += %reldir%/libevent-basic
endif
if HAVE_LIBUV
noinst_PROGRAMS += %reldir%/libuv-basic
endif
if HAVE_GLIB
noinst_PROGRAMS += %reldir%/glib-basic
endif
EXAMPLE_LIBEV_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(LIBEV_CFLAGS)
EXAMPLE_LIBEV_LDADD = libredlease.la $(HIREDIS_LIBS) $(LIBEV_LIBS)
%canon_reldir%_libev_basic_SOURCES = %reldir%/libev-basic.c %reldir%/example-env.h
%canon_reldir%_libev_basic_CPPFLAGS = $(EXAMPLE_LIBEV_CPPFLAGS)
%canon_reldir%_libev_basic_LDADD = $(EXAMPLE_LIBEV_LDADD)
%canon_reldir%_worker_SOURCES = %reldir%/worker.c %reldir%/example-env.h
%canon_reldir%_worker_CPPFLAGS = $(EXAMPLE_LIBEV_CPPFLAGS)
%canon_reldir%_worker_LDADD = $(EXAMPLE_LIBEV_LDADD)
%canon_reldir%_libevent_basic_SOURCES = %reldir%/libevent-basic.c %reldir%/example-env.h
%canon_reldir%_libevent_basic_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(LIBEVENT_CFLAGS)
%canon_reldir%_libevent_basic_LDADD = libredlease.la $(HIREDIS_LIBS) $(LIBEVENT_LIBS)
%canon_reldir%_libuv_basic_SOURCES = %reldir%/libuv-basic.c %reldir%/example-env.h
%canon_reldir%_libuv_basic_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(LIBUV_CFLAGS)
%canon_reldir%_libuv_basic_LDADD = libredlease.la $(HIREDIS_LIBS) $(LIBUV_LIBS)
%canon_reldir%_glib_basic_SOURCES = %reldir%/glib-basic.c %reldir%/example-env.h
%canon_reldir%_glib_basic_CPPFLAGS = $(IN_TREE_CPPFLAGS) $(HIREDIS_CFLAGS) $(GLIB_CFLAGS)
%canon_reldir%_glib_basic_LDADD = libredlease.la $(HIREDIS_LIBS) $(GLIB_LIBS)
# The first of the README's two commands.
EXTRA_DIST += %reldir%/quickstart.sh

# make installcheck (and make distcheck): each example built against the
# *installed* headers and redlease.pc, as users build (names are
# %reldir%/<name>.c, the loop told by the name): proves every installed
# adapter header compiles as users include it.
INSTALLCHECK_EXAMPLES = libev-basic worker
if HAVE_LIBEVENT
INSTALLCHECK_EXAMPLES += libevent-basic
endif
if HAVE_LIBUV
INSTALLCHECK_EXAMPLES += libuv-basic
endif
if HAVE_GLIB
INSTALLCHECK_EXAMPLES += glib-basic
endif
installcheck-local:
	@if test -n "$(DESTDIR)"; then \
	  echo "installcheck: skipped (DESTDIR is set)"; exit 0; \
	fi; \
	PKG_CONFIG_PATH='$(pkgconfigdir)'$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}; \
	export PKG_CONFIG_PATH; \
	cflags=`$(PKG_CONFIG) --cflags redlease` && \
	libs=`$(PKG_CONFIG) --libs redlease` || exit 1; \
	for e in $(INSTALLCHECK_EXAMPLES); do \
	  case $$e in \
	    libev-* | worker) lc='$(LIBEV_CFLAGS)'; ll='$(LIBEV_LIBS)' ;; \
	    libevent-*) lc='$(LIBEVENT_CFLAGS)'; ll='$(LIBEVENT_LIBS)' ;; \
	    libuv-*) lc='$(LIBUV_CFLAGS)'; ll='$(LIBUV_LIBS)' ;; \
	    glib-*) lc='$(GLIB_CFLAGS)'; ll='$(GLIB_LIBS)' ;; \
	  esac; \
	  echo "installcheck: building %reldir%/$$e.c against the installed redlease"; \
	  $(CC) $(CFLAGS) $$cflags $$lc -o installcheck-$$e$(EXEEXT) \
	    $(srcdir)/%reldir%/$$e.c $(LDFLAGS) $$libs $$ll || exit 1; \
	  rm -f installcheck-$$e$(EXEEXT); \
	done
clean-local: clean-installcheck
clean-installcheck:
	-rm -f installcheck-*$(EXEEXT)
.PHONY: clean-installcheck
