#!/usr/bin/env bash
# Instructions (callgrind, deterministic) of the six requests the speed work
# is about, run on the installed release programs with the CGI environment
# nginx's snippet sets (the harness's Tests/support/cgi_program.py):
#   settings-get   GET /user/settings (a stored document)
#   signed-get     the same with MOCKCLOUD_HMAC_KEYS, verifying the document's MAC
#   settings-put   PUT /user/settings (replacing a stored document)
#   inbox-put      PUT /inbox/<id> on a fresh inbox (creates the log)
#   feed-page      GET /inbox?anchor=0.0.0&limit=10 over 10 messages
#   bulk-500       POST /inbox:bulk of 500 new samples (Benchmarks/samples.py)
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
# USER_KEY (default user-1) and HMAC_KEYS (a key file: signing on) may be set.
request() {
    local name="$1" program="$2" method="$3" uri="$4" query="${5:-}" body="${6:-}" tool=() cgi_env signing=()
    [[ -z "${HMAC_KEYS:-}" ]] || signing=(MOCKCLOUD_HMAC_KEYS="$HMAC_KEYS")
    [[ "$name" == - ]] || tool=(valgrind --tool=callgrind --callgrind-out-file="$WORK/out.$name" --log-file="$WORK/log.$name")
    printf '%s' "$body" >"$WORK/body"
    mapfile -d '' cgi_env < <(python3 "$ROOT/Tests/support/cgi_program.py" env "$method" "$uri" --query "$query" \
        --body "$WORK/body" --data "$DATA" --header 'Content-Type: application/json' \
        --header "X-User-Key: ${USER_KEY:-user-1}" --header 'X-Sync-Version: 1')
    env -i "${cgi_env[@]}" "${signing[@]}" "${tool[@]}" "$BIN/$program" <"$WORK/body" >"$WORK/answer" ||
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
(umask 077 && echo "bench:$(printf '%064x' 1)" >"$WORK/hmac.keys")
HMAC_KEYS="$WORK/hmac.keys" USER_KEY=signed-1 request - user-settings PUT /user/settings "" "$SETTINGS"
[[ -f "$DATA/user_settings/signed-1.json.mac" ]] || { echo "instructions: signing wrote no MAC sidecar" >&2; exit 1; }
HMAC_KEYS="$WORK/hmac.keys" USER_KEY=signed-1 request signed-get user-settings GET /user/settings
request inbox-put inbox PUT /inbox/m1 "" '{"type": "scan", "kg": 70.1}'
for i in 2 3 4 5 6 7 8 9 10; do request - inbox PUT "/inbox/m$i" "" "{\"type\": \"scan\", \"kg\": 70.$i}"; done
request feed-page inbox GET /inbox "anchor=0.0.0&limit=10"
BULK="$(python3 - "$ROOT/Benchmarks" <<'PY'
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from samples import sample
print(json.dumps({"messages": [{"id": "mirror-1.scan.%06d" % i, "version": 1, "body": sample(i)} for i in range(500)]}))
PY
)"
request bulk-500 inbox POST /inbox:bulk "" "$BULK"
# A bulk answers 200 whatever its items did: count the items stored.
stored="$(grep -o '"status": 201' "$WORK/answer" | wc -l || true)"
((stored == 500)) || { echo "instructions: bulk-500 stored $stored of 500 items: $(head -c 300 "$WORK/answer")" >&2; exit 1; }
