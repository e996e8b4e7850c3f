#!/usr/bin/env bash
# Instructions (callgrind, deterministic) of the four requests the speed work
# is about, run on the installed release programs with the CGI environment
# nginx's snippet sets:
#   settings-get   GET /user/settings (a stored document)
#   settings-put   PUT /user/settings (replacing a stored document)
#   inbox-put      PUT /inbox/<id> on a fresh inbox (creates the log)
#   feed-page      GET /inbox?anchor=0.0.0&limit=10 over 10 messages
# Prints `name instructions` lines.  Usage: Benchmarks/instructions.sh [BIN_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/cgi-bin}"
command -v valgrind >/dev/null || { echo "instructions: valgrind is missing" >&2; exit 1; }
WORK="$(mktemp -d /tmp/mcinstr.XXXXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# A data directory of fixed length (31 bytes: longer than 15, as deployed ones are).
DATA="$WORK/data-directory-xx"

# request NAME PROGRAM METHOD URI [QUERY [BODY]]: one request; under
# callgrind when NAME is not "-", printing NAME and its instruction count.
request() {
    local name="$1" program="$2" method="$3" uri="$4" query="${5:-}" body="${6:-}" tool=()
    [[ "$name" == - ]] || tool=(valgrind --tool=callgrind --callgrind-out-file="$WORK/out.$name" --log-file="$WORK/log.$name")
    printf '%s' "$body" >"$WORK/body"
    env -i PATH=/usr/bin:/bin GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
        REQUEST_METHOD="$method" DOCUMENT_URI="$uri" SCRIPT_NAME="$uri" QUERY_STRING="$query" \
        REQUEST_URI="$uri${query:+?$query}" CONTENT_TYPE=application/json CONTENT_LENGTH="${#body}" \
        HTTP_X_USER_KEY=user-1 HTTP_X_SYNC_VERSION=1 MOCKCLOUD_DATA="$DATA" \
        "${tool[@]}" "$BIN/$program" <"$WORK/body" >"$WORK/answer" ||
        { echo "instructions: $name ($method $uri) failed: $(head -c 300 "$WORK/answer")" >&2; exit 1; }
    grep -q '^Status: [23]' "$WORK/answer" ||
        { echo "instructions: $name ($method $uri) answered $(head -1 "$WORK/answer")" >&2; exit 1; }
    [[ "$name" == - ]] || echo "$name $(sed -n 's/^summary: //p' "$WORK/out.$name")"
}

mkdir -p "$DATA"
SETTINGS='{"calibrationFactor": 1.01, "heightCm": 180, "units": "metric", "updatedAt": "2026-11-29T10:00:00Z"}'
request - user-settings PUT /user/settings "" "$SETTINGS"
request settings-get user-settings GET /user/settings
request settings-put user-settings PUT /user/settings "" "$SETTINGS"
request inbox-put inbox PUT /inbox/m1 "" '{"type": "scan", "kg": 70.1}'
for i in 2 3 4 5 6 7 8 9 10; do request - inbox PUT "/inbox/m$i" "" "{\"type\": \"scan\", \"kg\": 70.$i}"; done
request feed-page inbox GET /inbox "anchor=0.0.0&limit=10"
