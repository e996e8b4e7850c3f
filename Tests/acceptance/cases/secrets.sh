# The key and token files as the serving user meets them: `start`
# and `serve` refuse a file that user cannot read, or that group or others
# can, naming the file, its owner and mode and the fix; and the signing
# and token sections of docs/OPERATIONS.md, run as written (as root), give a server that signs
# and checks tokens.

# fix_in OUT: the command after `Fix: ` in the launcher's refusal OUT.
fix_in() { sed -n 's/.*Fix: //p' "$1" | head -n 1; }

if [[ "$(id -u)" != 0 ]]; then
    it "secret files checked for another serving user (root only: skipped)"
else
    it "start refuses a key file the serving user cannot read, naming file, owner, mode and fix; the fix works"
    keys="$WORK/root-only.keys"
    (umask 077 && printf 'k1:%s\n' "$(openssl rand -hex 32)" >"$keys")
    if start_stack unreadable-keys "MOCKCLOUD_HMAC_KEYS=$keys" >"$WORK/unreadable.out"; then
        fail "start accepted $keys (root's, 0600)"
    fi
    grep -q "MOCKCLOUD_HMAC_KEYS: mockcloud (the user the programs run as) cannot read $keys (owned by root:root, mode 0600). Fix: chown mockcloud:mockcloud $keys" \
        "$WORK/unreadable.out" || fail "message: $(cat "$WORK/unreadable.out")"
    [[ ! -e "$WORK/unreadable-keys/nginx.pid" ]] || fail "something started: $(ls "$WORK/unreadable-keys")"
    eval "$(fix_in "$WORK/unreadable.out")"
    start_stack unreadable-keys "MOCKCLOUD_HMAC_KEYS=$keys" || fail "start after the fix failed"
    expect 200 PUT /user/settings -H 'X-User-Key: fixed' -d '{"a": 1}'
    [[ -f "$DATA/user_settings/fixed.json.mac" ]] || fail "no MAC sidecar: signing is not on"

    it "start refuses a token file the serving user cannot read, and one behind a directory closed to it"
    mkdir -m 0700 "$WORK/closed"
    "$MOCKCLOUD_CGI_BIN/mockcloud-admin" token "$WORK/closed/tokens" t >/dev/null 2>&1
    ! start_stack closed-tokens "MOCKCLOUD_TOKENS=$WORK/closed/tokens" >"$WORK/closed.out" || fail "start accepted it"
    grep -q "MOCKCLOUD_TOKENS: mockcloud (the user the programs run as) cannot reach $WORK/closed/tokens (owned by root:root, mode 0600): $WORK/closed is root:root, mode 0700 and closed to mockcloud. Fix: chmod o+x $WORK/closed" \
        "$WORK/closed.out" || fail "message: $(cat "$WORK/closed.out")"
    eval "$(fix_in "$WORK/closed.out")"
    ! start_stack closed-tokens "MOCKCLOUD_TOKENS=$WORK/closed/tokens" >"$WORK/closed.out" || fail "start accepted it"
    grep -q "cannot read $WORK/closed/tokens (owned by root:root, mode 0600). Fix: chown mockcloud:mockcloud $WORK/closed/tokens" \
        "$WORK/closed.out" || fail "message: $(cat "$WORK/closed.out")"

    it "start refuses a key file that group or others may read, and one that does not exist"
    chmod 0640 "$keys"
    ! start_stack open-keys "MOCKCLOUD_HMAC_KEYS=$keys" >"$WORK/open.out" || fail "start accepted a 0640 key file"
    grep -q "MOCKCLOUD_HMAC_KEYS: $keys is owned by mockcloud:mockcloud with mode 0640: group or others may read it, and the programs refuse such a file. Fix: chmod 600 $keys" \
        "$WORK/open.out" || fail "message: $(cat "$WORK/open.out")"
    chmod 0600 "$keys"
    ! start_stack no-keys "MOCKCLOUD_HMAC_KEYS=$WORK/no-such.keys" >"$WORK/none.out" || fail "start accepted a missing key file"
    grep -q "MOCKCLOUD_HMAC_KEYS names $WORK/no-such.keys, which is not a file" "$WORK/none.out" ||
        fail "message: $(cat "$WORK/none.out")"

    it "serve refuses an unreadable key file too, and leaves nothing running"
    (umask 077 && printf 'k1:%s\n' "$(openssl rand -hex 32)" >"$WORK/serve.keys")
    if env MOCKCLOUD_RUN="$WORK/serve-refused" MOCKCLOUD_DATA="$WORK/serve-refused-data" MOCKCLOUD_PORT="$(free_port)" \
        MOCKCLOUD_HMAC_KEYS="$WORK/serve.keys" timeout 20 "$LAUNCHER" serve >"$WORK/serve-refused.out" 2>&1 </dev/null; then
        fail "serve exited 0"
    fi
    grep -q "cannot read $WORK/serve.keys (owned by root:root, mode 0600). Fix: chown mockcloud:mockcloud $WORK/serve.keys" \
        "$WORK/serve-refused.out" || fail "message: $(cat "$WORK/serve-refused.out")"
    [[ ! -e "$WORK/serve-refused/nginx.pid" ]] || fail "nginx was started"

    # docs/OPERATIONS.md's sections, as written, in a directory laid out like the
    # checkout (its nginx/, admin/ and cgi-bin/), so that `data` and `run`
    # are the test's. Two changes only: /etc/mockcloud becomes a directory of
    # the test's, and `make serve` what it ends in once the programs are
    # built, `exec nginx/mockcloud-nginx.sh serve` (the Makefile's line).
    guide="$WORK/guide"
    mkdir -p "$guide"
    chmod 0711 "$guide"
    ln -s "$REPO/nginx" "$REPO/admin" "$guide/"
    ln -s "$MOCKCLOUD_CGI_BIN" "$guide/cgi-bin"

    # guide_blocks HEADING: the ```sh blocks of docs/OPERATIONS.md's section HEADING,
    # each line as written; a block ends in a line `# --`.
    guide_blocks() {
        awk -v heading="$1" '
            /^## / { inside = ($0 == "## " heading) }
            inside && /^```sh$/ { block = 1; next }
            inside && block && /^```$/ { block = 0; print "# --"; next }
            inside && block { print }' "$REPO/docs/OPERATIONS.md"
    }
    # as_run FILE: the block's lines up to `make serve`, with the two changes.
    as_run() {
        awk '{ print } / make serve$/ { exit }' "$1" |
            sed -e "s|/etc/mockcloud|$guide/etc/mockcloud|g" -e 's|make serve$|exec nginx/mockcloud-nginx.sh serve|'
    }
    guide_blocks "Signing stored data (HMAC-SHA256)" | awk -v dir="$WORK" '/^# --$/ { n++; next } { print > (dir "/signing-" (n + 0) ".sh") }'
    guide_blocks "Bearer tokens (optional)" | awk -v dir="$WORK" '/^# --$/ { n++; next } { print > (dir "/tokens-" (n + 0) ".sh") }'
    guide_port="$(free_port)"
    # serve_guide BLOCK OUT: BLOCK run (as_run) in the checkout-like
    # directory in the background, its output in OUT, recorded for cleanup;
    # GUIDE_PID is its PID. Returns once it served (until_serving).
    serve_guide() {
        grep -q 'make serve$' "$1" || fail "the section's block does not end in make serve: $(cat "$1")"
        : >"$2"
        (cd "$guide" && MOCKCLOUD_PORT="$guide_port" exec bash -e <(as_run "$1")) >"$2" 2>&1 &
        GUIDE_PID=$!
        SERVER_PIDS+=("$GUIDE_PID")
        until_serving "$2" "$GUIDE_PID" || fail "no server: $(cat "$2")"
        BASE="https://127.0.0.1:$guide_port" DATA="$guide/data" RUN="$guide/run"
    }

    it "the operations guide's signing section, run as root as written: the server signs, checks and keeps serving after sign and rotate"
    serve_guide "$WORK/signing-0.sh" "$WORK/guide-signing.out"
    expect 200 PUT /user/settings -H 'X-User-Key: u1' -d '{"weight": 71.3}'
    [[ -f "$DATA/user_settings/u1.json.mac" ]] || fail "no MAC sidecar: not signed"
    expect 200 GET /user/settings -H 'X-User-Key: u1'
    printf '{\n  "units": "metric"\n}' >"$DATA/user_settings/legacy.json"
    (cd "$guide" && bash -e <(sed "s|/etc/mockcloud|$guide/etc/mockcloud|g" "$WORK/signing-1.sh")) >"$WORK/guide-sign.out" 2>&1 ||
        fail "sign / verify: $(cat "$WORK/guide-sign.out")"
    expect 200 GET /user/settings -H 'X-User-Key: legacy'
    [[ -f "$DATA/user_settings/legacy.json.mac" ]] || fail "sign left legacy.json unsigned: $(cat "$WORK/guide-sign.out")"
    (cd "$guide" && bash -e <(sed "s|/etc/mockcloud|$guide/etc/mockcloud|g" "$WORK/signing-2.sh")) >"$WORK/guide-rotate.out" 2>&1 ||
        fail "rotate: $(cat "$WORK/guide-rotate.out")"
    expect 200 GET /user/settings -H 'X-User-Key: legacy'
    expect 200 GET /user/settings -H 'X-User-Key: u1'
    kill -TERM "$GUIDE_PID"
    wait "$GUIDE_PID"

    it "the operations guide's token section, run as root as written: the server checks tokens"
    serve_guide "$WORK/tokens-0.sh" "$WORK/guide-tokens.out"
    mapfile -t tokens < <(grep -o '^mct_[A-Za-z0-9_]*' "$WORK/guide-tokens.out")
    ((${#tokens[@]} == 2)) || fail "the guide's commands printed ${#tokens[@]} tokens: $(cat "$WORK/guide-tokens.out")"
    expect 401 GET /user/settings -H 'X-User-Key: u1'
    expect 200 GET /user/settings -H 'X-User-Key: u1' -H "Authorization: Bearer ${tokens[0]:-none}"
    expect 200 PUT /user/settings -H 'X-User-Key: u2' -H "Authorization: Bearer ${tokens[1]:-none}" -d '{}'
    expect 403 GET /user/settings -H 'X-User-Key: u3' -H "Authorization: Bearer ${tokens[1]:-none}"
    kill -TERM "$GUIDE_PID"
    wait "$GUIDE_PID"
fi
