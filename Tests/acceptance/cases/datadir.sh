# The data directory: private, and interchangeable with the Python mock
# cloud's (a file it wrote is served; what we write is what it writes).

it "the launcher creates the data directory 0700"
[[ "$(stat -c %a "$DATA")" == 700 ]] || fail "data directory mode $(stat -c %a "$DATA")"

it "a stored settings file is 0600 in a 0700 directory"
expect 200 PUT /user/settings -H 'X-User-Key: dd-modes' -d '{"a": 1}'
[[ "$(stat -c %a "$DATA/user_settings")" == 700 ]] || fail "user_settings mode $(stat -c %a "$DATA/user_settings")"
[[ "$(stat -c %a "$DATA/user_settings/dd-modes.json")" == 600 ]] || fail "file mode $(stat -c %a "$DATA/user_settings/dd-modes.json")"

it "a file written in the Python mock cloud's layout is served by GET"
mkdir -p -m 0700 "$DATA/user_settings"
python3 - "$DATA/user_settings/dd-moved.json" <<'PYTHON'
import json, sys
document = {"theme": "dark", "name": "Zoë ☃", "ratio": 0.9990998620664758, "big": 12345678901234567890,
            "nested": {"list": [1, 2.5, None, True], "empty": {}},
            "updatedAt": "2026-05-18T04:43:04.095Z", "serverReceivedAt": "20260518T044304.134233Z"}
with open(sys.argv[1], "w") as f:
    f.write(json.dumps(document, indent=2))
PYTHON
expect 200 GET /user/settings -H 'X-User-Key: dd-moved'
header_matches ETag '^"[^"]+"$'
py 'expected = {"theme": "dark", "name": "Zoë ☃", "ratio": 0.9990998620664758, "big": 12345678901234567890,
            "nested": {"list": [1, 2.5, None, True], "empty": {}},
            "updatedAt": "2026-05-18T04:43:04.095Z", "serverReceivedAt": "20260518T044304.134233Z"}
assert doc == expected and list(doc) == list(expected), doc
assert "0.9990998620664758" in body and "12345678901234567890" in body, body'

it "the moved file's ETag works for If-None-Match and If-Match"
etag="$(last_header ETag)"
expect 304 GET /user/settings -H 'X-User-Key: dd-moved' -H "If-None-Match: $etag"
expect 200 PATCH /user/settings -H 'X-User-Key: dd-moved' -H 'Content-Type: application/merge-patch+json' \
    -H "If-Match: $etag" -d '{"theme": "light"}'

it "the moved file, once rewritten, is still exactly Python's layout"
py 'expected = {"theme": "light", "name": "Zoë ☃", "ratio": 0.9990998620664758, "big": 12345678901234567890,
            "nested": {"list": [1, 2.5, None, True], "empty": {}},
            "updatedAt": "2026-05-18T04:43:04.095Z", "serverReceivedAt": doc["serverReceivedAt"]}
assert stored("dd-moved") == json.dumps(expected, indent=2), stored("dd-moved")'

it "the moved file's updatedAt takes part in last-writer-wins"
expect 409 PUT /user/settings -H 'X-User-Key: dd-moved' -d '{"updatedAt": "2026-05-18T04:43:04Z"}'
py 'assert doc["current"]["theme"] == "light", doc'
