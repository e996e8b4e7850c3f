# Waiting for a change (docs/API.md §3, §4 `wait`) and the query rules of
# §2, through nginx + fcgiwrap + TLS. Also run against the installed package
# (Tests/install/scenario.sh): it holds 8 waits open and checks that the
# box still answers an ordinary request promptly. `held` and `collect` are
# the runner's (Tests/acceptance/run.sh).

# Whole seconds as a number bash compares: "1.234" -> 1234 (milliseconds).
ms() { python3 -c 'import sys; print(int(float(sys.argv[1]) * 1000))' "$1"; }

# The longest wait, over both protocols, runs beside the cases below and is
# collected last: no nginx timeout (10 s between writes, HTTP/2 idle) or
# program limit (25 s) cuts it short.
expect 200 PUT /user/settings -H 'X-User-Key: lp-long' -d '{}'
long_etag="$(last_header ETag)"
held long2 '/user/settings?wait=60' --http2 -H 'X-User-Key: lp-long' -H "If-None-Match: $long_etag"
held long1 '/user/settings?wait=60' --http1.1 -H 'X-User-Key: lp-long' -H "If-None-Match: $long_etag"

it "unknown, misspelt and repeated query parameters are a 400 naming the parameter, on every route"
expect 400 GET '/inbox?since=5' -H 'X-User-Key: lp-q'
body_is '{"error": "unknown query parameter \"since\"; GET /inbox takes anchor, limit, exclude-source, wait"}'
expect 400 GET '/inbox?Limit=5' -H 'X-User-Key: lp-q'
body_is '{"error": "unknown query parameter \"Limit\"; GET /inbox takes anchor, limit, exclude-source, wait"}'
expect 400 GET '/inbox?limit=5&limit=6' -H 'X-User-Key: lp-q'
body_is '{"error": "query parameter \"limit\" given more than once; GET /inbox takes anchor, limit, exclude-source, wait, each once"}'
expect 400 PUT '/inbox/m1?version=2' -H 'X-User-Key: lp-q' -d '{}'
body_is '{"error": "unknown query parameter \"version\"; PUT /inbox/m1 takes no query parameters"}'
expect 400 POST '/inbox:bulk?dry=1' -H 'X-User-Key: lp-q' -d '{"messages": []}'
body_is '{"error": "unknown query parameter \"dry\"; POST /inbox:bulk takes no query parameters"}'
expect 400 GET '/user/settings?anchor=1' -H 'X-User-Key: lp-q'
body_is '{"error": "unknown query parameter \"anchor\"; GET /user/settings takes wait"}'
expect 400 PUT '/user/settings?wait=5' -H 'X-User-Key: lp-q' -d '{}'
body_is '{"error": "unknown query parameter \"wait\"; PUT /user/settings takes no query parameters"}'
expect 404 GET '/inbox/m1' -H 'X-User-Key: lp-q'

it "wait outside 1-60 whole seconds is a 400 naming the range"
for bad in 0 61 1.5 x ''; do
    expect 400 GET "/inbox?wait=$bad" -H 'X-User-Key: lp-q'
    body_is "{\"error\": \"invalid wait \\\"$bad\\\": must be a whole number of seconds from 1 to 60\"}"
done
expect 400 GET '/user/settings?wait=600' -H 'X-User-Key: lp-q' -H 'If-None-Match: *'

it "a feed wait with changes already there answers at once, exactly as without wait"
expect 201 PUT /inbox/first -H 'X-User-Key: lp-feed' -H 'X-Device-Id: mirror-1' -d '{"kg": 70}'
expect 200 GET /inbox -H 'X-User-Key: lp-feed'
plain="$(last_body)"
anchor="$(anchor_of <<<"$plain")"
started=$SECONDS
expect 200 GET '/inbox?wait=30' -H 'X-User-Key: lp-feed'
body_is "$plain"
((SECONDS - started < 10)) || fail "it waited $((SECONDS - started)) s"

it "a feed wait answers as soon as another device's write commits, with that change"
held feed "/inbox?anchor=$anchor&exclude-source=phone-1&wait=30" -H 'X-User-Key: lp-feed'
sleep 1
expect 201 PUT /inbox/own -H 'X-User-Key: lp-feed' -H 'X-Device-Id: phone-1' -d '{"own": true}'
sleep 1
expect 201 PUT /inbox/scan -H 'X-User-Key: lp-feed' -H 'X-Device-Id: mirror-1' -d '{"kg": 71}'
collect feed
[[ "$HELD_STATUS" == 200 ]] || fail "the wait answered $HELD_STATUS"
(($(ms "$HELD_SECONDS") >= 1500 && $(ms "$HELD_SECONDS") < 10000)) || fail "the wait took $HELD_SECONDS s (the phone's own write must not end it)"
python3 -c '
import json, sys
page = json.load(open(sys.argv[1]))
assert [m["id"] for m in page["messages"]] == ["scan"], page
assert page["deleted"] == [] and page["hasMore"] is False, page' "$WORK/feed.body" || fail "the page: $(cat "$WORK/feed.body")"

