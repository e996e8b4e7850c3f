# No served request runs anything as root (a bug in a program must not be
# a root compromise of the box): `serve` and `start` started as root both
# run nginx's workers, fcgiwrap and every program as the unprivileged
# `mockcloud` user, which owns the data and run directories. The processes
# are read from /proc in the middle of a request: for `serve`, a stand-in
# program that answers with its own uid and stays running for a second; for
# `start` (the stack every suite uses), the real program, held by its key's
# lock.

# serving_processes RUN: "pid:command:real effective uids;" for each of
# nginx's workers, fcgiwrap and everything below it, of the stack in RUN.
# Builtins only for each process (fcgiwrap runs 64): a snapshot must be
# quicker than the one-second request it is taken during, on a busy machine too.
serving_processes() {
    local pid procs="" key real effective args
    for pid in $(below "$(cat "$1/nginx.pid" 2>/dev/null)") "$(cat "$1/fcgiwrap.pid" 2>/dev/null)" \
        $(below "$(cat "$1/fcgiwrap.pid" 2>/dev/null)"); do
        [[ -n "$pid" && -e "/proc/$pid" ]] || continue
        real="" effective=""
        while read -r key real effective _; do [[ "$key" != Uid: ]] || break; done <"/proc/$pid/status" 2>/dev/null
        args=()
        mapfile -d '' args <"/proc/$pid/cmdline" 2>/dev/null
        args="${args[*]}"
        procs+="$pid:${args:0:200}:$real $effective;"
    done
    printf '%s' "$procs"
}

# not_root PROCS: fails for each entry of serving_processes that runs as root.
not_root() {
    local entry real effective seen
    IFS=';' read -ra seen <<<"$1"
    for entry in "${seen[@]}"; do
        [[ -n "$entry" ]] || continue
        read -r real effective <<<"${entry##*:}"
        [[ "$real" != 0 && "$effective" != 0 ]] || fail "runs as root: $entry"
    done
}

if [[ "$(id -u)" != 0 ]]; then
    it "serve as an ordinary user runs everything as that user (root-only cases skipped)"
else
    fake="$WORK/uid-cgi"
    mkdir -p "$fake"
    # A stand-in that answers with its uids: at once (the launcher's
    # readiness probe), or for the key uid-held once the test has seen it
    # running (it touches uid-release), or after a minute.
    for program in user-settings inbox; do
        cat >"$fake/$program" <<SCRIPT
#!/bin/sh
i=0
while [ "\$HTTP_X_USER_KEY" = uid-held ] && [ ! -e "$WORK/uid-release" ] && [ \$i -lt 1200 ]; do
    sleep 0.05
    i=\$((i + 1))
done
printf 'Status: 200 OK\r\nContent-Type: application/json\r\n\r\n{"uid": %s, "euid": %s}' "\$(id -ru)" "\$(id -u)"
SCRIPT
        chmod 0755 "$fake/$program"
    done
    chmod 0755 "$fake"
    urun="$WORK/userv"
    uport="$(free_port)"
    serve_in_background "$WORK/userv.out" MOCKCLOUD_CGI_BIN="$fake" MOCKCLOUD_RUN="$urun" \
        MOCKCLOUD_DATA="$WORK/userv-data" MOCKCLOUD_PORT="$uport"
    userv_pid=$SERVE_PID

    it "serve as root: a served program runs as mockcloud, not root"
    grep -q 'MockCloud serving' "$WORK/userv.out" || fail "serve did not start: $(cat "$WORK/userv.out")"
    curl -s --noproxy '*' --cacert "$urun/tls/ca.crt" -H 'X-User-Key: uid-held' -o "$WORK/uid.json" \
        "https://127.0.0.1:$uport/user/settings" &
    curl_pid=$!
    # ps in the middle of the request (the program waits for uid-release):
    # nginx's workers, fcgiwrap, the program, once it runs, however slowly a
    # busy machine starts it.
    procs=""
    while kill -0 "$curl_pid" 2>/dev/null; do
        procs="$(serving_processes "$urun")"
        [[ "$procs" != *user-settings* ]] || break
        sleep 0.05
    done
    touch "$WORK/uid-release"
    wait "$curl_pid"
    mockcloud_uid="$(id -u mockcloud 2>/dev/null)"
    [[ -n "$mockcloud_uid" && "$mockcloud_uid" != 0 ]] || fail "no mockcloud user (uid '$mockcloud_uid')"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); u=sys.argv[2]; sys.exit(0 if d["uid"]==int(u) and d["euid"]==int(u) else 1)' \
        "$WORK/uid.json" "$mockcloud_uid" 2>/dev/null || fail "the program answered $(cat "$WORK/uid.json"), expected uid $mockcloud_uid"

    it "serve as root: ps during a request shows no nginx worker, fcgiwrap or program as root"
    [[ "$procs" == *user-settings* ]] || fail "the program was not seen running: $procs"
    [[ "$procs" == *"nginx: worker"* ]] || fail "no nginx worker seen: $procs"
    [[ "$procs" == *fcgiwrap* ]] || fail "no fcgiwrap seen: $procs"
    not_root "$procs"

    it "serve as root: the data and run directories belong to mockcloud, 0700"
    for dir in "$WORK/userv-data" "$urun"; do
        [[ "$(stat -c '%U %a' "$dir")" == "mockcloud 700" ]] || fail "$dir: $(stat -c '%U %a' "$dir")"
    done

    it "serve as root: the CA's key stays in the run directory, mode 0600, root's"
    [[ "$(stat -c '%U %a' "$urun/tls/ca.key")" == "root 600" ]] || fail "ca.key: $(stat -c '%U %a' "$urun/tls/ca.key")"
    kill -TERM "$userv_pid"
    wait "$userv_pid"

    it "start as root (every suite's stack): /proc mid-request shows the real program, fcgiwrap and nginx's workers as mockcloud"
    use_stack main "$MAIN_PORT"
    expect 200 PUT /user/settings -H 'X-User-Key: uid-held' -d '{"n": 0}'
    # The key's lock held until the test has seen the PUT's program waiting
    # for it (held-release), or for a minute.
    flock -x "$DATA/.locks/user_settings.uid-held.lock" \
        sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' _ "$WORK/held-release" &
    holder=$!
    sleep 0.2
    curl -s --noproxy '*' -k -X PUT -H 'X-User-Key: uid-held' -d '{"n": 1}' -o "$WORK/held-put.json" -w '%{http_code}' \
        "$BASE/user/settings" >"$WORK/held-put.code" &
    put_pid=$!
    procs=""
    while kill -0 "$put_pid" 2>/dev/null; do
        procs="$(serving_processes "$RUN")"
        [[ "$procs" != *"/user-settings"* ]] || break
        sleep 0.05
    done
    touch "$WORK/held-release"
    wait "$holder"
    wait "$put_pid"
    [[ "$procs" == *"/user-settings"* ]] || fail "the program was not seen running: $procs"
    [[ "$procs" == *"nginx: worker"* && "$procs" == *fcgiwrap* ]] || fail "nginx's workers or fcgiwrap not seen: $procs"
    program="$(tr ';' '\n' <<<"$procs" | grep -m1 '/user-settings')"
    [[ "${program##*:}" == "$mockcloud_uid $mockcloud_uid" ]] || fail "the program runs as ${program##*:}, expected uid $mockcloud_uid: $program"
    not_root "$procs"
    [[ "$(cat "$WORK/held-put.code")" == 200 ]] || fail "the held PUT answered $(cat "$WORK/held-put.code"): $(cat "$WORK/held-put.json")"
fi
