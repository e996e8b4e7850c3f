#!/usr/bin/env bash
# MockCloud launcher: nginx (TLS, limits, routing) + fcgiwrap + cgi-bin/*.
#
#   mockcloud-nginx.sh deps [bench]  install what is missing (apt-get, as root)
#   mockcloud-nginx.sh serve         run in the foreground until Ctrl-C / SIGTERM
#   mockcloud-nginx.sh start         start in the background, return once ready
#   mockcloud-nginx.sh stop          stop what `start` recorded in the run dir
#
# Settings (environment):
#   MOCKCLOUD_PORT      8443
#   MOCKCLOUD_HOST      127.0.0.1 (0.0.0.0 serves the LAN)
#   MOCKCLOUD_DATA      ./data    data directory (created 0700)
#   MOCKCLOUD_RUN       ./run     certificate, nginx.conf, logs, pids, socket
#   MOCKCLOUD_CGI_BIN   <repo>/cgi-bin
#   MOCKCLOUD_UPSTREAM  e.g. http://127.0.0.1:8000: every other path goes there
#   MOCKCLOUD_HMAC_KEYS, MOCKCLOUD_HMAC_REQUIRE,
#   MOCKCLOUD_TOKENS                              passed to the programs
#   MOCKCLOUD_INBOX_MAX_MESSAGES, MOCKCLOUD_INBOX_TOMBSTONE_HORIZON,
#   MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS           passed to the inbox program
#   MOCKCLOUD_CERT + MOCKCLOUD_CERT_KEY            a given certificate; without
#                       them a self-signed one is made once in the run dir.
set -euo pipefail

readonly NGINX_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REPO_DIR="$(cd "$NGINX_DIR/.." && pwd)"
readonly PROG="mockcloud-nginx.sh"
export PATH="$PATH:/usr/sbin:/sbin"

say() { printf '%s\n' "$*"; }
warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { warn "$*"; exit 1; }

# ---------------------------------------------------------------- deps

