#!/bin/bash
# SPDX-License-Identifier: MIT
# redis-harness.sh: a private, throw-away redis-server for the tests.
#
# Sourced (bash):
#     . tests/support/redis-harness.sh
#     redis_harness_start || exit $?   # starts redis, exports the vars below,
#                                      # and installs an EXIT/signal trap
#     ...                              # that always stops it
#     redis_harness_exec CMD [ARG...]  # run CMD, return its status; a signal
#                                      # stops CMD too
#     redis_harness_restart            # crash redis (SIGKILL) and start an
#                                      # empty one on the same port and socket
#     redis_harness_extra NAME PORTOPT [ARG...]  # one more redis-server
#                                      # (a replica, a TLS port...): see below
#     redis_harness_cluster_node NAME [ARG...]   # one more, cluster-enabled
#     redis_harness_cluster_form PRIMARY... [-- REPLICA...]  # a Cluster of
#                                      # them (ports): see below
#     redis_harness_stop               # idempotent; stops the extras too
#     redis_harness_start_tap          # for a TAP test: start, or print the
#                                      # TAP skip (exit 0) / bail out (exit 1)
#     redis_harness_require_tap        # the same verdict for a missing
#                                      # redis-server, without starting one
#
# Called:
#     tests/support/redis-harness.sh run CMD [ARG...]  start, run CMD with
#                                 the vars below, stop; exit with CMD's status
#     eval "$(tests/support/redis-harness.sh start)"  start and print the vars
#                                 as shell assignments (redis keeps running)
#     tests/support/redis-harness.sh stop [DIR]  stop it (DIR defaults to
#                                 $REDLEASE_TEST_DIR)
#
# Exported after a start:
#     REDLEASE_TEST_DIR        the mktemp -d directory (socket, log, data)
#     REDLEASE_TEST_SOCKET     $REDLEASE_TEST_DIR/redis.sock
#     REDLEASE_TEST_PORT       TCP port on 127.0.0.1
#     REDLEASE_TEST_REDIS_PID  pid of redis-server
#     REDLEASE_TEST_REDIS_CLI  path of redis-cli, or empty if not installed
#     REDLEASE_TEST_REDIS_VERSION  the server's version, e.g. 7.0.15
#     REDLEASE_TEST_TLS_PORT, REDLEASE_TEST_PKI  with REDLEASE_TEST_TLS=1
#                              set before the start: the server also
#                              listens with TLS there, client certificates
#                              required, on the throwaway PKI in that folder
#                              (tests/support/tls-certs.sh)
#
# redis_harness_version_at_least MAJOR MINOR: is the server that recent?
# (CLIENT PAUSE WRITE and CLIENT UNPAUSE need 6.2.)
#
# Environment: REDIS_SERVER (default redis-server), REDIS_CLI (default
# redis-cli). If redis-server is missing the start fails with 77 (automake
# SKIP), except when CI is set (CI=true): then it fails with 1.

_rh_log() { echo "redis-harness: $*" >&2; }

_rh_timeout() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$@"
    else
        shift
        "$@"
    fi
}

_rh_in_ci() {
    case "${CI:-}" in
        "" | 0 | false | FALSE | False | no) return 1 ;;
        *) return 0 ;;
    esac
}

# Answers PING? Uses redis-cli on the socket when available, else a raw
# RESP PING over bash's /dev/tcp on the port.
_rh_ping() {
    local reply=""
    if [ -n "${REDLEASE_TEST_REDIS_CLI:-}" ]; then
        reply=$(_rh_timeout 2 "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" PING 2>/dev/null) || return 1
    else
        reply=$(_rh_timeout 2 bash -c '
            exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
            printf "PING\r\n" >&3
            IFS= read -r -t 2 line <&3 || exit 1
            printf "%s" "$line"' _ "$REDLEASE_TEST_PORT" 2>/dev/null) || return 1
    fi
    case "$reply" in
        PONG* | +PONG*) return 0 ;;
        *) return 1 ;;
    esac
}

