#!/usr/bin/env bash
# Builds dist/mockcloud_<VERSION>_amd64.deb from the installed programs
# (cgi-bin/, `make install`) with dpkg-deb alone.
#
#   packaging/build-deb.sh [VERSION]     default: the VERSION file
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEB="$REPO/packaging/debian"
VERSION="${1:-$(tr -d '[:space:]' <"$REPO/VERSION")}"
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "build-deb: bad version '$VERSION'" >&2; exit 1; }
for p in user-settings inbox mockcloud-admin; do
    [[ -x "$REPO/cgi-bin/$p" ]] || { echo "build-deb: cgi-bin/$p is missing: run make install" >&2; exit 1; }
    file_type="$(LC_ALL=C readelf -d "$REPO/cgi-bin/$p" 2>&1 || true)"
    [[ "$file_type" == *"no dynamic section"* ]] ||
        { echo "build-deb: cgi-bin/$p is not static (it would need the Swift toolchain on the box)" >&2; exit 1; }
done

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
ROOT="$STAGE/root"
umask 022
install -d "$ROOT/DEBIAN" "$ROOT/usr/bin" "$ROOT/usr/lib/mockcloud/cgi-bin" "$ROOT/usr/lib/mockcloud/admin" \
    "$ROOT/etc/nginx/snippets" "$ROOT/etc/nginx/sites-available" "$ROOT/etc/nginx/conf.d" \
    "$ROOT/lib/systemd/system/fcgiwrap.service.d" "$ROOT/usr/share/doc/mockcloud" \
    "$ROOT/usr/share/lintian/overrides"

# Programs, stripped (the symbols are for profiling a build tree, not the box).
for p in user-settings inbox; do
    install -m 0755 "$REPO/cgi-bin/$p" "$ROOT/usr/lib/mockcloud/cgi-bin/$p"
done
install -m 0755 "$REPO/cgi-bin/mockcloud-admin" "$ROOT/usr/bin/mockcloud-admin"
strip --strip-all --remove-section=.comment --remove-section=.note "$ROOT/usr/lib/mockcloud/cgi-bin/"* "$ROOT/usr/bin/mockcloud-admin"
for s in tls doctor backup; do
    install -m 0755 "$REPO/admin/$s.sh" "$ROOT/usr/lib/mockcloud/admin/$s.sh"
done

# nginx: the snippet, the site (not enabled), the http-level settings.
install -m 0644 "$REPO/nginx/mockcloud-locations.conf" "$ROOT/etc/nginx/snippets/mockcloud-locations.conf"
install -m 0644 "$DEB/mockcloud.site" "$ROOT/etc/nginx/sites-available/mockcloud"
install -m 0644 "$REPO/nginx/mockcloud-http.conf" "$ROOT/etc/nginx/conf.d/mockcloud.conf"
install -m 0644 "$DEB/fcgiwrap-mockcloud.conf" "$ROOT/lib/systemd/system/fcgiwrap.service.d/mockcloud.conf"
# The FastCGI mode's units: a socket and a service per program, and per
# program for its waits, instances of two templates; every socket enabled
# here, statically, so that switching the mode is the site's one line
# (docs/OPERATIONS.md).
install -d "$ROOT/lib/systemd/system/sockets.target.wants"
for template in mockcloud-fastcgi mockcloud-fastcgi-waits; do
    for kind in socket service; do
        install -m 0644 "$DEB/$template@.$kind" "$ROOT/lib/systemd/system/$template@.$kind"
    done
    for program in user-settings inbox; do
        ln -s "../$template@.socket" "$ROOT/lib/systemd/system/sockets.target.wants/$template@$program.socket"
    done
done

# Documentation, as Debian wants it.
install -m 0644 "$DEB/copyright" "$ROOT/usr/share/doc/mockcloud/copyright"
# The README and the operator's pages it points to, in the same places
# relative to one another (README.md, docs/...).
install -d "$ROOT/usr/share/doc/mockcloud/docs"
for page in README.md docs/OPERATIONS.md docs/API.md; do
    install -m 0644 "$REPO/$page" "$ROOT/usr/share/doc/mockcloud/$page"
    gzip -9n "$ROOT/usr/share/doc/mockcloud/$page"
done
{
    printf 'mockcloud (%s) stable; urgency=medium\n\n' "$VERSION"
    printf '  * Built from commit %s.\n\n' "$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf ' -- MockCloud maintainers <mockcloud@example.org>  %s\n' \
        "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$ROOT/usr/share/doc/mockcloud/changelog.gz"
install -m 0644 "$DEB/lintian-overrides" "$ROOT/usr/share/lintian/overrides/mockcloud"
install -d "$ROOT/usr/share/man/man8"
gzip -9n <"$DEB/mockcloud-admin.8" >"$ROOT/usr/share/man/man8/mockcloud-admin.8.gz"
chmod 0644 "$ROOT/usr/share/man/man8/mockcloud-admin.8.gz"

# Control files.
install -m 0755 "$DEB/postinst" "$DEB/postrm" "$ROOT/DEBIAN/"
install -m 0644 "$DEB/conffiles" "$ROOT/DEBIAN/conffiles"
# Conffiles under etc/ are dpkg's to checksum, not md5sums'.
source "$REPO/packaging/deb-finish.sh"
finish_deb "$ROOT" "$DEB/control.in" mockcloud ' etc/'
