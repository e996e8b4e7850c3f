# /user/settings: docs/API.md §2 (bodies, methods) and §3 (GET,
# PUT, DELETE, storage layout), through nginx + fcgiwrap + TLS.

TIMESTAMP='^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z$'

it "GET before anything is stored answers 404 with the contract's sentence"
expect 404 GET /user/settings -H 'X-User-Key: set-empty'
body_is '{"error": "no settings stored for this user"}'

it "PUT stores the document and answers 200 with it, serverReceivedAt appended last, and an ETag"
expect 200 PUT /user/settings -H 'X-User-Key: set-put' -d '{"theme": "dark", "volume": 3}'
header_matches ETag '^"[^"]+"$'
py 'assert list(doc) == ["theme", "volume", "serverReceivedAt"], list(doc)
assert doc["theme"] == "dark" and doc["volume"] == 3
assert re.fullmatch(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z", doc["serverReceivedAt"]), doc["serverReceivedAt"]'

it "serverReceivedAt is the time of receipt in UTC (YYYYMMDDTHHMMSS.ffffffZ)"
expect 200 PUT /user/settings -H 'X-User-Key: set-clock' -d '{}'
py 'import datetime
got = datetime.datetime.strptime(doc["serverReceivedAt"], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=datetime.timezone.utc)
now = datetime.datetime.now(datetime.timezone.utc)
assert abs((now - got).total_seconds()) < 60, (got, now)'

it "GET returns what PUT stored, with the same ETag"
expect 200 PUT /user/settings -H 'X-User-Key: set-get' -d '{"b": [1, 2, {"c": null}], "a": true}'
put_body="$(last_body)"
put_etag="$(last_header ETag)"
expect 200 GET /user/settings -H 'X-User-Key: set-get'
body_is "$put_body"
header_is ETag "$put_etag"

it "HEAD answers like GET without a body"
expect 200 HEAD /user/settings -H 'X-User-Key: set-get'
header_is ETag "$put_etag"

it "a client's serverReceivedAt is replaced in place by the server's"
expect 200 PUT /user/settings -H 'X-User-Key: set-srv' -d '{"a": 1, "serverReceivedAt": "client", "z": 2}'
py 'assert list(doc) == ["a", "serverReceivedAt", "z"], list(doc)
assert doc["serverReceivedAt"] != "client"'

it "the file on disk is exactly what Python's json.dumps(doc, indent=2) writes"
expect 200 PUT /user/settings -H 'X-User-Key: set-disk' \
    --data-binary '{"name":"Zoë ☃ 😀","path":"a/b","quote":"\"\\\t\n","list":[1,[],{}],"empty":{},"nested":{"deep":{"x":null,"t":true,"f":false}},"ratio":0.9990998620664758,"big":12345678901234567890,"neg":-0.5}'
py 'expected = {"name": "Zoë ☃ 😀", "path": "a/b", "quote": "\"\\\t\n", "list": [1, [], {}], "empty": {},
            "nested": {"deep": {"x": None, "t": True, "f": False}},
            "ratio": 0.9990998620664758, "big": 12345678901234567890, "neg": -0.5,
            "serverReceivedAt": doc["serverReceivedAt"]}
assert stored("set-disk") == json.dumps(expected, indent=2), stored("set-disk")'

it "numbers keep the client's text on disk and on the wire (1e5, 2.50, -0, 1E-7)"
expect 200 PUT /user/settings -H 'X-User-Key: set-numbers' --data-binary '{"e": 1e5, "trailing": 2.50, "negzero": -0, "small": 1E-7, "big": 123456789012345678901234567890}'
py 'assert re.search(r"\"e\": 1e5, \"trailing\": 2\.50, \"negzero\": -0, \"small\": 1E-7, \"big\": 123456789012345678901234567890,", body), body
assert stored("set-numbers") == "{\n  \"e\": 1e5,\n  \"trailing\": 2.50,\n  \"negzero\": -0,\n  \"small\": 1E-7,\n  \"big\": 123456789012345678901234567890,\n  \"serverReceivedAt\": \"%s\"\n}" % doc["serverReceivedAt"], stored("set-numbers")'
expect 200 GET /user/settings -H 'X-User-Key: set-numbers'
py 'assert "\"e\": 1e5, \"trailing\": 2.50, \"negzero\": -0, \"small\": 1E-7, \"big\": 123456789012345678901234567890," in body, body'

it "an empty PUT body is stored as {} (no Content-Length at all)"
expect 200 PUT /user/settings -H 'X-User-Key: set-nobody'
py 'assert list(doc) == ["serverReceivedAt"], doc
assert stored("set-nobody") == json.dumps({"serverReceivedAt": doc["serverReceivedAt"]}, indent=2)'

it "an empty PUT body is stored as {} (Content-Length: 0)"
expect 200 PUT /user/settings -H 'X-User-Key: set-zero' -H 'Content-Type: application/json' -d ''
py 'assert list(doc) == ["serverReceivedAt"], doc'

it "a body that is not JSON is refused with 400 and nothing is stored"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d '{"a": 1,}'
body_is '{"error": "body is not valid JSON"}'
expect 404 GET /user/settings -H 'X-User-Key: set-bad'

it "a body that is not UTF-8 is not valid JSON"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' --data-binary $'{"a": "\xff"}'
body_is '{"error": "body is not valid JSON"}'

it "a body with trailing garbage is not valid JSON"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d '{"a": 1} x'
body_is '{"error": "body is not valid JSON"}'

