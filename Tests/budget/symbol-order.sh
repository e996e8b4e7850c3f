#!/usr/bin/env bash
# Fails when Benchmarks/symbol-order.txt has gone stale: the release link packs
# the listed functions and variables together (fewer page faults per request)
# and silently skips names it does not find, so a rename of a type, a file or
# a module on the request path (mangled names carry all three) loses the
# layout with no error. Stale means more than MAX_MISSING_PERCENT of the
# listed names are defined in neither installed CGI program; right after
# `make symbol-order` none is missing. Fix: `make symbol-order`.
# Prints `N passed, M failed` last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${1:-cgi-bin}"
LIST="${SYMBOL_ORDER_LIST:-Benchmarks/symbol-order.txt}"
# 5%: a renamed hot type, file or module leaves more of our ~350 names behind
# than that (renaming the module, as the split into targets did, left all of
# them); a renamed helper or two does not, and costs little layout.
MAX_MISSING_PERCENT=5

for program in user-settings inbox; do
    [[ -x "$BIN/$program" ]] || { echo "symbol-order check: $BIN/$program is missing: run make install"; echo "0 passed, 1 failed"; exit 1; }
done
defined="$(mktemp)"
trap 'rm -f "$defined"' EXIT
nm --defined-only "$BIN/user-settings" "$BIN/inbox" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$defined"
# Our own names (their mangling carries a MockCloud module name) are counted
# apart: they are a seventh of the list, and the runtime's and glibc's names,
# which survive any rename here, would hide a stale list otherwise.
count() { grep -c . || true; }
listed=$(grep . "$LIST" | sort -u | count)
missing=$(grep . "$LIST" | sort -u | comm -23 - "$defined" | count)
own=$(grep MockCloud "$LIST" | sort -u | count)
own_missing=$(grep MockCloud "$LIST" | sort -u | comm -23 - "$defined" | count)
echo "symbol-order: not in $BIN/user-settings or $BIN/inbox: $missing of $listed listed names," \
    "$own_missing of the $own from MockCloud modules (at most $MAX_MISSING_PERCENT% of each)"
if ((listed == 0 || own == 0 || missing * 100 > listed * MAX_MISSING_PERCENT || own_missing * 100 > own * MAX_MISSING_PERCENT)); then
    echo "FAIL: $LIST is stale; regenerate it with: make symbol-order"
    grep . "$LIST" | sort -u | comm -23 - "$defined" | grep MockCloud | head -5 | sed 's/^/  missing: /'
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
