# One device on the LAN must not lock out the others:
# 127.0.0.1 floods a stack of its own while 127.0.0.2, another address on
# Linux loopback, keeps using it. Short and bounded: 300 stalled
# connections, held while the other address sends 20 requests.
# Tests/support/flood.py is the tool; `make flood` is the big run
# (2,000 connections, 100 requests) whose figures are in docs/RELIABILITY.md.

it "a stack of its own for the flood starts"
start_stack flood || fail "the flood stack did not start"

it "while 127.0.0.1 holds 300 stalled connections, all 20 GETs from 127.0.0.2 answer 200"
python3 "$SUPPORT_DIR/flood.py" "$PORT" --connections 300 --requests 20 >"$WORK/flood.json" 2>"$WORK/flood.err" ||
    fail "flood.py failed: $(head -c 600 "$WORK/flood.json" "$WORK/flood.err")"
out="$(python3 - "$WORK/flood.json" <<'PYTHON' 2>&1
import json, sys
report = json.load(open(sys.argv[1]))
assert report["victim_ok"] == 20, "the other address got %s of 20 answers 200: %s %s" % (
    report["victim_ok"], report["victim_statuses"], report["victim_failures"])
PYTHON
)" || fail "$out"

it "the flooding address's requests past 16 at once answer 429 in JSON, with Retry-After, and never 5xx"
out="$(python3 - "$WORK/flood.json" <<'PYTHON' 2>&1
import json, sys
report = json.load(open(sys.argv[1]))
body = report["flood"]["body"]
assert body.get("429", 0) > 0, "no 429 among the stalled uploads' outcomes: %s" % body
assert not [s for s in body if s.startswith("5")], "5xx answers: %s" % body
head, _, text = report["sample_429"].partition("\r\n\r\n")
headers = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in head.split("\r\n")[1:]}
assert headers.get("content-type") == "application/json", head
assert headers.get("retry-after") == "1", head
assert json.loads(text) == {"error": "too many requests from this address at once (more than 16 in progress); retry after a second"}, text
PYTHON
)" || fail "$out"

it "after the flood, the flooding address is served again"
for ((i = 0; i < 50; i++)); do
    code="$(curl -sk --noproxy '*' -o /dev/null -w '%{http_code}' -H 'X-User-Key: victim' "$BASE/user/settings")"
    [[ "$code" == 429 ]] || break
    sleep 0.1
done
expect 200 GET /user/settings -H 'X-User-Key: victim'

it "a request body that stalls is cut off after 10 s without data, not held for nginx's default minute"
out="$(python3 - "$PORT" <<'PYTHON' 2>&1
import socket, ssl, sys
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])), source_address=("127.0.0.2", 0))
tls = context.wrap_socket(raw, server_hostname="localhost")
tls.sendall(b"PUT /user/settings HTTP/1.1\r\nHost: localhost\r\nX-User-Key: slow\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
# nginx's default client_body_timeout is 60 s: still open at 30 s.
tls.settimeout(30)
try:
    answer = tls.recv(65536)
except socket.timeout:
    raise AssertionError("the connection was still open after 30 s of a stalled body")
except (ConnectionResetError, ssl.SSLError):
    answer = b""
# nginx 1.22 closes a timed-out request without an answer (reset, as
# reset_timedout_connection says); a 408 it sends must be the JSON one.
assert answer == b"" or (b" 408 " in answer.split(b"\r\n")[0] and answer.endswith(
    b'{"error": "request timed out: the client sent too slowly"}')), answer[:300]
PYTHON
)" || fail "$out"
expect 404 GET /user/settings -H 'X-User-Key: slow'

it "mockcloud-http.conf is a valid http-level configuration on its own (as conf.d/mockcloud.conf before any server uses the routes)"
mkdir -p "$WORK/http-only/logs"
cat >"$WORK/http-only/nginx.conf" <<NGINX
pid $WORK/http-only/nginx.pid;
error_log $WORK/http-only/logs/error.log;
events {}
http {
    client_body_temp_path $WORK/http-only/body;
    fastcgi_temp_path $WORK/http-only/fastcgi;
    proxy_temp_path $WORK/http-only/proxy;
    scgi_temp_path $WORK/http-only/scgi;
    uwsgi_temp_path $WORK/http-only/uwsgi;
    include $REPO/nginx/mockcloud-http.conf;
    server { listen 127.0.0.1:$(free_port); }
}
NGINX
out="$(PATH="$PATH:/usr/sbin" nginx -t -p "$WORK/http-only/" -c "$WORK/http-only/nginx.conf" 2>&1)" || fail "nginx -t: $out"
