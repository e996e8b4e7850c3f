#!/usr/bin/env bash
# Every test: the Swift unit and process tests (`swift test`, the process
# tests running the installed release programs in cgi-bin/), then the
# acceptance tests through nginx + fcgiwrap + TLS, the sync client's suite
# (Tests/client/), the instruction budgets
# and the symbol-order staleness check (Tests/budget/), then the short stress run
# (hostile requests, crashes, disk full, concurrency) and a short fuzz run
# (every regression replayed, each target a few seconds). Prints one combined
# `N passed, M failed` as its last line; exits 1 when anything failed.
# Before acceptance: the harness's change-log format against the installed
# programs (Tests/support/check_formats.py).
#
# `make test` installs dependencies and fresh programs first; run directly,
# this tests whatever cgi-bin/ holds.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# Counts tests in `swift test` output: XCTest's per-test lines
# ("Test Case 'X.testY' passed (0.1 seconds)") and Swift Testing's run
# summary ("Test run with 23 tests in 5 suites passed after ...") with its
# per-test failures ("Test bad() failed after ... with 2 issues.").
count_swift_tests() {
    awk '
        /Test Case .* passed \(/ { xctest_passed++ }
        /Test Case .* failed \(/ { xctest_failed++ }
        /Test run with [0-9]+ tests?/ {
            match($0, /Test run with [0-9]+/)
            split(substr($0, RSTART, RLENGTH), words, " ")
            testing_total += words[4]
            next
        }
        / Test .* failed after / && !/Test case / { testing_failed++ }
        END {
            printf "%d %d\n", xctest_passed + testing_total - testing_failed, xctest_failed + testing_failed
        }' "$1"
}

echo "== swift test"
# The import check fails the build when a target imports a module it does not
# declare (a lower layer importing a higher one): see Package.swift.
MOCKCLOUD_BIN_DIR="$PWD/cgi-bin" swift test --explicit-target-dependency-import-check error 2>&1 | tee "$logs/swift.log"
swift_status=${PIPESTATUS[0]}
read -r swift_passed swift_failed < <(count_swift_tests "$logs/swift.log")
if ((swift_status != 0 && swift_failed == 0)); then
    echo "swift test exited with status $swift_status before reporting a failed test (build error or crash)"
    swift_failed=1
fi

# run_suite NAME COMMAND...: runs a suite whose last line is `N passed, M
# failed`, and adds its counts to the totals (a failure when it exits
# non-zero without counting one).
suite_summaries=()
total_passed=$swift_passed
total_failed=$swift_failed
run_suite() {
    local name="$1" status summary passed=0 failed=0
    shift
    echo "== $name"
    "$@" 2>&1 | tee "$logs/$name.log"
    status=${PIPESTATUS[0]}
    summary="$(tail -n 1 "$logs/$name.log")"
    if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed="${BASH_REMATCH[1]}"
        failed="${BASH_REMATCH[2]}"
    fi
    if ((status != 0 && failed == 0)); then
        echo "$name exited with status $status without a failed case"
        failed=1
    fi
    suite_summaries+=("$name: $passed passed, $failed failed")
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
}

run_suite formats Tests/support/check_formats.py
# The acceptance answers are kept for Tests/api/run.sh, which checks each
# against docs/openapi.yaml.
export MOCKCLOUD_API_RECORD="$logs/api-answers"
run_suite acceptance Tests/acceptance/run.sh
run_suite api Tests/api/run.sh
# The speed work's guards: instruction budgets of the four requests it is
# about (callgrind), and the release layout's list not gone stale.
# mockcloud-sync and MockCloudClient against real stacks through TLS with
# the local CA: restarts and cut connections mid-push, 410s, settings 409.
run_suite client Tests/client/run.py
# An app's package adds MockCloudClient by version (a tagged copy of this tree).
run_suite dependent Tests/dependent/run.sh
# MockCloudClient's public API against the last release's.
run_suite api-break Tests/api-break/run.sh
run_suite instructions Tests/budget/instructions.sh
run_suite symbol-order Tests/budget/symbol-order.sh
run_suite stress Tests/stress/short.sh
# The Debian package: contents and maintainer scripts (make test-install: the real install).
run_suite package Tests/package/run.sh
# Every fuzz reproducer replayed, then each target fuzzed briefly.
run_suite fuzz Tests/Fuzz/run.sh "${MOCKCLOUD_FUZZ_SECONDS:-5}"

echo "== swift test: $swift_passed passed, $swift_failed failed; $(IFS=';'; echo "${suite_summaries[*]}" | sed 's/;/; /g')"
echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
