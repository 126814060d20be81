#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) against a private redis-server, as TAP. The
# commands run under the lock check the lock themselves (a mkdir sentinel,
# their environment, their file descriptors); Redis is inspected with
# redis-cli. REDLEASE_TEST_WRAPPER (make check-valgrind) runs redlease
# under valgrind through libtool, so the real binary is checked, not its
# libtool wrapper script; COMMAND itself is not traced.

# The signal cases check what COMMAND's death does to redlease, so they need
# INT, QUIT and HUP at their defaults. A non-interactive shell cannot reset
# a signal it was started with ignored (a background job ignores INT and
# QUIT, nohup HUP), so the script starts again under env --default-signal:
# the verdicts never depend on how the suite was launched.
if [ -z "${REDLEASE_TEST_SIGNALS_DEFAULT:-}" ] && env --default-signal=INT true 2>/dev/null; then
    REDLEASE_TEST_SIGNALS_DEFAULT=1 exec env --default-signal=INT,QUIT,HUP bash "$0" "$@"
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/../support/redis-harness.sh" || exit 99
redis_harness_start_tap

builddir=${REDLEASE_BUILDDIR:-.}
bin=$builddir/cli/redlease
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin not built"
    exit 1
fi
if [ -z "${REDLEASE_TEST_REDIS_CLI:-}" ]; then
    echo "Bail out! redis-cli not found (install redis-tools)"
    exit 1
fi
wrapper=${REDLEASE_TEST_WRAPPER:-}
# RDL_LOG9: the same, with valgrind's log on fd 9 rather than 2, for a run
# with fd 2 closed (valgrind keeps its log fd even closed, and refuses it
# to the program).
if [ -n "$wrapper" ]; then
    RL=("$builddir/libtool" --mode=execute $wrapper "$bin")
    RDL_LOG9=("$builddir/libtool" --mode=execute $wrapper --log-fd=9 "$bin")
    slow=10 # time bounds grow under valgrind
else
    RL=("$bin")
    RDL_LOG9=("$bin")
    slow=1
fi

# Every run finds the harness's redis through the environment, unless a
# case says otherwise on the command line (which wins).
unset REDLEASE_HOST REDLEASE_PORT REDLEASE_PASSWORD REDLEASE_FENCE
export REDLEASE_SOCKET=$REDLEASE_TEST_SOCKET
tmp=$REDLEASE_TEST_DIR/cli
mkdir -p "$tmp" || exit 99

# ------------------------------------------------------------ helpers
n=0
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
    n=$((n + 1))
    echo "not ok $n - $1"
    shift
    local line
    for line in "$@"; do sed 's/^/#   /' <<<"$line"; done
}
# check NAME CONDITION...: CONDITION is a command; on failure the last run
# is shown.
check() {
    local name=$1
    shift
    if "$@"; then
        pass "$name"
    else
        fail "$name" "status=$st" "stdout: $out" "stderr: $err"
    fi
}

rcli() { "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" "$@"; }
now_ms() { date +%s%3N; }

# rl ARG...: runs redlease; sets st, out, err and ms (elapsed). A redlease
# that hangs is killed (status 137) rather than hanging make check.
rl() {
    local t0
    t0=$(now_ms)
    out=$(timeout -s KILL $((30 * slow)) "${RL[@]}" "$@" 2>"$tmp/stderr")
    st=$?
    ms=$(($(now_ms) - t0))
    err=$(<"$tmp/stderr")
}

