#!/usr/bin/env bash
# The one way the tests and benchmarks start and stop a MockCloud stack
# (nginx + fcgiwrap + the programs, through nginx/mockcloud-nginx.sh): on a
# free 127.0.0.1 port, with run and data directories under the caller's
# WORK, stopped by the launcher (each process by its recorded PID). As root,
# the launcher serves as the unprivileged user `mockcloud`, as `make serve`
# does: start_stack makes WORK 0711 so that this user can reach the
# directories inside it (enter, not list).
#
# Sourced (through cases.sh, by the shell suites; set WORK first):
#   start_stack NAME [VAR=value ...]   run dir $WORK/NAME, data $WORK/NAME-data,
#                                      a free port on 127.0.0.1 (MOCKCLOUD_DATA,
#                                      _PORT, _HOST or _MODE among the VARs win;
#                                      the mode is MOCKCLOUD_TEST_MODE's, cgi
#                                      by default); sets STACK, PORT, BASE, RUN and DATA
#   stop_stacks                        stops every stack started so far
#   own_secrets FILE...                key and token files made readable to
#                                      the stacks' user, as docs/OPERATIONS.md says
# Run (Tests/support/stack.py does, for the Python suites and the benchmarks):
#   stack.sh start WORK NAME [VAR=value ...]   prints PORT, RUN and DATA, a line each
#   stack.sh stop RUN

SUPPORT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SUPPORT_DIR/../.." && pwd)"
LAUNCHER="$REPO/nginx/mockcloud-nginx.sh"
export MOCKCLOUD_CGI_BIN="${MOCKCLOUD_CGI_BIN:-$REPO/cgi-bin}"
# The mode every stack serves in unless a test names one (MOCKCLOUD_MODE
# among its settings): MOCKCLOUD_TEST_MODE, cgi (the default) or fastcgi,
# so that one suite runs against either (docs/TESTING.md).
TEST_MODE="${MOCKCLOUD_TEST_MODE:-cgi}"
[[ "$TEST_MODE" == cgi || "$TEST_MODE" == fastcgi ]] ||
    { echo "MOCKCLOUD_TEST_MODE must be cgi or fastcgi, not '$TEST_MODE'" >&2; exit 2; }
# The stacks are configured by the tests only, whatever the caller's environment says.
unset MOCKCLOUD_UPSTREAM MOCKCLOUD_HMAC_KEYS MOCKCLOUD_HMAC_REQUIRE MOCKCLOUD_CERT \
    MOCKCLOUD_CERT_KEY MOCKCLOUD_HOST MOCKCLOUD_PORT MOCKCLOUD_DATA MOCKCLOUD_RUN MOCKCLOUD_TOKENS \
    MOCKCLOUD_INBOX_MAX_MESSAGES MOCKCLOUD_INBOX_TOMBSTONE_HORIZON MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS \
    MOCKCLOUD_MIN_FREE_MB MOCKCLOUD_WAITS_PER_ADDRESS MOCKCLOUD_LIMITS MOCKCLOUD_USER \
    MOCKCLOUD_MODE MOCKCLOUD_FASTCGI_WORKERS MOCKCLOUD_FASTCGI_MAX_REQUESTS MOCKCLOUD_FASTCGI_WAITS \
    MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS
STACK_RUNS=()

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_stack() {
    local name="$1" port="" host=127.0.0.1 data setting
    shift
    data="$WORK/$name-data"
    for setting in "$@"; do
        case "$setting" in
            MOCKCLOUD_DATA=*) data="${setting#*=}" ;;
            MOCKCLOUD_PORT=*) port="${setting#*=}" ;;
            MOCKCLOUD_HOST=*) host="${setting#*=}" ;;
        esac
    done
    [[ -n "$port" ]] || port="$(free_port)"
    chmod 0711 "$WORK"
    STACK_RUNS+=("$WORK/$name")
    if ! env "MOCKCLOUD_MODE=$TEST_MODE" "MOCKCLOUD_RUN=$WORK/$name" "MOCKCLOUD_DATA=$data" "MOCKCLOUD_PORT=$port" "MOCKCLOUD_HOST=$host" "$@" \
        "$LAUNCHER" start >"$WORK/$name-start.log" 2>&1; then
        printf 'could not start the %s stack:\n' "$name"
        sed 's/^/    /' "$WORK/$name-start.log"
        return 1
    fi
    STACK="$name"
    PORT="$port"
    BASE="https://$host:$port"
    RUN="$WORK/$name"
    DATA="$data"
}

# As root the programs run as mockcloud, and the launcher refuses a key or
# token file that user cannot read: the files a test writes go to it the way
# docs/OPERATIONS.md tells an operator to (`mockcloud-nginx.sh own`). As anyone else
# the programs run as that user, who made the files.
own_secrets() {
    [[ "$(id -u)" != 0 ]] || "$LAUNCHER" own "$@" >/dev/null
}

stop_stacks() {
    local run
    for run in "${STACK_RUNS[@]}"; do
        MOCKCLOUD_RUN="$run" "$LAUNCHER" stop || echo "could not stop the stack in $run" >&2
    done
    STACK_RUNS=()
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -uo pipefail
    case "${1:-}" in
        start)
            (($# >= 3)) || { echo "usage: stack.sh start WORK NAME [VAR=value ...]" >&2; exit 2; }
            WORK="$2"
            shift 2
            start_stack "$@" >&2 || exit 1
            printf '%s\n' "$PORT" "$RUN" "$DATA"
            ;;
        stop)
            (($# == 2)) || { echo "usage: stack.sh stop RUN" >&2; exit 2; }
            STACK_RUNS=("$2")
            stop_stacks
            ;;
        *)
            sed -n '10,20s/^# \{0,1\}//p' "$0" >&2
            exit 2
            ;;
    esac
fi
