# /user/settings per field (docs/API.md §3, "Per-field merge"): PATCH with
# X-Merge: fields, GET with X-Merge: fields, the member-times file beside
# the Python-compatible settings file, through nginx + fcgiwrap + TLS.

MERGE='Content-Type: application/merge-patch+json'
FIELDS='X-Merge: fields'
BASE_DOC='{"weightCalibrationFactor": 1.0, "unitSystem": "metric", "heightCm": 175, "updatedAt": "2026-05-18T10:00:00Z"}'

it "two phones edit different members offline and both edits survive, the later edit home first"
expect 200 PUT /user/settings -H 'X-User-Key: fm-story' -d "$BASE_DOC"
expect 200 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" -H "$FIELDS" -H 'X-Device-Id: phone-b' \
    -d '{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}'
header_absent X-Merge-Kept
expect 200 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" -H "$FIELDS" -H 'X-Device-Id: phone-a' \
    -d '{"weightCalibrationFactor": 0.999, "updatedAt": "2026-05-18T10:01:00Z"}'
header_absent X-Merge-Kept
header_present ETag
header_is X-Merge fields
py 'expected = {"weightCalibrationFactor": 0.999, "unitSystem": "imperial", "heightCm": 175,
            "updatedAt": "20260518T100500.000000Z", "serverReceivedAt": doc["serverReceivedAt"]}
assert list(doc) == list(expected) and doc == expected, doc
assert stored("fm-story") == json.dumps(expected, indent=2), "the settings file is not what Python writes"
assert os.path.exists(os.path.join(DATA, "user_settings", "fm-story.json.times"))'

it "the same PATCH without X-Merge keeps its meaning: 409, older than the stored updatedAt"
expect 409 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" \
    -d '{"weightCalibrationFactor": 0.5, "updatedAt": "2026-05-18T10:01:00Z"}'
py 'assert doc["current"]["weightCalibrationFactor"] == 0.999, doc'

it "a late edit of a member that changed since loses that member only and X-Merge-Kept names it"
expect 200 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" -H "$FIELDS" \
    -d '{"unitSystem": "metric", "heightCm": 180, "updatedAt": "2026-05-18T10:03:00Z"}'
header_is X-Merge-Kept unitSystem
py 'assert doc["unitSystem"] == "imperial" and doc["heightCm"] == 180, doc'

it "null deletes a member at its time, and an older value does not bring it back"
expect 200 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" -H "$FIELDS" \
    -d '{"heightCm": null, "updatedAt": "2026-05-18T10:06:00Z"}'
py 'assert "heightCm" not in doc, doc'
expect 200 PATCH /user/settings -H 'X-User-Key: fm-story' -H "$MERGE" -H "$FIELDS" \
    -d '{"heightCm": 181, "updatedAt": "2026-05-18T10:04:00Z"}'
header_is X-Merge-Kept heightCm
py 'assert "heightCm" not in doc, doc'

it "GET with X-Merge: fields answers the document and each member's time; a plain GET is the document alone"
expect 200 GET /user/settings -H 'X-User-Key: fm-story' -H "$FIELDS"
tag="$(last_header ETag)"
header_is X-Merge fields
py 'assert list(doc) == ["document", "times"], doc
assert doc["times"] == {
    "heightCm": {"at": "20260518T100600.000000Z", "deleted": True},
    "unitSystem": {"at": "20260518T100500.000000Z", "device": "phone-b"},
    "weightCalibrationFactor": {"at": "20260518T100100.000000Z", "device": "phone-a"}}, doc["times"]
assert json.dumps(doc["document"], indent=2) == stored("fm-story")'
expect 200 GET /user/settings -H 'X-User-Key: fm-story'
header_is ETag "$tag"
header_absent X-Merge
py 'assert raw == json.dumps(json.loads(stored("fm-story"))).encode(), raw'
expect 304 GET /user/settings -H 'X-User-Key: fm-story' -H "$FIELDS" -H "If-None-Match: $tag"
expect 200 HEAD /user/settings -H 'X-User-Key: fm-story' -H "$FIELDS"
header_is ETag "$tag"

