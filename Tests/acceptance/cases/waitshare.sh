# One device cannot take every wait (README, "Waiting for a change"): each
# client address holds at most its share of the box's places for waiting
# requests (MOCKCLOUD_WAITS_PER_ADDRESS, 4 by default), a wait past it is a
# 429 at once, and a client that goes away frees its places at once. Through
# nginx + fcgiwrap + TLS from several loopback addresses (curl --interface);
# also run against the installed package (Tests/install/scenario.sh).
#
# No check here rests on a time: the hogs' waits last 60 s, and a place is
# shown free by a wait that is held where it was refused before.
# `held`, `collect` and `answered` are the runner's (Tests/acceptance/run.sh).

SHARE=4
# from ADDRESS: the curl options of a request from 127.0.0.ADDRESS.
from() { printf '%s\n' --interface "127.0.0.$1"; }
REFUSED="{\"error\": \"too many waiting requests from this address: $SHARE already wait for changes, its share of the server's 48 places (MOCKCLOUD_WAITS_PER_ADDRESS); retry after 5 seconds, or end a wait it no longer needs\"}"

# held_places ADDRESS: how many of the box's places 127.0.0.ADDRESS holds
# now, read as the programs count them (each place a lock file under
# $DATA/.locks that names its holder's address), under the same turn lock,
# so that looking never makes a program count wrong.
held_places() {
    python3 - "$DATA/.locks" "127.0.0.$1" <<'PYTHON'
import fcntl, os, re, sys
folder, address = sys.argv[1], sys.argv[2].encode()
# Never made here: the programs make it, as the user they run as.
if not os.path.exists(os.path.join(folder, "waiting.lock")):
    print(0)
    sys.exit()
with open(os.path.join(folder, "waiting.lock"), "rb") as turn:
    fcntl.flock(turn, fcntl.LOCK_EX)
    count = 0
    for name in os.listdir(folder):
        if re.fullmatch(r"waiting\.[0-9]+\.lock", name):
            with open(os.path.join(folder, name), "rb") as place:
                try:
                    fcntl.flock(place, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    count += place.read() == address
print(count)
PYTHON
}

# until_held ADDRESS COUNT: waits until 127.0.0.ADDRESS holds COUNT places
# (requests sent in the background reach their programs); false if it never does.
until_held() { eventually 30 prints "$2" held_places "$1"; }

# until_answered COUNT NAME...: waits until COUNT of the held requests NAME...
# have their answers (the refusals come at once; the bound only ends a run
# that went wrong), and sets ANSWERED to their names.
until_answered() { eventually 60 some_answered "$@"; }
some_answered() {
    local want="$1" name
    shift
    ANSWERED=()
    for name in "$@"; do answered "$name" && ANSWERED+=("$name"); done
    ((${#ANSWERED[@]} >= want))
}

# a_wait_is_held ADDRESS COUNT: COUNT waits from ADDRESS at once, each held
# until its 1 s runs out (404: nothing stored); tried again while any is
# refused, at most 40 times. True once all COUNT were held together: the
# address has that many places free.
a_wait_is_held() {
    local address="$1" count="$2" try i refused
    for ((try = 0; try < 40; try++)); do
        for ((i = 1; i <= count; i++)); do
            held "probe$i" '/user/settings?wait=1' $(from "$address") -H "X-User-Key: ws-probe$i" -H 'If-None-Match: *'
        done
        refused=0
        for ((i = 1; i <= count; i++)); do
            collect "probe$i"
            [[ "$HELD_STATUS" == 404 ]] || refused=1
        done
        ((refused == 0)) && return 0
        sleep 0.2
    done
    return 1
}

it "three addresses asking 16 waits each: $SHARE of each wait, the other 12 get 429 at once with Retry-After, naming the share and the setting"
hogs=()
for address in 2 3 4; do
    for ((i = 1; i <= 16; i++)); do
        held "hog${address}_$i" '/user/settings?wait=60' $(from "$address") -H "X-User-Key: ws-hog$address-$i" -H 'If-None-Match: *'
        hogs+=("hog${address}_$i")
    done
done
until_answered 36 "${hogs[@]}" || fail "only ${#ANSWERED[@]} of the 36 waits past the share were answered"
refused=("${ANSWERED[@]}")
for address in 2 3 4; do
    mine=0
    for name in "${refused[@]}"; do
        [[ "$name" == "hog${address}_"* ]] || continue
        mine=$((mine + 1))
        collect "$name"
        [[ "$HELD_STATUS" == 429 ]] || fail "$name: status $HELD_STATUS, expected 429"
        [[ "$(cat "$WORK/$name.body")" == "$REFUSED" ]] || fail "$name: body $(head -c 300 "$WORK/$name.body")"
        grep -qi '^retry-after: 5' "$WORK/$name.headers" || fail "$name: no Retry-After: 5 in $(tr -d '\r' <"$WORK/$name.headers" | paste -sd' ')"
        grep -qi '^content-type: application/json' "$WORK/$name.headers" || fail "$name: not JSON"
    done
    ((mine == 16 - SHARE)) || fail "127.0.0.$address: $mine of its 16 waits refused, expected $((16 - SHARE))"
done
holding=()
for name in "${hogs[@]}"; do answered "$name" || holding+=("$name"); done
((${#holding[@]} == 3 * SHARE)) || fail "${#holding[@]} waits held, expected $((3 * SHARE))"
for address in 2 3 4; do
    until_held "$address" "$SHARE" || fail "127.0.0.$address holds $(held_places "$address") places, expected $SHARE"
done

it "beside them a fourth address's wait is held and answered normally: 200 with the change as it commits"
expect 201 PUT /inbox/ws-first $(from 5) -H 'X-User-Key: ws-phone' -H 'X-Device-Id: mirror-1' -d '{"kg": 70}'
expect 200 GET /inbox $(from 5) -H 'X-User-Key: ws-phone'
anchor="$(anchor_of <"$WORK/body")"
held phone "/inbox?anchor=$anchor&exclude-source=phone-1&wait=30" $(from 5) -H 'X-User-Key: ws-phone'
# Held: it has no answer while the writer's request goes through another address.
expect 201 PUT /inbox/ws-scan $(from 6) -H 'X-User-Key: ws-phone' -H 'X-Device-Id: mirror-1' -d '{"kg": 71}'
collect phone
[[ "$HELD_STATUS" == 200 ]] || fail "the wait answered $HELD_STATUS: $(head -c 300 "$WORK/phone.body")"
python3 -c '
import json, sys
page = json.load(open(sys.argv[1]))
assert [m["id"] for m in page["messages"]] == ["ws-scan"] and page["hasMore"] is False, page' "$WORK/phone.body" ||
    fail "the page: $(head -c 300 "$WORK/phone.body")"

it "the fourth address's wait that runs out answers the empty page with its anchor, and a settings wait its 304"
anchor="$(anchor_of <"$WORK/phone.body")"
expect 200 GET "/inbox?anchor=$anchor&wait=2" $(from 5) -H 'X-User-Key: ws-phone'
body_is "{\"messages\": [], \"deleted\": [], \"anchor\": \"$anchor\", \"hasMore\": false}"
expect 200 PUT /user/settings $(from 5) -H 'X-User-Key: ws-phone' -d '{"units": "metric"}'
etag="$(last_header ETag)"
expect 304 GET '/user/settings?wait=2' $(from 5) -H 'X-User-Key: ws-phone' -H "If-None-Match: $etag"

it "every ordinary request from every address keeps its answer, a hog's included, and a wait with changes already there answers at once"
for address in 1 2 3 4 5; do
    key="ws-plain$address"
    expect 200 PUT /user/settings $(from "$address") -H "X-User-Key: $key" -d "{\"address\": $address}"
    expect 200 GET /user/settings $(from "$address") -H "X-User-Key: $key"
    py "assert doc['address'] == $address, doc"
    expect 201 PUT /inbox/m1 $(from "$address") -H "X-User-Key: $key" -d '{"kg": 70}'
    expect 200 GET /inbox/m1 $(from "$address") -H "X-User-Key: $key"
    expect 200 GET /inbox $(from "$address") -H "X-User-Key: $key"
    # Nothing to wait for: no place is needed, even where the share is taken.
    expect 200 GET '/inbox?wait=30' $(from "$address") -H "X-User-Key: $key"
    py "assert [m['id'] for m in doc['messages']] == ['m1'], doc"
    expect 204 DELETE /inbox/m1 $(from "$address") -H "X-User-Key: $key"
done

it "the hogs' held waits answer normally when their change comes, and free their places"
for name in "${holding[@]}"; do
    address="${name#hog}"
    address="${address%%_*}"
    expect 200 PUT /user/settings $(from "$address") -H "X-User-Key: ws-hog$address-${name#*_}" -d '{"n": 1}'
done
for name in "${holding[@]}"; do
    collect "$name"
    [[ "$HELD_STATUS" == 200 ]] || fail "$name answered $HELD_STATUS"
done
for address in 2 3 4; do a_wait_is_held "$address" "$SHARE" || fail "127.0.0.$address: its places did not come back"; done

it "a client that goes away frees its places at once: killed curls over HTTP/1.1 and HTTP/2"
for protocol in --http1.1 --http2; do
    gone=()
    for ((i = 1; i <= SHARE; i++)); do
        held "gone$i" '/user/settings?wait=60' "$protocol" $(from 7) -H "X-User-Key: ws-gone$i" -H 'If-None-Match: *'
        gone+=("gone$i")
    done
    until_held 7 "$SHARE" || fail "$protocol: 127.0.0.7 holds $(held_places 7) places, expected $SHARE"
    expect 429 GET '/user/settings?wait=60' $(from 7) -H 'X-User-Key: ws-gone-extra' -H 'If-None-Match: *'
    body_is "$REFUSED"
    for name in "${gone[@]}"; do
        answered "$name" && fail "$protocol: $name was answered before its client left: $(cat "$WORK/$name.status")"
        kill "$(eval "echo \$HELD_$name")" 2>/dev/null
    done
    a_wait_is_held 7 "$SHARE" || fail "$protocol: the places of the waits whose clients left are still taken"
done

it "an HTTP/2 stream reset while its connection stays frees that one place"
mkfifo "$WORK/h2.in"
ca=-k
[[ "${TLS_TRUST[0]}" != --cacert ]] || ca="${TLS_TRUST[1]}"
python3 "$REPO/Tests/support/h2_streams.py" "$BASE" 127.0.0.8 "$ca" 'X-User-Key: ws-h2' 'If-None-Match: *' -- \
    $(for ((i = 1; i <= SHARE; i++)); do echo "/user/settings?wait=60"; done) \
    <"$WORK/h2.in" >"$WORK/h2.out" 2>&1 &
SERVER_PIDS+=("$!")
exec 7>"$WORK/h2.in"
until_held 8 "$SHARE" || fail "127.0.0.8 holds $(held_places 8) places, expected $SHARE: $(cat "$WORK/h2.out")"
expect 429 GET '/user/settings?wait=60' $(from 8) -H 'X-User-Key: ws-h2' -H 'If-None-Match: *'
echo "reset 2" >&7
a_wait_is_held 8 1 || fail "the reset stream's place is still taken"
# The other three still wait on the same connection, each in its place.
[[ "$(held_places 8)" == $((SHARE - 1)) ]] || fail "127.0.0.8 holds $(held_places 8) places, expected $((SHARE - 1))"
grep -q '^answered' "$WORK/h2.out" && fail "a stream still open was answered: $(cat "$WORK/h2.out")"
echo close >&7
exec 7>&-
a_wait_is_held 8 "$SHARE" || fail "the places of the closed connection's streams are still taken"