# apt packages this project needs, for what is missing on this machine.
missing_packages() {
    local bench="$1" pkgs=()
    [[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || pkgs+=(nginx)
    [[ -x /usr/sbin/fcgiwrap ]] || command -v fcgiwrap >/dev/null || pkgs+=(fcgiwrap)
    [[ -f /usr/include/openssl/hmac.h ]] || dpkg -s libssl-dev >/dev/null 2>&1 || pkgs+=(libssl-dev)
    command -v openssl >/dev/null || pkgs+=(openssl)
    command -v curl >/dev/null || pkgs+=(curl)
    # The acceptance tests check JSON and pick free ports with it, and read
    # the installed programs with readelf and nm.
    command -v python3 >/dev/null || pkgs+=(python3)
    { command -v readelf >/dev/null && command -v nm >/dev/null; } || pkgs+=(binutils)
    # Tests/budget/instructions.sh counts a request's instructions with
    # callgrind; Benchmarks/symbol-order.sh profiles the programs with it.
    command -v valgrind >/dev/null || pkgs+=(valgrind)
    if [[ "$bench" == bench ]]; then
        command -v wrk >/dev/null || pkgs+=(wrk)
        command -v hyperfine >/dev/null || pkgs+=(hyperfine)
    fi
    printf '%s\n' "${pkgs[@]}"
}

cmd_deps() {
    local bench="${1:-}"
    [[ -z "$bench" || "$bench" == bench ]] || die "usage: $PROG deps [bench]"
    local pkgs
    mapfile -t pkgs < <(missing_packages "$bench" | sed '/^$/d')
    ((${#pkgs[@]} > 0)) || return 0

    if [[ "$(id -u)" != 0 ]]; then
        warn "missing: ${pkgs[*]}. As root, run:"
        say "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkgs[*]/#nginx/nginx-light}" >&2
        exit 1
    fi
    command -v apt-get >/dev/null || die "missing: ${pkgs[*]}, and no apt-get here: install them by hand"

    say "$PROG: installing ${pkgs[*]}" >&2
    apt-get update
    # nginx-light where the archive still has it (it pulls in the same nginx).
    local i
    for i in "${!pkgs[@]}"; do
        if [[ "${pkgs[$i]}" == nginx ]] && apt-cache show nginx-light >/dev/null 2>&1; then
            pkgs[$i]=nginx-light
        fi
    done

    # Packages must not start a system nginx on :80 or a system fcgiwrap:
    # policy-rc.d (honoured by invoke-rc.d and deb-systemd-invoke) forbids it
    # while we install, when no policy is in place already.
    local policy=/usr/sbin/policy-rc.d made_policy=""
    local had_pid=""
    [[ -e /run/nginx.pid ]] && had_pid=yes
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        made_policy=yes
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    local rc=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" || rc=$?
    if [[ -n "$made_policy" ]]; then
        rm -f "$policy"
        trap - EXIT
    fi
    ((rc == 0)) || die "apt-get install failed (exit $rc)"

    # Where systemd runs, keep the packages' units from starting at boot.
    if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
        local units=()
        [[ " ${pkgs[*]} " == *" nginx"* ]] && units+=(nginx.service)
        [[ " ${pkgs[*]} " == *" fcgiwrap "* ]] && units+=(fcgiwrap.service fcgiwrap.socket)
        ((${#units[@]} == 0)) || systemctl disable --now "${units[@]}" || true
    fi
    # A system nginx that started anyway (no policy honoured): stop it by PID.
    if [[ -z "$had_pid" && -s /run/nginx.pid ]]; then
        local pid
        pid="$(cat /run/nginx.pid)"
        if is_process "$pid" nginx; then
            warn "stopping the system nginx the package started (pid $pid)"
            stop_pid_tree "$pid" nginx
        fi
    fi
    local left
    left="$(missing_packages "$bench" | sed '/^$/d' | tr '\n' ' ')"
    [[ -z "$left" ]] || die "still missing after apt-get: $left"
}

# ---------------------------------------------------------------- processes

# True when PID runs (exited but unreaped counts as gone).
alive() {
    local stat
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
    stat="${stat##*) }"
    [[ "${stat%% *}" != Z ]]
}

# True when PID runs and its command name is NAME (a recorded PID may have
# been reused by something else since).
is_process() {
    local pid="$1" name="$2" comm
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || return 1
    [[ "$comm" == "$name" ]] && alive "$pid"
}

# PID's descendants, from one pass over /proc (procps may be absent).
descendants_of() {
    local stat line rest
    for stat in /proc/[0-9]*/stat; do
        { read -r line <"$stat"; } 2>/dev/null || continue
        rest="${line##*) }"    # after "pid (comm) ": "state ppid ..."
        rest="${rest#* }"
        printf '%s %s\n' "${line%% *}" "${rest%% *}"
    done | awk -v root="$1" '
        { parent[$1] = $2 }
        END {
            for (pid in parent) {
                p = parent[pid]
                for (depth = 0; p != "" && p != 0 && depth < 64; depth++) {
                    if (p == root) { print pid; break }
                    p = parent[p]
                }
            }
        }'
}

# Waits up to 10 s until none of the PIDs runs; false if some still do.
wait_gone() {
    local i p running
    for ((i = 0; i < 100; i++)); do
        running=""
        for p in "$@"; do alive "$p" && running=yes; done
        [[ -n "$running" ]] || return 0
        sleep 0.1
    done
    return 1
}

# Stops PID (when it is NAME) and every process below it, by PID. The parent
# goes first, so that fcgiwrap cannot fork replacements for its children.
# SIGTERM, then SIGKILL for whatever is still there after 10 s.
stop_pid_tree() {
    local pid="$1" name="$2" others p
    is_process "$pid" "$name" || return 0
    others="$(descendants_of "$pid")"
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pid" || { warn "$name (pid $pid) ignored SIGTERM; sending SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
    # Reap it when it is this shell's own child (fcgiwrap under serve).
    wait "$pid" 2>/dev/null || true
    for p in $others; do kill -TERM "$p" 2>/dev/null || true; done
    if ! wait_gone $others; then
        for p in $others; do alive "$p" && kill -KILL "$p" 2>/dev/null || true; done
    fi
}

# ---------------------------------------------------------------- settings

# An absolute path, without resolving symlinks or requiring it to exist.
absolute() { realpath -m -s -- "$1"; }

# nginx reads these inside double quotes: refuse what would break out.
check_config_text() {
    local what="$1" value="$2"
    if [[ "$value" =~ [\"\$\\\;\{\}\'[:cntrl:]] ]]; then
        die "$what contains a character nginx config cannot carry (\" \$ \\ ; { } ' or a control character): $value"
    fi
}

load_settings() {
    local name
    PORT="${MOCKCLOUD_PORT:-8443}"
    HOST="${MOCKCLOUD_HOST:-127.0.0.1}"
    DATA="$(absolute "${MOCKCLOUD_DATA:-./data}")"
    RUN="$(absolute "${MOCKCLOUD_RUN:-./run}")"
    CGI_BIN="$(absolute "${MOCKCLOUD_CGI_BIN:-$REPO_DIR/cgi-bin}")"
    UPSTREAM="${MOCKCLOUD_UPSTREAM:-}"
    HMAC_KEYS="${MOCKCLOUD_HMAC_KEYS:-}"
    HMAC_REQUIRE="${MOCKCLOUD_HMAC_REQUIRE:-}"
    [[ -z "$HMAC_KEYS" ]] || HMAC_KEYS="$(absolute "$HMAC_KEYS")"
    TOKENS="${MOCKCLOUD_TOKENS:-}"
    [[ -z "$TOKENS" ]] || TOKENS="$(absolute "$TOKENS")"
    SOCKET="$RUN/fcgiwrap.sock"

    [[ "$PORT" =~ ^[0-9]+$ ]] && ((PORT >= 1 && PORT <= 65535)) ||
        die "MOCKCLOUD_PORT must be a port number 1-65535, not '$PORT'"
    [[ "$HOST" =~ ^[A-Za-z0-9.:-]+$ ]] ||
        die "MOCKCLOUD_HOST must be an address such as 127.0.0.1, 0.0.0.0 or ::1, not '$HOST'"
    if [[ -n "$UPSTREAM" ]]; then
        UPSTREAM="${UPSTREAM%/}"
        local upstream_shape='^https?://[][A-Za-z0-9.:_-]+$'
        [[ "$UPSTREAM" =~ $upstream_shape ]] ||
            die "MOCKCLOUD_UPSTREAM must be scheme://host:port with no path (it gets every path unchanged), not '$UPSTREAM'"
    fi
    [[ -z "$HMAC_REQUIRE" || "$HMAC_REQUIRE" =~ ^[A-Za-z0-9]+$ ]] ||
        die "MOCKCLOUD_HMAC_REQUIRE must be 1 or 0, not '$HMAC_REQUIRE'"
    INBOX_MAX_MESSAGES="${MOCKCLOUD_INBOX_MAX_MESSAGES:-}"
    INBOX_TOMBSTONE_HORIZON="${MOCKCLOUD_INBOX_TOMBSTONE_HORIZON:-}"
    INBOX_COMPACT_MIN_RECORDS="${MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS:-}"
    for name in INBOX_MAX_MESSAGES INBOX_TOMBSTONE_HORIZON INBOX_COMPACT_MIN_RECORDS; do
        [[ "${!name}" =~ ^[0-9]*$ ]] || die "MOCKCLOUD_$name must be a whole number, not '${!name}'"
    done
    for name in DATA RUN CGI_BIN HMAC_KEYS TOKENS; do check_config_text "MOCKCLOUD_$name" "${!name}"; done
    check_config_text "the nginx/ directory's path" "$NGINX_DIR"
    # sun_path holds 108 bytes including the terminating NUL.
    if ((${#SOCKET} > 107)); then
        die "MOCKCLOUD_RUN is too long for a unix socket path ($SOCKET is ${#SOCKET} bytes, the limit is 107): use a shorter MOCKCLOUD_RUN, e.g. \$(mktemp -d /tmp/mc.XXXX)"
    fi

    if [[ "$HOST" == *:* ]]; then
        LISTEN="[$HOST]:$PORT"
    else
        LISTEN="$HOST:$PORT"
    fi
    # Where this machine itself reaches the server.
    case "$HOST" in
        0.0.0.0) PROBE="127.0.0.1:$PORT" ;;
        ::) PROBE="[::1]:$PORT" ;;
        *) PROBE="$LISTEN" ;;
    esac
}

# ---------------------------------------------------------------- certificate

# subjectAltName entries for the self-signed certificate.
wanted_san() {
    local entries=("IP:127.0.0.1" "DNS:localhost") addr
    case "$HOST" in
        0.0.0.0 | ::)
            entries+=("IP:::1")
            for addr in $(hostname -I 2>/dev/null || true); do entries+=("IP:$addr"); done
            ;;
        *[!0-9.]* | *:*)
            if [[ "$HOST" == *:* ]]; then entries+=("IP:$HOST"); else entries+=("DNS:$HOST"); fi
            ;;
        *) entries+=("IP:$HOST") ;;
    esac
    printf '%s\n' "${entries[@]}" | awk '!seen[$0]++' | paste -sd, -
}

ensure_certificate() {
    if [[ -n "${MOCKCLOUD_CERT:-}" || -n "${MOCKCLOUD_CERT_KEY:-}" ]]; then
        [[ -n "${MOCKCLOUD_CERT:-}" && -n "${MOCKCLOUD_CERT_KEY:-}" ]] ||
            die "set both MOCKCLOUD_CERT and MOCKCLOUD_CERT_KEY, or neither"
        CERT="$(absolute "$MOCKCLOUD_CERT")"
        CERT_KEY="$(absolute "$MOCKCLOUD_CERT_KEY")"
        [[ -r "$CERT" ]] || die "MOCKCLOUD_CERT: cannot read $CERT"
        [[ -r "$CERT_KEY" ]] || die "MOCKCLOUD_CERT_KEY: cannot read $CERT_KEY"
        check_config_text MOCKCLOUD_CERT "$CERT"
        check_config_text MOCKCLOUD_CERT_KEY "$CERT_KEY"
        return
    fi
    CERT="$RUN/tls/cert.pem"
    CERT_KEY="$RUN/tls/key.pem"
    local san
    san="$(wanted_san)"
    if [[ -s "$CERT" && -s "$CERT_KEY" && "$(cat "$RUN/tls/san" 2>/dev/null)" == "$san" ]] &&
        openssl x509 -in "$CERT" -noout -checkend 86400 >/dev/null 2>&1; then
        return
    fi
    mkdir -p -m 0700 "$RUN/tls"
    # 825 days and serverAuth: what Apple platforms require of a TLS server
    # certificate a user chooses to trust.
    (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
        -days 825 -subj "/CN=MockCloud ($HOST)" \
        -addext "subjectAltName=$san" -addext "extendedKeyUsage=serverAuth" \
        -keyout "$CERT_KEY.new" -out "$CERT.new" 2>"$RUN/tls/openssl.log") ||
        die "openssl could not make a certificate: $(cat "$RUN/tls/openssl.log")"
    mv -f "$CERT_KEY.new" "$CERT_KEY"
    mv -f "$CERT.new" "$CERT"
    printf '%s\n' "$san" >"$RUN/tls/san"
    say "$PROG: made a self-signed certificate for $san in $CERT" >&2
}

# ---------------------------------------------------------------- config

# Escapes TEXT for the replacement side of a sed `s|...|...|`.
sed_text() { printf '%s' "$1" | sed -e 's/[\\&|]/\\&/g'; }

render_config() {
    local user_directive="" keep drop
    # As root, nginx would switch its workers to `nobody`, who cannot reach
    # the 0700 run directory or fcgiwrap's root-owned socket.
    [[ "$(id -u)" != 0 ]] || user_directive="user root;"
    if [[ -n "$UPSTREAM" ]]; then keep='#upstream#'; drop='#no-upstream#'; else keep='#no-upstream#'; drop='#upstream#'; fi
    sed -e "/^$drop/d" -e "s|^$keep||" \
        -e "s|@USER_DIRECTIVE@|$(sed_text "$user_directive")|" \
        -e "s|@RUN@|$(sed_text "$RUN")|g" \
        -e "s|@LISTEN@|$(sed_text "$LISTEN")|g" \
        -e "s|@CERT@|$(sed_text "$CERT")|g" \
        -e "s|@CERT_KEY@|$(sed_text "$CERT_KEY")|g" \
        -e "s|@CGI_BIN@|$(sed_text "$CGI_BIN")|g" \
        -e "s|@DATA@|$(sed_text "$DATA")|g" \
        -e "s|@SOCKET@|$(sed_text "$SOCKET")|g" \
        -e "s|@HMAC_KEYS@|$(sed_text "$HMAC_KEYS")|g" \
        -e "s|@HMAC_REQUIRE@|$(sed_text "$HMAC_REQUIRE")|g" \
        -e "s|@TOKENS@|$(sed_text "$TOKENS")|g" \
        -e "s|@INBOX_MAX_MESSAGES@|$INBOX_MAX_MESSAGES|g" \
        -e "s|@INBOX_TOMBSTONE_HORIZON@|$INBOX_TOMBSTONE_HORIZON|g" \
        -e "s|@INBOX_COMPACT_MIN_RECORDS@|$INBOX_COMPACT_MIN_RECORDS|g" \
        -e "s|@NGINX_DIR@|$(sed_text "$NGINX_DIR")|g" \
        -e "s|@UPSTREAM@|$(sed_text "$UPSTREAM")|g" \
        "$NGINX_DIR/mockcloud.conf.template" >"$RUN/nginx.conf.new"
    ! grep -n '@[A-Z_]*@' "$RUN/nginx.conf.new" >&2 || die "unrendered placeholder in $RUN/nginx.conf.new"
    mv -f "$RUN/nginx.conf.new" "$RUN/nginx.conf"
}

# ---------------------------------------------------------------- start / stop

nginx_bin() { command -v nginx || die "nginx is not installed: run '$PROG deps' (as root)"; }
fcgiwrap_bin() { command -v fcgiwrap || die "fcgiwrap is not installed: run '$PROG deps' (as root)"; }

recorded_pid() { cat "$RUN/$1.pid" 2>/dev/null || true; }

start_fcgiwrap() {
    local fcgiwrap pid i
    fcgiwrap="$(fcgiwrap_bin)"
    rm -f "$SOCKET"
    # A clean environment: every program inherits fcgiwrap's, so settings and
    # secrets go through fastcgi_param only. -f: programs' stderr to nginx's log.
    env -i PATH=/usr/bin:/bin "$fcgiwrap" -f -c 4 -s "unix:$SOCKET" \
        </dev/null >>"$RUN/logs/fcgiwrap.log" 2>&1 &
    pid=$!
    printf '%s\n' "$pid" >"$RUN/fcgiwrap.pid"
    for ((i = 0; i < 100; i++)); do
        [[ -S "$SOCKET" ]] && return 0
        [[ -d "/proc/$pid" ]] || break
        sleep 0.05
    done
    warn "fcgiwrap did not start: $(tail -n 5 "$RUN/logs/fcgiwrap.log" 2>/dev/null)"
    stop_pid_tree "$pid" fcgiwrap
    rm -f "$RUN/fcgiwrap.pid" "$SOCKET"
    exit 1
}

start_nginx() {
    local nginx log_lines
    nginx="$(nginx_bin)"
    log_lines="$({ wc -l <"$RUN/logs/error.log"; } 2>/dev/null || echo 0)"
    rm -f "$RUN/nginx.pid"
    if ! "$nginx" -p "$RUN/" -c "$RUN/nginx.conf" -e "$RUN/logs/error.log" \
        </dev/null >"$RUN/logs/nginx-start.log" 2>&1; then
        warn "nginx did not start:"
        if [[ -s "$RUN/logs/nginx-start.log" ]]; then
            cat "$RUN/logs/nginx-start.log" >&2
        else
            tail -n "+$((log_lines + 1))" "$RUN/logs/error.log" >&2 2>/dev/null || true
        fi
        stop_all
        exit 1
    fi
}

# Waits until nginx answers over TLS; the probe goes through fcgiwrap to the
# settings program (400 without a key), so a 502 means the chain is broken.
wait_ready() {
    local code="000" i
    # The daemon writes its pid file just after nginx's own exit.
    for ((i = 0; i < 100; i++)); do
        is_process "$(recorded_pid nginx)" nginx && break
        sleep 0.05
    done
    for ((i = 0; i < 100; i++)); do
        code="$(curl -ks --noproxy '*' --max-time 2 -o /dev/null -w '%{http_code}' \
            "https://$PROBE/user/settings" 2>/dev/null || true)"
        [[ "$code" == 000 ]] || break
        is_process "$(recorded_pid nginx)" nginx || break
        sleep 0.1
    done
    if [[ "$code" == 000 ]]; then
        warn "nginx does not answer on https://$PROBE/:"
        tail -n 20 "$RUN/logs/error.log" >&2 2>/dev/null || true
        stop_all
        exit 1
    fi
    if [[ "$code" == 502 ]]; then
        warn "warning: /user/settings answers 502: is $CGI_BIN/user-settings built? (make install)"
    fi
}

start_all() {
    local name pid
    for name in nginx fcgiwrap; do
        pid="$(recorded_pid "$name")"
        if is_process "$pid" "$name"; then
            die "$name is already running for $RUN (pid $pid): run '$PROG stop' with MOCKCLOUD_RUN=$RUN first"
        fi
    done
    command -v curl >/dev/null || die "curl is not installed: run '$PROG deps' (as root)"
    command -v openssl >/dev/null || die "openssl is not installed: run '$PROG deps' (as root)"
    nginx_bin >/dev/null
    fcgiwrap_bin >/dev/null
    [[ -x "$CGI_BIN/user-settings" ]] ||
        warn "warning: $CGI_BIN/user-settings is missing: run 'make install'"

    mkdir -p -m 0700 "$RUN"
    mkdir -p "$RUN/logs" "$RUN/tmp"
    [[ -d "$DATA" ]] || mkdir -p -m 0700 "$DATA"
    ensure_certificate
    render_config
    start_fcgiwrap
    start_nginx
    wait_ready
}

# Stops nginx, then fcgiwrap (its preforked children and any program still
# running below them), each by the PID recorded in the run directory.
stop_all() {
    stop_pid_tree "$(recorded_pid nginx)" nginx
    stop_pid_tree "$(recorded_pid fcgiwrap)" fcgiwrap
    rm -f "$RUN/nginx.pid" "$RUN/fcgiwrap.pid" "$SOCKET"
}

url() { printf 'https://%s' "$LISTEN"; }

# The banner, and where the LAN reaches a server bound to every address.
announce() {
    say "MockCloud serving $(url)  (data: $DATA)"
    if [[ "$HOST" == 0.0.0.0 || "$HOST" == :: ]]; then
        local addr
        for addr in $(hostname -I 2>/dev/null || true); do
            [[ "$addr" != *:* ]] || [[ "$HOST" == :: ]] || continue
            if [[ "$addr" == *:* ]]; then say "  on the LAN: https://[$addr]:$PORT"; else say "  on the LAN: https://$addr:$PORT"; fi
        done
    fi
}

cmd_start() {
    load_settings
    start_all
    announce
}

cmd_stop() {
    # Only the run directory matters here: a stale or odd setting elsewhere
    # must never keep a stack from stopping.
    RUN="$(absolute "${MOCKCLOUD_RUN:-./run}")"
    SOCKET="$RUN/fcgiwrap.sock"
    stop_all
}

cmd_serve() {
    load_settings
    local sleeper=""
    on_signal() {
        trap - INT TERM
        [[ -z "$sleeper" ]] || kill "$sleeper" 2>/dev/null || true
        say "" >&2
        say "$PROG: stopping" >&2
        stop_all
        exit 0
    }
    trap on_signal INT TERM
    start_all
    announce
    while :; do
        sleep 1 &
        sleeper=$!
        wait "$sleeper" || true
        sleeper=""
        if ! is_process "$(recorded_pid nginx)" nginx || ! is_process "$(recorded_pid fcgiwrap)" fcgiwrap; then
            trap - INT TERM
            warn "nginx or fcgiwrap exited unexpectedly; see $RUN/logs/error.log"
            stop_all
            exit 1
        fi
    done
}

case "${1:-}" in
    deps) shift; cmd_deps "$@" ;;
    serve) cmd_serve ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    *)
        sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
esac
