#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: the fault proxy of the chaos run (tests/chaos/netfault-proxy)
# against a private redis-server, through redis-cli. One proxy, fed its
# commands through a FIFO, for all cases but the last:
#   ping      a PING through it answers PONG
#   delay     under "delay 200 1000" a PING takes >= 2 x 200 ms (request and
#             reply), < 5 s; the net-delay line spans >= 1000 ms
#   drop      under "drop 300" a PING sent during it answers PONG, but not
#             before the drop ended (the net-drop line's T1)
#   cut       under "cut 300" a BLPOP waiting through the proxy is closed
#             at the cut's end (not before), and its upstream connection
#             is gone from Redis too
#   cut-pid   under "cut 300 pid=PID" one of two BLPOPs waiting through the
#             proxy, the one of process PID, is closed at the cut's end;
#             the other is still waiting in Redis (and served after)
#   overflow  more than the cap (-m 65536) held during a drop: that
#             connection is closed and an overflow line printed
#   eof       end of input: exit 0, listening socket removed
#   sigterm   a second proxy: SIGTERM, exit 0
# Times are CLOCK_MONOTONIC ms (netfault-proxy --now), the clock of its
# fault lines. REDLEASE_TEST_WRAPPER (valgrind) runs the proxy under it: a
# nonzero exit then also means a memory error or leak.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/../support/redis-harness.sh" || exit 99

builddir=${REDLEASE_BUILDDIR:-.}
proxy_bin=$builddir/tests/chaos/netfault-proxy
wrapper=${REDLEASE_TEST_WRAPPER:-}
[ -x "$proxy_bin" ] || { echo "Bail out! $proxy_bin not built"; exit 1; }

redis_harness_start_tap
if [ -z "$REDLEASE_TEST_REDIS_CLI" ]; then
    echo "1..0 # SKIP redis-cli not installed (redis-tools)"
    exit 0
fi

