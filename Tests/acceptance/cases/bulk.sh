# POST /inbox:bulk, HTTP/2 and gzip through nginx + fcgiwrap + TLS.

# bulk KEY JSON [curl options]: one bulk request for KEY, expecting 200.
bulk() {
    local key="$1" json="$2"
    shift 2
    expect 200 POST /inbox:bulk -H "X-User-Key: $key" -H 'Content-Type: application/json' --data-binary "$json" "$@"
}
# statuses: the result statuses of the last bulk answer, as one line.
statuses() { python3 -c 'import json,sys; print(" ".join(str(r["status"]) for r in json.load(sys.stdin)["results"]))' <"$WORK/body"; }
# messages_json N PREFIX [VERSION]: {"messages": [...]} with N puts of PREFIX-i.
messages_json() {
    python3 -c 'import json,sys
n, prefix, version = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print(json.dumps({"messages": [{"id": f"{prefix}-{i}", "version": version, "body": {"i": i, "kg": 70 + i / 1000}} for i in range(n)]}))' \
        "$1" "$2" "${3:-1}"
}
file_count() { find "$DATA/inbox/$1/messages" -name '*.json' 2>/dev/null | wc -l; }

it "every per-item status of a single request, in item order"
expect 201 PUT /inbox/old -H 'X-User-Key: bk-1' -H 'X-Sync-Version: 5' -d '{"v": 5}'
expect 201 PUT /inbox/gone -H 'X-User-Key: bk-1' -d '{"v": 0}'
bulk bk-1 '{"messages": [
  {"id": "new", "version": 1, "body": {"kg": 71.3}},
  {"id": "old", "version": 5, "body": {"v": 5}},
  {"id": "old", "version": 6, "body": {"v": 6}},
  {"id": "old", "version": 4, "body": {"v": 4}},
  {"id": "gone", "deleted": true},
  {"id": "never", "deleted": true},
  {"id": "bad id", "body": {}},
  {"id": "x", "version": "1", "body": {}},
  {"id": "x", "body": [1]},
  {"id": "x", "body": {}, "verison": 2}
]}'
[[ "$(statuses)" == "201 200 200 409 204 404 400 400 400 400" ]] || fail "statuses: $(statuses)"
py 'r = doc["results"]
assert [x["id"] for x in r] == ["new", "old", "old", "old", "gone", "never", "bad id", "x", "x", "x"], r
assert list(r[0]) == ["id", "status", "seq"] and r[0]["seq"] == 3, r[0]
assert r[1]["seq"] == 1 and r[2]["seq"] == 4 and r[4]["seq"] == 5, r
assert r[3]["current"]["version"] == 6 and r[3]["current"]["body"] == {"v": 6} and r[3]["error"] == "version 4 is lower than the stored version 6; nothing was written", r[3]
assert r[5]["error"] == "no message with this id", r[5]
assert r[6]["error"].startswith("invalid message id"), r[6]
assert "non-negative integer" in r[7]["error"] and r[8]["error"] == "body must be a JSON object", r
assert "\"verison\"" in r[9]["error"], r[9]'
expect 200 GET /inbox/old -H 'X-User-Key: bk-1'
py 'assert doc["version"] == 6 and doc["seq"] == 4, doc'
expect 404 GET /inbox/gone -H 'X-User-Key: bk-1'

it "an item body over 256 KiB is that item's 413; the others are written"
python3 -c 'import json; print(json.dumps({"messages": [{"id": "big", "body": {"pad": "x" * (256 << 10)}}, {"id": "small", "body": {}}]}))' >"$WORK/big.json"
bulk bk-2 @"$WORK/big.json"
[[ "$(statuses)" == "413 201" ]] || fail "statuses: $(statuses)"
py 'assert "262144" in doc["results"][0]["error"], doc'

it "a full inbox is that item's 507 (MOCKCLOUD_INBOX_MAX_MESSAGES), and a deletion earlier in the batch makes room"
start_stack bulk-small MOCKCLOUD_INBOX_MAX_MESSAGES=2 || fail "could not start the stack"
bulk bk-3 '{"messages": [{"id": "a", "body": {}}, {"id": "b", "body": {}}, {"id": "c", "body": {}}, {"id": "a", "deleted": true}, {"id": "c", "body": {}}]}'
[[ "$(statuses)" == "201 201 507 204 201" ]] || fail "statuses: $(statuses)"
py 'assert "inbox full" in doc["results"][2]["error"], doc'
use_stack main "$MAIN_PORT"

