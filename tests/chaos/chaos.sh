#!/bin/bash
# SPDX-License-Identifier: MIT
# chaos.sh: mutual exclusion under faults (issue 5). Starts a private
# redis-server (tests/support/redis-harness.sh), a fault proxy in front of
# it (netfault-proxy) and CHAOS_WORKERS chaos-worker processes, which reach
# Redis through the proxy and contend for one lease and one store file;
# works through a seeded random fault schedule for CHAOS_DURATION_S
# seconds, stops the workers with SIGTERM (then the proxy) and runs
# chaos-check.awk over all the logs. Prints "figure: ..." and "invariant:
# NAME ok|FAIL ..." lines; exits 1 if any invariant failed (or the run
# could not be made), 0 otherwise.
#
# Environment:
#   CHAOS_SEED        the schedule's seed (printed; set it to replay a run)
#   CHAOS_DURATION_S  length of the fault schedule (default 10)
#   CHAOS_WORKERS     processes (default 4)
#   CHAOS_TTL_MS      lease TTL (default 100; 400 under valgrind)
#   CHAOS_KEEP        set: keep the log directory even when all is well
#   CHAOS_KINDS       only these fault kinds (words from the list below;
#                     default all of them), e.g. "net-delay net-drop net-cut"
#   CHAOS_TOPOLOGY    single (default), or sentinel: the harness's server
#                     as a primary, one replica of it and one Sentinel; the
#                     workers find the primary through the Sentinel and ask
#                     for min_replicas 1 (CHAOS_MIN_REPLICAS); the faults are failover, stop and
#                     kill (no proxy, no restart), and a failover has no
#                     excuse window: 0 overlaps
#   REDLEASE_TEST_WRAPPER  runs each worker under it (valgrind)
#   REDLEASE_BUILDDIR      where tests/chaos/chaos-worker and netfault-proxy are
#
# Faults (one at a time, 1-3 TTL apart):
#   stop        SIGSTOP a holder for 1.5-2.5 TTL, then SIGCONT (a GC pause)
#   kill        CLIENT KILL TYPE normal: every worker's connection drops
#   failover    (sentinel) SENTINEL FAILOVER: the replica becomes the
#               primary, the primary its replica; refused while one is
#               under way or no replica is ready (failed-failover)
#   restart     redis-server SIGKILLed and started empty (same socket): the
#               window [kill, back up + TTL] is where overlaps are expected
#   sleep-renew DEBUG SLEEP 0.5 TTL: longer than a renewal interval (TTL/3)
#   sleep-ttl   DEBUG SLEEP 1.5 TTL: longer than a TTL
#   pause-write / pause-all   CLIENT PAUSE WRITE|ALL for 0.5-1.5 TTL
#   net-delay   the proxy holds every byte 0.2-1.5 TTL, both ways, for 1-3 TTL
#   net-drop    the proxy forwards nothing for 0.5-2 TTL, then all it held
#               (a partition that heals, as TCP does after packet loss)
#   net-cut     the same, then every connection it carries is closed (a
#               reset on TCP; the workers' unix socket sees an end of stream)
#   netem       tc netem delay 0.2-1.5 TTL and loss 10-50 % on lo for 1-3
#               TTL, where tc netem works (root, sch_netem): the proxy then
#               reaches Redis over TCP 127.0.0.1, which netem can touch.
#               Skipped with the reason otherwise.
# The proxy writes the net-* lines of faults.log itself (netfault-proxy.c),
# with its own times; Redis faults (CLIENT KILL, DEBUG SLEEP, ...) go to the
# real server. A net fault longer than the TTL has no excuse window in the
# checker: holders must see their loss before anyone else can take the lease.
# The proxy must exit 0 at the end (invariant netfault-proxy-exit-clean).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
. "$here/../support/redis-harness.sh" || exit 1

