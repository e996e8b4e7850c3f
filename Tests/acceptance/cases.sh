# The setup and case helpers shared by the acceptance runner and the stress
# scripts (sourced): stacks from the harness (Tests/support/stack.sh: REPO,
# LAUNCHER, free_port, start_stack, stop_stacks), and cases: a case starts
# with `it "what it proves"`, collects `fail` lines, and counts as passed
# when it has none.

# shellcheck source=../support/stack.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/stack.sh"

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
    local args=(-sk --noproxy '*' --max-time 30 -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}')
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
    if ((${#CASE_FAILURES[@]} == 0)); then
        PASSED=$((PASSED + 1))
        printf 'ok    %s\n' "$CASE_NAME"
    else
        FAILED=$((FAILED + 1))
        printf 'FAIL  %s\n' "$CASE_NAME"
        printf '        %s\n' "${CASE_FAILURES[@]}"
    fi
    CASE_NAME=""
}