it "duplicates of one id in one batch apply in order: the last write wins, each result as if sent one by one"
bulk bk-4 '{"messages": [{"id": "d", "version": 1, "body": {"n": 1}}, {"id": "d", "version": 1, "body": {"n": 1}},
  {"id": "d", "version": 3, "body": {"n": 3}}, {"id": "d", "version": 2, "body": {"n": 2}}, {"id": "d", "version": 3, "body": {"n": 33}}]}'
[[ "$(statuses)" == "201 200 200 409 200" ]] || fail "statuses: $(statuses)"
expect 200 GET /inbox/d -H 'X-User-Key: bk-4'
py 'assert doc["body"] == {"n": 33} and doc["version"] == 3 and doc["seq"] == 3, doc'
expect 200 GET /inbox -H 'X-User-Key: bk-4'
py 'assert [m["body"] for m in doc["messages"]] == [{"n": 33}] and doc["deleted"] == [], doc'
[[ "$(file_count bk-4)" == 1 ]] || fail "message files: $(file_count bk-4)"

it "1,000 items are accepted; 1,001 are refused with 413 naming the limit, and nothing is written"
messages_json 1000 m >"$WORK/1000.json"
bulk bk-5 @"$WORK/1000.json"
py 'assert len(doc["results"]) == 1000 and {r["status"] for r in doc["results"]} == {201}, doc["results"][:3]'
[[ "$(file_count bk-5)" == 1000 ]] || fail "message files: $(file_count bk-5)"
messages_json 1001 n >"$WORK/1001.json"
expect 413 POST /inbox:bulk -H 'X-User-Key: bk-6' --data-binary @"$WORK/1001.json"
py 'assert doc["error"] == "too many messages: POST /inbox:bulk accepts up to 1000 per request, this one has 1001; nothing was written", doc'
[[ ! -e "$DATA/inbox/bk-6" ]] || fail "a refused bulk request created the inbox"

it "a body of exactly 8 MiB reaches the program; one byte more is nginx's 413 naming the limit"
python3 -c 'import json, sys
head, tail = "{\"messages\": [], \"pad\": \"", "\"}"
sys.stdout.write(head + "x" * (8 * 1024 * 1024 - len(head) - len(tail)) + tail)' >"$WORK/8m.json"
expect 400 POST /inbox:bulk -H 'X-User-Key: bk-7' --data-binary @"$WORK/8m.json"
py 'assert "nothing was written" in doc["error"], doc'
printf ' ' >>"$WORK/8m.json"
expect 413 POST /inbox:bulk -H 'X-User-Key: bk-7' --data-binary @"$WORK/8m.json"
py 'assert doc["error"] == "request body too large: POST /inbox:bulk accepts up to 8 MiB (8388608 bytes) per request", doc'

it "a malformed envelope is a 400 and writes nothing"
for json in '[{"id": "a", "body": {}}]' '{"messages": {"id": "a"}}' '{"messages": [{"id": "a", "body": {}}, 7]}' \
    '{"messages": [{"id": "a", "body": {}}], "more": 1}' '{"messages": [' ''; do
    expect 400 POST /inbox:bulk -H 'X-User-Key: bk-8' --data-binary "$json"
done
py 'assert doc["error"] == "body is not valid JSON", doc'
[[ ! -e "$DATA/inbox/bk-8" ]] || fail "a malformed bulk request created the inbox"

it "GET /inbox:bulk is 405 with Allow: POST, and /inbox:bulk is not the message id 'inbox:bulk'"
expect 405 GET /inbox:bulk -H 'X-User-Key: bk-9'
header_is Allow POST
expect 400 PUT /inbox/inbox:bulk -H 'X-User-Key: bk-9' --data-binary '{"messages": []}' -H 'X-Sync-Version: x'