builddir=${REDLEASE_BUILDDIR:-.}
worker_bin=$builddir/tests/chaos/chaos-worker
proxy_bin=$builddir/tests/chaos/netfault-proxy
[ -x "$worker_bin" ] || { echo "chaos: $worker_bin not built" >&2; exit 1; }
[ -x "$proxy_bin" ] || { echo "chaos: $proxy_bin not built" >&2; exit 1; }
wrapper=${REDLEASE_TEST_WRAPPER:-}

seed=${CHAOS_SEED:-$(( $(date +%s%N) % 1000000 ))}
duration=${CHAOS_DURATION_S:-10}
nworkers=${CHAOS_WORKERS:-4}
# Short leases, so that freezes and pauses of a few hundred ms outlast them.
if [ -n "$wrapper" ]; then ttl=${CHAOS_TTL_MS:-400}; else ttl=${CHAOS_TTL_MS:-100}; fi
RANDOM=$seed
echo "chaos: seed $seed (CHAOS_SEED=$seed replays the schedule), $nworkers workers, ${duration} s, TTL $ttl ms${wrapper:+, under $wrapper}"

now_ms() { "$worker_bin" --now; }
# rand_between LO HI: an integer in [LO, HI] from the seeded RANDOM.
rand_between() { echo $(( $1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1) )); }
ms_to_s() { printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )); }
# rcli CMD...: fails on no answer and on an error reply (redis-cli itself
# exits 0 on one), so a fault Redis refused is never counted as injected.
rcli() {
    local reply
    reply=$(timeout 10 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" "$@" 2>&1) || return 1
    case $reply in ERR* | *"(error)"* | WRONGTYPE* | NOPERM*) return 1 ;; esac
}

redis_harness_start || exit 1
[ -n "${REDLEASE_TEST_REDIS_CLI:-}" ] || { echo "chaos: redis-cli is needed" >&2; exit 1; }
topology=${CHAOS_TOPOLOGY:-single}
case $topology in single | sentinel) ;; *) echo "chaos: CHAOS_TOPOLOGY: single or sentinel" >&2; exit 1 ;; esac

