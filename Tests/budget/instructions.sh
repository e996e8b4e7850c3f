#!/usr/bin/env bash
# The speed work's guard: callgrind counts the instructions of the six
# requests it is about (Benchmarks/instructions.sh: same environment, a
# data directory of fixed length, the installed release programs, which keep
# long strings until exit as in service) and each must stay within its
# budget. Instruction counts are deterministic, unlike times, so this is no
# timed assertion. Prints `N passed, M failed` last.
#
# Budget = the count at the commit that set it + 4%, rounded up to 1,000.
# Measured at eec2709 (Benchmarks/symbol-order.txt fresh):
#   settings-get  93,018   settings-put 193,560-194,031
#   inbox-put    186,884-187,355   feed-page 380,799
# then, the environment built by the harness (Tests/support/cgi_program.py,
# which adds HTTPS and REQUEST_SCHEME as nginx sends them: +0.6%), at the
# merge of main's e2f2544 into the harness branch:
#   settings-get  93,624   settings-put 195,352
#   inbox-put    188,738   feed-page 381,417
# What moves a count without a change to the code a request runs:
#   - the layout: linking with an empty symbol-order list, or main's stale
#     one, cost up to +2.5% (settings GET 95,330; the runtime's metadata
#     caches hash by address, so their probes change with the layout);
#   - run to run: up to 471 instructions (0.25%) on the PUTs (the digits
#     of the time stamp and of the random generation);
#   - the data directory's length (+1.0% at 63 bytes against the fixed 31;
#     fixed here, so it does not move this test).
# 4% covers those with room; a tidy-up that costs a request 5% more fails.
# After a change that is worth its instructions, set the budget anew here.
#
# Set anew for issue 12 (a hostile device on the LAN), measured on branch
# hostile (symbol-order.txt fresh): settings-get 98,310, settings-put
# 205,745, inbox-put 202,159 (+5.7%, +6.0%, +7.8% on eec2709; feed-page
# 385,099, +1.1%, keeps its budget). What they pay for: the identity headers checked
# once each (three scans of the environment, ~2.3k), the data directory's
# folders walked without following links (openat/lstat), and the lock
# file's life (the lock re-checked after flock, fstat/lstat; the key's
# data looked for after the change, lstat), each a system call and the
# strings and checks around it.
#
# bulk-500 (issue 13: POST /inbox:bulk of 500 samples) set at the commit that
# prints each item's body once (PrintedJSON: measured, compared and spliced
# into its envelope) and copies clean ASCII strings in one piece:
# 73,864,473 before, 55,008,604 after (110k a sample); budget +4%.
#
# signed-get (GET /user/settings verifying its MAC) added when the layer
# split was found to have cost it 250k: ASCII.decodeHex, generic over
# Collection, moved to MockCloudSystem, and its callers in MockCloudStore got
# the unspecialised form (a run-time lookup of Collection.Element on first
# call). At stop 9 it was 157k; 394,969 before the fix, 145,487 after.
#
# Kept, not raised, through issue 19's commit protocol (measured on the same
# machine at 4a87cb2 and after, symbol-order.txt fresh each time):
# settings-get 96,556 -> 95,744; signed-get 144,435 -> 143,845; settings-put
# 200,388 -> 198,032; inbox-put 205,158 -> 200,978; feed-page 385,864 ->
# 388,138 (+0.6%); bulk-500 54,304,170 -> 54,485,532 (+0.3%). What the
# commit path now pays: a statvfs for the free-space floor, the `changed`
# member on errors only, an fsync by path of each file after a bulk's syncfs
# (+0.3% on bulk-500: the error syncfs may miss), a new directory's fsync
# into its parent (the first write of a key). The upkeep after the answer
# costs nothing unless a write found it due: `Optional<Upkeep>` (6k of
# metadata in every program) and an unconditional upkeep (15k an inbox
# write) were measured and taken out before this landed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN="${1:-cgi-bin}"

declare -A budget=(
    [settings-get]=103000
    [signed-get]=152000
    [settings-put]=214000
    [inbox-put]=211000
    [feed-page]=397000
    [bulk-500]=57300000
)

passed=0 failed=0
counts="$(Benchmarks/instructions.sh "$BIN")" || { echo "instructions: the measurement failed"; echo "0 passed, 1 failed"; exit 1; }
for name in settings-get signed-get settings-put inbox-put feed-page bulk-500; do
    count="$(awk -v n="$name" '$1 == n { print $2 }' <<<"$counts")"
    if [[ -z "$count" ]]; then
        echo "FAIL $name: not measured"
        failed=$((failed + 1))
    elif ((count > budget[$name])); then
        echo "FAIL $name: $count instructions, over its budget of ${budget[$name]} (Tests/budget/instructions.sh says how it was set)"
        failed=$((failed + 1))
    else
        echo "ok   $name: $count instructions (budget ${budget[$name]})"
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
((failed == 0))
