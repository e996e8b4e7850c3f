#!/usr/bin/env bash
# The Debian package at unit level (part of make test; seconds): builds it
# from the installed programs into a temporary folder, checks its contents
# (layout, modes, static stripped programs, conffiles, Depends), then runs
# its maintainer scripts against an unpacked copy (DPKG_ROOT, as dpkg --root
# does): configure twice (idempotent: keys, CA and data kept), remove (data
# kept), purge (configuration and data gone). Then the devices' package,
# mockcloud-sync: its layout, the mirror box's unit (systemd-analyze verify
# and security) and its maintainer scripts. make test-install does the
# real thing in a clean Debian root.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$REPO/Tests/support/cases.sh"
work_dir mcp
VERSION="$(tr -d '[:space:]' <"$REPO/VERSION")"
# The packages' contents are what is checked here; xz is make deb's and make
# test-install's (packaging/deb-finish.sh).
export MOCKCLOUD_DEB_COMPRESSION=none

it "make deb's script builds dist-style mockcloud_<VERSION>_amd64.deb with dpkg-deb"
MOCKCLOUD_DIST="$WORK" "$REPO/packaging/build-deb.sh" >"$WORK/build.out" 2>&1 || fail "build: $(cat "$WORK/build.out")"
DEB="$WORK/mockcloud_${VERSION}_amd64.deb"
[[ -s "$DEB" ]] || fail "no $DEB"
dpkg-deb -c "$DEB" | awk '{ print $1, $2, $6 }' >"$WORK/contents"
dpkg-deb -f "$DEB" >"$WORK/control"

it "the layout: programs, admin, nginx snippet, site, http settings, fcgiwrap drop-in, docs"
for want in "-rwxr-xr-x root/root ./usr/lib/mockcloud/cgi-bin/user-settings" \
    "-rwxr-xr-x root/root ./usr/lib/mockcloud/cgi-bin/inbox" \
    "-rwxr-xr-x root/root ./usr/bin/mockcloud-admin" \
    "-rwxr-xr-x root/root ./usr/lib/mockcloud/admin/tls.sh" \
    "-rwxr-xr-x root/root ./usr/lib/mockcloud/admin/doctor.sh" \
    "-rwxr-xr-x root/root ./usr/lib/mockcloud/admin/backup.sh" \
    "-rw-r--r-- root/root ./etc/nginx/snippets/mockcloud-locations.conf" \
    "-rw-r--r-- root/root ./etc/nginx/sites-available/mockcloud" \
    "-rw-r--r-- root/root ./etc/nginx/conf.d/mockcloud.conf" \
    "-rw-r--r-- root/root ./lib/systemd/system/fcgiwrap.service.d/mockcloud.conf" \
    "-rw-r--r-- root/root ./lib/systemd/system/mockcloud-fastcgi@.socket" \
    "-rw-r--r-- root/root ./lib/systemd/system/mockcloud-fastcgi@.service" \
    "-rw-r--r-- root/root ./lib/systemd/system/mockcloud-fastcgi-waits@.socket" \
    "-rw-r--r-- root/root ./lib/systemd/system/mockcloud-fastcgi-waits@.service" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud/copyright" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud/changelog.gz" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud/README.md.gz" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud/docs/OPERATIONS.md.gz" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud/docs/API.md.gz"; do
    grep -qxF -- "$want" "$WORK/contents" || fail "missing: $want"
done
! grep -q 'sites-enabled' "$WORK/contents" || fail "the site is enabled by the package"

it "control: the version from VERSION, Depends nginx (any flavour), fcgiwrap, openssl and nothing else"
grep -qx "Version: $VERSION" "$WORK/control" || fail "$(grep Version "$WORK/control")"
grep -qx 'Depends: nginx | nginx-light | nginx-full | nginx-extras | nginx-core, fcgiwrap, openssl' "$WORK/control" ||
    fail "$(grep Depends "$WORK/control")"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles >"$WORK/conffiles"
[[ "$(sort "$WORK/conffiles" | paste -sd' ')" == "/etc/nginx/conf.d/mockcloud.conf /etc/nginx/sites-available/mockcloud /etc/nginx/snippets/mockcloud-locations.conf" ]] ||
    fail "conffiles: $(cat "$WORK/conffiles")"

ROOTDIR="$WORK/root"
dpkg-deb -x "$DEB" "$ROOTDIR"
dpkg-deb -e "$DEB" "$ROOTDIR/DEBIAN"

it "every program is static and stripped (runs on a Debian box without Swift)"
for p in usr/lib/mockcloud/cgi-bin/user-settings usr/lib/mockcloud/cgi-bin/inbox usr/bin/mockcloud-admin; do
    LC_ALL=C readelf -d "$ROOTDIR/$p" 2>&1 | grep -q 'no dynamic section' || fail "$p is dynamically linked"
    LC_ALL=C readelf -S "$ROOTDIR/$p" | grep -q '\.symtab' && fail "$p is not stripped"
