# TLS: 1.2 and 1.3 only. Debian's OpenSSL refuses TLS 1.1 on the client side
# too (MinProtocol, security level), so the client runs with no system config
# and security level 0, and a control server proves it can speak TLS 1.1:
# the refusal then comes from our nginx.

# handshake HOST:PORT OPTION...: true when a TLS handshake completes.
handshake() {
    local target="$1"
    shift
    OPENSSL_CONF=/dev/null timeout 10 openssl s_client -connect "$target" -servername localhost \
        -cipher 'DEFAULT:@SECLEVEL=0' "$@" </dev/null >"$WORK/tls.out" 2>&1 &&
        grep -Eq '^New, TLSv1|^ *Protocol *: TLSv1' "$WORK/tls.out"
}

it "the TLS client used below can speak TLS 1.1 (control server)"
control_port="$(free_port)"
if start_server "$control_port" env OPENSSL_CONF=/dev/null openssl s_server -accept "127.0.0.1:$control_port" \
    -cert "$RUN/tls/cert.pem" -key "$RUN/tls/key.pem" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' -quiet; then
    handshake "127.0.0.1:$control_port" -tls1_1 || fail "TLS 1.1 to the control server failed: $(tail -n 3 "$WORK/tls.out")"
    stop_server "$SERVER_PID"
else
    fail "the control server did not start"
fi

it "TLS 1.1 is refused"
! handshake "127.0.0.1:$PORT" -tls1_1 || fail "a TLS 1.1 handshake succeeded: $(grep -i protocol "$WORK/tls.out")"

it "TLS 1.0 is refused"
! handshake "127.0.0.1:$PORT" -tls1 || fail "a TLS 1.0 handshake succeeded"

it "TLS 1.2 is accepted"
handshake "127.0.0.1:$PORT" -tls1_2 || fail "TLS 1.2 handshake failed: $(tail -n 3 "$WORK/tls.out")"
grep -Eq 'New, TLSv1\.2|Protocol *: TLSv1\.2' "$WORK/tls.out" || fail "not TLS 1.2: $(grep -i protocol "$WORK/tls.out")"

it "TLS 1.3 is accepted"
handshake "127.0.0.1:$PORT" -tls1_3 || fail "TLS 1.3 handshake failed: $(tail -n 3 "$WORK/tls.out")"
grep -q 'New, TLSv1\.3' "$WORK/tls.out" || fail "not TLS 1.3: $(grep -E 'New,|Protocol' "$WORK/tls.out")"

it "the self-signed certificate names 127.0.0.1 and localhost"
san="$(openssl x509 -in "$RUN/tls/cert.pem" -noout -ext subjectAltName 2>&1)"
[[ "$san" == *"IP Address:127.0.0.1"* && "$san" == *"DNS:localhost"* ]] || fail "subjectAltName: $san"

it "curl verifies the certificate when told to trust it (it matches 127.0.0.1)"
code="$(curl -s --noproxy '*' --cacert "$RUN/tls/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/other")"
[[ "$code" == 404 ]] || fail "status $code with certificate verification on"
