#!/usr/bin/env bash
# A full disk and a read-only data directory, through the real stack.
#
#   Tests/stress/diskfull.sh        (as root: it mounts tmpfs file systems)
#
# The data directory lives on a 2 MiB tmpfs mounted for this run. With some
# documents stored, a filler file takes every free byte; then every write
# route must answer 507 with the JSON error, leave what was stored byte for
# byte as it was (settings file, change log, envelopes, the feed's answer)
# and leave no temporary file behind; reads keep working. With the space
# back, writes work again. The same tmpfs runs out of inodes (507 again),
# and is then remounted read-only: reads answer 200, every write a JSON 500
# (or 507) that says the data directory is not writable, nothing is lost.
# Last, a read-only bind mount of an ordinary directory, on a second stack.
#
# Every mount is undone and every server stopped (by PID) on exit. Prints
# `N passed, M failed` last; exit status 1 when anything failed.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
work_dir mcd
FS="$WORK/fs"
MOUNTS=()
cleanup() {
    local m i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        m="${MOUNTS[$i]}"
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "could not unmount $m" >&2
    done
}

if [[ "$(id -u)" != 0 ]]; then
    echo "diskfull.sh mounts tmpfs file systems: run it as root"
    echo "0 passed, 1 failed"
    exit 1
fi

mkdir -p "$FS"
# 0711: the stack serves as mockcloud (Tests/support/stack.sh), who must
# reach the data directory inside.
if ! mount -t tmpfs -o size=2m,mode=0711 mockcloud-stress "$FS"; then
    echo "could not mount a tmpfs on $FS"
    echo "0 passed, 1 failed"
    exit 1
fi
MOUNTS+=("$FS")
mkdir -m 0700 "$FS/data"
# No free-space floor: this run is about the file system's own ENOSPC.
if ! start_stack full "MOCKCLOUD_DATA=$FS/data" MOCKCLOUD_MIN_FREE_MB=0; then
    echo "0 passed, 1 failed"
    exit 1
fi
K=(-H 'X-User-Key: keep')

feed_to() { req GET '/inbox?limit=1000' "${K[@]}"; cp "$WORK/body" "$1"; }

# A JSON object of about N bytes, with an updatedAt.
doc_of_size() {
    python3 -c '
import json, sys
print(json.dumps({"updatedAt": sys.argv[2], "pad": "x" * int(sys.argv[1])}))' "$1" "$2"
}

# Leaves no free byte on the tmpfs: big blocks, then small ones.
fill() {
    dd if=/dev/zero of="$FS/filler" bs=64k oflag=append conv=notrunc 2>/dev/null
    dd if=/dev/zero of="$FS/filler2" bs=4k 2>/dev/null
    dd if=/dev/zero of="$FS/filler3" bs=512 2>/dev/null
    true
}

no_temporary_files() {
    local left
    left="$(find "$FS/data" -name '.~*' 2>/dev/null | head -5)"
    [[ -z "$left" ]] || fail "temporary files left behind: $left"
}

# ---------------------------------------------------------------- disk full

it "documents stored before the disk fills"
req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-01-01T00:00:00Z","units":"metric"}'
want 200
req PUT /inbox/m1 "${K[@]}" -H 'X-Sync-Version: 1' -d '{"kg":71.3}'
want 201
req PUT /inbox/m2 "${K[@]}" -H 'X-Sync-Version: 1' -d '{"kg":70.1}'
want 201
mkdir -p "$WORK/before"
cp -a "$FS/data/user_settings/keep.json" "$WORK/before/keep.json"
feed_to "$WORK/before/feed.json"
tree_sums "$FS/data" >"$WORK/before/sums"

it "the filler leaves no free byte on the 2 MiB tmpfs"
fill
free="$(df --output=avail -B1 "$FS" | tail -n 1 | tr -d ' ')"
[[ "$free" == 0 ]] || fail "still $free bytes free"

it "PUT /user/settings on a full disk answers 507 with the JSON error; the stored file is unchanged"
req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-02-01T00:00:00Z","units":"imperial"}'
want 507
error_says "full"
cmp -s "$FS/data/user_settings/keep.json" "$WORK/before/keep.json" || fail "keep.json changed"
no_temporary_files

it "PUT /user/settings of a new key on a full disk: 507, no file"
req PUT /user/settings -H 'X-User-Key: fresh' -d '{"a":1}'
want 507
[[ ! -e "$FS/data/user_settings/fresh.json" ]] || fail "fresh.json exists"
no_temporary_files

