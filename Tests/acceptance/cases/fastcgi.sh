# The FastCGI mode (docs/OPERATIONS.md, "FastCGI mode") through nginx + TLS +
# curl, a smoke run: the same answers as the CGI mode, a read that waits
# never takes a request's worker, a worker killed in the middle of a request
# answers it in JSON and the pool puts another in its place, and stop leaves
# nothing running. The broad suites run in both modes elsewhere.

# The pool's workers (children of the master PID in RUN/POOL.pid).
pool_workers() {
    local master stat rest
    master="$(cat "$RUN/$1.pid" 2>/dev/null)" || return 0
    for stat in /proc/[0-9]*/stat; do
        { read -r rest <"$stat"; } 2>/dev/null || continue
        local pid="${rest%% *}"
        rest="${rest##*) }"
        rest="${rest#* }"
        [[ "${rest%% *}" == "$master" ]] && printf '%s\n' "$pid"
    done
}

# A worker of POOL that has an inotify instance open: one that waits.
waiting_worker() {
    local pid
    for pid in $(pool_workers "$1"); do
        if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q inotify; then printf '%s' "$pid"; return; fi
    done
}

start_stack fastcgi MOCKCLOUD_MODE=fastcgi MOCKCLOUD_FASTCGI_WORKERS=1 || fail "could not start the FastCGI stack"
fastcgi_run="$RUN"

it "FastCGI mode: the routes answer as in CGI mode, with no fcgiwrap"
expect 404 GET /user/settings -H 'X-User-Key: fc1'
body_is '{"error": "no settings stored for this user"}'
expect 200 PUT /user/settings -H 'X-User-Key: fc1' -H 'Content-Type: application/json' \
    --data '{"updatedAt": "20260518T044304.095000Z", "a": 1}'
tag="$(last_header ETag)"
py 'assert doc["a"] == 1 and stored("fc1") is not None'
expect 201 PUT /inbox/m1 -H 'X-User-Key: fc1' -H 'X-Sync-Version: 1' -H 'Content-Type: application/json' --data '{"n": 1}'
expect 200 GET /inbox -H 'X-User-Key: fc1'
py 'assert [m["id"] for m in doc["messages"]] == ["m1"]'
expect 400 PUT /user/settings -H 'X-User-Key: ../x' --data '{}'
[[ ! -e "$fastcgi_run/fcgiwrap.pid" ]] || fail "fcgiwrap runs in FastCGI mode"
for pool in user-settings user-settings-waits inbox inbox-waits; do
    [[ -S "$fastcgi_run/fastcgi/$pool.sock" ]] || fail "no socket for the $pool pool"
done

it "FastCGI mode: two waits beside one settings worker, and every other request is answered"
held wait1 "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
held wait2 "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
for i in 1 2 3; do expect 200 GET /user/settings -H 'X-User-Key: fc1'; done
expect 200 PUT /user/settings -H 'X-User-Key: fc1' -H 'Content-Type: application/json' \
    --data '{"updatedAt": "20260518T044305.095000Z", "a": 2}'
collect wait1
[[ "$HELD_STATUS" == 200 ]] || fail "the first wait answered $HELD_STATUS, expected 200 after the write"
collect wait2
[[ "$HELD_STATUS" == 200 ]] || fail "the second wait answered $HELD_STATUS, expected 200 after the write"
tag="$(python3 -c 'import sys; print([l.split(":",1)[1].strip() for l in open(sys.argv[1]) if l.lower().startswith("etag:")][0])' "$WORK/wait1.headers")"

it "FastCGI mode: a worker killed mid-request answers that request in JSON (500, changed no) and is replaced"
held crash "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
worker=""
for ((i = 0; i < 200; i++)); do
    worker="$(waiting_worker user-settings-waits)"
    [[ -z "$worker" ]] || break
    sleep 0.05
done
if [[ -z "$worker" ]]; then
    fail "no worker of the waits pool began the wait"
else
    kill -SEGV "$worker"
    collect crash
    [[ "$HELD_STATUS" == 500 ]] || fail "the killed request answered $HELD_STATUS, expected 500"
    [[ "$(cat "$WORK/crash.body")" == '{"error": "internal error; see the server log", "changed": "no"}' ]] ||
        fail "body: $(cat "$WORK/crash.body")"
    grep -q "the program crashed (fatal signal)" "$fastcgi_run/logs/error.log" || fail "no crash line in nginx's error.log"
    grep -q "worker $worker ended by signal 11" "$fastcgi_run/logs/user-settings-waits.log" ||
        fail "the master did not log the signal: $(tail -n 3 "$fastcgi_run/logs/user-settings-waits.log")"
    for ((i = 0; i < 200; i++)); do
        [[ "$(pool_workers user-settings-waits | wc -l)" == 64 ]] && break
        sleep 0.05
    done
    [[ "$(pool_workers user-settings-waits | wc -l)" == 64 ]] || fail "the waits pool is not whole again"
fi
expect 200 GET /user/settings -H 'X-User-Key: fc1'

it "FastCGI mode: stop leaves no pool, worker or nginx behind"
masters=""
for pool in user-settings user-settings-waits inbox inbox-waits; do masters+="$(cat "$fastcgi_run/$pool.pid") "; done
MOCKCLOUD_RUN="$fastcgi_run" "$LAUNCHER" stop
left=""
for pid in $masters; do
    # Gone, or a zombie whose parent (whoever reaps orphans here) has not yet reaped it.
    state="$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$pid/stat" 2>/dev/null)"
    [[ -z "$state" || "$state" == Z ]] || left+="$pid "
done
for cmdline in /proc/[0-9]*/cmdline; do
    if { tr '\0' ' ' <"$cmdline"; } 2>/dev/null | grep -q -- "$fastcgi_run/"; then left+="${cmdline//[!0-9]/} "; fi
done
[[ -z "$left" ]] || fail "still running: $(ps -o pid=,args= -p "${left// /,}" 2>/dev/null || echo "$left")"