# The sentinel topology: a replica of the harness's server and a Sentinel
# watching it as master "chaos"; primary_cli runs redis-cli on whichever
# server is the primary now.
primary_cli() { timeout 10 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" "$@"; }
if [ "$topology" = sentinel ]; then
    rcli CONFIG SET repl-diskless-sync-delay 0 || exit 1
    redis_harness_extra chaos-replica --port --replicaof 127.0.0.1 "$REDLEASE_TEST_PORT" \
        --repl-diskless-sync-delay 0 || exit 1
    replica_port=$REDLEASE_EXTRA_PORT
    for _ in $(seq 1 100); do # a replica takes writes only after its first ACK
        [ "$(printf 'SET ready 1\r\nWAIT 1 100\r\n' | primary_cli 2>/dev/null | tail -n 1)" = 1 ] && break
    done
    mkdir -p "$REDLEASE_TEST_DIR/chaos-sentinel" || exit 1
    printf 'sentinel monitor chaos 127.0.0.1 %d 1\nsentinel down-after-milliseconds chaos 5000\n' \
        "$REDLEASE_TEST_PORT" >"$REDLEASE_TEST_DIR/chaos-sentinel/redis.conf"
    redis_harness_extra chaos-sentinel --port --sentinel || exit 1
    sentinel_port=$REDLEASE_EXTRA_PORT
    primary_cli() {
        local addr
        addr=$(timeout 10 "$REDLEASE_TEST_REDIS_CLI" -p "$sentinel_port" SENTINEL get-master-addr-by-name chaos | tail -n 1)
        timeout 10 "$REDLEASE_TEST_REDIS_CLI" -p "${addr:-0}" "$@"
    }
    echo "chaos: sentinel topology: primary 127.0.0.1:$REDLEASE_TEST_PORT, replica 127.0.0.1:$replica_port, Sentinel 127.0.0.1:$sentinel_port"
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/redlease-chaos.XXXXXX") || exit 1
faults=$out/faults.log
store=$out/store
echo "0 0" >"$store"
: >"$store.log"
: >"$faults"

declare -a pids
proxy_pid=
netem_on=
cleanup_workers() {
    local p
    for p in "${pids[@]}" $proxy_pid; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    [ -z "$netem_on" ] || tc qdisc del dev lo root 2>/dev/null
}
trap 'cleanup_workers; _rh_trap' EXIT
trap 'cleanup_workers; _rh_trap; exit 130' INT
trap 'cleanup_workers; _rh_trap; exit 143' TERM

if [ "$topology" = single ]; then
    # The netem probe: a delay qdisc on lo needs CAP_NET_ADMIN and sch_netem.
    netem_reason=
    if ! command -v tc >/dev/null 2>&1; then
        netem_reason="tc not installed"
    elif ! msg=$(tc qdisc add dev lo root netem delay 1ms 2>&1); then
        netem_reason="tc netem refused: $msg"
    else
        tc qdisc del dev lo root 2>/dev/null
    fi
    if [ -n "$netem_reason" ]; then
        echo "chaos: netem skipped: $netem_reason"
        echo "$(now_ms) skipped netem" >>"$faults"
        upstream=$REDLEASE_TEST_SOCKET
    else
        # netem only touches IP traffic: the proxy's hop to Redis goes over TCP.
        upstream=127.0.0.1:$REDLEASE_TEST_PORT
    fi

    # The fault proxy between the workers and Redis, fed through a FIFO; its
    # fault lines go to proxy.out, merged into faults.log at the end.
    proxy_sock=$out/proxy.sock
    mkfifo "$out/proxy.ctl" || exit 1
    $wrapper "$proxy_bin" "$proxy_sock" "$upstream" <"$out/proxy.ctl" >"$out/proxy.out" 2>"$out/proxy.err" &
    proxy_pid=$!
    exec {proxy_ctl}>"$out/proxy.ctl"
    for _ in $(seq 1 300); do [ -S "$proxy_sock" ] && break; sleep 0.1; done
    [ -S "$proxy_sock" ] || { echo "chaos: netfault-proxy did not start:" >&2; cat "$out/proxy.err" >&2; exit 1; }
    echo "chaos: workers reach Redis through netfault-proxy ($proxy_sock -> $upstream)"
    # proxy_cmd LINE: one command to the proxy; fails if it is gone (the write
    # runs in a subshell, so a SIGPIPE ends only that). Long-lived children get
    # the FIFO closed ({proxy_ctl}>&-).
    proxy_cmd() { (echo "$1" >&"$proxy_ctl") 2>/dev/null; }
fi

# Where the workers find Redis: through the proxy, or through the Sentinel
# (no proxy: proxy_ctl is a stand-in the children close all the same).
if [ "$topology" = single ]; then
    reach=(REDLEASE_SOCKET="$proxy_sock")
else
    reach=(CHAOS_SENTINEL="127.0.0.1:$sentinel_port" CHAOS_MASTER=chaos
           CHAOS_MIN_REPLICAS="${CHAOS_MIN_REPLICAS:-1}")
    exec {proxy_ctl}>/dev/null
fi
for w in $(seq 1 "$nworkers"); do
    env CHAOS_SEED=$seed CHAOS_TTL_MS=$ttl "${reach[@]}" \
        $wrapper "$worker_bin" "$w" "$store" >"$out/worker$w.log" 2>"$out/worker$w.err" {proxy_ctl}>&- &
    pids[w]=$!
done

# A holder right now: a worker whose last line says it is in a cycle.
# Holders change every few ms: look a few times, else take any worker.
pick_holder() {
    local w try
    for try in $(seq 1 20); do
        for w in $(seq 1 "$nworkers"); do
            if tail -n 1 "$out/worker$w.log" 2>/dev/null | grep -qE ' (acquired|act-begin|read ok)'; then
                echo "$w"; return
            fi
        done
        sleep 0.005
    done
    rand_between 1 "$nworkers"
}

kinds=(stop kill restart sleep-renew sleep-ttl pause-all net-delay net-drop net-cut)
if [ "$topology" = sentinel ]; then
    kinds=(failover stop kill)
elif redis_harness_version_at_least 6 2; then
    kinds+=(pause-write)
else
    echo "chaos: pause-write skipped: CLIENT PAUSE WRITE needs Redis 6.2, this is $REDLEASE_TEST_REDIS_VERSION"
    echo "$(now_ms) skipped pause-write" >>"$faults"
fi
[ "$topology" = sentinel ] || [ -n "$netem_reason" ] || kinds+=(netem)
if [ -n "${CHAOS_KINDS:-}" ]; then
    for k in $CHAOS_KINDS; do
        [[ " ${kinds[*]} " == *" $k "* ]] || { echo "chaos: CHAOS_KINDS: no fault '$k' here (${kinds[*]})" >&2; exit 1; }
    done
    read -ra kinds <<<"$CHAOS_KINDS"
fi
# Let every worker connect before the first fault (valgrind starts slowly).
sleep "$(ms_to_s $(( ttl * 2 )))"
end=$(( $(date +%s) + duration ))
while [ "$(date +%s)" -lt "$end" ]; do
    sleep "$(ms_to_s "$(rand_between "$ttl" $(( ttl * 3 )))")"
    kind=${kinds[RANDOM % ${#kinds[@]}]}
    t0=$(now_ms)
    case $kind in
        stop)
            w=$(pick_holder); d=$(rand_between $(( ttl * 3 / 2 )) $(( ttl * 5 / 2 )))
            t0=$(now_ms); kill -STOP "${pids[w]}"; sleep "$(ms_to_s "$d")"; kill -CONT "${pids[w]}"
            echo "$t0 stop $(now_ms) worker=$w" >>"$faults" ;;
        kill)
            case $(primary_cli CLIENT KILL TYPE normal 2>&1) in
                "" | ERR* | *"(error)"*) kind=failed-$kind ;;
            esac
            echo "$t0 $kind $(now_ms)" >>"$faults" ;;
        failover)
            reply=$(timeout 10 "$REDLEASE_TEST_REDIS_CLI" -p "$sentinel_port" SENTINEL FAILOVER chaos 2>&1)
            [ "$reply" = OK ] || kind=failed-$kind
            echo "$t0 $kind $(now_ms)" >>"$faults" ;;
        restart)
            redis_harness_restart {proxy_ctl}>&- || { echo "chaos: redis did not restart" >&2; exit 1; }
            echo "$t0 restart $(now_ms)" >>"$faults" ;;
        sleep-renew | sleep-ttl)
            if [ "$kind" = sleep-renew ]; then d=$(( ttl / 2 )); else d=$(( ttl * 3 / 2 )); fi
            rcli DEBUG SLEEP "$(ms_to_s "$d")" || kind=failed-$kind
            echo "$t0 $kind $(now_ms) ms=$d" >>"$faults" ;;
        pause-write | pause-all)
            d=$(rand_between $(( ttl / 2 )) $(( ttl * 3 / 2 )))
            # Without a mode, CLIENT PAUSE pauses all clients (any version).
            mode=(); [ "$kind" = pause-write ] && mode=(WRITE)
            if rcli CLIENT PAUSE "$d" "${mode[@]}"; then sleep "$(ms_to_s "$d")"; else kind=failed-$kind; fi
            echo "$t0 $kind $(now_ms) ms=$d" >>"$faults" ;;
        net-delay | net-drop | net-cut)
            # The proxy logs these itself (proxy.out); only a refusal here.
            if [ "$kind" = net-delay ]; then
                d=$(rand_between $(( ttl / 5 )) $(( ttl * 3 / 2 )))
                cmd="delay $d $(rand_between "$ttl" $(( ttl * 3 )))"
            else
                cmd="${kind#net-} $(rand_between $(( ttl / 2 )) $(( ttl * 2 )))"
            fi
            if proxy_cmd "$cmd"; then sleep "$(ms_to_s "${cmd##* }")"
            else echo "$t0 failed-$kind $(now_ms) proxy gone" >>"$faults"; fi ;;
        netem)
            d=$(rand_between $(( ttl / 5 )) $(( ttl * 3 / 2 ))); loss=$(rand_between 10 50)
            f=$(rand_between "$ttl" $(( ttl * 3 )))
            t0=$(now_ms)
            if tc qdisc add dev lo root netem delay "${d}ms" loss "${loss}%" 2>/dev/null; then
                netem_on=1; sleep "$(ms_to_s "$f")"
                tc qdisc del dev lo root 2>/dev/null; netem_on=
            else
                kind=failed-$kind
            fi
            echo "$t0 $kind $(now_ms) ms=$f delay=$d loss=$loss" >>"$faults" ;;
    esac
