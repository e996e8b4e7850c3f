# MOCKCLOUD_UPSTREAM: every path but the CGI routes goes to the existing
# Python mock cloud unchanged. A stand-in upstream echoes what it received.

echo_port="$(free_port)"
it "a stack with MOCKCLOUD_UPSTREAM starts"
start_server "$echo_port" python3 "$HERE/echo_upstream.py" "$echo_port" || fail "the echo upstream did not start"
echo_pid="$SERVER_PID"
start_stack upstream "MOCKCLOUD_UPSTREAM=http://127.0.0.1:$echo_port" || fail "the stack did not start"

it "GET /other reaches the upstream with method, path and query unchanged"
expect 200 GET '/other/path?x=1&y=a%20b&x=2'
header_is X-Echo-Upstream yes
py 'assert doc["method"] == "GET" and doc["target"] == "/other/path?x=1&y=a%20b&x=2", doc'

it "PUT /other reaches the upstream with X-User-Key, other headers and the body unchanged"
expect 200 PUT /other -H 'X-User-Key: u1' -H 'X-Custom: Some Value' -H 'Content-Type: application/json' \
    --data-binary '{"b": 2, "a": 0.9990998620664758, "s": "Zoë"}'
py 'h = {name.lower(): value for name, value in doc["headers"]}
assert doc["method"] == "PUT" and doc["target"] == "/other", doc
assert h["x-user-key"] == "u1" and h["x-custom"] == "Some Value", h
assert h["content-type"] == "application/json", h
assert h["host"] == "127.0.0.1:%s" % PORT, h
assert doc["body"] == "{\"b\": 2, \"a\": 0.9990998620664758, \"s\": \"Zoë\"}", doc["body"]'

it "a chunked upload to another path reaches the upstream whole"
expect 200 POST /other -H 'X-User-Key: u1' -H 'Transfer-Encoding: chunked' --data-binary '{"via": "chunked"}'
py 'assert doc["method"] == "POST" and doc["body"] == "{\"via\": \"chunked\"}", doc'

it "DELETE and PATCH reach the upstream too"
expect 200 DELETE /other/1 -H 'X-User-Key: u1'
py 'assert doc["method"] == "DELETE" and doc["target"] == "/other/1", doc'
expect 200 PATCH /other/1 -H 'X-User-Key: u1' -d '{}'
py 'assert doc["method"] == "PATCH", doc'

it "paths that only look like the CGI routes go to the upstream (/inboxes, /user/settings/x)"
expect 200 GET /inboxes
py 'assert doc["target"] == "/inboxes", doc'
expect 200 GET /user/settings/x
py 'assert doc["target"] == "/user/settings/x", doc'

it "/user/settings is still served by the CGI program, not the upstream"
expect 400 GET /user/settings
header_absent X-Echo-Upstream
body_is '{"error": "X-User-Key header required"}'

it "an upstream that is down gives a JSON 502"
stop_server "$echo_pid"
expect 502 GET /other
py 'assert set(doc) == {"error"}, doc'
