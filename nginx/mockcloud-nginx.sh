#!/usr/bin/env bash
# MockCloud launcher: nginx (TLS, limits, routing) + fcgiwrap + cgi-bin/*.
#
#   mockcloud-nginx.sh deps [bench|testssl]  install what is missing (packaging/deps.sh; as root)
#   mockcloud-nginx.sh serve         run in the foreground until Ctrl-C / SIGTERM
#   mockcloud-nginx.sh start         start in the background, return once ready
#   mockcloud-nginx.sh stop          stop what `start` recorded in the run dir
#   mockcloud-nginx.sh own FILE...   as root: give key/token files to the serving user
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
#   MOCKCLOUD_MIN_FREE_MB, MOCKCLOUD_WAITS_PER_ADDRESS  passed to both programs
#   MOCKCLOUD_LIMITS    off: no per-address cap on requests in progress, nor a
#                       per-address share of the waits (for a server every
#                       client reaches through one address)
#   MOCKCLOUD_MODE      cgi (default): nginx + fcgiwrap start a program per
#                       request; fastcgi: each program runs as a pool of
#                       persistent FastCGI workers (docs/OPERATIONS.md,
#                       "FastCGI mode"), MOCKCLOUD_FASTCGI_WORKERS each (4),
#                       each replaced after MOCKCLOUD_FASTCGI_MAX_REQUESTS
#                       requests (unset: never); reads that wait for a change
#                       go to one event loop per program, which holds up to
#                       MOCKCLOUD_FASTCGI_WAITS of them (4096),
#                       MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS per address (64)
#   MOCKCLOUD_CERT + MOCKCLOUD_CERT_KEY            a given certificate; without
#                       them a local CA and a certificate it signs are made in
#                       the run dir (admin/tls.sh).
#   MOCKCLOUD_USER      as root (serve, start and own alike): the
#                       unprivileged user nginx's workers, fcgiwrap and the
#                       programs run as, default mockcloud; created when
#                       missing and made owner of the data and run
#                       directories. Never root. Key and token files must be
#                       readable by it: start refuses them otherwise.
set -euo pipefail

readonly NGINX_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REPO_DIR="$(cd "$NGINX_DIR/.." && pwd)"
readonly PROG="mockcloud-nginx.sh"
export PATH="$PATH:/usr/sbin:/sbin"

say() { printf '%s\n' "$*"; }
warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { warn "$*"; exit 1; }

# ---------------------------------------------------------------- deps

