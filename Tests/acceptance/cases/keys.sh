# X-User-Key: docs/API.md §2, first two rows. The key is checked before
# it touches any path, so nothing lands outside the data directory.

it "a request without X-User-Key is refused with 400 and the contract's sentence"
expect 400 GET /user/settings
body_is '{"error": "X-User-Key header required"}'

it "an empty X-User-Key is refused like a missing one"
expect 400 GET /user/settings -H 'X-User-Key;'
body_is '{"error": "X-User-Key header required"}'

it "a PUT without X-User-Key is refused too, and nothing is written"
before="$(ls -laR "$DATA")"
expect 400 PUT /user/settings -d '{"a": 1}'
body_is '{"error": "X-User-Key header required"}'
[[ "$(ls -laR "$DATA")" == "$before" ]] || fail "the data directory changed"

it "a key with a path in it (../x) is refused as an invalid shape"
expect 400 PUT /user/settings -H 'X-User-Key: ../x' -d '{"a": 1}'
body_is '{"error": "invalid X-User-Key shape"}'
py 'assert not os.path.exists(os.path.join(DATA, "x.json")) and not os.path.exists(os.path.join(os.path.dirname(DATA), "x.json"))'

it "a key with a slash (a/b) is refused as an invalid shape"
expect 400 GET /user/settings -H 'X-User-Key: a/b'
body_is '{"error": "invalid X-User-Key shape"}'

it "a key with a dot (a.b) is refused: only letters, digits, _ and -"
expect 400 GET /user/settings -H 'X-User-Key: a.b'
body_is '{"error": "invalid X-User-Key shape"}'

it "a key with a space inside is refused"
expect 400 GET /user/settings -H 'X-User-Key: a b'
body_is '{"error": "invalid X-User-Key shape"}'

it "a key with non-ASCII letters is refused"
expect 400 GET /user/settings -H 'X-User-Key: zoë'
body_is '{"error": "invalid X-User-Key shape"}'

it "a key of 129 characters is refused"
expect 400 GET /user/settings -H "X-User-Key: $(printf 'k%.0s' {1..129})"
body_is '{"error": "invalid X-User-Key shape"}'

it "a key of exactly 128 characters is accepted"
expect 200 PUT /user/settings -H "X-User-Key: $(printf 'k%.0s' {1..128})" -d '{"a": 1}'
py 'assert stored("k" * 128) is not None'

it "a key using every allowed kind of character (A-Z a-z 0-9 _ -) is accepted"
expect 404 GET /user/settings -H 'X-User-Key: Az09_-'
body_is '{"error": "no settings stored for this user"}'

it "one key never reads another key's settings"
expect 200 PUT /user/settings -H 'X-User-Key: keys-alice' -d '{"owner": "alice"}'
expect 404 GET /user/settings -H 'X-User-Key: keys-bob'
body_is '{"error": "no settings stored for this user"}'
