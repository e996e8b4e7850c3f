#!/usr/bin/env bash
# Every stress test, each part bounded in count and time.
#
#   Tests/stress/run.sh [--short] [--only PART] [--seed S]
#
#   (default)   the full run behind `make stress`: a few minutes
#   --short     the short run (Tests/stress/short.sh, for `make test`): well under a minute
#   --only PART one part: hostile, crash, bulk, faults, races, diskfull or concurrency
#   --seed S    the seed of the hostile requests and the crash test (default 1)
#
# Parts: hostile.py (malformed requests through nginx + TLS), crash.py
# (SIGKILL mid-write, with and without signing), bulk_crash.py (SIGKILL in
# the middle of a POST /inbox:bulk batch), faults.py (every storage system
# call of every kind of write failed at every occurrence, with strace; and
# again with the write served by a FastCGI worker, --max-requests 1),
# races.py (races held open with strace delays), diskfull.sh (a
# full, an inode-less and a read-only data directory) and diskfill.py (a
# disk filled by writes, and the free-space floor; both need root for their
# tmpfs mounts, skipped otherwise), concurrency.py (16 writers at once, per-key
# locks). Each stack runs on a free 127.0.0.1 port with its own temporary
# directories and is stopped by PID on exit. The programs are cgi-bin/'s
# (MOCKCLOUD_CGI_BIN to test others); build them with `make install`.
#
# Prints each part's checks, then `N passed, M failed` summed over every
# part as the last line; exit status 1 when anything failed.
set -uo pipefail

MODE=full
ONLY=""
SEED=1
while (($# > 0)); do
    case "$1" in
        --short) MODE=short ;;
        --only) ONLY="${2:-}"; shift ;;
        --seed) SEED="${2:-}"; shift ;;
        *) sed -n '2,20s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    esac
    shift
done
[[ "$SEED" =~ ^[0-9]+$ ]] || { echo "--seed takes a whole number" >&2; exit 2; }
case "$ONLY" in "" | hostile | crash | bulk | faults | races | diskfull | concurrency) ;; *) echo "unknown part: $ONLY" >&2; exit 2 ;; esac

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
work_dir mcs

# PART_SECONDS guards against a part that hangs; it is no time limit: side
# by side with other suites (make test) on a busy machine, a short part that
# takes a minute alone may take several.
PART_SECONDS=600
if [[ "$MODE" == full ]]; then
    HOSTILE_REQUESTS=4000 CRASH_OPS=2000 CRASH_HMAC_OPS=1000 BULK_ROUNDS=200
    WRITERS=16 INCREMENTS=20 PUTS=12 FEED_OPS=40 EXTRA=(--direct "$MOCKCLOUD_CGI_BIN" --stuck)
    RACE_ROUNDS=3 FAULT_N=() FAULT_WHICH="every occurrence"
else
    HOSTILE_REQUESTS=400 CRASH_OPS=300 CRASH_HMAC_OPS=150 BULK_ROUNDS=10
    WRITERS=16 INCREMENTS=3 PUTS=3 FEED_OPS=10 EXTRA=()
    # Every storage system call, each failed at its first two, middle and
    # last two occurrences: ~1,600 checks in 34 s on 2 quiet cores; every
    # occurrence (~3,000 checks) took 311 s of make test's 16 minutes, so
    # it is make stress's and make test-all's.
    RACE_ROUNDS=1 FAULT_N=(--quick) FAULT_WHICH="its first two, middle and last two occurrences"
fi

TOTAL_PASSED=0
TOTAL_FAILED=0

# part NAME COMMAND...: runs one part (bounded by `timeout`), shows its
# output and adds its `N passed, M failed` to the totals.
part() {
    local name="$1" status summary passed failed
    shift
    [[ -z "$ONLY" || "$ONLY" == "${name%% *}" ]] || return 0
    printf '== %s\n' "$name"
    timeout --kill-after=10 "$PART_SECONDS" "$@" 2>&1 | tee "$WORK/part.log"
    status=${PIPESTATUS[0]}
    summary="$(tail -n 1 "$WORK/part.log")"
    if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed="${BASH_REMATCH[1]}" failed="${BASH_REMATCH[2]}"
    else
        passed=0 failed=0
    fi
    if ((status != 0 && failed == 0)); then
        echo "$name exited with status $status without a failed check"
        failed=1
    fi
    TOTAL_PASSED=$((TOTAL_PASSED + passed))
    TOTAL_FAILED=$((TOTAL_FAILED + failed))
}

