# mockcloud-admin backup / restore (admin/backup.sh, through the program): a backup taken while 8
# writers hammer one inbox restores into a data directory where every message
# file matches its change-log record, signed data verifies, the feed reads,
# and anchors from before the restore get 410 (a restore is a rollback).

BACKUP="$REPO/cgi-bin/mockcloud-admin"
# field NAME: a top-level field of the last answer's JSON.
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/body" "$1"; }
BKEYS="$WORK/backup-hmac.keys"
(umask 077 && printf 'k1:%s\n' "$(openssl rand -hex 32)" >"$BKEYS")
own_secrets "$BKEYS"
start_stack hammered "MOCKCLOUD_HMAC_KEYS=$BKEYS" MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=64 ||
    fail "could not start the hammered stack"
HAMMERED_PORT="$PORT"

it "an anchor read before the backup is answered by the live stack"
expect 201 PUT /inbox/first -H 'X-User-Key: hammer' -d '{"n":0}'
expect 200 GET '/inbox?limit=1000' -H 'X-User-Key: hammer'
old_anchor="$(field anchor)"
expect 200 GET "/inbox?anchor=$old_anchor" -H 'X-User-Key: hammer'

it "member times written per field are there to back up, signed"
expect 200 PUT /user/settings -H 'X-User-Key: timed' -d '{"a": 1, "b": 2, "updatedAt": "2026-05-18T10:00:00Z"}'
expect 200 PATCH /user/settings -H 'X-User-Key: timed' -H 'Content-Type: application/merge-patch+json' \
    -H 'X-Merge: fields' -H 'X-Device-Id: phone-b' -d '{"b": 3, "updatedAt": "2026-05-18T10:05:00Z"}'
expect 200 GET /user/settings -H 'X-User-Key: timed' -H 'X-Merge: fields'
cp "$WORK/body" "$WORK/timed-before.json"
[[ -s "$DATA/user_settings/timed.json.times" && -s "$DATA/user_settings/timed.json.times.mac" ]] ||
    fail "no signed times file: $(ls "$DATA/user_settings")"

it "backup while 8 writers hammer one inbox succeeds, with the writers still writing"
rm -f "$WORK/hammer.stop"
writers=()
for w in 1 2 3 4 5 6 7 8; do
    (
        n=0
        until [[ -e "$WORK/hammer.stop" ]]; do
            n=$((n + 1))
            # 12 ids per writer, rewritten with rising versions: superseded
            # records, and compactions of the log, under the backup.
            curl -sk --noproxy '*' -o /dev/null -X PUT -H 'X-User-Key: hammer' -H "X-Device-Id: w$w" \
                -H "X-Sync-Version: $n" -d "{\"w\":$w,\"n\":$n}" "https://127.0.0.1:$HAMMERED_PORT/inbox/w$w-$((n % 12))"
            ((n % 5)) || curl -sk --noproxy '*' -o /dev/null -X PUT -H 'X-User-Key: hammer-settings' \
                -d "{\"updatedAt\":\"2026-01-01T00:00:$(printf '%02d' $((n % 60))).${w}00000Z\",\"n\":$n}" \
                "https://127.0.0.1:$HAMMERED_PORT/user/settings"
        done
    ) &
    writers+=($!)
done
# Let the writers get going, then back up under their feet.
writers_going() {
    (($(find "$DATA/inbox/hammer/messages" -name '*.json' 2>/dev/null | wc -l) >= 40)) &&
        [[ -e "$DATA/user_settings/hammer-settings.json" ]]
}
eventually 20 writers_going
"$BACKUP" backup "$DATA" "$WORK/hammer.tar" >"$WORK/backup.out" 2>&1 || fail "backup failed: $(cat "$WORK/backup.out")"
running=0
for pid in "${writers[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
touch "$WORK/hammer.stop"
wait "${writers[@]}" 2>/dev/null
((running == 8)) || fail "only $running writers were still writing when the backup ended"
[[ -s "$WORK/hammer.tar" ]] || fail "no backup file"

