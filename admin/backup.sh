#!/usr/bin/env bash
# mockcloud-admin backup / restore: a consistent snapshot of a data directory
# while the service keeps serving, and putting one back.
#
#   backup.sh backup DATA_DIR FILE.tar
#   backup.sh restore FILE.tar DATA_DIR
#
# backup copies each key under that key's lock, taken shared (flock, as the
# programs' feed readers do): writers of that key wait for the copy, so no
# inbox log without its message file, no settings file without its MAC or
# its member times.
# Other keys keep being served. The tar holds MOCKCLOUD-BACKUP, the settings
# and the inboxes (not the lock files).
#
# restore extracts into an empty (or missing) data directory, owned like it
# (www-data's for the package), then gives every inbox log a new generation:
# a restore is a rollback, so every anchor a phone holds gets 410 and the
# phone reads the feed again from the start. MACs cover the bytes and their
# place, not the time: signed data verifies after a restore with the same
# key file. Restore while nothing serves DATA_DIR (or into a new directory).
#
# As root, what they create belongs to the data directory's owner.
set -euo pipefail
PROG="mockcloud-admin"
die() { printf '%s %s: %s\n' "$PROG" "${COMMAND:-}" "$*" >&2; exit 1; }
COMMAND="${1:-}"

# lock_file DATA SCOPE KEY: the key's lock file, made as the programs make
# it (0600, the data's owner) when no request has made it yet.
lock_file() {
    local lock="$1/.locks/$2.$3.lock" owner
    if [[ ! -e "$lock" ]]; then
        owner="$(stat -c %u:%g "$1")"
        [[ -d "$1/.locks" ]] || install -d -m 0700 -o "${owner%:*}" -g "${owner#*:}" "$1/.locks"
        (umask 077 && : >>"$lock") && chown "$owner" "$lock" 2>/dev/null || true
    fi
    printf '%s' "$lock"
}

backup() {
    [[ $# -eq 2 ]] || die "usage: mockcloud-admin backup DATA_DIR FILE.tar"
    local data="${1%/}" out="$2" stage key name lock
    [[ -d "$data" ]] || die "$data is not a directory"
    out="$(realpath -m -- "$out")"
    [[ "$out" != "$(realpath -- "$data")"/* ]] || die "write the backup outside the data directory"
    umask 077
    stage="$(mktemp -d "$(dirname "$out")/.mockcloud-backup.XXXXXX")" ||
        die "cannot write in $(dirname "$out")"
    STAGE="$stage"
    trap 'rm -rf "$STAGE"' EXIT
    mkdir -p "$stage/user_settings" "$stage/inbox"
    printf 'MOCKCLOUD-BACKUP 1\ncreated %s\nfrom %s\n' "$(date -u +%Y%m%dT%H%M%SZ)" "$(realpath "$data")" >"$stage/MOCKCLOUD-BACKUP"
    if [[ -d "$data/user_settings" ]]; then
        for name in "$data/user_settings/"*.json; do
            [[ -e "$name" ]] || continue
            key="$(basename "$name" .json)"
            lock="$(lock_file "$data" user_settings "$key")"
            # The document with its MAC and its member times (and theirs).
            flock -s "$lock" sh -c 'cp -p "$1" "$2/" && for f in "$1.mac" "$1.times" "$1.times.mac"; do
                    [ ! -e "$f" ] || cp -p "$f" "$2/" || exit 1; done' sh "$name" "$stage/user_settings" ||
                die "cannot copy $name"
        done
    fi
    if [[ -d "$data/inbox" ]]; then
        for name in "$data/inbox/"*/; do
            [[ -d "$name" ]] || continue
            key="$(basename "$name")"
            lock="$(lock_file "$data" inbox "$key")"
            flock -s "$lock" cp -pR "${name%/}" "$stage/inbox/" || die "cannot copy $name"
        done
    fi
    # Temporary files a crashed write left (AtomicFile's ".~" prefix) are not data.
    find "$stage" -name '.~*' -delete 2>/dev/null || true
    tar -C "$stage" -cf "$out.part" . || die "cannot write $out"
    sync -f "$out.part" 2>/dev/null || true
    mv -f "$out.part" "$out"
    printf '%s: %s settings, %s inboxes, %s messages -> %s\n' "$PROG backup" \
        "$(find "$stage/user_settings" -name '*.json' | wc -l)" "$(find "$stage/inbox" -mindepth 1 -maxdepth 1 -type d | wc -l)" \
        "$(find "$stage/inbox" -path '*/messages/*.json' | wc -l)" "$out"
}

restore() {
    [[ $# -eq 2 ]] || die "usage: mockcloud-admin restore FILE.tar DATA_DIR"
    local tarball data="${2%/}" owner log generation
    tarball="$(realpath -- "$1")" || die "no backup $1"
    [[ -f "$tarball" ]] || die "no backup $1"
    tar -xOf "$tarball" ./MOCKCLOUD-BACKUP 2>/dev/null | head -n 1 | grep -qx 'MOCKCLOUD-BACKUP 1' ||
        die "$1 is not a mockcloud-admin backup"
    if [[ ! -d "$data" ]]; then
        [[ "$(id -u)" != 0 ]] || ! id -u www-data >/dev/null 2>&1 || owner=www-data
        install -d -m 0700 ${owner:+-o "$owner" -g "$owner"} "$data" || die "cannot create $data"
    fi
    [[ -z "$(ls -A "$data")" ]] || die "$data is not empty: restore into an empty data directory"
    umask 077
    tar -C "$data" -xpf "$tarball" --no-same-owner --exclude=./MOCKCLOUD-BACKUP || die "cannot extract $1"
    # Everything the data directory's owner's (as root: www-data for the package).
    [[ "$(id -u)" != 0 ]] || chown -R "$(stat -c %u:%g "$data")" "$data" || die "cannot give $data to its owner"
    # A new generation in each log's header (bytes 22-37): every old anchor gets 410.
    for log in "$data"/inbox/*/changes.log; do
        [[ -f "$log" ]] || continue
        head -c 22 "$log" | grep -q '^MOCKCLOUD-INBOX-LOG 1 ' || die "$log: not a change log"
        generation="$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
        printf '%s' "$generation" | dd of="$log" bs=1 seek=22 conv=notrunc status=none || die "cannot update $log"
    done
    sync -f "$data" 2>/dev/null || true
    printf '%s: %s restored into %s (inbox anchors from before answer 410)\n' "$PROG restore" "$1" "$data"
}

case "$COMMAND" in
    backup) shift; backup "$@" ;;
    restore) shift; restore "$@" ;;
    *) sed -n '2,21s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
