# The FastCGI mode (docs/OPERATIONS.md, "FastCGI mode") through nginx + TLS +
# curl, a smoke run: the same answers as the CGI mode, reads that wait held
# by each program's one event loop (many at once, all answered by one write,
# the per-address share refused at once, a client that leaves freeing its
# place), a loop that dies replaced, and stop leaves nothing running. The broad suites run in both modes elsewhere.

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

# The sockets PID holds open (the loop's: its listening socket and one per
# connection from nginx, each a held wait).
sockets_of() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'socket:' || true; }

# Waits until the loop PID holds COUNT sockets; false after ~10 s.
loop_holds() { eventually 10 prints "$2" sockets_of "$1"; }

start_stack fastcgi MOCKCLOUD_MODE=fastcgi MOCKCLOUD_FASTCGI_WORKERS=1 MOCKCLOUD_FASTCGI_WAITS_PER_ADDRESS=6 ||
    fail "could not start the FastCGI stack"
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

it "FastCGI mode: one process holds every wait; one write answers them all; the share is refused at once; a client that leaves frees its place"
loop="$(pool_workers user-settings-waits)"
[[ "$(wc -w <<<"$loop")" == 1 ]] || fail "the waits pool runs $(wc -w <<<"$loop") processes, expected its one loop"
ls -l "/proc/$loop/fd" 2>/dev/null | grep -q inotify || fail "the loop has no inotify instance"
for i in 1 2 3 4 5 6; do
    held "near$i" "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
    held "far$i" "/user/settings?wait=30" --interface 127.0.0.2 -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
done
loop_holds "$loop" 13 || fail "the loop holds $(sockets_of "$loop") sockets, expected its socket and 12 waits"
# A seventh from 127.0.0.1 is past its share (6): refused at once, as in CGI mode.
expect 429 GET "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
[[ "$(last_header Retry-After)" == 5 ]] || fail "the refused wait has no Retry-After: 5"
# Every other request is answered beside them.
for i in 1 2 3; do expect 200 GET /user/settings -H 'X-User-Key: fc1'; done
# A client that leaves frees its place at once: another from its address is held.
kill "$HELD_near6"
wait "$HELD_near6" 2>/dev/null || true
loop_holds "$loop" 12 || fail "the loop still holds $(sockets_of "$loop") sockets after a client left"
held near7 "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
loop_holds "$loop" 13 || fail "the loop did not take the wait in the freed place"
expect 200 PUT /user/settings -H 'X-User-Key: fc1' -H 'Content-Type: application/json' \
    --data '{"updatedAt": "20260518T044305.095000Z", "a": 2}'
for name in near1 near2 near3 near4 near5 near7 far1 far2 far3 far4 far5 far6; do
    collect "$name"
    [[ "$HELD_STATUS" == 200 ]] || fail "the wait $name answered $HELD_STATUS, expected 200 after the write"
    grep -q '"a": *2' "$WORK/$name.body" || fail "the wait $name answered $(head -c 200 "$WORK/$name.body")"
done
loop_holds "$loop" 1 || fail "the loop still holds $(sockets_of "$loop") sockets after answering"
tag="$(python3 -c 'import sys; print([l.split(":",1)[1].strip() for l in open(sys.argv[1]) if l.lower().startswith("etag:")][0])' "$WORK/near1.headers")"
# A wait whose time runs out answers as an ordinary read then: 304.
expect 304 GET "/user/settings?wait=1" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
loop_holds "$loop" 1 || fail "the loop still holds $(sockets_of "$loop") sockets after the time-out"

it "FastCGI mode: a feed wait in the inbox's loop is answered by the write it waited for"
expect 200 GET /inbox -H 'X-User-Key: fc1'
anchor="$(anchor_of <"$WORK/body")"
held feed "/inbox?anchor=$anchor&wait=30" -H 'X-User-Key: fc1'
inbox_loop="$(pool_workers inbox-waits)"
loop_holds "$inbox_loop" 2 || fail "the inbox's loop holds $(sockets_of "$inbox_loop") sockets, expected its socket and the wait"
expect 201 PUT /inbox/m2 -H 'X-User-Key: fc1' -H 'X-Sync-Version: 1' -H 'Content-Type: application/json' --data '{"n": 2}'
collect feed
[[ "$HELD_STATUS" == 200 ]] || fail "the feed wait answered $HELD_STATUS"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert [m["id"] for m in d["messages"]] == ["m2"], d' \
    "$WORK/feed.body" || fail "the feed wait answered $(head -c 300 "$WORK/feed.body")"

it "FastCGI mode: a loop that dies gives its waits an error in JSON; another takes its place and the next wait is held"
held crash "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
loop_holds "$loop" 2 || fail "the loop did not take the wait"
kill -SEGV "$loop"
collect crash
[[ "$HELD_STATUS" == 502 ]] || fail "the wait of the dead loop answered $HELD_STATUS, expected 502"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))["error"]' "$WORK/crash.body" ||
    fail "not a JSON error: $(head -c 200 "$WORK/crash.body")"
eventually 10 grep -q "worker $loop ended by signal 11" "$fastcgi_run/logs/user-settings-waits.log" ||
    fail "the master did not log the signal: $(tail -n 3 "$fastcgi_run/logs/user-settings-waits.log")"
loop_again() { loop="$(pool_workers user-settings-waits)"; [[ -n "$loop" ]]; }
eventually 10 loop_again || fail "no loop in the waits pool again"
held again "/user/settings?wait=30" -H 'X-User-Key: fc1' -H "If-None-Match: $tag"
loop_holds "$loop" 2 || fail "the new loop did not take the wait"
expect 200 PUT /user/settings -H 'X-User-Key: fc1' -H 'Content-Type: application/json' \
    --data '{"updatedAt": "20260518T044306.095000Z", "a": 3}'
collect again
[[ "$HELD_STATUS" == 200 ]] || fail "the wait after the restart answered $HELD_STATUS"
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