# wait_until CMD...: until CMD succeeds; up to 10 s (valgrind: 100 s).
wait_until() {
    local i
    for i in $(seq 1 $((100 * slow))); do
        "$@" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# wait_for_file FILE: until FILE has content.
wait_for_file() { wait_until test -s "$1"; }
# wait_for_text FILE TEXT: until FILE contains TEXT.
wait_for_text() { wait_until grep -q -- "$2" "$1"; }

# wait_bounded PID: waits for a background redlease, killing it (137) if it
# is still there after 10 s (valgrind: 100 s); sets st.
wait_bounded() {
    local i
    for i in $(seq 1 $((100 * slow))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1"
    st=$?
}

# pgid_of PID: its process group, from /proc (field 5 of stat).
pgid_of() { sed 's/.*) [A-Za-z] [0-9-]* \([0-9-]*\) .*/\1/' "/proc/$1/stat"; }

# Gone, or a zombie (an orphan's zombie lingers where pid 1 does not reap).
is_dead() {
    kill -0 "$1" 2>/dev/null || return 0
    [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# ------------------------------------------------------------ help, version
rl --help
check "--help prints the synopsis on stdout and exits 0" \
    eval '[ "$st" -eq 0 ] && grep -q "^Usage: redlease run" <<<"$out"'
rl run --help
check "run --help exits 0" eval '[ "$st" -eq 0 ] && grep -q "Exit status" <<<"$out"'
check "--help tells status's 125 and the terminal's exception to signal passing" \
    eval 'grep -q "125 out of memory" <<<"$out" && grep -q "in a terminal.s foreground" <<<"$out"'
version=$(sed -n 's/^#define REDLEASE_VERSION "\(.*\)"/\1/p' "${REDLEASE_SRCDIR:-$here/../..}/include/redlease.h")
rl --version
check "--version prints the library version ($version)" \
    eval '[ "$st" -eq 0 ] && grep -qF "library $version" <<<"$out"'

# ------------------------------------------------------------ usage errors
usage_cases=(
    "no command|"
    "unknown command|frobnicate"
    "missing --|run res touch $tmp/ran"
    "missing COMMAND after --|run res --"
    "missing RESOURCE|run -- touch $tmp/ran"
    "unknown option|run --frob res -- touch $tmp/ran"
    "number with junk|run --ttl 500x res -- touch $tmp/ran"
    "ttl below 10|run --ttl 9 res -- touch $tmp/ran"
    "negative wait|run --wait -1 res -- touch $tmp/ran"
    "option without its value|run res --ttl"
    "password on the command line|run --password secret res -- touch $tmp/ran"
    "password on the command line (--password=)|run --password=secret res -- touch $tmp/ran"
    "--wait with --no-wait|run --wait 10 --no-wait res -- touch $tmp/ran"
    "--socket with --port|run --socket /x --port 1 res -- touch $tmp/ran"
    "status without RESOURCE|status"
    "--cacert without --tls|run --cacert /x res -- touch $tmp/ran"
    "--cert without --key|run --tls --cert /x res -- touch $tmp/ran"
    "status with two RESOURCEs|status a b"
    "--limit 0|run --limit 0 res -- touch $tmp/ran"
    "--limit above REDLEASE_MAX_PERMITS|run --limit 1000000001 res -- touch $tmp/ran"
    "--weight 0|run --limit 2 --weight 0 res -- touch $tmp/ran"
    "--weight without --limit|run --weight 1 res -- touch $tmp/ran"
    "--weight above --limit|run --limit 2 --weight 3 res -- touch $tmp/ran"
    "--weight above what a quorum's server admits|run --limit 3 --weight 3 --quorum 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3 res -- touch $tmp/ran"
    "--limit for status|status --limit 2 res"
    "--shared with --limit|run --shared --limit 2 res -- touch $tmp/ran"
    "--shared with --weight|run --shared --weight 1 res -- touch $tmp/ran"
    "--exclusive with --limit|run --limit 2 --exclusive res -- touch $tmp/ran"
    "--shared with --exclusive|run --shared --exclusive res -- touch $tmp/ran"
    "--shared with a value|run --shared=1 res -- touch $tmp/ran"
    "--shared for status|status --shared res"
)
usage_error() {
    check "usage error: $1 => 64, a message and the hint, nothing run" \
        eval '[ "$st" -eq 64 ] && grep -q "^redlease: " <<<"$err" &&
              grep -qF "Try '"'"'redlease --help'"'"'" <<<"$err" && [ ! -e "$tmp/ran" ]'
}
for c in "${usage_cases[@]}"; do
    IFS='|' read -r name args <<<"$c"
    rm -f "$tmp/ran"
    # shellcheck disable=SC2086 # word splitting of args is intended
    rl $args
    usage_error "$name"
done
rm -f "$tmp/ran"
REDLEASE_PORT=80x rl run --host 127.0.0.1 res -- touch "$tmp/ran"
usage_error "bad REDLEASE_PORT"
rl run --limit 2 --weight 3 res -- true
check "--weight above --limit: the message names both" \
    eval 'grep -q -- "--weight 3 is more than --limit 2" <<<"$err"'
rl run --limit 3 --weight 3 --quorum 127.0.0.1:1,127.0.0.1:2,127.0.0.1:3 res -- true
check "--weight above what a quorum's server admits: the message says what it admits" \
    eval 'grep -q -- "--weight 3 is more than each of the 3 servers of --quorum admits of --limit 3 (2, " <<<"$err"'
rl run --shared --limit 2 res -- true
check "--shared with --limit: the message names both" \
    eval 'grep -q -- "--shared and --limit exclude each other" <<<"$err"'
rl run --password secret res -- true
check "the refused password is not echoed; REDLEASE_PORT is named when bad" \
    eval '! grep -q secret <<<"$err" &&
          REDLEASE_SOCKET= REDLEASE_PORT=80x "${RL[@]}" status x 2>&1 | grep -q REDLEASE_PORT'
REDLEASE_PORT=80x REDLEASE_HOST=no-such-host.invalid rl run envsock -- true
check "REDLEASE_PORT and REDLEASE_HOST are ignored with a socket (REDLEASE_SOCKET): 0" \
    eval '[ "$st" -eq 0 ] && [ -z "$err" ]'

# ------------------------------------------------------------ exit statuses
rl run st0 -- true
check "COMMAND exits 0 => 0, and the key is gone afterwards" \
    eval '[ "$st" -eq 0 ] && [ "$(rcli EXISTS lock:{st0})" = 0 ]'
rl run st3 -- sh -c 'exit 3'
check "COMMAND exits 3 => 3" eval '[ "$st" -eq 3 ]'
rl run stterm -- sh -c 'kill -TERM $$'
check "COMMAND killed by SIGTERM => 143" eval '[ "$st" -eq 143 ]'
rl run stkill -- sh -c 'kill -KILL $$'
check "COMMAND killed by SIGKILL => 137, and the key is gone afterwards" \
    eval '[ "$st" -eq 137 ] && [ "$(rcli EXISTS lock:{stkill})" = 0 ]'
# A shell acts on its child's death by ^C (bash ends a loop), not on an exit
# 130: redlease dies of INT, QUIT, TERM and HUP as COMMAND did. perl's
# system() tells a death ($? & 127) from an exit ($? >> 8).
for sig in INT QUIT TERM HUP USR1; do
    how=$(perl -e 'system(@ARGV); print $? & 127 ? "signal " . ($? & 127) : "exit " . ($? >> 8)' \
        -- "${RL[@]}" run "die$sig" -- sh -c "kill -$sig \$\$" 2>/dev/null)
    num=$(kill -l "$sig")
    if [ "$sig" = USR1 ]; then want="exit $((128 + num))"; else want="signal $num"; fi
    check "COMMAND died of SIG$sig => redlease: $how (want $want)" eval '[ "$how" = "$want" ]'
done
rl run dieint -- sh -c 'kill -INT $$'
check "COMMAND died of SIGINT => \$? is $st, kill -l says $(kill -l "$st")" \
    eval '[ "$st" -eq 130 ] && [ "$(kill -l "$st")" = INT ] && [ "$(rcli EXISTS lock:{dieint})" = 0 ]'
rl run stnf -- redlease-test-no-such-command
check "COMMAND not found => 127 with a message" \
    eval '[ "$st" -eq 127 ] && grep -q "redlease-test-no-such-command" <<<"$err" &&
          [ "$(rcli EXISTS lock:{stnf})" = 0 ]'
printf '#!/bin/sh\nexit 0\n' >"$tmp/not-executable"
chmod 644 "$tmp/not-executable"
rl run stne -- "$tmp/not-executable"
check "COMMAND not executable => 126" eval '[ "$st" -eq 126 ]'

# ------------------------------------------------------------ COMMAND's view
# The token in the environment is the one in Redis while COMMAND runs.
export REDLEASE_FENCE=stale # must not reach a COMMAND run without --fence
rl run env1 -- sh -c 'printf "%s|%s|%s|%s\n" "$REDLEASE_KEY" "$REDLEASE_TOKEN" \
    "${REDLEASE_FENCE-unset}" "$("$0" -s "$1" GET "$REDLEASE_KEY")"' \
    "$REDLEASE_TEST_REDIS_CLI" "$REDLEASE_TEST_SOCKET"
unset REDLEASE_FENCE
IFS='|' read -r key token fence stored <<<"$out"
# the key holds the token, then who holds: "PID AT FENCE HOST LABEL"
check "COMMAND gets REDLEASE_KEY and the REDLEASE_TOKEN stored in Redis (with its holder's record), no REDLEASE_FENCE" \
    eval '[ "$st" -eq 0 ] && [ "$key" = lock:{env1} ] && [ ${#token} -eq 32 ] &&
          [[ "$stored" =~ ^$token\ [0-9]+\ [0-9]+\ 0\ [^\ ]+\ .+$ ]] && [ "$fence" = unset ]'
rl run --fence fence1 -- sh -c 'echo "$REDLEASE_FENCE"'
f1=$out
rl run --fence fence1 -- sh -c 'echo "$REDLEASE_FENCE"'
f2=$out
check "REDLEASE_FENCE is a number that increases across runs ($f1 < $f2)" \
    eval '[[ "$f1" =~ ^[0-9]+$ ]] && [[ "$f2" =~ ^[0-9]+$ ]] && [ "$f1" -lt "$f2" ]'
rl run --prefix job/ pfx -- sh -c 'echo "$REDLEASE_KEY"; "$0" -s "$1" EXISTS "job/{pfx}"' \
    "$REDLEASE_TEST_REDIS_CLI" "$REDLEASE_TEST_SOCKET"
check "--prefix: the key is PREFIX{RESOURCE}" eval '[ "$st" -eq 0 ] && [ "$out" = "job/{pfx}
1" ]'
# No descriptor of redlease's own (the Redis socket, libev's) reaches COMMAND.
# ls sees what it inherited, plus the directory it reads: the same either way.
direct=$(ls /proc/self/fd 2>"$tmp/stderr" | sort | tr '\n' ' ')
rl run fds -- ls /proc/self/fd
out=$(sort <<<"$out" | tr '\n' ' ')
check "COMMAND inherits no descriptor of redlease's own ($out)" \
    eval '[ "$st" -eq 0 ] && [ "$out" = "$direct" ]'

# ------------------------------------------------------------ surroundings
# stderr a pipe whose reader is gone: redlease must live on (SIGPIPE
# ignored, EPIPE ends its messages), or COMMAND dies with it.
rm -f "$tmp/ran"
"${RL[@]}" run -v epipe -- sh -c 'sleep 0.3; touch "$1"' sh "$tmp/ran" 2>&1 | head -n 1 >/dev/null
st=${PIPESTATUS[0]}
check "stderr's reader gone (| head -1): redlease exits 0 ($st), COMMAND finished" \
    eval '[ "$st" -eq 0 ] && [ -e "$tmp/ran" ]'
# COMMAND gets SIGPIPE as redlease got it: default, or ignored.
sigign() { grep '^SigIgn' /proc/self/status; }
if [ -r /proc/self/status ]; then
    for how in default ignored; do
        if [ $how = ignored ]; then trap '' PIPE; fi
        direct=$(sigign)
        rl run "sigpipe-$how" -- grep '^SigIgn' /proc/self/status
        trap - PIPE
        check "COMMAND gets SIGPIPE $how, as redlease found it ($out)" \
            eval '[ "$st" -eq 0 ] && [ "$out" = "$direct" ]'
    done
else
    for how in default ignored; do n=$((n + 1)); echo "ok $n - COMMAND gets SIGPIPE $how # SKIP no /proc"; done
fi
# 0, 1 and 2 closed: the Redis socket must not become stderr.
rm -f "$tmp/ran"
("${RDL_LOG9[@]}" run -v closedfds -- touch "$tmp/ran" 9>&2 <&- >&- 2>&-)
st=$?
check "fds 0, 1, 2 closed at start: => 0 ($st), COMMAND ran" eval '[ "$st" -eq 0 ] && [ -e "$tmp/ran" ]'

# ------------------------------------------------------------ mutual exclusion
# Three runners, three rounds each, one resource; each COMMAND holds a
# mkdir sentinel for 100 ms and notes any overlap.
mkdir -p "$tmp/ov"
crit='mkdir "$1/in" 2>/dev/null || echo OVERLAP >>"$1/log"; sleep 0.1
      echo done >>"$1/log"; rmdir "$1/in" 2>/dev/null; exit 0'
pids=()
for w in 1 2 3; do
    (
        for r in 1 2 3; do
            timeout -s KILL $((30 * slow)) "${RL[@]}" run -q --ttl 2000 shared -- sh -c "$crit" sh "$tmp/ov" 2>>"$tmp/ov/err" ||
                echo "FAILED $?" >>"$tmp/ov/log"
        done
    ) >/dev/null &
    pids+=($!)
done
wait "${pids[@]}"
done_count=$(grep -c '^done$' "$tmp/ov/log")
check "concurrent runs of one resource never overlap (9 runs, $done_count done)" \
    eval '[ "$done_count" -eq 9 ] && ! grep -qE "OVERLAP|FAILED" "$tmp/ov/log"'

# ------------------------------------------------------------ contention
rcli SET lock:{busy} someone-else PX 20000 >/dev/null
rm -f "$tmp/ran"
rl run --no-wait busy -- touch "$tmp/ran"
check "--no-wait on a held lock => 75 in ${ms} ms, with a message, nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -lt $((1000 * slow)) ] && grep -q "held by another" <<<"$err" &&
          [ ! -e "$tmp/ran" ]'
rl run -q -n busy -- touch "$tmp/ran"
check "--quiet: no message for a held lock" eval '[ "$st" -eq 75 ] && [ -z "$err" ]'
# A wait must outlast the first attempt's answer (1.5 s under valgrind on a
# loaded machine): one that ends before Redis first answers is 69.
rl run --wait $((400 * slow)) busy -- touch "$tmp/ran"
check "--wait $((400 * slow)) on a held lock => 75 after ${ms} ms, nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -ge $((400 * slow)) ] && [ "$ms" -lt $((3000 * slow)) ] &&
          [ ! -e "$tmp/ran" ]'
check "the other holder's key is untouched" eval '[ "$(rcli GET lock:{busy})" = someone-else ]'
t_set=$(now_ms) # (before the SET: the key lives 300 ms from it at most)
rcli SET lock:{soon} someone-else PX 300 >/dev/null
rl run --wait 5000 soon -- touch "$tmp/ran"
since_set=$(($(now_ms) - t_set))
check "--wait long enough: runs once the other holder's lease expires (${since_set} ms after the SET)" \
    eval '[ "$st" -eq 0 ] && [ -e "$tmp/ran" ] && [ "$since_set" -ge 300 ]'

# ------------------------------------------------------------ lost lease
rm -f "$tmp/pid"
"${RL[@]}" run --ttl 1500 lost1 -- sh -c 'echo $$ >"$1"; exec sleep 30' sh "$tmp/pid" \
    >/dev/null 2>"$tmp/lost1.err" &
rlpid=$!
wait_for_file "$tmp/pid"
rcli DEL lock:{lost1} >/dev/null
t0=$(now_ms)
wait_bounded "$rlpid"
ms=$(($(now_ms) - t0))
err=$(<"$tmp/lost1.err")
check "key deleted under COMMAND => SIGTERM to COMMAND, 124 in ${ms} ms, reason printed" \
    eval '[ "$st" -eq 124 ] && is_dead "$(cat "$tmp/pid")" && [ "$ms" -lt $((3000 * slow)) ] &&
          grep -q "lost the lease on lock:{lost1} (key gone" <<<"$err"'

rm -f "$tmp/pid"
rl run --max-hold 300 --grace 400 lost2 -- sh -c 'trap "" TERM; echo $$ >"$1"; exec sleep 30' \
    sh "$tmp/pid"
check "--max-hold: COMMAND ignoring SIGTERM gets SIGKILL after --grace, 124 (${ms} ms)" \
    eval '[ "$st" -eq 124 ] && [ "$ms" -ge 700 ] && is_dead "$(cat "$tmp/pid")" &&
          grep -q "maximum hold time" <<<"$err" && grep -q SIGKILL <<<"$err" &&
          [ "$(rcli EXISTS lock:{lost2})" = 0 ]'

# The key taken between two renewals: only the release notices.
rl run -q taken -- sh -c '"$0" -s "$1" DEL lock:{taken} >/dev/null
    "$0" -s "$1" SET lock:{taken} someone-else >/dev/null' \
    "$REDLEASE_TEST_REDIS_CLI" "$REDLEASE_TEST_SOCKET"
check "key taken while COMMAND ran, unnoticed until release => 124, said even with --quiet" \
    eval '[ "$st" -eq 124 ] && grep -q "no longer ours" <<<"$err" &&
          [ "$(rcli GET lock:{taken})" = someone-else ]'
# Redis paused (writes) as COMMAND ends: the release times out.
if redis_harness_version_at_least 6 2; then
    rl run -q --timeout 200 unreleased -- sh -c '"$0" -s "$1" CLIENT PAUSE 2000 WRITE >/dev/null
        exit 3' "$REDLEASE_TEST_REDIS_CLI" "$REDLEASE_TEST_SOCKET"
    rcli CLIENT UNPAUSE >/dev/null
    check "release failed after COMMAND => COMMAND's status 3, said even with --quiet" \
        eval '[ "$st" -eq 3 ] && grep -q "could not release lock:{unreleased}" <<<"$err"'
else
    n=$((n + 1)); echo "ok $n - release failed after COMMAND # SKIP CLIENT PAUSE WRITE needs Redis 6.2"
fi
rcli DEL lock:{unreleased} >/dev/null

rm -f "$tmp/pid"
rl run --max-hold 200 --grace 0 lost3 -- sh -c 'echo $$ >"$1"; exec sleep 30' sh "$tmp/pid"
check "--grace 0: SIGKILL at once, no SIGTERM first, 124 (${ms} ms)" \
    eval '[ "$st" -eq 124 ] && is_dead "$(cat "$tmp/pid")" && grep -q "with SIGKILL" <<<"$err" &&
          ! grep -q SIGTERM <<<"$err" && [ "$ms" -lt $((2000 * slow)) ]'

# ------------------------------------------------------------ signals
rm -f "$tmp/started" "$tmp/got"
"${RL[@]}" run sig1 -- sh -c 'trap "echo USR1 >>\"$1\"" USR1; trap "echo TERM >>\"$1\"; exit 7" TERM
    echo started >"$2"; while :; do sleep 0.05; done' sh "$tmp/got" "$tmp/started" \
    >/dev/null 2>"$tmp/sig1.err" &
rlpid=$!
wait_for_file "$tmp/started" || true
kill -USR1 "$rlpid"
wait_for_text "$tmp/got" USR1 || true
kill -TERM "$rlpid"
wait_bounded "$rlpid"
err=$(<"$tmp/sig1.err")
check "SIGUSR1 and SIGTERM to redlease reach COMMAND; its status 7 stands; key released" \
    eval '[ "$st" -eq 7 ] && [ "$(cat "$tmp/got" | tr "\n" " ")" = "USR1 TERM " ] &&
          [ "$(rcli EXISTS lock:{sig1})" = 0 ]'

rcli SET lock:{sig2} someone-else PX 20000 >/dev/null
rm -f "$tmp/ran"
"${RL[@]}" run -v sig2 -- touch "$tmp/ran" >/dev/null 2>"$tmp/sig2.err" &
rlpid=$!
wait_for_text "$tmp/sig2.err" "held by another holder" || true
kill -WINCH "$rlpid"
wait_for_text "$tmp/sig2.err" WINCH || true
t0=$(now_ms)
kill -TERM "$rlpid"
wait_bounded "$rlpid"
ms=$(($(now_ms) - t0))
check "SIGTERM while waiting for the lock => 143 in ${ms} ms, nothing run, other key kept" \
    eval '[ "$st" -eq 143 ] && [ ! -e "$tmp/ran" ] && [ "$ms" -lt $((1000 * slow)) ] &&
          [ "$(rcli GET lock:{sig2})" = someone-else ]'
err=$(<"$tmp/sig2.err")
check "SIGWINCH while waiting: not passed on, and said so (-v)" \
    eval 'grep -q "SIGWINCH not passed on: COMMAND is not running yet" <<<"$err" &&
          ! grep -q "while releasing" <<<"$err"'

# No terminal (setsid): COMMAND leads its own process group, and every
# signal is passed to that group once, even one sent to redlease's group.
if command -v setsid >/dev/null && [ -r /proc/self/stat ]; then
    rm -f "$tmp/started" "$tmp/got" "$tmp/stop"
    setsid "${RL[@]}" run grp1 -- perl -e '
        my ($got, $started, $stop) = @ARGV;
        $SIG{TERM} = sub { open my $f, ">>", $got; print $f "TERM\n"; close $f };
        open my $s, ">", "$started.tmp"; print $s "$$ " . getpgrp() . "\n"; close $s;
        rename "$started.tmp", $started;
        select undef, undef, undef, 0.05 until -e $stop;
        exit 7' "$tmp/got" "$tmp/started" "$tmp/stop" >/dev/null 2>"$tmp/grp1.err" &
    rlpid=$!
    wait_for_file "$tmp/started" || true
    read -r cpid cpgid <"$tmp/started"
    rlpgid=$(pgid_of "$rlpid")
    kill -TERM -- "-$rlpgid"
    wait_for_text "$tmp/got" TERM || true
    sleep 0.3 # room for a second copy, if one were coming
    touch "$tmp/stop"
    wait_bounded "$rlpid"
    terms=$(grep -c TERM "$tmp/got")
    check "setsid: COMMAND leads its own group ($cpid: $cpgid, redlease's $rlpgid); kill -- -PGID => $terms TERM, status 7" \
        eval '[ "$st" -eq 7 ] && [ "$terms" -eq 1 ] && [ "$cpid" = "$cpgid" ] && [ "$cpgid" != "$rlpgid" ]'

    rm -f "$tmp/pid"
    setsid "${RL[@]}" run --ttl 300 lostgc -- sh -c 'sleep 30 & echo $! >"$1"; wait' sh "$tmp/pid" \
        >/dev/null 2>"$tmp/lostgc.err" &
    rlpid=$!
    wait_for_file "$tmp/pid"
    rcli DEL lock:{lostgc} >/dev/null
    wait_bounded "$rlpid"
    grandchild=$(cat "$tmp/pid")
    wait_until is_dead "$grandchild"
    check "setsid: a lost lease stops COMMAND's whole group, its child too (124)" \
        eval '[ "$st" -eq 124 ] && is_dead "$grandchild"'
    kill -KILL "$grandchild" 2>/dev/null
else
    for t in "kill -- -PGID" "lost lease, child too"; do
        n=$((n + 1)); echo "ok $n - setsid: $t # SKIP no setsid or /proc"
    done
fi

if [ "$(uname -s)" = Linux ]; then
    rm -f "$tmp/pid"
    "${RL[@]}" run orphan -- sh -c 'echo $$ >"$1"; exec sleep 30' sh "$tmp/pid" >/dev/null 2>&1 &
    rlpid=$!
    wait_for_file "$tmp/pid"
    kill -KILL "$rlpid"
    wait "$rlpid" 2>/dev/null
    child=$(cat "$tmp/pid")
    for i in $(seq 1 20); do is_dead "$child" && break; sleep 0.05; done
    check "redlease killed by SIGKILL: COMMAND dies with it (PR_SET_PDEATHSIG)" is_dead "$child"
    rcli DEL lock:{orphan} >/dev/null
else
    n=$((n + 1)); echo "ok $n - COMMAND dies with redlease # SKIP Linux only"
fi

# ------------------------------------------------------------ status
"${RL[@]}" run stat1 -- sh -c 'echo started >"$1"; exec sleep 30' sh "$tmp/stat-started" >/dev/null 2>&1 &
rlpid=$!
wait_for_file "$tmp/stat-started" || touch "$tmp/stat-started"
rl status stat1
token=$(rcli GET lock:{stat1})
token=${token%% *} # the token, then its holder's record
check "status of a held resource: 0, \"held, N ms left; by LABEL (pid P on HOST, for N ms)\", no token" \
    eval '[ "$st" -eq 0 ] &&
          [[ "$out" =~ ^lock:\{stat1\}:\ held,\ [0-9]+\ ms\ left\;\ by\ .+\ \(pid\ [0-9]+\ on\ [^\ ]+,\ for\ [0-9]+\ ms\)$ ]] &&
          [ -n "$token" ] && ! grep -qF "$token" <<<"$out"'
rl status --show-token stat1
check "status --show-token prints the token" eval '[ "$st" -eq 0 ] && grep -qF "token $token" <<<"$out"'
kill -TERM "$rlpid"
wait_bounded "$rlpid"
rl status stat1
check "status of a free resource: 1, \"free\"" eval '[ "$st" -eq 1 ] && [ "$out" = "lock:{stat1}: free" ]'
rl status -q stat1
check "status --quiet prints nothing" eval '[ "$st" -eq 1 ] && [ -z "$out$err" ]'
rl status fence1
check "status shows the fence counter" eval '[ "$st" -eq 1 ] && grep -q "fence counter $f2" <<<"$out"'

# Who holds: --label, or COMMAND's name; the pid is redlease's, the fence
# the one minted for it. Two holders with one label, host and pid (a nested
# run of the same resource joins; two runs of a semaphore are two) are two.
rl run --label 'nightly backup' --fence lab1 -- "${RL[@]}" status lab1
check "run --label: status names it, with redlease's pid, this host and the holder's fence" \
    eval '[ "$st" -eq 0 ] &&
          [[ "$out" =~ \;\ by\ nightly\ backup\ \(pid\ [0-9]+\ on\ [^\ ]+,\ for\ [0-9]+\ ms,\ fence\ ([0-9]+)\)$ ]] &&
          grep -q "fence counter ${BASH_REMATCH[1]};" <<<"$out"'
rl run lab2 -- sh -c '"$@"' sh "${RL[@]}" status lab2
check "run without --label: COMMAND's name (sh)" eval '[ "$st" -eq 0 ] && grep -q "; by sh (pid [0-9]* on " <<<"$out"'
# Who waits, and --json: a holder labelled with a quote and a backslash, an
# exclusive waiter and a shared one queued behind it, in that order.
rm -f "$tmp/qj-started" "$tmp/qj-go"
"${RL[@]}" run --label 'a"b\c' --fence qjson -- sh -c 'echo started >"$1"; while [ ! -e "$2" ]; do sleep 0.05; done' \
    sh "$tmp/qj-started" "$tmp/qj-go" >/dev/null 2>&1 &
qj_holder=$!
wait_for_file "$tmp/qj-started" || true
"${RL[@]}" run --label first --wait $((30000 * slow)) qjson -- true >/dev/null 2>&1 &
qj_w1=$!
wait_until eval '[ "$(rcli ZCARD lock:{qjson}:queue)" -ge 1 ]' || true
"${RL[@]}" run --label second --shared --wait $((30000 * slow)) qjson -- true >/dev/null 2>&1 &
qj_w2=$!
wait_until eval '[ "$(rcli ZCARD lock:{qjson}:queue)" -ge 2 ]' || true
rl status qjson
check "status names the waiters in queue order: exclusive 'first', then shared 'second'" \
    eval '[ "$st" -eq 0 ] && [ "$(wc -l <<<"$out")" -eq 3 ] &&
          [[ "$(sed -n 2p <<<"$out")" =~ ^lock:\{qjson\}:\ waiter:\ exclusive,\ waiting\ [0-9]+\ ms\;\ by\ first\ \(pid\ [0-9]+\ on\ [^\ ]+\)$ ]] &&
          [[ "$(sed -n 3p <<<"$out")" =~ ^lock:\{qjson\}:\ waiter:\ shared,\ waiting\ [0-9]+\ ms\;\ by\ second\  ]]'
rl status --json qjson
check "status --json: one line, held, the mutex's holder with its label escaped and its fence, two waiters" \
    eval '[ "$st" -eq 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
          grep -q "^{\"resource\":\"qjson\",\"key\":\"lock:{qjson}\",\"held\":true,\"kind\":\"mutex\",\"fence_counter\":\"[0-9]*\"," <<<"$out" &&
          grep -q "\"holders\":\[{\"label\":\"a\\\\\"b\\\\\\\\c\",\"host\":\"[^\"]*\",\"pid\":[0-9]*,\"acquired_at_ms\":[0-9]*,\"held_ms\":[0-9]*,\"ttl_ms\":[0-9]*,\"fence\":\"[0-9]*\",\"permits\":1,\"servers\":1}\]" <<<"$out" &&
          grep -q "\"waiters\":\[{\"label\":\"first\",.*\"wants\":\"exclusive\",\"servers\":1},{\"label\":\"second\",.*\"wants\":\"shared\",\"servers\":1}\]}$" <<<"$out" &&
          ! grep -q token <<<"$out"'
rl status --json --show-token qjson
check "status --json --show-token: each holder's and waiter's token" \
    eval '[ "$st" -eq 0 ] && [ "$(grep -o "\"token\":\"[0-9a-f]\{32\}\"" <<<"$out" | wc -l)" -eq 3 ]'
touch "$tmp/qj-go"
wait "$qj_holder" "$qj_w1" "$qj_w2" 2>/dev/null
rl status --json qjson
check "status --json of a free resource: held false, kind free, no holder, no waiter (1)" \
    eval '[ "$st" -eq 1 ] && grep -q "\"held\":false,\"kind\":\"free\",\"fence_counter\":\"[0-9]*\",.*\"holders\":\[\],\"waiters\":\[\]}$" <<<"$out"'
rcli RPUSH 'lock:{wt-list}' x >/dev/null
rl status wt-list
check "status of a lock key holding a list: no crash, no record read from it (status $st)" \
    eval '[ "$st" -lt 128 ] && ! grep -q "; by" <<<"$out"'
rcli DEL 'lock:{wt-list}' >/dev/null
rl run --label '' lab3 -- true
check "--label '' => 64" eval '[ "$st" -eq 64 ] && grep -q -- "--label" <<<"$err"'
rl run --label "$(printf '%065d' 0)" lab3 -- true
check "--label of 65 bytes => 64" eval '[ "$st" -eq 64 ]'
rl run --label "$(printf 'evil\033]0;x\007')" lab4 -- "${RL[@]}" status lab4
check "a label's control characters are shown as ?" \
    eval '[ "$st" -eq 0 ] && grep -q "; by evil?\]0;x? (pid" <<<"$out" && ! grep -q $'"'"'\033'"'"' <<<"$out"'

# A holder of 0.1.0 (key prefix + name, no braces) still counts while both
# versions run: status reads that key too, when it holds a token.
rcli SET lock:old1 0123456789abcdef0123456789abcdef PX 20000 >/dev/null
rl status old1
check "status: a 0.1.0 holder's key => 0, one line naming it as such (no 'free' before it)" \
    eval '[ "$st" -eq 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
          grep -q "^lock:old1: held, [0-9]* ms left (the key of redlease 0.1.0" <<<"$out"'
rcli SET lock:old2 not-a-token PX 20000 >/dev/null
rl status old2
check "status: a key prefix+name without a token is not a lease => 1" \
    eval '[ "$st" -eq 1 ] && [ "$out" = "lock:{old2}: free" ]'
rcli DEL lock:old1 lock:old2 >/dev/null

# Keys of one resource never reach another's (man 3 redlease, KEYS): a
# fenced run of "kc" leaves its counter, which is not the lock of "kc:fence",
# and expires.
rl run --fence kc -- true
rl status kc:fence
check "a fenced run of kc leaves kc:fence free (status 1: '$out')" \
    eval '[ "$st" -eq 1 ] && [ "$out" = "lock:{kc:fence}: free" ]'
pttl=$(rcli PTTL "lock:{kc}:fence")
check "the fence counter of kc expires (PTTL $pttl)" eval '[ "$pttl" -gt 0 ]'
rl run --no-wait kc:fence -- true
check "kc:fence can be taken after a fenced run of kc" eval '[ "$st" -eq 0 ]'
rl run --prefix 'a{b' x -- true
check "--prefix with a brace => 64" eval '[ "$st" -eq 64 ] && grep -q "prefix" <<<"$err"'
# A server that accepts and does not answer (paused): status says so, and
# nothing at all with --quiet.
rcli CLIENT PAUSE $((3000 * slow)) ALL >/dev/null
rl status --timeout 300 stat1
check "status, no answer => 69 and 'no reply within 300 ms'" \
    eval '[ "$st" -eq 69 ] && grep -q "no reply within 300 ms" <<<"$err"'
rl status -q --timeout 300 stat1
check "status --quiet, no answer => 69 and nothing printed" eval '[ "$st" -eq 69 ] && [ -z "$out$err" ]'
rcli CLIENT UNPAUSE >/dev/null

# ------------------------------------------------------------ semaphore
# Holders that stay: hold NAME ARG... starts one in the background (its
# pid in holder_pid[NAME]) whose COMMAND writes "TOKEN LIMIT WEIGHT
# SHARED" to $tmp/sem-NAME, then waits for $tmp/sem-NAME.go.
declare -A holder_pid
hold() {
    local name=$1
    shift
    rm -f "$tmp/sem-$name" "$tmp/sem-$name.go"
    timeout -s KILL $((60 * slow)) "${RL[@]}" run "$@" -- sh -c '
        echo "$REDLEASE_TOKEN ${REDLEASE_LIMIT-unset} ${REDLEASE_WEIGHT-unset} ${REDLEASE_SHARED-unset}" >"$1.tmp"
        mv "$1.tmp" "$1"; while [ ! -e "$1.go" ]; do sleep 0.05; done' sh "$tmp/sem-$name" \
        >/dev/null 2>"$tmp/sem-$name.err" &
    holder_pid[$name]=$!
}
# unhold NAME: lets it finish; sets st to its exit status
unhold() { touch "$tmp/sem-$1.go"; wait_bounded "${holder_pid[$1]}"; }

hold a --limit 2 sem1
hold b --limit 2 sem1
wait_for_file "$tmp/sem-a" && wait_for_file "$tmp/sem-b"
read -r tok_a limit_a weight_a _ <"$tmp/sem-a"
read -r tok_b _ _ <"$tmp/sem-b"
check "two --limit 2 holders at once; COMMAND gets REDLEASE_LIMIT 2 and REDLEASE_WEIGHT 1" \
    eval '[ "$limit_a" = 2 ] && [ "$weight_a" = 1 ] && [ ${#tok_a} -eq 32 ] && [ ${#tok_b} -eq 32 ] &&
          [ "$tok_a" != "$tok_b" ] && [ "$(rcli ZSCORE lock:{sem1}:holders "$tok_a")" -gt 0 ] &&
          [ "$(rcli GET lock:{sem1})" = "semaphore 2" ]'
rm -f "$tmp/ran"
rl run --limit 2 --no-wait sem1 -- touch "$tmp/ran"
check "a third --limit 2 --no-wait => 75 in ${ms} ms, 'no permit free', nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -lt $((1000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{sem1} has no permit free (a semaphore of 2)" <<<"$err"'
rl run --limit 2 --wait $((300 * slow)) sem1 -- touch "$tmp/ran"
check "a third --limit 2 --wait $((300 * slow)) => 75 after ${ms} ms, nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -ge $((300 * slow)) ] && [ ! -e "$tmp/ran" ]'

rl status sem1
check "status of a full semaphore: 0, '2 of 2 permits held', a line per holder with its ms left" \
    eval '[ "$st" -eq 0 ] && [ "$(sed -n 1p <<<"$out")" = "lock:{sem1}: semaphore: 2 of 2 permits held" ] &&
          [ "$(grep -cE "^lock:\{sem1\}: holder: 1 permit, [0-9]+ ms left; by .+ \(pid [0-9]+ on [^ ]+, for [0-9]+ ms\)$" <<<"$out")" -eq 2 ] &&
          [ "$(wc -l <<<"$out")" -eq 3 ] && ! grep -qF "$tok_a" <<<"$out"'
left=$(sed -n 's/.*holder: 1 permit, \([0-9]*\) ms left.*/\1/p' <<<"$out" | head -n 1)
check "each holder's time left is within its TTL ($left of 30000 ms)" \
    eval '[ -n "$left" ] && [ "$left" -gt 0 ] && [ "$left" -le 30000 ]'
rl status --show-token sem1
check "status --show-token: each holder's token" \
    eval '[ "$st" -eq 0 ] && grep -qF "token $tok_a" <<<"$out" && grep -qF "token $tok_b" <<<"$out"'

# Another kind: refused at once whatever the wait, naming what is there;
# the holders are untouched.
rl run --wait 5000 sem1 -- touch "$tmp/ran"
check "a mutex run on a semaphore (--wait 5000) => 69 in ${ms} ms, 'KIND a semaphore of 2 permits'" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -lt $((2000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{sem1}: not a mutex: KIND a semaphore of 2 permits" <<<"$err"'
rl run --limit 3 sem1 -- touch "$tmp/ran"
check "a semaphore of another limit (waiting for ever) => 69 in ${ms} ms, naming the limit there" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -lt $((2000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{sem1}: not a semaphore of 3 permits: KIND a semaphore of 2 permits" <<<"$err"'
rl run --no-wait sem1 -- touch "$tmp/ran"
check "a mutex's single attempt (SET NX) cannot tell: 75, as man 1 says" \
    eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ]'
check "... and both holders are still there" \
    eval '[ "$(rcli ZCARD lock:{sem1}:holders)" -eq 2 ] && [ "$(rcli GET lock:{sem1})" = "semaphore 2" ]'

# A waiter polls, and gets in once a permit frees.
"${RL[@]}" run -v --limit 2 --wait $((20000 * slow)) sem1 -- touch "$tmp/ran" \
    >/dev/null 2>"$tmp/sem-waiter.err" &
waiter=$!
wait_for_text "$tmp/sem-waiter.err" "no permit free" || true
unhold a
st_a=$st
wait_bounded "$waiter"
check "a --limit 2 waiter runs once a holder leaves (the holder: $st_a, the waiter: $st)" \
    eval '[ "$st_a" -eq 0 ] && [ "$st" -eq 0 ] && [ -e "$tmp/ran" ]'
unhold b
st_b=$st
rl status sem1
check "status once the last holder left ($st_b): 1, 'free', no key of the semaphore left" \
    eval '[ "$st_b" -eq 0 ] && [ "$st" -eq 1 ] && [ "$out" = "lock:{sem1}: free" ] &&
          [ "$(rcli EXISTS lock:{sem1} lock:{sem1}:holders lock:{sem1}:weights)" = 0 ]'

# --weight 2 of 2 leaves no room for anyone.
hold w --limit 2 --weight 2 --fence sem2
wait_for_file "$tmp/sem-w"
read -r _ _ weight_w _ <"$tmp/sem-w"
rm -f "$tmp/ran"
rl run --limit 2 --no-wait sem2 -- touch "$tmp/ran"
check "--weight 2 --limit 2 holds both permits: another holder => 75 (REDLEASE_WEIGHT $weight_w)" \
    eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ] && [ "$weight_w" = 2 ]'
rl run --limit 2 --weight 2 --no-wait sem2 -- touch "$tmp/ran"
check "... the message says how many permits it wanted" \
    eval '[ "$st" -eq 75 ] && grep -q "has fewer than 2 permits free (a semaphore of 2)" <<<"$err"'
rl status sem2
check "status: '2 of 2 permits held', fence counter, one holder of 2 permits" \
    eval '[ "$st" -eq 0 ] && grep -qE "^lock:\{sem2\}: semaphore: 2 of 2 permits held, fence counter [0-9]+$" <<<"$out" &&
          grep -qE "^lock:\{sem2\}: holder: 2 permits, [0-9]+ ms left; by .+\)$" <<<"$out" && [ "$(wc -l <<<"$out")" -eq 2 ]'
unhold w

# past_deadline RES KIND DEAD_WEIGHT HOLDER HEAD HEAD_NONE: a holder past
# its deadline that no script has dropped yet (of DEAD_WEIGHT), beside a
# live one: the dead one is not counted (HEAD), not listed (the live one's
# line is HOLDER's); alone, it leaves HEAD_NONE and status 1. Made by hand
# with the lock key KIND, the deadlines from the server's clock.
dead=0123456789abcdef0123456789abcdef live=fedcba9876543210fedcba9876543210
past_deadline() {
    local res=$1 kind=$2 dead_weight=$3 holder=$4 head=$5 head_none=$6 server_ms left
    server_ms=$(rcli TIME | { read -r s; read -r us; echo $((s * 1000 + us / 1000)); })
    rcli SET "lock:{$res}" "$kind" PX 60000 >/dev/null
    rcli ZADD "lock:{$res}:holders" $((server_ms - 1000)) "$dead" $((server_ms + 50000)) "$live" >/dev/null
    rcli HSET "lock:{$res}:weights" "$dead" "$dead_weight" "$live" 1 used $((dead_weight + 1)) >/dev/null
    rl status --show-token "$res"
    left=$(sed -n "s/.*$holder, \([0-9]*\) ms left.*/\1/p" <<<"$out")
    check "status ($kind): a holder past its deadline is not counted ('$head'), the live one has ${left} ms of 50000" \
        eval '[ "$st" -eq 0 ] && [ "$(sed -n 1p <<<"$out")" = "lock:{$res}: $head" ] &&
              ! grep -q "$dead" <<<"$out" && grep -q "token $live" <<<"$out" &&
              [ "$left" -gt $((50000 - 10000 * slow)) ] && [ "$left" -le 50000 ]'
    rcli ZREM "lock:{$res}:holders" "$live" >/dev/null
    rl status "$res"
    check "status ($kind): only holders past their deadline => 1, '$head_none', no holder line" \
        eval '[ "$st" -eq 1 ] && [ "$out" = "lock:{$res}: $head_none" ]'
    rcli DEL "lock:{$res}" "lock:{$res}:holders" "lock:{$res}:weights" >/dev/null
}
past_deadline sem3 "semaphore 3" 2 "holder: 1 permit" "semaphore: 1 of 3 permits held" \
    "semaphore: 0 of 3 permits held"

# A semaphore on a mutex's resource; a stale REDLEASE_LIMIT and
# REDLEASE_WEIGHT never reach a mutex's COMMAND.
REDLEASE_LIMIT=stale REDLEASE_WEIGHT=stale hold m sem4
wait_for_file "$tmp/sem-m"
read -r _ limit_m weight_m _ <"$tmp/sem-m"
rl run --limit 2 --no-wait sem4 -- touch "$tmp/ran"
check "a semaphore on a mutex's resource, even --no-wait => 69 'KIND a mutex', nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{sem4}: not a semaphore of 2 permits: KIND a mutex" <<<"$err"'
unhold m
check "a mutex's COMMAND gets no REDLEASE_LIMIT or REDLEASE_WEIGHT ($limit_m $weight_m)" \
    eval '[ "$st" -eq 0 ] && [ "$limit_m" = unset ] && [ "$weight_m" = unset ]'

# ------------------------------------------------------------ shared
# Two --shared holders of shr1 at once: each COMMAND has written its file
# and waits for its .go, so both run at the same time.
hold s1 --shared shr1
hold s2 --shared --fence shr1
wait_for_file "$tmp/sem-s1" && wait_for_file "$tmp/sem-s2"
read -r tok_s1 limit_s1 _ shared_s1 <"$tmp/sem-s1"
read -r tok_s2 _ _ shared_s2 <"$tmp/sem-s2"
check "two --shared runs at once, both COMMANDs running; REDLEASE_SHARED=1, no REDLEASE_LIMIT" \
    eval '[ "$shared_s1" = 1 ] && [ "$shared_s2" = 1 ] && [ "$limit_s1" = unset ] &&
          [ ${#tok_s1} -eq 32 ] && [ ${#tok_s2} -eq 32 ] && [ "$tok_s1" != "$tok_s2" ] &&
          kill -0 "${holder_pid[s1]}" && kill -0 "${holder_pid[s2]}" &&
          [ ! -e "$tmp/sem-s1.go" ] && [ ! -e "$tmp/sem-s2.go" ] &&
          [ "$(rcli GET lock:{shr1})" = shared ] && [ "$(rcli ZCARD lock:{shr1}:holders)" -eq 2 ]'
rl status shr1
check "status of shared holders: 0, 'shared: 2 holders', fence counter, a line per holder" \
    eval '[ "$st" -eq 0 ] &&
          [[ "$(sed -n 1p <<<"$out")" =~ ^lock:\{shr1\}:\ shared:\ 2\ holders,\ fence\ counter\ [0-9]+$ ]] &&
          [ "$(grep -cE "^lock:\{shr1\}: holder: shared, [0-9]+ ms left; by .+\)$" <<<"$out")" -eq 2 ] &&
          [ "$(wc -l <<<"$out")" -eq 3 ] && ! grep -qF "$tok_s1" <<<"$out"'
left1=$(sed -n 's/.*holder: shared, \([0-9]*\) ms left.*/\1/p' <<<"$out" | sed -n 1p)
left2=$(sed -n 's/.*holder: shared, \([0-9]*\) ms left.*/\1/p' <<<"$out" | sed -n 2p)
check "each shared holder's time left is within its TTL, soonest first ($left1, $left2 of 30000 ms)" \
    eval '[ -n "$left1" ] && [ -n "$left2" ] && [ "$left1" -gt 0 ] && [ "$left1" -le "$left2" ] &&
          [ "$left2" -le 30000 ]'
rl status --show-token shr1
check "status --show-token: each shared holder's token" \
    eval '[ "$st" -eq 0 ] && grep -qF "holder: shared, " <<<"$out" &&
          grep -qF "token $tok_s1" <<<"$out" && grep -qF "token $tok_s2" <<<"$out"'
rm -f "$tmp/ran"
rl run --no-wait shr1 -- touch "$tmp/ran"
check "an exclusive --no-wait beside shared holders => 75 in ${ms} ms, nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -lt $((1000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{shr1} is held by another holder" <<<"$err"'
st_default=$st err_default=$err
rl run --exclusive --no-wait shr1 -- touch "$tmp/ran"
check "--exclusive written out does what the default does (75, the same message)" \
    eval '[ "$st" -eq "$st_default" ] && [ "$err" = "$err_default" ] && [ ! -e "$tmp/ran" ]'
rl run --exclusive --wait $((300 * slow)) shr1 -- touch "$tmp/ran"
check "an exclusive --wait $((300 * slow)) beside shared holders => 75 after ${ms} ms, nothing run" \
    eval '[ "$st" -eq 75 ] && [ "$ms" -ge $((300 * slow)) ] && [ ! -e "$tmp/ran" ]'
rl run --shared --no-wait shr1 -- touch "$tmp/ran"
check "... it left the queue: a third --shared run enters at once (0)" \
    eval '[ "$st" -eq 0 ] && [ -e "$tmp/ran" ]'
rm -f "$tmp/ran"
rl run --limit 2 shr1 -- touch "$tmp/ran"
check "a semaphore on shared holders (waiting for ever) => 69 in ${ms} ms, 'KIND shared and exclusive holders'" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -lt $((2000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{shr1}: not a semaphore of 2 permits: KIND shared and exclusive holders" <<<"$err" &&
          [ "$(rcli ZCARD lock:{shr1}:holders)" -eq 2 ] && [ "$(rcli GET lock:{shr1})" = shared ]'

# An exclusive run waits in the queue for the shared holders to leave, and
# a --shared run that comes meanwhile is kept out: it is busy.
rm -f "$tmp/excl"
"${RL[@]}" run -v --wait $((20000 * slow)) shr1 -- sh -c '
    [ -e "$1.go" ] && [ -e "$2.go" ] && echo after-shared >"$3"' sh "$tmp/sem-s1" "$tmp/sem-s2" "$tmp/excl" \
    >/dev/null 2>"$tmp/shr-excl.err" &
excl=$!
wait_until eval '[ "$(rcli ZCARD lock:{shr1}:queue)" -ge 1 ]' || true
rl run --shared --no-wait shr1 -- touch "$tmp/ran"
check "a --shared run behind a queued exclusive one => 75, saying so, nothing run" \
    eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{shr1} is held by an exclusive holder, or an exclusive waiter is queued ahead" <<<"$err"'
unhold s1
st_s1=$st
unhold s2
st_s2=$st
wait_bounded "$excl"
check "the queued exclusive run runs once both shared holders left ($st_s1 $st_s2 => $st)" \
    eval '[ "$st_s1" -eq 0 ] && [ "$st_s2" -eq 0 ] && [ "$st" -eq 0 ] &&
          [ "$(cat "$tmp/excl" 2>/dev/null)" = after-shared ]'
rl status shr1
check "status once all have left: 1, free, no key of the shared holders left" \
    eval '[ "$st" -eq 1 ] && [[ "$out" =~ ^lock:\{shr1\}:\ free,\ fence\ counter\ [0-9]+$ ]] &&
          [ "$(rcli EXISTS lock:{shr1} lock:{shr1}:holders lock:{shr1}:weights)" = 0 ]'

# A --shared run waits (polling) for an exclusive holder, and runs once it
# left; REDLEASE_SHARED inherited never reaches an exclusive COMMAND.
REDLEASE_SHARED=stale hold x --exclusive shr2
wait_for_file "$tmp/sem-x"
read -r tok_x _ _ shared_x <"$tmp/sem-x"
rm -f "$tmp/ran"
"${RL[@]}" run -v --shared --wait $((20000 * slow)) shr2 -- sh -c '
    if [ -e "$1.go" ]; then "$2" -s "$3" GET "$REDLEASE_KEY"; else echo early; fi >"$4"' sh "$tmp/sem-x" \
    "$REDLEASE_TEST_REDIS_CLI" "$REDLEASE_TEST_SOCKET" "$tmp/ran" >/dev/null 2>"$tmp/shr-wait.err" &
waiter=$!
wait_for_text "$tmp/shr-wait.err" "held by an exclusive holder" || true
unhold x
st_x=$st
wait_bounded "$waiter"
check "a --shared run waits for an exclusive holder (its key: a token), then runs as shared ($st_x => $st)" \
    eval '[ "$st_x" -eq 0 ] && [ "$st" -eq 0 ] &&
          [ "$(cat "$tmp/ran")" = shared ] && [ ${#tok_x} -eq 32 ] && [ "$shared_x" = unset ] &&
          grep -q "held by an exclusive holder" "$tmp/shr-wait.err"'

past_deadline shr4 shared 1 "holder: shared" "shared: 1 holder" "shared: 0 holders"

# A --shared run on a semaphore: another kind, at once.
hold p --limit 2 shr3
wait_for_file "$tmp/sem-p"
rm -f "$tmp/ran"
rl run --shared shr3 -- touch "$tmp/ran"
check "a --shared run on a semaphore (waiting for ever) => 69 in ${ms} ms, 'not shared/exclusive'" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -lt $((2000 * slow)) ] && [ ! -e "$tmp/ran" ] &&
          grep -q "lock:{shr3}: not shared/exclusive: KIND a semaphore of 2 permits" <<<"$err"'
unhold p

# ------------------------------------------------------------ installed
# The command is linked with the library statically: it runs straight after
# make install, before ldconfig knows libredlease.so.
real=$bin # a libtool wrapper script stands for .libs/redlease
head -c 4 "$bin" | grep -q ELF || real=$builddir/cli/.libs/redlease
needed=$(readelf -d "$real" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
check "redlease needs no libredlease.so ($needed)" \
    eval '[ -n "$needed" ] && ! grep -q libredlease <<<"$needed"'

# ------------------------------------------------------------ unavailable
# A wait goes on through what retrying cures, for --max-outage (60 s by
# default, never past --wait), saying so at once and, at the end, what was
# tried (man 1, WAITING THROUGH FAILURES).
rm -f "$tmp/ran"
rl run --socket "$tmp/no-such.sock" --max-outage 300 down -- touch "$tmp/ran"
check "no server (missing socket), --max-outage 300 => 69 after ${ms} ms, with the reason and what was tried, nothing run" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -ge 300 ] && [ ! -e "$tmp/ran" ] &&
          grep -q "no-such.sock: connection: No such file or directory; retrying for up to 300 ms (--max-outage)" <<<"$err" &&
          grep -q "unusable for 300 ms (--max-outage; \([0-9]* attempts\{0,1\} failed, \)\{0,1\}[0-9]* connections\{0,1\} lost or refused): No such file or directory" <<<"$err"'
rl run --host 127.0.0.1 --port 1 --wait 300 down -- touch "$tmp/ran"
check "no server (TCP port closed), --wait 300 below the default --max-outage => 69 after ${ms} ms, at the wait's end" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -ge 300 ] && [ ! -e "$tmp/ran" ] &&
          grep -q "retrying for up to 60000 ms (--max-outage)" <<<"$err" &&
          grep -q "Redis at 127.0.0.1:1: no connection to Redis: Connection refused (.*lost or refused)$" <<<"$err"'
rl run --host 127.0.0.1 --port 1 --max-outage 0 down -- touch "$tmp/ran"
check "--max-outage 0 => 69 at the first failure, nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] && grep -q "unusable for 0 ms" <<<"$err"'
rl run --max-outage -1 down -- true
check "--max-outage -1 => 64" eval '[ "$st" -eq 64 ]'
rl status --socket "$tmp/no-such.sock" down
check "status with no server => 69" eval '[ "$st" -eq 69 ]'
# --tls against the harness's plaintext server: no TLS handshake ever
# completes (or this redlease has no TLS): like any unusable server, 69
# once --max-outage has passed (a handshake timing out is retried), with a
# reason, COMMAND never run, never plaintext instead.
rl run --tls --timeout 300 --max-outage 300 tls-res -- touch "$tmp/ran"
check "--tls to a plaintext server, --max-outage 300 => 69 in ${ms} ms, with a reason, nothing run" \
    eval '[ "$st" -eq 69 ] && [ -n "$err" ] && [ ! -e "$tmp/ran" ] && [ "$ms" -lt $((5000 * slow)) ]'
rl run --tls --cacert "$tmp/no-such-ca.pem" --timeout 300 tls-res -- touch "$tmp/ran"
check "--tls with a CA file that does not exist => 69, nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] && grep -qE "no-such-ca.pem|not supported" <<<"$err"'
rl status --tls --timeout 300 tls-res
check "status --tls to a plaintext server => 69 in ${ms} ms" \
    eval '[ "$st" -eq 69 ] && [ "$ms" -lt $((5000 * slow)) ]'

# ------------------------------------------------------------ password
pw=redlease-test-pw-$RANDOM
rcli CONFIG SET requirepass "$pw" >/dev/null
export REDISCLI_AUTH=$pw # for rcli from here on
rl run auth1 -- touch "$tmp/ran"
check "no password for a server that wants one => 69 with Redis's reason" \
    eval '[ "$st" -eq 69 ] && grep -qiE "auth|NOAUTH" <<<"$err"'
REDLEASE_PASSWORD=wrong-$pw rl run auth1 -- true
check "wrong REDLEASE_PASSWORD => 69, and it is not printed" \
    eval '[ "$st" -eq 69 ] && ! grep -qF "$pw" <<<"$err"'
REDLEASE_PASSWORD=$pw rl run -v auth1 -- true
check "REDLEASE_PASSWORD => 0; --verbose never prints it" \
    eval '[ "$st" -eq 0 ] && grep -q "acquired lock:{auth1}" <<<"$err" && ! grep -qF "$pw" <<<"$err"'
(umask 077 && printf '%s\n' "$pw" >"$tmp/pw")
rl run --password-file "$tmp/pw" auth2 -- true
check "--password-file (mode 600, first line) => 0" eval '[ "$st" -eq 0 ]'
rl status --password-file "$tmp/pw" auth2
check "status with --password-file => 1 (free)" eval '[ "$st" -eq 1 ]'
chmod 644 "$tmp/pw"
rl run --password-file "$tmp/pw" auth2 -- true
check "--password-file readable by others => 64" \
    eval '[ "$st" -eq 64 ] && grep -q "readable by others" <<<"$err" && ! grep -qF "$pw" <<<"$err"'
rm -f "$tmp/pw.fifo"
mkfifo "$tmp/pw.fifo"
chmod 600 "$tmp/pw.fifo"
rl run --password-file "$tmp/pw.fifo" auth2 -- true
check "--password-file a FIFO with no writer => 64 at once (${ms} ms), not a hang" \
    eval '[ "$st" -eq 64 ] && grep -q "not a regular file" <<<"$err" && [ "$ms" -lt $((3000 * slow)) ]'
rl run --password-file <(echo "$pw") auth2 -- true
check "--password-file <(...) => 64, refused" eval '[ "$st" -eq 64 ] && grep -q "not a regular file" <<<"$err"'
rcli CONFIG SET requirepass "" >/dev/null
unset REDISCLI_AUTH

# ------------------------------------------------------------ no scripts
# An ACL user without @scripting (man 1, NOTES; redlease(3), WITHOUT
# SCRIPTS). This server (Redis 7.0) has neither DELIFEQ nor DELEX: a run
# could not release the lock, so it never takes it; one with the commands
# (Valkey 9, Redis 8.4) holds it without scripts (tests/integration/
# test_scriptless.c).
nspw=Lw3-noscripts-$$
rcli ACL SETUSER noscripts reset on ">$nspw" '~*' '&*' +@all -@scripting >/dev/null
if [ -n "$(rcli COMMAND INFO DELIFEQ DELEX | tr -d '\n')" ]; then
    rm -f "$tmp/ran"
    REDLEASE_PASSWORD=$nspw rl run -v --user noscripts --wait 3000 ns1 -- touch "$tmp/ran"
    check "no scripts, the server has DELIFEQ or DELEX: a run holds it without them (0)" \
        eval '[ "$st" -eq 0 ] && [ -e "$tmp/ran" ] && grep -q "runs no Lua scripts" <<<"$err" &&
              [ "$(rcli EXISTS lock:{ns1})" = 0 ]'
else
    rm -f "$tmp/ran"
    REDLEASE_PASSWORD=$nspw rl run -n --user noscripts ns1 -- touch "$tmp/ran"
    check "no scripts and no DELIFEQ/DELEX: -n => 69 naming why, nothing run, no key left" \
        eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] && grep -q "safe release needs Lua scripts" <<<"$err" &&
              grep -q "NOPERM" <<<"$err" && [ "$(rcli EXISTS lock:{ns1})" = 0 ]'
fi
REDLEASE_PASSWORD=$nspw rl run --user noscripts --fence --wait 3000 ns2 -- touch "$tmp/ran2"
check "no scripts: --fence => 69 at once (${ms} ms), naming the fence, nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran2" ] && grep -q "fencing token needs Lua scripts" <<<"$err" &&
          [ "$ms" -lt $((3000 * slow)) ]'
rcli ACL DELUSER noscripts >/dev/null

echo "1..$n"
redis_harness_stop
trap - EXIT INT TERM HUP
exit 0
