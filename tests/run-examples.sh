#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: runs the example programs against a private redis-server,
# one TAP case each; an example exits with the status its story should end
# with. Examples whose loop configure did not find are reported as skipped.
#
# Cases (run_case NAME FUNCTION PROGRAM [ARGS...]):
#   <loop>-basic    one per loop: must exit 0
#   worker          a job of 8 steps kept by renewal: exit 0, all steps done
#   worker-lost     the key is overwritten behind the worker mid-job: it must
#                   exit 3, run no step after its on_lost, and leave the new
#                   owner's key alone
#   worker-sigterm  SIGTERM mid-job: graceful close, exit 143, no step after
#                   the signal, and its key deleted in Redis
#
# REDLEASE_TEST_WRAPPER (make check-valgrind) runs each program under
# valgrind; through libtool --mode=execute, so the tool sees the program
# itself and not libtool's wrapper script (a shell script that execs it).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/support/redis-harness.sh" || exit 99

builddir=${REDLEASE_BUILDDIR:-.}
wrapper=${REDLEASE_TEST_WRAPPER:-}
run_prefix=(timeout --kill-after=10 120)
if [ -n "$wrapper" ] && [ -x "$builddir/libtool" ]; then
    run_prefix+=("$builddir/libtool" --mode=execute $wrapper)
elif [ -n "$wrapper" ]; then
    run_prefix+=($wrapper)
fi

# redis_cmd ARG...: one command to the test server, its reply on stdout
# (redis-cli when installed, else an inline command over TCP: the arguments
# must then be free of spaces).
redis_cmd() {
    if [ -n "${REDLEASE_TEST_REDIS_CLI:-}" ]; then
        "$REDLEASE_TEST_REDIS_CLI" -s "$REDLEASE_TEST_SOCKET" "$@"
    else
        bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
                 shift; printf "%s\r\n" "$*" >&3
                 IFS= read -r -t 5 line <&3 || exit 1
                 line=${line%$'\''\r'\''}; printf "%s\n" "${line#[+:]}"' \
            _ "$REDLEASE_TEST_PORT" "$@"
    fi
}

# wait_for_line FILE REGEX PID: 0 once FILE has a line matching REGEX; 1 if
# PID ended first or 60 s passed (valgrind is slow to start).
wait_for_line() {
    local i
    for i in $(seq 1 600); do
        grep -q -- "$2" "$1" && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# no_step_after FILE REGEX: 0 if no "] step N/M" line follows the first
# line matching REGEX (and one does match).
no_step_after() {
    awk -v mark="$2" '$0 ~ mark { seen = 1; next }
                      seen && /\] step [0-9]/ { bad = 1 }
                      END { exit !(seen && !bad) }' "$1"
}

# Each case function gets PROGRAM [ARGS...], writes the program's output
# to $out and returns 0 when the story came out right, else prints why.
expect_exit_0() {
    "${run_prefix[@]}" "$@" >"$out" 2>&1
    local status=$?
    [ "$status" -eq 0 ] || { echo "exit $status, expected 0" >>"$out"; return 1; }
}

worker_done() {
    expect_exit_0 "$@" || return 1
    grep -q '\] step 8/8 ' "$out" || { echo "not all 8 steps ran" >>"$out"; return 1; }
    grep -q '\] renewed: ' "$out" || { echo "no renewal seen" >>"$out"; return 1; }
}

worker_lost() {
    local key="lock:{$2}" status
    "${run_prefix[@]}" "$@" >"$out" 2>&1 &
    local pid=$!
    wait_for_line "$out" '\] step 3/' "$pid" || echo "never reached step 3" >>"$out"
    # Another holder takes the key: the next renewal finds it not ours.
    redis_cmd SET "$key" intruder >/dev/null
    wait "$pid"
    status=$?
    [ "$status" -eq 3 ] || { echo "exit $status, expected 3 (lost)" >>"$out"; return 1; }
    no_step_after "$out" 'LOST the lease' || { echo "a step ran after on_lost" >>"$out"; return 1; }
    [ "$(redis_cmd GET "$key")" = intruder ] ||
        { echo "the new owner's key was touched" >>"$out"; return 1; }
}

worker_sigterm() {
    local key="lock:{$2}" status
    "${run_prefix[@]}" "$@" >"$out" 2>&1 &
    local pid=$!
    wait_for_line "$out" '\] step 3/' "$pid" || echo "never reached step 3" >>"$out"
    kill -TERM "$pid" # timeout passes it on to the worker
    wait "$pid"
    status=$?
    [ "$status" -eq 143 ] || { echo "exit $status, expected 143 (SIGTERM)" >>"$out"; return 1; }
    grep -q 'client closed' "$out" || { echo "no graceful close" >>"$out"; return 1; }
    no_step_after "$out" 'signal 15 .*: stopping' || { echo "a step ran after SIGTERM" >>"$out"; return 1; }
    [ "$(redis_cmd EXISTS "$key")" = 0 ] || { echo "key $key left in Redis" >>"$out"; return 1; }
}

cases=()
# run_case NAME FUNCTION PROGRAM [ARGS...]: PROGRAM is relative to the build dir.
run_case() { cases+=("$*"); }
run_case libev-basic expect_exit_0 examples/libev-basic
run_case libevent-basic expect_exit_0 examples/libevent-basic
run_case libuv-basic expect_exit_0 examples/libuv-basic
run_case glib-basic expect_exit_0 examples/glib-basic
run_case worker worker_done examples/worker job:done 8
run_case worker-lost worker_lost examples/worker job:lost 200
run_case worker-sigterm worker_sigterm examples/worker job:sigterm 200

redis_harness_start_tap
export REDLEASE_SOCKET=$REDLEASE_TEST_SOCKET

echo "1..${#cases[@]}"
n=0
for c in "${cases[@]}"; do
    read -r name fn prog args <<<"$c"
    n=$((n + 1))
    bin=$builddir/$prog
    if [ ! -x "$bin" ]; then
        echo "ok $n - $name # SKIP not built (configure found no loop for it)"
        continue
    fi
    out=$REDLEASE_TEST_DIR/$name.out
    # shellcheck disable=SC2086 # args: words on purpose
    if $fn "$bin" $args; then result="ok"; else result="not ok"; fi
    sed 's/^/# /' "$out"
    echo "$result $n - $name"
done

redis_harness_stop
trap - EXIT INT TERM HUP
exit 0
