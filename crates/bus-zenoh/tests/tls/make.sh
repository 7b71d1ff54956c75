#!/bin/sh
# Makes the TLS test fixtures of tests/tls.rs. TEST FIXTURES ONLY: these keys are public, in
# the repository; never use them, or certificates signed by this CA, outside tests.
#
#   ca.pem / ca.key          the test CA
#   server.pem / server.key  the publisher's certificate, signed by the CA, for 127.0.0.1 and localhost
#   client.pem / client.key  a subscriber's certificate, signed by the CA (mutual TLS)
#   other-ca.pem / .key      an unrelated CA, and other-client.pem / .key signed by it
#
# Valid 100 years. Run from this directory: sh make.sh (needs openssl 1.1.1 or later).
set -eu
days=36500

# A CA: a self-signed certificate that may sign others.
ca() {
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
    -days "$days" -subj "/CN=$2" -keyout "$1.key" -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# A leaf certificate: name, CA, subject, extensions.
leaf() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
    -subj "/CN=$3" -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -days "$days" -sha256 -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext" "$2.srl"
}

ca ca "fastfeed test CA"
ca other-ca "fastfeed unrelated test CA"
leaf server ca "fastfeed test publisher" \
  "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
leaf client ca "fastfeed test subscriber" "extendedKeyUsage=clientAuth"
leaf other-client other-ca "fastfeed unrelated subscriber" "extendedKeyUsage=clientAuth"
# Zenoh reads PKCS#8, RSA or SEC1 keys; openssl writes PKCS#8.
chmod 644 ./*.key
