#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) with --quorum, against three independent
# redis-servers this script starts (redis_harness_extra): run sets the key
# with one token on all three while COMMAND runs, and deletes it after; a
# second run with --wait 0 finds it busy (75); status asks every server
# and says held only when a majority holds one token (also with one server
# stopped), free when no token can have a majority, and cannot tell (69)
# when too few answer; a semaphore's holders and shared ones count where a
# majority admits them: two runs of a semaphore of 3 hold (each server
# admits 2) and a third finds it full, two shared runs hold together and
# an exclusive one waits for both, and with two servers stopped and no
# live holder on the third, status cannot tell; --quorum with --cluster, --sentinel, --socket,
# --host or --min-replicas, or a list of one server or the same server
# twice, is a usage error; no server reachable exits 69. (The quorum's
# logic itself: tests/unit/test_quorum.c.) Freshly started, no server
# counts toward taking a lease within --restart-guard (69).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-quorum

rig_quorum cli-quorum-server
t=(--timeout $((1000 * slow)))
tok1=0123456789abcdef0123456789abcdef tok2=fedcba9876543210fedcba9876543210
# on_server I CMD...: redis-cli to server I (0-2)
on_server() { local i=$1; shift; "$cli" -p "${ports[i]}" "$@"; }
# the values of KEY on the three servers, one line each ("" when none)
# each server's value of key $1: a mutex's token (its holder's record, which
# follows it, cut off)
values() { local i; for i in 0 1 2; do on_server "$i" GET "$1" | cut -d' ' -f1; done; }

echo "1..27"
# The servers were just started: by default (the TTL) and with a guard of an
# hour, none counts toward taking a lease; every other case below turns the
# guard off.
rl run "${t[@]}" --quorum "$quorum" --restart-guard 3600000 --wait 0 q-young -- touch "$tmp/ran"
check "run --quorum on servers up for less than --restart-guard => 69, the guard named, nothing run" \
    eval '[ "$st" = 69 ] && [ ! -e "$tmp/ran" ] &&
          grep -q "0 of 3 servers said yes, 2 needed (0 no, [123] restarted less than the restart guard ago" <<<"$err"'
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --ttl 5000 q-job -- \
    sh -c 'echo "$REDLEASE_TOKEN"; for p in "$@"; do "$0" -p "$p" GET "$REDLEASE_KEY" | cut -d" " -f1; done' \
    "$cli" "${ports[@]}"
token=$(sed -n 1p <<<"$out")
# Three servers, or two when one was slow to connect (valgrind): the lease
# goes to those ready when the settling time ends.
check "run --quorum => 0, the key with its token on a majority of the servers (2 or 3 of 3) while COMMAND runs" \
    eval '[ "$st" -eq 0 ] && [ ${#token} -eq 32 ] && [ "$(sed -n 2,4p <<<"$out" | grep -vx "" | sort -u)" = "$token" ] &&
          [ "$(sed -n 2,4p <<<"$out" | grep -cx "$token")" -ge 2 ]'
# (a run exits once a majority confirmed its release: the third server's
# delete may still be on the wire)
gone_from_all() { local _; for _ in $(seq 1 $((100 * slow))); do [ -z "$(values "$1" | tr -d "\n")" ] && return 0; sleep 0.05; done; return 1; }
check "... and deleted from all three after" gone_from_all "lock:{q-job}"

# A holder that stays: COMMAND waits for $tmp/go.
rm -f "$tmp/go"
timeout -s KILL $((60 * slow)) "${RL[@]}" run "${t[@]}" --quorum "$quorum" --restart-guard off --ttl $((5000 * slow)) q-hold -- \
    sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done' "$tmp/go" >"$tmp/hold.out" 2>"$tmp/hold.err" &