done

# Stop: SIGTERM each worker (graceful close) and wait; a worker still there
# after the grace period hung.
: >"$out/exits.log"
for w in $(seq 1 "$nworkers"); do kill -CONT "${pids[w]}" 2>/dev/null; kill -TERM "${pids[w]}" 2>/dev/null; done
if [ -n "$wrapper" ]; then grace=60; else grace=15; fi
for w in $(seq 1 "$nworkers"); do
    for _ in $(seq 1 $(( grace * 10 ))); do kill -0 "${pids[w]}" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "${pids[w]}" 2>/dev/null; then
        kill -KILL "${pids[w]}" 2>/dev/null; wait "${pids[w]}" 2>/dev/null
        echo "exit $w hung $(wc -c <"$out/worker$w.err")" >>"$out/exits.log"
    else
        wait "${pids[w]}"; st=$?
        echo "exit $w $st $(wc -c <"$out/worker$w.err")" >>"$out/exits.log"
    fi
done
pids=()

# Stop the proxy after the workers (their graceful close went through it):
# it must exit 0 (under valgrind: no error, no leak). SIGTERM, as other
# processes may hold the FIFO open too.
exec {proxy_ctl}>&-
if [ "$topology" = single ]; then
    kill -TERM "$proxy_pid" 2>/dev/null
    proxy_status=hung
    for _ in $(seq 1 $(( grace * 10 ))); do kill -0 "$proxy_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$proxy_pid" 2>/dev/null; then kill -KILL "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null
    else wait "$proxy_pid"; proxy_status=$?; fi
    proxy_pid=
    grep -E '^[0-9]+\.[0-9]+ net-(delay|drop|cut) ' "$out/proxy.out" >>"$faults"
