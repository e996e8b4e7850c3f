#!/usr/bin/env bash
# docs/openapi.yaml against the running service: the document itself, then
# schemathesis and the acceptance cases' answers against a real stack.
#
#   Tests/api/run.sh            `make test`: bounded, fixed seed (well under 2 min)
#   Tests/api/run.sh fuzz SECS  `make fuzz-api`: schemathesis for SECS seconds,
#                               a fresh seed, the request count from nginx's log
#
# 1. openapi-spec-validator: the document is valid OpenAPI 3.1; statuses.py:
#    every status code the sources can send is in it.
# 2. schemathesis (`st run`): positive and negative data, the examples, the
#    coverage cases, fuzzing and the stateful links between operations (PUT
#    then GET the same key; the feed's anchor into the next page), with every
#    check on (CHECKS below), against nginx + fcgiwrap + TLS on a free
#    127.0.0.1 port with temporary data, stopped by PID on exit.
#    A valid `wait` is taken out of its requests (Tests/api/st_hooks.py: each
#    would hold its read up to a minute); the acceptance cases' waits are
#    checked by conformance.py.
# 3. Tests/api/conformance.py: every answer the acceptance cases got must be
#    one the document describes. With MOCKCLOUD_API_RECORD naming a directory
#    where Tests/acceptance/run.sh already kept them (Tests/run-all.sh does),
#    those are checked; otherwise the acceptance cases run here first.
#
# Python packages come from PyPI into .build/venv (pinned in
# requirements.txt; `packaging/deps.sh api` makes it on first use). The
# stack is the harness's (Tests/support/stack.sh). Prints `N passed, M
# failed` last.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../support/cases.sh
source "$HERE/../support/cases.sh"
DOC="$REPO/docs/openapi.yaml"
VENV="$REPO/.build/venv"

MODE="${1:-check}"
FUZZ_SECONDS="${2:-1800}"
# `make test`: the same cases every run. Each operation gets this many
# generated cases per phase; ~40 s on 2 busy cores.
SEED=20261201
MAX_EXAMPLES=100
# Every check schemathesis has: the five the API document was first checked with (not_a_server_error,
# status_code_conformance, content_type_conformance,
# response_headers_conformance, response_schema_conformance) and the others
# (negative_data_rejection, positive_data_acceptance, unsupported_method,
# allow_header_conformance, missing_required_header, use_after_free,
# ensure_resource_availability, ...); schemathesis.toml says which statuses
# positive_data_acceptance takes, and why.
CHECKS=all

# pass WHAT / fail WHAT: one check, its output above it.
pass() { verdict ok "$1"; }
fail() { verdict FAIL "$1"; }
finish() { summary; exit; }

work_dir mcapi

if ! "$REPO/packaging/deps.sh" api; then
    fail "the Python packages for the API tests install (packaging/deps.sh api: python3 -m venv, pip from PyPI)"
    finish
fi

# ---------------------------------------------------------------- 1. document

if out="$("$VENV/bin/openapi-spec-validator" "$DOC" 2>&1)"; then
    pass "docs/openapi.yaml is valid OpenAPI 3.1 (openapi-spec-validator)"
else
    printf '%s\n' "$out" | sed 's/^/        /'
    fail "docs/openapi.yaml is valid OpenAPI 3.1 (openapi-spec-validator)"
fi

statuses="every status the programs and nginx can send (HTTPStatus.swift, the snippet's error pages) is in the document"
if "$VENV/bin/python" "$HERE/statuses.py" "$DOC" "$REPO" >"$WORK/statuses.log" 2>&1; then
    pass "$statuses"
else
    sed 's/^/        /' "$WORK/statuses.log"
    fail "$statuses"
fi

# ---------------------------------------------------------------- 2. schemathesis

if [[ "$MODE" == fuzz ]]; then
    # Its own copy of the programs: a `make install` during a long run must
    # not change what is being tested.
    cp -r "$MOCKCLOUD_CGI_BIN" "$WORK/cgi-bin"
    export MOCKCLOUD_CGI_BIN="$WORK/cgi-bin"
fi
# The per-address cap at its default, as served: schemathesis (one worker)
# waits for each answer, so it never has two requests in progress.
if ! start_stack run; then
    fail "a stack for schemathesis starts (Tests/support/stack.sh)"
    finish
fi

st_args=("$DOC" --url "$BASE" --tls-verify false --checks "$CHECKS" --mode all --workers 1
    --no-color --report ndjson --report-dir "$WORK/report")

if [[ "$MODE" == fuzz ]]; then
    SEED="$(date +%s)"
    st_args+=(--seed "$SEED" --continue-on-failure)
else
    st_args+=(--seed "$SEED" --max-examples "$MAX_EXAMPLES")
fi