holder=$!
# A quorum's lease holds where a majority said yes: a member whose link
# was still down (a slow start, under valgrind) is left out. So the
# expectations come from what the servers hold once COMMAND runs.
for _ in $(seq 1 $((200 * slow))); do
    [ "$(values "lock:{q-hold}" | sort -u | grep -c .)" -eq 1 ] && [ "$(values "lock:{q-hold}" | grep -c .)" -ge 2 ] && break
    sleep 0.05
done
held_token=$(values "lock:{q-hold}" | grep -m1 .)
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-hold
nh=$(grep -c "^127.0.0.1:[0-9]*: lock:{q-hold}: held, [0-9]* ms left" <<<"$out")
check "status --quorum of a lease run holds => 0, a line per server, held by as many as say held (2 or 3 of 3)" \
    eval '[ "$st" -eq 0 ] && [ "$nh" -ge 2 ] && [ "$(grep -c "^127.0.0.1:[0-9]*: lock:{q-hold}: " <<<"$out")" -eq 3 ] &&
          grep -q "^lock:{q-hold}: held by $nh of 3 servers (a majority is 2), [0-9]* ms left$" <<<"$out"'
rl status "${t[@]}" --quorum "$quorum" --restart-guard off --show-token q-hold
nh=$(grep -c "^127.0.0.1:[0-9]*: lock:{q-hold}: held, " <<<"$out")
check "status --quorum --show-token names the holder's token, on each server that holds and in the verdict" \
    eval '[ "$st" -eq 0 ] && [ -n "$held_token" ] && [ "$nh" -ge 2 ] && [ "$(grep -c "token $held_token" <<<"$out")" -eq $((nh + 1)) ]'
rl status "${t[@]}" --quorum "$quorum" --restart-guard off --json q-hold
nh=$(grep -o '"servers":[0-9]*}\],"waiters"' <<<"$out" | tr -dc 0-9)
check "status --quorum --json: one object, held by the majority, the holder on 2 or 3 of 3 servers" \
    eval '[ "$st" -eq 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && [ "${nh:-0}" -ge 2 ] &&
          grep -q "^{\"resource\":\"q-hold\",\"key\":\"lock:{q-hold}\",\"held\":true,\"kind\":\"mutex\"," <<<"$out" &&
          grep -q "\"servers\":3,\"answered\":3,\"holders\":\[{\"label\":\"sh\",.*\"servers\":$nh}\],\"waiters\":\[\]}$" <<<"$out"'
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --wait 0 q-hold -- touch "$tmp/ran"
check "a second run with --wait 0 while it is held => 75, nothing run" \
    eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ] && grep -q "held by another holder" <<<"$err"'
touch "$tmp/go"
wait "$holder"
hold_st=$?
gone_from_all "lock:{q-hold}"
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-hold
check "after that run ended (=> 0), status --quorum => 1, free on all three" \
    eval '[ "$hold_st" -eq 0 ] && [ "$st" -eq 1 ] && [ "$(grep -c ": lock:{q-hold}: free$" <<<"$out")" -eq 3 ] &&
          grep -q "^lock:{q-hold}: free (held by 0 of 3 servers; a majority is 2)$" <<<"$out"'

# Keys set by hand: a majority with one token, and two tokens split.
on_server 0 SET 'lock:{q-two}' "$tok1" PX 60000 >/dev/null
on_server 2 SET 'lock:{q-two}' "$tok1" PX 60000 >/dev/null
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-two
check "status: one token on 2 of 3 servers => 0, held by a majority" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{q-two}: held by 2 of 3 servers" <<<"$out" && grep -q ":${ports[1]}: lock:{q-two}: free$" <<<"$out"'
on_server 0 SET 'lock:{q-split}' "$tok1" PX 60000 >/dev/null
on_server 1 SET 'lock:{q-split}' "$tok2" PX 60000 >/dev/null
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-split
check "status: two tokens on one server each => 1, no majority" \
    eval '[ "$st" -eq 1 ] && grep -q "^lock:{q-split}: free (held by 1 of 3 servers; a majority is 2)$" <<<"$out" &&
          [ "$(grep -c ": lock:{q-split}: held" <<<"$out")" -eq 2 ]'

