# nginx's own answers (no upstream configured): routing, refusals before any
# program runs, and that every one of them is JSON.

it "an unknown path answers 404 {\"error\": \"not found\"}"
expect 404 GET /other
body_is '{"error": "not found"}'

it "the root path answers the JSON 404"
expect 404 GET /
body_is '{"error": "not found"}'

it "a path ending in .html still gets Content-Type application/json"
expect 404 GET /index.html
body_is '{"error": "not found"}'

it "a PUT with a body to an unknown path answers the JSON 404"
expect 404 PUT /other -H 'X-User-Key: u1' -d '{"a": 1}'
body_is '{"error": "not found"}'

it "/user/settings/ (trailing slash) is not the settings route"
expect 404 GET /user/settings/ -H 'X-User-Key: u1'
body_is '{"error": "not found"}'

it "/user/settingsX is not the settings route"
expect 404 GET /user/settingsX -H 'X-User-Key: u1'
body_is '{"error": "not found"}'

it "/inboxes is not the inbox route"
expect 404 GET /inboxes -H 'X-User-Key: u1'
body_is '{"error": "not found"}'

it "the internal error pages cannot be fetched from outside"
expect 404 GET /.mockcloud-error/500
body_is '{"error": "not found"}'

it "a query string does not change the route (the route's own program judges it)"
expect 404 GET '/user/settings?wait=1' -H 'X-User-Key: route-query'
body_is '{"error": "no settings stored for this user"}'
expect 400 GET '/user/settings?x=1' -H 'X-User-Key: route-query'
body_is '{"error": "unknown query parameter \"x\"; GET /user/settings takes wait"}'

it "a percent-encoded path is decoded before routing (/user/%73ettings)"
expect 404 GET /user/%73ettings -H 'X-User-Key: route-query'
body_is '{"error": "no settings stored for this user"}'

# HTTP/1.1 framing: curl would otherwise pick HTTP/2 by ALPN, where HPACK
# shrinks long fields under the limits and Transfer-Encoding does not exist.
it "an over-long URI answers 414 JSON"
expect 414 GET "/user/settings?q=$(printf 'a%.0s' {1..9000})" --http1.1
body_is '{"error": "request URI too long"}'

it "an over-long header answers 431 JSON"
expect 431 GET /user/settings -H "X-Pad: $(printf 'a%.0s' {1..9000})" --http1.1
body_is '{"error": "request header fields too large"}'

it "an HTTP/1.1 request without Host answers 400 JSON"
expect 400 GET /user/settings --http1.1 -H 'Host:'
body_is '{"error": "bad request"}'

it "an unsupported Transfer-Encoding answers 501 JSON"
expect 501 PUT /user/settings -H 'X-User-Key: u1' -H 'Transfer-Encoding: gzip' -d '{}' --http1.1
py 'assert set(doc) == {"error"}, doc'

it "plain HTTP on the HTTPS port answers 400 JSON"
code="$(curl -s --noproxy '*' -o "$WORK/plain" -D "$WORK/plain.h" -w '%{http_code}' "http://127.0.0.1:$PORT/user/settings")"
[[ "$code" == 400 ]] || fail "status $code, expected 400"
grep -qi '^content-type: application/json' "$WORK/plain.h" || fail "not JSON: $(cat "$WORK/plain.h")"
[[ "$(cat "$WORK/plain")" == '{"error": "plain HTTP sent to the HTTPS port: use https://"}' ]] || fail "body: $(cat "$WORK/plain")"

it "answers carry no nginx version (server_tokens off)"
expect 404 GET /other
header_is Server nginx
