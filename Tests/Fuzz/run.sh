#!/usr/bin/env bash
# Builds the fuzz targets, replays every reproducer in Tests/Fuzz/regressions/
# (each must pass now), then fuzzes each target for a bounded time. The
# `args` target is not libFuzzer: args.py throws argument lists at the built
# command-line tools (mockcloud-sync, mockcloud-admin) for the same time.
#
#   Tests/Fuzz/run.sh [seconds]      seconds per target (default 10; `make fuzz`: 60)
#   FUZZ_TARGETS="json cgi args"     a subset (default: all, see targets.sh)
#   FUZZ_JOBS=2                      targets fuzzed at once (default 2)
#   FUZZ_OPTIMIZE=-Onone             the quick build (make test's; see targets.sh)
#
# New corpus entries go to .build/fuzz/corpus/<target>/ (kept between runs);
# the seeds in Tests/Fuzz/corpus/ are only read. A crash, hang, leak or failed
# oracle leaves its input in .build/fuzz/artifacts/<target>/. One line per
# target, then `N passed, M failed` last; exit 1 when anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[[ ! -d /opt/swift/usr/bin ]] || PATH="/opt/swift/usr/bin:$PATH"
source Tests/Fuzz/targets.sh

seconds="${1:-10}"
jobs="${FUZZ_JOBS:-2}"
read -r -a chosen <<< "${FUZZ_TARGETS:-${FUZZ_ALL_TARGETS[*]} ${FUZZ_PROCESS_TARGETS[*]}}"
targets=()
process_targets=()
for target in "${chosen[@]}"; do
    if [[ " ${FUZZ_PROCESS_TARGETS[*]} " == *" $target "* ]]; then process_targets+=("$target"); else targets+=("$target"); fi
done
out="${FUZZ_OUT:-.build/fuzz}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
# Swift's own crash backtracer would take the signal from libFuzzer's handler
# (and its helper process trips ASan); libFuzzer prints the stack itself.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || true)}"

if ((${#targets[@]})) && ! Tests/Fuzz/build.sh "${targets[@]}"; then
    echo "fuzz: build failed"
    echo "0 passed, 1 failed"
    exit 1
fi
mkdir -p "$out/logs"
passed=0
failed=0

# Every reproducer, one at a time, so that each one's result is its own line.
for target in "${targets[@]}"; do
    for file in Tests/Fuzz/regressions/"$target"/*; do
        [[ -f "$file" ]] || continue
        if "$fuzz_built/$target" -runs=1 "$file" > "$out/logs/replay.log" 2>&1; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "REGRESSION $target: $file fails again:"
            grep -E "FUZZ CHECK FAILED|ERROR: |Fatal error|deadly signal|^    #[0-9] " "$out/logs/replay.log" | head -12 | sed 's/^/    /'
        fi
    done
done

fuzz_one() {
    local target="$1" log="$out/logs/$1.log"
    mkdir -p "$out/corpus/$target" "$out/artifacts/$target"
    # shellcheck disable=SC2046
    "$fuzz_built/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        $(fuzz_options "$target") -artifact_prefix="$out/artifacts/$target/" \
        "$out/corpus/$target" "Tests/Fuzz/corpus/$target" > "$log" 2>&1
    echo $? > "$log.status"
}

running=0
for target in "${targets[@]}"; do
    fuzz_one "$target" &
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n
        running=$((running - 1))
    fi
done
wait

for target in "${targets[@]}"; do
    log="$out/logs/$target.log"
    status="$(cat "$log.status" 2>/dev/null || echo 1)"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    took="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)"
    corpus="$(find "$out/corpus/$target" -type f | wc -l)"
    if [[ "$status" == 0 ]]; then
        passed=$((passed + 1))
        printf 'fuzz %-12s ok      %10s execs in %ss (%s/s), corpus %s files\n' "$target" "${execs:-?}" "${took:-?}" "${rate:-?}" "$corpus"
    else
        failed=$((failed + 1))
        artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
        kind="$(grep -m1 -oE 'FUZZ CHECK FAILED \([^)]*\)|ERROR: [A-Za-z]+: [a-z -]+' "$log")"
        printf 'fuzz %-12s FAILED  %s after %s execs; input %s; log %s\n' "$target" "${kind:-exit $status}" "${execs:-?}" "${artifact:-?}" "$log"
    fi
done
# The command-line tools, after the libFuzzer jobs (its own lines, its own counts).
for target in "${process_targets[@]}"; do
    Tests/Fuzz/"$target".py "$seconds" > "$out/logs/$target.log" 2>&1
    grep -v '^[0-9]* passed, [0-9]* failed$' "$out/logs/$target.log"
    if [[ "$(tail -n 1 "$out/logs/$target.log")" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
    else
        failed=$((failed + 1))
        echo "fuzz $target: no summary; log $out/logs/$target.log"
    fi
done
echo "$passed passed, $failed failed"
((failed == 0))