fi

rc=0
awk -v ttl="$ttl" -v counter="$(cut -d' ' -f1 "$store")" \
    -v tmp="$out/sort.tmp" -f "$here/chaos-check.awk" "$faults" "$store.log" "$out/exits.log" "$out"/worker*.log || rc=1
if [ "$topology" = single ]; then
    overflows=$(grep -c ' overflow ' "$out/proxy.out")
    upstream_failed=$(grep -c ' upstream ' "$out/proxy.err")
    echo "figure: netfault-proxy: exit $proxy_status, $overflows connections over its byte cap, $upstream_failed upstream connects failed (Redis restarting)"
    if [ "$proxy_status" = 0 ]; then
        echo "invariant: netfault-proxy-exit-clean ok (exit 0)"
    else
        echo "invariant: netfault-proxy-exit-clean FAIL (exit $proxy_status)"; rc=1
        grep -v ' upstream \| begin ' "$out/proxy.err" | head -n 40
    fi
else
    echo "figure: failovers: $(grep -c ' failover ' "$faults") done, $(grep -c ' failed-failover ' "$faults") refused (one under way, or no replica ready)"
fi
for w in $(seq 1 "$nworkers"); do
    if [ -s "$out/worker$w.err" ]; then echo "--- worker $w stderr:"; head -n 40 "$out/worker$w.err"; fi
done
if [ "$rc" -ne 0 ] || [ -n "${CHAOS_KEEP:-}" ]; then
    echo "chaos: logs kept in $out (seed $seed)"
else
    rm -rf -- "$out"
fi
exit "$rc"
