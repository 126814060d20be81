# SPDX-License-Identifier: MIT
# The guides man 3 points at and the project's texts, installed in
# $(docdir) (share/doc/redlease).
dist_doc_DATA = README.md NEWS COPYING CONTRIBUTING.md \
	%reldir%/design.md %reldir%/event-loops.md
uninstall-hook: uninstall-docdir
uninstall-docdir:
	-rmdir '$(DESTDIR)$(docdir)' 2>/dev/null
.PHONY: uninstall-docdir
