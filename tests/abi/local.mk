# SPDX-License-Identifier: MIT
# The public ABI's baseline (libredlease.abi, abidw's XML) and its check.
# make check-abi: the built libredlease.so against the baseline, any change
# fails (CI runs it on the plain build); make abi-baseline: rewrite the
# baseline after a deliberate change, with the version-info bump and the
# NEWS line in the same commit (CONTRIBUTING.md, "The ABI").
ABI_SCRIPT = $(top_srcdir)/%reldir%/check-abi.sh
ABI_BASELINE = $(top_srcdir)/%reldir%/libredlease.abi
ABI_ARGS = $(top_builddir)/.libs/libredlease.so $(ABI_BASELINE) $(top_srcdir)/include
check-abi: libredlease.la
	$(SHELL) $(ABI_SCRIPT) check $(ABI_ARGS)
abi-baseline: libredlease.la
	$(SHELL) $(ABI_SCRIPT) update $(ABI_ARGS)
.PHONY: check-abi abi-baseline
EXTRA_DIST += %reldir%/check-abi.sh %reldir%/libredlease.abi
