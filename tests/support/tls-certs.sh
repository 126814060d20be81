#!/bin/sh
# SPDX-License-Identifier: MIT
# A throwaway PKI for the TLS tests, made with openssl in DIR:
#   ca.crt ca.key         the CA the tests trust
#   server.crt server.key localhost and 127.0.0.1, signed by the CA
#   client.crt client.key a client certificate signed by the CA (mutual TLS)
#   other-ca.crt          a CA nobody signed with (the "wrong CA")
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
q openssl req -newkey rsa:2048 -nodes -subj "/CN=redlease test client" -keyout client.key -out client.csr
q openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt
chmod 600 ./*.key
