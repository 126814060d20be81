#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: runs examples/booking/demo.sh (what `make demo` runs) and reports each
# of its five results as a TAP case, plus one for its exit status agreeing
# with them; then checks booking-server's handling of bad or slow clients
# (cases 7-13) against servers of its own and a private redis-server.
# REDLEASE_TEST_WRAPPER (make check-valgrind) runs every booking-server
# under valgrind: an error or a leak makes that server exit non-zero, which
# fails "clean shutdown" (5 and 13). Leases then get twice the TTL, as
# valgrind slows the servers down.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/support/redis-harness.sh" || exit 99

# The demo starts its own redis-server; only the missing-server rule (SKIP,
# or a failure under CI) is taken from the harness.
redis_harness_require_tap

ttl=1000
[ -n "${REDLEASE_TEST_WRAPPER:-}" ] && ttl=2000
out=$(DEMO_TTL_MS=${DEMO_TTL_MS:-$ttl} DEMO_WRAPPER=${REDLEASE_TEST_WRAPPER:-} \
      timeout --kill-after=10 240 bash "$here/../examples/booking/demo.sh" 2>&1)
status=$?
sed 's/^/# /' <<<"$out"

echo "1..13"
failed=0
n=0
for title in "without a lock" "with redlease" "holder SIGKILLed" "holder paused" "clean shutdown"; do
    n=$((n + 1))
    if grep -q "^$n\. $title *\[PASS\]" <<<"$out"; then
        echo "ok $n - $title"
    else
        echo "not ok $n - $title"
        failed=1
    fi
done
if [ "$status" -eq "$failed" ]; then
    echo "ok 6 - demo exit status $status agrees with the results"
else
    echo "not ok 6 - demo exit status $status, results say $failed"
fi

