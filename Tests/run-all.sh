#!/usr/bin/env bash
# Every test (`make test`): the release programs built and installed into
# cgi-bin/, then every suite, several side by side:
#
#   swift test      the Swift unit and process tests (their own debug build)
#   api-break       MockCloudClient's public API against the last release's
#   formats         the harness's change-log format against the programs
#   acceptance      shell cases through nginx + fcgiwrap + TLS
#   api             docs/openapi.yaml: the document, schemathesis (examples
#                   and coverage) and the merge's convergence against a
#                   stack of its own
#   api (answers)   every answer the acceptance cases got, against the
#                   document (so after acceptance)
#   client (PART)   mockcloud-sync and MockCloudClient against real stacks,
#                   in four parts (Tests/client/run.py --part)
#   reinstall       make install's step into a cgi-bin a stack serves from
#   instructions    callgrind instruction budgets of the programs
#   symbol-order    Benchmarks/symbol-order.txt not stale
#   stress          the short stress run (hostile, crashes, faults, races, disk full)
#   package         the Debian package's contents and maintainer scripts
#   ... (fastcgi)   the FastCGI mode: the acceptance cases and a client part
#                   named in docs/TESTING.md against stacks in that mode
#                   (MOCKCLOUD_TEST_MODE=fastcgi), and its own stress test
#                   (workers killed mid-request, the pool whole again)
#
# The tests' debug build starts at once, beside the release build. Once
# the release build is done, up to MOCKCLOUD_TEST_JOBS steps (default 5,
# the tests' build counted while it runs: most suites wait on stacks,
# sleeps and timeouts more than they compute) run at once, the longest
# first, each when what it needs has ended (the Swift tests their build;
# api (answers) the acceptance cases). Each
# suite writes to a log of its own, printed whole when the suite ends, then
# a line with its counts, its seconds and the CPU seconds of every process
# it started (its stacks included: Tests/support/reap.py); a process it left
# running fails it. Last: a line per suite, and one combined `N passed, M
# failed`; exits 1 when anything failed.
#
#   Tests/run-all.sh            what `make test` runs (after packaging/deps.sh test)
#   Tests/run-all.sh --all      also the long runs (`make test-all`): make
#                               stress, fuzz, flood and testssl, every fuzz
#                               reproducer, the dependent package, the API's
#                               fuzzing phase, the client's URLSession part,
#                               and every acceptance case, the API and every
#                               client part in the FastCGI mode
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"
export PATH

ALL=0
[[ "${1:-}" != --all ]] || ALL=1
SLOTS="${MOCKCLOUD_TEST_JOBS:-5}"

