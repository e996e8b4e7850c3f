#!/usr/bin/env bash
# Writes Sources/CStartup/symbol-order.txt: every function the installed CGI
# programs run for the common requests, as callgrind sees them. The release
# link (Package.swift) passes the file to lld's --symbol-ordering-file, which
# packs those functions together at the start of .text, so one request
# touches fewer pages of the 11 MB programs: fewer page faults per process.
# A stale list costs only speed (unknown names are skipped), so rerun this
# after changing what a request runs:  make install && make symbol-order
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/cgi-bin"
OUT="$ROOT/Sources/CStartup/symbol-order.txt"
command -v valgrind >/dev/null || { echo "symbol-order: valgrind is missing (nginx/mockcloud-nginx.sh deps bench)" >&2; exit 1; }
for program in user-settings inbox; do
    [[ -x "$BIN/$program" ]] || { echo "symbol-order: $BIN/$program is missing: run make install" >&2; exit 1; }
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/data" "$WORK/profiles"
(umask 077 && printf 'order:%s\n' "$(openssl rand -hex 32)" >"$WORK/hmac.keys")

# run NAME PROGRAM METHOD URI KEY [QUERY [BODY [VAR=value ...]]]: one request
# under callgrind, the CGI environment as nginx's snippet sets it.
run() {
    local name="$1" program="$2" method="$3" uri="$4" key="$5" query="${6:-}" body="${7:-}"
    shift 7 2>/dev/null || shift $#
    printf '%s' "$body" >"$WORK/body"
    env -i PATH=/usr/bin:/bin GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
        REQUEST_METHOD="$method" DOCUMENT_URI="$uri" SCRIPT_NAME="$uri" QUERY_STRING="$query" \
        REQUEST_URI="$uri${query:+?$query}" CONTENT_TYPE=application/json CONTENT_LENGTH="${#body}" \
        HTTP_X_USER_KEY="$key" HTTP_X_SYNC_VERSION=1 MOCKCLOUD_DATA="$WORK/data" "$@" \
        valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/profiles/$name" \
        "$BIN/$program" <"$WORK/body" >"$WORK/out" 2>>"$WORK/valgrind.log" ||
        { echo "symbol-order: $name failed: $(head -c 300 "$WORK/out")" >&2; exit 1; }
    grep -q '^Status: [23]' "$WORK/out" || { echo "symbol-order: $name answered $(head -1 "$WORK/out")" >&2; exit 1; }
}

SETTINGS='{"calibrationFactor": 1.01, "heightCm": 180, "units": "metric", "updatedAt": "2026-11-29T10:00:00Z"}'
SIGNED="MOCKCLOUD_HMAC_KEYS=$WORK/hmac.keys"
run 01-settings-put user-settings PUT /user/settings u1 "" "$SETTINGS"
run 02-settings-get user-settings GET /user/settings u1 ""
run 03-settings-put-signed user-settings PUT /user/settings s1 "" "$SETTINGS" "$SIGNED"
run 04-settings-get-signed user-settings GET /user/settings s1 "" "" "$SIGNED"
run 05-inbox-put inbox PUT /inbox/m1 u1 "" '{"type": "scan", "kg": 70.1}'
run 06-inbox-put inbox PUT /inbox/m2 u1 "" '{"type": "scan", "kg": 70.2}'
run 07-inbox-get inbox GET /inbox/m1 u1 ""
run 08-inbox-feed inbox GET /inbox u1 "anchor=0.0.0&limit=10"
run 09-inbox-put-signed inbox PUT /inbox/m1 s1 "" '{"type": "scan"}' "$SIGNED"
run 10-inbox-get-signed inbox GET /inbox/m1 s1 "" "" "$SIGNED"

# The names in the order the profiles first mention them; callgrind names
# a function once with "fn=(id) name" and by "(id)" after that.
python3 - "$WORK/profiles" "$OUT" <<'PYTHON'
import os, re, sys
profiles, out = sys.argv[1:]
names, seen = [], set()
for profile in sorted(os.listdir(profiles)):
    for line in open(os.path.join(profiles, profile), encoding="utf-8", errors="replace"):
        match = re.match(r"^c?fn=\(\d+\) (\S+)$", line.rstrip("\n"))
        if match and not match.group(1).startswith("0x") and match.group(1) not in seen:
            seen.add(match.group(1))
            names.append(match.group(1))
with open(out, "w") as f:
    f.write("\n".join(names) + "\n")
print(f"symbol-order: {len(names)} functions from {len(os.listdir(profiles))} requests -> {out}")
PYTHON
