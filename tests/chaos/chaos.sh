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
#   CHAOS_WAIT_MODE   the workers' wait_mode: default (unset: the
#                     library's default, polling), poll, or queue
#                     (REDLEASE_WAIT_QUEUE: waiters join a FIFO queue in
#                     Redis and are handed the lock, docs/design.md section
#                     11). Queue mode adds the waiter faults below to the
#                     schedule (each of them once first, in a seeded order)
#                     and makes "every live waiter served" an invariant
#                     (single and sentinel topologies: Cluster and quorum
#                     clients have no queue yet and poll, so it is a figure
#                     there, as it is in the other modes)
#   CHAOS_WAIT_MS     the workers' wait budget (default 4 TTL; in queue mode
#                     3 (N - 1) (CS + 1.5 TTL), about three times the
#                     checker's bound for a wait: a waiter gives up only
#                     when faults of its own or everyone's made its wait
#                     long, and a stranded one overstays its bound first)
#   CHAOS_LIMIT       0 (default): the workers contend for a mutex. N > 0:
#                     for a counting semaphore of N permits (the lock
#                     option limit, docs/design.md section 12), which the
#                     workers in even slots hold with weight 2 (when N is 2
#                     or more), the others with 1; the checker's first
#                     invariant is then within-limit-outside-restarts (the
#                     weights of the holders at any instant add up to N at
#                     most) instead of no-overlap. Under a quorum every
#                     worker holds weight 1 (each member admits less than
#                     the limit: docs/design.md 12.3)
#   CHAOS_SHARED      1: shared and exclusive holders (the lock option
#                     shared, docs/design.md 12.4): odd slots shared, even
#                     ones exclusive (a mutex's handle); the checker's
#                     capacity is then the workers' count, an exclusive
#                     holder weighing all of it: the first invariant,
#                     exclusive-alone-outside-restarts, is that no one
#                     holds beside an exclusive holder. Not with
#                     CHAOS_LIMIT
#   CHAOS_CS_MS       the longest sleep in a critical section (default 1.5
#                     TTL), for the workers and the checker's bound
#   CHAOS_KINDS       only these fault kinds (words from the list below;
#                     default all of them), e.g. "net-delay net-drop net-cut"
#   CHAOS_TOPOLOGY    single (default), sentinel, cluster or quorum.
#                     sentinel: the harness's server as a primary, one
#                     replica of it and one Sentinel; the workers find the
#                     primary through the Sentinel and ask for replica_acks
#                     1 (CHAOS_MIN_REPLICAS); the faults are failover, stop
#                     and kill (no proxy, no restart), and a failover has no
#                     excuse window: 0 overlaps.
#                     cluster: a Redis Cluster of six more servers
#                     (cluster-enabled, node timeout 1 s, each in a folder
#                     of its own, data and bus ports below the ephemeral
#                     range), three primaries with a third of the slots
#                     each and one replica each, formed here with redis-cli
#                     (SET-CONFIG-EPOCH, ADDSLOTSRANGE, MEET, REPLICATE) and
#                     waited for (cluster_state:ok everywhere, replicas
#                     connected); the harness's own server is not a node
#                     and stays unused. Each worker is given one or two
#                     nodes (CHAOS_CLUSTER; odd workers one, even ones two,
#                     replicas among them) and replica_acks 1. The faults
#                     are failover, migrate, stop and kill (no proxy, no
#                     restart), the first two a failover and a migration
#                     (in a seeded order); failovers and migrations have no
#                     excuse window: 0 overlaps. After each of them the
#                     script waits until every node agrees on the slot's
#                     owner and every replica is connected (invariant
#                     cluster-settled). cluster.log in the log directory
#                     has their steps, node*.log the nodes' own logs.
#                     quorum: CHAOS_QUORUM_N (default 5) more servers,
#                     independent masters (no replication), each in a
#                     folder of its own with appendonly yes and appendfsync
#                     always, so that a restarted one keeps its keys; one
#                     restarted empty (member-wipe) is kept out of new
#                     majorities by the workers' restart guard (the client
#                     option quorum_restart_guard_ms, by default the TTL:
#                     docs/design.md section 10); the harness's
#                     own server stays unused. Every worker is given all of
#                     them (CHAOS_QUORUM: the client option quorum_addrs, in
#                     an order of its own) and no replica_acks (refused
#                     under a quorum). The faults are member-stop,
#                     member-restart, member-wipe, member-pause, stop and kill (no
#                     proxy); none has an excuse window: 0 overlaps (a
#                     majority frozen costs the lease: holders must see
#                     that before anyone else can hold it). member*.log in
#                     the log directory are the members' own logs. Fences
#                     only order holders that shared the member with the
#                     largest counter (design.md 10): fences-increase is a
#                     figure there, not an invariant
#   REDLEASE_TEST_WRAPPER  runs each worker under it (valgrind)
#   REDLEASE_BUILDDIR      where tests/chaos/chaos-worker and netfault-proxy are
#
# Faults (one at a time, 1-3 TTL apart):
#   stop        SIGSTOP a holder for 1.5-2.5 TTL, then SIGCONT (a GC pause)
# The waiter faults (queue mode, or named in CHAOS_KINDS) aim at a worker
# that is waiting: its log's last line of a cycle's state says "waiting"
# (told busy at least once, so queued in queue mode), looked for over 0.1 s
# and else any worker not holding the lease:
#   waiter-stop SIGSTOP a waiter for 0.3-0.9 TTL (within its holder's
#               TTL), 1.5-3 TTL (past it), or now and then (1 in 4) 1.1-1.4
#               times its queue entry's life, max(TTL, 1 s), so that the
#               entry dies
#   waiter-kill SIGKILL a waiter; 0-1 TTL later a new worker process takes
#               its place, with the next worker id (its own log): the queue
#               keeps the dead one's entry until it dies or is handed the
#               lock (one claim, min(TTL, command timeout))
#   pubsub-kill (single, sentinel) CLIENT KILL TYPE pubsub: every
#               worker's wake-up link (words published meanwhile are lost;
#               waiters go by their timers until they subscribe again)
#   waiter-net-drop / waiter-net-cut  (single) net-drop or net-cut of
#               0.5-2 TTL on one waiter's connections alone (its command
#               and its pub/sub link; the proxy's pid= scope)
#   kill        CLIENT KILL TYPE normal (cluster: on every node; quorum:
#               on 1 to N members): every worker's connection drops
#   failover    (sentinel) SENTINEL FAILOVER: the replica becomes the
#               primary, the primary its replica; refused while one is
#               under way or no replica is ready (failed-failover).
#               (cluster) CLUSTER FAILOVER on the replica of the shard that
#               serves the lock key's slot (CLUSTER KEYSLOT lock:{chaos}),
#               done once it says ROLE master (failed-failover if refused,
#               or not done within 6 s); a node is asked again 4.5 s after
#               its last election at the earliest (Redis 7.0 keeps a
#               replica's election state for 4 node timeouts: asked sooner,
#               it is master for a moment and is then put back, while its
#               primary stays paused for 5 s and the slot never moves)
#   migrate     (cluster) the lock key's slot moved to another primary and,
#               1-3 TTL later, back, as a reshard does: SETSLOT IMPORTING on
#               the target, MIGRATING on the source, every key of the slot
#               (CLUSTER GETKEYSINSLOT: the lock and its fence counter)
#               MIGRATEd one by one with a pause of 0.5-1 TTL between two
#               and before the handover, then SETSLOT NODE on the target,
#               the source and the third primary (failed-migrate if a step
#               of the way there was refused)
#   restart     redis-server SIGKILLed and started empty (same socket): the
#               window [kill, back up + TTL] is where overlaps are expected
#   member-stop (quorum) SIGSTOP of 1 or 2 members (a minority) for 0.5-4
#               TTL, or now and then (1 in 6) of 3 of 5 (a majority: more
#               than N - Q) for 1.5-3 TTL, which costs every lease; like
#               member-pause, when a worker is seen holding the lease (0.1
#               s at most)
#   member-restart  (quorum) one member SIGKILLed, down for 0-2 TTL, then
#               started again on its port, from its folder: it reloads its
#               append-only file (every write fsynced before its reply),
#               so it comes back with the keys it confirmed. No window:
#               overlaps there are failures too
#   member-wipe  (quorum) a minority of the members frozen (SIGSTOP) for
#               1-2 TTL, so that a lease taken meanwhile is held by a bare
#               majority, the others; then one of those SIGKILLed, its files
#               deleted, down for 0-0.5 TTL and started again empty (as a
#               server without persistence after a crash, having forgotten
#               every holder), and the frozen ones let go (SIGCONT). With
#               them its yes would make a majority beside a holder that
#               still counts it. No window either: the workers' restart
#               guard keeps it out of new majorities for a TTL, by which
#               time every holder that counted it has seen its lease end
#   member-pause  (quorum) CLIENT PAUSE ALL or WRITE on 1-3 members for
#               0.5-1.5 TTL
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
cs_ms=${CHAOS_CS_MS:-$(( ttl * 3 / 2 ))}
wait_mode=${CHAOS_WAIT_MODE:-default}
case $wait_mode in default | poll | queue) ;; *) echo "chaos: CHAOS_WAIT_MODE: default, poll or queue" >&2; exit 1 ;; esac
limit=${CHAOS_LIMIT:-0}
[[ $limit =~ ^[0-9]+$ ]] || { echo "chaos: CHAOS_LIMIT: a number of permits (0: a mutex)" >&2; exit 1; }
shared=${CHAOS_SHARED:-0}
[[ $shared =~ ^[01]$ ]] || { echo "chaos: CHAOS_SHARED: 0 or 1" >&2; exit 1; }
[ "$shared" = 0 ] || [ "$limit" = 0 ] || { echo "chaos: CHAOS_SHARED and CHAOS_LIMIT: one kind at a time" >&2; exit 1; }
# The checker's capacity: a semaphore's limit; with shared holders the
# workers' count, an exclusive holder weighing all of it and a shared one 1,
# so "within the capacity" is "an exclusive holder alone".
capacity=$limit
[ "$shared" = 0 ] || capacity=$nworkers
# The wait budget: the worker's default (4 TTL) unless set; in queue mode
# about three times the checker's bound for a wait (chaos-check.awk,
# live-waiters-served), so that a waiter gives up only after faults of its
# own or everyone's, and a stranded one overstays its bound first: a budget
# below the bound would make waiters leave and join the tail again as a
# matter of course (the queue then owes them nothing), and hide one that is
# never served.
wait_ms=${CHAOS_WAIT_MS:-}
if [ "$wait_mode" = queue ] && [ -z "$wait_ms" ]; then
    wait_ms=$(( 3 * (nworkers > 1 ? nworkers - 1 : 1) * (cs_ms + ttl * 3 / 2) ))
