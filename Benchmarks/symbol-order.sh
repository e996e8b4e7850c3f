#!/usr/bin/env bash
# Writes Sources/CStartup/symbol-order.txt: every function the installed CGI
# programs run for the common requests (callgrind), then every variable they
# touch (lackey's memory trace mapped to the programs' symbols). The release
# link (Package.swift) passes the file to lld's --symbol-ordering-file, which
# packs those functions together at the start of .text and those variables
# at the start of .data, .bss and the rest, so one request touches fewer
# pages of the 11 MB programs: fewer page faults per process.
# A stale list costs only speed (unknown names are skipped), so rerun this
# after changing what a request runs:  make install && make symbol-order
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/cgi-bin"
OUT="$ROOT/Sources/CStartup/symbol-order.txt"
command -v valgrind >/dev/null || { echo "symbol-order: valgrind is missing (nginx/mockcloud-nginx.sh deps bench)" >&2; exit 1; }
for program in user-settings inbox; do
    [[ -x "$BIN/$program" ]] || { echo "symbol-order: $BIN/$program is missing: run make install" >&2; exit 1; }
    [[ -f "$ROOT/.build/$program.map" ]] || { echo "symbol-order: .build/$program.map is missing: run make install" >&2; exit 1; }
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(umask 077 && printf 'order:%s\n' "$(openssl rand -hex 32)" >"$WORK/hmac.keys")

# run TOOL NAME PROGRAM METHOD URI KEY [QUERY [BODY [VAR=value ...]]]: one
# request under valgrind's TOOL, the CGI environment as nginx's snippet sets it.
run() {
    local tool="$1" name="$2" program="$3" method="$4" uri="$5" key="$6" query="${7:-}" body="${8:-}" out
    shift 8 2>/dev/null || shift $#
    case "$tool" in
        callgrind) out=(--tool=callgrind --demangle=no --callgrind-out-file="$WORK/callgrind/$name") ;;
        lackey) out=(--tool=lackey --trace-mem=yes --log-file="$WORK/lackey/$name") ;;
    esac
    printf '%s' "$body" >"$WORK/body"
    env -i PATH=/usr/bin:/bin GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
        REQUEST_METHOD="$method" DOCUMENT_URI="$uri" SCRIPT_NAME="$uri" QUERY_STRING="$query" \
        REQUEST_URI="$uri${query:+?$query}" CONTENT_TYPE=application/json CONTENT_LENGTH="${#body}" \
        HTTP_X_USER_KEY="$key" HTTP_X_SYNC_VERSION=1 MOCKCLOUD_DATA="$WORK/data-$tool" "$@" \
        valgrind "${out[@]}" "$BIN/$program" <"$WORK/body" >"$WORK/out" 2>>"$WORK/valgrind.log" ||
        { echo "symbol-order: $name failed: $(head -c 300 "$WORK/out")" >&2; exit 1; }
    grep -q '^Status: [23]' "$WORK/out" || { echo "symbol-order: $name answered $(head -1 "$WORK/out")" >&2; exit 1; }
}

# The same requests for both tools, each on a data directory of its own (a
# data directory longer than 15 bytes, as deployed ones are: Swift stores
# shorter strings inline, and freeing a longer one runs code of its own).
SETTINGS='{"calibrationFactor": 1.01, "heightCm": 180, "units": "metric", "updatedAt": "2026-11-29T10:00:00Z"}'
SIGNED="MOCKCLOUD_HMAC_KEYS=$WORK/hmac.keys"
for tool in callgrind lackey; do
    mkdir "$WORK/$tool" "$WORK/data-$tool"
    run $tool 01-settings-put user-settings PUT /user/settings u1 "" "$SETTINGS"
    run $tool 02-settings-get user-settings GET /user/settings u1 ""
    run $tool 03-settings-put-signed user-settings PUT /user/settings s1 "" "$SETTINGS" "$SIGNED"
    run $tool 04-settings-get-signed user-settings GET /user/settings s1 "" "" "$SIGNED"
    run $tool 05-inbox-put inbox PUT /inbox/m1 u1 "" '{"type": "scan", "kg": 70.1}'
    run $tool 06-inbox-put inbox PUT /inbox/m2 u1 "" '{"type": "scan", "kg": 70.2}'
    run $tool 07-inbox-get inbox GET /inbox/m1 u1 ""
    run $tool 08-inbox-feed inbox GET /inbox u1 "anchor=0.0.0&limit=10"
    run $tool 09-inbox-put-signed inbox PUT /inbox/m1 s1 "" '{"type": "scan"}' "$SIGNED"
    run $tool 10-inbox-get-signed inbox GET /inbox/m1 s1 "" "" "$SIGNED"