# holders_by RES KIND HEAD HOLDER RC SUMMARY SERVER...: a set of holders
# (the lock key KIND, one live holder, token tok1) written on those
# servers: status prints their lines there (HEAD, then HOLDER's), and the
# quorum's line SUMMARY: the holder is the quorum's when a majority of
# servers admits it (RC 0), else free (RC 1).
holders_by() {
    local res=$1 kind=$2 head=$3 holder=$4 rc=$5 summary=$6 i server_ms first
    shift 6
    first=${ports[$1]}
    for i in "$@"; do
        server_ms=$(on_server "$i" TIME | { read -r s; read -r us; echo $((s * 1000 + us / 1000)); })
        on_server "$i" SET "lock:{$res}" "$kind" PX 60000 >/dev/null
        on_server "$i" ZADD "lock:{$res}:holders" $((server_ms + 50000)) "$tok1" >/dev/null
        on_server "$i" HSET "lock:{$res}:weights" "$tok1" 1 used 1 >/dev/null
    done
    rl status "${t[@]}" --quorum "$quorum" --restart-guard off "$res"
    check "status: $kind on $# of 3 servers => $rc, their lines there, then: $summary" \
        eval '[ "$st" -eq "$rc" ] && grep -q "^127.0.0.1:$first: lock:{$res}: $head$" <<<"$out" &&
              grep -q "^127.0.0.1:$first: lock:{$res}: $holder, [0-9]* ms left$" <<<"$out" &&
              grep -q "^lock:{$res}: $summary" <<<"$out"'
}
holders_by q-sem "semaphore 2" "semaphore: 1 of 2 permits held" "holder: 1 permit" 1 \
    "semaphore: 0 of 2 permits held by a majority (2 of 3 servers; each admits 1)$" 0
holders_by q-shr shared "shared: 1 holder" "holder: shared" 0 \
    "shared: 1 holder by a majority (2 of 3 servers)$" 0 1
grep -q "^lock:{q-shr}: holder: shared, on 2 of 3 servers, [0-9]* ms left$" <<<"$out"
check "... and names the shared holder a majority admits" eval '[ $? -eq 0 ]'

# A semaphore of 3 over the three servers: each admits 2 (man 3, KINDS).
# Two runs hold at once; a third with --wait 0 finds no permit (75).
rm -f "$tmp/go"
sems=()
for i in 1 2; do
    timeout -s KILL $((60 * slow)) "${RL[@]}" run "${t[@]}" --quorum "$quorum" --restart-guard off --limit 3 --ttl $((5000 * slow)) q-sem3 -- \
        sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done' "$tmp/go" >"$tmp/sem$i.out" 2>"$tmp/sem$i.err" &
    sems+=($!)
    for _ in $(seq 1 $((200 * slow))); do
        [ "$(on_server 0 ZCARD "lock:{q-sem3}:holders")" -ge "$i" ] && [ "$(on_server 2 ZCARD "lock:{q-sem3}:holders")" -ge "$i" ] && break
        sleep 0.05
    done
done
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --limit 3 --wait 0 q-sem3 -- touch "$tmp/ran"
check "run --quorum --limit 3: two hold (each server admits 2), a third --wait 0 => 75, nothing run" \
    eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ] && grep -q "no permit free" <<<"$err"'
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-sem3
check "status --quorum of the semaphore => 0, 2 of 3 permits held by a majority, two holders" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{q-sem3}: semaphore: 2 of 3 permits held by a majority (2 of 3 servers; each admits 2)$" <<<"$out" &&
          [ "$(grep -c "^lock:{q-sem3}: holder: 1 permit, on [23] of 3 servers, [0-9]* ms left$" <<<"$out")" -eq 2 ]'
