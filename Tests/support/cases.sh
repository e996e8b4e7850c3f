# What the shell suites share (sourced: acceptance, api, stress, package):
# stacks (stack.sh beside it: REPO, LAUNCHER, free_port, start_stack,
# stop_stacks), one HTTPS request (send) and the checks every answer gets
# (answer_shape, last_header), and cases: a case starts with `it "what it
# proves"`, collects `fail` lines, and counts as passed when it has none;
# `summary` prints `N passed, M failed` last, as Tests/run-all.sh counts.

# shellcheck source=stack.sh
source "$(dirname "${BASH_SOURCE[0]}")/stack.sh"

# work_dir PREFIX: WORK, a new directory /tmp/PREFIX.XXXXXX (short:
# fcgiwrap's socket lives in there, and socket paths stop at 107 bytes; 0711,
# so that the stacks' user can reach what is inside), removed on exit after
# every stack started is stopped and the caller's `cleanup`, if it has one, ran.
work_dir() {
    WORK="$(mktemp -d "/tmp/$1.XXXXXX")"
    chmod 0711 "$WORK"
    trap 'stop_stacks; [[ "$(type -t cleanup)" != function ]] || cleanup; rm -rf "$WORK"' EXIT
    trap 'exit 130' INT TERM
}

# The real interpreter first on PATH: a version manager's python3 shim costs
# ~0.2 s a call, and the checks call python3 a few hundred times.
if python_bin="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)"; then
    PATH="$python_bin:$PATH"
fi

# send METHOD PATH [curl options]: one HTTPS request to $BASE with curl -k;
# STATUS (000: no answer), REQUEST, $WORK/headers, $WORK/body and
# $WORK/curl.err describe it.
send() {
    local method="$1" path="$2"
    shift 2
    # The stack's own CA where the suite knows it (TLS_TRUST), else -k.
    local trust=(-k)
    [[ -z "${TLS_TRUST+set}" ]] || trust=("${TLS_TRUST[@]}")
    local args=(-s "${trust[@]}" --noproxy '*' --max-time 30 -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}')
    case "$method" in
        GET) ;;
        HEAD) args+=(--head) ;;     # -X HEAD would wait for the body Content-Length announces
        *) args+=(-X "$method") ;;
    esac
    : >"$WORK/headers"
    : >"$WORK/body"
    REQUEST="$method $path"
    STATUS="$(curl "${args[@]}" "$@" -- "$BASE$path" 2>"$WORK/curl.err")"
}

# answer_shape: the contract's rule for every answer, on the last one: JSON
# with Content-Type application/json, or no body at all (204 and 304).
answer_shape() {
    if [[ "$STATUS" == 204 || "$STATUS" == 304 ]]; then
        [[ ! -s "$WORK/body" ]] || fail "$REQUEST: a $STATUS answer has a body: $(head -c 200 "$WORK/body")"
    elif [[ "$STATUS" != 000 ]]; then
        local type
        type="$(last_header Content-Type)"
        [[ "$type" == application/json || "$type" == "application/json;"* ]] ||
            fail "$REQUEST: Content-Type is '$type', expected application/json"
        if [[ "$REQUEST" != HEAD\ * ]] &&
            ! python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$WORK/body" 2>/dev/null; then
            fail "$REQUEST: body is not JSON: $(head -c 200 "$WORK/body")"
        fi
    fi
}

# The value of a header of the last answer (the final block, after any 100).
last_header() {
    awk -v want="$(printf '%s' "$1" | tr 'A-Z' 'a-z')" '
        { sub(/\r$/, "") }
        /^HTTP\// { value = ""; found = 0; next }
        {
            colon = index($0, ":")
            if (colon > 0 && tolower(substr($0, 1, colon - 1)) == want && !found) {
                value = substr($0, colon + 1); sub(/^[ \t]+/, "", value); found = 1
            }
        }
        END { if (found) print value; else exit 1 }' "$WORK/headers"
}

# below PID: every process below PID, from /proc (procps may be absent).
# One cat and one awk for every process (a loop of reads took over a second
# among a few hundred processes, longer than what the callers look for lives);
# cat goes on past a process that ended meanwhile. A stat line is
# "PID (COMMAND) STATE PPID ...", COMMAND of any characters.
below() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
        { rest = $0; sub(/^.*\) /, "", rest); split(rest, field, " "); parent[$1] = field[2] }
        END {
            for (pid in parent) { p = parent[pid]
                for (d = 0; p != "" && p != 0 && d < 64; d++) { if (p == root) { print pid; break } p = parent[p] } } }'
}

# eventually SECONDS COMMAND...: runs COMMAND every 0.1 s until it
# succeeds (true) or SECONDS have passed (false): for what the system will
# do soon, so that a check waits no longer than it must and a hang ends.
eventually() {
    local until=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < until)) || return 1
        sleep 0.1
    done
}

# prints TEXT COMMAND...: true when COMMAND prints TEXT (for eventually).
prints() { [[ "$("${@:2}")" == "$1" ]]; }

PASSED=0
FAILED=0
CASE_NAME=""
CASE_FAILURES=()

# Starts a case; its name says what it proves.
it() {
    finish_case
    [[ -z "${STRESS_TIMES:-}" ]] || printf '%(%T)T ' -1
    CASE_NAME="$1"
    CASE_FAILURES=()
}

fail() {
    [[ -n "$CASE_NAME" ]] || CASE_NAME="(setup outside any case)"
    CASE_FAILURES+=("$*")
}

finish_case() {
    [[ -n "$CASE_NAME" ]] || return 0
    if ((${#CASE_FAILURES[@]} == 0)); then verdict ok "$CASE_NAME"; else verdict FAIL "$CASE_NAME" "${CASE_FAILURES[@]}"; fi
    CASE_NAME=""
}

# verdict ok|FAIL NAME [LINE...]: counts and prints one check, a failure's
# lines below it.
verdict() {
    if [[ "$1" == ok ]]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
    printf '%-6s%s\n' "$1" "$2"
    (($# < 3)) || printf '        %s\n' "${@:3}"
}

# add_counts LOG WHAT: a sub-run's last line, `N passed, M failed`, added to
# the counts; a log that does not end in one fails WHAT.
add_counts() {
    if [[ "$(tail -n 1 "$1")" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        PASSED=$((PASSED + BASH_REMATCH[1]))
        FAILED=$((FAILED + BASH_REMATCH[2]))
    else
        verdict FAIL "$2"
    fi
}

# The last line of a suite; its exit status says whether anything failed.
summary() {
    finish_case
    printf '%s passed, %s failed\n' "$PASSED" "$FAILED"
    ((FAILED == 0))
}