it "NaN is not JSON (RFC 8259)"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d '{"a": NaN}'
body_is '{"error": "body is not valid JSON"}'

it "a JSON array body is refused: the body must be a JSON object"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d '[1, 2]'
body_is '{"error": "body must be a JSON object"}'

it "a JSON string body is refused: the body must be a JSON object"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d '"text"'
body_is '{"error": "body must be a JSON object"}'

it "JSON null is refused: the body must be a JSON object"
expect 400 PUT /user/settings -H 'X-User-Key: set-bad' -d 'null'
body_is '{"error": "body must be a JSON object"}'

it "nesting of exactly 64 levels (the object is level 1) is accepted"
nested() { printf '{"a": %s%s}' "$(printf '[%.0s' $(seq "$1"))" "$(printf ']%.0s' $(seq "$1"))"; }
expect 200 PUT /user/settings -H 'X-User-Key: set-deep' --data-binary "$(nested 63)"
py 'depth = lambda v: 1 + max([depth(x) for x in (v.values() if isinstance(v, dict) else v)] + [0]) if isinstance(v, (dict, list)) else 0
assert depth(doc["a"]) == 63'

it "nesting of 65 levels is refused with 400 and a clear error, nothing stored"
expect 400 PUT /user/settings -H 'X-User-Key: set-deeper' --data-binary "$(nested 64)"
py 'assert set(doc) == {"error"} and "64" in doc["error"], doc'
expect 404 GET /user/settings -H 'X-User-Key: set-deeper'

it "very deep nesting (100000 levels) is refused cleanly, never a crash"
python3 -c 'import sys; sys.stdout.write("{\"a\": " + "[" * 100000 + "]" * 100000 + "}")' >"$WORK/deep.json"
expect 400 PUT /user/settings -H 'X-User-Key: set-deepest' --data-binary @"$WORK/deep.json"
py 'assert "64" in doc["error"], doc'

it "a body of exactly 1 MiB (1048576 bytes, valid JSON) is accepted"
json_of_size 1048576 "$WORK/1mib.json"
expect 200 PUT /user/settings -H 'X-User-Key: set-1mib' --data-binary @"$WORK/1mib.json"
py 'assert len(doc["pad"]) == 1048576 - len("{\"pad\": \"\"}")'

it "a body of 1 MiB + 1 byte is refused by nginx with 413 JSON, nothing stored"
json_of_size 1048577 "$WORK/1mib1.json"
expect 413 PUT /user/settings -H 'X-User-Key: set-1mib1' --data-binary @"$WORK/1mib1.json"
py 'assert set(doc) == {"error"} and doc["error"].startswith("request body too large"), doc'
expect 404 GET /user/settings -H 'X-User-Key: set-1mib1'

it "a chunked upload (no Content-Length) is stored like any other"
expect 200 PUT /user/settings -H 'X-User-Key: set-chunked' -H 'Transfer-Encoding: chunked' -d '{"via": "chunked"}'
py 'assert doc["via"] == "chunked"
assert stored("set-chunked") == json.dumps({"via": "chunked", "serverReceivedAt": doc["serverReceivedAt"]}, indent=2)'

it "a chunked upload of exactly 1 MiB is accepted"
expect 200 PUT /user/settings -H 'X-User-Key: set-chunked-1mib' -H 'Transfer-Encoding: chunked' --data-binary @"$WORK/1mib.json"

it "a chunked upload of 1 MiB + 1 byte is refused with 413 JSON"
expect 413 PUT /user/settings -H 'X-User-Key: set-chunked-big' -H 'Transfer-Encoding: chunked' --data-binary @"$WORK/1mib1.json"
py 'assert doc["error"].startswith("request body too large"), doc'

it "POST is not served: 405 with Allow naming the route's methods"
expect 405 POST /user/settings -H 'X-User-Key: set-post' -d '{}'
header_is Allow 'GET, HEAD, PUT, PATCH, DELETE'
py 'assert set(doc) == {"error"}, doc'

it "OPTIONS is not served: 405 with Allow"
expect 405 OPTIONS /user/settings -H 'X-User-Key: set-post'
header_is Allow 'GET, HEAD, PUT, PATCH, DELETE'

it "TRACE (refused by nginx itself) is a JSON 405 with Allow"
expect 405 TRACE /user/settings
header_is Allow 'GET, HEAD, PUT, PATCH, DELETE'
body_is '{"error": "method not allowed"}'

it "DELETE removes the document: 204 without a body, then GET is 404"
expect 200 PUT /user/settings -H 'X-User-Key: set-del' -d '{"a": 1}'
expect 204 DELETE /user/settings -H 'X-User-Key: set-del'
header_absent Content-Type
py 'assert stored("set-del") is None'
expect 404 GET /user/settings -H 'X-User-Key: set-del'
body_is '{"error": "no settings stored for this user"}'

it "DELETE when nothing is stored answers 404"
expect 404 DELETE /user/settings -H 'X-User-Key: set-del'
py 'assert set(doc) == {"error"}, doc'

it "a new PUT replaces the whole document"
expect 200 PUT /user/settings -H 'X-User-Key: set-replace' -d '{"a": 1, "b": 2}'
expect 200 PUT /user/settings -H 'X-User-Key: set-replace' -d '{"c": 3}'
expect 200 GET /user/settings -H 'X-User-Key: set-replace'
py 'assert list(doc) == ["c", "serverReceivedAt"], doc'