fi
RANDOM=$seed
echo "chaos: seed $seed (CHAOS_SEED=$seed replays the schedule), $nworkers workers, ${duration} s, TTL $ttl ms, wait mode $wait_mode${wait_ms:+, wait budget $wait_ms ms}$([ "$limit" = 0 ] || echo ", a semaphore of $limit permits")$([ "$shared" = 0 ] || echo ", shared (odd slots) and exclusive (even) holders")${wrapper:+, under $wrapper}"

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
case $topology in single | sentinel | cluster | quorum) ;; *) echo "chaos: CHAOS_TOPOLOGY: single, sentinel, cluster or quorum" >&2; exit 1 ;; esac
# N servers' queues hold no one order: the library refuses queue mode
# under a quorum (REDLEASE_EINVAL), and its default there wakes in no order.
if [ "$wait_mode" = queue ] && [ "$topology" = quorum ]; then
    echo "chaos: CHAOS_WAIT_MODE=queue with CHAOS_TOPOLOGY=quorum: a quorum's waiters are woken in no order (use default)" >&2
    exit 1
fi

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

# The cluster topology: six more servers, node 1-3 the primaries, 4-6 their
# replicas (4 of 1, ...); the harness's server is no node (it is not
# cluster-enabled) and stays unused. node_cmd PORT CMD...: redis-cli on the
# node at 127.0.0.1:PORT, its raw reply; node_ok: that reply is OK.
node_cmd() { local p=$1; shift; timeout 10 "$REDLEASE_TEST_REDIS_CLI" -p "$p" "$@" 2>&1; }
node_ok() { [ "$(node_cmd "$@")" = OK ]; }
# clog TEXT: a line "T TEXT" in cluster.log, the steps of each cluster fault.
clog() { echo "$(now_ms) $*" >>"$out/cluster.log"; }
# slot_owner PORT SLOT: "ID PORT" of the primary serving SLOT, as the node
# at PORT sees it (slot fields: "LO-HI", "N"; "[N->-ID]" marks a migration).
slot_owner() {
    node_cmd "$1" CLUSTER NODES | awk -v s="$2" '
        $3 ~ /master/ && $3 !~ /(^|,)fail(,|$)/ {
            for (i = 9; i <= NF; i++) {
                if ($i ~ /^\[/) continue
                n = split($i, r, "-"); lo = r[1] + 0; hi = (n > 1 ? r[2] : r[1]) + 0
                if (lo <= s && s <= hi) { split($2, a, /[:@]/); print $1, a[2]; exit }
            }
        }'
}
# primaries PORT: "ID PORT" of every primary the node at PORT knows.
primaries() {
    node_cmd "$1" CLUSTER NODES | awk '$3 ~ /master/ { split($2, a, /[:@]/); print $1, a[2] }'
}
# replica_of PORT ID: the port of a replica of the primary ID, as the node at PORT sees it.
replica_of() {
    node_cmd "$1" CLUSTER NODES | awk -v m="$2" '$4 == m && $3 ~ /slave/ { split($2, a, /[:@]/); print a[2]; exit }'
}
# node_view PORT SLOT: "OWNER SHAPE" as the node at PORT sees the cluster:
# the port of SLOT's primary (or none), and ok if it knows three primaries
# with slots, each with one replica, and no node failing (else bad).
node_view() {
    node_cmd "$1" CLUSTER NODES | awk -v s="$2" '
        { split($2, a, /[:@]/); flags[$1] = $3; master[$1] = $4; nslots[$1] = NF - 8
          if ($3 ~ /fail/) bad = 1 }
        $3 ~ /master/ {
            for (i = 9; i <= NF; i++) {
                if ($i ~ /^\[/) continue
                n = split($i, r, "-"); lo = r[1] + 0; hi = (n > 1 ? r[2] : r[1]) + 0
                if (lo <= s && s <= hi) owner = a[2]
            }
        }
        END {
            for (id in flags) if (flags[id] ~ /master/ && nslots[id] > 0) { m++; primary[id] = 1 }
            for (id in flags) if (flags[id] ~ /slave/ && (master[id] in primary)) { nr++; kids[master[id]]++ }
            for (id in primary) if (kids[id] != 1) bad = 1
            print (owner == "" ? "none" : owner), (m == 3 && nr == 3 && !bad ? "ok" : "bad")
        }'
}
# cluster_ok [SLOT PORT]: every node says cluster_state:ok, knows all six
# and sees three primaries with a replica each (and, given, the primary at
# PORT serving SLOT); each replica is connected to its primary (it must
# be, to take a failover).
cluster_ok() {
    local p info replicas=0 role view
    for p in "${node_port[@]}"; do
        info=$(node_cmd "$p" CLUSTER INFO)
        [[ $info == *cluster_state:ok* && $info == *cluster_known_nodes:6$'\r'* ]] || return 1
        view=$(node_view "$p" "${1:-0}")
        [ "${view#* }" = ok ] || return 1
        [ -z "${2:-}" ] || [ "${view% *}" = "$2" ] || return 1
        mapfile -t role < <(node_cmd "$p" ROLE)
        if [ "${role[0]}" = slave ]; then
            [ "${role[3]}" = connected ] || return 1
            replicas=$((replicas + 1))
        fi
    done
    [ "$replicas" = 3 ]
}
# cluster_settle SLOT PORT: wait (up to 15 s) until the cluster is ok and
# every node says the primary at PORT serves SLOT; 1 if it never was.
cluster_settle() {
    for _ in $(seq 1 150); do
        cluster_ok "$1" "$2" && { clog "settled: slot $1 on $2 everywhere"; return 0; }
        sleep 0.1
    done
    clog "not settled: slot $1 on $2 not everywhere, or a replica not connected"
    local p
    for p in "${node_port[@]}"; do
        clog "node $p: $(node_cmd "$p" ROLE | tr '\n' ' '); $(node_cmd "$p" CLUSTER INFO | grep -E 'cluster_(state|known_nodes|current_epoch)' | tr -d '\r' | tr '\n' ' ')"
        node_cmd "$p" CLUSTER NODES | sed "s/^/    $p: /" >>"$out/cluster.log"
    done
    return 1
}
# move_slot SLOT FROM_ID FROM_PORT TO_ID TO_PORT GAP_MS: migrates SLOT as a
# reshard does, with a GAP_MS pause between two keys and before the
# handover (none before the first key: a lease held when the keys were
# listed is likely still held when its key moves);
# prints the number of keys moved. 1 (and a line on stderr) if a step was
# refused: before any key moved, the slot is left stable where it was;
# after, it is handed over all the same.
move_slot() {
    local slot=$1 fid=$2 fp=$3 tid=$4 tp=$5 gap=$6 key reply n=0 p step='' tried=''
    local -a keys
    clog "migrate slot $slot $fp -> $tp"
    if ! node_ok "$tp" CLUSTER SETSLOT "$slot" IMPORTING "$fid"; then
        step="IMPORTING on $tp"
    elif ! node_ok "$fp" CLUSTER SETSLOT "$slot" MIGRATING "$tid"; then
        step="MIGRATING on $fp"
    else
        clog "slot $slot importing on $tp, migrating on $fp"
        for _ in $(seq 1 20); do
            mapfile -t keys < <(node_cmd "$fp" CLUSTER GETKEYSINSLOT "$slot" 100 | grep -v '^$')
            [ "${#keys[@]}" -gt 0 ] || break
            for key in "${keys[@]}"; do
                [ -z "$tried" ] || sleep "$(ms_to_s "$gap")"
                tried=1
                reply=$(node_cmd "$fp" MIGRATE 127.0.0.1 "$tp" "$key" 0 5000)
                clog "MIGRATE $key: $reply"
                case $reply in
                    OK) n=$((n + 1)) ;;
                    NOKEY) ;; # expired meanwhile
                    *) step="MIGRATE $key: $reply"; break 2 ;;
                esac
            done
        done
    fi
    if [ -n "$step" ] && [ "$n" = 0 ]; then
        node_cmd "$tp" CLUSTER SETSLOT "$slot" STABLE >/dev/null
        node_cmd "$fp" CLUSTER SETSLOT "$slot" STABLE >/dev/null
        echo "chaos: migrate of slot $slot $fp -> $tp refused: $step" >&2
        return 1
    fi
    sleep "$(ms_to_s "$gap")"
    # The handover: the target first, then the source, then the others.
    for p in "$tp" "$fp" $(primaries "$tp" | awk -v a="$tp" -v b="$fp" '$2 != a && $2 != b { print $2 }'); do
        reply=$(node_cmd "$p" CLUSTER SETSLOT "$slot" NODE "$tid")
        clog "SETSLOT $slot NODE $tp on $p: $reply"
        [ "$reply" = OK ] || step="${step:+$step; }SETSLOT NODE on $p: $reply"
    done
    echo "$n"
    if [ -n "$step" ]; then echo "chaos: migrate of slot $slot $fp -> $tp: $step" >&2; return 1; fi
}
if [ "$topology" = cluster ]; then
    declare -a node_port node_id
    formed_from=$(date +%s%N)
    for i in 1 2 3 4 5 6; do
        redis_harness_cluster_node "chaos-node$i" --repl-diskless-sync-delay 0 || exit 1
        node_port[i]=$REDLEASE_EXTRA_PORT
        node_id[i]=$(node_cmd "${node_port[i]}" CLUSTER MYID)
        [[ ${node_id[i]} =~ ^[0-9a-f]{40}$ ]] || { echo "chaos: node $i: CLUSTER MYID: ${node_id[i]}" >&2; exit 1; }
    done
    redis_harness_cluster_form "${node_port[@]:1:3}" -- "${node_port[@]:4:3}" || exit 1
    for _ in $(seq 1 300); do cluster_ok && break; sleep 0.1; done
    cluster_ok || { echo "chaos: the cluster did not form within 30 s" >&2; exit 1; }
    formed_in=$(( ($(date +%s%N) - formed_from) / 1000000 ))
    # The worker's lease key is key_prefix "{" resource "}" (chaos-worker.c).
    lock_key='lock:{chaos}'
    lock_slot=$(node_cmd "${node_port[1]}" CLUSTER KEYSLOT "$lock_key")
    read -r _ owner_port <<<"$(slot_owner "${node_port[1]}" "$lock_slot")"
    echo "chaos: cluster topology: primaries 127.0.0.1:${node_port[1]},${node_port[2]},${node_port[3]}, their replicas ${node_port[4]},${node_port[5]},${node_port[6]}; $lock_key in slot $lock_slot, served by ${owner_port}; started and formed in $formed_in ms; the harness's server unused"
    unsettled=0
    keys_moved=0
    declare -A elected_at # node port -> when it was last asked to fail over (ms)