it "a retried batch changes nothing: the same results (a deletion already done is 404), the same log and feed"
expect 201 PUT /inbox/r3 -H 'X-User-Key: bk-10' -d '{}'
req='{"messages": [{"id": "r1", "version": 1, "body": {"a": 1}}, {"id": "r2", "version": 2, "body": {"b": 2}}, {"id": "r3", "deleted": true}]}'
bulk bk-10 "$req"
[[ "$(statuses)" == "201 201 204" ]] || fail "first: $(statuses)"
first_seqs="$(python3 -c 'import json,sys; print([r.get("seq") for r in json.load(sys.stdin)["results"]][:2])' <"$WORK/body")"
expect 200 GET /inbox -H 'X-User-Key: bk-10'
feed_before="$(last_body)"
log_before="$(md5sum <"$DATA/inbox/bk-10/changes.log")"
bulk bk-10 "$req"
[[ "$(statuses)" == "200 200 404" ]] || fail "retry: $(statuses)"
seqs="$(python3 -c 'import json,sys; print([r.get("seq") for r in json.load(sys.stdin)["results"]][:2])' <"$WORK/body")"
[[ "$seqs" == "$first_seqs" ]] || fail "the retry answered seqs $seqs, the first $first_seqs"
expect 200 GET /inbox -H 'X-User-Key: bk-10'
body_is "$feed_before"
[[ "$(md5sum <"$DATA/inbox/bk-10/changes.log")" == "$log_before" ]] || fail "the retry changed the change log"

it "the feed after bulk writes: item order is seq order, each id once, and exclude-source skips the writer's own"
bulk bk-11 '{"messages": [{"id": "f1", "body": {}}, {"id": "f2", "body": {}}, {"id": "f3", "body": {}}]}' -H 'X-Device-Id: phone-1'
bulk bk-11 '{"messages": [{"id": "f2", "version": 1, "body": {"x": 1}}, {"id": "f4", "body": {}}]}' -H 'X-Device-Id: mirror-1'
expect 200 GET /inbox -H 'X-User-Key: bk-11'
py 'assert [(m["id"], m["seq"], m["source"]) for m in doc["messages"]] == [("f1", 1, "phone-1"), ("f3", 3, "phone-1"), ("f2", 4, "mirror-1"), ("f4", 5, "mirror-1")], doc'
expect 200 GET '/inbox?exclude-source=phone-1&limit=1' -H 'X-User-Key: bk-11'
py 'assert [m["id"] for m in doc["messages"]] == ["f2"] and doc["hasMore"] is True, doc
assert doc["anchor"].endswith(".4"), doc'

it "bulk-written messages are signed: each file has a MAC sidecar that mockcloud-admin verifies"
KEYS_BULK="$WORK/bulk-hmac.keys"
(umask 077 && printf 'kb:%s\n' "$(openssl rand -hex 32)" >"$KEYS_BULK")
own_secrets "$KEYS_BULK"
start_stack bulk-signed "MOCKCLOUD_HMAC_KEYS=$KEYS_BULK" || fail "could not start the signed stack"
expect 201 PUT /inbox/s0 -H 'X-User-Key: bk-12' -d '{"v": 0}'
bulk bk-12 '{"messages": [{"id": "s0", "version": 1, "body": {"v": 1}}, {"id": "s1", "body": {}}, {"id": "s2", "body": {}}, {"id": "s3", "body": {}}, {"id": "s2", "deleted": true}]}'
[[ "$(statuses)" == "200 201 201 201 204" ]] || fail "statuses: $(statuses)"
for id in s0 s1 s2 s3; do
    [[ -s "$DATA/inbox/bk-12/messages/$id.json.mac" ]] || fail "no MAC sidecar for $id"
done
MOCKCLOUD_HMAC_KEYS="$KEYS_BULK" "$MOCKCLOUD_CGI_BIN/mockcloud-admin" verify "$DATA" >"$WORK/verify.out" 2>&1 ||
    fail "mockcloud-admin verify: $(cat "$WORK/verify.out")"
expect 200 GET /inbox/s0 -H 'X-User-Key: bk-12'
py 'assert doc["body"] == {"v": 1}, doc'
edit_bytes() { python3 -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b.replace(b"{}", b"{\"x\": 1}"))' "$1"; }
edit_bytes "$DATA/inbox/bk-12/messages/s1.json"
expect 500 GET /inbox/s1 -H 'X-User-Key: bk-12'
py 'assert doc["error"] == "stored data failed its integrity check", doc'
use_stack main "$MAIN_PORT"