it "restore refuses a data directory that is not empty"
mkdir -p "$WORK/notempty"
touch "$WORK/notempty/x"
! "$BACKUP" restore "$WORK/hammer.tar" "$WORK/notempty" >"$WORK/restore.out" 2>&1 || fail "restore into a non-empty directory succeeded"
grep -q 'not empty' "$WORK/restore.out" || fail "message: $(cat "$WORK/restore.out")"

it "the restored inbox: every message file matches its change-log record"
"$BACKUP" restore "$WORK/hammer.tar" "$WORK/restored-data" >"$WORK/restore.out" 2>&1 || fail "restore failed: $(cat "$WORK/restore.out")"
python3 - "$WORK/restored-data/inbox/hammer" >"$WORK/match.out" 2>&1 <<'PYTHON' || fail "$(cat "$WORK/match.out")"
import json, os, sys
inbox = sys.argv[1]
raw = open(os.path.join(inbox, "changes.log"), "rb").read()
assert len(raw) % 256 == 0 and len(raw) > 256, f"log size {len(raw)}"
latest = {}
for i in range(1, len(raw) // 256):
    parts = raw[i * 256:(i + 1) * 256].decode().split()
    latest[parts[3]] = (int(parts[0]), parts[1])
files = {n[:-5] for n in os.listdir(os.path.join(inbox, "messages")) if n.endswith(".json")}
assert len(files) >= 40, f"only {len(files)} messages were backed up"
for ident in files:
    doc = json.load(open(os.path.join(inbox, "messages", ident + ".json")))
    assert ident in latest, f"{ident}.json has no change-log record"
    assert latest[ident] == (doc["seq"], "P"), f"{ident}: file seq {doc['seq']}, log {latest[ident]}"
for ident, (seq, kind) in latest.items():
    assert kind == "D" or ident in files, f"the log's {ident} (seq {seq}) has no message file"
PYTHON

it "the restored data verifies with the same key (signed data survives a restore)"
"$REPO/cgi-bin/mockcloud-admin" verify --keys "$BKEYS" "$WORK/restored-data" >"$WORK/verify.out" 2>&1 ||
    fail "verify: $(head -c 400 "$WORK/verify.out")"
[[ -s "$WORK/restored-data/user_settings/hammer-settings.json" ]] || fail "the settings were not backed up"

it "the restored feed reads to the end, and an anchor from before the restore gets 410 (reason: replaced)"
rm -rf "$WORK/restored"
start_stack restored "MOCKCLOUD_HMAC_KEYS=$BKEYS" MOCKCLOUD_DATA="$WORK/restored-data" || fail "could not start the restored stack"
anchor=""
for ((page = 0; page < 100; page++)); do
    expect 200 GET "/inbox?limit=7${anchor:+&anchor=$anchor}" -H 'X-User-Key: hammer'
    anchor="$(field anchor)"
    [[ "$(field hasMore)" == True ]] || break
done
expect 410 GET "/inbox?anchor=$old_anchor" -H 'X-User-Key: hammer'
py 'assert doc["reason"] == "replaced", doc'
expect 200 GET /user/settings -H 'X-User-Key: hammer-settings'

it "the member times are restored with the document: the restored stack answers the same times, and they verify"
[[ -s "$WORK/restored-data/user_settings/timed.json.times.mac" ]] || fail "the times were not backed up with their MAC"
expect 200 GET /user/settings -H 'X-User-Key: timed' -H 'X-Merge: fields'
cmp -s "$WORK/body" "$WORK/timed-before.json" || fail "times after the restore: $(cat "$WORK/body"), before: $(cat "$WORK/timed-before.json")"
grep -q 'timed.json.times' "$RUN/logs/error.log" 2>/dev/null && fail "the restored times were logged as unusable"