# Something already listening on 127.0.0.1:$1?
_rh_port_busy() {
    _rh_timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

_rh_redis_major() {
    local v
    v=$("$1" --version 2>/dev/null | sed -n 's/.*v=\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
    echo "${v:-0}"
}

# _rh_tap_verdict RC WHAT: for a TAP test, turn a 77 into the plan's SKIP
# (exit 0) and any other failure into a bail out (exit 1).
_rh_tap_verdict() {
    if [ "$1" -eq 77 ]; then
        echo "1..0 # SKIP redis-server not found (set CI=true to make this a failure)"
        exit 0
    elif [ "$1" -ne 0 ]; then
        echo "Bail out! $2 (exit $1)"
        exit 1
    fi
}

redis_harness_start_tap() {
    local rc=0
    redis_harness_start || rc=$?
    _rh_tap_verdict "$rc" "could not start redis-server"
}

# For a TAP test that starts its own redis-server (the demo): SKIP or bail
# out, as redis_harness_start_tap would, when there is none.
redis_harness_require_tap() {
    local rc=0
    redis_harness_have_server || rc=$?
    _rh_tap_verdict "$rc" "redis-server not found, and CI is set (install redis-server)"
}

# Stops every extra server: those of redis_harness_extra, and those a test
# program started the same way (tests/integration/servers.h), whose pid
# files are $REDLEASE_TEST_DIR/NAME/redis.pid, even if the program died.
_rh_stop_extras() {
    local f pid
    for f in "${REDLEASE_TEST_DIR:-/nonexistent}"/*/redis.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null)
        [ -n "$pid" ] && grep -qsE '^(redis|valkey)' "/proc/$pid/comm" && kill -KILL "$pid" 2>/dev/null
        rm -f "$f"
    done
}

# _rh_is_ours PORT PID: the server answering at PORT is process PID, not
# another test's that took the port first (both saw it free: ours then
# aborts, and theirs answers PING).
_rh_is_ours() {
    _rh_timeout 2 "${REDLEASE_TEST_REDIS_CLI:-redis-cli}" -p "$1" INFO server 2>/dev/null |
        tr -d '\r' | grep -qx "process_id:$2"
}

# redis_harness_extra NAME PORTOPT [ARG...]: starts one more redis-server,
# daemonized in $REDLEASE_TEST_DIR/NAME (its pid file, log and files), on
# 127.0.0.1 at a free port given with PORTOPT (--port, or --tls-port with
# --port 0 among ARGs), without persistence, with ARGs added; a redis.conf
# the caller wrote into that folder first is its configuration file (a
# Sentinel needs one it can rewrite: ARGs then include --sentinel). Sets
# REDLEASE_EXTRA_PORT and REDLEASE_EXTRA_PID; redis_harness_stop stops it.
# 0 once it runs (a plain one: answers PING), else 1.
redis_harness_extra() {
    local name=$1 portopt=$2 dir=$REDLEASE_TEST_DIR/$1 port pid i
    local -a conf=()
    shift 2
    mkdir -p "$dir" || return 1
    [ -f "$dir/redis.conf" ] && conf=("$dir/redis.conf")
    for _ in $(seq 1 20); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 30000))
        _rh_port_busy "$port" && continue
        rm -f "$dir/redis.pid"
        "${REDIS_SERVER:-redis-server}" "${conf[@]}" "$portopt" "$port" --bind 127.0.0.1 --save '' \
            --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" \
            --logfile "$dir/redis.log" "$@" </dev/null >/dev/null 2>&1 || continue
        for i in $(seq 1 50); do [ -s "$dir/redis.pid" ] && break; sleep 0.1; done
        sleep 0.2 # listening, or gone for a port in use
        pid=$(cat "$dir/redis.pid" 2>/dev/null)
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
        REDLEASE_EXTRA_PORT=$port REDLEASE_EXTRA_PID=$pid
        [ "$portopt" = --port ] || return 0
        for i in $(seq 1 100); do
            _rh_is_ours "$port" "$pid" && return 0
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
    done
    _rh_log "could not start the extra redis-server '$name'"
    return 1
}

# redis_harness_cluster_node NAME [ARG...]: starts one more redis-server
# as redis_harness_extra does, cluster-enabled (nodes.conf in its folder,
# node timeout 1 s), with ARGs added; sets REDLEASE_EXTRA_PORT. Its port P
# (15000-19999) and bus port P + 10000 are picked free and below the
# kernel's ephemeral range (a bus port there is often held by an outgoing
# connection, and the node aborts), and apart from the ports of
# tests/integration/servers.h (20000 up), whose killed Cluster nodes'
# peers keep calling their bus ports. A failed
# start is seen in its log at once. 0 once it answers PING, else 1.
redis_harness_cluster_node() {
    local name=$1 dir=$REDLEASE_TEST_DIR/$1 port pid lo=15000 hi=19999 eph
    shift
    read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
    [ $(( ${eph:-0} - 10001 )) -ge "$hi" ] || { lo=20000; hi=45535; }
    mkdir -p "$dir" || return 1
    for _ in $(seq 1 20); do
        port=$(( lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1) ))
        if _rh_port_busy "$port" || _rh_port_busy $(( port + 10000 )); then continue; fi
        rm -f "$dir/redis.pid" "$dir/redis.log" "$dir/nodes.conf"
        "${REDIS_SERVER:-redis-server}" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000 \
            "$@" </dev/null >/dev/null 2>&1 || continue
        for _ in $(seq 1 200); do
            pid=$(cat "$dir/redis.pid" 2>/dev/null)
            if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && _rh_is_ours "$port" "$pid"; then
                REDLEASE_EXTRA_PORT=$port REDLEASE_EXTRA_PID=$pid
                return 0
            fi
            grep -qs 'aborting' "$dir/redis.log" && break # a port taken after all
            sleep 0.05
        done
        pid=$(cat "$dir/redis.pid" 2>/dev/null)
        [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
        cp "$dir/redis.log" "$dir/redis.log.failed" 2>/dev/null
    done
    _rh_log "could not start Cluster node '$name': $(tail -n 3 "$dir/redis.log.failed" 2>/dev/null)"
    return 1
}

# redis_harness_cluster_form PRIMARY... [-- REPLICA...]: forms a Cluster of
# the nodes at those ports (redis_harness_cluster_node): the primaries
# share the slots in equal ranges (SET-CONFIG-EPOCH, ADDSLOTSRANGE, or
# ADDSLOTS before Redis 7), all meet the first, replica i follows primary
# i. Waits (30 s at most, by the clock) until every node says
# cluster_state:ok and knows exactly these nodes, by their ids (none in
# handshake, failing or disconnected), and every replica is connected.
# 0, or 1 (and why: each node's CLUSTER INFO, CLUSTER NODES and log tail).
#
# A node meets a peer again (every 2 s) only while it does not know it by
# id: a CLUSTER MEET of a node it knows is not a no-op. It starts one more
# handshake (a random id in CLUSTER NODES, "known nodes 4 of 3" until it
# ends), and the node met takes the new connection for the meeting node's
# and drops the one in use. A node not ours (another test's, met through a
# port it used) is forgotten (CLUSTER FORGET, said on stderr). Times are
# by the clock, not by polls: a new primary says cluster_state:fail for
# its first 2 s whatever it knows (Redis's CLUSTER_WRITABLE_DELAY), and a
# primary marked failing stays so for twice the node timeout once back.
redis_harness_cluster_form() {
    local -a prim=() repl=() all=() ids=() joined=()
    local p i j lo hi n info role known line missing foreign bad meet_at deadline ok t0 polls=0
    while [ $# -gt 0 ] && [ "$1" != -- ]; do prim+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    repl=("$@")
    all=("${prim[@]}" "${repl[@]}")
    n=${#prim[@]} known=${#all[@]}
    _rh_ccmd() { local q=$1; shift; _rh_timeout 10 "${REDLEASE_TEST_REDIS_CLI:-redis-cli}" -p "$q" "$@" 2>&1; }
    for i in "${!all[@]}"; do
        ids[i]=$(_rh_ccmd "${all[i]}" CLUSTER MYID)
        [[ ${ids[i]} =~ ^[0-9a-f]{40}$ ]] || { _rh_log "Cluster node ${all[i]}: CLUSTER MYID: ${ids[i]}"; return 1; }
    done
    for i in "${!prim[@]}"; do
        p=${prim[i]}
        lo=$(( i * 16384 / n )) hi=$(( (i + 1) * 16384 / n - 1 ))
        [ "$(_rh_ccmd "$p" CLUSTER SET-CONFIG-EPOCH $((i + 1)))" = OK ] ||
            { _rh_log "Cluster node $p: SET-CONFIG-EPOCH refused"; return 1; }
        if redis_harness_version_at_least 7 0; then
            info=$(_rh_ccmd "$p" CLUSTER ADDSLOTSRANGE "$lo" "$hi")
        else
            info=$(_rh_ccmd "$p" CLUSTER ADDSLOTS $(seq "$lo" "$hi"))
        fi
        [ "$info" = OK ] || { _rh_log "Cluster node $p: slots $lo-$hi refused: $info"; return 1; }
    done
    for p in "${all[@]:1}"; do
        [ "$(_rh_ccmd "$p" CLUSTER MEET 127.0.0.1 "${prim[0]}")" = OK ] ||
            { _rh_log "Cluster node $p: MEET refused"; return 1; }
    done
    t0=$SECONDS deadline=$((SECONDS + 30)) meet_at=$((SECONDS + 2))
    while :; do
        polls=$((polls + 1)) ok=1
        for i in "${!all[@]}"; do
            p=${all[i]}
            # From this node's CLUSTER NODES: the indexes of the peers it
            # does not know (yet) by id at their port, the ids it knows
            # that are not ours, and whether any entry is not settled.
            read -r missing foreign bad < <(_rh_ccmd "$p" CLUSTER NODES | tr -d '\r' |
                awk -v ids="${ids[*]}" -v ports="${all[*]}" '
                    BEGIN { n = split(ids, id, " "); split(ports, port, " ")
                            for (j = 1; j <= n; j++) { ours[id[j]] = j; our_port[port[j]] = 1 } }
                    NF >= 8 && length($1) == 40 && $1 ~ /^[0-9a-f]+$/ {
                        split($2, a, "[:@]")
                        if ($3 ~ /fail|handshake|noaddr/ || ($3 !~ /myself/ && $8 != "connected")) bad = 1
                        if ($1 in ours) {
                            if ($3 !~ /handshake|noaddr/ && a[2] == port[ours[$1]]) seen[ours[$1]] = 1
                        } else if ($3 !~ /handshake/ || !(a[2] in our_port)) {
                            f = f (f == "" ? "" : ",") $1
                        }
                    }
                    END { for (j = 1; j <= n; j++) if (!seen[j]) m = m (m == "" ? "" : ",") (j - 1)
                          print (m == "" ? "-" : m), (f == "" ? "-" : f), bad + 0 }')
            [ "${missing:-x}" = - ] && [ "$foreign" = - ] && [ "$bad" = 0 ] || ok=0
            if [ -n "$foreign" ] && [ "$foreign" != - ]; then
                for j in ${foreign//,/ }; do
                    line=$(_rh_ccmd "$p" CLUSTER NODES | grep "^$j ")
                    _rh_log "Cluster node $p: forgets a node not ours: $line: $(_rh_ccmd "$p" CLUSTER FORGET "$j")"
                done
            fi
            # The first MEET's handshake may have ended on one side only,
            # or outlived the node timeout (a loaded machine): meet each
            # peer still unknown, every 2 s.
            if [ "$SECONDS" -ge "$meet_at" ] && [ -n "$missing" ] && [ "$missing" != - ]; then
                for j in ${missing//,/ }; do
                    [ "$j" = "$i" ] || _rh_ccmd "$p" CLUSTER MEET 127.0.0.1 "${all[j]}" >/dev/null
                done
            fi
            if [ "$i" -ge "$n" ] && [ -z "${joined[i]:-}" ]; then # a replica follows a primary it knows
                [[ ,$missing, == *,$((i - n)),* ]] ||
                    { [ "$(_rh_ccmd "$p" CLUSTER REPLICATE "${ids[i - n]}")" = OK ] && joined[i]=1; }
                ok=0
            fi
            [ "$ok" = 1 ] || continue
            info=$(_rh_ccmd "$p" CLUSTER INFO)
            [[ $info == *cluster_state:ok* && $info == *cluster_known_nodes:$known$'\r'* ]] || ok=0
            if [ "$ok" = 1 ] && [ "$i" -ge "$n" ]; then
                mapfile -t role < <(_rh_ccmd "$p" ROLE)
                [ "${role[0]}" = slave ] && [ "${role[3]}" = connected ] || ok=0
            fi
        done
        [ "$SECONDS" -ge "$meet_at" ] && meet_at=$((SECONDS + 2))
        [ "$ok" = 1 ] && return 0
        [ "$SECONDS" -lt "$deadline" ] || break
        sleep 0.1
    done
    _rh_log "the Cluster did not form within $((SECONDS - t0)) s ($polls polls); ids ${ids[*]}:"
    for p in "${all[@]}"; do
        _rh_log "  node $p: $(_rh_ccmd "$p" CLUSTER INFO | grep -E 'cluster_(state|known_nodes|slots_ok)' | tr -d '\r' | tr '\n' ' ')"
        _rh_ccmd "$p" CLUSTER NODES | tr -d '\r' | sed 's/^/redis-harness:     /' >&2
        info=$(_rh_ccmd "$p" CONFIG GET dir | sed -n 2p)
        [ -f "$info/redis.log" ] && tail -n 5 "$info/redis.log" | sed 's/^/redis-harness:     log: /' >&2
    done
    return 1
}

redis_harness_stop() {
    local pid=${REDLEASE_TEST_REDIS_PID:-} dir=${REDLEASE_TEST_DIR:-} i
    _rh_stop_extras
    # Never signal a recycled pid: on Linux, check it is still redis (or
    # valkey, REDIS_SERVER=valkey-server).
    if [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] &&
       ! grep -qE '^(redis|valkey)' "/proc/$pid/comm" 2>/dev/null; then
        pid=
    fi
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            _rh_log "redis-server $pid ignored SIGTERM; killing it"
            kill -KILL "$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
    fi
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        rm -rf -- "$dir"
    fi
    REDLEASE_TEST_REDIS_PID=
    REDLEASE_TEST_DIR=
    return 0
}

_rh_trap() {
    trap - EXIT INT TERM HUP
    if [ -n "${_rh_child:-}" ]; then
        kill -TERM "$_rh_child" 2>/dev/null
        wait "$_rh_child" 2>/dev/null
        _rh_child=
    fi
    redis_harness_stop
}

# redis_harness_exec CMD [ARG...]: run CMD and return its exit status. It
# runs in the background and is waited for, so that a signal to this shell
# stops CMD and redis at once instead of after CMD finishes.
redis_harness_exec() {
    local rc=0
    "$@" &
    _rh_child=$!
    wait "$_rh_child" || rc=$?
    _rh_child=
    return "$rc"
}

# redis-server installed? 0; else 77 (SKIP), or 1 when CI is set.
redis_harness_have_server() {
    local server=${REDIS_SERVER:-redis-server}
    command -v "$server" >/dev/null 2>&1 && return 0
    if _rh_in_ci; then
        _rh_log "FAIL: '$server' not found, and CI is set (install redis-server)"
        return 1
    fi
    _rh_log "SKIP: '$server' not found (install redis-server or set REDIS_SERVER)"
    return 77
}

# _rh_launch: start redis-server in the background on $REDLEASE_TEST_PORT
# and $REDLEASE_TEST_SOCKET, without persistence; sets REDLEASE_TEST_REDIS_PID.
_rh_launch() {
    local server=${REDIS_SERVER:-redis-server}
    local -a extra=()
    # DEBUG SLEEP etc. are disabled by default from Redis 7 on.
    if [ "$(_rh_redis_major "$server")" -ge 7 ]; then
        extra+=(--enable-debug-command local)
    fi
    if [ -n "${REDLEASE_TEST_TLS_PORT:-}" ]; then
        extra+=(--tls-port "$REDLEASE_TEST_TLS_PORT" --tls-cert-file "$REDLEASE_TEST_PKI/server.crt"
                --tls-key-file "$REDLEASE_TEST_PKI/server.key"
                --tls-ca-cert-file "$REDLEASE_TEST_PKI/ca.crt" --tls-auth-clients yes)
    fi
    "$server" --port "$REDLEASE_TEST_PORT" --bind 127.0.0.1 \
        --unixsocket "$REDLEASE_TEST_SOCKET" --unixsocketperm 700 \
        --save '' --appendonly no --daemonize no \
        --dir "$REDLEASE_TEST_DIR" \
        --logfile "$REDLEASE_TEST_DIR/redis.log" \
        "${extra[@]}" </dev/null >/dev/null 2>&1 &
    REDLEASE_TEST_REDIS_PID=$!
}

# redis_harness_restart: kill the running redis-server (SIGKILL, a crash)
# and start a new one on the same port and socket path. Without persistence
# it comes back empty. 0 once the new one answers PING (up to ~10 s).
redis_harness_restart() {
    local pid=${REDLEASE_TEST_REDIS_PID:-} i
    [ -n "$pid" ] && [ -n "${REDLEASE_TEST_DIR:-}" ] || return 1
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -f "$REDLEASE_TEST_SOCKET"
    _rh_launch
    echo "$REDLEASE_TEST_REDIS_PID" >"$REDLEASE_TEST_DIR/redis.pid"
    export REDLEASE_TEST_REDIS_PID
    for i in $(seq 1 100); do
        kill -0 "$REDLEASE_TEST_REDIS_PID" 2>/dev/null || break
        if [ -S "$REDLEASE_TEST_SOCKET" ] && _rh_ping; then return 0; fi
        sleep 0.1
    done
    _rh_log "redis-server did not come back after a restart"
    return 1
}

redis_harness_version_at_least() {
    local major minor
    IFS=. read -r major minor _ <<<"${REDLEASE_TEST_REDIS_VERSION:-99.0}"  # unknown: assume recent
    [ "${major:-0}" -gt "$1" ] || { [ "${major:-0}" -eq "$1" ] && [ "${minor:-0}" -ge "$2" ]; }
}

redis_harness_start() {
    local server=${REDIS_SERVER:-redis-server} attempt port pid i

    redis_harness_have_server || return
    REDLEASE_TEST_REDIS_CLI=$(command -v "${REDIS_CLI:-redis-cli}" 2>/dev/null || true)

    local tmp=${TMPDIR:-/tmp}
    # A unix socket path must fit in sun_path (108 bytes on Linux).
    [ ${#tmp} -le 60 ] || tmp=/tmp
    REDLEASE_TEST_DIR=$(mktemp -d "$tmp/redlease-test.XXXXXX") || return 1
    REDLEASE_TEST_SOCKET=$REDLEASE_TEST_DIR/redis.sock
    # The trap goes in before the first process starts: from here on, any
    # exit or signal stops redis and removes the directory.
    trap _rh_trap EXIT
    trap '_rh_trap; exit 130' INT
    trap '_rh_trap; exit 143' TERM
    trap '_rh_trap; exit 129' HUP
    if [ "${REDLEASE_TEST_TLS:-}" = 1 ]; then
        REDLEASE_TEST_PKI=$REDLEASE_TEST_DIR/pki
        sh "$(dirname "${BASH_SOURCE[0]}")/tls-certs.sh" "$REDLEASE_TEST_PKI" ||
            { _rh_log "tls-certs.sh failed"; redis_harness_stop; return 1; }
        export REDLEASE_TEST_PKI
    fi

    for attempt in $(seq 1 20); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40001))
        _rh_port_busy "$port" && continue
        REDLEASE_TEST_PORT=$port
        if [ -n "${REDLEASE_TEST_PKI:-}" ]; then # its TLS port: the next free one
            REDLEASE_TEST_TLS_PORT=$((port + 1))
            _rh_port_busy "$REDLEASE_TEST_TLS_PORT" && continue
            export REDLEASE_TEST_TLS_PORT
        fi
        _rh_launch
        pid=$REDLEASE_TEST_REDIS_PID
        for i in $(seq 1 100); do            # up to ~10 s
            if ! kill -0 "$pid" 2>/dev/null; then
                break
            fi
            if [ -S "$REDLEASE_TEST_SOCKET" ] && _rh_ping; then
                echo "$pid" >"$REDLEASE_TEST_DIR/redis.pid"
                REDLEASE_TEST_REDIS_VERSION=$("$server" --version 2>/dev/null | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
                export REDLEASE_TEST_DIR REDLEASE_TEST_SOCKET REDLEASE_TEST_PORT \
                       REDLEASE_TEST_REDIS_PID REDLEASE_TEST_REDIS_CLI REDLEASE_TEST_REDIS_VERSION
                _rh_log "redis-server $REDLEASE_TEST_REDIS_VERSION pid $pid port $port socket $REDLEASE_TEST_SOCKET"
                return 0
            fi
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            _rh_log "redis-server did not answer PING within 10 s"
            cat "$REDLEASE_TEST_DIR/redis.log" >&2 2>/dev/null
            redis_harness_stop
            return 1
        fi
        wait "$pid" 2>/dev/null
        REDLEASE_TEST_REDIS_PID=
        if grep -qiE 'address already in use|could not create server tcp listening socket' \
                "$REDLEASE_TEST_DIR/redis.log" 2>/dev/null; then
            _rh_log "port $port taken; retrying"
            rm -f "$REDLEASE_TEST_DIR/redis.log" "$REDLEASE_TEST_SOCKET"
            continue
        fi
        _rh_log "redis-server exited during startup:"
        cat "$REDLEASE_TEST_DIR/redis.log" >&2 2>/dev/null
        redis_harness_stop
        return 1
    done
    _rh_log "no free port found after 20 attempts"
    redis_harness_stop
    return 1
}

# ---------------------------------------------------------------- CLI mode
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cmd=${1:-}
    [ $# -gt 0 ] && shift
    case "$cmd" in
        run)
            [ $# -gt 0 ] || { _rh_log "usage: $0 run CMD [ARG...]"; exit 2; }
            redis_harness_start || exit $?
            rc=0
            redis_harness_exec "$@" || rc=$?
            redis_harness_stop
            exit "$rc"
            ;;
        start)
            redis_harness_start || exit $?
            # Keep redis running after this script exits.
            trap - EXIT INT TERM HUP
            disown "$REDLEASE_TEST_REDIS_PID" 2>/dev/null
            for v in REDLEASE_TEST_DIR REDLEASE_TEST_SOCKET REDLEASE_TEST_PORT \
                     REDLEASE_TEST_REDIS_PID REDLEASE_TEST_REDIS_CLI; do
                printf 'export %s=%q\n' "$v" "${!v}"
            done
            exit 0
            ;;
        stop)
            REDLEASE_TEST_DIR=${1:-${REDLEASE_TEST_DIR:-}}
            if [ -z "${REDLEASE_TEST_REDIS_PID:-}" ] && [ -n "$REDLEASE_TEST_DIR" ] &&
               [ -f "$REDLEASE_TEST_DIR/redis.pid" ]; then
                REDLEASE_TEST_REDIS_PID=$(cat "$REDLEASE_TEST_DIR/redis.pid")
            fi
            redis_harness_stop
            exit 0
            ;;
        *)
            _rh_log "usage: $0 {run CMD [ARG...]|start|stop [DIR]}"
            exit 2
            ;;
    esac
fi