it "HTTP/2 through nginx (ALPN h2): bulk and feed answers as over HTTP/1.1"
bulk bk-13 "$(messages_json 40 h)" --http2
py 'assert len(doc["results"]) == 40, doc'
version="$(curl -sk --noproxy '*' --http2 -o /dev/null -w '%{http_version}' -H 'X-User-Key: bk-13' "$BASE/inbox")"
[[ "$version" == 2 ]] || fail "HTTP version over --http2: $version"
version="$(curl -sk --noproxy '*' --http1.1 -o /dev/null -w '%{http_version}' -H 'X-User-Key: bk-13' "$BASE/inbox")"
[[ "$version" == 1.1 ]] || fail "HTTP version over --http1.1: $version"

it "a 300 KB bulk body over HTTP/2 stays in nginx's memory (its buffer is the stream's window), a 20 KB PUT does not"
# nginx logs each body it spools to a file; with the 16 KiB buffer of the
# other routes, the phone would wait for window updates (bench-lan: 374
# instead of 259 ms for two batches of 500).
spooled() { grep -c "a client request body is buffered to a temporary file" "$RUN/logs/error.log"; }
before="$(spooled)"
python3 -c 'import json; print(json.dumps({"messages": [{"id": f"w{i}", "version": 1, "body": {"pad": "w" * 400}} for i in range(700)]}))' >"$WORK/w.json"
(($(stat -c %s "$WORK/w.json") > 300000)) || fail "the bulk body is smaller than 300 KB"
bulk bk-15 @"$WORK/w.json" --http2
py 'assert len(doc["results"]) == 700 and all(r["status"] == 201 for r in doc["results"]), doc["results"][:2]'
[[ "$(spooled)" == "$before" ]] || fail "nginx spooled the bulk body to a file: $(grep 'buffered to a temporary' "$RUN/logs/error.log" | tail -1)"
python3 -c 'import json; print(json.dumps({"pad": "p" * 20000}))' >"$WORK/p.json"
expect 201 PUT /inbox/p -H 'X-User-Key: bk-15' --data-binary @"$WORK/p.json" --http2
(($(spooled) == before + 1)) || fail "a 20 KB PUT was not spooled: the check sees nothing"

it "gzip: a feed page of 1 KiB or more is compressed when asked, identity without Accept-Encoding, never an error"
# Raw bytes, not through `expect` (which wants a JSON body).
curl -sk --noproxy '*' --http2 -H 'X-User-Key: bk-13' -H 'Accept-Encoding: gzip' -D "$WORK/headers" -o "$WORK/gz" "$BASE/inbox?limit=40"
header_is Content-Encoding gzip
header_is Vary Accept-Encoding
python3 -c 'import gzip, json, sys; d = json.loads(gzip.decompress(open(sys.argv[1], "rb").read())); assert len(d["messages"]) == 40' "$WORK/gz" ||
    fail "the gzip body is not the feed page"
expect 200 GET '/inbox?limit=40' -H 'X-User-Key: bk-13' --http2
header_absent Content-Encoding
py 'assert len(raw) >= 1024 and len(doc["messages"]) == 40, len(raw)'
expect 200 GET '/inbox?limit=1' -H 'X-User-Key: bk-13' -H 'Accept-Encoding: gzip'
header_absent Content-Encoding
py 'assert len(raw) < 1024, len(raw)'
python3 -c 'import json; print(json.dumps({"messages": [{"id": f"g{i}", "version": 5, "body": {"pad": "y" * 1500}} for i in range(3)]}))' >"$WORK/g.json"
bulk bk-14 @"$WORK/g.json"
expect 409 PUT /inbox/g1 -H 'X-User-Key: bk-14' -H 'X-Sync-Version: 1' -H 'Accept-Encoding: gzip' -d '{}'
header_absent Content-Encoding
py 'assert len(raw) >= 1024 and doc["current"]["id"] == "g1", len(raw)'

it "a client that syncs as docs/API.md §4 says holds exactly the server's messages: the empty inbox's anchor gets 410 after a dropped deletion, and the 410 recovery reads without exclude-source"
start_stack sync-client MOCKCLOUD_INBOX_TOMBSTONE_HORIZON=0 MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=1 ||
    fail "could not start the stack"
if ! out="$(python3 "$HERE/sync_client.py" "$BASE" 2>&1)"; then
    fail "sync_client.py: $out"
fi
use_stack main "$MAIN_PORT"
