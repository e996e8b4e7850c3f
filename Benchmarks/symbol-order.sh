#!/usr/bin/env bash
# Writes Benchmarks/symbol-order.txt: every function the installed CGI
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
OUT="$ROOT/Benchmarks/symbol-order.txt"
CC="$(command -v cc || command -v clang || true)"
[[ -n "$CC" ]] || { echo "symbol-order: no C compiler (cc or clang) to locate libc.a" >&2; exit 1; }
for tool in valgrind openssl nm readelf swiftc; do
    command -v "$tool" >/dev/null || { echo "symbol-order: $tool is missing" >&2; exit 1; }
done
for program in user-settings inbox; do
    [[ -x "$BIN/$program" ]] || { echo "symbol-order: $BIN/$program is missing: run make install" >&2; exit 1; }
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(umask 077 && printf 'order:%s\n' "$(openssl rand -hex 32)" >"$WORK/hmac.keys")

# run TOOL NAME PROGRAM METHOD URI KEY [QUERY [BODY [VAR=value ...]]]: one
# request under valgrind's TOOL, the CGI environment as nginx's snippet sets it.
run() {
    local tool="$1" name="$2" program="$3" method="$4" uri="$5" key="$6" query="${7:-}" body="${8:-}" out
    shift $(($# < 8 ? $# : 8))
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
        { echo "symbol-order: $name failed: $(head -c 300 "$WORK/out")$(tail -5 "$WORK/valgrind.log")" >&2; exit 1; }
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

# The objects and archives the release link reads, for the section sizes.
SWIFT_STATIC="$(dirname "$(readlink -f "$(command -v swiftc)")")/../lib/swift_static/linux"
INPUTS=("$ROOT"/.build/release/*.build/*.o "$SWIFT_STATIC"/*.a)
for lib in libc.a libcrypto.a libstdc++.a libgcc.a libmvec.a; do
    path="$("$CC" -print-file-name="$lib" 2>/dev/null || true)"
    [[ "$path" != /* || ! -f "$path" ]] || INPUTS+=("$path")
done

python3 - "$WORK" "$BIN" "$OUT" "${INPUTS[@]}" <<'PYTHON'
import bisect, os, re, subprocess, sys
work, bin_dir, out, inputs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

# lld places each input section where its first listed symbol is, so a
# listed symbol inside a large section (the standard library's Swift.o keeps
# 1.6 MB of code in one .text) would drag all of it into the hot region.
# Such symbols are left out: readelf names every section's size and the
# section of every symbol, object by object.
LARGE = 64 * 1024
in_large = set()
for path in inputs:
    result = subprocess.run(["readelf", "-SW", "-sW", path], capture_output=True, text=True, errors="replace")
    if result.returncode != 0:
        sys.exit(f"symbol-order: readelf {path}: {result.stderr.strip()[:300]}")
    text = result.stdout
    sizes = {}
    for line in text.splitlines():
        if line.startswith("File: "):
            sizes = {}
            continue
        section = re.match(r"\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s", line)
        if section:
            sizes[section.group(1)] = int(section.group(2), 16)
            continue
        symbol = line.split()
        if (len(symbol) == 8 and symbol[0].endswith(":") and symbol[6].isdigit()
                and sizes.get(symbol[6], 0) > LARGE):
            in_large.add(symbol[7])

# Functions in the order the profiles first name them; callgrind names a
# function once as "fn=(id) name" and by "(id)" after that.
functions, seen = [], set()
for profile in sorted(os.listdir(os.path.join(work, "callgrind"))):
    for line in open(os.path.join(work, "callgrind", profile), encoding="utf-8", errors="replace"):
        # "name'2" is callgrind's name for a recursive call of name.
        match = re.match(r"^c?fn=\(\d+\) (\S+?)(?:'\d+)?$", line.rstrip("\n"))
        if match and not match.group(1).startswith("0x") and match.group(1) not in seen:
            seen.add(match.group(1))
            functions.append(match.group(1))

# valgrind emulates no AVX-512, so glibc's string functions resolve (ifunc)
# to their AVX2 versions under it; a CPU with AVX-512 runs the EVEX or
# AVX-512 versions of the same functions instead. Each is listed after the
# version that ran.
code = set()
for program in ("user-settings", "inbox"):
    for line in subprocess.run(["nm", "--defined-only", os.path.join(bin_dir, program)], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTiI":
            code.add(fields[2])
# The profile names a family by its resolver (strcmp_ifunc), its IFUNC
# symbol (memmove) or the version valgrind ran (__strlen_avx2).
def family(name):
    for pattern in (r"^(\w+?)_ifunc$", r"^__([a-z0-9]+)_(?:avx2|avx|sse2|ssse3|sse4_1|sse4_2)", r"^([a-z0-9]+)$"):
        match = re.match(pattern, name)
        if match:
            return "__" + match.group(1) + "_"
    return None
with_variants = []
for name in functions:
    with_variants.append(name)
    prefix = family(name)
    if prefix:
        for variant in sorted(code):
            if (variant.startswith(prefix) and ("evex" in variant or "avx512" in variant)
                    and variant not in seen):
                seen.add(variant)
                with_variants.append(variant)
functions = with_variants

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

if not in_large:
    sys.exit("symbol-order: no symbol in a section over 64 KiB: the standard library's Swift.o was not read")
listed = [name for name in functions + variables if name not in in_large]
with open(out, "w") as f:
    f.write("\n".join(listed) + "\n")
print(f"symbol-order: {len(functions)} functions and {len(variables)} variables from "
      f"{len(os.listdir(os.path.join(work, 'callgrind')))} requests, {len(functions) + len(variables) - len(listed)} "
      f"of them in sections over {LARGE // 1024} KiB left out -> {out}")
PYTHON