fi
# The quorum topology: CHAOS_QUORUM_N independent masters, member 1..N,
# persistent (append-only file, fsynced before each reply), each in a
# folder of its own; the harness's server is no member and stays unused.
# rand_to VAR LO HI: an integer in [LO, HI] from the seeded RANDOM, drawn in
# this shell (a $(...) subshell reseeds RANDOM: not replayable).
rand_to() { printf -v "$1" '%d' $(( $2 + (RANDOM * 32768 + RANDOM) % ($3 - $2 + 1) )); }
# pick_members K: K distinct members, at random, into the array picked.
pick_members() {
    local -a a; local i j t
    a=($(seq 1 "$qn"))
    for ((i = qn - 1; i > 0; i--)); do j=$((RANDOM % (i + 1))); t=${a[i]}; a[i]=${a[j]}; a[j]=$t; done
    picked=("${a[@]:0:$1}")
}
member_dir() { echo "$REDLEASE_TEST_DIR/chaos-member$1"; }
member_pid() { cat "$(member_dir "$1")/redis.pid" 2>/dev/null; }
# gone PID: the process has ended (a zombie too: it is no longer ours to reap).
gone() { [ ! -r "/proc/$1/stat" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]; }
# member_restart I DOWN_MS [wipe]: SIGKILL member I, DOWN_MS later start
# it again on its port, from its folder, with the options of its first
# start (redis_harness_extra's); with wipe, its data files deleted first;
# 0 once the new process answers PONG (it has loaded its append-only file:
# LOADING before), 1 if not within 10 s.
member_restart() {
    local i=$1 dir old pid
    dir=$(member_dir "$i"); old=$(member_pid "$i")
    [ -n "$old" ] || return 1
    kill -KILL "$old" 2>/dev/null
    for _ in $(seq 1 100); do gone "$old" && break; sleep 0.05; done
    [ "${3:-}" != wipe ] || rm -rf "$dir/appendonlydir" "$dir"/appendonly.aof* "$dir/dump.rdb"
    sleep "$(ms_to_s "$2")"
    "${REDIS_SERVER:-redis-server}" --port "${member_port[i]}" --bind 127.0.0.1 --save '' \
        --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
        "${member_opts[@]}" </dev/null >/dev/null 2>&1 || return 1
    for _ in $(seq 1 200); do
        pid=$(member_pid "$i")
        if [ -n "$pid" ] && [ "$pid" != "$old" ] && [ "$(node_cmd "${member_port[i]}" PING)" = PONG ]; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}
