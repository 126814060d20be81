# SPDX-License-Identifier: MIT
# Sourced by the redlease(1) scripts that start servers of their own
# (test-cli-tls.sh, test-cli-replicas.sh, test-cli-sentinel.sh, test-cli-cluster.sh,
# test-cli-quorum.sh, test-cli-inherit.sh, test-cli-ride.sh):
#     . "$here/cli-rig.sh" NAME
# starts the harness's redis-server (a TAP skip or bail out when it cannot),
# and sets
#     RL      redlease as a command array (under REDLEASE_TEST_WRAPPER
#             through libtool, so valgrind sees the real binary)
#     slow    how much longer time bounds are under the wrapper (1 or 10)
#     tmp     a scratch folder, $REDLEASE_TEST_DIR/NAME
#     cli     redis-cli
# and the functions
#     rl ARG...          runs redlease; sets st, out (stdout) and err (stderr)
#     check NAME CMD...  one TAP case: ok when CMD succeeds, else not ok
#                        with the last run's st, out and err
#     rig_quorum NAME    starts three more redis-servers (NAME1..3) for
#                        --quorum: ports and pids (arrays), quorum (the list)
# The REDLEASE_* variables that would point redlease elsewhere are unset.
rig_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$rig_here/../support/redis-harness.sh" || exit 99
redis_harness_start_tap

bin=${REDLEASE_BUILDDIR:-.}/cli/redlease
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin not built"
    exit 1
fi
if [ -n "${REDLEASE_TEST_WRAPPER:-}" ]; then
    RL=("${REDLEASE_BUILDDIR:-.}/libtool" --mode=execute $REDLEASE_TEST_WRAPPER "$bin")
    slow=10
else
    RL=("$bin")
    slow=1
fi
unset REDLEASE_HOST REDLEASE_PORT REDLEASE_PASSWORD REDLEASE_SOCKET REDLEASE_SENTINEL_PASSWORD
tmp=$REDLEASE_TEST_DIR/${1:?cli-rig.sh NAME}
mkdir -p "$tmp" || exit 99
cli=${REDLEASE_TEST_REDIS_CLI:-redis-cli}

n=0
check() {
    local name=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        printf '#   status=%s\n#   stdout: %s\n#   stderr: %s\n' "$st" "$out" "$err"
    fi
}
rl() {
    out=$(timeout -s KILL $((30 * slow)) "${RL[@]}" "$@" 2>"$tmp/stderr")
    st=$?
    err=$(<"$tmp/stderr")
}
rig_quorum() {
    local i
    ports=() pids=()
    for i in 1 2 3; do
        redis_harness_extra "$1$i" --port || { echo "Bail out! could not start redis-server $i"; exit 1; }
        ports+=("$REDLEASE_EXTRA_PORT")
        pids+=("$REDLEASE_EXTRA_PID")
    done
    quorum=127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}
}
