# A hostile device on the LAN, or files the service did not make:
# each case here was a finding that once went the other way.

it "a run directory that already existed with mode 0755 is made 0700 (its logs hold query strings)"
mkdir -p -m 0755 "$WORK/open-run"
chmod 0755 "$WORK/open-run"
start_stack open-run || fail "the stack did not start"
mode="$(stat -c %a "$WORK/open-run")"
[[ "$mode" == 700 ]] || fail "the run directory's mode is $mode, expected 700"

# ---------------------------------------------------------------- duplicate identity headers
# nginx 1.22 hands fcgiwrap each header line as its own parameter, and the
# program's environment then holds the name twice (getenv sees the first);
# newer nginx joins the lines with ", ". Either way: 400, nothing written.
use_stack main "$MAIN_PORT"

it "two X-User-Key lines answer 400 and store nothing under either key"
expect 400 PUT /user/settings -H 'X-User-Key: dup-a' -H 'X-User-Key: dup-b' -d '{"a": 1}'
body_is '{"error": "X-User-Key sent more than once; send it once"}'
expect 404 GET /user/settings -H 'X-User-Key: dup-a'
expect 404 GET /user/settings -H 'X-User-Key: dup-b'

it "two X-User-Key lines on the inbox answer 400 too, reads included"
expect 400 GET /inbox -H 'X-User-Key: dup-a' -H 'X-User-Key: dup-b'
body_is '{"error": "X-User-Key sent more than once; send it once"}'

it "two X-Device-Id lines answer 400, and nothing is stored"
expect 400 PUT /inbox/m1 -H 'X-User-Key: dup-dev' -H 'X-Device-Id: phone' -H 'X-Device-Id: laptop' -d '{"a": 1}'
body_is '{"error": "X-Device-Id sent more than once; send it once"}'
expect 404 GET /inbox/m1 -H 'X-User-Key: dup-dev'

it "X-User-Key joined into one line by a proxy ('a, b') is refused as well"
expect 400 PUT /user/settings -H 'X-User-Key: join-a, join-b' -d '{"a": 1}'
expect 404 GET /user/settings -H 'X-User-Key: join-a'

# ---------------------------------------------------------------- body encodings

it "a gzip-encoded PUT body answers 415 and stores nothing"
printf '{"a": 1}' | gzip -c >"$WORK/body.gz"
expect 415 PUT /user/settings -H 'X-User-Key: gz' -H 'Content-Encoding: gzip' --data-binary @"$WORK/body.gz"
body_is '{"error": "Content-Encoding gzip is not accepted; send the JSON uncompressed"}'
expect 404 GET /user/settings -H 'X-User-Key: gz'

it "any other body encoding answers 415 on the inbox too"
expect 415 PUT /inbox/m1 -H 'X-User-Key: gz' -H 'Content-Encoding: br' -d '{"a": 1}'
body_is '{"error": "Content-Encoding br is not accepted; send the JSON uncompressed"}'

it "Content-Encoding: identity is the body as sent"
expect 200 PUT /user/settings -H 'X-User-Key: gz' -H 'Content-Encoding: identity' -d '{"a": 1}'

# ---------------------------------------------------------------- lock and temporary files

# Files under the data directory, lock files included.
file_count() { find "$DATA" -mindepth 1 | wc -l; }

it "300 requests on distinct keys that hold nothing create no file in the data directory"
expect 200 PUT /user/settings -H 'X-User-Key: lock-seed' -d '{"a": 1}'
before="$(file_count)"
out="$(python3 "$HERE/empty_keys.py" "$BASE" --count 300 2>&1)" || fail "empty_keys.py: $out"
after="$(file_count)"
[[ "$before" == "$after" ]] || fail "files under the data directory: $before before, $after after: $(find "$DATA/.locks" | tail -n 5 | tr '\n' ' ')"

it "deleting a key's settings removes its lock file; the key is served again afterwards"
expect 200 PUT /user/settings -H 'X-User-Key: lock-gone' -d '{"a": 1}'
[[ -e "$DATA/.locks/user_settings.lock-gone.lock" ]] || fail "no lock file while the key holds data"
expect 204 DELETE /user/settings -H 'X-User-Key: lock-gone'
[[ ! -e "$DATA/.locks/user_settings.lock-gone.lock" ]] || fail "the lock file outlived the key's data"
expect 200 PUT /user/settings -H 'X-User-Key: lock-gone' -d '{"a": 2}'
expect 200 GET /user/settings -H 'X-User-Key: lock-gone'
py 'assert doc["a"] == 2, doc'