if [ "$topology" = quorum ]; then
    qn=${CHAOS_QUORUM_N:-5}
    { [[ $qn =~ ^[0-9]$ ]] && [ "$qn" -ge 3 ]; } || { echo "chaos: CHAOS_QUORUM_N: 3 to 9" >&2; exit 1; }
    qneed=$((qn / 2 + 1)); qspare=$((qn - qneed)) # a majority; how many may fail
    declare -a member_port aof_loads # aof_loads: "DB loaded from append only file" in its log
    member_opts=(--appendonly yes --appendfsync always)
    for i in $(seq 1 "$qn"); do
        redis_harness_extra "chaos-member$i" --port "${member_opts[@]}" || exit 1
        member_port[i]=$REDLEASE_EXTRA_PORT
        aof_loads[i]=$(grep -c 'DB loaded from append only file' "$(member_dir "$i")/redis.log")
        [ "$(node_cmd "${member_port[i]}" CONFIG GET appendfsync | tail -n 1)" = always ] ||
            { echo "chaos: member $i: appendfsync is not always" >&2; exit 1; }
    done
    echo "chaos: quorum topology: $qn independent masters 127.0.0.1:$(IFS=,; echo "${member_port[*]:1}") (appendonly yes, appendfsync always), a lease held on $qneed; the harness's server unused"
    restarts_ok=0 restarts_bad=0 wipes_ok=0 wipes_bad=0
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/redlease-chaos.XXXXXX") || exit 1
faults=$out/faults.log
store=$out/store
echo "0 0" >"$store"
: >"$store.log"
: >"$faults"
: >"$out/exits.log"
: >"$out/net-picks"

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

# Where the workers find Redis: through the proxy, through the Sentinel, or
# from one or two nodes of the cluster (no proxy: proxy_ctl is a stand-in
# the children close all the same).
if [ "$topology" = single ]; then
    reach=(REDLEASE_SOCKET="$proxy_sock")
elif [ "$topology" = sentinel ]; then
    reach=(CHAOS_SENTINEL="127.0.0.1:$sentinel_port" CHAOS_MASTER=chaos
           CHAOS_MIN_REPLICAS="${CHAOS_MIN_REPLICAS:-1}")
    exec {proxy_ctl}>/dev/null
elif [ "$topology" = quorum ]; then
    reach=(CHAOS_MIN_REPLICAS=0) # refused under a quorum: the majority is the replication
    exec {proxy_ctl}>/dev/null
else
    reach=(CHAOS_MIN_REPLICAS="${CHAOS_MIN_REPLICAS:-1}")
    exec {proxy_ctl}>/dev/null
