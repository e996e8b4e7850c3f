# MOCKCLOUD_TOKENS given at launch reaches the programs through nginx, and
# their 401 and 403 answers reach the client as they wrote them.

tokens_file="$WORK/bearer.tokens"
token="$("$MOCKCLOUD_CGI_BIN/mockcloud-admin" token "$tokens_file" acceptance 2>/dev/null)"
own_secrets "$tokens_file"

it "a stack with MOCKCLOUD_TOKENS starts"
[[ "$token" =~ ^[A-Za-z0-9_]+$ ]] || fail "mockcloud-admin token printed '$token'"
start_stack tokens "MOCKCLOUD_TOKENS=$tokens_file" || fail "the stack did not start"

it "without a token: the program's 401 with its Bearer challenge"
expect 401 GET /user/settings -H 'X-User-Key: tk'
header_matches WWW-Authenticate '^Bearer '
body_is '{"error": "Authorization: Bearer <token> required"}'

it "with a wrong token: the program's 403, not replaced by nginx"
expect 403 GET /user/settings -H 'X-User-Key: tk' -H 'Authorization: Bearer mct_wrong'
body_is '{"error": "bearer token not accepted"}'

it "with the token: served, on both routes"
expect 200 PUT /user/settings -H 'X-User-Key: tk' -H "Authorization: Bearer $token" -d '{"a": 1}'
expect 200 GET /inbox -H 'X-User-Key: tk' -H "Authorization: Bearer $token"
expect 403 GET /inbox -H 'X-User-Key: tk' -H 'Authorization: Bearer mct_wrong'
