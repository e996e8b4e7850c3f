#!/usr/bin/env bash
# The one place that installs what this repository needs: every apt-get and
# every Python virtual environment. What is there already is left alone.
#
#   packaging/deps.sh GROUP...
#
#   serve     nginx, fcgiwrap, libssl-dev, libcurl4-openssl-dev, openssl,
#             curl (make serve; the launcher's `deps` runs this)
#   test      serve's, and what the suites call: python3 (and its venv),
#             readelf/nm, valgrind, strace, dpkg-deb, systemd-analyze (make test)
#   bench     serve's, wrk, hyperfine, strace, and the venv .build/bench-venv
#             from Benchmarks/tuned/requirements.txt (uvicorn, uvloop,
#             httptools: the tuned Python peer) (make bench, make symbol-order)
#   testssl   Debian's testssl.sh (make testssl)
#   deb       dpkg-deb and strip (make deb)
#   lint      deb's and lintian (make lint-deb)
#   install   lint's, mmdebstrap, openssl, curl (make test-install)
#   api       the venv .build/venv from Tests/api/requirements.txt (Tests/api/run.sh)
#   lan       ip, and the venv .build/bench-lan-venv from
#             Benchmarks/lan/requirements.txt (make bench-lan)
#
# apt packages need root: as anyone else a missing one is named, with the
# command to run as root, and the exit status is 1. A venv is remade when
# its requirements file changed; its packages come from PyPI.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROG="packaging/deps.sh"
export PATH="$PATH:/usr/sbin:/sbin"

MISSING=()
VENVS=()

# want PACKAGE [COMMAND|/PATH]: PACKAGE is missing when the command is not
# on PATH (default: the package's name) or the file does not exist.
want() {
    local package="$1" test="${2:-$1}"
    if [[ "$test" == /* ]]; then [[ -e "$test" ]] && return 0; else command -v "$test" >/dev/null && return 0; fi
    missing "$package"
}
missing() { [[ " ${MISSING[*]} " == *" $1 "* ]] || MISSING+=("$1"); }

# Debian's python3 makes virtual environments only with python3-venv.
want_venv_module() { python3 -c 'import ensurepip' 2>/dev/null || missing python3-venv; }

# want_venv DIR REQUIREMENTS: a venv, made after apt-get (make_venv).
want_venv() {
    want python3
    want_venv_module
    VENVS+=("$1:$2")
}

group() {
    case "$1" in
        serve)
            want nginx
            want fcgiwrap
            want libssl-dev /usr/include/openssl/hmac.h
            # mockcloud-sync and MockCloudClient talk HTTPS through libcurl
            # (its OpenSSL flavour): CURLOPT_CAINFO takes the box's CA.
            [[ -f /usr/include/x86_64-linux-gnu/curl/curl.h || -f /usr/include/curl/curl.h ]] ||
                missing libcurl4-openssl-dev
            want openssl
            want curl
            ;;
        test)
            group serve
            # The acceptance tests check JSON and pick free ports with
            # python3, and read the installed programs with readelf and nm;
            # the budgets count instructions with callgrind; the fault and
            # race tests inject with strace; Tests/package builds the .deb.
            want python3
            want_venv_module
            want binutils readelf
            want binutils nm
            want valgrind
            want strace
            want dpkg dpkg-deb
            # Tests/package lints the mirror's unit (systemd-analyze verify, security).
            want systemd systemd-analyze
            ;;
        bench) group serve; want wrk; want hyperfine; want strace; want valgrind
            want_venv .build/bench-venv Benchmarks/tuned/requirements.txt ;;
        testssl) want testssl.sh testssl ;;
        deb) want dpkg dpkg-deb; want binutils strip ;;
        lint) group deb; want lintian ;;
        install) group lint; want mmdebstrap; want openssl; want curl ;;
        api) want_venv .build/venv Tests/api/requirements.txt ;;
        lan) want iproute2 ip; want_venv .build/bench-lan-venv Benchmarks/lan/requirements.txt ;;
        *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
    esac
}

# Packages must not start a system nginx on :80 or a system fcgiwrap: a
# policy-rc.d (honoured by invoke-rc.d and deb-systemd-invoke) forbids it
# while apt-get runs, where no policy is in place already; a system nginx
# that started anyway is stopped by its PID, and where systemd runs the
# units are kept from starting at boot.
apt_install() {
    local policy=/usr/sbin/policy-rc.d made_policy="" had_nginx="" i rc=0
    [[ ! -e /run/nginx.pid ]] || had_nginx=yes
    echo "$PROG: installing ${MISSING[*]}" >&2
    apt-get update -qq
    # nginx-light where the archive still has it (it pulls in the same nginx).
    for i in "${!MISSING[@]}"; do
        if [[ "${MISSING[$i]}" == nginx ]] && apt-cache show nginx-light >/dev/null 2>&1; then
            MISSING[$i]=nginx-light
        fi
    done
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        made_policy=yes
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${MISSING[@]}" || rc=$?
    [[ -z "$made_policy" ]] || { rm -f "$policy"; trap - EXIT; }
    ((rc == 0)) || { echo "$PROG: apt-get install failed (exit $rc)" >&2; exit 1; }
    if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
        local units=()
        [[ " ${MISSING[*]} " != *" nginx"* ]] || units+=(nginx.service)
        [[ " ${MISSING[*]} " != *" fcgiwrap "* ]] || units+=(fcgiwrap.service fcgiwrap.socket)
        ((${#units[@]} == 0)) || systemctl disable --now "${units[@]}" || true
    fi
    local pid comm
    if [[ -z "$had_nginx" && -s /run/nginx.pid ]]; then
        pid="$(cat /run/nginx.pid)"
        comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
        if [[ "$pid" =~ ^[0-9]+$ && "$comm" == nginx ]]; then
            echo "$PROG: stopping the system nginx the package started (pid $pid)" >&2
            kill -TERM "$pid" 2>/dev/null || true
        fi
    fi
}

# make_venv DIR REQUIREMENTS: DIR holds a venv with REQUIREMENTS installed,
# remade when the file changed since. --no-compile: Python compiles what a
# run imports when it first imports it, not every file pip installs (a
# third of the API venv's CPU).
make_venv() {
    local venv="$REPO/$1" requirements="$REPO/$2"
    [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$venv/.requirements" && return 0
    echo "$PROG: making $1 ($(grep -v '^#' "$requirements" | tr '\n' ' ')from PyPI)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile -r "$requirements" &&
        cp "$requirements" "$venv/.requirements"
}

(($# > 0)) || group usage
for name in "$@"; do group "$name"; done
if ((${#MISSING[@]} > 0)); then
    if [[ "$(id -u)" != 0 ]]; then
        echo "$PROG: missing ${MISSING[*]}. As root, run:" >&2
        echo "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${MISSING[*]/#nginx/nginx-light}" >&2
        exit 1
    fi
    command -v apt-get >/dev/null || { echo "$PROG: missing ${MISSING[*]}, and no apt-get here: install them by hand" >&2; exit 1; }
    apt_install
    MISSING=() VENVS=()
    for name in "$@"; do group "$name"; done
    ((${#MISSING[@]} == 0)) || { echo "$PROG: still missing after apt-get: ${MISSING[*]}" >&2; exit 1; }
fi
for venv in "${VENVS[@]}"; do make_venv "${venv%%:*}" "${venv#*:}"; done
