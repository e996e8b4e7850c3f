# The setup and case helpers shared by the acceptance runner and the stress
# scripts (sourced): where the repository, launcher and programs are, a
# clean stack environment, and cases: a case starts with `it "what it
# proves"`, collects `fail` lines, and counts as passed when it has none.

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LAUNCHER="$REPO/nginx/mockcloud-nginx.sh"
export MOCKCLOUD_CGI_BIN="${MOCKCLOUD_CGI_BIN:-$REPO/cgi-bin}"
# The stacks are configured by the tests only, whatever the caller's environment says.
unset MOCKCLOUD_UPSTREAM MOCKCLOUD_HMAC_KEYS MOCKCLOUD_HMAC_REQUIRE MOCKCLOUD_CERT \
    MOCKCLOUD_CERT_KEY MOCKCLOUD_HOST MOCKCLOUD_PORT MOCKCLOUD_DATA MOCKCLOUD_RUN MOCKCLOUD_TOKENS \
    MOCKCLOUD_INBOX_MAX_MESSAGES MOCKCLOUD_INBOX_TOMBSTONE_HORIZON MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS

# The real interpreter first on PATH: a version manager's python3 shim costs
# ~0.2 s a call, and the checks call python3 a few hundred times.
if python_bin="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)"; then
    PATH="$python_bin:$PATH"
fi

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
