#!/usr/bin/env bash
# make test-install: the package as a new Debian user meets it.
#
# A clean Debian 12 root (mmdebstrap from deb.debian.org) in a temporary
# folder; `apt-get install ./mockcloud_*.deb` there pulls nginx and fcgiwrap;
# then, in a network namespace of its own (nothing listens on this machine's
# addresses) and a PID namespace (everything stops with it), the documented
# enable command, nginx and fcgiwrap started as their units would (fcgiwrap
# from the installed unit files and the package's drop-in, read by
# start_unit.py: www-data, /run/fcgiwrap.socket, 64 processes; nginx's
# workers as www-data), the waiting cases (8 waits held open; three
# addresses asking 16 waits each held to their share, a client that leaves
# freeing its place), the
# acceptance suite's settings and inbox cases through TLS with --cacert (no
# -k), nothing served as root, the FastCGI mode (the site switched in one
# step, the four pools started from the package's socket and service units
# by start_unit.py, the settings, inbox and waiting cases again, the pools
# as www-data, doctor on its units; then back to CGI), an upgrade to a rebuilt higher version that
# keeps the data and an edited conffile, doctor healthy, then a broken
# install (data directory root's, key file 0644) that doctor names; and the
# mirror's package, `apt-get install ./mockcloud-sync_*.deb` (its Depends from
# Debian 12), configured as docs/SYNC.md says and started as
# mockcloud-sync-push@srv-mirror-scans.service would (start_unit.py again:
# its user, EnvironmentFile=, ExecStart=), pushing scans renamed into its
# folder to the served box, stopped with SIGTERM.
# Prints how long each step took. Needs root (chroot, namespaces).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="$(tr -d '[:space:]' <"$REPO/VERSION")"
DEB="$REPO/dist/mockcloud_${VERSION}_amd64.deb"
SYNC_DEB="$REPO/dist/mockcloud-sync_${VERSION}_amd64.deb"
MIRROR="${MOCKCLOUD_TEST_MIRROR:-http://deb.debian.org/debian}"
[[ "$(id -u)" == 0 ]] || { echo "test-install: run as root (chroot and namespaces)"; exit 1; }
for f in "$DEB" "$SYNC_DEB"; do [[ -f "$f" ]] || { echo "test-install: $f is missing: make deb"; exit 1; }; done

WORK="$(mktemp -d /tmp/mci.XXXXXX)"
ROOT="$WORK/root"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
started=$SECONDS
step() { printf '== %s (%ds)\n' "$*" $((SECONDS - started)); }

# The same package with a higher version: the upgrade target.
next="${VERSION%.*}.$((${VERSION##*.} + 1))"
step "building the upgrade package $next"
MOCKCLOUD_DIST="$WORK" "$REPO/packaging/build-deb.sh" "$next" >/dev/null

step "a clean Debian 12 root (mmdebstrap, $MIRROR)"
t=$SECONDS
# policy-rc.d: no package may start a service in the root (nginx would take
# port 80 of this machine); the test starts them itself, in its namespace.
mmdebstrap --quiet --variant=apt --include=ca-certificates \
    --customize-hook='printf "#!/bin/sh\nexit 101\n" > "$1/usr/sbin/policy-rc.d"; chmod 0755 "$1/usr/sbin/policy-rc.d"' \
    bookworm "$ROOT" "$MIRROR"
BOOTSTRAP_SECONDS=$((SECONDS - t))
cp "$DEB" "$SYNC_DEB" "$ROOT/tmp/"
cp "$WORK"/mockcloud_"${next}"_amd64.deb "$ROOT/tmp/"

# in_root COMMAND...: runs in the root with /proc and /dev (a mount
# namespace of its own, so nothing stays mounted).
in_root() {
    unshare --mount --propagation private -- sh -c 'mount --rbind /dev "$0/dev" && mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$ROOT" "$@"
}

# apt_install DEB LOG PACKAGE...: `apt-get install ./DEB` in the root, its
# output added to LOG; then each PACKAGE (DEB's own, what it pulls) must be
# installed.
apt_install() {
    local deb="$1" log="$2" p
    shift 2
    in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb")" >>"$log" 2>&1 ||
        { tail -n 30 "$log"; exit 1; }
    for p in "$@"; do
        in_root dpkg-query -W -f='${Package} ${Version} ${Status}\n' "$p" | grep -q 'install ok installed' ||
            { echo "test-install: $p is not installed"; exit 1; }
    done
}

step "apt-get install ./$(basename "$DEB") (pulls nginx and fcgiwrap)"
t=$SECONDS
in_root apt-get update -qq >"$WORK/install.log" 2>&1 || { tail -n 30 "$WORK/install.log"; exit 1; }
apt_install "$DEB" "$WORK/install.log" nginx fcgiwrap mockcloud
INSTALL_SECONDS=$((SECONDS - t))

# Here, not in the scenario: its namespace has no network for apt. The
# scenario checks what it installed after the server's checks.
step "apt-get install ./$(basename "$SYNC_DEB") (the mirror's package; pulls libcurl4)"
t=$SECONDS
apt_install "$SYNC_DEB" "$WORK/install-sync.log" mockcloud-sync libcurl4
SYNC_INSTALL_SECONDS=$((SECONDS - t))

step "serving it, in a network namespace of the test's own"
# Everything below runs in fresh network and PID namespaces: 127.0.0.1:8443
# is the namespace's own, and every process ends with the namespace.
export ROOT WORK REPO next VERSION
unshare --net --pid --fork --mount --propagation private -- bash "$REPO/Tests/install/scenario.sh"
status=$?
step "done: mmdebstrap ${BOOTSTRAP_SECONDS}s, apt-get install of the package and its dependencies ${INSTALL_SECONDS}s, of mockcloud-sync ${SYNC_INSTALL_SECONDS}s, in all $((SECONDS - started))s"
exit "$status"
