#!/bin/bash
# SPDX-License-Identifier: MIT
# demo.sh: the double-booking story, live (`make demo`).
#
# Starts a private redis-server (tests/support/redis-harness.sh: unix socket in a
# temporary directory, no persistence) and several examples/booking/booking-server
# processes that book restaurant tables in one shared store file
# (examples/booking/store.h), then plays four scenarios:
#   1. without a lock: concurrent bookings of the same tables, each server
#      doing what a naive application does (look up, work, plain insert);
#      double bookings counted;
#   2. with redlease: the same load, zero double bookings;
#   3. a holder killed with SIGKILL: the table is free again after its TTL,
#      with no manual step;
#   4. a holder paused (SIGSTOP) past its TTL: another server takes the table
#      and looks it up, which tells the store its fence; the paused one,
#      resumed before that server writes, learns it lost the lease
#      (redlease_lock_held() and on_lost), and its stale write is refused by
#      the store's fencing check; the new holder's write is accepted. That
#      stale write is a demo-only model of a write already sent before the
#      pause (booking-server --unsafe-write-after-loss).
# It prints one line per scenario (PASS/FAIL, counts, timings) and exits 0
# only if all four came out right and every server still running at the end
# stopped cleanly (exit 0 on SIGTERM). Timings are reported; only generous
# bounds are asserted. Every interval is computed from the servers' own log
# stamps (CLOCK_MONOTONIC, shared by all processes), never from this
# script's clock.
#
# Environment:
#   REDLEASE_BUILDDIR   build tree holding examples/booking/booking-server (default .)
#   DEMO_TTL_MS         lease TTL (default 1000)
#   DEMO_WORK_MS        work between lookup and write in 1 and 2 (default 200)
#   DEMO_KEEP=1         keep the logs and store files (the path is printed)
#   DEMO_WRAPPER        command to run each server under (default
#                       $REDLEASE_TEST_WRAPPER, set by make check-valgrind).
#                       It must exec the server (as valgrind does): scenarios
#                       3 and 4 signal the pid the script started, so a
#                       wrapper that forks would be stopped or killed instead
#                       of the server.
#   REDIS_SERVER        redis-server to use (default: redis-server on PATH)
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 2
builddir=${REDLEASE_BUILDDIR:-.}
server_bin=$builddir/examples/booking/booking-server
wrapper=${DEMO_WRAPPER-${REDLEASE_TEST_WRAPPER:-}}
ttl=${DEMO_TTL_MS:-1000}
work=${DEMO_WORK_MS:-200}
tables=4 servers=4 requests=40

die() { echo "demo: $*" >&2; exit 2; }

[ "${BASH_VERSINFO[0]}" -ge 4 ] || die "needs bash 4 (associative arrays)"
[ -x "$server_bin" ] || die "$server_bin not found: build it first (make examples/booking/booking-server)"
if ! command -v "${REDIS_SERVER:-redis-server}" >/dev/null 2>&1; then
    echo "demo: redis-server not found. Install it (Debian/Ubuntu: sudo apt-get install" \
         "redis-server) or set REDIS_SERVER=/path/to/redis-server." >&2
    exit 1
fi
case "$ttl$work" in *[!0-9]*) die "DEMO_TTL_MS and DEMO_WORK_MS must be numbers" ;; esac

# Budgets, generous so a loaded machine or valgrind does not fail the demo.
wait_ms=$((ttl * 5 > 5000 ? ttl * 5 : 5000))   # a server's wait for a lock
reply_s=$((wait_ms / 1000 + 60))               # a client's wait for a reply
ready_s=60                                     # a server's start (valgrind: slow)

. "$here/../../tests/support/redis-harness.sh" || exit 2

# ---------------------------------------------------------------- plumbing
work_dir=
# pid[NAME] is the pid of what start_server ran: the wrapper's when there is
# one, which is the server's own only for a wrapper that execs it (valgrind).
declare -A pid port
stopped_ok=0 stopped_bad=0

cleanup() {
    trap - EXIT INT TERM HUP
    local name
    for name in "${!pid[@]}"; do
        kill -CONT "${pid[$name]}" 2>/dev/null
        kill -KILL "${pid[$name]}" 2>/dev/null
        wait "${pid[$name]}" 2>/dev/null
    done
    if [ -n "$work_dir" ]; then
        if [ "${DEMO_KEEP:-0}" = 1 ]; then
            echo "demo: logs and stores kept in $work_dir"
        else
            rm -rf -- "$work_dir"
        fi
    fi
    redis_harness_stop
}