fi
# Worker slots 1..CHAOS_WORKERS: wid[W] is the id of the process in slot W
# now, pids[W] its pid. A worker killed by the schedule (waiter-kill) is
# replaced by a new process with the next id (ids above CHAOS_WORKERS),
# which writes a log of its own.
declare -a wid
next_wid=1
# start_worker W: a new worker process in slot W. On a semaphore, even
# slots hold weight 2 (when the limit allows it), odd ones 1; a mutex has
# no weight (0: the lock option's default). With shared holders, odd slots
# are shared (weight 1 to the checker), even ones exclusive (the capacity).
start_worker() {
    local w=$1 id=$next_wid seeds=() addrs=() i weight=0 holds=0 sh=0
    next_wid=$((next_wid + 1))
    if [ "$limit" -gt 0 ]; then
        # (under a quorum each member admits less than the limit, perhaps
        # 1: weight 1 for all, docs/design.md 12.3)
        if [ "$limit" -ge 2 ] && [ $((w % 2)) = 0 ] && [ "$topology" != quorum ]; then weight=2; else weight=1; fi
    elif [ "$shared" = 1 ]; then
        if [ $((w % 2)) = 1 ]; then sh=1 holds=1; else holds=$capacity; fi
    fi
    if [ "$topology" = cluster ]; then # odd slots one node, even ones two
        seeds=(CHAOS_CLUSTER="127.0.0.1:${node_port[(w - 1) % 6 + 1]}")
        [ $((w % 2)) = 1 ] || seeds[0]+=",127.0.0.1:${node_port[(w + 2) % 6 + 1]}"
    elif [ "$topology" = quorum ]; then # every member, the list turned by w
        for i in $(seq 0 $((qn - 1))); do addrs+=("127.0.0.1:${member_port[(w - 1 + i) % qn + 1]}"); done
        seeds=(CHAOS_QUORUM="$(IFS=,; echo "${addrs[*]}")")
    fi
    env CHAOS_SEED=$seed CHAOS_TTL_MS=$ttl CHAOS_CS_MS=$cs_ms CHAOS_WAIT_MODE=$wait_mode \
        CHAOS_LIMIT="$limit" CHAOS_WEIGHT="$weight" CHAOS_SHARED="$sh" CHAOS_HOLDS="$holds" ${wait_ms:+CHAOS_WAIT_MS=$wait_ms} "${reach[@]}" "${seeds[@]}" \
        $wrapper "$worker_bin" "$id" "$store" >"$out/worker$id.log" 2>"$out/worker$id.err" {proxy_ctl}>&- &
    pids[w]=$!
    wid[w]=$id
}
for w in $(seq 1 "$nworkers"); do start_worker "$w"; done

