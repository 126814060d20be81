#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease run waits through failures that retrying cures (man
# 1, WAITING THROUGH FAILURES), on real topologies this script starts: a
# run waiting for a lock held by another run goes on waiting, and runs its
# COMMAND once the holder releases, through
#   - a Sentinel failover (SENTINEL FAILOVER; the harness's redis-server
#     is the primary, one replica of it is promoted); a run with
#     --min-replicas 1 started just after, while the old primary resyncs
#     as the new one's replica, does not give up (0 or 124, never 69);
#   - a Cluster primary killed (3 primaries, 3 replicas; its replica is
#     promoted);
#   - a --quorum member killed (a majority left);
#   - a server killed and started again on its port within --max-outage;
# and a server stopped for good ends the wait with 69 once --max-outage
# has passed, long before --wait, saying what was tried. The evidence is
# exit statuses and files COMMAND wrote; every wait for a condition is a
# bounded poll (scaled by $slow), never a fixed sleep.
# (The library's side: tests/integration/test_sentinel.c, test_cluster.c.)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-ride

# ---------------------------------------------------------------- helpers

# Runs in the background, each bounded by timeout -s KILL, and stopped at
# exit (TERM, which redlease passes on to COMMAND, then KILL); the go
# files their COMMANDs wait for are created then too.
bg_names=() bg_pids=()
ended() { [ -e "$tmp/$1.st" ]; }
all_ended() { local name; for name in "${bg_names[@]}"; do ended "$name" || return 1; done; }
cleanup() {
    local name pid
    touch "$tmp/go-s" "$tmp/go-c" "$tmp/go-q"
    for name in "${bg_names[@]}"; do
        ended "$name" || { pid=$(cat "$tmp/$name.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null; }
    done
    for _ in $(seq 1 $((40 * slow))); do all_ended && break; sleep 0.05; done
    for name in "${bg_names[@]}"; do # timeout leads a process group: redlease's
        ended "$name" || { pid=$(cat "$tmp/$name.pid" 2>/dev/null) && kill -KILL -- "-$pid" 2>/dev/null; }
    done
    [ ${#bg_pids[@]} -eq 0 ] || wait "${bg_pids[@]}" # not the harness's server
    [ -z "${RIDE_KEEP:-}" ] || cp -r "$tmp" "$RIDE_KEEP" # RIDE_KEEP=DIR: the runs' logs, kept
    _rh_trap
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

# bg NAME ARG...: redlease ARG... in the background (at most 120 s, x10
# under the wrapper): its stdout and stderr in $tmp/NAME.out and .err; once
# it ends, "STATUS END_MS" (date +%s%3N) in $tmp/NAME.st.
bg() {
    local name=$1
    shift
    rm -f "$tmp/$name".{out,err,st,pid}
    bg_names+=("$name")
    (
        timeout -s KILL $((120 * slow)) "${RL[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
        echo $! >"$tmp/$name.pid"
        wait $!
        echo "$? $(date +%s%3N)" >"$tmp/$name.st.tmp"
        mv "$tmp/$name.st.tmp" "$tmp/$name.st"
    ) &
    bg_pids+=($!)
}
# await SECONDS CMD...: polls CMD until it succeeds (0), or SECONDS (x$slow)
# have passed (1).
await() {
    local end=$((SECONDS + $1 * slow))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.05
    done
}
# finish NAME: waits for NAME to end (its own bound, and a margin); sets
# st, out, err, end_ms for check (st 999: it did not end).
finish() {
    await 130 ended "$1"
    st=999 end_ms=0
    [ -e "$tmp/$1.st" ] && read -r st end_ms <"$tmp/$1.st"
    out=$(cat "$tmp/$1.out" 2>/dev/null)
    err=$(cat "$tmp/$1.err" 2>/dev/null)
}
waiting() { grep -q "is held by another holder" "$tmp/$1.err" 2>/dev/null; }
running() { grep -q "started sh as pid" "$tmp/$1.err" 2>/dev/null; }
# COMMAND of a holder: waits for its go file (bounded: exits 3 after 90 s,
# x10 under the wrapper)
hold_cmd() {
    hold=(sh -c 'i=0; until [ -e "$0" ]; do i=$((i + 1)); [ "$i" -lt "$1" ] || exit 3; sleep 0.05; done'
          "$tmp/go-$1" $((1800 * slow)))
}

# holder_and_waiter N RESOURCE SERVER-OPTION...: N-holder holds RESOURCE
# (until $tmp/go-N), then N-waiter waits for it (COMMAND touches
# $tmp/ran-N); 0 once the waiter is seen waiting.
holder_and_waiter() {
    local n=$1 res=$2
    shift 2
    hold_cmd "$n"
    bg "$n-holder" run "${t[@]}" "$@" --ttl 3000 -v "$res" -- "${hold[@]}"
    await 30 running "$n-holder"
    bg "$n-waiter" run "${t[@]}" "$@" --wait $((30000 * slow)) -v "$res" -- touch "$tmp/ran-$n"
    await 30 waiting "$n-waiter"
}
# a holder's verdict: 0, or 124 saying the lease was lost; which is noted
holder_ok() {
    echo "# the holder ($1) exited $st$([ "$st" = 124 ] && echo ": $(grep -m1 'lost' <<<"$err")")"
    [ "$st" -eq 0 ] || { [ "$st" -eq 124 ] && grep -q "lost" <<<"$err"; }
}
t=(--timeout $((1000 * slow)))

echo "1..8"

# ---------------------------------------------------------------- Sentinel
# The harness's server is the primary "rl"; one replica of it; one
# Sentinel (quorum 1) that knows both before the failover is forced.
"$cli" -p "$REDLEASE_TEST_PORT" CONFIG SET repl-diskless-sync-delay 0 >/dev/null
redis_harness_extra ride-replica --port --replicaof 127.0.0.1 "$REDLEASE_TEST_PORT" \
    --repl-diskless-sync-delay 0 || { echo "Bail out! could not start a replica"; exit 1; }
replica=$REDLEASE_EXTRA_PORT
replica_synced() { [ "$(printf 'SET ready 1\r\nWAIT 1 100\r\n' | "$cli" -p "$REDLEASE_TEST_PORT" | tail -n 1)" = 1 ]; }
await 30 replica_synced || { echo "Bail out! the replica did not come online"; exit 1; }
mkdir -p "$REDLEASE_TEST_DIR/ride-sentinel" || exit 99
cat >"$REDLEASE_TEST_DIR/ride-sentinel/redis.conf" <<EOF
sentinel monitor rl 127.0.0.1 $REDLEASE_TEST_PORT 1
sentinel down-after-milliseconds rl 1000
sentinel failover-timeout rl 5000
EOF
redis_harness_extra ride-sentinel --port --sentinel || { echo "Bail out! could not start a Sentinel"; exit 1; }
sport=$REDLEASE_EXTRA_PORT
sentinel=(--sentinel "127.0.0.1:$sport" --master rl)
# the Sentinel would promote the replica: it lists it, linked and up
replica_known() {
    "$cli" -p "$sport" SENTINEL REPLICAS rl | tr -d '\r' |
        awk -v p="$replica" 'f == "port" && $0 == p { mine = 1 } f == "flags" && mine { flags = $0 }
                             f == "master-link-status" && mine { link = $0 } { f = $0 }
                             END { exit !(flags == "slave" && link == "ok") }'
}
await 30 replica_known || { echo "Bail out! the Sentinel does not know the replica"; exit 1; }
primary_is() { [ "$("$cli" -p "$sport" SENTINEL GET-MASTER-ADDR-BY-NAME rl | tr -d '\r' | sed -n 2p)" = "$1" ]; }

holder_and_waiter s ride-s "${sentinel[@]}"
ready=$?
failover=$("$cli" -p "$sport" SENTINEL FAILOVER rl)
await 30 primary_is "$replica"
promoted=$?
# Both runs learn of it (+switch-master) before the holder releases: else
# the release and the wake-up could come first, on the old primary (a
# primary still, until the Sentinel turns it into a replica).
told() { grep -q "Sentinel: the primary of 'rl' is at 127.0.0.1:$replica$" "$tmp/$1.err"; }
await 30 told s-holder && await 30 told s-waiter
told=$?
# the new primary's replica (the old primary, once the Sentinel turns it
# into one, some 10 s on) resyncs: --min-replicas is unmet until then
bg s-replicas run "${t[@]}" "${sentinel[@]}" --min-replicas 1 --ttl 3000 -v ride-s2 -- true
touch "$tmp/go-s"
finish s-waiter
check "Sentinel: a waiter through a forced failover ($failover; promoted: $promoted, both runs told: $told) => 0, COMMAND ran" \
    eval '[ "$ready" -eq 0 ] && [ "$promoted" -eq 0 ] && [ "$told" -eq 0 ] && grep -q "retrying for up to" <<<"$err" && [ "$st" -eq 0 ] && [ -e "$tmp/ran-s" ]'
finish s-holder
check "Sentinel: its holder => 0, or 124 saying the lease was lost" holder_ok Sentinel

# ---------------------------------------------------------------- Cluster
# 3 primaries, 3 replicas, node timeout 1 s: a killed primary's replica
# takes over within seconds. A formation that fails is tried once more
# on new nodes (as in test-cli-cluster.sh).
declare -A pid_of
form() {
    local try=$1 i
    cports=()
    for i in 1 2 3 4 5 6; do
        redis_harness_cluster_node "ride-c$try-node$i" --cluster-node-timeout 1000 \
            --repl-diskless-sync-delay 0 || return 1
        cports+=("$REDLEASE_EXTRA_PORT")
        pid_of[$REDLEASE_EXTRA_PORT]=$REDLEASE_EXTRA_PID
    done
    redis_harness_cluster_form "${cports[@]:0:3}" -- "${cports[@]:3:3}"
}
if ! form 1; then
    for p in "${cports[@]}"; do kill -KILL "${pid_of[$p]}" 2>/dev/null; done
    form 2 || { echo "Bail out! the Cluster did not form"; exit 1; }
fi
# owner NODE KEY: the port of the primary serving KEY's slot, as NODE says
owner() {
    "$cli" -p "$1" CLUSTER SLOTS | awk -v s="$("$cli" -p "$1" CLUSTER KEYSLOT "$2")" '
        { v[NR] = $0 } END {
            for (i = 1; i + 3 <= NR; i++)
                if (v[i] ~ /^[0-9]+$/ && v[i + 1] ~ /^[0-9]+$/ && v[i] + 0 <= s && s <= v[i + 1] + 0 &&
                    v[i + 3] ~ /^[0-9]+$/) { print v[i + 3]; exit }
        }'
}
victim=$(owner "${cports[0]}" 'lock:{ride-c}')
for p in "${cports[@]:0:3}"; do [ "$p" != "$victim" ] && other=$p; done
holder_and_waiter c ride-c --cluster "127.0.0.1:$other"
ready=$?
kill -KILL "${pid_of[$victim]}"
moved() { local o; o=$(owner "$other" 'lock:{ride-c}') && [ -n "$o" ] && [ "$o" != "$victim" ]; }
await 30 moved
promoted=$?
touch "$tmp/go-c"
finish c-waiter
check "Cluster: a waiter through its slot's primary killed (replica promoted: $promoted) => 0, COMMAND ran" \
    eval '[ "$ready" -eq 0 ] && [ -n "$victim" ] && [ "$promoted" -eq 0 ] && grep -q "retrying for up to" <<<"$err" && [ "$st" -eq 0 ] && [ -e "$tmp/ran-c" ]'
finish c-holder
check "Cluster: its holder => 0, or 124 saying the lease was lost" holder_ok Cluster

# ---------------------------------------------------------------- quorum
# Three independent servers; one killed while the run waits: the majority
# left still answers.
rig_quorum ride-q
holder_and_waiter q ride-q --quorum "$quorum" --restart-guard off
ready=$?
kill -KILL "${pids[2]}"
touch "$tmp/go-q"
finish q-waiter
check "quorum: a waiter through one of three servers killed => 0, COMMAND ran" \
    eval '[ "$ready" -eq 0 ] && [ "$st" -eq 0 ] && [ -e "$tmp/ran-q" ]'

# ---------------------------------------------------------------- one server
# A server killed for good: the wait ends with 69 once --max-outage has
# passed since the first failure, long before --wait (not scaled: the
# outage ends it whatever the wrapper), and says what was tried. A lease
# held by hand (set with no holder that would release it).
redis_harness_extra ride-dead --port || { echo "Bail out! could not start redis-server"; exit 1; }
dead_port=$REDLEASE_EXTRA_PORT dead_pid=$REDLEASE_EXTRA_PID
"$cli" -p "$dead_port" SET 'lock:{ride-d}' 0123456789abcdef0123456789abcdef PX 600000 >/dev/null
bg d-waiter run "${t[@]}" -H 127.0.0.1 -p "$dead_port" --max-outage 1000 --wait 30000 -v \
    ride-d -- touch "$tmp/ran-d"
await 30 waiting d-waiter
ready=$?
killed_ms=$(date +%s%3N)
kill -KILL "$dead_pid"
finish d-waiter
elapsed=$((end_ms - killed_ms))
check "a server stopped for good, --max-outage 1000 --wait 30000 => 69 after $elapsed ms (1000 up, under half the wait), saying what was tried, COMMAND not run" \
    eval '[ "$ready" -eq 0 ] && [ "$st" -eq 69 ] && [ "$elapsed" -ge 1000 ] && [ "$elapsed" -lt 15000 ] && [ ! -e "$tmp/ran-d" ] &&
          grep -q "unusable for 1000 ms (--max-outage; \([0-9]* attempts\{0,1\} failed, \)\{0,1\}[0-9]* connections\{0,1\} lost or refused): " <<<"$err"'

# A server killed and started again, empty, on its port within
# --max-outage: the wait goes on, and the lock (its key gone) is acquired.
# The bound is wide: what is tested is the ride, and the waiter finds the
# server back only at its next reconnect, up to reconnect_max_ms (2 s)
# after the restart, which itself waits for a busy machine.
redis_harness_extra ride-back --port || { echo "Bail out! could not start redis-server"; exit 1; }
back_port=$REDLEASE_EXTRA_PORT back_pid=$REDLEASE_EXTRA_PID back_dir=$REDLEASE_TEST_DIR/ride-back
"$cli" -p "$back_port" SET 'lock:{ride-b}' 0123456789abcdef0123456789abcdef PX 600000 >/dev/null
bg b-waiter run "${t[@]}" -H 127.0.0.1 -p "$back_port" --max-outage $((20000 * slow)) --wait $((60000 * slow)) -v \
    ride-b -- touch "$tmp/ran-b"
await 30 waiting b-waiter
ready=$?
kill -KILL "$back_pid"
gone() { ! kill -0 "$back_pid" 2>/dev/null; }
await 10 gone
# as redis_harness_extra started it: the harness stops it by its pid file
"${REDIS_SERVER:-redis-server}" --port "$back_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$back_dir" --daemonize yes --pidfile "$back_dir/redis.pid" --logfile "$back_dir/redis.log" \
    </dev/null >/dev/null 2>&1
back() { [ "$("$cli" -p "$back_port" PING 2>/dev/null)" = PONG ]; }
await 10 back
restarted=$?
finish b-waiter
check "a server killed and started again within --max-outage $((20000 * slow)) (restarted: $restarted) => 0, COMMAND ran" \
    eval '[ "$ready" -eq 0 ] && [ "$restarted" -eq 0 ] && [ "$st" -eq 0 ] && [ -e "$tmp/ran-b" ] && grep -q "retrying for up to" <<<"$err"'

# The run with --min-replicas 1 started after the failover: it waited for
# the old primary to resync as the new one's replica, or found it already.
finish s-replicas
echo "# --min-replicas 1 after the failover: $(grep -c "failed: WAIT" <<<"$err") attempts with too few replicas before it exited $st"
check "Sentinel: --min-replicas 1 started just after the failover => 0 (or 124 saying the lease was lost), never 69" \
    eval '{ [ "$st" -eq 0 ] || { [ "$st" -eq 124 ] && grep -q lost <<<"$err"; }; }'