# start_server NAME STORE [OPTION...]: starts one booking-server, waits for
# its "ready" line, sets port[NAME].
start_server() {
    local name=$1 store=$2 i line
    shift 2
    # Created here, not by the background job's redirection, which may come
    # after the first look at it below.
    : >"$work_dir/$name.log"
    REDLEASE_SOCKET=$REDLEASE_TEST_SOCKET $wrapper "$server_bin" --name "$name" \
        --store "$work_dir/$store" --ttl-ms "$ttl" --wait-ms "$wait_ms" "$@" \
        >"$work_dir/$name.log" 2>&1 </dev/null &
    pid[$name]=$!
    for ((i = 0; i < ready_s * 20; i++)); do
        line=$(grep -m1 " $name ready on " "$work_dir/$name.log")
        if [ -n "$line" ]; then
            port[$name]=$(sed 's/.* ready on 127\.0\.0\.1:\([0-9]*\).*/\1/' <<<"$line")
            return 0
        fi
        kill -0 "${pid[$name]}" 2>/dev/null || break
        # Without Redis the server never gets ready: say so now, not in 60 s.
        if ! kill -0 "$REDLEASE_TEST_REDIS_PID" 2>/dev/null; then
            echo "demo: redis-server (pid $REDLEASE_TEST_REDIS_PID) died while $name was starting; its log:" >&2
            sed 's/^/    /' "$REDLEASE_TEST_DIR/redis.log" >&2 2>/dev/null
            exit 1
        fi
        sleep 0.05
    done
    echo "demo: server $name did not start:" >&2
    cat "$work_dir/$name.log" >&2
    exit 1
}

# stop_server NAME: SIGTERM, then count whether it exited 0 (a clean
# shutdown; under valgrind also no error and no leak).
stop_server() {
    local name=$1 p=${pid[$1]} i rc=0
    kill -CONT "$p" 2>/dev/null
    kill -TERM "$p" 2>/dev/null
    for ((i = 0; i < 600; i++)); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$p" 2>/dev/null && echo "demo: $name did not stop within 30 s" >&2
    wait "$p" || rc=$?
    unset "pid[$name]"
    if [ "$rc" -eq 0 ]; then
        stopped_ok=$((stopped_ok + 1))
    else
        stopped_bad=$((stopped_bad + 1))
        echo "demo: $name exited with status $rc; its log:" >&2
        sed 's/^/    /' "$work_dir/$name.log" >&2
    fi
}

# kill_server NAME: SIGKILL, on purpose (reaped at once, so that bash does
# not report the killed job later).
kill_server() {
    { kill -KILL "${pid[$1]}" && wait "${pid[$1]}"; } 2>/dev/null
    unset "pid[$1]"
}

# book SERVER TABLE GUEST: one request; prints the reply line.
book() {
    local p=${port[$1]} reply="ERR cannot connect"
    if exec 3<>"/dev/tcp/127.0.0.1/$p"; then
        printf 'BOOK %s %s\n' "$2" "$3" >&3
        IFS= read -r -t "$reply_s" reply <&3 || reply="ERR no reply"
        exec 3<&-
    fi
    echo "$reply"
}

# await_log NAME PATTERN: waits (up to the reply budget) for a log line
# matching PATTERN (grep -E) and prints it.
await_log() {
    local i line
    for ((i = 0; i < reply_s * 50; i++)); do
        line=$(grep -m1 -E "$2" "$work_dir/$1.log") && { echo "$line"; return 0; }
        sleep 0.02
    done
    echo "demo: no '$2' in $1's log" >&2
    return 1
}

# A log line's time stamp (its first field, CLOCK_MONOTONIC ms).
stamp() { echo "${1%% *}"; }

# log_line NAME PATTERN: the first line of NAME's log matching PATTERN (grep -E).
log_line() { grep -m1 -E "$2" "$work_dir/$1.log"; }

# count_booked STORE TABLE: accepted bookings of TABLE in STORE.
count_booked() { awk -v t="$2" '$1 == "BOOKED" && $2 == t { n++ } END { print n + 0 }' "$work_dir/$1"; }

# double_bookings STORE: accepted bookings beyond the first, over all tables.
double_bookings() {
    awk '$1 == "BOOKED" { n[$2]++ } END { d = 0; for (t in n) d += n[t] - 1; print d }' "$work_dir/$1"
}

