# HMAC signing of stored data: docs/API.md §6 through nginx + TLS. The
# programs read the key file on every request, so rotating it needs no restart.

KEYS="$WORK/hmac.keys"
K1="k1:$(openssl rand -hex 32)"
K2="k2:$(openssl rand -base64 32)"
write_keys() { (umask 077 && printf '%s\n' "$@" >"$KEYS" && chmod 600 "$KEYS"); }
write_keys "$K1"
own_secrets "$KEYS"
ADMIN="$MOCKCLOUD_CGI_BIN/mockcloud-admin"
start_stack signed "MOCKCLOUD_HMAC_KEYS=$KEYS" || fail "could not start the signed stack"

edit_file() { python3 -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b.replace(sys.argv[2].encode(), sys.argv[3].encode(), 1))' "$@"; }

it "a signed PUT writes a MAC sidecar beside the Python-layout file and GET serves it"
expect 200 PUT /user/settings -H 'X-User-Key: s1' -d '{"weight": 71.30}'
py 'assert open(os.path.join(DATA, "user_settings", "s1.json.mac")).read().startswith("mockcloud-hmac-sha256 1\nk1 ")
assert stored("s1") == "{\n  \"weight\": 71.30,\n  \"serverReceivedAt\": \"%s\"\n}" % doc["serverReceivedAt"], stored("s1")'
expect 200 GET /user/settings -H 'X-User-Key: s1'
py 'assert doc["weight"] == 71.3'

it "MACs are HMAC-SHA256 over header, route, key, id and bytes: Python's hmac agrees, for small and 400 KiB documents"
# The static programs hash small inputs with libcrypto's baseline code and
# probe the CPU first for large ones (Sources/CStartup/startup.c): both paths
# must give the MAC that an independent implementation computes.
python3 -c 'import json; print(json.dumps({"blob": "x" * (400 << 10)}))' >"$WORK/big.json"
expect 200 PUT /user/settings -H 'X-User-Key: big' -H 'Content-Type: application/json' --data-binary "@$WORK/big.json"
expect 201 PUT /inbox/m1 -H 'X-User-Key: big' -H 'X-Sync-Version: 1' -d '{"type": "scan"}'
SECRET_HEX="${K1#k1:}" py 'import hashlib, hmac
secret = bytes.fromhex(os.environ["SECRET_HEX"])
def check(path, route, key, ident):
    data = open(path, "rb").read()
    message = b"\0".join([b"mockcloud-hmac-sha256 1", route, key, ident, data])
    want = "k1 " + hmac.new(secret, message, hashlib.sha256).hexdigest()
    lines = open(path + ".mac").read().split("\n")
    assert lines[0] == "mockcloud-hmac-sha256 1" and want in lines[1:], (path, lines, want)
    return len(data)
assert check(os.path.join(DATA, "user_settings", "big.json"), b"user_settings", b"big", b"") > 400 << 10
check(os.path.join(DATA, "user_settings", "s1.json"), b"user_settings", b"s1", b"")
check(os.path.join(DATA, "inbox", "big", "messages", "m1.json"), b"inbox", b"big", b"m1")'
expect 200 GET /user/settings -H 'X-User-Key: big'
py 'assert len(doc["blob"]) == 400 << 10'

it "one edited byte: 500 with the integrity error, the edited content is not served, the log names the file"
edit_file "$DATA/user_settings/s1.json" 71.30 91.30
expect 500 GET /user/settings -H 'X-User-Key: s1'
body_is '{"error": "stored data failed its integrity check"}'
grep -q "integrity check failed for $DATA/user_settings/s1.json" "$RUN/logs/error.log" ||
    fail "error.log does not name the file: $(tail -3 "$RUN/logs/error.log")"

it "another user's files copied over this user's fail the check"
expect 200 PUT /user/settings -H 'X-User-Key: s2' -d '{"owner": "s2"}'
expect 200 PUT /user/settings -H 'X-User-Key: s3' -d '{"owner": "s3"}'
cp "$DATA/user_settings/s3.json" "$DATA/user_settings/s2.json"
cp "$DATA/user_settings/s3.json.mac" "$DATA/user_settings/s2.json.mac"
expect 500 GET /user/settings -H 'X-User-Key: s2'
body_is '{"error": "stored data failed its integrity check"}'
expect 200 GET /user/settings -H 'X-User-Key: s3'

it "rotation: with a new first key, old documents stay valid and new writes carry the new key id"
write_keys "$K2" "$K1"
expect 200 GET /user/settings -H 'X-User-Key: s3'
expect 200 PUT /user/settings -H 'X-User-Key: s4' -d '{}'
py 'assert "\nk2 " in open(os.path.join(DATA, "user_settings", "s4.json.mac")).read()'

it "dropping the old key fails the documents it signed, not the new ones"
write_keys "$K2"
expect 500 GET /user/settings -H 'X-User-Key: s3'
body_is '{"error": "stored data failed its integrity check"}'
expect 200 GET /user/settings -H 'X-User-Key: s4'

