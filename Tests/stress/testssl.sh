#!/usr/bin/env bash
# Debian's testssl.sh against the TLS server `make serve` runs (`make
# testssl`; its summary is in docs/RELIABILITY.md, "TLS"). Starts a stack of
# its own on a free 127.0.0.1 port with the launcher (the same nginx.conf
# as `make serve`), runs `testssl --quiet --color 0` on it, stops the stack
# by PID, and ends with every finding rated LOW or above. Set TESTSSL_TARGET=host:port to audit a server that already runs
# (e.g. `make serve` on 127.0.0.1:8443) instead. Output: testssl's report;
# exit status testssl's own.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
work_dir mct
command -v testssl >/dev/null || { echo "testssl is missing: packaging/deps.sh testssl (as root)"; exit 1; }
target="${TESTSSL_TARGET:-}"
if [[ -z "$target" ]]; then
    start_stack testssl "$WORK/data" || exit 1
    target="${BASE#https://}"
fi
testssl --quiet --color 0 --warnings off --openssl-timeout 10 --jsonfile "$WORK/testssl.json" "$target"
status=$?
# The summary: every finding testssl rated LOW or above, by rating.
python3 - "$WORK/testssl.json" <<'PYTHON'
import json, sys
order = ["CRITICAL", "HIGH", "MEDIUM", "LOW"]
findings = [f for f in json.load(open(sys.argv[1])) if f.get("severity") in order]
print("\n== testssl findings rated LOW or above")
for severity in order:
    for f in findings:
        if f["severity"] == severity:
            print("%-8s %-28s %s" % (severity, f["id"], f["finding"]))
counts = {s: sum(1 for f in findings if f["severity"] == s) for s in order}
print("counts: " + ", ".join("%s %d" % (s, counts[s]) for s in order))
PYTHON
exit "$status"