# load PREFIX: $requests concurrent requests, request i for table i%tables+1
# through server PREFIX<(i/tables)%servers+1>, so every table is asked for
# through every server. Sets n_ok, n_taken, n_other.
load() {
    local prefix=$1 i r
    local -a clients=()
    for ((i = 0; i < requests; i++)); do
        book "$prefix$(((i / tables) % servers + 1))" "$((i % tables + 1))" "guest$i" \
            >"$work_dir/replies/$prefix-$i" &
        clients+=($!)
    done
    wait "${clients[@]}"
    n_ok=0 n_taken=0 n_other=0
    for ((i = 0; i < requests; i++)); do
        r=$(<"$work_dir/replies/$prefix-$i")
        case "$r" in
            OK\ *) n_ok=$((n_ok + 1)) ;;
            TAKEN\ *) n_taken=$((n_taken + 1)) ;;
            *) n_other=$((n_other + 1)); echo "demo: request $i: $r" >&2 ;;
        esac
    done
}

failures=0
# result N TITLE OK DETAIL...: prints the scenario's line.
result() {
    local n=$1 title=$2 ok=$3 verdict=PASS
    shift 3
    [ "$ok" = 1 ] || { verdict=FAIL; failures=$((failures + 1)); }
    printf '%s. %-18s [%s] %s\n' "$n" "$title" "$verdict" "$1"
    shift
    local more
    for more in "$@"; do printf '%25s %s\n' "" "$more"; done
}

