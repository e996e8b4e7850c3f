#!/usr/bin/env bash
# Acceptance tests through the real stack: nginx (TLS, body limits, routing)
# + fcgiwrap + the installed cgi-bin programs, driven with curl -k.
#
#   Tests/acceptance/run.sh [cases/FILE.sh ...]    default: every cases/*.sh
#
# A case file is a readable list of cases:
#
#   it "GET before anything is stored answers 404"
#   expect 404 GET /user/settings -H 'X-User-Key: fresh'
#   body_is '{"error": "no settings stored for this user"}'
#
# `expect STATUS METHOD PATH [curl options]` sends one request over HTTPS and
# checks the status, and that the answer is JSON with `Content-Type:
# application/json` (or has no body at all for 204 and 304). The assertions
# after it look at that last answer; a case passes when all of its own do.
#
# The runner starts its own stack with `nginx/mockcloud-nginx.sh start` on a
# free port with temporary data and run directories, stops every server it
# started by PID on exit, and prints `N passed, M failed` as its last line
# (exit status 1 when anything failed).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../support/cases.sh
source "$HERE/../support/cases.sh"

work_dir mca
SERVER_PIDS=()
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do stop_server "$pid"; done
}

# ---------------------------------------------------------------- requests

STATUS=""

# expect STATUS METHOD PATH [curl options]: one HTTPS request to the stack
# (`send`, in Tests/support/cases.sh), and the checks every answer gets.
expect() {
    local want="$1" method="$2" path="$3"
    shift 3
    send "$method" "$path" "$@"
    if [[ "$STATUS" != "$want" ]]; then
        fail "$REQUEST: status $STATUS, expected $want; body: $(head -c 400 "$WORK/body")$(head -c 200 "$WORK/curl.err")"
    fi
    answer_shape
    [[ -z "${MOCKCLOUD_API_RECORD:-}" ]] || record_answer "$method" "$path"
}

# With MOCKCLOUD_API_RECORD=DIR, every answer `expect` got is kept there for
# Tests/api/conformance.py, which checks each against docs/openapi.yaml.
API_RECORDS=0
record_answer() {
    API_RECORDS=$((API_RECORDS + 1))
    local n="${CASE_FILE:-run}-$API_RECORDS"
    mkdir -p "$MOCKCLOUD_API_RECORD"
    cp "$WORK/headers" "$MOCKCLOUD_API_RECORD/$n.headers"
    cp "$WORK/body" "$MOCKCLOUD_API_RECORD/$n.body"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$STACK" "$STATUS" "$1" "$2" "$CASE_NAME" \
        >>"$MOCKCLOUD_API_RECORD/index.tsv"
}

# The body of the last answer.
last_body() { cat "$WORK/body"; }

# ---------------------------------------------------------------- assertions

header_is() {
    local value
    value="$(last_header "$1")" || { fail "$REQUEST: no $1 header, expected '$2'"; return; }
    [[ "$value" == "$2" ]] || fail "$REQUEST: $1 is '$value', expected '$2'"
}

header_present() {
    last_header "$1" >/dev/null || fail "$REQUEST: no $1 header"
}

header_absent() {
    local value
    ! value="$(last_header "$1")" || fail "$REQUEST: unexpected $1: $value"
}

# header_matches NAME REGEX (bash extended regex, anchored by the caller).
header_matches() {
    local value
    value="$(last_header "$1")" || { fail "$REQUEST: no $1 header"; return; }
    [[ "$value" =~ $2 ]] || fail "$REQUEST: $1 '$value' does not match $2"
}

# The exact body text.
body_is() {
    local body
    body="$(last_body)"
    [[ "$body" == "$1" ]] || fail "$REQUEST: body is $(head -c 400 <<<"$body"), expected $1"
}

# py 'assert ...': Python 3 statements about the last answer. In scope:
#   status (int), raw (bytes), body (str), doc (the parsed JSON or None),
#   headers (lowercased name -> value), DATA (the data directory), PORT,
#   stored(key) (the settings file's text, or None), json, os, re.
py() {
    local out
    out="$(python3 - "$STATUS" "$WORK/body" "$WORK/headers" "$DATA" "$PORT" "$1" <<'PYTHON' 2>&1
import json, os, re, sys
status, body_path, headers_path, DATA, PORT, code = sys.argv[1:7]
raw = open(body_path, "rb").read()
body = raw.decode("utf-8", "replace")
try:
    doc = json.loads(raw)
except ValueError:
    doc = None
headers = {}
for line in open(headers_path, encoding="latin-1").read().replace("\r", "").split("\n"):
    if line.startswith("HTTP/"):
        headers = {}
    elif ":" in line:
        name, value = line.split(":", 1)
        headers.setdefault(name.strip().lower(), value.strip())

def stored(key):
    path = os.path.join(DATA, "user_settings", key + ".json")
    if not os.path.exists(path):
        return None
    return open(path, "rb").read().decode("utf-8")

scope = dict(status=int(status or 0), raw=raw, body=body, doc=doc, headers=headers,
             DATA=DATA, PORT=PORT, stored=stored, json=json, os=os, re=re)
try:
    exec(code, scope)
except AssertionError as error:
    print("assertion failed:", code.strip(), ("-- " + str(error)) if str(error) else "")
    sys.exit(1)
except Exception as error:
    print("error in check:", code.strip(), "--", type(error).__name__, error)
    sys.exit(1)
PYTHON
    )" || fail "$REQUEST: $out"
}