# Clients learn only that the server is misconfigured; the log says what.
it "a key file readable by group or others makes every request a 500; the log names the mode, not the secret"
chmod 644 "$KEYS"
expect 500 GET /user/settings -H 'X-User-Key: s4'
body_is '{"error": "server misconfigured; see the server log"}'
grep -q "is readable by group or others (mode 0644); run chmod 600" "$RUN/logs/error.log" ||
    fail "the log does not name the mode: $(tail -n 2 "$RUN/logs/error.log")"
! grep -q -- "${K2#k2:}" "$RUN/logs/error.log" || fail "the secret is in the log"
expect 500 GET /inbox -H 'X-User-Key: s4'
chmod 600 "$KEYS"
expect 200 GET /user/settings -H 'X-User-Key: s4'

it "a short secret is a 500; the log names the line"
write_keys "k3:$(openssl rand -hex 16)"
expect 500 GET /user/settings -H 'X-User-Key: s4'
body_is '{"error": "server misconfigured; see the server log"}'
grep -q ", line 1: secret of key k3 is 16 bytes; at least 32 are needed" "$RUN/logs/error.log" ||
    fail "the log does not name the line: $(tail -n 2 "$RUN/logs/error.log")"
write_keys "$K2"

it "inbox messages are signed the same way and an edited one is not served"
expect 201 PUT /inbox/m1 -H 'X-User-Key: s5' -d '{"kg": 70}'
py 'assert os.path.exists(os.path.join(DATA, "inbox", "s5", "messages", "m1.json.mac"))'
expect 200 GET /inbox -H 'X-User-Key: s5'
edit_file "$DATA/inbox/s5/messages/m1.json" '"kg": 70' '"kg": 99'
expect 500 GET /inbox/m1 -H 'X-User-Key: s5'
body_is '{"error": "stored data failed its integrity check"}'
expect 500 GET /inbox -H 'X-User-Key: s5'

it "MOCKCLOUD_HMAC_REQUIRE=1 refuses an unsigned legacy file until mockcloud-admin signs it"
start_stack required "MOCKCLOUD_HMAC_KEYS=$KEYS" MOCKCLOUD_HMAC_REQUIRE=1 || fail "could not start the required stack"
mkdir -p "$DATA/user_settings"
printf '{\n  "units": "metric"\n}' >"$DATA/user_settings/legacy.json"
# A legacy file is the serving user's, as the launcher makes every file in
# the data directory at each start.
chown -R --reference="$DATA" "$DATA/user_settings"
expect 500 GET /user/settings -H 'X-User-Key: legacy'
body_is '{"error": "stored data failed its integrity check"}'
out="$("$ADMIN" sign --keys "$KEYS" "$DATA" 2>&1)" || fail "mockcloud-admin sign: $out"
[[ "$out" == "signed 1 documents with key k2; 0 already were; 0 bad" ]] || fail "sign said: $out"
expect 200 GET /user/settings -H 'X-User-Key: legacy'
body_is '{"units": "metric"}'

it "mockcloud-admin verify finds every tampered file among 3000 documents and exits 1"
# In memory when there is a tmpfs: signing 3,000 files syncs each one, and
# this case is about what verify finds, not about the disk (20 s on a busy one).
VERIFY="$(mktemp -d "$([[ -w /dev/shm ]] && echo /dev/shm || echo "$WORK")/mcverify.XXXXXX")"
SCRATCH_DIRS+=("$VERIFY")
python3 - "$VERIFY" <<'PYTHON'
import json, os, sys
root = sys.argv[1]
os.makedirs(os.path.join(root, "user_settings"))
for i in range(3000):
    with open(os.path.join(root, "user_settings", "u%d.json" % i), "w") as f:
        f.write(json.dumps({"i": i, "updatedAt": "20260518T044304.095000Z"}, indent=2))
PYTHON
out="$("$ADMIN" sign --keys "$KEYS" "$VERIFY" 2>&1)" || fail "sign: $out"
out="$("$ADMIN" verify --keys "$KEYS" "$VERIFY" 2>&1)" || fail "verify of a clean directory: $out"
[[ "$out" == "checked 3000 documents: 3000 signed, 0 unsigned, 0 bad" ]] || fail "verify said: $out"
for i in 7 1234 2999; do edit_file "$VERIFY/user_settings/u$i.json" '"i": ' '"i": 1'; done
cp "$VERIFY/user_settings/u1.json.mac" "$VERIFY/user_settings/u2.json.mac"
if out="$("$ADMIN" verify --keys "$KEYS" "$VERIFY" 2>&1)"; then fail "verify exited 0 on a tampered directory"; fi
for i in 7 1234 2999 2; do
    grep -q "^BAD $VERIFY/user_settings/u$i.json: " <<<"$out" || fail "verify did not name u$i.json: $out"
done
[[ "$(grep -c '^BAD ' <<<"$out")" == 4 ]] || fail "verify named other files: $out"
