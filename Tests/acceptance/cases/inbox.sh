# /inbox: docs/API.md §4 through nginx + fcgiwrap + TLS.

it "PUT of a new id answers 201 with the envelope and a Location"
expect 201 PUT /inbox/nm-1234-weight -H 'X-User-Key: ib-1' -H 'X-Device-Id: mirror-1' -H 'X-Sync-Version: 1' -d '{"kg": 71.30}'
header_is Location /inbox/nm-1234-weight
py 'assert list(doc) == ["id", "version", "seq", "source", "serverReceivedAt", "body"], list(doc)
assert (doc["id"], doc["version"], doc["seq"], doc["source"]) == ("nm-1234-weight", 1, 1, "mirror-1"), doc
assert body.endswith("\"body\": {\"kg\": 71.30}}"), body'
first="$(last_body)"

it "the same version and body again is a free retry: 200 and nothing changes"
expect 200 PUT /inbox/nm-1234-weight -H 'X-User-Key: ib-1' -H 'X-Device-Id: mirror-1' -H 'X-Sync-Version: 1' -d '{"kg": 71.30}'
body_is "$first"

it "a higher version replaces the message in place with a new seq"
expect 200 PUT /inbox/nm-1234-weight -H 'X-User-Key: ib-1' -H 'X-Sync-Version: 2' -d '{"kg": 71.3, "fat": 18.2}'
py 'assert doc["seq"] == 2 and doc["version"] == 2 and doc["source"] is None, doc'

it "a lower version is refused with 409 and the current envelope"
expect 409 PUT /inbox/nm-1234-weight -H 'X-User-Key: ib-1' -H 'X-Sync-Version: 1' -d '{"kg": 1}'
py 'assert doc["error"] == "X-Sync-Version 1 is lower than the stored version 2; nothing was written", doc
assert doc["current"]["seq"] == 2'

it "POST picks a UUID, answers 201 with Location, and GET serves it"
expect 201 POST /inbox -H 'X-User-Key: ib-1' -d '{"note": "hello"}'
header_matches Location '^/inbox/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'
posted="$(last_body)"
location="$(last_header Location)"
expect 200 GET "$location" -H 'X-User-Key: ib-1'
body_is "$posted"

it "DELETE answers 204, leaves a tombstone for the feed, and then GET and DELETE are 404"
expect 204 DELETE /inbox/nm-1234-weight -H 'X-User-Key: ib-1'
expect 404 GET /inbox/nm-1234-weight -H 'X-User-Key: ib-1'
body_is '{"error": "no message with this id"}'
expect 404 DELETE /inbox/nm-1234-weight -H 'X-User-Key: ib-1'

it "the feed gives every id once in its latest state, oldest first, with deletions"
expect 200 GET /inbox -H 'X-User-Key: ib-1'
py 'assert [m["seq"] for m in doc["messages"]] == [3], doc
assert doc["deleted"] == [{"id": "nm-1234-weight", "seq": 4}], doc
assert doc["hasMore"] is False and re.fullmatch(r"[0-9a-f]{16}\.0\.4", doc["anchor"]), doc'
anchor="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["anchor"])' <<<"$(last_body)")"

it "from the newest anchor the feed is empty and the anchor stays"
expect 200 GET "/inbox?anchor=$anchor" -H 'X-User-Key: ib-1'
body_is "{\"messages\": [], \"deleted\": [], \"anchor\": \"$anchor\", \"hasMore\": false}"

it "limit pages the feed with hasMore true until the last page"
for i in 1 2 3; do expect 201 PUT "/inbox/p$i" -H 'X-User-Key: ib-page' -d "{\"i\": $i}"; done
expect 200 GET '/inbox?limit=2' -H 'X-User-Key: ib-page'
py 'assert [m["id"] for m in doc["messages"]] == ["p1", "p2"] and doc["hasMore"] is True, doc'
next="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["anchor"])' <<<"$(last_body)")"
expect 200 GET "/inbox?limit=2&anchor=$next" -H 'X-User-Key: ib-page'
py 'assert [m["id"] for m in doc["messages"]] == ["p3"] and doc["hasMore"] is False, doc'