# Shared holders beside the semaphore's resource are another kind: refused.
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --shared --wait 0 q-sem3 -- touch "$tmp/ran"
check "run --quorum --shared on the semaphore's resource => 69, the kind named, nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] && grep -q "semaphore of 3 permits" <<<"$err"'
touch "$tmp/go"
wait "${sems[0]}"; s1=$?
wait "${sems[1]}"; s2=$?
check "... both semaphore runs => 0, and the resource's keys gone from every server" \
    eval '[ "$s1" -eq 0 ] && [ "$s2" -eq 0 ] && [ -z "$(values "lock:{q-sem3}" | tr -d "\n")" ]'

# Shared holders over the quorum: two at once; an exclusive run waits for
# both to leave, then holds alone.
rm -f "$tmp/go"
shrs=()
for i in 1 2; do
    timeout -s KILL $((60 * slow)) "${RL[@]}" run "${t[@]}" --quorum "$quorum" --restart-guard off --shared --ttl $((5000 * slow)) q-rw -- \
        sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done' "$tmp/go" >"$tmp/shr$i.out" 2>"$tmp/shr$i.err" &
    shrs+=($!)
done
for _ in $(seq 1 $((200 * slow))); do
    [ "$(on_server 1 ZCARD "lock:{q-rw}:holders")" -eq 2 ] && [ "$(on_server 2 ZCARD "lock:{q-rw}:holders")" -eq 2 ] && break
    sleep 0.05
done
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-rw
check "two run --quorum --shared hold at once: status => 0, 2 holders by a majority" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{q-rw}: shared: 2 holders by a majority (2 of 3 servers)$" <<<"$out"'
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --exclusive --wait 0 q-rw -- touch "$tmp/ran"
check "... an exclusive run with --wait 0 => 75, nothing run" eval '[ "$st" -eq 75 ] && [ ! -e "$tmp/ran" ]'
( sleep 0.3; touch "$tmp/go" ) &
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --wait $((20000 * slow)) q-rw -- \
    sh -c 'for p in "$@"; do "$0" -p "$p" ZCARD "$REDLEASE_KEY:holders"; done' "$cli" "${ports[@]}"
wait "${shrs[0]}"; s1=$?
wait "${shrs[1]}"; s2=$?
# (a shared run exits once a majority confirmed its release: the third
# server's delete may still be on the wire)
check "... an exclusive run that waits holds once both left (=> 0): no shared holder on a majority meanwhile" \
    eval '[ "$st" -eq 0 ] && [ "$s1" -eq 0 ] && [ "$s2" -eq 0 ] && [ "$(grep -c "^0$" <<<"$out")" -ge 2 ]'

# One server stopped (by its pid).
on_server 0 SET 'lock:{q-two}' "$tok1" PX 60000 >/dev/null # (its first one may have expired: valgrind)
on_server 1 SET 'lock:{q-two}' "$tok1" PX 60000 >/dev/null
on_server 0 SET 'lock:{q-one}' "$tok1" PX 60000 >/dev/null
kill -TERM "${pids[2]}"
for _ in $(seq 1 100); do kill -0 "${pids[2]}" 2>/dev/null || break; sleep 0.05; done
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-two
check "one server stopped: status of a lease on the other two => 0, the stopped one unavailable" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{q-two}: held by 2 of 3 servers" <<<"$out" &&
          grep -q "^127.0.0.1:${ports[2]}: lock:{q-two}: unavailable$" <<<"$out" && grep -q "Redis at 127.0.0.1:${ports[2]}: " <<<"$err"'
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-job
check "one server stopped: status of a free resource => 1 (the stopped one cannot make a majority)" \
    eval '[ "$st" -eq 1 ] && grep -q "^lock:{q-job}: free (held by 0 of 3 servers, 1 not answering; a majority is 2)$" <<<"$out"'
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-one
check "one server stopped, the key on one other => 69, cannot tell" \
    eval '[ "$st" -eq 69 ] && grep -q "cannot tell: lock:{q-one} is held by 1 of 3 servers, 1 not answering" <<<"$err"'