for program in user-settings inbox mockcloud-admin; do
    if [[ ! -x "$MOCKCLOUD_CGI_BIN/$program" ]]; then
        echo "$MOCKCLOUD_CGI_BIN/$program is missing: run 'make install' first"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

if [[ -z "$ONLY" || "$ONLY" == hostile ]]; then
    # Thousands of requests from one address, 8 at a time: within the
    # per-address cap (16 in progress), which stays on as served.
    if start_stack hostile; then
        part "hostile ($HOSTILE_REQUESTS requests, seed $SEED)" python3 "$STRESS_DIR/hostile.py" "$BASE" "$DATA" "$RUN" \
            --requests "$HOSTILE_REQUESTS" --seed "$SEED"
    else
        echo "could not start the hostile stack"
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
    fi
    stop_stacks
fi

part "crash ($CRASH_OPS writers, seed $SEED)" python3 "$STRESS_DIR/crash.py" --cgi-bin "$MOCKCLOUD_CGI_BIN" \
    --ops "$CRASH_OPS" --seed "$SEED"
part "crash (signing on, $CRASH_HMAC_OPS writers, kills up to 5 ms, seed $SEED)" python3 "$STRESS_DIR/crash.py" \
    --cgi-bin "$MOCKCLOUD_CGI_BIN" --ops "$CRASH_HMAC_OPS" --seed "$SEED" --hmac --max-delay-ms 5

part "bulk crash ($BULK_ROUNDS batches of 300, SIGKILL mid-batch, seed $SEED)" python3 "$STRESS_DIR/bulk_crash.py" \
    --cgi-bin "$MOCKCLOUD_CGI_BIN" --rounds "$BULK_ROUNDS" --seed "$SEED"
part "bulk crash (signing on, $BULK_ROUNDS batches, seed $SEED)" python3 "$STRESS_DIR/bulk_crash.py" \
    --cgi-bin "$MOCKCLOUD_CGI_BIN" --rounds "$BULK_ROUNDS" --seed "$SEED" --hmac

# Every storage system call, in both runs: at every occurrence in the full
# run (~3,000 checks, two minutes on 2 cores), sampled in the short one
# (it needs strace; a longer hang guard).
PART_SECONDS=1200 part "faults (every storage system call failed at $FAULT_WHICH, 2 jobs)" \
    python3 "$STRESS_DIR/faults.py" --cgi-bin "$MOCKCLOUD_CGI_BIN" --jobs 2 "${FAULT_N[@]}"
# The same faults in the FastCGI mode's worker (--max-requests 1), every
# occurrence: in the full run (make stress, make test-all) only, since make
# test's budget has no room for it beside the CGI run's.
[[ "$MODE" != full ]] || PART_SECONDS=1200 part "faults in a FastCGI worker (--max-requests 1, 2 jobs)" \
    python3 "$STRESS_DIR/faults.py" --cgi-bin "$MOCKCLOUD_CGI_BIN" --jobs 2 --fastcgi
part "races ($RACE_ROUNDS rounds, each held open with an strace delay)" python3 "$STRESS_DIR/races.py" \
    --cgi-bin "$MOCKCLOUD_CGI_BIN" --rounds "$RACE_ROUNDS"

if [[ -z "$ONLY" || "$ONLY" == diskfull ]]; then
    if [[ "$(id -u)" == 0 ]]; then
        part "diskfull" "$STRESS_DIR/diskfull.sh"
        part "diskfull (filled by writes through the stack; the free-space floor)" \
            python3 "$STRESS_DIR/diskfill.py" --cgi-bin "$MOCKCLOUD_CGI_BIN"
    else
        echo "== diskfull: skipped (it mounts tmpfs file systems: run as root)"
    fi
fi

if [[ -z "$ONLY" || "$ONLY" == concurrency ]]; then
    # 16 writers and their readers at once: each thread is a device of its
    # own (its own 127.0.0.x source address), as 16 writers are on a LAN,
    # so the per-address cap (16 in progress) stays on as served.
    if start_stack concurrency; then
        part "concurrency ($WRITERS writers)" python3 "$STRESS_DIR/concurrency.py" "$BASE" --data "$DATA" \
            --writers "$WRITERS" --increments "$INCREMENTS" --puts "$PUTS" --feed-ops "$FEED_OPS" "${EXTRA[@]}" \
            --seconds "$((PART_SECONDS - 30))"
    else
        echo "could not start the concurrency stack"
        TOTAL_FAILED=$((TOTAL_FAILED + 1))
    fi
    stop_stacks
fi

printf '%s passed, %s failed\n' "$TOTAL_PASSED" "$TOTAL_FAILED"
((TOTAL_FAILED == 0))