done
"$ROOTDIR/usr/bin/mockcloud-admin" --help >/dev/null 2>&1 || fail "the stripped mockcloud-admin does not run"

it "the packaged mockcloud-admin finds its scripts in /usr/lib/mockcloud/admin (tls, doctor, backup)"
out="$(env -u MOCKCLOUD_ADMIN_SCRIPTS "$ROOTDIR/usr/bin/mockcloud-admin" tls --dir "$WORK/no-ca" show 2>&1)"
[[ "$out" == "mockcloud-admin tls: no CA in $WORK/no-ca: run 'mockcloud-admin tls ensure' (as root)" ]] || fail "tls: $out"
out="$("$ROOTDIR/usr/bin/mockcloud-admin" backup "$WORK/no-data" "$WORK/x.tar" 2>&1)"
[[ "$out" == "mockcloud-admin backup: $WORK/no-data is not a directory" ]] || fail "backup: $out"
"$ROOTDIR/usr/bin/mockcloud-admin" doctor --help | grep -q '^mockcloud-admin doctor: checks' || fail "doctor --help"

it "the site: port 8443, the snippet included, the upstream commented out in one place, the package's paths"
site="$ROOTDIR/etc/nginx/sites-available/mockcloud"
grep -q '^    listen 8443 ssl http2;' "$site" || fail "no listen 8443 ssl http2 (HTTP/2 for the phone's syncs)"
grep -q 'include /etc/nginx/snippets/mockcloud-locations.conf;' "$site" || fail "the snippet is not included"
[[ "$(grep -c '^ *#* *proxy_pass ' "$site")" == 1 ]] && grep -q '^    #    proxy_pass ' "$site" || fail "proxy_pass: $(grep proxy_pass "$site")"
grep -q 'set $mockcloud_cgi_bin      /usr/lib/mockcloud/cgi-bin;' "$site" || fail "cgi-bin path"
grep -q 'ssl_certificate     /etc/mockcloud/tls/cert.pem;' "$site" || fail "certificate path"
grep -q '^ExecStart=/usr/sbin/fcgiwrap -f' "$ROOTDIR/lib/systemd/system/fcgiwrap.service.d/mockcloud.conf" || fail "no -f in the drop-in"

it "the FastCGI mode's units: every socket enabled, a socket and a service per program and per program's waits (www-data, Restart=always, before nginx), systemd-analyze verify silent"
units="$ROOTDIR/lib/systemd/system"
for template in mockcloud-fastcgi mockcloud-fastcgi-waits; do
    for program in user-settings inbox; do
        [[ "$(readlink "$units/sockets.target.wants/$template@$program.socket")" == "../$template@.socket" ]] ||
            fail "$template@$program.socket is not enabled"
    done
    grep -qx 'SocketUser=www-data' "$units/$template@.socket" || fail "$template: socket owner"
    for line in User=www-data Restart=always Before=nginx.service; do
        grep -qx -- "$line" "$units/$template@.service" || fail "$template's service has no $line"
    done
    grep -q '^ExecStart=/usr/lib/mockcloud/cgi-bin/%i --fastcgi systemd ' "$units/$template@.service" ||
        fail "$template's service does not start the program on systemd's socket"