it "a feed wait that runs out answers the empty page with the same anchor"
expect 200 GET /inbox -H 'X-User-Key: lp-feed'
anchor="$(anchor_of <<<"$(last_body)")"
started=$SECONDS
expect 200 GET "/inbox?anchor=$anchor&wait=2" -H 'X-User-Key: lp-feed'
body_is "{\"messages\": [], \"deleted\": [], \"anchor\": \"$anchor\", \"hasMore\": false}"
((SECONDS - started >= 2)) || fail "it answered after $((SECONDS - started)) s"

it "a feed wait on an anchor the store cannot answer from is a 410 at once"
started=$SECONDS
expect 410 GET "/inbox?anchor=0123456789abcdef.0.1&wait=30" -H 'X-User-Key: lp-feed'
((SECONDS - started < 10)) || fail "it waited $((SECONDS - started)) s"

it "a settings wait with If-None-Match is a 304 when it runs out, the new document when another write commits"
expect 200 PUT /user/settings -H 'X-User-Key: lp-set' -d '{"units": "metric"}'
etag="$(last_header ETag)"
started=$SECONDS
expect 304 GET '/user/settings?wait=2' -H 'X-User-Key: lp-set' -H "If-None-Match: $etag"
header_is ETag "$etag"
((SECONDS - started >= 2)) || fail "the 304 came after $((SECONDS - started)) s"
held settings '/user/settings?wait=30' -H 'X-User-Key: lp-set' -H "If-None-Match: $etag"
sleep 1
expect 200 PUT /user/settings -H 'X-User-Key: lp-set' -d '{"units": "imperial"}'
collect settings
[[ "$HELD_STATUS" == 200 ]] || fail "the wait answered $HELD_STATUS"
grep -q '"units": "imperial"' "$WORK/settings.body" || fail "the wait answered $(cat "$WORK/settings.body")"

it "a settings wait naming a document deleted before the wait began answers 404 at once (the deletion is news)"
expect 200 PUT /user/settings -H 'X-User-Key: lp-gone' -d '{"units": "metric"}'
etag="$(last_header ETag)"
expect 204 DELETE /user/settings -H 'X-User-Key: lp-gone'
started=$SECONDS
expect 404 GET '/user/settings?wait=30' -H 'X-User-Key: lp-gone' -H "If-None-Match: $etag"
body_is '{"error": "no settings stored for this user"}'
((SECONDS - started < 10)) || fail "it waited $((SECONDS - started)) s for a deletion that had happened"

it "a settings wait where nothing is stored answers when a document appears; without If-None-Match wait answers at once"
held empty '/user/settings?wait=30' -H 'X-User-Key: lp-new' -H 'If-None-Match: *'
sleep 1
expect 200 PUT /user/settings -H 'X-User-Key: lp-new' -d '{"fresh": 1}'
collect empty
[[ "$HELD_STATUS" == 200 ]] || fail "the wait answered $HELD_STATUS"
started=$SECONDS
expect 200 GET '/user/settings?wait=30' -H 'X-User-Key: lp-new'
((SECONDS - started < 10)) || fail "it waited $((SECONDS - started)) s"

it "8 waits held open leave an ordinary request prompt"
# From 8 addresses (127.0.0.11-18): one address holds at most its share of
# the waits (cases/waitshare.sh).
for i in 1 2 3 4 5 6 7 8; do
    held "busy$i" "/user/settings?wait=20" --interface "127.0.0.$((10 + i))" -H "X-User-Key: lp-busy$i" -H 'If-None-Match: *'
done
sleep 1
probe=0
for i in 1 2 3 4 5; do
    started_ms="$(date +%s%3N)"
    expect 404 GET /user/settings -H 'X-User-Key: lp-probe'
    took=$(($(date +%s%3N) - started_ms))
    ((took > probe)) && probe=$took
done
echo "        slowest of 5 ordinary GETs with 8 waits held: $probe ms"
# Served while every wait still holds its place: a request queued behind
# them would wait out their 20 s (a time would say more about the machine).
for i in 1 2 3 4 5 6 7 8; do
    ! answered "busy$i" || fail "the wait busy$i answered before the ordinary GETs were served: they waited behind it"
done
expect 200 PUT /user/settings -H 'X-User-Key: lp-busy1' -d '{}'
collect busy1
[[ "$HELD_STATUS" == 200 ]] || fail "the wait on lp-busy1 answered $HELD_STATUS"
for i in 2 3 4 5 6 7 8; do kill "$(eval "echo \$HELD_busy$i")" 2>/dev/null; done

it "the longest wait (60 s) ends with its 304, over HTTP/2 and HTTP/1.1"
for name in long2 long1; do
    collect "$name"
    [[ "$HELD_STATUS" == 304 ]] || fail "$name answered $HELD_STATUS after $HELD_SECONDS s"
    (($(ms "${HELD_SECONDS:-0}") >= 60000)) || fail "$name answered after $HELD_SECONDS s"
done
