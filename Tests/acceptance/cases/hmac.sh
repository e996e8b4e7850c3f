# MOCKCLOUD_HMAC_KEYS and MOCKCLOUD_HMAC_REQUIRE given at launch reach the
# programs through nginx (CONTRACT sections 6 and 7): a stack that signs
# every write and refuses anything that does not verify.

hmac_keys="$WORK/hmac.keys"
(umask 077 && printf 'k1:%s\n' "$(openssl rand -hex 32)" >"$hmac_keys")

it "a stack with MOCKCLOUD_HMAC_KEYS and MOCKCLOUD_HMAC_REQUIRE=1 starts"
start_stack signed "MOCKCLOUD_HMAC_KEYS=$hmac_keys" MOCKCLOUD_HMAC_REQUIRE=1 || fail "the stack did not start"

it "a PUT is signed: the document keeps Python's layout and a MAC sidecar sits beside it"
expect 200 PUT /user/settings -H 'X-User-Key: hm-a' -d '{"a": 1}'
py 'assert stored("hm-a") == json.dumps({"a": 1, "serverReceivedAt": doc["serverReceivedAt"]}, indent=2)
assert os.path.exists(os.path.join(DATA, "user_settings", "hm-a.json.mac"))'
expect 200 GET /user/settings -H 'X-User-Key: hm-a'

it "an edited document is never served: 500 integrity error"
expect 200 PUT /user/settings -H 'X-User-Key: hm-edit' -d '{"a": 1}'
sed -i 's/"a": 1/"a": 2/' "$DATA/user_settings/hm-edit.json"
expect 500 GET /user/settings -H 'X-User-Key: hm-edit'
body_is '{"error": "stored data failed its integrity check"}'

it "a signed document copied to another key fails verification"
cp "$DATA/user_settings/hm-a.json" "$DATA/user_settings/hm-copy.json"
cp "$DATA/user_settings/hm-a.json.mac" "$DATA/user_settings/hm-copy.json.mac"
expect 500 GET /user/settings -H 'X-User-Key: hm-copy'
body_is '{"error": "stored data failed its integrity check"}'

it "an unsigned (legacy) document is refused under MOCKCLOUD_HMAC_REQUIRE=1"
printf '{\n  "legacy": true\n}' >"$DATA/user_settings/hm-legacy.json"
expect 500 GET /user/settings -H 'X-User-Key: hm-legacy'
body_is '{"error": "stored data failed its integrity check"}'

it "a key file readable by others makes requests fail with 500 naming the mode, never the secret"
chmod 0644 "$hmac_keys"
expect 500 GET /user/settings -H 'X-User-Key: hm-a'
py 'assert "0644" in doc["error"], doc'
secret="$(cut -d: -f2 "$hmac_keys")"
[[ "$(last_body)" != *"$secret"* ]] || fail "the answer contains the secret"
chmod 0600 "$hmac_keys"
expect 200 GET /user/settings -H 'X-User-Key: hm-a'
