# The per-address cap (nginx/mockcloud-http.conf) at its default, as served:
# it refuses requests in progress past 16 from one address, and nothing a
# client that waits for each answer can do, however fast. The
# big flood is cases/flood.sh and `make flood`.

use_stack main "$MAIN_PORT"

# statuses FILE: "count status" lines of the status codes, one per line, in FILE.
statuses() { sort "$1" | uniq -c | awk '{ printf "%s×%s ", $1, $2 }'; }

it "a client that waits for each answer never meets a 429: 3,000 requests on one keep-alive connection, at full speed"
expect 200 PUT /user/settings -H 'X-User-Key: seq' -d '{"a": 1}'
# One curl process, one connection, one request after the other: what a
# shell acceptance script does with a config file. Half are settings GETs
# (the program runs), half nginx's own 404s (thousands a second).
for ((i = 0; i < 1500; i++)); do
    printf 'url = "%s/user/settings"\noutput = /dev/null\nurl = "%s/nothing-%d"\noutput = /dev/null\n' "$BASE" "$BASE" "$i"
done >"$WORK/seq.curl"
started="$(date +%s%N)"
curl -sk --noproxy '*' -H 'X-User-Key: seq' -w '%{http_code}\n' -K "$WORK/seq.curl" >"$WORK/seq.codes" 2>"$WORK/seq.err"
ms=$((($(date +%s%N) - started) / 1000000))
[[ "$(grep -c . "$WORK/seq.codes")" == 3000 ]] || fail "$(grep -c . "$WORK/seq.codes") answers of 3000: $(head -c 300 "$WORK/seq.err")"
[[ "$(grep -cvx '200\|404' "$WORK/seq.codes")" == 0 ]] || fail "answers: $(statuses "$WORK/seq.codes")"
echo "      (3,000 requests in ${ms} ms: $((3000000 / (ms > 0 ? ms : 1))) a second, one at a time)"

it "a shell script of 300 curl calls, each its own process and TLS handshake, never meets a 429"
: >"$WORK/script.codes"
for ((i = 0; i < 300; i++)); do
    curl -sk --noproxy '*' -o /dev/null -w '%{http_code}\n' -H 'X-User-Key: seq' "$BASE/user/settings" >>"$WORK/script.codes"
done
[[ "$(grep -cx 200 "$WORK/script.codes")" == 300 ]] || fail "answers: $(statuses "$WORK/script.codes")"

it "a phone with 8 requests in flight over HTTP/2 never meets a 429: 400 inbox PUTs on one connection"
for ((i = 0; i < 400; i++)); do
    printf 'url = "%s/inbox/phone-%d"\noutput = /dev/null\n' "$BASE" "$i"
done >"$WORK/phone.curl"
curl -sk --noproxy '*' --http2 --parallel --parallel-max 8 -X PUT -H 'X-User-Key: phone' -H 'X-Sync-Version: 1' \
    -d '{"kg": 71.3}' -w '%{http_code} %{http_version} %{num_connects}\n' -K "$WORK/phone.curl" >"$WORK/phone.out" 2>"$WORK/phone.err"
cut -d' ' -f1 "$WORK/phone.out" >"$WORK/phone.codes"
[[ "$(grep -cx 201 "$WORK/phone.codes")" == 400 ]] || fail "answers: $(statuses "$WORK/phone.codes") $(head -c 300 "$WORK/phone.err")"
[[ "$(cut -d' ' -f2 "$WORK/phone.out" | sort -u)" == 2 ]] || fail "not all over HTTP/2: $(cut -d' ' -f2 "$WORK/phone.out" | sort | uniq -c)"
connects="$(awk '{ n += $3 } END { print n }' "$WORK/phone.out")"
[[ "$connects" == 1 ]] || fail "$connects connections, expected the 400 requests multiplexed on 1"

it "past 16 requests in progress from one address: the rest answer 429 at once (JSON, Retry-After: 1); another address is served meanwhile"
# The key's lock, held here, keeps its writes in progress: 24 sent at once
# over HTTP/2 from 127.0.0.1, 16 wait for the lock and 8 are refused.
expect 200 PUT /user/settings -H 'X-User-Key: held' -d '{"n": 0}'
lock="$DATA/.locks/user_settings.held.lock"
flock -x "$lock" sleep 4 &
holder=$!
sleep 0.3
for ((i = 0; i < 24; i++)); do printf 'url = "%s/user/settings"\noutput = "%s/held-%d.body"\n' "$BASE" "$WORK" "$i"; done >"$WORK/held.curl"
curl -sk --noproxy '*' --http2 --parallel --parallel-immediate --parallel-max 24 -X PUT -H 'X-User-Key: held' \
    -d '{"n": 1}' -D "$WORK/held.headers" -w '%{http_code}\n' -K "$WORK/held.curl" >"$WORK/held.codes" 2>"$WORK/held.err" &
burst=$!
sleep 1
other="$(curl -sk --noproxy '*' --interface 127.0.0.2 -o /dev/null -w '%{http_code} %{time_total}' -H 'X-User-Key: seq' "$BASE/user/settings")"
wait "$burst"
wait "$holder"
[[ "$other" == "200 "* ]] || fail "127.0.0.2 got '$other' while 127.0.0.1 held 16 requests"
[[ "$(grep -cx 429 "$WORK/held.codes")" == 8 && "$(grep -cx 200 "$WORK/held.codes")" == 16 ]] ||
    fail "answers: $(statuses "$WORK/held.codes"), expected 16×200 8×429: $(head -c 300 "$WORK/held.err")"
grep -qi '^retry-after: 1' "$WORK/held.headers" || fail "no Retry-After: 1 among the answers' headers"
refused="$(grep -l 'too many' "$WORK"/held-*.body | head -n 1)"
[[ -n "$refused" && "$(cat "$refused")" == '{"error": "too many requests from this address at once (more than 16 in progress); retry after a second"}' ]] ||
    fail "429 body: $(cat "$refused" 2>/dev/null)"
