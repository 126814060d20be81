#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the manual pages render without a single warning, and
# redlease.3 names every function include/redlease.h exports, so the page
# cannot silently fall behind the API. One TAP case per check:
#   groff PAGE     groff -man -ww -Tutf8 renders it without a word on
#                  stderr (every man/*.[0-9] page)
#   words PAGE     no words run together in the rendered text (below)
#   mandoc PAGE    mandoc -Tlint -W warning prints nothing (only when
#                  mandoc is installed: it is optional, and not in CI)
#   api redlease.3 every REDLEASE_EXTERN function of redlease.h appears in
#                  the page's source (comments aside)
# groff is required: without it the whole test is skipped, unless CI is set
# (then it fails). Debian has groff in package groff-base.

srcdir=${REDLEASE_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

in_ci() {
    case "${CI:-}" in
        "" | 0 | false | FALSE | False | no) return 1 ;;
        *) return 0 ;;
    esac
}

if ! command -v groff >/dev/null 2>&1; then
    if in_ci; then
        echo "Bail out! groff not found (Debian: apt-get install groff-base)"
        exit 1
    fi
    echo "1..0 # SKIP groff not found (set CI=true to make this a failure)"
    exit 0
fi

shopt -s nullglob
pages=("$srcdir"/man/*.[0-9])
if [ ${#pages[@]} -eq 0 ]; then
    echo "Bail out! no manual page under $srcdir/man"
    exit 1
fi

n=0
# report OK NAME DIAGNOSTICS: one TAP line, diagnostics as comments.
report() {
    n=$((n + 1))
    [ -n "$3" ] && sed 's/^/# /' <<<"$3"
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

# Exported functions: the name before the first "(" of each REDLEASE_EXTERN
# declaration (the macro's own #define does not start the line with it).
exported() {
    sed -n 's/^REDLEASE_EXTERN[^(]*[^A-Za-z0-9_]\(redlease_[A-Za-z0-9_]*\) *(.*/\1/p' \
        "$srcdir/include/redlease.h"
}

# Words run together: an alternating macro (.BR, .IR, .RB...) puts no space
# between its arguments, so a sentence written after its last word renders
# as one word (".BR REPLICATION ); a process" gives "REPLICATION);aprocess").
# Caught in the rendered text as a closing parenthesis (perhaps followed by
# ; , : or .), or a semicolon, directly followed by a letter. The .EX/.EE
# blocks are C, where "(void)arg" is right: they are left out. One line
# per hit, numbered in the rendering without those blocks.
run_together() {
    sed '/^\.EX/,/^\.EE/d' "$1" | LC_ALL=C.UTF-8 groff -man -Tutf8 -P-cbou 2>/dev/null |
        grep -nE '\)[;,:.]?[[:alpha:]]|;[[:alpha:]]'
}

if command -v mandoc >/dev/null 2>&1; then have_mandoc=1; else have_mandoc=0; fi
echo "1..$(((2 + have_mandoc) * ${#pages[@]} + 1))"
[ "$have_mandoc" -eq 1 ] || echo "# mandoc not installed: only groff lints the pages"

for page in "${pages[@]}"; do
    name=$(basename "$page")
    out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww "$page" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 0 ] && [ -z "$out" ]
    report $? "groff $name" "$out"

    out=$(run_together "$page")
    [ -z "$out" ]
    report $? "words $name" "${out:+run together (rendered line: text):
$out}"

    if [ "$have_mandoc" -eq 1 ]; then
        out=$(mandoc -Tlint -W warning "$page" 2>&1)
        rc=$?
        [ "$rc" -eq 0 ] && [ -z "$out" ]
        report $? "mandoc $name" "$out"
    fi
done

funcs=$(exported)
count=$(wc -w <<<"$funcs")
missing=
if [ -f "$srcdir/man/redlease.3" ]; then
    text=$(grep -v '^\.\\"' "$srcdir/man/redlease.3")
    for f in $funcs; do
        grep -qw -- "$f" <<<"$text" || missing+="$f "
    done
else
    missing="(man/redlease.3 itself)"
fi
# No function found at all means the extraction broke: that must fail too.
[ "$count" -gt 0 ] && [ -z "$missing" ]
report $? "api redlease.3 names all $count exported functions" \
    "${missing:+not named in man/redlease.3: $missing}"
exit 0
