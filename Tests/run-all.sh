#!/usr/bin/env bash
# Every test (`make test`): the release programs built and installed into
# cgi-bin/, then every suite, several side by side:
#
#   swift test      the Swift unit and process tests (their own debug build)
#   formats         the harness's change-log format against the programs
#   acceptance      shell cases through nginx + fcgiwrap + TLS
#   api             docs/openapi.yaml: the document, schemathesis, and every
#                   answer the acceptance cases got (so after acceptance)
#   client          mockcloud-sync and MockCloudClient against real stacks
#   reinstall       make install's step into a cgi-bin a stack serves from
#   dependent       an app's package adds MockCloudClient by version
#   instructions    callgrind instruction budgets of the programs
#   symbol-order    Benchmarks/symbol-order.txt not stale
#   stress          the short stress run (hostile, crashes, faults, races, disk full)
#   package         the Debian package's contents and maintainer scripts
#   fuzz            every fuzz reproducer replayed, each target fuzzed briefly
#
# Two lanes run at once on the machine's cores, once the release build is
# done: one of suites that mostly wait (on stacks, sleeps, timeouts), one of
# builds and suites that mostly compute, which takes the CPU the waiting
# ones leave. Each suite writes to a log of its own,
# printed whole when the suite ends, then a line with its counts, its
# seconds and the CPU seconds of every process it started (its stacks
# included: Tests/support/reap.py); a process it left running fails it.
# Last: a line per suite, and one combined `N passed, M failed`; exits 1
# when anything failed.
#
#   Tests/run-all.sh            what `make test` runs (after packaging/deps.sh test)
#   Tests/run-all.sh --all      also the long runs (`make test-all`): make
#                               stress, fuzz, flood and testssl
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"
export PATH

ALL=0
[[ "${1:-}" != --all ]] || ALL=1

