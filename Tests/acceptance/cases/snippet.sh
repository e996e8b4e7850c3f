# nginx/mockcloud-locations.conf on its own, as a LAN box's existing nginx
# would include it: a plain server that sets only the three required
# variables and maps file extensions to MIME types, in front of the main
# stack's fcgiwrap.

snippet_port="$(free_port)"
snippet_dir="$WORK/snip"
mkdir -p "$snippet_dir/logs" "$snippet_dir/data"
# As root, workers would switch to nobody, who cannot reach the stack's
# socket: they run as the main stack's user (its run directory's owner),
# as on a LAN box, where nginx's workers and fcgiwrap share www-data. The
# programs behind that fcgiwrap write the data directory.
snippet_user=""
if [[ "$(id -u)" == 0 ]]; then
    snippet_user="user $(stat -c '%U %G' "$RUN");"
    chown "$(stat -c '%U:%G' "$RUN")" "$snippet_dir/data"
fi
cat >"$snippet_dir/nginx.conf" <<CONF
$snippet_user
daemon off;
pid $snippet_dir/nginx.pid;
error_log $snippet_dir/logs/error.log warn;
events {}
http {
    access_log off;
    client_body_temp_path $snippet_dir/body;
    fastcgi_temp_path $snippet_dir/fastcgi;
    proxy_temp_path $snippet_dir/proxy;
    scgi_temp_path $snippet_dir/scgi;
    uwsgi_temp_path $snippet_dir/uwsgi;
    types { text/html html; }
    default_type text/plain;
    include $REPO/nginx/mockcloud-http.conf;
    server {
        listen 127.0.0.1:$snippet_port;
        set \$mockcloud_cgi_bin $MOCKCLOUD_CGI_BIN;
        set \$mockcloud_data    $snippet_dir/data;
        set \$mockcloud_fcgi    unix:$RUN/fcgiwrap.sock;
        include $REPO/nginx/mockcloud-locations.conf;
        location / { return 404; }
    }
}
CONF
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"

it "the snippet is a valid configuration in a server that sets only the required variables"
"$nginx_bin" -t -q -p "$snippet_dir/" -c "$snippet_dir/nginx.conf" -e "$snippet_dir/logs/error.log" >"$snippet_dir/t.log" 2>&1 ||
    fail "nginx -t: $(cat "$snippet_dir/t.log")"

it "through that server, /user/settings stores into the server's own data directory"
if start_server "$snippet_port" "$nginx_bin" -p "$snippet_dir/" -c "$snippet_dir/nginx.conf" -e "$snippet_dir/logs/error.log"; then
    snippet_pid="$SERVER_PID"
    BASE="http://127.0.0.1:$snippet_port"
    DATA="$snippet_dir/data"
    expect 200 PUT /user/settings -H 'X-User-Key: snip' -d '{"via": "snippet"}'
    py 'assert stored("snip") == json.dumps({"via": "snippet", "serverReceivedAt": doc["serverReceivedAt"]}, indent=2)'
else
    fail "the server did not start: $(cat "$snippet_dir/logs/error.log")"
fi

it "that server's own refusals are JSON even where its types say text/html"
expect 404 GET /index.html
body_is '{"error": "not found"}'
expect 413 PUT /user/settings -H 'X-User-Key: snip' --data-binary @<(head -c 1048577 /dev/zero)

it "unset optional variables cause no warnings in that server's error log"
expect 200 GET /user/settings -H 'X-User-Key: snip'
! grep -i 'uninitialized' "$snippet_dir/logs/error.log" || fail "warnings: $(grep -i uninitialized "$snippet_dir/logs/error.log")"
[[ -z "${snippet_pid:-}" ]] || stop_server "$snippet_pid"
