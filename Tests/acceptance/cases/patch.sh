# PATCH /user/settings with a JSON merge patch (RFC 7396).

MERGE='Content-Type: application/merge-patch+json'

it "PATCH merges: fields replace in place, null removes, nested objects merge, new fields are appended"
expect 200 PUT /user/settings -H 'X-User-Key: patch-merge' \
    -d '{"a": 1, "b": {"x": 1, "y": 2, "z": {"deep": 1}}, "c": 3, "d": [1, 2]}'
expect 200 PATCH /user/settings -H 'X-User-Key: patch-merge' -H "$MERGE" \
    -d '{"b": {"y": null, "w": 4, "z": {"deep": 2}}, "c": null, "d": [3], "e": 0.9990998620664758}'
header_present ETag
py 'expected = {"a": 1, "b": {"x": 1, "z": {"deep": 2}, "w": 4}, "d": [3],
            "serverReceivedAt": doc["serverReceivedAt"], "e": 0.9990998620664758}
assert list(doc) == list(expected) and doc == expected, doc
assert stored("patch-merge") == json.dumps(expected, indent=2), stored("patch-merge")'

it "a PATCH that changes nothing still stamps serverReceivedAt in place"
first="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["serverReceivedAt"])' "$DATA/user_settings/patch-merge.json")"
sleep 0.01
expect 200 PATCH /user/settings -H 'X-User-Key: patch-merge' -H "$MERGE" -d '{}'
py 'assert list(doc) == ["a", "b", "d", "serverReceivedAt", "e"], list(doc)'
py "assert doc['serverReceivedAt'] > '$first', (doc['serverReceivedAt'], '$first')"

it "a PATCH with charset parameter on the media type is accepted"
expect 200 PATCH /user/settings -H 'X-User-Key: patch-merge' -H 'Content-Type: application/merge-patch+json; charset=utf-8' -d '{"f": 1}'
py 'assert doc["f"] == 1'

it "PATCH with Content-Type application/json answers 415 and changes nothing"
before="$(cat "$DATA/user_settings/patch-merge.json")"
expect 415 PATCH /user/settings -H 'X-User-Key: patch-merge' -H 'Content-Type: application/json' -d '{"a": 2}'
py 'assert set(doc) == {"error"} and "application/merge-patch+json" in doc["error"], doc'
[[ "$(cat "$DATA/user_settings/patch-merge.json")" == "$before" ]] || fail "the stored file changed after a 415"

it "PATCH without any Content-Type answers 415"
expect 415 PATCH /user/settings -H 'X-User-Key: patch-merge' -H 'Content-Type:' --data-binary '{"a": 2}'

it "PATCH when nothing is stored answers 404"
expect 404 PATCH /user/settings -H 'X-User-Key: patch-nothing' -H "$MERGE" -d '{"a": 1}'
py 'assert set(doc) == {"error"}, doc
assert stored("patch-nothing") is None'

it "a PATCH body that is not JSON answers 400"
expect 400 PATCH /user/settings -H 'X-User-Key: patch-merge' -H "$MERGE" -d '{"a":'
body_is '{"error": "body is not valid JSON"}'

it "a PATCH body that is not an object answers 400"
expect 400 PATCH /user/settings -H 'X-User-Key: patch-merge' -H "$MERGE" -d '[1]'
py 'assert set(doc) == {"error"}, doc'

it "PATCH follows last-writer-wins: an older updatedAt answers 409 with current"
expect 200 PUT /user/settings -H 'X-User-Key: patch-lww' -d '{"updatedAt": "2026-05-18T04:43:04.095Z", "v": 1}'
expect 409 PATCH /user/settings -H 'X-User-Key: patch-lww' -H "$MERGE" -d '{"updatedAt": "2026-05-18T04:43:04Z", "v": 2}'
py 'assert doc["current"]["v"] == 1, doc'
expect 200 PATCH /user/settings -H 'X-User-Key: patch-lww' -H "$MERGE" -d '{"updatedAt": "2026-05-18T04:43:05Z", "v": 3}'
py 'assert doc["v"] == 3 and list(doc) == ["updatedAt", "v", "serverReceivedAt"], doc'

it "PATCH follows If-Match: a stale tag answers 412 with current, a fresh one is written"
etag="$(curl -sk --noproxy '*' -o /dev/null -D - -H 'X-User-Key: patch-lww' "$BASE/user/settings" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')"
expect 412 PATCH /user/settings -H 'X-User-Key: patch-lww' -H "$MERGE" -H 'If-Match: "0000000000000000"' -d '{"v": 4}'
py 'assert doc["current"]["v"] == 3, doc'
expect 200 PATCH /user/settings -H 'X-User-Key: patch-lww' -H "$MERGE" -H "If-Match: $etag" -d '{"v": 5}'
py 'assert doc["v"] == 5, doc'