# ------------------------------------------------ booking-server's clients
server_bin=${REDLEASE_BUILDDIR:-.}/examples/booking/booking-server
redis_harness_start_tap
work=$(mktemp -d "${TMPDIR:-/tmp}/redlease-run-demo.XXXXXX") || exit 1
declare -A pid port
cleanup() {
    local name
    for name in "${!pid[@]}"; do kill -KILL "${pid[$name]}" 2>/dev/null; done
    rm -rf -- "$work"
    redis_harness_stop
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# start NAME [OPTION...]: a server on the store $work/store, logging to
# $work/NAME.log, run by ${launch[@]} (which must exec it); sets port[NAME]
# once it is ready.
launch=()
start() {
    local name=$1 i line
    shift
    REDLEASE_SOCKET=$REDLEASE_TEST_SOCKET "${launch[@]}" ${REDLEASE_TEST_WRAPPER:-} "$server_bin" --name "$name" \
        --store "$work/store" "$@" >"$work/$name.log" 2>&1 </dev/null &
    pid[$name]=$!
    for ((i = 0; i < 1200; i++)); do
        line=$(grep -m1 " $name ready on " "$work/$name.log") && {
            port[$name]=${line##*127.0.0.1:} port[$name]=${port[$name]%% *}
            return 0
        }
        kill -0 "${pid[$name]}" 2>/dev/null || break
        sleep 0.05
    done
    echo "# server $name did not start:"; sed 's/^/#   /' "$work/$name.log"
    exit 1
}

# ask NAME BYTES: sends BYTES (printf format) to NAME, keeps the connection
# open, prints the reply line (or "no reply").
ask() {
    local reply="no reply"
    exec 3<>"/dev/tcp/127.0.0.1/${port[$1]}" || { echo "cannot connect"; return; }
    printf "$2" >&3
    IFS= read -r -t 30 reply <&3
    exec 3<&-
    echo "$reply"
}

# tap STATUS N NAME: a TAP case, ok if STATUS (of the checks just made) is 0.
tap() { if [ "$1" -eq 0 ]; then echo "ok $2 - $3"; else echo "not ok $2 - $3"; fi; }

start plain --no-lock --work-ms 0 --read-timeout-ms 300
start locked --ttl-ms 10000 --wait-ms 5000 --work-ms 500
start unsafe --ttl-ms 9000 --work-ms 1500 --unsafe-write-after-loss
# Out of fds after a few connections (under valgrind too, which keeps about
# a dozen of them for itself: fewer than 32 and the server cannot start).
launch=(prlimit --nofile=32)
start fdless --no-lock --work-ms 0
launch=()

# 7. A client that sends nothing is answered and dropped, not kept forever.
r=$(ask plain '')
[ "$r" = "ERR timeout" ]; tap $? 7 "read timeout: '$r'"

# 8. A NUL byte inside the line (strtok would have cut the line there).
r=$(ask plain 'BOOK n1\0x guest\n')
[ "$r" = "ERR bad request" ]; tap $? 8 "NUL byte in the line: '$r'"

# 9. A line without its newline, then EOF (a half-close): EOF ends the line.
r=$(perl -MIO::Socket::INET -e '
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0]) or die;
    print $s "BOOK e1 eve"; $s->flush; shutdown($s, 1);
    my $l = <$s>; print defined $l ? $l : "no reply\n"' "${port[plain]}")
[ "${r%% *}" = OK ]; tap $? 9 "line ended by EOF: '$r'"

# 10. A client gone while its request works: nothing written, lease released
# at once (the next request for the table waits far less than the 10 s TTL).
exec 3<>"/dev/tcp/127.0.0.1/${port[locked]}" && printf 'BOOK g1 gone\n' >&3
for ((i = 0; i < 600; i++)); do grep -q ' table:g1 free: working' "$work/locked.log" && break; sleep 0.05; done
exec 3<&-
r=$(ask locked 'BOOK g1 next\n')
waited=${r##* }
echo "# after the client went away: '$r'; $(grep -c '^BOOKED g1 gone ' "$work/store") booking(s) for it"
[ "${r%% *}" = OK ] && [ "$waited" -lt 5000 ] && ! grep -q '^BOOKED g1 gone ' "$work/store" &&
    grep -q ' table:g1 client went away before the reply (EOF): nothing written, lease released' \
        "$work/locked.log"
tap $? 10 "client gone before the reply: nothing written, lease released"

# 11. Out of fds, accept() fails with EMFILE while connections wait in the
# backlog: the server must back off (about 10 tries a second), not spin, and
# accept again once fds are free.
fds=()
for ((i = 0; i < 48; i++)); do exec {fd}<>"/dev/tcp/127.0.0.1/${port[fdless]}" && fds+=("$fd"); done
sleep 1
for fd in "${fds[@]}"; do exec {fd}<&-; done
tries=$(grep -c ' accept: ' "$work/fdless.log")
r=$(ask fdless 'BOOK f1 fay\n')
echo "# ${#fds[@]} connections held 1 s: $tries accept failures logged; then: '$r'"
[ "$tries" -ge 1 ] && [ "$tries" -le 50 ] && [ "${r%% *}" = OK ]
tap $? 11 "out of fds: accept backs off, then accepts again"

# 12. After a reconnect, redlease_lock_held() is 0 until a renewal (every
# ttl/3 = 3 s) confirms the lease again, but the lease is not lost: the write
# must wait for the renewal, not for an on_lost that never comes. The kill
# must land within the work's 1.5 s, seen by polling its log.
exec 3<>"/dev/tcp/127.0.0.1/${port[unsafe]}" && printf 'BOOK r1 ray\n' >&3
for ((i = 0; i < 600; i++)); do grep -q ' table:r1 free: working' "$work/unsafe.log" && break; sleep 0.05; done
# The kill makes it reconnect; the pause (2.5 s) holds back the renewal that
# re-verifies the lease, so the work ends while held() is 0.
printf 'MULTI\nCLIENT PAUSE 2500\nCLIENT KILL TYPE normal SKIPME yes\nEXEC\n' |
    "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" >"$work/redis-cli.out" 2>&1
IFS= read -r -t 30 r <&3 || r="no reply"
exec 3<&-
grep -q ' table:r1 lease not confirmed right now' "$work/unsafe.log"; rechecked=$?
echo "# a reconnect during the work: '$r' ($([ $rechecked = 0 ] && echo waited for the renewal || echo no wait logged))"
[ "${r%% *}" = OK ] && [ "$rechecked" -eq 0 ]
tap $? 12 "lease unconfirmed after a reconnect: the write waits for the renewal"

# 13. Every server here shuts down cleanly (under valgrind: no error, no leak).
bad=0
for name in "${!pid[@]}"; do
    kill -TERM "${pid[$name]}"
    if ! wait "${pid[$name]}"; then
        bad=$((bad + 1))
        echo "# $name did not exit 0 on SIGTERM; its log:"; sed 's/^/#   /' "$work/$name.log"
    fi
    unset "pid[$name]"
done
[ "$bad" -eq 0 ]; tap $? 13 "the servers of cases 7-12 exited 0 on SIGTERM"
exit 0
