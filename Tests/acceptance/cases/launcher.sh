# nginx/mockcloud-nginx.sh itself (docs/API.md §7): serve in the
# foreground until SIGTERM, and leave nothing running, whatever happens.

# Processes (not zombies) whose command line names DIR: what a stack in DIR runs.
running_in() {
    local cmdline pid found=""
    for cmdline in /proc/[0-9]*/cmdline; do
        pid="${cmdline#/proc/}"
        pid="${pid%/cmdline}"
        [[ "$pid" != "$$" && "$pid" != "$BASHPID" ]] || continue
        if { tr '\0' ' ' <"$cmdline"; } 2>/dev/null | grep -q -- "$1/"; then found+="$pid "; fi
    done
    printf '%s' "$found"
}

serve_run="$WORK/serve"
serve_port="$(free_port)"

it "serve prints the URL once nginx answers, and serves"
serve_in_background "$WORK/serve.out" MOCKCLOUD_RUN="$serve_run" MOCKCLOUD_DATA="$WORK/serve-data" \
    MOCKCLOUD_PORT="$serve_port"
serve_pid=$SERVE_PID
grep -q "^MockCloud serving https://127.0.0.1:$serve_port  (data: $WORK/serve-data)\$" "$WORK/serve.out" ||
    fail "no banner: $(cat "$WORK/serve.out")"
code="$(curl -sk --noproxy '*' -o /dev/null -w '%{http_code}' "https://127.0.0.1:$serve_port/user/settings")"
[[ "$code" == 400 ]] || fail "GET /user/settings without a key answered $code, expected 400"
[[ -n "$(running_in "$serve_run")" ]] || fail "no process runs in $serve_run"