# A holder right now: a worker whose last line says it is in a cycle.
# Holders change every few ms: look a few times, else take any worker.
# Prints the slot.
pick_holder() {
    local w try
    for try in $(seq 1 20); do
        for w in $(seq 1 "$nworkers"); do
            if tail -n 1 "$out/worker${wid[w]}.log" 2>/dev/null | grep -qE ' (acquired|act-begin|read ok)'; then
                echo "$w"; return
            fi
        done
        sleep 0.005
    done
    rand_between 1 "$nworkers"
}
# state W: the last line of slot W's log that tells where its cycle is:
# waiting (told busy: queued, in queue mode), acquiring (asked, no answer
# yet), acquired (holding from there to released), ...
state() {
    tac "$out/worker${wid[$1]}.log" 2>/dev/null |
        awk '$3 ~ /^(start|acquiring|waiting|acquired|acquire-failed|released)$/ { print $3; exit }'
}
# pick_waiter R: sets w to a slot whose worker is waiting now (told busy),
# looked for over about 0.1 s, else one not holding the lease (acquiring,
# between cycles), else any; R, drawn by the caller whatever happens here,
# chooses among them, so that the seeded schedule does not depend on how
# the looking went.
pick_waiter() {
    local r=$1 try v waiting=() other=()
    for try in $(seq 1 20); do
        waiting=() other=()
        for v in $(seq 1 "$nworkers"); do
            case $(state "$v") in
                waiting) waiting+=("$v") ;;
                acquired) ;;
                *) other+=("$v") ;;
            esac
        done
        [ "${#waiting[@]}" = 0 ] || break
        sleep 0.005
    done
    if [ "${#waiting[@]}" -gt 0 ]; then w=${waiting[r % ${#waiting[@]}]}
    elif [ "${#other[@]}" -gt 0 ]; then w=${other[r % ${#other[@]}]}
    else w=$((r % nworkers + 1)); fi
    picked_state=$(state "$w")
}

kinds=(stop kill restart sleep-renew sleep-ttl pause-all net-delay net-drop net-cut)
if [ "$topology" = sentinel ]; then
    kinds=(failover stop kill)
elif [ "$topology" = cluster ]; then
    kinds=(failover migrate stop kill)
elif [ "$topology" = quorum ]; then
    kinds=(member-stop member-restart member-wipe member-pause stop kill)
elif redis_harness_version_at_least 6 2; then
    kinds+=(pause-write)
else
    echo "chaos: pause-write skipped: CLIENT PAUSE WRITE needs Redis 6.2, this is $REDLEASE_TEST_REDIS_VERSION"
    echo "$(now_ms) skipped pause-write" >>"$faults"
fi
[ "$topology" != single ] || [ -n "$netem_reason" ] || kinds+=(netem)
# The waiter faults: by default in queue mode only, so that the schedule
# of a seed in the other modes stays what it was.
# pubsub-kill only where the workers have wake-up links (Cluster and quorum
# clients have no queue yet), the proxy's faults only where it is.
waiter_kinds=(waiter-stop waiter-kill)
[ "$topology" = cluster ] || [ "$topology" = quorum ] || waiter_kinds+=(pubsub-kill)
[ "$topology" != single ] || waiter_kinds+=(waiter-net-drop waiter-net-cut)
[ "$wait_mode" != queue ] || [ -n "${CHAOS_KINDS:-}" ] || kinds+=("${waiter_kinds[@]}")
if [ -n "${CHAOS_KINDS:-}" ]; then
    for k in $CHAOS_KINDS; do
        [[ " ${kinds[*]} ${waiter_kinds[*]} " == *" $k "* ]] || { echo "chaos: CHAOS_KINDS: no fault '$k' here (${kinds[*]} ${waiter_kinds[*]})" >&2; exit 1; }
    done
    read -ra kinds <<<"$CHAOS_KINDS"
fi
# Let every worker connect before the first fault (valgrind starts slowly).
sleep "$(ms_to_s $(( ttl * 2 )))"
# The cluster's own faults come first, in a seeded order: every run, even
# a short one, has a failover and a migration.
owed=()
if [ "$topology" = cluster ]; then
    for k in failover migrate; do [[ " ${kinds[*]} " != *" $k "* ]] || owed+=("$k"); done
    [ "${#owed[@]}" != 2 ] || [ $((RANDOM % 2)) = 0 ] || owed=(migrate failover)
fi
# The quorum's: every run has a member restart, one restarted empty and a
# majority frozen (the first member-stop), in a seeded order.
majority_owed=
if [ "$topology" = quorum ]; then
    for k in member-stop member-restart member-wipe; do [[ " ${kinds[*]} " != *" $k "* ]] || owed+=("$k"); done
    [[ " ${owed[*]} " != *" member-stop "* ]] || majority_owed=1
    for ((i = ${#owed[@]} - 1; i > 0; i--)); do
        j=$((RANDOM % (i + 1))); k=${owed[i]}; owed[i]=${owed[j]}; owed[j]=$k
    done
fi
# Queue mode: each waiter fault of the schedule once first, in a seeded
# order (shuffled), so that even a short run has every one of them.
if [ "$wait_mode" = queue ]; then
    for k in "${waiter_kinds[@]}"; do [[ " ${kinds[*]} " != *" $k "* ]] || owed+=("$k"); done
    for ((i = ${#owed[@]} - 1; i > 0; i--)); do
        j=$((RANDOM % (i + 1))); t=${owed[i]}; owed[i]=${owed[j]}; owed[j]=$t
    done
fi
end=$(( $(date +%s) + duration ))
while [ "$(date +%s)" -lt "$end" ]; do
    sleep "$(ms_to_s "$(rand_between "$ttl" $(( ttl * 3 )))")"
    if [ "${#owed[@]}" -gt 0 ]; then
        kind=${owed[0]}; owed=("${owed[@]:1}")
    else
        kind=${kinds[RANDOM % ${#kinds[@]}]}
    fi
    t0=$(now_ms)
    case $kind in
        stop)
            w=$(pick_holder); d=$(rand_between $(( ttl * 3 / 2 )) $(( ttl * 5 / 2 )))
            t0=$(now_ms); kill -STOP "${pids[w]}"; sleep "$(ms_to_s "$d")"; kill -CONT "${pids[w]}"
            echo "$t0 stop $(now_ms) worker=${wid[w]}" >>"$faults" ;;
        waiter-stop)
            # Within the TTL, past it, or (1 in 4) past the entry's life.
            r=$RANDOM; life=$(( ttl > 1000 ? ttl : 1000 ))
            case $((RANDOM % 4)) in
                0) d=$(rand_between $(( life * 11 / 10 )) $(( life * 14 / 10 ))) ;;
                1) d=$(rand_between $(( ttl * 3 / 10 )) $(( ttl * 9 / 10 ))) ;;
                *) d=$(rand_between $(( ttl * 3 / 2 )) $(( ttl * 3 ))) ;;
            esac
            pick_waiter "$r"
            t0=$(now_ms); kill -STOP "${pids[w]}"; sleep "$(ms_to_s "$d")"; kill -CONT "${pids[w]}"
            echo "$t0 waiter-stop $(now_ms) worker=${wid[w]} ms=$d was=$picked_state" >>"$faults" ;;
        waiter-kill)
            # The killed process is reaped here, and its exit noted (its
            # stderr must be empty, as every worker's); a new one takes
            # its slot after 0-1 TTL.
            r=$RANDOM; d=$(rand_between 0 "$ttl")
            pick_waiter "$r"; old=${wid[w]}
            t0=$(now_ms); kill -KILL "${pids[w]}"; wait "${pids[w]}" 2>/dev/null
            echo "exit $old killed $(wc -c <"$out/worker$old.err")" >>"$out/exits.log"
            sleep "$(ms_to_s "$d")"
            start_worker "$w"
            echo "$t0 waiter-kill $(now_ms) worker=$old new=${wid[w]} down=$d was=$picked_state" >>"$faults" ;;
        pubsub-kill)
            # Every wake-up link at once: the reply is how many were killed.
            reply=$(primary_cli CLIENT KILL TYPE pubsub 2>&1)
            [[ $reply =~ ^[0-9]+$ ]] || kind=failed-$kind
            echo "$t0 $kind $(now_ms) links=$reply" >>"$faults" ;;
        waiter-net-drop | waiter-net-cut)
            # The proxy scopes the fault to the waiter's pid and logs it
            # (proxy.out, "pid=PID"); net-picks, in the same order, gives
            # the worker id and its state when the lines are merged.
            r=$RANDOM; d=$(rand_between $(( ttl / 2 )) $(( ttl * 2 )))
            pick_waiter "$r"
            cmd="${kind#waiter-net-} $d pid=${pids[w]}"
            echo "${pids[w]} ${wid[w]} $picked_state" >>"$out/net-picks"
            if proxy_cmd "$cmd"; then sleep "$(ms_to_s "$d")"
            else echo "$t0 failed-$kind $(now_ms) proxy gone" >>"$faults"; fi ;;
        kill)
            if [ "$topology" = cluster ]; then # every node: seeds, primaries, replicas
                for p in "${node_port[@]}"; do
                    [[ $(node_cmd "$p" CLIENT KILL TYPE normal) =~ ^[0-9]+$ ]] || kind=failed-kill
                done
            elif [ "$topology" = quorum ]; then # 1 to N members
                rand_to k 1 "$qn"; pick_members "$k"
                for i in "${picked[@]}"; do
                    [[ $(node_cmd "${member_port[i]}" CLIENT KILL TYPE normal) =~ ^[0-9]+$ ]] || kind=failed-kill
                done
            else
                case $(primary_cli CLIENT KILL TYPE normal 2>&1) in
                    "" | ERR* | *"(error)"*) kind=failed-$kind ;;
                esac
            fi
            echo "$t0 $kind $(now_ms)${picked:+ members=$(IFS=,; echo "${picked[*]}")}" >>"$faults" ;;
        failover)
            if [ "$topology" = cluster ]; then
                read -r from_id from_port <<<"$(slot_owner "${node_port[1]}" "$lock_slot")"
                to_port=$(replica_of "${node_port[1]}" "$from_id")
                # Redis (7.0 at least) keeps a replica's election state for
                # 4 node timeouts after it began: asked again sooner, the
                # node "wins" on its stale votes and epoch, is master for a
                # moment, is put back as a replica by the epoch of the node
                # it replaced, and that one stays paused (the manual
                # failover's 5 s) while the cluster never moves. So a node
                # is asked again 4.5 s after its last election at the
                # earliest (valkey PR 1711 resets this state on a win).
                now=$(now_ms); wait_ms=$(( ${elected_at[${to_port:-0}]:-0} + 4500 - ${now%.*} ))
                if [ "$wait_ms" -gt 0 ]; then
                    clog "$to_port held an election less than 4.5 s ago: waiting $wait_ms ms"
                    sleep "$(ms_to_s "$wait_ms")"
                fi
                t0=$(now_ms)
                clog "CLUSTER FAILOVER on ${to_port:-none}, the replica of $from_port"
                if [ -n "$to_port" ] && node_ok "$to_port" CLUSTER FAILOVER; then
                    elected_at[$to_port]=${t0%.*}
                    for _ in $(seq 1 120); do
                        [ "$(node_cmd "$to_port" ROLE | head -n 1)" = master ] && break
                        sleep 0.05
                    done
                    if [ "$(node_cmd "$to_port" ROLE | head -n 1)" = master ]; then
                        clog "$to_port is a primary"
                    else
                        kind=failed-$kind; clog "$to_port is no primary yet: given up"
                    fi
                else
                    kind=failed-$kind
                fi
                if [ "$kind" = failover ]; then owner_port=$to_port; else owner_port=$from_port; fi
                cluster_settle "$lock_slot" "$owner_port" || {
                    unsettled=$((unsettled + 1)); echo "chaos: the cluster did not settle after a $kind" >&2; }
                echo "$t0 $kind $(now_ms) slot=$lock_slot from=$from_port to=${to_port:-none}" >>"$faults"
            else
                reply=$(timeout 10 "$REDLEASE_TEST_REDIS_CLI" -p "$sentinel_port" SENTINEL FAILOVER chaos 2>&1)
                [ "$reply" = OK ] || kind=failed-$kind
                echo "$t0 $kind $(now_ms)" >>"$faults"
            fi ;;
        migrate)
            # There, a pause, and back; the pauses between keys are where
            # the slot is half moved (ASK, and TRYAGAIN for a script whose
            # keys are on both sides).
            read -r from_id from_port <<<"$(slot_owner "${node_port[1]}" "$lock_slot")"
            mapfile -t others < <(primaries "${node_port[1]}" | awk -v f="$from_port" '$2 != f')
            read -r to_id to_port <<<"${others[RANDOM % ${#others[@]}]}"
            gap=$(rand_between $(( ttl / 2 )) "$ttl"); hold=$(rand_between "$ttl" $(( ttl * 3 )))
            t0=$(now_ms); back=no
            # move_slot prints the keys moved once the slot was handed over
            # (even if a step failed): nothing, and the slot did not move.
            moved=$(move_slot "$lock_slot" "$from_id" "$from_port" "$to_id" "$to_port" "$gap")
            if [ -z "$moved" ]; then
                kind=failed-$kind; owner_port=$from_port
            else
                cluster_settle "$lock_slot" "$to_port" || {
                    unsettled=$((unsettled + 1)); echo "chaos: the cluster did not settle after a migrate there" >&2; }
                sleep "$(ms_to_s "$hold")"
                n=$(move_slot "$lock_slot" "$to_id" "$to_port" "$from_id" "$from_port" "$gap")
                if [ -z "$n" ]; then
                    owner_port=$to_port
                else
                    back=yes; owner_port=$from_port; moved=$((moved + n))
                fi
            fi
            keys_moved=$((keys_moved + ${moved:-0}))
            cluster_settle "$lock_slot" "$owner_port" || {
                unsettled=$((unsettled + 1)); echo "chaos: the cluster did not settle after a $kind" >&2; }
            echo "$t0 $kind $(now_ms) slot=$lock_slot from=$from_port to=$to_port keys=${moved:-0} back=$back hold=$hold gap=$gap" >>"$faults" ;;
        member-stop)
            # A minority, or (1 in 6, and the first one) a majority: the
            # SIGSTOPs and SIGCONTs go out back to back.
            if [ -n "$majority_owed" ] || [ $((RANDOM % 6)) = 0 ] || [ "$qspare" = 0 ]; then
                k=$((qspare + 1)); rand_to d $((ttl * 3 / 2)) $((ttl * 3)); majority_owed=
            else
                rand_to k 1 "$qspare"; rand_to d $((ttl / 2)) $((ttl * 4))
            fi
            pick_members "$k"; mpids=()
            for i in "${picked[@]}"; do mpids+=("$(member_pid "$i")"); done
            _=$(pick_holder) # while a worker holds the lease, if one does within 0.1 s
            t0=$(now_ms)
            kill -STOP "${mpids[@]}" || kind=failed-$kind
            sleep "$(ms_to_s "$d")"
            kill -CONT "${mpids[@]}"
            echo "$t0 $kind $(now_ms) members=$(IFS=,; echo "${picked[*]}") n=$k majority=$([ "$k" -gt "$qspare" ] && echo yes || echo no) ms=$d" >>"$faults" ;;
        member-restart)
            rand_to i 1 "$qn"; rand_to d 0 $((ttl * 2))
            t0=$(now_ms)
            member_restart "$i" "$d" {proxy_ctl}>&- || {
                echo "chaos: member $i (port ${member_port[i]}) did not come back" >&2; exit 1; }
            # It reloaded the append-only file it wrote (not an empty start).
            if [ "$(grep -c 'DB loaded from append only file' "$(member_dir "$i")/redis.log")" -gt "${aof_loads[i]:-0}" ]; then
                restarts_ok=$((restarts_ok + 1))
            else
                restarts_bad=$((restarts_bad + 1))
            fi
            aof_loads[i]=$(grep -c 'DB loaded from append only file' "$(member_dir "$i")/redis.log")
            echo "$t0 $kind $(now_ms) member=$i port=${member_port[i]} down=$d" >>"$faults" ;;
        member-wipe)
            # A minority frozen first (1-2 TTL), so that the leases taken
            # meanwhile are held by a bare majority, the rest; one of the
            # rest then comes back empty and the frozen ones are let go:
            # with them, its yes would make a majority beside a holder
            # that still counts it.
            pick_members $((qspare + 1)); i=${picked[0]}; mpids=()
            for j in "${picked[@]:1}"; do mpids+=("$(member_pid "$j")"); done
            rand_to d1 "$ttl" $((ttl * 2)); rand_to d 0 $((ttl / 2))
            t0=$(now_ms)
            kill -STOP "${mpids[@]}" || kind=failed-$kind
            sleep "$(ms_to_s "$d1")"
            member_restart "$i" "$d" wipe {proxy_ctl}>&- || {
                kill -CONT "${mpids[@]}"
                echo "chaos: member $i (port ${member_port[i]}) did not come back" >&2; exit 1; }
            kill -CONT "${mpids[@]}"
            # Nothing to load: it came back empty.
            if [ "$(grep -c 'DB loaded from append only file' "$(member_dir "$i")/redis.log")" -gt "${aof_loads[i]:-0}" ]; then
                wipes_bad=$((wipes_bad + 1))
            else
                wipes_ok=$((wipes_ok + 1))
            fi
            aof_loads[i]=$(grep -c 'DB loaded from append only file' "$(member_dir "$i")/redis.log")
            echo "$t0 $kind $(now_ms) member=$i port=${member_port[i]} down=$d frozen=$(IFS=,; echo "${picked[*]:1}") ms=$d1" >>"$faults" ;;
        member-pause)
            rand_to k 1 $((qspare + 1)); pick_members "$k"; rand_to d $((ttl / 2)) $((ttl * 3 / 2))
            mode=(); [ $((RANDOM % 2)) = 0 ] || mode=(WRITE)
            _=$(pick_holder)
            t0=$(now_ms)
            for i in "${picked[@]}"; do
                [ "$(node_cmd "${member_port[i]}" CLIENT PAUSE "$d" "${mode[@]}")" = OK ] || kind=failed-$kind
            done
            sleep "$(ms_to_s "$d")"
            echo "$t0 $kind $(now_ms) members=$(IFS=,; echo "${picked[*]}") mode=${mode[0]:-ALL} ms=$d" >>"$faults" ;;
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
# after the grace period hung. (exits.log has the killed ones already.)
# A worker started in the run's last moments (a replacement) may not have
# its SIGTERM handler yet (under valgrind main comes seconds after the
# exec): its "start" line, written once the handler is in, comes first, or
# SIGTERM's default action would end it (143, a bad exit it did not make).
if [ -n "$wrapper" ]; then grace=60; else grace=15; fi
for w in $(seq 1 "$nworkers"); do
    kill -CONT "${pids[w]}" 2>/dev/null
    for _ in $(seq 1 $(( grace * 10 ))); do
        grep -q " start " "$out/worker${wid[w]}.log" 2>/dev/null && break
        kill -0 "${pids[w]}" 2>/dev/null || break
        sleep 0.1
    done
