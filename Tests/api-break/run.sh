#!/usr/bin/env bash
# MockCloudClient's public API against the last release's (part of make
# test): `swift package diagnose-api-breaking-changes` between the release
# commit that Tests/api-break/release names and this tree, over everything
# an app can name: MockCloudClient, and MockCloudWire, which declares the
# wire types the client hands out under its own names (WireTypes.swift).
# SwiftPM compares the product's module only, and swift-api-digester counts
# a `package` declaration as still there, so MockCloudWire is compared here
# with the digester itself, over both dumps with their `package` (internal)
# declarations taken out: a type or member that stops being public is a
# removal. A break fails the run unless it is intended: then its exact
# message goes into Tests/api-break/allowed.txt and the change into
# CHANGELOG.md, and the next release's commit replaces the one named here.
# The release's API dumps are kept in Tests/api-break/baseline/<commit>/
# (MockCloudWire.json: `swift-api-digester -dump-sdk -module MockCloudWire`
# over the release's debug build), so only this tree is built.
# Prints `N passed, M failed` last.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"
HERE=Tests/api-break
# The tests' build flags (TEST_BUILD): with others, SwiftPM would rebuild
# the modules make test's build left in .build.
source Tests/support/test-build.sh
release="$(tr -d '[:space:]' <"$HERE/release")"

echo "-- MockCloudClient's API (and MockCloudWire's) keeps the $(tr -d '[:space:]' <VERSION) release's (commit $release)"
if ! git cat-file -e "$release^{commit}" 2>/dev/null; then
    echo "FAIL: the release commit $release is not in this clone; the check compares against it."
    echo "      In a shallow clone, run: git fetch --unshallow"
    echo "0 passed, 1 failed"
    exit 1
fi
log="$(mktemp)"
dumps="$(mktemp -d)"
trap 'rm -rf "$log" "$dumps"' EXIT
passed=0 failed=0
fail() {
    echo "FAIL: $1's public API breaks the release's. If that is intended, add each"
    echo "      line above to $HERE/allowed.txt and say it in CHANGELOG.md."
    failed=$((failed + 1))
}
if swift package "${TEST_BUILD[@]}" diagnose-api-breaking-changes "$release" --products MockCloudClient \
    --baseline-dir "$HERE/baseline" --breakage-allowlist-path "$HERE/allowed.txt" >"$log" 2>&1; then
    grep -E "No breaking changes|breaking change" "$log" | tail -n 3
    passed=$((passed + 1))
else
    grep -E "API breakage|error:|💔" "$log" || tail -n 30 "$log"
    fail MockCloudClient
fi

# MockCloudWire, from the modules SwiftPM's run has just built.
modules="$(swift build "${TEST_BUILD[@]}" --show-bin-path)/Modules"
public_only() {  # the dump $1 without its internal (package) declarations, into $2
    python3 - "$1" "$2" <<'PY'
import json, sys
def public(node):
    node["children"] = [public(c) for c in node.get("children", []) if not c.get("isInternal")]
    return node
dump = json.load(open(sys.argv[1]))
public(dump["ABIRoot"])
json.dump(dump, open(sys.argv[2], "w"))
PY
}
if swift-api-digester -dump-sdk -compiler-style-diags -I "$modules" -module MockCloudWire -o "$dumps/now.json" >"$log" 2>&1 \
    && public_only "$HERE/baseline/$release/MockCloudWire.json" "$dumps/release-public.json" \
    && public_only "$dumps/now.json" "$dumps/now-public.json" \
    && swift-api-digester -diagnose-sdk -compiler-style-diags -input-paths "$dumps/release-public.json" \
        -input-paths "$dumps/now-public.json" -breakage-allowlist-path "$HERE/allowed.txt" >"$log" 2>&1; then
    if grep -E "API breakage" "$log"; then
        fail MockCloudWire
    else
        echo "No breaking changes detected in MockCloudWire"
        passed=$((passed + 1))
    fi
else
    tail -n 30 "$log"
    echo "FAIL: MockCloudWire's API could not be compared"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
((failed == 0))