it "SIGTERM stops serve, nginx and fcgiwrap with its children: nothing is left running"
kill -TERM "$serve_pid"
wait "$serve_pid"
serve_status=$?
[[ "$serve_status" == 0 ]] || fail "serve exited with status $serve_status"
sleep 0.2
left="$(running_in "$serve_run")"
[[ -z "$left" ]] || fail "still running: $(ps -o pid=,args= -p "${left// /,}" 2>/dev/null || echo "$left")"
[[ ! -e "$serve_run/fcgiwrap.sock" ]] || fail "the fcgiwrap socket is still there"

# PID and its descendants, from one pass over /proc.
tree_of() {
    local stat line rest
    for stat in /proc/[0-9]*/stat; do
        { read -r line <"$stat"; } 2>/dev/null || continue
        rest="${line##*) }"
        rest="${rest#* }"
        printf '%s %s\n' "${line%% *}" "${rest%% *}"
    done | awk -v root="$1" '
        { parent[$1] = $2 }
        END {
            print root
            for (pid in parent) {
                for (p = parent[pid]; p != "" && p != 0; p = parent[p]) if (p == root) { print pid; break }
            }
        }'
}

it "SIGTERM twice in a row to make serve's process group leaves no nginx, fcgiwrap, pool or program running"
# As a supervisor, `timeout` or `kill -TERM -PGID` stop it: the whole group
# gets TERM, make forwards its own to the launcher, and here the group gets
# a second one while the launcher is stopping. Every process the stack started (each recorded in
# its run directory, with what runs below it) must be gone.
group_run="$WORK/group"
group_port="$(free_port)"
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS MOCKCLOUD_MODE="$TEST_MODE" MOCKCLOUD_RUN="$group_run" MOCKCLOUD_DATA="$WORK/group-data" MOCKCLOUD_PORT="$group_port" \
    setsid make -C "$REPO" --no-print-directory -o deps -o install serve >"$WORK/group.out" 2>&1 &
group_pid=$!
SERVER_PIDS+=("$group_pid")
if until_serving "$WORK/group.out" "$group_pid"; then
    started=""
    for pidfile in "$group_run"/*.pid; do
        [[ -s "$pidfile" ]] || continue
        for pid in $(tree_of "$(cat "$pidfile")"); do started+="$pid "; done
    done
    [[ "$started" == *" "*" "* ]] || fail "fewer processes recorded than nginx and fcgiwrap: $started"
    kill -TERM -- "-$group_pid"
    # The second TERM while the launcher stops the stack, as soon as it
    # says so: its stop takes a tenth of a second at least (it finds each
    # process's children and waits for each to go), which a reaction of a
    # millisecond or two falls well inside of, every time.
    for ((i = 0; i < 20000; i++)); do
        [[ "$(<"$WORK/group.out")" != *"mockcloud-nginx.sh: stopping"* ]] || break
        kill -0 "$group_pid" 2>/dev/null || break
    done
    kill -TERM -- "-$group_pid" 2>/dev/null
    wait "$group_pid"
    # A bound against a hang: the launcher waits up to 10 s before SIGKILL.
    for ((i = 0; i < 300; i++)); do
        left=""
        for pid in $started; do [[ ! -e "/proc/$pid" ]] || [[ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" == Z ]] || left+="$pid "; done
        [[ -n "$left" ]] || break
        sleep 0.1
    done
    [[ -z "$left" ]] || fail "still running after make serve stopped: $(for pid in $left; do printf '%s(%s) ' "$pid" "$(cat "/proc/$pid/comm" 2>/dev/null)"; done)"
else
    fail "make serve did not serve: $(cat "$WORK/group.out")"
fi
# Whatever the launcher left, stopped by the PIDs it recorded.
MOCKCLOUD_RUN="$group_run" "$LAUNCHER" stop 2>/dev/null

it "start on a busy port fails with nginx's error and leaves no fcgiwrap running"
busy_run="$WORK/busy"
if MOCKCLOUD_RUN="$busy_run" MOCKCLOUD_DATA="$WORK/busy-data" MOCKCLOUD_PORT="$MAIN_PORT" \
    "$LAUNCHER" start >"$WORK/busy.out" 2>&1; then
    fail "start succeeded on the main stack's port"
    MOCKCLOUD_RUN="$busy_run" "$LAUNCHER" stop
fi
grep -q 'Address already in use' "$WORK/busy.out" || fail "no bind error shown: $(cat "$WORK/busy.out")"
left="$(running_in "$busy_run")"
[[ -z "$left" ]] || fail "still running: $left"

it "a run directory too long for fcgiwrap's socket path is refused with a clear message"
long_run="$WORK/$(printf 'r%.0s' {1..100})"
! MOCKCLOUD_RUN="$long_run" MOCKCLOUD_PORT="$(free_port)" "$LAUNCHER" start >"$WORK/long.out" 2>&1 ||
    fail "start succeeded"
grep -q 'too long for a unix socket path' "$WORK/long.out" || fail "message: $(cat "$WORK/long.out")"
[[ ! -e "$long_run" ]] || fail "it created $long_run anyway"

it "a second start in a running stack's directory is refused, and stop twice is harmless"
! MOCKCLOUD_RUN="$WORK/main" MOCKCLOUD_PORT="$(free_port)" "$LAUNCHER" start >"$WORK/twice.out" 2>&1 ||
    fail "a second start succeeded"
grep -q 'already running' "$WORK/twice.out" || fail "message: $(cat "$WORK/twice.out")"
MOCKCLOUD_RUN="$busy_run" "$LAUNCHER" stop || fail "stop of a stopped stack failed"

it "MOCKCLOUD_HMAC_REQUIRE other than 1 is refused at start (true or yes would leave signatures optional)"
for value in true yes 0; do
    ! MOCKCLOUD_RUN="$WORK/req" MOCKCLOUD_HMAC_REQUIRE="$value" "$LAUNCHER" start >"$WORK/req.out" 2>&1 ||
        { fail "start succeeded with MOCKCLOUD_HMAC_REQUIRE=$value"; MOCKCLOUD_RUN="$WORK/req" "$LAUNCHER" stop; }
    grep -q "MOCKCLOUD_HMAC_REQUIRE must be 1 (refuse unsigned documents) or unset, not '$value'" "$WORK/req.out" ||
        fail "message for $value: $(cat "$WORK/req.out")"
done

it "MOCKCLOUD_UPSTREAM with a path is refused (every path must reach the upstream unchanged)"
! MOCKCLOUD_RUN="$WORK/up" MOCKCLOUD_UPSTREAM=http://127.0.0.1:8000/api "$LAUNCHER" start >"$WORK/up.out" 2>&1 ||
    fail "start succeeded"
grep -q 'no path' "$WORK/up.out" || fail "message: $(cat "$WORK/up.out")"
