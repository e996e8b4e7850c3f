# The TLS 1.2 policy is Mozilla's "intermediate":
# ECDHE key exchange with AEAD ciphers only, no session tickets; TLS 1.3 as
# OpenSSL has it. The client runs with no system config and security level 0,
# so a refusal comes from our nginx, not from the client's own policy.

# tls12_with CIPHERS [OPTION...]: true when a TLS 1.2 handshake with only
# CIPHERS offered completes. (s_client's "New, TLSv1.0, Cipher is ..." names
# the version that introduced the cipher; the session's Protocol line is
# the one negotiated.)
tls12_with() {
    local ciphers="$1"
    shift
    OPENSSL_CONF=/dev/null timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -servername localhost \
        -tls1_2 -cipher "$ciphers:@SECLEVEL=0" "$@" </dev/null >"$WORK/tls12.out" 2>&1 &&
        grep -Eq '^ *Protocol *: TLSv1\.2' "$WORK/tls12.out" && ! grep -q 'Cipher is (NONE)' "$WORK/tls12.out"
}

it "a TLS 1.2 client offering only CBC suites is refused"
! tls12_with 'ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-RSA-AES128-SHA:AES128-SHA:AES256-SHA:AES128-SHA256' ||
    fail "a CBC suite was accepted: $(grep -E 'Cipher' "$WORK/tls12.out" | head -n 2)"

it "a TLS 1.2 client offering only CAMELLIA, ARIA or RSA key exchange is refused"
! tls12_with 'CAMELLIA:ARIA:AES128-GCM-SHA256:AES256-GCM-SHA384' ||
    fail "accepted: $(grep -E 'Cipher' "$WORK/tls12.out" | head -n 2)"

it "TLS 1.2 with ECDHE and AES-GCM or ChaCha20-Poly1305 is accepted"
tls12_with 'ECDHE-ECDSA-AES128-GCM-SHA256' || fail "AES-128-GCM refused: $(tail -n 3 "$WORK/tls12.out")"
tls12_with 'ECDHE-ECDSA-AES256-GCM-SHA384' || fail "AES-256-GCM refused: $(tail -n 3 "$WORK/tls12.out")"
tls12_with 'ECDHE-ECDSA-CHACHA20-POLY1305' || fail "ChaCha20-Poly1305 refused: $(tail -n 3 "$WORK/tls12.out")"

it "no TLS session ticket is issued"
tls12_with 'ECDHE-ECDSA-AES128-GCM-SHA256' || fail "handshake failed: $(tail -n 3 "$WORK/tls12.out")"
! grep -q 'TLS session ticket:' "$WORK/tls12.out" || fail "a session ticket was issued: $(grep -A2 'TLS session ticket' "$WORK/tls12.out")"
