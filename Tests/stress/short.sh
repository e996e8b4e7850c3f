#!/usr/bin/env bash
# The short stress run, for `make test` (Tests/run-all.sh): every part of
# Tests/stress/run.sh with small counts, well under a minute. Prints
# `N passed, M failed` last; exit status 1 when anything failed.
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" --short "$@"