# ---------------------------------------------------------------- helpers

# start_stack NAME [VAR=value ...] (Tests/support/stack.sh) starts a stack of
# its own, which becomes the one `expect` talks to; use_stack NAME PORT goes
# back to one started before.
use_stack() {
    STACK="$1"
    PORT="$2"
    BASE="https://127.0.0.1:$PORT"
    RUN="$WORK/$1"
    DATA="$WORK/$1-data"
}

# start_server PORT COMMAND...: a helper server in the background, recorded
# so that the runner stops it by PID; returns once PORT accepts connections.
start_server() {
    local port="$1" i
    shift
    "$@" </dev/null >>"$WORK/servers.log" 2>&1 &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    for ((i = 0; i < 100; i++)); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$port" \
            2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "helper server on port $port did not start: $*" >&2
    return 1
}

# serve_in_background OUT [VAR=value ...]: `mockcloud-nginx.sh serve` in the
# background with those settings, recorded for cleanup; SERVE_PID is its
# PID. Returns once it printed its URL to OUT (or after 15 s: the caller's
# check on OUT then says what went wrong).
serve_in_background() {
    local out="$1" i
    shift
    env "$@" "$LAUNCHER" serve >"$out" 2>&1 &
    SERVE_PID=$!
    SERVER_PIDS+=("$SERVE_PID")
    for ((i = 0; i < 150; i++)); do
        grep -q 'MockCloud serving' "$out" && break
        sleep 0.1
    done
}

stop_server() {
    kill "$1" 2>/dev/null || return 0
    wait "$1" 2>/dev/null || true
}

# held NAME PATH [curl options]: a request in the background (a wait, say)
# whose status and seconds land in $WORK/NAME.status once it is answered
# (empty until then), its headers and body in $WORK/NAME.{headers,body};
# HELD_NAME is its curl's PID. `collect NAME` waits for it and sets
# HELD_STATUS (000: no answer) and HELD_SECONDS; the runner stops any left.
held() {
    local name="$1" path="$2"
    shift 2
    curl -s "${TLS_TRUST[@]}" --noproxy '*' --max-time 100 -D "$WORK/$name.headers" -o "$WORK/$name.body" \
        -w '%{http_code} %{time_total}\n' "$@" -- "$BASE$path" >"$WORK/$name.status" 2>/dev/null &
    SERVER_PIDS+=("$!")
    eval "HELD_$name=$!"
}
collect() {
    local pid
    eval "pid=\$HELD_$1"
    wait "$pid" 2>/dev/null
    read -r HELD_STATUS HELD_SECONDS <"$WORK/$1.status" || HELD_STATUS=000
}
# answered NAME: true once the held request NAME has its answer.
answered() { [[ -s "$WORK/$1.status" ]]; }

# An anchor from a JSON page on stdin.
anchor_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["anchor"])'; }

# json_of_size N FILE: a valid JSON object of exactly N bytes.
json_of_size() {
    python3 -c '
import sys
size = int(sys.argv[1])
head, tail = "{\"pad\": \"", "\"}"
sys.stdout.write(head + "x" * (size - len(head) - len(tail)) + tail)' "$1" >"$2"
}

# ---------------------------------------------------------------- run

command -v curl >/dev/null && command -v python3 >/dev/null && command -v openssl >/dev/null || {
    echo "curl, python3 and openssl are needed: packaging/deps.sh test"
    echo "0 passed, 1 failed"
    exit 1
}
# curl trusts the stack's own CA; -k only when a case's stack has none.
TLS_TRUST=(-k)
if [[ -n "${MOCKCLOUD_TEST_BASE:-}" ]]; then
    # An installed server (Tests/install/run.sh): BASE, its CA and its data
    # directory are given, and the cases that need no stack of their own run.
    BASE="${MOCKCLOUD_TEST_BASE%/}"
    PORT="${BASE##*:}"
    DATA="${MOCKCLOUD_TEST_DATA:?MOCKCLOUD_TEST_DATA: the installed data directory}"
    TLS_TRUST=(--cacert "${MOCKCLOUD_TEST_CACERT:?MOCKCLOUD_TEST_CACERT: the installed CA certificate}")
    echo "# the installed server at $BASE"
elif ! start_stack main; then
    echo "0 passed, 1 failed"
    exit 1
fi
MAIN_PORT="$PORT"

if (($# > 0)); then files=("$@"); else files=("$HERE"/cases/*.sh); fi
for file in "${files[@]}"; do
    printf '# %s\n' "${file#"$REPO"/}"
    CASE_FILE="$(basename "$file" .sh)"
    [[ -n "${MOCKCLOUD_TEST_BASE:-}" ]] || use_stack main "$MAIN_PORT"
    # shellcheck source=/dev/null
    source "$file"
    finish_case
done
summary
