# SPDX-License-Identifier: MIT
# The guides man 3 points at and the project's texts, installed in
# $(docdir) (share/doc/redlease). The dated results are kept in the
# source only.
dist_doc_DATA = README.md NEWS COPYING CONTRIBUTING.md \
	%reldir%/design.md %reldir%/event-loops.md
EXTRA_DIST += %reldir%/results-2026-11-22.md
uninstall-hook: uninstall-docdir
uninstall-docdir:
	-rmdir '$(DESTDIR)$(docdir)' 2>/dev/null
.PHONY: uninstall-docdir
