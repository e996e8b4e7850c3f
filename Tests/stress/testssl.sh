#!/usr/bin/env bash
# Debian's testssl.sh against the TLS server `make serve` runs (`make
# testssl`; its summary is in docs/RELIABILITY.md, "TLS"). Starts a stack of
# its own on a free 127.0.0.1 port with the launcher (the same nginx.conf
# as `make serve`), runs `testssl --quiet --color 0` on it, stops the stack
# by PID. Set TESTSSL_TARGET=host:port to audit a server that already runs
# (e.g. `make serve` on 127.0.0.1:8443) instead. Output: testssl's report;
# exit status testssl's own.
set -uo pipefail
WORK="$(mktemp -d /tmp/mct.XXXXXX)"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'stop_stacks; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
command -v testssl >/dev/null || { echo "testssl is missing: nginx/mockcloud-nginx.sh deps testssl (as root)"; exit 1; }
target="${TESTSSL_TARGET:-}"
if [[ -z "$target" ]]; then
    start_stack testssl "$WORK/data" || exit 1
    target="${BASE#https://}"
fi
testssl --quiet --color 0 --warnings off --openssl-timeout 10 "$target"