it "PATCH /user/settings on a full disk: 507, the stored file unchanged"
req PATCH /user/settings "${K[@]}" -H 'Content-Type: application/merge-patch+json' -d '{"units":"x"}'
want 507
cmp -s "$FS/data/user_settings/keep.json" "$WORK/before/keep.json" || fail "keep.json changed"

it "a 200 KB document when 16 KiB are free (the write fails part way): 507, old file intact"
rm -f "$FS/filler3" "$FS/filler2"
truncate -s -16K "$FS/filler"
doc_of_size 200000 2026-03-01T00:00:00Z >"$WORK/big.json"
req PUT /user/settings "${K[@]}" --data-binary "@$WORK/big.json"
want 507
cmp -s "$FS/data/user_settings/keep.json" "$WORK/before/keep.json" || fail "keep.json changed"
no_temporary_files
fill

it "GET /user/settings on a full disk still answers 200 with the stored document"
req GET /user/settings "${K[@]}"
want 200
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("units") == "metric" else 1)' "$WORK/body" ||
    fail "GET does not answer the stored document: $(head -c 200 "$WORK/body")"

it "PUT /inbox/<new id> on a full disk: 507 with the JSON error"
req PUT /inbox/m3 "${K[@]}" -H 'X-Sync-Version: 1' -d '{"kg":69}'
want 507
error_says "full"

it "PUT /inbox/<id> replacing a message on a full disk: 507"
req PUT /inbox/m1 "${K[@]}" -H 'X-Sync-Version: 2' -d '{"kg":72}'
want 507

it "POST /inbox and DELETE /inbox/<id> on a full disk: 507"
req POST /inbox "${K[@]}" -d '{"note":"x"}'
want 507
req DELETE /inbox/m2 "${K[@]}"
want 507

it "PUT /inbox for a key with no inbox yet, on a full disk: 507; its feed then answers 200 (empty)"
req PUT /inbox/n1 -H 'X-User-Key: newbox' -d '{"a":1}'
want 507
req GET /inbox -H 'X-User-Key: newbox'
want 200
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["messages"] == [] and d["hasMore"] is False else 1)' \
    "$WORK/body" 2>/dev/null || fail "feed of newbox: $(head -c 300 "$WORK/body")"

it "after the refused inbox writes the feed and every stored file are byte for byte as before"
feed_to "$WORK/full-feed.json"
cmp -s "$WORK/full-feed.json" "$WORK/before/feed.json" ||
    fail "the feed changed: $(head -c 300 "$WORK/full-feed.json")"
tree_sums "$FS/data" | grep -v -e '/\.locks/' -e '/newbox/' >"$WORK/full-sums"
grep -v -e '/\.locks/' -e '/newbox/' "$WORK/before/sums" | diff - "$WORK/full-sums" >"$WORK/sums.diff" ||
    fail "stored files changed: $(head -c 600 "$WORK/sums.diff")"
no_temporary_files
req GET /inbox/m1 "${K[@]}"
want 200

it "with the space back, every write works again and the feed lists each message once"
rm -f "$FS/filler" "$FS/filler2" "$FS/filler3"
req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-04-01T00:00:00Z","units":"imperial"}'
want 200
req PUT /inbox/m3 "${K[@]}" -H 'X-Sync-Version: 1' -d '{"kg":69}'
want 201
req PUT /inbox/m1 "${K[@]}" -H 'X-Sync-Version: 2' -d '{"kg":72}'
want 200
req PUT /inbox/n1 -H 'X-User-Key: newbox' -d '{"a":1}'
want 201
req GET '/inbox?limit=1000' "${K[@]}"
want 200
python3 -c '
import json, sys
page = json.load(open(sys.argv[1]))
ids = sorted(m["id"] for m in page["messages"])
assert ids == ["m1", "m2", "m3"], ids
assert [m["version"] for m in page["messages"] if m["id"] == "m1"] == [2]' "$WORK/body" 2>"$WORK/py.err" ||
    fail "feed after the space came back: $(cat "$WORK/py.err") $(head -c 300 "$WORK/body")"
data_whole "$FS/data"

it "out of inodes (tmpfs nr_inodes at what is in use): PUT for a new key answers 507 with the JSON error"
used="$(df --output=iused "$FS" | tail -n 1 | tr -d ' ')"
if mount -o "remount,nr_inodes=$used" "$FS" 2>"$WORK/mount.err"; then
    req PUT /user/settings -H 'X-User-Key: noinode' -d '{"a":1}'
    want 507
    req PUT /inbox/n2 -H 'X-User-Key: noinode' -d '{"a":1}'
    want 507
    req GET /user/settings "${K[@]}"
    want 200
    mount -o remount,nr_inodes=100000 "$FS" || fail "could not give the inodes back"
    req PUT /user/settings -H 'X-User-Key: noinode' -d '{"a":1}'
    want 200