done
grep -qx 'ListenStream=/run/mockcloud/%i.sock' "$units/mockcloud-fastcgi@.socket" || fail "socket path"
grep -qx 'ListenStream=/run/mockcloud/%i-waits.sock' "$units/mockcloud-fastcgi-waits@.socket" || fail "waits socket path"
grep -qx '    set $mockcloud_fastcgi      "";' "$site" || fail "the site is not in the CGI mode by default, on one line"
if command -v systemd-analyze >/dev/null; then
    cp -n /lib/systemd/system/*.target /lib/systemd/system/*.slice "$units/" 2>/dev/null
    for template in mockcloud-fastcgi mockcloud-fastcgi-waits; do
        for program in user-settings inbox; do
            out="$(systemd-analyze verify --root="$ROOTDIR" "$template@$program.socket" "$template@$program.service" 2>&1)" &&
                [[ -z "$out" ]] || fail "verify $template@$program: $out"
        done
    done
fi

export DPKG_ROOT="$ROOTDIR"
it "postinst configure: key 0600 www-data, data www-data 0700, CA key 0600, a leaf the CA verifies"
"$ROOTDIR/DEBIAN/postinst" configure >"$WORK/postinst.out" 2>&1 || fail "postinst: $(cat "$WORK/postinst.out")"
[[ "$(stat -c '%U %a' "$ROOTDIR/etc/mockcloud/hmac.keys")" == "www-data 600" ]] || fail "hmac.keys: $(stat -c '%U %a' "$ROOTDIR/etc/mockcloud/hmac.keys")"
grep -Eq '^k[0-9]{8}:[0-9a-f]{64}$' "$ROOTDIR/etc/mockcloud/hmac.keys" || fail "hmac.keys is not one hex key line"
[[ "$(stat -c '%U %a' "$ROOTDIR/var/lib/mockcloud")" == "www-data 700" ]] || fail "data: $(stat -c '%U %a' "$ROOTDIR/var/lib/mockcloud")"
[[ "$(stat -c '%U %a' "$ROOTDIR/etc/mockcloud/tls/ca.key")" == "root 600" ]] || fail "ca.key: $(stat -c '%U %a' "$ROOTDIR/etc/mockcloud/tls/ca.key")"
openssl verify -CAfile "$ROOTDIR/etc/mockcloud/tls/ca.crt" "$ROOTDIR/etc/mockcloud/tls/cert.pem" >/dev/null 2>&1 || fail "the leaf does not verify"

it "postinst configure again (an upgrade) changes nothing: same key, CA, leaf, data"
echo '{"kept": 1}' >"$ROOTDIR/var/lib/mockcloud/probe"
sums() { sha256sum "$ROOTDIR/etc/mockcloud/hmac.keys" "$ROOTDIR/etc/mockcloud/tls/"{ca.key,ca.crt,cert.pem,key.pem} "$ROOTDIR/var/lib/mockcloud/probe"; }
before="$(sums)"
"$ROOTDIR/DEBIAN/postinst" configure >"$WORK/postinst.out" 2>&1 || fail "postinst again: $(cat "$WORK/postinst.out")"
[[ "$(sums)" == "$before" ]] || fail "changed: $(diff <(echo "$before") <(sums))"

it "postrm remove keeps configuration and data; purge removes both and the enabled link"
"$ROOTDIR/DEBIAN/postrm" remove >/dev/null 2>&1 || fail "postrm remove failed"
[[ -s "$ROOTDIR/var/lib/mockcloud/probe" && -s "$ROOTDIR/etc/mockcloud/tls/ca.key" ]] || fail "remove deleted data or keys"
mkdir -p "$ROOTDIR/etc/nginx/sites-enabled"
ln -s /etc/nginx/sites-available/mockcloud "$ROOTDIR/etc/nginx/sites-enabled/mockcloud"
"$ROOTDIR/DEBIAN/postrm" purge >/dev/null 2>&1 || fail "postrm purge failed"
[[ ! -e "$ROOTDIR/etc/mockcloud" && ! -e "$ROOTDIR/var/lib/mockcloud" ]] || fail "purge left /etc/mockcloud or /var/lib/mockcloud"
[[ ! -L "$ROOTDIR/etc/nginx/sites-enabled/mockcloud" ]] || fail "purge left the enabled site"
"$ROOTDIR/DEBIAN/postrm" purge >/dev/null 2>&1 || fail "a second purge failed"
unset DPKG_ROOT

it "make deb's second package, mockcloud-sync: the tool, the mirror's unit, an example configuration, Depends adduser"
MOCKCLOUD_DIST="$WORK" "$REPO/packaging/build-sync-deb.sh" >"$WORK/sync-build.out" 2>&1 || fail "build: $(cat "$WORK/sync-build.out")"
SYNC_DEB="$WORK/mockcloud-sync_${VERSION}_amd64.deb"
dpkg-deb -c "$SYNC_DEB" | awk '{ print $1, $2, $6 }' >"$WORK/sync-contents"
for want in "-rwxr-xr-x root/root ./usr/bin/mockcloud-sync" \
    "-rw-r--r-- root/root ./lib/systemd/system/mockcloud-sync-push@.service" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud-sync/examples/push.conf" \
    "-rw-r--r-- root/root ./usr/share/doc/mockcloud-sync/copyright"; do
    grep -qxF -- "$want" "$WORK/sync-contents" || fail "missing: $want"
done
dpkg-deb -f "$SYNC_DEB" Depends | grep -q '\badduser\b' || fail "Depends: $(dpkg-deb -f "$SYNC_DEB" Depends)"
SYNC_ROOT="$WORK/sync-root"
dpkg-deb -x "$SYNC_DEB" "$SYNC_ROOT"
dpkg-deb -e "$SYNC_DEB" "$SYNC_ROOT/DEBIAN"
[[ -x "$SYNC_ROOT/DEBIAN/postinst" && -x "$SYNC_ROOT/DEBIAN/postrm" ]] || fail "no postinst or postrm"
UNIT="$SYNC_ROOT/lib/systemd/system/mockcloud-sync-push@.service"

it "the unit runs push FOLDER --watch for the folder its instance names, with the configuration's box, CA, key and device"
grep -qx 'ExecStart=/usr/bin/mockcloud-sync push %f --watch --url ${MOCKCLOUD_SYNC_URL} --ca ${MOCKCLOUD_SYNC_CA} --user-key ${MOCKCLOUD_SYNC_USER_KEY} --device-id ${MOCKCLOUD_SYNC_DEVICE_ID} $MOCKCLOUD_SYNC_OPTIONS' "$UNIT" ||
    fail "ExecStart: $(grep ExecStart "$UNIT")"
for want in 'EnvironmentFile=/etc/mockcloud-sync/push.conf' 'EnvironmentFile=-/etc/mockcloud-sync/%i.conf' \
    'After=network-online.target' 'Wants=network-online.target' 'RequiresMountsFor=%f' 'Restart=on-failure' 'RestartPreventExitStatus=2 4 6' \
    'User=mockcloud-sync' 'ReadWritePaths=-%f' 'ProtectSystem=strict' 'NoNewPrivileges=yes'; do
    grep -qxF -- "$want" "$UNIT" || fail "no $want"
done
for name in URL CA USER_KEY DEVICE_ID OPTIONS; do
    grep -q "^MOCKCLOUD_SYNC_$name=" "$SYNC_ROOT/usr/share/doc/mockcloud-sync/examples/push.conf" ||
        fail "the example configuration has no MOCKCLOUD_SYNC_$name"
done

it "systemd-analyze verify finds nothing to say of an instance, and security rates its exposure at most 2.0 (1.4 now)"
if ! command -v systemd-analyze >/dev/null; then
    fail "no systemd-analyze (packaging/deps.sh test installs systemd)"
else
    # The targets and slices the unit names, from this system, beside it.
    cp -n /lib/systemd/system/*.target /lib/systemd/system/*.slice "$SYNC_ROOT/lib/systemd/system/" 2>/dev/null
    instance="mockcloud-sync-push@$(systemd-escape --path /srv/mirror/scans).service"
    out="$(systemd-analyze verify --root="$SYNC_ROOT" "$instance" 2>&1)" && [[ -z "$out" ]] || fail "verify: $out"
    out="$(systemd-analyze security --offline=yes --root="$SYNC_ROOT" --threshold=20 "$instance" 2>&1)" ||
        fail "security: $(grep -E 'exposure|✗' <<<"$out" | head -20)"
fi

it "postinst makes the system user once (adduser --system) and /etc/mockcloud-sync; purge removes the configuration"
STUBS="$WORK/stubs"
mkdir -p "$STUBS"
printf '#!/bin/sh\n[ "$1 $2" = "passwd mockcloud-sync" ] && [ -e "%s/user-made" ]\n' "$WORK" >"$STUBS/getent"
printf '#!/bin/sh\necho "$*" >>"%s/adduser-calls"\ntouch "%s/user-made"\n' "$WORK" "$WORK" >"$STUBS/adduser"
chmod 0755 "$STUBS/getent" "$STUBS/adduser"
for _ in 1 2; do
    DPKG_ROOT="$SYNC_ROOT" PATH="$STUBS:$PATH" "$SYNC_ROOT/DEBIAN/postinst" configure >"$WORK/sync-postinst.out" 2>&1 ||
        fail "postinst: $(cat "$WORK/sync-postinst.out")"
done
[[ "$(cat "$WORK/adduser-calls" 2>/dev/null)" == "--system --group --no-create-home --home /nonexistent --gecos MockCloud sync (mockcloud-sync-push@.service) mockcloud-sync" ]] ||
    fail "adduser calls: $(cat "$WORK/adduser-calls" 2>/dev/null)"
[[ "$(stat -c '%U %a' "$SYNC_ROOT/etc/mockcloud-sync" 2>&1)" == "root 755" ]] || fail "/etc/mockcloud-sync: $(stat -c '%U %a' "$SYNC_ROOT/etc/mockcloud-sync" 2>&1)"
echo "MOCKCLOUD_SYNC_URL=https://box:8443" >"$SYNC_ROOT/etc/mockcloud-sync/push.conf"
DPKG_ROOT="$SYNC_ROOT" "$SYNC_ROOT/DEBIAN/postrm" remove >/dev/null 2>&1 || fail "postrm remove failed"
[[ -s "$SYNC_ROOT/etc/mockcloud-sync/push.conf" ]] || fail "remove deleted the configuration"
DPKG_ROOT="$SYNC_ROOT" "$SYNC_ROOT/DEBIAN/postrm" purge >/dev/null 2>&1 || fail "postrm purge failed"
[[ ! -e "$SYNC_ROOT/etc/mockcloud-sync" ]] || fail "purge left /etc/mockcloud-sync"

summary
