# Last writer wins by the client's updatedAt (docs/API.md §3), compared
# as instants at microsecond resolution, in the basic and extended forms.

# put_at KEY UPDATED_AT: the settings of KEY, stamped updatedAt.
put_at() {
    expect "$1" PUT /user/settings -H "X-User-Key: $2" -d "{\"updatedAt\": \"$3\", \"n\": \"$3\"}"
}

it "an older updatedAt answers 409 with the stored document, and the file is unchanged"
put_at 200 lww-older '2026-05-18T04:43:04.095Z'
before="$(cat "$DATA/user_settings/lww-older.json")"
put_at 409 lww-older '2026-05-18T04:43:04.094Z'
py 'assert doc["current"]["updatedAt"] == "2026-05-18T04:43:04.095Z", doc
assert isinstance(doc["error"], str) and doc["error"], doc'
header_present ETag
[[ "$(cat "$DATA/user_settings/lww-older.json")" == "$before" ]] || fail "the stored file changed after a 409"

it "an equal updatedAt is written"
put_at 200 lww-older '2026-05-18T04:43:04.095Z'

it "a newer updatedAt is written"
put_at 200 lww-older '2026-05-18T04:43:04.096Z'
expect 200 GET /user/settings -H 'X-User-Key: lww-older'
py 'assert doc["updatedAt"] == "2026-05-18T04:43:04.096Z", doc'

it "the basic form (20260518T044304.095000Z) compares with the extended form as the same instant"
put_at 200 lww-forms '2026-05-18T04:43:04.095Z'
put_at 200 lww-forms '20260518T044304.095000Z'
put_at 409 lww-forms '20260518T044304.094999Z'

it "basic forms with 0 to 9 fraction digits are accepted"
put_at 200 lww-digits '20260518T044304Z'
put_at 200 lww-digits '20260518T044304.1Z'
put_at 409 lww-digits '20260518T044304.09Z'
put_at 200 lww-digits '20260518T044304.100000000Z'

it "updatedAt is compared at microsecond resolution (digits past the sixth do not count)"
put_at 200 lww-micro '20260518T044304.1234567Z'
put_at 200 lww-micro '20260518T044304.123456Z'
put_at 409 lww-micro '20260518T044304.123455999Z'

it "offsets are compared as instants: 06:43:04+02:00 is older than 04:43:04.095Z"
put_at 200 lww-offset '2026-05-18T04:43:04.095Z'
put_at 409 lww-offset '2026-05-18T06:43:04.000+02:00'

it "offsets are compared as instants: 00:43:05-04:00 is newer than 04:43:04.095Z"
put_at 200 lww-offset '2026-05-18T00:43:05-04:00'

it "a basic form with an offset (+0200) is an instant too"
put_at 409 lww-offset '20260518T064304.999999+0200'
put_at 200 lww-offset '20260518T064305.000001+0200'

it "a document without updatedAt is written over one with it"
put_at 200 lww-missing '2026-05-18T04:43:04.095Z'
expect 200 PUT /user/settings -H 'X-User-Key: lww-missing' -d '{"n": "none"}'

it "a document with updatedAt is written over one without it"
put_at 200 lww-missing '2000-01-01T00:00:00Z'

it "an unparseable incoming updatedAt does not block the write"
put_at 200 lww-garbage '2026-05-18T04:43:04.095Z'
put_at 200 lww-garbage 'yesterday'
