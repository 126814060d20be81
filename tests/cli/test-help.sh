#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: `redlease --help` (cli/help.c) tells the same as man 1
# (man/redlease.1), and the parser agrees with both. man 1 is the home of
# the CLI's contract; --help is its summary, so this test is what keeps the
# two from drifting apart:
#  - each section (run, status, server options) names the same options in
#    both, with the same short letter and the same "takes a value";
#  - each of them is accepted by the commands its section says, and a run
#    or status option is refused by the other command;
#  - the exit statuses --help lists are the ones man 1's EXIT STATUS lists.
srcdir=${REDLEASE_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
builddir=${REDLEASE_BUILDDIR:-.}
bin=$builddir/cli/redlease
man=$srcdir/man/redlease.1
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin not built"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redlease-help.XXXXXX") || exit 99
trap 'rm -rf -- "$tmp"' EXIT

# One line per option: "section short long value", short "-" when none,
# value 1 if the option takes one. Sorted, so the two lists compare.
"$bin" --help | awk '
    /^run options:/ { s = "run"; next }
    /^status options:/ { s = "status"; next }
    /^server options/ { s = "server"; next }
    /^[^ ]/ { s = "" }
    s != "" && /^ +(-[A-Za-z], )?--[a-z]/ {
        short = "-"; line = $0; sub(/^ +/, "", line)
        if (line ~ /^-[A-Za-z], /) { short = substr(line, 2, 1); line = substr(line, 5) }
        n = split(line, w, " "); long = substr(w[1], 3)
        value = (n > 1 && w[2] ~ /^[A-Z]+$/) ? 1 : 0
        print s, short, long, value
    }' | sort >"$tmp/help"
sed 's/\\-/-/g; s/\\f[BIR]//g' "$man" | awk '
    /^\.SH/ { s = "" }
    /^\.SS "run options"/ { s = "run"; next }
    /^\.SS "status options"/ { s = "status"; next }
    /^\.SS "server options/ { s = "server"; next }
    # an option is the first line of a .TP entry
    s != "" && prev == ".TP" && /^\.BR? -/ {
        line = $0; sub(/^\.BR? /, "", line); gsub(/"/, "", line); gsub(/,/, "", line)
        n = split(line, w, " "); short = "-"; long = ""; value = 0
        for (i = 1; i <= n; i++) {
            if (w[i] ~ /^--[a-z]/) long = substr(w[i], 3)
            else if (w[i] ~ /^-[A-Za-z]$/) short = substr(w[i], 2)
            else if (long != "") value = 1
        }
        if (long != "help") print s, short, long, value
    }
    { prev = $0 }' | sort >"$tmp/man"

echo "1..5"
if [ -s "$tmp/help" ] && diff -u "$tmp/man" "$tmp/help" >"$tmp/diff"; then
    echo "ok 1 - --help and man 1 name the same options ($(wc -l <"$tmp/help") in three sections)"
else
    echo "not ok 1 - --help and man 1 disagree on the options (- man 1, + --help)"
    sed 's/^/#   /' "$tmp/diff"
fi

# Accepted where the section says, refused by the other command. An empty
# RESOURCE makes every accepted command stop at a usage error that is not
# "unknown option"; nothing reaches Redis.
try() { # command long value
    local arg=() rest=()
    [ "$3" = 1 ] && arg=(1)
    [ "$1" = run ] && rest=(-- true)
    "$bin" "$1" "--$2" "${arg[@]}" "" "${rest[@]}" 2>&1 | grep -q "unknown option"
}
bad_accept= bad_refuse=
while read -r section short long value; do
    case $section in
    run) yes=(run) no=(status) ;;
    status) yes=(status) no=(run) ;;
    server) yes=(run status) no=() ;;
    esac
    for cmd in "${yes[@]}"; do try "$cmd" "$long" "$value" && bad_accept+=" $cmd:--$long"; done
    for cmd in "${no[@]}"; do
        # an option both commands have (--quiet) is in both sections
        grep -q "^$cmd . $long " "$tmp/help" && continue
        try "$cmd" "$long" "$value" || bad_refuse+=" $cmd:--$long"
    done
done <"$tmp/help"
if [ -z "$bad_accept" ]; then
    echo "ok 2 - every option --help lists is accepted by its commands"
else
    echo "not ok 2 - refused though listed:$bad_accept"
fi
if [ -z "$bad_refuse" ]; then
    echo "ok 3 - a run option is unknown to status, and a status option to run"
else
    echo "not ok 3 - accepted though listed for the other command only:$bad_refuse"
fi

# Short letters: each one --help gives works like its long name.
bad_short=
while read -r section short long value; do
    [ "$short" = - ] && continue
    cmd=$section; [ "$section" = server ] && cmd=status
    arg=(); [ "$value" = 1 ] && arg=(1)
    rest=(); [ "$cmd" = run ] && rest=(-- true)
    "$bin" "$cmd" "-$short" "${arg[@]}" "" "${rest[@]}" 2>&1 | grep -q "unknown option" &&
        bad_short+=" $cmd:-$short"
done <"$tmp/help"
if [ -z "$bad_short" ]; then
    echo "ok 4 - every short option --help lists is accepted"
else
    echo "not ok 4 - short options refused:$bad_short"
fi

# Exit statuses of run: the numbers after "Exit status of run:" in --help
# against the .TP entries of man 1's EXIT STATUS.
"$bin" --help | awk '/^Exit status of run/ { on = 1 } /^Exit status of status/ { on = 0 } on' |
    grep -oE '(^|[ (])(6[49]|75|12[4-7]|128\+N)\b' | tr -d ' (' | sort -u >"$tmp/help-exit"
sed 's/\\f[BIR]//g' "$man" | awk '/^\.SH "EXIT STATUS"/ { on = 1; next } /^\.SH/ { on = 0 }
    on && prev == ".TP" && /^\.B / { sub(/^\.B /, ""); print } { prev = $0 }' |
    sort -u >"$tmp/man-exit"
if [ -s "$tmp/help-exit" ] && diff -u "$tmp/man-exit" "$tmp/help-exit" >"$tmp/diff"; then
    echo "ok 5 - --help and man 1 list the same exit statuses ($(tr '\n' ' ' <"$tmp/help-exit"))"
else
    echo "not ok 5 - --help and man 1 disagree on exit statuses (- man 1, + --help)"
    sed 's/^/#   /' "$tmp/diff"
fi
