# Shell helpers of the stress scripts (sourced): cases, stacks and HTTPS
# requests from the harness (Tests/support/cases.sh), and the checks the
# stress scripts make of an answer and a data directory. Then `work_dir`
# makes WORK, which holds everything.

STRESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../support/cases.sh
source "$STRESS_DIR/../support/cases.sh"

# req METHOD PATH [curl options]: one HTTPS request (`send`, in cases.sh);
# STATUS, $WORK/body, $WORK/headers describe the answer.
req() {
    send "$@"
    [[ -z "${STRESS_TIMES:-}" ]] || printf "  %(%T)T %s -> %s\n" -1 "$REQUEST" "$STATUS" >&2
}

# want STATUS...: the last answer had one of these statuses and was JSON
# with Content-Type application/json (or empty, for 204 and 304).
want() {
    local ok="" s
    for s in "$@"; do [[ "$STATUS" == "$s" ]] && ok=yes; done
    [[ -n "$ok" ]] || fail "$REQUEST: status $STATUS, expected $*: $(head -c 300 "$WORK/body")"
    answer_shape
}

# error_says TEXT: the last answer's "error" sentence contains TEXT.
error_says() {
    python3 -c '
import json, sys
error = json.load(open(sys.argv[1])).get("error", "")
sys.exit(0 if sys.argv[2] in error else 1)' "$WORK/body" "$1" 2>/dev/null ||
        fail "$REQUEST: error does not say '$1': $(head -c 300 "$WORK/body")"
}

# same_json FILE: the last answer's body is the JSON document FILE holds.
same_json() {
    python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])) else 1)' "$WORK/body" "$1" 2>/dev/null ||
        fail "$REQUEST: body differs from $1: $(head -c 300 "$WORK/body")"
}

# A checksum line for every file under a directory, for before/after compares.
tree_sums() {
    (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# data_whole DIR: the stress checker proves the data directory whole.
data_whole() {
    local out
    out="$(python3 - "$1" <<'PYTHON' 2>&1
import os, sys
sys.path.insert(0, os.environ["STRESS_DIR"])
import stresslib
report = stresslib.check_data_dir(sys.argv[1])
print("\n".join(report.problems))
sys.exit(1 if report.problems else 0)
PYTHON
    )" || fail "the data directory is not whole: $out"
}
export STRESS_DIR
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the repository
