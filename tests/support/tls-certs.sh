#!/bin/sh
# SPDX-License-Identifier: MIT
# A throwaway PKI for the TLS tests, made with openssl in DIR:
#   ca.crt ca.key         the CA the tests trust
#   server.crt server.key localhost and 127.0.0.1, signed by the CA
#   client.crt client.key a client certificate signed by the CA (mutual TLS)
#   other-ca.crt          a CA nobody signed with (the "wrong CA")
#   expired.crt           the server's key and names, signed by the CA, valid
#                         only on 1 January 2020
# Usage: tls-certs.sh DIR. Keys are RSA 2048, certificates valid 2 days.
set -e
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
cd "$dir"
q() { "$@" >/dev/null 2>&1; }
q openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=redlease test CA" \
    -keyout ca.key -out ca.crt
q openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=redlease other CA" \
    -keyout other-ca.key -out other-ca.crt
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
q openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
q openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
# openssl x509 takes no date in the past; openssl ca does, with a config.
cat >ca.cnf <<'EOF'
[ca]
default_ca = test
[test]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
[any]
commonName = supplied
EOF
: >index.txt
echo 01 >serial
q openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key -in server.csr \
    -out expired.crt -startdate 20200101000000Z -enddate 20200102000000Z -extfile server.ext
q openssl req -newkey rsa:2048 -nodes -subj "/CN=redlease test client" -keyout client.key -out client.csr
q openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt
chmod 600 ./*.key
