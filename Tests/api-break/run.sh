#!/usr/bin/env bash
# MockCloudClient's public API against the last release's (part of make
# test): `swift package diagnose-api-breaking-changes` between the release
# commit that Tests/api-break/release names and this tree. A break fails the
# run unless it is intended: then its exact message goes into
# Tests/api-break/allowed.txt and the change into CHANGELOG.md, and the next
# release's commit replaces the one named here. The release's API dump is
# kept in Tests/api-break/baseline/<commit>/, so only this tree is built.
# Prints `N passed, M failed` last.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"
HERE=Tests/api-break
release="$(tr -d '[:space:]' <"$HERE/release")"

echo "-- MockCloudClient's API keeps the $(tr -d '[:space:]' <VERSION) release's (commit $release)"
if ! git cat-file -e "$release^{commit}" 2>/dev/null; then
    echo "FAIL: the release commit $release is not in this clone; the check compares against it."
    echo "      In a shallow clone, run: git fetch --unshallow"
    echo "0 passed, 1 failed"
    exit 1
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if swift package diagnose-api-breaking-changes "$release" --products MockCloudClient \
    --baseline-dir "$HERE/baseline" --breakage-allowlist-path "$HERE/allowed.txt" >"$log" 2>&1; then
    grep -E "No breaking changes|breaking change" "$log" | tail -n 3
    echo "1 passed, 0 failed"
else
    grep -E "API breakage|error:|💔" "$log" || tail -n 30 "$log"
    echo "FAIL: MockCloudClient's public API breaks the release's. If that is intended, add each"
    echo "      line above to $HERE/allowed.txt and say it in CHANGELOG.md."
    echo "0 passed, 1 failed"
    exit 1
fi
