# The nginx → fcgiwrap → program wiring, seen from a stand-in program that
# answers with the environment it was given (and, on request, a chosen
# status, or hands over to the real program made to trap).

fake_bin="$WORK/fake-bin"
mkdir -p "$fake_bin"
# fcgiwrap runs it with PATH=/usr/bin:/bin only, and as root's stacks serve
# as mockcloud, the interpreter must be one that user may run: the
# system's, else the one on PATH.
interpreter=/usr/bin/python3
[[ -x "$interpreter" ]] || interpreter="$(python3 -c 'import sys; print(sys.executable)')"
printf '#!%s\n' "$interpreter" >"$fake_bin/user-settings"
printf 'REAL = %s\n' "'$MOCKCLOUD_CGI_BIN/user-settings'" >>"$fake_bin/user-settings"
cat >>"$fake_bin/user-settings" <<'PROGRAM'
import json, os, sys
if os.environ.get("HTTP_X_CRASH"):
    # The real program, made to fault where a trap would (SIGILL) as it
    # reads the request: strace sends the signal, no hook in the program.
    os.execv("/usr/bin/strace", ["strace", "-qq", "-o", "/dev/null", "-e", "trace=read",
                                 "-e", "inject=read:signal=SIGILL:when=1", REAL])
body = sys.stdin.buffer.read()
status = os.environ.get("HTTP_X_ANSWER_STATUS", "200")
out = json.dumps({"error": "the program's own " + status} if status != "200" else
                 {"env": dict(os.environ), "body_length": len(body)})
sys.stdout.write("Status: %s Answer\r\nContent-Type: application/json\r\n\r\n%s" % (status, out))
PROGRAM
chmod 0755 "$fake_bin/user-settings"

it "a stack whose cgi-bin has a stand-in user-settings and no inbox starts (HMAC and token settings given)"
# The launcher checks that the programs can read the key and token files.
(umask 077 && : >"$WORK/gateway-hmac.keys" && : >"$WORK/gateway.tokens")
own_secrets "$WORK/gateway-hmac.keys" "$WORK/gateway.tokens"
# Variables in the launcher's own environment must not reach the programs.
MOCKCLOUD_LEAK_PROBE=leaked HTTP_PROXY=http://proxy.invalid:3128 start_stack fake \
    "MOCKCLOUD_CGI_BIN=$fake_bin" "MOCKCLOUD_HMAC_KEYS=$WORK/gateway-hmac.keys" MOCKCLOUD_HMAC_REQUIRE=1 \
    "MOCKCLOUD_TOKENS=$WORK/gateway.tokens" ||
    fail "the stack did not start"

it "the program gets the CGI meta-variables, the data directory, HMAC and token settings as fastcgi_params"
expect 200 GET '/user/settings?a=1&b=%20' -H 'X-User-Key: u1'
py 'env = doc["env"]
assert env["REQUEST_METHOD"] == "GET" and env["DOCUMENT_URI"] == "/user/settings", env
assert env["QUERY_STRING"] == "a=1&b=%20" and env["HTTP_X_USER_KEY"] == "u1", env
assert env["CONTENT_LENGTH"] == "", env
assert env["MOCKCLOUD_DATA"] == DATA, (env["MOCKCLOUD_DATA"], DATA)
assert env["MOCKCLOUD_HMAC_KEYS"] == os.path.join(os.path.dirname(DATA), "gateway-hmac.keys"), env
assert env["MOCKCLOUD_HMAC_REQUIRE"] == "1", env
assert env["MOCKCLOUD_TOKENS"] == os.path.join(os.path.dirname(DATA), "gateway.tokens"), env
assert env["HTTPS"] == "on" and env["GATEWAY_INTERFACE"] == "CGI/1.1", env'

it "fcgiwrap's own environment is clean: nothing from the launcher's environment leaks"
py 'env = doc["env"]
assert "MOCKCLOUD_LEAK_PROBE" not in env, env
assert env["PATH"] == "/usr/bin:/bin", env["PATH"]'

