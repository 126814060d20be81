#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) with --sentinel and --master, against a Sentinel
# this script starts (redis_harness_extra) that monitors the harness's
# redis-server as master "rl": run and status find the primary through
# it; a name it does not monitor, or no Sentinel at all, exits 69 with the
# Sentinel's reason; a semaphore's holders (run --limit) show through it;
# --sentinel with --host, or without --master, is a usage error.
# (Failovers: tests/integration/test_sentinel.c.)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-sentinel

mkdir -p "$REDLEASE_TEST_DIR/cli-sentinel-server" || exit 99
echo "sentinel monitor rl 127.0.0.1 $REDLEASE_TEST_PORT 1" >"$REDLEASE_TEST_DIR/cli-sentinel-server/redis.conf"
redis_harness_extra cli-sentinel-server --port --sentinel ||
    { echo "Bail out! could not start a Sentinel"; exit 1; }
sentinel=127.0.0.1:$REDLEASE_EXTRA_PORT

t=(--timeout $((1000 * slow)))

echo "1..7"
rl run "${t[@]}" --sentinel "$sentinel" --master rl --ttl 5000 -v sent-job -- \
    sh -c '"$1" -p "$2" GET "$REDLEASE_KEY" | cut -d" " -f1; echo "$REDLEASE_TOKEN"' _ "$cli" "$REDLEASE_TEST_PORT"
check "run --sentinel --master => 0, the lease on the primary the Sentinel names" \
    eval '[ "$st" -eq 0 ] && [ "$(sed -n 1p <<<"$out")" = "$(sed -n 2p <<<"$out")" ] && grep -q "the primary of .rl. is at 127.0.0.1:$REDLEASE_TEST_PORT" <<<"$err"'
"$cli" -p "$REDLEASE_TEST_PORT" SET 'lock:{sent-held}' tok PX 60000 >/dev/null
rl status "${t[@]}" --sentinel "$sentinel" --master rl sent-held
check "status --sentinel of a held lock => 0" eval '[ "$st" -eq 0 ] && grep -q "held" <<<"$out"'
rl run "${t[@]}" --sentinel "$sentinel" --master rl --limit 2 --weight 2 sent-sem -- \
    "${RL[@]}" status "${t[@]}" --sentinel "$sentinel" --master rl sent-sem
check "run --sentinel --limit 2 --weight 2, and status through the Sentinel from COMMAND => 0" \
    eval '[ "$st" -eq 0 ] && grep -q "^lock:{sent-sem}: semaphore: 2 of 2 permits held$" <<<"$out" &&
          grep -q "^lock:{sent-sem}: holder: 2 permits, [0-9]* ms left; by .*)$" <<<"$out"'
rl run "${t[@]}" --sentinel "$sentinel" --master nope --no-wait sent-job -- touch "$tmp/ran"
check "an unknown master name => 69 with the Sentinel's reason, nothing run" \
    eval '[ "$st" -eq 69 ] && grep -q "does not know master .nope." <<<"$err" && [ ! -e "$tmp/ran" ]'
rl status "${t[@]}" --sentinel "127.0.0.1:$((REDLEASE_EXTRA_PORT + 1)),$sentinel" --master rl sent-held
check "status: a Sentinel that is not there is skipped => 0" eval '[ "$st" -eq 0 ]'
rl status "${t[@]}" --sentinel "127.0.0.1:$((REDLEASE_EXTRA_PORT + 1))" --master rl sent-held
check "status: no Sentinel answers => 69 with the reason" \
    eval '[ "$st" -eq 69 ] && grep -q "Sentinel 127.0.0.1:$((REDLEASE_EXTRA_PORT + 1))" <<<"$err"'
rl status --sentinel "$sentinel" --master rl --host 127.0.0.1 sent-held
check "--sentinel with --host => 64" eval '[ "$st" -eq 64 ]'
