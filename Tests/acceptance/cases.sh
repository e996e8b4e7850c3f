# The case helpers shared by the acceptance runner and the stress scripts
# (sourced): a case starts with `it "what it proves"`, collects `fail`
# lines, and counts as passed when it has none.

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

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