done

python3 - "$WORK" "$BIN" "$OUT" "$ROOT/.build" <<'PYTHON'
import bisect, os, re, subprocess, sys
work, bin_dir, out, build = sys.argv[1:]

# lld places each input section where its first listed symbol is, so a
# listed symbol inside a large section (the standard library's 1.6 MB
# Swift.o .text holds thousands of functions) would drag all of it into
# the hot region. Such symbols are left out; the link maps name them.
LARGE = 64 * 1024
in_large = set()
for program in ("user-settings", "inbox"):
    # Columns: VMA LMA Size Align, then the output section, an input section
    # eight columns further in, or a symbol sixteen columns in.
    section_size, names_at = 0, None
    for line in open(os.path.join(build, program + ".map"), encoding="utf-8", errors="replace"):
        if names_at is None:
            names_at = line.index("Out")
            continue
        name = line[names_at:].rstrip("\n")
        indent = len(name) - len(name.lstrip(" "))
        if indent == 8:  # an input section
            section_size = int(line.split()[2], 16)
        elif indent == 16 and section_size > LARGE:  # a symbol in it
            in_large.add(name.strip())

# Functions in the order the profiles first name them; callgrind names a
# function once as "fn=(id) name" and by "(id)" after that.
functions, seen = [], set()
for profile in sorted(os.listdir(os.path.join(work, "callgrind"))):
    for line in open(os.path.join(work, "callgrind", profile), encoding="utf-8", errors="replace"):
        match = re.match(r"^c?fn=\(\d+\) (\S+)$", line.rstrip("\n"))
        if match and not match.group(1).startswith("0x") and match.group(1) not in seen:
            seen.add(match.group(1))
            functions.append(match.group(1))

# Variables in the order the memory traces first touch them: each load,
# store or modify address inside a variable of the program that ran.
variables = []
for program in ("user-settings", "inbox"):
    binary = os.path.join(bin_dir, program)
    symbols = []
    for line in subprocess.run(["nm", "-n", "-S", "--defined-only", binary], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "bBdDrRvV":
            symbols.append((int(fields[0], 16), max(int(fields[1], 16), 1), fields[3]))
    symbols.sort()
    starts = [s[0] for s in symbols]
    for trace in sorted(os.listdir(os.path.join(work, "lackey"))):
        uses = "settings" if program == "user-settings" else "inbox"
        if uses not in trace:
            continue
        for line in open(os.path.join(work, "lackey", trace)):
            if len(line) < 4 or line[0] != " " or line[1] not in "LSM":
                continue
            address = int(line[3:].split(",")[0], 16)
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and address < symbols[i][0] + symbols[i][1] and symbols[i][2] not in seen:
                seen.add(symbols[i][2])
                variables.append(symbols[i][2])

listed = [name for name in functions + variables if name not in in_large]
with open(out, "w") as f:
    f.write("\n".join(listed) + "\n")
print(f"symbol-order: {len(functions)} functions and {len(variables)} variables from "
      f"{len(os.listdir(os.path.join(work, 'callgrind')))} requests, {len(functions) + len(variables) - len(listed)} "
      f"of them in sections over {LARGE // 1024} KiB left out -> {out}")
PYTHON