rl run "${t[@]}" --quorum "$quorum" --restart-guard off --no-wait --ttl 5000 q-job -- \
    sh -c 'echo "$REDLEASE_TOKEN"; for p in "$1" "$2"; do "$0" -p "$p" GET "$REDLEASE_KEY" | cut -d" " -f1; done' \
    "$cli" "${ports[0]}" "${ports[1]}"
check "one server stopped: run --quorum => 0, the key on the other two" \
    eval '[ "$st" -eq 0 ] && [ "$(sed -n 1,3p <<<"$out" | sort -u | grep -c "^[0-9a-f]\{32\}$")" -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 3 ]'

bad=
for opts in "--cluster 127.0.0.1:${ports[0]}" "--sentinel 127.0.0.1:${ports[0]} --master m" \
            "--socket $tmp/redis.sock" "--host 127.0.0.1" "--port ${ports[0]}"; do
    # shellcheck disable=SC2086 # the options are words
    rl run --quorum "$quorum" --restart-guard off $opts q-job -- touch "$tmp/ran"
    [ "$st" -eq 64 ] && grep -q -- "--quorum names its servers" <<<"$err" || bad+=" run:$opts"
    # shellcheck disable=SC2086
    rl status --quorum "$quorum" --restart-guard off $opts q-job
    [ "$st" -eq 64 ] && grep -q -- "--quorum names its servers" <<<"$err" || bad+=" status:$opts"
done
rl run --quorum "$quorum" --restart-guard off --min-replicas 1 q-job -- touch "$tmp/ran"
[ "$st" -eq 64 ] && grep -q -- "--quorum and --min-replicas exclude each other" <<<"$err" || bad+=" --min-replicas"
rl status --quorum "127.0.0.1:${ports[0]}" q-job
[ "$st" -eq 64 ] && grep -q -- "2 to 9 servers" <<<"$err" || bad+=" one-server"
rl status --quorum "127.0.0.1:${ports[0]},127.0.0.1:${ports[0]}" q-job
[ "$st" -eq 64 ] && grep -q -- "listed twice" <<<"$err" || bad+=" twice"
check "--quorum with --cluster, --sentinel, --socket, --host, --port or --min-replicas, one server, a server twice => 64" \
    eval '[ -z "$bad" ] && [ ! -e "$tmp/ran" ] || { echo "#   failed:$bad"; false; }'
dead=127.0.0.1:${ports[2]},127.0.0.1:$((ports[2] + 1))
rl run "${t[@]}" --quorum "$dead" --no-wait q-job -- touch "$tmp/ran"
check "no majority reachable => 69, nothing run" \
    eval '[ "$st" -eq 69 ] && [ ! -e "$tmp/ran" ] && grep -q "Redis at quorum" <<<"$err"'
# Two of three servers stopped; the one left has a semaphore's kind whose
# only holder's deadline has passed: nobody holds there, but the two that
# do not answer could make a majority for anyone: cannot tell (69).
kill -TERM "${pids[1]}"
for _ in $(seq 1 100); do kill -0 "${pids[1]}" 2>/dev/null || break; sleep 0.05; done
server_ms=$(on_server 0 TIME | { read -r s; read -r us; echo $((s * 1000 + us / 1000)); })
on_server 0 SET 'lock:{q-past}' "semaphore 3" PX 60000 >/dev/null
on_server 0 ZADD 'lock:{q-past}:holders' $((server_ms - 1000)) "$tok1" >/dev/null
rl status "${t[@]}" --quorum "$quorum" --restart-guard off q-past
check "two of three stopped, a semaphore with no live holder on the third => 69, cannot tell" \
    eval '[ "$st" -eq 69 ] && grep -q "cannot tell: no holder of lock:{q-past} is admitted by 2 of 3 servers, and 2 do not answer" <<<"$err"'
