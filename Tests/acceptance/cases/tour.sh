# The README's curl tour, run as written (Tests/acceptance/readme_tour.py)
# against a stack of its own, as against `make serve`: its address and CA
# become the stack's, and every command whose comment names a status must
# answer that status.

it "the README's curl tour answers the status each of its comments names"
if start_stack tour; then
    tour_script="$WORK/tour.sh"
    python3 "$REPO/Tests/acceptance/readme_tour.py" "$REPO/README.md" "$BASE" "$RUN/tls/ca.crt" >"$tour_script" ||
        fail "README.md has no curl tour block to run"
    grep -q -- '-w' "$tour_script" || fail "the tour names no status to check: $(cat "$tour_script")"
    tour_out="$(no_proxy='*' bash "$tour_script" 2>&1)" || fail "the tour ended with an error: $tour_out"
    [[ -z "$tour_out" ]] || fail "$tour_out"
else
    fail "the tour's stack did not start"
fi
