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

it "the server certificate names 127.0.0.1 and localhost"
san="$(openssl x509 -in "$RUN/tls/cert.pem" -noout -ext subjectAltName 2>&1)"
[[ "$san" == *"IP Address:127.0.0.1"* && "$san" == *"DNS:localhost"* ]] || fail "subjectAltName: $san"

it "the server certificate is a leaf for TLS servers that iOS accepts: CA:FALSE, serverAuth, at most 825 days"
text="$(openssl x509 -in "$RUN/tls/cert.pem" -noout -text 2>&1)"
grep -q 'CA:FALSE' <<<"$text" || fail "no CA:FALSE: $(grep -A1 'Basic Constraints' <<<"$text")"
grep -q 'TLS Web Server Authentication' <<<"$text" || fail "no serverAuth"
days="$(python3 -c 'import ssl,sys,time; print(int((ssl.cert_time_to_seconds(sys.argv[2]) - ssl.cert_time_to_seconds(sys.argv[1])) / 86400))' \
    "$(openssl x509 -in "$RUN/tls/cert.pem" -noout -startdate | cut -d= -f2)" "$(openssl x509 -in "$RUN/tls/cert.pem" -noout -enddate | cut -d= -f2)")"
((days <= 825)) || fail "valid for $days days"

it "the local CA signed it, is name-constrained to the box's names, and its key is 0600"
openssl verify -CAfile "$RUN/tls/ca.crt" "$RUN/tls/cert.pem" >/dev/null 2>&1 || fail "$(openssl verify -CAfile "$RUN/tls/ca.crt" "$RUN/tls/cert.pem" 2>&1)"
openssl x509 -in "$RUN/tls/ca.crt" -noout -text | grep -q 'Permitted' || fail "the CA has no name constraints"
[[ "$(stat -c %a "$RUN/tls/ca.key")" == 600 ]] || fail "ca.key mode $(stat -c %a "$RUN/tls/ca.key")"

it "curl verifies the server with the CA certificate alone (--cacert, no -k)"
code="$(curl -s --noproxy '*' --cacert "$RUN/tls/ca.crt" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/other")"
[[ "$code" == 404 ]] || fail "status $code with certificate verification on"
code="$(curl -s --noproxy '*' --cacert "$RUN/tls/ca.crt" -o /dev/null -w '%{http_code}' "https://localhost:$PORT/other")"
[[ "$code" == 404 ]] || fail "by the name localhost: status $code"

it "a renewed server certificate still verifies with the same CA (the phone notices nothing)"
cp -r "$RUN/tls" "$WORK/tls-renew"
before="$(openssl x509 -in "$WORK/tls-renew/ca.crt" -noout -fingerprint -sha256)"
"$REPO/cgi-bin/mockcloud-admin" tls --dir "$WORK/tls-renew" renew >/dev/null 2>&1 || fail "renew failed"
cmp -s "$RUN/tls/cert.pem" "$WORK/tls-renew/cert.pem" && fail "renew did not make a new certificate"
[[ "$(openssl x509 -in "$WORK/tls-renew/ca.crt" -noout -fingerprint -sha256)" == "$before" ]] || fail "the CA changed"
openssl verify -CAfile "$WORK/tls-renew/ca.crt" "$WORK/tls-renew/cert.pem" >/dev/null 2>&1 || fail "the renewed certificate does not verify"
! "$REPO/cgi-bin/mockcloud-admin" tls --dir "$WORK/tls-renew" renew evil.example >/dev/null 2>&1 || fail "renewed for a name outside the CA's constraints"
