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
# shellcheck source=cases.sh
source "$HERE/cases.sh"

# Short: fcgiwrap's socket lives in here, and socket paths stop at 107 bytes.
WORK="$(mktemp -d /tmp/mca.XXXXXX)"
STACK_RUNS=()
SERVER_PIDS=()

cleanup() {
    local run pid
    for run in "${STACK_RUNS[@]}"; do
        MOCKCLOUD_RUN="$run" "$LAUNCHER" stop || echo "could not stop the stack in $run" >&2
    done
    for pid in "${SERVER_PIDS[@]}"; do stop_server "$pid"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- requests

STATUS=""

# expect STATUS METHOD PATH [curl options]: one HTTPS request to the stack.
expect() {
    local want="$1" method="$2" path="$3"
    shift 3
    local args=(-sk --noproxy '*' --max-time 30 -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}')
    case "$method" in
        GET) ;;
        HEAD) args+=(--head) ;;
        *) args+=(-X "$method") ;;
    esac
    : >"$WORK/headers"
    : >"$WORK/body"
    REQUEST="$method $path"
    STATUS="$(curl "${args[@]}" "$@" -- "$BASE$path" 2>"$WORK/curl.err")"
    if [[ "$STATUS" != "$want" ]]; then
        fail "$REQUEST: status $STATUS, expected $want; body: $(head -c 400 "$WORK/body")$(head -c 200 "$WORK/curl.err")"
    fi
    # The contract's rule for every answer: JSON, or no body at all.
    if [[ "$STATUS" == 204 || "$STATUS" == 304 ]]; then
        [[ ! -s "$WORK/body" ]] || fail "$REQUEST: a $STATUS answer has a body: $(head -c 200 "$WORK/body")"
    elif [[ "$STATUS" != 000 ]]; then
        local type
        type="$(last_header Content-Type)"
        [[ "$type" == application/json || "$type" == "application/json;"* ]] ||
            fail "$REQUEST: Content-Type is '$type', expected application/json"
        if [[ "$method" != HEAD ]] && ! python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$WORK/body" 2>/dev/null; then
            fail "$REQUEST: body is not JSON: $(head -c 200 "$WORK/body")"
        fi
    fi
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

# The value of a header of the last answer (the final block, after any 100).
last_header() {
    awk -v want="$(printf '%s' "$1" | tr 'A-Z' 'a-z')" '
        { sub(/\r$/, "") }
        /^HTTP\// { value = ""; found = 0; next }
        {
            colon = index($0, ":")
            if (colon > 0 && tolower(substr($0, 1, colon - 1)) == want && !found) {
                value = substr($0, colon + 1); sub(/^[ \t]+/, "", value); found = 1
            }
        }
        END { if (found) print value; else exit 1 }' "$WORK/headers"
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

# start_stack NAME [VAR=value ...]: a stack of its own (run dir, data dir,
# port), with extra MOCKCLOUD_* settings; it becomes the one `expect` talks to.
start_stack() {
    local name="$1" port
    shift
    port="$(free_port)"
    STACK_RUNS+=("$WORK/$name")
    if ! env "MOCKCLOUD_RUN=$WORK/$name" "MOCKCLOUD_DATA=$WORK/$name-data" "MOCKCLOUD_PORT=$port" "$@" \
        "$LAUNCHER" start >"$WORK/$name-start.log" 2>&1; then
        printf 'could not start the %s stack:\n' "$name"
        sed 's/^/    /' "$WORK/$name-start.log"
        return 1
    fi
    use_stack "$name" "$port"
}

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

stop_server() {
    kill "$1" 2>/dev/null || return 0
    wait "$1" 2>/dev/null || true
}

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
    echo "curl, python3 and openssl are needed: nginx/mockcloud-nginx.sh deps"
    echo "0 passed, 1 failed"
    exit 1
}
if ! start_stack main; then
    echo "0 passed, 1 failed"
    exit 1
fi
MAIN_PORT="$PORT"

if (($# > 0)); then files=("$@"); else files=("$HERE"/cases/*.sh); fi
for file in "${files[@]}"; do
    printf '# %s\n' "${file#"$REPO"/}"
    CASE_FILE="$(basename "$file" .sh)"
    use_stack main "$MAIN_PORT"
    # shellcheck source=/dev/null
    source "$file"
    finish_case
done

printf '%s passed, %s failed\n' "$PASSED" "$FAILED"
((FAILED == 0))
