#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) with --cluster, against a Redis Cluster of three
# primaries this script starts and forms (redis_harness_cluster_node,
# redis_harness_cluster_form): run takes the lease on the primary of the key's slot,
# given another node; status follows MOVED from the node listed, also for
# 0.1.0's key of the resource (another slot), and a semaphore's holders
# (run --limit) through another node; a run nested in a run's COMMAND
# joins its lease, checked through another node; --cluster with --host or
# --db is a usage error; no node reachable exits 69. (Migrations and
# failovers: tests/integration/test_cluster.c, chaos CHAOS_TOPOLOGY=cluster.)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-cluster

# Three nodes formed into a Cluster, in ports[]. No failovers here: a long
# node timeout keeps a loaded machine from failing nodes while it forms.
# A formation that fails (said on stderr, with each node's view) is tried
# once more on new nodes: this script tests redlease(1), not Redis's
# gossip under load.
form() {
    local try=$1 i
    ports=()
    for i in 1 2 3; do
        redis_harness_cluster_node "cli-cluster$try-node$i" --cluster-node-timeout 5000 || return 1
        ports+=("$REDLEASE_EXTRA_PORT")
    done
    redis_harness_cluster_form "${ports[@]}"
}
if ! form 1; then
    for p in "${ports[@]}"; do "$cli" -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1; done
    form 2 || { echo "Bail out! the Cluster did not form"; exit 1; }
fi
seed=127.0.0.1:${ports[1]}
t=(--timeout $((1000 * slow)))
# the port of the primary serving KEY's slot
owner() {
    "$cli" -p "${ports[0]}" CLUSTER SLOTS | awk -v s="$("$cli" -p "${ports[0]}" CLUSTER KEYSLOT "$1")" '
        NR % 1 == 0 { v[NR] = $0 } END {
            for (i = 1; i + 3 <= NR; i++)
                if (v[i] ~ /^[0-9]+$/ && v[i + 1] ~ /^[0-9]+$/ && v[i] + 0 <= s && s <= v[i + 1] + 0 &&
                    v[i + 3] ~ /^[0-9]+$/) { print v[i + 3]; exit }
        }'
}

echo "1..9"
rl run "${t[@]}" --cluster "$seed" --ttl 5000 cl-job -- \
    sh -c 'echo "$REDLEASE_KEY"; echo "$REDLEASE_TOKEN"; "$1" -c -p "$2" GET "$REDLEASE_KEY" | cut -d" " -f1' _ "$cli" "${ports[0]}"
check "run --cluster => 0, the lease in the Cluster (asked through another node)" \
    eval '[ "$st" -eq 0 ] && [ -n "$(sed -n 2p <<<"$out")" ] && [ "$(sed -n 2p <<<"$out")" = "$(sed -n 3p <<<"$out")" ]'
rl run "${t[@]}" --cluster "$seed" --ttl 5000 cl-job2 -- \
    sh -c '"$1" -p "$2" GET "$REDLEASE_KEY" | cut -d" " -f1; echo "$REDLEASE_TOKEN"' _ "$cli" "$(owner 'lock:{cl-job2}')"
check "the lease is on the primary that serves its slot" \
    eval '[ "$st" -eq 0 ] && [ "$(sed -n 1p <<<"$out")" = "$(sed -n 2p <<<"$out")" ]'
"$cli" -c -p "${ports[0]}" SET 'lock:{cl-held}' 0123456789abcdef0123456789abcdef PX 60000 >/dev/null
held_on=$(owner 'lock:{cl-held}')
for p in "${ports[@]}"; do [ "$p" != "$held_on" ] && elsewhere=$p; done
rl status "${t[@]}" --cluster "127.0.0.1:$elsewhere" cl-held
check "status --cluster of a held lock, asked of another node (MOVED) => 0" \
    eval '[ "$st" -eq 0 ] && grep -q "lock:{cl-held}: held" <<<"$out" && [ -n "$held_on" ] && [ "$elsewhere" != "$held_on" ]'
rl status "${t[@]}" --cluster "$seed" cl-free
check "status --cluster of a free lock => 1" eval '[ "$st" -eq 1 ] && [ "$out" = "lock:{cl-free}: free" ]'
"$cli" -c -p "${ports[0]}" SET 'lock:cl-old' 0123456789abcdef0123456789abcdef PX 60000 >/dev/null
rl status "${t[@]}" --cluster "$seed" cl-old
check "status --cluster finds 0.1.0's key in its own slot => 0" \
    eval '[ "$st" -eq 0 ] && grep -q "lock:cl-old: held.*0.1.0" <<<"$out"'
rm -f "$tmp/sem-in" "$tmp/sem-go"
timeout -s KILL $((60 * slow)) "${RL[@]}" run "${t[@]}" --cluster "$seed" --limit 2 cl-sem -- \
    sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' "$tmp/sem-in" "$tmp/sem-go" \
    >/dev/null 2>&1 &
sem_holder=$!
for _ in $(seq 1 $((200 * slow))); do [ -e "$tmp/sem-in" ] && break; sleep 0.05; done
sem_on=$(owner 'lock:{cl-sem}')
for p in "${ports[@]}"; do [ "$p" != "$sem_on" ] && sem_elsewhere=$p; done
rl status "${t[@]}" --cluster "127.0.0.1:$sem_elsewhere" cl-sem
touch "$tmp/sem-go"
wait "$sem_holder"
check "run --cluster --limit 2 holds a permit; status asked of another node (MOVED) shows it => 0" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{cl-sem}: semaphore: 1 of 2 permits held$" <<<"$out" &&
          grep -q "^lock:{cl-sem}: holder: 1 permit, [0-9]* ms left; by .*)$" <<<"$out" && [ "$sem_elsewhere" != "$sem_on" ]'
# A run under COMMAND on the same resource joins the lease (man 1,
# INHERITED LEASES): its check asks a node that does not serve the key,
# and follows MOVED. Not joined, its --no-wait would exit 75.
nest_on=$(owner 'lock:{cl-nest}')
for p in "${ports[@]}"; do [ "$p" != "$nest_on" ] && nest_elsewhere=$p; done
rl run "${t[@]}" --cluster "$seed" cl-nest -- bash -c '"$@"; echo "inner=$?"' _ \
    "${RL[@]}" run "${t[@]}" --cluster "127.0.0.1:$nest_elsewhere" -v --no-wait cl-nest -- echo ran
check "run --cluster under a run on the same resource joins its lease (asked of another node) => 0" \
    eval '[ "$st" -eq 0 ] && [ "$out" = "ran
inner=0" ] && grep -q "joined the lease on lock:{cl-nest}" <<<"$err" && [ "$nest_elsewhere" != "$nest_on" ]'
rl run --cluster "$seed" --host 127.0.0.1 cl-job -- true
st1=$st
rl run --cluster "$seed" --db 1 cl-job -- true
check "--cluster with --host, or --db => 64" eval '[ "$st1" -eq 64 ] && [ "$st" -eq 64 ]'
dead=$((ports[2] + 1))
rl run "${t[@]}" --cluster "127.0.0.1:$dead" --no-wait cl-job -- touch "$tmp/ran"
check "no node reachable => 69, nothing run" eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ]'