logs="$(mktemp -d)"
cleanup() {
    local pid
    for pid in $(jobs -p); do kill -TERM "$pid" 2>/dev/null; done
    rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tests' build flags: TEST_BUILD.
source Tests/support/test-build.sh
# The acceptance answers are kept for Tests/api/run.sh, which checks each
# against docs/openapi.yaml.
export MOCKCLOUD_API_RECORD="$logs/api-answers"

# ---------------------------------------------------------------- the jobs

# job NAME NEEDS COMMAND...: a suite (or, with BUILD=1 before it, a build)
# to run once every job NEEDS names (comma-separated: names have spaces,
# "build (tests)") has ended; one that
# needs a build that failed is not run. Listed longest first: the order in
# which free slots take them.
JOBS=()
declare -A NEEDS=() COMMAND=() IS_BUILD=()
job() {
    local name="$1"
    JOBS+=("$name")
    NEEDS[$name]="$2"
    IS_BUILD[$name]="${BUILD:-0}"
    shift 2
    COMMAND[$name]="$(printf '%q ' "$@")"
}

# The FastCGI mode: the same suites against stacks in that mode, the
# subset docs/TESTING.md names ("Both modes"); its answers are not kept for
# the API check (the CGI mode's are). The rest in make test-all.
FASTCGI=(env -u MOCKCLOUD_API_RECORD MOCKCLOUD_TEST_MODE=fastcgi)
FASTCGI_CASES=()
for case in settings inbox hostile launcher; do
    FASTCGI_CASES+=("Tests/acceptance/cases/$case.sh")
done
job acceptance "" Tests/acceptance/run.sh
job stress "" Tests/stress/short.sh
# One pip at a time in .build/venv: after api-packages. The document
# against a stack of its own, beside the acceptance cases; then against
# the answers they kept. Schemathesis's examples and coverage phases here,
# its fuzzing phase in make test-all (70 s of make test's cores).
if ((ALL)); then
    job api api-packages Tests/api/run.sh service
else
    job api api-packages env MOCKCLOUD_API_PHASES=examples,coverage Tests/api/run.sh service
fi
# The watch part's large folder: 50,000 files in make test-all, 5,000 here
# (the box syncs each message: the 50,000 take minutes). The library over
# URLSessionTransport (FoundationNetworking on Linux, itself over libcurl)
# in make test-all: make test runs the same checks over CurlTransport.
LARGE_FOLDER=(env MOCKCLOUD_LARGE_FOLDER="$( ((ALL)) && echo 50000 || echo 5000)")
CLIENT_PARTS=(tool curl watch waits)
((ALL == 0)) || CLIENT_PARTS+=(urlsession)
for part in "${CLIENT_PARTS[@]}"; do
    job "client ($part)" "" "${LARGE_FOLDER[@]}" Tests/client/run.py --part "$part"
done
job "acceptance (fastcgi)" "" "${FASTCGI[@]}" Tests/acceptance/run.sh "${FASTCGI_CASES[@]}"
job "client (fastcgi)" "" "${FASTCGI[@]}" Tests/client/run.py --part curl
job "fastcgi chaos" "" Tests/stress/fastcgi.py
job "swift test" "build (tests)" env MOCKCLOUD_BIN_DIR="$PWD/cgi-bin" swift test --skip-build "${TEST_BUILD[@]}"
job "api (answers)" "acceptance,api-packages" Tests/api/run.sh answers
job package "" Tests/package/run.sh
# SwiftPM again, in the same .build: after the tests' build and run.
job api-break "swift test" Tests/api-break/run.sh
job reinstall "" Tests/reinstall/run.py
job instructions "" Tests/budget/instructions.sh
job formats "" Tests/support/check_formats.py
job symbol-order "" Tests/budget/symbol-order.sh
if ((ALL)); then
    # Every fuzz reproducer replayed and each target fuzzed briefly (built
    # at -Onone: a few seconds a target need no speed), then for a minute
    # each (the -O build); an app's package adding MockCloudClient by
    # version. In make test-all only: their builds (40 and 35 CPU-seconds)
    # do not fit make test's ten minutes on 2 cores.
    job fuzz "" env FUZZ_OPTIMIZE=-Onone Tests/Fuzz/run.sh "${MOCKCLOUD_FUZZ_SECONDS:-2}"
    job dependent "" Tests/dependent/run.sh
    job "acceptance (fastcgi, all)" "" "${FASTCGI[@]}" Tests/acceptance/run.sh
    job "api (fastcgi)" api-packages "${FASTCGI[@]}" Tests/api/run.sh service
    for part in tool urlsession watch waits; do
        job "client (fastcgi, $part)" "" "${FASTCGI[@]}" Tests/client/run.py --part "$part"
    done
    job stress-long "" Tests/stress/run.sh
    job fuzz-long fuzz Tests/Fuzz/run.sh "${FUZZ_SECONDS:-60}"
    job flood "" Tests/stress/flood.sh
    job testssl "" bash -c 'packaging/deps.sh serve testssl && Tests/stress/testssl.sh'
fi

# needs NAME: what NAME needs, a name a line.
needs() {
    local list
    IFS=, read -ra list <<<"${NEEDS[$1]}"
    ((${#list[@]} == 0)) || printf '%s\n' "${list[@]}"
}

# A need that names no job would never end: the run would wait for good.
for name in "${JOBS[@]}"; do
    while IFS= read -r need; do
        [[ -n "${COMMAND[$need]:-}" || "$need" == api-packages || "$need" == "build (tests)" ]] || {
            echo "Tests/run-all.sh: the job \"$name\" needs \"$need\", which is no job" >&2
            exit 2
        }
    done < <(needs "$name")
done

# ---------------------------------------------------------------- running

# step NAME COMMAND...: runs COMMAND with its output in NAME's log, under
# Tests/support/reap.py; when it ends, NAME.done holds its exit status,
# seconds, CPU seconds and what it left running. The caller has added NAME
# to $logs/started: a step is running from then until its .done exists.
step() {
    local name="$1" start=$SECONDS status=1 cpu=0 left=""
    shift
    Tests/support/reap.py "$logs/$name.reaped" "$@" >"$logs/$name.log" 2>&1 </dev/null
    read -r status cpu left <"$logs/$name.reaped"
    echo "$status $((SECONDS - start)) $cpu $left" >"$logs/$name.done"
    return "$status"
}

# skipped NAME WHY: a suite that could not run (a build it needs failed).
skipped() {
    echo "$1" >>"$logs/started"
    printf '%s\n0 passed, 1 failed\n' "$2" >"$logs/$1.log"
    echo "1 0 0" >"$logs/$1.done"
}

# ready NAME: 0 when every job NAME needs has ended (and built), 1 while one
# runs, 2 when a build it needs failed.
ready() {
    local need status
    while IFS= read -r need; do
        [[ -e "$logs/$need.done" ]] || return 1
        read -r status _ <"$logs/$need.done"
        if [[ "${IS_BUILD[$need]:-1}" == 1 ]] && ((status != 0)); then return 2; fi
    done < <(needs "$1")
    return 0
}

# running: how many steps have started and not ended (by their files, not
# by PIDs, which the system gives out again).
running() {
    local name count=0
    while IFS= read -r name; do [[ -e "$logs/$name.done" ]] || count=$((count + 1)); done <"$logs/started"
    echo "$count"
}

# start NAME COMMAND...: NAME's step in the background, counted as running at once.
start() {
    echo "$1" >>"$logs/started"
    step "$@" &
}

# run_jobs: starts each job when a slot is free and what it needs has
# ended, reporting each as it ends, until all have ended.
run_jobs() {
    local pending=("${JOBS[@]}") left name state
    while ((${#pending[@]} > 0)) || (($(running) > 0)); do
        left=()
        for name in "${pending[@]}"; do
            ready "$name"
            state=$?
            if ((state == 2)); then
                skipped "$name" "$name: not run, a build it needs failed (see above)"
            elif ((state == 0 && $(running) < SLOTS)); then
                [[ "${IS_BUILD[$name]}" == 0 ]] || echo "$name" >>"$logs/builds"
                eval "start $(printf '%q' "$name") ${COMMAND[$name]}"
            else
                left+=("$name")
            fi
        done
        pending=("${left[@]}")
        [[ -n "$(jobs -rp)" ]] || ended_unreported
        # Nothing running and nothing could start: what is left waits on
        # something that will never end; it fails rather than waits for good.
        if ((${#pending[@]} > 0 && $(running) == 0)); then
            for name in "${pending[@]}"; do
                skipped "$name" "$name: not run: it waits on $(needs "$name" | paste -sd, -), which never ended"
            done
            pending=()
        fi
        report
        sleep 1
    done
    wait
    report
}

# ended_unreported: a step whose process is gone without its .done (killed
# from outside) counts as failed, so that the run ends.
ended_unreported() {
    local name
    while IFS= read -r name; do
        [[ -e "$logs/$name.done" ]] || echo "1 0 0" >"$logs/$name.done"
    done <"$logs/started"
}

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
# The API suite's Python packages (from PyPI on a fresh clone) while the
# programs build; and the tests' debug build beside the release build (in
# a folder of its own, .build/tests: SwiftPM builds one thing at a time in
# a folder), so that the Swift tests, which wait on it, are not the last to
# end.
echo api-packages >>"$logs/builds"
start api-packages packaging/deps.sh api
echo "build (tests)" >>"$logs/builds"
start "build (tests)" swift build --build-tests "${TEST_BUILD[@]}"
echo release >>"$logs/builds"
echo release >>"$logs/started"
if step release make --no-print-directory install; then
    run_jobs
else
    wait
    report
    for name in "${JOBS[@]}"; do skipped "$name" "$name: not run, the release build failed (see above)"; done
    report
fi

echo "== every suite, $((SECONDS - started)) s in all:"
printf '   %s\n' "${summaries[@]}"
echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