done
for w in $(seq 1 "$nworkers"); do kill -TERM "${pids[w]}" 2>/dev/null; done
for w in $(seq 1 "$nworkers"); do
    id=${wid[w]}
    for _ in $(seq 1 $(( grace * 10 ))); do kill -0 "${pids[w]}" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "${pids[w]}" 2>/dev/null; then
        kill -KILL "${pids[w]}" 2>/dev/null; wait "${pids[w]}" 2>/dev/null
        echo "exit $id hung $(wc -c <"$out/worker$id.err")" >>"$out/exits.log"
    else
        wait "${pids[w]}"; st=$?
        echo "exit $id $st $(wc -c <"$out/worker$id.err")" >>"$out/exits.log"
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
    # A fault scoped to one worker's pid is a waiter fault: named so, with
    # the worker id and its state when picked (net-picks, same order).
    grep -E '^[0-9]+\.[0-9]+ net-(delay|drop|cut) ' "$out/proxy.out" |
        awk -v picks="$out/net-picks" '
            / pid=/ {
                $2 = "waiter-" $2
                if ((getline p < picks) > 0) {
                    split(p, f, " ")
                    $0 = $0 ($NF == "pid=" f[1] ? " worker=" f[2] " was=" f[3] : " worker=unknown")
                }
            }
            { print }' >>"$faults"