# ---------------------------------------------------------------- start
redis_harness_start || { echo "demo: could not start redis-server" >&2; exit 1; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP
work_dir=$(mktemp -d "${TMPDIR:-/tmp}/redlease-demo.XXXXXX") && mkdir "$work_dir/replies" || exit 1
SECONDS=0

echo "redlease demo: $servers booking servers share one store file; private redis-server;"
echo "lease TTL $ttl ms, $work ms of work between 'is the table free?' and the booking."
[ -n "$wrapper" ] && echo "(servers run under: $wrapper)"
echo

# ------------------------------------------- 1. without a lock
for ((i = 1; i <= servers; i++)); do start_server "nolock$i" store-nolock --no-lock --work-ms "$work"; done
load nolock
dbl=$(double_bookings store-nolock)
ok=0; [ "$dbl" -gt 0 ] && [ "$n_other" -eq 0 ] && ok=1
result 1 "without a lock" "$ok" \
    "$requests requests for $tables tables via $servers servers: $n_ok bookings accepted, $dbl double bookings"
for ((i = 1; i <= servers; i++)); do stop_server "nolock$i"; done

# ------------------------------------------- 2. with redlease
for ((i = 1; i <= servers; i++)); do start_server "lock$i" store-lock --work-ms "$work"; done
load lock
dbl=$(double_bookings store-lock)
max_wait=$(cat "$work_dir"/lock*.log | sed -n 's/.* held (fence [0-9]*, waited \([0-9]*\) ms)$/\1/p' |
           sort -n | tail -n 1)
ok=0; [ "$dbl" -eq 0 ] && [ "$n_ok" -eq "$tables" ] && [ "$n_other" -eq 0 ] && ok=1
result 2 "with redlease" "$ok" \
    "$requests requests for $tables tables via $servers servers: $n_ok bookings, $n_taken told TAKEN, $dbl double bookings" \
    "longest wait for a table's lock: ${max_wait:-?} ms"

# ------------------------------------------- 3. a holder killed
# "holder" takes table 7 and works for an hour; killed, it never releases.
start_server holder store-lock --work-ms 3600000
book holder 7 ann >"$work_dir/replies/ann" &
ann=$!
await_log holder ' table:7 free: working' >/dev/null || exit 1
kill_server holder
wait "$ann"
r=$(book lock1 7 bob)
held_a=$(log_line holder ' table:7 held')
held_b=$(log_line lock1 ' table:7 held')
# lock1 must have waited for the dead holder's lease: it cannot get it sooner
# than 3/4 of the TTL after the holder acquired it (the lease's validity minus
# any drift margin), and should have it about a TTL later (generous slack).
free_min=$((ttl * 3 / 4)) free_max=$((ttl * 2 + 1000))
free_after=
[ -n "$held_a" ] && [ -n "$held_b" ] && free_after=$(($(stamp "$held_b") - $(stamp "$held_a")))
ok=0
[ -n "$free_after" ] && [ "$free_after" -ge "$free_min" ] && [ "$free_after" -le "$free_max" ] &&
    [ "${r%% *}" = OK ] && [ "$(count_booked store-lock 7)" -eq 1 ] && ok=1
result 3 "holder SIGKILLed" "$ok" \
    "'holder' took table 7, then was SIGKILLed mid-work: it never released" \
    "lock1 took table 7 ${free_after:-?} ms after 'holder' had (TTL $ttl ms; asserted $free_min to $free_max), no manual step" \
    "lock1 booked it for bob: $r"

# ------------------------------------------- 4. a holder paused
# "paused" takes table 9 and is stopped mid-work. "takeover" takes the table
# once the lease expires, looks it up (the store notes its higher fence) and
# works for a TTL; "paused" resumes during that work, so its write (modelled
# as already sent) reaches the store before takeover's.
start_server paused store-lock --work-ms $((ttl / 2)) --unsafe-write-after-loss
start_server takeover store-lock --work-ms "$ttl"
book paused 9 carol >"$work_dir/replies/carol" &
carol=$!
await_log paused ' table:9 free: working' >/dev/null || exit 1
kill -STOP "${pid[paused]}"
book takeover 9 dave >"$work_dir/replies/dave" &
dave=$!
await_log takeover ' table:9 free: working' >/dev/null || exit 1
kill -CONT "${pid[paused]}"
wait "$carol" "$dave"
carol_reply=$(<"$work_dir/replies/carol") dave_reply=$(<"$work_dir/replies/dave")
fence_a=$(sed -n 's/.* table:9 held (fence \([0-9]*\),.*/\1/p' "$work_dir/paused.log")
fence_b=$(sed -n 's/^OK \([0-9]*\) .*/\1/p' <<<"$dave_reply")
held_a=$(log_line paused ' table:9 held') held_b=$(log_line takeover ' table:9 held')
lost=$(await_log paused 'lost lease on table:9') || lost=
noheld=$(log_line paused ' table:9 lease no longer held')
stale=$(log_line paused ' table:9 writing anyway') booked=$(log_line takeover ' table:9 booked')
# The store's log in order: takeover's lookup (SEEN), the refused stale
# write, then takeover's booking.
order=$(awk -v a="$fence_a" -v b="$fence_b" '$2 == "9" && $4 == b && $1 == "SEEN" { printf "S" }
    $2 == "9" && $4 == a && $1 == "REFUSED" && $6 == b { printf "R" }
    $2 == "9" && $4 == b && $1 == "BOOKED" { printf "B" }' "$work_dir/store-lock")
ok=0
[ -n "$fence_b" ] && [ -n "$lost" ] && [ "$carol_reply" = "STALE $fence_a $fence_b" ] &&
    [ "$order" = SRB ] && [ "$(count_booked store-lock 9)" -eq 1 ] && ok=1
learned=never
[ -n "$noheld" ] && [ -n "$lost" ] && learned="redlease_lock_held() = 0 and on_lost (${lost#*lost lease on table:9 (}, $(($(stamp "$lost") - $(stamp "$noheld"))) ms apart"
ahead=?
[ -n "$stale" ] && [ -n "$booked" ] && ahead=$(($(stamp "$booked") - $(stamp "$stale")))
result 4 "holder paused" "$ok" \
    "'paused' took table 9 with fence $fence_a, then SIGSTOP in the middle of its work" \
    "takeover took table 9 $([ -n "$held_a" ] && [ -n "$held_b" ] && echo $(($(stamp "$held_b") - $(stamp "$held_a"))) || echo ?) ms after 'paused' had, fence ${fence_b:-?}, looked it up and worked $ttl ms" \
    "SIGCONT meanwhile: 'paused' learned it lost the lease: $learned" \
    "its write, modelled as sent before the pause (--unsafe-write-after-loss), landed $ahead ms before takeover's: $carol_reply" \
    "the store refused fence $fence_a, having seen ${fence_b:-?} at takeover's lookup (store log: ${order:-nothing})" \
    "takeover's booking for dave: $dave_reply; table 9 booked $(count_booked store-lock 9) time(s)"

# ------------------------------------------- clean shutdown
for name in "${!pid[@]}"; do stop_server "$name"; done
ok=0; [ "$stopped_bad" -eq 0 ] && ok=1
result 5 "clean shutdown" "$ok" "$stopped_ok of $((stopped_ok + stopped_bad)) servers exited 0 on SIGTERM"

echo
if [ "$failures" -eq 0 ]; then
    echo "all scenarios came out as they should ($SECONDS s)"
    exit 0
fi
echo "$failures scenario(s) did not come out as they should"
[ "${DEMO_KEEP:-0}" = 1 ] || echo "(DEMO_KEEP=1 keeps the server logs and store files)"
exit 1
