# mockcloud-admin doctor judges MockCloud's own processes only:
# the fcgiwrap behind the socket it checks and the workers of the nginx in
# nginx's pid file, not every fcgiwrap or nginx on the box. Here it runs
# on a root of its own (MOCKCLOUD_PREFIX) beside an unrelated fcgiwrap and
# an unrelated nginx, both running as root; each is stopped by PID.

# The processes below fcgiwrap (its preforked children) and below an nginx
# master (its workers): `below`, in Tests/support/cases.sh.
fcgiwrap_bin="$(PATH="$PATH:/usr/sbin" command -v fcgiwrap || echo /usr/sbin/fcgiwrap)"

# start_fcgiwrap SOCKET [setpriv options]: fcgiwrap on SOCKET (as root, or
# as the user the options name); FCGI_PID is its PID.
start_fcgiwrap() {
    local socket="$1" i
    shift
    rm -f "$socket"
    if (($# > 0)); then
        setpriv "$@" --init-groups env -i PATH=/usr/bin:/bin "$fcgiwrap_bin" -c 2 -s "unix:$socket" </dev/null >/dev/null 2>&1 &
    else
        env -i PATH=/usr/bin:/bin "$fcgiwrap_bin" -c 2 -s "unix:$socket" </dev/null >/dev/null 2>&1 &
    fi
    FCGI_PID=$!
    for ((i = 0; i < 100; i++)); do
        [[ -S "$socket" && -n "$(below "$FCGI_PID")" ]] && return 0
        sleep 0.05
    done
    fail "fcgiwrap on $socket did not start"
}

# stop_fcgiwrap PID: the parent, then its preforked children, by PID.
stop_fcgiwrap() {
    local children
    children="$(below "$1")"
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    # shellcheck disable=SC2086
    [[ -z "$children" ]] || kill $children 2>/dev/null
}

# doctor: mockcloud-admin doctor on the prefix; its output in $WORK/doctor.out.
doctor() {
    MOCKCLOUD_PREFIX="$prefix" "$MOCKCLOUD_CGI_BIN/mockcloud-admin" doctor --url "https://127.0.0.1:$MAIN_PORT" \
        >"$WORK/doctor.out" 2>&1
}

if [[ "$(id -u)" != 0 ]]; then
    it "doctor beside other fcgiwrap and nginx processes (root only: skipped)"
else
    prefix="$WORK/doctor-root"
    mkdir -p "$prefix/run" "$WORK/other-nginx/logs"
    chown www-data:www-data "$prefix/run"
    chmod 0711 "$prefix"

    # Somebody else's fcgiwrap (a git web front end, say) and nginx, as root.
    start_fcgiwrap "$WORK/other-fcgiwrap.sock"
    other_fcgiwrap=$FCGI_PID
    cat >"$WORK/other-nginx/nginx.conf" <<NGINX
user root;
worker_processes 1;
pid $WORK/other-nginx/nginx.pid;
error_log $WORK/other-nginx/logs/error.log;
events {}
http {
    access_log off;
    client_body_temp_path $WORK/other-nginx/body;
    fastcgi_temp_path $WORK/other-nginx/fastcgi;
    proxy_temp_path $WORK/other-nginx/proxy;
    scgi_temp_path $WORK/other-nginx/scgi;
    uwsgi_temp_path $WORK/other-nginx/uwsgi;
    server { listen 127.0.0.1:$(free_port); }
}
NGINX
    "$(command -v nginx || echo /usr/sbin/nginx)" -p "$WORK/other-nginx/" -c "$WORK/other-nginx/nginx.conf" \
        -e "$WORK/other-nginx/logs/error.log" || fail "the other nginx did not start"
    other_nginx="$(cat "$WORK/other-nginx/nginx.pid" 2>/dev/null)"
    # MockCloud's own: an fcgiwrap as www-data on the prefix's socket, and
    # the main stack's nginx (workers as mockcloud) in the prefix's pid file.
    start_fcgiwrap "$prefix/run/fcgiwrap.socket" --reuid=www-data --regid=www-data
    own_fcgiwrap=$FCGI_PID
    cp "$RUN/nginx.pid" "$prefix/run/nginx.pid"

    it "doctor beside a root fcgiwrap and a root nginx that are not MockCloud's: no process problem"
    doctor
    ! grep -q 'runs as root' "$WORK/doctor.out" || fail "doctor judged other processes: $(grep -A1 'runs as root' "$WORK/doctor.out")"
    grep -q 'problem: ' "$WORK/doctor.out" || fail "doctor found no problem at all in an empty root: $(cat "$WORK/doctor.out")"

    it "doctor names MockCloud's own fcgiwrap when that one runs as root (pid and socket)"
    stop_fcgiwrap "$own_fcgiwrap"
    start_fcgiwrap "$prefix/run/fcgiwrap.socket"
    own_fcgiwrap=$FCGI_PID
    doctor
    grep -q "problem: fcgiwrap (pid $own_fcgiwrap, behind $prefix/run/fcgiwrap.socket) runs as root" "$WORK/doctor.out" ||
        fail "doctor missed its own root fcgiwrap (pid $own_fcgiwrap): $(cat "$WORK/doctor.out")"
    others="$(grep 'runs as root' "$WORK/doctor.out" | grep -v "behind $prefix/run/fcgiwrap.socket) runs as root")"
    [[ -z "$others" ]] || fail "doctor named more: $others"

    it "doctor names root nginx workers when the nginx in its pid file has them"
    cp "$WORK/other-nginx/nginx.pid" "$prefix/run/nginx.pid"
    doctor
    worker="$(below "$other_nginx" | head -n 1)"
    grep -q "problem: an nginx worker (pid $worker, of the nginx in $prefix/run/nginx.pid) runs as root" "$WORK/doctor.out" ||
        fail "doctor missed the root worker $worker: $(grep -A1 'runs as root' "$WORK/doctor.out")"

    stop_fcgiwrap "$own_fcgiwrap"
    stop_fcgiwrap "$other_fcgiwrap"
    [[ -z "$other_nginx" ]] || { kill "$other_nginx"; for ((i = 0; i < 50; i++)); do [[ -e "/proc/$other_nginx" ]] || break; sleep 0.1; done; }
fi
