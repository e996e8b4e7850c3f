#!/usr/bin/env bash
# The big flood run (`make flood`, docs/RELIABILITY.md "One address floods"):
# a stack of its own; 127.0.0.1 holds 2,000 stalled connections (half a
# header block, or PUT headers with one byte of a 100-byte body, each
# reopened when the server closes it) while 127.0.0.2 sends 100 GETs, one
# after the other. Prints flood.py's JSON report for each flood shape, then
# `N passed, M failed`: a shape passes when all 100 GETs answered 200.
#
#   Tests/stress/flood.sh [CONNECTIONS] [REQUESTS]     default 2000 100
#
# Stopped by PID on exit, like every stack the tests start.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
work_dir mcf
connections="${1:-2000}"
requests="${2:-100}"

it "a stack for the flood starts"
start_stack flood || fail "the stack did not start"
port="${BASE##*:}"

for kinds in header,body body header tcp; do
    it "while 127.0.0.1 holds $connections stalled connections ($kinds), $requests of $requests GETs from 127.0.0.2 answer 200"
    python3 "$SUPPORT_DIR/flood.py" "$port" --connections "$connections" --requests "$requests" \
        --kinds "$kinds" | tee "$WORK/flood.json"
    ok="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["victim_ok"])' "$WORK/flood.json" 2>&1)"
    [[ "$ok" == "$requests" ]] || fail "$ok of $requests answered 200"
    # Let the server close what the last flood left before the next one.
    sleep 3
done
summary
