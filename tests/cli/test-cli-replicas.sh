#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) with --min-replicas, against the harness's
# redis-server as the primary and one replica of it that this script
# starts (redis_harness_extra): with one replica asked for, COMMAND runs,
# and the replica already has the lease when it starts; with two asked for,
# redlease exits 69 with the counts, COMMAND never runs, and the key is
# deleted again.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-replicas

# no 5 s wait for more replicas before the full sync (the default)
"$cli" -p "$REDLEASE_TEST_PORT" CONFIG SET repl-diskless-sync-delay 0 >/dev/null
redis_harness_extra cli-replica --port --replicaof 127.0.0.1 "$REDLEASE_TEST_PORT" ||
    { echo "Bail out! could not start a replica"; exit 1; }
replica=$REDLEASE_EXTRA_PORT
# Online is not enough: a replica is sent writes only after its first ACK.
online=
for _ in $(seq 1 100); do
    [ "$(printf 'SET ready 1\r\nWAIT 1 100\r\n' | "$cli" -p "$REDLEASE_TEST_PORT" | tail -n 1)" = 1 ] &&
        online=1 && break
done
[ -n "$online" ] || { echo "Bail out! the replica did not come online"; exit 1; }

primary=(--host 127.0.0.1 --port "$REDLEASE_TEST_PORT" --timeout $((2000 * slow)))

echo "1..7"
rl run "${primary[@]}" --min-replicas 1 --ttl 5000 repl-job -- \
    sh -c '"$1" -p "$2" GET "$REDLEASE_KEY" | cut -d" " -f1; echo "$REDLEASE_TOKEN"' _ "$cli" "$replica"
check "run --min-replicas 1 => 0, and the replica had the lease when COMMAND started" \
    eval '[ "$st" -eq 0 ] && [ "$(sed -n 1p <<<"$out")" = "$(sed -n 2p <<<"$out")" ] && [ -n "$(sed -n 2p <<<"$out")" ]'
# Too few replicas is retried (a failover's replicas resync) until
# --max-outage: then 69, with the counts and what was tried.
rl run "${primary[@]}" --min-replicas 2 --replica-timeout 100 --max-outage 600 repl-job -- touch "$tmp/ran"
check "run --min-replicas 2 with one replica, --max-outage 600 => 69 with the counts and the attempts, COMMAND not run" \
    eval '[ "$st" -eq 69 ] && grep -q "retrying for up to 600 ms" <<<"$err" &&
          grep -q "unusable for 600 ms (--max-outage; [0-9]* attempts\{0,1\} failed.*1 of 2 replicas" <<<"$err" && [ ! -e "$tmp/ran" ]'
rl status "${primary[@]}" repl-job
check "status after the refused run => 1: the key was deleted again" eval '[ "$st" -eq 1 ]'
rl run "${primary[@]}" --min-replicas 1 --replica-scope acquire --ttl 5000 repl-job -- true
check "--replica-scope acquire => 0" eval '[ "$st" -eq 0 ]'
rl run "${primary[@]}" --replica-scope acquire repl-job -- true
check "--replica-scope without --min-replicas => 64" eval '[ "$st" -eq 64 ] && grep -q "needs --min-replicas" <<<"$err"'
rl run "${primary[@]}" --min-replicas 1 --replica-scope some repl-job -- true
check "--replica-scope some => 64" eval '[ "$st" -eq 64 ]'
rl run "${primary[@]}" --min-replicas 1 --replica-timeout $((1000 * slow)) repl-job -- true
check "--replica-timeout not below half --timeout => 64" eval '[ "$st" -eq 64 ]'