it "a killed writer's temporary file is removed by another key's write; a live writer's is not, however old"
# Who is at work is told by the lock, never by a file's age (a clock step would fool that).
expect 200 PUT /user/settings -H 'X-User-Key: busy' -d '{"a": 1}'
printf '{"half": ' >"$DATA/user_settings/.~ghost.json"
printf '{"half": ' >"$DATA/user_settings/.~busy.json"
touch -d '1 hour ago' "$DATA/user_settings/.~ghost.json" "$DATA/user_settings/.~busy.json"
flock -x "$DATA/.locks/user_settings.busy.lock" sleep 10 &
holder=$!
for _ in $(seq 50); do flock -n -x "$DATA/.locks/user_settings.busy.lock" true || break; sleep 0.1; done
expect 200 PUT /user/settings -H 'X-User-Key: sweeper' -d '{"a": 1}'
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
[[ ! -e "$DATA/user_settings/.~ghost.json" ]] || fail "a temporary file no writer holds is still there"
[[ -e "$DATA/user_settings/.~busy.json" ]] || fail "the temporary file of a writer at work was removed"
rm -f "$DATA/user_settings/.~busy.json"

it "an inbox message's stale temporary file is swept after a later write of another message has answered"
expect 201 PUT /inbox/m1 -H 'X-User-Key: sweep-inbox' -d '{"a": 1}'
printf '{"half": ' >"$DATA/inbox/sweep-inbox/messages/.~lost.json"
touch -d '1 hour ago' "$DATA/.locks/inbox.sweep-inbox.lock"
expect 201 PUT /inbox/m2 -H 'X-User-Key: sweep-inbox' -d '{"a": 2}'
# The sweep runs after the answer: give it a moment.
for _ in $(seq 50); do [[ -e "$DATA/inbox/sweep-inbox/messages/.~lost.json" ]] || break; sleep 0.1; done
[[ ! -e "$DATA/inbox/sweep-inbox/messages/.~lost.json" ]] || fail "the stale temporary file is still there"

# ---------------------------------------------------------------- planted links

it "a symbolic link planted as a lock file is refused, logged, and never followed"
mkdir -p "$DATA/.locks"
ln -s "$WORK/planted-target" "$DATA/.locks/user_settings.planted.lock"
expect 500 PUT /user/settings -H 'X-User-Key: planted' -d '{"a": 1}'
body_is '{"error": "refused a symbolic link in the data directory; see the server log", "changed": "no"}'
[[ ! -e "$WORK/planted-target" ]] || fail "the link was followed: $WORK/planted-target exists"
grep -q "symbolic link" "$RUN/logs/error.log" || fail "no log line names the link"

it "a symbolic link planted as a settings file is refused, never read through"
printf '{"secret": "outside the data directory"}' >"$WORK/outside.json"
ln -s "$WORK/outside.json" "$DATA/user_settings/planted2.json"
expect 500 GET /user/settings -H 'X-User-Key: planted2'
body_is '{"error": "refused a symbolic link in the data directory; see the server log"}'

it "a symbolic link planted as a key's inbox directory is refused"
mkdir -p "$WORK/outside-inbox"
ln -s "$WORK/outside-inbox" "$DATA/inbox/planted3"
expect 500 PUT /inbox/m1 -H 'X-User-Key: planted3' -d '{"a": 1}'
body_is '{"error": "refused a symbolic link in the data directory; see the server log", "changed": "no"}'
[[ -z "$(ls -A "$WORK/outside-inbox")" ]] || fail "written through the link: $(ls -A "$WORK/outside-inbox")"

# ---------------------------------------------------------------- configuration errors

it "a token file that goes after the start: a generic 500 to the client, the detail in the log"
# The launcher refuses to start without it (cases/secrets.sh); the programs
# read it on every request, so a file removed while serving is their case.
"$MOCKCLOUD_CGI_BIN/mockcloud-admin" token "$WORK/gone.tokens" gone >/dev/null 2>&1
own_secrets "$WORK/gone.tokens"
start_stack gone-tokens "MOCKCLOUD_TOKENS=$WORK/gone.tokens" || fail "the stack did not start"
rm -f "$WORK/gone.tokens"
expect 500 GET /user/settings -H 'X-User-Key: k'
body_is '{"error": "server misconfigured; see the server log"}'
grep -q "token file $WORK/gone.tokens cannot be read" "$RUN/logs/error.log" ||
    fail "the log does not name the token file: $(tail -n 3 "$RUN/logs/error.log")"

