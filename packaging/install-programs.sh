#!/usr/bin/env bash
# Installs programs into a directory a stack may be serving from, each
# replaced in one step: written to a temporary file beside its place, made
# executable, then renamed over the old one. A request that starts a program
# meanwhile runs the old one or the new one, never finds it missing or half
# written (`install` and `cp` unlink or truncate the old file first, and
# fcgiwrap then answers 403 or 502).
#
#   packaging/install-programs.sh FROM TO PROGRAM...
#
# `make install` runs it (.build/release into cgi-bin/); so does the test
# of installing into a serving stack (Tests/reinstall/run.py).
set -euo pipefail
(($# >= 3)) || { echo "usage: install-programs.sh FROM TO PROGRAM..." >&2; exit 2; }
from="$1" to="$2"
shift 2
mkdir -p "$to"
pending=""
trap '[[ -z "$pending" ]] || rm -f "$pending"' EXIT
for program in "$@"; do
    [[ -f "$from/$program" ]] || { echo "install-programs: $from/$program is missing: build it first (make build)" >&2; exit 1; }
    # Same directory, so that the rename stays on one file system (atomic).
    pending="$(mktemp "$to/.$program.XXXXXX")"
    cp -- "$from/$program" "$pending"
    chmod 0755 "$pending"
    mv -fT -- "$pending" "$to/$program"
    pending=""
done