it "a client's Proxy header never becomes HTTP_PROXY (httpoxy)"
expect 200 GET /user/settings -H 'X-User-Key: u1' -H 'Proxy: http://evil.invalid:1'
py 'assert doc["env"].get("HTTP_PROXY", "") == "", doc["env"]["HTTP_PROXY"]'

it "a chunked upload reaches the program with an exact CONTENT_LENGTH"
expect 200 PUT /user/settings -H 'X-User-Key: u1' -H 'Transfer-Encoding: chunked' --data-binary '{"twelve": 1}'
py 'assert doc["env"]["CONTENT_LENGTH"] == "13" and doc["body_length"] == 13, doc["env"].get("CONTENT_LENGTH")'

it "the program's own 400, 401, 403, 404, 500 and 503 answers pass through untouched"
for status in 400 401 403 404 500 503; do
    expect "$status" GET /user/settings -H "X-Answer-Status: $status"
    body_is "{\"error\": \"the program's own $status\"}"
done

it "a program that traps still answers a JSON 500 saying nothing changed, and the server log says it crashed"
expect 500 PUT /user/settings -H 'X-Crash: 1' -d '{}'
body_is '{"error": "internal error; see the server log", "changed": "no"}'
grep -q "the program crashed (fatal signal)" "$RUN/logs/error.log" || fail "error.log: $(tail -3 "$RUN/logs/error.log")"

it "a broken chunked body is refused by nginx with a JSON 400, before any program runs"
out="$(python3 - "$PORT" <<'PYTHON'
import socket, ssl, sys
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
with context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)) as tls:
    tls.sendall(b"PUT /user/settings HTTP/1.1\r\nHost: x\r\nX-User-Key: u1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n0\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < 10:
        data = tls.recv(4096)
        if not data:
            break
        answer += data
print(answer.decode("latin-1"))
PYTHON
)"
[[ "$out" == "HTTP/1.1 400"* ]] || fail "status line: $(head -1 <<<"$out")"
grep -qi '^Content-Type: application/json' <<<"$out" || fail "not JSON: $out"
[[ "$out" == *'{"error": "bad request"}'* ]] || fail "body: $out"

it "a route whose program is missing from cgi-bin gives a JSON 502"
expect 502 GET /inbox
py 'assert set(doc) == {"error"} and "missing" in doc["error"], doc'
expect 502 PUT /inbox/abc.html -d '{}'

it "without MOCKCLOUD_HMAC_KEYS, _REQUIRE or MOCKCLOUD_TOKENS at launch, the programs get no such variables"
fake_bin2="$WORK/fake-bin2"
mkdir -p "$fake_bin2"
cp "$fake_bin/user-settings" "$fake_bin2/user-settings"
cp "$fake_bin/user-settings" "$fake_bin2/inbox"
start_stack fake2 "MOCKCLOUD_CGI_BIN=$fake_bin2" MOCKCLOUD_INBOX_MAX_MESSAGES=5 \
    MOCKCLOUD_INBOX_TOMBSTONE_HORIZON=60 MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=7 || fail "the stack did not start"
expect 200 GET /user/settings
py 'assert not {"MOCKCLOUD_HMAC_KEYS", "MOCKCLOUD_HMAC_REQUIRE", "MOCKCLOUD_TOKENS"} & set(doc["env"]), doc["env"]'

it "the MOCKCLOUD_INBOX_* settings given at launch reach the inbox program (only)"
py 'assert not [name for name in doc["env"] if name.startswith("MOCKCLOUD_INBOX")], doc["env"]'
expect 200 GET /inbox -H 'X-User-Key: u1'
py 'env = doc["env"]
assert env["DOCUMENT_URI"] == "/inbox", env
assert (env["MOCKCLOUD_INBOX_MAX_MESSAGES"], env["MOCKCLOUD_INBOX_TOMBSTONE_HORIZON"],
        env["MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS"]) == ("5", "60", "7"), env'
expect 200 PUT /inbox/a.b:c-1 -H 'X-User-Key: u1' -d '{}'
py 'assert doc["env"]["DOCUMENT_URI"] == "/inbox/a.b:c-1" and doc["env"]["MOCKCLOUD_INBOX_MAX_MESSAGES"] == "5", doc["env"]'