it "exclude-source leaves out the device's own messages but moves the anchor past them"
expect 201 PUT /inbox/own -H 'X-User-Key: ib-echo' -H 'X-Device-Id: phone-1' -d '{}'
expect 201 PUT /inbox/theirs -H 'X-User-Key: ib-echo' -H 'X-Device-Id: mirror-1' -d '{}'
expect 200 GET '/inbox?exclude-source=phone-1' -H 'X-User-Key: ib-echo'
py 'assert [m["id"] for m in doc["messages"]] == ["theirs"] and doc["anchor"].endswith(".2"), doc'

it "malformed anchor, limit, exclude-source, X-Sync-Version, X-Device-Id and id are 400s"
expect 400 GET '/inbox?anchor=nope' -H 'X-User-Key: ib-1'
body_is '{"error": "malformed anchor: pass back exactly the anchor a previous page returned"}'
expect 400 GET '/inbox?limit=0' -H 'X-User-Key: ib-1'
expect 400 GET '/inbox?limit=1001' -H 'X-User-Key: ib-1'
expect 400 GET '/inbox?exclude-source=../x' -H 'X-User-Key: ib-1'
expect 400 PUT /inbox/x -H 'X-User-Key: ib-1' -H 'X-Sync-Version: -1' -d '{}'
expect 400 PUT /inbox/x -H 'X-User-Key: ib-1' -H 'X-Device-Id: a/b' -d '{}'
expect 400 PUT '/inbox/a%20b' -H 'X-User-Key: ib-1' -d '{}'
expect 400 PUT /inbox/x -H 'X-User-Key: ib-1' -d '[1]'
body_is '{"error": "body must be a JSON object"}'

it "an anchor of another generation, or newer than anything stored, is 410: restart without an anchor (reason replaced, ahead)"
expect 410 GET '/inbox?anchor=0123456789abcdef.0.99' -H 'X-User-Key: ib-1'
py 'assert doc["error"].endswith("restart without an anchor") and doc["reason"] == "replaced", doc'
expect 200 GET '/inbox' -H 'X-User-Key: ib-1'
generation="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["anchor"].split(".")[0])' "$WORK/body")"
expect 410 GET "/inbox?anchor=$generation.0.999999" -H 'X-User-Key: ib-1'
py 'assert doc["error"] == "anchor is newer than anything stored; restart without an anchor" and doc["reason"] == "ahead", doc'

it "methods the inbox does not serve are 405 with Allow"
expect 405 PUT /inbox -H 'X-User-Key: ib-1' -d '{}'
header_is Allow 'GET, HEAD, POST'
expect 405 POST /inbox/x -H 'X-User-Key: ib-1' -d '{}'
header_is Allow 'GET, HEAD, PUT, DELETE'

it "a message body of exactly 256 KiB is accepted and one byte more is a JSON 413"
python3 -c 'import sys; sys.stdout.write("{\"a\": \"" + "x" * (262144 - 9) + "\"}")' >"$WORK/256k.json"
expect 201 PUT /inbox/big -H 'X-User-Key: ib-1' --data-binary "@$WORK/256k.json"
python3 -c 'import sys; sys.stdout.write("{\"a\": \"" + "x" * (262144 - 8) + "\"}")' >"$WORK/256k1.json"
expect 413 PUT /inbox/big2 -H 'X-User-Key: ib-1' --data-binary "@$WORK/256k1.json"
expect 404 GET /inbox/big2 -H 'X-User-Key: ib-1'

it "another key sees none of these messages"
expect 200 GET /inbox -H 'X-User-Key: ib-other'
body_is '{"messages": [], "deleted": [], "anchor": "0.0.0", "hasMore": false}'
expect 404 GET /inbox/p1 -H 'X-User-Key: ib-other'

it "4 writers and a reader following anchors at once: nothing missed, nothing twice"
if out="$(python3 "$SUPPORT_DIR/feed_race.py" "$BASE" --writers 4 --ops 100 --seconds 120 2>&1)"; then
    printf '      %s\n' "$(tail -1 <<<"$out")"
else
    fail "feed_race.py: $out"
fi
