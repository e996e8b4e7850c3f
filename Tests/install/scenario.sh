#!/usr/bin/env bash
# The served part of Tests/install/run.sh, inside fresh network, PID and mount
# namespaces (nothing here is seen from outside, and all ends with it).
# ROOT: the Debian 12 root with the package and mockcloud-sync installed;
# WORK; REPO; next.
set -uo pipefail
failures=0
check() { if "$@"; then :; else echo "FAIL  $CHECK"; failures=$((failures + 1)); return 1; fi; }
say() { CHECK="$*"; printf -- '-- %s\n' "$*"; }

mount -t proc proc /proc
ip link set lo up || { echo "cannot bring up lo"; exit 1; }
mount --rbind /dev "$ROOT/dev"
mount -t proc proc "$ROOT/proc"
mkdir -p "$ROOT/run"
mount -t tmpfs -o mode=0755 tmpfs "$ROOT/run"
in_root() { chroot "$ROOT" "$@"; }
# within TENTHS COMMAND...: true once COMMAND succeeds, tried every 0.1 s at
# most TENTHS times (a guard against a hang, not a time limit).
within() {
    local tries="$1" i
    shift
    for ((i = 0; i < tries; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}

# fcgiwrap as systemd would start it from the installed fcgiwrap.socket and
# fcgiwrap.service with its drop-ins, the package's among them
# (Tests/install/start_unit.py reads them: the socket handed over as fd 3,
# the unit's user, environment and command line).
start_fcgiwrap() {
    python3 "$REPO/Tests/install/start_unit.py" "$ROOT" </dev/null >>"$WORK/fcgiwrap.log" 2>&1 &
    within 100 test -S "$ROOT/run/fcgiwrap.socket" && return 0
    echo "fcgiwrap did not start: $(cat "$WORK/fcgiwrap.log")"
    return 1
}
# nginx as nginx.service would: `nginx` (master root, workers www-data from
# Debian's nginx.conf).
start_nginx() { in_root /usr/sbin/nginx; }
wait_https() {
    within 100 curl -s --noproxy '*' --cacert "$ROOT/etc/mockcloud/tls/ca.crt" -o /dev/null https://127.0.0.1:8443/user/settings
}
ca="$ROOT/etc/mockcloud/tls/ca.crt"
get() { curl -s --noproxy '*' --cacert "$ca" -H "X-User-Key: $1" "https://127.0.0.1:8443$2"; }

say "the package's layout: programs, admin, nginx files, /etc/mockcloud, /var/lib/mockcloud www-data 0700"
check test -x "$ROOT/usr/lib/mockcloud/cgi-bin/user-settings"
check test -x "$ROOT/usr/lib/mockcloud/cgi-bin/inbox"
check test -x "$ROOT/usr/bin/mockcloud-admin"
check test -f "$ROOT/etc/nginx/snippets/mockcloud-locations.conf"
check test -f "$ROOT/etc/nginx/sites-available/mockcloud"
check test ! -e "$ROOT/etc/nginx/sites-enabled/mockcloud"
check test -f "$ROOT/etc/nginx/conf.d/mockcloud.conf"
check [ "$(stat -c '%U %a' "$ROOT/var/lib/mockcloud")" == "www-data 700" ]
check [ "$(stat -c '%U %a' "$ROOT/etc/mockcloud/tls/ca.key")" == "root 600" ]
check [ "$(stat -c '%U %a' "$ROOT/etc/mockcloud/hmac.keys")" == "www-data 600" ]

say "mockcloud-admin runs on plain Debian 12 (no Swift there)"
check in_root sh -c 'exec mockcloud-admin --help >/dev/null'  # the redirect inside: on check it would hide check's FAIL line

say "enable the site with the README's command; nginx -t passes"
check in_root ln -s /etc/nginx/sites-available/mockcloud /etc/nginx/sites-enabled/mockcloud
check in_root nginx -t -q

say "start fcgiwrap and nginx as their units would"
check start_fcgiwrap && check start_nginx && check wait_https || { tail -n 20 "$ROOT/var/log/nginx/error.log"; exit 1; }

head -n 1 "$WORK/fcgiwrap.log"
say "fcgiwrap serves side by side: as many processes as the package's drop-in asks for"
sleep 0.5
fcgiwraps="$(for p in /proc/[0-9]*; do [[ "$(cat "$p/comm" 2>/dev/null)" == fcgiwrap ]] && echo "$p"; done | wc -l)"
echo "   fcgiwrap processes: $fcgiwraps"
check [ "$fcgiwraps" -ge 65 ]    # the parent and -c 64

say "the acceptance suite's settings, inbox and waiting cases (8 waits held open, an ordinary request prompt beside them; three addresses asking 16 waits each get their share, a fourth's wait is held and answered; a client that leaves frees its place), through TLS with --cacert (no -k)"
MOCKCLOUD_TEST_BASE=https://127.0.0.1:8443 MOCKCLOUD_TEST_CACERT="$ca" MOCKCLOUD_TEST_DATA="$ROOT/var/lib/mockcloud" \
    "$REPO/Tests/acceptance/run.sh" "$REPO/Tests/acceptance/cases/settings.sh" "$REPO/Tests/acceptance/cases/inbox.sh" \
    "$REPO/Tests/acceptance/cases/waiting.sh" "$REPO/Tests/acceptance/cases/waitshare.sh" >"$WORK/acceptance.out" 2>&1
acceptance=$?
grep -E 'slowest of 5|passed, ' "$WORK/acceptance.out"
grep '^FAIL' -A3 "$WORK/acceptance.out"
check [ "$acceptance" == 0 ]

say "a served request runs nothing as root: nginx workers, fcgiwrap, programs (ps during requests)"
# A sampler reads /proc (this PID namespace: a handful of processes) over and
# over while requests run, until it has seen a program in the middle of one.
cat >"$WORK/sampler.py" <<'PYTHON'
import os, sys
stop, seen = sys.argv[1], {}
while not os.path.exists(stop):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = open(f"/proc/{pid}/status").read().split("\n")
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        name = status[0].split()[1]
        uid = next(line.split()[2] for line in status if line.startswith("Uid:"))
        # nginx's master alone is root (it binds 8443 and reads the keys).
        if name in ("nginx", "fcgiwrap", "inbox", "user-settings") and b"master" not in cmdline:
            seen[f"{name}:{uid}"] = seen.get(f"{name}:{uid}", 0) + 1
    if any(k.startswith(("inbox:", "user-settings:")) for k in seen) and sum(seen.values()) > 50:
        open(stop + ".program", "w").close()
print(" ".join(f"{k}={v}" for k, v in sorted(seen.items())))
PYTHON
python3 "$WORK/sampler.py" "$WORK/sampler.stop" >"$WORK/sampler.out" 2>&1 &
sampler=$!
for ((i = 0; i < 2000; i++)); do
    [[ -e "$WORK/sampler.stop.program" ]] && break
    get ps-check /inbox >/dev/null
    get ps-check /user/settings >/dev/null
done
touch "$WORK/sampler.stop"
wait "$sampler"
seen="$(cat "$WORK/sampler.out")"
echo "   seen (name:uid=samples): $seen"
www="$(in_root id -u www-data)"
CHECK="a program was seen in the middle of a request"
check grep -Eq '(inbox|user-settings):' <<<"$seen"
for entry in $seen; do
    entry="${entry%=*}"
    CHECK="runs as uid ${entry#*:}, not www-data ($www): $entry"
    check [ "${entry#*:}" == "$www" ]
done
CHECK="files the programs wrote are www-data's"
check [ -z "$(find "$ROOT/var/lib/mockcloud" ! -user "$(stat -c %u "$ROOT/var/lib/mockcloud")" -print -quit)" ]
check [ "$(stat -c %U "$ROOT/var/lib/mockcloud/user_settings")" == www-data ]

say "doctor on the healthy install: exit 0"
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
cat "$WORK/doctor.out"
check [ "$doctor" == 0 ]

# mode VALUE: the one step docs/OPERATIONS.md gives to switch the mode:
# the site's $mockcloud_fastcgi line, then nginx -t and a reload.
mode() {
    sed -i "s|^\( *set \$mockcloud_fastcgi *\).*|\1\"$1\";|" "$ROOT/etc/nginx/sites-available/mockcloud" &&
        in_root nginx -t -q && in_root nginx -s reload
}
# start_pool TEMPLATE PROGRAM: a pool as systemd would start it from the
# installed units (TEMPLATE@.socket and .service, read by start_unit.py:
# the socket in /run/mockcloud, www-data, the workers).
start_pool() {
    local sock="$2.sock"
    [[ "$1" != *-waits ]] || sock="$2-waits.sock"
    python3 "$REPO/Tests/install/start_unit.py" "$ROOT" "$1@.service" "$2" </dev/null >>"$WORK/pool-$1-$2.log" 2>&1 &
    within 100 test -S "$ROOT/run/mockcloud/$sock" && return 0
    echo "the $1@$2 pool did not start: $(cat "$WORK/pool-$1-$2.log")"
    return 1
}

say "the FastCGI mode: its units installed (a socket and a service per program, and per program for its waits), the site switched in one step, the pools started as systemd would"
for template in mockcloud-fastcgi mockcloud-fastcgi-waits; do
    check test -f "$ROOT/lib/systemd/system/$template@.socket"
    check test -f "$ROOT/lib/systemd/system/$template@.service"
    for program in user-settings inbox; do
        check test -L "$ROOT/lib/systemd/system/sockets.target.wants/$template@$program.socket"
        check start_pool "$template" "$program"
    done
done
check mode /run/mockcloud
head -n 1 "$WORK/pool-mockcloud-fastcgi-user-settings.log"
check [ "$(stat -c '%U %a' "$ROOT/run/mockcloud/inbox.sock")" == "www-data 660" ]
check [ "$(stat -c '%U %a' "$ROOT/run/mockcloud/inbox-waits.sock")" == "www-data 660" ]

say "the FastCGI mode: the acceptance suite's settings, inbox and waiting cases through TLS with --cacert, on an emptied data directory (the cases expect the keys they write to be new)"
find "$ROOT/var/lib/mockcloud" -mindepth 1 -delete
MOCKCLOUD_TEST_BASE=https://127.0.0.1:8443 MOCKCLOUD_TEST_CACERT="$ca" MOCKCLOUD_TEST_DATA="$ROOT/var/lib/mockcloud" \
    "$REPO/Tests/acceptance/run.sh" "$REPO/Tests/acceptance/cases/settings.sh" "$REPO/Tests/acceptance/cases/inbox.sh" \
    "$REPO/Tests/acceptance/cases/waiting.sh" >"$WORK/acceptance-fastcgi.out" 2>&1
acceptance=$?
grep -E 'passed, ' "$WORK/acceptance-fastcgi.out"
grep '^FAIL' -A3 "$WORK/acceptance-fastcgi.out"
# What the pools said, when a case failed (each pool's log: start_unit.py's
# line, then the program's stderr).
((acceptance == 0)) || tail -n 15 "$WORK"/pool-*.log
check [ "$acceptance" == 0 ]

say "the FastCGI mode: the pools serve as www-data, and doctor checks their units: exit 0"
for comm in user-settings inbox; do
    for p in /proc/[0-9]*; do
        [[ "$(cat "$p/comm" 2>/dev/null)" == "$comm" ]] || continue
        CHECK="the $comm pool's process ${p#/proc/} runs as www-data"
        check [ "$(awk '/^Uid:/ { print $2 }' "$p/status")" == "$www" ]
    done
done
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
cat "$WORK/doctor.out"
CHECK="doctor in the FastCGI mode: exit 0"
check [ "$doctor" == 0 ]

say "the FastCGI mode: a socket missing (its unit stopped) is named by doctor, exit 1"
mv "$ROOT/run/mockcloud/inbox.sock" "$ROOT/run/mockcloud/inbox.sock.away"
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
mv "$ROOT/run/mockcloud/inbox.sock.away" "$ROOT/run/mockcloud/inbox.sock"
cat "$WORK/doctor.out"
check [ "$doctor" == 1 ]
check grep -q 'systemctl enable --now mockcloud-fastcgi@inbox.socket' "$WORK/doctor.out"

say "back to the CGI mode in the same one step"
check mode ""
check [ "$(get ps-check /user/settings >/dev/null; curl -s --noproxy '*' --cacert "$ca" -o /dev/null -w '%{http_code}' -H 'X-User-Key: back' https://127.0.0.1:8443/user/settings)" == 404 ]

say "data written on $VERSION, and an edited conffile, before the upgrade"
put() { curl -s --noproxy '*' --cacert "$ca" -o /dev/null -w '%{http_code}' -X PUT -H "X-User-Key: $1" "${@:3}" "https://127.0.0.1:8443$2"; }
check [ "$(put upgrade /user/settings -d '{"updatedAt":"2026-01-01T00:00:00Z","kept":true}')" == 200 ]
check [ "$(put upgrade /inbox/before-upgrade -H 'X-Sync-Version: 3' -d '{"kg":70.1}')" == 201 ]
echo '# edited by the operator' >>"$ROOT/etc/nginx/sites-available/mockcloud"
ca_before="$(sha256sum <"$ca")"

say "apt-get install ./mockcloud_${next}_amd64.deb (the upgrade), with the service running"
in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold /tmp/mockcloud_${next}_amd64.deb" \
    >"$WORK/upgrade.log" 2>&1 || { tail -n 20 "$WORK/upgrade.log"; check false; }
check [ "$(in_root dpkg-query -W -f='${Version}' mockcloud)" == "$next" ]

say "after the upgrade: the data, the edited conffile and the CA are kept"
check grep -q '"kept": true' <(get upgrade /user/settings)
check grep -q '"kg": 70.1' <(get upgrade /inbox/before-upgrade)
check grep -q '^# edited by the operator' "$ROOT/etc/nginx/sites-available/mockcloud"
check [ "$(sha256sum <"$ca")" == "$ca_before" ]
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
CHECK="doctor after the upgrade: exit 0"
cat "$WORK/doctor.out"
check [ "$doctor" == 0 ]

say "a broken install (data directory root's, key file 0644): doctor names both, exit 1"
in_root chown root:root /var/lib/mockcloud
in_root chmod 0644 /etc/mockcloud/hmac.keys
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
cat "$WORK/doctor.out"
check [ "$doctor" == 1 ]
check grep -q '/var/lib/mockcloud is root 700' "$WORK/doctor.out"
check grep -q 'chown -R www-data:www-data /var/lib/mockcloud' "$WORK/doctor.out"
check grep -q '/etc/mockcloud/hmac.keys is www-data 644' "$WORK/doctor.out"
check grep -q 'chmod 0600 /etc/mockcloud/hmac.keys' "$WORK/doctor.out"

say "the fixes doctor printed make it healthy again"
in_root sh -c "$(sed -n 's/^    fix: //p' "$WORK/doctor.out" | grep -v 'error.log' | paste -sd';')" >/dev/null 2>&1
in_root mockcloud-admin doctor >"$WORK/doctor.out" 2>&1
doctor=$?
check [ "$doctor" == 0 ] || cat "$WORK/doctor.out"

say "the mirror's package (installed by run.sh): the tool, its unit, the user mockcloud-sync, /etc/mockcloud-sync root 755; the tool runs on plain Debian 12 (no Swift there)"
check test -x "$ROOT/usr/bin/mockcloud-sync"
check test -f "$ROOT/lib/systemd/system/mockcloud-sync-push@.service"
sync_uid="$(in_root id -u mockcloud-sync)"
check [ -n "$sync_uid" ]
check [ "$(stat -c '%U %a' "$ROOT/etc/mockcloud-sync")" == "root 755" ]
check in_root sh -c 'exec mockcloud-sync --help >/dev/null'

say "configured as docs/SYNC.md tells the operator: push.conf from the example (this box, its CA, a user key, a device id); /srv/mirror/scans the group mockcloud-sync's, 2770"
conf="$ROOT/etc/mockcloud-sync/push.conf"
in_root cp /usr/share/doc/mockcloud-sync/examples/push.conf /etc/mockcloud-sync/push.conf
cp "$ca" "$ROOT/etc/mockcloud-sync/mockcloud-ca.crt"
sed -i -e 's|^MOCKCLOUD_SYNC_URL=.*|MOCKCLOUD_SYNC_URL=https://127.0.0.1:8443|' \
    -e 's|^MOCKCLOUD_SYNC_USER_KEY=.*|MOCKCLOUD_SYNC_USER_KEY=mirror|' \
    -e 's|^MOCKCLOUD_SYNC_DEVICE_ID=.*|MOCKCLOUD_SYNC_DEVICE_ID=mirror-box|' "$conf"
check grep -qx 'MOCKCLOUD_SYNC_URL=https://127.0.0.1:8443' "$conf"
check grep -qx 'MOCKCLOUD_SYNC_CA=/etc/mockcloud-sync/mockcloud-ca.crt' "$conf"
check grep -qx 'MOCKCLOUD_SYNC_USER_KEY=mirror' "$conf"
check grep -qx 'MOCKCLOUD_SYNC_DEVICE_ID=mirror-box' "$conf"
scans=/srv/mirror/scans
check in_root sh -c "mkdir -p $scans && chgrp mockcloud-sync $scans && chmod 2770 $scans"

instance="$(systemd-escape --path "$scans")"
say "mockcloud-sync-push@$instance.service started as systemd would (start_unit.py: the installed unit, push.conf, User=, %f)"
# This process becomes the tool (the execs keep its PID); it ends with the
# PID namespace at the latest.
python3 "$REPO/Tests/install/start_unit.py" "$ROOT" mockcloud-sync-push@.service "$instance" \
    </dev/null >"$WORK/sync.out" 2>"$WORK/sync.err" &
sync_pid=$!
# ended PID: gone, or a zombie waiting for `wait`.
ended() { [[ ! -e "/proc/$1" || "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" == Z ]]; }
# watching_or_ended: the tool said it watches, or it has exited.
watching_or_ended() { grep -q 'watching for new files' "$WORK/sync.out" || ended "$sync_pid"; }
within 600 watching_or_ended
head -n 2 "$WORK/sync.out"
check grep -q 'watching for new files' "$WORK/sync.out" || cat "$WORK/sync.err"

# scan ID JSON: written as a scanner does, to a hidden name renamed in.
scan() { printf '%s' "$2" >"$ROOT$scans/.tmp-x" && mv "$ROOT$scans/.tmp-x" "$ROOT$scans/$1.json"; }
# box_holds ID PATTERN: GET /inbox/ID answers 200 with PATTERN in it.
box_holds() {
    [[ "$(curl -s --noproxy '*' --cacert "$ca" -o "$WORK/scan.json" -w '%{http_code}' -H 'X-User-Key: mirror' \
        "https://127.0.0.1:8443/inbox/$1")" == 200 ]] && grep -q "$2" "$WORK/scan.json"
}
# box_has ID PATTERN: box_holds, polled for about 60 s at most.
box_has() {
    within 600 box_holds "$1" "$2" && return 0
    cat "$WORK/scan.json" "$WORK/sync.err"
    return 1
}

say "a scan renamed into the folder reaches the box: GET /inbox/scan-1 answers 200 (user key, --cacert), version 1, from the device id"
scan scan-1 '{"syncVersion": 1, "page": 1}'
check box_has scan-1 '"version": 1,' && check grep -q '"source": "mirror-box"' "$WORK/scan.json"

say "the tool runs as the user mockcloud-sync (/proc/PID/status), and its record in the folder is that user's"
grep '^Uid:' "/proc/$sync_pid/status"
check [ "$(awk '/^Uid:/ { print $2 "," $3 }' "/proc/$sync_pid/status")" == "$sync_uid,$sync_uid" ]
check [ "$(in_root stat -c %U "$scans/.mockcloud-sync-pushed")" == mockcloud-sync ]  # names from the root's /etc/passwd

say "a second scan with a higher syncVersion replaces it on the box"
scan scan-1 '{"syncVersion": 2, "page": 2}'
check box_has scan-1 '"version": 2,' && check grep -q '"page": 2' "$WORK/scan.json"

say "SIGTERM (by PID) ends the tool: exit 0, its last line says what it sent"
kill -TERM "$sync_pid"
within 600 ended "$sync_pid" || kill -KILL "$sync_pid"
wait "$sync_pid"
sync_status=$?
tail -n 1 "$WORK/sync.out"
check [ "$sync_status" == 0 ] || cat "$WORK/sync.err"
check grep -Eq '^push --watch: stopped; 2 sent in [0-9]+ requests since it started: 2 stored' <(tail -n 1 "$WORK/sync.out")

say "remove keeps data and configuration; purge removes them (the purge policy of docs/OPERATIONS.md)"
in_root /usr/sbin/nginx -s stop
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq mockcloud' >"$WORK/remove.log" 2>&1 || { tail "$WORK/remove.log"; check false; }
check test ! -e "$ROOT/usr/lib/mockcloud/cgi-bin/user-settings"
check test -s "$ROOT/var/lib/mockcloud/user_settings/upgrade.json"
check test -s "$ROOT/etc/mockcloud/tls/ca.key"
check in_root nginx -t -q
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq mockcloud' >"$WORK/purge.log" 2>&1 || { tail "$WORK/purge.log"; check false; }
check test ! -e "$ROOT/etc/mockcloud"
check test ! -e "$ROOT/var/lib/mockcloud"
check test ! -e "$ROOT/etc/nginx/sites-enabled/mockcloud"
check in_root nginx -t -q

if ((failures > 0)); then
    echo "test-install: $failures check(s) failed"
    exit 1
fi
echo "test-install: every check passed"
