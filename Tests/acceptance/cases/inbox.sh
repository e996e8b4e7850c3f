# /inbox and /inbox/<id> through the stack: the routing, the common rules of
# CONTRACT section 2 (key, methods, the 256 KiB limit) and a round trip.
# The inbox's own semantics (versions, the feed) are covered by the Swift
# unit and process tests.

it "/inbox without X-User-Key is refused with 400 by the inbox program"
expect 400 GET /inbox
body_is '{"error": "X-User-Key header required"}'

it "/inbox/<id> with an invalid key shape is refused with 400"
expect 400 GET /inbox/m1 -H 'X-User-Key: ../x'
body_is '{"error": "invalid X-User-Key shape"}'

it "PUT /inbox/<id> stores a new message: 201 with the envelope"
expect 201 PUT /inbox/ib-round.1:a -H 'X-User-Key: ib-user' -d '{"kg": 71.3, "z": 1, "a": 0.9990998620664758}'
py 'assert doc["id"] == "ib-round.1:a" and doc["version"] == 0, doc
assert doc["body"] == {"kg": 71.3, "z": 1, "a": 0.9990998620664758} and list(doc["body"]) == ["kg", "z", "a"], doc
assert "\"a\": 0.9990998620664758" in body, body
assert re.fullmatch(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z", doc["serverReceivedAt"]), doc'

it "GET /inbox/<id> returns the stored envelope"
expect 200 GET /inbox/ib-round.1:a -H 'X-User-Key: ib-user'
py 'assert doc["id"] == "ib-round.1:a" and doc["body"]["kg"] == 71.3, doc'

it "GET /inbox (the feed) lists the message"
expect 200 GET '/inbox?limit=10' -H 'X-User-Key: ib-user'
py 'assert [m["id"] for m in doc["messages"]] == ["ib-round.1:a"] and doc["hasMore"] is False, doc'

it "POST /inbox stores under a server-chosen id: 201 with Location"
expect 201 POST /inbox -H 'X-User-Key: ib-user' -d '{"note": "posted"}'
header_matches Location '^/inbox/[0-9A-Fa-f-]{36}$'

it "DELETE /inbox/<id> answers 204, then GET is 404"
expect 204 DELETE /inbox/ib-round.1:a -H 'X-User-Key: ib-user'
expect 404 GET /inbox/ib-round.1:a -H 'X-User-Key: ib-user'

it "a message body of exactly 256 KiB (262144 bytes, valid JSON) is accepted"
json_of_size 262144 "$WORK/256k.json"
expect 201 PUT /inbox/ib-big -H 'X-User-Key: ib-user' --data-binary @"$WORK/256k.json"

it "a message body of 256 KiB + 1 byte is refused by nginx with 413 JSON"
json_of_size 262145 "$WORK/256k1.json"
expect 413 PUT /inbox/ib-bigger -H 'X-User-Key: ib-user' --data-binary @"$WORK/256k1.json"
py 'assert doc["error"].startswith("request body too large"), doc'
expect 404 GET /inbox/ib-bigger -H 'X-User-Key: ib-user'

it "a chunked message of 256 KiB + 1 byte is refused with 413 JSON too"
expect 413 POST /inbox -H 'X-User-Key: ib-user' -H 'Transfer-Encoding: chunked' --data-binary @"$WORK/256k1.json"

it "a message body that is not JSON is refused with 400"
expect 400 PUT /inbox/ib-bad -H 'X-User-Key: ib-user' -d '{"a": '
body_is '{"error": "body is not valid JSON"}'

it "PUT /inbox is not served: 405 with Allow: GET, HEAD, POST"
expect 405 PUT /inbox -H 'X-User-Key: ib-user' -d '{}'
header_is Allow 'GET, HEAD, POST'

it "PATCH /inbox/<id> is not served: 405 with Allow: GET, HEAD, PUT, DELETE"
expect 405 PATCH /inbox/ib-x -H 'X-User-Key: ib-user' -d '{}'
header_is Allow 'GET, HEAD, PUT, DELETE'

it "TRACE (refused by nginx) names the same methods as the inbox program"
expect 405 TRACE /inbox
header_is Allow 'GET, HEAD, POST'
expect 405 TRACE /inbox/ib-x
header_is Allow 'GET, HEAD, PUT, DELETE'
