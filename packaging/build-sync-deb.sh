#!/usr/bin/env bash
# Builds dist/mockcloud-sync_<VERSION>_amd64.deb, the device's package: the
# sync tool, for the mirror box (not the LAN box that serves), from the
# release build (.build/release/mockcloud-sync) with dpkg-deb alone, and the
# unit that runs `push --watch` on the mirror box for good
# (mockcloud-sync-push@.service, an example configuration, its system user).
# The Swift runtime is linked in; libcurl is not (Debian ships no static
# libcurl that links without Kerberos and LDAP archives), hence Depends.
#
#   packaging/build-sync-deb.sh [VERSION]     default: the VERSION file
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${1:-$(tr -d '[:space:]' <"$REPO/VERSION")}"
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "build-sync-deb: bad version '$VERSION'" >&2; exit 1; }
TOOL="$REPO/.build/release/mockcloud-sync"
[[ -x "$TOOL" ]] || { echo "build-sync-deb: $TOOL is missing: run make build" >&2; exit 1; }
if LC_ALL=C readelf -d "$TOOL" | grep -q 'NEEDED.*libswift'; then
    echo "build-sync-deb: $TOOL needs the Swift runtime libraries (build it with make build)" >&2
    exit 1
fi

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
ROOT="$STAGE/root"
umask 022
install -d "$ROOT/DEBIAN" "$ROOT/usr/bin" "$ROOT/usr/share/doc/mockcloud-sync/examples" "$ROOT/lib/systemd/system"
install -m 0755 "$TOOL" "$ROOT/usr/bin/mockcloud-sync"
strip --strip-all --remove-section=.comment --remove-section=.note "$ROOT/usr/bin/mockcloud-sync"
install -m 0644 "$REPO/packaging/sync/mockcloud-sync-push@.service" "$ROOT/lib/systemd/system/mockcloud-sync-push@.service"
install -m 0644 "$REPO/packaging/sync/push.conf" "$ROOT/usr/share/doc/mockcloud-sync/examples/push.conf"
install -m 0755 "$REPO/packaging/sync/postinst" "$REPO/packaging/sync/postrm" "$ROOT/DEBIAN/"
install -m 0644 "$REPO/packaging/debian/copyright" "$ROOT/usr/share/doc/mockcloud-sync/copyright"
{
    printf 'mockcloud-sync (%s) stable; urgency=medium\n\n' "$VERSION"
    printf '  * Built from commit %s.\n\n' "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf ' -- MockCloud maintainers <mockcloud@example.org>  %s\n' \
        "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$ROOT/usr/share/doc/mockcloud-sync/changelog.gz"
source "$REPO/packaging/deb-finish.sh"
finish_deb "$ROOT" "$REPO/packaging/sync/control.in" mockcloud-sync