# run_st PHASES WHAT: one schemathesis run of those phases; its NDJSON
# report is $WORK/report/PHASES.ndjson.
run_st() {
    local phases="$1" what="$2" status
    echo "== st run ${st_args[*]} --phases $phases"
    (cd "$WORK" && PYTHONPATH="$HERE" SCHEMATHESIS_HOOKS=st_hooks "$VENV/bin/st" --config-file "$HERE/schemathesis.toml" run "${st_args[@]}" --phases "$phases" \
        --report-ndjson-path "$WORK/report/${phases//,/-}.ndjson") 2>&1 | tee -a "$WORK/st.log" | grep -v '^\s*$'
    status=${PIPESTATUS[0]}
    if ((status == 0)); then pass "$what"; else fail "$what"; fi
}

if [[ "$MODE" == fuzz ]]; then
    # With --max-time, fuzzing (and the stateful phase) repeat until the
    # time is spent: two thirds of it for single requests, a third for chains.
    fuzz_part=$((FUZZ_SECONDS * 2 / 3))
    st_args+=(--max-time "$fuzz_part")
    run_st examples,coverage,fuzzing "schemathesis: single requests for ${fuzz_part}s (seed $SEED)"
    st_args[-1]=$((FUZZ_SECONDS - fuzz_part))
    run_st stateful "schemathesis: chains along the links for ${st_args[-1]}s (seed $SEED)"
else
    run_st examples,coverage,fuzzing \
        "schemathesis: the examples, coverage cases and fuzzed requests get answers as docs/openapi.yaml says (seed $SEED)"
    # The stateful phase on its own, and for 20 s: bounded by examples alone
    # it stops after a varying few dozen scenarios, which may miss a link.
    st_args+=(--max-time 20)
    run_st stateful "schemathesis: chains of requests along the document's links get answers as it says (seed $SEED)"
    links="the stateful phase followed the links: PUT then GET the same user's settings, the feed's anchor into the next page"
    echo "links followed by the stateful phase:"
    if "$VENV/bin/python" "$HERE/links_used.py" "$WORK/report/stateful.ndjson" \
        "PUT /user/settings | PATCH /user/settings -> revalidate | readBack -> GET /user/settings" \
        "GET /inbox -> nextPage -> GET /inbox"; then
        pass "$links"
    else
        fail "$links"
    fi
fi
requests="$(wc -l <"$RUN/logs/access.log")"
echo "nginx logged $requests requests; by status: $(awk '{print $9}' "$RUN/logs/access.log" |
    sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
if [[ "$MODE" == fuzz ]]; then
    mkdir -p "$REPO/.build/api-fuzz"
    cp -r "$WORK/report" "$WORK/st.log" "$REPO/.build/api-fuzz/" 2>/dev/null
    cp "$RUN/logs/error.log" "$REPO/.build/api-fuzz/nginx-error.log" 2>/dev/null
    echo "schemathesis report and log: .build/api-fuzz/"
    finish
fi

# ---------------------------------------------------------------- 3. acceptance answers

record="${MOCKCLOUD_API_RECORD:-}"
if [[ -z "$record" || ! -s "$record/index.tsv" ]]; then
    record="$WORK/answers"
    echo "== the acceptance cases, their answers kept for the document check"
    MOCKCLOUD_API_RECORD="$record" "$REPO/Tests/acceptance/run.sh" >"$WORK/acceptance.log" 2>&1 ||
        echo "(the acceptance cases themselves failed: $(tail -n 1 "$WORK/acceptance.log"))"
fi
"$VENV/bin/python" "$HERE/conformance.py" "$DOC" "$record" | tee "$WORK/conformance.log"
if [[ "$(tail -n 1 "$WORK/conformance.log")" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    PASSED=$((PASSED + BASH_REMATCH[1]))
    FAILED=$((FAILED + BASH_REMATCH[2]))
else
    fail "Tests/api/conformance.py ran"
fi
# The check itself can fail: with 412 taken out of PUT /user/settings (the
# acceptance cases get it for a stale If-Match), the same answers must not pass.
"$VENV/bin/python" - "$DOC" "$WORK/without-412.yaml" <<'PYTHON'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
del doc["paths"]["/user/settings"]["put"]["responses"]["412"]
yaml.safe_dump(doc, open(sys.argv[2], "w", encoding="utf-8"), sort_keys=False)
PYTHON
if "$VENV/bin/python" "$HERE/conformance.py" "$WORK/without-412.yaml" "$record" >"$WORK/mutant.log" 2>&1; then
    fail "conformance.py fails when the document lacks a status the service answers (412 on PUT /user/settings)"
elif grep -q "status 412 is not documented for PUT /user/settings" "$WORK/mutant.log"; then
    pass "conformance.py fails when the document lacks a status the service answers (412 on PUT /user/settings)"
else
    sed 's/^/        /' "$WORK/mutant.log" | tail -5
    fail "conformance.py fails when the document lacks a status the service answers (412 on PUT /user/settings)"
fi
finish