logs="$(mktemp -d)"
lanes=()
cleanup() {
    local pid
    for pid in "${lanes[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; done
    rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The import check fails the build when a target imports a module it does
# not declare (a lower layer importing a higher one): see Package.swift.
# (The index store stays: on Linux, swift test finds XCTest cases in it.)
TEST_BUILD=(--explicit-target-dependency-import-check error)
# The acceptance answers are kept for Tests/api/run.sh, which checks each
# against docs/openapi.yaml.
export MOCKCLOUD_API_RECORD="$logs/api-answers"

# ---------------------------------------------------------------- counting

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

# counts NAME STATUS: "passed failed" of a finished suite: its last line
# `N passed, M failed` (swift test: its own lines); a suite that exits
# non-zero without counting a failure counts one.
counts() {
    local name="$1" status="$2" passed=0 failed=0 last
    if [[ "$name" == "swift test" ]]; then
        read -r passed failed < <(count_swift_tests "$logs/$name.log")
    else
        last="$(tail -n 1 "$logs/$name.log")"
        if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            passed="${BASH_REMATCH[1]}" failed="${BASH_REMATCH[2]}"
        fi
    fi
    ((status == 0 || failed > 0)) || failed=1
    echo "$passed $failed"
}

# ---------------------------------------------------------------- lanes

# step NAME COMMAND...: runs COMMAND with its output in NAME's log, under
# Tests/support/reap.py, which counts the CPU time of every process it
# starts, the stacks' daemons included, and finds any left running. When it
# ends, NAME.done holds its exit status, seconds, CPU seconds and what it
# left running, for the main loop to report. Returns the status, so that a
# lane can stop at a failed build.
step() {
    local name="$1" start=$SECONDS status=1 cpu=0 left=""
    shift
    echo "$name" >>"$logs/started"
    Tests/support/reap.py "$logs/$name.reaped" "$@" >"$logs/$name.log" 2>&1 </dev/null
    read -r status cpu left <"$logs/$name.reaped"
    echo "$status $((SECONDS - start)) $cpu $left" >"$logs/$name.done"
    return "$status"
}

# A build: not a suite (no checks of its own), reported by its time; a
# failed one fails the run and stops its lane.
build() {
    local name="$1"
    shift
    echo "$name" >>"$logs/builds"
    step "$name" "$@"
}

# skipped NAME WHY: a suite its lane could not run (its build failed).
skipped() {
    echo "$1" >>"$logs/started"
    printf '%s\n0 passed, 1 failed\n' "$2" >"$logs/$1.log"
    echo "1 0 0" >"$logs/$1.done"
}

# The lane of suites that mostly wait: stacks, sleeps, timeouts. Starts once
# the release programs are installed.
waiting_lane() {
    step formats Tests/support/check_formats.py
    step client Tests/client/run.py
    step acceptance Tests/acceptance/run.sh
    wait_for "api packages"     # one pip at a time in .build/venv
    step api Tests/api/run.sh
    step reinstall Tests/reinstall/run.py
    step package Tests/package/run.sh
    step symbol-order Tests/budget/symbol-order.sh
    if ((ALL)); then
        step stress-long Tests/stress/run.sh
        step flood Tests/stress/flood.sh
        step testssl bash -c 'packaging/deps.sh serve testssl && Tests/stress/testssl.sh'
    fi
}

# The lane of builds and suites that mostly compute. It starts once the
# release build is done (SwiftPM builds one configuration of a package at a
# time).
computing_lane() {
    wait_for_release || return
    if build "build (tests)" swift build --build-tests "${TEST_BUILD[@]}"; then
        step "swift test" env MOCKCLOUD_BIN_DIR="$PWD/cgi-bin" swift test --skip-build "${TEST_BUILD[@]}"
    else
        skipped "swift test" "swift test: its build failed (see \"build (tests)\" above)"
    fi
    step stress Tests/stress/short.sh
    step instructions Tests/budget/instructions.sh
    step fuzz Tests/Fuzz/run.sh "${MOCKCLOUD_FUZZ_SECONDS:-5}"
    step dependent Tests/dependent/run.sh
    step api-break Tests/api-break/run.sh
    ((ALL)) && step fuzz-long Tests/Fuzz/run.sh "${FUZZ_SECONDS:-60}"
}

# wait_for STEP: returns once STEP has ended.
wait_for() {
    while [[ ! -e "$logs/$1.done" ]]; do sleep 1; done
}

# wait_for_release: returns once the release build has ended; true when it worked.
wait_for_release() {
    local status
    wait_for release
    read -r status _ <"$logs/release.done"
    ((status == 0))
}

# ---------------------------------------------------------------- reporting

declare -A reported=()
total_passed=0
total_failed=0
summaries=()

# report: prints each finished step not printed yet: its log whole, then its line.
report() {
    local name status seconds cpu left passed failed line
    [[ -e "$logs/started" ]] || return 0
    while IFS= read -r name; do
        [[ -z "${reported[$name]:-}" && -e "$logs/$name.done" ]] || continue
        reported[$name]=1
        read -r status seconds cpu left <"$logs/$name.done"
        echo "== $name"
        if grep -qxF -- "$name" "$logs/builds" 2>/dev/null; then
            # A build's log is long and says nothing when it worked.
            if ((status == 0)); then tail -n 3 "$logs/$name.log"; else cat "$logs/$name.log"; fi
            line="$name: $( ((status == 0)) && echo built || echo FAILED), $seconds s (CPU $cpu s)"
            ((status == 0)) || total_failed=$((total_failed + 1))
        else
            cat "$logs/$name.log"
            read -r passed failed < <(counts "$name" "$status")
            total_passed=$((total_passed + passed))
            total_failed=$((total_failed + failed))
            line="$name: $passed passed, $failed failed, $seconds s (CPU $cpu s)"
        fi
        if [[ -n "$left" ]]; then
            # A suite stops what it starts: a process left running is a failure.
            echo "FAIL  $name left processes running: $left"
            total_failed=$((total_failed + 1))
            line+="; left running: $left"
        fi
        echo "== $line"
        summaries+=("$line")
    done <"$logs/started"
}

# ---------------------------------------------------------------- run

started=$SECONDS
# The API suite's Python packages (PyPI, on a fresh clone) while the programs build.
( build "api packages" packaging/deps.sh api ) &
lanes+=($!)
( computing_lane ) &
lanes+=($!)
if build release make --no-print-directory install; then
    ( waiting_lane ) &
    lanes+=($!)
else
    for name in "swift test" formats client acceptance api reinstall package symbol-order stress instructions fuzz dependent api-break; do
        skipped "$name" "$name: the release build failed (see \"release\" above)"
    done
fi
while jobs -r | grep -q .; do
    report
    sleep 1
done
wait
report
lanes=()

echo "== every suite, $((SECONDS - started)) s in all:"
printf '   %s\n' "${summaries[@]}"
echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