# What serving needs (and with bench or testssl, what those need), from the
# one place that installs anything: packaging/deps.sh.
cmd_deps() {
    [[ "${1:-}" == "" || "${1:-}" == bench || "${1:-}" == testssl ]] || die "usage: $PROG deps [bench|testssl]"
    exec "$REPO_DIR/packaging/deps.sh" serve ${1:+"$1"}
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
    # As root, everything that serves runs as an unprivileged user, whichever
    # command started it; as anyone else, as that user.
    SERVE_USER=""
    if [[ "$(id -u)" == 0 ]]; then
        SERVE_USER="${MOCKCLOUD_USER:-mockcloud}"
        [[ "$SERVE_USER" =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] ||
            die "MOCKCLOUD_USER must be a user name such as mockcloud, not '$SERVE_USER'"
        [[ "$SERVE_USER" != root && "$(id -u "$SERVE_USER" 2>/dev/null)" != 0 ]] ||
            die "MOCKCLOUD_USER=$SERVE_USER would serve as root: name an unprivileged user (unset, mockcloud is used)"
    fi

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
    [[ -z "$HMAC_REQUIRE" || "$HMAC_REQUIRE" == 1 ]] ||
        die "MOCKCLOUD_HMAC_REQUIRE must be 1 (refuse unsigned documents) or unset, not '$HMAC_REQUIRE'"
    INBOX_MAX_MESSAGES="${MOCKCLOUD_INBOX_MAX_MESSAGES:-}"
    INBOX_TOMBSTONE_HORIZON="${MOCKCLOUD_INBOX_TOMBSTONE_HORIZON:-}"
    INBOX_COMPACT_MIN_RECORDS="${MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS:-}"
    MIN_FREE_MB="${MOCKCLOUD_MIN_FREE_MB:-}"
    WAITS_PER_ADDRESS="${MOCKCLOUD_WAITS_PER_ADDRESS:-}"
    LIMITS="${MOCKCLOUD_LIMITS:-}"
    [[ -z "$LIMITS" || "$LIMITS" == off || "$LIMITS" == on ]] ||
        die "MOCKCLOUD_LIMITS must be 'off' (no per-address cap) or unset, not '$LIMITS'"
    [[ "$LIMITS" != on ]] || LIMITS=""
    for name in INBOX_MAX_MESSAGES INBOX_TOMBSTONE_HORIZON INBOX_COMPACT_MIN_RECORDS MIN_FREE_MB WAITS_PER_ADDRESS; do
        [[ "${!name}" =~ ^[0-9]*$ ]] || die "MOCKCLOUD_$name must be a whole number, not '${!name}'"
    done
    # The programs refuse the same (every request a 500 naming it): say so now.
    [[ -z "$WAITS_PER_ADDRESS" ]] || ((10#$WAITS_PER_ADDRESS >= 1 && 10#$WAITS_PER_ADDRESS <= 48)) ||
        die "MOCKCLOUD_WAITS_PER_ADDRESS must be from 1 to 48 (the box's places for waiting requests), not '$WAITS_PER_ADDRESS'"
    for name in DATA RUN CGI_BIN HMAC_KEYS TOKENS; do check_config_text "MOCKCLOUD_$name" "${!name}"; done
    check_config_text "the nginx/ directory's path" "$NGINX_DIR"
    # sun_path holds 108 bytes including the terminating NUL.
    if ((${#SOCKET} > 107)); then
        die "MOCKCLOUD_RUN is too long for a unix socket path ($SOCKET is ${#SOCKET} bytes, the limit is 107): use a shorter MOCKCLOUD_RUN, e.g. \$(mktemp -d /tmp/mc.XXXX)"
    fi

    load_mode_settings
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

# ---------------------------------------------------------------- mode

# MOCKCLOUD_MODE and the FastCGI pools' settings; FASTCGI_DIR is where the
# pools listen (empty in CGI mode: nginx's config then passes to fcgiwrap).
load_mode_settings() {
    MODE="${MOCKCLOUD_MODE:-cgi}"
    [[ "$MODE" == cgi || "$MODE" == fastcgi ]] ||
        die "MOCKCLOUD_MODE must be cgi (a program per request, the default) or fastcgi (pools of persistent workers), not '$MODE'"
    FASTCGI_WORKERS="${MOCKCLOUD_FASTCGI_WORKERS:-4}"
    FASTCGI_MAX_REQUESTS="${MOCKCLOUD_FASTCGI_MAX_REQUESTS:-0}"
    [[ "$FASTCGI_WORKERS" =~ ^[0-9]+$ ]] && ((10#$FASTCGI_WORKERS >= 1 && 10#$FASTCGI_WORKERS <= 256)) ||
        die "MOCKCLOUD_FASTCGI_WORKERS must be a whole number from 1 to 256 (workers per program), not '$FASTCGI_WORKERS'"
    [[ "$FASTCGI_MAX_REQUESTS" =~ ^[0-9]+$ ]] ||
        die "MOCKCLOUD_FASTCGI_MAX_REQUESTS must be a whole number (requests before a worker is replaced; 0: never), not '$FASTCGI_MAX_REQUESTS'"
    FASTCGI_WAITS="${MOCKCLOUD_FASTCGI_WAITS:-4096}"
    FASTCGI_WAITS_PER_ADDRESS="${MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS:-64}"
    [[ "$FASTCGI_WAITS" =~ ^[0-9]{1,5}$ ]] && ((10#$FASTCGI_WAITS >= 1 && 10#$FASTCGI_WAITS <= 65536)) ||
        die "MOCKCLOUD_FASTCGI_WAITS must be a whole number from 1 to 65536 (reads each program's loop holds waiting), not '$FASTCGI_WAITS'"
    [[ "$FASTCGI_WAITS_PER_ADDRESS" =~ ^[0-9]{1,5}$ ]] &&
        ((10#$FASTCGI_WAITS_PER_ADDRESS >= 1 && 10#$FASTCGI_WAITS_PER_ADDRESS <= 65536)) ||
        die "MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS must be a whole number from 1 to 65536 (waits one address may hold), not '$FASTCGI_WAITS_PER_ADDRESS'"
    FASTCGI_DIR=""
    # nginx's connections per worker, and its file limit: room for a flood
    # (4,096); in FastCGI mode also for every wait of both loops, each two
    # connections (the client's and the loop's), all perhaps in one worker.
    WORKER_CONNECTIONS=4096
    WORKER_FILES=10240
    if [[ "$MODE" == fastcgi ]]; then
        FASTCGI_DIR="$RUN/fastcgi"
        WORKER_CONNECTIONS=$((4096 + 4 * 10#$FASTCGI_WAITS))
        WORKER_FILES=$((WORKER_CONNECTIONS + 6144))
    fi
    # sun_path holds 108 bytes including the terminating NUL.
    if ((${#FASTCGI_DIR} + 25 > 107)); then
        die "MOCKCLOUD_RUN is too long for the FastCGI sockets ($FASTCGI_DIR/user-settings-waits.sock must be at most 107 bytes): use a shorter MOCKCLOUD_RUN"
    fi
}

# The pools of FastCGI mode: each program's, and its event loop for waits
# (nginx sends a read with ?wait= there, mockcloud-http.conf), each named
# as its socket, pid file and log are.
readonly FASTCGI_POOLS=(user-settings user-settings-waits inbox inbox-waits)

# A pool's program: its name without -waits.
pool_program() { printf '%s' "${1%-waits}"; }

# The arguments of POOL after its socket: MOCKCLOUD_FASTCGI_WORKERS workers,
# or for waits one event loop that holds MOCKCLOUD_FASTCGI_WAITS of them
# (the programs count them, and refuse one past the count at once).
pool_arguments() {
    if [[ "$1" == *-waits ]]; then
        printf '%s\n' --waits "$((10#$FASTCGI_WAITS))" --waits-per-address "$((10#$FASTCGI_WAITS_PER_ADDRESS))"
    else
        printf '%s\n' --workers "$((10#$FASTCGI_WORKERS))" --max-requests "$((10#$FASTCGI_MAX_REQUESTS))"
    fi
}

# Raises this shell's soft file limit (inherited by the loops and nginx)
# towards COUNT, at most to the hard limit; prints what it is then.
raise_file_limit() {
    local hard
    hard="$(ulimit -Hn)"
    if [[ "$hard" == unlimited ]] || ((hard >= $1)); then ulimit -Sn "$1" 2>/dev/null || true
    else ulimit -Sn "$hard" 2>/dev/null || true; fi
    ulimit -Sn
}

# FastCGI mode: each pool (a master and its workers) on
# $FASTCGI_DIR/<pool>.sock, as the serving user, with a clean environment
# (settings and secrets come as fastcgi_params, as in CGI mode); the
# master's log lines and its workers' go to logs/<pool>.log.
start_fastcgi_pools() {
    local pool program pid i
    local as_user=()
    [[ -z "$SERVE_USER" ]] || as_user=(setpriv --reuid="$SERVE_USER" --regid="$SERVE_GROUP" --init-groups --inh-caps=-all --)
    local files
    files="$(raise_file_limit "$WORKER_FILES")"
    ((files >= WORKER_CONNECTIONS)) ||
        warn "warning: the file limit is $files (the hard limit), under nginx's $WORKER_CONNECTIONS connections for MOCKCLOUD_FASTCGI_WAITS=$FASTCGI_WAITS waits per loop: fewer may be held at once; raise it (LimitNOFILE, limits.conf)"
    mkdir -p -m 0700 "$FASTCGI_DIR"
    [[ -z "$SERVE_USER" ]] || chown "$SERVE_USER:$SERVE_GROUP" "$FASTCGI_DIR"
    for pool in "${FASTCGI_POOLS[@]}"; do
        program="$(pool_program "$pool")"
        [[ -x "$CGI_BIN/$program" ]] || die "$CGI_BIN/$program is missing: run 'make install'"
        rm -f "$FASTCGI_DIR/$pool.sock"
        local arguments
        mapfile -t arguments < <(pool_arguments "$pool")
        "${as_user[@]}" env -i PATH=/usr/bin:/bin "$CGI_BIN/$program" --fastcgi "unix:$FASTCGI_DIR/$pool.sock" \
            "${arguments[@]}" </dev/null >>"$RUN/logs/$pool.log" 2>&1 &
        pid=$!
        printf '%s\n' "$pid" >"$RUN/$pool.pid"
        for ((i = 0; i < 100; i++)); do
            [[ -S "$FASTCGI_DIR/$pool.sock" ]] && continue 2
            [[ -d "/proc/$pid" ]] || break
            sleep 0.05
        done
        warn "the $pool pool did not start: $(tail -n 5 "$RUN/logs/$pool.log" 2>/dev/null)"
        stop_fastcgi_pools
        exit 1
    done
}

# Stops each pool by the PID recorded in the run directory: its master
# lets the workers finish their requests, then exits; stop_pid_tree then
# ends whatever is left below it (an upkeep still running).
stop_fastcgi_pools() {
    local pool
    for pool in "${FASTCGI_POOLS[@]}"; do
        stop_pid_tree "$(recorded_pid "$pool")" "$(pool_program "$pool")"
        rm -f "$RUN/$pool.pid" "$RUN/fastcgi/$pool.sock"
    done
}

# True while what serves the routes behind nginx runs: fcgiwrap, or every pool.
backends_alive() {
    local pool
    if [[ "$MODE" == fastcgi ]]; then
        for pool in "${FASTCGI_POOLS[@]}"; do
            is_process "$(recorded_pid "$pool")" "$(pool_program "$pool")" || return 1
        done
    else
        is_process "$(recorded_pid fcgiwrap)" fcgiwrap
    fi
}

# ---------------------------------------------------------------- certificate

# The names the server certificate carries: 127.0.0.1 and localhost, and
# MOCKCLOUD_HOST, or every address of the box when it serves them all.
wanted_names() {
    local addr
    printf '%s\n' 127.0.0.1 localhost
    case "$HOST" in
        0.0.0.0 | ::)
            printf '%s\n' ::1
            for addr in $(hostname -I 2>/dev/null || true); do
                [[ "$addr" == fe80:* ]] || printf '%s\n' "$addr"
            done
            ;;
        *) printf '%s\n' "$HOST" ;;
    esac
}

# A server certificate from a local CA (admin/tls.sh), both kept in the run
# directory; the CA's key never leaves it (0600). A new one when the names
# change: the CA is constrained to the names it was made for.
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
    local names
    mapfile -t names < <(wanted_names | awk '!seen[$0]++')
    if [[ -s "$RUN/tls/ca-names" ]] && ! printf '%s\n' "${names[@]}" | grep -qvxFf "$RUN/tls/ca-names"; then
        :
    else
        # A CA made for other names (or none yet): start again.
        rm -f "$RUN/tls/ca.key" "$RUN/tls/ca.crt" "$RUN/tls/ca-names"
    fi
    "$REPO_DIR/admin/tls.sh" --dir "$RUN/tls" ensure "${names[@]}" ||
        die "could not make the certificate in $RUN/tls"
}

# ---------------------------------------------------------------- config

# Escapes TEXT for the replacement side of a sed `s|...|...|`.
sed_text() { printf '%s' "$1" | sed -e 's/[\\&|]/\\&/g'; }

render_config() {
    local user_directive="" keep drop
    # As root, nginx would switch its workers to `nobody`, who cannot reach
    # the 0700 run directory or fcgiwrap's socket: name the serving user.
    [[ -z "$SERVE_USER" ]] || user_directive="user $SERVE_USER $(id -gn "$SERVE_USER");"
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
        -e "s|@FASTCGI_DIR@|$(sed_text "$FASTCGI_DIR")|g" \
        -e "s|@WORKER_CONNECTIONS@|$WORKER_CONNECTIONS|g" \
        -e "s|@WORKER_FILES@|$WORKER_FILES|g" \
        -e "s|@HMAC_KEYS@|$(sed_text "$HMAC_KEYS")|g" \
        -e "s|@HMAC_REQUIRE@|$(sed_text "$HMAC_REQUIRE")|g" \
        -e "s|@TOKENS@|$(sed_text "$TOKENS")|g" \
        -e "s|@INBOX_MAX_MESSAGES@|$INBOX_MAX_MESSAGES|g" \
        -e "s|@INBOX_TOMBSTONE_HORIZON@|$INBOX_TOMBSTONE_HORIZON|g" \
        -e "s|@INBOX_COMPACT_MIN_RECORDS@|$INBOX_COMPACT_MIN_RECORDS|g" \
        -e "s|@MIN_FREE_MB@|$MIN_FREE_MB|g" \
        -e "s|@WAITS_PER_ADDRESS@|$WAITS_PER_ADDRESS|g" \
        -e "s|@LIMITS@|$LIMITS|g" \
        -e "s|@NGINX_DIR@|$(sed_text "$NGINX_DIR")|g" \
        -e "s|@UPSTREAM@|$(sed_text "$UPSTREAM")|g" \
        "$NGINX_DIR/mockcloud.conf.template" >"$RUN/nginx.conf.new"
    ! grep -n '@[A-Z_]*@' "$RUN/nginx.conf.new" >&2 || die "unrendered placeholder in $RUN/nginx.conf.new"
    mv -f "$RUN/nginx.conf.new" "$RUN/nginx.conf"
}

# ---------------------------------------------------------------- start / stop

# As root: SERVE_USER exists (a system user without a login or home).
ensure_user() {
    if ! id -u "$SERVE_USER" >/dev/null 2>&1; then
        command -v useradd >/dev/null || die "no useradd here to create the user $SERVE_USER"
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$SERVE_USER" || die "could not create the user $SERVE_USER"
        say "$PROG: created the system user $SERVE_USER to serve as" >&2
    fi
    command -v setpriv >/dev/null || die "setpriv (util-linux) is missing: cannot run fcgiwrap as $SERVE_USER"
    SERVE_GROUP="$(id -gn "$SERVE_USER")"
}

# Runs COMMAND as the user the programs run as (SERVE_USER under root).
as_serving_user() {
    if [[ -n "$SERVE_USER" ]]; then
        setpriv --reuid="$SERVE_USER" --regid="$SERVE_GROUP" --init-groups "$@"
    else
        "$@"
    fi
}

# The first directory on the way to PATH that the serving user cannot
# enter, or nothing.
closed_directory_above() {
    local dir="" part rest="${1#/}"
    while [[ "$rest" == */* ]]; do
        part="${rest%%/*}"
        rest="${rest#*/}"
        dir+="/$part"
        as_serving_user test -x "$dir" || { printf '%s\n' "$dir"; return; }
    done
}

# The key and token files (MOCKCLOUD_HMAC_KEYS, MOCKCLOUD_TOKENS) as the
# programs will meet them: a file the serving user can read, that group and
# others cannot (the programs refuse any other on every request, with a
# 500). Anything else stops the start here, naming the file, its owner and
# mode, and the command that mends it.
check_secret_files() {
    [[ -z "$HMAC_KEYS" ]] || check_secret_file MOCKCLOUD_HMAC_KEYS "$HMAC_KEYS"
    [[ -z "$TOKENS" ]] || check_secret_file MOCKCLOUD_TOKENS "$TOKENS"
}

# check_secret_file SETTING FILE: dies unless the serving user can read
# FILE and nobody else but root can.
check_secret_file() {
    local name="$1" file="$2" who owner mode dir fix
    who="${SERVE_USER:-$(id -un)}"
    if [[ ! -f "$file" ]]; then
        if [[ "$name" == MOCKCLOUD_TOKENS ]]; then
            fix="$REPO_DIR/cgi-bin/mockcloud-admin token $file LABEL"
        else
            fix="(umask 077; printf 'k1:%s\\n' \"\$(openssl rand -hex 32)\" > $file)"
        fi
        [[ "$(id -u)" != 0 ]] || fix+=" && $NGINX_DIR/$PROG own $file"
        die "$name names $file, which is not a file. Make it: $fix"
    fi
    read -r owner mode < <(stat -c '%U:%G %a' "$file")
    if ((8#$mode & 8#077)); then
        die "$name: $file is owned by $owner with mode 0$mode: group or others may read it, and the programs refuse such a file. Fix: chmod 600 $file"
    fi
    if ! as_serving_user test -r "$file"; then
        dir="$(closed_directory_above "$file")"
        if [[ -n "$dir" ]]; then
            die "$name: $who (the user the programs run as) cannot reach $file (owned by $owner, mode 0$mode): $dir is $(stat -c '%U:%G, mode 0%a' "$dir") and closed to $who. Fix: chmod o+x $dir"
        fi
        if [[ -n "$SERVE_USER" ]]; then
            fix="chown $SERVE_USER:$SERVE_GROUP $file"
        else
            fix="chmod u+r $file"
        fi
        die "$name: $who (the user the programs run as) cannot read $file (owned by $owner, mode 0$mode). Fix: $fix"
    fi
}

# As root: SERVE_USER owns the data and run directories. The CA and server
# keys in $RUN/tls stay root's (nginx's master reads them as root); logs are
# written by nginx's master and this script, also root.
become_user_dirs() {
    chown -R "$SERVE_USER:$SERVE_GROUP" "$DATA" || die "cannot give $DATA to $SERVE_USER"
    chown "$SERVE_USER:$SERVE_GROUP" "$RUN" "$RUN/tmp" || die "cannot give $RUN to $SERVE_USER"
    chmod 0700 "$DATA" "$RUN"
    local dir
    for dir in "$DATA" "$RUN"; do
        as_serving_user test -w "$dir" ||
            die "$SERVE_USER cannot reach $dir: a directory above it is closed to others (chmod o+x it, or choose another place)"
    done
    if ! as_serving_user test -x "$CGI_BIN/user-settings"; then
        warn "warning: $SERVE_USER cannot run $CGI_BIN/user-settings (a directory on the way is closed to others?)"
    fi
}

nginx_bin() { command -v nginx || die "nginx is not installed: run '$PROG deps' (as root)"; }
fcgiwrap_bin() { command -v fcgiwrap || die "fcgiwrap is not installed: run '$PROG deps' (as root)"; }

recorded_pid() { cat "$RUN/$1.pid" 2>/dev/null || true; }

start_fcgiwrap() {
    local fcgiwrap pid i
    fcgiwrap="$(fcgiwrap_bin)"
    rm -f "$SOCKET"
    # A clean environment: every program inherits fcgiwrap's, so settings and
    # secrets go through fastcgi_param only. -f: programs' stderr to nginx's log.
    # -c 64: each fcgiwrap process serves one request at a time, and a request
    # that waits for a change (?wait=) holds one for up to a minute; the
    # programs let 48 wait at once, so 16 always serve the rest
    # (Sources/MockCloudConfig/Capacity.swift, docs/OPERATIONS.md "Waiting requests
    # and capacity").
    local as_user=()
    [[ -z "$SERVE_USER" ]] || as_user=(setpriv --reuid="$SERVE_USER" --regid="$SERVE_GROUP" --init-groups --inh-caps=-all --)
    "${as_user[@]}" env -i PATH=/usr/bin:/bin "$fcgiwrap" -f -c 64 -s "unix:$SOCKET" \
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
    for name in nginx fcgiwrap "${FASTCGI_POOLS[@]}"; do
        pid="$(recorded_pid "$name")"
        if is_process "$pid" "$(pool_program "$name")"; then
            die "$name is already running for $RUN (pid $pid): run '$PROG stop' with MOCKCLOUD_RUN=$RUN first"
        fi
    done
    command -v curl >/dev/null || die "curl is not installed: run '$PROG deps' (as root)"
    command -v openssl >/dev/null || die "openssl is not installed: run '$PROG deps' (as root)"
    nginx_bin >/dev/null
    [[ "$MODE" == fastcgi ]] || fcgiwrap_bin >/dev/null
    [[ -x "$CGI_BIN/user-settings" ]] ||
        warn "warning: $CGI_BIN/user-settings is missing: run 'make install'"
    [[ -z "$SERVE_USER" ]] || ensure_user
    check_secret_files

    mkdir -p -m 0700 "$RUN"
    # A run directory that already existed keeps whatever mode it had, and
    # its logs hold query strings and the programs' errors: owner only.
    chmod 0700 "$RUN" || die "cannot make $RUN private (chmod 0700)"
    mkdir -p "$RUN/logs" "$RUN/tmp"
    [[ -d "$DATA" ]] || mkdir -p -m 0700 "$DATA"
    [[ -z "$SERVE_USER" ]] || become_user_dirs
    ensure_certificate
    render_config
    if [[ "$MODE" == fastcgi ]]; then start_fastcgi_pools; else start_fcgiwrap; fi
    start_nginx
    wait_ready
}

# Stops nginx, then fcgiwrap (its preforked children and any program still
# running below them) or the FastCGI pools, whichever runs, each by the PID
# recorded in the run directory.
stop_all() {
    stop_pid_tree "$(recorded_pid nginx)" nginx
    stop_pid_tree "$(recorded_pid fcgiwrap)" fcgiwrap
    stop_fastcgi_pools
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

# As root: makes each FILE (a key or token file) the serving user's, mode
# 0600, creating the user when missing, so that `serve` and `start` accept it.
cmd_own() {
    (($# > 0)) || die "usage: $PROG own FILE..."
    [[ "$(id -u)" == 0 ]] || die "own is for root: as $(id -un), the programs run as you and read your own files"
    load_settings
    ensure_user
    local file
    for file in "$@"; do
        [[ -f "$file" ]] || die "$file is not a file"
        chown "$SERVE_USER:$SERVE_GROUP" "$file" && chmod 0600 "$file" || die "cannot give $file to $SERVE_USER"
    done
    for file in "$@"; do
        check_secret_file "$file" "$(absolute "$file")"
        say "$PROG: $file is $SERVE_USER's now (mode 0600): the programs can read it"
    done
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
        # Ignored from here on, not reset: a group's TERM comes twice (once
        # from a supervisor, once more from make), and a second one must not
        # end this shell before stop_all reaches nginx, which runs in a
        # session of its own.
        trap '' INT TERM
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
        if ! is_process "$(recorded_pid nginx)" nginx || ! backends_alive; then
            trap '' INT TERM
            warn "nginx, fcgiwrap or a FastCGI pool exited unexpectedly; see $RUN/logs/error.log"
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
    own) shift; cmd_own "$@" ;;
    *)
        sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0" >&2
        exit 2
        ;;
esac