else
    fail "could not limit the inodes: $(cat "$WORK/mount.err")"
fi
no_temporary_files

# ---------------------------------------------------------------- read-only

it "a read-only data directory (tmpfs remounted ro): GET answers 200 with the stored data"
req GET /user/settings "${K[@]}"
cp "$WORK/body" "$WORK/ro-settings.json"
feed_to "$WORK/ro-feed.json"
tree_sums "$FS/data" >"$WORK/ro-sums"
mount -o remount,ro "$FS" || fail "could not remount read-only"
req GET /user/settings "${K[@]}"
want 200
same_json "$WORK/ro-settings.json"
req GET /inbox/m1 "${K[@]}"
want 200
req GET '/inbox?limit=1000' "${K[@]}"
want 200
cmp -s "$WORK/body" "$WORK/ro-feed.json" || fail "the feed differs on the read-only disk: $(head -c 300 "$WORK/body")"
req HEAD /user/settings "${K[@]}"
want 200

it "on the read-only data directory every write answers a JSON 500/507 that says it is not writable"
req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-05-01T00:00:00Z"}'
want 500 507
error_says "not writable"
req PATCH /user/settings "${K[@]}" -H 'Content-Type: application/merge-patch+json' -d '{"units":"x"}'
want 500 507
req DELETE /user/settings "${K[@]}"
want 500 507
req PUT /user/settings -H 'X-User-Key: rofresh' -d '{}'
want 500 507
req PUT /inbox/m4 "${K[@]}" -d '{"kg":1}'
want 500 507
error_says "not writable"
req POST /inbox "${K[@]}" -d '{"kg":1}'
want 500 507
req DELETE /inbox/m1 "${K[@]}"
want 500 507
req PUT /inbox/x1 -H 'X-User-Key: robox' -d '{}'
want 500 507

it "nothing was lost or changed on the read-only data directory"
tree_sums "$FS/data" | diff "$WORK/ro-sums" - >"$WORK/ro.diff" || fail "files changed: $(head -c 600 "$WORK/ro.diff")"

it "remounted read-write, the same writes work"
mount -o remount,rw "$FS" || fail "could not remount read-write"
req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-05-01T00:00:00Z"}'
want 200
req PUT /inbox/m4 "${K[@]}" -d '{"kg":1}'
want 201
data_whole "$FS/data"

# ---------------------------------------------------------------- read-only bind mount

it "a read-only bind mount of an ordinary directory: GET 200, PUT a JSON 500 saying not writable, nothing changed"
mkdir -p "$WORK/plain" "$WORK/bound"
chmod 0700 "$WORK/plain"
if mount --bind "$WORK/plain" "$WORK/bound"; then
    MOUNTS+=("$WORK/bound")
    start_stack bind "MOCKCLOUD_DATA=$WORK/bound" MOCKCLOUD_MIN_FREE_MB=0 || fail "the second stack did not start"
    req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-01-01T00:00:00Z"}'
    want 200
    req PUT /inbox/b1 "${K[@]}" -d '{"b":1}'
    want 201
    tree_sums "$WORK/plain" >"$WORK/bind-sums"
    if mount -o remount,bind,ro "$WORK/bound"; then
        req GET /user/settings "${K[@]}"
        want 200
        req GET '/inbox?limit=10' "${K[@]}"
        want 200
        req PUT /user/settings "${K[@]}" -d '{"updatedAt":"2026-02-01T00:00:00Z"}'
        want 500 507
        error_says "not writable"
        req PUT /inbox/b2 "${K[@]}" -d '{"b":2}'
        want 500 507
        tree_sums "$WORK/plain" | diff "$WORK/bind-sums" - >"$WORK/bind.diff" ||
            fail "files changed: $(head -c 600 "$WORK/bind.diff")"
    else
        fail "could not remount the bind mount read-only"
    fi
else
    fail "could not bind-mount $WORK/plain"
fi

it "nginx's error.log shows no program crash"
if grep -h -E 'upstream prematurely closed|signal|Fatal error|Segmentation|Illegal instruction|unexpected error' \
    "$WORK"/full/logs/error.log "$WORK"/bind/logs/error.log 2>/dev/null | head -5 >"$WORK/crash.lines" &&
    [[ -s "$WORK/crash.lines" ]]; then
    fail "$(cat "$WORK/crash.lines")"
fi

summary
