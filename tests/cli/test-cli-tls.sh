#!/bin/bash
# SPDX-License-Identifier: MIT
# make check: redlease(1) over TLS, against a redis-server this script
# starts with --tls-port and client certificates required, on a throwaway
# PKI (tests/support/tls-certs.sh). A redlease built without TLS gets one
# case: --tls is refused with 69 and a reason, never run in plaintext
# (asked of the harness's plaintext server, which tells the two builds
# apart: the one with TLS fails its handshake there instead).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99
. "$here/cli-rig.sh" cli-tls

# Without TLS support: the one case.
rl status --tls --timeout 300 --socket "$REDLEASE_TEST_SOCKET" res
if grep -q "no TLS support" <<<"$err"; then
    echo "1..1"
    check "--tls in a redlease without TLS => 69, 'no TLS support'" eval '[ "$st" -eq 69 ]'
    exit 0
fi

sh "$REDLEASE_SRCDIR/tests/support/tls-certs.sh" "$tmp/pki" || { echo "Bail out! tls-certs.sh failed"; exit 1; }
redis_harness_extra cli-tls-server --tls-port --port 0 \
    --tls-cert-file "$tmp/pki/server.crt" --tls-key-file "$tmp/pki/server.key" \
    --tls-ca-cert-file "$tmp/pki/ca.crt" --tls-auth-clients yes ||
    { echo "Bail out! could not start a TLS redis-server"; exit 1; }
port=$REDLEASE_EXTRA_PORT

echo "1..4"
tls=(--tls --host 127.0.0.1 --port "$port" --cacert "$tmp/pki/ca.crt"
     --cert "$tmp/pki/client.crt" --key "$tmp/pki/client.key")
rl run "${tls[@]}" --ttl 3000 tls-job -- sh -c 'echo "$REDLEASE_KEY"'
check "run over TLS => 0, COMMAND ran under lock:{tls-job}" \
    eval '[ "$st" -eq 0 ] && [ "$out" = "lock:{tls-job}" ]'
rl status "${tls[@]}" tls-job
check "status over TLS => 1 (free after the run)" eval '[ "$st" -eq 1 ]'
rl run --tls --host 127.0.0.1 --port "$port" --cacert "$tmp/pki/other-ca.crt" \
    --cert "$tmp/pki/client.crt" --key "$tmp/pki/client.key" tls-job -- touch "$tmp/ran"
check "run, a CA that did not sign the server => 69 with the reason, nothing run" \
    eval '[ "$st" -eq 69 ] && grep -q "certificate" <<<"$err" && [ ! -e "$tmp/ran" ]'
rl status "${tls[@]}" --sni redis.example tls-job
check "status, a name the certificate does not carry => 69, 'hostname mismatch'" \
    eval '[ "$st" -eq 69 ] && grep -q "hostname mismatch" <<<"$err"'