it "the same with a token: still closed"
expect 500 PUT /user/settings -H 'X-User-Key: k' -H 'Authorization: Bearer mct_anything' -d '{"a": 1}'
body_is '{"error": "server misconfigured; see the server log", "changed": "no"}'

# ---------------------------------------------------------------- scoped tokens

scoped_file="$WORK/scoped.tokens"
it "mockcloud-admin token --keys issues a token limited to those keys"
scoped="$("$MOCKCLOUD_CGI_BIN/mockcloud-admin" token "$scoped_file" phone --keys alice,bob 2>"$WORK/admin.err")" ||
    fail "mockcloud-admin token --keys failed: $(cat "$WORK/admin.err")"
everything="$("$MOCKCLOUD_CGI_BIN/mockcloud-admin" token "$scoped_file" laptop 2>/dev/null)"
own_secrets "$scoped_file"
start_stack scoped "MOCKCLOUD_TOKENS=$scoped_file" || fail "the stack did not start"
expect 200 PUT /user/settings -H 'X-User-Key: alice' -H "Authorization: Bearer $scoped" -d '{"a": 1}'
expect 200 GET /inbox -H 'X-User-Key: bob' -H "Authorization: Bearer $scoped"

it "a scoped token with another X-User-Key answers 403, and nothing is written"
expect 403 PUT /user/settings -H 'X-User-Key: carol' -H "Authorization: Bearer $scoped" -d '{"a": 1}'
body_is '{"error": "this token may not use this X-User-Key"}'
expect 403 GET /inbox -H 'X-User-Key: carol' -H "Authorization: Bearer $scoped"
body_is '{"error": "this token may not use this X-User-Key"}'
expect 404 GET /user/settings -H 'X-User-Key: carol' -H "Authorization: Bearer $everything"

it "a token issued without --keys serves every key"
expect 200 PUT /user/settings -H 'X-User-Key: carol' -H "Authorization: Bearer $everything" -d '{"a": 1}'

# nginx itself refuses a repeated Authorization line (its own JSON 400);
# the program refuses the joined form a newer nginx or a proxy would pass.
it "two Authorization lines answer 400, even when the first holds a valid token; nothing is written"
expect 400 PUT /user/settings -H 'X-User-Key: alice' -H "Authorization: Bearer $scoped" \
    -H 'Authorization: Bearer mct_other' -d '{"a": 2}'
expect 400 PUT /user/settings -H 'X-User-Key: alice' -H "Authorization: Bearer $scoped, Bearer mct_other" -d '{"a": 2}'
body_is '{"error": "Authorization sent more than once; send it once"}'
expect 200 GET /user/settings -H 'X-User-Key: alice' -H "Authorization: Bearer $scoped"
py 'assert doc["a"] == 1, doc'

# ---------------------------------------------------------------- oversized headers
# docs/API.md §2: past 8 KiB in one header line, HTTP/1.1 gets the JSON 431
# and HTTP/2 a GOAWAY without an answer (nginx 1.22's connection error for
# an oversized field); below it, an oversized key is the program's 400.
use_stack main "$MAIN_PORT"
big_key="$(head -c 15000 /dev/urandom | base64 -w0 | tr -d '+/=' | head -c 20480)"

it "a 20 KB X-User-Key over HTTP/1.1 answers the JSON 431"
expect 431 GET /user/settings --http1.1 -H "X-User-Key: $big_key"
body_is '{"error": "request header fields too large"}'

it "the same over HTTP/2 ends that connection with GOAWAY and no answer; the next connection is served"
code="$(curl -sk --noproxy '*' --http2 -o /dev/null -w '%{http_code}' -H "X-User-Key: $big_key" "$BASE/user/settings" 2>"$WORK/h2.err")"
status=$?
[[ "$code" == 000 && "$status" != 0 ]] || fail "HTTP/2 with a 20 KB header: status $code, curl exit $status (expected no answer)"
expect 404 GET /user/settings --http2 -H 'X-User-Key: after-goaway'
[[ "$(last_header content-type)" == application/json ]] || fail "the next request was not answered normally"

it "a 4 KB X-User-Key over HTTP/2 reaches the program: its JSON 400"
expect 400 GET /user/settings --http2 -H "X-User-Key: ${big_key:0:4096}"
body_is '{"error": "invalid X-User-Key shape"}'