fi

# The nodes' own logs go with the chaos logs.
if [ "$topology" = cluster ]; then
    for i in 1 2 3 4 5 6; do cp "$REDLEASE_TEST_DIR/chaos-node$i/redis.log" "$out/node$i-${node_port[i]}.log" 2>/dev/null; done
elif [ "$topology" = quorum ]; then
    for i in $(seq 1 "$qn"); do cp "$(member_dir "$i")/redis.log" "$out/member$i-${member_port[i]}.log" 2>/dev/null; done
fi
rc=0
# live-waiters-served is an invariant where the workers really queue: queue
# mode on one Redis or under Sentinel (chaos-worker sets reconnect_max_ms
# 200).
queue_checked=
[ "$wait_mode" != queue ] || [ "$topology" = cluster ] || queue_checked=1
awk -v ttl="$ttl" -v counter="$(cut -d' ' -f1 "$store")" -v fences_partial="$([ "$topology" != quorum ] || echo 1)" -v limit="$capacity" -v shared="$shared" \
    -v nslots="$nworkers" -v cs_ms="$cs_ms" -v reconnect_ms=200 -v queue="$queue_checked" \
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
elif [ "$topology" = sentinel ]; then
    echo "figure: failovers: $(grep -c ' failover ' "$faults") done, $(grep -c ' failed-failover ' "$faults") refused (one under way, or no replica ready)"
elif [ "$topology" = quorum ]; then
    echo "figure: members frozen: $(grep -c ' member-stop .*majority=no' "$faults") times a minority, $(grep -c ' member-stop .*majority=yes' "$faults") times a majority; paused $(grep -c ' member-pause ' "$faults") times; restarted $((restarts_ok + restarts_bad)) times from their files, $((wipes_ok + wipes_bad)) times empty"
    if [ "$restarts_bad" = 0 ]; then
        echo "invariant: members-restart-from-aof ok ($restarts_ok restarts, each reloaded its append-only file)"
    else
        echo "invariant: members-restart-from-aof FAIL ($restarts_bad of $((restarts_ok + restarts_bad)) restarts did not log loading the append-only file)"; rc=1
    fi
    if [ "$wipes_bad" = 0 ]; then
        echo "invariant: members-wiped-start-empty ok ($wipes_ok restarts with the files deleted, none loaded one)"
    else
        echo "invariant: members-wiped-start-empty FAIL ($wipes_bad of $((wipes_ok + wipes_bad)) wiped members loaded an append-only file)"; rc=1
    fi
else
    echo "figure: failovers: $(grep -c ' failover ' "$faults") done, $(grep -c ' failed-failover ' "$faults") refused or not done in time"
    echo "figure: migrations of slot $lock_slot: $(grep -c ' migrate ' "$faults") done ($(grep -c ' migrate .* back=yes' "$faults") there and back), $(grep -c ' failed-migrate ' "$faults") refused; $keys_moved keys MIGRATEd"
    if [ "$unsettled" = 0 ]; then
        echo "invariant: cluster-settled ok (after every failover and migration)"
    else
        echo "invariant: cluster-settled FAIL ($unsettled times the nodes did not agree on slot $lock_slot's owner, or a replica was not connected, within 15 s)"; rc=1
    fi
fi
for f in "$out"/worker*.err; do
    if [ -s "$f" ]; then echo "--- $(basename "$f" .err) stderr:"; head -n 40 "$f"; fi
done
if [ "$rc" -ne 0 ] || [ -n "${CHAOS_KEEP:-}" ]; then
    echo "chaos: logs kept in $out (seed $seed)"
else
    rm -rf -- "$out"
fi
exit "$rc"