it "a plain PUT gives every member its updatedAt and removes the times file"
expect 200 PUT /user/settings -H 'X-User-Key: fm-story' -d '{"unitSystem": "metric", "updatedAt": "2026-05-18T11:00:00Z"}'
[[ ! -e "$DATA/user_settings/fm-story.json.times" ]] || fail "the times file is still there"
expect 200 GET /user/settings -H 'X-User-Key: fm-story' -H "$FIELDS"
py 'assert doc["times"] == {"unitSystem": {"at": "20260518T110000.000000Z"}}, doc'

it "when nothing is stored a per-field patch creates the document"
expect 200 PATCH /user/settings -H 'X-User-Key: fm-new' -H "$MERGE" -H "$FIELDS" \
    -d '{"a": 1, "updatedAt": "2026-05-18T10:00:00Z"}'
py 'assert doc["a"] == 1 and doc["updatedAt"] == "20260518T100000.000000Z", doc'

it "refused with a 400 and a JSON error, writing nothing: no updatedAt, one that does not parse, another X-Merge"
expect 400 PATCH /user/settings -H 'X-User-Key: fm-bad' -H "$MERGE" -H "$FIELDS" -d '{"a": 1}'
body_is '{"error": "a per-field patch (X-Merge: fields) needs updatedAt, the time its members were edited; nothing was written"}'
expect 400 PATCH /user/settings -H 'X-User-Key: fm-bad' -H "$MERGE" -H "$FIELDS" -d '{"a": 1, "updatedAt": "later"}'
py 'assert doc["error"].startswith("updatedAt \"later\" is not a time stamp"), doc'
expect 400 PATCH /user/settings -H 'X-User-Key: fm-bad' -H "$MERGE" -H 'X-Merge: values' \
    -d '{"a": 1, "updatedAt": "2026-05-18T10:00:00Z"}'
py 'assert "X-Merge" in doc["error"] and "fields" in doc["error"], doc'
expect 400 PUT /user/settings -H 'X-User-Key: fm-bad' -H "$FIELDS" -d '{"a": 1}'
expect 400 GET /user/settings -H 'X-User-Key: fm-bad' -H 'X-Merge: values'
[[ ! -e "$DATA/user_settings/fm-bad.json" && ! -e "$DATA/.locks/user_settings.fm-bad.lock" ]] ||
    fail "a refused request left a file behind"

it "a damaged times file is a line in the error log and whole-document times, never a 500"
expect 200 PUT /user/settings -H 'X-User-Key: fm-damaged' -d "$BASE_DOC"
expect 200 PATCH /user/settings -H 'X-User-Key: fm-damaged' -H "$MERGE" -H "$FIELDS" \
    -d '{"unitSystem": "imperial", "updatedAt": "2026-05-18T10:05:00Z"}'
printf 'garbage' >"$DATA/user_settings/fm-damaged.json.times"
expect 200 GET /user/settings -H 'X-User-Key: fm-damaged' -H "$FIELDS"
py 'assert doc["times"]["unitSystem"] == {"at": "20260518T100500.000000Z"}, doc["times"]'
grep -q 'fm-damaged.json.times is damaged: it is not valid JSON; every member' "$RUN/logs/error.log" ||
    fail "no log line: $(tail -n 3 "$RUN/logs/error.log")"
expect 200 GET /user/settings -H 'X-User-Key: fm-damaged'
expect 200 PATCH /user/settings -H 'X-User-Key: fm-damaged' -H "$MERGE" -H "$FIELDS" \
    -d '{"heightCm": 176, "updatedAt": "2026-05-18T10:06:00Z"}'
py 'assert doc["heightCm"] == 176 and doc["unitSystem"] == "imperial", doc'