dir=$REDLEASE_TEST_DIR
psock=$dir/proxy.sock
now_ms() { "$proxy_bin" --now; }
# pcli ARG...: redis-cli through the proxy (a TCP reply never hangs the test).
pcli() { timeout 20 "$REDLEASE_TEST_REDIS_CLI" -s "$psock" "$@" 2>&1; }
# ge A B [PLUS]: is the time A >= B + PLUS (ms with a fraction)?
ge() { awk -v a="$1" -v b="$2" -v plus="${3:-0}" 'BEGIN { exit !(a - b >= plus) }'; }
# wait_for_line FILE REGEX: 0 once FILE has a line matching it (<= 30 s).
wait_for_line() {
    local i
    for i in $(seq 1 300); do
        grep -qE -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# fault_line KIND: the proxy's line for the fault KIND (waits for it).
fault_line() {
    wait_for_line "$dir/proxy.out" "^[0-9]+\.[0-9]{3} $1 [0-9]+\.[0-9]{3} " &&
        grep -E "^[0-9]+\.[0-9]{3} $1 " "$dir/proxy.out" | tail -n 1
}
# inject CMD: send a fault and wait until the proxy has applied it.
inject() {
    local before
    before=$(grep -c ' begin ' "$dir/proxy.err")
    echo "$1" >&"$ctl"
    for _ in $(seq 1 300); do
        [ "$(grep -c ' begin ' "$dir/proxy.err")" -gt "$before" ] && return 0
        sleep 0.01
    done
    return 1
}

n=0
why=
verdict() {  # verdict NAME: ok if $why is empty
    n=$((n + 1))
    if [ -z "$why" ]; then echo "ok $n - $1"; else echo "not ok $n - $1: $why"; fi
    why=
}

echo "1..8"
mkfifo "$dir/proxy.ctl"
$wrapper "$proxy_bin" -m 65536 "$psock" "$REDLEASE_TEST_SOCKET" \
    <"$dir/proxy.ctl" >"$dir/proxy.out" 2>"$dir/proxy.err" &
proxy_pid=$!
exec {ctl}>"$dir/proxy.ctl"
for _ in $(seq 1 300); do [ -S "$psock" ] && break; sleep 0.1; done

reply=$(pcli PING)
[ "$reply" = PONG ] || why="reply '$reply'"
verdict "ping: PONG through the proxy"

# A long window ended by "clear": a slow machine (valgrind) cannot send the
# PING after the fault has already run out.
inject "delay 200 30000" || why="not applied"
t0=$(date +%s%N); reply=$(pcli PING); t1=$(date +%s%N)
echo clear >&"$ctl"
took=$(( (t1 - t0) / 1000000 ))
line=$(fault_line net-delay)
if [ "$reply" != PONG ]; then why="reply '$reply'"
elif [ "$took" -lt 400 ] || [ "$took" -ge 5000 ]; then why="PING took $took ms, expected 400..5000"
elif ! [[ $line =~ ^([0-9.]+)\ net-delay\ ([0-9.]+)\ ms=200\ for=30000\ conns=[0-9]+$ ]]; then why="line '$line'"
elif ! ge "${BASH_REMATCH[2]}" "${BASH_REMATCH[1]}" 400; then why="line '$line' spans < 400 ms"
fi
verdict "delay: PING took $took ms under delay 200 (ended by clear); $line"

inject "drop 300" || why="not applied"
reply=$(pcli PING); t_answer=$(now_ms)
line=$(fault_line net-drop)
if [ "$reply" != PONG ]; then why="reply '$reply'"
elif ! [[ $line =~ ^([0-9.]+)\ net-drop\ ([0-9.]+)\ ms=300\ conns=[0-9]+$ ]]; then why="line '$line'"
elif ! ge "$t_answer" "${BASH_REMATCH[2]}"; then why="answered at $t_answer, before the drop ended"
fi
verdict "drop: PONG at $t_answer, after the drop; $line"

pcli BLPOP netfault:none 10 >"$dir/blpop.out" &
blpop_pid=$!
blpop_seen=
for _ in $(seq 1 200); do
    timeout 5 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" CLIENT LIST | grep -q 'cmd=blpop' && { blpop_seen=1; break; }
    sleep 0.05
done
inject "cut 300" || why="not applied"
[ -n "$blpop_seen" ] || why="the BLPOP never reached Redis through the proxy"
wait "$blpop_pid"; t_closed=$(now_ms)
line=$(fault_line net-cut)
left=$(timeout 5 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" CLIENT LIST | grep -c 'cmd=blpop')
if ! grep -qi 'closed' "$dir/blpop.out"; then why="BLPOP said '$(cat "$dir/blpop.out")'"
elif ! [[ $line =~ ^([0-9.]+)\ net-cut\ ([0-9.]+)\ ms=300\ conns=1$ ]]; then why="line '$line'"
elif ! ge "$t_closed" "${BASH_REMATCH[2]}"; then why="closed at $t_closed, before the cut ended"
elif [ "$left" -ne 0 ]; then why="the upstream connection is still open in Redis"
fi
verdict "cut: the waiting connection closed at $t_closed; $line"

# Two BLPOPs, each redis-cli started directly (not under timeout, which
# would fork it): $! is the process that connects, the one pid= names.
"$REDLEASE_TEST_REDIS_CLI" -s "$psock" BLPOP netfault:one 20 >"$dir/one.out" 2>&1 &
one_pid=$!
"$REDLEASE_TEST_REDIS_CLI" -s "$psock" BLPOP netfault:two 20 >"$dir/two.out" 2>&1 &
two_pid=$!
for _ in $(seq 1 200); do
    [ "$(timeout 5 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" CLIENT LIST | grep -c 'cmd=blpop')" = 2 ] && break
    sleep 0.05
done
inject "cut 300 pid=$one_pid" || why="not applied"
wait "$one_pid"; t_closed=$(now_ms)
line=$(fault_line net-cut)
left=$(timeout 5 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" CLIENT LIST | grep -c 'cmd=blpop')
timeout 5 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" RPUSH netfault:two served >/dev/null
wait "$two_pid"
if ! grep -qi 'closed' "$dir/one.out"; then why="the BLPOP of $one_pid said '$(cat "$dir/one.out")'"
elif ! [[ $line =~ ^([0-9.]+)\ net-cut\ ([0-9.]+)\ ms=300\ conns=1\ pid=$one_pid$ ]]; then why="line '$line'"
elif ! ge "$t_closed" "${BASH_REMATCH[2]}"; then why="closed at $t_closed, before the cut ended"
elif [ "$left" -ne 1 ]; then why="$left BLPOPs left in Redis, expected the other one"
elif ! grep -q served "$dir/two.out"; then why="the other BLPOP said '$(cat "$dir/two.out")'"
fi
verdict "cut-pid: only process $one_pid's connection closed, at $t_closed; $line"

inject "drop 5000" || why="not applied"
head -c 100000 /dev/zero | tr '\0' x >"$dir/big"
# The proxy closes the connection while redis-cli may still be writing the
# value: redis-cli then says so (closed, reset, broken pipe), or dies of
# SIGPIPE (exit 141) before it can, as the scheduler has it (CI's asan leg
# saw the last: no output at all); each is the closed connection.
reply=$(timeout 20 "$REDLEASE_TEST_REDIS_CLI" -s "$psock" -x SET netfault:big <"$dir/big" 2>&1); rc=$?
echo clear >&"$ctl"
if ! wait_for_line "$dir/proxy.out" '^[0-9]+\.[0-9]{3} overflow conn=[0-9]+ held=[0-9]+$'; then why="no overflow line"
elif [[ $reply != *closed* && $reply != *reset* && $reply != *[Bb]roken\ pipe* ]] && [ "$rc" -ne 141 ]; then
    why="SET said '$reply' (exit $rc), not a closed connection"
fi
verdict "overflow: 100000 bytes held > 65536: $(grep overflow "$dir/proxy.out")"

exec {ctl}>&-
wait "$proxy_pid"; status=$?
if [ "$status" -ne 0 ]; then why="exit $status"
elif [ -e "$psock" ]; then why="$psock left behind"
fi
verdict "eof: exit $status at the end of input"

mkfifo "$dir/proxy2.ctl"
$wrapper "$proxy_bin" "$dir/proxy2.sock" "$REDLEASE_TEST_SOCKET" <"$dir/proxy2.ctl" >/dev/null 2>"$dir/proxy2.err" &
proxy_pid=$!
exec {ctl}>"$dir/proxy2.ctl"
for _ in $(seq 1 300); do [ -S "$dir/proxy2.sock" ] && break; sleep 0.1; done
kill -TERM "$proxy_pid"
wait "$proxy_pid"; status=$?
exec {ctl}>&-
[ "$status" -eq 0 ] || why="exit $status"
verdict "sigterm: exit $status"

sed 's/^/# /' "$dir/proxy.err" "$dir/proxy2.err"
redis_harness_stop
